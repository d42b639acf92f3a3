/*
 * Tests of the plan (core/plan*.c): a plan survives a write and a
 * read unchanged (long names included), the validator accepts
 * data-parallel and pipelined plans, and a table of broken plans is refused
 * with one message that names the file and the JSON field at fault (or the
 * line, for syntax errors).  Every plan here is for one small model on a
 * 2 x 2 V100 cluster, so expected numbers can be worked out by hand from
 * models/FORMAT.md.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/cluster.h"
#include "util/datadir.h"
#include "util/err.h"
#include "model/graph.h"
#include "model/model_io.h"
#include "plan/plan.h"
#include "plan/plan_io.h"
#include "plan/plan_check.h"
#include "plan/plan_build.h"

/* Parameters: fc1 16*32+32 = 544, ln 2*32 = 64, fc2 32*4+4 = 132, so a full
 * replica holds 740 x 4 = 2960 bytes, 8880 with gradients and momentum. */
static const char model_text[] =
	"model t\n"
	"batch 8\n"
	"input x c=16\n"
	"linear fc1 x out=32\n"
	"relu r1 fc1\n"
	"layernorm ln r1\n"
	"linear fc2 ln out=4\n"
	"loss l fc2\n";

enum { X, FC1, R1, LN, FC2, L, NOPS };

