/*
 * Benchmark matrices: blocks expand to the cross product of their lists in
 * a fixed order, and malformed matrices are refused with file:line.
 */
#include "testutil.h"

#include "util/err.h"
#include "matrix.h"
#include "planner.h"
#include "results.h"

static void test_expand(void **state)
{
	struct matrix m;
	const char *path = tmp_write("m.matrix",
				     "# two blocks\n"
				     "models mlp cnn_small\n"
				     "batch 0 64/dev\n"
				     "clusters cpu-1x2 2x2:v100 # inline specs too\n"
				     "planners dp owt\n"
				     "seeds 1 2 3\n"
				     "budget 0.5\n"
				     "end\n\n"
				     "models alexnet\nclusters pipedream-a\nplanners all\nend\n");

	(void)state;
	if (matrix_read(path, &m) != AP_OK)
		fail_msg("%s", ap_last_error());
	assert_int_equal(m.ncells, 2 * 2 * 2 * 3 * 2 + nplanners);
	/* planners vary fastest, then seeds, clusters, batches, models */
	assert_string_equal(m.cells[0].planner, "dp");
	assert_string_equal(m.cells[1].planner, "owt");
	assert_int_equal(m.cells[2].seed, 2);
	assert_string_equal(m.cells[6].cluster, "2x2:v100");
	assert_int_equal(m.cells[12].batch.n, 64);
	assert_true(m.cells[12].batch.per_device);
	assert_false(m.cells[0].batch.per_device);
	assert_string_equal(m.cells[24].model, "cnn_small");
	assert_true(m.cells[0].budget_s == 0.5);
	/* the second block has the defaults */
	assert_int_equal(m.cells[48].batch.n, 0);
	assert_false(m.cells[48].batch.per_device);
	assert_int_equal(m.cells[48].seed, 1);
	assert_true(m.cells[48].budget_s == 10);
	assert_string_equal(m.cells[48].planner, planners[0]->name);
	/* `all` runs each planner on the others' footing */
	for (int k = 0; k < nplanners; k++) {
		char want[PLAN_NAME_LEN];

		snprintf(want, sizeof want, "%s%s%s", planners[k]->name,
			 planners[k]->same_footing ? ":" : "",
			 planners[k]->same_footing ? planners[k]->same_footing : "");
		assert_string_equal(m.cells[48 + k].planner, want);
	}
	assert_non_null(planner_find("megatron")->same_footing);
	matrix_release(&m);
}

static void test_shipped_matrix(void **state)
{
	struct matrix m;
	char path[4096];

	(void)state;
	snprintf(path, sizeof path, "%s/bench/default.matrix", getenv("AUTOPAR_DATA"));
	if (access(path, F_OK) != 0)
		skip();
	if (matrix_read(path, &m) != AP_OK)
		fail_msg("%s", ap_last_error());
	assert_true(m.ncells > 0);
	matrix_release(&m);
}

static void test_malformed(void **state)
{
	static const struct {
		const char *text;
		int line;
		const char *msg;
	} bad[] = {
		{ "models mlp\nclusters cpu-1x2\nplanners nosuch\nend\n", 3, "unknown planner" },
		{ "models mlp\nclusters cpu-1x2\nend\n", 1, "needs 'models'" },
		{ "models mlp\nclusters cpu-1x2\nplanners dp\n", 3, "no 'end'" },
		{ "end\n", 1, "without a block" },
		{ "models\n", 1, "at least one value" },
		{ "modles mlp\n", 1, "unknown key 'modles'" },
		{ "models mlp\nbatch -4\n", 2, "batch '-4'" },
		{ "models mlp\nbatch 4/gpu\n", 2, "batch '4/gpu'" },
		{ "models mlp\nseeds x\n", 2, "seed 'x'" },
		{ "models mlp\nbudget 1 2\n", 2, "budget SECONDS" },
		{ "models mlp\nclusters c\nplanners dp\nend x\n", 4, "'end' takes nothing" },
	};
	char want[600];

	(void)state;
	ap_err_quiet(1);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *path = tmp_write("bad.matrix", bad[i].text);
		struct matrix m;

		assert_int_equal(matrix_read(path, &m), AP_EINPUT);
		snprintf(want, sizeof want, "%s:%d: ", path, bad[i].line);
		if (strncmp(ap_last_error(), want, strlen(want)) ||
		    !strstr(ap_last_error(), bad[i].msg))
			fail_msg("case %zu: got \"%s\"", i, ap_last_error());
	}
	ap_err_quiet(0);
}

/* A key's values add up over the lines of a block, to at most 256 (the
 * fuzzer found 256 lines of `clusters` writing past the list). */
