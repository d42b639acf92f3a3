/*
 * FNV-1a, 64 bit: the hash of the hash indexes (profile rows, bench
 * results) and the digest a plan keeps of the model file it was made
 * from (docs/formats.md, "Plan").  Not cryptographic: it tells files
 * apart, it does not authenticate them.
 */
#ifndef AUTOPAR_DIGEST_H
#define AUTOPAR_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A64_INIT 1469598103934665603ull

static inline uint64_t fnv1a64(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static inline uint64_t fnv1a64_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

#endif