struct env {
	struct graph g;
	struct cluster c; /* 2x2:v100 */
	char csv[PATH_MAX];
	char dir[512];         /* short, so paths under it fit PATH_MAX */
};

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof *e);
	const char *tmp = getenv("TMPDIR");

	if (!e)
		return -1;
	*state = e;
	ap_err_quiet(1);
	datapath(e->csv, sizeof e->csv, "profiles/clusters.csv");
	snprintf(e->dir, sizeof e->dir, "%s/autopar-test-plan-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(e->dir)) {
		print_error("cannot make a temporary directory under %s\n", e->dir);
		return -1;
	}
	if (model_parse(model_text, "t.model", 0, &e->g) != AP_OK) {
		print_error("model_parse: %s\n", ap_last_error());
		return -1;
	}
	if (e->g.nops != NOPS || e->g.batch != 8) {
		print_error("test model: expected %d ops and batch 8\n", NOPS);
		return -1;
	}
	if (cluster_resolve("2x2:v100", e->csv, &e->c) != AP_OK) {
		print_error("cluster_resolve: %s\n", ap_last_error());
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	if (!e)
		return 0;
	if (e->dir[0] && strstr(e->dir, "autopar-test-plan-"))
		nftw(e->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	graph_release(&e->g);
	free(e);
	return 0;
}

static char *tmp_path(const struct env *e, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", e->dir, name);
	return buf;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* The whole file, NUL-terminated; the caller frees it. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void set_op(struct plan *p, int i, int stage, int dn, int dc,
		   const int *dev, int ndev)
{
	int deg[NDIMS] = { dn, dc, 1, 1, 1 };

	assert_int_equal(ndev, dn * dc);
	assert_int_equal(plan_place(p, i, stage, deg, dev), AP_OK);
}

static void set_stage(struct plan *p, int s, const int *dev, int ndev,
		      const int *next, int nnext)
{
	assert_int_equal(plan_stage(p, s, dev, ndev, 0), AP_OK);
	for (int e = 0; e < nnext; e++)
		assert_int_equal(plan_link(p, s, next[e]), AP_OK);
}

/* Data parallelism on devices 0..ndev-1: one stage, n split ndev ways. */
static void make_dp(struct plan *p, const struct graph *g, int ndev)
{
	static const int all[] = { 0, 1, 2, 3 };

	assert_int_equal(plan_alloc(p, g, 1), AP_OK);
	snprintf(p->cluster, sizeof p->cluster, "2x2:v100");
	snprintf(p->planner, sizeof p->planner, "dp");
	set_stage(p, 0, all, ndev, NULL, 0);
	for (int i = 0; i < g->nops; i++)
		set_op(p, i, 0, ndev, 1, all, ndev);
}

/* Two stages on devices {0,1} and {2,3}, two micro-batches of 4 samples;
 * fc1 splits its output features and fc2 lists its devices reversed, so
 * device order and the c degree are exercised too. */
static void make_pipeline(struct plan *p, const struct graph *g)
{
	static const int s0[] = { 0, 1 }, s1[] = { 2, 3 }, s1r[] = { 3, 2 };
	static const int one[] = { 1 };

	assert_int_equal(plan_alloc(p, g, 2), AP_OK);
	snprintf(p->cluster, sizeof p->cluster, "2x2:v100");
	snprintf(p->profile, sizeof p->profile, "v100-analytic");
	snprintf(p->planner, sizeof p->planner, "hand");
	plan_schedule(p, SCHED_1F1B_ASYNC, 2);
	set_stage(p, 0, s0, 2, one, 1);
	set_stage(p, 1, s1, 2, NULL, 0);
	set_op(p, X, 0, 2, 1, s0, 2);
	set_op(p, FC1, 0, 1, 2, s0, 2);
	set_op(p, R1, 0, 2, 1, s0, 2);
	set_op(p, LN, 1, 2, 1, s1, 2);
	set_op(p, FC2, 1, 2, 1, s1r, 2);
	set_op(p, L, 1, 2, 1, s1, 2);
}

static void assert_ints_equal(const int *a, int na, const int *b, int nb)
{
	assert_int_equal(na, nb);
	for (int i = 0; i < na; i++)
		assert_int_equal(a[i], b[i]);
}

static void assert_plans_equal(const struct plan *a, const struct plan *b)
{
	assert_string_equal(a->model, b->model);
	assert_string_equal(a->cluster, b->cluster);
	assert_string_equal(a->profile, b->profile);
	assert_string_equal(a->planner, b->planner);
	assert_int_equal(a->batch, b->batch);
	/* Reals are written with 15 significant digits, so the decimals
	 * used here read back exactly. */
	assert_true(a->search_s == b->search_s);
	assert_int_equal(a->seed, b->seed);
	/* the common statistics, NAN (absent) alike */
	assert_true(a->est_ms == b->est_ms || (isnan(a->est_ms) && isnan(b->est_ms)));
	assert_true(a->bound_ms == b->bound_ms || (isnan(a->bound_ms) && isnan(b->bound_ms)));
	assert_true(a->gap == b->gap || (isnan(a->gap) && isnan(b->gap)));
	assert_int_equal(a->nstats, b->nstats);
	for (int i = 0; i < a->nstats; i++) {
		assert_string_equal(a->stat_name[i], b->stat_name[i]);
		assert_true(a->stat_value[i] == b->stat_value[i]);
	}
	assert_int_equal(a->sched, b->sched);
	assert_int_equal(a->microbatches, b->microbatches);
	assert_int_equal(a->nstages, b->nstages);
	for (int s = 0; s < a->nstages; s++) {
		assert_int_equal(a->stages[s].id, b->stages[s].id);
		assert_ints_equal(a->stages[s].devices, a->stages[s].ndev,
				  b->stages[s].devices, b->stages[s].ndev);
		assert_ints_equal(a->stages[s].next, a->stages[s].nnext,
				  b->stages[s].next, b->stages[s].nnext);
		assert_int_equal(plan_stage_microbatches(a, s), plan_stage_microbatches(b, s));
	}
	assert_int_equal(a->nops, b->nops);
	for (int i = 0; i < a->nops; i++) {
		assert_int_equal(a->ops[i].stage, b->ops[i].stage);
		assert_int_equal(a->ops[i].recompute, b->ops[i].recompute);
		assert_ints_equal(a->ops[i].degree, NDIMS, b->ops[i].degree, NDIMS);
		assert_ints_equal(a->ops[i].devices, a->ops[i].ndev,
				  b->ops[i].devices, b->ops[i].ndev);
	}
	assert_true(a->pred_iter_ms == b->pred_iter_ms);
	assert_true(a->pred_samples_per_s == b->pred_samples_per_s);
	assert_true(a->pred_bubble == b->pred_bubble);
	assert_int_equal(a->pred_peak_mem_bytes, b->pred_peak_mem_bytes);
}

static void test_sched_names(void **state)
{
	enum sched_kind k;

	(void)state;
	for (int i = 0; i < NSCHED_KINDS; i++) {
		assert_int_equal(sched_parse(sched_name((enum sched_kind)i), &k), 0);
		assert_int_equal(k, i);
	}
	assert_string_equal(sched_name(SCHED_1F1B_ASYNC), "1f1b-async");
	assert_int_equal(sched_parse("zigzag", &k), -1);
}

static void test_stats(void **state)
{
	struct plan p;

	(void)state;
	plan_init(&p);
	assert_int_equal(plan_set_stat(&p, "acceptance", 0.5), AP_OK);
	assert_int_equal(plan_set_stat(&p, "lp_ms", 3), AP_OK);
	assert_int_equal(plan_set_stat(&p, "acceptance", 0.25), AP_OK);
	assert_int_equal(p.nstats, 2);
	assert_string_equal(p.stat_name[0], "acceptance");
	assert_true(p.stat_value[0] == 0.25);
	assert_true(plan_stat(&p, "lp_ms") == 3);
	assert_true(isnan(plan_stat(&p, "optimal")));
	/* the common statistics are fields, absent until set */
	assert_true(isnan(p.est_ms) && isnan(p.bound_ms) && isnan(p.gap));
	/* Names of fields ("seconds", "seed", the common statistics), or
	 * that do not fit. */
	assert_int_equal(plan_set_stat(&p, "seed", 1), AP_EINPUT);
	assert_int_equal(plan_set_stat(&p, "gap", 1), AP_EINPUT);
	assert_int_equal(plan_set_stat(&p, "planner_est_ms", 1), AP_EINPUT);
	assert_int_equal(plan_set_stat(&p, "a_statistic_name_of_32_characters", 1),
			 AP_EINPUT);
	assert_int_equal(plan_set_stat(&p, "acceptance", INFINITY), AP_EINPUT);
	assert_int_equal(p.nstats, 2);
	plan_release(&p);
	assert_int_equal(p.nstats, 0);
	assert_null(p.stat_name);
}

/* Writes p to the scratch file `name`, reads it back into q, which must
 * equal p; the text written (to free). */
static char *write_read_back(const struct env *e, const struct plan *p, const char *name,
			     struct plan *q)
{
	char path[PATH_MAX], *text;

	tmp_path(e, name, path, sizeof path);
	assert_int_equal(plan_write(p, &e->g, path), AP_OK);
	text = slurp(path);
	assert_int_equal(plan_read(path, &e->g, q), AP_OK);
	assert_plans_equal(p, q);
	return text;
}

static void test_round_trip(void **state)
{
	struct env *e = *state;
	struct plan p, q, r;
	char path[PATH_MAX], path2[PATH_MAX];
	char *text, *text2;
	const char *at[NOPS];
	static const char *const keys[NOPS] = {
		"\"x\": {", "\"fc1\": {", "\"r1\": {", "\"ln\": {", "\"fc2\": {", "\"l\": {"
	};

	plan_init(&p);
	plan_init(&q);
	plan_init(&r);
	make_pipeline(&p, &e->g);
	p.search_s = 1.25;
	p.seed = 42;
	p.est_ms = 13.75;
	p.bound_ms = 12.5;
	p.gap = 0.1;
	assert_int_equal(plan_set_stat(&p, "log_likelihood", -3.75), AP_OK);
	assert_int_equal(plan_set_stat(&p, "proposals_per_s", 30000), AP_OK);
	p.pred_iter_ms = 3.3125;
	p.pred_samples_per_s = 2400;
	p.pred_peak_mem_bytes = 123456789012LL;
	p.pred_bubble = 0.25;
	p.ops[2].recompute = 1;
	assert_int_equal(plan_validate(&p, &e->g, &e->c, "pipe"), AP_OK);

	tmp_path(e, "rt.json", path, sizeof path);
	assert_int_equal(plan_write(&p, &e->g, path), AP_OK);
	assert_int_equal(plan_read(path, &e->g, &q), AP_OK);
	assert_plans_equal(&p, &q);
	assert_int_equal(plan_validate(&q, &e->g, &e->c, path), AP_OK);

	/* Pretty-printed, ops in graph order, and a second write of what
	 * was read is the same file byte for byte. */
	text = slurp(path);
	assert_non_null(strstr(text, "{\n  \"format\": \"autopar-plan\",\n  \"version\": 1,\n"));
	assert_non_null(strstr(text, "\"kind\": \"1f1b-async\""));
	assert_non_null(strstr(text, "\"predicted\": {"));
	assert_non_null(strstr(text, "\"gap\": 0.1,"));
	/* written only where set */
	assert_non_null(strstr(text, "\"recompute\": true"));
	assert_null(strstr(strstr(text, "\"recompute\": true") + 1, "\"recompute\""));
	for (int i = 0; i < NOPS; i++) {
		at[i] = strstr(text, keys[i]);
		assert_non_null(at[i]);
		if (i > 0)
			assert_true(at[i] > at[i - 1]);
	}
	tmp_path(e, "rt2.json", path2, sizeof path2);
	assert_int_equal(plan_write(&q, &e->g, path2), AP_OK);
	text2 = slurp(path2);
	assert_string_equal(text, text2);
	free(text);
	free(text2);

	/* A real with more digits than are written comes back within
	 * the last one of them. */
	p.pred_iter_ms = 10.0 / 3.0;
	assert_int_equal(plan_write(&p, &e->g, path), AP_OK);
	assert_int_equal(plan_read(path, &e->g, &r), AP_OK);
	assert_true(fabs(r.pred_iter_ms - p.pred_iter_ms) < 1e-14);
	assert_true(r.pred_iter_ms != 0);

	/* A plan without predictions writes no "predicted" and reads back
	 * as absent (negative), not as zeros. */
	make_dp(&p, &e->g, 4);
	text = write_read_back(e, &p, "dp.json", &r);
	assert_null(strstr(text, "predicted"));
	free(text);
	assert_true(r.pred_iter_ms < 0 && r.pred_samples_per_s < 0 &&
		    r.pred_bubble < 0 && r.pred_peak_mem_bytes < 0);
	assert_int_equal(r.nstats, 0);
	plan_release(&p);
	plan_release(&q);
	plan_release(&r);
}

static void test_validate_accepts(void **state)
{
	struct env *e = *state;
	struct plan p;
	char path[PATH_MAX];
	/* Hand-written: no search, no predicted, no `next`, dims left out. */
	static const char dp_text[] =
		"{\"format\": \"autopar-plan\", \"version\": 1, \"model\": \"t\",\n"
		" \"batch\": 8, \"cluster\": \"2x2:v100\",\n"
		" \"schedule\": {\"kind\": \"gpipe\", \"microbatches\": 2},\n"
		" \"stages\": [{\"id\": 0, \"devices\": [3, 2, 1, 0]}],\n"
		" \"ops\": {\n"
		"  \"x\": {\"stage\": 0, \"degree\": {\"n\": 4}, \"devices\": [0, 1, 2, 3]},\n"
		"  \"fc1\": {\"stage\": 0, \"degree\": {\"n\": 2, \"c\": 2}, \"devices\": [0, 1, 2, 3]},\n"
		"  \"r1\": {\"stage\": 0, \"degree\": {\"n\": 2, \"c\": 2}, \"devices\": [3, 2, 1, 0]},\n"
		"  \"ln\": {\"stage\": 0, \"devices\": [2]},\n"
		"  \"fc2\": {\"stage\": 0, \"degree\": {\"c\": 4}, \"devices\": [0, 1, 2, 3]},\n"
		"  \"l\": {\"stage\": 0, \"degree\": {\"n\": 4}, \"devices\": [0, 1, 2, 3]}\n"
		" }}\n";

	plan_init(&p);
	make_dp(&p, &e->g, 4);
	assert_int_equal(plan_validate(&p, &e->g, &e->c, "dp"), AP_OK);
	make_pipeline(&p, &e->g);
	assert_int_equal(plan_validate(&p, &e->g, &e->c, "pipe"), AP_OK);

	tmp_path(e, "hand.json", path, sizeof path);
	write_text(path, dp_text);
	assert_int_equal(plan_read(path, &e->g, &p), AP_OK);
	assert_int_equal(p.microbatches, 2);
	assert_int_equal(p.ops[FC1].degree[DIM_C], 2);
	assert_int_equal(p.ops[LN].degree[DIM_N], 1);
	assert_int_equal(p.ops[LN].devices[0], 2);
	assert_int_equal(p.stages[0].nnext, 0);
	assert_true(p.pred_iter_ms < 0);
	assert_int_equal(plan_validate(&p, &e->g, &e->c, path), AP_OK);
	plan_release(&p);
}

/* A stage's own micro-batch count: written only where it differs from
 * the schedule's, read back, validated (a divisor of the batch, counts of
 * stages joined by `next` dividing one another, the n degree dividing the
 * stage's micro-batch). */
static void test_stage_microbatches(void **state)
{
	struct env *e = *state;
	struct plan p, q;
	char path[PATH_MAX], *text;

	plan_init(&p);
	plan_init(&q);
	make_pipeline(&p, &e->g);
	p.sched = SCHED_1F1B;
	assert_false(plan_mixed_microbatches(&p));
	tmp_path(e, "uniform.json", path, sizeof path);
	assert_int_equal(plan_write(&p, &e->g, path), AP_OK);
	text = slurp(path);
	/* only the schedule names a count: existing plans read and write
	 * as before */
	assert_non_null(strstr(text, "\"microbatches\""));
	assert_null(strstr(strstr(text, "\"microbatches\"") + 1, "\"microbatches\""));
	free(text);

	p.stages[1].microbatches = 4; /* 2 samples a micro-batch, n degree 2 */
	assert_true(plan_mixed_microbatches(&p));
	assert_int_equal(plan_stage_microbatches(&p, 0), 2);
	assert_int_equal(plan_stage_microbatches(&p, 1), 4);
	assert_int_equal(plan_validate(&p, &e->g, &e->c, "mixed"), AP_OK);
	text = write_read_back(e, &p, "mixed.json", &q);
	assert_non_null(strstr(text, "\"microbatches\": 4"));
	free(text);
	assert_int_equal(plan_validate(&q, &e->g, &e->c, "mixed.json"), AP_OK);

	p.stages[1].microbatches = 8; /* 1 sample: n degree 2 cannot split it */
	assert_int_equal(plan_validate(&p, &e->g, &e->c, "mixed"), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "ops.ln.degree.n"));
	p.stages[1].microbatches = 3;
	assert_int_equal(plan_validate(&p, &e->g, &e->c, "mixed"), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "stages[0].next[0]"));
	assert_non_null(strstr(ap_last_error(), "divide one another"));
	p.stages[1].microbatches = 0;
	p.stages[0].microbatches = 3;
	assert_int_equal(plan_validate(&p, &e->g, &e->c, "mixed"), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "stages[0].microbatches"));
	plan_release(&p);
	plan_release(&q);
}

