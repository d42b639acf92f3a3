/*
 * The single-device reference of --check (check.h).
 */
#include "check.h"

#include <math.h>
#include <string.h>

#include "util/err.h"
#include "transport_self.h"
#include "watch.h"
#include "plan/sched.h"
#include "plan/plan_build.h"

int check_reference_plan(const struct graph *g, const struct plan *p, struct plan *ref)
{
	static const int dev0 = 0;
	int async = sched_async(p->sched), st;

	st = plan_alloc(ref, g, async ? p->nstages : 1);
	for (int k = 0; k < ref->nstages && !st; k++) {
		st = plan_stage(ref, k, &dev0, 1, 0);
		if (async)
			ref->stages[k].id = p->stages[k].id;
		for (int e = 0; async && e < p->stages[k].nnext && !st; e++)
			st = plan_link(ref, k, p->stages[k].next[e]);
	}
	if (st)
		return st;
	snprintf(ref->cluster, sizeof ref->cluster, "%s", p->cluster);
	snprintf(ref->planner, sizeof ref->planner, "single");
	/* the same optimizer (exec_update.c) */
	ref->has_optimizer = p->has_optimizer;
	ref->optimizer = p->optimizer;
	if (async) {
		plan_schedule(ref, p->sched, p->microbatches);
		for (int i = 0; i < g->nops; i++)
			ref->ops[i].stage = p->ops[i].stage;
	}
	return AP_OK;
}

int check_train(const struct graph *g, const struct plan *ref, const struct backend *be,
		const struct exec_opts *o, int nsteps, double *losses, float **params)
{
	struct transport self;
	struct exec *e;
	int st;

	transport_self_init(&self);
	st = exec_create(&e, g, ref, be, &self, o);
	/* the other ranks wait meanwhile: the job's progress is this */
	for (int s = 0; s < nsteps && !st; s++) {
		st = exec_step(e, s, &losses[s]);
		watch_progress(0);
	}
	for (int i = 0; i < g->nops && !st; i++)
		if (params[i])
			st = exec_gather_params(e, i, params[i]);
	exec_free(e);
	return st;
}

double check_rel_diff(const float *a, const float *b, int64_t n)
{
	double diff = 0, scale = 0;

	for (int64_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]);

		if (!(d <= diff)) /* NaN counts as a difference */
			diff = d;
		scale = fmax(scale, fabs((double)b[i]));
	}
	return scale > 0 ? diff / scale : diff;
}
