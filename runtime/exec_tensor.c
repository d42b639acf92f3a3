/*
 * Megatron-LM's tensor parallelism in the executor (exec_tensor.h;
 * docs/plan-format.md, "Tensor parallelism"; Shoeybi et al. 2019).  An
 * op with tensor degree t runs on t ranks of a tensor group, the tensor
 * rank innermost in its devices, and model/tensor.h gives its role:
 *
 * - column and split: the output split along c, tensor rank r holding
 *   [r C / t, (r + 1) C / t) (tensor_part(); a split op, a row-parallel
 *   linear and the loss read their input so split);
 * - row, heads and vocab: the output whole, a partial sum that
 *   exec_tensor_forward() all-reduces over the group after the kernel;
 * - whole (layernorm, residual adds, inputs): the whole tensor on every
 *   member, each computing the same; a member takes a whole tensor from
 *   its peer of the same tensor rank (exec_layout.c), so each gradient
 *   goes back to the one member that sent it;
 * - loss: the parallel cross-entropy over the split logits, which sums
 *   its statistics inside its kernel (kbufs.csum over the tensor group).
 *
 * In the backward, a column or heads op's whole input gets a partial
 * gradient from each member: exec_tensor_backward() all-reduces it, so
 * every member hands the same whole gradient on.  Each collective is a
 * blocking all-reduce inside a task, which every member of the group runs
 * at the same point of the same order (its group's schedule), as the
 * c-split attention's exchange does (exec.c).  The kernels' side of the
 * roles is backend.h's struct kern.
 */
#include "exec_tensor.h"

#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/grow.h"
#include "exec_impl.h"
#include "model/tensor.h"

int exec_tensor_roles(struct exec *e)
{
	const struct graph *g = e->g;
	int *tensor = malloc((size_t)g->nops * sizeof *tensor), bad = 0, st = AP_OK;
	char why[256];

	e->role = calloc((size_t)g->nops, sizeof *e->role);
	if (!tensor || !e->role) {
		free(tensor);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int i = 0; i < g->nops; i++)
		tensor[i] = plan_op_tensor(e->p, i);
	if (tensor_roles(g, tensor, e->role, &bad, why, sizeof why))
		st = ap_err(AP_EINPUT, NULL, 0, "operator '%s': %s (plan_validate() refuses it)",
			    g->ops[bad].name, why);
	free(tensor);
	return st;
}

int exec_tensor_rank(const struct exec *e, int i, int k)
{
	return k % plan_op_tensor(e->p, i);
}

int exec_tensor_data(const struct exec *e, int i, int k)
{
	return k / plan_op_tensor(e->p, i);
}

int exec_tensor_splits_out(const struct exec *e, int i)
{
	return e->role[i] == TP_COLUMN || e->role[i] == TP_SPLIT;
}

int exec_tensor_splits_in(const struct exec *e, int i)
{
	return e->role[i] == TP_ROW || e->role[i] == TP_SPLIT || e->role[i] == TP_LOSS;
}

/* Whether op i's output is a partial sum over its tensor group. */
static int partial_out(const struct exec *e, int i)
{
	return e->role[i] == TP_ROW || e->role[i] == TP_HEADS || e->role[i] == TP_VOCAB;
}

/* Gives group gid of data-parallel replica d to shard s if it is one of
 * its members: the group the parallel cross-entropy sums over too. */
static void join(const struct exec *e, struct rshard *s, int d, int gid)
{
	if (exec_tensor_data(e, s->op, s->k) != d)
		return;
	s->tgid = gid;
	if (e->role[s->op] == TP_LOSS)
		s->cg.gid = gid;
}

/* The tensor groups: the t members of each data-parallel replica of an
 * op, devices[d t .. d t + t); ops with the same members share one.
 * Every rank creates the same groups in the same order. */
int exec_tensor_groups(struct exec *e)
{
	const struct plan *p = e->p;
	int (*seen)[3] = NULL, nseen = 0, cap = 0, st = AP_OK; /* (op, d, gid) */

	for (int i = 0; i < e->g->nops && !st; i++) {
		const struct plan_op *po = &p->ops[i];
		int t = plan_op_tensor(p, i);

		if (t < 2)
			continue;
		for (int d = 0; d < po->ndev / t && !st; d++) {
			const int *ranks = po->devices + d * t;
			int gid = -1, q;

			for (q = 0; q < nseen; q++)
				if (plan_op_tensor(p, seen[q][0]) == t &&
				    !memcmp(p->ops[seen[q][0]].devices + seen[q][1] * t, ranks,
					    (size_t)t * sizeof *ranks))
					break;
			if (q < nseen) {
				gid = seen[q][2];
			} else {
				st = e->t->ops->group(e->t, ranks, t, &gid);
				if (!st && grow(&seen, nseen, &cap, sizeof *seen, 8))
					st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
				if (!st) {
					seen[nseen][0] = i;
					seen[nseen][1] = d;
					seen[nseen++][2] = gid;
				}
			}
			if (!st && e->mine[i] >= 0)
				join(e, &e->sh[e->mine[i]], d, gid);
		}
	}
	free(seen);
	return st;
}

/* buf[0 .. n) summed over s's tensor group, blocking */
static int tensor_sum(struct exec *e, const struct rshard *s, float *buf, int64_t n)
{
	int id;

	if (e->t->ops->iallreduce(e->t, s->tgid, buf, n, &id))
		return AP_EFAIL;
	return e->t->ops->wait_one(e->t, id);
}

int exec_tensor_forward(struct exec *e, struct rshard *s, int j)
{
	if (s->tgid < 0 || !partial_out(e, s->op))
		return AP_OK;
	return tensor_sum(e, s, s->out[j], region_elems(&s->reg));
}

int exec_tensor_backward(struct exec *e, struct rshard *s, int kk, float *buf)
{
	if (s->tgid < 0 || !(e->role[s->op] == TP_COLUMN || e->role[s->op] == TP_HEADS))
		return AP_OK;
	return tensor_sum(e, s, buf, region_elems(&s->inreg[kk]));
}
