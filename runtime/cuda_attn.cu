/*
 * CUDA kernel of multi-head attention, with the CPU kernel's semantics
 * (cpu_attn.c: its comment says what a shard computes, split along l or
 * c) and its layout: the same parameters (Wq, Wk, Wv, Wo, then biases)
 * and the same workspace parts up to the context's gradient (kern_dims.h
 * attn_dims); the backward's scratch after them is this file's
 * (gpu_dims).
 *
 * Every product runs over all samples and heads at once, so the number of
 * launches does not grow with the batch (small shapes are launch-bound).
 * The projections are linear's (cuda_project, one SGEMM over every
 * sample's rows).  The scores, the context and their gradients are one
 * batched SGEMM over the n x heads (sample, head) pairs: head h of sample
 * s sits at two strides (the sample's rows, the head's columns), which
 * the one stride of a strided batch cannot express, so each call first
 * writes every pair's matrix addresses into the workspace (one small
 * kernel) for cublasSgemmBatched.  The causal mask and the softmax are
 * one pass over the score rows, and so is the softmax's backward, a warp
 * to a row.
 *
 * The score gradients are as large as the probabilities.  The backward
 * holds those of a chunk of samples at a time (DS_CAP_FLOATS), so that
 * long sequences do not double the workspace each micro-batch keeps;
 * the q, k and v gradients it keeps for every sample, so that each
 * projection's backward is one product over all rows.
 */
#include "cuda_ctx.cuh"
#include "kern_dims.h"

#include <math.h>
#include <stdint.h>

/* The score gradients the backward holds at once, in floats (16 MiB; at
 * least one sample's): small shapes take every sample in one chunk, and
 * a long sequence (gpt2's 12 heads of 1024 x 1024 are 12.6M floats a
 * sample) one sample at a time, still 12 large products a call. */
#define DS_CAP_FLOATS ((int64_t)1 << 22)

#define WARP 32
#define FULL_MASK 0xffffffffu

/* The batched products' matrices, in this order in the address table:
 * each has one address per (sample, head) pair, pair s heads + h. */
enum { M_Q, M_K, M_V, M_P, M_CTX, M_DCTX, M_DQ, M_DK, M_DV, M_DS, NMATS };

/* The workspace: attn_dims's parts up to the context's gradient, then
 * the q, k and v gradients of every sample ([n][lq or lk][cn], as q, k
 * and v), the score gradients of `chunk` samples ([chunk][heads][lq][lk],
 * as the probabilities) and the address table (NMATS x n x heads
 * pointers), aligned at run time: a float's slack covers the move to the
 * next 8 bytes of a float address. */
struct gattn {
	struct attn a;
	int64_t chunk, dq, dk, dv, ds, table, end;
};

static struct gattn gpu_dims(const struct kern *kn)
{
	struct gattn g;
	int64_t per;

	g.a = attn_dims(kn, 0);
	per = g.a.heads * g.a.lq * g.a.lk;
	per = per > 0 ? per : 1;
	g.chunk = DS_CAP_FLOATS / per;
	g.chunk = g.chunk < 1 ? 1 : g.chunk > g.a.n ? g.a.n : g.chunk;
	g.dq = g.a.dq;
	g.dk = g.dq + g.a.n * g.a.lq * g.a.cn;
	g.dv = g.dk + g.a.n * g.a.lk * g.a.cn;
	g.ds = g.dv + g.a.n * g.a.lk * g.a.cn;
	g.table = g.ds + g.chunk * per;
	g.end = g.table + (int64_t)((NMATS * g.a.n * g.a.heads * sizeof(float *) + sizeof(float) - 1) /
				    sizeof(float)) + 1;
	return g;
}

/* base + off, or NULL where off < 0 (attn_bias: no bias) */
static const float *at(const float *base, int64_t off)
{
	return off < 0 ? NULL : base + off;
}

static float *at(float *base, int64_t off)
{
	return off < 0 ? NULL : base + off;
}

