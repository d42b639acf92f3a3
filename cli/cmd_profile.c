/*
 * `autopar profile`: builds a profile directory (ops.csv, device.csv) for a
 * device.  On a device the runtime has a backend for (cpu, cuda[:N]; the
 * device row is measured too: GEMM rate, copy bandwidth, launch cost) it
 * measures every operator shard of the given models that the runtime can
 * execute with that backend (runtime/profiler.h), and fills the splits it
 * cannot execute with roofline rows; --analytic writes roofline rows from
 * the device's datasheet specs only, so planners can run before any
 * measurement.  An existing profile in the directory is extended: its
 * rows and its device row are kept, and only the shards it has no
 * measured row of are measured, so adding a model costs that model's new
 * shards only; --remeasure measures every shard of the models and the
 * device row again.  --comm
 * writes comm.csv instead: NCCL all-reduce and send/recv bandwidth over
 * message sizes on this machine's GPUs (runtime/comm_bench.h).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "backend.h"
#include "comm_bench.h"
#include "util/csvio.h"
#include "commands.h"
#include "util/datadir.h"
#include "util/output.h"
#include "hw/device.h"
#include "util/err.h"
#include "exec_support.h"
#include "gpu.h"
#include "gpu_opts.h"
#include "model/graph.h"
#include "model/model_io.h"
#include "hw/profile.h"
#include "profiler.h"
#include "hw/roofline.h"
#include "transport.h"
#include "model/ops.h"

#define WHO "autopar profile"

static const char usage[] =
	"usage: autopar profile [--analytic] -d DEVICE -m MODEL [-m MODEL ...]\n"
	"                       [-b BATCH] [--max-degree N] [--precision fp32|tf32]\n"
	"                       [--verbose] [--remeasure] -o DIR\n"
	"       autopar profile --comm [--gpus N] [--max-bytes B] -o DIR\n"
	"\n"
	"Writes a profile directory DIR (ops.csv, device.csv) for DEVICE, a row of\n"
	"profiles/devices.csv, covering every operator shard of every MODEL (a zoo\n"
	"name, a .model file or a PipeDream graph.txt) at every power-of-two split\n"
	"of its splittable dims up to N shards.  On a device with a runtime backend\n"
	"(cpu) each shard the runtime can execute is measured on this machine (the\n"
	"median of 31 runs, forward and backward), and so is the device row on one\n"
	"core (float32 GEMM rate, copy bandwidth, the cost of a tiny call); the\n"
	"other shards, and every shard with --analytic, get a roofline estimate\n"
	"from the device's specs.\n"
	"A profile already in DIR is extended, and its device must be DEVICE:\n"
	"its rows are kept as they are and only the shards it has no measured\n"
	"row of are measured (a measurement replaces an analytic row); its device\n"
	"row is kept too (with --analytic, profiles/devices.csv's is taken).\n"
	"--remeasure measures every shard of the models, and the device row,\n"
	"again.  The closing lines say how many rows were measured, kept and\n"
	"new, and whether the device row was kept.\n"
	"\n"
	"DEVICE cuda or cuda:N measures GPU N (default 0) with the CUDA backend:\n"
	"the device row is measured as well (float32 GEMM rate, copy bandwidth,\n"
	"the cost of a tiny kernel) and named after the GPU; time is taken after\n"
	"warm-up by CUDA events around the kernels, with the L2 cache written\n"
	"over before each operator's timing (cold, as in a step).  --comm writes\n"
	"DIR/comm.csv: NCCL all-reduce over N GPUs (default all) and send/recv\n"
	"between two, over message sizes from 4 KiB to B bytes (default 256 MiB),\n"
	"after checking the all-reduce's sum.\n"
	"\n"
	"  --analytic          roofline rows from the device specs only\n"
	"  -d, --device NAME   device kind (profiles/devices.csv)\n"
	"  -m, --model MODEL   a model to cover; repeat for more\n"
	"  -b, --batch N       batch size (default: each model's own)\n"
	"  --max-degree N      most shards per operator (default 8)\n"
	"  --precision P       cuda: fp32 (default) or tf32, as autopar run's, so\n"
	"                      that the profile times what the run runs (a tf32\n"
	"                      profile belongs in a directory of its own)\n"
	"  --verbose           cuda: one line per convolution shape and direction\n"
	"                      with the algorithm cuDNN's search chose\n"
	"  --remeasure         measure every shard and the device row again\n"
	"  -o, --output DIR    the profile directory, created if missing\n"
	"  --comm              measure NCCL bandwidth into DIR/comm.csv\n"
	"  --gpus N            GPUs of --comm (default: all)\n"
	"  --max-bytes B       largest --comm message (default 268435456)\n"
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

/* Loads DIR's profile when there is one (*existing 1), else starts an
 * empty one for dev. */
