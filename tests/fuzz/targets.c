/*
 * One entry point per parser (targets.h).  Parsers that take text get the
 * bytes in memory (model_parse); the others only read paths, so the bytes
 * are written to a file of a private temporary directory first, named as a
 * user's file would be (.txt, .json, ops.csv, clusters.csv).  A status
 * other than AP_OK must come with a message: before each parse the last
 * message is set to a sentinel, and a failure that leaves it in place
 * reported nothing (core/util/err.h).
 */
#include "targets.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/cluster.h"
#include "util/datadir.h"
#include "util/err.h"
#include "model/graph.h"
#include "matrix.h"
#include "model/model_io.h"
#include "model/piper_inst.h"
#include "model/piper_io.h"
#include "hw/piper_machine.h"
#include "plan/plan.h"
#include "hw/profile.h"
#include "plan/plan_io.h"
#include "plan/plan_check.h"

#define SENTINEL "fuzz: no message yet"

static char tmp[1024]; /* the private directory, "" before setup */
static struct graph plan_graph; /* what a plan is read against */
static struct cluster plan_cluster;
static int ready;

/* ---- helpers ------------------------------------------------------------- */

static const char *tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmp, name);
	return buf;
}

static int write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	int bad;

	if (!f)
		return -1;
	bad = size && fwrite(data, 1, size, f) != size;
	return fclose(f) || bad ? -1 : 0;
}

/* The bytes as a C string (cut at the first NUL, as a C caller would pass
 * them); the caller frees it. */
static char *text_of(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		return NULL;
	memcpy(s, data, size);
	s[size] = 0;
	return s;
}

static void arm(void)
{
	ap_err(AP_OK, NULL, 0, "%s", SENTINEL);
}

/* The status as targets.h promises it. */
static int checked(int rc)
{
	if (rc != AP_OK && strcmp(ap_last_error(), "autopar: " SENTINEL) == 0)
		return FUZZ_ESILENT;
	return rc;
}

static int copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb");
	uint8_t buf[4096];
	size_t n;
	int rc = 0;
	FILE *out;

	if (!in)
		return -1;
	out = fopen(to, "wb");
	if (!out) {
		fclose(in);
		return -1;
	}
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			rc = -1;
	fclose(in);
	return fclose(out) || rc ? -1 : 0;
}

/* ---- setup ----------------------------------------------------------------- */

int fuzz_setup(void)
{
	const char *base = getenv("TMPDIR");
	char src[PATH_MAX], dst[PATH_MAX];

	if (ready)
		return 0;
	ap_err_quiet(1);
	snprintf(tmp, sizeof tmp, "%s/autopar-fuzz-XXXXXX", base && *base ? base : P_tmpdir);
	if (!mkdtemp(tmp)) {
		fprintf(stderr, "fuzz: cannot make a temporary directory: %s\n", strerror(errno));
		tmp[0] = 0;
		return -1;
	}
	/* The profile's device row and the devices a clusters.csv names stay
	 * fixed; only ops.csv and clusters.csv come from the input. */
	if (copy_file(datapath(src, sizeof src, "profiles/v100-analytic/device.csv"),
		      tmp_path(dst, sizeof dst, "device.csv")) ||
	    copy_file(datapath(src, sizeof src, "profiles/devices.csv"),
		      tmp_path(dst, sizeof dst, "devices.csv"))) {
		fprintf(stderr, "fuzz: cannot copy the data files under '%s'\n", datadir());
		fuzz_teardown();
		return -1;
	}
	if (model_read(datapath(src, sizeof src, "models/mlp.model"), 0, &plan_graph) ||
	    cluster_resolve("1x2:v100", datapath(dst, sizeof dst, "profiles/clusters.csv"),
			    &plan_cluster)) {
		fprintf(stderr, "fuzz: cannot load the plan's model and cluster: %s\n",
			ap_last_error());
		fuzz_teardown();
		return -1;
	}
	ready = 1;
	return 0;
}

void fuzz_teardown(void)
{
	static const char *const names[] = { "in.model", "in.txt", "ops.csv", "device.csv",
					     "clusters.csv", "devices.csv", "in.json",
					     "in.matrix" };
	char path[PATH_MAX];

	if (tmp[0]) {
		for (size_t i = 0; i < sizeof names / sizeof *names; i++)
			unlink(tmp_path(path, sizeof path, names[i]));
		rmdir(tmp);
		tmp[0] = 0;
	}
	graph_release(&plan_graph);
	ready = 0;
}

/* ---- the parsers ------------------------------------------------------------- */

/* (1) A zoo model, models/FORMAT.md, parsed from memory. */
static int run_model(const uint8_t *data, size_t size)
{
	char *text = text_of(data, size);
	struct graph g;
	int rc;

	if (!text)
		return AP_EFAIL;
	arm();
	rc = checked(model_parse(text, "fuzz.model", 0, &g));
	if (rc == AP_OK)
		graph_release(&g);
	free(text);
	return rc;
}

