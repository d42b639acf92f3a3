/*
 * Delta re-simulation (sim.h), after FlexFlow's (Jia, Zaharia and Aiken,
 * SysML 2019, section 5.2): when a search changes the configuration of
 * one or a few operators, only what the change touches is laid out again
 * and only the part of the schedule from the first step it touches is
 * timed again; the result is the one sim_run() gives, bit for bit.
 *
 * Layout.  Changing op k's degrees or devices changes its shards, the
 * transfers of k's output to its consumers and of its producers' outputs
 * to k (a producer shares a transfer among consumers that need the same
 * region, each consumer in op order sharing what those before it made,
 * so a producer's transfers to its consumers from k on are redone and
 * those to the consumers before k kept), the sources of the consumers
 * whose transfers are redone, and k's all-reduce groups.  The
 * new shards, transfers, lists and groups are appended to the arrays of
 * struct sim_work, every index of the rest staying valid; the lists are
 * addressed by (ofs, end) for that reason.  What is left behind is
 * garbage, and once it outgrows the live part 24 times a full run
 * compacts it (a compaction costs a full run; the schedule only ever
 * touches live entries, so garbage costs memory, not time), or once it
 * passes both SIM_GARBAGE_MAX entries and the live part: a large layout's
 * garbage stays near its own size.  The temporary lists a change builds
 * are keyed by the changed shards alone.
 *
 * Schedule.  Steps (one op's forward or backward in one item) run in a
 * fixed order, each resource doing its tasks in that order, so the state
 * before a step (resource free and busy times, activations in flight,
 * gradient readiness, the critical path, counters) and the times of the
 * steps before it determine the rest.  Runs keep that state before every
 * SIM_CKPT_STEPS-th step that is a forward (a change is first felt at the
 * forward of a changed producer, never at a backward); a delta restores
 * the last checkpoint before the first step of a changed producer and
 * runs the schedule from there.
 * Resources keep their order of work, every sum is taken in the same
 * order as in a full run, and maxima do not depend on order, so the times
 * are the same numbers.
 *
 * Undo.  A search rejects most proposals.  Since a delta only appends,
 * besides a few list heads, costs and activation sizes it overwrites in
 * place and keeps, sim_undo() takes it back by restoring those, and the
 * task times and checkpoints its schedule overwrote from a log
 * (sim_ckpt.c): the rejected change is not laid out a second time, and
 * the next delta times the schedule from the first step of its own
 * change, not of the earlier of the two.
 *
 * Delta runs need one micro-batch (FlexFlow's setting: no pipelining),
 * no round-robin replicas, no recomputation, no task recording and an
 * unchanged stage per op; otherwise sim_delta() is a full sim_run().
 */
#include "sim/sim_impl.h"

#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/err.h"
#include "util/intmath.h"
#include "sim/sim_transfers.h"
#include "sim/sim_layout.h"
#include "sim/sim_comm.h"
#include "sim/sim_ckpt.h"

enum { MARK_K = 1, MARK_R = 2, MARK_C = 4 };

/* Garbage is compacted once it passes 24 times the live entries, or both
 * this many and the live entries: the garbage of a large layout stays
 * near its own size (4M entries, most of them parts of transfers, take
 * about 150 MB). */
#define SIM_GARBAGE_MAX ((int64_t)1 << 22)

/* What sim_undo() does after the last run: force a full run next, restore
 * the delta's layout, or leave the ops it changed to the next delta. */
enum { UNDO_NONE, UNDO_RESTORE, UNDO_PEND };

/* --- the layout of a change ------------------------------------------------ */

void sim_delta_base(struct sim *s)
{
	struct sim_work *w = s->w;
	int nops = s->g->nops;

	w->nfsrc = w->fsrc_ofs[w->nshards];
	w->nbsrc = w->bsrc_ofs[w->nshards];
	w->nxff = w->xff_ofs[nops];
	w->nxfb = w->xfb_ofs[nops];
	w->live = (int64_t)w->nshards + w->nxf + w->nfsrc + w->nbsrc + w->ngrp_mem +
		  w->ncoll_res + 1024;
	w->grown = 0;
	w->undo = UNDO_NONE;
	w->npend = 0;
	w->delta_ready = w->m == 1 && !w->rr && !w->record && !RESERVE(w, op_stage, nops);
	for (int si = 0; si < w->nstages && w->delta_ready; si++)
		for (int k = w->stage_ops_ofs[si]; k < w->stage_ops_ofs[si + 1]; k++)
			w->op_stage[w->stage_ops[k]] = si;
}

