/*
 * CPU kernel of multi-head attention (Vaswani et al. 2017, section 3.2):
 * q, k, v projections of the query input and of the key/value input (the
 * same tensor for self-attention), per head softmax(q k^T / sqrt(d)) v
 * with an optional causal mask, and the output projection.  Parameters:
 * Wq, Wk, Wv, Wo, each [C][C] (out, in), then their biases.
 *
 * Shards.  Split along l, a shard computes the queries of its output rows
 * (struct kern's glo) against whole keys and values: for self-attention
 * its one input is whole and its queries a band of it, so the gradient of
 * that input and of every weight is a partial sum, which the executor adds
 * up.  Split along c, as the simulator counts it (heads / degree per
 * shard, parameters / degree), a shard holds rows [c_lo, c_lo + cn) of
 * each of the four matrices and biases: the q, k and v projections of its
 * own heads, and the output projection of its output channels.  Those
 * need every head's context, so the shards of a c-group sum their context
 * (each zero outside its heads) through kbufs.csum, an all-gather; in the
 * backward they sum the context's gradient the same way, each keeping its
 * heads' part.  Without csum (a shard timed alone) the other heads'
 * context is taken as zero.
 *
 * Split by heads (Megatron's tensor parallelism, struct kern's TP_HEADS)
 * a shard holds the same q, k and v rows of its heads, but the output
 * projection's columns for them, W[C][cn], and the whole output bias:
 * its output is the partial sum of its heads, which the executor
 * all-reduces over the tensor group (the bias added on tensor rank 0),
 * so no context is exchanged.
 *
 * The backward runs zero bubble's B and W passes apart (struct kbufs):
 * either pass goes through the context's and the scores' gradients
 * again, one sample's at a time, and leaves out the products of the
 * other.
 *
 * The workspace (kern_dims.h attn_dims, shared with the CUDA kernel)
 * keeps every sample's projections (cn channels), the whole context, the
 * probabilities of the shard's heads and the context's gradient, plus
 * one sample's scratch for the backward.
 */
#include "cpu_kern.h"
#include "kern_dims.h"

#include <math.h>
#include <string.h>

static int64_t attn_ws(const struct kern *k)
{
	return attn_dims(k, 1).end;
}

/* y[rows][m] = x[rows][c] W^T + bias, W [m][c], rows of x ldx apart */
static void project(const float *x, int64_t ldx, int64_t rows, int64_t c, int64_t m,
		    const float *w, const float *bias, float *y)
{
	if (bias)
		for (int64_t r = 0; r < rows; r++)
			memcpy(y + r * m, bias, (size_t)m * sizeof(float));
	cpu_gemm(0, 1, (int)rows, (int)m, (int)c, 1.0f, x, (int)ldx, w, (int)c,
		 bias ? 1.0f : 0.0f, y, (int)m);
}

/* Matrix `which` (q, k, v, o) of the shard's rows, and its bias. */
static const float *mat_of(const struct attn *a, const float *w, int which)
{
	return w + attn_mat(a, which);
}

static const float *bias_of(const struct kern *k, const struct attn *a, const float *w,
			    int which)
{
	if (attn_bias(k, a, which) < 0 || (which == 3 && !tp_adds_bias(k)))
		return NULL;
	return w + attn_bias(k, a, which);
}

/* The output projection: of the whole context, or split by heads of
 * the shard's heads' columns (their partial sum). */
static int heads_split(const struct kern *k)
{
	return k->role == TP_HEADS;
}

