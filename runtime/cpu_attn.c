/*
 * CPU kernel of multi-head attention (Vaswani et al. 2017, section 3.2):
 * q, k, v projections of the query input and of the key/value input (the
 * same tensor for self-attention), per head softmax(q k^T / sqrt(d)) v
 * with an optional causal mask, and the output projection.  Parameters:
 * Wq, Wk, Wv, Wo, each [C][C] (out, in), then their biases.  The
 * workspace keeps every sample's projections, probabilities and context
 * for the backward, plus one sample's scratch for the backward.
 */
#include "cpu_kern.h"

#include <math.h>
#include <string.h>

struct attn {
	int64_t n, lq, lk, c, heads, hd;
	/* offsets of the workspace parts, in floats */
	int64_t q, k, v, ctx, p, dq, dk, dv, dctx, ds, end;
};

static struct attn attn_dims(const struct kern *kn)
{
	const struct shape *kv = &kn->in[kn->nin > 1 ? 1 : 0];
	struct attn a;

	a.n = kn->in[0].size[0];
	a.lq = kn->in[0].size[1];
	a.c = kn->in[0].size[2];
	a.lk = kv->size[1];
	a.heads = kn->op->a.heads;
	a.hd = a.c / a.heads;
	a.q = 0;
	a.k = a.q + a.n * a.lq * a.c;
	a.v = a.k + a.n * a.lk * a.c;
	a.ctx = a.v + a.n * a.lk * a.c;
	a.p = a.ctx + a.n * a.lq * a.c;
	a.dq = a.p + a.n * a.heads * a.lq * a.lk;
	a.dk = a.dq + a.lq * a.c;
	a.dv = a.dk + a.lk * a.c;
	a.dctx = a.dv + a.lk * a.c;
	a.ds = a.dctx + a.lq * a.c;
	a.end = a.ds + a.lq * a.lk;
	return a;
}

static int64_t attn_ws(const struct kern *k)
{
	return attn_dims(k).end;
}

/* y[rows][c] = x[rows][c] W^T + bias */
static void project(const float *x, int64_t rows, int64_t c, const float *w,
		    const float *bias, float *y)
{
	if (bias)
		for (int64_t r = 0; r < rows; r++)
			memcpy(y + r * c, bias, (size_t)c * sizeof(float));
	cpu_gemm(0, 1, (int)rows, (int)c, (int)c, 1.0f, x, (int)c, w, (int)c,
		 bias ? 1.0f : 0.0f, y, (int)c);
}

static const float *bias_of(const struct kern *k, const float *w, int which)
{
	int64_t c = k->in[0].size[2];

	return k->op->a.bias ? w + 4 * c * c + which * c : NULL;
}

static int attn_fwd(const struct kern *kn, struct kbufs *b)
{
	struct attn a = attn_dims(kn);
	const float *xkv = b->in[kn->nin > 1 ? 1 : 0];
	int64_t cc = a.c * a.c;
	float scale = 1.0f / sqrtf((float)a.hd);

	for (int64_t s = 0; s < a.n; s++) {
		const float *xq = b->in[0] + s * a.lq * a.c, *xk = xkv + s * a.lk * a.c;
		float *q = b->ws + a.q + s * a.lq * a.c, *k = b->ws + a.k + s * a.lk * a.c;
		float *v = b->ws + a.v + s * a.lk * a.c, *ctx = b->ws + a.ctx + s * a.lq * a.c;

		project(xq, a.lq, a.c, b->w, bias_of(kn, b->w, 0), q);
		project(xk, a.lk, a.c, b->w + cc, bias_of(kn, b->w, 1), k);
		project(xk, a.lk, a.c, b->w + 2 * cc, bias_of(kn, b->w, 2), v);
		for (int64_t h = 0; h < a.heads; h++) {
			float *p = b->ws + a.p + (s * a.heads + h) * a.lq * a.lk;

			cpu_gemm(0, 1, (int)a.lq, (int)a.lk, (int)a.hd, scale, q + h * a.hd,
				 (int)a.c, k + h * a.hd, (int)a.c, 0.0f, p, (int)a.lk);
			for (int64_t i = 0; i < a.lq; i++) {
				float *row = p + i * a.lk, mx = -INFINITY;
				double sum = 0;
				int64_t lim = kn->op->a.causal ? i + 1 : a.lk;

				for (int64_t j = 0; j < lim; j++)
					mx = row[j] > mx ? row[j] : mx;
				for (int64_t j = 0; j < lim; j++)
					sum += exp((double)row[j] - mx);
				for (int64_t j = 0; j < a.lk; j++)
					row[j] = j < lim ? (float)(exp((double)row[j] - mx) / sum) : 0.0f;
			}
			cpu_gemm(0, 0, (int)a.lq, (int)a.hd, (int)a.lk, 1.0f, p, (int)a.lk,
				 v + h * a.hd, (int)a.c, 0.0f, ctx + h * a.hd, (int)a.c);
		}
		project(ctx, a.lq, a.c, b->w + 3 * cc, bias_of(kn, b->w, 3),
			b->out + s * a.lq * a.c);
	}
	return 0;
}

