/*
 * The series-parallel decomposition of an operator graph (sp_decomp.h):
 * the tree, built top down by splitting a set of operators into its weakly
 * connected pieces or at its cuts; its units, merged by least compute;
 * and the depth-first numbering that makes every node an interval.
 * planners/graphpipe.c partitions the tree into stages.
 */
#include "algo/sp_decomp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/grow.h"

/* What the recursion of sp_decomp_build shares: the tree it grows, the
 * graph's consumers, and per op a stamp of the set being split and its
 * position there. */
struct sp_build {
	struct sp_decomp *t;
	const struct graph *g;
	const int *cons_ofs, *cons;
	int *mark, stamp, *pos;
};

/* --- series-parallel decomposition -------------------------------------- */

static int new_node(struct sp_decomp *t, int kind, int op)
{
	struct sp_node *x;

	if (reserve(&t->node, &t->cap_node, (size_t)t->nnode + 1, sizeof *t->node))
		return -1;
	x = &t->node[t->nnode];
	memset(x, 0, sizeof *x);
	x->kind = kind;
	x->op = op;
	x->nop = op >= 0;
	if (op >= 0)
		t->next_op[op] = -1;
	return t->nnode++;
}

static int find_root(int *up, int x)
{
	while (up[x] != x)
		x = up[x] = up[up[x]];
	return x;
}

static int add_kids(struct sp_decomp *t, int id, const int *k, int nk)
{
	if (reserve(&t->kids, &t->cap_kids, (size_t)t->nkids + (size_t)nk, sizeof *t->kids))
		return -1;
	t->node[id].kid_ofs = t->nkids;
	t->node[id].nkid = nk;
	memcpy(t->kids + t->nkids, k, (size_t)nk * sizeof *k);
	t->nkids += nk;
	return 0;
}

static int decompose(struct sp_build *sb, const int *S, int n);

/* A series child: a series result is spliced in, anything else added. */
static int push_series_kid(struct sp_build *sb, int *buf, int *nb, const int *S, int n)
{
	int c = decompose(sb, S, n);

	if (c < 0)
		return -1;
	if (sb->t->node[c].kind == SP_SERIES) {
		memcpy(buf + *nb, sb->t->kids + sb->t->node[c].kid_ofs,
		       (size_t)sb->t->node[c].nkid * sizeof *buf);
		*nb += sb->t->node[c].nkid;
	} else {
		buf[(*nb)++] = c;
	}
	return 0;
}

/* The parallel composition of the weakly connected pieces of S, or -2
 * when S is connected.  up[] is union-find over positions of S. */
static int parallel(struct sp_build *sb, const int *S, int n, int *up)
{
	int *lists = malloc((size_t)n * sizeof *lists), *piece = malloc((size_t)n * sizeof *piece);
	int *cnt = calloc((size_t)n + 1, sizeof *cnt), *kid = malloc((size_t)n * sizeof *kid);
	int np = 0, id = -1;

	if (!lists || !piece || !cnt || !kid)
		goto out;
	for (int k = 0; k < n; k++)
		if (find_root(up, k) == k)
			piece[k] = np++;
	if (np == 1) {
		id = -2;
		goto out;
	}
	/* each piece's operators, in topological order */
	for (int k = 0; k < n; k++)
		cnt[piece[find_root(up, k)] + 1]++;
	for (int p = 0; p < np; p++)
		cnt[p + 1] += cnt[p];
	memcpy(kid, cnt, (size_t)np * sizeof *kid);
	for (int k = 0; k < n; k++)
		lists[kid[piece[find_root(up, k)]]++] = S[k];
	for (int p = 0; p < np; p++) {
		kid[p] = decompose(sb, lists + cnt[p], cnt[p + 1] - cnt[p]);
		if (kid[p] < 0)
			goto out;
	}
	id = new_node(sb->t, SP_PAR, -1);
	if (id >= 0 && add_kids(sb->t, id, kid, np))
		id = -1;
out:
	free(lists);
	free(piece);
	free(cnt);
	free(kid);
	return id;
}

