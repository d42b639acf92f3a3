/*
 * The measured timeline of one step (trace.h).
 */
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/output.h"
#include "util/err.h"
#include "util/grow.h"

/* A record crosses ranks as these doubles: rank, op, kind, mb, t0, t1. */
#define REC_DOUBLES 6

int trace_init(struct trace *tr)
{
	memset(tr, 0, sizeof *tr);
	if (pthread_mutex_init(&tr->lock, NULL))
		return ap_err(AP_EFAIL, NULL, 0, "cannot create the trace's lock");
	return AP_OK;
}

void trace_start(struct trace *tr)
{
	tr->n = 0;
	tr->origin = now_s();
}

int trace_add(struct trace *tr, int op, enum trace_kind kind, int mb, double t0, double t1)
{
	int st = AP_OK;

	pthread_mutex_lock(&tr->lock);
	if (grow(&tr->rec, tr->n, &tr->cap, sizeof *tr->rec, 64))
		st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
	else
		tr->rec[tr->n++] = (struct trace_rec){ op, (int)kind, mb, t0, t1 };
	pthread_mutex_unlock(&tr->lock);
	return st;
}

struct all_recs {
	const struct graph *g;
	const double *v; /* [n * REC_DOUBLES] */
	int n;
	double origin;
};

static int write_recs(FILE *f, void *ctx)
{
	static const char *kinds[] = { "fwd", "bwd", "update" };
	const struct all_recs *a = ctx;

	fprintf(f, "# res\tresource\tstart_ms\tend_ms\tkind\tmb\top\n");
	for (int i = 0; i < a->n; i++) {
		const double *r = a->v + (size_t)i * REC_DOUBLES;
		int op = (int)r[1], kind = (int)r[2];

		fprintf(f, "%d\tdevice %d\t%.6f\t%.6f\t%s\t%d\t%s\n", (int)r[0], (int)r[0],
			(r[4] - a->origin) * 1e3, (r[5] - a->origin) * 1e3, kinds[kind], (int)r[3],
			op >= 0 ? a->g->ops[op].name : "-");
	}
	return ferror(f) ? -1 : 0;
}

static int cmp_rec(const void *pa, const void *pb)
{
	const double *a = pa, *b = pb;

	if (a[0] != b[0])
		return a[0] < b[0] ? -1 : 1;
	return (a[4] > b[4]) - (a[4] < b[4]);
}

/* Ranks share one clock here (ranks of one machine); on several machines
 * each rank's times count from its own step start. */
int trace_write(struct trace *tr, struct transport *t, const struct graph *g, const char *path)
{
	double origin = -tr->origin, *mine = NULL, *all = NULL;
	int total = 0, before = 0, st;

	/* the record count and the slot of each rank: a sum of vectors in
	 * which every rank fills only its own part */
	double *counts = calloc((size_t)t->size, sizeof *counts);

	if (!counts)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	counts[t->rank] = tr->n;
	st = t->ops->sum(t, counts, t->size);
	if (!st)
		st = t->ops->max(t, &origin, 1); /* the earliest start */
	for (int r = 0; r < t->size && !st; r++) {
		before += r < t->rank ? (int)counts[r] : 0;
		total += (int)counts[r];
	}
	all = calloc((size_t)(total ? total : 1) * REC_DOUBLES, sizeof *all);
	if (!st && !all)
		st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
	mine = all ? all + (size_t)before * REC_DOUBLES : NULL;
	for (int i = 0; i < tr->n && !st; i++) {
		double *r = mine + (size_t)i * REC_DOUBLES;

		r[0] = t->rank;
		r[1] = tr->rec[i].op;
		r[2] = tr->rec[i].kind;
		r[3] = tr->rec[i].mb;
		r[4] = tr->rec[i].t0;
		r[5] = tr->rec[i].t1;
	}
	if (!st)
		st = t->ops->sum(t, all, total * REC_DOUBLES);
	if (!st && t->rank == 0) {
		struct all_recs a = { g, all, total, -origin };

		qsort(all, (size_t)total, REC_DOUBLES * sizeof *all, cmp_rec);
		st = write_atomic(path, write_recs, &a);
	}
	free(counts);
	free(all);
	return st;
}

void trace_release(struct trace *tr)
{
	free(tr->rec);
	pthread_mutex_destroy(&tr->lock);
	memset(tr, 0, sizeof *tr);
}
