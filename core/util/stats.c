/*
 * Summaries of measured times (stats.h).
 */
#include "util/stats.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void stats_sort(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
}

double stats_quantile(const double *sorted, int n, double q)
{
	double at = q * (n - 1);
	int lo = (int)floor(at);

	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + (at - lo) * (sorted[lo + 1] - sorted[lo]);
}

void stats_median_ci(const double *sorted, int n, double *lo, double *hi)
{
	double w = 1.96 * sqrt((double)n);
	int a = (int)floor((n - w) / 2), b = (int)ceil(1 + (n + w) / 2);

	*lo = *hi = NAN;
	if (a < 1 || b > n)
		return;
	*lo = sorted[a - 1];
	*hi = sorted[b - 1];
}