/* The static memory check at its boundary: 8880 bytes for a full replica
 * (see model_text), less when fc1's features are split. */
static void test_memory_bound(void **state)
{
	struct env *e = *state;
	struct cluster c;
	struct plan p;
	static const int two[] = { 0, 1 };

	plan_init(&p);
	make_dp(&p, &e->g, 2);
	assert_int_equal(cluster_resolve("1x2:v100,mem=8880B", e->csv, &c), AP_OK);
	assert_int_equal(plan_validate(&p, &e->g, &c, "dp"), AP_OK);
	assert_int_equal(cluster_resolve("1x2:v100,mem=8879B", e->csv, &c), AP_OK);
	assert_int_equal(plan_validate(&p, &e->g, &c, "dp"), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "dp: device 0: "));
	assert_non_null(strstr(ap_last_error(), "need 8880 bytes"));
	assert_non_null(strstr(ap_last_error(), "'ops.fc1'"));
	/* fc1 split in two by features: each device keeps 1088 of its 2176
	 * bytes, so (1088 + 256 + 528) x 3 = 5616. */
	set_op(&p, FC1, 0, 1, 2, two, 2);
	assert_int_equal(cluster_resolve("1x2:v100,mem=5616B", e->csv, &c), AP_OK);
	assert_int_equal(plan_validate(&p, &e->g, &c, "dp"), AP_OK);
	assert_int_equal(cluster_resolve("1x2:v100,mem=5615B", e->csv, &c), AP_OK);
	assert_int_equal(plan_validate(&p, &e->g, &c, "dp"), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "need 5616 bytes"));
	plan_release(&p);
}

