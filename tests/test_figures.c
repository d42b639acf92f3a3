/*
 * The scripts that read autopar's CSV and plan JSON (scripts/csv2tsv,
 * scripts/planjson, scripts/figures): a results CSV whose planner spec and
 * cluster hold commas, quoted by autopar's own writer, keeps every column
 * in place through the conversion and the figures; a plan's fields read
 * by path, whatever the file's layout; every figure in the style of
 * scripts/style.gp, as scripts/check-figures checks it (and a figure out
 * of it fails the check).  Run from the source tree
 * (AUTOPAR_DATA); skipped without python3, and the figures without
 * gnuplot.
 */
#include "testutil.h"

#include "util/err.h"
#include "results.h"

#define SPEC "pipedream:straight,schedule=1f1b-flush"
#define CLUSTER "1x2:v100,intra=25GB/s"

/* The source tree, or NULL (the test is then skipped). */
static const char *src_dir(void)
{
	const char *d = getenv("AUTOPAR_DATA");

	return d && *d ? d : NULL;
}

static int have(const char *tool)
{
	char cmd[256];

	snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

/* Skips the test without the source tree, python3 or, when asked,
 * gnuplot. */
static void need(int gnuplot)
{
	if (!src_dir() || !have("python3") || (gnuplot && !have("gnuplot")))
		skip();
}

/* Runs the shell command made from fmt in the source tree, checks that it
 * exits with status and returns its output: stdout, and stderr too where
 * status is not 0 (a static buffer, overwritten by the next call). */
static const char *sh_out(int status, const char *fmt, ...)
{
	static char out[8192];
	char cmd[4096], full[8192], path[600];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	snprintf(path, sizeof path, "%s/sh.out", tmp_dir());
	snprintf(full, sizeof full, "cd '%s' && { %s; } >'%s' %s", src_dir(), cmd, path,
		 status ? "2>&1" : "2>/dev/null");
	st = system(full);
	test_read_file(path, out, sizeof out);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != status)
		fail_msg("'%s' exited %d, not %d:\n%s", cmd,
			 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), status, out);
	return out;
}

static void add_row(struct results *t, const char *planner, double sps, int ok,
		    const char *error)
{
	struct bench_row r;

	bench_row_init(&r);
	snprintf(r.model, sizeof r.model, "mlp");
	snprintf(r.cluster, sizeof r.cluster, CLUSTER);
	snprintf(r.profile, sizeof r.profile, "v100-analytic");
	snprintf(r.planner, sizeof r.planner, "%s", planner);
	r.batch = 64;
	r.seed = 1;
	r.budget_s = 5;
	r.ok = ok;
	r.fits = ok;
	r.search_s = 0.25;
	if (ok) {
		r.pred_samples_s = sps;
		r.pred_iter_ms = 64e3 / sps;
	}
	snprintf(r.error, sizeof r.error, "%s", error);
	assert_int_equal(results_add(t, &r), AP_OK);
}

/* A results CSV as autopar bench writes it: dp, the spec with a comma
 * (1.5 x dp) and a failed planner whose spec and error hold commas, a
 * quote and a line break, all on an inline cluster with a comma. */
static const char *write_results(void)
{
	static char path[600];
	struct results t = { 0 };
	char text[4096];

	snprintf(path, sizeof path, "%s/bench.csv", tmp_dir());
	add_row(&t, "dp", 1000, 1, "");
	add_row(&t, SPEC, 1500, 1, "");
	add_row(&t, "ilp:x,y", 0, 0, "no plan,\n\"quoted\"");
	results_speedups(&t);
	assert_int_equal(results_write(path, &t), AP_OK);
	results_release(&t);
	/* the fixture is what the scripts must survive: quoted commas */
	test_read_file(path, text, sizeof text);
	assert_non_null(strstr(text, ",\"" CLUSTER "\",v100-analytic,\"" SPEC "\",1,5,ok,"));
	return path;
}

