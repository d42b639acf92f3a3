/*
 * Which plans the runtime can execute (exec_support.h: exec_supported(),
 * exec_can_split()): the dims each operator kind can be split
 * along, the operators a backend implements, tied weights, the
 * schedules round-robin replicas and recomputation run under, and which
 * of Megatron-LM's features it runs.  The plan validator (plan_check.c)
 * allows more than this: a valid plan the runtime cannot run gets one
 * message, naming the first operator or stage at fault.
 */
#include "exec_support.h"

#include <stdio.h>

#include "util/err.h"
#include "model/ops.h"
#include "model/tensor.h"
#include "plan/sched.h"

#define BIT(d) (1u << (d))

/* The dims along which the runtime can split op (beyond what the plan
 * validator allows): n always; c where a shard's output channels need its
 * slice of the parameters only (a c-split attention runs its heads and
 * exchanges their context, cpu_attn.c); h and w of windows (the halo is
 * gathered); l of attention (whole keys and values). */
static unsigned runnable_dims(const struct op *op)
{
	unsigned all = (1u << NDIMS) - 1;

	switch (op->kind) {
	case OP_INPUT:
	case OP_RELU:
	case OP_GELU:
	case OP_TANH:
	case OP_SIGMOID:
	case OP_ADD:
	case OP_MUL:
	case OP_DROPOUT:
		return all;
	case OP_LINEAR: /* Krizhevsky's model parallelism: output features */
		return BIT(DIM_N) | BIT(DIM_C) | BIT(DIM_L);
	case OP_CONV2D:
		return BIT(DIM_N) | BIT(DIM_H) | BIT(DIM_W) | (op->a.groups == 1 ? BIT(DIM_C) : 0);
	case OP_MAXPOOL:
	case OP_AVGPOOL:
		return BIT(DIM_N) | BIT(DIM_C) | BIT(DIM_H) | BIT(DIM_W);
	case OP_ADAPTIVE_AVGPOOL:
	case OP_EMBEDDING:
		return BIT(DIM_N) | BIT(DIM_C) | BIT(DIM_L);
	case OP_ATTENTION:
		return BIT(DIM_N) | BIT(DIM_C) | BIT(DIM_L);
	case OP_CONCAT:
		return all;
	case OP_BATCHNORM: /* statistics per channel over a shard's samples */
		return BIT(DIM_N) | BIT(DIM_C);
	case OP_LAYERNORM:
	case OP_SOFTMAX:
	case OP_LOSS:
		return op->split_mask; /* never the dim they normalise over */
	default:
		return BIT(DIM_N);
	}
}

/* The first dim along which op cannot be split as degree asks on be,
 * or -1. */
static int unrunnable_dim(const struct backend *be, const struct op *op,
			  const int degree[NDIMS])
{
	unsigned ok = runnable_dims(op);

	if (!be->window_splits && (op->kind == OP_CONV2D || op->kind == OP_MAXPOOL ||
				   op->kind == OP_AVGPOOL))
		ok &= ~(BIT(DIM_H) | BIT(DIM_W));

	for (int d = 0; d < NDIMS; d++)
		if (degree[d] > 1 && !(ok & BIT(d)))
			return d;
	/* a c-split attention shard runs whole heads */
	if (op->kind == OP_ATTENTION && op->a.heads % degree[DIM_C])
		return DIM_C;
	return -1;
}

int exec_can_split(const struct backend *be, const struct graph *g, int i,
		   const int degree[NDIMS])
{
	return unrunnable_dim(be, &g->ops[i], degree) < 0;
}

/* Why op i, a linear tied to an embedding's weight, cannot run under p
 * (what the runtime requires, to follow "runs a tied pair only"), or
 * NULL when it can or is not tied.  The table [vocab][out] is the
 * linear's W[out][in] as it is (params.h), so the linear runs with the
 * embedding's buffer: every shard of both must hold the whole table
 * (neither split along c), and the two backwards add into one gradient,
 * summed over the replicas once and applied once; a bias of its own
 * would not follow the table in memory, and the asynchronous schedules
 * keep or predict weight versions per shard.  That both run on the same
 * ranks, and in one stage where their stages have round-robin replicas,
 * is plan_validate()'s rule (plan_check.c), which every plan passes
 * before it runs. */
