/*
 * Limits on the sizes and counts read from input, and saturating
 * arithmetic for what is computed from them (models/FORMAT.md, "Limits").
 * A dim, a batch or an attribute such as out= or vocab= is at most
 * AP_MAX_COUNT; byte counts read from a file at most AP_MAX_BYTES.  An
 * operator's elements, parameters and multiply-accumulates, computed from
 * those, must stay at most AP_MAX_WORK: the products are taken with
 * sat_mul() and sat_add(), which stop at INT64_MAX instead of wrapping,
 * so a value past the limit is seen and refused, never a wrapped one.
 * Totals of such values, as the simulator's memory per device, saturate
 * the same way: one held at INT64_MAX is more than any limit.
 */
#ifndef AUTOPAR_CHECKED_H
#define AUTOPAR_CHECKED_H

#include <stdint.h>

#define AP_MAX_COUNT (INT64_C(1) << 40)
#define AP_MAX_BYTES (INT64_C(1) << 62)
#define AP_MAX_WORK (INT64_C(1) << 60)

/* a * b and a + b of non-negative a and b, INT64_MAX where they overflow */
static inline int64_t sat_mul(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

static inline int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/* a - b of non-negative a and b, 0 where it would be negative: what a
 * running total that saturated (and so holds less than it should) frees. */
static inline int64_t sat_sub(int64_t a, int64_t b)
{
	return a > b ? a - b : 0;
}

/* The product of n non-negative factors, saturating. */
static inline int64_t sat_prod(const int64_t *v, int n)
{
	int64_t r = 1;

	for (int i = 0; i < n; i++)
		r = sat_mul(r, v[i]);
	return r;
}

/* The sum of n non-negative terms, saturating. */
static inline int64_t sat_sum(const int64_t *v, int n)
{
	int64_t r = 0;

	for (int i = 0; i < n; i++)
		r = sat_add(r, v[i]);
	return r;
}

/* A non-negative double as an int64_t, INT64_MAX from 2^63 on (and for
 * NaN): converting a larger double is undefined behaviour. */
static inline int64_t sat_of_double(double x)
{
	return !(x < 9223372036854775808.0) ? INT64_MAX : x > 0 ? (int64_t)x : 0;
}

#define SAT_PROD(...) \
	sat_prod((const int64_t[]){ __VA_ARGS__ }, \
		 (int)(sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))

#define SAT_SUM(...) \
	sat_sum((const int64_t[]){ __VA_ARGS__ }, \
		(int)(sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))

#endif
