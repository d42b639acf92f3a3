/*
 * Inside the CPU backend: the kernel tables each cpu_*.c file fills and
 * the helpers they share.  Not an interface: only runtime/cpu_*.c and
 * backend_cpu.c include it.
 */
#ifndef AUTOPAR_CPU_KERN_H
#define AUTOPAR_CPU_KERN_H

#include "backend.h"

/* cpu_dense.c */
extern const struct kernel_ops cpu_linear, cpu_matmul, cpu_embedding;
/* cpu_conv.c */
extern const struct kernel_ops cpu_conv2d, cpu_maxpool, cpu_avgpool, cpu_adaptive_avgpool;
/* cpu_elem.c */
extern const struct kernel_ops cpu_relu, cpu_gelu, cpu_tanh, cpu_sigmoid, cpu_add,
	cpu_mul, cpu_concat, cpu_identity, cpu_dropout;
/* cpu_norm.c */
extern const struct kernel_ops cpu_layernorm, cpu_softmax, cpu_loss;
/* cpu_attn.c */
extern const struct kernel_ops cpu_attention;

/* Row-major single-precision GEMM through OpenBLAS (backend_cpu.c). */
void cpu_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
	      const float *a, int lda, const float *b, int ldb, float beta,
	      float *c, int ldc);

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
