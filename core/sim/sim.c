/*
 * The simulator's driver (sim.h): binds graph, profile and cluster, looks
 * up operator costs, lays out a plan (sim_layout.c), schedules one
 * iteration (sim_sched.c) and sums up time, memory and bubble.
 *
 * Costs.  The shard of op i that runs for one micro-batch is the op split
 * by its plan degrees with the n degree multiplied by the number of
 * micro-batches, so profile_lookup() sees the signature of the shard that
 * actually runs; each op is looked up once per run (cached while its
 * degrees stay the same) and the sources of the answers are tallied.
 * Inputs have no backward.
 *
 * Iteration time.  For gpipe and 1f1b it is the makespan of the list
 * schedule: both flush, so an iteration is exactly that.  PipeDream's
 * asynchronous 1F1B never flushes: in steady state every resource does
 * one iteration's work (m forwards and backwards of its shards, its
 * transfers and all-reduces, its update) per iteration, overlapped with
 * the others, and the slowest resource sets the pace.  So its iteration
 * time is the largest busy time of any device, link or NIC in the
 * schedule: the bottleneck stage's forward + backward per micro-batch x m,
 * or its communication when that is slower, as in PipeDream's planner
 * (Narayanan et al., SOSP 2019, section 3.1), where the time of a pipeline
 * is that of its slowest stage or link.  It is never more than the flushed
 * 1f1b makespan of the same plan.  Gradients are accumulated over an
 * iteration's micro-batches and synchronised and applied once per
 * iteration under every schedule (for 1f1b-async as PipeDream-2BW does),
 * so the three schedules of a plan do the same work.
 *
 * The critical path is the longest chain of dependencies, durations
 * summed, ignoring that resources are shared: a lower bound of the
 * makespan, which the makespan meets when nothing ever waits for a busy
 * device or link.
 *
 * Memory, per device: weights, gradients and optimizer state (one copy
 * for SGD with momentum, two for Adam) of its parameter shards; the peak
 * of the activations kept between a shard's forward and backward (its
 * output and the inputs it received), followed through the device's task
 * order, so it reflects the micro-batches in flight under the schedule (m
 * for gpipe, K - d for stage depth d under 1f1b); for 1f1b-async the
 * weight versions stashed for the micro-batches in flight (PipeDream
 * section 3.3: one version per in-flight micro-batch, the newest being the
 * live weights, so min(K - d, m) - 1 extra copies); for async-predict
 * (2(K - d) micro-batches in flight, sched.c) one predicted copy of the
 * weights, whatever the staleness; and the largest workspace of its
 * shards.
 *
 * Bubble: 1 - compute busy time / (devices used x iteration time), where
 * a device is used when it holds a shard and the busy time includes its
 * update.
 *
 * Round-robin replicas (PipeDream's replicated stages, plan.h): a stage of
 * r replicas runs micro-batch j whole on replica j mod r, each replica
 * running its micro-batches in the stage's order of the schedule, and the
 * gradients of a parameter shard are all-reduced over every replica.  A
 * replica's shard costs what replica 0's does.  Under gpipe and 1f1b one
 * iteration is simulated as it comes (some replicas then run one
 * micro-batch more than others); under 1f1b-async and async-predict,
 * where the assignment rotates across iterations, the period after which
 * it repeats (sim_layout.c), and the busy times, link bytes and task
 * counts reported are its share of one iteration.  Under 1f1b-async the
 * replicas of a stage all-reduce and update after every round of r
 * micro-batches, as PipeDream's replicas do (docs/plan-format.md), and
 * the round's all-reduce holds the replicas' devices: a replica waits for
 * it before going on, so it counts in their busy time, which PipeDream's
 * planner adds to the stage's compute as well; every other stage and
 * schedule once an iteration.  A replica has at most
 * ceil(n / r) of the n consecutive micro-batches in flight on its stage,
 * and stashes weight versions for those.
 */
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/err.h"
#include "sim/sim_impl.h"
#include "util/grow.h"
#include "plan/sched.h"
#include "sim/sim_sched.h"
#include "sim/sim_layout.h"
#include "sim/sim_pipe.h"