static void test_columns(void **state)
{
	const char *csv;

	(void)state;
	need(0);
	csv = write_results();
	/* the columns picked by name, in the order asked */
	assert_string_equal(sh_out(0, "scripts/csv2tsv '%s' model cluster planner status "
				   "speedup_vs_dp error", csv),
		"model\tcluster\tplanner\tstatus\tspeedup_vs_dp\terror\n"
		"mlp\t" CLUSTER "\tdp\tok\t1\t\n"
		"mlp\t" CLUSTER "\t" SPEC "\tok\t1.5\t\n"
		"mlp\t" CLUSTER "\tilp:x,y\tfailed\t\tno plan, \"quoted\"\n");
	/* every column: 21 fields a row, the planner sixth, the status ninth */
	assert_string_equal(sh_out(0, "scripts/csv2tsv '%s' | "
				   "awk -F'\\t' '{ print NF \" \" $6 \" \" $9 \" \" $19 }'", csv),
		"21 planner status speedup_vs_dp\n"
		"21 dp ok 1\n"
		"21 " SPEC " ok 1.5\n"
		"21 ilp:x,y failed \n");
	/* standard input too, and back to CSV quoted as autopar quotes */
	assert_string_equal(sh_out(0, "scripts/csv2tsv - planner cluster status < '%s' | "
				   "scripts/csv2tsv -r", csv),
		"planner,cluster,status\n"
		"dp,\"" CLUSTER "\",ok\n"
		"\"" SPEC "\",\"" CLUSTER "\",ok\n"
		"\"ilp:x,y\",\"" CLUSTER "\",failed\n");
}

static void test_bad_input(void **state)
{
	(void)state;
	need(0);
	/* a column the header lacks fails instead of reading as empty */
	assert_non_null(strstr(sh_out(2, "scripts/csv2tsv '%s' model speedup", write_results()),
			       "no column 'speedup'"));
	/* an unterminated quoted field is no CSV */
	assert_non_null(strstr(sh_out(2, "scripts/csv2tsv '%s'",
				      tmp_write("bad.csv", "a,b\n1,\"2\n")), "bad.csv:"));
}

/* scripts/figures on the CSV: the speedup chart of the inline cluster (its
 * "/" no directory) has a bar for dp and for the spec with a comma, none
 * for the failed planner (a shifted status column would drop the spec's
 * bar, and a shifted planner column would name it '"pipedream:straight'). */
static void test_figures(void **state)
{
	char dir[600], path[1200];
	static char svg[1 << 20];
	const char *csv, *bin = getenv("AUTOPAR_BIN");

	(void)state;
	need(1);
	csv = write_results();
	snprintf(dir, sizeof dir, "%s/figs", tmp_dir());
	sh_out(0, "rm -rf '%s' && AUTOPAR_BIN='%s' scripts/figures '%s' '%s'",
	       dir, bin && *bin ? bin : "bin/autopar", csv, dir);

	snprintf(path, sizeof path, "%s/speedup-1x2:v100,intra=25GB_s.svg", dir);
	assert_true(test_read_file(path, svg, sizeof svg) > 0);
	assert_non_null(strstr(svg, ">" SPEC "<"));
	assert_non_null(strstr(svg, ">dp<"));
	assert_null(strstr(svg, "ilp:x"));
	assert_null(strstr(svg, "\"pipedream:straight"));
	assert_null(strstr(svg, "&quot;pipedream:straight"));
	snprintf(path, sizeof path, "%s/speedup-1x2:v100,intra=25GB_s.png", dir);
	assert_int_equal(access(path, R_OK), 0);
	/* the search times: a tick for each planner with a search time */
	snprintf(path, sizeof path, "%s/search-time.svg", dir);
	assert_true(test_read_file(path, svg, sizeof svg) > 0);
	assert_non_null(strstr(svg, ">" SPEC "<"));
	assert_non_null(strstr(svg, ">dp<"));
	/* every figure in the style: no tick labels overlap, at most 8
	 * series a panel, a planner one colour throughout */
	assert_non_null(strstr(sh_out(0, "scripts/check-figures '%s'", dir), ": ok"));
	sh_out(0, "rm -rf '%s'", dir);
}

/* The figure check fails where it should: on the old speedup figure's
 * way (11 planners in one panel in gnuplot's default colours, tick labels
 * too long for their slots), and on a planner in two colours. */
