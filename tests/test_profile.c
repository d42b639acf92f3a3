/*
 * Tests of core/hw/profile.c: the CSV round trip, the lookup order (imported,
 * exact measured or analytic row, scaled nearest instance, roofline), the
 * roofline's physics (compute- versus memory-bound, shard scaling), the
 * analytic generator's coverage, every malformed-file message, and the
 * tally line.  When AUTOPAR_BIN is set (make test) the `profile` command is
 * run too.  Graphs come from inline model text through model_parse().
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/err.h"
#include "model/graph.h"
#include "model/model_io.h"
#include "hw/profile.h"
#include "hw/roofline.h"
#include "model/ops.h"
#include "cost/cost.h"

/* A V100-like device: 15.7 TFLOPS float32, 900 GB/s, 5 us per launch. */
static void test_device(struct device_spec *d)
{
	memset(d, 0, sizeof *d);
	snprintf(d->name, sizeof d->name, "testgpu");
	d->fp32_flops_per_s = 15.7e12;
	d->tensor_flops_per_s = 125e12;
	d->mem_bw_bytes_per_s = 900e9;
	d->mem_bytes = 17179869184;
	d->launch_us = 5;
	snprintf(d->description, sizeof d->description, "test device, like a V100");
}

static void parse(const char *text, struct graph *g)
{
	int rc = model_parse(text, "inline.model", 0, g);

	if (rc)
		fail_msg("model_parse: %s", ap_last_error());
}

static int op_index(const struct graph *g, const char *name)
{
	int i = graph_find(g, name);

	if (i < 0)
		fail_msg("no op '%s'", name);
	return i;
}

static void set_degree(int degree[NDIMS], int n, int c, int h, int w, int l)
{
	degree[DIM_N] = n;
	degree[DIM_C] = c;
	degree[DIM_H] = h;
	degree[DIM_W] = w;
	degree[DIM_L] = l;
}

static void signature(const struct graph *g, int i, const int degree[NDIMS],
		      char *buf, size_t len)
{
	assert_int_equal(graph_op_signature(g, i, degree, buf, len), AP_OK);
}

static void assert_close(double got, double want, double rel)
{
	if (!(fabs(got - want) <= rel * fabs(want)))
		fail_msg("got %.9g, expected %.9g (relative tolerance %g)", got,
			 want, rel);
}

/* ---- temporary directories ------------------------------------------------ */

