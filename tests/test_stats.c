/*
 * Summaries of measured times (core/util/stats.h) against known cases.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_median_ci),
		cmocka_unit_test(test_quantile),
	};

	return cmocka_run_group_tests_name("stats", tests, NULL, NULL);
}
