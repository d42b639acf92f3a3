/*
 * `autopar plan`: runs one planner on (model, cluster, profile), validates
 * the plan it returns and writes it as JSON.  The driver owns the plan: it
 * sizes it for the graph, times the search, and records the inputs' names,
 * the planner, the seed and the search time.
 */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "model/batch.h"
#include "commands.h"
#include "util/err.h"
#include "util/output.h"
#include "load.h"
#include "model/model_io.h"
#include "plan/plan.h"
#include "driver.h"
#include "planner.h"
#include "sim/sim.h"
#include "plan/plan_io.h"
#include "plan/plan_source.h"

/* The -P value, looked up before parsing so that the planner's own
 * options can be accepted as long options. */
static const char *planner_arg(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if ((!strcmp(argv[i], "-P") || !strcmp(argv[i], "--planner")) && i + 1 < argc)
			return argv[i + 1];
		if (!strncmp(argv[i], "--planner=", 10))
			return argv[i] + 10;
	}
	return NULL;
}

/* Appends pl's options to the table at o[0..], ended by { 0 }. */
static void planner_options(const struct planner *pl, struct opt *o,
			    char lng[][PLANNER_OPT_LEN + 2], int *flags, const char **vals)
{
	int k = 0;

	for (const struct planner_option *po = pl ? pl->options : NULL; po && po->name &&
	     k < PLANNER_MAX_OPTIONS; po++, k++) {
		snprintf(lng[k], PLANNER_OPT_LEN + 2, "--%s", po->name);
		o[k] = po->type == POPT_FLAG ?
			(struct opt){ NULL, lng[k], OPT_FLAG, &flags[k] } :
			(struct opt){ NULL, lng[k], OPT_STR, &vals[k] };
	}
	o[k] = (struct opt){ 0 };
}

static int run(int argc, char **argv)
{
	const char *model = NULL, *cspec = NULL, *prof = NULL, *pname = NULL, *outf = NULL;
	const char *bspec = "0";
	struct batch_spec bs;
	double budget = 10;
	uint64_t seed = 1;
	char lng[PLANNER_MAX_OPTIONS][PLANNER_OPT_LEN + 2];
	int flags[PLANNER_MAX_OPTIONS] = { 0 };
	const char *vals[PLANNER_MAX_OPTIONS] = { 0 };
	struct planner_opts popts = { 0 };
	struct opt opts[9 + PLANNER_MAX_OPTIONS] = {
		{ "-m", "--model", OPT_STR, &model },
		{ "-c", "--cluster", OPT_STR, &cspec },
		{ "-p", "--profile", OPT_STR, &prof },
		{ "-P", "--planner", OPT_STR, &pname },
		{ "-b", "--batch", OPT_STR, &bspec },
		{ NULL, "--budget", OPT_SECONDS, &budget },
		{ NULL, "--seed", OPT_SEED, &seed },
		{ "-o", "--output", OPT_STR, &outf },
	};
	const struct planner *pl;
	struct instance x;
	struct plan plan;
	struct planner_input input;
	int rc, npos;

	instance_init(&x);
	plan_init(&plan);
	pname = planner_arg(argc, argv);
	if (pname && planner_parse(pname, "-P", &pl, &popts))
		return AP_EINPUT;
	planner_options(pname ? pl : NULL, opts + 8, lng, flags, vals);
	rc = args_parse("plan", argc, argv, opts, NULL, 0, &npos);
	if (rc)
		return rc;
	if (!model || !cspec || !pname || !outf)
		return ap_err(AP_EINPUT, "plan", 0,
			      "expected -m MODEL, -c CLUSTER, -P PLANNER and -o PLAN.json "
			      "(see autopar help plan)");
	for (int k = 0; opts[8 + k].lng; k++)
		if ((flags[k] || vals[k]) &&
		    planner_opts_set(pl, &popts, opts[8 + k].lng + 2, vals[k], opts[8 + k].lng))
			return AP_EINPUT;
	rc = io_paths_check((const struct io_path[]){ { "-m", model, 0 }, { "-o", outf, 1 } }, 2);
	if (!rc)
		rc = batch_spec_parse(bspec, "-b", 0, &bs);
	if (rc)
		goto out;
	rc = instance_load(&x, model, &bs, cspec, prof);
	if (rc)
		goto out;
	input = planner_input_of(&x, budget, seed, &popts);
	rc = planner_run(pl, &input, x.profile, &plan);
	if (!rc)
		rc = plan_set_source(&plan, model, prof, outf);
	if (!rc)
		rc = plan_write(&plan, &x.g, outf);
	if (!rc)
		printf("%s: %s plan for %s on %s (profile %s, %s), %d stage%s, "
		       "searched %.3f s, predicted %.3f ms per iteration%s\n", outf, plan.planner,
		       x.g.name, x.c.name, x.profile, profile_kind(&x.p), plan.nstages,
		       plan.nstages == 1 ? "" : "s", plan.search_s, plan.pred_iter_ms,
		       plan.pred_fits ? "" : " (does not fit memory)");
out:
	plan_release(&plan);
	instance_release(&x);
	return rc;
}

const struct command cmd_plan = {
	.name = "plan",
	.summary = "run a planner and write its plan as JSON",
	.usage = "usage: autopar plan -m MODEL -c CLUSTER [-p PROFILE] -P PLANNER [-b BATCH]\n"
		 "                    [--budget SECONDS] [--seed N] [PLANNER OPTIONS] -o PLAN.json\n\n"
		 "Runs PLANNER (see autopar planners) on MODEL for CLUSTER, validates\n"
		 "the plan and writes it. Without -p the profile is the one the cluster\n"
		 "names (autopar clusters), and the output says whether its rows are\n"
		 "measured or analytic.\n\n"
		 "  -m, --model M       zoo name, .model file, pipedream/NAME, or a Piper\n"
		 "                      .json input (or piper/NAME)\n"
		 "  -c, --cluster C     preset name, PRESET:NODES (selene:64), or inline\n"
		 "                      spec (4x4:v100,inter=10Gb/s);\n"
		 "                      piper: the machine of the Piper input -m names\n"
		 "  -p, --profile P     profile directory: a name under profiles/ or a path\n"
		 "  -P, --planner NAME  the planner; its options may follow the name,\n"
		 "                      NAME:opt,opt=value, or be given as --opt [value]\n"
		 "                      (autopar planners lists each planner's options)\n"
		 "  -b, --batch N       the global batch (default: the model's; strong\n"
		 "                      scaling); N/dev: N samples per device, the global\n"
		 "                      batch growing with the cluster (weak scaling, the\n"
		 "                      papers' data-parallel convention); 0/dev: the\n"
		 "                      model's own batch per device\n"
		 "  --budget S          search time budget in seconds (default 10; 0: no\n"
		 "                      limit)\n"
		 "  --seed N            seed for randomised planners (default 1)\n"
		 "  -o, --output FILE   where to write the plan\n",
	.run = run,
};
