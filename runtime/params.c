/*
 * Parameter layouts, initial values and slices (params.h).
 */
#include "params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "util/err.h"

/* GPT-2's standard deviation of every weight (its initializer_range),
 * where the model's `init gpt2` line gives no std= */
#define GPT2_STD 0.02

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

/* PyTorch's defaults: uniform in +-1/sqrt(fan_in) for the weights and
 * biases of linear, conv2d and attention (nn.Linear's and nn.Conv2d's
 * reset_parameters()), N(0, 1)-like embedding tables. */
static void init_torch(const struct graph *g, int i, uint64_t seed, float *full)
{
	const struct op *op = &g->ops[i];
	int64_t n = op->params, fan = row_len(g, i);
	/* an embedding row is a token's vector: unit-scale, as N(0, 1) */
	double bound = op->kind == OP_EMBEDDING ? sqrt(3.0)
						: 1.0 / sqrt((double)(fan > 0 ? fan : 1));

	for (int64_t k = 0; k < n; k++)
		full[k] = (float)(bound * (2.0 * rng_unit(rng_key(seed, (uint64_t)i,
								  (uint64_t)k)) - 1.0));
}

/* full[a, b) drawn from N(0, std^2).  Element k is one of the pair of
 * Box-Muller normals made from the uniforms keyed (k / 2) * 2 and + 1:
 * its value depends on (seed, op, k) only, as rng.h wants, and one
 * logarithm serves two elements. */
static void fill_normal(float *full, int64_t a, int64_t b, double std, uint64_t seed, int i)
{
	for (int64_t k = a; k < b;) {
		uint64_t m = (uint64_t)(k / 2) * 2;
		double u = 1.0 - rng_unit(rng_key(seed, (uint64_t)i, m)); /* (0, 1] */
		double r = std * sqrt(-2.0 * log(u));
		double t = 2.0 * M_PI * rng_unit(rng_key(seed, (uint64_t)i, m + 1));

		if (k % 2 == 0)
			full[k++] = (float)(r * cos(t));
		if (k < b)
			full[k++] = (float)(r * sin(t));
	}
}

/* The residual stream, for GPT-2's scheme (models/FORMAT.md): op w writes
 * into it when it is a linear or an attention whose output reaches an
 * add through dropouts only, and another input of that add is an
 * ancestor of w: the add is x + f(x), w the last projection of f (an
 * attention's output projection, an MLP's second linear).  The stream's
 * depth is the most writers on one path through the graph: twice the
 * layers of a GPT or a BERT, and for a model of parallel branches (mmt)
 * the layers one sample's features pass, not all the branches' sum. */
struct resid {
	const struct graph *g;
	int *ofs, *idx; /* consumers (graph_consumers()) */
	int *mark;      /* stamp of the last search that visited an op */
	int *stack;
	int stamp;
};

/* Whether s is an ancestor of w: a search back from w through the ops
 * after s (a path from s to w only passes those), each visited once. */
static int ancestor(struct resid *r, int s, int w)
{
	const struct graph *g = r->g;
	int top = 0;

	r->stamp++;
	r->stack[top++] = w;
	while (top) {
		const struct op *op = &g->ops[r->stack[--top]];

		for (int k = 0; k < op->nin; k++) {
			int j = op->in[k];

			if (j == s)
				return 1;
			if (j > s && r->mark[j] != r->stamp) {
				r->mark[j] = r->stamp;
				r->stack[top++] = j;
			}
		}
	}
	return 0;
}

/* Whether op c (w itself or a dropout of it) reaches a residual add of
 * w's: an add with c as one input and an ancestor of w as another. */
