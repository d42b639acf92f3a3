/*
 * Timing one operator shard with a backend (profiler.h).
 */
#include "profiler.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "err.h"
#include "params.h"
#include "rng.h"

/* the shape a shard of op sees of tensor s: the dims that follow the
 * split divided, rounded up as graph_op_signature() does */
static void shard_of(const struct op *op, int k, const struct shape *s,
		     const int degree[NDIMS], struct shape *out)
{
	*out = *s;
	for (int q = 0; q < s->rank; q++)
		if (k < 0 || op_input_follows(op, k, s->kind[q]))
			out->size[q] = (s->size[q] + degree[s->kind[q]] - 1) / degree[s->kind[q]];
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define REPS 31

/* median of REPS timings, after two untimed runs; a run of less than
 * 50 us is repeated inside one timing, so the clock's resolution does
 * not show */
static int time_it(int (*fn)(const struct kern *, struct kbufs *), const struct kern *k,
		   struct kbufs *b, double *us)
{
	double t[REPS], t0;
	int inner = 1;

	for (int w = 0; w < 2; w++)
		if (fn(k, b))
			return AP_EFAIL;
	t0 = now_s();
	if (fn(k, b))
		return AP_EFAIL;
	while ((now_s() - t0) * inner < 50e-6 && inner < 1024)
		inner *= 2;
	for (int r = 0; r < REPS; r++) {
		t0 = now_s();
		for (int q = 0; q < inner; q++)
			if (fn(k, b))
				return AP_EFAIL;
		t[r] = (now_s() - t0) / inner;
	}
	qsort(t, REPS, sizeof *t, cmp_double);
	*us = t[REPS / 2] * 1e6;
	return AP_OK;
}

int profiler_measure(const struct backend *be, const struct graph *g, int i,
		     const int degree[NDIMS], double *fwd_us, double *bwd_us,
		     int64_t *ws_bytes)
{
	const struct op *op = &g->ops[i];
	const struct kernel_ops *ko = be->ops[op->kind];
	float *bufs[2 * KERN_MAX_IN + 6] = { 0 };
	struct kern k = { .op = op, .op_index = i, .nin = op->nin };
	struct kbufs b = { .salt = 1 };
	int64_t nout, nws, cn;
	int nb = 0, st = AP_OK;
	uint64_t key = 1;

	*fwd_us = *bwd_us = 0;
	*ws_bytes = 0;
	if (op->kind == OP_INPUT)
		return AP_OK; /* the runtime makes inputs before the step */
	if (!ko)
		return ap_err(AP_EINPUT, g->path, op->line, "'%s' (%s): no %s kernel", op->name,
			      op_kind_name(op->kind), be->name);
	shard_of(op, -1, &op->out, degree, &k.out);
	for (int q = 0; q < op->out.rank; q++)
		k.gsize[q] = op->out.size[q];
	for (int kk = 0; kk < op->nin; kk++) {
		const struct shape *x = &g->ops[op->in[kk]].out;

		shard_of(op, kk, x, degree, &k.in[kk]);
		for (int q = 0; q < x->rank; q++)
			k.igsize[kk][q] = x->size[q];
	}
	cn = shape_size(&k.out, DIM_C);
	k.nparams = op->params > 0 ? params_count(g, i, cn) : 0;
	nout = shape_elems(&k.out);
	nws = ko->ws_floats ? ko->ws_floats(&k) : 0;
	*ws_bytes = nws * (int64_t)sizeof(float);
	/* inputs and their gradients, weights, gradient, output, dout, ws, labels */
	for (int kk = 0; kk < op->nin; kk++) {
		int64_t n = shape_elems(&k.in[kk]);
		float *x = bufs[nb++] = be->alloc((size_t)n * sizeof(float));

		if (!x)
			goto oom;
		for (int64_t e = 0; e < n; e++)
			x[e] = op->kind == OP_EMBEDDING
				       ? (float)(int64_t)(rng_unit(key++) * (double)op->a.vocab)
				       : (float)(2 * rng_unit(key++) - 1);
		b.in[kk] = x;
		if (g->ops[op->in[kk]].kind != OP_INPUT && op->kind != OP_EMBEDDING &&
		    !(b.din[kk] = bufs[nb++] = be->alloc((size_t)n * sizeof(float))))
			goto oom;
	}
	if (!(b.out = bufs[nb++] = be->alloc((size_t)nout * sizeof(float))) ||
	    !(bufs[nb++] = be->alloc((size_t)nout * sizeof(float))) ||
	    !(b.ws = bufs[nb++] = be->alloc((size_t)(nws + 1) * sizeof(float))))
		goto oom;
	b.dout = bufs[nb - 2];
	for (int64_t e = 0; e < nout; e++)
		bufs[nb - 2][e] = (float)(2 * rng_unit(key++) - 1) / (float)nout;
	if (k.nparams) {
		float *full = be->alloc((size_t)op->params * sizeof(float));

		if (!full || !(bufs[nb++] = be->alloc((size_t)k.nparams * sizeof(float))) ||
		    !(b.dw = bufs[nb++] = be->alloc((size_t)k.nparams * sizeof(float)))) {
			be->release(full);
			goto oom;
		}
		params_init(g, i, 1, full);
		params_slice(g, i, 0, cn, full, bufs[nb - 2], 0);
		be->release(full);
		b.w = bufs[nb - 2];
	}
	if (op->kind == OP_LOSS) {
		int64_t classes = shape_size(&k.in[0], DIM_C);

		if (!(bufs[nb++] = be->alloc((size_t)nout * sizeof(float))))
			goto oom;
		for (int64_t e = 0; e < nout; e++)
			bufs[nb - 1][e] = (float)(e % classes);
		b.labels = bufs[nb - 1];
	}
	st = time_it(ko->fwd, &k, &b, fwd_us);
	if (!st)
		st = time_it(ko->bwd, &k, &b, bwd_us);
	if (st)
		st = ap_err(AP_EFAIL, g->path, op->line, "kernel of '%s' failed", op->name);
	goto out;
oom:
	st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
out:
	for (int q = 0; q < nb; q++)
		be->release(bufs[q]);
	return st;
}
