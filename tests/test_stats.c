/*
 * Summaries of measured times (core/util/stats.h) against known cases, and
 * scripts/step-stats, the benchmark scripts' copy of them, against both
 * those functions and hand-computed comparisons of two sets of times.
 */
#include "testutil.h"

#include <math.h>

#include "util/stats.h"

/* n = 20: ranks floor((20 - 1.96 sqrt(20)) / 2) = 5 and
 * ceil(1 + (20 + 1.96 sqrt(20)) / 2) = 16, as Hoefler and Belli's
 * table gives; n = 100: 40 and 61. */
static void test_median_ci(void **state)
{
	double v[100], lo, hi;

	(void)state;
	for (int i = 0; i < 100; i++)
		v[i] = 100 - i; /* sorted below */
	stats_sort(v, 100);
	stats_median_ci(v, 100, &lo, &hi);
	assert_true(lo == 40 && hi == 61);
	for (int i = 0; i < 20; i++)
		v[i] = i + 1;
	stats_median_ci(v, 20, &lo, &hi);
	assert_true(lo == 5 && hi == 16);
	assert_true(stats_quantile(v, 20, 0.5) == 10.5);
	/* the interval always holds the median */
	for (int n = 8; n <= 100; n++) {
		for (int i = 0; i < n; i++)
			v[i] = i;
		stats_median_ci(v, n, &lo, &hi);
		assert_true(lo <= stats_quantile(v, n, 0.5) && stats_quantile(v, n, 0.5) <= hi);
	}
	/* too few steps for one */
	stats_median_ci(v, 7, &lo, &hi);
	assert_true(isnan(lo) && isnan(hi));
	stats_median_ci(v, 8, &lo, &hi);
	assert_true(lo == 0 && hi == 7);
}

static void test_quantile(void **state)
{
	double v[] = { 4, 1, 3, 2, 5 };

	(void)state;
	stats_sort(v, 5);
	assert_true(v[0] == 1 && v[4] == 5);
	assert_true(stats_quantile(v, 5, 0.5) == 3);
	assert_true(fabs(stats_quantile(v, 5, 0.1) - 1.4) < 1e-12);
	assert_true(stats_quantile(v, 5, 1) == 5);
	assert_true(stats_quantile(v, 1, 0.9) == 1);
}

/* scripts/step-stats on the times in v[0..n) (written one a line in file
 * order), or on two files; its output line in out. */
static void step_stats(const char *files, char *out, size_t len)
{
	char cmd[2048];
	const char *tree = getenv("AUTOPAR_DATA");

	snprintf(cmd, sizeof cmd, "cd '%s' && scripts/step-stats %s 2>&1",
		 tree && *tree ? tree : ".", files);
	if (test_shell(cmd, out, len) != 0)
		fail_msg("step-stats %s: %s", files, out);
}

static const char *write_times(const char *name, const double *v, int n)
{
	static char text[1 << 16];
	int at = 0;

	for (int i = 0; i < n; i++)
		at += snprintf(text + at, sizeof text - (size_t)at, "%.17g\n", v[i]);
	return tmp_write(name, text);
}

/* The script's median and interval are stats.c's, to the rank: times
 * 3, 6, ..., 3n in a shuffled order, whose medians and interval ends
 * print exactly, for every n up to 160 and a few larger. */
static void test_script_agrees(void **state)
{
	static double v[1000], sorted[1000];
	static const int big[] = { 250, 999, 1000 };
	char out[256], lo_s[64], hi_s[64], files[600];
	unsigned seed = 12345;

	(void)state;
	for (int k = 1; k <= 160 + 3; k++) {
		int n = k <= 160 ? k : big[k - 161], got_n;
		double lo, hi, med;

		for (int i = 0; i < n; i++)
			v[i] = 3.0 * (i + 1);
		for (int i = n - 1; i > 0; i--) {
			int j;
			double t;

			seed = seed * 1103515245u + 12345u;
			j = (int)((seed >> 8) % (unsigned)(i + 1));
			t = v[i], v[i] = v[j], v[j] = t;
		}
		memcpy(sorted, v, (size_t)n * sizeof *v);
		stats_sort(sorted, n);
		stats_median_ci(sorted, n, &lo, &hi);
		snprintf(files, sizeof files, "'%s'", write_times("t.txt", v, n));
		step_stats(files, out, sizeof out);
		lo_s[0] = hi_s[0] = 0;
		if (sscanf(out, "%d,%lf,%63[^,],%63[^,\n]", &got_n, &med, lo_s, hi_s) < 2)
			fail_msg("n %d: step-stats printed '%s'", n, out);
		assert_int_equal(got_n, n);
		if (med != stats_quantile(sorted, n, 0.5))
			fail_msg("n %d: median %g, stats.c %g", n, med,
				 stats_quantile(sorted, n, 0.5));
		if (isnan(lo)) {
			if (lo_s[0] || hi_s[0])
				fail_msg("n %d: an interval '%s'-'%s' below 8 times", n, lo_s, hi_s);
			continue;
		}
		if (atof(lo_s) != lo || atof(hi_s) != hi)
			fail_msg("n %d: interval %s-%s, stats.c %g-%g", n, lo_s, hi_s, lo, hi);
	}
}

