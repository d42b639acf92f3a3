/*
 * The plan every planner emits and the simulator and runtime read: per
 * operator its stage, its degree per output dim and the ordered devices its
 * shards run on; stages form a DAG (a chain for classic pipelines); the
 * schedule and micro-batches.  JSON (jansson), schema "autopar-plan"
 * version 1, as in docs/formats.md.  Shard k of an op with degrees
 * (dn, dc, dh, dw, dl) is laid out with n outermost: devices[k] runs the
 * k-th shard in row-major order over the dims n, c, h, w, l.
 */
#ifndef AUTOPAR_PLAN_H
#define AUTOPAR_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "graph.h"

/* Size of the name fields, NUL included: a cluster may be named by an
 * inline spec such as "4x4:v100,intra=450GB/s,inter=400GB/s,intra_lat=2us,
 * inter_lat=2us". */
#define PLAN_NAME_LEN 128

enum sched_kind {
	SCHED_GPIPE,      /* fill-drain */
	SCHED_1F1B,       /* synchronous 1F1B, PipeDream-Flush */
	SCHED_1F1B_ASYNC, /* PipeDream's 1F1B with weight stashing */
	SCHED_ASYNC_PREDICT, /* forward of one batch beside the backward of
			      * another, no flush, predicted weights */
	NSCHED_KINDS
};

struct plan_stage {
	int id;
	int ndev, *devices;
	int nnext, *next;
	/* The stage's own micro-batch count, its micro-batches being of
	 * batch / microbatches samples; 0: the schedule's.  Stages joined
	 * by `next` have counts that divide one another, and what passes
	 * between them is re-batched (sim_layout.c).  JSON: the stage's
	 * "microbatches", written only where it differs from the
	 * schedule's. */
	int microbatches;
	/* Round-robin replicas (PipeDream's replicated stages), 0 or 1:
	 * none.  With r replicas the stage's devices are r groups of
	 * ndev / r, replica g being devices[g * ndev / r ..]; the ops'
	 * devices name replica 0's, and replica g runs each shard on the
	 * device at the same place of its group.  Micro-batch j (counted
	 * across steps under the asynchronous schedules) runs whole on
	 * replica j mod r, and the replicas' gradients are summed by an
	 * all-reduce, as the n degree's are (docs/plan-format.md).  JSON:
	 * the stage's "replicas", written only when above 1. */
	int replicas;
};

struct plan_op {
	int stage;
	int degree[NDIMS];
	int ndev, *devices; /* ndev = product of degree[] */
	/* Activation recomputation (docs/plan-format.md): the op keeps none
	 * of its output from its forward to its backward and runs its
	 * forward again before its backward.  JSON "recompute": true,
	 * written only when set. */
	int recompute;
};

struct plan {
	/* plan_read() refuses a longer name rather than cut it. */
	char model[PLAN_NAME_LEN], cluster[PLAN_NAME_LEN];
	char profile[PLAN_NAME_LEN], planner[PLAN_NAME_LEN];
	int64_t batch;
	/* Weak scaling: the batch per device the instance was made with
	 * (batch = it x the cluster's devices); 0 for a global batch (strong
	 * scaling).  JSON "per_device_batch", written when above 0. */
	int64_t per_device_batch;
	/* search statistics: seconds, seed, the ones every searching
	 * planner reports alike, and planner-specific numbers */
	double search_s;
	uint64_t seed;
	/* Its own estimate of the iteration, the lower bound on it that it
	 * proved, and their relative gap (est - bound) / est; NAN where the
	 * planner has none.  JSON "planner_est_ms", "bound_ms" and "gap" in
	 * "search"; the results CSV's columns of those names. */
	double est_ms, bound_ms, gap;
	int nstats;
	char (*stat_name)[32];
	double *stat_value;
	/* The anytime curve of a search: curve[k] = {seconds into the
	 * search, best predicted iteration ms found by then}; "search":
	 * {"curve": [[s, ms], ...]} in JSON. */
	int ncurve;
	size_t cap_curve;
	double (*curve)[2];
	enum sched_kind sched;
	int microbatches;
	int nstages;
	struct plan_stage *stages;
	int nops;
	struct plan_op *ops; /* indexed like graph->ops */
	/* predicted by the simulator; negative when absent */
	double pred_iter_ms, pred_samples_per_s, pred_bubble;
	int64_t pred_peak_mem_bytes;
	/* whether that peak fits every device (sim_fits()): 1, 0, -1 when
	 * not predicted; "fits_memory" in JSON */
	int pred_fits;
};

