/*
 * Megatron-LM's tensor parallelism of a transformer's operators
 * (Shoeybi et al. 2019; Narayanan et al., SC 2021, section 2.3): what
 * each operator becomes when a layer is split over a tensor group of t
 * devices.  A linear fed by a whole input is column-parallel (its weight
 * split by output features, its output split along c), the next linear,
 * fed by that split, row-parallel (its weight split by input features,
 * its output a partial sum the group all-reduces); attention splits its
 * heads (column-parallel q/k/v, row-parallel output projection); the
 * token embedding splits its vocabulary (a partial sum too), and the loss
 * over vocabulary-split logits is the parallel cross-entropy.  Element-
 * wise operators follow their inputs; layernorm, dropout and residual
 * adds on whole tensors run on every member, or, with sequence
 * parallelism (Korthikanti et al., MLSys 2023), each on its part of the
 * sequence.  docs/plan-format.md, "Tensor parallelism".
 */
#ifndef AUTOPAR_TENSOR_H
#define AUTOPAR_TENSOR_H

#include "model/graph.h"

enum tp_role {
	TP_NONE,      /* not tensor-parallel (t = 1) */
	TP_WHOLE,     /* on the whole tensor on every member (split along the
		       * sequence under sequence parallelism) */
	TP_COLUMN,    /* linear: weight and output split by output features */
	TP_SPLIT,     /* element-wise on a split: follows its input */
	TP_ROW,       /* linear on a split input: output a partial sum */
	TP_HEADS,     /* attention: heads split, output a partial sum */
	TP_VOCAB,     /* embedding: vocabulary split, output a partial sum */
	TP_LOSS,      /* cross-entropy over vocabulary-split logits */
	NTP_ROLES
};

const char *tp_role_name(enum tp_role r);

/* The role of every op of g when op i runs tensor-parallel over
 * tensor[i] devices (tensor[i] <= 1: not), into role[]; 0, or -1 with
 * *bad the first op that cannot take its degree and why in why[len]: an
 * operator kind Megatron does not split, a split input where the kind
 * needs the whole one, or inputs of different tensor degrees. */
int tensor_roles(const struct graph *g, const int *tensor, enum tp_role *role, int *bad,
		 char *why, size_t len);
/* Tensor rank tr's part of s things (features, heads' channels, the
 * vocabulary) split t ways: [tr s / t, (tr + 1) s / t) from *lo, *n of
 * them; all of them for t <= 1.  The runtime cuts every split so. */
static inline void tensor_part(int64_t s, int tr, int t, int64_t *lo, int64_t *n)
{
	if (t <= 1) {
		*lo = 0;
		*n = s;
		return;
	}
	*lo = tr * s / t;
	*n = (tr + 1) * s / t - *lo;
}

/* Whether role r leaves the op's parameters split over the group
 * (column, row, heads, vocab) rather than whole on every member. */
int tp_role_splits_params(enum tp_role r);

#endif
