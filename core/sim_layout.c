/*
 * What a plan makes of the graph, built once per sim_run() into the flat
 * arrays of struct sim_work so that scheduling touches nothing else: the
 * stages' order, each shard's device and region, the transfers between
 * shards on different devices, and the order of the schedule's items.
 *
 * Regions.  Shard k of an op with degrees (dn, dc, dh, dw, dl) has the
 * coordinates of k in row-major order over n, c, h, w, l (plan.h) and owns
 * the hyper-rectangle [i*S/D, (i+1)*S/D) of every dim of its output, for
 * one micro-batch (the n extent is batch / micro-batches).  A consumer
 * shard needs of each input what the runtime gathers for it
 * (op_input_need() of graph.h): its own fraction of the dims that follow
 * the split, with the halo a convolution or pool split along h or w reads
 * at each cut, and the whole of every other dim.  The bytes
 * a pair of shards exchanges are the overlap of what one owns and the
 * other needs, x 4: a change of split between neighbours costs exactly the
 * data that moves.
 *
 * The replica groups of parameter shards and their all-reduces are
 * sim_comm.c's.
 */
#include "sim_impl.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "intmath.h"

/* --- checks and stages ---------------------------------------------------- */

/* What would crash or loop the simulation, refused even when the caller
 * skipped plan_validate(); the wording follows plan_check.c. */
static int check_plan(const struct sim *s, const struct plan *pl)
{
	const struct graph *g = s->g;

	if (pl->nops != g->nops)
		return ap_err(AP_EINPUT, "plan", 0,
			      "ops: the plan has %d operators but model '%s' has %d",
			      pl->nops, g->name, g->nops);
	if (pl->microbatches < 1 || g->batch % pl->microbatches)
		return ap_err(AP_EINPUT, "plan", 0,
			      "schedule.microbatches: expected a divisor of the batch %lld, got %d",
			      (long long)g->batch, pl->microbatches);
	for (int k = 0; k < pl->nstages; k++) {
		int m = plan_stage_microbatches(pl, k);

		if (m < 1 || g->batch % m)
			return ap_err(AP_EINPUT, "plan", 0,
				      "stages[%d].microbatches: expected a divisor of the batch %lld, got %d",
				      k, (long long)g->batch, m);
		if (m != pl->microbatches && sched_async(pl->sched))
			return ap_err(AP_EINPUT, "plan", 0,
				      "stages[%d].microbatches: stages of different micro-batch counts need a synchronous schedule (gpipe or 1f1b), not %s",
				      k, sched_name(pl->sched));
	}
	if ((unsigned)pl->sched >= NSCHED_KINDS)
		return ap_err(AP_EINPUT, "plan", 0, "schedule.kind: unknown schedule %d",
			      (int)pl->sched);
	if (pl->nstages < 1)
		return ap_err(AP_EINPUT, "plan", 0, "stages: expected at least one stage");
	for (int i = 0; i < g->nops; i++) {
		int st = sim_check_op(s, pl, i);

		if (st)
			return st;
	}
	return AP_OK;
}

int sim_check_op(const struct sim *s, const struct plan *pl, int i)
{
	const struct graph *g = s->g;
	int ndev = s->w->ndev;
	const struct plan_op *po = &pl->ops[i];
	int64_t n = 1;

	if (po->stage < 0 || po->stage >= pl->nstages)
		return ap_err(AP_EINPUT, "plan", 0,
			      "ops.%s.stage: no stage %d (expected 0..%d)",
			      g->ops[i].name, po->stage, pl->nstages - 1);
	for (int d = 0; d < NDIMS; d++) {
		if (po->degree[d] < 1)
			return ap_err(AP_EINPUT, "plan", 0,
				      "ops.%s.degree.%s: expected a positive degree, got %d",
				      g->ops[i].name, dim_name(d), po->degree[d]);
		/* capped, so the product cannot overflow */
		n = n * po->degree[d] > ndev ? (int64_t)ndev + 1 : n * po->degree[d];
	}
	if (n != po->ndev || n > ndev)
		return ap_err(AP_EINPUT, "plan", 0,
			      "ops.%s.devices: expected %lld devices (the product of the degrees) of the cluster's %d, got %d",
			      g->ops[i].name, (long long)n, ndev, po->ndev);
	for (int k = 0; k < po->ndev; k++)
		if (po->devices[k] < 0 || po->devices[k] >= ndev)
			return ap_err(AP_EINPUT, "plan", 0,
				      "ops.%s.devices[%d]: device %d does not exist (expected 0..%d)",
				      g->ops[i].name, k, po->devices[k], ndev - 1);
	return AP_OK;
}

