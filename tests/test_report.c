/*
 * The report page of a run (scripts/report, `make report`) as a browser
 * shows it: a small results folder (three of the source tree's CSVs, three
 * of its figures, one with a colon in its name as the per-cluster charts
 * have) made into results/report.html, which headless Chromium opens from
 * the file system.  The page's own script marks every image loaded or
 * failed and counts them in #image-check, which the dumped DOM must show
 * all loaded; a figure that is no SVG must count as failed, so the check
 * can fail.  A screenshot of the page must hold more than a few colours,
 * where one of an empty page holds one (tests/png-colors decodes them).
 * Run from the source tree (AUTOPAR_DATA); skipped, with a message,
 * without python3 or chromium.
 */
#include "testutil.h"

/* One Chromium run: headless, without the sandbox (CI runs as root),
 * scripts given virtual time to run before the DOM or screenshot is
 * taken, its own profile under tmp_dir(), and a wall limit. */
#define CHROMIUM "timeout 60 chromium --headless --no-sandbox --disable-gpu " \
	"--hide-scrollbars --virtual-time-budget=5000 --user-data-dir='%s/chrome' "

static char out[1 << 20];

/* The source tree, and whether python3 and chromium are there; the test
 * is skipped, saying which is missing, without them. */
static const char *need(void)
{
	static const char *tools[] = { "python3", "chromium" };
	const char *src = getenv("AUTOPAR_DATA");
	char cmd[256];
	size_t i;

	if (!src || !*src) {
		print_message("skipped: no AUTOPAR_DATA (the source tree)\n");
		skip();
	}
	for (i = 0; i < sizeof tools / sizeof *tools; i++) {
		snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tools[i]);
		if (system(cmd) != 0) {
			print_message("skipped: %s is not installed (scripts/install-deps)\n",
				      tools[i]);
			skip();
		}
	}
	return src;
}

/* Runs the shell command made from fmt, its stderr with its stdout into
 * out, and fails the test unless it exits 0. */
static const char *run_ok(const char *fmt, ...)
{
	char cmd[4096], full[4200];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	snprintf(full, sizeof full, "{ %s; } 2>&1", cmd);
	st = test_shell(full, out, sizeof out);
	if (st != 0)
		fail_msg("'%s' exited %d:\n%s", cmd, st, out);
	return out;
}

/* A results folder under tmp_dir() with a few of the source tree's CSVs
 * and figures and a page made of them; returns its path. */
static const char *make_results(const char *src)
{
	static char dir[600];

	snprintf(dir, sizeof dir, "%s/results", tmp_dir());
	run_ok("rm -rf '%s' && mkdir -p '%s/figures' && "
	       "cp '%s/results/papers.csv' '%s/results/megatron_table1.csv' "
	       "'%s/results/torch_peer.csv' '%s' && "
	       "cp '%s/results/figures/papers.svg' '%s/results/figures/search-time.svg' "
	       "'%s/results/figures/speedup-1x4:h100.svg' '%s/figures'",
	       dir, dir, src, src, src, dir, src, src, src, dir);
	return dir;
}

/* The page's DOM after its scripts ran, in out. */
static const char *dump_dom(const char *page)
{
	return run_ok(CHROMIUM "--dump-dom 'file://%s' 2>/dev/null", tmp_dir(), page);
}

/* The distinct colours of a screenshot of page (tests/png-colors). */
static int screenshot_colours(const char *src, const char *page, const char *png)
{
	int w, h, n;

	run_ok(CHROMIUM "--window-size=1000,700 --screenshot='%s' 'file://%s' >/dev/null 2>&1",
	       tmp_dir(), png, page);
	run_ok("python3 '%s/tests/png-colors' '%s'", src, png);
	if (sscanf(out, "%d %d %d", &w, &h, &n) != 3 || w != 1000 || h != 700)
		fail_msg("%s: not a 1000 x 700 screenshot: %s", png, out);
	return n;
}

/* Every figure of the folder loads; the tables are there and a CSV the
 * folder lacks is said to be absent. */
static void test_page_loads(void **state)
{
	const char *src = need(), *dir = make_results(src);
	char page[700];

	(void)state;
	run_ok("cd '%s' && python3 scripts/report '%s'", src, dir);
	snprintf(page, sizeof page, "%s/report.html", dir);
	test_read_file(page, out, sizeof out);
	assert_non_null(strstr(out, "gpu_pytorch.csv is absent"));
	assert_non_null(strstr(out, "<td>PipeDream (SOSP 2019)</td>"));
	assert_non_null(strstr(out, "src=\"figures/speedup-1x4%3Ah100.svg\""));

	dump_dom(page);
	if (!strstr(out, "id=\"image-check\" data-total=\"3\" data-loaded=\"3\" "
		    "data-failed=\"0\""))
		fail_msg("not every figure loaded: %.400s",
			 strstr(out, "id=\"image-check\"") ? strstr(out, "id=\"image-check\"")
							   : out);
	assert_null(strstr(out, "data-image=\"failed\""));
}

/* A figure that is no SVG counts as failed: the check above can fail. */
static void test_broken_figure_fails(void **state)
{
	const char *src = need(), *dir = make_results(src);
	char page[700];

	(void)state;
	run_ok("echo 'not an image' > '%s/figures/broken.svg' && "
	       "cd '%s' && python3 scripts/report '%s'", dir, src, dir);
	snprintf(page, sizeof page, "%s/report.html", dir);
	dump_dom(page);
	assert_non_null(strstr(out, "id=\"image-check\" data-total=\"4\" data-loaded=\"3\" "
			       "data-failed=\"1\""));
	assert_non_null(strstr(out, "src=\"figures/broken.svg\""));
	assert_non_null(strstr(out, "data-image=\"failed\""));
}

/* The page's first screen is drawn: text, tables and colours, where an
 * empty page's screenshot is one colour. */
static void test_screenshot_not_blank(void **state)
{
	const char *src = need(), *dir = make_results(src);
	char page[700], png[700];
	int n;

	(void)state;
	run_ok("cd '%s' && python3 scripts/report '%s'", src, dir);
	snprintf(page, sizeof page, "%s/report.html", dir);
	snprintf(png, sizeof png, "%s/report.png", dir);
	n = screenshot_colours(src, page, png);
	if (n < 32)
		fail_msg("the report's screenshot has %d colours: blank?", n);
	snprintf(png, sizeof png, "%s/blank.png", dir);
	assert_int_equal(screenshot_colours(src, tmp_write("blank.html", "<!DOCTYPE html>"
							   "<html><body></body></html>\n"),
					    png), 1);
}

/* The results folders and Chromium's profile go with tmp_dir(). */
static int remove_tmp(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir());
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_loads),
		cmocka_unit_test(test_broken_figure_fails),
		cmocka_unit_test(test_screenshot_not_blank),
	};

	return cmocka_run_group_tests(tests, NULL, remove_tmp);
}