const char *sched_name(enum sched_kind k);
/* A unit of a schedule: one stage's forward or backward of one
 * micro-batch.  The stage is an index into plan->stages. */
struct sched_item {
	int64_t key;
	int stage, mb, bwd;
};

/* The 2 x nstages x m items of a schedule in the order every device runs
 * its work (core/sched.c); depth[s] is stage index s's longest path from
 * a source stage along `next`. */
void sched_order(enum sched_kind k, int nstages, const int *depth, int m,
		 struct sched_item *items);
/* The same for stages of different micro-batch counts m[s] (stage
 * indices; next_ofs/next: each stage's successors, CSR), gpipe or 1f1b:
 * 2 x (m[0] + ... ) items, keyed by their place; -1 when out of memory. */
int sched_order_mixed(enum sched_kind k, int nstages, const int *depth, const int *m,
		      const int *next_ofs, const int *next, struct sched_item *items);
/* The key of one item (K depths, m micro-batches: only GPipe's backward
 * depends on m, so 1F1B keys hold for a stream of any length), and the
 * order of a list of items. */
int64_t sched_key(enum sched_kind k, int64_t K, int64_t m, int64_t d, int64_t j,
		  int bwd);
void sched_sort(struct sched_item *items, int n);
int sched_parse(const char *s, enum sched_kind *out);
/* Each stage's depth in the schedule (by stage index), the same for the
 * simulator and the runtime: its position in a chain, and in a DAG of
 * stages as late as its successors allow (sched.c); the largest into
 * *depth_max.  AP_EINPUT naming the field when ids are not 0..n-1 or
 * `next` names no stage or forms a cycle. */
int sched_stage_depths(const struct plan *p, int *depth, int *depth_max);
/* Whether k updates the weights after every micro-batch (no flush). */
int sched_async(enum sched_kind k);
/* The most weight updates a stage of depth d (of K depths) sees between a
 * micro-batch's forward and the update with that micro-batch's gradient,
 * over the m micro-batches of a step: its weight staleness, what
 * PipeDream stashes versions for and async-predict extrapolates over; 0
 * for the synchronous schedules. */
int sched_staleness(enum sched_kind k, int K, int d, int m);

/* The micro-batch count of stage index s: its own or the schedule's. */
int plan_stage_microbatches(const struct plan *p, int s);
/* Whether some stage's micro-batch count differs from the schedule's. */
int plan_mixed_microbatches(const struct plan *p);
/* The round-robin replicas of stage index s (at least 1), and whether
 * any stage has more than one. */
int plan_stage_replicas(const struct plan *p, int s);
int plan_round_robin(const struct plan *p);
/* The device that runs, in replica g of stage index s, what device dev of
 * replica 0 runs; -1 when dev is not in replica 0. */
int plan_replica_device(const struct plan *p, int s, int dev, int g);

void plan_init(struct plan *p);
void plan_release(struct plan *p);
/* Resets p and sizes it for g: model and batch from g, nstages stages with
 * ids 0..nstages-1 and no devices, one plan_op per operator on stage 0 with
 * degree 1 and devices {0}; GPipe with one micro-batch. */
int plan_alloc(struct plan *p, const struct graph *g, int nstages);
/* Adds or overwrites a planner-specific search statistic (at most 31
 * characters, not a name struct plan has a field for, finite value). */
int plan_set_stat(struct plan *p, const char *name, double value);
/* The named search statistic, NAN when the plan has none. */
double plan_stat(const struct plan *p, const char *name);
/* Appends a point (finite, seconds not decreasing) to the search curve. */
int plan_add_curve(struct plan *p, double t_s, double ms);
/* Replaces *dst with a copy of src[0..n). */
int plan_set_devices(int **dst, int *ndst, const int *src, int n);