/* What the address table holds: matrix m of pair (s, h) starts at
 * base[m] + (s % wrap[m]) sample[m] + h head[m] (wrap: the score
 * gradients' chunk, else n). */
struct mats {
	float *base[NMATS];
	int64_t sample[NMATS], head[NMATS], wrap[NMATS];
	int64_t n, heads;
};

static __global__ void mats_kernel(struct mats m, float **table)
{
	int64_t pairs = m.n * m.heads;

	GRID_STRIDE(i, NMATS * pairs) {
		int64_t w = i / pairs, b = i % pairs, s = b / m.heads, h = b % m.heads;

		table[i] = m.base[w] + (s % m.wrap[w]) * m.sample[w] + h * m.head[w];
	}
}

static void mat(struct mats *m, int which, float *base, int64_t sample, int64_t head,
		int64_t wrap)
{
	m->base[which] = base;
	m->sample[which] = sample;
	m->head[which] = head;
	m->wrap[which] = wrap;
}

/* Writes the address table into the workspace; *table is its start
 * (matrix m's addresses from *table + m n heads). */
static int build_table(const struct gattn *g, float *ws, float ***table)
{
	const struct attn *a = &g->a;
	int64_t sp = a->lq * a->lk, n = a->n;
	struct mats m;

	m.n = n;
	m.heads = a->heads;
	mat(&m, M_Q, ws + a->q, a->lq * a->cn, a->hd, n);
	mat(&m, M_K, ws + a->k, a->lk * a->cn, a->hd, n);
	mat(&m, M_V, ws + a->v, a->lk * a->cn, a->hd, n);
	mat(&m, M_P, ws + a->p, a->heads * sp, sp, n);
	/* the shard's heads' columns of the whole context */
	mat(&m, M_CTX, ws + a->ctx + a->c0, a->lq * a->c, a->hd, n);
	mat(&m, M_DCTX, ws + a->dctx + a->c0, a->lq * a->c, a->hd, n);
	mat(&m, M_DQ, ws + g->dq, a->lq * a->cn, a->hd, n);
	mat(&m, M_DK, ws + g->dk, a->lk * a->cn, a->hd, n);
	mat(&m, M_DV, ws + g->dv, a->lk * a->cn, a->hd, n);
	mat(&m, M_DS, ws + g->ds, a->heads * sp, sp, g->chunk);
	*table = (float **)(((uintptr_t)(ws + g->table) + 7) & ~(uintptr_t)7);
	if (NMATS * n * a->heads <= 0)
		return AP_OK;
	mats_kernel<<<cuda_blocks(NMATS * n * a->heads), CUDA_THREADS, 0, cuda_ctx.stream>>>(
		m, *table);
	LAUNCH_CHECK();
	return AP_OK;
}

/* Row-major C_i = alpha op(A_i) op(B_i) + beta C_i for the `batch` pairs
 * whose addresses start at a, b and c in the table; cuBLAS is
 * column-major, so the operands swap (as cuda_gemm_rm's). */
static int gemm_pairs(int ta, int tb, int m, int n, int k, float alpha, float *const *a,
		      int lda, float *const *b, int ldb, float beta, float *const *c, int ldc,
		      int batch)
{
	cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;

	if (m <= 0 || n <= 0 || batch <= 0)
		return AP_OK;
	if (cuda_blas_math())
		return AP_EFAIL; /* the run's precision, as every product has */
	CUBLAS_CHECK(cublasSgemmBatched(cuda_ctx.blas, ob, oa, n, m, k, &alpha,
					(const float *const *)b, ldb, (const float *const *)a, lda,
					&beta, c, ldc, batch));
	return AP_OK;
}

/* Merges (max, sum of exp(x - max)) of two lanes' parts of a row into
 * the first; a part without elements has max -inf and sum 0, and adds
 * nothing (exp(-inf - -inf) would be NaN). */
static __device__ void merge(float *mx, float *s, float mx2, float s2)
{
	float m = fmaxf(*mx, mx2);

	*s = (*mx == -INFINITY ? 0.0f : *s * expf(*mx - m)) +
	     (mx2 == -INFINITY ? 0.0f : s2 * expf(mx2 - m));
	*mx = m;
}

