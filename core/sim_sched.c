/*
 * The list scheduler.  Tasks are generated in the order of the schedule's
 * items (sim_layout.c): within a forward item the stage's ops in graph
 * order, each op's shards followed by the transfers of its output; within
 * a backward item the ops in reverse, each followed by the gradients it
 * sends back and, after the last micro-batch, its gradient all-reduce;
 * the optimizer updates last.  That order is each resource's order of
 * work, and it is topological, so one pass computes every task's start as
 * the later of its dependencies' ends and its resources' free times, as a
 * runtime that runs a fixed per-device task list would.  No task needs a
 * queue, a heap or an allocation: the per-run cost is a few loads and
 * stores per task.
 */
#include "sim_impl.h"

#include <string.h>

#include "err.h"

static inline double dmax(double a, double b)
{
	return a > b ? a : b;
}

/* Appends a task to the recorded list (only when the run records). */
static int record(struct sim_work *w, enum sim_task_kind kind, int res, int op,
		  int shard, int mb, double start, double dur, int64_t bytes)
{
	struct sim_task *t;

	if (RESERVE(w, tasks, w->nrecorded + 1))
		return AP_EFAIL;
	t = &w->tasks[w->nrecorded++];
	t->start_s = start;
	t->dur_s = dur;
	t->bytes = bytes;
	t->res = res;
	t->op = op;
	t->shard = shard;
	t->mb = mb;
	t->kind = kind;
	return AP_OK;
}

static void count(struct sim_work *w, enum sim_task_kind kind, int n)
{
	w->ntasks += n;
	w->ntask_kinds[kind] += n;
}

/* Runs a task of duration dur on resources res[0..n) once `ready` (a
 * dependency's end and chain); returns its end and chain.  A collective
 * occupies many links, so the loops are kept bare. */
static struct tend occupy(struct sim_work *w, const int *res, int n,
			  struct tend ready, double dur, double *start)
{
	double t = ready.end, end, *res_free = w->res_free, *res_busy = w->res_busy;
	struct tend e;

	for (int k = 0; k < n; k++)
		t = dmax(t, res_free[res[k]]);
	end = t + dur;
	for (int k = 0; k < n; k++) {
		res_free[res[k]] = end;
		res_busy[res[k]] += dur;
	}
	e.end = end;
	e.cp = ready.cp + dur;
	w->max_cp = dmax(w->max_cp, e.cp);
	*start = t;
	return e;
}

/* The compute tasks of one op's shards for micro-batch j: the hot loop of
 * the simulator, one pass over the shards with everything inline.  src[]
 * lists each shard's sources (CSR at ofs); a source >= 0 ends at own[],
 * a transfer at xt[].  `in` is the other dependency of every shard (its
 * own forward for a backward; none for a forward).  sign is +1 for a
 * forward, which keeps its activations on the device, -1 for a backward,
 * which frees them. */
static int compute(struct sim_work *w, int op, int j, enum sim_task_kind kind,
		   double dur, const int *ofs, const int *end, const int *src,
		   struct tend *own,
		   const struct tend *xt, const struct tend *in, int sign)
{
	/* the arrays in locals: the stores below could alias w's fields */
	double *res_free = w->res_free, *res_busy = w->res_busy;
	double max_cp = w->max_cp;
	const int *shard_dev = w->shard_dev;
	const int64_t *act_bytes = w->act_bytes;
	int64_t *act_cur = w->act_cur;
	struct sim_mem *mem = w->mem;
	int a = w->shard_base[op], b = w->shard_end[op], st = AP_OK, rec = w->record;

	for (int gs = a; gs < b; gs++) {
		int dev = shard_dev[gs];
		double t = res_free[dev], ready = 0, cp = 0;

		if (in) {
			ready = in[gs].end;
			cp = in[gs].cp;
		}
		for (int e = ofs[gs], e1 = end[gs]; e < e1; e++) {
			const struct tend *x = src[e] >= 0 ? &own[src[e]]
							    : &xt[SRC_XFER(src[e])];

			ready = dmax(ready, x->end);
			cp = dmax(cp, x->cp);
		}
		t = dmax(t, ready);
		res_free[dev] = t + dur;
		res_busy[dev] += dur;
		own[gs].end = t + dur;
		own[gs].cp = cp + dur;
		max_cp = dmax(max_cp, cp + dur);
		/* a backward frees: only a forward can raise the peak */
		if (sign > 0) {
			int64_t act = act_cur[dev] += act_bytes[gs];

			if (act > mem[dev].act)
				mem[dev].act = act;
		} else {
			act_cur[dev] -= act_bytes[gs];
		}
		if (rec && !st)
			st = record(w, kind, dev, op, gs - a, j, t, dur, 0);
	}
	w->max_cp = max_cp;
	count(w, kind, b - a);
	return st;
}

