/*
 * The backend table of the runtime (docs/runtime.md#backends): everything that
 * touches a device's memory and arithmetic, as function pointers, so the
 * executor (exec.c) runs the same task list on any backend.  A backend
 * fills one `struct backend`: an entry per operator kind (forward,
 * backward, workspace size; NULL where the kind is not implemented), GEMM,
 * the optimizer step and memory management.  The CPU backend is
 * backend_cpu.c with kernels in cpu_*.c; a CUDA backend fills the same
 * table from its own files.
 *
 * A kernel runs one shard of one operator for one micro-batch.  It sees
 * the shard's local shapes only (struct kern): the regions of its inputs
 * that the executor gathered and the region of the output it owns, and the
 * shard's slice of the parameters (parameters are indexed by the output
 * channel, so a c-split shard holds rows c_lo..c_lo+out_c-1).  Every
 * tensor is float32 in its shape's memory order; token ids and labels are
 * stored as floats (exact below 2^24).
 */
#ifndef AUTOPAR_BACKEND_H
#define AUTOPAR_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "model/graph.h"
#include "model/tensor.h"
#include "region.h"

#define KERN_MAX_IN 8

/* One operator shard, fixed for a run. */
struct kern {
	const struct op *op;
	int op_index;
	int nin;
	struct shape in[KERN_MAX_IN]; /* local input regions */
	struct shape out;             /* local output region */
	int64_t c_lo;                 /* first output channel of the shard */
	int64_t nparams;              /* floats of the shard's parameters */
	/* Where the local output sits in the whole batch's output: element
	 * (i0, i1, ..) is element (glo[0] + i0, glo[1] + i1, ..) of a tensor
	 * of sizes gsize[] (dims in the output's memory order; glo[0] adds the
	 * micro-batch's first sample).  Dropout hashes the global position, so
	 * its mask does not depend on how the op is split. */
	int64_t glo[MAX_RANK], gsize[MAX_RANK];
	/* The same for each local input region: in[k] element (i0, ..) is
	 * element (ilo[k][0] + i0, ..) of that whole input, of sizes
	 * igsize[k][] (ilo[k][0] within the micro-batch).  A window op
	 * (conv2d, pools) split along h or w gets the rows and columns its
	 * windows read (a halo around its share) and pads with zeros only
	 * where a window leaves the whole input; attention split along l
	 * computes the queries of its output rows (glo) from the whole keys
	 * and values. */
	int64_t ilo[KERN_MAX_IN][MAX_RANK], igsize[KERN_MAX_IN][MAX_RANK];
	/* Batchnorm normalises over the samples of one shard of one
	 * micro-batch, as a replica of data parallelism does.  When stat_mb
	 * is 0 those are all the samples of the call; in --check's one-device
	 * reference they are the groups of the plan checked: its micro-batches
	 * of stat_mb samples, each cut stat_deg ways along n (as the plan's
	 * shards are cut), which splits the call's samples. */
	int64_t stat_mb;
	int stat_deg;
	/* Megatron's tensor parallelism (model/tensor.h): the shard's role
	 * among the tp ranks of its tensor group and its rank trank there
	 * (TP_NONE, tp 0 or 1: none).  Column, split and the loss's logits
	 * come as local shapes; what a role changes inside the kernel is in
	 * kern_dims.h (tp_part()): a row-parallel linear holds the columns of
	 * its weight for its input features and adds the bias on tensor rank
	 * 0 alone, so that the group's sum has it once; the vocabulary-
	 * parallel embedding holds its part of the table's rows and writes
	 * zeros for the ids outside it; attention split by heads holds their
	 * q, k and v rows and the columns of the output projection for them,
	 * and writes its partial sum (the bias on tensor rank 0); the
	 * parallel cross-entropy sums its statistics over the group through
	 * kbufs.csum.  The partial sums are the executor's to all-reduce. */
	enum tp_role role;
	int tp, trank;
};

/* The buffers of one call.  Backward: din[k] (NULL when input k needs no
 * gradient) is overwritten, dw is accumulated into (micro-batches add up).
 * A kernel whose kernel_ops has weight_pass splits its backward as
 * zero bubble's schedule asks (Qi et al., ICLR 2024): with dw NULL it
 * computes the input gradients alone (the B pass), with every din NULL
 * the weight gradient alone (the W pass). */
