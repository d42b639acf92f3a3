/*
 * dp: data parallelism.  Every operator is split along the sample dim over
 * as many devices as the batch allows (the largest divisor of the batch not
 * above the device count), parameters replicated and all-reduced.
 */
#include "planner.h"
#include "util/intmath.h"
#include "plan/plan_build.h"

static int plan_dp(const struct planner_input *input, struct plan *out)
{
	int ndev = (int)largest_divisor(input->g->batch, cluster_ndevices(input->c));
	int deg[NDIMS] = { ndev, 1, 1, 1, 1 };
	int rc = plan_one_stage(out, ndev, SCHED_GPIPE, 1);

	for (int i = 0; i < input->g->nops && !rc; i++)
		rc = plan_place_range(out, i, 0, deg, 0);
	return rc;
}

const struct planner planner_dp = {
	.name = "dp",
	.description = "data parallelism on all devices",
	.follows = "baseline",
	.plan = plan_dp,
	.estimate = PLANNER_EST_NONE,
};
