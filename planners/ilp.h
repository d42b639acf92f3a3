/*
 * The cost model of the ILP planner (ilp_model.c), shared by the planner
 * (ilp.c and ilp_program.c, which turn it into mixed-integer programs for
 * GLPK) and the tests (which enumerate it by brute force).  An instance
 * fixes the number of pipeline stages K (equal blocks of `per` devices,
 * chained) and of micro-batches m; its decisions are, per group of
 * operators, a stage and one configuration out of a candidate set.
 *
 * Groups: element-wise and other cheap operators (activations, dropout,
 * add, mul, batch norm, pooling) are folded into their producer when they
 * keep its dims, so a group runs one configuration (Alpa, OSDI 2022,
 * section 4.2: "merge simple operators").  Candidates: the degree vectors
 * over the group's splittable dims that occupy the whole stage, with at
 * most two dims split, each dividing its dim (n: the micro-batch), plus
 * the whole group on the stage's first device; a configuration that is no
 * better than another on every cost, memory and transfer term is dropped.
 * Repeated layers (a model's repeat blocks) may be tied to share their
 * configuration.  Tied weights are another matter: a group that holds an
 * operator whose weight is tied to another's (`tie=`, models/FORMAT.md)
 * must run on the same devices as the other's group (plan_validate()),
 * that is, in the same stage on as many of its first devices (the same
 * stage and the same ndev below); dominance compares its configurations
 * only with those of as many devices, so that pruning keeps that
 * possible.
 *
 * The model's objective for an assignment (ilp_inst_eval) is that of a
 * synchronous pipeline, one micro-batch's pass through every stage plus
 * m - 1 times the bottleneck stage:
 *     sum_s t_s + (m - 1) max_s t_s + S + U,
 * where t_s is stage s's compute (forward + backward of one micro-batch,
 * from the simulator's profile lookup) plus the resharding transfers of
 * its edges whose ends are configured differently; an edge between stages
 * costs its transfer between the two device blocks.  For balanced stages
 * this is (m + K - 1) x the bottleneck, the classic form.  S is the
 * gradient synchronisation left exposed: ring all-reduces start after an
 * op's last backward and run one after another, overlapped with the
 * backward passes of earlier ops, so S = max over ops i with parameters of
 * (all-reduces of i and earlier ops - backward of the ops before i).  An
 * op's all-reduce is that of its c degree's replica groups, priced by the
 * simulator's formulas: groups inside a node run side by side on their
 * own ring links, the rings of groups across nodes one after another on
 * the NICs they share (ilp_model.c).  U is
 * the largest optimizer update of a stage's first device.  Memory, per
 * stage's first device (which every configuration uses): 3 x parameter
 * shards (weights, gradients, momentum), activations (outputs and the
 * inputs a shard needs) x micro-batches in flight (1F1B: K - s), and the
 * largest workspace.
 *
 * The objective of the chosen assignment is the planner's estimate
 * (planner_est_ms).  For one stage it is the simulator's prediction
 * (tests/test_estimates.c: within 5%, 1.00 on most instances); for
 * pipelines the model leaves to the simulator: (1) the latency is a chain
 * of the stages, where the simulator runs stages that do not depend on
 * each other (branches of a multi-branch model) side by side (estimate
 * high: candle_uno on summit-4x4, 1.43); (2) under 1F1B stage s keeps at
 * most K - s micro-batches in flight, so it waits when the round trip of
 * the later stages and the transfers between them outlasts them, where
 * the model's bottleneck never waits (alexnet on pipedream-a, 0.73-0.90);
 * (3) transfers and all-reduces that share a link or NIC at the same time
 * (estimate low).
 */
#ifndef AUTOPAR_ILP_H
#define AUTOPAR_ILP_H

#include <stdint.h>

#include "planner.h"

/* The most stages of a layout, and devices of one stage. */
#define ILP_MAX_LAYOUT 64

struct ilp_cfg {
	int degree[NDIMS];
	int ndev;            /* product of degrees: the stage's first ndev devices */
	double fwd_s, bwd_s; /* one micro-batch, summed over the group */
	double ar_s;         /* gradient all-reduces per iteration */
	double upd_s;        /* optimizer update of the first device's shards */
	int64_t param_bytes; /* on the first device */
	int64_t act_bytes;   /* per micro-batch in flight, first device */
	int64_t ws_bytes;
	int alias;           /* a dropped configuration: the one that dominates it */
};

struct ilp_group {
	int lead;            /* first operator */
	int nmem, *mem;      /* operators, lead first */
	int ncfg;            /* candidates, including dropped ones (alias != self) */
	struct ilp_cfg *cfg;
	int tie;             /* an earlier group it repeats, or -1 */
	int wtie;            /* it takes part in a tie of weights (above) */
};

struct ilp_edge {
	int u, v;            /* groups; u's ops feed v's */
	double *same_s;      /* [cu * ncfg(v) + cv]: inside one stage */
	double *cross_s;     /* the same when v is in a later stage */
};

struct ilp_inst {
	const struct planner_input *input;
	int K, m, per;       /* stages, micro-batches, devices per stage */
	int ngroups, nedges;
	struct ilp_group *grp;
	struct ilp_edge *edge;
	int *group_of;       /* per op */
	int64_t mem_cap;     /* bytes per device */
	int ndropped;        /* configurations dropped as dominated */
};

/* Builds the instance; AP_EINPUT when the model cannot run as K stages
 * of m micro-batches (too few groups, the micro-batch does not divide),
 * reported only when `quiet` is 0.  collapse ties repeated layers. */
int ilp_inst_build(struct ilp_inst *x, const struct planner_input *input, int K, int m,
		   int collapse, int quiet);
void ilp_inst_release(struct ilp_inst *x);
/* A live (not dropped) configuration index: c's alias, followed. */
int ilp_cfg_live(const struct ilp_group *gr, int c);
/* The model's objective in seconds of the assignment stage[g], cfg[g]
 * (live configurations); INFINITY when it breaks a constraint: stages out
 * of range or empty, an edge to an earlier stage, a tie (of repeats or of
 * weights), memory. */
double ilp_inst_eval(const struct ilp_inst *x, const int *stage, const int *cfg);
/* Writes the assignment as a plan (sized by plan_alloc already). */
int ilp_inst_plan(const struct ilp_inst *x, const int *stage, const int *cfg,
		  struct plan *out);
/* The assignment of a plan made for this instance's K and m with stages
 * of its layout, configurations mapped to their live aliases; -1 when
 * the plan is not a point of the instance. */
int ilp_inst_from_plan(const struct ilp_inst *x, const struct plan *pl, int *stage, int *cfg);

#endif
