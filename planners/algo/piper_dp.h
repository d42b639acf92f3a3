/*
 * Piper's dynamic program (Tarnawski et al., NeurIPS 2021, sections 3
 * and 4; docs/piper.md) over a Piper instance (piper_inst.h).
 *
 * A plan is a sequence of stages, each a convex set of nodes S = I \ J
 * for two upsets J subset of I of the DAG (sets closed under successors),
 * in topological order, each on t x d devices: tensor-parallel degree t
 * (every node of S has configurations for t), data-parallel degree d
 * (d divides N, the micro-batches of a batch), and one configuration
 * (TMPC) per node.  Its time per sample (per micro-batch, Piper's TPS):
 *
 *   sum over nodes (p / d) + (E / d + R) / B
 *
 * with p the configuration's time, E the bytes of every edge between S
 * and the rest, twice (forward and backward) with its tensor-parallel
 * sync bytes, R = 4 (d - 1) w / (d N) each node's data-parallel resync
 * (the PipeDream planner's parameter-server factor) and B the bandwidth.
 * Its memory, sum over nodes (a y + b) with y = ceil(s / d), s the sum
 * of d over this stage and every stage after it (1F1B's micro-batches in
 * flight), must fit a device; the configurations are chosen by Piper's
 * knapsack heuristic (the fastest everywhere, then swaps by least time
 * per byte saved, for at most two configurations per node and degree).
 * The plan's TPS is the largest stage TPS; it uses at most K devices and
 * a sum of data-parallel degrees of at most min(N, K).
 */
#ifndef AUTOPAR_PIPER_DP_H
#define AUTOPAR_PIPER_DP_H

#include <stdint.h>

#include "model/piper_inst.h"

struct piper_stage {
	int nnodes, *nodes;   /* node ids, ascending */
	int t, d;
	int *tmpc;            /* per node of nodes[]: index into its degree t's TMPCs */
	double tps;
};

struct piper_result {
	double tps;           /* seconds per micro-batch; INFINITY: nothing fits */
	int devices, sum_d;
	int nstages;
	struct piper_stage *stages; /* in topological order */
	/* search statistics */
	long ideals;
	long long pairs;      /* (upset, sub-upset) pairs visited */
};

/* Solves pi within budget_s seconds of search (0: no limit).  Returns
 * AP_OK with res->tps INFINITY when no plan fits memory; AP_EINPUT when
 * the DAG has more than max_ideals upsets or the budget runs out. */
int piper_solve(const struct piper_inst *pi, long max_ideals, double budget_s,
		struct piper_result *res);
/* The same where some nodes must share a stage: tie[v] is the next node
 * of v's group in a cycle through it (v itself when alone; NULL: no
 * groups).  The DP then visits only the upsets that hold each group
 * whole or not at all, so every stage, a difference of two of them,
 * holds a group whole or none of it: what layers whose operators tie
 * their weights (`tie=`, models/FORMAT.md) need, to run on the same
 * devices (planners/piper.c). */
int piper_solve_tied(const struct piper_inst *pi, const int *tie, long max_ideals,
		     double budget_s, struct piper_result *res);

/* The TPS of one stage with its configurations chosen as the DP chooses
 * them: nodes in[] (a convex set), degrees t and d, y micro-batches in
 * flight; INFINITY when no choice fits memory or a node lacks degree t.
 * tmpc[] (may be NULL) receives the choice. */
double piper_stage_tps(const struct piper_inst *pi, const int *nodes, int n, int t, int d,
		       int y, int *tmpc);

void piper_result_release(struct piper_result *res);

#endif
