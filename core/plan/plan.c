/*
 * The plan struct: allocation, the setters planners fill a plan with,
 * queries of its stages, and the names of the schedules.  Plans on disk
 * are plan_read.c's and plan_write.c's; plan_check.c holds
 * plan_validate(), which checks a plan against the graph and the cluster
 * it is meant for.
 */
#include "plan/plan.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/grow.h"
#include "plan/plan_impl.h"

/* The names are the schedule's spelling in plans and on the command line. */
static const char *const sched_names[NSCHED_KINDS] = {
	[SCHED_GPIPE] = "gpipe",
	[SCHED_1F1B] = "1f1b",
	[SCHED_1F1B_ASYNC] = "1f1b-async",
	[SCHED_ASYNC_PREDICT] = "async-predict",
	[SCHED_INTERLEAVED] = "interleaved-1f1b",
	[SCHED_ZB_H1] = "zb-h1",
};

/* Names with fields of their own in struct plan. */
static const char *const reserved_stats[] = { "seconds", "seed", "curve", "planner_est_ms",
					      "bound_ms", "gap", NULL };

const char *const plan_common_names[PLAN_NCOMMON] = { "planner_est_ms", "bound_ms", "gap" };
const size_t plan_common_ofs[PLAN_NCOMMON] = { offsetof(struct plan, est_ms),
					       offsetof(struct plan, bound_ms),
					       offsetof(struct plan, gap) };

const char *sched_name(enum sched_kind k)
{
	if ((unsigned)k >= NSCHED_KINDS)
		return "?";
	return sched_names[k];
}

int sched_parse(const char *s, enum sched_kind *out)
{
	for (int k = 0; k < NSCHED_KINDS; k++) {
		if (strcmp(s, sched_names[k]) == 0) {
			*out = (enum sched_kind)k;
			return 0;
		}
	}
	return -1;
}

int plan_op_tensor(const struct plan *p, int i)
{
	return p->ops[i].tensor > 1 ? p->ops[i].tensor : 1;
}

int plan_megatron_features(const struct plan *p)
{
	if (p->precision != PREC_FP32 || p->zero || p->seq_parallel || p->has_optimizer ||
	    p->sched == SCHED_INTERLEAVED || p->sched == SCHED_ZB_H1)
		return 1;
	for (int i = 0; i < p->nops; i++)
		if (plan_op_tensor(p, i) > 1 || p->ops[i].recompute == RECOMPUTE_SELECTIVE)
			return 1;
	return 0;
}

int plan_stage_microbatches(const struct plan *p, int s)
{
	return p->stages[s].microbatches > 0 ? p->stages[s].microbatches : p->microbatches;
}

int plan_mixed_microbatches(const struct plan *p)
{
	for (int s = 0; s < p->nstages; s++)
		if (plan_stage_microbatches(p, s) != p->microbatches)
			return 1;
	return 0;
}

int plan_stage_index(const struct plan *p, int id)
{
	for (int s = 0; s < p->nstages; s++)
		if (p->stages[s].id == id)
			return s;
	return -1;
}

int plan_stage_replicas(const struct plan *p, int s)
{
	return p->stages[s].replicas > 1 ? p->stages[s].replicas : 1;
}

int plan_round_robin(const struct plan *p)
{
	for (int s = 0; s < p->nstages; s++)
		if (plan_stage_replicas(p, s) > 1)
			return 1;
	return 0;
}

int plan_replica_device(const struct plan *p, int s, int dev, int g)
{
	const struct plan_stage *ps = &p->stages[s];
	int k = ps->ndev / plan_stage_replicas(p, s);

	for (int q = 0; q < k; q++)
		if (ps->devices[q] == dev)
			return ps->devices[g * k + q];
	return -1;
}

void plan_init(struct plan *p)
{
	memset(p, 0, sizeof *p);
	p->sched = SCHED_GPIPE;
	p->microbatches = 1;
	p->pred_iter_ms = -1;
	p->pred_samples_per_s = -1;
	p->pred_bubble = -1;
	p->pred_peak_mem_bytes = -1;
	p->pred_fits = -1;
	p->est_ms = p->bound_ms = p->gap = NAN;
}

void plan_release(struct plan *p)
{
	for (int i = 0; i < p->nstages; i++) {
		free(p->stages[i].devices);
		free(p->stages[i].next);
	}
	free(p->stages);
	for (int i = 0; i < p->nops; i++)
		free(p->ops[i].devices);
	free(p->ops);
	free(p->stat_name);
	free(p->stat_value);
	free(p->curve);
	plan_init(p);
}