/* Stage depth.  The schedule orders work by depth (sim_sched.c), so data
 * must flow to deeper stages only, which plan_validate()'s reachability
 * rule implies.  In a chain a stage's depth is its position; in a DAG of
 * stages a stage sits as late as its successors allow: depth = K - 1 - h,
 * with K the number of stages on the longest path and h the longest path
 * from the stage to a sink.  Under 1F1B a stage then keeps h + 1
 * micro-batches in flight, the stages after it on its longest path to the
 * sink, and starts a micro-batch's backward as soon as that micro-batch
 * can have come back: GraphPipe's schedule of a DAG of stages (Jeon et al.,
 * ASPLOS 2025, section 6), of which PipeDream-Flush is the chain case.  A
 * branch shorter than its siblings thus holds fewer micro-batches than it
 * would at its depth from the source. */
static int layout_stages(struct sim *s, const struct plan *pl)
{
	struct sim_work *w = s->w;
	int n = pl->nstages, changed = 1;

	if (RESERVE(w, stage_pos, n) || RESERVE(w, stage_depth, n))
		return AP_EFAIL;
	for (int k = 0; k < n; k++)
		w->stage_pos[k] = -1;
	for (int k = 0; k < n; k++) {
		int id = pl->stages[k].id;

		if (id < 0 || id >= n || w->stage_pos[id] >= 0)
			return ap_err(AP_EINPUT, "plan", 0,
				      "stages[%d].id: expected distinct ids 0..%d, got %d",
				      k, n - 1, id);
		w->stage_pos[id] = k;
		w->stage_depth[k] = 0;
	}
	for (int pass = 0; pass <= n && changed; pass++) {
		changed = 0;
		for (int k = 0; k < n; k++)
			for (int e = 0; e < pl->stages[k].nnext; e++) {
				int t = pl->stages[k].next[e];

				if (t < 0 || t >= n)
					return ap_err(AP_EINPUT, "plan", 0,
						      "stages[%d].next[%d]: no stage %d", k, e, t);
				t = w->stage_pos[t];
				if (w->stage_depth[t] < w->stage_depth[k] + 1) {
					w->stage_depth[t] = w->stage_depth[k] + 1;
					changed = 1;
				}
			}
	}
	if (changed)
		return ap_err(AP_EINPUT, "plan", 0, "stages: 'next' forms a cycle");
	w->nstages = n;
	w->depth_max = 0;
	for (int k = 0; k < n; k++)
		if (w->stage_depth[k] > w->depth_max)
			w->depth_max = w->stage_depth[k];
	/* heights, the longest paths to a sink, into stage_depth as
	 * depth_max - height; the graph is acyclic now, so n passes do */
	for (int k = 0; k < n; k++)
		w->stage_depth[k] = w->depth_max;
	for (int pass = 0, moved = 1; pass <= n && moved; pass++) {
		moved = 0;
		for (int k = 0; k < n; k++)
			for (int e = 0; e < pl->stages[k].nnext; e++) {
				int t = w->stage_pos[pl->stages[k].next[e]];

				if (w->stage_depth[k] > w->stage_depth[t] - 1) {
					w->stage_depth[k] = w->stage_depth[t] - 1;
					moved = 1;
				}
			}
	}
	for (int i = 0; i < s->g->nops; i++) {
		const struct op *op = &s->g->ops[i];
		int si = w->stage_pos[pl->ops[i].stage];

		for (int k = 0; k < op->nin; k++) {
			int j = op->in[k], sj = w->stage_pos[pl->ops[j].stage];

			if (sj != si && w->stage_depth[sj] >= w->stage_depth[si])
				return ap_err(AP_EINPUT, "plan", 0,
					      "ops.%s.stage: stage %d does not follow stage %d of its input '%s' along 'next'",
					      op->name, pl->ops[i].stage, pl->ops[j].stage,
					      s->g->ops[j].name);
		}
	}
	return AP_OK;
}

