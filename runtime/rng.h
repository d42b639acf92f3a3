/*
 * Counter-based random numbers for the runtime: a value is a hash of
 * where it is used (seed, operator, element), never a position in a
 * stream, so every rank draws the same numbers for the same element
 * whatever part of a tensor it holds and in whatever order it asks.
 */
#ifndef AUTOPAR_RNG_H
#define AUTOPAR_RNG_H

#include <stdint.h>

/* the CUDA kernels draw the very same numbers on the device */
#ifdef __CUDACC__
#define RNG_FN static inline __host__ __device__
#else
#define RNG_FN static inline
#endif

/* splitmix64's finaliser (Steele et al., OOPSLA 2014) */
RNG_FN uint64_t rng_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

RNG_FN uint64_t rng_key(uint64_t a, uint64_t b, uint64_t c)
{
	return rng_mix(a ^ rng_mix(b ^ rng_mix(c)));
}

/* uniform in [0, 1) */
RNG_FN double rng_unit(uint64_t key)
{
	return (double)(rng_mix(key) >> 11) * 0x1.0p-53;
}

#endif
