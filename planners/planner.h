/*
 * The planner interface.  A planner is one file that fills a
 * `const struct planner` with designated initialisers and is listed once in
 * registry.c.  It reads its inputs const, allocates nothing global, respects
 * its time budget, is deterministic for a given seed, and returns a plan or
 * a clear reason (ap_err) why none exists.  The driver (`autopar plan`,
 * `autopar bench`) owns the plan and fills in what every plan shares: the
 * model, cluster, profile and planner names, the search time and seed.
 */
#ifndef AUTOPAR_PLANNER_H
#define AUTOPAR_PLANNER_H

#include <stdint.h>

#include "cluster.h"
#include "graph.h"
#include "plan.h"
#include "profile.h"

struct planner_input {
	const struct graph *g;
	const struct profile *p;
	const struct cluster *c;
	double budget_s; /* wall-clock budget of the search */
	uint64_t seed;
};

struct planner {
	const char *name;
	const char *description; /* one line */
	const char *anchor;      /* the paper or rule it follows */
	/* Fills stages, ops, schedule and micro-batches of out, which the
	 * driver has sized with plan_alloc(). */
	int (*plan)(const struct planner_input *in, struct plan *out);
};

extern const struct planner *const planners[];
extern const int nplanners;

const struct planner *planner_find(const char *name);

/* The driver: sizes out for in->g, runs pl timed, records the names of
 * the inputs (profile_name is the profile's name as the user gave it),
 * the planner, seed and search time, and validates the plan, so a plan that
 * does not fit the devices' memory is refused with the numbers. */
int planner_run(const struct planner *pl, const struct planner_input *in,
		const char *profile_name, struct plan *out);

/* Helpers every planner may use. */

/* Largest divisor of n that is at most cap (at least 1). */
int64_t largest_divisor(int64_t n, int64_t cap);

/* Puts op i on devices first..first+degree product-1 with the given
 * degrees (indexed by dim kind) in stage `stage`. */
int plan_place(struct plan *p, int i, int stage, const int degree[NDIMS], int first);

/* One stage over devices 0..ndev-1 with the given schedule. */
int plan_one_stage(struct plan *p, int ndev, enum sched_kind sched, int microbatches);

#endif