/* The period of round-robin replicas an asynchronous schedule simulates:
 * at most this many micro-batches (what a run costs). */
#define RR_MAX_MB 4096

/* Round-robin replicas (plan.h).  Micro-batch j of a stage of r replicas
 * runs whole on replica j % r.  A synchronous schedule runs its m
 * micro-batches and flushes, so it is simulated as it comes, a replica
 * with one more micro-batch than another when r does not divide m.  An
 * asynchronous one streams micro-batches across iterations, so the
 * replica of an iteration's micro-batch rotates from one iteration to
 * the next, and one iteration alone is not its steady state: it is
 * simulated over the period of the assignment, P = lcm(m, r_1, ..., r_S)
 * micro-batches, P / m iterations each with its all-reduces and
 * updates, of which sim.c reports the share of one.  Under 1f1b-async
 * the replicas of a stage run data parallel among themselves, as
 * PipeDream's do: they all-reduce and update after every round of r
 * micro-batches (docs/plan-format.md), P / r times in the period. */
static int layout_replicas(struct sim *s, const struct plan *pl)
{
	struct sim_work *w = s->w;
	int64_t P = pl->microbatches;

	if (RESERVE(w, op_r, s->g->nops))
		return AP_EFAIL;
	w->rr = w->rsync = 0;
	w->nper = 1;
	for (int k = 0; k < w->nstages; k++) {
		const struct plan_stage *ps = &pl->stages[k];
		int r = plan_stage_replicas(pl, k);

		if (r == 1)
			continue;
		if (ps->ndev % r)
			return ap_err(AP_EINPUT, "plan", 0,
				      "stages[%d].replicas: expected a divisor of the stage's %d devices, got %d",
				      k, ps->ndev, r);
		for (int d = 0; d < ps->ndev; d++)
			if (ps->devices[d] < 0 || ps->devices[d] >= w->ndev)
				return ap_err(AP_EINPUT, "plan", 0,
					      "stages[%d].devices[%d]: device %d does not exist (expected 0..%d)",
					      k, d, ps->devices[d], w->ndev - 1);
		w->rr = 1;
		if (P <= RR_MAX_MB)
			P = lcm64(P, r);
	}
	for (int i = 0; i < s->g->nops; i++)
		w->op_r[i] = w->rr ? plan_stage_replicas(pl, w->stage_pos[pl->ops[i].stage]) : 1;
	if (!w->rr)
		return AP_OK;
	if (w->mixed)
		return ap_err(AP_EINPUT, "plan", 0,
			      "stages: round-robin replicas need every stage to run the schedule's %d micro-batches",
			      pl->microbatches);
	if (!sched_async(pl->sched))
		return AP_OK;
	if (P > pl->microbatches && P > RR_MAX_MB)
		return ap_err(AP_EINPUT, "plan", 0,
			      "stages: under %s the stages' round-robin replicas take %lld micro-batches to come round to their first assignment (the least common multiple of their counts and the %d micro-batches); expected at most %d",
			      sched_name(pl->sched), (long long)P, pl->microbatches, RR_MAX_MB);
	w->m = (int)P;
	w->nper = (int)(P / pl->microbatches);
	w->rsync = pl->sched == SCHED_1F1B_ASYNC;
	return AP_OK;
}