static int open_profile(const char *dir, const struct device_spec *dev, struct profile *p,
			int *existing)
{
	char path[PATH_MAX];
	struct stat sb;
	int rc;

	snprintf(path, sizeof path, "%s/ops.csv", dir);
	*existing = stat(path, &sb) == 0;
	if (!*existing) {
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
	}
	return rc;
}

/* Makes dev the profile's device row. */
static void set_device(const char *dir, struct profile *p, const struct device_spec *dev)
{
	int dropped;

	if (!same_spec(&p->dev, dev)) {
		/* analytic rows follow from the specs: recompute them all */
		dropped = profile_drop_analytic(p);
		if (dropped)
			fprintf(stderr, "%s: specs of '%s' differ from the profile's; recomputing %d analytic rows\n",
				dir, dev->name, dropped);
	}
	p->dev = *dev;
}

struct measure_ctx {
	const struct backend *be;
	struct profile *p;
	struct profile done; /* the signatures measured by this command */
	const struct graph *g;
	int i, remeasure;
	int measured, replaced; /* rows measured; of them, rows p had */
};

/* A shard's row is measured unless p has a measured one (and it is not
 * --remeasure), or this command measured it already: the layers of a
 * transformer share their signatures. */
static int measure_row(const int degree[NDIMS], void *ctx)
{
	struct measure_ctx *c = ctx;
	const struct prof_row *row;
	char sig[1024];
	double fwd, bwd;
	int64_t ws;
	int rc;

	/* what the backend cannot run keeps its roofline rows */
	if (!exec_can_split(c->be, c->g, c->i, degree) ||
	    (c->g->ops[c->i].kind != OP_INPUT && !c->be->ops[c->g->ops[c->i].kind]))
		return AP_OK;
	rc = graph_op_signature(c->g, c->i, degree, sig, sizeof sig);
	if (rc || profile_find(&c->done, sig))
		return rc;
	row = profile_find(c->p, sig);
	if (row && !row->analytic && !c->remeasure)
		return AP_OK;
	c->replaced += row != NULL;
	rc = profiler_measure(c->be, c->g, c->i, degree, &fwd, &bwd, &ws);
	if (!rc)
		rc = profile_put(c->p, sig, fwd, bwd, ws, 0);
	if (!rc)
		rc = profile_put(&c->done, sig, fwd, bwd, ws, 0);
	c->measured += !rc;
	return rc;
}

/* Measured rows for every shard of g the backend can run. */
static int measure_model(struct measure_ctx *c, const struct graph *g, int max_degree)
{
	int rc = c->be->init();

	c->g = g;
	for (c->i = 0; c->i < g->nops && !rc; c->i++)
		if (!g->ops[c->i].m.valid && !g->ops[c->i].imported)
			rc = for_each_degree(&g->ops[c->i], max_degree, measure_row, c);
	return rc;
}

/* "cuda" or "cuda:N": 1 with the device index in *dev; else 0 */
static int cuda_device(const char *device, int *dev)
{
	char *end;

	*dev = 0;
	if (strncmp(device, "cuda", 4) || (device[4] && device[4] != ':'))
		return 0;
	if (device[4] == ':')
		*dev = (int)strtol(device + 5, &end, 10);
	return device[4] != ':' || (*end == '\0' && end != device + 5 && *dev >= 0) ? 1 : -1;
}

/* GPU dev's row of devices.csv, but for the rates measure_device()
 * measures: named after the GPU (lowercase, '-' for what a name may not
 * hold) */