/* Room for one more list of n values in an appended-to array. */
static int room(int **vals, size_t *cap, int used, int n)
{
	return sim_reserve(vals, cap, (size_t)used + (size_t)n + 1, sizeof(int));
}

/* The op that produces a source entry of a compute task. */
static int src_op(const struct sim_work *w, int e)
{
	return w->shard_op[e >= 0 ? e : w->xs[SRC_XFER(e)].prod];
}

/* A shard's output region in bytes: what it keeps before its inputs. */
static int64_t out_bytes(const struct sim_work *w, int gs)
{
	int64_t vol = BYTES_PER_ELEM;

	for (int d = 0; d < NDIMS; d++)
		vol *= HI(w, gs)[d] - LO(w, gs)[d];
	return vol;
}

/* Whether input k of op is the first of its inputs from that producer. */
static int first_input(const struct op *op, int k)
{
	for (int e = 0; e < k; e++)
		if (op->in[e] == op->in[k])
			return 0;
	return 1;
}

/* The sets of a change of the ops marked K: R, the ops whose transfers
 * are redone (K and their producers), and C, the ops whose sources change
 * (R's consumers, and K).  aff lists every marked op once.  An op of R
 * makes its transfers consumer by consumer, in op order, each sharing
 * those made before it: a producer outside K keeps those its consumers
 * before the first of K made, and only the consumers from op_cut[] on
 * are connected again and are in C. */
static void mark_sets(struct sim *s, const int *ops, int n, int *nk, int *naff)
{
	const struct graph *g = s->g;
	struct sim_work *w = s->w;
	int *m = w->op_mark, na = 0;

#define ADD(i, bit) do { if (!m[i]) w->aff[na++] = (i); m[i] |= (bit); } while (0)
	for (int k = 0; k < n; k++) {
		ADD(ops[k], MARK_K | MARK_R | MARK_C);
		w->op_cut[ops[k]] = 0;
	}
	*nk = na;
	for (int k = 0; k < n; k++)
		for (int e = 0; e < g->ops[ops[k]].nin; e++) {
			int p = g->ops[ops[k]].in[e];

			if (!m[p])
				w->op_cut[p] = ops[k];
			else if (ops[k] < w->op_cut[p])
				w->op_cut[p] = ops[k];
			ADD(p, MARK_R);
		}
	for (int a = 0, nr = na; a < nr; a++) {
		int p = w->aff[a];

		for (int e = w->cons_ofs[p]; e < w->cons_ofs[p + 1]; e++)
			if (w->cons[e] >= w->op_cut[p])
				ADD(w->cons[e], MARK_C);
	}
#undef ADD
	*naff = na;
}

/* Whether the transfers from op q to consumer c are made again. */
static int redone(const struct sim_work *w, int q, int c)
{
	return (w->op_mark[q] & MARK_R) && c >= w->op_cut[q];
}

/* New shards for the ops of K, at the end of the shard arrays. */
static int new_shards(struct sim *s, const struct plan *pl, const int *ops, int n)
{
	struct sim_work *w = s->w;
	int old = w->nshards, total = w->nshards, st = AP_OK;

	for (int k = 0; k < n; k++)
		total += pl->ops[ops[k]].ndev;
	if (sim_reserve_shards(w, total) || RESERVE(w, fsrc_ofs, total + 1) ||
	    RESERVE(w, fsrc_end, total) || RESERVE(w, bsrc_ofs, total + 1) ||
	    RESERVE(w, bsrc_end, total))
		return AP_EFAIL;
	for (int k = 0; k < n && !st; k++) {
		int i = ops[k];

		w->shard_base[i] = w->nshards;
		w->nshards += pl->ops[i].ndev;
		w->shard_end[i] = w->nshards;
		st = sim_layout_op_shards(s, pl, i);
	}
	for (int gs = old; gs < total; gs++)
		w->fsrc_ofs[gs] = w->fsrc_end[gs] = w->bsrc_ofs[gs] = w->bsrc_end[gs] = 0;
	w->grown += total - old;
	return st;
}

/* The activations the shards of C keep: their outputs plus what they
 * receive through transfers that stay (those made again add theirs when
 * they are made). */