static const char *tie_refusal(const struct graph *g, const struct plan *p, int i)
{
	const struct op *op = &g->ops[i];

	if (op->kind != OP_LINEAR || op->a.tie < 0)
		return NULL;
	if (op->a.bias)
		return "without a bias (bias=0)";
	if (sched_async(p->sched))
		return "under a synchronous schedule (gpipe or 1f1b)";
	if (p->ops[i].degree[DIM_C] > 1 || p->ops[op->a.tie].degree[DIM_C] > 1)
		return "when neither is split along 'c' (each shard holds the whole weight)";
	return NULL;
}

int exec_tie_check(const struct graph *g, const struct plan *p, int i, const char *path)
{
	const char *why = tie_refusal(g, p, i);

	if (!why)
		return AP_OK;
	return ap_err(AP_EINPUT, path, 0,
		      "operator '%s' (linear) ties its weight to '%s': the runtime runs "
		      "a tied pair only %s", g->ops[i].name, g->ops[g->ops[i].a.tie].name, why);
}

/* What of Megatron-LM's features (docs/plan-format.md, "Training",
 * "Tensor parallelism", "Pipelines of groups") the runtime does not
 * execute, with its reason, or NULL.  It runs tensor parallelism on a
 * backend whose kernels take the roles (struct kern), ZeRO-1, Adam, and
 * the orders of interleaved-1f1b and zb-h1, whose B and W passes need
 * kernels that run them apart (kernel_ops.weight_pass), all in float32
 * under the synchronous schedules; what it leaves out stays "simulated
 * but not executable". */
static const char *megatron_refusal(const struct graph *g, const struct plan *p,
				    const struct backend *be, char *why, size_t len)
{
	int tensor = 0, adam = p->has_optimizer && p->optimizer == OPTIMIZER_ADAM;

	if (p->precision != PREC_FP32)
		return "mixed precision: simulated but not executable by the runtime yet "
		       "(it trains in float32; plan with precision=fp32)";
	if (p->seq_parallel)
		return "sequence parallelism: simulated but not executable by the runtime yet";
	if (p->zero > 1)
		return "ZeRO-3: simulated but not executable by the runtime yet (it runs ZeRO-1)";
	for (int i = 0; i < g->nops; i++) {
		const struct op *op = &g->ops[i];
		int t = plan_op_tensor(p, i);

		tensor |= t > 1;
		if (p->ops[i].recompute == RECOMPUTE_SELECTIVE)
			snprintf(why, len, "selective recomputation of '%s': simulated but not "
				 "executable by the runtime yet (it recomputes whole operators)",
				 op->name);
		else if (t > 1 && !be->tensor_parallel)
			snprintf(why, len, "tensor parallelism ('%s'): not executable by the %s "
				 "backend yet (the cpu backend runs it)", op->name, be->name);
		else if (t > 1 && op->kind == OP_ATTENTION && op->a.heads % t)
			snprintf(why, len, "'%s' (attention) over %d tensor ranks, which do not "
				 "divide its %d heads: not executable by the runtime (a member "
				 "runs whole heads)", op->name, t, op->a.heads);
		else if (p->sched == SCHED_ZB_H1 && op->kind != OP_INPUT && be->ops[op->kind] &&
			 (op->params > 0 || op->a.tie >= 0) && !be->ops[op->kind]->weight_pass)
			snprintf(why, len, "zb-h1, but the %s backend's %s ('%s') does not "
				 "run its weight gradient (the W pass) apart from its input "
				 "gradient: not executable by it yet", be->name,
				 op_kind_name(op->kind), op->name);
		else
			continue;
		return why;
	}
	if (sched_async(p->sched) && (tensor || p->zero || adam))
		return "Megatron-LM's features under an asynchronous schedule: the runtime runs "
		       "tensor parallelism, ZeRO and Adam under gpipe, 1f1b, interleaved-1f1b "
		       "and zb-h1";
	if (adam && !be->adam) {
		snprintf(why, len, "adam: not implemented by the %s backend", be->name);
		return why;
	}
	return NULL;
}