static void test_figure_check(void **state)
{
	const char *out;
	char dir[600];

	(void)state;
	need(1);
	snprintf(dir, sizeof dir, "%s", tmp_dir());
	out = sh_out(1, "printf 'model single dp owt pipedream exhaustive ilp mcmc "
		     "graphpipe piper megatron pipedream:cost=paper\\n' > '%s/old.dat' && "
		     "for m in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do "
		     "printf 'a-rather-long-model-name-%%d 1 1 1 1 1 1 1 1 1 1 1\\n' $m; "
		     "done >> '%s/old.dat' && cd '%s' && gnuplot -e \"set terminal svg size 1100,520; "
		     "set output 'old.svg'; set style data histograms; set xtics rotate by -10; "
		     "plot for [i=2:12] 'old.dat' using i:xtic(1) title columnheader(i)\" && "
		     "cd - >/dev/null && scripts/check-figures '%s/old.svg'", dir, dir, dir, dir);
	assert_non_null(strstr(out, "old.svg: panel 0 has 11 series (at most 8)"));
	assert_non_null(strstr(out, "tick labels 'a-rather-long-model-name-1' and "
			       "'a-rather-long-model-name-2' overlap"));
	/* the same labels turned upright fit, 8 series fit */
	assert_non_null(strstr(sh_out(0, "cd '%s' && gnuplot -e \"set terminal svg size 1100,520; "
				      "set output 'new.svg'; set style data histograms; "
				      "set xtics rotate by 90; plot for [i=2:9] 'old.dat' using "
				      "i:xtic(1) title columnheader(i) lc rgb '#0072B2'\" && "
				      "cd - >/dev/null && scripts/check-figures '%s/new.svg'", dir, dir),
			       "1 figures, "));
	/* dp blue in new.svg, another colour in old.svg */
	assert_non_null(strstr(sh_out(1, "scripts/check-figures '%s/old.svg' '%s/new.svg'", dir, dir),
			       "planner 'dp' has 2 colours"));
}

/* The committed figures (make figures) keep the style. */
static void test_committed_figures(void **state)
{
	(void)state;
	need(0);
	assert_non_null(strstr(sh_out(0, "scripts/check-figures results/figures"), ": ok"));
}

/* Plan fields by path, numbers as the file writes them, whatever the
 * layout (here one line, keys in another order), and a field set. */
static void test_planjson(void **state)
{
	const char *plan;

	(void)state;
	need(0);
	plan = tmp_write("plan.json",
			 "{\"predicted\": {\"fits_memory\": true, \"iter_ms\": 2.50}, "
			 "\"planner\": \"" SPEC "\", \"stages\": [{\"id\": 0, \"devices\": [0, 1]}], "
			 "\"schedule\": {\"microbatches\": 4, \"kind\": \"1f1b-flush\"}, "
			 "\"search\": {\"stages\": 2.0, \"seconds\": 5.86389999170933e-5}}\n");
	assert_string_equal(sh_out(0, "scripts/planjson get '%s' search.seconds search.stages "
				   "planner predicted.iter_ms predicted.fits_memory search.nosuch "
				   "stages.0.devices schedule.microbatches", plan),
			    "5.86389999170933e-5\n2.0\n" SPEC "\n2.50\ntrue\n\n[0,1]\n4\n");
	assert_string_equal(sh_out(0, "scripts/planjson set '%s' schedule.kind=async-predict "
				   "schedule.microbatches=8 search.seconds=null | scripts/planjson "
				   "get - schedule.kind schedule.microbatches search.seconds planner",
				   plan),
			    "async-predict\n8\nnull\n" SPEC "\n");
	assert_non_null(strstr(sh_out(2, "scripts/planjson get '%s' x", tmp_write("nojson", "{\n")),
			       "not JSON"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_columns),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_figures),
		cmocka_unit_test(test_figure_check),
		cmocka_unit_test(test_committed_figures),
		cmocka_unit_test(test_planjson),
	};

	return cmocka_run_group_tests_name("figures", tests, NULL, NULL);
}
