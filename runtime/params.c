/*
 * Parameter layouts, initial values and slices (params.h).
 */
#include "params.h"

#include <math.h>
#include <string.h>

#include "rng.h"

/* For the row-sliced kinds, the weight floats per output channel (its
 * fan-in); 0 for kinds held whole.  Attention has four such matrices
 * (q, k, v, o), linear and conv2d one. */
static int64_t row_len(const struct graph *g, int i)
{
	const struct op *op = &g->ops[i];
	const struct shape *x = op->nin ? &g->ops[op->in[0]].out : NULL;

	switch (op->kind) {
	case OP_LINEAR:
	case OP_ATTENTION:
		return shape_size(x, DIM_C);
	case OP_CONV2D:
		return shape_size(x, DIM_C) / op->a.groups * op->a.kh * op->a.kw;
	default:
		return 0;
	}
}

static int blocks(const struct op *op)
{
	return op->kind == OP_ATTENTION ? 4 : 1;
}

int64_t params_count(const struct graph *g, int i, int64_t cn)
{
	const struct op *op = &g->ops[i];
	int64_t rl = row_len(g, i);

	if (rl > 0)
		return blocks(op) * (cn * rl + (op->a.bias ? cn : 0));
	if (op->kind == OP_EMBEDDING)
		return op->a.vocab * cn;
	if (op->kind == OP_BATCHNORM)
		return 2 * cn;
	return op->params;
}

void params_init(const struct graph *g, int i, uint64_t seed, float *full)
{
	const struct op *op = &g->ops[i];
	int64_t n = op->params, fan = row_len(g, i);
	double bound;

	if (op->kind == OP_LAYERNORM || op->kind == OP_BATCHNORM) {
		int64_t c = n / 2;

		for (int64_t k = 0; k < c; k++) {
			full[k] = 1.0f;
			full[c + k] = 0.0f;
		}
		return;
	}
	/* an embedding row is a token's vector: unit-scale, as N(0, 1) */
	bound = op->kind == OP_EMBEDDING ? sqrt(3.0) : 1.0 / sqrt((double)(fan > 0 ? fan : 1));
	for (int64_t k = 0; k < n; k++)
		full[k] = (float)(bound * (2.0 * rng_unit(rng_key(seed, (uint64_t)i,
								  (uint64_t)k)) - 1.0));
}

void params_slice(const struct graph *g, int i, int64_t c_lo, int64_t cn, float *full,
		  float *slice, int to_full)
{
	const struct op *op = &g->ops[i];
	int64_t rl = row_len(g, i), cout = op->out.size[shape_dim(&op->out, DIM_C)];
	int64_t parts[8][3]; /* (offset in full, offset in slice, floats) */
	int np = 0, nb = blocks(op);

	/* the weight blocks [cout][rl], then their biases [cout] */
	if (rl > 0) {
		for (int k = 0; k < nb; k++)
			parts[np][0] = (k * cout + c_lo) * rl, parts[np][1] = k * cn * rl,
			parts[np][2] = cn * rl, np++;
		for (int k = 0; k < nb && op->a.bias; k++)
			parts[np][0] = nb * cout * rl + k * cout + c_lo,
			parts[np][1] = nb * cn * rl + k * cn, parts[np][2] = cn, np++;
	} else if (op->kind == OP_EMBEDDING) {
		for (int64_t v = 0; v < op->a.vocab; v++) {
			float *f = full + v * cout + c_lo, *s = slice + v * cn;

			memcpy(to_full ? f : s, to_full ? s : f, (size_t)cn * sizeof(float));
		}
		return;
	} else if (op->kind == OP_BATCHNORM) { /* gamma[cout], then beta[cout] */
		for (int k = 0; k < 2; k++)
			parts[np][0] = k * cout + c_lo, parts[np][1] = k * cn, parts[np][2] = cn, np++;
	} else {
		parts[np][0] = 0, parts[np][1] = 0, parts[np][2] = op->params, np++;
	}
	for (int k = 0; k < np; k++) {
		float *f = full + parts[k][0], *s = slice + parts[k][1];

		memcpy(to_full ? f : s, to_full ? s : f, (size_t)parts[k][2] * sizeof(float));
	}
}
