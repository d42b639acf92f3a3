/*
 * The planner driver shared by `autopar plan` and `autopar bench`: the
 * planner fills in its decisions, the driver everything every plan shares.
 */
#include <stdio.h>

#include "clock.h"
#include "planner.h"

int planner_run(const struct planner *pl, const struct planner_input *in,
		const char *profile_name, struct plan *out)
{
	struct planner_opts opts = { 0 };
	struct planner_input full = *in;
	double t0;
	int rc = plan_alloc(out, in->g, 1);

	if (rc)
		return rc;
	if (in->opts)
		opts = *in->opts;
	planner_opts_complete(pl, &opts);
	full.opts = &opts;
	t0 = now_s();
	rc = pl->plan(&full, out);
	out->search_s = now_s() - t0;
	if (rc)
		return rc;
	snprintf(out->model, sizeof out->model, "%s", in->g->name);
	snprintf(out->cluster, sizeof out->cluster, "%s", in->c->name);
	snprintf(out->profile, sizeof out->profile, "%s", profile_name);
	planner_spec(pl, &opts, out->planner, sizeof out->planner);
	out->seed = in->seed;
	return plan_validate(out, in->g, in->c, pl->name);
}
