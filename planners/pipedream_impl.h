/*
 * What the files of the pipedream planner share (docs/conventions.md, rule
 * 9): the planner's state, struct pd, with the DP's levels and the stages
 * it emits, and the cost model of pipedream_cost.c that the dynamic program
 * and the planner of pipedream.c call.
 */
#ifndef AUTOPAR_PIPEDREAM_IMPL_H
#define AUTOPAR_PIPEDREAM_IMPL_H

#include <stddef.h>

#include "planner.h"

#define PD_LEVELS 2

struct pd_level {
	int m;       /* components this level joins */
	int dev;     /* devices in one component */
	double bw;   /* bytes/s between two components */
	/* Per (j, a, b), AT(): the best time of units [a, b) on j components,
	 * and how: the cut c before the last stage (-1: one stage), the
	 * components sub of [a, c) and the last stage's replicas. */
	double *t;
	int *split, *sub, *rep;
};

struct pd_stage {
	int a, b; /* units */
	int ndev, *devs;
};

struct pd {
	const struct planner_input *input;
	/* Minibatches in the batch: the DP's times and bytes are those of
	 * one (its terms are per minibatch, as the reference's are), and a
	 * pipeline under 1F1B runs them as its micro-batches (search() in
	 * pipedream.c chooses the count). */
	int units;
	/* PipeDream-Flush: replicas synchronise once a step, not every
	 * round (sync_share()). */
	int flush;
	int straight, fewer, paper, placed, memory, max_units;
	/* A tie (algo/ties.h) took away a cut the units would have had:
	 * `straight` then also admits data parallelism (pipedream.c) */
	int tied;
	int *devs;              /* scratch: a replica group's devices */
	int predict; /* schedule=async-predict */
	double ratio; /* activation compression; 0: transfers not charged */
	double mem; /* bytes of one device */
	double deadline; /* of the search, now_s() */
	int nops, n;            /* operators, units */
	int *order;             /* operators in unit order */
	double *ow;             /* [nops], in unit order: an operator's
				 * parameter bytes (pd_flushed_dp()) */
	/* Data parallelism on every device (pd_dp_costs()): per operator in
	 * unit order its time and its backward's on one shard of a
	 * micro-batch, and the shards the busiest device computes */
	double *dpt, *dpb;
	int dp_k;
	int *first;             /* [n + 1]: a unit's first position in order */
	double *ct, *cw, *ca;   /* [n + 1]: prefix sums of time, parameter and
				 * activation bytes over units */
	double *cross;          /* [n + 1]: bytes crossing the cut before a unit */
	int *cn;                /* [n + 1]: prefix counts of operators with
				 * parameters, each its own all-reduce */
	int nlv;
	struct pd_level lv[PD_LEVELS];
	/* cost=placed across nodes, per node-level stage [c, b) as its node
	 * level's solution (v = 0) or as one flat stage (1): qin[2 w + v] +
	 * qofs[c, b] holds for x = 0 .. c the bytes the stage receives, per
	 * minibatch, of the tensors made before unit x, once per device-level
	 * stage that consumes them; all of them (w = 0) or those with a
	 * gradient to send back (w = 1) (pd_node_inputs()) */
	double *qin[4];
	size_t *qofs;
	/* and per node-level cell (j, 0, b), its stages' first units, replicas
	 * and NIC time per minibatch receiving (nic_ld[0]) and sending, in
	 * order (pd_nic_loads()) */
	int *nic_k, *nic_a, *nic_r;
	double *nic_ld[2];
	double *last;           /* the last-stage times of the level solved */
	int *lastrep;           /* and their replicas (pd_stage_time()) */
	double *lastnic;        /* and their all-reduces' NIC time */
	int nst, cap_st;
	struct pd_stage *st;    /* the device-level stages, in order */
};

static inline size_t at(const struct pd *pd, int j, int a, int b)
{
	size_t n1 = (size_t)pd->n + 1;

	return ((size_t)j * n1 + (size_t)a) * n1 + (size_t)b;
}

/* The units: their order, times and bytes (pipedream_cost.c). */
int pd_build_units(struct pd *pd);
/* cost=placed across nodes: the bytes node-level stages receive, and
 * the NIC loads of a cell's stages as the DP appends one. */
int pd_node_inputs(struct pd *pd);
double pd_nic_loads(struct pd *pd, int j, int c, int b, int r, int vs, double ar, int jo);
void pd_nic_one(struct pd *pd, int j, int b, int r, int f, double ar);
/* Whether [a, b) may be a stage of level l, and whether it fits with k
 * stashed copies. */
int pd_admissible(const struct pd *pd, int l, int a, int b);
int pd_fits(const struct pd *pd, int l, int a, int b, int k);
/* The time of [a, b) as a stage of r replicas, per minibatch, and the
 * time its all-reduces keep its NICs busy (cost=placed across nodes). */
double pd_stage_time(const struct pd *pd, int l, int a, int b, int r, int last, int *rep,
		     double *nic);
/* Data parallelism: its operators' costs on the shards of a plan of one
 * stage on every device, its time flushed as PipeDream runs it, whether a
 * range is it, and its time by the same terms (the paper's baseline). */
int pd_dp_costs(struct pd *pd, int shards, int k);
double pd_flushed_dp(const struct pd *pd);
int pd_whole(const struct pd *pd, int l, int a, int b, int r);
double pd_dp_time(const struct pd *pd);

#endif