int exec_supported(const struct graph *g, const struct plan *p, const struct backend *be,
		   const char *path)
{
	char buf[320];
	const char *why;

	/* The replicas of a stage update in rounds of one micro-batch each
	 * (exec.h): rounds of the stream that fit the steps' micro-batches,
	 * and versions that follow from the order of the items, not from
	 * predictions over a count of updates. */
	for (int s = 0; s < p->nstages && sched_async(p->sched); s++) {
		int r = plan_stage_replicas(p, s);

		if (r > 1 && p->sched == SCHED_ASYNC_PREDICT)
			return ap_err(AP_EINPUT, path, 0,
				      "stage %d has %d round-robin replicas: not executable "
				      "by the runtime under async-predict yet (it runs them "
				      "under gpipe, 1f1b and 1f1b-async)", p->stages[s].id, r);
		if (p->microbatches % r)
			return ap_err(AP_EINPUT, path, 0,
				      "stage %d has %d round-robin replicas, which do not divide "
				      "the %d micro-batches: under %s the runtime updates a "
				      "replicated stage once per round of %d micro-batches, "
				      "and a step must hold whole rounds", p->stages[s].id, r,
				      p->microbatches, sched_name(p->sched), r);
	}
	if ((why = megatron_refusal(g, p, be, buf, sizeof buf)))
		return ap_err(AP_EINPUT, path, 0, "the plan uses %s", why);
	for (int i = 0; i < g->nops && p->sched == SCHED_ASYNC_PREDICT; i++)
		if (p->ops[i].recompute)
			return ap_err(AP_EINPUT, path, 0,
				      "operator '%s' recomputes: not executable by the runtime "
				      "under async-predict, whose forwards run beside backwards "
				      "(it runs recomputation under gpipe, 1f1b and 1f1b-async)",
				      g->ops[i].name);
	for (int s = 0; s < p->nstages; s++)
		if (plan_stage_microbatches(p, s) != p->microbatches)
			return ap_err(AP_EINPUT, path, 0,
				      "stage %d runs %d micro-batches where the schedule has %d: "
				      "stages of different micro-batch sizes are not executable "
				      "by the runtime yet", p->stages[s].id,
				      plan_stage_microbatches(p, s), p->microbatches);
	for (int i = 0; i < g->nops; i++)
		if (g->ops[i].a.dropout > 0)
			return ap_err(AP_EINPUT, path, 0,
				      "attention '%s' drops attention weights (dropout=%g): not "
				      "executable by the runtime yet",
				      g->ops[i].name, g->ops[i].a.dropout);
	for (int i = 0; i < g->nops; i++) {
		const struct op *op = &g->ops[i];
		int d;

		if (op->imported || op->kind == OP_OPAQUE)
			return ap_err(AP_EINPUT, path, 0,
				      "operator '%s' (%s) has measured costs only: the runtime "
				      "cannot execute it", op->name, op_kind_name(op->kind));
		if (op->kind != OP_INPUT && !be->ops[op->kind])
			return ap_err(AP_EINPUT, path, 0,
				      "operator '%s' (%s) is not implemented by the %s backend",
				      op->name, op_kind_name(op->kind), be->name);
		if (op->nin > KERN_MAX_IN)
			return ap_err(AP_EINPUT, path, 0,
				      "operator '%s' has %d inputs; the runtime runs at most %d",
				      op->name, op->nin, KERN_MAX_IN);
		if (exec_tie_check(g, p, i, path))
			return AP_EINPUT;
		if (op->kind == OP_LINEAR) {
			const struct shape *x = &g->ops[op->in[0]].out;

			if (x->kind[x->rank - 1] != DIM_C)
				return ap_err(AP_EINPUT, path, 0,
					      "operator '%s' (linear): its input's features must "
					      "be the last dim to be run", op->name);
		}
		d = unrunnable_dim(be, op, p->ops[i].degree);
		if (d >= 0 && op->kind == OP_ATTENTION && d == DIM_C)
			return ap_err(AP_EINPUT, path, 0,
				      "operator '%s' (attention) split %d ways along 'c': not "
				      "executable by the runtime yet (a shard runs whole heads, "
				      "and %d heads do not divide so)", op->name,
				      p->ops[i].degree[DIM_C], op->a.heads);
		if (d >= 0 && op->kind == OP_BATCHNORM)
			return ap_err(AP_EINPUT, path, 0,
				      "operator '%s' (batchnorm) split along '%s': its statistics "
				      "would span shards (the runtime splits batchnorm along n, "
				      "each shard normalising its own samples, and c)",
				      op->name, dim_name(d));
		if (d >= 0)
			return ap_err(AP_EINPUT, path, 0,
				      "operator '%s' (%s) split along '%s': not executable "
				      "by the runtime yet (it splits every operator along n, "
				      "linear, conv2d and attention along their output "
				      "channels, conv2d and pools along h and w, attention "
				      "along l, element-wise operators and concat along any "
				      "dim)",
				      op->name, op_kind_name(op->kind), dim_name(d));
	}
	return AP_OK;
}
