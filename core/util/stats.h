/*
 * Summaries of measured times (docs/runtime.md, "Measured numbers"): the
 * median and quantiles of timed steps and a distribution-free confidence
 * interval of the median, as Hoefler and Belli's rules for scientific
 * benchmarking (SC 2015) ask of every measured number.
 */
#ifndef AUTOPAR_STATS_H
#define AUTOPAR_STATS_H

/* Sorts v[0..n) ascending. */
void stats_sort(double *v, int n);

/* The q-quantile (0 <= q <= 1) of sorted[0..n), n >= 1, interpolated
 * between neighbours. */
double stats_quantile(const double *sorted, int n, double q);

/* The 95% confidence interval of the median of sorted[0..n) that assumes
 * nothing of the distribution: the order statistics of (1-based) ranks
 * floor((n - 1.96 sqrt(n)) / 2) and ceil(1 + (n + 1.96 sqrt(n)) / 2).
 * Both NAN when n is too small to have them (n < 8). */
void stats_median_ci(const double *sorted, int n, double *lo, double *hi);

#endif
