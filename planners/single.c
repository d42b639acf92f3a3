/*
 * single: the whole model on one device, the baseline every speedup is
 * measured against.
 */
#include "planner.h"
#include "plan/plan_build.h"

static int plan_single(const struct planner_input *in, struct plan *out)
{
	static const int one[NDIMS] = { 1, 1, 1, 1, 1 };
	int rc = plan_one_stage(out, 1, SCHED_GPIPE, 1);

	for (int i = 0; i < in->g->nops && !rc; i++)
		rc = plan_place(out, i, 0, one, 0);
	return rc;
}

const struct planner planner_single = {
	.name = "single",
	.description = "everything on one device",
	.anchor = "baseline",
	.plan = plan_single,
};