int plan_add_curve(struct plan *p, double t_s, double ms)
{
	if (!isfinite(t_s) || !isfinite(ms) || t_s < 0 ||
	    (p->ncurve > 0 && t_s < p->curve[p->ncurve - 1][0]))
		return ap_err(AP_EINPUT, NULL, 0,
			      "search.curve: expected finite points in time order, got (%g, %g)",
			      t_s, ms);
	if (reserve(&p->curve, &p->cap_curve, (size_t)p->ncurve + 1, sizeof *p->curve))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	p->curve[p->ncurve][0] = t_s;
	p->curve[p->ncurve][1] = ms;
	p->ncurve++;
	return AP_OK;
}

int plan_set_devices(int **dst, int *ndst, const int *src, int n)
{
	int *d = NULL;

	if (n < 0)
		return ap_err(AP_EFAIL, NULL, 0, "negative device count %d", n);
	if (n > 0) {
		d = malloc((size_t)n * sizeof *d);
		if (!d)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		memcpy(d, src, (size_t)n * sizeof *d);
	}
	free(*dst);
	*dst = d;
	*ndst = n;
	return AP_OK;
}

struct plan_op *plan_ops_new(const struct graph *g)
{
	struct plan_op *ops = calloc(g->nops > 0 ? (size_t)g->nops : 1, sizeof *ops);

	for (int i = 0; ops && i < g->nops; i++)
		for (int d = 0; d < NDIMS; d++)
			ops[i].degree[d] = 1;
	return ops;
}

int plan_alloc(struct plan *p, const struct graph *g, int nstages)
{
	static const int dev0 = 0;
	int st = AP_OK;

	plan_release(p);
	if (nstages < 1) {
		st = ap_err(AP_EFAIL, NULL, 0, "a plan needs at least one stage, got %d",
			    nstages);
		goto out;
	}
	snprintf(p->model, sizeof p->model, "%s", g->name);
	p->batch = g->batch;
	p->stages = calloc((size_t)nstages, sizeof *p->stages);
	p->ops = plan_ops_new(g);
	if (!p->stages || !p->ops) {
		st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	p->nstages = nstages;
	p->nops = g->nops;
	for (int s = 0; s < nstages; s++)
		p->stages[s].id = s;
	/* Degree 1 everywhere is one shard, so one device keeps ndev equal
	 * to the product of the degrees. */
	for (int i = 0; i < g->nops && !st; i++)
		st = plan_set_devices(&p->ops[i].devices, &p->ops[i].ndev, &dev0, 1);
out:
	if (st)
		plan_release(p);
	return st;
}

int plan_stat_reserved(const char *name)
{
	for (int i = 0; reserved_stats[i]; i++)
		if (strcmp(name, reserved_stats[i]) == 0)
			return 1;
	return 0;
}

double plan_stat(const struct plan *p, const char *name)
{
	for (int i = 0; i < p->nstats; i++)
		if (strcmp(p->stat_name[i], name) == 0)
			return p->stat_value[i];
	return NAN;
}

int plan_set_stat(struct plan *p, const char *name, double value)
{
	char (*names)[32];
	double *values;

	if (strlen(name) >= sizeof p->stat_name[0] || !name[0])
		return ap_err(AP_EINPUT, NULL, 0,
			      "search statistic '%s': expected a name of 1 to %zu characters",
			      name, sizeof p->stat_name[0] - 1);
	if (plan_stat_reserved(name))
		return ap_err(AP_EINPUT, NULL, 0,
			      "search statistic '%s': name is reserved (set search_s or seed)",
			      name);
	/* JSON has no spelling for NaN or infinity. */
	if (!isfinite(value))
		return ap_err(AP_EINPUT, NULL, 0,
			      "search statistic '%s': expected a finite number", name);
	for (int i = 0; i < p->nstats; i++) {
		if (strcmp(p->stat_name[i], name) == 0) {
			p->stat_value[i] = value;
			return AP_OK;
		}
	}
	names = realloc(p->stat_name, (size_t)(p->nstats + 1) * sizeof *names);
	if (!names)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	p->stat_name = names;
	values = realloc(p->stat_value, (size_t)(p->nstats + 1) * sizeof *values);
	if (!values)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	p->stat_value = values;
	snprintf(p->stat_name[p->nstats], sizeof p->stat_name[0], "%s", name);
	p->stat_value[p->nstats] = value;
	p->nstats++;
	return AP_OK;
}