/* The causal mask and softmax of score rows in place (cpu_attn.c
 * attn_fwd): row r is query r % lq of its pair and takes part in its
 * first first + r % lq elements (kern_dims.h attn_first_lim), clamped to
 * [0, lk]; the others, and a row without any, get probability 0.  A warp
 * to a row: one pass gathers the maximum and the sum together (a lane
 * rescales its sum when its maximum grows; from -inf, exp gives 0), a
 * second writes. */
static __global__ void softmax_kernel(float *p, int64_t rows, int64_t lk, int64_t lq,
				      int64_t first)
{
	int lane = threadIdx.x % WARP;
	int64_t warps = (int64_t)gridDim.x * blockDim.x / WARP;

	/* r is the same on all lanes of a warp: the shuffles see all 32 */
	for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / WARP; r < rows;
	     r += warps) {
		float *row = p + r * lk, mx = -INFINITY, s = 0.0f, inv;
		int64_t lim = first + r % lq;

		lim = lim < 0 ? 0 : lim > lk ? lk : lim;
		for (int64_t j = lane; j < lim; j += WARP) {
			float x = row[j];

			if (x > mx) {
				s = s * expf(mx - x) + 1.0f;
				mx = x;
			} else {
				s += expf(x - mx);
			}
		}
		for (int off = WARP / 2; off > 0; off /= 2)
			merge(&mx, &s, __shfl_xor_sync(FULL_MASK, mx, off),
			      __shfl_xor_sync(FULL_MASK, s, off));
		inv = 1.0f / s;
		for (int64_t j = lane; j < lk; j += WARP)
			row[j] = j < lim ? expf(row[j] - mx) * inv : 0.0f;
	}
}

/* Through the softmax, in place over the probabilities' gradient dp:
 * ds = p (dp - rowsum(dp p)) (cpu_attn.c heads_bwd), a warp to a row. */
static __global__ void softmax_bwd_kernel(const float *p, float *dp, int64_t rows, int64_t lk)
{
	int lane = threadIdx.x % WARP;
	int64_t warps = (int64_t)gridDim.x * blockDim.x / WARP;

	for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / WARP; r < rows;
	     r += warps) {
		const float *pr = p + r * lk;
		float *dr = dp + r * lk, dot = 0.0f;

		for (int64_t j = lane; j < lk; j += WARP)
			dot += dr[j] * pr[j];
		for (int off = WARP / 2; off > 0; off /= 2)
			dot += __shfl_xor_sync(FULL_MASK, dot, off);
		for (int64_t j = lane; j < lk; j += WARP)
			dr[j] = pr[j] * (dr[j] - dot);
	}
}

/* sample s's query rows of input 0 (or of its gradient) */
static int64_t xq_of(const struct attn *a, int64_t s)
{
	return (s * a->l0 + a->qoff) * a->c;
}

/* Samples whose query rows one product covers: all when the query rows
 * of consecutive samples are adjacent (input 0 holds just them), else
 * one (a band of each sample's rows, a self-attention split along l). */
static int64_t q_run(const struct attn *a)
{
	return a->l0 == a->lq ? a->n : 1;
}

/* q = xq Wq^T + bq for every sample */
static int project_q(const struct kern *kn, const struct gattn *g, const struct kbufs *b)
{
	const struct attn *a = &g->a;
	const float *w = b->w + attn_mat(a, 0), *bias = at(b->w, attn_bias(kn, a, 0));
	int64_t run = q_run(a);

	for (int64_t s = 0; s < a->n; s += run)
		if (cuda_project(b->in[0] + xq_of(a, s), (int)(run * a->lq), (int)a->c, (int)a->cn, w,
				 bias, b->ws + a->q + s * a->lq * a->cn))
			return AP_EFAIL;
	return AP_OK;
}

