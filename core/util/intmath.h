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

#endif