/* --- broken plans ---------------------------------------------------------- */

enum phase { READ, VALIDATE };

struct bad {
	const char *name;
	const char *text;     /* the whole file; NULL builds it from the rest */
	const char *batch;    /* NULL: 8 */
	const char *schedule; /* NULL: gpipe, one micro-batch */
	const char *stages;   /* NULL: one stage on all four devices */
	const char *ops;      /* NULL: every op data parallel on 0..3 ... */
	const char *op;       /* ... except this one, */
	const char *op_json;  /* which gets this entry (NULL: none at all) */
	const char *cluster;  /* NULL: 2x2:v100 */
	enum phase phase;     /* which of plan_read, plan_validate refuses */
	int line;             /* > 0: the message must say path:line: */
	const char *want[3];  /* the message must also contain these */
};

#define DP_OP "{\"stage\": 0, \"degree\": {\"n\": 4}, \"devices\": [0, 1, 2, 3]}"
#define TWO_STAGES(next0, next1)                                             \
	"[{\"id\": 0, \"devices\": [0, 1], \"next\": " next0 "},\n"          \
	" {\"id\": 1, \"devices\": [2, 3], \"next\": " next1 "}]"
#define PIPE_OP(s, devs) "{\"stage\": " s ", \"degree\": {\"n\": 2}, \"devices\": " devs "}"
#define PIPE_OPS(ln_devs)                                                    \
	"{\"x\": " PIPE_OP("0", "[0, 1]") ",\n"                              \
	" \"fc1\": " PIPE_OP("0", "[0, 1]") ",\n"                            \
	" \"r1\": " PIPE_OP("0", "[0, 1]") ",\n"                             \
	" \"ln\": " PIPE_OP("1", ln_devs) ",\n"                              \
	" \"fc2\": " PIPE_OP("1", "[2, 3]") ",\n"                            \
	" \"l\": " PIPE_OP("1", "[2, 3]") "}"
