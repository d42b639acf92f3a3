/*
 * The first step of a model on one device, as a file for another
 * framework to repeat (dump.h).
 */
#include "dump.h"

#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "data.h"
#include "util/output.h"
#include "util/err.h"
#include "region.h"
#include "transport_self.h"

/* What goes into the file: per op, its input batch or labels (data[i]),
 * its initial parameters and their gradients. */
struct dump {
	const struct graph *g;
	uint64_t seed;
	double loss;
	float **data, **w, **dw;
};

static int64_t data_count(const struct graph *g, int i)
{
	return shape_elems(&g->ops[i].out);
}

static int put_tensors(FILE *f, const struct dump *d, int body)
{
	static const char *const what[] = { "input", "labels", "param", "grad" };

	for (int k = 0; k < 4; k++)
		for (int i = 0; i < d->g->nops; i++) {
			const float *t = k < 2 ? d->data[i] : k == 2 ? d->w[i] : d->dw[i];
			int64_t n = k < 2 ? data_count(d->g, i) : d->g->ops[i].params;

			if (!t || (k == 0) != (d->g->ops[i].kind == OP_INPUT))
				continue;
			if (!body)
				fprintf(f, "tensor %s %s %lld\n", what[k], d->g->ops[i].name,
					(long long)n);
			else if (fwrite(t, sizeof *t, (size_t)n, f) != (size_t)n)
				return AP_EFAIL;
		}
	return AP_OK;
}

static int write_dump(FILE *f, void *ctx)
{
	const struct dump *d = ctx;

	fprintf(f, "autopar-dump 1\nmodel %s\nbatch %lld\nseed %llu\nloss %.17g\n", d->g->name,
		(long long)d->g->batch, (unsigned long long)d->seed, d->loss);
	if (put_tensors(f, d, 0))
		return AP_EFAIL;
	fputs("end\n", f);
	if (put_tensors(f, d, 1))
		return AP_EFAIL;
	return ferror(f) ? AP_EFAIL : AP_OK;
}

/* The whole batch of step 0: every input, and the labels of every loss. */
static int fill_data(const struct graph *g, const struct exec_opts *o, float **data)
{
	struct data dd;
	int st = data_init(&dd, g, o->seed, o->pool);

	for (int i = 0; i < g->nops && !st; i++) {
		const struct op *op = &g->ops[i];
		struct region r;

		if (op->kind != OP_INPUT && op->kind != OP_LOSS)
			continue;
		if (!(data[i] = malloc((size_t)data_count(g, i) * sizeof **data))) {
			st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
			break;
		}
		for (int q = 0; q < NDIMS; q++) {
			r.lo[q] = 0;
			r.hi[q] = shape_extent(&op->out, (enum dim_kind)q, g->batch);
		}
		if (op->kind == OP_INPUT)
			data_input(&dd, i, 0, &r, data[i]);
		else
			st = data_labels(&dd, i, 0, &r, data[i]);
	}
	if (dd.id_range)
		data_release(&dd);
	return st;
}

int dump_first_step(const char *path, const struct graph *g, const struct backend *be,
		    const struct exec_opts *o)
{
	struct dump d = { g, o->seed, 0, NULL, NULL, NULL };
	struct exec_opts one = *o;
	struct transport self;
	struct plan blank, ref;
	struct exec *e = NULL;
	int st;

	plan_init(&blank);
	plan_init(&ref);
	d.data = calloc((size_t)g->nops, sizeof *d.data);
	d.w = calloc((size_t)g->nops, sizeof *d.w);
	d.dw = calloc((size_t)g->nops, sizeof *d.dw);
	st = d.data && d.w && d.dw ? AP_OK : ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int i = 0; i < g->nops && !st; i++) {
		if (g->ops[i].params <= 0)
			continue;
		d.w[i] = malloc((size_t)g->ops[i].params * sizeof **d.w);
		d.dw[i] = malloc((size_t)g->ops[i].params * sizeof **d.dw);
		if (!d.w[i] || !d.dw[i])
			st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	if (!st)
		st = fill_data(g, o, d.data);
	/* plain single-device training of the whole batch (a blank plan is
	 * synchronous), whatever the plan run */
	one.steps = 1;
	one.checked = NULL;
	if (!st)
		st = check_reference_plan(g, &blank, &ref);
	transport_self_init(&self);
	if (!st)
		st = exec_create(&e, g, &ref, be, &self, &one);
	for (int i = 0; i < g->nops && !st; i++)
		if (d.w[i])
			st = exec_gather_params(e, i, d.w[i]);
	if (!st)
		st = exec_step(e, 0, &d.loss);
	for (int i = 0; i < g->nops && !st; i++)
		if (d.dw[i])
			st = exec_gather_momentum(e, i, d.dw[i]);
	if (!st && write_atomic(path, write_dump, &d))
		st = ap_err(AP_EFAIL, path, 0, "cannot write the dump");
	exec_free(e);
	plan_release(&ref);
	plan_release(&blank);
	for (int i = 0; i < g->nops; i++) {
		if (d.data)
			free(d.data[i]);
		if (d.w)
			free(d.w[i]);
		if (d.dw)
			free(d.dw[i]);
	}
	free(d.data);
	free(d.w);
	free(d.dw);
	return st;
}