static const char *const task_kind_names[NTASK_KINDS] = {
	[TASK_FWD] = "fwd",
	[TASK_BWD] = "bwd",
	[TASK_SEND_ACT] = "send-act",
	[TASK_SEND_GRAD] = "send-grad",
	[TASK_ALLREDUCE] = "allreduce",
	[TASK_REDUCE_SCATTER] = "reduce-scatter",
	[TASK_ALLREDUCE_INTER] = "allreduce-inter",
	[TASK_ALL_GATHER] = "all-gather",
	[TASK_UPDATE] = "update",
	[TASK_WGRAD] = "wgrad",
};

const char *sim_task_kind_name(enum sim_task_kind k)
{
	return (unsigned)k < NTASK_KINDS ? task_kind_names[k] : "?";
}

int sim_reserve(void *pp, size_t *cap, size_t n, size_t size)
{
	if (reserve(pp, cap, n, size))
		return ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
	return AP_OK;
}

int sim_init(struct sim *s, const struct graph *g, const struct profile *p,
	     const struct cluster *c)
{
	struct sim_work *w;
	int st;

	memset(s, 0, sizeof *s);
	if (cluster_ndevices(c) < 1 || c->per_node < 1)
		return ap_err(AP_EINPUT, c->name, 0, "cluster has no devices");
	if (!(p->dev.mem_bw_bytes_per_s > 0))
		return ap_err(AP_EINPUT, p->name, 0,
			      "device '%s' has no memory bandwidth (expected a positive mem_bw_gbytes_per_s)",
			      p->dev.name);
	s->g = g;
	s->p = p;
	s->c = c;
	s->w = w = calloc(1, sizeof *w);
	if (!w)
		return ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
	st = graph_consumers(g, &w->cons_ofs, &w->cons);
	if (st)
		goto out;
	w->ndev = cluster_ndevices(c);
	/* Devices, then each node's NIC as a sending and a receiving side
	 * (NICs are full duplex), then the links inside nodes that layouts
	 * use (sim_comm.c). */
	w->res_nic = w->ndev;
	w->after = c->sync == SYNC_AFTER;
	w->res_link = w->nres = w->res_nic + 2 * c->nodes;
	w->cost = calloc((size_t)(g->nops > 0 ? g->nops : 1), sizeof *w->cost);
	w->cost_seen = calloc((size_t)(g->nops > 0 ? g->nops : 1) * SIM_COST_WAYS,
			      sizeof *w->cost_seen);
	w->cost_next = calloc((size_t)(g->nops > 0 ? g->nops : 1), sizeof *w->cost_next);
	w->grad_ready = calloc((size_t)w->ndev, sizeof *w->grad_ready);
	w->bwd_done = calloc((size_t)w->ndev, sizeof *w->bwd_done);
	w->act_cur = calloc((size_t)w->ndev, sizeof *w->act_cur);
	w->mem = calloc((size_t)w->ndev, sizeof *w->mem);
	w->dev_nshards = calloc((size_t)w->ndev, sizeof *w->dev_nshards);
	w->umem = calloc((size_t)w->ndev, sizeof *w->umem);
	w->udev_nshards = calloc((size_t)w->ndev, sizeof *w->udev_nshards);
	if (!w->cost || !w->cost_seen || !w->cost_next || !w->grad_ready || !w->bwd_done ||
	    !w->act_cur || !w->mem || !w->dev_nshards || !w->umem || !w->udev_nshards)
		st = ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
	else if (RESERVE(w, res_free, w->nres) || RESERVE(w, res_busy, w->nres))
		st = AP_EFAIL;
out:
	if (st)
		sim_release(s);
	return st;
}

