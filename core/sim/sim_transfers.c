/*
 * The transfers between shards on different devices and the local sources
 * of every compute task (sim_impl.h), laid out once per sim_run() after the
 * shards (sim_layout.c), and again for a changed producer by sim_delta().
 *
 * A consumer shard needs of each input what the runtime gathers for it
 * (cost_need_span() of the cost model, op_input_need() of needs.h): its
 * own fraction of the dims that follow the split, with the halo a
 * convolution or pool split along h or w reads at each cut, and the whole
 * of every other dim.  The bytes a pair of shards exchanges are the
 * overlap of what one owns and the other needs, x 4: a change of split
 * between neighbours costs exactly the data that moves, in
 * cost_transfer_s().
 */
#include "sim/sim_transfers.h"

#include <string.h>

#include "util/checked.h"
#include "util/err.h"
#include "util/intmath.h"
#include "sim/sim_layout.h"
#include "sim/sim_comm.h"

/* The transfer of region [lo, hi) of producer shard gp to consumer shard
 * gc of op c in stage index `stage`, shared with an earlier consumer of the
 * same stage on the same device that needs the same region.  xhead chains
 * the transfers of each (shard of the producer, destination device), so
 * the search for a sharer looks only at transfers to the same device. */
static int find_xfer(struct sim *s, int gp, int gc, int c, int stage,
		     const int64_t *lo, const int64_t *hi, int64_t bytes,
		     int no_grad, int pieces, int rper, int rphase, int *out)
{
	struct sim_work *w = s->w;
	int dst = w->shard_dev[gc], *head;
	int64_t hk = (int64_t)(gp - w->shard_base[w->shard_op[gp]]) * w->ndev + dst;
	struct sim_xfer *x;
	struct sim_xsched *xs;

	for (int t = sim_map_get(&w->xhead, hk); t >= 0; t = w->xf[t].next_same) {
		x = &w->xf[t];
		if (x->stage == stage && x->rper == rper && x->rphase == rphase &&
		    !memcmp(x->lo, lo, sizeof x->lo) && !memcmp(x->hi, hi, sizeof x->hi)) {
			*out = t;
			return AP_OK;
		}
	}
	if (RESERVE(w, xf, w->nxf + 1) || RESERVE(w, xs, w->nxf + 1))
		return AP_EFAIL;
	x = &w->xf[w->nxf];
	xs = &w->xs[w->nxf];
	x->src = w->shard_dev[gp];
	x->dst = dst;
	xs->prod = gp;
	xs->cons = gc;
	x->emit_op = c;
	x->stage = stage;
	x->no_grad = no_grad;
	x->rper = rper;
	x->rphase = rphase;
	x->bytes = bytes;
	x->cls = cluster_link_class(s->c, x->src, dst);
	xs->dur_s = cost_transfer_s(s->c, x->src, dst, (double)bytes);
	if (sim_link_res(s, x->src, dst, xs->res) || sim_link_res(s, dst, x->src, xs->rres))
		return AP_EFAIL;
	if (sim_map_at(&w->xhead, hk, &head))
		return AP_EFAIL;
	memcpy(x->lo, lo, sizeof x->lo);
	memcpy(x->hi, hi, sizeof x->hi);
	x->next_same = *head;
	*head = w->nxf;
	/* A received input is kept until its first consumer's backward: the
	 * pieces of a finer producer's micro-batches that make one of its. */
	w->act_bytes[gc] = sat_add(w->act_bytes[gc], sat_mul(pieces, bytes));
	*out = w->nxf++;
	return AP_OK;
}

/* The micro-batches in which replica gp of a producer's stage of rp
 * replicas feeds replica gc of a consumer's of rc: those with j % rp ==
 * gp and j % rc == gc, that is j % lcm(rp, rc) == rr[1], rr[0] being the
 * lcm; none (0) when gp and gc differ modulo gcd(rp, rc). */
static int replica_pair(int rp, int gp, int rc, int gc, int rr[2])
{
	if (rp == 1 && rc == 1) {
		rr[0] = 1;
		rr[1] = 0;
		return 1;
	}
	rr[0] = (int)lcm64(rp, rc);
	for (rr[1] = gc; rr[1] < rr[0]; rr[1] += rc)
		if (rr[1] % rp == gp)
			return 1;
	return 0;
}