/* 66 characters: too long for the old 64-byte name fields. */
#define LONG_SPEC "4x4:v100,intra=450GB/s,inter=400GB/s,intra_lat=2us,inter_lat=2us"
#define HEAD                                                                 \
	"{\n"                                                                \
	"  \"format\": \"autopar-plan\",\n"                                  \
	"  \"version\": 1,\n"                                                \
	"  \"model\": \"t\",\n"                                              \
	"  \"batch\": 8,\n"                                                  \
	"  \"cluster\": \"2x2:v100\",\n"
#define TAIL_NO_OPS                                                          \
	"  \"schedule\": {\"kind\": \"gpipe\", \"microbatches\": 1},\n"      \
	"  \"stages\": [{\"id\": 0, \"devices\": [0, 1, 2, 3]}]"

static const struct bad bad_plans[] = {
	{ .name = "syntax", .phase = READ, .line = 4,
	  .text = "{\n  \"format\": \"autopar-plan\",\n  \"version\": 1,\n"
		  "  \"model\": \"t\" \"batch\": 8\n}\n" },
	{ .name = "duplicate-key", .phase = READ, .line = 7,
	  .text = HEAD "  \"batch\": 8,\n" TAIL_NO_OPS ",\n  \"ops\": {}\n}\n",
	  .want = { "duplicate" } },
	{ .name = "not-object", .phase = READ, .text = "[1, 2]\n",
	  .want = { "expected a JSON object" } },
	{ .name = "wrong-format", .phase = READ,
	  .text = "{\"format\": \"autopar-plun\", \"version\": 1}",
	  .want = { "format: ", "'autopar-plun'" } },
	{ .name = "version-2", .phase = READ,
	  .text = "{\"format\": \"autopar-plan\", \"version\": 2}",
	  .want = { "version: ", "version 2" } },
	{ .name = "missing-ops", .phase = READ, .text = HEAD TAIL_NO_OPS "\n}\n",
	  .want = { "missing field 'ops'" } },
	{ .name = "unknown-field", .phase = READ,
	  .text = HEAD "  \"microbatches\": 2,\n" TAIL_NO_OPS ",\n  \"ops\": {}\n}\n",
	  .want = { "microbatches: unknown field 'microbatches'" } },
	{ .name = "batch-type", .phase = READ, .batch = "\"eight\"",
	  .want = { "batch: expected a positive integer, got a string" } },
	{ .name = "unknown-op", .phase = READ, .op = "fc9", .op_json = DP_OP,
	  .want = { "ops.fc9: ", "unknown operator 'fc9'" } },
	{ .name = "op-missing", .phase = READ, .op = "r1",
	  .want = { "ops: ", "'r1'", "missing" } },
	{ .name = "unknown-dim", .phase = READ, .op = "fc1",
	  .op_json = "{\"stage\": 0, \"degree\": {\"n\": 2, \"q\": 2}, \"devices\": [0, 1, 2, 3]}",
	  .want = { "ops.fc1.degree.q: ", "unknown dim 'q'" } },
	{ .name = "zero-degree", .phase = READ, .op = "fc1",
	  .op_json = "{\"stage\": 0, \"degree\": {\"n\": 0}, \"devices\": [0]}",
	  .want = { "ops.fc1.degree.n: ", "positive" } },
	{ .name = "negative-device", .phase = READ, .op = "fc1",
	  .op_json = "{\"stage\": 0, \"degree\": {\"n\": 4}, \"devices\": [0, -1, 2, 3]}",
	  .want = { "ops.fc1.devices[1]: ", "non-negative" } },
	{ .name = "recompute-type", .phase = READ, .op = "fc1",
	  .op_json = "{\"stage\": 0, \"degree\": {\"n\": 4}, \"devices\": [0, 1, 2, 3], "
		     "\"recompute\": 1}",
	  .want = { "ops.fc1.recompute: ", "expected true or false, got an integer" } },
	{ .name = "stage-type", .phase = READ, .op = "fc1",
	  .op_json = "{\"stage\": \"zero\", \"devices\": [0]}",
	  .want = { "ops.fc1.stage: ", "got a string" } },
	{ .name = "name-too-long", .phase = READ, .cluster = LONG_SPEC "," LONG_SPEC,
	  .want = { "cluster: ", "is too long (at most 127 characters)" } },
	{ .name = "unknown-schedule", .phase = READ,
	  .schedule = "{\"kind\": \"zigzag\", \"microbatches\": 1}",
	  .want = { "schedule.kind: ", "'zigzag'" } },
	{ .name = "zero-microbatches", .phase = READ,
	  .schedule = "{\"kind\": \"1f1b\", \"microbatches\": 0}",
	  .want = { "schedule.microbatches: ", "positive" } },
	{ .name = "degree-not-dividing", .phase = VALIDATE, .op = "fc2",
	  .op_json = "{\"stage\": 0, \"degree\": {\"c\": 3}, \"devices\": [0, 1, 2]}",
	  .want = { "ops.fc2.degree.c: ", "3 does not divide 4" } },
	{ .name = "not-splittable", .phase = VALIDATE, .op = "ln",
	  .op_json = "{\"stage\": 0, \"degree\": {\"c\": 2}, \"devices\": [0, 1]}",
	  .want = { "ops.ln.degree.c: ", "cannot be split along c" } },
	{ .name = "absent-dim", .phase = VALIDATE, .op = "l",
	  .op_json = "{\"stage\": 0, \"degree\": {\"c\": 2}, \"devices\": [0, 1]}",
	  .want = { "ops.l.degree.c: ", "has no dim c" } },
	{ .name = "shards-vs-devices", .phase = VALIDATE, .op = "fc1",
	  .op_json = "{\"stage\": 0, \"degree\": {\"n\": 4}, \"devices\": [0, 1]}",
	  .want = { "ops.fc1.devices: ", "2 devices listed", "4 shards" } },
	{ .name = "device-out-of-range", .phase = VALIDATE, .op = "fc1",
	  .op_json = "{\"stage\": 0, \"degree\": {\"n\": 4}, \"devices\": [0, 1, 2, 4]}",
	  .want = { "ops.fc1.devices[3]: ", "device 4 does not exist" } },
	{ .name = "duplicate-device", .phase = VALIDATE, .op = "fc1",
	  .op_json = "{\"stage\": 0, \"degree\": {\"n\": 4}, \"devices\": [0, 1, 1, 3]}",
	  .want = { "ops.fc1.devices[2]: ", "device 1 is listed twice" } },
	{ .name = "no-such-stage", .phase = VALIDATE, .op = "fc1",
	  .op_json = "{\"stage\": 3, \"degree\": {\"n\": 4}, \"devices\": [0, 1, 2, 3]}",
	  .want = { "ops.fc1.stage: ", "no stage 3 (the plan has only stage 0)" } },
	{ .name = "outside-stage", .phase = VALIDATE,
	  .stages = TWO_STAGES("[1]", "[]"), .ops = PIPE_OPS("[1, 2]"),
	  .want = { "ops.ln.devices[0]: ", "device 1 is not a device of stage 1" } },
	{ .name = "stage-cycle", .phase = VALIDATE,
	  .stages = TWO_STAGES("[1]", "[0]"), .ops = PIPE_OPS("[2, 3]"),
	  .want = { "stages[1].next: ", "cycle 0 -> 1 -> 0" } },
	{ .name = "backward-edge", .phase = VALIDATE,
	  .stages = TWO_STAGES("[]", "[0]"), .ops = PIPE_OPS("[2, 3]"),
	  .want = { "ops.ln.stage: ", "input 'r1'" } },
	{ .name = "duplicate-stage-id", .phase = VALIDATE,
	  .stages = "[{\"id\": 0, \"devices\": [0, 1, 2, 3]}, {\"id\": 0, \"devices\": [0]}]",
	  .want = { "stages[1].id: ", "already stages[0]" } },
	{ .name = "next-unknown-stage", .phase = VALIDATE,
	  .stages = "[{\"id\": 0, \"devices\": [0, 1, 2, 3], \"next\": [5]}]",
	  .want = { "stages[0].next[0]: ", "no stage 5" } },
	{ .name = "microbatches-not-dividing", .phase = VALIDATE,
	  .schedule = "{\"kind\": \"gpipe\", \"microbatches\": 3}",
	  .want = { "schedule.microbatches: ", "3 does not divide the batch of 8" } },
	{ .name = "n-not-dividing-microbatch", .phase = VALIDATE,
	  .schedule = "{\"kind\": \"1f1b\", \"microbatches\": 4}",
	  .want = { "ops.x.degree.n: ", "micro-batch of 2 samples" } },
	{ .name = "batch-mismatch", .phase = VALIDATE, .batch = "16",
	  .want = { "batch: ", "model 't' has batch 8" } },
	{ .name = "memory", .phase = VALIDATE, .cluster = "1x2:v100,mem=1KB",
	  .stages = "[{\"id\": 0, \"devices\": [0, 1]}]",
	  .ops = "{\"x\": " PIPE_OP("0", "[0, 1]") ", \"fc1\": " PIPE_OP("0", "[0, 1]")
		 ", \"r1\": " PIPE_OP("0", "[0, 1]") ", \"ln\": " PIPE_OP("0", "[0, 1]")
		 ", \"fc2\": " PIPE_OP("0", "[0, 1]") ", \"l\": " PIPE_OP("0", "[0, 1]") "}",
	  .want = { "device 0: ", "need 8880 bytes", "1000 bytes" } },
};