static void reset_act(struct sim *s, int naff)
{
	const struct graph *g = s->g;
	struct sim_work *w = s->w;

	for (int a = 0; a < naff; a++) {
		int c = w->aff[a];
		const struct op *op = &g->ops[c];

		if (!(w->op_mark[c] & MARK_C) || (w->op_mark[c] & MARK_K))
			continue;
		for (int gs = w->shard_base[c]; gs < w->shard_end[c]; gs++)
			w->act_bytes[gs] = out_bytes(w, gs);
		for (int k = 0; k < op->nin; k++) {
			int q = op->in[k];

			if (redone(w, q, c) || !first_input(op, k))
				continue;
			for (int e = w->xff_ofs[q]; e < w->xff_end[q]; e++) {
				const struct sim_xfer *x = &w->xf[w->xff[e]];

				if (x->emit_op == c)
					w->act_bytes[w->xs[w->xff[e]].cons] =
						sat_add(w->act_bytes[w->xs[w->xff[e]].cons], x->bytes);
			}
		}
	}
}

/* The np (shard, source) pairs at pr as a temporary CSR list over the
 * shards of the ops marked `mark` only: shard gs is key loc[gs], so the
 * cost is that of the change, not of every shard. */
static int touched_csr(struct sim_work *w, const int *pr, int np, int naff, int mark)
{
	int nk = 0;

	if (RESERVE(w, loc, w->nshards))
		return AP_EFAIL;
	for (int a = 0; a < naff; a++) {
		int i = w->aff[a];

		if (w->op_mark[i] & mark)
			for (int gs = w->shard_base[i]; gs < w->shard_end[i]; gs++)
				w->loc[gs] = nk++;
	}
	if (RESERVE(w, pairs_loc, 2 * (size_t)np + 1))
		return AP_EFAIL;
	for (int k = 0; k < np; k++) {
		w->pairs_loc[2 * k] = w->loc[pr[2 * k]];
		w->pairs_loc[2 * k + 1] = pr[2 * k + 1];
	}
	return sim_build_csr(w, w->pairs_loc, np, nk, &w->tmp_ofs, &w->cap_tmp_ofs,
			     &w->tmp, &w->cap_tmp);
}

/* Whether source entry e of shard gs's list stays: of a forward (bwd 0)
 * list, when the transfers from its producer op to gs's op are not made
 * again; of a backward list, when the consumer that made it (a transfer
 * entry is its first consumer's) comes before the cut of gs's op.  A
 * transfer a later consumer shares is then listed twice, as a full
 * layout does too; a duplicate does not change a maximum. */
static int kept(const struct sim_work *w, int gs, int e, int bwd)
{
	int c;

	if (!bwd)
		return !redone(w, src_op(w, e), w->shard_op[gs]);
	c = e >= 0 ? w->shard_op[e] : w->xf[SRC_XFER(e)].emit_op;
	return c < w->op_cut[w->shard_op[gs]];
}

/* Appends the new list of shard gs: the old entries that are kept(),
 * then those of the temporary CSR. */
static int relist(struct sim_work *w, int gs, int bwd, int **vals, size_t *cap,
		  int *used, int *ofs, int *end)
{
	int k = w->loc[gs], a = ofs[gs], b = end[gs];
	int na = w->tmp_ofs[k + 1] - w->tmp_ofs[k], n0 = *used;

	if (room(vals, cap, *used, b - a + na))
		return AP_EFAIL;
	for (int e = a; e < b; e++)
		if (kept(w, gs, (*vals)[e], bwd))
			(*vals)[(*used)++] = (*vals)[e];
	memcpy(*vals + *used, w->tmp + w->tmp_ofs[k], (size_t)na * sizeof(int));
	*used += na;
	ofs[gs] = n0;
	end[gs] = *used;
	w->grown += *used - n0;
	return AP_OK;
}

/* relist() for every shard of the ops marked `mark` (the shards of K
 * are new, with empty lists). */
static int relist_ops(struct sim_work *w, int naff, int mark, int bwd, int **vals,
		      size_t *cap, int *used, int *ofs, int *end)
{
	int st = AP_OK;

	for (int a = 0; a < naff && !st; a++) {
		int i = w->aff[a];

		if (!(w->op_mark[i] & mark))
			continue;
		for (int gs = w->shard_base[i]; gs < w->shard_end[i] && !st; gs++)
			st = relist(w, gs, bwd, vals, cap, used, ofs, end);
	}
	return st;
}

