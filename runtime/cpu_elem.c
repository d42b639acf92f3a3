/*
 * CPU kernels of the element-wise operators: activations (relu, erf
 * gelu as PyTorch's default through cpu_erf1p, tanh, sigmoid), sums and
 * products of equally shaped inputs, concatenation, the identity of flatten and reshape (the
 * memory order does not change), and dropout with a mask drawn from a hash
 * of the element's position in the whole batch, so every split of the op
 * draws the same mask as one device does.
 */
#include "cpu_kern.h"
#include "rng.h"

#include <math.h>
#include <string.h>

static int64_t nel(const struct kern *k)
{
	return shape_elems(&k->out);
}

/* Activations: y = f(x), dx = dy f'(x, y).  Local restrict pointers let
 * the compiler keep the loops free of reloads and branches; where f is
 * branch-free (relu, gelu through cpu_erf1p and cpu_expf) the kernels'
 * -O3 (Makefile) vectorises them. */
#define ACTIVATION(name, fwd_expr, grad_expr)                                 \
	static int name##_fwd(const struct kern *k, struct kbufs *b)          \
	{                                                                     \
		const float *restrict in = b->in[0];                          \
		float *restrict out = b->out;                                 \
		for (int64_t i = 0, n = nel(k); i < n; i++) {                 \
			float x = in[i];                                      \
			out[i] = (fwd_expr);                                  \
		}                                                             \
		return 0;                                                     \
	}                                                                     \
	static int name##_bwd(const struct kern *k, struct kbufs *b)          \
	{                                                                     \
		const float *restrict in = b->in[0], *restrict o = b->out;    \
		const float *restrict dy = b->dout;                           \
		float *restrict dx = b->din[0];                               \
		if (!dx)                                                      \
			return 0;                                             \
		for (int64_t i = 0, n = nel(k); i < n; i++) {                 \
			float x = in[i], y = o[i];                            \
			(void)x, (void)y;                                     \
			dx[i] = dy[i] * (grad_expr);                          \
		}                                                             \
		return 0;                                                     \
	}                                                                     \
	const struct kernel_ops cpu_##name = { name##_fwd, name##_bwd, NULL, 0 };

#define INV_SQRT2 0.70710678118654752f
#define INV_SQRT2PI 0.39894228040143268f

/* relu through a bit mask, not a branch (cpu_keep_if): the signs of
 * activations are a coin toss to a branch predictor */
static int relu_fwd(const struct kern *k, struct kbufs *b)
{
	const float *restrict in = b->in[0];
	float *restrict out = b->out;

	for (int64_t i = 0, n = nel(k); i < n; i++)
		out[i] = cpu_keep_if(in[i], in[i] > 0.0f);
	return 0;
}

static int relu_bwd(const struct kern *k, struct kbufs *b)
{
	const float *restrict in = b->in[0], *restrict dy = b->dout;
	float *restrict dx = b->din[0];

	if (!dx)
		return 0;
	for (int64_t i = 0, n = nel(k); i < n; i++)
		dx[i] = cpu_keep_if(dy[i], in[i] > 0.0f);
	return 0;
}

const struct kernel_ops cpu_relu = { relu_fwd, relu_bwd, NULL, 0 };
/* gelu: y = x Phi(x), so the backward reads Phi(x) = y / x off the
 * forward's output (0.5 + x / sqrt(2 pi) where |x| < 1e-3, its cubic
 * term below 2e-11) and adds x phi(x) */
ACTIVATION(gelu, 0.5f * x * cpu_erf1p(x * INV_SQRT2),
	   cpu_select(0.5f + x * INV_SQRT2PI, y / x, fabsf(x) < 1e-3f) +
		   x * INV_SQRT2PI * cpu_expf(-0.5f * x * x))
ACTIVATION(tanh, tanhf(x), 1.0f - y * y)
ACTIVATION(sigmoid, 1.0f / (1.0f + expf(-x)), y * (1.0f - y))

static int add_fwd(const struct kern *k, struct kbufs *b)
{
	int64_t n = nel(k);

	memcpy(b->out, b->in[0], (size_t)n * sizeof(float));
	for (int j = 1; j < k->nin; j++)
		for (int64_t i = 0; i < n; i++)
			b->out[i] += b->in[j][i];
	return 0;
}

static int add_bwd(const struct kern *k, struct kbufs *b)
{
	for (int j = 0; j < k->nin; j++)
		if (b->din[j])
			memcpy(b->din[j], b->dout, (size_t)nel(k) * sizeof(float));
	return 0;
}

const struct kernel_ops cpu_add = { add_fwd, add_bwd, NULL, 0 };