struct kbufs {
	const float *in[KERN_MAX_IN];
	float *din[KERN_MAX_IN];
	const float *w;
	float *dw;
	float *out;
	const float *dout;
	float *ws;              /* ws_floats() floats, kept from fwd to bwd */
	const float *labels;    /* loss: class per output element */
	uint64_t salt;          /* dropout: differs per step */
	int64_t n0;             /* the micro-batch's first sample in the batch */
	/* Sums buf[0..n) in place over the shards of this op that differ from
	 * this one only in their c coordinate, blocking; each of them calls it
	 * at the same point of the same task.  NULL when the op is not split
	 * along c (a c-split attention's shards exchange their heads' context
	 * through it; see cpu_attn.c).  Returns 0 on success. */
	int (*csum)(void *ctx, float *buf, int64_t n);
	void *csum_ctx;
};

struct kernel_ops {
	int (*fwd)(const struct kern *k, struct kbufs *b);
	int (*bwd)(const struct kern *k, struct kbufs *b);
	/* workspace floats kept per micro-batch; NULL: none */
	int64_t (*ws_floats)(const struct kern *k);
	/* bwd runs the B and W passes apart (struct kbufs) */
	int weight_pass;
};

/* One step of Adam (Kingma and Ba, ICLR 2015) as PyTorch's, without
 * weight decay: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
 * w -= lr (m / c1) / (sqrt(v / c2) + eps), where c1 = 1 - b1^t and
 * c2 = 1 - b2^t at the t-th update. */
struct adam_step {
	float lr, b1, b2, eps, c1, c2;
};

struct backend {
	const char *name;
	const struct kernel_ops *ops[NOP_KINDS];
	/* C[m x n] = alpha op(A) op(B) + beta C, row-major */
	void (*gemm)(int trans_a, int trans_b, int m, int n, int k, float alpha,
		     const float *a, int lda, const float *b, int ldb, float beta,
		     float *c, int ldc);
	/* SGD with momentum, as PyTorch: v = mu v + g; w -= lr v */
	void (*sgd)(float *w, float *v, const float *g, int64_t n, float lr, float mu);
	/* Adam (struct adam_step) on n weights with their moments m and v */
	void (*adam)(float *w, float *m, float *v, const float *g, int64_t n,
		     const struct adam_step *a);
	/* Weight prediction: out = w - step v, with step = lr x the updates
	 * still to come and v the momentum sgd keeps: where k more updates
	 * take w while v stays as it is (async-predict, exec.h). */
	void (*predict)(float *out, const float *w, const float *v, int64_t n, float step);
	/* whether its conv2d and pool kernels run shards split along h or w,
	 * reading the halo that kern.ilo/igsize describe (else such plans are
	 * refused before launch) */
	int window_splits;
	/* whether two threads may run its kernels at once (async-predict's
	 * paired forward and backward, exec.c run_pair) */
	int two_threads;
	/* whether its kernels run the tensor-parallel roles of struct kern
	 * (else such plans are refused before launch) */
	int tensor_parallel;
	void *(*alloc)(size_t bytes);   /* zeroed */
	void (*release)(void *p);
	/* The data the executor moves itself (gathers, gradient sums, loss
	 * seeds and readouts, stashes, initial values) through the backend:
	 * the CPU backend's memory is the host's, a device backend's is
	 * not.  Each returns 0, or an error it has reported. */
	int (*upload)(void *dst, const void *host, size_t bytes);
	int (*download)(void *host, const void *src, size_t bytes);
	int (*copy)(float *dst, const float *src, int64_t n);
	int (*fill)(float *p, int64_t n, float v);
	/* region.h's region_copy between two buffers of this backend */
	int (*region_copy)(const struct shape *s, const struct region *o, float *dst,
			   const struct region *dr, const float *src,
			   const struct region *sr, int accumulate);
	/* waits until everything queued has run (timings, host reads) */
	int (*sync)(void);
	/* evicts the caches the kernels use, so that a kernel the profiler
	 * times next starts cold, as it does inside a training step; NULL:
	 * timings run warm */
	void (*evict)(void);
	/* The device's own clock for the profiler (NULL: the host's, read
	 * after sync): timer_start marks the point in the queue where a
	 * timing starts, timer_stop marks its end, waits for it and gives
	 * the microseconds the device took between both marks.  Each
	 * returns 0, or an error it has reported. */
	int (*timer_start)(void);
	int (*timer_stop)(double *us);
	/* readies the backend in this process (called by every rank) */
	int (*init)(void);
	/* a short description of what the backend runs on, for messages */
	const char *(*describe)(void);
};

extern const struct backend backend_cpu;
/* CUDA: cuDNN, cuBLAS and own kernels (cuda_*.cu) in libautopar-cuda.so.
 * Until its init() loads that object (cuda_entry.c) it holds only name,
 * init and describe; init then fills it with the object's table, or
 * says why it cannot ("not built with CUDA", the object missing). */
extern struct backend backend_cuda;

/* The backend named name ("cpu", "cuda"), or NULL. */
const struct backend *backend_find(const char *name);

#endif