static int attn_fwd(const struct kern *kn, struct kbufs *b)
{
	struct gattn g = gpu_dims(kn);
	const struct attn *a = &g.a;
	const float *xkv = b->in[kn->nin > 1 ? 1 : 0];
	float *ws = b->ws, **t, scale = 1.0f / sqrtf((float)a->hd);
	int lq = (int)a->lq, lk = (int)a->lk, hd = (int)a->hd, cn = (int)a->cn, c = (int)a->c;
	int pairs = (int)(a->n * a->heads);
	int64_t rows = a->n * a->heads * a->lq;

	/* the context of the other shards' heads stays 0 until csum; the
	 * shard's own columns the context's product writes whole */
	if (a->cn < a->c)
		CUDA_CHECK(cudaMemsetAsync(ws + a->ctx, 0,
					   (size_t)(a->n * a->lq * a->c) * sizeof(float),
					   cuda_ctx.stream));
	if (project_q(kn, &g, b) ||
	    cuda_project(xkv, (int)(a->n * a->lk), c, cn, b->w + attn_mat(a, 1),
			 at(b->w, attn_bias(kn, a, 1)), ws + a->k) ||
	    cuda_project(xkv, (int)(a->n * a->lk), c, cn, b->w + attn_mat(a, 2),
			 at(b->w, attn_bias(kn, a, 2)), ws + a->v) ||
	    build_table(&g, ws, &t))
		return AP_EFAIL;
	/* S = scale Q_h K_h^T; masked softmax; ctx_h = P_h V_h */
	if (gemm_pairs(0, 1, lq, lk, hd, scale, t + M_Q * pairs, cn, t + M_K * pairs, cn, 0.0f,
		       t + M_P * pairs, lk, pairs))
		return AP_EFAIL;
	if (rows > 0) {
		softmax_kernel<<<cuda_blocks(rows * WARP), CUDA_THREADS, 0, cuda_ctx.stream>>>(
			ws + a->p, rows, a->lk, a->lq, attn_first_lim(kn, a));
		LAUNCH_CHECK();
	}
	if (gemm_pairs(0, 0, lq, hd, lk, 1.0f, t + M_P * pairs, lk, t + M_V * pairs, cn, 0.0f,
		       t + M_CTX * pairs, c, pairs) ||
	    attn_across_heads(a, b, ws + a->ctx))
		return AP_EFAIL;
	return cuda_project(ws + a->ctx, (int)(a->n * a->lq), c, cn, b->w + attn_mat(a, 3),
			    at(b->w, attn_bias(kn, a, 3)), b->out);
}

/* From the context's gradient to q's, k's and v's, a chunk of samples
 * at a time (their score gradients share the scratch): dV_h = P_h^T
 * dctx_h; dP_h = dctx_h V_h^T; through the softmax; S = scale Q K^T, so
 * dQ_h = scale dS_h K_h and dK_h = scale dS_h^T Q_h. */
static int heads_bwd(const struct gattn *g, float *ws, float **t)
{
	const struct attn *a = &g->a;
	int lq = (int)a->lq, lk = (int)a->lk, hd = (int)a->hd, cn = (int)a->cn, c = (int)a->c;
	int64_t pairs = a->n * a->heads;
	float scale = 1.0f / sqrtf((float)a->hd);

	for (int64_t s0 = 0; s0 < a->n; s0 += g->chunk) {
		int64_t cnt = a->n - s0 < g->chunk ? a->n - s0 : g->chunk;
		int64_t b0 = s0 * a->heads, rows = cnt * a->heads * a->lq;
		int nb = (int)(cnt * a->heads);
		float *const *p = t + M_P * pairs + b0, *const *dctx = t + M_DCTX * pairs + b0;
		float *const *ds = t + M_DS * pairs + b0;

		if (gemm_pairs(1, 0, lk, hd, lq, 1.0f, p, lk, dctx, c, 0.0f, t + M_DV * pairs + b0, cn,
			       nb) ||
		    gemm_pairs(0, 1, lq, lk, hd, 1.0f, dctx, c, t + M_V * pairs + b0, cn, 0.0f, ds, lk,
			       nb))
			return AP_EFAIL;
		if (rows > 0) {
			softmax_bwd_kernel<<<cuda_blocks(rows * WARP), CUDA_THREADS, 0,
					     cuda_ctx.stream>>>(ws + a->p + b0 * a->lq * a->lk,
								ws + g->ds, rows, a->lk);
			LAUNCH_CHECK();
		}
		if (gemm_pairs(0, 0, lq, hd, lk, scale, ds, lk, t + M_K * pairs + b0, cn, 0.0f,
			       t + M_DQ * pairs + b0, cn, nb) ||
		    gemm_pairs(1, 0, lk, hd, lq, scale, ds, lk, t + M_Q * pairs + b0, cn, 0.0f,
			       t + M_DK * pairs + b0, cn, nb))
			return AP_EFAIL;
	}
	return AP_OK;
}