static int mul_fwd(const struct kern *k, struct kbufs *b)
{
	int64_t n = nel(k);

	memcpy(b->out, b->in[0], (size_t)n * sizeof(float));
	for (int j = 1; j < k->nin; j++)
		for (int64_t i = 0; i < n; i++)
			b->out[i] *= b->in[j][i];
	return 0;
}

/* d/dx_j of a product: the product of the other inputs (no division, so
 * zeros are handled) */
static int mul_bwd(const struct kern *k, struct kbufs *b)
{
	for (int j = 0; j < k->nin; j++) {
		if (!b->din[j])
			continue;
		for (int64_t i = 0, n = nel(k); i < n; i++) {
			float g = b->dout[i];

			for (int o = 0; o < k->nin; o++)
				if (o != j)
					g *= b->in[o][i];
			b->din[j][i] = g;
		}
	}
	return 0;
}

const struct kernel_ops cpu_mul = { mul_fwd, mul_bwd, NULL, 0 };

/* concat along dim di: every input is [outer][size_j][inner] */
static int concat_di(const struct kern *k)
{
	enum dim_kind d = k->op->a.axis == NDIMS ? DIM_C : k->op->a.axis;

	return shape_dim(&k->out, d);
}

static void concat_move(const struct kern *k, struct kbufs *b, int bwd)
{
	int di = concat_di(k);
	int64_t outer, osize, inner, at = 0;

	cpu_split_at(&k->out, di, &outer, &osize, &inner);
	for (int j = 0; j < k->nin; j++) {
		int64_t sz = k->in[j].size[di] * inner;

		if (bwd && !b->din[j]) {
			at += sz;
			continue;
		}
		for (int64_t o = 0; o < outer; o++) {
			float *y = b->out + o * osize * inner + at;
			const float *dy = b->dout + o * osize * inner + at;

			if (bwd)
				memcpy(b->din[j] + o * sz, dy, (size_t)sz * sizeof(float));
			else
				memcpy(y, b->in[j] + o * sz, (size_t)sz * sizeof(float));
		}
		at += sz;
	}
}

static int concat_fwd(const struct kern *k, struct kbufs *b)
{
	concat_move(k, b, 0);
	return 0;
}

static int concat_bwd(const struct kern *k, struct kbufs *b)
{
	concat_move(k, b, 1);
	return 0;
}

const struct kernel_ops cpu_concat = { concat_fwd, concat_bwd, NULL, 0 };

static int identity_fwd(const struct kern *k, struct kbufs *b)
{
	memcpy(b->out, b->in[0], (size_t)nel(k) * sizeof(float));
	return 0;
}

static int identity_bwd(const struct kern *k, struct kbufs *b)
{
	if (b->din[0])
		memcpy(b->din[0], b->dout, (size_t)nel(k) * sizeof(float));
	return 0;
}

const struct kernel_ops cpu_identity = { identity_fwd, identity_bwd, NULL, 0 };

/* 1 / (1 - p) where element i of the local output is kept, else 0 */
static float keep_scale(const struct kern *k, const struct kbufs *b, uint64_t salt,
			int64_t i)
{
	const struct shape *s = &k->out;
	int64_t g = 0, rest = i, coord[MAX_RANK];
	double u;

	for (int d = s->rank - 1; d >= 0; d--) {
		coord[d] = rest % s->size[d];
		rest /= s->size[d];
	}
	for (int d = 0; d < s->rank; d++)
		g = g * k->gsize[d] + k->glo[d] + coord[d] + (d == 0 ? b->n0 : 0);
	u = rng_unit(salt ^ rng_mix((uint64_t)g));
	return u < k->op->a.p ? 0.0f : (float)(1.0 / (1.0 - k->op->a.p));
}

static uint64_t dropout_salt(const struct kern *k, const struct kbufs *b)
{
	return rng_mix(b->salt ^ (uint64_t)k->op_index);
}

static int dropout_fwd(const struct kern *k, struct kbufs *b)
{
	uint64_t salt = dropout_salt(k, b);

	for (int64_t i = 0, n = nel(k); i < n; i++)
		b->out[i] = b->in[0][i] * keep_scale(k, b, salt, i);
	return 0;
}

static int dropout_bwd(const struct kern *k, struct kbufs *b)
{
	uint64_t salt = dropout_salt(k, b);

	if (!b->din[0])
		return 0;
	for (int64_t i = 0, n = nel(k); i < n; i++)
		b->din[0][i] = b->dout[i] * keep_scale(k, b, salt, i);
	return 0;
}

const struct kernel_ops cpu_dropout = { dropout_fwd, dropout_bwd, NULL, 0 };
