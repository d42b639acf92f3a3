/*
 * The GEMM dimensions of the dense operators' shards, shared by the CPU
 * (cpu_dense.c) and CUDA (cuda_dense.cu) kernels so both read a shard's
 * local shapes the same way.  Not an interface: only the kernel files
 * include it.
 */
#ifndef AUTOPAR_KERN_DIMS_H
#define AUTOPAR_KERN_DIMS_H

#include "backend.h"

/* linear: x (.., cin) -> y (.., cout); the features are the last dim. */
static inline void linear_dims(const struct kern *k, int *rows, int *cin, int *cout)
{
	const struct shape *x = &k->in[0];

	*cin = (int)x->size[x->rank - 1];
	*cout = (int)k->out.size[k->out.rank - 1];
	*rows = (int)(shape_elems(x) / *cin);
}

/* matmul: a (B.., M, K) x b (B.., K, N) -> (B.., M, N), or with trans_b
 * b (B.., N, K). */
struct mm {
	int batch, m, n, kk;
};

static inline struct mm mm_dims(const struct kern *k)
{
	const struct shape *a = &k->in[0];
	struct mm d;

	d.m = (int)a->size[a->rank - 2];
	d.kk = (int)a->size[a->rank - 1];
	d.n = (int)k->out.size[k->out.rank - 1];
	d.batch = (int)(shape_elems(&k->out) / ((int64_t)d.m * d.n));
	return d;
}

#endif