/* Two sets by hand.  1..20: median 10.5, interval ranks 5 and 16 (5-16);
 * 101..200: 150.5, ranks 40 and 61 (140-161).  B over A: 150.5 / 10.5 =
 * 14.3333, from 140 / 16 = 8.75 to 161 / 5 = 32.2, A faster.  1..30:
 * 15.5, ranks floor((30 - 10.735) / 2) = 9 and ceil(1 + 40.735 / 2) = 22
 * (9-22); 10..40 (31 times): 25, ranks 10 and 22 (19-31); 25 / 15.5 =
 * 1.6129 from 19 / 22 = 0.8636 to 31 / 9 = 3.4444, overlapping. */
static void test_script_compares(void **state)
{
	double a[100], b[100];
	char out[256], files[1400], fa[600];

	(void)state;
	for (int i = 0; i < 100; i++) {
		a[i] = 20 - i % 20; /* only the first 20 are written */
		b[i] = 101 + i;
	}
	snprintf(fa, sizeof fa, "%s", write_times("a.txt", a, 20));
	snprintf(files, sizeof files, "'%s' '%s'", fa, write_times("b.txt", b, 100));
	step_stats(files, out, sizeof out);
	assert_string_equal(out, "20,10.5,5,16,100,150.5,140,161,14.3333,8.7500,32.2000,faster\n");
	snprintf(files, sizeof files, "'%s' '%s'", write_times("b.txt", b, 100), fa);
	step_stats(files, out, sizeof out);
	assert_string_equal(out, "100,150.5,140,161,20,10.5,5,16,0.0698,0.0311,0.1143,slower\n");
	for (int i = 0; i < 31; i++) {
		a[i] = i + 1;
		b[i] = i + 10;
	}
	snprintf(fa, sizeof fa, "%s", write_times("a.txt", a, 30));
	snprintf(files, sizeof files, "'%s' '%s'", fa, write_times("b.txt", b, 31));
	step_stats(files, out, sizeof out);
	assert_string_equal(out, "30,15.5,9,22,31,25,19,31,1.6129,0.8636,3.4444,"
				 "same within noise\n");
	/* 7 times have no interval: no verdict */
	snprintf(fa, sizeof fa, "%s", write_times("a.txt", a, 7));
	snprintf(files, sizeof files, "'%s' '%s'", fa, write_times("b.txt", b, 31));
	step_stats(files, out, sizeof out);
	assert_string_equal(out, "7,4,,,31,25,19,31,6.2500,,,too few steps\n");
}

/* Input it cannot take: exit 2 and one line naming the file. */
static void test_script_refuses(void **state)
{
	char cmd[2048], out[512];
	const char *tree = getenv("AUTOPAR_DATA");
	static const char *const bad[] = { "1\nx\n", "", "\n\n", "1\n0\n", "1\n-2\n" };

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *f = tmp_write("bad.txt", bad[i]);

		snprintf(cmd, sizeof cmd, "cd '%s' && scripts/step-stats '%s' 2>&1",
			 tree && *tree ? tree : ".", f);
		if (test_shell(cmd, out, sizeof out) != 2 || !strstr(out, "bad.txt"))
			fail_msg("case %zu: '%s'", i, out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_median_ci),
		cmocka_unit_test(test_quantile),
		cmocka_unit_test(test_script_agrees),
		cmocka_unit_test(test_script_compares),
		cmocka_unit_test(test_script_refuses),
	};

	return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