static int gpu_row(int dev, struct device_spec *d)
{
	char gpu[256];
	long long mem = 0;
	size_t k = 0;
	int st = gpu_select(dev);

	memset(d, 0, sizeof *d);
	if (!st)
		st = backend_cuda.init();
	if (!st)
		st = gpu_properties(dev, gpu, sizeof gpu, &mem);
	if (st)
		return st;
	for (const char *c = gpu; *c && k + 1 < sizeof d->name; c++) {
		char x = (char)tolower((unsigned char)*c);

		if (isalnum((unsigned char)x) || x == '.' || x == '_')
			d->name[k++] = x;
		else if (k && d->name[k - 1] != '-')
			d->name[k++] = '-';
	}
	while (k && d->name[k - 1] == '-')
		d->name[--k] = '\0';
	if (!spec_name_valid(d->name, sizeof d->name))
		snprintf(d->name, sizeof d->name, "cuda%d", dev);
	d->mem_bytes = mem;
	snprintf(d->description, sizeof d->description, "%.100s, measured by autopar profile",
		 gpu);
	return AP_OK;
}

/* The device row's rates measured with backend be: a GPU's GEMM rate,
 * copy bandwidth and kernel cost; the CPU's on one core, as a rank of
 * `autopar run` has it (its description says so) */
static int measure_device(const struct backend *be, int cuda, struct device_spec *d)
{
	int st = be->init();

	if (!st && cuda)
		return profiler_device(be, 4096, (int64_t)256 << 20, d);
	if (!st)
		st = profiler_device(be, 512, (int64_t)64 << 20, d);
	if (!st)
		snprintf(d->description, sizeof d->description,
			 "one core of this machine (%.100s), measured by autopar profile",
			 be->describe());
	return st;
}

struct comm_rows {
	const struct comm_row *r;
	int n;
};

static int write_comm(FILE *f, void *ctx)
{
	const struct comm_rows *c = ctx;
	const struct comm_row *r = c->r;
	int n = c->n;

	fprintf(f, "op,devices,bytes,time_us,algbw_bytes_per_s,busbw_bytes_per_s\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "%s,%d,%lld,%.3f,%.6g,%.6g\n", r[i].op, r[i].devices,
			(long long)r[i].bytes, r[i].time_us, r[i].algbw_bytes_per_s,
			r[i].busbw_bytes_per_s);
	return ferror(f) ? AP_EFAIL : AP_OK;
}

/* `autopar profile --comm`: DIR/comm.csv */
static int run_comm(const char *outdir, int gpus, long long max_bytes)
{
	struct comm_row *rows = NULL;
	char path[PATH_MAX];
	int n = 0, rc = comm_bench(gpus, max_bytes, &rows, &n);
	struct comm_rows ctx = { rows, n };

	if (!rc && mkdir(outdir, 0777) != 0 && errno != EEXIST)
		rc = ap_err(AP_EINPUT, outdir, 0, "cannot create the directory: %s", strerror(errno));
	if (!rc) {
		snprintf(path, sizeof path, "%s/comm.csv", outdir);
		rc = write_atomic(path, write_comm, &ctx);
	}
	if (!rc)
		printf("%s: %d rows of NCCL bandwidth\n", path, n);
	free(rows);
	return rc;
}

/* What became of the device row, for the closing line. */
static const char *device_fate(const struct backend *be, int existing, int remeasure)
{
	if (!be)
		return "from profiles/devices.csv";
	if (!existing)
		return "measured";
	return remeasure ? "measured again" : "kept from the profile (--remeasure measures it again)";
}

