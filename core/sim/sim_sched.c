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
#include "sim/sim_sched.h"

#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/err.h"
#include "sim/sim_ckpt.h"

static inline double dmax(double a, double b)
{
	return a > b ? a : b;
}

int sim_record(struct sim_work *w, enum sim_task_kind kind, int res, int op,
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
 * dependency's end and chain) and, if it `waits`, they are free; if it
 * `frees`, it sets their free time to its end.  Counts its busy time on
 * them if `busy`; returns its end and chain.  A collective occupies many
 * links, so the loops are kept bare. */
static struct tend occupy(struct sim_work *w, const int *res, int n, int waits, int frees,
			  int busy, struct tend ready, double dur, double *start)
{
	double t = ready.end, end, *res_free = w->res_free, *res_busy = w->res_busy;
	struct tend e;

	if (waits)
		for (int k = 0; k < n; k++)
			t = dmax(t, res_free[res[k]]);
	end = t + dur;
	if (frees)
		for (int k = 0; k < n; k++)
			res_free[res[k]] = end;
	if (busy)
		for (int k = 0; k < n; k++)
			res_busy[res[k]] += dur;
	e.end = end;
	e.cp = ready.cp + dur;
	w->max_cp = dmax(w->max_cp, e.cp);
	*start = t;
	return e;
}

/* Task times.  Per direction (forward, backward) and micro-batch one
 * block holds the times of the shards' compute tasks at indices gs >= 0
 * and those of the transfers below them, transfer x at SRC_XFER(x) =
 * -1 - x: a source code of fsrc or bsrc is then an index into the block,
 * and the hot loop reads a source's time without a branch.  Ends and
 * critical paths are two planes of such blocks, so that a lean run, which
 * reads only the ends, touches half the memory.  The blocks are kept
 * between runs (a delta reads the earlier steps' times of the last run),
 * so growing them moves the times to the new place. */
static int reserve_block(double **t, int m0, int x0, int s0, int m, int xc, int sc)
{
	size_t stride = (size_t)xc + sc, stride0 = (size_t)x0 + s0;
	double *n = malloc(2 * (size_t)m * stride * sizeof *n);

	if (!n)
		return ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
	for (int plane = 0; plane < 2 && *t; plane++)
		for (int j = 0; j < m0 && j < m; j++)
			memcpy(n + ((size_t)plane * m + j) * stride + (xc - x0),
			       *t + ((size_t)plane * m0 + j) * stride0, stride0 * sizeof *n);
	free(*t);
	*t = n;
	return AP_OK;
}

static int reserve_times(struct sim_work *w)
{
	int xc = w->t_xcap, sc = w->t_scap, m = w->t_m;

	if (w->nxf <= xc && w->nshards <= sc && w->m <= m)
		return AP_OK;
	/* geometric growth: deltas append shards and transfers */
	if (w->nxf > xc)
		xc = w->nxf > 2 * xc ? w->nxf : 2 * xc;
	if (w->nshards > sc)
		sc = w->nshards > 2 * sc ? w->nshards : 2 * sc;
	if (w->m > m)
		m = w->m;
	if (reserve_block(&w->tfwd, w->t_m, w->t_xcap, w->t_scap, m, xc, sc) ||
	    reserve_block(&w->tbwd, w->t_m, w->t_xcap, w->t_scap, m, xc, sc))
		return AP_EFAIL;
	w->t_xcap = xc;
	w->t_scap = sc;
	w->t_m = m;
	return AP_OK;
}

/* The compute tasks of one op's shards for micro-batch j: the hot loop of
 * the simulator, one pass over the shards with everything inline, and
 * inlined into step() so that the direction, whether the run records and
 * whether it is lean (no critical path, no busy time: sim_opts) are
 * constants (a recording call in the loop would spill its registers).
 * The shards are a..b-1: all of op's, or one round-robin replica's.
 * src[] lists each shard's sources (CSR at ofs, end), indices into the
 * direction's block own[].  A backward also waits for the shard's own
 * forward, in fwd[]; a forward keeps its activations on the device, a
 * backward frees them. */
static inline __attribute__((always_inline)) int
compute(struct sim_work *w, int op, int a, int b, int j, int bwd, int rec, int lean,
	double dur, const int *ofs, const int *end, const int *src, double *own,
	double *own_cp, const double *fwd, const double *fwd_cp)
{
	/* the arrays in locals: the stores below could alias w's fields */
	double *res_free = w->res_free, *res_busy = w->res_busy;
	double max_cp = w->max_cp;
	const int *shard_dev = w->shard_dev;
	const int64_t *act_bytes = w->act_bytes, *remat = w->remat_bytes;
	int64_t *act_cur = w->act_cur;
	struct sim_mem *mem = w->mem;
	int st = AP_OK;
	enum sim_task_kind kind = bwd ? TASK_BWD : TASK_FWD;

	for (int gs = a; gs < b; gs++) {
		int dev = shard_dev[gs];
		double ready = bwd ? fwd[gs] : 0, cp = bwd && !lean ? fwd_cp[gs] : 0, t;

		for (int e = ofs[gs], e1 = end[gs]; e < e1; e++) {
			ready = dmax(ready, own[src[e]]);
			if (!lean)
				cp = dmax(cp, own_cp[src[e]]);
		}
		t = dmax(res_free[dev], ready);
		res_free[dev] = t + dur;
		own[gs] = t + dur;
		if (!lean) {
			res_busy[dev] += dur;
			own_cp[gs] = cp + dur;
			max_cp = dmax(max_cp, cp + dur);
		}
		/* a backward frees: only a forward can raise the peak, which
		 * stays at INT64_MAX once a sum reaches it (util/checked.h);
		 * a sum held there frees down to 0 at most, never below */
		if (!bwd) {
			int64_t act = act_cur[dev] = sat_add(act_cur[dev], act_bytes[gs]);

			if (act > mem[dev].act)
				mem[dev].act = act;
		} else {
			/* a recomputing shard's outputs are live again */
			if (remat[gs] && sat_add(act_cur[dev], remat[gs]) > mem[dev].act)
				mem[dev].act = sat_add(act_cur[dev], remat[gs]);
			act_cur[dev] = sat_sub(act_cur[dev], act_bytes[gs]);
		}
		if (rec && !st)
			st = sim_record(w, kind, dev, op, gs - w->shard_base[op], j, t, dur, 0);
	}
	w->max_cp = max_cp;
	count(w, kind, b - a);
	return st;
}

/* The transfers of op's step for micro-batch j (its xff forward, bwd 0,
 * or its xfb backward), after the compute tasks of the same block t[]:
 * forward on their res once their producer shard ends, or backward on
 * their rres once their consumer's backward ends; their ends into t[]
 * too.  Second only to compute() in a run, so the usual case, one or two
 * resources and no recording, is inline: the same arithmetic as occupy()
 * in the same order, a link's busy time only when it is read, and the
 * bytes moved the op's sums (op_xbytes).  With round-robin replicas (rr)
 * the lists hold the transfers of every pair of replicas, and only those
 * micro-batch j runs on are sent. */
static inline __attribute__((always_inline)) int
sends(struct sim_work *w, int op, int bwd, int rec, int lean, int rr, double *t, double *tc,
      int j)
{
	const int *list = bwd ? w->xfb : w->xff;
	int a = bwd ? w->xfb_ofs[op] : w->xff_ofs[op], b = bwd ? w->xfb_end[op] : w->xff_end[op];
	double *res_free = w->res_free, *res_busy = w->res_busy, max_cp = w->max_cp;
	const int64_t *bytes = w->op_xbytes + (size_t)op * 6 + 3 * bwd;
	const struct sim_xsched *xs = w->xs;
	enum sim_task_kind kind = bwd ? TASK_SEND_GRAD : TASK_SEND_ACT;
	int st = AP_OK, busy_links = w->busy_links, n = b - a;

	for (int c = 0; c < 3 && !rr; c++)
		w->link_bytes[c] += bytes[c];

	for (int e = a; e < b; e++) {
		const struct sim_xsched *x = &xs[list[e]];
		const int *res = bwd ? x->rres : x->res;
		int from = bwd ? x->cons : x->prod, out = SRC_XFER(list[e]);
		double dur = x->dur_s, start;

		if (rr) {
			/* only between the replicas micro-batch j runs on */
			const struct sim_xfer *f = &w->xf[list[e]];

			if (j % f->rper != f->rphase) {
				n--;
				continue;
			}
			w->link_bytes[f->cls] += f->bytes;
		}
		start = dmax(t[from], res_free[res[0]]);
		if (res[1] >= 0)
			start = dmax(start, res_free[res[1]]);
		res_free[res[0]] = start + dur;
		if (res[1] >= 0)
			res_free[res[1]] = start + dur;
		if (!lean && busy_links) {
			res_busy[res[0]] += dur;
			if (res[1] >= 0)
				res_busy[res[1]] += dur;
		}
		t[out] = start + dur;
		if (!lean) {
			tc[out] = tc[from] + dur;
			max_cp = dmax(max_cp, tc[out]);
		}
		if (rec && !st) {
			int pop = w->shard_op[x->prod];

			st = sim_record(w, kind, res[0], pop, x->prod - w->shard_base[pop], j, start,
				    dur, w->xf[list[e]].bytes);
		}
	}
	w->max_cp = max_cp;
	count(w, kind, n);
	return st;
}

/* The transfers of op's step for micro-batch j between stages of
 * different micro-batch counts (xffr and xfbr, sim_transfers.c), forward or
 * backward: each carries one micro-batch of the finer side.  A step of the
 * coarser side sends r of them in turn, into the blocks of the r finer
 * micro-batches its own holds; a step of the finer side sends one, into
 * the block of the coarser micro-batch that holds its own, where the
 * latest of the r is what the receiver waits for.  A recorded transfer
 * carries the finer micro-batch's number. */
static int resends(struct sim_work *w, int op, int bwd, int j)
{
	const int *list = bwd ? w->xfbr : w->xffr, *ofs = bwd ? w->xfbr_ofs : w->xffr_ofs;
	const double *t = sim_times(w, bwd, j), *tc = sim_cps(w, bwd, j);
	enum sim_task_kind kind = bwd ? TASK_SEND_GRAD : TASK_SEND_ACT;
	int st = AP_OK;

	for (int e = ofs[op]; e < ofs[op + 1] && !st; e++) {
		const struct sim_xsched *x = &w->xs[list[e]];
		const struct sim_xfer *xf = &w->xf[list[e]];
		const int *res = bwd ? x->rres : x->res;
		int pop = w->shard_op[x->prod], from = bwd ? x->cons : x->prod;
		int ms = bwd ? w->stage_m[xf->stage] : w->op_m[pop];
		int mr = bwd ? w->op_m[pop] : w->stage_m[xf->stage];
		int n = ms < mr ? mr / ms : 1, out = SRC_XFER(list[e]);
		struct tend ready = { t[from], w->lean ? 0 : tc[from] };

		for (int k = 0; k < n && !st; k++) {
			int i = ms < mr ? j * n + k : j / (ms / mr);
			int first = ms < mr || j % (ms / mr) == 0;
			double *to = sim_times(w, bwd, i), *toc = sim_cps(w, bwd, i), start;
			struct tend end = occupy(w, res, res[1] >= 0 ? 2 : 1, 1, 1,
						 w->busy_links && !w->lean, ready, x->dur_s, &start);

			to[out] = first ? end.end : dmax(to[out], end.end);
			if (!w->lean)
				toc[out] = first ? end.cp : dmax(toc[out], end.cp);
			w->link_bytes[xf->cls] += xf->bytes;
			count(w, kind, 1);
			if (w->record)
				st = sim_record(w, kind, res[0], pop, x->prod - w->shard_base[pop],
					    ms < mr ? i : j, start, x->dur_s, xf->bytes);
		}
	}
	return st;
}

/* When the n member shards mem[] of a group of op, of a stage of
 * round-robin replicas, have the gradients of the `span` micro-batches
 * that end with micro-batch `last` (an iteration's, or a round's): each
 * at its replica's last backward of them (none when its replica runs
 * none of them). */
static struct tend replica_ready(const struct sim_work *w, int op, const int *mem, int n,
				 int last, int span)
{
	int r = w->op_r[op], base = w->shard_base[op];
	int nd = (w->shard_end[op] - base) / r, first = last - span + 1;
	struct tend ready = { 0, 0 };

	for (int k = 0; k < n; k++) {
		int g = (mem[k] - base) / nd, j = last - ((last - g) % r + r) % r;

		if (j < first)
			continue;
		ready.end = dmax(ready.end, sim_times(w, 1, j)[mem[k]]);
		if (!w->lean)
			ready.cp = dmax(ready.cp, sim_cps(w, 1, j)[mem[k]]);
	}
	return ready;
}

/* Under sync=after, when the members mem[0..n) of a group are done
 * with their backward so far: their devices' last backward ends. */
static struct tend after_ready(const struct sim_work *w, const int *mem, int n)
{
	struct tend ready = { 0, 0 };

	for (int k = 0; k < n; k++) {
		const struct tend *b = &w->bwd_done[w->shard_dev[mem[k]]];

		ready.end = dmax(ready.end, b->end);
		ready.cp = dmax(ready.cp, b->cp);
	}
	return ready;
}

/* The gradient all-reduces of op, after the backward of the last of the
 * `span` micro-batches they sync (under sync=after, of the whole backward
 * item that ends with it on the members' devices): each group waits for
 * all its members, runs its tasks in turn, and makes the gradients of its
 * devices ready for their update. */
static int allreduce(struct sim *s, int op, int last, int span)
{
	struct sim_work *w = s->w;
	const double *bt = sim_times(w, 1, last), *btc = sim_cps(w, 1, last);
	int st = AP_OK;

	for (int gi = w->op_grp_ofs[op]; gi < w->op_grp_end[op] && !st; gi++) {
		const struct sim_group *gr = &w->grp[gi];
		const int *mem = w->grp_mem + gr->mem_ofs;
		struct tend ready = { 0, 0 };
		double start;

		if (w->after) {
			ready = after_ready(w, mem, gr->nmem);
		} else if (w->op_r[op] > 1) {
			ready = replica_ready(w, op, mem, gr->nmem, last, span);
		} else {
			for (int k = 0; k < gr->nmem; k++)
				ready.end = dmax(ready.end, bt[mem[k]]);
			if (!w->lean)
				for (int k = 0; k < gr->nmem; k++)
					ready.cp = dmax(ready.cp, btc[mem[k]]);
		}
		double sync = 0;

		for (int c = gr->coll_ofs; c < gr->coll_ofs + gr->ncoll && !st; c++) {
			const struct sim_coll *x = &w->coll[c];

			ready = occupy(w, w->coll_res + x->res_ofs, x->nres, x->waits, x->frees,
				       w->busy_links, ready, x->dur_s, &start);
			sync += x->dur_s;
			w->link_bytes[x->cls] += x->bytes;
			w->link_bytes[LINK_INTER] += x->xbytes;
			count(w, x->kind, 1);
			if (w->record)
				st = sim_record(w, x->kind, w->coll_res[x->res_ofs], op,
					    gi, -1, start, x->dur_s, x->bytes);
		}
		/* PipeDream's replicas run data parallel among themselves: a
		 * replica's backward waits for its round's all-reduce before
		 * it goes on, so the all-reduce holds the members' devices
		 * (busy: the asynchronous iteration is a busy time) */
		if (w->rsync && w->op_r[op] > 1)
			for (int k = 0; k < gr->nmem; k++) {
				int d = w->shard_dev[mem[k]];

				w->res_free[d] = dmax(w->res_free[d], ready.end);
				w->res_busy[d] += sync;
			}
		for (int k = 0; k < gr->nmem; k++) {
			struct tend *gready = &w->grad_ready[w->shard_dev[mem[k]]];

			gready->end = dmax(gready->end, ready.end);
			if (!w->lean)
				gready->cp = dmax(gready->cp, ready.cp);
		}
	}
	return st;
}

/* Under sync=after, a backward step of op's shards [a, b) with times t,
 * tc: their devices' backward so far, and op's all-reduces put off to
 * the end of the item when `due`. */
static int after_step(struct sim_work *w, int op, int a, int b, const double *t, const double *tc,
		      int span, int due)
{
	for (int gs = a; gs < b; gs++) {
		struct tend *d = &w->bwd_done[w->shard_dev[gs]];

		d->end = dmax(d->end, t[gs]);
		if (!w->lean)
			d->cp = dmax(d->cp, tc[gs]);
	}
	if (!due)
		return AP_OK;
	if (RESERVE(w, due_op, w->ndue + 1) || RESERVE(w, due_span, w->ndue + 1))
		return AP_EFAIL;
	w->due_op[w->ndue] = op;
	w->due_span[w->ndue++] = span;
	return AP_OK;
}

/* One step: op's forward (bwd 0) or backward for micro-batch j, its
 * transfers, and after the last micro-batch's backward its all-reduces.
 * With round-robin replicas (rr), the shards of replica j % r run, and
 * the all-reduces follow the last of each m micro-batches of the period,
 * or of each round of r (sim_layout.c). */
static inline __attribute__((always_inline)) int
step(struct sim *s, int op, int j, int bwd, int rec, int lean, int rr)
{
	struct sim_work *w = s->w;
	double *t = sim_times(w, bwd, j), *tc = sim_cps(w, bwd, j);
	int a = w->shard_base[op], b = w->shard_end[op], span = w->op_m[op], st;

	if (rr) {
		int nd = (b - a) / w->op_r[op];

		if (w->rsync && w->op_r[op] > 1)
			span = w->op_r[op];
		a += j % w->op_r[op] * nd;
		b = a + nd;
	}
	if (!bwd)
		st = compute(w, op, a, b, j, 0, rec, lean, w->cost[op].fwd_s, w->fsrc_ofs,
			     w->fsrc_end, w->fsrc, t, tc, NULL, NULL);
	else
		st = compute(w, op, a, b, j, 1, rec, lean,
			     w->cost[op].bwd_s + (w->remat_bytes[a] ? w->cost[op].fwd_s : 0),
			     w->bsrc_ofs,
			     w->bsrc_end, w->bsrc, t, tc, sim_times(w, 0, j), sim_cps(w, 0, j));
	if (!st && !bwd)
		st = sends(w, op, 0, rec, lean, rr, t, tc, j);
	if (!st && bwd)
		st = sends(w, op, 1, rec, lean, rr, t, tc, j);
	if (!st && w->mixed)
		st = resends(w, op, bwd, j);
	if (!st && bwd && w->after)
		st = after_step(w, op, a, b, t, tc, span, (rr ? j % span : j) == span - 1);
	else if (!st && bwd && (rr ? j % span : j) == span - 1)
		st = allreduce(s, op, j, span);
	return st;
}

/* Plans with round-robin replicas, apart: what they add stays out of the
 * variants below. */
static __attribute__((noinline)) int run_step_rr(struct sim *s, int op, int j, int bwd)
{
	return step(s, op, j, bwd, s->w->record, s->w->lean, 1);
}

/* step() in its six variants (a recording run is not lean). */
static int run_step(struct sim *s, int op, int j, int bwd)
{
	if (s->w->rr)
		return run_step_rr(s, op, j, bwd);
	if (s->w->record)
		return bwd ? step(s, op, j, 1, 1, 0, 0) : step(s, op, j, 0, 1, 0, 0);
	if (s->w->lean)
		return bwd ? step(s, op, j, 1, 0, 1, 0) : step(s, op, j, 0, 0, 1, 0);
	return bwd ? step(s, op, j, 1, 0, 0, 0) : step(s, op, j, 0, 0, 0, 0);
}

/* The optimizer step of every device over its weights (cost_update_s()).
 * One per iteration, with round-robin replicas dev_upd of them
 * (sim_layout.c). */
static int updates(struct sim *s)
{
	struct sim_work *w = s->w;
	int st = AP_OK;

	for (int d = 0; d < w->ndev && !st; d++) {
		double dur, start;

		if (w->mem[d].weights == 0)
			continue;
		dur = cost_update_s(&s->p->dev, (double)w->mem[d].weights, w->opt);
		for (int it = 0; it < (w->rr ? w->dev_upd[d] : 1) && !st; it++) {
			occupy(w, &d, 1, 1, 1, 1, w->grad_ready[d], dur, &start);
			count(w, TASK_UPDATE, 1);
			if (w->record)
				st = sim_record(w, TASK_UPDATE, d, -1, d, -1, start, dur, 0);
		}
	}
	return st;
}

/* The run's state from scratch. */
static void reset(struct sim_work *w)
{
	memset(w->res_free, 0, (size_t)w->nres * sizeof *w->res_free);
	memset(w->res_busy, 0, (size_t)w->nres * sizeof *w->res_busy);
	memset(w->grad_ready, 0, (size_t)w->ndev * sizeof *w->grad_ready);
	memset(w->bwd_done, 0, (size_t)w->ndev * sizeof *w->bwd_done);
	memset(w->act_cur, 0, (size_t)w->ndev * sizeof *w->act_cur);
	memset(w->link_bytes, 0, sizeof w->link_bytes);
	memset(w->ntask_kinds, 0, sizeof w->ntask_kinds);
	w->ntasks = 0;
	w->max_cp = 0;
	for (int d = 0; d < w->ndev; d++)
		w->mem[d].act = 0;
}

/* A step is one op's forward or backward within an item; steps are
 * numbered in the order they run.  The state before every
 * SIM_CKPT_STEPS-th step that is a forward is kept when checkpoints are
 * on (sim_delta.c), so that a later run can start from the last
 * checkpoint before the first step a change touches and leave the earlier
 * steps' times as they are. */
int sim_schedule_from(struct sim *s, int from)
{
	struct sim_work *w = s->w;
	int st = AP_OK, step = 0, op;

	if (reserve_times(w) || sim_ckpt_fit(w))
		return AP_EFAIL;
	w->nrecorded = 0;
	if (w->tlog_on)
		sim_tlog_begin(w);
	if (from > 0) {
		sim_ckpt_restore(w, from);
	} else {
		reset(w);
		w->nckpt = 0;
	}
	/* With round-robin replicas a task reads the times of sources that
	 * did not run in its micro-batch (sim_layout.c): zero, never later
	 * than those that did. */
	if (w->rr) {
		size_t n = 2 * (size_t)w->t_m * ((size_t)w->t_xcap + w->t_scap);

		memset(w->tfwd, 0, n * sizeof *w->tfwd);
		memset(w->tbwd, 0, n * sizeof *w->tbwd);
	}
	for (int it = 0; it < w->nitems && !st; it++) {
		const struct sched_item *x = &w->items[it];
		int a = w->stage_ops_ofs[x->stage], b = w->stage_ops_ofs[x->stage + 1];

		for (int k = 0; k < b - a && !st; k++, step++) {
			if (step < from)
				continue;
			if (w->ckpt_on && !x->bwd && step % SIM_CKPT_STEPS == 0)
				st = sim_ckpt_save(w, step);
			op = w->stage_ops[x->bwd ? b - 1 - k : a + k];
			if (!st && w->tlog_on && step <= w->tlog_last)
				st = sim_tlog_step(w, op, x->mb, x->bwd);
			if (st)
				break;
			st = run_step(s, op, x->mb, x->bwd);
		}
		/* sync=after: the all-reduces the item made due, in the order
		 * of their ops' backward */
		for (int k = 0; k < w->ndue && !st; k++)
			st = allreduce(s, w->due_op[k], x->mb, w->due_span[k]);
		w->ndue = 0;
	}
	if (!st)
		st = updates(s);
	return st;
}
