/*
 * graphpipe: graph pipeline parallelism after GraphPipe (Jeon et al.,
 * ASPLOS 2025).  Stages form a DAG that keeps a model's branches side by
 * side, so a multi-branch model gets a shallower pipeline than any chain
 * of stages would give it.
 *
 * Decomposition (section 5.1).  The operator graph is cut into a
 * series-parallel tree: a set of operators that falls apart into several
 * weakly connected pieces is a parallel composition of them; a connected
 * set is a series composition at its cut operators, those that no edge
 * jumps over, that everything before them reaches and that reach
 * everything after them.  A connected set without such a cut is not
 * series-parallel and is made so by putting its operators in series in
 * topological order (adding edges only narrows the plans, never breaks
 * one).  Series children are flattened, so a chain is one series of
 * single operators, and the branches of a parallel composition are
 * ordered by their compute, lightest first.  Units: while the tree has
 * more than `max-units` leaves, the two adjacent leaves of a series with
 * the least compute together become one leaf, a unit of several
 * operators (a series left with one child becomes that leaf), as
 * PipeDream's planner merges its units; no stage boundary falls inside a
 * unit, and a graph of at most max-units operators keeps one leaf per
 * operator.  The DP's work grows with the square of a series' length,
 * so long chains (mmt's) cost max-units squared, not their length
 * squared.  The default, 4096, coarsens no model of the zoo: merging by
 * least compute costs good cuts on other graphs (at 128, mmt on 32
 * devices searches about five times faster and finds a slightly better
 * plan, but densenet121 and resnext50 on pipedream-a get plans about 2x
 * slower and resnet50 on flexflow-p100 16% slower).  A depth-first walk then
 * numbers the operators so that every node, every run of a series' children
 * and every run of a parallel composition's branches is a contiguous
 * interval: a stage is such an interval, run data parallel on its own
 * devices.
 *
 * Partitioning (section 5.2).  For each micro-batch count m, a binary
 * search on the target time per sample T; inside each step a dynamic
 * program over the tree finds, for every node and device count d, the
 * smallest pipeline latency (the compute and transfers of one micro-batch
 * along the longest path of stages, plus the all-reduce each stage's
 * backward leaves exposed) of a partition of the node into
 * stages on at most d devices with every stage's time per sample at most
 * T and its memory within the device's: a series composition sums the
 * latencies of consecutive pieces, each one stage over a run of children
 * or one child partitioned on its own; a parallel composition takes the
 * largest latency of its pieces, each one stage over a run of branches or
 * one branch on its own.  The steps of the binary search only ask
 * whether T is feasible: their DP keeps, per table row, the fewest devices
 * that meet T (device counts add in series and in parallel alike), a
 * factor of D cheaper than the latencies per device count that the
 * candidates' DP keeps.  A stage need not hold whole components: in a
 * series, the stage before a parallel composition may take its lightest
 * branches and the stage after it its heaviest (the rest partitioned on
 * their own), so that the light branches run beside the heavy ones; the
 * taken branches' compute counts only where it outlasts what it overlaps
 * (dp_merge).  A stage's time per sample is the slowest of its
 * compute, its incoming and its outgoing transfers per micro-batch, over
 * the micro-batch, plus its gradient all-reduce (ring or hierarchical,
 * as the simulator charges it, less the backward it overlaps) over the
 * batch.  Its memory counts weights,
 * gradients and momentum, and the activations of the micro-batches it can
 * hold in flight under 1F1B: at most m, and at most one more than the
 * devices the stages after it can use.
 *
 * Search cost.  A feasibility step tries a run's device counts in
 * ascending order and stops at the first that meets T, the fewest.  A
 * candidates' step skips, after a row that never grows with d, a device
 * count whose stage is no faster than a smaller count's (every cell it
 * could reach gets a value at least as good first), and relaxes a plain
 * series (no branches hiding) in a loop that only adds.  All three are
 * exact (the plans are those of the search without them).  What remains: the candidates' DPs (the loosest
 * target of each m and up to five looser ones per m and link guess)
 * about half, the feasibility DPs a third, the simulations of
 * `verify` and the profile lookups of each shard size the rest.
 *
 * Choice.  The smallest feasible T of each m and a few looser targets
 * (a looser bottleneck can buy a shallower pipeline) give candidate
 * plans, ranked by the 1F1B estimate latency + (m - 1) x the slowest
 * stage's time per micro-batch (the latency holds the all-reduces the
 * backward leaves exposed); the best
 * `verify` of them are simulated and the fastest that fits memory wins.
 * The schedule is synchronous 1F1B over the DAG of stages: the simulator
 * gives each stage as many micro-batches in flight as there are stages on
 * its longest path to the sink and runs each backward as early as it can
 * (sim_layout.c).
 *
 * The estimate (planner_est_ms, the chosen candidate's est) is the
 * paper's cost model, not the simulator: it agrees with the prediction
 * within a few percent on one node (tests/test_estimates.c), and leaves to
 * the simulator four terms it models more precisely.  (1) Transfers: a
 * stage's are one device's share at the bandwidth of the search's link
 * guess; the simulator sends them over the links the placement gives,
 * where a stage's devices on one node share its NIC (vgg16 and gnmt on
 * pipedream-a: est/sim 0.70 and 0.57).  (2) The all-reduce: each stage's,
 * less two thirds of its compute, is counted on its path; the simulator
 * runs each op's all-reduce after that op's backward, one after another,
 * so a later stage's hides behind the earlier stages' drain (alexnet on
 * pipedream-a: 1.10) while a large one-stage all-reduce shows more (mmt
 * on summit-2x4: 0.88).  (3) The optimizer update (5 x a device's
 * parameter bytes at memory bandwidth) is left out (dlrm's embeddings on
 * summit-4x4: 0.47).  (4) 1F1B keeps at most as many micro-batches in
 * flight at a stage as there are stages on its path, so a stage waits
 * when the round trip through the later stages is longer; the estimate's
 * bottleneck never waits.
 *
 * Stages of their own micro-batch counts (`stage-microbatches`, off by
 * default because the runtime does not execute such plans yet): from the
 * chosen plan, refine_counts() tries each stage at other counts by
 * simulation (the simulator re-batches between stages of different
 * counts, sim_layout.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "err.h"
#include "grow.h"
#include "planner.h"
#include "sim.h"

enum { GP_LEAF, GP_SERIES, GP_PAR };

struct gp_node {
	int kind, op, nop; /* GP_LEAF: its first op and how many, linked
			    * through gp.next_op */
	int kid_ofs, nkid; /* children in gp.kids */
	int lo, hi;        /* its operators: positions lo..hi-1 of gp.ord */
	double weight;     /* compute, for ordering branches */
	int tab;           /* its DP table: (nkid + 1) x (D + 1) cells */
	int merge;         /* a parallel child of a series: its tables H and G,
			    * 2 x (nkid + 1) x (D + 1) cells; else -1 */
};

/* How the last piece of a DP cell was made. */
enum {
	GP_OWN,    /* child j-1 partitioned on its own */
	GP_WHOLE,  /* one stage over children from..j-1 */
	GP_MERGE,  /* one stage over branches br.. of parallel child `from`
		    * and children from + 1..j-1, after G[br] of that child */
	GP_VIA_H,  /* G cell: the stage of its H cell */
	GP_PREFIX, /* G cell: the child's first br branches on their own */
};

/* One cell of a DP table: the best latency of the first j pieces on at
 * most d devices, and how its last piece was made. */
