/*
 * The size of a plan's simulation, known before it is laid out
 * (sim_size.c): the pairs of shards that exchange data, and the bound the
 * simulator holds plans to.
 */
#ifndef AUTOPAR_SIM_SIZE_H
#define AUTOPAR_SIM_SIZE_H

#include <stdint.h>

#include "model/graph.h"
#include "plan/plan.h"

/* What the simulator keeps of one pair of shards that exchange data: the
 * transfer with its schedule entry and its places in the source lists
 * and in the lists of what each op starts (SIM_PAIR_BYTES), and per
 * micro-batch the ends and critical paths of its forward and backward
 * tasks (SIM_PAIR_MB_BYTES).  Measured: owt's plan of gpt2 on 1,024
 * devices, 9.8 million pairs of one micro-batch, took 2.2 GB. */
#define SIM_PAIR_BYTES 192
#define SIM_PAIR_MB_BYTES 32
/* The most the pairs of one plan may take: sim_run() refuses a plan
 * beyond it before laying it out. */
#define SIM_MAX_BYTES ((int64_t)3 << 29)

/* The pairs of shards of the edge into input k of op c under plan pl
 * whose regions can meet (sim_transfers.c makes a source of each, a
 * transfer where their devices differ), over the pairs of round-robin
 * replicas that meet; the plan's degrees must be positive. */
int64_t sim_edge_pairs(const struct graph *g, const struct plan *pl, int c, int k);
/* The bytes the simulator keeps for `pairs` such pairs of plan pl. */
int64_t sim_pairs_bytes(const struct plan *pl, int64_t pairs);
/* AP_EINPUT, with the sizes and the largest edge, when the pairs of every
 * edge of pl take more than SIM_MAX_BYTES. */
int sim_size_check(const struct graph *g, const struct plan *pl);

#endif
