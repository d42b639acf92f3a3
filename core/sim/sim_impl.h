/*
 * Inside the simulator: the buffers a struct sim keeps between runs, and
 * the functions of sim.c (the driver and accounting) and sim_delta.c that
 * the other files call.  Each of those files declares its own in a header
 * beside it: sim_layout.h (what a plan makes of the graph: shard regions
 * and stage order), sim_transfers.h (the transfers between shards),
 * sim_comm.h (replica groups and their all-reduces), sim_sched.h (the
 * list scheduler), sim_ckpt.h (checkpoints).  Not an interface: nothing
 * outside core/sim/ includes these.
 *
 * Everything a run touches per task lives in flat arrays indexed by small
 * integers: a global shard index gs (op i's shards are shard_base[i] ..
 * shard_base[i+1]-1), a transfer index, a resource index.  Per-micro-batch
 * state is laid out [mb][index] so one operator's shards are adjacent.
 */
#ifndef AUTOPAR_SIM_IMPL_H
#define AUTOPAR_SIM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"
#include "plan/sched.h"
#include "sim/sim.h"
#include "sim/sim_map.h"

/* A source of a compute task: >= 0 a shard on the same device, < 0 the
 * transfer SRC_XFER(code). */
#define SRC_XFER(code) (-(code) - 1)

/* When a task ends, and the longest dependency chain ending with it. */
struct tend {
	double end, cp;
};

/* Cost of one shard of an op, cached across runs while its degree vector
 * (n already multiplied by the micro-batches) stays the same. */
struct sim_cost {
	int degree[NDIMS]; /* degree[0] == 0: not looked up yet */
	double fwd_s, bwd_s;
	int64_t workspace_bytes;
	enum cost_source source;
};

/* Costs of earlier configurations kept per op: a search comes back to
 * the same ones (a rejected proposal's op goes back at once, and a
 * search draws from a few dozen per op on 16 devices), and a lookup
 * formats the op's signature and hashes it. */
#define SIM_COST_WAYS 32

/* A transfer: per micro-batch, forward a copy of a region of a producer
 * shard's output from src to dst, backward its gradient from dst to src.
 * Consumers on dst of the same stage that need the same region share it,
 * as a runtime sends a tensor once and sums the gradients before sending
 * them back.  What the schedule reads of transfer x is xs[x], two to a
 * cache line; the rest, for layout, is xf[x]. */
struct sim_xsched {
	double dur_s;      /* latency + bytes / bandwidth */
	int prod;          /* global shard index of the producer */
	int cons;          /* the consumer shard that asked first: on dst,
			    * its backward is the last of the sharers' */
	int res[2], rres[2]; /* forward and backward resources, -1 unused */
};

struct sim_xfer {
	enum link_class cls;
	int64_t bytes;
	int src, dst;      /* devices, forward direction */
	int emit_op;       /* first consumer op: its backward sends the gradient */
	int stage;         /* the consumers' stage (a stage index) */
	int no_grad;       /* the producer is an input: no gradient to send */
	int64_t lo[NDIMS], hi[NDIMS]; /* the region, for sharing */
	int next_same;     /* next of the same producer shard and dst, -1 */
	int rper, rphase;  /* round-robin replicas: it carries micro-batch j
			    * when j % rper == rphase (1, 0 without) */
};

/* What consumer index i of a dim needs of its input, [a, b), and the
 * producer indices first..last-1 that can hold part of it. */
struct sim_span {
	int64_t a, b;
	int first, last;
};

/* One task of a gradient all-reduce; a group has one (a flat ring) or
 * three (reduce-scatter, inter-node ring, all-gather) of them, run back
 * to back.  The all-gather runs on the reduce-scatter's links once the
 * ring between them ends: the reduce-scatter need not mark them busy
 * until its end (the all-gather does, later), and the all-gather need
 * not wait for them. */
struct sim_coll {
	enum sim_task_kind kind;
	int res_ofs, nres;  /* resources in coll_res */
	int waits, frees;   /* whether it waits for them; sets their free time */
	double dur_s;
	int64_t bytes;      /* summed over the links of class cls it uses */
	enum link_class cls;
	int64_t xbytes;     /* and over the NICs, when cls is LINK_INTRA (a
			     * flat ring across nodes) */
};

/* The replicas of one parameter shard: the shards of an op with the same
 * c index, in every round-robin replica of its stage. */