struct gp_cell {
	double lat;
	int from; /* the piece covers children from..j-1 */
	int dev;  /* devices of the last piece */
	int how;  /* GP_OWN ... */
	int br;   /* GP_MERGE: the first branch in the stage */
	double hide; /* H and G: compute of the branches in the stem's
		      * stage, which overlaps the stages after it */
};

/* How relax_stage() files a stage: as `how` after cell `from`, with its
 * branches x_lo.. overlapping what follows (H) or with the positions
 * before y_hi overlapping the branches of an earlier stage (GP_MERGE);
 * -1 where not. */
struct gp_piece {
	int from, how, br, x_lo, y_hi;
	int mono; /* the row it follows never grows with d */
};

struct gp_stage {
	int a, b, d; /* positions a..b-1 on d devices */
};

/* One stage as the cost model sees it. */
struct gp_eval {
	double t_mb, lat, ar;
};

struct gp_cand {
	int m, nst, ofs; /* its stages at ofs in gp.cst (their devices) */
	int lab;         /* the stage of each op at lab in gp.clab */
	double est, target;
};

struct gp {
	const struct planner_input *in;
	const struct graph *g;
	int n, D, copies;
	int *cons_ofs, *cons;
	/* decomposition */
	struct gp_node *node;
	size_t cap_node;
	int nnode, root;
	int *kids;
	size_t cap_kids;
	int nkids;
	int *mark, stamp, *pos, *ord, *at, nord;
	/* costs, in depth-first order */
	int ndiv;
	int64_t div[64];
	double *comp;     /* [ndiv][n + 1]: fwd + bwd of a div[s]-sample shard */
	int *comp_ready;  /* [ndiv] */
	double *par_pref, *act_pref;
	int *npar_pref, *nosplit_pref;
	int *lc_ofs, *lc; /* positions whose last consumer is at q */
	int *lastc;
	int *seen, seen_stamp;
	double bw, lat_link, mem;
	/* the DP of one (m, T); feas: only whether T is feasible, each
	 * table row's cell 0 holding the fewest devices that meet T */
	int m, feas;
	int64_t mb;
	double T;
	struct gp_cell *cells;
	size_t ncells;
	/* candidates */
	struct gp_cand *cand;
	size_t cap_cand;
	int ncand;
	struct gp_stage *cst;
	size_t cap_cst;
	int ncst;
	int *clab;
	size_t cap_clab;
	int *next_op; /* the next op of its leaf, or -1 */
	int max_units, nunits;
	double deadline;
};

/* --- series-parallel decomposition -------------------------------------- */

static int new_node(struct gp *gp, int kind, int op)
{
	struct gp_node *x;

	if (reserve(&gp->node, &gp->cap_node, (size_t)gp->nnode + 1, sizeof *gp->node))
		return -1;
	x = &gp->node[gp->nnode];
	memset(x, 0, sizeof *x);
	x->kind = kind;
	x->op = op;
	x->nop = op >= 0;
	if (op >= 0)
		gp->next_op[op] = -1;
	return gp->nnode++;
}

static int find_root(int *up, int x)
{
	while (up[x] != x)
		x = up[x] = up[up[x]];
	return x;
}

static int add_kids(struct gp *gp, int id, const int *k, int nk)
{
	if (reserve(&gp->kids, &gp->cap_kids, (size_t)gp->nkids + (size_t)nk, sizeof *gp->kids))
		return -1;
	gp->node[id].kid_ofs = gp->nkids;
	gp->node[id].nkid = nk;
	memcpy(gp->kids + gp->nkids, k, (size_t)nk * sizeof *k);
	gp->nkids += nk;
	return 0;
}

static int decompose(struct gp *gp, const int *S, int n);

/* A series child: a series result is spliced in, anything else added. */
static int push_series_kid(struct gp *gp, int *buf, int *nb, const int *S, int n)
{
	int c = decompose(gp, S, n);

	if (c < 0)
		return -1;
	if (gp->node[c].kind == GP_SERIES) {
		memcpy(buf + *nb, gp->kids + gp->node[c].kid_ofs,
		       (size_t)gp->node[c].nkid * sizeof *buf);
		*nb += gp->node[c].nkid;
	} else {
		buf[(*nb)++] = c;
	}
	return 0;
}

/* The parallel composition of the weakly connected pieces of S, or -2
 * when S is connected.  up[] is union-find over positions of S. */
static int parallel(struct gp *gp, const int *S, int n, int *up)
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
		kid[p] = decompose(gp, lists + cnt[p], cnt[p + 1] - cnt[p]);
		if (kid[p] < 0)
			goto out;
	}
	id = new_node(gp, GP_PAR, -1);
	if (id >= 0 && add_kids(gp, id, kid, np))
		id = -1;
out:
	free(lists);
	free(piece);
	free(cnt);
	free(kid);
	return id;
}

/* The node of the operators S[0..n) (topological order). */
static int decompose(struct gp *gp, const int *S, int n)
{
	const struct graph *g = gp->g;
	int *up = NULL, *cover = NULL, *buf = NULL, *okl = NULL, id = -1, nb = 0, ncut = 0;
	int stamp = ++gp->stamp;

	if (n == 1)
		return new_node(gp, GP_LEAF, S[0]);
	up = malloc((size_t)n * sizeof *up);
	cover = calloc((size_t)n + 1, sizeof *cover);
	okl = malloc((size_t)(n + 1) * sizeof *okl);
	buf = malloc((size_t)n * sizeof *buf);
	if (!up || !cover || !okl || !buf)
		goto out;
	for (int k = 0; k < n; k++) {
		gp->mark[S[k]] = stamp;
		gp->pos[S[k]] = k;
		up[k] = k;
	}
	for (int k = 0; k < n; k++)
		for (int e = 0; e < g->ops[S[k]].nin; e++) {
			int u = g->ops[S[k]].in[e];

			if (gp->mark[u] == stamp) {
				int a = find_root(up, gp->pos[u]), b = find_root(up, k);

				if (a != b)
					up[a < b ? b : a] = a < b ? a : b;
			}
		}
	id = parallel(gp, S, n, up);
	if (id != -2)
		goto out;
	/* connected: the cuts.  cover[p] > 0 when an edge jumps over p;
	 * okl[p]: every op before p has a consumer in S; the ops after p
	 * each need an input in S (checked from the right). */
	for (int k = 0; k < n; k++)
		for (int e = 0; e < g->ops[S[k]].nin; e++) {
			int u = g->ops[S[k]].in[e];

			if (gp->mark[u] == stamp && gp->pos[u] + 1 < k) {
				cover[gp->pos[u] + 1]++;
				cover[k]--;
			}
		}
	for (int k = 1; k <= n; k++)
		cover[k] += cover[k - 1];
	okl[0] = 1;
	for (int k = 0; k < n; k++) {
		int has = 0;

		for (int e = gp->cons_ofs[S[k]]; e < gp->cons_ofs[S[k] + 1] && !has; e++)
			has = gp->mark[gp->cons[e]] == stamp;
		okl[k + 1] = okl[k] && has;
	}
	/* up[k] (reused) = 1 when position k is a cut; okr: every op after
	 * k has an input in S */
	for (int k = n - 1, okr = 1; k >= 0; k--) {
		int has = 0;

		up[k] = !cover[k] && okl[k] && okr;
		ncut += up[k];
		for (int e = 0; e < g->ops[S[k]].nin && !has; e++)
			has = gp->mark[g->ops[S[k]].in[e]] == stamp;
		okr = okr && has;
	}
	id = new_node(gp, GP_SERIES, -1);
	if (id < 0)
		goto out;
	if (ncut == 0) {
		/* not series-parallel: serialised in topological order */
		for (int k = 0; k < n && id >= 0; k++) {
			buf[nb] = new_node(gp, GP_LEAF, S[k]);
			if (buf[nb++] < 0)
				id = -1;
		}
	} else {
		int seg = 0;

		for (int k = 0; k <= n && id >= 0; k++) {
			if (k < n && !up[k])
				continue;
			if (k > seg && push_series_kid(gp, buf, &nb, S + seg, k - seg))
				id = -1;
			if (k < n && id >= 0) {
				buf[nb] = new_node(gp, GP_LEAF, S[k]);
				if (buf[nb++] < 0)
					id = -1;
			}
			seg = k + 1;
		}
	}
	if (id >= 0 && add_kids(gp, id, buf, nb))
		id = -1;
out:
	free(up);
	free(cover);
	free(okl);
	free(buf);
	return id;
}