/* The file for one case: its text, or the default plan with its changes. */
static char *bad_text(const struct bad *b, const struct graph *g)
{
	size_t cap = 8192, n = 0;
	char *buf = malloc(cap);
	int first = 1;

	assert_non_null(buf);
	if (b->text) {
		snprintf(buf, cap, "%s", b->text);
		return buf;
	}
	n += (size_t)snprintf(buf + n, cap - n,
			      "{\n  \"format\": \"autopar-plan\",\n  \"version\": 1,\n"
			      "  \"model\": \"t\",\n  \"batch\": %s,\n"
			      "  \"cluster\": \"%s\",\n  \"planner\": \"hand\",\n"
			      "  \"schedule\": %s,\n  \"stages\": %s,\n  \"ops\": ",
			      b->batch ? b->batch : "8",
			      b->cluster ? b->cluster : "2x2:v100",
			      b->schedule ? b->schedule : "{\"kind\": \"gpipe\", \"microbatches\": 1}",
			      b->stages ? b->stages : "[{\"id\": 0, \"devices\": [0, 1, 2, 3]}]");
	if (b->ops) {
		n += (size_t)snprintf(buf + n, cap - n, "%s", b->ops);
	} else {
		n += (size_t)snprintf(buf + n, cap - n, "{");
		for (int i = 0; i < g->nops; i++) {
			const char *name = g->ops[i].name;
			const char *v = DP_OP;

			if (b->op && strcmp(b->op, name) == 0)
				v = b->op_json;
			if (!v)
				continue;
			n += (size_t)snprintf(buf + n, cap - n, "%s\n    \"%s\": %s",
					      first ? "" : ",", name, v);
			first = 0;
		}
		/* An op the model does not have comes last. */
		if (b->op && graph_find(g, b->op) < 0)
			n += (size_t)snprintf(buf + n, cap - n, ",\n    \"%s\": %s",
					      b->op, b->op_json);
		n += (size_t)snprintf(buf + n, cap - n, "\n  }");
	}
	n += (size_t)snprintf(buf + n, cap - n, "\n}\n");
	assert_true(n < cap);
	return buf;
}