/* The node of the operators S[0..n) (topological order). */
static int decompose(struct sp_build *sb, const int *S, int n)
{
	const struct graph *g = sb->g;
	int *up = NULL, *cover = NULL, *buf = NULL, *okl = NULL, id = -1, nb = 0, ncut = 0;
	int stamp = ++sb->stamp;

	if (n == 1)
		return new_node(sb->t, SP_LEAF, S[0]);
	up = malloc((size_t)n * sizeof *up);
	cover = calloc((size_t)n + 1, sizeof *cover);
	okl = malloc((size_t)(n + 1) * sizeof *okl);
	buf = malloc((size_t)n * sizeof *buf);
	if (!up || !cover || !okl || !buf)
		goto out;
	for (int k = 0; k < n; k++) {
		sb->mark[S[k]] = stamp;
		sb->pos[S[k]] = k;
		up[k] = k;
	}
	for (int k = 0; k < n; k++)
		for (int e = 0; e < g->ops[S[k]].nin; e++) {
			int u = g->ops[S[k]].in[e];

			if (sb->mark[u] == stamp) {
				int a = find_root(up, sb->pos[u]), b = find_root(up, k);

				if (a != b)
					up[a < b ? b : a] = a < b ? a : b;
			}
		}
	id = parallel(sb, S, n, up);
	if (id != -2)
		goto out;
	/* connected: the cuts.  cover[p] > 0 when an edge jumps over p;
	 * okl[p]: every op before p has a consumer in S; the ops after p
	 * each need an input in S (checked from the right). */
	for (int k = 0; k < n; k++)
		for (int e = 0; e < g->ops[S[k]].nin; e++) {
			int u = g->ops[S[k]].in[e];

			if (sb->mark[u] == stamp && sb->pos[u] + 1 < k) {
				cover[sb->pos[u] + 1]++;
				cover[k]--;
			}
		}
	for (int k = 1; k <= n; k++)
		cover[k] += cover[k - 1];
	okl[0] = 1;
	for (int k = 0; k < n; k++) {
		int has = 0;

		for (int e = sb->cons_ofs[S[k]]; e < sb->cons_ofs[S[k] + 1] && !has; e++)
			has = sb->mark[sb->cons[e]] == stamp;
		okl[k + 1] = okl[k] && has;
	}
	/* up[k] (reused) = 1 when position k is a cut; okr: every op after
	 * k has an input in S */
	for (int k = n - 1, okr = 1; k >= 0; k--) {
		int has = 0;

		up[k] = !cover[k] && okl[k] && okr;
		ncut += up[k];
		for (int e = 0; e < g->ops[S[k]].nin && !has; e++)
			has = sb->mark[g->ops[S[k]].in[e]] == stamp;
		okr = okr && has;
	}
	id = new_node(sb->t, SP_SERIES, -1);
	if (id < 0)
		goto out;
	if (ncut == 0) {
		/* not series-parallel: serialised in topological order */
		for (int k = 0; k < n && id >= 0; k++) {
			buf[nb] = new_node(sb->t, SP_LEAF, S[k]);
			if (buf[nb++] < 0)
				id = -1;
		}
	} else {
		int seg = 0;

		for (int k = 0; k <= n && id >= 0; k++) {
			if (k < n && !up[k])
				continue;
			if (k > seg && push_series_kid(sb, buf, &nb, S + seg, k - seg))
				id = -1;
			if (k < n && id >= 0) {
				buf[nb] = new_node(sb->t, SP_LEAF, S[k]);
				if (buf[nb++] < 0)
					id = -1;
			}
			seg = k + 1;
		}
	}
	if (id >= 0 && add_kids(sb->t, id, buf, nb))
		id = -1;
out:
	free(up);
	free(cover);
	free(okl);
	free(buf);
	return id;
}

/* --- weights, units and the depth-first numbering ----------------------- */

static int cmp_weight(const void *pa, const void *pb, void *arg)
{
	const struct sp_decomp *t = arg;
	double a = t->node[*(const int *)pa].weight, b = t->node[*(const int *)pb].weight;

	if (a != b)
		return a < b ? -1 : 1;
	return *(const int *)pa - *(const int *)pb;
}

static double weigh(struct sp_decomp *t, int id, const double *op_w)
{
	struct sp_node *x = &t->node[id];
	double w = 0;

	for (int i = x->kind == SP_LEAF ? x->op : -1; i >= 0; i = t->next_op[i])
		w += op_w[i];
	for (int k = 0; k < x->nkid; k++)
		w += weigh(t, t->kids[x->kid_ofs + k], op_w);
	t->node[id].weight = w;
	return w;
}

/* The live series nodes under id, into *ids. */
static void list_series(const struct sp_decomp *t, int id, int *ids, int *n)
{
	const struct sp_node *x = &t->node[id];

	if (x->kind == SP_SERIES)
		ids[(*n)++] = id;
	for (int k = 0; k < x->nkid; k++)
		list_series(t, t->kids[x->kid_ofs + k], ids, n);
}

