/*
 * The list of planners: adding a planner is adding its file and one line
 * here.  Also the small helpers planner.h offers every planner.
 */
#include <string.h>

#include "err.h"
#include "planner.h"

extern const struct planner planner_single, planner_dp, planner_owt, planner_exhaustive;
extern const struct planner planner_graphpipe;
extern const struct planner planner_ilp;
extern const struct planner planner_pipedream;
extern const struct planner planner_mcmc;
extern const struct planner planner_piper;

const struct planner *const planners[] = {
	&planner_single,
	&planner_dp,
	&planner_owt,
	&planner_pipedream,
	&planner_exhaustive,
	&planner_ilp,
	&planner_mcmc,
	&planner_graphpipe,
	&planner_piper,
};
const int nplanners = sizeof planners / sizeof planners[0];

const struct planner *planner_find(const char *name)
{
	for (int i = 0; i < nplanners; i++)
		if (strcmp(planners[i]->name, name) == 0)
			return planners[i];
	return NULL;
}

int64_t largest_divisor(int64_t n, int64_t cap)
{
	for (int64_t d = cap < n ? cap : n; d > 1; d--)
		if (n % d == 0)
			return d;
	return 1;
}

int plan_place(struct plan *p, int i, int stage, const int degree[NDIMS], int first)
{
	int devs[4096], n = 1;

	for (int d = 0; d < NDIMS; d++)
		n *= degree[d];
	if (n > (int)(sizeof devs / sizeof devs[0]))
		return ap_err(AP_EINPUT, NULL, 0, "%d shards for one operator is too many", n);
	for (int k = 0; k < n; k++)
		devs[k] = first + k;
	p->ops[i].stage = stage;
	memcpy(p->ops[i].degree, degree, sizeof p->ops[i].degree);
	return plan_set_devices(&p->ops[i].devices, &p->ops[i].ndev, devs, n);
}

int plan_one_stage(struct plan *p, int ndev, enum sched_kind sched, int microbatches)
{
	int devs[4096];

	if (ndev > (int)(sizeof devs / sizeof devs[0]))
		return ap_err(AP_EINPUT, NULL, 0, "%d devices in one stage is too many", ndev);
	for (int k = 0; k < ndev; k++)
		devs[k] = k;
	p->sched = sched;
	p->microbatches = microbatches;
	p->stages[0].id = 0;
	return plan_set_devices(&p->stages[0].devices, &p->stages[0].ndev, devs, ndev);
}
