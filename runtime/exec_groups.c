/*
 * The transport groups of this rank's shards (exec_impl.h): replica groups,
 * whose members hold the same parameters and sum their gradients, and the
 * c-groups of a c-split attention, which exchange their heads' context.
 * Every rank creates the same groups in the same order, after the shards
 * are laid out (exec_layout.c).
 */
#include "exec_groups.h"

#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/grow.h"
#include "exec_impl.h"
#include "exec_layout.h"

/* The ranks of op i's shards of c index ci, every round-robin replica's,
 * into ranks; their number. */
static int group_members(const struct exec *e, int i, int ci, int *ranks)
{
	const struct plan_op *po = &e->p->ops[i];
	int n = 0;

	for (int gr = 0; gr < exec_op_replicas(e->p, i); gr++)
		for (int k = 0; k < po->ndev; k++) {
			int coord[NDIMS];
			struct region r;

			exec_shard_region(e->g, e->p, i, k, e->mb_n, &r, coord);
			if (coord[DIM_C] == ci)
				ranks[n++] = exec_replica_rank(e->p, i, k, gr);
		}
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

/* Replica groups: the shards of an op with the same c index (of every
 * round-robin replica) hold the same parameters and sum their gradients.
 * Every rank creates the same groups in the same order; ops with the
 * same member list share one. */
int exec_groups_setup(struct exec *e)
{
	const struct plan *p = e->p;
	int nr = exec_ranks(p);
	int *ranks = malloc((size_t)nr * sizeof *ranks);
	int *other = malloc((size_t)nr * sizeof *other);
	int (*seen)[2] = NULL, nseen = 0, cap = 0, st = AP_OK; /* (op, cidx) -> gid */
	int *seen_gid = NULL;

	if (!ranks || !other) {
		free(ranks);
		free(other);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int i = 0; i < e->g->nops && !st; i++) {
		const struct plan_op *po = &p->ops[i];
		int dc = po->degree[DIM_C];

		if (e->g->ops[i].params <= 0 || po->ndev * exec_op_replicas(p, i) == dc)
			continue;
		for (int ci = 0; ci < dc && !st; ci++) {
			int n = group_members(e, i, ci, ranks), gid = -1, found = -1;

			/* the same member list as an earlier group: reuse it */
			for (int q = 0; q < nseen && found < 0; q++)
				if (may_share(e, seen[q][0], i) &&
				    group_members(e, seen[q][0], seen[q][1], other) == n &&
				    !memcmp(ranks, other, (size_t)n * sizeof *ranks))
					found = q;
			if (found >= 0) {
				gid = seen_gid[found];
			} else {
				st = e->t->ops->group(e->t, ranks, n, &gid);
				if (!st && (grow(&seen, nseen, &cap, sizeof *seen, 8) ||
					    !(seen_gid = realloc(seen_gid, (size_t)cap * sizeof *seen_gid))))
					st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
				if (!st) {
					seen[nseen][0] = i;
					seen[nseen][1] = ci;
					seen_gid[nseen++] = gid;
				}
			}
			if (!st && e->mine[i] >= 0 && e->sh[e->mine[i]].cidx == ci)
				e->sh[e->mine[i]].gid = gid;
		}
	}
	free(ranks);
	free(other);
	free(seen);
	free(seen_gid);
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
