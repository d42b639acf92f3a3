/*
 * Large-model terms of the cost model (transformer.h).
 */
#include "cost/transformer.h"

#include <string.h>

#include "hw/roofline.h"

/* Elements per sample of op j's output. */
static double per_sample(const struct graph *g, int j)
{
	return (double)g->ops[j].out_bytes / BYTES_PER_ELEM / (double)g->batch;
}

double cost_act_bytes(const struct graph *g, int j, enum precision prec, int64_t mb)
{
	return per_sample(g, j) * precision_elem_bytes(prec) * (double)mb;
}

/* The op's data input: its first input (attention's, a linear's). */
static int data_input(const struct op *op)
{
	return op->nin > 0 ? op->in[0] : -1;
}

/* The degree vector of a shard: n over the replicas, and the tensor
 * split along the dim its role splits (c for the split roles, l for whole
 * ones under sequence parallelism). */
static void tp_degree(const struct op *op, const struct tp_op *o, int dn, int deg[NDIMS])
{
	for (int d = 0; d < NDIMS; d++)
		deg[d] = 1;
	deg[DIM_N] = dn;
	if (o->t <= 1)
		return;
	if (o->role == TP_WHOLE) {
		if (o->sp && shape_dim(&op->out, DIM_L) >= 0)
			deg[DIM_L] = o->t;
	} else if (o->role != TP_NONE && shape_dim(&op->out, DIM_C) >= 0) {
		deg[DIM_C] = o->t;
	}
}

int cost_tp_op(const struct profile *p, const struct graph *g, int i, const struct tp_op *o,
	       int microbatches, int dn, struct op_cost *out)
{
	int deg[NDIMS];

	tp_degree(&g->ops[i], o, dn, deg);
	if (o->prec == PREC_FP32)
		return cost_op(p, g, i, deg, microbatches, out);
	deg[DIM_N] *= microbatches;
	roofline_cost_at(&p->dev, g, i, deg, o->prec, out);
	if (g->ops[i].kind == OP_INPUT)
		out->bwd_us = 0;
	return 0;
}

double cost_selective_share(const struct op *op)
{
	double s, h, scores;

	if (op->kind != OP_ATTENTION || op->fwd_macs <= 0)
		return 0;
	s = (double)shape_size(&op->out, DIM_L);
	h = (double)shape_size(&op->out, DIM_C);
	/* q k^T and the scores times v: 2 s^2 h per sample */
	scores = 2.0 * s * s * h * (double)shape_size(&op->out, DIM_N);
	return scores < (double)op->fwd_macs ? scores / (double)op->fwd_macs : 1;
}

double cost_wgrad_share(const struct graph *g, int i)
{
	const struct op *op = &g->ops[i];

	if (op->bwd_macs <= 0)
		return op->kind == OP_EMBEDDING ? 1 : 0;
	if (op->kind == OP_LINEAR || op->kind == OP_CONV2D)
		return (double)op->fwd_macs / (double)op->bwd_macs;
	if (op->kind == OP_ATTENTION)
		return (1 - cost_selective_share(op)) * (double)op->fwd_macs /
		       (double)op->bwd_macs;
	return op->kind == OP_EMBEDDING ? 1 : 0;
}

int64_t cost_saved_bytes(const struct graph *g, int i, const struct tp_op *o, int64_t mb)
{
	const struct op *op = &g->ops[i];
	double e = precision_elem_bytes(o->prec), t = o->t > 1 ? o->t : 1;
	double seq = o->sp ? t : 1; /* what sequence parallelism splits */
	int j = data_input(op);
	double in = j >= 0 ? per_sample(g, j) : 0, out = per_sample(g, i), b;

	if (o->recompute == 1)
		return 0;
	switch (op->kind) {
	case OP_LAYERNORM:
		b = in * e / seq;
		break;
	case OP_ATTENTION: {
		double s = (double)shape_size(&op->out, DIM_L);
		double sc = (double)op->a.heads * s * s;

		b = in * e / seq + 4 * out * e / t;
		if (o->recompute != 2)
			b += (op->a.dropout > 0 ? 2 * e + 1 : e) * sc / t;
		break;
	}
	case OP_LINEAR:
		b = in * e / (o->role == TP_ROW ? t : seq);
		break;
	case OP_GELU:
	case OP_RELU:
	case OP_TANH:
	case OP_SIGMOID:
		b = in * e / (o->role == TP_SPLIT ? t : seq);
		break;
	case OP_DROPOUT:
		b = out / (o->role == TP_SPLIT ? t : seq);
		break;
	case OP_ADD:
	case OP_INPUT:
	case OP_EMBEDDING:
	case OP_FLATTEN:
	case OP_RESHAPE:
		b = 0;
		break;
	case OP_LOSS:
		b = in * BYTES_PER_ELEM / (o->role == TP_LOSS ? t : 1);
		break;
	default:
		b = out * e;
		break;
	}
	return (int64_t)(b * (double)mb);
}

void cost_tp_comm_s(const struct cluster *c, const int *group, const struct graph *g, int i,
		    const struct tp_op *o, int64_t mb, double *fwd_s, double *bwd_s)
{
	const struct op *op = &g->ops[i];
	int j = data_input(op);
	int64_t out_b = (int64_t)cost_act_bytes(g, i, o->prec, mb);
	int64_t in_b = j >= 0 ? (int64_t)cost_act_bytes(g, j, o->prec, mb) : 0;
	double ar_out, ar_in;
	int partial = o->role == TP_ROW || o->role == TP_HEADS || o->role == TP_VOCAB;
	int gathers = o->role == TP_COLUMN || o->role == TP_HEADS;

	*fwd_s = *bwd_s = 0;
	if (o->t <= 1)
		return;
	ar_out = cost_allreduce_s(c, group, o->t, out_b);
	ar_in = cost_allreduce_s(c, group, o->t, in_b);
	if (partial) {
		*fwd_s += o->sp ? ar_out / 2 : ar_out;
		*bwd_s += o->sp ? ar_out / 2 : 0;
	}
	if (gathers) {
		*fwd_s += o->sp ? ar_in / 2 : 0;
		/* an all-reduce, or the all-gather again for the weight
		 * gradient and the reduce-scatter: the same time */
		*bwd_s += ar_in;
	}
	if (o->role == TP_LOSS && j >= 0) {
		double vocab = (double)shape_size(&g->ops[j].out, DIM_C);
		int64_t tokens = (int64_t)(per_sample(g, j) / (vocab > 0 ? vocab : 1) * (double)mb);

		*fwd_s += 3 * cost_allreduce_s(c, group, o->t, tokens * BYTES_PER_ELEM);
	}
}

double cost_param_state_bytes(enum precision prec, enum optimizer o, int zero, int d)
{
	double copies = optimizer_state_copies(o), dd = d > 1 ? d : 1;
	double held, sharded;

	if (prec == PREC_MIXED) {
		held = 2 + 2;             /* fp16 weight and gradient */
		sharded = 4 + 4 * copies; /* fp32 master and state */
	} else {
		held = 4 + 4;
		sharded = 4 * copies;
	}
	if (zero >= 3)
		return (held + sharded) / dd;
	if (zero >= 1)
		return held + sharded / dd;
	return held + sharded;
}
