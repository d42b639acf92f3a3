/*
 * The search of the graphpipe planner (graphpipe.c, graphpipe_impl.h):
 * the cost of a stage, the dynamic program over the series-parallel tree
 * (core/sp_decomp.h) at one micro-batch count m and target T, and the two
 * phases over m and T that collect the candidate plans graphpipe.c
 * simulates.
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
 * exact (the plans are those of the search without them).  What
 * remains: the candidates' DPs (the loosest target of each m and up to
 * five looser ones per m and link guess) about half, the feasibility DPs
 * a third, the simulations of `verify` and the profile lookups of each
 * shard size the rest.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/err.h"
#include "algo/ties.h"
#include "graphpipe_impl.h"
#include "util/grow.h"
#include "sim/sim.h"
#include "plan/plan_check.h"
#include "cost/cost.h"

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

/* One stage as the cost model sees it. */
struct gp_eval {
	double t_mb, lat, ar;
};

/* --- the DP's tables ---------------------------------------------------- */

/* Node id's table and, before each child's own, the tables H and G of a
 * parallel child of a series, in depth-first order.  The tree puts the
 * lightest branches first (sp_decomp.h), so that the light ones, next to
 * the stem, can join its stage (dp_merge). */
static void place_tables(struct gp *gp, int id, size_t *tab)
{
	const struct sp_node *x = &gp->sp.node[id];

	gp->tab[id] = (int)*tab;
	*tab += (size_t)(x->kind == SP_LEAF ? 2 : x->nkid + 1) * (gp->D + 1);
	for (int k = 0; k < x->nkid; k++) {
		int c = gp->sp.kids[x->kid_ofs + k];
		const struct sp_node *y = &gp->sp.node[c];

		gp->merge[c] = -1;
		if (x->kind == SP_SERIES && y->kind == SP_PAR) {
			gp->merge[c] = (int)*tab;
			*tab += (size_t)2 * (y->nkid + 1) * (gp->D + 1);
		}
		place_tables(gp, c, tab);
	}
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
		const struct op *op = &g->ops[gp->sp.ord[q]];
		int64_t pb = cost_param_bytes(op, 1);

		gp->par_pref[q + 1] = gp->par_pref[q] + (double)pb;
		gp->npar_pref[q + 1] = gp->npar_pref[q] + (pb > 0);
		gp->act_pref[q + 1] = gp->act_pref[q] + (double)op->out_bytes;
		gp->nosplit_pref[q + 1] = gp->nosplit_pref[q] + !(op->split_mask & 1u);
		gp->lastc[q] = -1;
		for (int e = gp->cons_ofs[gp->sp.ord[q]]; e < gp->cons_ofs[gp->sp.ord[q] + 1]; e++)
			if (gp->sp.at[gp->cons[e]] > gp->lastc[q])
				gp->lastc[q] = gp->sp.at[gp->cons[e]];
	}
	for (int q = 0; q < n; q++)
		if (gp->lastc[q] >= 0)
			gp->lc_ofs[gp->lastc[q] + 2]++;
	for (int q = 0; q < n; q++)
		gp->lc_ofs[q + 2] += gp->lc_ofs[q + 1];
	for (int q = 0; q < n; q++)
		if (gp->lastc[q] >= 0)
			gp->lc[gp->lc_ofs[gp->lastc[q] + 1]++] = q;
	if (ties_any(g)) {
		gp->tie_lo = malloc((size_t)n * sizeof *gp->tie_lo);
		gp->tie_hi = malloc((size_t)n * sizeof *gp->tie_hi);
		if (!gp->tie_lo || !gp->tie_hi)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		ties_span(g, gp->sp.at, gp->tie_lo, gp->tie_hi);
	}
	return AP_OK;
}


/* Sizes what depends on the tree's numbering: the DP's tables and the
 * sums per position. */
int gp_tables(struct gp *gp)
{
	size_t tab = 0;

	gp->tab = malloc((size_t)gp->sp.nnode * sizeof *gp->tab);
	gp->merge = malloc((size_t)gp->sp.nnode * sizeof *gp->merge);
	if (!gp->tab || !gp->merge)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	gp->merge[gp->sp.root] = -1;
	place_tables(gp, gp->sp.root, &tab);
	gp->cells = malloc(tab * sizeof *gp->cells);
	if (!gp->cells)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	return prefixes(gp);
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
			int i = gp->sp.ord[q];
			struct op_cost oc;
			int st = cost_op(gp->input->p, gp->g, i, deg, 1, &oc);

			if (st)
				return st;
			c[q + 1] = c[q] + 1e-6 * (oc.fwd_us + oc.bwd_us);
		}
		gp->comp_ready[k] = 1;
	}
	*out = c;
	return AP_OK;
}

