/*
 * The CPU backend: plain C kernels (cpu_*.c) with GEMM through OpenBLAS,
 * filled into the backend table of backend.h.  One rank is one CPU
 * "device", so OpenBLAS runs single-threaded: ranks, not BLAS threads,
 * are the parallelism the plan describes.
 */
#include "cpu_kern.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cpu_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
	      const float *a, int lda, const float *b, int ldb, float beta,
	      float *c, int ldc)
{
	if (m <= 0 || n <= 0)
		return;
	if (k <= 0) {
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++)
				c[(int64_t)i * ldc + j] *= beta;
		return;
	}
	cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
		    trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
		    beta, c, ldc);
}

/* restrict: the three streams never overlap, so the loop vectorises */
static void cpu_sgd(float *restrict w, float *restrict v, const float *restrict g,
		    int64_t n, float lr, float mu)
{
	for (int64_t i = 0; i < n; i++) {
		v[i] = mu * v[i] + g[i];
		w[i] -= lr * v[i];
	}
}

static void cpu_adam(float *restrict w, float *restrict m, float *restrict v,
		     const float *restrict g, int64_t n, const struct adam_step *a)
{
	for (int64_t i = 0; i < n; i++) {
		m[i] = a->b1 * m[i] + (1.0f - a->b1) * g[i];
		v[i] = a->b2 * v[i] + (1.0f - a->b2) * g[i] * g[i];
		w[i] -= a->lr * (m[i] / a->c1) / (sqrtf(v[i] / a->c2) + a->eps);
	}
}

static void cpu_predict(float *out, const float *w, const float *v, int64_t n, float step)
{
	for (int64_t i = 0; i < n; i++)
		out[i] = w[i] - step * v[i];
}

static void *cpu_alloc(size_t bytes)
{
	return calloc(bytes ? bytes : 1, 1);
}

static int cpu_move(void *dst, const void *src, size_t bytes)
{
	memcpy(dst, src, bytes);
	return 0;
}

static int cpu_copy(float *dst, const float *src, int64_t n)
{
	memcpy(dst, src, (size_t)n * sizeof *dst);
	return 0;
}

static int cpu_fill(float *p, int64_t n, float v)
{
	for (int64_t i = 0; i < n; i++)
		p[i] = v;
	return 0;
}

static int cpu_region_copy(const struct shape *s, const struct region *o, float *dst,
			   const struct region *dr, const float *src, const struct region *sr,
			   int accumulate)
{
	region_copy(s, o, dst, dr, src, sr, accumulate);
	return 0;
}

static int cpu_sync(void)
{
	return 0;
}

static int cpu_init(void)
{
	openblas_set_num_threads(1);
	return 0;
}

/* Writes over a buffer of four times the core's L2 (at least 8 MiB), so
 * that the data of the next kernel comes from memory as it does in a
 * training step, where other operators' data passed through the caches
 * in between.  Without the buffer (out of memory) it does nothing. */
static void cpu_evict(void)
{
	static volatile char *buf;
	static size_t n;

	if (!buf) {
		long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);

		n = l2 > (2L << 20) ? 4 * (size_t)l2 : (size_t)8 << 20;
		buf = calloc(n, 1);
		if (!buf)
			return;
	}
	for (size_t i = 0; i < n; i += 64)
		buf[i]++;
}

static const char *cpu_describe(void)
{
	static char d[160];

	snprintf(d, sizeof d, "%s, one thread per rank", openblas_get_config());
	return d;
}

const struct backend backend_cpu = {
	.name = "cpu",
	.window_splits = 1,
	.two_threads = 1,
	.tensor_parallel = 1,
	.ops = {
		[OP_CONV2D] = &cpu_conv2d,
		[OP_MAXPOOL] = &cpu_maxpool,
		[OP_AVGPOOL] = &cpu_avgpool,
		[OP_ADAPTIVE_AVGPOOL] = &cpu_adaptive_avgpool,
		[OP_LINEAR] = &cpu_linear,
		[OP_MATMUL] = &cpu_matmul,
		[OP_RELU] = &cpu_relu,
		[OP_GELU] = &cpu_gelu,
		[OP_TANH] = &cpu_tanh,
		[OP_SIGMOID] = &cpu_sigmoid,
		[OP_ADD] = &cpu_add,
		[OP_MUL] = &cpu_mul,
		[OP_CONCAT] = &cpu_concat,
		[OP_BATCHNORM] = &cpu_batchnorm,
		[OP_LAYERNORM] = &cpu_layernorm,
		[OP_DROPOUT] = &cpu_dropout,
		[OP_EMBEDDING] = &cpu_embedding,
		[OP_ATTENTION] = &cpu_attention,
		[OP_SOFTMAX] = &cpu_softmax,
		[OP_LOSS] = &cpu_loss,
		[OP_FLATTEN] = &cpu_identity,
		[OP_RESHAPE] = &cpu_identity,
	},
	.gemm = cpu_gemm,
	.sgd = cpu_sgd,
	.adam = cpu_adam,
	.predict = cpu_predict,
	.alloc = cpu_alloc,
	.release = free,
	.upload = cpu_move,
	.download = cpu_move,
	.copy = cpu_copy,
	.fill = cpu_fill,
	.region_copy = cpu_region_copy,
	.sync = cpu_sync,
	.evict = cpu_evict,
	.init = cpu_init,
	.describe = cpu_describe,
};

const struct backend *backend_find(const char *name)
{
	static const struct backend *const all[] = { &backend_cpu, &backend_cuda };

	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (strcmp(all[i]->name, name) == 0)
			return all[i];
	return NULL;
}
