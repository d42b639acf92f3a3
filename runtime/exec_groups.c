/*
 * The transport groups of this rank's shards (exec_impl.h): replica groups,
 * whose members hold the same parameters and sum their gradients (under
 * tensor parallelism those of one tensor rank; with Megatron's embedding
 * group, a tied linear's copies on other ranks with its embedding), and the
 * c-groups of a c-split attention, which exchange their heads' context.
 * Every rank creates the same groups in the same order, after the shards
 * are laid out (exec_layout.c).
 */
#include "exec_groups.h"

#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/grow.h"
#include "util/intmath.h"
#include "exec_impl.h"
#include "exec_layout.h"
#include "exec_tensor.h"
#include "model/ops.h"
#include "plan/plan_check.h"

int exec_tie_copy(const struct exec *e, int i)
{
	const struct op *op = &e->g->ops[i];

	return op->kind == OP_LINEAR && op->a.tie >= 0 &&
	       !plan_same_devices(&e->p->ops[i], &e->p->ops[op->a.tie]);
}

/* The ranks of op i's shards of c index ci and tensor rank tr, every
 * round-robin replica's, appended to ranks[0 .. n); the new count. */
static int shard_ranks(const struct exec *e, int i, int ci, int tr, int *ranks, int n)
{
	const struct plan_op *po = &e->p->ops[i];

	for (int gr = 0; gr < exec_op_replicas(e->p, i); gr++)
		for (int k = 0; k < po->ndev; k++) {
			int coord[NDIMS];
			struct region r;

			exec_shard_region(e, i, k, &r, coord);
			if (coord[DIM_C] == ci && exec_tensor_rank(e, i, k) == tr)
				ranks[n++] = exec_replica_rank(e->p, i, k, gr);
		}
	return n;
}

int exec_param_members(const struct exec *e, int i, int ci, int tr, int *ranks)
{
	int emb = exec_tie_copy(e, i) ? e->g->ops[i].a.tie : i;
	int n = shard_ranks(e, emb, ci, tr, ranks, 0);

	/* Megatron's embedding group: the copies of a tied linear on other
	 * ranks (neither is split along c) */
	for (int l = 0; l < e->g->nops; l++)
		if (exec_tie_copy(e, l) && e->g->ops[l].a.tie == emb)
			n = shard_ranks(e, l, ci, tr, ranks, n);
	qsort(ranks, (size_t)n, sizeof *ranks, int_cmp);
	return n;
}

/* Whether ops a and b, with the same members, may share a group: its
 * all-reduces must come in one order on every member.  Under
 * asynchronous 1F1B a round-robin stage's replicas reach their rounds at
 * different items, so its group is its stage's own. */
static int may_share(const struct exec *e, int a, int b)
{
	if (!e->async || e->stage_of[a] == e->stage_of[b])
		return 1;
	return exec_op_replicas(e->p, a) == 1 && exec_op_replicas(e->p, b) == 1;
}

/* Gives group gid to this rank's shards of op i (and of the copies of a
 * linear tied to it) with c index ci and tensor rank tr. */
static void join(struct exec *e, int i, int ci, int tr, int gid)
{
	for (int l = 0; l < e->g->nops; l++) {
		struct rshard *s = e->mine[l] >= 0 ? &e->sh[e->mine[l]] : NULL;

		if (s && (l == i || (exec_tie_copy(e, l) && e->g->ops[l].a.tie == i)) &&
		    s->cidx == ci && s->trank == tr)
			s->gid = gid;
	}
}

/* Replica groups: the shards of an op with the same c index and tensor
 * rank (of every round-robin replica, and a tied linear's copies) hold
 * the same parameters and sum their gradients.  Every rank creates the
 * same groups in the same order; ops with the same member list share
 * one. */
int exec_groups_setup(struct exec *e)
{
	const struct plan *p = e->p;
	int nr = exec_ranks(p);
	int *ranks = malloc((size_t)nr * sizeof *ranks);
	int *other = malloc((size_t)nr * sizeof *other);
	int (*seen)[4] = NULL, nseen = 0, cap = 0, st = AP_OK; /* op, cidx, trank, gid */

	if (!ranks || !other) {
		free(ranks);
		free(other);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int i = 0; i < e->g->nops && !st; i++) {
		int nt = plan_op_tensor(p, i), slices = p->ops[i].degree[DIM_C] * nt;

		/* each c index and tensor rank */
		for (int k = 0; k < slices && e->g->ops[i].params > 0 && !st; k++) {
			int ci = k / nt, tr = k % nt, q = 0;
			int n = exec_param_members(e, i, ci, tr, ranks);

			if (n < 2)
				continue;
			/* the same member list as an earlier group: reuse it */
			for (; q < nseen; q++)
				if (may_share(e, seen[q][0], i) &&
				    exec_param_members(e, seen[q][0], seen[q][1], seen[q][2],
						       other) == n &&
				    !memcmp(ranks, other, (size_t)n * sizeof *ranks))
					break;
			if (q == nseen) {
				if (grow(&seen, nseen, &cap, sizeof *seen, 8)) {
					st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
					break;
				}
				seen[q][0] = i;
				seen[q][1] = ci;
				seen[q][2] = tr;
				st = e->t->ops->group(e->t, ranks, n, &seen[q][3]);
				nseen++;
			}
			if (!st)
				join(e, i, ci, tr, seen[q][3]);
		}
	}
	free(ranks);
	free(other);
	free(seen);
	return st;
}

/* c-groups: the shards of a c-split attention with the same coordinates
 * but c exchange their heads' context (cpu_attn.c).  Every rank creates
 * them in the same order, after the replica groups. */
int exec_cgroups_setup(struct exec *e)
{
	const struct plan *p = e->p;
	int *ranks = malloc((size_t)exec_ranks(p) * sizeof *ranks), st = AP_OK;

	if (!ranks)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int i = 0; i < e->g->nops && !st; i++) {
		const struct plan_op *po = &p->ops[i];
		int dc = po->degree[DIM_C], stride = 1;

		if (e->g->ops[i].kind != OP_ATTENTION || dc < 2)
			continue;
		for (int d = DIM_C + 1; d < NDIMS; d++)
			stride *= po->degree[d];
		/* the first member of each group: c coordinate 0; one group
		 * per round-robin replica */
		for (int gr = 0; gr < exec_op_replicas(p, i) && !st; gr++)
			for (int k = 0; k < po->ndev && !st; k++) {
				const struct rshard *s = e->mine[i] >= 0 ? &e->sh[e->mine[i]] : NULL;
				int gid, mine = -1;

				if (k / stride % dc)
					continue;
				for (int ci = 0; ci < dc; ci++) {
					ranks[ci] = exec_replica_rank(p, i, k + ci * stride, gr);
					if (s && s->rep == gr && s->k == k + ci * stride)
						mine = ci;
				}
				st = e->t->ops->group(e->t, ranks, dc, &gid);
				if (!st && mine >= 0)
					e->sh[e->mine[i]].cg.gid = gid;
			}
	}
	free(ranks);
	return st;
}
