/*
 * Helpers shared by the cmocka tests: temporary files and the paths of the
 * data under test.  Tests run with AUTOPAR_DATA set to the source tree.
 */
#ifndef AUTOPAR_TESTUTIL_H
#define AUTOPAR_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <math.h>

#include "util/err.h"
#include "plan/instance.h"
#include "plan/plan.h"
#include "plan/plan_check.h"

/* A per-process temporary directory, made on first use: a new one each
 * time (mkdtemp), so no file of an earlier process that had the same pid
 * is found in it. */
static inline const char *tmp_dir(void)
{
	static char dir[256];
	const char *base = getenv("TMPDIR");

	if (!dir[0]) {
		snprintf(dir, sizeof dir, "%s/autopar-test-%ld-XXXXXX",
			 base && *base ? base : "/tmp", (long)getpid());
		if (!mkdtemp(dir))
			fail_msg("cannot make a temporary directory under %s",
				 base && *base ? base : "/tmp");
	}
	return dir;
}

/* Writes text to tmp_dir()/name and returns the path (a static buffer per
 * call, eight in rotation). */
static inline const char *tmp_write(const char *name, const char *text)
{
	static char paths[8][512];
	static int slot;
	char *p = paths[slot++ % 8];
	FILE *f;

	snprintf(p, 512, "%s/%s", tmp_dir(), name);
	f = fopen(p, "w");
	if (!f)
		return NULL;
	fputs(text, f);
	fclose(f);
	return p;
}

/* Run from the top of the source tree, a test finds the data there
 * without AUTOPAR_DATA (which `make test` sets). */
__attribute__((constructor)) static void test_data_default(void)
{
	if (!getenv("AUTOPAR_DATA") && access("models/FORMAT.md", R_OK) == 0)
		setenv("AUTOPAR_DATA", ".", 0);
}

/* The binary under test: AUTOPAR_BIN, else bin/autopar. */
static inline const char *test_bin(void)
{
	const char *b = getenv("AUTOPAR_BIN");

	return b && *b ? b : "bin/autopar";
}

/* Reads the file at path into out (at most len - 1 bytes, then a NUL);
 * returns the bytes read. */
static inline size_t test_read_file(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	fclose(f);
	return n;
}

/* Runs `autopar ARGS` with its stderr (and its stdout too when both, else
 * /dev/null) captured into out (len bytes); returns the exit status (128 +
 * signal when killed). */
static inline int test_autopar(const char *args, int both, char *out, size_t len)
{
	char cmd[4096], path[600];
	int st;

	snprintf(path, sizeof path, "%s/autopar.out", tmp_dir());
	if (both)
		snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>&1", test_bin(), args, path);
	else
		snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>'%s'", test_bin(), args, path);
	st = system(cmd);
	test_read_file(path, out, len);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Runs the shell command cmd with its standard output into out (len
 * bytes; a command that wants its errors there too says 2>&1); returns
 * its exit status (128 + signal when killed). */
static inline int test_shell(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	size_t n;
	int st;

	assert_non_null(p);
	n = fread(out, 1, len - 1, p);
	out[n] = 0;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A common statistic of a plan (plan.h: est_ms, bound_ms, gap), which the
 * test fails without (NAN). */
static inline double test_present(double v, const char *name)
{
	if (isnan(v))
		fail_msg("plan has no '%s'", name);
	return v;
}

/* The plan's search statistic `name`; the test fails when it has none. */
static inline double test_plan_stat(const struct plan *p, const char *name)
{
	double v = plan_stat(p, name);

	if (isnan(v))
		fail_msg("plan has no statistic '%s'", name);
	return v;
}

/* Loads model at the batch `batch` ("N" or "N/dev" as -b takes it; NULL:
 * the model's own) on cluster with the profile the cluster names, as the
 * commands do; the test fails with the reason when it does not load. */
static inline void test_instance(struct instance *x, const char *model, const char *batch,
				 const char *cluster)
{
	struct batch_spec b = { 0, 0 };

	if ((batch && batch_spec_parse(batch, "test", 0, &b)) ||
	    instance_load(x, model, &b, cluster, NULL))
		fail_msg("%s on %s: %s", model, cluster, ap_last_error());
}

/* Ops a and b of g (by name) run on the same set of devices in plan p, as
 * a weight tied between them needs (plan_validate()); the test fails
 * naming both otherwise. */
static inline void test_same_devices(const struct plan *p, const struct graph *g,
				     const char *a, const char *b)
{
	int i = graph_find(g, a), j = graph_find(g, b);

	if (i < 0 || j < 0)
		fail_msg("%s: no op '%s' or '%s'", g->name, a, b);
	if (!plan_same_devices(&p->ops[i], &p->ops[j]))
		fail_msg("%s of %s: '%s' (%d devices from %d) and '%s' (%d from %d) run on "
			 "different devices", p->planner, g->name, a, p->ops[i].ndev,
			 p->ops[i].devices[0], b, p->ops[j].ndev, p->ops[j].devices[0]);
}

/* A small language model whose head ties its weight to the token
 * embedding (tie=, as GPT-2's) with layers after the head, so that a
 * pipeline may cut after the pair but not between: a model file for
 * test_instance(). */
static inline const char *test_tied_model(void)
{
	return tmp_write("tied_mid.model",
			 "model tied_mid\n"
			 "batch 32\n"
			 "input     ids   l=64\n"
			 "embedding wte   ids  vocab=512 out=256\n"
			 "linear    a1    wte  out=1024\n"
			 "gelu      a1g   a1\n"
			 "linear    a2    a1g  out=256\n"
			 "linear    head  a2   out=512 bias=0 tie=wte\n"
			 "linear    b1    head out=2048\n"
			 "gelu      b1g   b1\n"
			 "linear    b2    b1g  out=2048\n"
			 "gelu      b2g   b2\n"
			 "linear    b3    b2g  out=2048\n"
			 "gelu      b3g   b3\n"
			 "linear    b4    b3g  out=512\n"
			 "loss      loss  b4\n");
}

#endif