/* The transfers list[a..b) of micro-batch j, after the compute tasks
 * whose ends are in ct: forward (bwd 0) on their res once their producer
 * shard ends, or backward on their rres once their consumer's backward
 * ends; their ends into xt.  Second only to compute() in a run, so the
 * usual case, one or two resources and no recording, is inline: the same
 * arithmetic as occupy() in the same order. */
static int sends(struct sim_work *w, const int *list, int a, int b, int bwd,
		 enum sim_task_kind kind, const struct tend *ct, struct tend *xt, int j)
{
	double *res_free = w->res_free, *res_busy = w->res_busy, max_cp = w->max_cp;
	int64_t *link_bytes = w->link_bytes;
	int st = AP_OK;

	for (int e = a; e < b && !st; e++) {
		const struct sim_xfer *x = &w->xf[list[e]];
		const int *res = bwd ? x->rres : x->res;
		struct tend ready = ct[bwd ? x->cons : x->prod];
		double dur = x->dur_s, t = dmax(ready.end, res_free[res[0]]);

		if (res[1] >= 0)
			t = dmax(t, res_free[res[1]]);
		res_free[res[0]] = t + dur;
		res_busy[res[0]] += dur;
		if (res[1] >= 0) {
			res_free[res[1]] = t + dur;
			res_busy[res[1]] += dur;
		}
		xt[list[e]].end = t + dur;
		xt[list[e]].cp = ready.cp + dur;
		max_cp = dmax(max_cp, ready.cp + dur);
		link_bytes[x->cls] += x->bytes;
		if (w->record) {
			int pop = w->shard_op[x->prod];

			st = record(w, kind, res[0], pop, x->prod - w->shard_base[pop], j, t,
				    dur, x->bytes);
		}
	}
	w->max_cp = max_cp;
	count(w, kind, b - a);
	return st;
}

static int forward(struct sim *s, int op, int j)
{
	struct sim_work *w = s->w;
	struct tend *ft = w->fwd_t + (size_t)j * w->nshards;
	struct tend *xt = w->xf_t + (size_t)j * w->nxf;
	int st;

	st = compute(w, op, j, TASK_FWD, w->cost[op].fwd_s, w->fsrc_ofs, w->fsrc_end,
		     w->fsrc, ft, xt, NULL, 1);
	if (!st)
		st = sends(w, w->xff, w->xff_ofs[op], w->xff_end[op], 0, TASK_SEND_ACT, ft,
			   xt, j);
	return st;
}

/* The gradient all-reduces of op, after its last micro-batch's backward:
 * each group waits for all its members, runs its tasks in turn, and makes
 * the gradients of its devices ready for their update. */
static int allreduce(struct sim *s, int op)
{
	struct sim_work *w = s->w;
	const struct tend *bt = w->bwd_t + (size_t)(w->m - 1) * w->nshards;
	int st = AP_OK;

	for (int gi = w->op_grp_ofs[op]; gi < w->op_grp_end[op] && !st; gi++) {
		const struct sim_group *gr = &w->grp[gi];
		const int *mem = w->grp_mem + gr->mem_ofs;
		struct tend ready = { 0, 0 };
		double start;

		for (int k = 0; k < gr->nmem; k++) {
			ready.end = dmax(ready.end, bt[mem[k]].end);
			ready.cp = dmax(ready.cp, bt[mem[k]].cp);
		}
		for (int c = gr->coll_ofs; c < gr->coll_ofs + gr->ncoll && !st; c++) {
			const struct sim_coll *x = &w->coll[c];

			ready = occupy(w, w->coll_res + x->res_ofs, x->nres, ready,
				       x->dur_s, &start);
			w->link_bytes[x->cls] += x->bytes;
			count(w, x->kind, 1);
			if (w->record)
				st = record(w, x->kind, w->coll_res[x->res_ofs], op,
					    gi, -1, start, x->dur_s, x->bytes);
		}
		for (int k = 0; k < gr->nmem; k++) {
			struct tend *gready = &w->grad_ready[w->shard_dev[mem[k]]];

			gready->end = dmax(gready->end, ready.end);
			gready->cp = dmax(gready->cp, ready.cp);
		}
	}
	return st;
}