/* One broken plan; returns 1 when it is handled as expected, printing
 * what went wrong otherwise, so one run reports every failing case. */
static int check_bad(struct env *e, const struct bad *b)
{
	char path[PATH_MAX], name[128], at[PATH_MAX + 32];
	const char *msg;
	struct cluster c = e->c;
	struct plan p;
	char *text = bad_text(b, &e->g);
	int st, ok = 1;

	snprintf(name, sizeof name, "%s.json", b->name);
	tmp_path(e, name, path, sizeof path);
	write_text(path, text);
	free(text);
	plan_init(&p);
	st = plan_read(path, &e->g, &p);
	if (b->phase == VALIDATE) {
		if (st != AP_OK) {
			print_error("%s: plan_read refused a plan meant for plan_validate: %s\n",
				    b->name, ap_last_error());
			ok = 0;
			goto out;
		}
		if (b->cluster && cluster_resolve(b->cluster, e->csv, &c) != AP_OK) {
			print_error("%s: %s\n", b->name, ap_last_error());
			ok = 0;
			goto out;
		}
		st = plan_validate(&p, &e->g, &c, path);
	}
	msg = ap_last_error();
	if (st != AP_EINPUT) {
		print_error("%s: expected AP_EINPUT from %s, got %d\n", b->name,
			    b->phase == READ ? "plan_read" : "plan_validate", st);
		ok = 0;
		goto out;
	}
	if (b->line > 0)
		snprintf(at, sizeof at, "%s:%d: ", path, b->line);
	else
		snprintf(at, sizeof at, "%s: ", path);
	if (strncmp(msg, at, strlen(at)) != 0) {
		print_error("%s: message '%s' does not start with '%s'\n", b->name, msg, at);
		ok = 0;
	}
	for (int k = 0; k < 3 && b->want[k]; k++) {
		if (!strstr(msg, b->want[k])) {
			print_error("%s: message '%s' lacks '%s'\n", b->name, msg,
				    b->want[k]);
			ok = 0;
		}
	}
	/* A refused read leaves nothing behind to free or to misuse. */
	if (b->phase == READ && (p.nops || p.nstages || p.ops || p.stages)) {
		print_error("%s: plan_read left a partial plan\n", b->name);
		ok = 0;
	}
out:
	plan_release(&p);
	return ok;
}