void sim_release(struct sim *s)
{
	struct sim_work *w = s->w;

	if (w) {
		free(w->cons_ofs);
		free(w->cons);
		free(w->cost);
		free(w->cost_seen);
		free(w->cost_next);
		free(w->res_free);
		free(w->res_busy);
		sim_map_release(&w->links);
		free(w->link_ends);
		free(w->grad_ready);
		free(w->bwd_done);
		free(w->due_op);
		free(w->due_span);
		free(w->act_cur);
		free(w->mem);
		free(w->dev_nshards);
		free(w->umem);
		free(w->udev_nshards);
		free(w->stage_pos);
		free(w->stage_depth);
		free(w->stage_ops_ofs);
		free(w->stage_ops);
		free(w->shard_base);
		free(w->shard_end);
		free(w->fsrc_end);
		free(w->bsrc_end);
		free(w->xff_end);
		free(w->xfb_end);
		free(w->op_grp_end);
		free(w->ckpt_d);
		free(w->ckpt_i);
		free(w->ckpt_ok);
		free(w->trun);
		free(w->tlog);
		free(w->tlog_ck);
		free(w->ckpt_sel);
		free(w->op_mark);
		free(w->op_cut);
		free(w->op_stage);
		free(w->aff);
		free(w->uop);
		free(w->ushard);
		free(w->last_ops);
		free(w->pend);
		free(w->loc);
		free(w->pairs_loc);
		free(w->tmp_ofs);
		free(w->tmp);
		free(w->shard_dev);
		free(w->shard_op);
		free(w->lo_);
		free(w->hi_);
		free(w->act_bytes);
		free(w->remat_bytes);
		free(w->fsrc_ofs);
		free(w->fsrc);
		free(w->bsrc_ofs);
		free(w->bsrc);
		free(w->xf);
		free(w->xs);
		free(w->xff_ofs);
		free(w->xff);
		free(w->xfb_ofs);
		free(w->xfb);
		free(w->xffr_ofs);
		free(w->xffr);
		free(w->xfbr_ofs);
		free(w->xfbr);
		free(w->stage_m);
		free(w->op_m);
		free(w->op_r);
		free(w->dev_upd);
		free(w->op_xbytes);
		free(w->grp);
		free(w->grp_mem);
		free(w->coll);
		free(w->coll_res);
		free(w->op_grp_ofs);
		free(w->shard_params);
		free(w->items);
		free(w->tfwd);
		free(w->tbwd);
		free(w->tasks);
		free(w->pairs);
		free(w->bpairs);
		free(w->heads);
		sim_map_release(&w->xhead);
		free(w->scratch);
		free(w->cut);
		free(w->span);
		free(w);
	}
	memset(s, 0, sizeof *s);
}

/* A peak at INT64_MAX is a saturated sum (sim.h): more than any memory. */
int sim_fits(const struct sim_result *r)
{
	return !(r->mem_bytes > 0 &&
		 (r->peak_mem_bytes > r->mem_bytes || r->peak_mem_bytes == INT64_MAX));
}

/* The cost of op i under its plan degrees, looked up unless they are
 * those of the last run or of one of the op's SIM_COST_WAYS configurations
 * seen before it. */
static int lookup_cost(struct sim *s, const struct plan *pl, int i)
{
	struct sim_work *w = s->w;
	struct sim_cost *c = &w->cost[i], *seen = w->cost_seen + (size_t)i * SIM_COST_WAYS;
	int deg[NDIMS], st, m = w->op_m[i];
	struct op_cost oc;

	memcpy(deg, pl->ops[i].degree, sizeof deg);
	deg[DIM_N] *= m;
	if (memcmp(deg, c->degree, sizeof deg) == 0)
		return AP_OK;
	for (int k = 0; k < SIM_COST_WAYS; k++)
		if (memcmp(deg, seen[k].degree, sizeof deg) == 0) {
			*c = seen[k];
			return AP_OK;
		}
	st = cost_op(s->p, s->g, i, pl->ops[i].degree, m, &oc);
	if (st)
		return st;
	memcpy(c->degree, deg, sizeof deg);
	c->fwd_s = oc.fwd_us * 1e-6;
	c->bwd_s = oc.bwd_us * 1e-6;
	c->workspace_bytes = oc.workspace_bytes;
	c->source = oc.source;
	seen[w->cost_next[i]] = *c;
	w->cost_next[i] = (w->cost_next[i] + 1) % SIM_COST_WAYS;
	return AP_OK;
}

