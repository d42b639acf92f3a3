/*
 * single: the whole model on one device, the baseline every speedup is
 * measured against.
 */
#include "planner.h"
#include "plan/plan_build.h"

static int plan_single(const struct planner_input *input, struct plan *out)
{
	static const int one[NDIMS] = { 1, 1, 1, 1, 1 };
	int rc = plan_one_stage(out, 1, SCHED_GPIPE, 1);

	for (int i = 0; i < input->g->nops && !rc; i++)
		rc = plan_place_range(out, i, 0, one, 0);
	return rc;
}

const struct planner planner_single = {
	.name = "single",
	.description = "everything on one device",
	.follows = "baseline",
	.plan = plan_single,
	.estimate = PLANNER_EST_NONE,
};