static void test_too_many_values(void **state)
{
	char *text = malloc(300 * 16 + 64), *at = text, want[600];
	struct matrix m;
	const char *path;

	(void)state;
	assert_non_null(text);
	at += sprintf(at, "models mlp\n");
	for (int i = 0; i < 257; i++)
		at += sprintf(at, "clusters 1x%d:cpu\n", 1 + i % 4);
	sprintf(at, "planners dp\nend\n");
	path = tmp_write("many.matrix", text);
	ap_err_quiet(1);
	assert_int_equal(matrix_read(path, &m), AP_EINPUT);
	ap_err_quiet(0);
	snprintf(want, sizeof want, "%s:258: more than 256 values for 'clusters' in one block",
		 path);
	assert_string_equal(ap_last_error(), want);
	/* planners all counts every planner */
	at = text + sprintf(text, "models mlp\nclusters cpu-1x2\n");
	for (int i = 0; i < 255; i++)
		at += sprintf(at, "planners dp\n");
	sprintf(at, "planners all\nend\n");
	path = tmp_write("many.matrix", text);
	ap_err_quiet(1);
	assert_int_equal(matrix_read(path, &m), AP_EINPUT);
	ap_err_quiet(0);
	assert_non_null(strstr(ap_last_error(), "more than 256 values for 'planners'"));
	free(text);
}

static void add_as(struct results *t, const char *planner, double sps, int ok, int weak)
{
	struct bench_row r;

	bench_row_init(&r);
	snprintf(r.model, sizeof r.model, "alexnet");
	snprintf(r.cluster, sizeof r.cluster, "pipedream-a");
	snprintf(r.profile, sizeof r.profile, "v100-analytic");
	snprintf(r.planner, sizeof r.planner, "%s", planner);
	r.batch = 128;
	r.weak = weak;
	r.fits = ok ? weak : -1;
	r.seed = 1;
	r.budget_s = 5;
	r.ok = ok;
	r.pred_samples_s = sps;
	r.search_s = 0.25;
	if (!ok)
		snprintf(r.error, sizeof r.error, "does not fit, \"quoted\"");
	assert_int_equal(results_add(t, &r), AP_OK);
}

static void add(struct results *t, const char *planner, double sps, int ok)
{
	add_as(t, planner, sps, ok, 0);
}

/* Rows round-trip through the CSV, empty numbers stay empty, failed rows
 * keep their reason, and speedups are over the dp row of the same cell. */
static void test_results(void **state)
{
	struct results t = { 0 }, u;
	const char *path = tmp_write("bench.csv", "");

	(void)state;
	add(&t, "dp", 1000, 1);
	add(&t, "owt", 1500, 1);
	add(&t, "single", NAN, 0);
	/* the same global batch given per device: its own dp, its own rows */
	add_as(&t, "dp", 500, 1, 1);
	add_as(&t, "owt", 1500, 1, 1);
	results_speedups(&t);
	assert_true(t.rows[0].speedup_vs_dp == 1);
	assert_true(t.rows[1].speedup_vs_dp == 1.5);
	assert_true(isnan(t.rows[2].speedup_vs_dp));
	assert_true(t.rows[4].speedup_vs_dp == 3);
	assert_int_equal(results_write(path, &t), AP_OK);
	assert_int_equal(results_read(path, &u), AP_OK);
	assert_int_equal(u.n, 5);
	assert_int_equal(results_find(&u, "alexnet", 128, 0, "pipedream-a", "owt", 1), 1);
	assert_int_equal(results_find(&u, "alexnet", 128, 0, "pipedream-a", "owt", 2), -1);
	assert_int_equal(results_find(&u, "alexnet", 128, 1, "pipedream-a", "owt", 1), 4);
	assert_true(u.rows[4].weak && !u.rows[1].weak);
	assert_int_equal(u.rows[4].fits, 1);
	assert_int_equal(u.rows[1].fits, 0);
	assert_int_equal(u.rows[2].fits, -1);
	assert_true(u.rows[1].speedup_vs_dp == 1.5);
	assert_true(u.rows[1].search_s == 0.25);
	assert_true(isnan(u.rows[1].bound_ms));
	assert_false(u.rows[2].ok);
	assert_string_equal(u.rows[2].error, "does not fit, \"quoted\"");
	results_release(&t);
	results_release(&u);
	/* a missing file is an empty table; a malformed one names its line */
	assert_int_equal(results_read("/nonexistent/bench.csv", &u), AP_OK);
	assert_int_equal(u.n, 0);
	ap_err_quiet(1);
	path = tmp_write("bad.csv", RESULTS_HEADER "\n"
			 "alexnet,128,strong,pipedream-a,v100,dp,1,5,maybe,,,,,,,,,,,,\n");
	assert_int_equal(results_read(path, &u), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "bad.csv:2: status 'maybe'"));
	ap_err_quiet(0);
}

