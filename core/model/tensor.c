/*
 * Tensor-parallel roles (tensor.h), derived in graph order: whether an
 * op's output is split across its tensor group decides what the next op
 * becomes.
 */
#include "model/tensor.h"

#include <stdio.h>

#include "model/ops.h"

static const char *const role_names[NTP_ROLES] = {
	[TP_NONE] = "none",     [TP_WHOLE] = "whole", [TP_COLUMN] = "column",
	[TP_SPLIT] = "split",   [TP_ROW] = "row",     [TP_HEADS] = "heads",
	[TP_VOCAB] = "vocab",   [TP_LOSS] = "loss",
};

const char *tp_role_name(enum tp_role r)
{
	return (unsigned)r < NTP_ROLES ? role_names[r] : "?";
}

int tp_role_splits_params(enum tp_role r)
{
	return r == TP_COLUMN || r == TP_ROW || r == TP_HEADS || r == TP_VOCAB;
}

static int elementwise(enum op_kind k)
{
	return k == OP_RELU || k == OP_GELU || k == OP_TANH || k == OP_SIGMOID ||
	       k == OP_ADD || k == OP_MUL || k == OP_DROPOUT;
}

static int degree(const int *tensor, int i)
{
	return tensor[i] > 1 ? tensor[i] : 1;
}

int tensor_roles(const struct graph *g, const int *tensor, enum tp_role *role, int *bad,
		 char *why, size_t len)
{
	for (int i = 0; i < g->nops; i++) {
		const struct op *op = &g->ops[i];
		int t = degree(tensor, i), split = 0, whole = 0;

		role[i] = TP_NONE;
		if (t == 1)
			continue;
		for (int k = 0; k < op->nin; k++) {
			int j = op->in[k];

			if (g->ops[j].kind == OP_INPUT)
				continue;
			if (degree(tensor, j) != t) {
				snprintf(why, len, "its input '%s' has tensor degree %d, not %d",
					 g->ops[j].name, degree(tensor, j), t);
				goto refuse;
			}
			if (role[j] == TP_COLUMN || role[j] == TP_SPLIT)
				split = 1;
			else
				whole = 1;
		}
		if (split && whole) {
			snprintf(why, len, "it mixes split and whole inputs");
			goto refuse;
		}
		if (op->kind == OP_LINEAR)
			role[i] = split ? TP_ROW : TP_COLUMN;
		else if (op->kind == OP_ATTENTION && !split)
			role[i] = TP_HEADS;
		else if (op->kind == OP_EMBEDDING)
			role[i] = TP_VOCAB;
		else if (op->kind == OP_LOSS && split)
			role[i] = TP_LOSS;
		else if (elementwise(op->kind))
			role[i] = split ? TP_SPLIT : TP_WHOLE;
		else if ((op->kind == OP_LAYERNORM || op->kind == OP_LOSS || op->kind == OP_INPUT) &&
			 !split)
			role[i] = TP_WHOLE;
		else {
			snprintf(why, len, "Megatron's tensor parallelism does not split %s%s",
				 op_kind_name(op->kind), split ? " on a split input" : "");
			goto refuse;
		}
		continue;
refuse:
		*bad = i;
		return -1;
	}
	return 0;
}