/* --- depth-first numbering ------------------------------------------------ */

static int cmp_weight(const void *pa, const void *pb, void *arg)
{
	const struct gp *gp = arg;
	double a = gp->node[*(const int *)pa].weight, b = gp->node[*(const int *)pb].weight;

	if (a != b)
		return a < b ? -1 : 1;
	return *(const int *)pa - *(const int *)pb;
}

static double weigh(struct gp *gp, int id, const double *op_w)
{
	struct gp_node *x = &gp->node[id];
	double w = 0;

	for (int i = x->kind == GP_LEAF ? x->op : -1; i >= 0; i = gp->next_op[i])
		w += op_w[i];
	for (int k = 0; k < x->nkid; k++)
		w += weigh(gp, gp->kids[x->kid_ofs + k], op_w);
	gp->node[id].weight = w;
	return w;
}

/* The live series nodes under id, into *ids. */
static void list_series(const struct gp *gp, int id, int *ids, int *n)
{
	const struct gp_node *x = &gp->node[id];

	if (x->kind == GP_SERIES)
		ids[(*n)++] = id;
	for (int k = 0; k < x->nkid; k++)
		list_series(gp, gp->kids[x->kid_ofs + k], ids, n);
}

/* Merges the leaves of series into units until at most max_units remain:
 * the two adjacent leaves of a series with the least compute together
 * first; a series left with one child becomes that leaf.  Returns the
 * number of units (leaves). */
