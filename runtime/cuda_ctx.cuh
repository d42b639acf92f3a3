/*
 * Shared by the CUDA backend's .cu files: the process's device context
 * (one compute stream that every kernel, cuBLAS and cuDNN call is queued
 * on, so the executor's order is the device's order), one error macro per
 * library (docs/conventions.md, rule 4: file:line and the library's message, then an
 * error status up) and launch helpers.
 */
#ifndef AUTOPAR_CUDA_CTX_CUH
#define AUTOPAR_CUDA_CTX_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

extern "C" {
#include "util/err.h"
#include "model/graph.h"
}
#include "cuda_kern.h"

struct cuda_ctx {
	int ready, device;
	cudaStream_t stream;
	cublasHandle_t blas;
	cudnnHandle_t dnn;
	void *ws;          /* cuDNN's workspace, grown up to ws_limit */
	size_t ws_bytes, ws_limit;
	int *flag;         /* device: set by a kernel that finds bad input */
	cudaEvent_t t0, t1; /* the profiler's timer (cuda_timer_start/stop) */
	void *evict;       /* what cuda_evict writes over, evict_bytes */
	size_t evict_bytes;
	int blas_precision; /* the precision cuBLAS's math mode is set for; -1: none */
	char what[320];
};

extern struct cuda_ctx cuda_ctx;

#define CUDA_CHECK(call)                                                       \
	do {                                                                   \
		cudaError_t e_ = (call);                                       \
		if (e_ != cudaSuccess)                                         \
			return ap_err(AP_EFAIL, __FILE__, __LINE__, "%s: %s",  \
				      #call, cudaGetErrorString(e_));          \
	} while (0)

#define CUBLAS_CHECK(call)                                                     \
	do {                                                                   \
		cublasStatus_t s_ = (call);                                    \
		if (s_ != CUBLAS_STATUS_SUCCESS)                               \
			return ap_err(AP_EFAIL, __FILE__, __LINE__, "%s: %s",  \
				      #call, cublasGetStatusString(s_));       \
	} while (0)

#define CUDNN_CHECK(call)                                                      \
	do {                                                                   \
		cudnnStatus_t s_ = (call);                                     \
		if (s_ != CUDNN_STATUS_SUCCESS)                                \
			return ap_err(AP_EFAIL, __FILE__, __LINE__, "%s: %s",  \
				      #call, cudnnGetErrorString(s_));         \
	} while (0)

/* after a kernel launch: a bad configuration shows here */
#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

#define CUDA_THREADS 256

/* blocks of CUDA_THREADS for n elements, capped: kernels loop with a
 * grid stride */
static inline unsigned cuda_blocks(int64_t n)
{
	int64_t b = (n + CUDA_THREADS - 1) / CUDA_THREADS;

	return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

#define GRID_STRIDE(i, n)                                                      \
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
	     i += (int64_t)gridDim.x * blockDim.x)

/* The workspace cuDNN may use, at least `bytes` (grown, never beyond the
 * limit), in *ws: NULL while no algorithm so far has needed one (an
 * algorithm that needs none gets that).  AP_EFAIL with a message when
 * `bytes` is more than the limit or cannot be allocated. */
int cuda_workspace(size_t bytes, void **ws);

/* Sets cuBLAS's math mode for the precision the command asks
 * (gpu_opts.h) where it is not set for it already: every product calls
 * it first. */
int cuda_blas_math(void);

/* cuda_dense.cu: row-major C[m x n] = alpha op(A) op(B) + beta C, `batch`
 * times at the given strides (batch 1: one product). */
int cuda_gemm_rm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
		 long long sa, const float *b, int ldb, long long sb, float beta, float *c,
		 int ldc, long long sc, int batch);
/* y[rows][cout] = x[rows][cin] W^T + bias (bias NULL: none), W[cout][cin];
 * and its gradients: dW += dy^T x, dbias += column sums of dy, dx = dy W
 * + dx_beta dx (dx NULL: none). */
int cuda_project(const float *x, int rows, int cin, int cout, const float *w,
		 const float *bias, float *y);
int cuda_project_bwd(const float *x, int rows, int cin, int cout, const float *w,
		     const float *dy, float *dw, float *dbias, float *dx, float dx_beta);
/* db[j] += the sum over rows of m[r][j] (m row-major rows x cols). */
int cuda_colsum_add(float *db, const float *m, int64_t rows, int64_t cols);

/* Clears the device error flag before a kernel that may set it; after
 * it, waits and reports `what` when the kernel found bad input. */
int cuda_flag_clear(void);
int cuda_flag_check(const char *what);

#endif
