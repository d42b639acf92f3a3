/*
 * Inside the CUDA backend: the kernel tables each cuda_*.cu file fills,
 * and the memory, GEMM and optimizer entry points backend_cuda.c puts
 * into the backend table.  A C header, so backend_cuda.c (C) and the
 * .cu files (CUDA C++) agree on one set of names.  Not an interface:
 * only runtime/cuda_*.cu and backend_cuda.c, inside libautopar-cuda.so,
 * include it.
 */
#ifndef AUTOPAR_CUDA_KERN_H
#define AUTOPAR_CUDA_KERN_H

#ifdef __cplusplus
extern "C" {
#endif

#include "backend.h"

/* cuda_conv.cu: cuDNN convolution and pooling, own adaptive pooling */
extern const struct kernel_ops cuda_conv2d, cuda_maxpool, cuda_avgpool, cuda_adaptive_avgpool;
/* cuda_dense.cu: cuBLAS GEMM and batched matmul, embedding */
extern const struct kernel_ops cuda_linear, cuda_matmul, cuda_embedding;
/* cuda_elem.cu */
extern const struct kernel_ops cuda_relu, cuda_gelu, cuda_tanh, cuda_sigmoid, cuda_add,
	cuda_mul, cuda_concat, cuda_identity, cuda_dropout;
/* cuda_norm.cu */
extern const struct kernel_ops cuda_layernorm, cuda_softmax, cuda_loss, cuda_batchnorm;
/* cuda_attn.cu */
extern const struct kernel_ops cuda_attention;

/* cuda_dense.cu: row-major GEMM on the device, as backend.h's gemm */
void cuda_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
	       const float *a, int lda, const float *b, int ldb, float beta, float *c,
	       int ldc);

/* cuda_mem.cu: the device, its stream and library handles, memory */
int cuda_init(void);
const char *cuda_describe(void);
/* as gpu.h's gpu_properties */
int cuda_properties(int dev, char *name, size_t len, long long *mem_bytes);
void *cuda_alloc(size_t bytes);
void cuda_release(void *p);
int cuda_upload(void *dst, const void *host, size_t bytes);
int cuda_download(void *host, const void *src, size_t bytes);
int cuda_copy(float *dst, const float *src, int64_t n);
int cuda_fill(float *p, int64_t n, float v);
int cuda_region_copy(const struct shape *s, const struct region *o, float *dst,
		     const struct region *dr, const float *src, const struct region *sr,
		     int accumulate);
int cuda_sync(void);
void cuda_evict(void);
int cuda_timer_start(void);
int cuda_timer_stop(double *us);
void cuda_sgd(float *w, float *v, const float *g, int64_t n, float lr, float mu);
void cuda_adam(float *w, float *m, float *v, const float *g, int64_t n,
	       const struct adam_step *a);
void cuda_predict(float *out, const float *w, const float *v, int64_t n, float step);

#ifdef __cplusplus
}
#endif

#endif