static int lookup_costs(struct sim *s, const struct plan *pl, struct cost_tally *t)
{
	memset(t, 0, sizeof *t);
	for (int i = 0; i < s->g->nops; i++) {
		int st = lookup_cost(s, pl, i);

		if (st)
			return st;
		cost_tally_add(t, s->w->cost[i].source);
	}
	return AP_OK;
}

/* Adds (sign 1) or takes away (-1) the weights and stashed versions of
 * op i's shards a..b-1 and counts them on their devices: integer sums,
 * so a change can be applied to the totals of the last run.  A sum that
 * would pass INT64_MAX stays there (util/checked.h), and a change to a
 * device so saturated is not taken away but counted again from scratch
 * (saturated(), sim_finish_change()). */
static void op_memory(struct sim *s, const struct plan *pl, int i, int a, int b, int sign)
{
	struct sim_work *w = s->w;
	int sidx = w->stage_pos[pl->ops[i].stage], r = w->op_r[i];
	int stale = sched_staleness(pl->sched, w->depth_max + 1, w->stage_depth[sidx],
				    pl->microbatches);
	/* PipeDream stashes a version per update the stage sees while a
	 * micro-batch is in flight; async-predict keeps one predicted
	 * copy, whatever the distance.  Of the stale + 1 consecutive
	 * micro-batches in flight on a stage, a round-robin replica holds
	 * at most ceil((stale + 1) / r). */
	int64_t stash = pl->sched == SCHED_ASYNC_PREDICT ? stale > 0
			: r > 1 ? (stale + r) / r - 1 : stale;

	for (int gs = a; gs < b; gs++) {
		struct sim_mem *m = &w->mem[w->shard_dev[gs]];
		int64_t p = w->shard_params[gs], sp = sat_mul(stash, p);

		m->weights = sign > 0 ? sat_add(m->weights, p) : m->weights - p;
		m->stash = sign > 0 ? sat_add(m->stash, sp) : m->stash - sp;
		w->dev_nshards[w->shard_dev[gs]] += sign;
	}
}

/* Whether a device's weights or stash stopped at INT64_MAX. */
static int saturated(const struct sim_work *w)
{
	for (int d = 0; d < w->ndev; d++)
		if (w->mem[d].weights == INT64_MAX || w->mem[d].stash == INT64_MAX)
			return 1;
	return 0;
}

/* The largest workspace of each device's shards. */
static void workspaces(struct sim *s)
{
	struct sim_work *w = s->w;

	for (int d = 0; d < w->ndev; d++)
		w->mem[d].workspace = 0;
	for (int i = 0; i < s->g->nops; i++)
		for (int gs = w->shard_base[i]; gs < w->shard_end[i]; gs++) {
			struct sim_mem *m = &w->mem[w->shard_dev[gs]];

			if (w->cost[i].workspace_bytes > m->workspace)
				m->workspace = w->cost[i].workspace_bytes;
		}
}

static void optimizer_memory(struct sim_work *w, int copies)
{
	for (int d = 0; d < w->ndev; d++) {
		w->mem[d].grads = w->mem[d].weights;
		w->mem[d].opt_state = sat_mul(copies, w->mem[d].weights);
	}
}

/* Everything but the activations, which the schedule follows. */
static void static_memory(struct sim *s, const struct plan *pl, int copies)
{
	struct sim_work *w = s->w;

	for (int d = 0; d < w->ndev; d++)
		memset(&w->mem[d], 0, sizeof w->mem[d]);
	memset(w->dev_nshards, 0, (size_t)w->ndev * sizeof *w->dev_nshards);
	for (int i = 0; i < s->g->nops; i++)
		op_memory(s, pl, i, w->shard_base[i], w->shard_end[i], 1);
	workspaces(s);
	optimizer_memory(w, copies);
}

