/*
 * CUDA kernel of multi-head attention, with the CPU kernel's semantics
 * (cpu_attn.c: its comment says what a shard computes, split along l or
 * c) and its layout: the same parameters (Wq, Wk, Wv, Wo, then biases),
 * the same workspace (kern_dims.h attn_dims), except that the backward's
 * score gradients hold every head of a sample at once.
 *
 * The projections are linear's (cuda_project, one cuBLAS SGEMM over all
 * samples where the rows are contiguous); the scores and the context are
 * one strided-batched SGEMM per sample over its heads (head h's q, k and
 * v are columns h hd.. of the sample's projections, so a head is the
 * next batch entry hd floats on); the softmax with its causal mask and
 * its backward are cuda_norm.cu's, over every (sample, head, query) row.
 */
#include "cuda_ctx.cuh"
#include "kern_dims.h"

#include <math.h>

/* base + off, or NULL where off < 0 (attn_bias: no bias) */
static const float *at(const float *base, int64_t off)
{
	return off < 0 ? NULL : base + off;
}

static float *at(float *base, int64_t off)
{
	return off < 0 ? NULL : base + off;
}

/* sample s's query rows of input 0 (or of its gradient) */
static int64_t xq_of(const struct attn *a, int64_t s)
{
	return (s * a->l0 + a->qoff) * a->c;
}

/* q = xq Wq^T + bq for every sample: one product when the query rows of
 * consecutive samples are adjacent (input 0 holds just them) */
static int project_q(const struct kern *kn, const struct attn *a, const struct kbufs *b)
{
	const float *w = b->w + attn_mat(a, 0), *bias = at(b->w, attn_bias(kn, a, 0));
	int64_t per = a->l0 == a->lq ? a->n : 1;

	for (int64_t s = 0; s < a->n; s += per)
		if (cuda_project(b->in[0] + xq_of(a, s), (int)(per * a->lq), (int)a->c, (int)a->cn, w,
				 bias, b->ws + a->q + s * a->lq * a->cn))
			return AP_EFAIL;
	return AP_OK;
}

static int attn_fwd(const struct kern *kn, struct kbufs *b)
{
	struct attn a = attn_dims(kn, 0);
	const float *xkv = b->in[kn->nin > 1 ? 1 : 0];
	float *ws = b->ws, scale = 1.0f / sqrtf((float)a.hd);
	int lq = (int)a.lq, lk = (int)a.lk, hd = (int)a.hd, cn = (int)a.cn, c = (int)a.c;
	int heads = (int)a.heads;
	long long sp = (long long)a.lq * a.lk;

	/* the context of the other shards' heads stays 0 until csum */
	CUDA_CHECK(cudaMemsetAsync(ws + a.ctx, 0, (size_t)(a.n * a.lq * a.c) * sizeof(float),
				   cuda_ctx.stream));
	if (project_q(kn, &a, b) ||
	    cuda_project(xkv, (int)(a.n * a.lk), c, cn, b->w + attn_mat(&a, 1),
			 at(b->w, attn_bias(kn, &a, 1)), ws + a.k) ||
	    cuda_project(xkv, (int)(a.n * a.lk), c, cn, b->w + attn_mat(&a, 2),
			 at(b->w, attn_bias(kn, &a, 2)), ws + a.v))
		return AP_EFAIL;
	/* S = scale Q_h K_h^T per head */
	for (int64_t s = 0; s < a.n; s++)
		if (cuda_gemm_rm(0, 1, lq, lk, hd, scale, ws + a.q + s * a.lq * a.cn, cn, hd,
				 ws + a.k + s * a.lk * a.cn, cn, hd, 0.0f,
				 ws + a.p + s * a.heads * sp, lk, sp, heads))
			return AP_EFAIL;
	if (cuda_softmax_rows(ws + a.p, ws + a.p, a.n * a.heads * a.lq, a.lk, a.lq,
			      attn_first_lim(kn, &a)))
		return AP_EFAIL;
	/* ctx_h = P_h V_h, into the shard's columns of the whole context */
	for (int64_t s = 0; s < a.n; s++)
		if (cuda_gemm_rm(0, 0, lq, hd, lk, 1.0f, ws + a.p + s * a.heads * sp, lk, sp,
				 ws + a.v + s * a.lk * a.cn, cn, hd, 0.0f,
				 ws + a.ctx + s * a.lq * a.c + a.c0, c, hd, heads))
			return AP_EFAIL;
	if (attn_across_heads(&a, b, ws + a.ctx))
		return AP_EFAIL;
	return cuda_project(ws + a.ctx, (int)(a.n * a.lq), c, cn, b->w + attn_mat(&a, 3),
			    at(b->w, attn_bias(kn, &a, 3)), b->out);
}