/* The all-reduce of P bytes over d replicas on consecutive devices, the
 * cost model's by the cluster's algorithm (by default a ring, hierarchical
 * across nodes), with the latency terms
 * once per op with parameters. */
static double allreduce_s(const struct gp *gp, double P, int nparops, int d)
{
	const struct cluster *c = gp->input->c;
	int q = d < c->per_node ? d : c->per_node, N = (d + c->per_node - 1) / c->per_node;

	if (d <= 1 || P <= 0)
		return 0;
	return cost_allreduce_spread_s(c, d, N, q, P, nparops);
}

/* A run of positions a..b-1 growing to the right, with the bytes (whole
 * batch) it receives from earlier positions and sends to later ones, each
 * producer counted once, and the first and last position of the tie
 * groups of its ops (with ties). */
struct gp_run {
	int a, b, stamp;
	double in_b, out_b;
	int tie_lo, tie_hi;
};

static void run_start(struct gp *gp, struct gp_run *r, int a)
{
	r->a = r->b = a;
	r->in_b = r->out_b = 0;
	r->stamp = ++gp->seen_stamp;
	r->tie_lo = a;
	r->tie_hi = a - 1;
}

static void run_extend(struct gp *gp, struct gp_run *r, int b)
{
	const struct graph *g = gp->g;

	for (; r->b < b; r->b++) {
		int q = r->b, i = gp->sp.ord[q];

		if (gp->tie_lo) {
			r->tie_lo = gp->tie_lo[i] < r->tie_lo ? gp->tie_lo[i] : r->tie_lo;
			r->tie_hi = gp->tie_hi[i] > r->tie_hi ? gp->tie_hi[i] : r->tie_hi;
		}
		for (int e = 0; e < g->ops[i].nin; e++) {
			int u = g->ops[i].in[e];

			if (gp->sp.at[u] < r->a && gp->seen[u] != r->stamp) {
				gp->seen[u] = r->stamp;
				r->in_b += (double)g->ops[u].out_bytes;
			}
		}
		if (gp->lastc[q] > q)
			r->out_b += (double)g->ops[i].out_bytes;
		for (int e = gp->lc_ofs[q]; e < gp->lc_ofs[q + 1]; e++)
			if (gp->lc[e] >= r->a)
				r->out_b -= (double)g->ops[gp->sp.ord[gp->lc[e]]].out_bytes;
	}
}

/* The run as one stage on d devices (shard sidx of the micro-batch):
 * 0 feasible, 1 too slow or too big, or holding part of a tie group
 * that a longer run may complete, 2 too slow or too big whatever its
 * transfers, or holding part of a tie group that begins before it (the
 * bound that stops growing the run). */
static int eval(struct gp *gp, const struct gp_run *r, int d, int sidx,
		struct gp_eval *ev)
{
	const double *c = gp->comp + (size_t)sidx * (gp->n + 1);
	double frac = (double)gp->div[sidx] / (double)gp->g->batch;
	double comp = c[r->b] - c[r->a], P = gp->par_pref[r->b] - gp->par_pref[r->a];
	double tin = r->in_b > 0 ? cost_link_s(gp->link, r->in_b * frac) : 0;
	double tout = r->out_b > 0 ? cost_link_s(gp->link, r->out_b * frac) : 0;
	double act = (gp->act_pref[r->b] - gp->act_pref[r->a]) * frac;
	int inflight = gp->D - d + 1 < gp->m ? gp->D - d + 1 : gp->m;
	double static_b = cost_state_factor(OPTIMIZER_SGD) * P;

	if (d > 1 && gp->nosplit_pref[r->b] - gp->nosplit_pref[r->a] > 0)
		return 2;
	if (r->tie_lo < r->a)
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
	    (gp->mem > 0 && static_b + inflight * (act + r->in_b * frac) > gp->mem) ||
	    r->tie_hi >= r->b)
		return 1;
	return 0;
}

/* --- the dynamic program of one (m, T) ---------------------------------- */

/* Device counts a stage may have: divisors of the micro-batch, at most
 * the cluster's; and the shard index of each. */
struct gp_devs {
	int n, d[64], sidx[64];
};

static int nkid_eff(const struct sp_node *x)
{
	return x->kind == SP_LEAF ? 1 : x->nkid;
}

/* Where piece k of node x starts and ends (a leaf is its own piece). */
static int kid_lo(const struct gp *gp, const struct sp_node *x, int k)
{
	return x->kind == SP_LEAF ? x->lo : gp->sp.node[gp->sp.kids[x->kid_ofs + k]].lo;
}

static int kid_hi(const struct gp *gp, const struct sp_node *x, int k)
{
	return x->kind == SP_LEAF ? x->hi : gp->sp.node[gp->sp.kids[x->kid_ofs + k]].hi;
}

static struct gp_cell *row(const struct gp *gp, int id, int j)
{
	return gp->cells + gp->tab[id] + (size_t)j * (gp->D + 1);
}

