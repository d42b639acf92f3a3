/*
 * `autopar check`: validates the inputs autopar reads — a model, a cluster
 * spec, a profile directory, a plan against its model and cluster — and
 * says what is wrong with the first bad one, as every other command would,
 * without doing any work.  Useful after editing a data file by hand.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cluster.h"
#include "commands.h"
#include "datadir.h"
#include "err.h"
#include "model_io.h"
#include "plan.h"
#include "profile.h"

static int run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "model", required_argument, NULL, 'm' },
		{ "batch", required_argument, NULL, 'b' },
		{ "cluster", required_argument, NULL, 'c' },
		{ "profile", required_argument, NULL, 'p' },
		{ 0 },
	};
	const char *model = NULL, *cspec = NULL, *prof = NULL;
	char path[4096], csv[4096], *end;
	long long batch = 0;
	struct graph g;
	struct cluster cl;
	struct profile p;
	struct plan pl;
	int c, rc = AP_OK, have_g = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "m:b:c:p:", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			model = optarg;
			break;
		case 'b':
			batch = strtoll(optarg, &end, 10);
			if (*end || batch <= 0)
				return ap_err(AP_EINPUT, "-b", 0,
					      "batch '%s' must be a positive integer", optarg);
			break;
		case 'c':
			cspec = optarg;
			break;
		case 'p':
			prof = optarg;
			break;
		default:
			return ap_err(AP_EINPUT, "check", 0,
				      "unknown option '%s' (see autopar help check)",
				      argv[optind - 1]);
		}
	}
	if (argc - optind > 1)
		return ap_err(AP_EINPUT, "check", 0, "expected at most one plan");
	if (!model && !cspec && !prof && optind == argc)
		return ap_err(AP_EINPUT, "check", 0,
			      "nothing to check (give -m, -c, -p or a plan)");
	if (optind < argc && (!model || !cspec))
		return ap_err(AP_EINPUT, argv[optind], 0,
			      "checking a plan needs its model (-m) and cluster (-c)");
	if (model) {
		rc = model_load(model, batch, &g);
		if (rc)
			return rc;
		have_g = 1;
		printf("model '%s': %d operators, batch %lld: ok\n", g.name, g.nops,
		       (long long)g.batch);
	}
	if (cspec) {
		rc = cluster_resolve(cspec, datapath(csv, sizeof csv, "profiles/clusters.csv"),
				     &cl);
		if (rc)
			goto out;
		printf("cluster '%s': %d x %d %s: ok\n", cl.name, cl.nodes, cl.per_node,
		       cl.device);
	}
	if (prof) {
		profile_init(&p);
		rc = profile_load(profile_dir(path, sizeof path, prof), &p);
		if (!rc)
			printf("profile '%s': %d rows on %s: ok\n", path, p.nrows, p.dev.name);
		profile_release(&p);
		if (rc)
			goto out;
	}
	if (optind < argc) {
		plan_init(&pl);
		rc = plan_read(argv[optind], &g, &pl);
		if (!rc)
			rc = plan_validate(&pl, &g, &cl, argv[optind]);
		if (!rc)
			printf("plan '%s': %d stages, %s: ok\n", argv[optind], pl.nstages,
			       sched_name(pl.sched));
		plan_release(&pl);
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
		 "  -m, --model M     zoo name, .model file or PipeDream .txt profile\n"
		 "  -b, --batch N     batch size for the model\n"
		 "  -c, --cluster C   preset name (autopar clusters) or inline spec\n"
		 "                    such as 4x4:v100,intra=12GB/s,inter=10Gb/s\n"
		 "  -p, --profile P   profile directory (a name under profiles/ or a path)\n"
		 "  PLAN.json         a plan, validated against -m and -c\n",
	.run = run,
};