/* The command: a second run over the same file adds nothing, a failed cell
 * keeps its reason, and the file always parses. */
static void test_command(void **state)
{
	const char *bin = getenv("AUTOPAR_BIN");
	const char *mx = tmp_write("cmd.matrix", "models mlp nosuchmodel\nclusters cpu-1x2\n"
				   "planners single dp\nend\n");
	char cmd[4096], csv[600];
	struct results t;

	(void)state;
	if (!bin || !*bin)
		skip();
	snprintf(csv, sizeof csv, "%s/cmd.csv", tmp_dir());
	remove(csv);
	snprintf(cmd, sizeof cmd, "'%s' bench '%s' -o '%s' >/dev/null 2>&1", bin, mx, csv);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(results_read(csv, &t), AP_OK);
	assert_int_equal(t.n, 4);
	assert_true(t.rows[0].ok && t.rows[1].ok);
	assert_false(t.rows[2].ok);
	assert_non_null(strstr(t.rows[2].error, "nosuchmodel"));
	assert_true(t.rows[1].speedup_vs_dp == 1);
	assert_true(t.rows[0].pred_iter_ms > 0);
	results_release(&t);
	/* the rerun skips the finished cells and retries the failed ones in
	 * place */
	assert_int_equal(system(cmd), 0);
	assert_int_equal(results_read(csv, &t), AP_OK);
	assert_int_equal(t.n, 4);
	assert_false(t.rows[3].ok);
	results_release(&t);
}

/* Long names: a planner spec past the old 63 characters resumes (no
 * duplicate rows), a model path longer than a row holds is refused at its
 * line instead of truncated. */
static void test_long_names(void **state)
{
	const char *bin = getenv("AUTOPAR_BIN");
	static const char spec[] = "megatron:precision=fp32,optimizer=sgd,schedule=1f1b,"
				   "recompute=full,zero=0";
	char text[1024], cmd[4096], csv[600], model[800];
	const char *mx;
	struct results t;
	struct matrix m;

	(void)state;
	if (!bin || !*bin)
		skip();
	snprintf(text, sizeof text, "models gpt2\nclusters cpu-1x2\nplanners %s\nend\n", spec);
	mx = tmp_write("long.matrix", text);
	snprintf(csv, sizeof csv, "%s/long.csv", tmp_dir());
	remove(csv);
	snprintf(cmd, sizeof cmd, "'%s' bench '%s' -o '%s' >/dev/null 2>&1", bin, mx, csv);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(results_read(csv, &t), AP_OK);
	assert_int_equal(t.n, 1);
	assert_string_equal(t.rows[0].planner, spec);
	results_release(&t);
	snprintf(model, sizeof model, "%s/%0150d.model", tmp_dir(), 0);
	snprintf(text, sizeof text, "models mlp\nmodels %s\nclusters cpu-1x2\nplanners dp\nend\n",
		 model);
	mx = tmp_write("long.matrix", text);
	ap_err_quiet(1);
	assert_int_equal(matrix_read(mx, &m), AP_EINPUT);
	snprintf(text, sizeof text, "%s:2: a value of 'models' of %zu characters", mx,
		 strlen(model));
	assert_non_null(strstr(ap_last_error(), text));
	ap_err_quiet(0);
}

/* Many rows: each cell is found again (the index is a hash, so bench's
 * bookkeeping stays linear). */
static void test_many_rows(void **state)
{
	struct results t = { 0 };

	(void)state;
	for (int i = 0; i < 5000; i++) {
		struct bench_row r;

		bench_row_init(&r);
		snprintf(r.model, sizeof r.model, "m%d", i % 50);
		snprintf(r.cluster, sizeof r.cluster, "c%d", i / 50);
		snprintf(r.planner, sizeof r.planner, "%s", i % 2 ? "owt" : "dp");
		r.batch = 8;
		r.seed = (uint64_t)(i % 7);
		assert_int_equal(results_add(&t, &r), AP_OK);
	}
	for (int i = 0; i < 5000; i++) {
		char m[16], c[16];

		snprintf(m, sizeof m, "m%d", i % 50);
		snprintf(c, sizeof c, "c%d", i / 50);
		assert_int_equal(results_find(&t, m, 8, 0, c, i % 2 ? "owt" : "dp",
					      (uint64_t)(i % 7)), i);
		assert_int_equal(results_find(&t, m, 8, 1, c, "dp", (uint64_t)(i % 7)), -1);
	}
	results_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_shipped_matrix),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_too_many_values),
		cmocka_unit_test(test_results),
		cmocka_unit_test(test_command),
		cmocka_unit_test(test_long_names),
		cmocka_unit_test(test_many_rows),
	};

	return cmocka_run_group_tests_name("bench", tests, NULL, NULL);
}
