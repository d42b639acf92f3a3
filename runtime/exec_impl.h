/*
 * Inside the executor: what exec_layout.c derives from a plan for one rank
 * and exec.c runs.  Not an interface: only runtime/exec*.c include it.
 * The one function it declares is exec.c's exec_async_slice(); the other
 * files of the executor declare theirs in exec_layout.h, exec_groups.h,
 * exec_support.h, exec_order.h, exec_tensor.h and exec_update.h.
 *
 * Every rank builds the same list of transfers (all pieces of all inputs
 * that cross ranks, in one deterministic order), so a transfer's index is
 * its message tag on both sides: 2x forward, 2x + 1 its gradient.  As in
 * the simulator, consumers of one stage on one rank that need the same
 * piece of the same producer shard share one transfer: it is received
 * once, and their gradients are summed and sent back once, by the last of
 * them to run its backward.
 */
#ifndef AUTOPAR_EXEC_IMPL_H
#define AUTOPAR_EXEC_IMPL_H

#include "data.h"
#include "exec.h"
#include "region.h"
#include "trace.h"

/* A piece of an input that a consumer shard gathers.  A producer of
 * round-robin replicas (plan.h) hands micro-batch j over from its replica
 * j mod nrep: the consumer lists the pieces of every replica it takes
 * from, and gathers those of rep. */
struct src {
	int op, k, rank; /* the producer shard and where it runs */
	int rep, nrep;   /* its replica, of the stage's nrep */
	int xfer;        /* the transfer when rank differs, else -1 */
	struct region o; /* the piece: the overlap of produced and needed */
};

struct xfer {
	int prod_op, prod_k, prod_rank, cons_op, cons_rank, cons_stage;
	int no_grad;     /* the producer is an input: no gradient goes back */
	int cons_rep, cons_nrep; /* the consumer's replica: the transfer
				  * carries micro-batches j with
				  * j mod cons_nrep == cons_rep */
	struct region o;
	int nshare;      /* consumers sharing it */
	int nfwd, nbwd;  /* sharers done in the current item */
	float **sbuf;    /* staging: [2 nbuf], forward then backward */
	int *sreq;       /* the send of each staging buffer in flight, -1 none */
	float *rbuf;     /* the receiver's copy of the piece */
};

/* The shards of an op that differ only in their c coordinate, which a
 * kernel sums buffers over (kbufs.csum). */
struct cgroup {
	struct transport *t;
	int gid;                      /* -1: the op is not split along c here */
};

/* This rank's shard of an op. */
struct rshard {
	int op, k;
	int stage;                    /* index in p->stages */
	int rep, nrep;                /* its round-robin replica, of nrep:
				       * it runs micro-batches j with
				       * j mod nrep == rep */
	int round;                    /* asynchronous 1F1B: micro-batches
				       * whose gradients make one update (the
				       * stage's replicas), 1: each its own */
	int pending, red;             /* a round summed (all-reduce red, -1
				       * none), not applied yet: */
	int64_t apply_key;            /* applied before the first task of a
				       * key above this, its last backward's */
	int cidx;                     /* index along c: the replica group */
	int trank;                    /* its tensor rank (exec_tensor.c), 0
				       * without tensor parallelism */
	int tgid;                     /* its tensor group, -1 none */
	struct region reg;            /* output region, n within a micro-batch */
	struct kern kern;
	const struct kernel_ops *ko;
	struct region inreg[KERN_MAX_IN];
	int nsrc[KERN_MAX_IN];
	struct src *src[KERN_MAX_IN];
	int alias[KERN_MAX_IN];       /* input k is a local producer's output */
	int64_t nparams;              /* 0 when it uses another's weight */
	float *w, *dw;
	float *mom, *mom2;            /* the optimizer's state (exec_update.c):
				       * SGD's momentum, or Adam's first and
				       * second moments */
	int64_t nupdates;             /* updates applied (Adam's t) */
	int zparts, zidx;             /* ZeRO-1: the members of its replica
				       * group that share its optimizer state
				       * (0: none do), its part among them */
	int64_t zlen;                 /* floats of a part (w and dw hold
				       * zparts of them, the last padded) */
	float *gpart, *wpart;         /* ZeRO-1: its part of the summed
				       * gradient, and of the weights, which
				       * it updates */
	int tied;                     /* a tied linear: the shard (index in
				       * sh) whose weight and gradient it
				       * uses, else -1; on other ranks than
				       * its embedding (Megatron's embedding
				       * group) it holds a copy of its own,
				       * in the embedding's replica group */
	int wusers, wdone;            /* shards of this rank that add to dw,
				       * and those done with the step */
	float **stash;                /* [nbuf]: the weights a micro-batch runs with */
	float *pred;                  /* async-predict: the predicted weights */
	int gid;                      /* replica group, -1 alone */
	struct cgroup cg;             /* c-split attention: its heads' group */
	float **out, **dout, **ws;    /* [nbuf], by micro-batch slot */
	int recompute;                /* the plan's recompute: its forward
				       * runs again before its stage's
				       * backwards (exec.c) */
	int out_shared;               /* out[] is one buffer for every slot:
				       * it recomputes, and no other stage
				       * of this rank reads it */
	unsigned char *dfresh;        /* [nbuf]: dout holds no gradient yet, so
				       * the first contribution overwrites it */
	float **in;                   /* [nbuf * nin] gathered inputs */
	float *din[KERN_MAX_IN];      /* one micro-batch's input gradients */
	float **cache;                /* inputs and labels: [pool * m] */
	int *sends, nsends;           /* transfers of this shard's output */
};