/* Through the q, k and v projections to the weights and inputs, each
 * one product over all rows (q's a sample at a time where its rows are a
 * band); self-attention adds all three paths into its one input.  The
 * key bias's gradient is zero (cpu_attn.c says why). */
static int projections_bwd(const struct kern *kn, const struct gattn *g, struct kbufs *b)
{
	const struct attn *a = &g->a;
	int self = kn->nin == 1;
	const float *xkv = b->in[self ? 0 : 1];
	float *dxkv = b->din[self ? 0 : 1], *ws = b->ws;
	int c = (int)a->c, cn = (int)a->cn, rk = (int)(a->n * a->lk);
	int64_t run = q_run(a);

	for (int64_t s = 0; s < a->n; s += run)
		if (cuda_project_bwd(b->in[0] + xq_of(a, s), (int)(run * a->lq), c, cn,
				     b->w + attn_mat(a, 0), ws + g->dq + s * a->lq * a->cn,
				     b->dw + attn_mat(a, 0), at(b->dw, attn_bias(kn, a, 0)),
				     b->din[0] ? b->din[0] + xq_of(a, s) : NULL, 1.0f))
			return AP_EFAIL;
	if (cuda_project_bwd(xkv, rk, c, cn, b->w + attn_mat(a, 1), ws + g->dk,
			     b->dw + attn_mat(a, 1), NULL, dxkv, 1.0f) ||
	    cuda_project_bwd(xkv, rk, c, cn, b->w + attn_mat(a, 2), ws + g->dv,
			     b->dw + attn_mat(a, 2), at(b->dw, attn_bias(kn, a, 2)), dxkv, 1.0f))
		return AP_EFAIL;
	return AP_OK;
}

static int attn_bwd(const struct kern *kn, struct kbufs *b)
{
	struct gattn g = gpu_dims(kn);
	const struct attn *a = &g.a;
	float **t;

	/* the inputs' gradients are sums of the paths (and a band's rows
	 * are all q gives input 0) */
	for (int kk = 0; kk < kn->nin; kk++)
		if (b->din[kk])
			CUDA_CHECK(cudaMemsetAsync(b->din[kk], 0,
						   (size_t)shape_elems(&kn->in[kk]) * sizeof(float),
						   cuda_ctx.stream));
	/* the output projection: dctx = dy Wo over every channel, a partial
	 * sum when c-split */
	if (cuda_project_bwd(b->ws + a->ctx, (int)(a->n * a->lq), (int)a->c, (int)a->cn,
			     b->w + attn_mat(a, 3), b->dout, b->dw + attn_mat(a, 3),
			     at(b->dw, attn_bias(kn, a, 3)), b->ws + a->dctx, 0.0f) ||
	    attn_across_heads(a, b, b->ws + a->dctx) || build_table(&g, b->ws, &t) ||
	    heads_bwd(&g, b->ws, t))
		return AP_EFAIL;
	return projections_bwd(kn, &g, b);
}

static int64_t attn_ws(const struct kern *k)
{
	return gpu_dims(k).end;
}

extern "C" const struct kernel_ops cuda_attention = { attn_fwd, attn_bwd, attn_ws, 0 };
