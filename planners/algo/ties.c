/*
 * Tied weights for the planners (ties.h): tie groups, their spans over an
 * order of the operators, the cuts of an order that keep them whole, the
 * operators a group holds in its stage, and the check plan_validate()
 * makes, quietly.
 */
#include "algo/ties.h"

#include <stdlib.h>

#include "plan/plan_check.h"
#include "util/err.h"

int ties_any(const struct graph *g)
{
	for (int i = 0; i < g->nops; i++)
		if (g->ops[i].a.tie >= 0)
			return 1;
	return 0;
}

/* The operator i's tie group is named by: the end of its chain of ties.
 * A tie names an earlier operator (the model reader resolves it among the
 * operators read so far), so the chain ends; the bound only guards it. */
static int root_of(const struct graph *g, int i)
{
	for (int k = 0; k < g->nops && g->ops[i].a.tie >= 0; k++)
		i = g->ops[i].a.tie;
	return i;
}

int ties_ring(const struct graph *g, int **ring)
{
	int n = g->nops, *r = malloc(((size_t)n + 1) * sizeof *r);
	int *first = malloc(((size_t)n + 1) * sizeof *first);
	int *last = malloc(((size_t)n + 1) * sizeof *last);

	if (!r || !first || !last) {
		free(r);
		free(first);
		free(last);
		*ring = NULL;
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		r[i] = i;
		first[i] = last[i] = -1;
	}
	/* the members of each group in index order, the last back to the
	 * first */
	for (int i = 0; i < n; i++) {
		int t = root_of(g, i);

		if (last[t] >= 0)
			r[last[t]] = i;
		else
			first[t] = i;
		last[t] = i;
	}
	for (int t = 0; t < n; t++)
		if (last[t] >= 0)
			r[last[t]] = first[t];
	free(first);
	free(last);
	*ring = r;
	return AP_OK;
}

void ties_span(const struct graph *g, const int *pos, int *lo, int *hi)
{
	for (int i = 0; i < g->nops; i++)
		lo[i] = hi[i] = pos[i];
	for (int i = 0; i < g->nops; i++)
		if (g->ops[i].a.tie >= 0) {
			int t = root_of(g, i);

			lo[t] = pos[i] < lo[t] ? pos[i] : lo[t];
			hi[t] = pos[i] > hi[t] ? pos[i] : hi[t];
		}
	for (int i = 0; i < g->nops; i++)
		if (g->ops[i].a.tie >= 0) {
			int t = root_of(g, i);

			lo[i] = lo[t];
			hi[i] = hi[t];
		}
}

int ties_cuts(const struct graph *g, const int *order, char *keep)
{
	int n = g->nops, *pos = calloc((size_t)n + 1, sizeof *pos);
	int *lo = malloc(((size_t)n + 1) * sizeof *lo), *hi = malloc(((size_t)n + 1) * sizeof *hi);
	int *open = calloc((size_t)n + 2, sizeof *open);

	if (!pos || !lo || !hi || !open) {
		free(pos);
		free(lo);
		free(hi);
		free(open);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int k = 0; k < n; k++)
		pos[order[k]] = k;
	ties_span(g, pos, lo, hi);
	/* a group from lo to hi is split by the cuts before lo + 1 .. hi */
	for (int i = 0; i < n; i++)
		if (lo[i] < hi[i]) {
			open[lo[i] + 1]++;
			open[hi[i] + 1]--;
		}
	for (int k = 0, depth = 0; k <= n; k++) {
		depth += open[k];
		keep[k] = depth == 0;
	}
	free(pos);
	free(lo);
	free(hi);
	free(open);
	return AP_OK;
}

/* Operators are in topological order: what follows a member (down) and
 * what leads to one (up) are a pass each, per group. */
int ties_forced(const struct graph *g, int *most, int *tied)
{
	int n = g->nops, st = AP_OK;
	int *root = malloc(((size_t)n + 1) * sizeof *root);
	char *down = malloc((size_t)n + 1), *up = malloc((size_t)n + 1);

	*most = 1;
	*tied = -1;
	if (!root || !down || !up)
		st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int i = 0; i < n && !st; i++)
		root[i] = root_of(g, i);
	/* each group once, from a member that ties its weight to another */
	for (int t = 0; t < n && !st; t++) {
		int count = 0, first = 1;

		for (int i = 0; i < t && first; i++)
			first = root[i] != root[t] || g->ops[i].a.tie < 0;
		if (g->ops[t].a.tie < 0 || !first)
			continue;
		for (int i = 0; i < n; i++)
			up[i] = down[i] = root[i] == root[t];
		for (int i = 0; i < n; i++)
			for (int k = 0; k < g->ops[i].nin; k++)
				down[i] |= down[g->ops[i].in[k]];
		for (int i = n - 1; i >= 0; i--)
			for (int k = 0; k < g->ops[i].nin && up[i]; k++)
				up[g->ops[i].in[k]] = 1;
		for (int i = 0; i < n; i++)
			count += up[i] && down[i];
		if (count > *most) {
			*most = count;
			*tied = t;
		}
	}
	free(root);
	free(down);
	free(up);
	return st;
}

int ties_kept(const struct plan *p, const struct graph *g)
{
	for (int i = 0; i < g->nops && i < p->nops; i++)
		if (plan_tie_broken(p, g, i) != PLAN_TIE_KEPT)
			return 0;
	return 1;
}
