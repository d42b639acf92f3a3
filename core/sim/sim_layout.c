/*
 * What a plan makes of the graph, built once per sim_run() into the flat
 * arrays of struct sim_work so that scheduling touches nothing else: the
 * stages' order, each shard's device and region, and the order of the
 * schedule's items.
 *
 * Regions.  Shard k of an op with degrees (dn, dc, dh, dw, dl) has the
 * coordinates of k in row-major order over n, c, h, w, l (plan.h) and owns
 * the hyper-rectangle [i*S/D, (i+1)*S/D) of every dim of its output, for
 * one micro-batch (the n extent is batch / micro-batches).
 *
 * The transfers between shards on different devices are
 * sim_transfers.c's; the replica groups of parameter shards and their
 * all-reduces sim_comm.c's.
 */
#include "sim/sim_layout.h"

#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/err.h"
#include "util/intmath.h"
#include "plan/sched.h"
#include "plan/plan_check.h"
#include "sim/sim_transfers.h"
#include "sim/sim_comm.h"
#include "sim/sim_size.h"

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
 * rule implies.  The depths are sched_stage_depths()' (sched.c: a chain's
 * positions, GraphPipe's schedule of a DAG of stages), which the runtime
 * orders by too. */
static int layout_stages(struct sim *s, const struct plan *pl)
{
	struct sim_work *w = s->w;
	int n = pl->nstages, st;

	if (RESERVE(w, stage_pos, n) || RESERVE(w, stage_depth, n))
		return AP_EFAIL;
	st = sched_stage_depths(pl, w->stage_depth, &w->depth_max);
	if (st)
		return st;
	for (int k = 0; k < n; k++)
		w->stage_pos[pl->stages[k].id] = k;
	w->nstages = n;
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

static int layout_stage_ops(struct sim *s, const struct plan *pl)
{
	struct sim_work *w = s->w;
	int np = 0;

	for (int i = 0; i < s->g->nops; i++)
		if (sim_add_pair(&w->pairs, &w->cap_pairs, &np,
				 w->stage_pos[pl->ops[i].stage], i))
			return AP_EFAIL;
	return CSR(w, w->pairs, np, w->nstages, stage_ops);
}

/* --- shards ------------------------------------------------------------------ */

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
	int64_t pb = cost_param_bytes(&g->ops[i], po->degree[DIM_C]);
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
	} while (shard_coord_next(idx, NULL, po->degree));
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
			w->remat_bytes[gs] = sum[w->shard_dev[gs]] =
				sat_add(sum[w->shard_dev[gs]], w->remat_bytes[gs]);
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

/* --- the order of the schedule ------------------------------------------- */

/* Items run in the order of sched_order() (core/plan/sched.c), the order the
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
			st = sim_add_pair(&w->pairs, &w->cap_pairs, &np, k,
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

	if (!st)
		st = sim_size_check(s->g, pl);
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
	if (!st) {
		sim_links_reset(s->w);
		st = sim_layout_transfers(s, pl);
	}
	if (!st)
		st = sim_layout_groups(s, pl);
	if (!st)
		st = layout_items(s, pl);
	if (!st)
		st = layout_updates(s, pl);
	return st;
}

