/*
 * The model graph: a DAG of operators, each producing one tensor.  Every
 * tensor dimension has a kind (n sample, c channel/feature, h/w spatial,
 * l sequence); the first dimension of every tensor is n.  Operators carry
 * the accounting every planner and the simulator read: output shape,
 * forward/backward multiply-accumulates, parameters, output bytes, and which
 * output dims may be split (FlexFlow's SOAP dimensions).
 *
 * Operators are stored in topological order: an operator's inputs always
 * have smaller indices.  The per-kind rules live in ops.c.
 */
#ifndef AUTOPAR_GRAPH_H
#define AUTOPAR_GRAPH_H

#include <stdint.h>
#include <stdio.h>

struct piper_inst;

enum dim_kind { DIM_N, DIM_C, DIM_H, DIM_W, DIM_L, NDIMS };

#define MAX_RANK 5
#define NAME_LEN 64
#define BYTES_PER_ELEM 4 /* float32 activations, weights and gradients */

/* A shape lists its dims in memory order; kind[0] is always DIM_N and no
 * kind appears twice. */
struct shape {
	int rank;
	enum dim_kind kind[MAX_RANK];
	int64_t size[MAX_RANK];
};

enum op_kind {
	OP_INPUT,
	OP_CONV2D,
	OP_MAXPOOL,
	OP_AVGPOOL,
	OP_ADAPTIVE_AVGPOOL, /* out=1 is global average pooling */
	OP_LINEAR,
	OP_MATMUL, /* batched: (n, .., M, K) x (n, .., K, N) */
	OP_RELU,
	OP_GELU,
	OP_TANH,
	OP_SIGMOID,
	OP_ADD,
	OP_MUL,
	OP_CONCAT,
	OP_SPLIT, /* one part of an equal split along a dim */
	OP_BATCHNORM,
	OP_LAYERNORM,
	OP_DROPOUT,
	OP_EMBEDDING,
	OP_LSTM, /* one whole layer over the sequence */
	OP_ATTENTION, /* multi-head attention with q/k/v/out projections */
	OP_SOFTMAX,
	OP_LOSS, /* softmax cross-entropy over the last dim */
	OP_FLATTEN,
	OP_RESHAPE,
	OP_TRANSPOSE,
	OP_OPAQUE, /* imported layer: only its measured numbers are known */
	NOP_KINDS
};

/* Attributes of all kinds in one struct; each kind reads its own.  The
 * model format's key=value names are given next to each field. */
struct op_attrs {
	int64_t out;          /* out=: output channels/features/hidden size */
	int kh, kw;           /* k=3 or k=1x7 */
	int sh, sw;           /* stride= (default 1, pools default to k) */
	int ph, pw;           /* pad= */
	int groups;           /* groups= (conv2d) */
	int bias;             /* bias=0|1 (default 1) */
	int ceil_mode;        /* ceil=0|1 (pools) */
	int64_t out_h, out_w; /* out= for adaptive_avgpool (out=6 or out=6x6) */
	int64_t vocab;        /* vocab= (embedding) */
	int heads;            /* heads= (attention) */
	int causal;           /* causal=0|1 (attention) */
	int bidir;            /* bidir=0|1 (lstm) */
	enum dim_kind axis;   /* dim= (concat, split, softmax) */
	int parts, index;     /* parts=, index= (split) */
	double p;             /* p= (dropout) */
	int trans_b;          /* trans_b=0|1 (matmul) */
	int tie;              /* tie=OPNAME: shares that op's weight (-1 none) */
	struct shape target;  /* input shape; reshape target (n implicit) */
	int perm[MAX_RANK];   /* transpose: output dim i is input dim perm[i] */
};

/* Numbers measured by someone else (an imported PipeDream graph.txt) that
 * override the analytic accounting for that operator. */
struct op_measured {
	int valid;
	double fwd_us, bwd_us;     /* for the graph's batch */
	int64_t act_bytes;         /* output activation bytes, whole batch */
	int64_t param_bytes;
};

struct op {
	char name[NAME_LEN];
	enum op_kind kind;
	int nin;
	int *in;              /* indices of the input operators */
	struct op_attrs a;
	char *desc;           /* free text: imported layer repr, or NULL */
	int line;             /* source line, for messages */
	int block, iter;      /* repeat block id and iteration, -1 if none */
	int imported;         /* shape given (a.target), costs from m only */
	struct op_measured m;

	/* Derived by graph_finalize(). */
	struct shape out;
	int64_t params;       /* trainable parameters owned (0 when tied) */
	int64_t fwd_macs;     /* multiply-accumulates, whole batch */
	int64_t bwd_macs;
	int64_t fwd_elems;    /* element-wise work: elements touched, forward */
	int64_t out_bytes;
	unsigned split_mask;  /* bit d set: output dim kind d may be split */
};