static int attn_fwd(const struct kern *kn, struct kbufs *b)
{
	struct attn a = attn_dims(kn, 1);
	const float *xkv = b->in[kn->nin > 1 ? 1 : 0];
	float scale = 1.0f / sqrtf((float)a.hd);

	memset(b->ws + a.ctx, 0, (size_t)(a.n * a.lq * a.c) * sizeof(float));
	/* the projections of every sample at once: one GEMM each (the
	 * queries of a shard split along l are a band of each sample's rows,
	 * not one block, so they go sample by sample) */
	if (a.qoff == 0 && a.lq == a.l0)
		project(b->in[0], a.c, a.n * a.lq, a.c, a.cn, mat_of(&a, b->w, 0),
			bias_of(kn, &a, b->w, 0), b->ws + a.q);
	else
		for (int64_t s = 0; s < a.n; s++)
			project(b->in[0] + (s * a.l0 + a.qoff) * a.c, a.c, a.lq, a.c, a.cn,
				mat_of(&a, b->w, 0), bias_of(kn, &a, b->w, 0),
				b->ws + a.q + s * a.lq * a.cn);
	project(xkv, a.c, a.n * a.lk, a.c, a.cn, mat_of(&a, b->w, 1), bias_of(kn, &a, b->w, 1),
		b->ws + a.k);
	project(xkv, a.c, a.n * a.lk, a.c, a.cn, mat_of(&a, b->w, 2), bias_of(kn, &a, b->w, 2),
		b->ws + a.v);
	for (int64_t s = 0; s < a.n; s++) {
		float *q = b->ws + a.q + s * a.lq * a.cn, *k = b->ws + a.k + s * a.lk * a.cn;
		float *v = b->ws + a.v + s * a.lk * a.cn;
		float *ctx = b->ws + a.ctx + s * a.lq * a.c + a.c0;

		for (int64_t h = 0; h < a.heads; h++) {
			float *p = b->ws + a.p + (s * a.heads + h) * a.lq * a.lk;

			cpu_gemm(0, 1, (int)a.lq, (int)a.lk, (int)a.hd, scale, q + h * a.hd,
				 (int)a.cn, k + h * a.hd, (int)a.cn, 0.0f, p, (int)a.lk);
			for (int64_t i = 0; i < a.lq; i++) {
				float *row = p + i * a.lk;
				/* causal: the keys up to the query's own position */
				int64_t lim = attn_first_lim(kn, &a) + i;
				double inv;

				lim = lim > a.lk ? a.lk : lim;
				lim = lim < 0 ? 0 : lim;
				if (lim > 0) {
					inv = 1.0 / cpu_exp_sum(row, cpu_max(row, lim), row, lim);
					for (int64_t j = 0; j < lim; j++)
						row[j] = (float)(row[j] * inv);
				}
				memset(row + lim, 0, (size_t)(a.lk - lim) * sizeof *row);
			}
			cpu_gemm(0, 0, (int)a.lq, (int)a.hd, (int)a.lk, 1.0f, p, (int)a.lk,
				 v + h * a.hd, (int)a.cn, 0.0f, ctx + h * a.hd, (int)a.c);
		}
	}
	if (heads_split(kn)) {
		project(b->ws + a.ctx + a.c0, a.c, a.n * a.lq, a.cn, a.c, mat_of(&a, b->w, 3),
			bias_of(kn, &a, b->w, 3), b->out);
		return 0;
	}
	if (attn_across_heads(&a, b, b->ws + a.ctx))
		return -1;
	project(b->ws + a.ctx, a.c, a.n * a.lq, a.c, a.cn, mat_of(&a, b->w, 3),
		bias_of(kn, &a, b->w, 3), b->out);
	return 0;
}

/* The gradients of y = x W^T + bias (y [rows][m], W [m][c], rows of x
 * and dx ldx apart): dW += dy^T x, dbias += sum dy, dx += dy W; NULL
 * (dw: the B pass, with dbias) leaves one out. */
static void project_bwd(const float *x, int64_t ldx, int64_t rows, int64_t c, int64_t m,
			const float *w, const float *dy, float *dw, float *dbias, float *dx)
{
	if (dw)
		cpu_gemm(1, 0, (int)m, (int)c, (int)rows, 1.0f, dy, (int)m, x, (int)ldx, 1.0f,
			 dw, (int)c);
	if (dbias)
		for (int64_t r = 0; r < rows; r++)
			for (int64_t j = 0; j < m; j++)
				dbias[j] += dy[r * m + j];
	if (dx)
		cpu_gemm(0, 0, (int)rows, (int)c, (int)m, 1.0f, dy, (int)m, w, (int)c, 1.0f,
			 dx, (int)ldx);
}

static float *dmat_of(const struct attn *a, float *dw, int which)
{
	return dw ? dw + attn_mat(a, which) : NULL;
}

static float *dbias_of(const struct kern *k, const struct attn *a, float *dw, int which)
{
	return !dw || attn_bias(k, a, which) < 0 ? NULL : dw + attn_bias(k, a, which);
}

/* One sample's backward from its context gradient to q, k and v, and
 * through the projections to the weights and inputs. */
