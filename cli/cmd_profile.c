/*
 * `autopar profile`: builds a profile directory (ops.csv, device.csv) for a
 * device.  Measuring operators needs the runtime's backends, which are not
 * built yet; what exists is --analytic, which fills the profile with
 * roofline rows from the device's datasheet specs for every operator shard
 * of the given models, so planners can run before any measurement.  An
 * existing profile in the directory is extended, never overwritten: its
 * measured rows stay, and rows already there are kept.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "commands.h"
#include "datadir.h"
#include "device.h"
#include "err.h"
#include "graph.h"
#include "model_io.h"
#include "profile.h"

#define WHO "autopar profile"

static const char usage[] =
	"usage: autopar profile --analytic -d DEVICE -m MODEL [-m MODEL ...]\n"
	"                       [-b BATCH] [--max-degree N] -o DIR\n"
	"\n"
	"Writes a profile directory DIR (ops.csv, device.csv) for DEVICE, a row of\n"
	"profiles/devices.csv.  With --analytic every operator shard of every MODEL\n"
	"(a zoo name, a .model file or a PipeDream graph.txt) gets a roofline\n"
	"estimate from the device's specs, at every power-of-two split of its\n"
	"splittable dims up to N shards.  A profile already in DIR is extended: its\n"
	"rows are kept, and its device must be DEVICE.  Measuring operators on the\n"
	"device (autopar profile -d cpu|cuda) comes with the runtime.\n"
	"\n"
	"  --analytic          roofline rows from the device specs\n"
	"  -d, --device NAME   device kind (profiles/devices.csv)\n"
	"  -m, --model MODEL   a model to cover; repeat for more\n"
	"  -b, --batch N       batch size (default: each model's own)\n"
	"  --max-degree N      most shards per operator (default 8)\n"
	"  -o, --output DIR    the profile directory, created if missing\n"
	"  -h, --help          show this text\n";

static int same_spec(const struct device_spec *a, const struct device_spec *b)
{
	/* device.csv stores rounded decimals: compare to a part in a million */
	const double x[] = { a->fp32_flops_per_s, a->tensor_flops_per_s,
			     a->mem_bw_bytes_per_s, a->launch_us };
	const double y[] = { b->fp32_flops_per_s, b->tensor_flops_per_s,
			     b->mem_bw_bytes_per_s, b->launch_us };

	for (size_t k = 0; k < sizeof x / sizeof x[0]; k++)
		if (fabs(x[k] - y[k]) > 1e-6 * fmax(fabs(x[k]), fabs(y[k])))
			return 0;
	return a->mem_bytes == b->mem_bytes;
}

/* Loads DIR's profile when there is one, else starts an empty one. */
static int open_profile(const char *dir, const struct device_spec *dev,
			struct profile *p)
{
	char path[PATH_MAX];
	struct stat sb;
	int rc, dropped;

	snprintf(path, sizeof path, "%s/ops.csv", dir);
	if (stat(path, &sb) != 0) {
		profile_init(p);
		p->dev = *dev;
		return AP_OK;
	}
	rc = profile_load(dir, p);
	if (rc)
		return rc;
	if (strcmp(p->dev.name, dev->name)) {
		rc = ap_err(AP_EINPUT, dir, 0,
			    "profile is for device '%s', not '%s' (expected a new directory)",
			    p->dev.name, dev->name);
		profile_release(p);
		return rc;
	}
	if (!same_spec(&p->dev, dev)) {
		/* analytic rows follow from the specs: recompute them all */
		dropped = profile_drop_analytic(p);
		fprintf(stderr, "%s: specs of '%s' changed in devices.csv; recomputing %d analytic rows\n",
			dir, dev->name, dropped);
	}
	p->dev = *dev;
	return AP_OK;
}

static int run(int argc, char **argv)
{
	struct device_spec dev;
	struct profile p;
	struct graph g;
	char path[PATH_MAX];
	int rc = AP_OK, before, npos, analytic = 0;
	long long batch = 0, max_degree = 8;
	const char *device = NULL, *outdir = NULL;
	struct opt_list models = { calloc((size_t)argc, sizeof(char *)), 0 };
	const struct opt opts[] = {
		{ NULL, "--analytic", OPT_FLAG, &analytic },
		{ "-d", "--device", OPT_STR, &device },
		{ "-m", "--model", OPT_LIST, &models },
		{ "-b", "--batch", OPT_POS_INT, &batch },
		{ NULL, "--max-degree", OPT_POS_INT, &max_degree },
		{ "-o", "--output", OPT_STR, &outdir },
		{ 0 },
	};

	profile_init(&p);
	graph_init(&g);
	if (!models.v) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	rc = args_parse("profile", argc, argv, opts, NULL, 0, &npos);
	if (rc)
		goto out;
	if (!analytic) {
		rc = ap_err(AP_EINPUT, WHO, 0,
			    "measuring operators comes with the runtime ('autopar profile -d cpu|cuda' is not built yet); use --analytic for roofline rows");
		goto out;
	}
	if (!device || !models.n || !outdir) {
		rc = ap_err(AP_EINPUT, WHO, 0, "expected -d DEVICE, -m MODEL and -o DIR (see autopar help profile)");
		goto out;
	}
	rc = device_find(datapath(path, sizeof path, "profiles/devices.csv"),
			 device, &dev);
	if (rc)
		goto out;
	rc = open_profile(outdir, &dev, &p);
	if (rc)
		goto out;
	before = p.nrows;
	for (int m = 0; m < models.n; m++) {
		rc = model_load(models.v[m], batch, &g);
		if (rc)
			goto out;
		rc = profile_add_analytic(&p, &g, (int)max_degree);
		graph_release(&g);
		if (rc)
			goto out;
	}
	rc = profile_save(&p, outdir);
	if (rc)
		goto out;
	printf("%s: %d rows for %s (%d new analytic, %d model%s, up to %lld shards)\n",
	       outdir, p.nrows, dev.name, p.nrows - before, models.n,
	       models.n == 1 ? "" : "s", max_degree);
	if (fflush(stdout) != 0)
		rc = ap_err(AP_EFAIL, WHO, 0, "cannot write to stdout");
out:
	profile_release(&p);
	graph_release(&g);
	free(models.v);
	return rc;
}

const struct command cmd_profile = {
	.name = "profile",
	.summary = "write a profile of operator costs for a device",
	.usage = usage,
	.run = run,
};