/* xfb of consumer c again: the gradients it sends back, in the order a
 * full layout makes them (producers in op order, each in creation order). */
static int relist_xfb(struct sim *s, int c)
{
	const struct op *op = &s->g->ops[c];
	struct sim_work *w = s->w;
	int n0 = w->nxfb, nq = 0;

	if (RESERVE(w, scratch, op->nin))
		return AP_EFAIL;
	for (int k = 0; k < op->nin; k++)
		if (first_input(op, k))
			w->scratch[nq++] = op->in[k];
	qsort(w->scratch, (size_t)nq, sizeof(int), int_cmp);
	for (int k = 0; k < nq; k++) {
		int q = w->scratch[k];

		if (room(&w->xfb, &w->cap_xfb, w->nxfb, w->xff_end[q] - w->xff_ofs[q]))
			return AP_EFAIL;
		for (int e = w->xff_ofs[q]; e < w->xff_end[q]; e++) {
			const struct sim_xfer *x = &w->xf[w->xff[e]];

			if (x->emit_op == c && !x->no_grad)
				w->xfb[w->nxfb++] = w->xff[e];
		}
	}
	w->xfb_ofs[c] = n0;
	w->xfb_end[c] = w->nxfb;
	w->grown += w->nxfb - n0;
	return AP_OK;
}

/* The transfers of every producer of R, and every list they feed. */
static int new_transfers(struct sim *s, const struct plan *pl, int naff)
{
	struct sim_work *w = s->w;
	int np[2] = { 0, 0 }, st = AP_OK;

	for (int a = 0; a < naff && !st; a++) {
		int p = w->aff[a], x0 = w->nxf, e0 = w->xff_ofs[p], nkeep = 0;

		if (!(w->op_mark[p] & MARK_R))
			continue;
		/* the transfers made before the cut lead p's list */
		while (e0 + nkeep < w->xff_end[p] &&
		       w->xf[w->xff[e0 + nkeep]].emit_op < w->op_cut[p])
			nkeep++;
		st = sim_layout_producer(s, pl, p, w->op_cut[p], w->xff + e0, nkeep, np);
		if (!st && room(&w->xff, &w->cap_xff, w->nxff, nkeep + w->nxf - x0))
			st = AP_EFAIL;
		if (st)
			break;
		memmove(w->xff + w->nxff, w->xff + e0, (size_t)nkeep * sizeof *w->xff);
		w->xff_ofs[p] = w->nxff;
		w->nxff += nkeep;
		for (int x = x0; x < w->nxf; x++)
			w->xff[w->nxff++] = x;
		w->xff_end[p] = w->nxff;
		w->grown += nkeep + 2 * (w->nxf - x0);
	}
	/* forward sources of C's shards; backward sources of R's, whose
	 * consumers from the cut on were connected again */
	if (!st)
		st = touched_csr(w, w->pairs, np[0], naff, MARK_C);
	if (!st)
		st = relist_ops(w, naff, MARK_C, 0, &w->fsrc, &w->cap_fsrc, &w->nfsrc,
				w->fsrc_ofs, w->fsrc_end);
	if (!st)
		st = touched_csr(w, w->bpairs, np[1], naff, MARK_R);
	if (!st)
		st = relist_ops(w, naff, MARK_R, 1, &w->bsrc, &w->cap_bsrc, &w->nbsrc,
				w->bsrc_ofs, w->bsrc_end);
	for (int a = 0; a < naff && !st; a++)
		if (w->op_mark[w->aff[a]] & MARK_C)
			st = relist_xfb(s, w->aff[a]);
	/* R's lists xff are new, and C's xfb */
	for (int a = 0; a < naff && !st; a++) {
		if (w->op_mark[w->aff[a]] & MARK_R)
			sim_op_xbytes(w, w->aff[a], 0);
		if (w->op_mark[w->aff[a]] & MARK_C)
			sim_op_xbytes(w, w->aff[a], 1);
	}
	return st;
}

/* --- undo ------------------------------------------------------------------ */

