/*
 * The GEMM dimensions of the dense operators' shards, and batchnorm's
 * groups, shared by the CPU (cpu_dense.c, cpu_attn.c, cpu_batchnorm.c)
 * and CUDA (cuda_dense.cu, cuda_attn.cu, cuda_norm.cu) kernels so both
 * read a shard's local shapes, parameters and workspace the same way.
 * Not an interface: only the kernel files include it.
 */
#ifndef AUTOPAR_KERN_DIMS_H
#define AUTOPAR_KERN_DIMS_H

#include "backend.h"

/* Tensor rank trank's part of s things split tp ways (struct kern's
 * tensor parallelism, model/tensor.h's tensor_part()). */
static inline void tp_part(const struct kern *k, int64_t s, int64_t *lo, int64_t *n)
{
	tensor_part(s, k->trank, k->tp, lo, n);
}

/* Whether the shard adds a bias its tensor group sums: a partial sum
 * has it from tensor rank 0 alone. */
static inline int tp_adds_bias(const struct kern *k)
{
	return k->op->a.bias && (!(k->role == TP_ROW || k->role == TP_HEADS) || k->trank == 0);
}

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

/* attention (cpu_attn.c has the semantics): a shard's sizes, where its
 * queries and keys sit in the whole sequence, and its workspace. */
struct attn {
	int64_t n, lq, lk, c, cn, c0, heads, hd;
	int64_t l0;   /* rows of input 0 per sample */
	int64_t qoff; /* the first query row in input 0 */
	int64_t qg;   /* the first query row in the whole sequence */
	int64_t kg;   /* the first key row in the whole sequence */
	/* offsets of the workspace parts, in floats: every sample's
	 * projections (cn channels), the whole context, the probabilities
	 * of the shard's heads and the context's gradient; then one
	 * sample's scratch for the backward: q, k and v gradients, and the
	 * score gradients of ds_heads heads */
	int64_t q, k, v, ctx, p, dctx, dq, dk, dv, ds, end;
};

/* ds_heads: 1 where the backward runs one head after another (CPU), 0
 * for all of the shard's heads at once (a GPU's batched products). */
static inline struct attn attn_dims(const struct kern *kn, int ds_heads)
{
	int kv = kn->nin > 1 ? 1 : 0;
	struct attn a;

	a.n = kn->in[0].size[0];
	a.l0 = kn->in[0].size[1];
	a.c = kn->in[0].size[2];
	a.lq = kn->out.size[1];
	a.cn = kn->out.size[2];
	a.c0 = kn->c_lo;
	/* split by heads, the output whole: the heads of its part of the
	 * channels */
	if (kn->role == TP_HEADS)
		tp_part(kn, a.c, &a.c0, &a.cn);
	a.lk = kn->in[kv].size[1];
	a.qg = kn->glo[1];
	a.qoff = a.qg - kn->ilo[0][1];
	a.kg = kn->ilo[kv][1];
	a.hd = a.c / kn->op->a.heads;
	a.heads = a.cn / a.hd;
	a.q = 0;
	a.k = a.q + a.n * a.lq * a.cn;
	a.v = a.k + a.n * a.lk * a.cn;
	a.ctx = a.v + a.n * a.lk * a.cn;
	a.p = a.ctx + a.n * a.lq * a.c;
	a.dctx = a.p + a.n * a.heads * a.lq * a.lk;
	a.dq = a.dctx + a.n * a.lq * a.c;
	a.dk = a.dq + a.lq * a.cn;
	a.dv = a.dk + a.lk * a.cn;
	a.ds = a.dv + a.lk * a.cn;
	a.end = a.ds + (ds_heads ? ds_heads : a.heads) * a.lq * a.lk;
	return a;
}

/* Where the shard's matrix `which` (0 q, 1 k, 2 v, 3 out: W[cn][c] each;
 * split by heads, the output projection is the columns of its heads,
 * W[c][cn], and its bias is whole) and its bias (-1: none) start in its
 * parameters (or their gradient). */
static inline int64_t attn_mat(const struct attn *a, int which)
{
	return which * a->cn * a->c;
}

static inline int64_t attn_bias(const struct kern *k, const struct attn *a, int which)
{
	return k->op->a.bias ? 4 * a->cn * a->c + which * a->cn : -1;
}

/* Sums the context (or its gradient) over the shards of a c-split: each
 * holds its heads' columns, zero elsewhere (backend.h kbufs.csum). */
static inline int attn_across_heads(const struct attn *a, struct kbufs *b, float *buf)
{
	if (a->cn == a->c || !b->csum)
		return 0;
	return b->csum(b->csum_ctx, buf, a->n * a->lq * a->c);
}

/* The causal mask: query row i of the shard (i < lq) sees the keys
 * j < attn_first_lim + i (of lk). */
static inline int64_t attn_first_lim(const struct kern *kn, const struct attn *a)
{
	return kn->op->a.causal ? a->qg + 1 - a->kg : a->lk;
}

/* batchnorm (cpu_batchnorm.c has the semantics): the shard's tensor as
 * [n][per][c][inner], per counting the dims between the samples and the
 * channels (l of an (n, l, c) tensor), inner those after; the workspace
 * keeps a mean and a 1/std per group and channel, at most a group per
 * sample. */
struct bn_dims {
	int64_t n, per, c, inner;
};

static inline struct bn_dims bn_dims(const struct kern *k)
{
	const struct shape *s = &k->out;
	struct bn_dims d = { shape_size(s, DIM_N), 1, shape_size(s, DIM_C), 1 };
	int di = shape_dim(s, DIM_C);

	for (int q = 1; q < di; q++)
		d.per *= s->size[q];
	for (int q = di + 1; q < s->rank; q++)
		d.inner *= s->size[q];
	return d;
}

static inline int64_t bn_ws_floats(const struct kern *k)
{
	struct bn_dims d = bn_dims(k);

	return 2 * d.n * d.c;
}

/* The end of the group of local sample i (the first local sample after i
 * that starts another group, or n) in a call whose micro-batch starts at
 * sample n0 of the batch: struct kern's stat_mb and stat_deg. */
static inline int64_t bn_group_end(const struct kern *k, int64_t n0, int64_t n, int64_t i)
{
	int64_t s0 = n0 + k->glo[0], s = s0 + i, mb = k->stat_mb, j, t, g, hi;

	if (mb <= 0)
		return n;
	j = s / mb;
	t = s - j * mb;
	/* the plan's shards of a micro-batch: [g mb / deg, (g + 1) mb / deg) */
	for (g = t * k->stat_deg / mb; (g + 1) * mb / k->stat_deg <= t; g++)
		;
	hi = j * mb + (g + 1) * mb / k->stat_deg - s0;
	return hi < n ? hi : n;
}

#endif
