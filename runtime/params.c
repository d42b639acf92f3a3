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

/* Columns [c0, c0 + cn) of the rows x ld matrix m, packed. */
static void copy_cols(float *m, int64_t rows, int64_t ld, int64_t c0, int64_t cn, float *slice,
		      int to_full)
{
	for (int64_t r = 0; r < rows; r++) {
		float *f = m + r * ld + c0, *s = slice + r * cn;

		memcpy(to_full ? f : s, to_full ? s : f, (size_t)cn * sizeof(float));
	}
}

/* The part of op i's dim that tensor rank tr holds in role r: output
 * features (column, heads, vocab's ids), input features (row). */
static void tensor_span(const struct graph *g, int i, enum tp_role r, int tr, int t, int64_t *lo,
			int64_t *n)
{
	const struct op *op = &g->ops[i];
	int64_t s = r == TP_VOCAB ? op->a.vocab
		  : r == TP_ROW   ? row_len(g, i)
				  : op->out.size[shape_dim(&op->out, DIM_C)];

	tensor_part(s, tr, t, lo, n);
}

int64_t params_tensor_count(const struct graph *g, int i, enum tp_role r, int tr, int t)
{
	const struct op *op = &g->ops[i];
	int64_t lo, n, cout;

	if (!tp_role_splits_params(r))
		return op->params;
	cout = op->out.size[shape_dim(&op->out, DIM_C)];
	tensor_span(g, i, r, tr, t, &lo, &n);
	switch (r) {
	case TP_ROW:
		return cout * n + (op->a.bias ? cout : 0);
	case TP_HEADS: /* Wq, Wk, Wv rows and Wo columns; their biases, bo whole */
		return 4 * n * cout + (op->a.bias ? 3 * n + cout : 0);
	case TP_VOCAB:
		return n * cout;
	default:
		return params_count(g, i, n);
	}
}

void params_tensor_slice(const struct graph *g, int i, enum tp_role r, int tr, int t,
			 float *full, float *slice, int to_full)
{
	const struct op *op = &g->ops[i];
	int64_t lo, n, c, rl = row_len(g, i);
	float *f, *s;

	if (!tp_role_splits_params(r)) {
		memcpy(to_full ? full : slice, to_full ? slice : full,
		       (size_t)op->params * sizeof(float));
		return;
	}
	c = op->out.size[shape_dim(&op->out, DIM_C)];
	tensor_span(g, i, r, tr, t, &lo, &n);
	switch (r) {
	case TP_ROW:
		copy_cols(full, c, rl, lo, n, slice, to_full);
		f = full + c * rl;
		s = slice + c * n;
		if (op->a.bias)
			memcpy(to_full ? f : s, to_full ? s : f, (size_t)c * sizeof(float));
		return;
	case TP_HEADS:
		for (int k = 0; k < 3; k++) {
			f = full + (k * c + lo) * c;
			s = slice + k * n * c;
			memcpy(to_full ? f : s, to_full ? s : f, (size_t)(n * c) * sizeof(float));
		}
		copy_cols(full + 3 * c * c, c, c, lo, n, slice + 3 * n * c, to_full);
		for (int k = 0; k < 4 && op->a.bias; k++) {
			int64_t m = k < 3 ? n : c;

			f = full + 4 * c * c + k * c + (k < 3 ? lo : 0);
			s = slice + 4 * n * c + k * n;
			memcpy(to_full ? f : s, to_full ? s : f, (size_t)m * sizeof(float));
		}
		return;
	case TP_VOCAB:
		f = full + lo * c;
		memcpy(to_full ? f : slice, to_full ? slice : f, (size_t)(n * c) * sizeof(float));
		return;
	default:
		params_slice(g, i, lo, n, full, slice, to_full);
	}
}
