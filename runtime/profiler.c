/*
 * Timing one operator shard with a backend (profiler.h).
 */
#include "profiler.h"

#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "hw/device.h"
#include "util/err.h"
#include "params.h"
#include "rng.h"
#include "model/ops.h"

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

/* Starts a timing: on the backend's device clock where it has one, else
 * on the host's. */
static int timing_start(const struct backend *be, double *t0)
{
	*t0 = now_s();
	return be->timer_start ? be->timer_start() : AP_OK;
}

/* Ends it: *s, the seconds since timing_start, once everything queued
 * has run. */
static int timing_stop(const struct backend *be, double t0, double *s)
{
	double us;

	if (be->timer_stop) {
		if (be->timer_stop(&us))
			return AP_EFAIL;
		*s = us * 1e-6;
		return AP_OK;
	}
	if (be->sync())
		return AP_EFAIL;
	*s = now_s() - t0;
	return AP_OK;
}

/* median of REPS timings, after two untimed runs.  A backend that can
 * evict its caches does so before each timing, which times one run, and
 * so does one with a device clock, which resolves a single kernel;
 * otherwise a run of less than 50 us is repeated inside one timing, so
 * the host clock's resolution does not show.  A device backend queues
 * its kernels: the host clock stops once the backend has run everything
 * queued, a device clock at the mark after the last one. */
static int time_it(const struct backend *be, int (*fn)(const struct kern *, struct kbufs *),
		   const struct kern *k, struct kbufs *b, double *us)
{
	double t[REPS], t0, s;
	int inner = 1;

	for (int w = 0; w < 2; w++)
		if (fn(k, b))
			return AP_EFAIL;
	if (be->sync() || timing_start(be, &t0) || fn(k, b) || timing_stop(be, t0, &s))
		return AP_EFAIL;
	while (!be->evict && !be->timer_start && s * inner < 50e-6 && inner < 1024)
		inner *= 2;
	for (int r = 0; r < REPS; r++) {
		if (be->evict)
			be->evict();
		if (timing_start(be, &t0))
			return AP_EFAIL;
		for (int q = 0; q < inner; q++)
			if (fn(k, b))
				return AP_EFAIL;
		if (timing_stop(be, t0, &s))
			return AP_EFAIL;
		t[r] = s / inner;
	}
	qsort(t, REPS, sizeof *t, cmp_double);
	*us = t[REPS / 2] * 1e6;
	return AP_OK;
}

/* n floats of backend memory holding host[0..n) (host is freed) */
static float *upload_free(const struct backend *be, float *host, int64_t n)
{
	float *p = host ? be->alloc((size_t)(n > 0 ? n : 1) * sizeof(float)) : NULL;

	if (p && be->upload(p, host, (size_t)n * sizeof(float))) {
		be->release(p);
		p = NULL;
	}
	free(host);
	return p;
}

