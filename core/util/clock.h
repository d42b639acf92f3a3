/*
 * Wall-clock seconds from a monotonic clock, for search times, budgets and
 * benchmark timings.
 */
#ifndef AUTOPAR_CLOCK_H
#define AUTOPAR_CLOCK_H

#include <time.h>

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
