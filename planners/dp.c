/*
 * dp: data parallelism.  Every operator is split along the sample dim over
 * as many devices as the batch allows (the largest divisor of the batch not
 * above the device count), parameters replicated and all-reduced.
 */
#include "planner.h"
#include "plan/plan_build.h"

static int plan_dp(const struct planner_input *in, struct plan *out)
{
	int ndev = (int)largest_divisor(in->g->batch, cluster_ndevices(in->c));
	int deg[NDIMS] = { ndev, 1, 1, 1, 1 };
	int rc = plan_one_stage(out, ndev, SCHED_GPIPE, 1);

	for (int i = 0; i < in->g->nops && !rc; i++)
		rc = plan_place(out, i, 0, deg, 0);
	return rc;
}

const struct planner planner_dp = {
	.name = "dp",
	.description = "data parallelism on all devices",
	.anchor = "baseline",
	.plan = plan_dp,
};