/* A local source: the producer shard gp feeds gc's forward, gc feeds
 * gp's backward (unless gp is an input, which has no gradient). */
static int add_local(struct sim_work *w, int gp, int gc, int no_grad, int np[2])
{
	int st = sim_add_pair(&w->pairs, &w->cap_pairs, &np[0], gc, gp);

	if (!st && !no_grad)
		st = sim_add_pair(&w->bpairs, &w->cap_bpairs, &np[1], gp, gc);
	return st;
}

/* What connect() knows of an edge from producer op p to consumer op c
 * of stage index `stage`, for the shard pairs of each pair of their
 * replicas. */
struct edge {
	int p, c, stage, no_grad;
	int mp, me;              /* the producer's micro-batches, the finer's */
	int64_t mb_n;            /* samples of the finer's micro-batch */
	int fol[NDIMS], ofs[NDIMS]; /* dims the consumer splits; their spans */
	int pieces;              /* received pieces a consumer keeps, or 0 */
	int rr[2];               /* sim_xfer.rper, rphase */
};

/* The sources between the shards of producer replica at pbase and those
 * of consumer replica at gc (connect(), into which it is inlined: the
 * layout's hot loop, its edge then in registers). */
static inline __attribute__((always_inline)) int
connect_shards(struct sim *s, const struct plan *pl, const struct edge *ed, int pbase, int gc,
	       int np[2])
{
	struct sim_work *w = s->w;
	const struct shape *t = &s->g->ops[ed->p].out;
	const int *dc = pl->ops[ed->c].degree, *dp = pl->ops[ed->p].degree;
	int64_t lo[NDIMS], hi[NDIMS], pn[2];
	int ci[NDIMS] = { 0 };

	do {
		const struct sim_span *sp[NDIMS];
		int first[NDIMS], last[NDIMS], pi[NDIMS], empty = 0;

		for (int d = 0; d < NDIMS; d++) {
			sp[d] = &w->span[ed->ofs[d] + (ed->fol[d] ? ci[d] : 0)];
			pi[d] = first[d] = sp[d]->first;
			last[d] = sp[d]->last;
			empty |= first[d] >= last[d];
		}
		do {
			int kp = 0, gp, st;
			int64_t vol = 1;
			const int64_t *plo, *phi;

			if (empty)
				break;
			for (int d = 0; d < NDIMS; d++)
				kp = kp * dp[d] + pi[d];
			gp = pbase + kp;
			plo = LO(w, gp);
			phi = HI(w, gp);
			if (ed->mp != ed->me) {
				/* a coarser producer's part of each finer
				 * micro-batch: its shard's region there */
				int64_t sz = shape_extent(t, DIM_N, ed->mb_n);

				pn[0] = pi[DIM_N] * sz / dp[DIM_N];
				pn[1] = (pi[DIM_N] + 1) * sz / dp[DIM_N];
			} else {
				pn[0] = plo[DIM_N];
				pn[1] = phi[DIM_N];
			}
			for (int d = 0; d < NDIMS; d++) {
				int64_t a = d == DIM_N ? pn[0] : plo[d];
				int64_t b = d == DIM_N ? pn[1] : phi[d];

				lo[d] = a > sp[d]->a ? a : sp[d]->a;
				hi[d] = b < sp[d]->b ? b : sp[d]->b;
				vol *= hi[d] > lo[d] ? hi[d] - lo[d] : 0;
			}
			if (vol <= 0)
				continue;
			if (w->shard_dev[gp] == w->shard_dev[gc]) {
				st = add_local(w, gp, gc, ed->no_grad, np);
			} else {
				int x;

				st = find_xfer(s, gp, gc, ed->c, ed->stage, lo, hi,
					       vol * BYTES_PER_ELEM, ed->no_grad, ed->pieces,
					       ed->rr[0], ed->rr[1], &x);
				if (!st)
					st = sim_add_pair(&w->pairs, &w->cap_pairs, &np[0], gc,
							  SRC_XFER(x));
				if (!st && !ed->no_grad)
					st = sim_add_pair(&w->bpairs, &w->cap_bpairs, &np[1],
							  gp, SRC_XFER(x));
			}
			if (st)
				return st;
		} while (shard_coord_next(pi, first, last));
		gc++;
	} while (shard_coord_next(ci, NULL, dc));
	return AP_OK;
}

