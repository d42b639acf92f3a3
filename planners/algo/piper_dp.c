/*
 * Piper's dynamic program (piper_dp.h).  The upsets of the DAG are
 * enumerated once, as bit sets in one flat array with a hash index; the
 * table dp[I][k][s] (the best TPS of upset I on at most k devices with a
 * sum of data-parallel degrees at most s) is one flat array filled in
 * order of upset size: for every sub-upset J of I (all of them, found by
 * removing nodes with no predecessor left, transitively) the stage I \ J
 * is costed once per tensor-parallel degree t and data-parallel degree d
 * for every s, and dp[I][k][s] = min max(dp[J][k - t d][s - d],
 * TPS(I \ J, t, d, s)).  As in the reference, dp[empty] is 0 everywhere
 * and the table is made monotone in k and s after each upset, so that
 * "at most" holds.  A stage is costed by piper_stage.c.
 */
#include "algo/piper_dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/err.h"
#include "algo/piper_stage.h"

/* A stage's TPS for one d as a function of s, TPS[d][s] =
 * v[ceil(s / d)]: v the knapsack values, or with one configuration per
 * node c up to y = ymax and infinite after. */
struct row {
	int d, ymax;
	double c;
	const double *v; /* NULL: c and ymax */
};

static double row_at(const struct row *r, int s)
{
	int y = (s + r->d - 1) / r->d;

	if (r->v)
		return r->v[y];
	return y >= 1 && y <= r->ymax ? r->c : INFINITY;
}

struct ws {
	const struct piper_inst *pi;
	const int *tie;      /* piper_solve_tied(); NULL: no groups */
	int *stack;          /* [n]: close_ties() */
	int n, words, K, S;  /* nodes, words of a set, devices, bound on s */
	uint64_t *sets;      /* upsets, words each */
	int *size;
	long nid, cap, max_ideals;
	long *hash;          /* open addressing: upset id + 1, 0 empty */
	size_t hmask;
	double *dp;          /* [nid][K + 1][S + 1] */
	/* per (upset, k): the count, then the s where dp drops below its
	 * value at s - 1 (0 first): the reference's faster update */
	int *drops;          /* [nid][K + 1][S + 2] */
	/* per upset, lower bounds on its stages' memory and TPS: for each t
	 * from 1 to T a block at boff[t] of sums over the upset's nodes with
	 * degree t, by node: their count, then the least memory of a
	 * configuration at y = 1 (a row that fits nothing there is skipped),
	 * then for each d up to K / t the least TPS contribution with no
	 * crossing bytes (the knapsack picks one configuration a node, the
	 * bytes add).  A stage's bound is the difference of its two upsets'. */
	int T, nb, *boff;
	double *bnd;         /* [nid][nb] */
	double *lim;         /* [nb]: limits() */
	int bounded;         /* the costs are non-negative: the bounds hold */
	/* scratch */
	int *nodes;          /* the stage's nodes */
	char *in;            /* node in the stage */
	char *need;          /* [K + 1]: the d whose rows fill() needs */
	double *lb;          /* [K + 1]: their TPS's lower bounds */
	long *first;         /* [n + 2]: the first id of each size, ids by size */
	long *queue;
	double *edge_b;      /* per node and TMPC of degree t: crossing bytes */
	struct row *rows;    /* [K + 1] for one t: TPS[d][s] by d */
	double *knap;        /* [K + 1][S + 2]: the rows' knapsack values */
	double deadline;
};

static uint64_t *set_of(const struct ws *w, long id)
{
	return w->sets + (size_t)id * (size_t)w->words;
}

static int has(const uint64_t *set, int v)
{
	return (int)(set[v >> 6] >> (v & 63) & 1);
}

static size_t hash_set(const struct ws *w, const uint64_t *set)
{
	uint64_t h = 1469598103934665603ull;

	for (int k = 0; k < w->words; k++)
		h = (h ^ set[k]) * 1099511628211ull;
	return (size_t)(h ^ h >> 29);
}

/* The id of set, or -1. */
static long find(const struct ws *w, const uint64_t *set)
{
	for (size_t h = hash_set(w, set) & w->hmask;; h = (h + 1) & w->hmask) {
		long id = w->hash[h] - 1;

		if (id < 0)
			return -1;
		if (!memcmp(set_of(w, id), set, (size_t)w->words * sizeof *set))
			return id;
	}
}

