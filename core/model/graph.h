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
	double dropout;       /* dropout= (attention: of its weights; 0 none) */
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

/* How the runtime starts a model's parameters (the model file's `init`
 * line, models/FORMAT.md; runtime/params.h). */
enum param_init {
	INIT_TORCH, /* PyTorch's defaults for each layer (no `init` line) */
	INIT_GPT2,  /* GPT-2's: N(0, std^2), the residual projections scaled */
	NPARAM_INITS
};

const char *param_init_name(enum param_init s);
/* The scheme named s, or -1. */
int param_init_parse(const char *s);

struct graph {
	char name[NAME_LEN];
	char *path;           /* where it was read from, for messages */
	int64_t batch;
	enum param_init init;
	double init_std;      /* gpt2's std= (0: GPT-2's own, 0.02) */
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

void graph_init(struct graph *g);
void graph_release(struct graph *g);

/* Appends an operator (a copy of *op, which takes ownership of op->in and
 * op->desc) and returns its index, or -1 on allocation failure. */
int graph_add(struct graph *g, const struct op *op);
void op_init(struct op *op);
/* The index of the op named name (the last one, were two so named), or
 * -1; constant time, through the index graph_add() keeps. */
int graph_find(const struct graph *g, const char *name);

/* *dst becomes a copy of src's operators, name, path, batch and init, owning
 * its own memory (a Piper instance is not copied); on failure *dst is
 * left empty and AP_EFAIL comes back. */
int graph_copy(struct graph *dst, const struct graph *src);

/* Changes the batch size and recomputes; measured numbers are scaled
 * linearly with the batch. */
int graph_set_batch(struct graph *g, int64_t batch);

int64_t shape_elems(const struct shape *s);
int shape_dim(const struct shape *s, enum dim_kind d); /* index or -1 */
int64_t shape_size(const struct shape *s, enum dim_kind d); /* 1 if absent */
/* The size of dim d in one micro-batch of mb_n samples (n is mb_n). */
int64_t shape_extent(const struct shape *s, enum dim_kind d, int64_t mb_n);
void shape_format(const struct shape *s, char *buf, size_t len);

/* The next shard coordinate in row-major order over n, c, h, w, l (l
 * fastest, the layout of plan.h) below lim[], starting again from first[]
 * (all zeros when NULL); 0 when it wraps around. */
static inline int shard_coord_next(int idx[NDIMS], const int *first, const int *lim)
{
	for (int d = NDIMS - 1; d >= 0; d--) {
		if (++idx[d] < lim[d])
			return 1;
		idx[d] = first ? first[d] : 0;
	}
	return 0;
}

/* Whole-graph totals. */
struct graph_totals {
	int64_t params, fwd_macs, bwd_macs, act_bytes, param_bytes;
	double fwd_us, bwd_us; /* sums of measured times, when every op has them */
	int measured;
};
/* Each op is within the limits of models/FORMAT.md, but a trillion
 * parameters at a batch of thousands pass 2^63 backward MACs in all: a
 * total is held at INT64_MAX then. */
void graph_totals(const struct graph *g, struct graph_totals *t);

/* Consumers of every op, as CSR arrays (ofs has nops+1 entries). */
int graph_consumers(const struct graph *g, int **ofs, int **idx);

#endif