/* One sample's backward from its context gradient to q, k and v (every
 * head at once), and through the projections to the weights and inputs;
 * self-attention adds all three paths into its one input. */
static int heads_bwd(const struct kern *kn, const struct attn *a, struct kbufs *b, int64_t s)
{
	int self = kn->nin == 1;
	float *ws = b->ws, *dxkv = b->din[self ? 0 : 1], scale = 1.0f / sqrtf((float)a->hd);
	int lq = (int)a->lq, lk = (int)a->lk, hd = (int)a->hd, cn = (int)a->cn, c = (int)a->c;
	int heads = (int)a->heads;
	long long sp = (long long)a->lq * a->lk;
	const float *p = ws + a->p + s * a->heads * sp;
	const float *dctx = ws + a->dctx + s * a->lq * a->c + a->c0;
	const float *q = ws + a->q + s * a->lq * a->cn, *k = ws + a->k + s * a->lk * a->cn;
	const float *v = ws + a->v + s * a->lk * a->cn;
	const float *xk = b->in[self ? 0 : 1] + s * a->lk * a->c;
	float *dq = ws + a->dq, *dk = ws + a->dk, *dv = ws + a->dv, *ds = ws + a->ds;
	float *dxq = b->din[0] ? b->din[0] + xq_of(a, s) : NULL;
	float *dxk = dxkv ? dxkv + s * a->lk * a->c : NULL;

	/* dV_h = P_h^T dctx_h; dP_h = dctx_h V_h^T; through the softmax;
	 * S = scale Q K^T: dQ_h = scale dS_h K_h, dK_h = scale dS_h^T Q_h;
	 * the key bias's gradient is zero (cpu_attn.c says why) */
	if (cuda_gemm_rm(1, 0, lk, hd, lq, 1.0f, p, lk, sp, dctx, c, hd, 0.0f, dv, cn, hd, heads) ||
	    cuda_gemm_rm(0, 1, lq, lk, hd, 1.0f, dctx, c, hd, v, cn, hd, 0.0f, ds, lk, sp, heads) ||
	    cuda_softmax_rows_bwd(p, ds, ds, a->heads * a->lq, a->lk) ||
	    cuda_gemm_rm(0, 0, lq, hd, lk, scale, ds, lk, sp, k, cn, hd, 0.0f, dq, cn, hd, heads) ||
	    cuda_gemm_rm(1, 0, lk, hd, lq, scale, ds, lk, sp, q, cn, hd, 0.0f, dk, cn, hd, heads))
		return AP_EFAIL;
	if (cuda_project_bwd(b->in[0] + xq_of(a, s), lq, c, cn, b->w + attn_mat(a, 0), dq,
			     b->dw + attn_mat(a, 0), at(b->dw, attn_bias(kn, a, 0)), dxq, 1.0f) ||
	    cuda_project_bwd(xk, lk, c, cn, b->w + attn_mat(a, 1), dk, b->dw + attn_mat(a, 1),
			     NULL, dxk, 1.0f) ||
	    cuda_project_bwd(xk, lk, c, cn, b->w + attn_mat(a, 2), dv, b->dw + attn_mat(a, 2),
			     at(b->dw, attn_bias(kn, a, 2)), dxk, 1.0f))
		return AP_EFAIL;
	return AP_OK;
}

static int attn_bwd(const struct kern *kn, struct kbufs *b)
{
	struct attn a = attn_dims(kn, 0);

	for (int kk = 0; kk < kn->nin; kk++)
		if (b->din[kk])
			CUDA_CHECK(cudaMemsetAsync(b->din[kk], 0,
						   (size_t)shape_elems(&kn->in[kk]) * sizeof(float),
						   cuda_ctx.stream));
	/* the output projection: dctx = dy Wo over every channel, a partial
	 * sum when c-split */
	if (cuda_project_bwd(b->ws + a.ctx, (int)(a.n * a.lq), (int)a.c, (int)a.cn,
			     b->w + attn_mat(&a, 3), b->dout, b->dw + attn_mat(&a, 3),
			     at(b->dw, attn_bias(kn, &a, 3)), b->ws + a.dctx, 0.0f) ||
	    attn_across_heads(&a, b, b->ws + a.dctx))
		return AP_EFAIL;
	for (int64_t s = 0; s < a.n; s++)
		if (heads_bwd(kn, &a, b, s))
			return AP_EFAIL;
	return AP_OK;
}

static int64_t attn_ws(const struct kern *k)
{
	return attn_dims(k, 0).end;
}

extern "C" const struct kernel_ops cuda_attention = { attn_fwd, attn_bwd, attn_ws, 0 };