/* The gradients of y = x W^T + bias: dW += dy^T x, dbias += sum dy,
 * dx (=, or += when acc) dy W. */
static void project_bwd(const float *x, int64_t rows, int64_t c, const float *w,
			const float *dy, float *dw, float *dbias, float *dx, int acc)
{
	cpu_gemm(1, 0, (int)c, (int)c, (int)rows, 1.0f, dy, (int)c, x, (int)c, 1.0f, dw,
		 (int)c);
	if (dbias)
		for (int64_t r = 0; r < rows; r++)
			for (int64_t j = 0; j < c; j++)
				dbias[j] += dy[r * c + j];
	if (dx)
		cpu_gemm(0, 0, (int)rows, (int)c, (int)c, 1.0f, dy, (int)c, w, (int)c,
			 acc ? 1.0f : 0.0f, dx, (int)c);
}

static int attn_bwd(const struct kern *kn, struct kbufs *b)
{
	struct attn a = attn_dims(kn);
	int self = kn->nin == 1;
	const float *xkv = b->in[self ? 0 : 1];
	float *dxkv = b->din[self ? 0 : 1];
	int64_t cc = a.c * a.c;
	float scale = 1.0f / sqrtf((float)a.hd);
	float *dq = b->ws + a.dq, *dk = b->ws + a.dk, *dv = b->ws + a.dv;
	float *dctx = b->ws + a.dctx, *ds = b->ws + a.ds;
	float *dbias = kn->op->a.bias ? b->dw + 4 * cc : NULL;

	for (int64_t s = 0; s < a.n; s++) {
		const float *xq = b->in[0] + s * a.lq * a.c, *xk = xkv + s * a.lk * a.c;
		const float *q = b->ws + a.q + s * a.lq * a.c, *k = b->ws + a.k + s * a.lk * a.c;
		const float *v = b->ws + a.v + s * a.lk * a.c;
		const float *ctx = b->ws + a.ctx + s * a.lq * a.c;
		float *dxq = b->din[0] ? b->din[0] + s * a.lq * a.c : NULL;
		float *dxk = dxkv ? dxkv + s * a.lk * a.c : NULL;

		project_bwd(ctx, a.lq, a.c, b->w + 3 * cc, b->dout + s * a.lq * a.c,
			    b->dw + 3 * cc, dbias ? dbias + 3 * a.c : NULL, dctx, 0);
		for (int64_t h = 0; h < a.heads; h++) {
			const float *p = b->ws + a.p + (s * a.heads + h) * a.lq * a.lk;

			/* dV_h = P^T dctx_h; dP = dctx_h V_h^T */
			cpu_gemm(1, 0, (int)a.lk, (int)a.hd, (int)a.lq, 1.0f, p, (int)a.lk,
				 dctx + h * a.hd, (int)a.c, 0.0f, dv + h * a.hd, (int)a.c);
			cpu_gemm(0, 1, (int)a.lq, (int)a.lk, (int)a.hd, 1.0f, dctx + h * a.hd,
				 (int)a.c, v + h * a.hd, (int)a.c, 0.0f, ds, (int)a.lk);
			/* through the softmax: dS = P (dP - rowsum(dP P)) */
			for (int64_t i = 0; i < a.lq; i++) {
				double dot = 0;

				for (int64_t j = 0; j < a.lk; j++)
					dot += (double)ds[i * a.lk + j] * p[i * a.lk + j];
				for (int64_t j = 0; j < a.lk; j++)
					ds[i * a.lk + j] =
						(float)(p[i * a.lk + j] * (ds[i * a.lk + j] - dot));
			}
			/* S = scale Q K^T: dQ_h = scale dS K_h, dK_h = scale dS^T Q_h */
			cpu_gemm(0, 0, (int)a.lq, (int)a.hd, (int)a.lk, scale, ds, (int)a.lk,
				 k + h * a.hd, (int)a.c, 0.0f, dq + h * a.hd, (int)a.c);
			cpu_gemm(1, 0, (int)a.lk, (int)a.hd, (int)a.lq, scale, ds, (int)a.lk,
				 q + h * a.hd, (int)a.c, 0.0f, dk + h * a.hd, (int)a.c);
		}
		project_bwd(xq, a.lq, a.c, b->w, dq, b->dw, dbias, dxq, 0);
		/* self-attention sums all three paths into the one input */
		project_bwd(xk, a.lk, a.c, b->w + cc, dk, b->dw + cc,
			    dbias ? dbias + a.c : NULL, dxk, self);
		project_bwd(xk, a.lk, a.c, b->w + 2 * cc, dv, b->dw + 2 * cc,
			    dbias ? dbias + 2 * a.c : NULL, dxk, 1);
	}
	return 0;
}

const struct kernel_ops cpu_attention = { attn_fwd, attn_bwd, attn_ws };
