/*
 * Building a plan in a few calls (plan.h, docs/adding-a-planner.md): a
 * plan sized by plan_alloc() gets each stage's devices and round-robin
 * replicas, the `next` edges between stages (a chain in one call), each
 * operator's place and the schedule.  Every planner and test that makes a
 * plan goes through these, so a stage, a link or a placement is written
 * one way.
 */
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/intmath.h"
#include "plan/plan_build.h"

static int stage_ok(const struct plan *p, int s)
{
	if (s < 0 || s >= p->nstages)
		return ap_err(AP_EFAIL, NULL, 0, "stage %d of a plan of %d stage%s", s,
			      p->nstages, p->nstages == 1 ? "" : "s");
	return AP_OK;
}

/* devs[0..n): first, first + 1, ... (malloc'd; NULL when out of memory). */
static int *range(int first, int n)
{
	int *devs = malloc((n > 0 ? (size_t)n : 1) * sizeof *devs);

	for (int k = 0; devs && k < n; k++)
		devs[k] = first + k;
	return devs;
}

int plan_stage(struct plan *p, int s, const int *devs, int n, int replicas)
{
	int st = stage_ok(p, s);

	if (!st && (n < 1 || (replicas > 1 && n % replicas)))
		st = ap_err(AP_EFAIL, NULL, 0, "stage %d: %d device%s in %d replicas", s, n,
			    n == 1 ? "" : "s", replicas);
	if (!st)
		st = plan_set_devices(&p->stages[s].devices, &p->stages[s].ndev, devs, n);
	if (!st)
		p->stages[s].replicas = replicas > 1 ? replicas : 0;
	return st;
}

int plan_stage_range(struct plan *p, int s, int first, int n, int replicas)
{
	int *devs = range(first, n), st;

	if (!devs)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	st = plan_stage(p, s, devs, n, replicas);
	free(devs);
	return st;
}

int plan_link(struct plan *p, int s, int t)
{
	struct plan_stage *ps;
	int *next, st = stage_ok(p, s);

	if (!st)
		st = stage_ok(p, t);
	if (st)
		return st;
	ps = &p->stages[s];
	for (int e = 0; e < ps->nnext; e++)
		if (ps->next[e] == t)
			return AP_OK;
	next = realloc(ps->next, ((size_t)ps->nnext + 1) * sizeof *next);
	if (!next)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	next[ps->nnext++] = t;
	ps->next = next;
	return AP_OK;
}

int plan_chain(struct plan *p)
{
	int st = AP_OK;

	for (int s = 0; s + 1 < p->nstages && !st; s++)
		st = plan_link(p, s, s + 1);
	return st;
}

/* The number of shards of degree[] (their product), -1 when a degree is
 * below 1 or the product is past 2^20. */
static int shards(const int degree[NDIMS])
{
	int n = 1;

	for (int d = 0; d < NDIMS; d++) {
		if (degree[d] < 1 || n > (1 << 20) / degree[d])
			return -1;
		n *= degree[d];
	}
	return n;
}

int plan_link_edges(struct plan *p, const struct graph *g)
{
	int st = AP_OK;

	for (int i = 0; i < g->nops && !st; i++)
		for (int e = 0; e < g->ops[i].nin && !st; e++) {
			int s = p->ops[g->ops[i].in[e]].stage, t = p->ops[i].stage;

			if (s != t)
				st = plan_link(p, s, t);
		}
	/* each stage's successors in increasing order, as a chain's */
	for (int s = 0; s < p->nstages && !st; s++)
		if (p->stages[s].nnext > 1)
			qsort(p->stages[s].next, (size_t)p->stages[s].nnext, sizeof(int), int_cmp);
	return st;
}

int plan_place(struct plan *p, int i, int s, const int degree[NDIMS], const int *devs)
{
	int n = shards(degree);

	if (i < 0 || i >= p->nops)
		return ap_err(AP_EFAIL, NULL, 0, "operator %d of a plan of %d", i, p->nops);
	if (n > 0 && p->ops[i].tensor > 1)
		n *= p->ops[i].tensor;
	if (n < 0)
		return ap_err(AP_EFAIL, NULL, 0, "operator %d: degrees below 1 or too many shards",
			      i);
	p->ops[i].stage = s;
	memcpy(p->ops[i].degree, degree, sizeof p->ops[i].degree);
	return plan_set_devices(&p->ops[i].devices, &p->ops[i].ndev, devs, n);
}

int plan_place_range(struct plan *p, int i, int s, const int degree[NDIMS], int first)
{
	int n = shards(degree), *devs, st;

	if (n > 0 && i >= 0 && i < p->nops && p->ops[i].tensor > 1)
		n *= p->ops[i].tensor;
	devs = range(first, n);

	if (!devs)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	st = plan_place(p, i, s, degree, devs);
	free(devs);
	return st;
}

void plan_schedule(struct plan *p, enum sched_kind k, int microbatches)
{
	p->sched = k;
	p->microbatches = microbatches;
}

int plan_one_stage(struct plan *p, int ndev, enum sched_kind sched, int microbatches)
{
	plan_schedule(p, sched, microbatches);
	return plan_stage_range(p, 0, 0, ndev, 0);
}