static void heads_bwd(const struct kern *kn, const struct attn *a, struct kbufs *b, int64_t s)
{
	int self = kn->nin == 1;
	const float *xkv = b->in[self ? 0 : 1];
	float *dxkv = b->din[self ? 0 : 1];
	float scale = 1.0f / sqrtf((float)a->hd);
	float *dq = b->ws + a->dq, *dk = b->ws + a->dk, *dv = b->ws + a->dv, *ds = b->ws + a->ds;
	const float *xq = b->in[0] + (s * a->l0 + a->qoff) * a->c, *xk = xkv + s * a->lk * a->c;
	const float *q = b->ws + a->q + s * a->lq * a->cn, *k = b->ws + a->k + s * a->lk * a->cn;
	const float *v = b->ws + a->v + s * a->lk * a->cn;
	const float *dctx = b->ws + a->dctx + s * a->lq * a->c + a->c0;
	float *dxq = b->din[0] ? b->din[0] + (s * a->l0 + a->qoff) * a->c : NULL;
	float *dxk = dxkv ? dxkv + s * a->lk * a->c : NULL;

	for (int64_t h = 0; h < a->heads; h++) {
		const float *p = b->ws + a->p + (s * a->heads + h) * a->lq * a->lk;

		/* dV_h = P^T dctx_h; dP = dctx_h V_h^T */
		cpu_gemm(1, 0, (int)a->lk, (int)a->hd, (int)a->lq, 1.0f, p, (int)a->lk,
			 dctx + h * a->hd, (int)a->c, 0.0f, dv + h * a->hd, (int)a->cn);
		cpu_gemm(0, 1, (int)a->lq, (int)a->lk, (int)a->hd, 1.0f, dctx + h * a->hd,
			 (int)a->c, v + h * a->hd, (int)a->cn, 0.0f, ds, (int)a->lk);
		/* through the softmax: dS = P (dP - rowsum(dP P)) */
		for (int64_t i = 0; i < a->lq; i++) {
			double dot = 0;

			for (int64_t j = 0; j < a->lk; j++)
				dot += (double)ds[i * a->lk + j] * p[i * a->lk + j];
			for (int64_t j = 0; j < a->lk; j++)
				ds[i * a->lk + j] = (float)(p[i * a->lk + j] * (ds[i * a->lk + j] - dot));
		}
		/* S = scale Q K^T: dQ_h = scale dS K_h, dK_h = scale dS^T Q_h */
		cpu_gemm(0, 0, (int)a->lq, (int)a->hd, (int)a->lk, scale, ds, (int)a->lk,
			 k + h * a->hd, (int)a->cn, 0.0f, dq + h * a->hd, (int)a->cn);
		cpu_gemm(1, 0, (int)a->lk, (int)a->hd, (int)a->lq, scale, ds, (int)a->lk,
			 q + h * a->hd, (int)a->cn, 0.0f, dk + h * a->hd, (int)a->cn);
	}
	/* self-attention sums all three paths into the one input.  The key
	 * bias gets no gradient: adding one score to every key of a row
	 * leaves its softmax as it is, so the gradient is zero, and summing
	 * it would give round-off alone, which Adam, dividing by its size,
	 * would turn into steps of the learning rate. */
	project_bwd(xq, a->c, a->lq, a->c, a->cn, mat_of(a, b->w, 0), dq, dmat_of(a, b->dw, 0),
		    dbias_of(kn, a, b->dw, 0), dxq);
	project_bwd(xk, a->c, a->lk, a->c, a->cn, mat_of(a, b->w, 1), dk, dmat_of(a, b->dw, 1),
		    NULL, dxk);
	project_bwd(xk, a->c, a->lk, a->c, a->cn, mat_of(a, b->w, 2), dv, dmat_of(a, b->dw, 2),
		    dbias_of(kn, a, b->dw, 2), dxk);
}

static int attn_bwd(const struct kern *kn, struct kbufs *b)
{
	struct attn a = attn_dims(kn, 1);

	for (int kk = 0; kk < kn->nin; kk++)
		if (b->din[kk])
			memset(b->din[kk], 0, (size_t)shape_elems(&kn->in[kk]) * sizeof(float));
	/* the output projection: dctx = dy Wo, a partial sum when c-split;
	 * split by heads, the gradient of its heads' context */
	memset(b->ws + a.dctx, 0, (size_t)(a.n * a.lq * a.c) * sizeof(float));
	if (heads_split(kn))
		project_bwd(b->ws + a.ctx + a.c0, a.c, a.n * a.lq, a.cn, a.c, mat_of(&a, b->w, 3),
			    b->dout, dmat_of(&a, b->dw, 3), dbias_of(kn, &a, b->dw, 3),
			    b->ws + a.dctx + a.c0);
	else
		project_bwd(b->ws + a.ctx, a.c, a.n * a.lq, a.c, a.cn, mat_of(&a, b->w, 3),
			    b->dout, dmat_of(&a, b->dw, 3), dbias_of(kn, &a, b->dw, 3),
			    b->ws + a.dctx);
	if (attn_across_heads(&a, b, b->ws + a.dctx))
		return -1;
	for (int64_t s = 0; s < a.n; s++)
		heads_bwd(kn, &a, b, s);
	return 0;
}

const struct kernel_ops cpu_attention = { attn_fwd, attn_bwd, attn_ws, 1 };
