/*
 * Inside the CPU backend: the kernel tables each cpu_*.c file fills and
 * the helpers they share.  Not an interface: only runtime/cpu_*.c,
 * backend_cpu.c and the test of those kernels include it.
 */
#ifndef AUTOPAR_CPU_KERN_H
#define AUTOPAR_CPU_KERN_H

#include "backend.h"

#include <math.h>
#include <string.h>

/* cpu_dense.c */
extern const struct kernel_ops cpu_linear, cpu_matmul, cpu_embedding;
/* cpu_conv.c */
extern const struct kernel_ops cpu_conv2d, cpu_maxpool, cpu_avgpool, cpu_adaptive_avgpool;
/* cpu_elem.c */
extern const struct kernel_ops cpu_relu, cpu_gelu, cpu_tanh, cpu_sigmoid, cpu_add,
	cpu_mul, cpu_concat, cpu_identity, cpu_dropout;
/* cpu_norm.c */
extern const struct kernel_ops cpu_layernorm, cpu_softmax, cpu_loss;
/* cpu_batchnorm.c */
extern const struct kernel_ops cpu_batchnorm;
/* cpu_attn.c */
extern const struct kernel_ops cpu_attention;

/* Row-major single-precision GEMM through OpenBLAS (backend_cpu.c). */
void cpu_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
	      const float *a, int lda, const float *b, int ldb, float beta,
	      float *c, int ldc);

/* v where cond holds, else +0, through a bit mask rather than a branch:
 * the compiler keeps `cond ? v : 0` a branch for floats (it is not a
 * max or min for every NaN and signed zero), and a branch in a loop body
 * keeps the loop from being vectorised. */
static inline float cpu_keep_if(float v, int cond)
{
	uint32_t u;

	memcpy(&u, &v, sizeof u);
	u &= -(uint32_t)cond;
	memcpy(&v, &u, sizeof v);
	return v;
}

/* cond ? a : b, the same way */
static inline float cpu_select(float a, float b, int cond)
{
	uint32_t ua, ub, m = -(uint32_t)cond;

	memcpy(&ua, &a, sizeof ua);
	memcpy(&ub, &b, sizeof ub);
	ua = (ua & m) | (ub & ~m);
	memcpy(&a, &ua, sizeof a);
	return a;
}

/* exp(x) in float for x <= 0 (softmax's shifted logits), branch-free so
 * that the loops calling it vectorise: Cephes' expf, x = n ln2 + r with ln2
 * in two parts, a degree-6 polynomial for exp(r) on [-ln2/2, ln2/2] and
 * 2^n written into the exponent bits.  n comes from rounding by adding
 * 1.5 x 2^23, whose low mantissa bits then hold n: no float-to-int
 * conversion.  Within 1 ulp of the rounded exp(x) down to -87.33 (the
 * smallest normal float); 0 below it; NaN stays NaN. */
static inline float cpu_expf(float x)
{
	const float magic = 12582912.0f;
	float t = x * 1.44269504088896341f + magic, n = t - magic, r, p, s;
	uint32_t u;

	r = x - n * 0.693359375f;
	r = r - n * -2.12194440e-4f;
	p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * (r * r) + r + 1.0f;
	memcpy(&u, &t, sizeof u);
	u = (u - 0x4B400000u + 127u) << 23;
	memcpy(&s, &u, sizeof s);
	return cpu_keep_if(p * s, !(x < -87.33f));
}

/* 1 + erf(x) in float, branch-free for the same reason (GELU's loops),
 * with a small relative error also where it is tiny (x << 0): erfc(|x|)
 * by Numerical Recipes' Chebyshev fit (erfcc, fractional error below
 * 1.2e-7), then erfc(-x) for x < 0 and 2 - erfc(x) otherwise; within
 * 2e-6 of 1 + erf relatively down to 1e-30, where libm's erff is a call
 * with branches. */
static inline float cpu_erf1p(float x)
{
	float z = fabsf(x), t = 1.0f / (1.0f + 0.5f * z), p, c;

	p = 0.17087277f;
	p = p * t - 0.82215223f;
	p = p * t + 1.48851587f;
	p = p * t - 1.13520398f;
	p = p * t + 0.27886807f;
	p = p * t - 0.18628806f;
	p = p * t + 0.09678418f;
	p = p * t + 0.37409196f;
	p = p * t + 1.00002368f;
	p = p * t - 1.26551223f;
	c = t * cpu_expf(p - z * z);
	return cpu_select(c, 2.0f - c, x < 0.0f);
}

/* cpu_norm.c: the largest of x[0..n) (n > 0); y[t] = cpu_expf(x[t] - mx)
 * for t < n, returning their sum in double.  Both run in blocks of
 * CPU_LANES independent lanes, which the kernels' -O3 vectorises. */
#define CPU_LANES 8
float cpu_max(const float *x, int64_t n);
double cpu_exp_sum(const float *x, float mx, float *y, int64_t n);

/* Elements of a local shape before, at and after dim index di: a tensor
 * seen as [outer][size][inner]. */
static inline void cpu_split_at(const struct shape *s, int di, int64_t *outer,
				int64_t *size, int64_t *inner)
{
	*outer = *inner = 1;
	for (int i = 0; i < di; i++)
		*outer *= s->size[i];
	for (int i = di + 1; i < s->rank; i++)
		*inner *= s->size[i];
	*size = s->size[di];
}

#endif