/* How many optimizer updates each device runs: one per iteration, and
 * under 1f1b-async one per round on the devices of a stage of replicas. */
static int layout_updates(struct sim *s, const struct plan *pl)
{
	struct sim_work *w = s->w;

	if (!w->rr)
		return AP_OK;
	if (RESERVE(w, dev_upd, w->ndev))
		return AP_EFAIL;
	for (int d = 0; d < w->ndev; d++)
		w->dev_upd[d] = w->nper;
	for (int k = 0; k < w->nstages && w->rsync; k++) {
		const struct plan_stage *ps = &pl->stages[k];
		int r = plan_stage_replicas(pl, k);

		for (int d = 0; d < ps->ndev && r > 1; d++)
			w->dev_upd[ps->devices[d]] = w->m / r;
	}
	return AP_OK;
}

/* Each stage's micro-batch count and each op's.  Counts of stages joined
 * by `next` divide one another: what passes between them is re-batched,
 * r micro-batches of the finer side to one of the coarser (resends() of
 * sim_sched.c).  A shard of a coarser stage holds of every finer
 * micro-batch in its own the part its index gives it, so a transfer moves
 * the same region of each finer micro-batch: a runtime that re-batches
 * keeps the samples of a shard together in that way. */
static int layout_counts(struct sim *s, const struct plan *pl)
{
	struct sim_work *w = s->w;

	if (RESERVE(w, stage_m, w->nstages) || RESERVE(w, op_m, s->g->nops))
		return AP_EFAIL;
	w->m = 0;
	w->mixed = plan_mixed_microbatches(pl);
	for (int k = 0; k < w->nstages; k++) {
		w->stage_m[k] = plan_stage_microbatches(pl, k);
		w->m = w->stage_m[k] > w->m ? w->stage_m[k] : w->m;
	}
	for (int k = 0; k < w->nstages; k++)
		for (int e = 0; e < pl->stages[k].nnext; e++) {
			int a = w->stage_m[k], b = w->stage_m[w->stage_pos[pl->stages[k].next[e]]];

			if (a % b && b % a)
				return ap_err(AP_EINPUT, "plan", 0,
					      "stages[%d].next[%d]: stage %d has %d micro-batches and stage %d has %d; expected counts that divide one another",
					      k, e, pl->stages[k].id, a, pl->stages[k].next[e], b);
		}
	for (int i = 0; i < s->g->nops; i++)
		w->op_m[i] = w->stage_m[w->stage_pos[pl->ops[i].stage]];
	return layout_replicas(s, pl);
}

/* --- CSR lists from (key, value) pairs ------------------------------------ */

static inline int add_pair(int **buf, size_t *cap, int *np, int key, int val)
{
	if (2 * ((size_t)*np + 1) > *cap &&
	    sim_reserve(buf, cap, 2 * ((size_t)*np + 1), sizeof(int)))
		return AP_EFAIL;
	(*buf)[2 * *np] = key;
	(*buf)[2 * *np + 1] = val;
	(*np)++;
	return AP_OK;
}

/* ofs[nkeys + 1] and vals from the np pairs at pr, a key's values in the
 * order they were added.  heads is the fill cursor. */
int sim_build_csr(struct sim_work *w, const int *pr, int np, int nkeys,
		     int **ofs, size_t *cap_ofs, int **vals, size_t *cap_vals)
{
	if (sim_reserve(ofs, cap_ofs, (size_t)nkeys + 1, sizeof(int)) ||
	    sim_reserve(vals, cap_vals, np > 0 ? (size_t)np : 1, sizeof(int)) ||
	    RESERVE(w, heads, nkeys + 1))
		return AP_EFAIL;
	memset(*ofs, 0, ((size_t)nkeys + 1) * sizeof(int));
	for (int k = 0; k < np; k++)
		(*ofs)[pr[2 * k] + 1]++;
	for (int k = 0; k < nkeys; k++)
		(*ofs)[k + 1] += (*ofs)[k];
	memcpy(w->heads, *ofs, (size_t)nkeys * sizeof(int));
	for (int k = 0; k < np; k++)
		(*vals)[w->heads[pr[2 * k]]++] = pr[2 * k + 1];
	return AP_OK;
}

