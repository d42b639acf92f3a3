/*
 * Vectorised memory access for the CUDA kernels of cuda_elem.cu and
 * cuda_norm.cu: four floats moved as one float4 (one 16-byte load or
 * store) where the addresses allow it, one at a time elsewhere.  A kernel
 * body is written once as a template over the width N (1 or 4), with
 * fvec<N> for its values, and runs at width 4 only where every pointer
 * it touches is 16-byte aligned at the elements it takes.
 */
#ifndef AUTOPAR_CUDA_VEC_CUH
#define AUTOPAR_CUDA_VEC_CUH

#include <stdint.h>

/* N consecutive floats */
template <int N> struct fvec {
	float v[N];
};

template <int N> static __device__ __forceinline__ fvec<N> ld(const float *p)
{
	fvec<N> a;

	if constexpr (N == 4) {
		float4 q = *reinterpret_cast<const float4 *>(p);

		a.v[0] = q.x, a.v[1] = q.y, a.v[2] = q.z, a.v[3] = q.w;
	} else {
		for (int j = 0; j < N; j++)
			a.v[j] = p[j];
	}
	return a;
}

template <int N> static __device__ __forceinline__ void st(float *p, const fvec<N> &a)
{
	if constexpr (N == 4)
		*reinterpret_cast<float4 *>(p) = make_float4(a.v[0], a.v[1], a.v[2], a.v[3]);
	else
		for (int j = 0; j < N; j++)
			p[j] = a.v[j];
}

/* The width of a step as a type, passed to a generic lambda so that one
 * body serves both widths (decltype(w)::n). */
struct one {
	static constexpr int n = 1;
};
struct four {
	static constexpr int n = 4;
};

static inline __host__ __device__ bool aligned16(const void *p)
{
	return ((uintptr_t)p & 15) == 0;
}

/* whether a and b sit at the same place within 16 bytes, so that the
 * same elements of both are float4-aligned */
static inline __host__ __device__ bool same_phase(const void *a, const void *b)
{
	return (((uintptr_t)a ^ (uintptr_t)b) & 15) == 0;
}

/* the floats of p before its first 16-byte boundary */
static inline __device__ int head_of(const float *p)
{
	return (int)((16 - ((uintptr_t)p & 15)) & 15) / 4;
}

#endif