static void summarise(struct sim *s, const struct plan *pl, struct sim_result *r)
{
	struct sim_work *w = s->w;
	double busiest_res = 0;

	r->ndev = w->ndev;
	r->iters = w->nper;
	r->ntasks = w->ntasks;
	r->critical_path_s = w->max_cp;
	memcpy(r->link_bytes, w->link_bytes, sizeof r->link_bytes);
	for (int k = 0; k < NTASK_KINDS; k++)
		r->ntask_kinds[k] = w->ntask_kinds[k];
	for (int k = 0; k < w->nres; k++) {
		if (w->res_free[k] > r->makespan_s)
			r->makespan_s = w->res_free[k];
		if (w->res_busy[k] > busiest_res)
			busiest_res = w->res_busy[k];
	}
	/* A device is used when it holds a shard; its busy time then
	 * counts, idle or not. */
	for (int d = 0; d < w->ndev; d++) {
		struct sim_mem *m = &w->mem[d];

		r->ndev_used += w->dev_nshards[d] > 0;
		r->compute_busy_s += w->res_busy[d];
		if (w->res_busy[d] > r->busiest_compute_s)
			r->busiest_compute_s = w->res_busy[d];
		m->peak = SAT_SUM(m->weights, m->grads, m->opt_state, m->stash, m->act,
				  m->workspace);
		if (m->peak > r->peak_mem_bytes) {
			r->peak_mem_bytes = m->peak;
			r->peak_dev = d;
		}
	}
	/* A period of round-robin replicas is nper iterations (sim_layout.c):
	 * the share of one, counts rounded (rounds of replicas need not fit
	 * an iteration).  Its makespan and critical path stay the period's. */
	if (w->nper > 1) {
		double f = 1.0 / w->nper;

		busiest_res *= f;
		r->compute_busy_s *= f;
		r->busiest_compute_s *= f;
		r->ntasks = 0;
		for (int k = 0; k < NTASK_KINDS; k++) {
			r->ntask_kinds[k] = (r->ntask_kinds[k] + w->nper / 2) / w->nper;
			r->ntasks += r->ntask_kinds[k];
		}
		for (int k = 0; k < 3; k++)
			r->link_bytes[k] = (r->link_bytes[k] + w->nper / 2) / w->nper;
	}
	/* Without a flush an iteration is the steady state's: the busiest
	 * resource.  Under async-predict a device's two streams share its
	 * compute (both kernels compete for the same cores), so its busy
	 * time is forward plus backward either way. */
	r->iter_s = sched_async(pl->sched) ? busiest_res : r->makespan_s;
	r->samples_per_s = r->iter_s > 0 ? (double)s->g->batch / r->iter_s : 0;
	r->bubble = r->iter_s > 0 && r->ndev_used > 0
			    ? 1 - r->compute_busy_s / (r->ndev_used * r->iter_s)
			    : 0;
	if (w->lean)
		r->critical_path_s = r->bubble = r->compute_busy_s = r->busiest_compute_s = NAN;
	r->mem = w->mem;
	r->mem_bytes = s->c->mem_bytes > 0 ? s->c->mem_bytes : s->p->dev.mem_bytes;
}

/* The schedule from step `from` and the summary. */
static int schedule_summarise(struct sim *s, const struct plan *pl, int from,
			      struct sim_result *r)
{
	int st = sim_schedule_from(s, from);

	if (st)
		return st;
	summarise(s, pl, r);
	r->costs = s->w->tally;
	return AP_OK;
}

int sim_finish(struct sim *s, const struct plan *pl, int from, struct sim_result *r)
{
	int st;

	memset(r, 0, sizeof *r);
	st = lookup_costs(s, pl, &s->w->tally);
	if (st)
		return st;
	static_memory(s, pl, optimizer_state_copies(s->w->opt));
	return schedule_summarise(s, pl, from, r);
}