static float *host_floats(int64_t n)
{
	return malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
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
	int nb = 0, st = AP_OK, tied;
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
	/* a tied linear reads a weight it does not own (its embedding's
	 * table): timed with one of its own shape */
	tied = op->kind == OP_LINEAR && op->a.tie >= 0;
	k.nparams = op->params > 0 || tied ? params_count(g, i, cn) : 0;
	nout = shape_elems(&k.out);
	nws = ko->ws_floats ? ko->ws_floats(&k) : 0;
	*ws_bytes = nws * (int64_t)sizeof(float);
	/* inputs and their gradients, weights, gradient, output, dout, ws, labels */
	for (int kk = 0; kk < op->nin; kk++) {
		int64_t n = shape_elems(&k.in[kk]);
		float *x = host_floats(n);

		for (int64_t e = 0; x && e < n; e++)
			x[e] = op->kind == OP_EMBEDDING
				       ? (float)(int64_t)(rng_unit(key++) * (double)op->a.vocab)
				       : (float)(2 * rng_unit(key++) - 1);
		if (!(b.in[kk] = bufs[nb++] = upload_free(be, x, n)))
			goto oom;
		if (g->ops[op->in[kk]].kind != OP_INPUT && op->kind != OP_EMBEDDING &&
		    !(b.din[kk] = bufs[nb++] = be->alloc((size_t)n * sizeof(float))))
			goto oom;
	}
	if (!(b.out = bufs[nb++] = be->alloc((size_t)nout * sizeof(float))) ||
	    !(b.ws = bufs[nb++] = be->alloc((size_t)(nws + 1) * sizeof(float))))
		goto oom;
	{
		float *dy = host_floats(nout);

		for (int64_t e = 0; dy && e < nout; e++)
			dy[e] = (float)(2 * rng_unit(key++) - 1) / (float)nout;
		if (!(b.dout = bufs[nb++] = upload_free(be, dy, nout)))
			goto oom;
	}
	if (k.nparams) {
		int64_t nfull = tied ? params_count(g, i, shape_size(&op->out, DIM_C)) : op->params;
		float *full = calloc((size_t)nfull, sizeof *full), *w = host_floats(k.nparams);

		if (!full || !w) {
			free(full);
			free(w);
			goto oom;
		}
		st = params_init(g, tied ? op->a.tie : i, 1, full);
		if (!st)
			params_slice(g, i, 0, cn, full, w, 0);
		free(full);
		if (st) {
			free(w);
			goto out;
		}
		if (!(b.w = bufs[nb++] = upload_free(be, w, k.nparams)) ||
		    !(b.dw = bufs[nb++] = be->alloc((size_t)k.nparams * sizeof(float))))
			goto oom;
	}
	if (op->kind == OP_LOSS) {
		int64_t classes = shape_size(&k.in[0], DIM_C);
		float *y = host_floats(nout);

		for (int64_t e = 0; y && e < nout; e++)
			y[e] = (float)(e % classes);
		if (!(b.labels = bufs[nb++] = upload_free(be, y, nout)))
			goto oom;
	}
	st = time_it(be, ko->fwd, &k, &b, fwd_us);
	if (!st)
		st = time_it(be, ko->bwd, &k, &b, bwd_us);
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

/* median seconds of REPS runs of what(be, a, b, n) after one warm-up,
 * each waited for (on the device's clock where the backend has one: the
 * tiny kernel's time is then what one more kernel costs the device in a
 * queue, not the host's launch and wait) */
static int time_device(const struct backend *be, int (*what)(const struct backend *, float *,
							      float *, int64_t),
		       float *a, float *b, int64_t n, double *s)
{
	double t[REPS], t0;

	if (what(be, a, b, n) || be->sync())
		return AP_EFAIL;
	for (int r = 0; r < REPS; r++)
		if (timing_start(be, &t0) || what(be, a, b, n) || timing_stop(be, t0, &t[r]))
			return AP_EFAIL;
	qsort(t, REPS, sizeof *t, cmp_double);
	*s = t[REPS / 2];
	return AP_OK;
}

static int run_gemm(const struct backend *be, float *a, float *c, int64_t n)
{
	be->gemm(0, 0, (int)n, (int)n, (int)n, 1.0f, a, (int)n, a, (int)n, 0.0f, c, (int)n);
	return AP_OK;
}

static int run_copy(const struct backend *be, float *a, float *b, int64_t n)
{
	return be->copy(b, a, n);
}

static int run_tiny(const struct backend *be, float *a, float *b, int64_t n)
{
	(void)b, (void)n;
	return be->fill(a, 1, 0.0f);
}

int profiler_device(const struct backend *be, int gemm_n, int64_t bytes,
		    struct device_spec *d)
{
	int64_t n = bytes / (int64_t)sizeof(float), g = (int64_t)gemm_n * gemm_n;
	float *a = be->alloc((size_t)(n > g ? n : g) * sizeof(float));
	float *b = be->alloc((size_t)(n > g ? n : g) * sizeof(float));
	double s = 0;
	int st = a && b ? AP_OK : ap_err(AP_EFAIL, NULL, 0, "out of memory");

	if (!st)
		st = be->fill(a, n > g ? n : g, 0.5f);
	if (!st && !(st = time_device(be, run_gemm, a, b, gemm_n, &s)))
		d->fp32_flops_per_s = d->tensor_flops_per_s = 2.0 * (double)g * gemm_n / s;
	if (!st && !(st = time_device(be, run_copy, a, b, n, &s)))
		d->mem_bw_bytes_per_s = 2.0 * (double)n * sizeof(float) / s;
	if (!st && !(st = time_device(be, run_tiny, a, b, 1, &s)))
		d->launch_us = s * 1e6;
	be->release(a);
	be->release(b);
	return st;
}