/* Keeps what the change of the marked ops will overwrite in place. */
static int undo_record(struct sim_work *w, int naff)
{
	int nsh = 0;

	for (int a = 0; a < naff; a++)
		nsh += w->shard_end[w->aff[a]] - w->shard_base[w->aff[a]];
	if (RESERVE(w, uop, naff) || RESERVE(w, ushard, nsh))
		return AP_EFAIL;
	w->nuop = naff;
	w->nushard = 0;
	memcpy(w->umem, w->mem, (size_t)w->ndev * sizeof *w->umem);
	memcpy(w->udev_nshards, w->dev_nshards, (size_t)w->ndev * sizeof *w->udev_nshards);
	w->utally = w->tally;
	for (int a = 0; a < naff; a++) {
		int i = w->aff[a];
		struct sim_undo_op *u = &w->uop[a];

		*u = (struct sim_undo_op){
			.op = i, .shard_base = w->shard_base[i], .shard_end = w->shard_end[i],
			.xff_ofs = w->xff_ofs[i], .xff_end = w->xff_end[i],
			.xfb_ofs = w->xfb_ofs[i], .xfb_end = w->xfb_end[i],
			.grp_ofs = w->op_grp_ofs[i], .grp_end = w->op_grp_end[i],
			.cost = w->cost[i],
		};
		memcpy(u->xbytes, w->op_xbytes + (size_t)i * 6, sizeof u->xbytes);
		for (int gs = u->shard_base; gs < u->shard_end; gs++)
			w->ushard[w->nushard++] = (struct sim_undo_shard){
				.gs = gs, .fsrc_ofs = w->fsrc_ofs[gs],
				.fsrc_end = w->fsrc_end[gs], .bsrc_ofs = w->bsrc_ofs[gs],
				.bsrc_end = w->bsrc_end[gs], .act_bytes = w->act_bytes[gs],
			};
	}
	return AP_OK;
}

/* Everything a delta writes is appended but what undo_record() keeps, so
 * putting that back restores the layout, and the times it overwrote are
 * in its log: the run before it is restored whole. */
void sim_undo(struct sim *s)
{
	struct sim_work *w = s->w;

	if (!w->delta_ready || w->undo == UNDO_NONE) {
		w->delta_ready = 0;
		return;
	}
	if (w->undo == UNDO_PEND) {
		/* a full run or one with pending ops: no record to restore */
		if (RESERVE(w, pend, w->nlast)) {
			w->delta_ready = 0;
			return;
		}
		memcpy(w->pend, w->last_ops, (size_t)w->nlast * sizeof *w->pend);
		w->npend = w->nlast;
		w->undo = UNDO_NONE;
		return;
	}
	for (int a = 0; a < w->nuop; a++) {
		const struct sim_undo_op *u = &w->uop[a];
		int i = u->op;

		w->shard_base[i] = u->shard_base;
		w->shard_end[i] = u->shard_end;
		w->xff_ofs[i] = u->xff_ofs;
		w->xff_end[i] = u->xff_end;
		w->xfb_ofs[i] = u->xfb_ofs;
		w->xfb_end[i] = u->xfb_end;
		w->op_grp_ofs[i] = u->grp_ofs;
		w->op_grp_end[i] = u->grp_end;
		w->cost[i] = u->cost;
		memcpy(w->op_xbytes + (size_t)i * 6, u->xbytes, sizeof u->xbytes);
	}
	for (int k = 0; k < w->nushard; k++) {
		const struct sim_undo_shard *u = &w->ushard[k];

		w->fsrc_ofs[u->gs] = u->fsrc_ofs;
		w->fsrc_end[u->gs] = u->fsrc_end;
		w->bsrc_ofs[u->gs] = u->bsrc_ofs;
		w->bsrc_end[u->gs] = u->bsrc_end;
		w->act_bytes[u->gs] = u->act_bytes;
	}
	/* the totals of memory (the activations are the schedule's and come
	 * again with it), shard counts and cost sources */
	memcpy(w->mem, w->umem, (size_t)w->ndev * sizeof *w->mem);
	memcpy(w->dev_nshards, w->udev_nshards, (size_t)w->ndev * sizeof *w->dev_nshards);
	w->tally = w->utally;
	sim_tlog_undo(w);
	w->undo = UNDO_NONE;
}

/* --- the schedule of a change ---------------------------------------------- */

/* The first step that runs the forward of an op of R; the last forward
 * step when R is empty. */
static int first_step(const struct sim *s)
{
	const struct sim_work *w = s->w;
	int step = 0, last = 0;

	for (int it = 0; it < w->nitems; it++) {
		const struct sched_item *x = &w->items[it];
		int a = w->stage_ops_ofs[x->stage], b = w->stage_ops_ofs[x->stage + 1];

		for (int k = a; k < b && !x->bwd; k++, step++) {
			if (w->op_mark[w->stage_ops[k]] & MARK_R)
				return step;
			last = step;
		}
		if (x->bwd)
			step += b - a;
	}
	return last;
}