/* (2) A PipeDream graph.txt profile (core/model/pipedream_io.c). */
static int run_pipedream(const uint8_t *data, size_t size)
{
	char path[PATH_MAX];
	struct graph g;
	int rc;

	if (write_file(tmp_path(path, sizeof path, "in.txt"), data, size))
		return AP_EFAIL;
	arm();
	rc = checked(pipedream_read(path, 0, &g));
	if (rc == AP_OK)
		graph_release(&g);
	return rc;
}

/* (3) A profile's ops.csv (core/hw/profile.c), next to a fixed device.csv. */
static int run_profile(const uint8_t *data, size_t size)
{
	char path[PATH_MAX];
	struct profile p;
	int rc;

	if (write_file(tmp_path(path, sizeof path, "ops.csv"), data, size))
		return AP_EFAIL;
	arm();
	rc = checked(profile_load(tmp, &p));
	if (rc == AP_OK)
		profile_release(&p);
	return rc;
}

/* (4) A cluster: the first line is the argument of -c (an inline spec or a
 * preset name); the lines after it, when there are any, are the
 * clusters.csv the name is looked up in (core/hw/cluster.c). */
static int run_cluster(const uint8_t *data, size_t size)
{
	char *text = text_of(data, size), *nl;
	char csv[PATH_MAX];
	struct cluster c;
	int rc;

	if (!text)
		return AP_EFAIL;
	nl = memchr(data, '\n', size);
	if (nl) {
		size_t at = (size_t)((const uint8_t *)nl - data);

		text[at] = 0;
		if (write_file(tmp_path(csv, sizeof csv, "clusters.csv"), data + at + 1,
			       size - at - 1)) {
			free(text);
			return AP_EFAIL;
		}
	} else {
		datapath(csv, sizeof csv, "profiles/clusters.csv");
	}
	arm();
	rc = checked(cluster_resolve(text, csv, &c));
	if (rc == AP_OK && (cluster_ndevices(&c) < 1 || c.nodes < 1 || c.per_node < 1))
		abort(); /* a resolved cluster has devices */
	free(text);
	return rc;
}

/* (5) A plan JSON (core/plan/plan_read.c) read against models/mlp.model: peeked as
 * `autopar sim` does first, read, then checked against 1x2:v100. */
static int run_plan(const uint8_t *data, size_t size)
{
	char path[PATH_MAX];
	struct plan_head head;
	struct plan p;
	int rc;

	if (write_file(tmp_path(path, sizeof path, "in.json"), data, size))
		return AP_EFAIL;
	arm();
	rc = checked(plan_peek(path, &head));
	if (rc != AP_OK && rc != AP_EINPUT)
		return rc;
	plan_init(&p); /* plan_read() releases what p held */
	arm();
	rc = checked(plan_read(path, &plan_graph, &p));
	if (rc != AP_OK)
		return rc;
	arm();
	rc = checked(plan_validate(&p, &plan_graph, &plan_cluster, path));
	plan_release(&p);
	return rc;
}

/* (6) A benchmark matrix (bench/matrix.c). */
static int run_matrix(const uint8_t *data, size_t size)
{
	char path[PATH_MAX];
	struct matrix m;
	int rc;

	if (write_file(tmp_path(path, sizeof path, "in.matrix"), data, size))
		return AP_EFAIL;
	arm();
	rc = checked(matrix_read(path, &m));
	if (rc == AP_OK)
		matrix_release(&m);
	return rc;
}

/* (7) Piper's JSON planner input (core/model/piper_io.c), and the cluster it
 * describes. */
static int run_piper(const uint8_t *data, size_t size)
{
	char path[PATH_MAX];
	struct piper_inst pi;
	struct cluster c;
	int rc;

	if (write_file(tmp_path(path, sizeof path, "in.json"), data, size))
		return AP_EFAIL;
	arm();
	rc = checked(piper_read(path, &pi));
	if (rc != AP_OK)
		return rc;
	arm();
	rc = checked(piper_cluster(&pi, "fuzz", &c));
	piper_inst_release(&pi);
	return rc;
}

const struct fuzz_target fuzz_targets[] = {
	{ "model", run_model },
	{ "pipedream", run_pipedream },
	{ "profile", run_profile },
	{ "cluster", run_cluster },
	{ "plan", run_plan },
	{ "matrix", run_matrix },
	{ "piper", run_piper },
};
const int fuzz_ntargets = sizeof fuzz_targets / sizeof *fuzz_targets;

const struct fuzz_target *fuzz_target_find(const char *name)
{
	for (int i = 0; i < fuzz_ntargets; i++)
		if (strcmp(fuzz_targets[i].name, name) == 0)
			return &fuzz_targets[i];
	return NULL;
}

int fuzz_one(const char *name, const uint8_t *data, size_t size)
{
	const struct fuzz_target *t = fuzz_target_find(name);
	int rc;

	if (!t || !ready)
		abort();
	rc = t->run(data, size);
	if (rc == FUZZ_ESILENT) {
		fprintf(stderr, "fuzz: %s: failed without a message\n", name);
		abort();
	}
	if (rc != AP_OK && rc != AP_EINPUT && rc != AP_EFAIL) {
		fprintf(stderr, "fuzz: %s: status %d is not an ap_status\n", name, rc);
		abort();
	}
	return rc;
}