static int reaches_add(struct resid *r, int c, int w)
{
	const struct graph *g = r->g;

	for (int e = r->ofs[c]; e < r->ofs[c + 1]; e++) {
		const struct op *a = &g->ops[r->idx[e]];

		if (a->kind == OP_DROPOUT && reaches_add(r, r->idx[e], w))
			return 1;
		if (a->kind != OP_ADD)
			continue;
		for (int k = 0; k < a->nin; k++)
			if (a->in[k] != c && a->in[k] < w && ancestor(r, a->in[k], w))
				return 1;
	}
	return 0;
}

static int writes_residual(struct resid *r, int w)
{
	enum op_kind kind = r->g->ops[w].kind;

	return (kind == OP_LINEAR || kind == OP_ATTENTION) && reaches_add(r, w, w);
}

/* Whether op i writes into the residual stream, and the stream's depth. */
static int residual(const struct graph *g, int i, int *writes, int *depth)
{
	struct resid r = { .g = g };
	int n = g->nops, st = graph_consumers(g, &r.ofs, &r.idx);
	int *d = NULL;

	*writes = 0;
	*depth = 0;
	if (st)
		return st;
	r.mark = calloc((size_t)n, sizeof *r.mark);
	r.stack = malloc((size_t)n * sizeof *r.stack);
	d = calloc((size_t)n, sizeof *d);
	if (!r.mark || !r.stack || !d) {
		st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	*writes = writes_residual(&r, i);
	if (!*writes)
		goto out;
	/* inputs come first (graph.h): one pass in index order */
	for (int j = 0; j < n; j++) {
		for (int k = 0; k < g->ops[j].nin; k++)
			if (d[g->ops[j].in[k]] > d[j])
				d[j] = d[g->ops[j].in[k]];
		d[j] += writes_residual(&r, j);
		if (d[j] > *depth)
			*depth = d[j];
	}
out:
	free(r.ofs);
	free(r.idx);
	free(r.mark);
	free(r.stack);
	free(d);
	return st;
}

/* GPT-2's scheme (Radford et al. 2019, section 2.3, as HuggingFace's
 * GPT2PreTrainedModel._init_weights() has it): weights from N(0, std^2),
 * std 0.02 unless the model says otherwise, those of a residual
 * projection scaled by 1/sqrt(the stream's depth), so that the stream's
 * variance does not grow with the layers; biases zero.  Of an
 * attention's four projections only the output one writes into the
 * stream. */
static int init_gpt2(const struct graph *g, int i, uint64_t seed, float *full)
{
	const struct op *op = &g->ops[i];
	double std = g->init_std > 0 ? g->init_std : GPT2_STD;
	int64_t rl = row_len(g, i), cout = op->out.size[shape_dim(&op->out, DIM_C)];
	int64_t nw = rl > 0 ? blocks(op) * cout * rl : op->params, from = nw;
	int writes = 0, depth = 0, st = AP_OK;

	if (op->kind != OP_EMBEDDING)
		st = residual(g, i, &writes, &depth);
	if (st)
		return st;
	/* the weights from `from` on are scaled: Wo's [cout][rl], the last */
	if (writes)
		from = op->kind == OP_ATTENTION ? 3 * cout * rl : 0;
	fill_normal(full, 0, from, std, seed, i);
	fill_normal(full, from, nw, std / sqrt((double)(depth > 0 ? depth : 1)), seed, i);
	for (int64_t k = nw; k < op->params; k++)
		full[k] = 0.0f;
	return AP_OK;
}

int params_init(const struct graph *g, int i, uint64_t seed, float *full)
{
	const struct op *op = &g->ops[i];

	if (op->kind == OP_LAYERNORM || op->kind == OP_BATCHNORM) {
		int64_t c = op->params / 2;

		for (int64_t k = 0; k < c; k++) {
			full[k] = 1.0f;
			full[c + k] = 0.0f;
		}
		return AP_OK;
	}
	if (g->init == INIT_GPT2 && (row_len(g, i) > 0 || op->kind == OP_EMBEDDING))
		return init_gpt2(g, i, seed, full);
	init_torch(g, i, seed, full);
	return AP_OK;
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
