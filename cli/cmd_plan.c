/*
 * `autopar plan`: runs one planner on (model, cluster, profile), validates
 * the plan it returns and writes it as JSON.  The driver owns the plan: it
 * sizes it for the graph, times the search, and records the inputs' names,
 * the planner, the seed and the search time.
 */
#include <stdio.h>

#include "args.h"
#include "commands.h"
#include "err.h"
#include "load.h"
#include "model_io.h"
#include "plan.h"
#include "planner.h"
#include "sim.h"

/* The simulator's prediction goes into the plan's "predicted" fields. */
static int predict(const struct graph *g, const struct profile *p, const struct cluster *c,
		   struct plan *plan)
{
	struct sim s;
	struct sim_result r;
	int rc = sim_init(&s, g, p, c);

	if (rc)
		return rc;
	rc = sim_run(&s, plan, NULL, &r);
	if (!rc) {
		plan->pred_iter_ms = 1e3 * r.iter_s;
		plan->pred_samples_per_s = r.samples_per_s;
		plan->pred_peak_mem_bytes = r.peak_mem_bytes;
		plan->pred_bubble = r.bubble;
	}
	sim_release(&s);
	return rc;
}

static int run(int argc, char **argv)
{
	const char *model = NULL, *cspec = NULL, *prof = NULL, *pname = NULL, *outf = NULL;
	long long batch = 0;
	double budget = 10;
	uint64_t seed = 1;
	const struct opt opts[] = {
		{ "-m", "--model", OPT_STR, &model },
		{ "-c", "--cluster", OPT_STR, &cspec },
		{ "-p", "--profile", OPT_STR, &prof },
		{ "-P", "--planner", OPT_STR, &pname },
		{ "-b", "--batch", OPT_POS_INT, &batch },
		{ NULL, "--budget", OPT_SECONDS, &budget },
		{ NULL, "--seed", OPT_SEED, &seed },
		{ "-o", "--output", OPT_STR, &outf },
		{ 0 },
	};
	const struct planner *pl;
	struct graph g;
	struct cluster c;
	struct profile p;
	struct plan plan;
	struct planner_input in;
	char used[PLAN_NAME_LEN];
	int rc, npos;

	graph_init(&g);
	profile_init(&p);
	plan_init(&plan);
	rc = args_parse("plan", argc, argv, opts, NULL, 0, &npos);
	if (rc)
		return rc;
	if (!model || !cspec || !pname || !outf)
		return ap_err(AP_EINPUT, "plan", 0,
			      "expected -m MODEL, -c CLUSTER, -P PLANNER and -o PLAN.json "
			      "(see autopar help plan)");
	pl = planner_find(pname);
	if (!pl)
		return ap_err(AP_EINPUT, "-P", 0, "unknown planner '%s' (autopar planners "
			      "lists them)", pname);
	rc = model_load(model, batch, &g);
	if (!rc)
		rc = load_cluster(cspec, &c);
	if (!rc)
		rc = load_profile(prof, &c, &p, used, sizeof used);
	if (rc)
		goto out;
	in = (struct planner_input){ .g = &g, .p = &p, .c = &c, .budget_s = budget,
				     .seed = seed };
	rc = planner_run(pl, &in, used, &plan);
	if (!rc)
		rc = predict(&g, &p, &c, &plan);
	if (!rc)
		rc = plan_write(&plan, &g, outf);
	if (!rc)
		printf("%s: %s plan for %s on %s (profile %s, %s), %d stage%s, "
		       "searched %.3f s, predicted %.3f ms per iteration\n", outf, pl->name,
		       g.name, c.name, used, profile_kind(&p), plan.nstages,
		       plan.nstages == 1 ? "" : "s", plan.search_s, plan.pred_iter_ms);
out:
	plan_release(&plan);
	profile_release(&p);
	graph_release(&g);
	return rc;
}

const struct command cmd_plan = {
	.name = "plan",
	.summary = "run a planner and write its plan as JSON",
	.usage = "usage: autopar plan -m MODEL -c CLUSTER [-p PROFILE] -P PLANNER [-b BATCH]\n"
		 "                    [--budget SECONDS] [--seed N] -o PLAN.json\n\n"
		 "Runs PLANNER (see autopar planners) on MODEL for CLUSTER, validates\n"
		 "the plan and writes it. Without -p the profile is the one the cluster\n"
		 "names (autopar clusters), and the output says whether its rows are\n"
		 "measured or analytic.\n\n"
		 "  -m, --model M       zoo name, .model file or pipedream/NAME\n"
		 "  -c, --cluster C     preset name or inline spec (4x4:v100,inter=10Gb/s)\n"
		 "  -p, --profile P     profile directory: a name under profiles/ or a path\n"
		 "  -P, --planner NAME  the planner\n"
		 "  -b, --batch N       batch size (default: the model's)\n"
		 "  --budget S          search time budget in seconds (default 10)\n"
		 "  --seed N            seed for randomised planners (default 1)\n"
		 "  -o, --output FILE   where to write the plan\n",
	.run = run,
};