/* Adds set (not present); AP_EINPUT past max_ideals. */
static int add(struct ws *w, const uint64_t *set)
{
	size_t h;

	if (w->nid >= w->max_ideals)
		return ap_err(AP_EINPUT, "piper", 0, "the DAG has more than %ld upsets "
			      "(max-ideals), too many for Piper's dynamic program",
			      w->max_ideals);
	if (w->nid == w->cap) {
		long cap = w->cap * 2;
		uint64_t *s = realloc(w->sets, (size_t)cap * (size_t)w->words * sizeof *s);
		int *z = realloc(w->size, (size_t)cap * sizeof *z);

		if (s)
			w->sets = s;
		if (z)
			w->size = z;
		if (!s || !z)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		w->cap = cap;
	}
	memcpy(set_of(w, w->nid), set, (size_t)w->words * sizeof *set);
	w->size[w->nid] = 0;
	for (int k = 0; k < w->words; k++)
		w->size[w->nid] += __builtin_popcountll(set[k]);
	for (h = hash_set(w, set) & w->hmask; w->hash[h]; h = (h + 1) & w->hmask)
		;
	w->hash[h] = ++w->nid;
	return AP_OK;
}

/* With tie groups: set, an upset that holds its groups whole, with v
 * just added, made one again: v's group and everything it reaches, and
 * their groups in turn.  The walk of upsets() still finds every such
 * upset U: join each group's nodes by edges both ways, take a strongly
 * connected block B of U that nothing else in U reaches; U \ B is such
 * an upset, and a node of B with no successor in B (the DAG has one)
 * has all its successors in U \ B, and closes to U when added. */
static void close_ties(const struct ws *w, uint64_t *set, int v)
{
	const struct piper_inst *pi = w->pi;
	int top = 0;

	w->stack[top++] = v;
	while (top > 0) {
		int x = w->stack[--top];

		for (int e = 0; e < pi->nodes[x].nout; e++) {
			int y = pi->edges[pi->nodes[x].out[e]].dst;

			if (!has(set, y)) {
				set[y >> 6] |= 1ull << (y & 63);
				w->stack[top++] = y;
			}
		}
		for (int y = w->tie[x]; y != x; y = w->tie[y])
			if (!has(set, y)) {
				set[y >> 6] |= 1ull << (y & 63);
				w->stack[top++] = y;
			}
	}
}

static int out_of_time(const struct ws *w)
{
	return ap_err(AP_EINPUT, "piper", 0, "the search did not finish within its budget "
		      "(%ld upsets)", w->nid);
}

/* Every upset: from the empty set, add a node whose successors are all
 * in (and with tie groups, what close_ties() adds with it).  Each upset
 * costs a pass over the n nodes, so the budget is checked after each. */
static int upsets(struct ws *w)
{
	const struct piper_inst *pi = w->pi;
	uint64_t *next = calloc((size_t)w->words, sizeof *next);
	int rc = next ? AP_OK : ap_err(AP_EFAIL, NULL, 0, "out of memory");

	if (!rc)
		rc = add(w, next);
	for (long id = 0; id < w->nid && !rc; id++) {
		if (w->deadline > 0 && now_s() > w->deadline) {
			rc = out_of_time(w);
			break;
		}
		for (int v = 0; v < w->n && !rc; v++) {
			const uint64_t *cur = set_of(w, id);
			int ok = !has(cur, v);

			for (int e = 0; e < pi->nodes[v].nout && ok; e++)
				ok = has(cur, pi->edges[pi->nodes[v].out[e]].dst);
			if (!ok)
				continue;
			memcpy(next, cur, (size_t)w->words * sizeof *next);
			next[v >> 6] |= 1ull << (v & 63);
			if (w->tie)
				close_ties(w, next, v);
			if (find(w, next) < 0)
				rc = add(w, next);
		}
	}
	free(next);
	return rc;
}

/* Renumbers the upsets by size, stably (the empty set stays 0, the full
 * one is last), and drops the hash index, whose slots name the old ids:
 * the DP takes them in this order and scans the smaller ones in place. */
