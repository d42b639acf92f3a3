/*
 * The cost model of large-model training (docs/simulator.md, "Large
 * language models"): what a tensor-parallel operator's collectives cost,
 * what it keeps for its backward in Korthikanti et al.'s accounting, how
 * its backward splits into input- and weight-gradient work, and the
 * bytes a parameter costs under mixed precision and ZeRO.  Every number
 * is per device and per micro-batch of mb samples.
 */
#ifndef AUTOPAR_COST_TRANSFORMER_H
#define AUTOPAR_COST_TRANSFORMER_H

#include <stdint.h>

#include "cost/cost.h"
#include "hw/roofline.h"
#include "model/tensor.h"

/* How an op runs: its tensor degree and role (model/tensor.h), sequence
 * parallelism, its recomputation (enum recompute of plan.h: 0 none,
 * 1 full, 2 selective) and the precision. */
struct tp_op {
	int t;
	enum tp_role role;
	int sp, recompute;
	enum precision prec;
};

/* The cost of op i's shard for a micro-batch of mb samples, split over
 * n-degree dn (the data-parallel replicas of a micro-batch) and its
 * tensor group: the profile's answer in fp32 (cost_op()), the roofline
 * at the tensor rate in mixed precision (no profile is measured in it). */
int cost_tp_op(const struct profile *p, const struct graph *g, int i, const struct tp_op *o,
	       int microbatches, int dn, struct op_cost *out);

/* Bytes op i keeps from its forward to its backward, Korthikanti et al.
 * (MLSys 2023), section 4: a layernorm its input, attention its input,
 * q, k, v and context and 5 a s^2 per sample of scores (softmax output,
 * attention dropout's mask and output; 2 a s^2 without dropout=), a
 * linear its input, GeLU its input, dropout its 1-byte mask, the vocab-
 * parallel loss its float32 logits; a residual add nothing.  Split by t
 * where the role splits it and, under sequence parallelism, the rest as
 * well; selective recomputation drops the scores; full recomputation
 * keeps nothing (what it checkpoints is its inputs from ops that do not
 * recompute: the simulator's).  Other kinds keep their output. */
int64_t cost_saved_bytes(const struct graph *g, int i, const struct tp_op *o, int64_t mb);
/* Bytes of op j's output for mb samples in precision prec, on one device
 * (before any split). */
double cost_act_bytes(const struct graph *g, int j, enum precision prec, int64_t mb);
/* The share of op i's forward that selective recomputation runs again
 * (attention's score and context products); 0 for other kinds. */
double cost_selective_share(const struct op *op);
/* The share of op i's backward that is weight-gradient work, which the
 * zero-bubble schedules run as a pass of its own (Qi et al., ICLR 2024):
 * half a linear's, attention's projections, all of an embedding's. */
double cost_wgrad_share(const struct graph *g, int i);

/* Seconds of op i's tensor-parallel collectives on its group (the sorted
 * devices group[0..t)) in the forward and the backward of one micro-batch
 * (Narayanan et al., SC 2021, section 3.3; Korthikanti et al., section
 * 4.2): a partial-sum output all-reduced forward (reduce-scattered under
 * sequence parallelism, its gradient all-gathered backward), a whole
 * input's gradient all-reduced backward (all-gathered forward, gathered
 * again for the weight gradient and reduce-scattered backward under
 * sequence parallelism), the parallel cross-entropy's three per-token
 * float32 all-reduces.  Each is cost_allreduce_s(), a ring's halves for
 * an all-gather or reduce-scatter. */
void cost_tp_comm_s(const struct cluster *c, const int *group, const struct graph *g, int i,
		    const struct tp_op *o, int64_t mb, double *fwd_s, double *bwd_s);

/* Bytes a device keeps for the whole iteration per parameter it holds
 * (Rajbhandari et al., SC 2020, section 3.1): in fp32 the weight, its
 * gradient and the optimizer's copies (cost_state_factor() x 4); in mixed
 * precision a 2-byte weight and gradient, a float32 master copy and the
 * optimizer's float32 copies (16 bytes with Adam).  ZeRO stage 1 keeps
 * 1/d of the master copy and state (d the data-parallel size), stage 3
 * 1/d of everything. */
double cost_param_state_bytes(enum precision prec, enum optimizer o, int zero, int d);

#endif