#define CSR(w, pr, np, nkeys, f) \
	sim_build_csr(w, pr, np, nkeys, &(w)->f##_ofs, &(w)->cap_##f##_ofs, \
		  &(w)->f, &(w)->cap_##f)

static int layout_stage_ops(struct sim *s, const struct plan *pl)
{
	struct sim_work *w = s->w;
	int np = 0;

	for (int i = 0; i < s->g->nops; i++)
		if (add_pair(&w->pairs, &w->cap_pairs, &np,
			     w->stage_pos[pl->ops[i].stage], i))
			return AP_EFAIL;
	return CSR(w, w->pairs, np, w->nstages, stage_ops);
}

/* --- shards ------------------------------------------------------------------ */

/* The next coordinate in row-major order over n, c, h, w, l (l fastest)
 * below lim[], starting again from first[] (all zeros for shards); 0 when
 * it wraps around. */
static int next_coord(int idx[NDIMS], const int *first, const int *lim)
{
	for (int d = NDIMS - 1; d >= 0; d--) {
		if (++idx[d] < lim[d])
			return 1;
		idx[d] = first ? first[d] : 0;
	}
	return 0;
}

/* Where the D pieces of a dim of size sz start: cut[i] = i * sz / D for
 * i = 0..D, into cut (room for D + 1).  Divisions are the slow part of a
 * layout, so each cut is computed once per op and dim, not per shard. */
static void cuts(int64_t sz, int D, int64_t *cut)
{
	for (int i = 0; i <= D; i++)
		cut[i] = i * sz / D;
}

/* The shards of op i in replicas 1.. of its stage, after replica 0's:
 * the same regions, on the devices at the same places of their groups. */
static int replica_shards(struct sim *s, const struct plan *pl, int i)
{
	struct sim_work *w = s->w;
	int nd = pl->ops[i].ndev, base = w->shard_base[i], sidx = w->stage_pos[pl->ops[i].stage];

	for (int g = 1; g < w->op_r[i]; g++)
		for (int k = 0; k < nd; k++) {
			int g0 = base + k, gs = base + g * nd + k;
			int dev = plan_replica_device(pl, sidx, w->shard_dev[g0], g);

			if (dev < 0)
				return ap_err(AP_EINPUT, "plan", 0,
					      "ops.%s.devices[%d]: device %d is not a device of replica 0 of stage %d",
					      s->g->ops[i].name, k, w->shard_dev[g0], pl->ops[i].stage);
			memcpy(LO(w, gs), LO(w, g0), NDIMS * sizeof *LO(w, gs));
			memcpy(HI(w, gs), HI(w, g0), NDIMS * sizeof *HI(w, gs));
			w->shard_dev[gs] = dev;
			w->shard_op[gs] = i;
			w->act_bytes[gs] = w->act_bytes[g0];
			w->remat_bytes[gs] = w->remat_bytes[g0];
			w->shard_params[gs] = w->shard_params[g0];
		}
	return AP_OK;
}

int sim_layout_op_shards(struct sim *s, const struct plan *pl, int i)
{
	const struct graph *g = s->g;
	struct sim_work *w = s->w;
	const struct plan_op *po = &pl->ops[i];
	int64_t mb_n = g->batch / w->op_m[i];
	int64_t pb = plan_param_shard_bytes(&g->ops[i], po);
	int64_t *cut[NDIMS];
	int idx[NDIMS] = { 0 }, gs = w->shard_base[i], ncut = 0;

	for (int d = 0; d < NDIMS; d++)
		ncut += po->degree[d] + 1;
	if (RESERVE(w, cut, ncut))
		return AP_EFAIL;
	for (int d = 0, o = 0; d < NDIMS; o += po->degree[d] + 1, d++) {
		cut[d] = w->cut + o;
		cuts(shape_extent(&g->ops[i].out, d, mb_n), po->degree[d], cut[d]);
	}
	do {
		int64_t vol = 1, *lo = LO(w, gs), *hi = HI(w, gs);

		for (int d = 0; d < NDIMS; d++) {
			lo[d] = cut[d][idx[d]];
			hi[d] = cut[d][idx[d] + 1];
			vol *= hi[d] - lo[d];
		}
		w->shard_dev[gs] = po->devices[gs - w->shard_base[i]];
		w->shard_op[gs] = i;
		/* an op that recomputes keeps none of its output */
		w->act_bytes[gs] = po->recompute ? 0 : vol * BYTES_PER_ELEM;
		w->remat_bytes[gs] = po->recompute ? vol * BYTES_PER_ELEM : 0;
		w->shard_params[gs] = pb;
		gs++;
	} while (next_coord(idx, NULL, po->degree));
	return w->op_r[i] > 1 ? replica_shards(s, pl, i) : AP_OK;
}

/* Recomputation (plan.h): the backwards of the recomputing shards on a
 * device run in reverse graph order, and the first of them re-runs the
 * forwards of all, so during the backward of one the outputs of those
 * before it (its own included) are live: remat_bytes becomes that
 * running sum over the device's recomputing shards in graph order. */
static int remat_sums(struct sim *s, const struct plan *pl)
{
	struct sim_work *w = s->w;
	int64_t *sum;

	w->recompute = 0;
	for (int i = 0; i < s->g->nops; i++)
		w->recompute |= pl->ops[i].recompute;
	if (!w->recompute)
		return AP_OK;
	sum = calloc((size_t)w->ndev, sizeof *sum);
	if (!sum)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int i = 0; i < s->g->nops; i++)
		for (int gs = w->shard_base[i]; gs < w->shard_end[i] && pl->ops[i].recompute; gs++)
			w->remat_bytes[gs] = sum[w->shard_dev[gs]] += w->remat_bytes[gs];
	free(sum);
	return AP_OK;
}