static int by_size(struct ws *w)
{
	uint64_t *sets = malloc((size_t)w->nid * (size_t)w->words * sizeof *sets);
	int *size = malloc((size_t)w->nid * sizeof *size);
	long *at = calloc((size_t)w->n + 2, sizeof *at);

	w->first = at;
	if (!sets || !size || !at) {
		free(sets);
		free(size);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (long id = 0; id < w->nid; id++)
		at[w->size[id] + 1]++;
	for (int z = 1; z <= w->n + 1; z++)
		at[z] += at[z - 1];
	for (long id = 0; id < w->nid; id++) {
		long to = at[w->size[id]]++;

		memcpy(sets + (size_t)to * (size_t)w->words, set_of(w, id),
		       (size_t)w->words * sizeof *sets);
		size[to] = w->size[id];
	}
	/* at[z] is now the end of size z: shift it to the start */
	memmove(at + 1, at, ((size_t)w->n + 1) * sizeof *at);
	at[0] = 0;
	free(w->sets);
	free(w->size);
	free(w->hash);
	w->sets = sets;
	w->size = size;
	w->hash = NULL;
	return AP_OK;
}

/* --- the table ------------------------------------------------------------ */

static double *cell(const struct ws *w, long id, int k)
{
	return w->dp + ((size_t)id * (size_t)(w->K + 1) + (size_t)k) * (size_t)(w->S + 1);
}

static int *drops_of(const struct ws *w, long id, int k)
{
	return w->drops + ((size_t)id * (size_t)(w->K + 1) + (size_t)k) * (size_t)(w->S + 2);
}

/* The drops of upset id, once its row is final. */
static void set_drops(struct ws *w, long id)
{
	for (int k = 0; k <= w->K; k++) {
		const double *c = cell(w, id, k);
		int *dr = drops_of(w, id, k);

		dr[0] = 1;
		dr[1] = 0;
		for (int s = 1; s <= w->S; s++)
			if (c[s] + 1e-9 < c[s - 1])
				dr[++dr[0]] = s;
	}
}

/* dp[I][k'][s'] = min(dp[I][k'][s'], v) for every k' >= k and s' >= s.
 * dp[I] is kept monotone in k and s as it fills, not made so after: the
 * same minima over the same values, and every bound against it (useful())
 * the tightest at once.  Where a cell is at most v so is all beyond it. */
static void lower(const struct ws *w, long I, int k, int s, double v)
{
	for (; k <= w->K; k++) {
		double *c = cell(w, I, k);

		if (c[s] <= v)
			return;
		for (int x = s; x <= w->S && c[x] > v; x++)
			c[x] = v;
	}
}

/* dp[I][k] = min over s of max(dp[J][j][s - d], row(s)), visiting
 * only the s - d where dp[J][j] drops (it falls with s, row rises): those
 * before the crossing take dp[J]'s value, the first after it row's. */
static void update(const struct ws *w, long I, int k, long J, int j, const struct row *row)
{
	const double *from = cell(w, J, j);
	const int *dr = drops_of(w, J, j), *f = dr + 1;
	int lo = 0, hi = dr[0] - 1, u = -1, d = row->d;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (f[mid] + d <= w->S && from[f[mid]] > row_at(row, f[mid] + d)) {
			u = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	for (int v = 0; v <= u; v++)
		lower(w, I, k, f[v] + d, from[f[v]]);
	if (u + 1 < dr[0] && f[u + 1] + d <= w->S)
		lower(w, I, k, f[u + 1] + d, row_at(row, f[u + 1] + d));
}

/* --- bounds --------------------------------------------------------------- */

static double *bnd_of(const struct ws *w, long id, int t)
{
	return w->bnd + (size_t)id * (size_t)w->nb + (size_t)w->boff[t];
}

/* Whether every cost is non-negative (and a number), as piper_read()
 * checks and the planner's costs are: then the DP's sums only grow with
 * each term and round by relative n eps, which the bounds rely on. */
static int costs_nonneg(const struct piper_inst *pi)
{
	for (int e = 0; e < pi->nedges; e++)
		if (!(pi->edges[e].bytes >= 0))
			return 0;
	for (int v = 0; v < pi->nnodes; v++) {
		const struct piper_node *x = &pi->nodes[v];

		for (int g = 0; g < x->ndeg; g++)
			for (int l = 0; l < x->deg[g].ntmpc; l++) {
				const struct piper_tmpc *c = &x->deg[g].tmpc[l];

				if (!(c->time >= 0 && c->params >= 0 && c->mem_a >= 0 &&
				      c->mem_b >= 0))
					return 0;
				for (int e = 0; e < x->nin; e++)
					if (!(c->sync_fw[e] >= 0))
						return 0;
				for (int e = 0; e < x->nout; e++)
					if (!(c->sync_bw[e] >= 0))
						return 0;
			}
	}
	return 1;
}

/* Every upset's bound sums (struct ws), in node order. */
static int bounds(struct ws *w)
{
	const struct piper_inst *pi = w->pi;
	double resync = 4.0 / pi->mbs / pi->bw, *node;

	w->boff = malloc(((size_t)w->T + 1) * sizeof *w->boff);
	if (!w->boff)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	w->nb = 0;
	for (int t = 1; t <= w->T; t++) {
		w->boff[t] = w->nb;
		w->nb += 2 + w->K / t;
	}
	node = calloc((size_t)w->n * (size_t)w->nb, sizeof *node);
	w->bnd = calloc((size_t)w->nid * (size_t)w->nb, sizeof *w->bnd);
	w->lim = malloc((size_t)w->nb * sizeof *w->lim);
	if (!node || !w->bnd || !w->lim) {
		free(node);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	/* per node: the terms its configurations of degree t contribute,
	 * the TPS contributions as piper_contributions() writes them with no
	 * crossing bytes, which only add */
	for (int v = 0; v < w->n; v++)
		for (int t = 1; t <= w->T; t++) {
			const struct piper_degree *g = piper_degree_of(&pi->nodes[v], t);
			double *b = node + (size_t)v * (size_t)w->nb + (size_t)w->boff[t];

			if (!g)
				continue;
			b[0] = 1;
			for (int l = 0; l < g->ntmpc; l++) {
				const struct piper_tmpc *x = &g->tmpc[l];

				b[1] = l ? fmin(b[1], x->mem_a + x->mem_b) : x->mem_a + x->mem_b;
				for (int d = 1; d * t <= w->K; d++) {
					double inv = 1.0 / d, c = x->time * inv +
								  (1 - inv) * (resync * x->params);

					b[1 + d] = l ? fmin(b[1 + d], c) : c;
				}
			}
		}
	for (long id = 0; id < w->nid; id++) {
		const uint64_t *set = set_of(w, id);
		double *b = w->bnd + (size_t)id * (size_t)w->nb;

		for (int k = 0; k < w->words; k++)
			for (uint64_t x = set[k]; x; x &= x - 1) {
				const double *a = node + (size_t)(k * 64 + __builtin_ctzll(x)) *
								(size_t)w->nb;

				for (int i = 0; i < w->nb; i++)
					b[i] += a[i];
			}
	}
	free(node);
	w->bounded = costs_nonneg(pi);
	return AP_OK;
}

/* The lower bounds' limits for upset I into w->lim: a lower bound on
 * the sum of the i-th terms over stage I \ J, as the DP's own sums (in
 * whatever order, rounded) find it, is (lim[i] - bnd(J)[i]) (1 - 1e-9);
 * -INFINITY without bounds.  The upsets' sums round by at most n eps of
 * the largest, the full set's, and the stage's own by n eps of itself:
 * both far below the margins of 1e-9 taken. */
static void limits(struct ws *w, long I)
{
	const double *b = bnd_of(w, I, 1), *full = bnd_of(w, w->nid - 1, 1);

	for (int i = 0; i < w->nb; i++)
		w->lim[i] = w->bounded ? b[i] - 1e-9 * full[i] : -INFINITY;
}

/* The first k from k0 on where stage I \ J on degrees t and d, of TPS at
 * least lb, may lower dp[I][k]; K + 1 when none.  update() writes at
 * s = f + d for the drops f of dp[J][k - t d] values at least the larger
 * of lb and dp[J][k - t d][f], and one at least dp[I][k][f + d] changes
 * nothing.  dp[I] falls with s and k: once lb reaches it, it does for
 * every s after, and at s = d for every k after. */
static int useful(const struct ws *w, long I, long J, int t, int d, double lb, int k)
{
	const double *to = cell(w, I, k), *from = cell(w, J, k - t * d);
	const int *dr = drops_of(w, J, k - t * d);

	for (; k <= w->K && lb < to[d]; k++, to += w->S + 1, from += w->S + 1, dr += w->S + 2)
		for (int v = 1; v <= dr[0] && dr[v] + d <= w->S && lb < to[dr[v] + d]; v++)
			if (from[dr[v]] < to[dr[v] + d])
				return k;
	return w->K + 1;
}

/* --- the DP --------------------------------------------------------------- */

/* The nodes of set I \ J into w->nodes (marked in w->in); their count. */
static int stage_nodes(struct ws *w, long I, long J)
{
	const uint64_t *a = set_of(w, I), *b = set_of(w, J);
	int n = 0;

	memset(w->in, 0, (size_t)w->n);
	for (int k = 0; k < w->words; k++)
		for (uint64_t x = a[k] & ~b[k]; x; x &= x - 1) {
			int v = k * 64 + __builtin_ctzll(x);

			w->nodes[n++] = v;
			w->in[v] = 1;
		}
	return n;
}

/* TPS[d][s] of stage I \ J for degree t into w->rows, for the d with
 * need[d] (NULL: every d; the others' rows fit nothing); 0 when some
 * node lacks t. */
static int stage_table(struct ws *w, struct stage_buf *sb, int n, int t, const char *need)
{
	const struct piper_inst *pi = w->pi;
	double sx = 0, sy = 0, sa = 0, sm = 0;
	int single = 1, total;

	if (!piper_crossing(pi, w->in, w->nodes, n, t, sb))
		return 0;
	total = n ? sb->ofs[n - 1] + sb->cnt[n - 1] : 0;
	for (int i = 0; i < n && single; i++) {
		single = sb->cnt[i] == 1;
		sx += sb->x[i];
		sy += sb->y[i];
		sa += sb->a[i];
		sm += sb->b[i];
	}
	for (int d = 1; d * t <= w->K; d++) {
		struct row *r = &w->rows[d];
		double *v = w->knap + (size_t)d * (size_t)(w->S + 2);

		*r = (struct row){ .d = d };
		if (pi->mbs % d || (need && !need[d]))
			continue;
		/* one configuration per node: the sums of the terms, while the
		 * memory a y + b fits */
		if (single) {
			r->c = sx / d + (1 - 1.0 / d) * sy;
			r->ymax = sm > pi->mem ? 0
				  : sa > 0 ? (int)fmin((pi->mem - sm) / sa, w->S + 1) : w->S + 1;
			while (r->ymax >= 1 && sa * r->ymax + sm > pi->mem)
				r->ymax--;
			continue;
		}
		piper_contributions(sb, total, d);
		if (piper_knapsack(pi->mem, n, sb, (w->S + d - 1) / d, v, 0, NULL))
			return -1;
		r->v = v;
	}
	return 1;
}

/* The sub-upsets of I (all, not I itself) into w->queue, smallest
 * first; their count.  A scan of the smaller upsets, in place, cheaper
 * than walking removals through a hash index. */
static long sub_upsets(struct ws *w, long I)
{
	const uint64_t *a = set_of(w, I), *b = w->sets;
	long n = 0, end = w->first[w->size[I]], *queue = w->queue;
	int words = w->words;

	for (long q = 0; q < end; q++, b += words) {
		uint64_t out = 0;

		for (int k = 0; k < words; k++)
			out |= b[k] & ~a[k];
		if (!out)
			queue[n++] = q;
	}
	return n;
}

static int degrees_max(const struct piper_inst *pi)
{
	int t = 1;

	for (int v = 0; v < pi->nnodes; v++)
		for (int k = 0; k < pi->nodes[v].ndeg; k++)
			t = pi->nodes[v].deg[k].t > t ? pi->nodes[v].deg[k].t : t;
	return t;
}

/* dp[I] from every sub-upset J.  The bounds skip a stage some node of
 * which lacks t, one that fits no device even with the least memory of
 * each node, and a (t, d) that lowers nothing (useful()): before the
 * stage is costed, which is most of the work.  The largest J first: the
 * small stages set dp[I] low early, against which the bounds of the
 * large ones bite (the minima do not depend on the order). */
static int fill(struct ws *w, struct stage_buf *sb, long I, long long *pairs)
{
	long nsub = sub_upsets(w, I);
	int K = w->K;

	limits(w, I);
	for (long q = nsub - 1; q >= 0; q--) {
		long J = w->queue[q];
		int n = -1;

		(*pairs)++;
		if ((*pairs & 1023) == 0 && w->deadline > 0 && now_s() > w->deadline)
			return out_of_time(w);
		for (int t = 1; t <= w->T; t++) {
			const double *bi = bnd_of(w, I, t), *bj = bnd_of(w, J, t),
				     *lim = w->lim + w->boff[t];
			int st, any = 0;

			if (bi[0] - bj[0] != w->size[I] - w->size[J] ||
			    (lim[1] - bj[1]) * (1 - 1e-9) > w->pi->mem)
				continue;
			for (int d = 1; d * t <= K; d++) {
				double lb = (lim[1 + d] - bj[1 + d]) * (1 - 1e-9);

				w->lb[d] = lb;
				w->need[d] = w->pi->mbs % d == 0 && useful(w, I, J, t, d, lb, d * t) <= K;
				any |= w->need[d];
			}
			if (!any)
				continue;
			if (n < 0)
				n = stage_nodes(w, I, J);
			st = stage_table(w, sb, n, t, w->need);
			if (st < 0)
				return AP_EFAIL;
			for (int d = 1; st && d * t <= K; d++) {
				/* a stage that fits no device updates nothing */
				if (!w->need[d] || !isfinite(row_at(&w->rows[d], d)))
					continue;
				for (int k = useful(w, I, J, t, d, w->lb[d], d * t); k <= K;
				     k = useful(w, I, J, t, d, w->lb[d], k + 1))
					update(w, I, k, J, k - d * t, &w->rows[d]);
			}
		}
	}
	set_drops(w, I);
	return AP_OK;
}

/* Walks back from (I, k, s) to the empty set, as the reference does. */
static int reconstruct(struct ws *w, struct stage_buf *sb, long I, int k, int s,
		       struct piper_result *res)
{
	const struct piper_inst *pi = w->pi;

	while (w->size[I] > 0) {
		long nsub = sub_upsets(w, I), found = -1;
		int ft = 0, fd = 0, n = 0;

		for (long q = 0; q < nsub && found < 0; q++) {
			long J = w->queue[q];

			n = stage_nodes(w, I, J);
			for (int t = 1; t <= k && t <= w->T && found < 0; t++) {
				int st = stage_table(w, sb, n, t, NULL);

				if (st < 0)
					return AP_EFAIL;
				for (int d = 1; st && t * d <= k && d <= s && found < 0; d++) {
					double v;

					if (pi->mbs % d)
						continue;
					v = fmax(cell(w, J, k - t * d)[s - d],
						 row_at(&w->rows[d], s));
					if (fabs(cell(w, I, k)[s] - v) < 1e-9) {
						found = J;
						ft = t;
						fd = d;
					}
				}
			}
		}
		if (found < 0)
			return ap_err(AP_EFAIL, "piper", 0, "no step of the solution found");
		{
			struct piper_stage *st, *v = realloc(res->stages, ((size_t)res->nstages + 1) *
								     sizeof *v);
			if (!v)
				return ap_err(AP_EFAIL, NULL, 0, "out of memory");
			res->stages = v;
			st = &res->stages[res->nstages++];
			memset(st, 0, sizeof *st);
			st->nnodes = n;
			st->t = ft;
			st->d = fd;
			st->nodes = malloc((size_t)n * sizeof *st->nodes);
			st->tmpc = malloc((size_t)n * sizeof *st->tmpc);
			if (!st->nodes || !st->tmpc)
				return ap_err(AP_EFAIL, NULL, 0, "out of memory");
			memcpy(st->nodes, w->nodes, (size_t)n * sizeof *st->nodes);
			st->tps = piper_stage_tps(pi, st->nodes, n, ft, fd, (s + fd - 1) / fd,
						  st->tmpc);
		}
		k -= ft * fd;
		s -= fd;
		I = found;
	}
	return AP_OK;
}

int piper_solve(const struct piper_inst *pi, long max_ideals, double budget_s,
		struct piper_result *res)
{
	return piper_solve_tied(pi, NULL, max_ideals, budget_s, res);
}

int piper_solve_tied(const struct piper_inst *pi, const int *tie, long max_ideals,
		     double budget_s, struct piper_result *res)
{
	struct ws w = { .pi = pi, .tie = tie, .n = pi->nnodes, .K = pi->max_devices,
			.max_ideals = max_ideals };
	struct stage_buf sb = { 0 };
	size_t hsize = 16;
	int rc;

	memset(res, 0, sizeof *res);
	res->tps = INFINITY;
	w.S = pi->mbs < pi->max_devices ? pi->mbs : pi->max_devices;
	w.words = (w.n + 63) / 64;
	w.deadline = budget_s > 0 ? now_s() + budget_s : 0;
	/* Without groups, the n + 1 sets of the nodes after the first j
	 * of a topological order, for j = 0..n, are n + 1 distinct upsets:
	 * a DAG of more than max_ideals - 1 nodes is refused before the
	 * enumeration would find so many. */
	if (!tie && (long)w.n >= max_ideals)
		return ap_err(AP_EINPUT, "piper", 0, "the DAG has %d nodes, so at least %ld "
			      "upsets, more than %ld (max-ideals), too many for Piper's "
			      "dynamic program", w.n, (long)w.n + 1, max_ideals);
	while (hsize < 2 * (size_t)max_ideals)
		hsize *= 2;
	w.hmask = hsize - 1;
	w.cap = 1024;
	w.hash = calloc(hsize, sizeof *w.hash);
	w.sets = malloc((size_t)w.cap * (size_t)w.words * sizeof *w.sets);
	w.size = malloc((size_t)w.cap * sizeof *w.size);
	w.stack = tie ? malloc(((size_t)w.n + 1) * sizeof *w.stack) : NULL;
	if (!w.hash || !w.sets || !w.size || (tie && !w.stack)) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	rc = upsets(&w);
	if (!rc)
		rc = by_size(&w);
	if (rc)
		goto out;
	w.T = degrees_max(pi);
	w.T = w.T < w.K ? w.T : w.K;
	rc = bounds(&w);
	if (rc)
		goto out;
	res->ideals = w.nid;
	w.dp = malloc((size_t)w.nid * (size_t)(w.K + 1) * (size_t)(w.S + 1) * sizeof *w.dp);
	w.drops = malloc((size_t)w.nid * (size_t)(w.K + 1) * (size_t)(w.S + 2) * sizeof *w.drops);
	w.nodes = malloc((size_t)w.n * sizeof *w.nodes);
	w.in = calloc((size_t)w.n, 1);
	w.need = malloc((size_t)w.K + 1);
	w.lb = malloc(((size_t)w.K + 1) * sizeof *w.lb);
	w.queue = malloc((size_t)w.nid * sizeof *w.queue);
	w.knap = malloc((size_t)(w.K + 1) * ((size_t)w.S + 2) * sizeof *w.knap);
	w.rows = malloc((size_t)(w.K + 1) * sizeof *w.rows);
	if (!w.dp || !w.drops || !w.nodes || !w.in || !w.need || !w.lb || !w.queue || !w.knap ||
	    !w.rows || piper_stage_buf_alloc(&sb, pi)) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < (size_t)w.nid * (size_t)(w.K + 1) * (size_t)(w.S + 1); i++)
		w.dp[i] = i < (size_t)(w.K + 1) * (size_t)(w.S + 1) ? 0 : INFINITY;
	set_drops(&w, 0);
	for (long I = 1; I < w.nid && !rc; I++)
		rc = fill(&w, &sb, I, &res->pairs);
	if (!rc) {
		long full = w.nid - 1;
		int bk = -1, bs = -1;

		for (int k = 0; k <= w.K; k++)
			for (int s = 1; s <= w.S; s++)
				if (cell(&w, full, k)[s] + 1e-9 < res->tps) {
					res->tps = cell(&w, full, k)[s];
					bk = k;
					bs = s;
				}
		if (isfinite(res->tps)) {
			res->devices = bk;
			res->sum_d = bs;
			rc = reconstruct(&w, &sb, full, bk, bs, res);
		}
	}
out:
	piper_stage_buf_release(&sb);
	free(w.stack);
	free(w.first);
	free(w.hash);
	free(w.sets);
	free(w.size);
	free(w.dp);
	free(w.drops);
	free(w.nodes);
	free(w.in);
	free(w.need);
	free(w.lb);
	free(w.boff);
	free(w.bnd);
	free(w.lim);
	free(w.queue);
	free(w.knap);
	free(w.rows);
	if (rc)
		piper_result_release(res);
	return rc;
}

void piper_result_release(struct piper_result *res)
{
	for (int i = 0; i < res->nstages; i++) {
		free(res->stages[i].nodes);
		free(res->stages[i].tmpc);
	}
	free(res->stages);
	res->stages = NULL;
	res->nstages = 0;
}
