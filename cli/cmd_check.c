/*
 * `autopar check`: validates the inputs autopar reads — a model, a cluster
 * spec, a profile directory, a plan against its model and cluster — and
 * says what is wrong with the first bad one, as every other command would,
 * without doing any work.  Useful after editing a data file by hand.
 */
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "hw/cluster.h"
#include "commands.h"
#include "util/datadir.h"
#include "util/err.h"
#include "load.h"
#include "model/model_io.h"
#include "plan/plan.h"
#include "hw/profile.h"
#include "plan/plan_io.h"
#include "plan/plan_check.h"

/* A plan against the model, cluster and profile it names, each of which
 * -m, -c and -p override, loaded as `sim` and `run` load it. */
static int check_plan(const char *planf, const char *model, const char *cspec, const char *prof,
		      long long batch)
{
	struct plan_inputs in;
	int rc;

	plan_inputs_init(&in);
	in.path = planf;
	rc = load_plan_inputs(&in, model, cspec, prof, 0);
	if (!rc && batch && batch != in.pl.batch)
		rc = ap_err(AP_EINPUT, "-b", 0, "%lld, but the plan %s is for batch %lld", batch,
			    planf, (long long)in.pl.batch);
	if (!rc)
		printf("plan '%s': model '%s', cluster '%s', %d stages, %s: ok\n", planf,
		       in.g.name, in.c.name, in.pl.nstages, sched_name(in.pl.sched));
	plan_inputs_release(&in);
	return rc;
}

static int run(int argc, char **argv)
{
	const char *model = NULL, *cspec = NULL, *prof = NULL, *planf = NULL;
	char path[4096];
	long long batch = 0;
	struct graph g;
	struct cluster cl;
	struct profile p;
	int rc, npos, have_g = 0;
	const struct opt opts[] = {
		{ "-m", "--model", OPT_STR, &model },
		{ "-b", "--batch", OPT_POS_INT, &batch },
		{ "-c", "--cluster", OPT_STR, &cspec },
		{ "-p", "--profile", OPT_STR, &prof },
		{ 0 },
	};

	rc = args_parse("check", argc, argv, opts, &planf, 1, &npos);
	if (rc)
		return rc;
	if (!model && !cspec && !prof && !planf)
		return ap_err(AP_EINPUT, "check", 0,
			      "nothing to check (give -m, -c, -p or a plan)");
	if (planf)
		return check_plan(planf, model, cspec, prof, batch);
	if (model) {
		rc = model_load(model, batch, &g);
		if (rc)
			return rc;
		have_g = 1;
		printf("model '%s': %d operators, batch %lld: ok\n", g.name, g.nops,
		       (long long)g.batch);
	}
	if (cspec) {
		rc = load_cluster(cspec, model, &cl);
		if (rc)
			goto out;
		printf("cluster '%s': %d x %d %s: ok\n", cl.name, cl.nodes, cl.per_node,
		       cl.device);
	}
	if (prof) {
		profile_init(&p);
		if (!*prof) {
			rc = load_profile(prof, NULL, &p, path, sizeof path);
			goto out;
		}
		rc = profile_load(profile_dir(path, sizeof path, prof), &p);
		if (!rc)
			printf("profile '%s': %d rows on %s: ok\n", path, p.nrows, p.dev.name);
		profile_release(&p);
		if (rc)
			goto out;
	}
out:
	if (have_g)
		graph_release(&g);
	return rc;
}

const struct command cmd_check = {
	.name = "check",
	.summary = "validate a model, cluster spec, profile or plan",
	.usage = "usage: autopar check [-m MODEL] [-b BATCH] [-c CLUSTER] [-p PROFILE] [PLAN.json]\n\n"
		 "Reads each input given and reports the first problem as\n"
		 "FILE:LINE: message (exit 2), or one 'ok' line per input.\n\n"
		 "  -m, --model M     zoo name, .model file, PipeDream .txt profile or\n"
		 "                    Piper .json input\n"
		 "  -b, --batch N     batch size for the model\n"
		 "  -c, --cluster C   preset name (autopar clusters) or inline spec\n"
		 "                    such as 4x4:v100,intra=12GB/s,inter=10Gb/s; piper:\n"
		 "                    the machine of the Piper input -m names\n"
		 "  -p, --profile P   profile directory (a name under profiles/ or a path)\n"
		 "  PLAN.json         a plan, validated against the model, cluster and\n"
		 "                    profile it names (or -m, -c and -p), as sim and\n"
		 "                    run load it\n",
	.run = run,
};