int sim_reserve_shards(struct sim_work *w, int n)
{
	if (RESERVE(w, shard_dev, n) || RESERVE(w, shard_op, n) ||
	    RESERVE(w, lo_, (size_t)n * NDIMS) || RESERVE(w, hi_, (size_t)n * NDIMS) ||
	    RESERVE(w, act_bytes, n) || RESERVE(w, remat_bytes, n) || RESERVE(w, shard_params, n))
		return AP_EFAIL;
	return AP_OK;
}

static int layout_shards(struct sim *s, const struct plan *pl)
{
	const struct graph *g = s->g;
	struct sim_work *w = s->w;
	int n = 0, st = AP_OK;

	if (RESERVE(w, shard_base, g->nops + 1) || RESERVE(w, shard_end, g->nops))
		return AP_EFAIL;
	for (int i = 0; i < g->nops; i++) {
		w->shard_base[i] = n;
		n += pl->ops[i].ndev * w->op_r[i];
		w->shard_end[i] = n;
	}
	w->shard_base[g->nops] = n;
	w->nshards = n;
	if (sim_reserve_shards(w, n))
		return AP_EFAIL;
	for (int i = 0; i < g->nops && !st; i++)
		st = sim_layout_op_shards(s, pl, i);
	return st ? st : remat_sums(s, pl);
}

/* --- transfers --------------------------------------------------------------- */

/* The transfer of region [lo, hi) of producer shard gp to consumer shard
 * gc of op c in stage index `stage`, shared with an earlier consumer of the
 * same stage on the same device that needs the same region.  xhead[] chains
 * the transfers of each (shard of the producer, destination device), so
 * the search for a sharer looks only at transfers to the same device. */