static int run(int argc, char **argv)
{
	struct device_spec dev;
	struct profile p;
	struct graph g;
	struct measure_ctx c = { .p = &p };
	char path[PATH_MAX];
	int rc = AP_OK, before, npos, analytic = 0, comm = 0, remeasure = 0, existing = 0;
	int cuda, gpu;
	const struct backend *be = NULL;
	long long batch = 0, max_degree = 8, gpus = 0, max_bytes = (long long)256 << 20;
	const char *device = NULL, *outdir = NULL, *prec_s = "fp32";
	enum gpu_prec prec = GPU_FP32;
	int verbose = 0;
	struct opt_list models = { calloc((size_t)argc, sizeof(char *)), 0 };
	const struct opt opts[] = {
		{ NULL, "--analytic", OPT_FLAG, &analytic },
		{ "-d", "--device", OPT_STR, &device },
		{ "-m", "--model", OPT_LIST, &models },
		{ "-b", "--batch", OPT_POS_INT, &batch },
		{ NULL, "--max-degree", OPT_POS_INT, &max_degree },
		{ NULL, "--remeasure", OPT_FLAG, &remeasure },
		{ "-o", "--output", OPT_STR, &outdir },
		{ NULL, "--comm", OPT_FLAG, &comm },
		{ NULL, "--gpus", OPT_POS_INT, &gpus },
		{ NULL, "--max-bytes", OPT_POS_INT, &max_bytes },
		{ NULL, "--precision", OPT_STR, &prec_s },
		{ NULL, "--verbose", OPT_FLAG, &verbose },
		{ 0 },
	};

	profile_init(&p);
	profile_init(&c.done);
	graph_init(&g);
	if (!models.v) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	rc = args_parse("profile", argc, argv, opts, NULL, 0, &npos);
	if (!rc)
		rc = gpu_prec_parse(prec_s, &prec);
	/* only the CUDA backend has another precision than fp32 */
	if (!rc && prec != GPU_FP32 && (analytic || !device || cuda_device(device, &gpu) <= 0))
		rc = ap_err(AP_EINPUT, "--precision", 0, "%s needs -d cuda[:N] (expected fp32 "
			    "for the cpu and for --analytic)", gpu_prec_name(prec));
	if (rc)
		goto out;
	gpu_opts_set(prec, verbose ? stdout : NULL);
	if (comm) {
		rc = outdir ? run_comm(outdir, (int)gpus, max_bytes)
			    : ap_err(AP_EINPUT, WHO, 0, "expected --comm -o DIR (see autopar help profile)");
		goto out;
	}
	if (!device || !models.n || !outdir) {
		rc = ap_err(AP_EINPUT, WHO, 0, "expected -d DEVICE, -m MODEL and -o DIR (see autopar help profile)");
		goto out;
	}
	if (analytic && remeasure) {
		rc = ap_err(AP_EINPUT, "--remeasure", 0, "expected a measured profile, not --analytic (which measures nothing)");
		goto out;
	}
	cuda = cuda_device(device, &gpu);
	if (cuda < 0) {
		rc = ap_err(AP_EINPUT, "-d", 0, "expected cuda or cuda:N, got '%s'", device);
		goto out;
	}
	if (cuda && analytic) {
		rc = ap_err(AP_EINPUT, "-d", 0, "expected a device of profiles/devices.csv with --analytic, got '%s'", device);
		goto out;
	}
	if (!analytic && !(be = cuda ? &backend_cuda : backend_find(device))) {
		rc = ap_err(AP_EINPUT, WHO, 0,
			    "no runtime backend measures device '%s' in this build (expected cpu, cuda[:N], or --analytic for roofline rows)",
			    device);
		goto out;
	}
	if (cuda)
		rc = gpu_row(gpu, &dev);
	else
		rc = device_find(datapath(path, sizeof path, "profiles/devices.csv"), device, &dev);
	/* the profile first: a malformed one is refused before anything
	 * is measured, and an existing one keeps its device row */
	if (!rc)
		rc = open_profile(outdir, &dev, &p, &existing);
	if (!rc && be && (!existing || remeasure))
		rc = measure_device(be, cuda, &dev);
	if (rc)
		goto out;
	if (!be || !existing || remeasure)
		set_device(outdir, &p, &dev);
	before = p.nrows;
	c.be = be;
	c.remeasure = remeasure;
	for (int m = 0; m < models.n; m++) {
		rc = model_load(models.v[m], batch, &g);
		if (rc)
			goto out;
		if (be)
			rc = measure_model(&c, &g, (int)max_degree);
		if (!rc)
			rc = profile_add_analytic(&p, &g, (int)max_degree);
		graph_release(&g);
		if (rc)
			goto out;
	}
	rc = profile_save(&p, outdir);
	if (rc)
		goto out;
	/* kept: the rows DIR had that it still has as they were */
	printf("%s: %d rows for %s (%d measured, %d kept, %d new, %d model%s, up to %lld shards)\n",
	       outdir, p.nrows, p.dev.name, c.measured, before - c.replaced, p.nrows - before,
	       models.n, models.n == 1 ? "" : "s", max_degree);
	printf("%s: device row %s\n", outdir, device_fate(be, existing, remeasure));
	if (fflush(stdout) != 0)
		rc = ap_err(AP_EFAIL, WHO, 0, "cannot write to stdout");
out:
	profile_release(&p);
	profile_release(&c.done);
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