/* Consumer op c reading producer op p as its input k.  Per dim of the
 * tensor, a consumer index ci (0 for a dim it needs whole) needs
 * [span.a, span.b) and meets the producer shards span.first..last-1;
 * every producer shard overlapping what a consumer shard needs becomes a
 * source of its forward and, in reverse, the consumer a source of the
 * producer's backward, through a transfer when their devices differ.
 * With round-robin replicas, so does every pair of a producer replica and
 * a consumer replica that meet in some micro-batch (sim_xfer.rper); the
 * sources of the others are never run in a micro-batch that reads them
 * (sim_sched.c). */
static int connect(struct sim *s, const struct plan *pl, int p, int c, int k,
		   int np[2])
{
	struct sim_work *w = s->w;
	const struct shape *t = &s->g->ops[p].out;
	const int *dc = pl->ops[c].degree, *dp = pl->ops[p].degree;
	int rp = w->op_r[p], rc = w->op_r[c], n = 0, st = AP_OK, mc;
	struct edge ed;

	ed.p = p;
	ed.c = c;
	ed.stage = w->stage_pos[pl->ops[c].stage];
	ed.no_grad = s->g->ops[p].kind == OP_INPUT;
	/* between stages of different counts, a micro-batch of the finer */
	ed.mp = w->op_m[p];
	mc = w->stage_m[ed.stage];
	ed.me = mc > ed.mp ? mc : ed.mp;
	ed.mb_n = s->g->batch / ed.me;
	for (int d = 0; d < NDIMS; d++) {
		ed.fol[d] = cost_need_varies(s->g, c, k, d);
		ed.ofs[d] = n;
		n += ed.fol[d] ? dc[d] : 1;
	}
	if (RESERVE(w, span, n))
		return AP_EFAIL;
	for (int d = 0; d < NDIMS; d++) {
		int64_t sz = shape_extent(t, d, ed.mb_n);
		int nd = ed.fol[d] ? dc[d] : 1;

		for (int i = 0; i < nd; i++) {
			struct sim_span *sp = &w->span[ed.ofs[d] + i];

			cost_need_span(s->g, c, k, d, i, nd, ed.mb_n, &sp->a, &sp->b);
			cost_meeting(sp->a, sp->b, dp[d], sz, &sp->first, &sp->last);
		}
	}
	/* a consumer replica keeps what it receives once: counted with
	 * producer replica gc % rp, one of those it meets */
	for (int pair = 0; pair < rp * rc && !st; pair++) {
		int gp = pair % rp, gc = pair / rp;

		if (!replica_pair(rp, gp, rc, gc, ed.rr))
			continue;
		ed.pieces = gp == gc % rp ? ed.me / mc : 0;
		st = connect_shards(s, pl, &ed, w->shard_base[p] + gp * pl->ops[p].ndev,
				    w->shard_base[c] + gc * pl->ops[c].ndev, np);
	}
	return st;
}

/* The xhead key of transfer t of producer p: its shard and destination. */
static int64_t xhead_key(const struct sim_work *w, int p, int t)
{
	return (int64_t)(w->xs[t].prod - w->shard_base[p]) * w->ndev + w->xf[t].dst;
}

int sim_layout_producer(struct sim *s, const struct plan *pl, int p, int from,
			const int *keep, int nkeep, int np[2])
{
	struct sim_work *w = s->w;
	int st = AP_OK, *head;

	/* xhead is empty between producers: a producer costs its
	 * transfers, not its shards times the devices.  The kept transfers,
	 * in the order they were made, can be shared. */
	for (int k = 0; k < nkeep && !st; k++) {
		st = sim_map_at(&w->xhead, xhead_key(w, p, keep[k]), &head);
		if (!st)
			*head = keep[k];
	}
	for (int e = w->cons_ofs[p]; e < w->cons_ofs[p + 1] && !st; e++) {
		int c = w->cons[e];

		/* An op reading p twice is listed twice: all of its inputs
		 * from p are handled at the first. */
		if (c < from || (e > w->cons_ofs[p] && w->cons[e - 1] == c))
			continue;
		for (int k = 0; k < s->g->ops[c].nin && !st; k++)
			if (s->g->ops[c].in[k] == p)
				st = connect(s, pl, p, c, k, np);
	}
	sim_map_clear(&w->xhead);
	return st;
}