static void make_tmpdir(char *buf, size_t len)
{
	const char *base = getenv("TMPDIR");

	snprintf(buf, len, "%s/autopar-profile-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(buf))
		fail_msg("cannot create a temporary directory under %s", buf);
}

static void remove_tree(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *e;
	struct stat st;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			remove_tree(path);
		else
			unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static int count_entries(const char *dir)
{
	struct dirent *e;
	int n = 0;
	DIR *d = opendir(dir);

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* ---- round trip -------------------------------------------------------------- */

static void test_round_trip(void **state)
{
	static const char *const sigs[] = {
		"linear:64x1024>64x512",
		"conv2d:32x3x224x224>32x64x112x112:k7x7,s2x2,p3x3,g1,b1",
		"opaque:8x16>8x16:a \"quoted\", odd, desc",
	};
	struct profile p, q;
	char tmp[PATH_MAX], dir[PATH_MAX + 16];
	const struct prof_row *r;

	(void)state;
	make_tmpdir(tmp, sizeof tmp);
	/* a directory that does not exist yet, two levels down */
	snprintf(dir, sizeof dir, "%s/a/v100-test", tmp);
	profile_init(&p);
	test_device(&p.dev);
	assert_int_equal(profile_put(&p, sigs[0], 123.5, 250.25, 0, 0), AP_OK);
	assert_int_equal(profile_put(&p, sigs[1], 1.5e3, 3.25e3, 9633792, 1), AP_OK);
	assert_int_equal(profile_put(&p, sigs[2], 0.125, 0, 7, 0), AP_OK);
	/* replacing keeps one row */
	assert_int_equal(profile_put(&p, sigs[0], 124.5, 251.25, 0, 0), AP_OK);
	assert_int_equal(p.nrows, 3);
	assert_int_equal(profile_save(&p, dir), AP_OK);
	/* exactly the two files: no temporary left behind */
	assert_int_equal(count_entries(dir), 2);
	/* rows sorted by signature, signatures quoted */
	{
		char path[PATH_MAX + 32], line[256];
		FILE *f;

		snprintf(path, sizeof path, "%s/ops.csv", dir);
		f = fopen(path, "r");
		assert_non_null(f);
		assert_non_null(fgets(line, sizeof line, f));
		assert_string_equal(line, "signature,fwd_us,bwd_us,workspace_bytes,source\n");
		assert_non_null(fgets(line, sizeof line, f));
		assert_int_equal(strncmp(line, "\"conv2d:", 8), 0);
		assert_non_null(fgets(line, sizeof line, f));
		assert_int_equal(strncmp(line, "\"linear:", 8), 0);
		fclose(f);
	}

	assert_int_equal(profile_load(dir, &q), AP_OK);
	assert_string_equal(q.name, "v100-test");
	assert_string_equal(q.dev.name, "testgpu");
	assert_close(q.dev.fp32_flops_per_s, p.dev.fp32_flops_per_s, 1e-9);
	assert_close(q.dev.mem_bw_bytes_per_s, p.dev.mem_bw_bytes_per_s, 1e-9);
	assert_close(q.dev.launch_us, p.dev.launch_us, 1e-9);
	assert_int_equal(q.dev.mem_bytes, p.dev.mem_bytes);
	assert_int_equal(q.nrows, 3);
	for (int k = 0; k < 3; k++) {
		const struct prof_row *a = profile_find(&p, sigs[k]);

		r = profile_find(&q, sigs[k]);
		if (!r)
			fail_msg("signature '%s' lost in the round trip", sigs[k]);
		assert_close(r->fwd_us, a->fwd_us, 1e-6);
		assert_close(r->bwd_us, a->bwd_us, 1e-6);
		assert_int_equal(r->workspace_bytes, a->workspace_bytes);
		assert_int_equal(r->analytic, a->analytic);
	}
	assert_null(profile_find(&q, "linear:64x1024>64x1024"));
	/* measured rows are counted per kind for the scaled fallback */
	assert_int_equal(q.nmeasured[OP_LINEAR], 1);
	assert_int_equal(q.nmeasured[OP_CONV2D], 0);
	assert_int_equal(q.nmeasured[OP_OPAQUE], 1);

	/* dropping analytic rows keeps the measured ones findable */
	assert_int_equal(profile_drop_analytic(&q), 1);
	assert_int_equal(q.nrows, 2);
	assert_null(profile_find(&q, sigs[1]));
	assert_non_null(profile_find(&q, sigs[0]));
	assert_non_null(profile_find(&q, sigs[2]));

	profile_release(&p);
	profile_release(&q);
	remove_tree(tmp);
}

/* Many rows: the index must find every one after several rebuilds. */
static void test_many_rows(void **state)
{
	struct profile p;
	char sig[64];

	(void)state;
	profile_init(&p);
	for (int k = 0; k < 5000; k++) {
		snprintf(sig, sizeof sig, "relu:%dx%d>%dx%d", k, k + 1, k, k + 1);
		assert_int_equal(profile_put(&p, sig, k, 2 * k, 0, k % 2), AP_OK);
	}
	assert_int_equal(p.nrows, 5000);
	for (int k = 0; k < 5000; k++) {
		const struct prof_row *r;

		snprintf(sig, sizeof sig, "relu:%dx%d>%dx%d", k, k + 1, k, k + 1);
		r = profile_find(&p, sig);
		assert_non_null(r);
		assert_true(r->fwd_us == k);
	}
	assert_int_equal(p.nmeasured[OP_RELU], 2500);
	profile_release(&p);
}

/* ---- lookup ----------------------------------------------------------------- */

static const char mlp_text[] =
	"model mlp\n"
	"batch 64\n"
	"input x c=1024\n"
	"linear fc1 x out=1024\n"
	"relu r1 fc1\n"
	"linear fc2 r1 out=512\n"
	"tanh t2 fc2\n";

static void test_lookup_sources(void **state)
{
	struct graph g;
	struct profile p;
	struct op_cost c, roof, base;
	char sig[1024];
	int d1[NDIMS], d2[NDIMS], fc1, fc2, r1, t2;

	(void)state;
	parse(mlp_text, &g);
	fc1 = op_index(&g, "fc1");
	fc2 = op_index(&g, "fc2");
	r1 = op_index(&g, "r1");
	t2 = op_index(&g, "t2");
	profile_init(&p);
	test_device(&p.dev);
	set_degree(d1, 1, 1, 1, 1, 1);
	set_degree(d2, 2, 1, 1, 1, 1);

	/* nothing in the profile: roofline */
	assert_int_equal(profile_lookup(&p, &g, fc1, d1, &c), AP_OK);
	assert_int_equal(c.source, COST_ROOFLINE);
	roofline_cost(&p.dev, &g, fc1, d1, &base);
	assert_close(c.fwd_us, base.fwd_us, 1e-12);
	assert_close(c.bwd_us, base.bwd_us, 1e-12);

	/* exact measured row, three times slower than the roofline */
	signature(&g, fc1, d1, sig, sizeof sig);
	assert_int_equal(profile_put(&p, sig, 3 * base.fwd_us, 3 * base.bwd_us, 64, 0), AP_OK);
	assert_int_equal(profile_lookup(&p, &g, fc1, d1, &c), AP_OK);
	assert_int_equal(c.source, COST_MEASURED);
	assert_close(c.fwd_us, 3 * base.fwd_us, 1e-12);
	assert_close(c.bwd_us, 3 * base.bwd_us, 1e-12);
	assert_int_equal(c.workspace_bytes, 64);

	/* exact analytic row */
	signature(&g, r1, d1, sig, sizeof sig);
	assert_int_equal(profile_put(&p, sig, 7, 8, 0, 1), AP_OK);
	assert_int_equal(profile_lookup(&p, &g, r1, d1, &c), AP_OK);
	assert_int_equal(c.source, COST_ANALYTIC);
	assert_close(c.fwd_us, 7, 1e-12);
	assert_close(c.bwd_us, 8, 1e-12);

	/* another shard of a measured op: the measurement scaled by work */
	assert_int_equal(profile_lookup(&p, &g, fc1, d2, &c), AP_OK);
	assert_int_equal(c.source, COST_SCALED);
	roofline_cost(&p.dev, &g, fc1, d2, &roof);
	assert_close(c.fwd_us, 3 * roof.fwd_us, 1e-9);
	assert_close(c.bwd_us, 3 * roof.bwd_us, 1e-9);

	/* another op of the kind: scaled from fc1's measured instance */
	assert_int_equal(profile_lookup(&p, &g, fc2, d1, &c), AP_OK);
	assert_int_equal(c.source, COST_SCALED);
	roofline_cost(&p.dev, &g, fc2, d1, &roof);
	assert_close(c.fwd_us, 3 * roof.fwd_us, 1e-9);

	/* the nearest instance wins: a measured half-batch shard of fc1 with
	 * a different ratio is closer in work to fc1's quarter-batch shard */
	signature(&g, fc1, d2, sig, sizeof sig);
	roofline_cost(&p.dev, &g, fc1, d2, &roof);
	assert_int_equal(profile_put(&p, sig, 2 * roof.fwd_us, 2 * roof.bwd_us, 0, 0), AP_OK);
	set_degree(d2, 4, 1, 1, 1, 1);
	assert_int_equal(profile_lookup(&p, &g, fc1, d2, &c), AP_OK);
	assert_int_equal(c.source, COST_SCALED);
	roofline_cost(&p.dev, &g, fc1, d2, &roof);
	assert_close(c.fwd_us, 2 * roof.fwd_us, 1e-9);

	/* relu has only an analytic row elsewhere: no measured instance of
	 * the kind, so the roofline */
	set_degree(d2, 2, 1, 1, 1, 1);
	assert_int_equal(profile_lookup(&p, &g, r1, d2, &c), AP_OK);
	assert_int_equal(c.source, COST_ROOFLINE);
	roofline_cost(&p.dev, &g, r1, d2, &roof);
	assert_close(c.fwd_us, roof.fwd_us, 1e-12);

	/* a measured row of another kind (relu) does not scale tanh */
	signature(&g, r1, d2, sig, sizeof sig);
	assert_int_equal(profile_put(&p, sig, 100, 100, 0, 0), AP_OK);
	assert_int_equal(profile_lookup(&p, &g, t2, d1, &c), AP_OK);
	assert_int_equal(c.source, COST_ROOFLINE);
	profile_release(&p);

	/* analytic rows are no measurement to scale: fc1's half-batch row is
	 * analytic (and far off the roofline), so its quarter-batch shard is
	 * scaled from the measured full-batch row */
	profile_init(&p);
	test_device(&p.dev);
	signature(&g, fc1, d1, sig, sizeof sig);
	assert_int_equal(profile_put(&p, sig, 3 * base.fwd_us, 3 * base.bwd_us, 0, 0), AP_OK);
	set_degree(d2, 2, 1, 1, 1, 1);
	signature(&g, fc1, d2, sig, sizeof sig);
	roofline_cost(&p.dev, &g, fc1, d2, &roof);
	assert_int_equal(profile_put(&p, sig, 10 * roof.fwd_us, 10 * roof.bwd_us, 0, 1), AP_OK);
	set_degree(d2, 4, 1, 1, 1, 1);
	assert_int_equal(profile_lookup(&p, &g, fc1, d2, &c), AP_OK);
	assert_int_equal(c.source, COST_SCALED);
	roofline_cost(&p.dev, &g, fc1, d2, &roof);
	assert_close(c.fwd_us, 3 * roof.fwd_us, 1e-9);
	profile_release(&p);
	graph_release(&g);
}

/* A profile measured at a larger batch than the step's (gpt2's rows at 8,
 * a step at 4): each op's own row at batch 4x answers, scaled by work,
 * ahead of another op's row at the step's own batch. */
static void test_lookup_larger_batch(void **state)
{
	struct graph g, big;
	struct profile p;
	struct op_cost c, roof, broof;
	char sig[1024];
	int d1[NDIMS], fc1, fc2;

	(void)state;
	/* fc2's shapes are no shard of fc1's, so fc1's only own row is the
	 * one at the larger batch */
	parse("model mlp\nbatch 64\ninput x c=1024\nlinear fc1 x out=1024\n"
	      "relu r1 fc1\nlinear fc2 r1 out=300\n",
	      &g);
	fc1 = op_index(&g, "fc1");
	fc2 = op_index(&g, "fc2");
	profile_init(&p);
	test_device(&p.dev);
	set_degree(d1, 1, 1, 1, 1, 1);
	assert_int_equal(graph_copy(&big, &g), AP_OK);
	assert_string_equal(big.ops[fc1].name, "fc1");
	assert_int_equal(graph_set_batch(&big, 4 * g.batch), AP_OK);
	assert_int_equal(big.ops[fc1].out.size[0], 4 * g.ops[fc1].out.size[0]);
	assert_int_equal(g.ops[fc1].out.size[0], 64); /* the copy owns its ops */

	/* fc1 measured at batch 256, five times its roofline there; fc2 at
	 * batch 64, twice its roofline */
	signature(&big, fc1, d1, sig, sizeof sig);
	roofline_cost(&p.dev, &big, fc1, d1, &broof);
	assert_int_equal(profile_put(&p, sig, 5 * broof.fwd_us, 5 * broof.bwd_us, 0, 0), AP_OK);
	signature(&g, fc2, d1, sig, sizeof sig);
	roofline_cost(&p.dev, &g, fc2, d1, &roof);
	assert_int_equal(profile_put(&p, sig, 2 * roof.fwd_us, 2 * roof.bwd_us, 0, 0), AP_OK);

	assert_int_equal(profile_lookup(&p, &g, fc1, d1, &c), AP_OK);
	assert_int_equal(c.source, COST_SCALED);
	roofline_cost(&p.dev, &g, fc1, d1, &roof);
	assert_close(c.fwd_us, 5 * roof.fwd_us, 1e-9);
	assert_close(c.bwd_us, 5 * roof.bwd_us, 1e-9);
	assert_true(c.fwd_us < 5 * broof.fwd_us);

	/* the same graph at batch 256 reads fc1's row as it is */
	assert_int_equal(profile_lookup(&p, &big, fc1, d1, &c), AP_OK);
	assert_int_equal(c.source, COST_MEASURED);
	assert_close(c.fwd_us, 5 * broof.fwd_us, 1e-12);
	graph_release(&big);
	profile_release(&p);
	graph_release(&g);
}

static void test_lookup_imported(void **state)
{
	static const char text[] =
		"model imported\n"
		"batch 32\n"
		"input x c=256\n"
		"linear fc x out=256 fwd_us=100 bwd_us=300\n"
		"relu r fc\n";
	struct graph g;
	struct profile p;
	struct op_cost c;
	char sig[1024];
	int d[NDIMS], fc;

	(void)state;
	parse(text, &g);
	fc = op_index(&g, "fc");
	assert_true(g.ops[fc].m.valid);
	profile_init(&p);
	test_device(&p.dev);
	set_degree(d, 1, 1, 1, 1, 1);
	/* a row under its signature does not override the op's own numbers */
	signature(&g, fc, d, sig, sizeof sig);
	assert_int_equal(profile_put(&p, sig, 1, 1, 0, 0), AP_OK);
	assert_int_equal(profile_lookup(&p, &g, fc, d, &c), AP_OK);
	assert_int_equal(c.source, COST_IMPORTED);
	assert_close(c.fwd_us, 100, 1e-12);
	assert_close(c.bwd_us, 300, 1e-12);

	set_degree(d, 4, 1, 1, 1, 1);
	assert_int_equal(profile_lookup(&p, &g, fc, d, &c), AP_OK);
	assert_int_equal(c.source, COST_IMPORTED);
	assert_close(c.fwd_us, 25, 1e-12);
	assert_close(c.bwd_us, 75, 1e-12);

	set_degree(d, 2, 2, 1, 1, 1);
	assert_int_equal(profile_lookup(&p, &g, fc, d, &c), AP_OK);
	assert_close(c.fwd_us, 25, 1e-12);

	/* the op without numbers still goes through the profile */
	set_degree(d, 1, 1, 1, 1, 1);
	assert_int_equal(profile_lookup(&p, &g, op_index(&g, "r"), d, &c), AP_OK);
	assert_int_equal(c.source, COST_ROOFLINE);

	profile_release(&p);
	graph_release(&g);
}

/* ---- roofline --------------------------------------------------------------- */

static void test_roofline(void **state)
{
	static const char text[] =
		"model big\n"
		"batch 1024\n"
		"input x c=4096\n"
		"linear fc x out=4096\n"
		"relu r fc\n"
		"input img c=64 h=56 w=56\n"
		"conv2d conv img out=64 k=3 pad=1\n"
		"flatten flat r\n";
	struct device_spec dev;
	struct graph g;
	struct op_cost c1, c2, c4;
	int d[NDIMS], fc, r, conv;
	double rate, bw, peak_us, bytes;

	(void)state;
	parse(text, &g);
	test_device(&dev);
	fc = op_index(&g, "fc");
	r = op_index(&g, "r");
	conv = op_index(&g, "conv");
	rate = dev.fp32_flops_per_s;
	bw = dev.mem_bw_bytes_per_s;

	/* a big linear is compute bound: about 2 macs / rate, no faster than
	 * the peak and no slower than half of it */
	set_degree(d, 1, 1, 1, 1, 1);
	roofline_cost(&dev, &g, fc, d, &c1);
	assert_int_equal(c1.source, COST_ROOFLINE);
	peak_us = 2.0 * (double)g.ops[fc].fwd_macs / rate * 1e6;
	assert_true(c1.fwd_us - dev.launch_us >= peak_us);
	assert_true(c1.fwd_us - dev.launch_us <= 2 * peak_us);
	bytes = (double)(g.ops[0].out_bytes + g.ops[fc].out_bytes +
			 g.ops[fc].params * BYTES_PER_ELEM);
	assert_true(c1.fwd_us > 5 * bytes / bw * 1e6);
	/* backward does twice the multiply-accumulates */
	assert_close(c1.bwd_us - 2 * dev.launch_us, 2 * (c1.fwd_us - dev.launch_us), 0.01);
	assert_int_equal(c1.workspace_bytes, 0);

	/* halving the shard (batch or output features) about halves it */
	set_degree(d, 2, 1, 1, 1, 1);
	roofline_cost(&dev, &g, fc, d, &c2);
	assert_close(c2.fwd_us - dev.launch_us, (c1.fwd_us - dev.launch_us) / 2, 0.01);
	set_degree(d, 1, 2, 1, 1, 1);
	roofline_cost(&dev, &g, fc, d, &c2);
	assert_close(c2.fwd_us - dev.launch_us, (c1.fwd_us - dev.launch_us) / 2, 0.01);

	/* relu is memory bound: it reads and writes 4096 x 1024 floats */
	set_degree(d, 1, 1, 1, 1, 1);
	roofline_cost(&dev, &g, r, d, &c1);
	bytes = 2.0 * (double)g.ops[r].out_bytes;
	peak_us = bytes / bw * 1e6;
	assert_true(c1.fwd_us - dev.launch_us >= peak_us);
	assert_true(c1.fwd_us - dev.launch_us <= 2 * peak_us);
	assert_true(c1.fwd_us - dev.launch_us >
		    50 * (double)g.ops[r].fwd_elems / rate * 1e6);
	set_degree(d, 4, 1, 1, 1, 1);
	roofline_cost(&dev, &g, r, d, &c4);
	assert_close(c4.fwd_us - dev.launch_us, (c1.fwd_us - dev.launch_us) / 4, 0.01);
	assert_close(c4.bwd_us - dev.launch_us, (c1.bwd_us - dev.launch_us) / 4, 0.01);

	/* a convolution asks for a workspace; it shrinks with the shard */
	set_degree(d, 1, 1, 1, 1, 1);
	roofline_cost(&dev, &g, conv, d, &c1);
	assert_true(c1.workspace_bytes > 0);
	set_degree(d, 2, 1, 1, 1, 1);
	roofline_cost(&dev, &g, conv, d, &c2);
	assert_true(c2.workspace_bytes > 0 && c2.workspace_bytes < c1.workspace_bytes);

	/* a view launches nothing */
	set_degree(d, 1, 1, 1, 1, 1);
	roofline_cost(&dev, &g, op_index(&g, "flat"), d, &c1);
	assert_true(c1.fwd_us == 0 && c1.bwd_us == 0);

	/* a faster device is faster */
	dev.fp32_flops_per_s *= 4;
	roofline_cost(&dev, &g, fc, d, &c4);
	dev.fp32_flops_per_s /= 4;
	roofline_cost(&dev, &g, fc, d, &c1);
	assert_true(c4.fwd_us < c1.fwd_us / 2);
	graph_release(&g);
}

/* ---- analytic generator ----------------------------------------------------- */

static const char cnn_text[] =
	"model cnn\n"
	"batch 16\n"
	"input img c=3 h=32 w=32\n"
	"conv2d conv1 img out=12 k=3 pad=1\n"
	"batchnorm bn1 conv1\n"
	"relu r1 bn1\n"
	"maxpool p1 r1 k=2\n"
	"flatten flat p1\n"
	"linear fc flat out=10\n"
	"loss loss fc\n";

/* Independent enumeration: every exponent vector with each entry 0..3. */
static int count_expected(struct profile *set, const struct graph *g, int max_degree)
{
	char sig[1024];
	int d[NDIMS];

	for (int i = 0; i < g->nops; i++) {
		const struct op *op = &g->ops[i];

		for (int code = 0; code < 4 * 4 * 4 * 4 * 4; code++) {
			int prod = 1, ok = 1, x = code;

			for (int k = 0; k < NDIMS; k++, x /= 4) {
				int64_t size = shape_size(&op->out, (enum dim_kind)k);

				d[k] = 1 << (x % 4);
				prod *= d[k];
				if (d[k] > 1 && (!(op->split_mask & (1u << k)) ||
						 shape_dim(&op->out, (enum dim_kind)k) < 0 ||
						 size % d[k]))
					ok = 0;
			}
			if (!ok || prod > max_degree)
				continue;
			signature(g, i, d, sig, sizeof sig);
			assert_int_equal(profile_put(set, sig, 0, 0, 0, 1), AP_OK);
		}
	}
	return set->nrows;
}

static void test_add_analytic(void **state)
{
	struct graph g;
	struct profile p, expect;
	struct op_cost c;
	char sig[1024];
	int d[NDIMS], fc;

	(void)state;
	parse(cnn_text, &g);
	profile_init(&p);
	profile_init(&expect);
	test_device(&p.dev);
	fc = op_index(&g, "fc");
	/* a measured row is never overwritten */
	set_degree(d, 1, 1, 1, 1, 1);
	signature(&g, fc, d, sig, sizeof sig);
	assert_int_equal(profile_put(&p, sig, 42, 84, 0, 0), AP_OK);

	assert_int_equal(profile_add_analytic(&p, &g, 8), AP_OK);
	assert_int_equal(p.nrows, count_expected(&expect, &g, 8));
	for (int r = 0; r < expect.nrows; r++)
		if (!profile_find(&p, expect.rows[r].sig))
			fail_msg("no analytic row for '%s'", expect.rows[r].sig);
	assert_true(profile_find(&p, sig)->fwd_us == 42);
	assert_int_equal(profile_find(&p, sig)->analytic, 0);

	/* every op at degree 1 and along each split dim it can halve */
	for (int i = 0; i < g.nops; i++) {
		const struct op *op = &g.ops[i];

		set_degree(d, 1, 1, 1, 1, 1);
		assert_int_equal(profile_lookup(&p, &g, i, d, &c), AP_OK);
		assert_int_equal(c.source, i == fc ? COST_MEASURED : COST_ANALYTIC);
		for (int k = 0; k < NDIMS; k++) {
			if (!(op->split_mask & (1u << k)) ||
			    shape_dim(&op->out, (enum dim_kind)k) < 0 ||
			    shape_size(&op->out, (enum dim_kind)k) % 2)
				continue;
			set_degree(d, 1, 1, 1, 1, 1);
			d[k] = 2;
			assert_int_equal(profile_lookup(&p, &g, i, d, &c), AP_OK);
			if (c.source != COST_ANALYTIC)
				fail_msg("op '%s' split 2 along %s: source %s", op->name,
					 dim_name((enum dim_kind)k), cost_source_name(c.source));
		}
	}
	/* batch 16 splits 8 ways but not 16 (over max_degree) */
	set_degree(d, 8, 1, 1, 1, 1);
	signature(&g, op_index(&g, "conv1"), d, sig, sizeof sig);
	assert_non_null(profile_find(&p, sig));
	set_degree(d, 16, 1, 1, 1, 1);
	signature(&g, op_index(&g, "conv1"), d, sig, sizeof sig);
	assert_null(profile_find(&p, sig));
	/* conv1's 12 output channels split 4 ways, not 8 */
	set_degree(d, 1, 4, 1, 1, 1);
	signature(&g, op_index(&g, "conv1"), d, sig, sizeof sig);
	assert_non_null(profile_find(&p, sig));
	set_degree(d, 1, 8, 1, 1, 1);
	signature(&g, op_index(&g, "conv1"), d, sig, sizeof sig);
	assert_null(profile_find(&p, sig));

	/* a second pass adds nothing; max degree 1 gives degree 1 only */
	{
		int before = p.nrows;
		struct profile one;

		assert_int_equal(profile_add_analytic(&p, &g, 8), AP_OK);
		assert_int_equal(p.nrows, before);
		profile_init(&one);
		test_device(&one.dev);
		assert_int_equal(profile_add_analytic(&one, &g, 1), AP_OK);
		profile_release(&expect);
		profile_init(&expect);
		assert_int_equal(one.nrows, count_expected(&expect, &g, 1));
		profile_release(&one);
	}
	profile_release(&expect);
	profile_release(&p);
	graph_release(&g);
}

/* ---- malformed files -------------------------------------------------------- */

#define OK_DEVICE \
	"name,fp32_tflops,tensor_tflops,mem_bw_gbytes_per_s,mem_bytes,launch_us,description\n" \
	"v100,15.7,125,900,17179869184,5,test\n"
#define OK_HEADER "signature,fwd_us,bwd_us,workspace_bytes,source\n"
#define ROW "\"relu:8x8>8x8\",1,2,0,measured\n"

static const struct bad_case {
	const char *ops, *device;
	const char *where;  /* "file:line:" expected in the message */
	const char *says;   /* and a word of it */
} bad_cases[] = {
	{ "", NULL, "ops.csv:1:", "header" },
	{ "sig,fwd,bwd,ws,src\n" ROW, NULL, "ops.csv:1:", "header" },
	{ OK_HEADER "\"relu:1\",1,2,0\n", NULL, "ops.csv:2:", "columns" },
	{ OK_HEADER ROW "\"relu:1\",1,2,0,measured,x\n", NULL, "ops.csv:3:", "columns" },
	{ OK_HEADER "\"relu:1\",abc,2,0,measured\n", NULL, "ops.csv:2:", "fwd_us" },
	{ OK_HEADER ROW "\n\"relu:1\",1,-2,0,measured\n", NULL, "ops.csv:4:", "bwd_us" },
	{ OK_HEADER "\"relu:1\",nan,2,0,measured\n", NULL, "ops.csv:2:", "fwd_us" },
	{ OK_HEADER "\"relu:1\",1,2,,measured\n", NULL, "ops.csv:2:", "workspace_bytes" },
	{ OK_HEADER "\"relu:1\",1,2,1.5,measured\n", NULL, "ops.csv:2:", "workspace_bytes" },
	{ OK_HEADER "\"relu:1\",1,2,0,guessed\n", NULL, "ops.csv:2:", "unknown source" },
	{ OK_HEADER "\"\",1,2,0,measured\n", NULL, "ops.csv:2:", "empty signature" },
	{ OK_HEADER ROW "\"relu:1\",1,2,0,analytic\n" ROW, NULL, "ops.csv:4:",
	  "first on line 2" },
	{ OK_HEADER ROW "\"relu:1,1,2,0,measured\n", NULL, "ops.csv:3:", "malformed" },
	{ OK_HEADER "rel\"u:1,1,2,0,measured\n", NULL, "ops.csv:2:", "malformed" },
	{ OK_HEADER ROW, OK_DEVICE "p100,10.6,21.2,732,17179869184,5,x\n",
	  "device.csv:3:", "one device" },
	{ OK_HEADER ROW, OK_DEVICE "\n\np100,10.6,21.2,732,17179869184,5,x\n",
	  "device.csv:5:", "one device" },
	{ OK_HEADER ROW,
	  "name,fp32_tflops,tensor_tflops,mem_bw_gbytes_per_s,mem_bytes,launch_us,description\n"
	  "v100,fast,125,900,17179869184,5,test\n", "device.csv:2:", "fp32" },
	/* device.c names no line when the table is empty */
	{ OK_HEADER ROW,
	  "name,fp32_tflops,tensor_tflops,mem_bw_gbytes_per_s,mem_bytes,launch_us,description\n",
	  "device.csv", "device" },
};

static void test_malformed(void **state)
{
	char dir[PATH_MAX], want[PATH_MAX + 32];
	struct profile p;

	(void)state;
	make_tmpdir(dir, sizeof dir);
	ap_err_quiet(1);
	for (size_t k = 0; k < sizeof bad_cases / sizeof bad_cases[0]; k++) {
		const struct bad_case *b = &bad_cases[k];
		int rc;

		write_file(dir, "ops.csv", b->ops);
		write_file(dir, "device.csv", b->device ? b->device : OK_DEVICE);
		rc = profile_load(dir, &p);
		snprintf(want, sizeof want, "%s/%s", dir, b->where);
		if (rc != AP_EINPUT || strncmp(ap_last_error(), want, strlen(want)) ||
		    !strstr(ap_last_error(), b->says))
			fail_msg("case %zu: status %d, message '%s'; expected %d, '%s...%s'",
				 k, rc, ap_last_error(), AP_EINPUT, want, b->says);
		assert_int_equal(p.nrows, 0);
		assert_null(p.rows);
	}
	/* the same files made good load */
	write_file(dir, "ops.csv", OK_HEADER ROW "\"relu:1\",1,2,0,analytic\n");
	write_file(dir, "device.csv", OK_DEVICE);
	assert_int_equal(profile_load(dir, &p), AP_OK);
	assert_int_equal(p.nrows, 2);
	profile_release(&p);
	/* a missing ops.csv is an input error naming the file */
	snprintf(want, sizeof want, "%s/ops.csv", dir);
	unlink(want);
	assert_int_equal(profile_load(dir, &p), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "ops.csv"));
	ap_err_quiet(0);
	remove_tree(dir);
}

/* ---- tally ------------------------------------------------------------------ */

static void tally_line(const struct cost_tally *t, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");

	assert_non_null(f);
	cost_tally_print(t, f);
	assert_int_equal(fclose(f), 0);
}

static void test_tally(void **state)
{
	struct cost_tally t = { { 0 } };
	char line[256];

	(void)state;
	tally_line(&t, line, sizeof line);
	assert_string_equal(line, "costs: none\n");
	for (int k = 0; k < 120; k++)
		cost_tally_add(&t, COST_MEASURED);
	cost_tally_add(&t, COST_ROOFLINE);
	for (int k = 0; k < 3; k++)
		cost_tally_add(&t, COST_SCALED);
	tally_line(&t, line, sizeof line);
	assert_string_equal(line, "costs: 120 measured, 3 scaled, 1 roofline\n");
	cost_tally_add(&t, COST_IMPORTED);
	cost_tally_add(&t, COST_ANALYTIC);
	tally_line(&t, line, sizeof line);
	assert_string_equal(line,
			    "costs: 120 measured, 1 analytic, 1 imported, 3 scaled, 1 roofline\n");
	assert_string_equal(cost_source_name(COST_SCALED), "scaled");
	assert_string_equal(cost_source_name(COST_IMPORTED), "imported");
}

/* ---- the command ------------------------------------------------------------ */

static int run_bin(const char *args)
{
	char cmd[8 * PATH_MAX];
	int st;

	if (snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>&1",
		     getenv("AUTOPAR_BIN"), args) >= (int)sizeof cmd)
		fail_msg("command line too long");
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_command(void **state)
{
	char dir[PATH_MAX], args[3 * PATH_MAX], model[PATH_MAX + 16];
	struct profile p;
	const char *bin = getenv("AUTOPAR_BIN");

	(void)state;
	if (!bin || access(bin, X_OK) != 0)
		skip();
	make_tmpdir(dir, sizeof dir);
	snprintf(model, sizeof model, "%s/cnn.model", dir);
	write_file(dir, "cnn.model", cnn_text);

	assert_int_equal(run_bin("profile -d v100 -m mlp -o unused"), 2);
	assert_int_equal(run_bin("profile --analytic -d v100 --max-degree 0 -m x -o y"), 2);
	assert_int_equal(run_bin("profile --analytic -d v100 --frobnicate"), 2);
	assert_int_equal(run_bin("profile --analytic -d nosuchgpu -m mlp -o y"), 2);
	assert_int_equal(run_bin("profile --help"), 0);

	snprintf(args, sizeof args, "profile --analytic -d v100 -m '%s' -o '%s/prof'",
		 model, dir);
	assert_int_equal(run_bin(args), 0);
	snprintf(args, sizeof args, "%s/prof", dir);
	assert_int_equal(profile_load(args, &p), AP_OK);
	assert_string_equal(p.dev.name, "v100");
	assert_true(p.nrows > 0);
	profile_release(&p);
	/* the same directory for another device is refused */
	snprintf(args, sizeof args, "profile --analytic -d p100 -m '%s' -o '%s/prof'",
		 model, dir);
	assert_int_equal(run_bin(args), 2);
	/* the CPU: operators and the device row measured on this machine */
	snprintf(args, sizeof args, "profile -d cpu -m mlp --max-degree 2 -o '%s/cpu'", dir);
	assert_int_equal(run_bin(args), 0);
	snprintf(args, sizeof args, "%s/cpu", dir);
	assert_int_equal(profile_load(args, &p), AP_OK);
	assert_string_equal(p.dev.name, "cpu");
	assert_non_null(strstr(p.dev.description, "measured by autopar profile"));
	assert_true(p.dev.fp32_flops_per_s > 1e8 && p.dev.mem_bw_bytes_per_s > 1e8);
	assert_true(p.nrows > 0);
	for (int i = 0; i < p.nrows; i++)
		assert_false(p.rows[i].analytic);
	profile_release(&p);
	remove_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_many_rows),
		cmocka_unit_test(test_lookup_sources),
		cmocka_unit_test(test_lookup_larger_batch),
		cmocka_unit_test(test_lookup_imported),
		cmocka_unit_test(test_roofline),
		cmocka_unit_test(test_add_analytic),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_tally),
		cmocka_unit_test(test_command),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