static int find_xfer(struct sim *s, int gp, int gc, int c, int stage,
		     const int64_t *lo, const int64_t *hi, int64_t bytes,
		     int no_grad, int pieces, int rper, int rphase, int *out)
{
	struct sim_work *w = s->w;
	int dst = w->shard_dev[gc];
	int hk = (gp - w->shard_base[w->shard_op[gp]]) * w->ndev + dst;
	struct sim_xfer *x;
	struct sim_xsched *xs;
	const struct link *ln;

	for (int t = w->xhead[hk]; t >= 0; t = w->xf[t].next_same) {
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
	ln = cluster_link(s->c, x->src, dst);
	xs->dur_s = ln->latency_s + (double)bytes / ln->bw_bytes_per_s;
	sim_link_res(s, x->src, dst, xs->res);
	sim_link_res(s, dst, x->src, xs->rres);
	memcpy(x->lo, lo, sizeof x->lo);
	memcpy(x->hi, hi, sizeof x->hi);
	x->next_same = w->xhead[hk];
	w->xhead[hk] = w->nxf;
	/* A received input is kept until its first consumer's backward: the
	 * pieces of a finer producer's micro-batches that make one of its. */
	w->act_bytes[gc] += pieces * bytes;
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
	int st = add_pair(&w->pairs, &w->cap_pairs, &np[0], gc, gp);

	if (!st && !no_grad)
		st = add_pair(&w->bpairs, &w->cap_bpairs, &np[1], gp, gc);
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
					st = add_pair(&w->pairs, &w->cap_pairs, &np[0], gc,
						      SRC_XFER(x));
				if (!st && !ed->no_grad)
					st = add_pair(&w->bpairs, &w->cap_bpairs, &np[1],
						      gp, SRC_XFER(x));
			}
			if (st)
				return st;
		} while (next_coord(pi, first, last));
		gc++;
	} while (next_coord(ci, NULL, dc));
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
		ed.fol[d] = shape_dim(t, d) >= 0 && op_input_varies(&s->g->ops[c], k, d);
		ed.ofs[d] = n;
		n += ed.fol[d] ? dc[d] : 1;
	}
	if (RESERVE(w, span, n))
		return AP_EFAIL;
	for (int d = 0; d < NDIMS; d++) {
		int64_t sz = shape_extent(t, d, ed.mb_n);
		int64_t osz = shape_extent(&s->g->ops[c].out, d, ed.mb_n);
		int nd = ed.fol[d] ? dc[d] : 1;

		for (int i = 0; i < nd; i++) {
			struct sim_span *sp = &w->span[ed.ofs[d] + i];

			sp->a = 0;
			sp->b = sz;
			if (ed.fol[d])
				op_input_need(s->g, &s->g->ops[c], k, d, i, nd, i * osz / nd,
					      (i + 1) * osz / nd, sz, &sp->a, &sp->b);
			/* the producer shards whose [j*S/D, (j+1)*S/D) can meet
			 * [a, b) */
			sp->first = (int)(sp->a * dp[d] / sz);
			sp->last = (int)((sp->b * dp[d] + sz - 1) / sz);
			if (sp->last > dp[d])
				sp->last = dp[d];
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

/* The xhead[] slot of transfer t of producer p: its shard and destination. */
static int xhead_key(const struct sim_work *w, int p, int t)
{
	return (w->xs[t].prod - w->shard_base[p]) * w->ndev + w->xf[t].dst;
}

int sim_layout_producer(struct sim *s, const struct plan *pl, int p, int from,
			const int *keep, int nkeep, int np[2])
{
	struct sim_work *w = s->w;
	size_t nh = (size_t)(w->shard_end[p] - w->shard_base[p]) * w->ndev;
	int st = AP_OK, x0 = w->nxf;

	/* xhead[] is all -1 between producers: only the entries this one
	 * sets are reset, so a producer costs its transfers, not its shards
	 * times the devices */
	if (nh > w->cap_xhead) {
		size_t old = w->cap_xhead;

		if (RESERVE(w, xhead, nh))
			return AP_EFAIL;
		for (size_t k = old; k < w->cap_xhead; k++)
			w->xhead[k] = -1;
	}
	/* the kept transfers, in the order they were made, can be shared */
	for (int k = 0; k < nkeep; k++)
		w->xhead[xhead_key(w, p, keep[k])] = keep[k];
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
	for (int t = x0; t < w->nxf; t++)
		w->xhead[xhead_key(w, p, t)] = -1;
	for (int k = 0; k < nkeep; k++)
		w->xhead[xhead_key(w, p, keep[k])] = -1;
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

/* Producer by producer, so transfers can be shared through xhead[]. */
static int layout_transfers(struct sim *s, const struct plan *pl)
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
				st = add_pair(&w->pairs, &w->cap_pairs, &n,
					      w->shard_op[w->xs[t].prod], t);
		if (!st)
			st = re ? CSR(w, w->pairs, n, g->nops, xffr) : CSR(w, w->pairs, n, g->nops, xff);
		n = 0;
		for (int t = 0; t < w->nxf && !st; t++)
			if (!w->xf[t].no_grad && rebatched(w, t) == re)
				st = add_pair(&w->pairs, &w->cap_pairs, &n, w->xf[t].emit_op, t);
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

/* --- the order of the schedule ------------------------------------------- */

/* Items run in the order of sched_order() (core/sched.c), the order the
 * runtime runs them in too; stages of different counts in that of
 * sched_order_mixed(). */
static int layout_items(struct sim *s, const struct plan *pl)
{
	struct sim_work *w = s->w;
	int np = 0, st = AP_OK;

	if (!w->mixed) {
		if (RESERVE(w, items, (size_t)2 * w->nstages * w->m))
			return AP_EFAIL;
		sched_order(pl->sched, w->nstages, w->stage_depth, w->m, w->items);
		w->nitems = 2 * w->nstages * w->m;
		return AP_OK;
	}
	w->nitems = 0;
	for (int k = 0; k < w->nstages && !st; k++) {
		w->nitems += 2 * w->stage_m[k];
		for (int e = 0; e < pl->stages[k].nnext && !st; e++)
			st = add_pair(&w->pairs, &w->cap_pairs, &np, k,
				      w->stage_pos[pl->stages[k].next[e]]);
	}
	/* the stages' successors, a CSR list in tmp_ofs and tmp */
	if (!st && RESERVE(w, items, w->nitems))
		st = AP_EFAIL;
	if (!st)
		st = sim_build_csr(w, w->pairs, np, w->nstages, &w->tmp_ofs, &w->cap_tmp_ofs,
				   &w->tmp, &w->cap_tmp);
	if (!st && sched_order_mixed(pl->sched, w->nstages, w->stage_depth, w->stage_m,
				     w->tmp_ofs, w->tmp, w->items))
		st = ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
	return st;
}

int sim_layout(struct sim *s, const struct plan *pl)
{
	int st = check_plan(s, pl);

	if (st)
		return st;
	/* only an asynchronous schedule's iteration reads a link's busy
	 * time (sim.c), and the scheduler's transfers skip it otherwise */
	s->w->busy_links = sched_async(pl->sched);
	st = layout_stages(s, pl);
	if (!st)
		st = layout_counts(s, pl);
	if (!st)
		st = layout_stage_ops(s, pl);
	if (!st)
		st = layout_shards(s, pl);
	if (!st)
		st = layout_transfers(s, pl);
	if (!st)
		st = sim_layout_groups(s, pl);
	if (!st)
		st = layout_items(s, pl);
	if (!st)
		st = layout_updates(s, pl);
	return st;
}