static int backward(struct sim *s, int op, int j)
{
	struct sim_work *w = s->w;
	const struct tend *ft = w->fwd_t + (size_t)j * w->nshards;
	struct tend *bt = w->bwd_t + (size_t)j * w->nshards;
	struct tend *xb = w->xb_t + (size_t)j * w->nxf;
	int st;

	st = compute(w, op, j, TASK_BWD, w->cost[op].bwd_s, w->bsrc_ofs, w->bsrc_end,
		     w->bsrc, bt, xb, ft, -1);
	if (!st)
		st = sends(w, w->xfb, w->xfb_ofs[op], w->xfb_end[op], 1, TASK_SEND_GRAD, bt,
			   xb, j);
	if (!st && j == w->m - 1)
		st = allreduce(s, op);
	return st;
}

/* The optimizer step reads weights, gradients and its state and writes
 * weights and state: (3 + 2 x copies) x the parameter bytes, at the
 * device's memory bandwidth (it is a streaming kernel). */
static int updates(struct sim *s, int copies)
{
	struct sim_work *w = s->w;
	int st = AP_OK;

	for (int d = 0; d < w->ndev && !st; d++) {
		double dur, start;

		if (w->mem[d].weights == 0)
			continue;
		dur = (double)w->mem[d].weights * (3 + 2 * copies) /
		      s->p->dev.mem_bw_bytes_per_s;
		occupy(w, &d, 1, w->grad_ready[d], dur, &start);
		count(w, TASK_UPDATE, 1);
		if (w->record)
			st = record(w, TASK_UPDATE, d, -1, d, -1, start, dur, 0);
	}
	return st;
}

/* The run's state from scratch. */
static void reset(struct sim_work *w)
{
	memset(w->res_free, 0, (size_t)w->nres * sizeof *w->res_free);
	memset(w->res_busy, 0, (size_t)w->nres * sizeof *w->res_busy);
	memset(w->grad_ready, 0, (size_t)w->ndev * sizeof *w->grad_ready);
	memset(w->act_cur, 0, (size_t)w->ndev * sizeof *w->act_cur);
	memset(w->link_bytes, 0, sizeof w->link_bytes);
	memset(w->ntask_kinds, 0, sizeof w->ntask_kinds);
	w->ntasks = 0;
	w->max_cp = 0;
	for (int d = 0; d < w->ndev; d++)
		w->mem[d].act = 0;
}

/* A step is one op's forward or backward within an item; steps are
 * numbered in the order they run.  Every SIM_CKPT_STEPS-th step's state
 * is kept when checkpoints are on (sim_delta.c), so that a later run can
 * start from the last checkpoint before the first step a change touches
 * and leave the earlier steps' times as they are. */
int sim_schedule_from(struct sim *s, int opt_copies, int from)
{
	struct sim_work *w = s->w;
	size_t nt = (size_t)w->m * w->nshards, nx = (size_t)w->m * w->nxf;
	int st = AP_OK, step = 0;

	if (RESERVE(w, fwd_t, nt) || RESERVE(w, bwd_t, nt) ||
	    RESERVE(w, xf_t, nx ? nx : 1) || RESERVE(w, xb_t, nx ? nx : 1))
		return AP_EFAIL;
	w->nrecorded = 0;
	if (from > 0)
		sim_ckpt_restore(w, from);
	else
		reset(w);
	for (int it = 0; it < w->nitems && !st; it++) {
		const struct sched_item *x = &w->items[it];
		int a = w->stage_ops_ofs[x->stage], b = w->stage_ops_ofs[x->stage + 1];

		for (int k = 0; k < b - a && !st; k++, step++) {
			if (step < from)
				continue;
			if (w->ckpt_on && step % SIM_CKPT_STEPS == 0)
				st = sim_ckpt_save(w, step);
			if (st)
				break;
			if (!x->bwd)
				st = forward(s, w->stage_ops[a + k], x->mb);
			else
				st = backward(s, w->stage_ops[b - 1 - k], x->mb);
		}
	}
	if (!st)
		st = updates(s, opt_copies);
	return st;
}

int sim_schedule(struct sim *s, int opt_copies)
{
	return sim_schedule_from(s, opt_copies, 0);
}