/* Whether the change can be applied to the last run's state. */
static int applicable(const struct sim *s, const struct plan *pl, const int *ops, int n)
{
	const struct sim_work *w = s->w;

	if (!w->delta_ready || pl->microbatches != 1 || plan_mixed_microbatches(pl) ||
	    plan_round_robin(pl) || w->recompute || w->grown > 24 * w->live ||
	    (w->grown > SIM_GARBAGE_MAX && w->grown > w->live) ||
	    pl->nstages != w->nstages)
		return 0;
	/* the stage of a changed op must stay: the order of steps depends
	 * on it; and it must not start recomputing */
	for (int k = 0; k < n; k++)
		if (pl->ops[ops[k]].recompute ||
		    pl->ops[ops[k]].stage < 0 || pl->ops[ops[k]].stage >= w->nstages ||
		    w->stage_pos[pl->ops[ops[k]].stage] != w->op_stage[ops[k]])
			return 0;
	return 1;
}

static int delta(struct sim *s, const struct plan *pl, const int *ops, int n,
		 struct sim_result *r)
{
	const struct graph *g = s->g;
	struct sim_work *w = s->w;
	struct sim_opts opts = { .optimizer = w->opt, .lean = w->lean };
	int naff = 0, nk = 0, st = AP_OK, from;

	if (!applicable(s, pl, ops, n))
		return sim_run(s, pl, &opts, r);
	for (int k = 0; k < n; k++) {
		st = sim_check_op(s, pl, ops[k]);
		if (st)
			return st;
	}
	w->delta_ready = 0;
	if (RESERVE(w, op_mark, g->nops) || RESERVE(w, op_cut, g->nops) ||
	    RESERVE(w, aff, g->nops))
		return AP_EFAIL;
	memset(w->op_mark, 0, (size_t)g->nops * sizeof *w->op_mark);
	/* the ops of K, each once, come first in aff */
	mark_sets(s, ops, n, &nk, &naff);
	st = undo_record(w, naff);
	if (!st)
		st = new_shards(s, pl, w->aff, nk);
	if (!st)
		reset_act(s, naff);
	if (!st)
		st = new_transfers(s, pl, naff);
	for (int a = 0; a < nk && !st; a++) {
		int ng = w->ngrp_mem + w->ncoll_res;

		st = sim_layout_op_groups(s, pl, w->aff[a]);
		w->grown += w->ngrp_mem + w->ncoll_res - ng;
	}
	if (st)
		return st;
	/* the steps before the change's first are those of the plan before
	 * it, whatever step the run starts from */
	from = sim_ckpt_before(w, first_step(s));
	w->tlog_on = 1;
	st = sim_finish_change(s, pl, w->uop, nk, from, r);
	w->tlog_on = 0;
	if (!st) {
		w->delta_ready = 1;
		w->undo = UNDO_RESTORE;
	}
	return st;
}

/* The ops an undo left pending join those of this change; the delta
 * proper then sees one change of them all. */
int sim_delta(struct sim *s, const struct plan *pl, const int *ops, int n,
	      struct sim_result *r)
{
	struct sim_work *w = s->w;
	int np = w->npend, st;

	w->ckpt_on = 1;
	for (int k = 0; k < n; k++)
		if (ops[k] < 0 || ops[k] >= s->g->nops || pl->nops != s->g->nops)
			return ap_err(AP_EINPUT, "plan", 0, "simulator: no operator %d to change",
				      ops[k]);
	if (RESERVE(w, pend, np + n) || RESERVE(w, last_ops, n))
		return AP_EFAIL;
	memcpy(w->pend + np, ops, (size_t)n * sizeof *ops);
	memcpy(w->last_ops, ops, (size_t)n * sizeof *ops);
	w->nlast = n;
	w->npend = 0;
	w->undo = UNDO_NONE;
	st = delta(s, pl, w->pend, np + n, r);
	/* after a full run, or one that laid out pending ops too, the
	 * simulator differs from the plan an undo leaves at this call's ops
	 * only */
	if (!st && (np > 0 || w->undo == UNDO_NONE))
		w->undo = UNDO_PEND;
	return st;
}