struct graph {
	char name[NAME_LEN];
	char *path;           /* where it was read from, for messages */
	int64_t batch;
	int nops, cap;
	struct op *ops;
	/* graph_find()'s index: open addressing on the names, slot = op
	 * index + 1 (0 empty), nslots a power of two above 2 x nops */
	int *slots, nslots;
	int nblocks;          /* repeat blocks in the model file */
	/* A model read from a Piper input keeps that instance (owned), whose
	 * configurations the `piper` planner uses as given (piper_inst.h). */
	struct piper_inst *piper;
};

const char *dim_name(enum dim_kind d);
int dim_parse(const char *s, enum dim_kind *out);
const char *op_kind_name(enum op_kind k);
int op_kind_parse(const char *s, enum op_kind *out);
/* Whether kind k is element-wise: each output element from the same
 * element of its inputs, the output of their shape (relu, gelu, tanh,
 * sigmoid, dropout, add, mul), so it splits as its inputs do. */
int op_kind_elementwise(enum op_kind k);

void graph_init(struct graph *g);
void graph_release(struct graph *g);

/* Appends an operator (a copy of *op, which takes ownership of op->in and
 * op->desc) and returns its index, or -1 on allocation failure. */
int graph_add(struct graph *g, const struct op *op);
void op_init(struct op *op);
/* The index of the op named name (the last one, were two so named), or
 * -1; constant time, through the index graph_add() keeps. */
int graph_find(const struct graph *g, const char *name);

/* Computes shapes and accounting of every operator for g->batch.  Reports
 * the first inconsistency as "path:line: message" and returns AP_EINPUT. */
int graph_finalize(struct graph *g);
/* The same for ops [from, to), whose inputs are already finalised. */
int graph_finalize_range(struct graph *g, int from, int to);

/* Changes the batch size and recomputes; measured numbers are scaled
 * linearly with the batch. */
int graph_set_batch(struct graph *g, int64_t batch);

int64_t shape_elems(const struct shape *s);
int shape_dim(const struct shape *s, enum dim_kind d); /* index or -1 */
int64_t shape_size(const struct shape *s, enum dim_kind d); /* 1 if absent */
/* The size of dim d in one micro-batch of mb_n samples (n is mb_n). */
int64_t shape_extent(const struct shape *s, enum dim_kind d, int64_t mb_n);
void shape_format(const struct shape *s, char *buf, size_t len);

/* Whole-graph totals. */
struct graph_totals {
	int64_t params, fwd_macs, bwd_macs, act_bytes, param_bytes;
	double fwd_us, bwd_us; /* sums of measured times, when every op has them */
	int measured;
};
void graph_totals(const struct graph *g, struct graph_totals *t);

/* Consumers of every op, as CSR arrays (ofs has nops+1 entries). */
int graph_consumers(const struct graph *g, int **ofs, int **idx);

/* Whether input k of op shrinks along dim d when op's output is split
 * along d (1), or every shard needs that dim of the input whole (0). */
int op_input_follows(const struct op *op, int k, enum dim_kind d);

/* needs.c: what a shard reads of its inputs.  Whether the part of input
 * k a shard of op needs along dim d depends on the shard's place along d
 * (the dims that follow the split, a concat's axis) or is the whole
 * extent (a reduced dim; the sequence of a self-attention). */
int op_input_varies(const struct op *op, int k, enum dim_kind d);
/* The dim a concat joins its inputs along. */
enum dim_kind op_concat_axis(const struct op *op);
/* The part [*lo, *hi) along d of input k (extent sz in one micro-batch)
 * that the shard of op with coordinate i of deg along d, owning output
 * [olo, ohi) along d, reads: its own fraction of a dim that follows the
 * split; of a conv2d's or pool's h and w the rows and columns its windows
 * read (its share and a halo); of a concat's axis the input's part in its
 * share, [0, 0) when none; the whole extent where op_input_varies() is 0. */
void op_input_need(const struct graph *g, const struct op *op, int k, enum dim_kind d,
		   int i, int deg, int64_t olo, int64_t ohi, int64_t sz, int64_t *lo,
		   int64_t *hi);

/* A canonical signature of the shard of op `i` that runs when its output
 * dims are split by degree[] (indexed by enum dim_kind, 1 = not split):
 * kind, shard input and output shapes, and the attributes that change its
 * cost.  Profiles are keyed by it. */
int graph_op_signature(const struct graph *g, int i, const int degree[NDIMS],
		       char *buf, size_t len);

#endif