/* Building a plan (plan_build.c, docs/adding-a-planner.md): size it with
 * plan_alloc(p, g, nstages), then give every stage its devices and the
 * `next` edges between stages, every operator its place (all start on
 * stage 0, device 0, degree 1) and the schedule.  Each returns AP_OK or
 * reports (AP_EFAIL) a stage or operator out of range, or no memory. */
/* Stage s runs on devs[0..n), as `replicas` round-robin replicas of
 * n / replicas devices each (0 or 1: none; plan_stage.replicas). */
int plan_stage(struct plan *p, int s, const int *devs, int n, int replicas);
/* The same on the n consecutive devices first, first + 1, ... */
int plan_stage_range(struct plan *p, int s, int first, int n, int replicas);
/* Stage s sends to stage t (a `next` edge, kept once). */
int plan_link(struct plan *p, int s, int t);
/* The stages as a chain: s -> s + 1 for each. */
int plan_chain(struct plan *p);
/* A `next` edge wherever an edge of g goes from an operator of one stage
 * to one of another (the operators placed first): a DAG of stages. */
int plan_link_edges(struct plan *p, const struct graph *g);
/* Operator i in stage s with degree[] per dim kind, its shards on
 * devs[0..product of the degrees) in the layout of the top comment. */
int plan_op(struct plan *p, int i, int s, const int degree[NDIMS], const int *devs);
/* The same on consecutive devices from first. */
int plan_place(struct plan *p, int i, int s, const int degree[NDIMS], int first);
void plan_schedule(struct plan *p, enum sched_kind k, int microbatches);
/* One stage on devices 0..ndev-1 under the given schedule. */
int plan_one_stage(struct plan *p, int ndev, enum sched_kind sched, int microbatches);

/* JSON; ops are matched to g by name and every op of g must be there.
 * "profile", "planner", "search", "predicted", a stage's "next" and an op's
 * "degree" (and any dim in it) may be left out.  Syntax errors read
 * "path:LINE: message"; schema errors "path: FIELD: message" with the field
 * as a path (ops.fc1.degree.c).  A name longer than PLAN_NAME_LEN - 1
 * characters is an error, not cut short.  On failure p is left empty
 * (plan_init). */
int plan_read(const char *path, const struct graph *g, struct plan *p);
/* The model, cluster, profile ("" when the plan names none) and batch a
 * plan file was made for, read before its model is loaded (plan_read()
 * needs the graph).  The file's format and version are checked; errors
 * read as plan_read()'s. */
int plan_peek(const char *path, char *model, size_t model_len, char *cluster,
	      size_t cluster_len, char *profile, size_t profile_len, int64_t *batch);
/* Writes atomically, pretty-printed, ops in graph order. */
int plan_write(const struct plan *p, const struct graph *g, const char *path);

/* Parameter bytes of one shard of op under po: parameters are indexed by
 * the output channel (SOAP's parameter dim), so the c degree shards them
 * and every other degree replicates them; measured bytes win. */
int64_t plan_param_shard_bytes(const struct op *op, const struct plan_op *po);

/* Checks against the model and the cluster (plan_check.c): the plan's
 * batch is g's and the micro-batches divide it; stage ids are
 * 0..nstages-1, each stage has devices of the cluster, `next` names stages
 * and forms a DAG; per op: degrees >= 1, > 1 only on dims the op has and
 * its split mask allows, each dividing its dim (n: the micro-batch), ndev =
 * product of the degrees, device ids exist, are distinct and belong to the
 * op's stage; every edge of the graph goes from a stage to itself or one
 * reachable along `next`.  When c->mem_bytes > 0, each device's parameter
 * shards x 3 (weights, gradients, momentum) must fit it; activations are
 * the simulator's to check.  The first failure is reported naming path and
 * the field; AP_EINPUT. */
int plan_validate(const struct plan *p, const struct graph *g,
		  const struct cluster *c, const char *path);

#endif