/* Merges the n leaves of series into units until at most max_units
 * remain: the two adjacent leaves of a series with the least compute
 * together first; a series left with one child becomes that leaf.
 * Returns the number of units (leaves). */
static int coarsen(struct sp_decomp *t, int n, int max_units)
{
	int units = n, nser = 0;
	int *ser = malloc((size_t)t->nnode * sizeof *ser);

	if (!ser)
		return -1;
	list_series(t, t->root, ser, &nser);
	while (units > max_units) {
		int bs = -1, bk = 0;
		double bw = INFINITY;

		for (int s = 0; s < nser; s++) {
			const struct sp_node *x = &t->node[ser[s]];
			const int *kid = t->kids + x->kid_ofs;

			for (int k = 0; x->kind == SP_SERIES && k + 1 < x->nkid; k++) {
				const struct sp_node *a = &t->node[kid[k]];
				const struct sp_node *b = &t->node[kid[k + 1]];

				if (a->kind == SP_LEAF && b->kind == SP_LEAF &&
				    a->weight + b->weight < bw) {
					bw = a->weight + b->weight;
					bs = ser[s];
					bk = k;
				}
			}
		}
		if (bs < 0)
			break;
		{
			struct sp_node *x = &t->node[bs];
			int *kid = t->kids + x->kid_ofs;
			struct sp_node *a = &t->node[kid[bk]], *b = &t->node[kid[bk + 1]];
			int i = a->op;

			while (t->next_op[i] >= 0)
				i = t->next_op[i];
			t->next_op[i] = b->op;
			a->nop += b->nop;
			a->weight += b->weight;
			memmove(kid + bk + 1, kid + bk + 2,
				(size_t)(x->nkid - bk - 2) * sizeof *kid);
			if (--x->nkid == 1) {
				x->kind = SP_LEAF;
				x->op = a->op;
				x->nop = a->nop;
				x->nkid = 0;
			}
		}
		units--;
	}
	free(ser);
	return units;
}

/* Lightest branches first, so that runs of similar branches are
 * contiguous; numbers the operators from *nord on. */
static void number(struct sp_decomp *t, int id, int *nord)
{
	struct sp_node *x = &t->node[id];

	x->lo = *nord;
	for (int i = x->kind == SP_LEAF ? x->op : -1; i >= 0; i = t->next_op[i]) {
		t->at[i] = *nord;
		t->ord[(*nord)++] = i;
	}
	if (x->kind == SP_PAR)
		qsort_r(t->kids + x->kid_ofs, (size_t)x->nkid, sizeof *t->kids,
			cmp_weight, t);
	for (int k = 0; k < x->nkid; k++)
		number(t, t->kids[x->kid_ofs + k], nord);
	x->hi = *nord;
}

/* --- the interface ------------------------------------------------------ */

void sp_decomp_init(struct sp_decomp *t)
{
	memset(t, 0, sizeof *t);
}

int sp_decomp_build(struct sp_decomp *t, const struct graph *g, const int *cons_ofs,
		    const int *cons, const double *op_w, int max_units)
{
	struct sp_build sb = { .t = t, .g = g, .cons_ofs = cons_ofs, .cons = cons };
	int n = g->nops, nord = 0, rc = AP_EFAIL;

	sb.mark = calloc((size_t)n, sizeof *sb.mark);
	sb.pos = calloc((size_t)n, sizeof *sb.pos);
	t->next_op = calloc((size_t)n, sizeof *t->next_op);
	t->ord = calloc((size_t)n, sizeof *t->ord);
	t->at = calloc((size_t)n, sizeof *t->at);
	if (!sb.mark || !sb.pos || !t->next_op || !t->ord || !t->at)
		goto out;
	for (int i = 0; i < n; i++)
		t->ord[i] = i;
	t->root = decompose(&sb, t->ord, n);
	if (t->root < 0)
		goto out;
	weigh(t, t->root, op_w);
	t->nunits = coarsen(t, n, max_units);
	if (t->nunits < 0)
		goto out;
	number(t, t->root, &nord);
	rc = AP_OK;
out:
	free(sb.mark);
	free(sb.pos);
	return rc ? ap_err(AP_EFAIL, NULL, 0, "out of memory") : AP_OK;
}

void sp_decomp_release(struct sp_decomp *t)
{
	free(t->node);
	free(t->kids);
	free(t->next_op);
	free(t->ord);
	free(t->at);
}
