/*
 * A plan as a pipeline of device groups (docs/plan-format.md, "Pipelines
 * of groups"): the shape of the plans Megatron-LM's PTD-P makes, which
 * the symmetric simulation predicts (docs/simulator.md) and the
 * interleaved and zero-bubble schedules need.  G groups of D x T devices
 * (D data-parallel replicas of T tensor-parallel ranks, the tensor rank
 * innermost), a chain of S = G v stages, stage s on group s mod G.
 */
#ifndef AUTOPAR_PIPE_H
#define AUTOPAR_PIPE_H

#include <stddef.h>

#include "plan/plan.h"

struct plan_pipe {
	int groups;  /* G: the pipeline-parallel size */
	int chunks;  /* v: model chunks per group */
	int dp, tp;  /* D, T */
};

/* Whether p has that shape: stages a chain 0 -> 1 -> ... in their order,
 * without replicas or micro-batch counts of their own; every op on
 * exactly its stage's devices in the stage's order, with n degree D,
 * tensor degree T and no other split; stage s on the devices of stage
 * s mod G, the groups disjoint.  0 with *out filled, or -1 with the
 * reason in why[len]. */
int plan_pipe_shape(const struct plan *p, struct plan_pipe *out, char *why, size_t len);

#endif