struct exec {
	const struct graph *g;
	const struct plan *p;
	const struct backend *be;
	struct transport *t;
	struct exec_opts o;
	int m;
	int64_t mb_n;
	int async;                    /* a stream of micro-batches, an
				       * update after each (sched_async) */
	int nbuf;                     /* micro-batch slots: m, or for async
				       * enough for those in flight */
	int K;                        /* stage depths */
	int *depth;                   /* per stage index */
	int64_t step;                 /* the data of the task being run: */
	int mbj;                      /* step and micro-batch */
	double loss_acc;              /* loss forwards of the current step */
	int pred_k;                   /* async-predict: updates to predict */
	struct trace *trace;          /* records the tasks when set */
	int64_t npairs;               /* forward/backward pairs run on two
				       * threads (run_pair) */
	enum tp_role *role;           /* per op: its tensor-parallel role
				       * (exec_tensor.c), TP_NONE without */
	int wpass;                    /* zb-h1: backwards run as B and W
				       * passes (SCHED_B, SCHED_W items) */
	int *mine;                    /* per op: index in sh, or -1 */
	struct rshard *sh;
	int nsh;
	struct xfer *xf;
	int nxf, cap_xf;
	float *rbuf;                  /* receive staging of gradients */
	int64_t rbuf_n;
	struct sched_item *items;     /* synchronous: one step's order */
	int nitems;
	struct sched_item *slice;     /* async: the current step's slice */
	int cap_slice;
	int *stage_ops_ofs, *stage_ops; /* ops of each stage index, graph order */
	int *stage_of;                /* per op: its stage index */
	struct data data;
};

/* Whether e keeps a weight version per micro-batch (PipeDream's
 * stashing) or predicts the weights. */
static inline int exec_stashes(const struct exec *e)
{
	return e->p->sched == SCHED_1F1B_ASYNC && !e->o.naive;
}

static inline int exec_predicts(const struct exec *e)
{
	return e->p->sched == SCHED_ASYNC_PREDICT && !e->o.naive;
}

/* Round-robin replicas: whether shard s, piece x or transfer x has
 * micro-batch j of the step (its index among the step's m; under the
 * asynchronous schedules the replicas divide m, so the stream index gives
 * the same replica). */
static inline int exec_shard_runs(const struct rshard *s, int j)
{
	return j % s->nrep == s->rep;
}

static inline int exec_src_live(const struct src *x, int j)
{
	return j % x->nrep == x->rep;
}

static inline int exec_xfer_live(const struct xfer *x, int j)
{
	return j % x->cons_nrep == x->cons_rep;
}

/* The shard holding the weight that s runs with: s, or for a tied
 * linear the embedding's. */
static inline struct rshard *exec_weight_owner(struct exec *e, struct rshard *s)
{
	return s->tied >= 0 ? &e->sh[s->tied] : s;
}

/* n floats of the backend's memory, zeroed; NULL when out of memory */
static inline float *exec_alloc(const struct exec *e, int64_t n)
{
	return e->be->alloc((size_t)(n > 0 ? n : 1) * sizeof(float));
}

/* n floats of the backend's memory holding host[0 .. n) */
static inline float *exec_alloc_from(const struct exec *e, const float *host, int64_t n)
{
	float *p = exec_alloc(e, n);

	if (p && e->be->upload(p, host, (size_t)n * sizeof *host)) {
		e->be->release(p);
		return NULL;
	}
	return p;
}

/* exec.c: an asynchronous schedule's items of step `step` into e->slice,
 * in order; their number, or -1 (AP_EFAIL reported).  exec_order.c walks
 * the steps with it as exec_step() does. */
int exec_async_slice(struct exec *e, int64_t step);

#endif