struct sim_group {
	int op, cidx;
	int mem_ofs, nmem;   /* member shards (gs) in grp_mem */
	int coll_ofs, ncoll; /* its tasks in coll, in order */
};

/* What sim_delta() overwrites in place, kept for sim_undo(): per op it
 * touches, its list heads and cost; per shard of those ops, its source
 * lists and activation bytes. */
struct sim_undo_op {
	int op, shard_base, shard_end, xff_ofs, xff_end, xfb_ofs, xfb_end;
	int grp_ofs, grp_end;
	struct sim_cost cost;
	int64_t xbytes[2][3];
};

struct sim_undo_shard {
	int gs, fsrc_ofs, fsrc_end, bsrc_ofs, bsrc_end;
	int64_t act_bytes;
};

/* A run of task times a delta overwrote: n of them from index idx of
 * micro-batch j's block of direction bwd (sim_ckpt.c). */
struct sim_trun {
	int bwd, j, idx, n;
};

/* Each growable array f of struct sim_work has its capacity in cap_f. */
#define RESERVE(w, f, n) \
	sim_reserve(&(w)->f, &(w)->cap_##f, (size_t)(n), sizeof *(w)->f)
#define ARRAY(type, f) type *f; size_t cap_##f

struct sim_work {
	/* Fixed by sim_init: the graph's consumers, op costs, resources. */
	int *cons_ofs, *cons;
	struct sim_cost *cost;
	struct sim_cost *cost_seen;      /* [nops][SIM_COST_WAYS]: earlier */
	int *cost_next;                  /* lookups, replaced in turn */
	/* Resources (sim_comm.c): devices, then each node's NIC as a
	 * sending and a receiving side, then from res_link on the directed
	 * links between two devices of a node that the layouts since the
	 * last full one used, numbered as they came: a node of p devices has
	 * p (p - 1) of them, of which a plan uses a few. */
	int ndev, nres, res_nic, res_link;
	struct sim_map links;            /* a * ndev + b -> link a->b */
	ARRAY(int, link_ends);           /* [2][nres - res_link]: a, b */

	/* Fixed by one plan (sim_layout.c). */
	int m;                           /* micro-batches simulated: the most
					  * of any stage (or the period of
					  * round-robin replicas) */
	int mixed;                       /* stages of different counts */
	ARRAY(int, stage_m);             /* [nstages]: each stage's count */
	ARRAY(int, op_m);                /* [nops]: that of each op's stage */
	/* Round-robin replicas (sim_layout.c): an op of a stage of r
	 * replicas has r x its plan's shards, replica g's at shard_base +
	 * g x ndev, and micro-batch j runs replica j % r.  Under the
	 * asynchronous schedules m is then the period of the assignment, a
	 * multiple of the schedule's count, and nper its iterations. */
	int rr;                          /* some stage has replicas */
	int nper;                        /* iterations simulated (1 unless rr) */
	int rsync;                       /* 1f1b-async: a stage of replicas
					  * syncs every round of them */
	ARRAY(int, op_r);                /* [nops]: replicas of each op's stage */
	ARRAY(int, dev_upd);             /* [ndev]: updates in the run (rr) */
	int nstages, depth_max;
	ARRAY(int, stage_pos);           /* stage id -> index in plan->stages */
	ARRAY(int, stage_depth);         /* sched_stage_depths() */
	ARRAY(int, stage_ops_ofs);       /* ops of each stage, in graph order */
	ARRAY(int, stage_ops);
	ARRAY(int, shard_base);          /* [nops + 1] */
	ARRAY(int, shard_end);           /* [nops]: op i's shards are
					  * shard_base[i] .. shard_end[i]-1 */
	int nshards;                     /* shard indices in use (sim_delta.c
					  * appends, leaving old ones unused) */
	ARRAY(int, shard_dev);
	ARRAY(int, shard_op);
	ARRAY(int64_t, lo_);             /* [nshards][NDIMS]: the regions of */
	ARRAY(int64_t, hi_);             /* a micro-batch's output */
	ARRAY(int64_t, act_bytes);       /* kept from forward to backward */
	/* A shard of an op that recomputes (plan.h) keeps only the inputs it
	 * receives; remat_bytes is what is live again during its backward:
	 * its output and those of the recomputing shards before it on its
	 * device, whose backwards come after (sim_layout.c); 0 for a shard
	 * that does not recompute. */
	ARRAY(int64_t, remat_bytes);
	int recompute;                   /* some op of the plan recomputes */
	/* Lists keyed by a shard or an op are the values [ofs[k], end[k]) of
	 * one array: compact after sim_layout(), appended to by sim_delta(). */
	ARRAY(int, fsrc_ofs);            /* what a shard's forward waits for */
	ARRAY(int, fsrc_end);
	ARRAY(int, fsrc);
	ARRAY(int, bsrc_ofs);            /* what a shard's backward waits for */
	ARRAY(int, bsrc_end);
	ARRAY(int, bsrc);
	int nxf;
	ARRAY(struct sim_xfer, xf);
	ARRAY(struct sim_xsched, xs);    /* [nxf] */
	ARRAY(int, xff_ofs);             /* per op: sent after its forward */
	ARRAY(int, xff_end);
	ARRAY(int, xff);
	ARRAY(int, xfb_ofs);             /* per op: gradients sent after its */
	ARRAY(int, xfb_end);             /* backward */
	ARRAY(int, xfb);
	ARRAY(int, xffr_ofs);            /* per op, the same of transfers */
	ARRAY(int, xffr);                /* between stages of different */
	ARRAY(int, xfbr_ofs);            /* micro-batch counts (resends() */
	ARRAY(int, xfbr);                /* of sim_sched.c) */
	ARRAY(int64_t, op_xbytes);       /* [nops][2][3]: what xff (0) and
					  * xfb (1) of an op move, by link
					  * class */
	int busy_links;                  /* whether links' busy time counts */
	int ngrp, ngrp_mem, ncoll, ncoll_res;
	ARRAY(struct sim_group, grp);
	ARRAY(int, grp_mem);
	ARRAY(struct sim_coll, coll);
	ARRAY(int, coll_res);
	ARRAY(int, op_grp_ofs);          /* [nops + 1]: the groups of each op */
	ARRAY(int, op_grp_end);          /* [nops] */
	ARRAY(int64_t, shard_params);    /* parameter bytes of each shard */
	int nitems;
	ARRAY(struct sched_item, items);

	/* Per run (sim_sched.c). */
	double *tfwd, *tbwd;             /* [2][m][t_xcap + t_scap]: tasks' ends,
					  * then their critical paths (which a
					  * lean run leaves alone) */
	int t_xcap, t_scap, t_m;         /* their block's parts, and blocks */
	struct tend *grad_ready;         /* [ndev] */
	/* sync=after (hw/cluster.h): each device's last backward so far,
	 * and the ops whose all-reduces wait for the end of the backward
	 * item that made them due, with the micro-batches they sync */
	int after;
	struct tend *bwd_done;           /* [ndev] */
	ARRAY(int, due_op);
	ARRAY(int, due_span);
	int ndue;
	ARRAY(double, res_free);         /* [nres]; a link's busy time only */
	ARRAY(double, res_busy);         /* when busy_links */
	int64_t *act_cur;                /* [ndev] */
	struct sim_mem *mem;             /* [ndev] */
	int *dev_nshards;                /* [ndev]: shards on each device */
	struct cost_tally tally;         /* of the ops' cost sources */
	ARRAY(struct sim_task, tasks);
	int64_t ntasks, nrecorded;
	int ntask_kinds[NTASK_KINDS];
	int record, lean;                /* sim_opts */
	double max_cp;
	int64_t link_bytes[3];

	/* Checkpoints of the schedule (sim_ckpt.c) and what sim_delta()
	 * needs of the last run (sim_delta.c). */
	int ckpt_on, nckpt;
	int ckpt_nres;                   /* the resources a checkpoint holds */
	ARRAY(double, ckpt_d);           /* [nckpt][2][ckpt_nd] */
	ARRAY(int64_t, ckpt_i);          /* [nckpt][2][ckpt_ni] */
	ARRAY(int, ckpt_ok);             /* [nckpt]: kept (a forward step) */
	ARRAY(int, ckpt_sel);            /* [nckpt_sel]: which of its two */
	int nckpt_sel;                   /* places */
	int delta_ready;                 /* the last run can be continued */
	enum optimizer opt;          /* of the last run */
	int nfsrc, nbsrc, nxff, nxfb;    /* values in use of those lists */
	int64_t live, grown;             /* sizes after the last full layout,
					  * and what sim_delta() appended since */
	ARRAY(int, op_stage);            /* [nops]: stage index of each op */
	ARRAY(int, op_mark);             /* [nops] */
	ARRAY(int, op_cut);              /* [nops]: an op of R has its
					  * transfers to consumers from this
					  * op on made again */
	ARRAY(int, aff);                 /* ops a change touches */
	int nuop, nushard;               /* the last delta's undo record */
	int undo;                        /* what sim_undo() can do: enum in
					  * sim_delta.c */
	ARRAY(int, last_ops);            /* the ops the last delta changed */
	int nlast;
	ARRAY(int, pend);                /* ops an undo left to the next */
	int npend;                       /* delta to lay out again */
	ARRAY(struct sim_undo_op, uop);
	ARRAY(struct sim_undo_shard, ushard);
	struct sim_mem *umem;            /* [ndev] */
	int *udev_nshards;               /* [ndev] */
	struct cost_tally utally;
	int tlog_on;                     /* this run logs what it overwrites */
	int tlog_last;                   /* the last step it logs */
	ARRAY(struct sim_trun, trun);    /* the times it overwrote: runs, */
	ARRAY(double, tlog);             /* their values one after another
					  * (ends, then critical paths unless
					  * lean) */
	int ntrun, ntlog;
	ARRAY(int, tlog_ck);             /* the checkpoints it flipped */
	int ntlog_ck, tlog_nckpt;
	ARRAY(int, loc);                 /* [nshards]: a changed shard's key */
	ARRAY(int, pairs_loc);           /* pairs by those keys */
	ARRAY(int, tmp_ofs);             /* new lists, before they are */
	ARRAY(int, tmp);                 /* appended */

	/* Scratch for building: (key, value) pairs of CSR lists. */
	ARRAY(int, pairs);
	ARRAY(int, bpairs);
	ARRAY(int, heads);
	struct sim_map xhead;            /* (shard of a producer) * ndev +
					  * device -> transfer (sim_transfers.c) */
	ARRAY(int, scratch);
	ARRAY(int64_t, cut);
	ARRAY(struct sim_span, span);
};

#define LO(w, gs) ((w)->lo_ + (size_t)(gs) * NDIMS)
#define HI(w, gs) ((w)->hi_ + (size_t)(gs) * NDIMS)

/* Grows the array at *pp (elements of `size` bytes, *cap of them) to hold
 * n; 0 on success, AP_EFAIL (reported) when out of memory. */
int sim_reserve(void *pp, size_t *cap, size_t n, size_t size);

/* Appends the pair (key, val) to the *np pairs at *buf (room for *cap
 * ints); AP_EFAIL (reported) when out of memory. */
static inline int sim_add_pair(int **buf, size_t *cap, int *np, int key, int val)
{
	if (2 * ((size_t)*np + 1) > *cap &&
	    sim_reserve(buf, cap, 2 * ((size_t)*np + 1), sizeof(int)))
		return AP_EFAIL;
	(*buf)[2 * *np] = key;
	(*buf)[2 * *np + 1] = val;
	(*np)++;
	return AP_OK;
}

/* What a run does after the layout (sim.c): costs, memory, the schedule
 * from step `from` (sim_schedule_from()) and the summary; and the same
 * after a change of the n ops old[].op, whose costs and shards of the last
 * run old[] has, applied to that run's cost tally and memory totals. */
int sim_finish(struct sim *s, const struct plan *pl, int from, struct sim_result *r);
int sim_finish_change(struct sim *s, const struct plan *pl, const struct sim_undo_op *old,
		      int n, int from, struct sim_result *r);

/* The block of task ends of micro-batch j, forward (bwd 0) or backward:
 * shards at gs >= 0, transfer x at SRC_XFER(x) (sim_sched.c). */
static inline double *sim_times(const struct sim_work *w, int bwd, int j)
{
	return (bwd ? w->tbwd : w->tfwd) + (size_t)j * ((size_t)w->t_xcap + w->t_scap) +
	       w->t_xcap;
}

/* The critical paths of the same tasks. */
static inline double *sim_cps(const struct sim_work *w, int bwd, int j)
{
	return sim_times(w, bwd, j) + (size_t)w->t_m * ((size_t)w->t_xcap + w->t_scap);
}

/* The sizes of a fresh layout (sim_delta.c). */
void sim_delta_base(struct sim *s);

#endif
