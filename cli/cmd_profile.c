/*
 * `autopar profile`: builds a profile directory (ops.csv, device.csv) for a
 * device.  Measuring operators needs the runtime's backends, which are not
 * built yet; what exists is --analytic, which fills the profile with
 * roofline rows from the device's datasheet specs for every operator shard
 * of the given models, so planners can run before any measurement.  An
 * existing profile in the directory is extended, never overwritten: its
 * measured rows stay, and rows already there are kept.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

struct options {
	int analytic;
	const char *device;
	const char **models;
	int nmodels;
	long long batch;
	long long max_degree;
	const char *out;
};

static int parse_positive(const char *opt, const char *s, long long *v)
{
	char *end;

	errno = 0;
	*v = strtoll(s, &end, 10);
	if (!*s || *end || errno || *v <= 0 || *v > INT_MAX)
		return ap_err(AP_EINPUT, WHO, 0, "option '%s' value '%s': expected a positive integer",
			      opt, s);
	return AP_OK;
}

/* Matches "-x VALUE", "--long VALUE" and "--long=VALUE"; *val is the value
 * or NULL when argv[*i] is not this option. */
static int take(int argc, char **argv, int *i, const char *shrt, const char *lng,
		const char **val)
{
	const char *a = argv[*i];
	size_t n = strlen(lng);

	*val = NULL;
	if (!strncmp(a, lng, n) && a[n] == '=') {
		*val = a + n + 1;
		return AP_OK;
	}
	if (strcmp(a, lng) && (!shrt || strcmp(a, shrt)))
		return AP_OK;
	if (*i + 1 >= argc)
		return ap_err(AP_EINPUT, WHO, 0, "option '%s' needs a value", a);
	*val = argv[++*i];
	return AP_OK;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	const char *v;
	int rc = AP_OK;

	o->max_degree = 8;
	o->models = calloc((size_t)argc, sizeof *o->models);
	if (!o->models)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--analytic")) {
			o->analytic = 1;
			continue;
		}
		if ((rc = take(argc, argv, &i, "-d", "--device", &v)))
			return rc;
		if (v) {
			o->device = v;
			continue;
		}
		if ((rc = take(argc, argv, &i, "-m", "--model", &v)))
			return rc;
		if (v) {
			o->models[o->nmodels++] = v;
			continue;
		}
		if ((rc = take(argc, argv, &i, "-b", "--batch", &v)))
			return rc;
		if (v) {
			if ((rc = parse_positive("--batch", v, &o->batch)))
				return rc;
			continue;
		}
		if ((rc = take(argc, argv, &i, NULL, "--max-degree", &v)))
			return rc;
		if (v) {
			if ((rc = parse_positive("--max-degree", v, &o->max_degree)))
				return rc;
			continue;
		}
		if ((rc = take(argc, argv, &i, "-o", "--output", &v)))
			return rc;
		if (v) {
			o->out = v;
			continue;
		}
		return ap_err(AP_EINPUT, WHO, 0, "unknown argument '%s' (see autopar help profile)",
			      argv[i]);
	}
	return AP_OK;
}

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
	struct options o = { 0 };
	struct device_spec dev;
	struct profile p;
	struct graph g;
	char path[PATH_MAX];
	int rc = AP_OK, before;

	profile_init(&p);
	graph_init(&g);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			goto out;
		}
	}
	rc = parse_args(argc, argv, &o);
	if (rc)
		goto out;
	if (!o.analytic) {
		rc = ap_err(AP_EINPUT, WHO, 0,
			    "measuring operators comes with the runtime ('autopar profile -d cpu|cuda' is not built yet); use --analytic for roofline rows");
		goto out;
	}
	if (!o.device || !o.nmodels || !o.out) {
		rc = ap_err(AP_EINPUT, WHO, 0, "expected -d DEVICE, -m MODEL and -o DIR (see autopar help profile)");
		goto out;
	}
	rc = device_find(datapath(path, sizeof path, "profiles/devices.csv"),
			 o.device, &dev);
	if (rc)
		goto out;
	rc = open_profile(o.out, &dev, &p);
	if (rc)
		goto out;
	before = p.nrows;
	for (int m = 0; m < o.nmodels; m++) {
		rc = model_load(o.models[m], o.batch, &g);
		if (rc)
			goto out;
		rc = profile_add_analytic(&p, &g, (int)o.max_degree);
		graph_release(&g);
		if (rc)
			goto out;
	}
	rc = profile_save(&p, o.out);
	if (rc)
		goto out;
	printf("%s: %d rows for %s (%d new analytic, %d model%s, up to %lld shards)\n",
	       o.out, p.nrows, dev.name, p.nrows - before, o.nmodels,
	       o.nmodels == 1 ? "" : "s", o.max_degree);
	if (fflush(stdout) != 0)
		rc = ap_err(AP_EFAIL, WHO, 0, "cannot write to stdout");
out:
	profile_release(&p);
	graph_release(&g);
	free(o.models);
	return rc;
}

const struct command cmd_profile = {
	.name = "profile",
	.summary = "write a profile of operator costs for a device",
	.usage = usage,
	.run = run,
};