int sim_finish_change(struct sim *s, const struct plan *pl, const struct sim_undo_op *old,
		      int n, int from, struct sim_result *r)
{
	struct sim_work *w = s->w;
	int rescan = 0, sat = saturated(w);

	memset(r, 0, sizeof *r);
	for (int k = 0; k < n; k++) {
		int i = old[k].op, st;
		int64_t ws = old[k].cost.workspace_bytes;

		w->tally.n[old[k].cost.source]--;
		if (!sat)
			op_memory(s, pl, i, old[k].shard_base, old[k].shard_end, -1);
		/* a device whose largest workspace this op's shard had must be
		 * scanned again */
		for (int gs = old[k].shard_base; gs < old[k].shard_end && !rescan; gs++)
			rescan = ws > 0 && ws >= w->mem[w->shard_dev[gs]].workspace;
		st = lookup_cost(s, pl, i);
		if (st)
			return st;
		cost_tally_add(&w->tally, w->cost[i].source);
		if (sat)
			continue;
		op_memory(s, pl, i, w->shard_base[i], w->shard_end[i], 1);
		for (int gs = w->shard_base[i]; gs < w->shard_end[i]; gs++) {
			struct sim_mem *m = &w->mem[w->shard_dev[gs]];

			if (w->cost[i].workspace_bytes > m->workspace)
				m->workspace = w->cost[i].workspace_bytes;
		}
	}
	if (sat) {
		static_memory(s, pl, optimizer_state_copies(w->opt));
	} else {
		if (rescan)
			workspaces(s);
		optimizer_memory(w, optimizer_state_copies(w->opt));
	}
	return schedule_summarise(s, pl, from, r);
}

int sim_run(struct sim *s, const struct plan *pl, const struct sim_opts *opts,
	    struct sim_result *r)
{
	static const struct sim_opts defaults = { .optimizer = OPTIMIZER_SGD };
	struct sim_work *w = s->w;
	int st;

	memset(r, 0, sizeof *r);
	w->delta_ready = 0;
	if (!opts)
		opts = &defaults;
	if ((unsigned)opts->optimizer >= NOPTIMIZERS)
		return ap_err(AP_EINPUT, NULL, 0, "simulator: unknown optimizer %d",
			      (int)opts->optimizer);
	w->record = opts->record;
	w->lean = opts->lean && !opts->record && !sched_async(pl->sched);
	w->opt = opts->optimizer;
	w->ntasks = w->nrecorded = 0;
	if (plan_megatron_features(pl)) {
		struct sim_opts o = *opts;

		if (pl->has_optimizer)
			o.optimizer = pl->optimizer;
		return sim_pipe_run(s, pl, &o, r);
	}
	st = sim_layout(s, pl);
	if (!st)
		st = sim_finish(s, pl, 0, r);
	if (!st)
		sim_delta_base(s);
	return st;
}

const struct sim_task *sim_tasks(const struct sim *s, int64_t *n)
{
	*n = s->w->record ? s->w->nrecorded : 0;
	return *n ? s->w->tasks : NULL;
}

int sim_nresources(const struct sim *s)
{
	return s->w->nres;
}

int sim_resource_name(const struct sim *s, int res, char *buf, size_t len)
{
	const struct sim_work *w = s->w;

	if (res < 0 || res >= w->nres)
		return -1;
	if (res < w->res_nic)
		snprintf(buf, len, "device %d", res);
	else if (res < w->res_link)
		snprintf(buf, len, "node %d nic %s", (res - w->res_nic) / 2,
			 (res - w->res_nic) % 2 ? "rx" : "tx");
	else
		snprintf(buf, len, "link %d->%d", w->link_ends[2 * (res - w->res_link)],
			 w->link_ends[2 * (res - w->res_link) + 1]);
	return 0;
}
