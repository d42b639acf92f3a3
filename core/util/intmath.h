/*
 * Integer helpers shared by the planners, the simulator and the runtime.
 */
#ifndef AUTOPAR_INTMATH_H
#define AUTOPAR_INTMATH_H

#include <stdint.h>

static inline int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* The least common multiple of positive a and b (no overflow check). */
static inline int64_t lcm64(int64_t a, int64_t b)
{
	return a / gcd64(a, b) * b;
}

/* qsort()'s comparison of two ints, ascending. */
static inline int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The largest divisor of n that is at most cap (at least 1). */
static inline int64_t largest_divisor(int64_t n, int64_t cap)
{
	for (int64_t d = cap < n ? cap : n; d > 1; d--)
		if (n % d == 0)
			return d;
	return 1;
}

#endif