/* end[k] = ofs[k + 1]: the lists of a compact CSR. */
static int csr_ends(int **end, size_t *cap, const int *ofs, int nkeys)
{
	if (sim_reserve(end, cap, nkeys > 0 ? (size_t)nkeys : 1, sizeof(int)))
		return AP_EFAIL;
	for (int k = 0; k < nkeys; k++)
		(*end)[k] = ofs[k + 1];
	return AP_OK;
}

#define ENDS(w, f, nkeys) csr_ends(&(w)->f##_end, &(w)->cap_##f##_end, (w)->f##_ofs, nkeys)

/* Whether transfer t joins stages of different micro-batch counts. */
static int rebatched(const struct sim_work *w, int t)
{
	return w->op_m[w->shard_op[w->xs[t].prod]] != w->stage_m[w->xf[t].stage];
}

/* Producer by producer, so transfers can be shared through xhead. */
int sim_layout_transfers(struct sim *s, const struct plan *pl)
{
	const struct graph *g = s->g;
	struct sim_work *w = s->w;
	int np[2] = { 0, 0 }, st = AP_OK, n;

	w->nxf = 0;
	for (int p = 0; p < g->nops && !st; p++)
		st = sim_layout_producer(s, pl, p, 0, NULL, 0, np);
	if (!st)
		st = CSR(w, w->pairs, np[0], w->nshards, fsrc);
	if (!st)
		st = CSR(w, w->bpairs, np[1], w->nshards, bsrc);
	/* Which transfers to start after which op's forward and backward;
	 * those between stages of different counts apart. */
	for (int re = 0; re <= w->mixed && !st; re++) {
		n = 0;
		for (int t = 0; t < w->nxf && !st; t++)
			if (rebatched(w, t) == re)
				st = sim_add_pair(&w->pairs, &w->cap_pairs, &n,
						  w->shard_op[w->xs[t].prod], t);
		if (!st)
			st = re ? CSR(w, w->pairs, n, g->nops, xffr) : CSR(w, w->pairs, n, g->nops, xff);
		n = 0;
		for (int t = 0; t < w->nxf && !st; t++)
			if (!w->xf[t].no_grad && rebatched(w, t) == re)
				st = sim_add_pair(&w->pairs, &w->cap_pairs, &n, w->xf[t].emit_op,
						  t);
		if (!st)
			st = re ? CSR(w, w->pairs, n, g->nops, xfbr) : CSR(w, w->pairs, n, g->nops, xfb);
	}
	if (!st && (ENDS(w, fsrc, w->nshards) || ENDS(w, bsrc, w->nshards) ||
		    ENDS(w, xff, g->nops) || ENDS(w, xfb, g->nops) ||
		    RESERVE(w, op_xbytes, (size_t)g->nops * 6)))
		st = AP_EFAIL;
	for (int i = 0; i < g->nops && !st; i++) {
		sim_op_xbytes(w, i, 0);
		sim_op_xbytes(w, i, 1);
	}
	return st;
}

/* The bytes a step's transfers move are counted per step, not per
 * transfer: integer sums, the same in any order. */
void sim_op_xbytes(struct sim_work *w, int i, int bwd)
{
	int64_t *b = w->op_xbytes + (size_t)i * 6 + 3 * bwd;
	const int *list = bwd ? w->xfb : w->xff;
	int a = bwd ? w->xfb_ofs[i] : w->xff_ofs[i], e1 = bwd ? w->xfb_end[i] : w->xff_end[i];

	b[0] = b[1] = b[2] = 0;
	for (int e = a; e < e1; e++)
		b[w->xf[list[e]].cls] += w->xf[list[e]].bytes;
}