static int coarsen(struct gp *gp)
{
	int units = gp->n, nser = 0;
	int *ser = malloc((size_t)gp->nnode * sizeof *ser);

	if (!ser)
		return -1;
	list_series(gp, gp->root, ser, &nser);
	while (units > gp->max_units) {
		int bs = -1, bk = 0;
		double bw = INFINITY;

		for (int s = 0; s < nser; s++) {
			const struct gp_node *x = &gp->node[ser[s]];
			const int *kid = gp->kids + x->kid_ofs;

			for (int k = 0; x->kind == GP_SERIES && k + 1 < x->nkid; k++) {
				const struct gp_node *a = &gp->node[kid[k]], *b = &gp->node[kid[k + 1]];

				if (a->kind == GP_LEAF && b->kind == GP_LEAF &&
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
			struct gp_node *x = &gp->node[bs];
			int *kid = gp->kids + x->kid_ofs;
			struct gp_node *a = &gp->node[kid[bk]], *b = &gp->node[kid[bk + 1]];
			int i = a->op;

			while (gp->next_op[i] >= 0)
				i = gp->next_op[i];
			gp->next_op[i] = b->op;
			a->nop += b->nop;
			a->weight += b->weight;
			memmove(kid + bk + 1, kid + bk + 2, (size_t)(x->nkid - bk - 2) * sizeof *kid);
			if (--x->nkid == 1) {
				x->kind = GP_LEAF;
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
 * contiguous and the light ones, next to the stem, can join its stage
 * (dp_merge); numbers the operators and places the DP tables. */
static void number(struct gp *gp, int id, size_t *tab)
{
	struct gp_node *x = &gp->node[id];

	x->lo = gp->nord;
	x->tab = (int)*tab;
	*tab += (size_t)(x->kind == GP_LEAF ? 2 : x->nkid + 1) * (gp->D + 1);
	for (int i = x->kind == GP_LEAF ? x->op : -1; i >= 0; i = gp->next_op[i]) {
		gp->at[i] = gp->nord;
		gp->ord[gp->nord++] = i;
	}
	if (x->kind == GP_PAR)
		qsort_r(gp->kids + x->kid_ofs, (size_t)x->nkid, sizeof *gp->kids,
			cmp_weight, gp);
	for (int k = 0; k < x->nkid; k++) {
		struct gp_node *y = &gp->node[gp->kids[x->kid_ofs + k]];

		y->merge = -1;
		if (x->kind == GP_SERIES && y->kind == GP_PAR) {
			y->merge = (int)*tab;
			*tab += (size_t)2 * (y->nkid + 1) * (gp->D + 1);
		}
		number(gp, gp->kids[x->kid_ofs + k], tab);
	}
	x->hi = gp->nord;
}

/* --- the cost of a stage ------------------------------------------------ */

static int div_index(const struct gp *gp, int64_t s)
{
	for (int k = 0; k < gp->ndiv; k++)
		if (gp->div[k] == s)
			return k;
	return -1;
}

/* Prefix sums of fwd + bwd per micro-batch of every op split into
 * shards of div[k] samples, looked up once per divisor. */
static int comp_prefix(struct gp *gp, int k, const double **out)
{
	double *c = gp->comp + (size_t)k * (gp->n + 1);

	if (!gp->comp_ready[k]) {
		int deg[NDIMS] = { (int)(gp->g->batch / gp->div[k]), 1, 1, 1, 1 };

		c[0] = 0;
		for (int q = 0; q < gp->n; q++) {
			int i = gp->ord[q];
			struct op_cost oc;
			int st = sim_op_cost(gp->in->p, gp->g, i, deg, 1, &oc);

			if (st)
				return st;
			c[q + 1] = c[q] + 1e-6 * (oc.fwd_us + oc.bwd_us);
		}
		gp->comp_ready[k] = 1;
	}
	*out = c;
	return AP_OK;
}

/* Ring all-reduce of P bytes over d replicas, hierarchical across nodes,
 * with the latency terms once per op with parameters (sim_comm.c). */
static double allreduce_s(const struct gp *gp, double P, int nparops, int d)
{
	const struct cluster *c = gp->in->c;
	int q = d < c->per_node ? d : c->per_node, N = (d + c->per_node - 1) / c->per_node;
	double t;

	if (d <= 1 || P <= 0)
		return 0;
	t = 2.0 * (q - 1) / q * P / c->intra.bw_bytes_per_s +
	    2.0 * (q - 1) * c->intra.latency_s * nparops;
	if (N > 1)
		t += 2.0 * (N - 1) / N * P / c->inter.bw_bytes_per_s +
		     2.0 * (N - 1) * c->inter.latency_s * nparops;
	return t;
}

/* A run of positions a..b-1 growing to the right, with the bytes (whole
 * batch) it receives from earlier positions and sends to later ones, each
 * producer counted once. */
struct gp_run {
	int a, b, stamp;
	double in_b, out_b;
};

static void run_start(struct gp *gp, struct gp_run *r, int a)
{
	r->a = r->b = a;
	r->in_b = r->out_b = 0;
	r->stamp = ++gp->seen_stamp;
}

static void run_extend(struct gp *gp, struct gp_run *r, int b)
{
	const struct graph *g = gp->g;

	for (; r->b < b; r->b++) {
		int q = r->b, i = gp->ord[q];

		for (int e = 0; e < g->ops[i].nin; e++) {
			int u = g->ops[i].in[e];

			if (gp->at[u] < r->a && gp->seen[u] != r->stamp) {
				gp->seen[u] = r->stamp;
				r->in_b += (double)g->ops[u].out_bytes;
			}
		}
		if (gp->lastc[q] > q)
			r->out_b += (double)g->ops[i].out_bytes;
		for (int e = gp->lc_ofs[q]; e < gp->lc_ofs[q + 1]; e++)
			if (gp->lc[e] >= r->a)
				r->out_b -= (double)g->ops[gp->ord[gp->lc[e]]].out_bytes;
	}
}

/* The run as one stage on d devices (shard sidx of the micro-batch):
 * 0 feasible, 1 too slow or too big, 2 too slow or too big whatever its
 * transfers (the bound that stops growing the run). */
static int eval(struct gp *gp, const struct gp_run *r, int d, int sidx,
		struct gp_eval *ev)
{
	const double *c = gp->comp + (size_t)sidx * (gp->n + 1);
	double frac = (double)gp->div[sidx] / (double)gp->g->batch;
	double comp = c[r->b] - c[r->a], P = gp->par_pref[r->b] - gp->par_pref[r->a];
	double tin = r->in_b > 0 ? gp->lat_link + r->in_b * frac / gp->bw : 0;
	double tout = r->out_b > 0 ? gp->lat_link + r->out_b * frac / gp->bw : 0;
	double act = (gp->act_pref[r->b] - gp->act_pref[r->a]) * frac;
	int inflight = gp->D - d + 1 < gp->m ? gp->D - d + 1 : gp->m;
	double static_b = (2 + gp->copies) * P;

	if (d > 1 && gp->nosplit_pref[r->b] - gp->nosplit_pref[r->a] > 0)
		return 2;
	/* the all-reduces of later ops overlap the backward of earlier ones
	 * (about two thirds of a micro-batch's compute) */
	ev->ar = allreduce_s(gp, P, gp->npar_pref[r->b] - gp->npar_pref[r->a], d);
	ev->ar = ev->ar > comp * 2 / 3 ? ev->ar - comp * 2 / 3 : 0;
	if (comp / (double)gp->mb + ev->ar / (double)gp->g->batch > gp->T ||
	    (gp->mem > 0 && static_b + inflight * act > gp->mem))
		return 2;
	ev->t_mb = comp > tin ? comp : tin;
	ev->t_mb = ev->t_mb > tout ? ev->t_mb : tout;
	ev->lat = comp + 2 * tin;
	if (ev->t_mb / (double)gp->mb + ev->ar / (double)gp->g->batch > gp->T ||
	    (gp->mem > 0 && static_b + inflight * (act + r->in_b * frac) > gp->mem))
		return 1;
	return 0;
}

/* --- the dynamic program of one (m, T) ---------------------------------- */

/* Device counts a stage may have: divisors of the micro-batch, at most
 * the cluster's; and the shard index of each. */
struct gp_devs {
	int n, d[64], sidx[64];
};

static int nkid_eff(const struct gp_node *x)
{
	return x->kind == GP_LEAF ? 1 : x->nkid;
}

/* Where piece k of node x starts and ends (a leaf is its own piece). */
static int kid_lo(const struct gp *gp, const struct gp_node *x, int k)
{
	return x->kind == GP_LEAF ? x->lo : gp->node[gp->kids[x->kid_ofs + k]].lo;
}

static int kid_hi(const struct gp *gp, const struct gp_node *x, int k)
{
	return x->kind == GP_LEAF ? x->hi : gp->node[gp->kids[x->kid_ofs + k]].hi;
}

static struct gp_cell *row(const struct gp *gp, int id, int j)
{
	return gp->cells + gp->node[id].tab + (size_t)j * (gp->D + 1);
}

/* Row t of table H (which 0) or G (which 1) of parallel node id. */
static struct gp_cell *hg(const struct gp *gp, int id, int which, int t)
{
	return gp->cells + gp->node[id].merge +
	       ((size_t)which * (gp->node[id].nkid + 1) + t) * (gp->D + 1);
}

static void relax(struct gp_cell *c, double lat, int from, int dev, int how, int br)
{
	if (lat < c->lat)
		*c = (struct gp_cell){ lat, from, dev, how, br, 0 };
}

/* The last cell of a row: the best on all devices, or in feasibility
 * mode the fewest devices. */
static int top(const struct gp *gp)
{
	return gp->feas ? 0 : gp->D;
}

/* Row B (a piece partitioned on its own) after row A into row out, in
 * series (latencies add) or in parallel (the larger); in feasibility mode
 * their device counts add. */
static void combine(const struct gp *gp, struct gp_cell *out, const struct gp_cell *A,
		    const struct gp_cell *B, int par, int from, int how)
{
	if (gp->feas) {
		if (A[0].lat + B[0].lat <= gp->D)
			relax(&out[0], A[0].lat + B[0].lat, from, (int)B[0].lat, how, 0);
		return;
	}
	for (int dc = 1; dc <= gp->D; dc++) {
		if (isinf(B[dc].lat))
			continue;
		for (int d = dc; d <= gp->D; d++) {
			double a = A[d - dc].lat, b = B[dc].lat;

			if (!isinf(a))
				relax(&out[d], par ? (a > b ? a : b) : a + b, from, dc, how, 0);
		}
	}
}

/* The run as one stage on each device count, after row R: into row out,
 * in series (latencies add) or in parallel (the larger).  Returns 0 when
 * no device count can take a longer run either. */
static int relax_stage(struct gp *gp, const struct gp_run *run, const struct gp_devs *dv,
		       const struct gp_cell *R, struct gp_cell *out, int par,
		       const struct gp_piece *how)
{
	int grow_on = 0, r0 = 0;
	/* with R nonincreasing in d and no branches hiding, a device count
	 * whose stage is no faster than a smaller count's offers every cell
	 * a value no better than the smaller count offers it first */
	int prune = how->mono && how->x_lo < 0 && how->y_hi < 0;
	double best_own = INFINITY;

	/* the loop over d is the DP's inner loop: it starts where row R
	 * has a plan, and an infinite latency stays infinite through the
	 * sums and maxima, so needs no test */
	while (r0 < gp->D && isinf(R[r0].lat))
		r0++;
	for (int t = 0; t < dv->n; t++) {
		const double *c = gp->comp + (size_t)dv->sidx[t] * (gp->n + 1);
		double hide = how->x_lo >= 0 ? c[run->b] - c[how->x_lo] : 0;
		double under = how->y_hi >= 0 ? c[how->y_hi] - c[run->a] : 0;
		struct gp_eval ev;
		int dc = dv->d[t], st = eval(gp, run, dc, dv->sidx[t], &ev);
		double own;

		grow_on |= st < 2;
		if (st)
			continue;
		if (gp->feas) {
			/* device counts ascend: the first that meets T is the
			 * fewest, and the run can grow (st < 2) */
			if (R[0].lat + dc <= gp->D)
				relax(&out[0], R[0].lat + dc, how->from, dc, how->how, how->br);
			break;
		}
		own = ev.lat + ev.ar;
		if (prune) {
			if (own >= best_own)
				continue;
			best_own = own;
		}
		/* the objective: latency plus the all-reduce the backward does
		 * not hide (exposed in the first stage of a path, a bound
		 * elsewhere); the earlier stage's branches hide behind this
		 * one's.  Without hiding (a row's hide is 0 unless it is an H
		 * or G row), a series only adds. */
		if (!par && how->x_lo < 0 && how->y_hi < 0) {
			for (int d = dc + r0; d <= gp->D; d++)
				if (R[d - dc].lat + own < out[d].lat)
					relax(&out[d], R[d - dc].lat + own, how->from, dc,
					      how->how, how->br);
			continue;
		}
		for (int d = dc + r0; d <= gp->D; d++) {
			const struct gp_cell *r = &R[d - dc];
			double lat;

			if (par)
				lat = r->lat > own ? r->lat : own;
			else
				lat = r->lat + own - hide + (r->hide > under ? r->hide - under : 0);
			if (lat < out[d].lat) {
				relax(&out[d], lat, how->from, dc, how->how, how->br);
				out[d].hide = hide;
			}
		}
	}
	return grow_on;
}

/* A stage need not hold whole pieces of the tree: the best plan of a
 * stem that forks into a light and a heavy branch may run the light
 * branch in the stem's stage, concurrently with the heavy one on the next
 * stage.  For parallel child p of series id (branches lightest first):
 * H[s], the best latency of children 0..p-1 and p's first s branches
 * whose last stage is children i..p-1 with those branches; G[t], the same
 * for p's first t branches, from H[t] or from row p and the t branches
 * partitioned on their own; then one stage over p's branches t.. and
 * children p+1..j-1 after G[t] gives row j. */
static void dp_merge(struct gp *gp, int id, int p, const struct gp_devs *dv)
{
	const struct gp_node *x = &gp->node[id];
	int c = gp->kids[x->kid_ofs + p], D = top(gp);
	const struct gp_node *y = &gp->node[c];
	const struct gp_cell *Rp = row(gp, id, p);
	struct gp_run run;

	for (int s = 0; s <= y->nkid; s++)
		for (int d = 0; d <= D; d++)
			hg(gp, c, 0, s)[d] = hg(gp, c, 1, s)[d] =
				(struct gp_cell){ INFINITY, 0, 0, GP_VIA_H, 0, 0 };
	for (int i = 0; i < p; i++) {
		const struct gp_cell *R = row(gp, id, i);

		if (isinf(R[D].lat))
			continue;
		run_start(gp, &run, kid_lo(gp, x, i));
		for (int s = 1; s < y->nkid; s++) {
			run_extend(gp, &run, kid_lo(gp, y, s));
			if (!relax_stage(gp, &run, dv, R, hg(gp, c, 0, s), 0,
					 &(struct gp_piece){ i, GP_WHOLE, 0, y->lo, -1, 0 }))
				break;
		}
	}
	for (int t = 1; t < y->nkid; t++) {
		const struct gp_cell *H = hg(gp, c, 0, t), *F = row(gp, c, t);
		struct gp_cell *G = hg(gp, c, 1, t);

		memcpy(G, H, (size_t)(D + 1) * sizeof *G);
		for (int d = 0; d <= D; d++)
			G[d].how = GP_VIA_H;
		combine(gp, G, Rp, F, 0, 0, GP_PREFIX);
		if (isinf(G[D].lat))
			continue;
		run_start(gp, &run, kid_lo(gp, y, t));
		run_extend(gp, &run, y->hi);
		for (int j = p + 2; j <= x->nkid; j++) {
			run_extend(gp, &run, kid_hi(gp, x, j - 1));
			if (!relax_stage(gp, &run, dv, G, row(gp, id, j), 0,
					 &(struct gp_piece){ p, GP_MERGE, t, -1, y->hi, 0 }))
				break;
		}
	}
}

/* Row j of node id's table: the best latency of its first j pieces on at
 * most d devices, pushed from every row i < j: a series adds latencies,
 * a parallel composition takes the larger. */
static void dp_node(struct gp *gp, int id, const struct gp_devs *dv)
{
	const struct gp_node *x = &gp->node[id];
	int k = nkid_eff(x), D = top(gp), par = x->kind == GP_PAR;

	for (int j = 0; j <= k; j++)
		for (int d = 0; d <= D; d++)
			row(gp, id, j)[d] = (struct gp_cell){ j == 0 ? 0 : INFINITY, 0, 0, 0, 0, 0 };
	for (int i = 0; i < k; i++) {
		const struct gp_cell *R = row(gp, id, i);
		struct gp_run run;
		int mono = 1;

		if (isinf(R[D].lat))
			continue;
		if (x->kind == GP_SERIES && gp->node[gp->kids[x->kid_ofs + i]].merge >= 0)
			dp_merge(gp, id, i, dv);
		if (x->kind != GP_LEAF) {
			int c = gp->kids[x->kid_ofs + i];

			if (gp->node[c].kind != GP_LEAF)
				combine(gp, row(gp, id, i + 1), R,
					row(gp, c, nkid_eff(&gp->node[c])), par, i, GP_OWN);
		}
		run_start(gp, &run, kid_lo(gp, x, i));
		for (int d = 1; d <= D && mono; d++)
			mono = !(R[d].lat > R[d - 1].lat);
		for (int j = i + 1; j <= k; j++) {
			run_extend(gp, &run, kid_hi(gp, x, j - 1));
			if (!relax_stage(gp, &run, dv, R, row(gp, id, j), par,
					 &(struct gp_piece){ i, GP_WHOLE, 0, -1, -1, mono }))
				break;
		}
	}
}

static void dp_tree(struct gp *gp, int id, const struct gp_devs *dv)
{
	const struct gp_node *x = &gp->node[id];

	if (x->kind != GP_LEAF)
		for (int k = 0; k < x->nkid; k++)
			dp_tree(gp, gp->kids[x->kid_ofs + k], dv);
	dp_node(gp, id, dv);
}

static int push_stage(struct gp *gp, int a, int b, int d)
{
	if (reserve(&gp->cst, &gp->cap_cst, (size_t)gp->ncst + 1, sizeof *gp->cst))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	gp->cst[gp->ncst++] = (struct gp_stage){ a, b, d };
	return AP_OK;
}

/* The stages of the best partition of node id's first j pieces on at
 * most d devices. */
static int extract(struct gp *gp, int id, int j, int d)
{
	const struct gp_node *x = &gp->node[id];
	int st = AP_OK;

	while (j > 0 && !st) {
		struct gp_cell c = row(gp, id, j)[d];
		int y = c.how == GP_OWN || c.how == GP_MERGE ? gp->kids[x->kid_ofs + c.from] : -1;

		d -= c.dev;
		if (c.how == GP_WHOLE) {
			st = push_stage(gp, kid_lo(gp, x, c.from), kid_hi(gp, x, j - 1), c.dev);
		} else if (c.how == GP_OWN) {
			st = extract(gp, y, nkid_eff(&gp->node[y]), c.dev);
		} else {
			struct gp_cell g = hg(gp, y, 1, c.br)[d];
			int lo = kid_lo(gp, &gp->node[y], c.br);

			st = push_stage(gp, lo, kid_hi(gp, x, j - 1), c.dev);
			if (!st && g.how == GP_PREFIX) {
				st = extract(gp, y, c.br, g.dev);
				d -= g.dev;
			} else if (!st) {
				struct gp_cell h = hg(gp, y, 0, c.br)[d];

				st = push_stage(gp, kid_lo(gp, x, h.from), lo, h.dev);
				d -= h.dev;
				c.from = h.from;
			}
		}
		j = c.from;
	}
	return st;
}

static int cmp_stage(const void *pa, const void *pb)
{
	return ((const struct gp_stage *)pa)->a - ((const struct gp_stage *)pb)->a;
}

/* Runs the DP at target T; when feasible and `keep`, adds its plan to
 * the candidates (once).  Returns 1 feasible, 0 not, < 0 an error. */
static int try_target(struct gp *gp, double T, const struct gp_devs *dv, int keep)
{
	const struct gp_cell *V;
	struct gp_cand *cd;
	double t_max = 0;
	int ofs = gp->ncst, st;

	gp->T = T;
	gp->feas = !keep;
	dp_tree(gp, gp->root, dv);
	V = row(gp, gp->root, nkid_eff(&gp->node[gp->root]));
	if (isinf(V[top(gp)].lat))
		return 0;
	if (!keep)
		return 1;
	st = extract(gp, gp->root, nkid_eff(&gp->node[gp->root]), gp->D);
	if (st)
		return st;
	if (gp->ncst > ofs)
		qsort(gp->cst + ofs, (size_t)(gp->ncst - ofs), sizeof *gp->cst, cmp_stage);
	if (reserve(&gp->clab, &gp->cap_clab, (size_t)(gp->ncand + 1) * gp->n, sizeof *gp->clab))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int s = ofs; s < gp->ncst; s++)
		for (int q = gp->cst[s].a; q < gp->cst[s].b; q++)
			gp->clab[(size_t)gp->ncand * gp->n + gp->ord[q]] = s - ofs;
	for (int c = 0; c < gp->ncand; c++) {
		int same = gp->cand[c].m == gp->m && gp->cand[c].nst == gp->ncst - ofs;

		for (int s = 0; s < gp->ncst - ofs && same; s++)
			same = gp->cst[gp->cand[c].ofs + s].d == gp->cst[ofs + s].d;
		if (same && !memcmp(gp->clab + gp->cand[c].lab, gp->clab + (size_t)gp->ncand * gp->n,
				    (size_t)gp->n * sizeof *gp->clab)) {
			gp->ncst = ofs;
			return 1;
		}
	}
	for (int s = ofs; s < gp->ncst; s++) {
		struct gp_run run;
		struct gp_eval ev;

		run_start(gp, &run, gp->cst[s].a);
		run_extend(gp, &run, gp->cst[s].b);
		eval(gp, &run, gp->cst[s].d, div_index(gp, gp->mb / gp->cst[s].d), &ev);
		t_max = ev.t_mb > t_max ? ev.t_mb : t_max;
	}
	if (reserve(&gp->cand, &gp->cap_cand, (size_t)gp->ncand + 1, sizeof *gp->cand))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	cd = &gp->cand[gp->ncand++];
	cd->m = gp->m;
	cd->ofs = ofs;
	cd->lab = (gp->ncand - 1) * gp->n;
	cd->nst = gp->ncst - ofs;
	cd->target = T;
	/* synchronous 1F1B: fill and drain along the latency, then the
	 * slowest stage sets the pace; the latency already holds the
	 * all-reduces the stages' backward leaves exposed */
	cd->est = V[gp->D].lat + (gp->m - 1) * t_max;
	return 1;
}

/* What the first phase of a search learns about one micro-batch count:
 * the smallest feasible target hi (of the binary search), the loosest
 * target top, and a lower bound on the estimate of any of its plans. */
struct gp_mres {
	int m, ok;
	double hi, top, lb;
};

/* Sets the DP up for m micro-batches: the device counts a stage may take
 * and their compute tables. */
static int set_m(struct gp *gp, int m, struct gp_devs *dv)
{
	const double *c;

	gp->m = m;
	gp->mb = gp->g->batch / m;
	dv->n = 0;
	for (int d = 1; d <= gp->D && d <= gp->mb && dv->n < 64; d++) {
		int st;

		if (gp->mb % d)
			continue;
		dv->d[dv->n] = d;
		dv->sidx[dv->n] = div_index(gp, gp->mb / d);
		st = comp_prefix(gp, dv->sidx[dv->n], &c);
		if (st)
			return st;
		dv->n++;
	}
	return AP_OK;
}

/* Phase one for m micro-batches: a binary search on the time per sample
 * (feasibility DPs), then the candidate of the loosest target, the
 * shallowest pipeline (data parallelism when the model fits one stage).
 * Its latency bounds every plan of m from below: a looser target only
 * admits more stages, so no target gives a smaller latency; and some
 * stage of every plan takes at least lo per sample, the largest target
 * found infeasible, t_mb / mb + ar / batch > lo for its t_mb and its
 * all-reduce ar, which the whole model's all-reduce on every device
 * bounds (ar_cap), so est = lat + (m - 1) t_max >= lat_top +
 * (m - 1) (mb lo - ar_cap / m). */
static int bound_m(struct gp *gp, int m, struct gp_mres *r)
{
	const struct graph *g = gp->g;
	struct gp_devs dv;
	const double *c;
	double lo, lo_seen = 0, hi, bytes = 0;
	double ar_cap = allreduce_s(gp, gp->par_pref[gp->n], gp->npar_pref[gp->n], gp->D);
	int st = set_m(gp, m, &dv);

	r->m = m;
	r->ok = 0;
	if (st)
		return st;
	/* every stage on one device keeps up with hi: all the compute and
	 * every tensor sent */
	c = gp->comp + (size_t)dv.sidx[0] * (gp->n + 1);
	for (int i = 0; i < g->nops; i++)
		bytes += (double)g->ops[i].out_bytes;
	hi = 1.01 * (c[gp->n] + gp->lat_link + bytes / m / gp->bw) / (double)gp->mb;
	lo = hi / (4.0 * gp->D);
	r->top = hi;
	st = try_target(gp, hi, &dv, 0);
	if (st <= 0)
		return st; /* nothing fits memory with m micro-batches */
	for (int it = 0; it < 12 && now_s() < gp->deadline; it++) {
		double mid = sqrt(lo * hi);

		st = try_target(gp, mid, &dv, 0);
		if (st < 0)
			return st;
		if (st)
			hi = mid;
		else
			lo = lo_seen = mid;
	}
	r->hi = hi;
	st = try_target(gp, r->top, &dv, 1);
	if (st < 0)
		return st;
	r->ok = 1;
	r->lb = row(gp, gp->root, nkid_eff(&gp->node[gp->root]))[gp->D].lat +
		(m - 1) * ((double)gp->mb * lo_seen - ar_cap / m);
	return AP_OK;
}

/* The estimate a candidate must beat to be simulated: the nverify-th
 * best so far (every candidate is simulated on small graphs). */
static double verify_bar(const struct gp *gp, int nverify)
{
	double bar = INFINITY;

	if (gp->n <= 40)
		return INFINITY;
	for (int c = 0; c < gp->ncand; c++) {
		int upto = 0;

		for (int k = 0; k < gp->ncand; k++)
			upto += gp->cand[k].est <= gp->cand[c].est;
		if (upto >= nverify && gp->cand[c].est < bar)
			bar = gp->cand[c].est;
	}
	return bar;
}

static int cmp_lb(const void *pa, const void *pb)
{
	const struct gp_mres *a = pa, *b = pb;

	return (a->lb > b->lb) - (a->lb < b->lb);
}

/* Phase two: the candidates of the smallest feasible target and a few
 * looser ones (a looser bottleneck can buy a shallower pipeline), for
 * the micro-batch counts by their bound, as long as the bound can still
 * beat the estimates that will be simulated. */
static int loosen(struct gp *gp, struct gp_mres *r, int nr, int nverify)
{
	static const double looser[] = { 1, 1.1, 1.25, 1.5, 2 };
	struct gp_devs dv;
	int st = AP_OK;

	if (nr > 0)
		qsort(r, (size_t)nr, sizeof *r, cmp_lb);
	for (int k = 0; k < nr && !st; k++) {
		if (!r[k].ok)
			continue;
		st = set_m(gp, r[k].m, &dv);
		for (size_t t = 0; t < sizeof looser / sizeof looser[0] && !st &&
				   r[k].hi * looser[t] < r[k].top; t++) {
			if (r[k].lb >= verify_bar(gp, nverify))
				break;
			st = try_target(gp, r[k].hi * looser[t], &dv, 1);
			st = st < 0 ? st : AP_OK;
		}
	}
	return st;
}

/* One link guess: both phases over the micro-batch counts, powers of
 * two up to max_m that divide the batch. */
static int search(struct gp *gp, int max_m, int nverify)
{
	struct gp_mres r[64];
	int nr = 0, st = AP_OK;

	for (int m = 1; m <= max_m && m <= gp->g->batch && nr < 64 && !st; m *= 2)
		if (gp->g->batch % m == 0 && (m == 1 || now_s() < gp->deadline))
			st = bound_m(gp, m, &r[nr++]);
	return st ? st : loosen(gp, r, nr, nverify);
}

/* --- plans ---------------------------------------------------------------- */

/* The plan of candidate cd: stages in depth-first order on consecutive
 * blocks of devices, each op data parallel over its stage's devices,
 * `next` wherever an edge crosses stages. */
static int build(struct gp *gp, const struct gp_cand *cd, struct plan *p)
{
	const struct graph *g = gp->g;
	const struct gp_stage *S = gp->cst + cd->ofs;
	const int *lab = gp->clab + cd->lab;
	int ns = cd->nst, *first = malloc((size_t)ns * sizeof *first);
	int rc = !first ? ap_err(AP_EFAIL, NULL, 0, "out of memory") : plan_alloc(p, g, ns);

	for (int s = 0, f = 0; s < ns && !rc; f += S[s].d, s++) {
		first[s] = f;
		rc = plan_stage_range(p, s, f, S[s].d, 0);
	}
	for (int i = 0; i < g->nops && !rc; i++) {
		int s = lab[i], deg[NDIMS] = { S[s].d, 1, 1, 1, 1 };

		rc = plan_place(p, i, s, deg, first[s]);
	}
	if (!rc)
		rc = plan_link_edges(p, g);
	plan_schedule(p, ns == 1 && cd->m == 1 ? SCHED_GPIPE : SCHED_1F1B, cd->m);
	free(first);
	return rc;
}

static int cmp_est(const void *pa, const void *pb)
{
	const struct gp_cand *a = pa, *b = pb;

	return (a->est > b->est) - (a->est < b->est);
}

/* Simulates the best `verify` candidates by estimate (every one of a
 * small graph) and keeps the fastest that fits memory in *best. */
static int verify(struct gp *gp, int nverify, int *best, double *best_s)
{
	struct sim s;
	struct plan cand;
	int rc = sim_init(&s, gp->g, gp->in->p, gp->in->c);

	*best = -1;
	*best_s = INFINITY;
	if (rc)
		return rc;
	plan_init(&cand);
	if (gp->ncand > 0) /* none may fit memory: no array to sort */
		qsort(gp->cand, (size_t)gp->ncand, sizeof *gp->cand, cmp_est);
	if (gp->n <= 40)
		nverify = gp->ncand;
	for (int k = 0; k < gp->ncand && !rc; k++) {
		struct sim_result r;

		if (k >= nverify && *best >= 0)
			break;
		rc = build(gp, &gp->cand[k], &cand);
		if (!rc)
			rc = sim_run(&s, &cand, NULL, &r);
		if (!rc && sim_fits(&r) &&
		    r.iter_s < *best_s) {
			*best_s = r.iter_s;
			*best = k;
		}
	}
	plan_release(&cand);
	sim_release(&s);
	return rc;
}

/* Whether stage s of p may run c micro-batches: a divisor of the batch
 * that its devices divide (each takes a share of every micro-batch), and
 * a count that divides or is divided by those of the stages joined to it
 * (re-batching sends whole micro-batches of the finer side). */
static int count_ok(const struct plan *p, int s, int c)
{
	if (c < 1 || p->batch % c || (p->batch / c) % p->stages[s].ndev)
		return 0;
	for (int t = 0; t < p->nstages; t++) {
		int o = plan_stage_microbatches(p, t), joined = 0;

		for (int e = 0; e < p->stages[s].nnext; e++)
			joined |= p->stages[s].next[e] == t;
		for (int e = 0; e < p->stages[t].nnext; e++)
			joined |= p->stages[t].next[e] == s;
		if (joined && c % o && o % c)
			return 0;
	}
	return 1;
}

/* Per-stage micro-batch counts (`stage-microbatches`): GraphPipe gives
 * every stage its own micro-batch size.  From the chosen plan, each stage
 * in turn tries a quarter, half, twice and four times its count; a change
 * is kept when the simulated iteration gets faster and fits memory, and
 * passes repeat while one helps (at most three).  Stage ids are indices
 * here (build()). */
static int refine_counts(struct gp *gp, struct plan *p, double *best_s)
{
	static const int num[] = { 1, 1, 2, 4 }, den[] = { 4, 2, 1, 1 };
	struct sim s;
	int rc = sim_init(&s, gp->g, gp->in->p, gp->in->c), better = 1;

	for (int pass = 0; pass < 3 && better && !rc; pass++) {
		better = 0;
		for (int st = 0; st < p->nstages && !rc; st++)
			for (int k = 0; k < 4 && !rc && now_s() < gp->deadline; k++) {
				int old = p->stages[st].microbatches;
				int c = plan_stage_microbatches(p, st) * num[k] / den[k];
				struct sim_result r;

				if (plan_stage_microbatches(p, st) % den[k] || !count_ok(p, st, c))
					continue;
				p->stages[st].microbatches = c == p->microbatches ? 0 : c;
				rc = sim_run(&s, p, NULL, &r);
				if (!rc && sim_fits(&r) &&
				    r.iter_s < *best_s * (1 - 1e-9)) {
					*best_s = r.iter_s;
					better = 1;
				} else {
					p->stages[st].microbatches = old;
				}
			}
	}
	sim_release(&s);
	return rc;
}

/* --- the planner ---------------------------------------------------------- */

static void gp_release(struct gp *gp)
{
	free(gp->cons_ofs);
	free(gp->cons);
	free(gp->node);
	free(gp->kids);
	free(gp->mark);
	free(gp->pos);
	free(gp->ord);
	free(gp->at);
	free(gp->comp);
	free(gp->comp_ready);
	free(gp->par_pref);
	free(gp->act_pref);
	free(gp->npar_pref);
	free(gp->nosplit_pref);
	free(gp->lc_ofs);
	free(gp->lc);
	free(gp->lastc);
	free(gp->seen);
	free(gp->cells);
	free(gp->cand);
	free(gp->cst);
	free(gp->clab);
	free(gp->next_op);
}

/* Everything the DP reads per position: prefix sums of parameters,
 * activations, parameterised and unsplittable ops; each position's last
 * consumer and, per position, the producers whose last consumer it is. */
static int prefixes(struct gp *gp)
{
	const struct graph *g = gp->g;
	int n = gp->n;

	gp->par_pref = calloc((size_t)n + 1, sizeof *gp->par_pref);
	gp->act_pref = calloc((size_t)n + 1, sizeof *gp->act_pref);
	gp->npar_pref = calloc((size_t)n + 1, sizeof *gp->npar_pref);
	gp->nosplit_pref = calloc((size_t)n + 1, sizeof *gp->nosplit_pref);
	gp->lc_ofs = calloc((size_t)n + 2, sizeof *gp->lc_ofs);
	gp->lc = calloc((size_t)n + 1, sizeof *gp->lc);
	gp->lastc = calloc((size_t)n, sizeof *gp->lastc);
	if (!gp->par_pref || !gp->act_pref || !gp->npar_pref || !gp->nosplit_pref ||
	    !gp->lc_ofs || !gp->lc || !gp->lastc)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int q = 0; q < n; q++) {
		const struct op *op = &g->ops[gp->ord[q]];
		struct plan_op whole = { .degree = { 1, 1, 1, 1, 1 }, .ndev = 1 };
		int64_t pb = plan_param_shard_bytes(op, &whole);

		gp->par_pref[q + 1] = gp->par_pref[q] + (double)pb;
		gp->npar_pref[q + 1] = gp->npar_pref[q] + (pb > 0);
		gp->act_pref[q + 1] = gp->act_pref[q] + (double)op->out_bytes;
		gp->nosplit_pref[q + 1] = gp->nosplit_pref[q] + !(op->split_mask & 1u);
		gp->lastc[q] = -1;
		for (int e = gp->cons_ofs[gp->ord[q]]; e < gp->cons_ofs[gp->ord[q] + 1]; e++)
			if (gp->at[gp->cons[e]] > gp->lastc[q])
				gp->lastc[q] = gp->at[gp->cons[e]];
	}
	for (int q = 0; q < n; q++)
		if (gp->lastc[q] >= 0)
			gp->lc_ofs[gp->lastc[q] + 2]++;
	for (int q = 0; q < n; q++)
		gp->lc_ofs[q + 2] += gp->lc_ofs[q + 1];
	for (int q = 0; q < n; q++)
		if (gp->lastc[q] >= 0)
			gp->lc[gp->lc_ofs[gp->lastc[q] + 1]++] = q;
	return AP_OK;
}

/* Builds the tree, the order, the tables and the costs every search
 * shares. */
static int setup(struct gp *gp)
{
	const struct graph *g = gp->g;
	int n = gp->n, rc;
	double *op_w = NULL;

	rc = graph_consumers(g, &gp->cons_ofs, &gp->cons);
	if (rc)
		return rc;
	gp->mark = calloc((size_t)n, sizeof *gp->mark);
	gp->pos = calloc((size_t)n, sizeof *gp->pos);
	gp->ord = calloc((size_t)n, sizeof *gp->ord);
	gp->at = calloc((size_t)n, sizeof *gp->at);
	gp->seen = calloc((size_t)n, sizeof *gp->seen);
	gp->next_op = calloc((size_t)n, sizeof *gp->next_op);
	op_w = calloc((size_t)n, sizeof *op_w);
	if (!gp->mark || !gp->pos || !gp->ord || !gp->at || !gp->seen || !gp->next_op ||
	    !op_w) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		int one[NDIMS] = { 1, 1, 1, 1, 1 };
		struct op_cost oc;

		gp->ord[i] = i;
		rc = sim_op_cost(gp->in->p, g, i, one, 1, &oc);
		if (rc)
			goto out;
		op_w[i] = oc.fwd_us + oc.bwd_us;
	}
	gp->root = decompose(gp, gp->ord, n);
	if (gp->root < 0) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	weigh(gp, gp->root, op_w);
	gp->nunits = coarsen(gp);
	if (gp->nunits < 0) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	for (int64_t d = 1; d <= g->batch && gp->ndiv < 64; d++)
		if (g->batch % d == 0)
			gp->div[gp->ndiv++] = d;
	gp->comp = malloc((size_t)gp->ndiv * (n + 1) * sizeof *gp->comp);
	gp->comp_ready = calloc((size_t)gp->ndiv, sizeof *gp->comp_ready);
	if (!gp->comp || !gp->comp_ready)
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
out:
	free(op_w);
	return rc;
}

/* Numbers the tree and sizes what depends on the numbering. */
static int set_order(struct gp *gp)
{
	size_t tab = 0;

	gp->nord = 0;
	gp->node[gp->root].merge = -1;
	number(gp, gp->root, &tab);
	gp->cells = malloc(tab * sizeof *gp->cells);
	if (!gp->cells)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	return prefixes(gp);
}

static int plan_graphpipe(const struct planner_input *in, struct plan *out)
{
	const struct cluster *c = in->c;
	struct gp gp = { .in = in, .g = in->g, .n = in->g->nops, .D = cluster_ndevices(c),
			 .copies = 1 };
	int max_m = planner_int(in, "max-microbatches");
	int nverify = planner_int(in, "verify"), best = -1, rc;
	double best_s = INFINITY;

	if (max_m < 1 || nverify < 1)
		return ap_err(AP_EINPUT, "graphpipe", 0,
			      "max-microbatches and verify must be at least 1");
	gp.max_units = planner_int(in, "max-units");
	if (gp.max_units < 2)
		return ap_err(AP_EINPUT, "graphpipe", 0, "max-units must be at least 2");
	gp.deadline = now_s() + 0.8 * in->budget_s;
	gp.mem = c->mem_bytes > 0 ? (double)c->mem_bytes : (double)in->p->dev.mem_bytes;
	rc = setup(&gp);
	/* transfers between stages: over the NICs when the plan spans nodes,
	 * and, as a second guess, between neighbours inside a node */
	if (!rc)
		rc = set_order(&gp);
	for (int l = 0; l < (gp.D > c->per_node ? 2 : 1) && !rc; l++) {
		const struct link *ln = gp.D > c->per_node && l == 0 ? &c->inter : &c->intra;

		gp.bw = ln->bw_bytes_per_s;
		gp.lat_link = ln->latency_s;
		rc = search(&gp, max_m, nverify);
	}
	if (!rc)
		rc = verify(&gp, nverify, &best, &best_s);
	if (!rc && best < 0)
		rc = ap_err(AP_EINPUT, "graphpipe", 0,
			    "no stage graph of '%s' fits the memory of %d devices", in->g->name,
			    gp.D);
	if (!rc)
		rc = build(&gp, &gp.cand[best], out);
	if (!rc && planner_flag(in, "stage-microbatches") && out->sched != SCHED_GPIPE)
		rc = refine_counts(&gp, out, &best_s);
	if (!rc) {
		out->est_ms = 1e3 * gp.cand[best].est;
		rc = plan_set_stat(out, "stages", gp.cand[best].nst);
	}
	if (!rc)
		rc = plan_set_stat(out, "target_ms", 1e3 * gp.cand[best].target *
							(double)in->g->batch);
	if (!rc)
		rc = plan_set_stat(out, "candidates", gp.ncand);
	if (!rc)
		rc = plan_set_stat(out, "units", gp.nunits);
	gp_release(&gp);
	return rc;
}

const struct planner planner_graphpipe = {
	.name = "graphpipe",
	.description = "a DAG of data-parallel stages from a series-parallel decomposition, 1F1B",
	.anchor = "GraphPipe, ASPLOS 2025",
	.plan = plan_graphpipe,
	.options = (const struct planner_option[]){
		{ "max-microbatches", POPT_INT, "64", NULL,
		  "micro-batch counts tried: powers of two up to this" },
		{ "verify", POPT_INT, "8", NULL,
		  "candidate plans simulated (every one on graphs of at most 40 ops)" },
		{ "max-units", POPT_INT, "4096", NULL,
		  "at most this many units (adjacent ops of a series merged, least compute first)" },
		{ "stage-microbatches", POPT_FLAG, NULL, NULL,
		  "let stages run their own micro-batch counts (simulated; the runtime "
		  "refuses such plans)" },
		{ 0 },
	},
};