/* Row t of table H (which 0) or G (which 1) of parallel node id. */
static struct gp_cell *hg(const struct gp *gp, int id, int which, int t)
{
	return gp->cells + gp->merge[id] +
	       ((size_t)which * (gp->sp.node[id].nkid + 1) + t) * (gp->D + 1);
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
	const struct sp_node *x = &gp->sp.node[id];
	int c = gp->sp.kids[x->kid_ofs + p], D = top(gp);
	const struct sp_node *y = &gp->sp.node[c];
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
	const struct sp_node *x = &gp->sp.node[id];
	int k = nkid_eff(x), D = top(gp), par = x->kind == SP_PAR;

	for (int j = 0; j <= k; j++)
		for (int d = 0; d <= D; d++)
			row(gp, id, j)[d] =
				(struct gp_cell){ j == 0 ? 0 : INFINITY, 0, 0, 0, 0, 0 };
	for (int i = 0; i < k; i++) {
		const struct gp_cell *R = row(gp, id, i);
		struct gp_run run;
		int mono = 1;

		if (isinf(R[D].lat))
			continue;
		if (x->kind == SP_SERIES && gp->merge[gp->sp.kids[x->kid_ofs + i]] >= 0)
			dp_merge(gp, id, i, dv);
		if (x->kind != SP_LEAF) {
			int c = gp->sp.kids[x->kid_ofs + i];

			if (gp->sp.node[c].kind != SP_LEAF)
				combine(gp, row(gp, id, i + 1), R,
					row(gp, c, nkid_eff(&gp->sp.node[c])), par, i, GP_OWN);
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
	const struct sp_node *x = &gp->sp.node[id];

	if (x->kind != SP_LEAF)
		for (int k = 0; k < x->nkid; k++)
			dp_tree(gp, gp->sp.kids[x->kid_ofs + k], dv);
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
	const struct sp_node *x = &gp->sp.node[id];
	int st = AP_OK;

	while (j > 0 && !st) {
		struct gp_cell c = row(gp, id, j)[d];
		int y = c.how == GP_OWN || c.how == GP_MERGE ?
			gp->sp.kids[x->kid_ofs + c.from] : -1;

		d -= c.dev;
		if (c.how == GP_WHOLE) {
			st = push_stage(gp, kid_lo(gp, x, c.from), kid_hi(gp, x, j - 1), c.dev);
		} else if (c.how == GP_OWN) {
			st = extract(gp, y, nkid_eff(&gp->sp.node[y]), c.dev);
		} else {
			struct gp_cell g = hg(gp, y, 1, c.br)[d];
			int lo = kid_lo(gp, &gp->sp.node[y], c.br);

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
	dp_tree(gp, gp->sp.root, dv);
	V = row(gp, gp->sp.root, nkid_eff(&gp->sp.node[gp->sp.root]));
	if (isinf(V[top(gp)].lat))
		return 0;
	if (!keep)
		return 1;
	st = extract(gp, gp->sp.root, nkid_eff(&gp->sp.node[gp->sp.root]), gp->D);
	if (st)
		return st;
	if (gp->ncst > ofs)
		qsort(gp->cst + ofs, (size_t)(gp->ncst - ofs), sizeof *gp->cst, cmp_stage);
	if (reserve(&gp->clab, &gp->cap_clab, (size_t)(gp->ncand + 1) * gp->n, sizeof *gp->clab))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int s = ofs; s < gp->ncst; s++)
		for (int q = gp->cst[s].a; q < gp->cst[s].b; q++)
			gp->clab[(size_t)gp->ncand * gp->n + gp->sp.ord[q]] = s - ofs;
	for (int c = 0; c < gp->ncand; c++) {
		int same = gp->cand[c].m == gp->m && gp->cand[c].nst == gp->ncst - ofs;

		for (int s = 0; s < gp->ncst - ofs && same; s++)
			same = gp->cst[gp->cand[c].ofs + s].d == gp->cst[ofs + s].d;
		if (same && !memcmp(gp->clab + gp->cand[c].lab,
				    gp->clab + (size_t)gp->ncand * gp->n,
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
	hi = 1.01 * (c[gp->n] + cost_link_s(gp->link, bytes / m)) / (double)gp->mb;
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
	r->lb = row(gp, gp->sp.root, nkid_eff(&gp->sp.node[gp->sp.root]))[gp->D].lat +
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
int gp_search(struct gp *gp, int max_m, int nverify)
{
	struct gp_mres r[64];
	int nr = 0, st = AP_OK;

	for (int m = 1; m <= max_m && m <= gp->g->batch && nr < 64 && !st; m *= 2)
		if (gp->g->batch % m == 0 && (m == 1 || now_s() < gp->deadline))
			st = bound_m(gp, m, &r[nr++]);
	return st ? st : loosen(gp, r, nr, nverify);
}
