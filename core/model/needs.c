/*
 * What a shard of an operator reads of its inputs (graph.h
 * op_input_varies(), op_input_need()): the one rule the simulator's
 * transfers and the runtime's gathers both follow, so the bytes the
 * simulator charges are the bytes the runtime moves.
 */
#include "model/needs.h"
#include "model/ops.h"

int op_input_varies(const struct op *op, int k, enum dim_kind d)
{
	/* self-attention computes its keys and values from the whole
	 * sequence: only a separate query input follows an l split */
	if (op->kind == OP_ATTENTION && d == DIM_L)
		return k == 0 && op->nin == 2;
	if (op->kind == OP_CONCAT && d == op_concat_axis(op))
		return 1;
	return op_input_follows(op, k, d);
}

enum dim_kind op_concat_axis(const struct op *op)
{
	return op->a.axis == NDIMS ? DIM_C : op->a.axis;
}

/* The input rows (or columns) [*lo, *hi) that the windows of output rows
 * [olo, ohi) of a conv2d or pool read along one dim (kernel k, stride st,
 * padding p): its share and the halo, clipped to the input's sz (what
 * lies outside is padding). */
static void window_span(int64_t olo, int64_t ohi, int k, int st, int p, int64_t sz,
			int64_t *lo, int64_t *hi)
{
	*lo = olo * st - p;
	*hi = (ohi - 1) * st - p + k;
	*lo = *lo < 0 ? 0 : *lo;
	*hi = *hi > sz ? sz : *hi;
	if (*lo >= *hi) { /* windows over padding only: one row keeps it simple */
		*lo = *lo < sz ? *lo : sz - 1;
		*hi = *lo + 1;
	}
}

/* The part of input k that output [olo, ohi) of a concat along its axis
 * holds: the input's overlap with that range, shifted by where the input
 * starts; empty ([0, 0)) when there is none. */
static void concat_span(const struct graph *g, const struct op *op, int k, int64_t olo,
			int64_t ohi, int64_t *lo, int64_t *hi)
{
	enum dim_kind d = op_concat_axis(op);
	int64_t at = 0, sz = shape_size(&g->ops[op->in[k]].out, d);

	for (int q = 0; q < k; q++)
		at += shape_size(&g->ops[op->in[q]].out, d);
	*lo = (olo > at ? olo : at) - at;
	*hi = (ohi < at + sz ? ohi : at + sz) - at;
	if (*hi <= *lo)
		*lo = *hi = 0;
}

void op_input_need(const struct graph *g, const struct op *op, int k, enum dim_kind d,
		   int i, int deg, int64_t olo, int64_t ohi, int64_t sz, int64_t *lo,
		   int64_t *hi)
{
	const struct op_attrs *a = &op->a;
	int window = op->kind == OP_CONV2D || op->kind == OP_MAXPOOL || op->kind == OP_AVGPOOL;

	if (!op_input_varies(op, k, d)) {
		*lo = 0;
		*hi = sz;
	} else if (op->kind == OP_CONCAT && d == op_concat_axis(op)) {
		concat_span(g, op, k, olo, ohi, lo, hi);
	} else if (window && d == DIM_H) {
		window_span(olo, ohi, a->kh, a->sh, a->ph, sz, lo, hi);
	} else if (window && d == DIM_W) {
		window_span(olo, ohi, a->kw, a->sw, a->pw, sz, lo, hi);
	} else {
		*lo = i * sz / deg;
		*hi = (i + 1) * sz / deg;
	}
}
