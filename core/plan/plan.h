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

#include "hw/cluster.h"
#include "hw/roofline.h"
#include "cost/cost.h"
#include "model/graph.h"

/* Size of the name fields, NUL included: a cluster may be named by an
 * inline spec such as "4x4:v100,intra=450GB/s,inter=400GB/s,intra_lat=2us,
 * inter_lat=2us". */
#define PLAN_NAME_LEN 128
/* Size of a path field (a plan's model_file), NUL included. */
#define PLAN_PATH_LEN 1024

enum sched_kind {
	SCHED_GPIPE,      /* fill-drain */
	SCHED_1F1B,       /* synchronous 1F1B, PipeDream-Flush */
	SCHED_1F1B_ASYNC, /* PipeDream's 1F1B with weight stashing */
	SCHED_ASYNC_PREDICT, /* forward of one batch beside the backward of
			      * another, no flush, predicted weights */
	/* the schedules above run any plan; those below a pipeline of
	 * device groups (plan/pipe.h) */
	SCHED_INTERLEAVED, /* Megatron-LM's interleaved 1F1B: v model chunks
			    * per device group (sched.c) */
	SCHED_ZB_H1,       /* zero bubble H1: backward split into input- and
			    * weight-gradient passes (sched.c) */
	NSCHED_KINDS
};

/* The first schedule that needs a pipeline of device groups. */
#define SCHED_FIRST_PIPE SCHED_INTERLEAVED

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
	/* Activation recomputation (docs/plan-format.md), enum recompute:
	 * full, the op keeps none of its output from its forward to its
	 * backward and runs its forward again before its backward; selective
	 * (attention only), it drops and recomputes the attention scores.
	 * JSON "recompute": true or "selective", written only when set. */
	int recompute;
	/* Megatron-LM's tensor parallelism of the op over `tensor` devices
	 * (docs/plan-format.md, "Tensor parallelism"): 0 or 1 none.  The
	 * op's devices are the product of its degrees times it, the tensor
	 * rank innermost.  JSON "tensor", written when above 1. */
	int tensor;
};

enum recompute {
	RECOMPUTE_NONE,
	RECOMPUTE_FULL,
	RECOMPUTE_SELECTIVE,
};

/* Where a plan's model and profile came from (docs/formats.md, "Where a
 * plan's model and profile come from"): the model file relative to the
 * plan's directory when it was given as a file ("" for a name of the
 * zoo) and the FNV-1a digest of its bytes (0: not recorded); the same for
 * a profile given as a directory (its device.csv, then ops.csv).  JSON
 * "model_file", "model_digest", "profile_dir", "profile_digest". */
struct plan_source {
	char model_file[PLAN_PATH_LEN], profile_dir[PLAN_PATH_LEN];
	uint64_t model_digest, profile_digest;
};

struct plan {
	/* plan_read() refuses a longer name rather than cut it. */
	char model[PLAN_NAME_LEN], cluster[PLAN_NAME_LEN];
	char profile[PLAN_NAME_LEN], planner[PLAN_NAME_LEN];
	int64_t batch;
	struct plan_source src;
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
	/* How the plan trains (docs/plan-format.md, "Training"): its
	 * precision, the ZeRO stage of its data parallelism (0, 1: the
	 * optimizer state sharded over the data-parallel group, 3: weights
	 * and gradients as well) and whether its tensor-parallel layers run
	 * Megatron's sequence parallelism.  JSON "training", written when
	 * any differs from fp32, 0, false.  The optimizer it trains with,
	 * when it names one ("optimizer"; has_optimizer 0: the simulator's
	 * option, SGD with momentum by default). */
	int has_optimizer;
	enum optimizer optimizer;
	enum precision precision;
	int zero;
	int seq_parallel;
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
int sched_parse(const char *s, enum sched_kind *out);

/* The tensor-parallel degree of op i (at least 1). */
int plan_op_tensor(const struct plan *p, int i);
/* Whether the plan uses what only the symmetric pipeline simulation
 * (docs/simulator.md) predicts: tensor parallelism, mixed precision,
 * ZeRO, sequence parallelism, selective recomputation, the interleaved or
 * zero-bubble schedule. */
int plan_megatron_features(const struct plan *p);
/* The micro-batch count of stage index s: its own or the schedule's. */
int plan_stage_microbatches(const struct plan *p, int s);
/* Whether some stage's micro-batch count differs from the schedule's. */
int plan_mixed_microbatches(const struct plan *p);
/* The index in p->stages of the stage whose id is id; -1 when none has it
 * (a validated plan's ops name their stages). */
int plan_stage_index(const struct plan *p, int id);
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

#endif