static void test_bad_plans(void **state)
{
	struct env *e = *state;
	int n = (int)(sizeof bad_plans / sizeof bad_plans[0]), failed = 0;

	for (int i = 0; i < n; i++)
		failed += !check_bad(e, &bad_plans[i]);
	assert_int_equal(failed, 0);
}

/* Names up to PLAN_NAME_LEN - 1 characters (an inline cluster spec) come
 * back whole; one character more is refused (bad_plans: name-too-long). */
static void test_long_names(void **state)
{
	struct env *e = *state;
	struct plan p, q;
	char path[PATH_MAX];

	plan_init(&p);
	plan_init(&q);
	make_dp(&p, &e->g, 4);
	snprintf(p.cluster, sizeof p.cluster, "%s", LONG_SPEC);
	assert_int_equal(strlen(p.cluster), strlen(LONG_SPEC));
	memset(p.profile, 'p', sizeof p.profile - 1);
	tmp_path(e, "long.json", path, sizeof path);
	assert_int_equal(plan_write(&p, &e->g, path), AP_OK);
	assert_int_equal(plan_read(path, &e->g, &q), AP_OK);
	assert_plans_equal(&p, &q);
	assert_int_equal(strlen(q.profile), PLAN_NAME_LEN - 1);
	plan_release(&p);
	plan_release(&q);
}

static void test_missing_file(void **state)
{
	struct env *e = *state;
	struct plan p;
	char path[PATH_MAX];

	plan_init(&p);
	tmp_path(e, "absent.json", path, sizeof path);
	assert_int_equal(plan_read(path, &e->g, &p), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), path));
	assert_non_null(strstr(ap_last_error(), "cannot read"));
	plan_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sched_names),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_validate_accepts),
		cmocka_unit_test(test_stage_microbatches),
		cmocka_unit_test(test_memory_bound),
		cmocka_unit_test(test_bad_plans),
		cmocka_unit_test(test_long_names),
		cmocka_unit_test(test_missing_file),
	};

	return cmocka_run_group_tests_name("plan", tests, setup, teardown);
}
