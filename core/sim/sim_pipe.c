/*
 * The symmetric pipeline simulation (docs/simulator.md, "Pipelines of
 * groups").  In a plan shaped as a pipeline of device groups (plan/pipe.h)
 * every data-parallel replica and every tensor rank of a group does the
 * same work at the same time, so one device per group stands for all of
 * them: the simulation list-schedules the group's items (a stage's
 * forward, backward, or zero-bubble weight pass of one micro-batch, in
 * the order sched_group_order() gives every group, the runtime's too) on
 * one timeline per group, then adds the data-parallel gradient
 * synchronisation and the optimizer step.  That keeps it linear in
 * groups x chunks x micro-batches whatever the device count: 3,072 GPUs
 * cost what their 64 pipeline groups do.
 *
 * Per stage and micro-batch of mb = batch / (m D) samples on a replica:
 *  - compute: each op's shard by cost_tp_op() (the profile in fp32, the
 *    roofline at the tensor rate in mixed precision), split by its tensor
 *    role, plus its tensor-parallel collectives (cost_tp_comm_s()), which
 *    hold the group as Megatron-LM runs them (not overlapped);
 *  - recomputation: a fully recomputing op's forward and collectives again
 *    before its backward, a selective one its score products;
 *  - zero-bubble: the backward's weight-gradient share
 *    (cost_wgrad_share()) runs as the W pass;
 *  - between stages: what crosses the cut, split over the T tensor ranks
 *    (Megatron's scatter/gather, section 4.1; all-gathered inside the
 *    node after it unless sequence parallelism split it already), over
 *    the link between the groups, the NIC shared by the group's devices
 *    on the node.  The sender's pass holds its group until the transfer
 *    has arrived, as Megatron-LM's point-to-point sends (batched isend
 *    and irecv, then a wait) block its schedule.
 * After a group's last pass its gradients are summed over the D replicas
 * (Megatron-LM 2021 after the flush, not overlapped): an all-reduce, or
 * under ZeRO-1 a reduce-scatter and an all-gather of the weights (the
 * same bytes), each of the T concurrent rings of a node getting its share
 * of the NIC; ZeRO-3 gathers a stage's weights before its forward and
 * backward and reduce-scatters its gradients after, every micro-batch.
 * A weight tied across the first and last stage (Megatron's embedding
 * group) sums its two copies' gradients.  Then the optimizer step over
 * the device's (ZeRO: 1/D of its) parameters.
 *
 * Memory per device: the parameters' bytes (cost_param_state_bytes()),
 * plus the activations the group's order keeps in flight, Korthikanti
 * et al.'s per op (cost_saved_bytes()); a fully recomputing op keeps only
 * its inputs from ops that do not recompute (the checkpoints), and its
 * stage's backward brings the largest run of recomputing ops' activations
 * back for one micro-batch; under zero-bubble a B pass frees all but what
 * the W pass needs (the inputs of the ops with weights and their output
 * gradients), and the W pass that.
 */
#include "sim/sim_pipe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/transformer.h"
#include "model/tensor.h"
#include "plan/pipe.h"
#include "plan/sched.h"
#include "sim/sim_impl.h"
#include "sim/sim_sched.h"
#include "util/checked.h"
#include "util/err.h"
#include "util/intmath.h"

/* One stage's work per micro-batch on one device of its group. */
struct pstage {
	double f, b, w;      /* seconds of the F, B (whole backward unless
			      * zero-bubble) and W passes */
	double send_s;       /* to the next stage: forward, and its gradient back */
	int64_t act, peak_extra; /* kept per micro-batch; live during B */
	int64_t wkeep;       /* of act, what a zero-bubble W pass still needs */
	double params;       /* parameter elements per device */
	double tp_bytes;     /* moved by its tensor collectives per micro-batch */
	int64_t send_bytes;
};

struct pctx {
	const struct sim *s;
	const struct plan *pl;
	struct plan_pipe sh;
	enum tp_role *role;
	int64_t mb;
	int S, m;
	struct pstage *st;
	struct sched_item **order; /* per group */
	int *norder;
	int *first_op;             /* per stage, for the recorded tasks */
	int record;
};

static struct tp_op op_mode(const struct pctx *x, int i, int recompute)
{
	struct tp_op o = {
		.t = x->sh.tp, .role = x->role[i], .sp = x->pl->seq_parallel,
		.recompute = recompute, .prec = x->pl->precision,
	};
	return o;
}

/* The sorted devices of one tensor group (replica 0) of stage s, and of
 * one data-parallel ring (tensor rank 0). */
static void groups_of(const struct plan_stage *ps, const struct plan_pipe *sh, int *tg, int *dg)
{
	for (int k = 0; k < sh->tp; k++)
		tg[k] = ps->devices[k];
	for (int k = 0; k < sh->dp; k++)
		dg[k] = ps->devices[k * sh->tp];
	qsort(tg, (size_t)sh->tp, sizeof *tg, int_cmp);
	qsort(dg, (size_t)sh->dp, sizeof *dg, int_cmp);
}

/* Devices of the sorted list on the node holding the most of them. */
static int most_on_a_node(const struct cluster *c, const int *dev, int n)
{
	int nodes, qmax;
	int64_t intra;

	cost_spread(c, dev, n, 0, &nodes, &qmax, &intra);
	return qmax;
}

/* An all-reduce of `bytes` on each of the D members of every ring of a
 * stage, its T rings side by side sharing each node's NIC. */
static double dp_allreduce_s(const struct cluster *c, const int *all, int nall, const int *dg,
			     int D, double bytes)
{
	struct cluster shared = *c;
	int nodes, qmax, busy;
	int64_t intra;

	if (D < 2 || bytes <= 0)
		return 0;
	cost_spread(c, dg, D, (int64_t)bytes, &nodes, &qmax, &intra);
	busy = most_on_a_node(c, all, nall);
	if (nodes > 1 && busy > qmax)
		shared.inter.bw_bytes_per_s /= (double)busy / qmax;
	return cost_allreduce_spread_s(&shared, D, nodes, qmax, bytes, 1);
}

static int stage_costs(struct pctx *x, struct sim_result *r)
{
	const struct sim *s = x->s;
	const struct graph *g = s->g;
	const struct plan *pl = x->pl;
	const int T = x->sh.tp, D = x->sh.dp;
	int *tg = malloc((size_t)T * sizeof *tg), *dg = malloc((size_t)D * sizeof *dg);
	int *sorted = NULL;
	int64_t *seg = calloc((size_t)x->S, sizeof *seg);
	int *ckpt = calloc((size_t)g->nops, sizeof *ckpt); /* stage + 1 that counted it */
	int st = AP_OK, last = -1;

	if (!tg || !dg || !seg || !ckpt) {
		st = ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
		goto out;
	}
	for (int i = 0; i < g->nops && !st; i++) {
		const struct op *op = &g->ops[i];
		int sx = plan_stage_index(pl, pl->ops[i].stage), rc = pl->ops[i].recompute;
		struct pstage *ps = &x->st[sx];
		struct tp_op o = op_mode(x, i, rc);
		struct op_cost oc;
		double cf, cb, outb = cost_act_bytes(g, i, pl->precision, x->mb);

		if (sx != last) {
			groups_of(&pl->stages[sx], &x->sh, tg, dg);
			last = sx;
		}
		st = cost_tp_op(s->p, g, i, &o, pl->microbatches, D, &oc);
		if (st)
			break;
		cost_tally_add(&s->w->tally, oc.source);
		cost_tp_comm_s(s->c, tg, g, i, &o, x->mb, &cf, &cb);
		ps->f += oc.fwd_us * 1e-6 + cf;
		ps->b += oc.bwd_us * 1e-6 + cb;
		if (pl->sched == SCHED_ZB_H1) {
			double wv = cost_wgrad_share(g, i) * oc.bwd_us * 1e-6;

			ps->w += wv;
			ps->b -= wv;
		}
		if (rc == RECOMPUTE_FULL)
			ps->b += oc.fwd_us * 1e-6 + cf;
		else if (rc == RECOMPUTE_SELECTIVE)
			ps->b += cost_selective_share(op) * oc.fwd_us * 1e-6;
		if (T > 1)
			ps->tp_bytes += 2 * outb * (T - 1) / T;
		ps->act = sat_add(ps->act, cost_saved_bytes(g, i, &o, x->mb));
		if (op->params > 0 || (op->kind == OP_LINEAR && op->a.tie >= 0)) {
			/* W needs the op's input and its output's gradient */
			struct tp_op in_only = op_mode(x, i, op->kind == OP_ATTENTION
							     ? RECOMPUTE_SELECTIVE : rc);

			ps->wkeep = SAT_SUM(ps->wkeep, cost_saved_bytes(g, i, &in_only, x->mb),
					    sat_of_double(outb / (x->role[i] == TP_COLUMN ? T : 1)));
		}
		if (rc == RECOMPUTE_FULL) {
			struct tp_op keep = op_mode(x, i, RECOMPUTE_NONE);

			seg[sx] = sat_add(seg[sx], cost_saved_bytes(g, i, &keep, x->mb));
			ps->peak_extra = seg[sx] > ps->peak_extra ? seg[sx] : ps->peak_extra;
			/* its checkpoints: inputs from ops that keep theirs,
			 * once a stage however many ops read them */
			for (int k = 0; k < op->nin; k++) {
				int j = op->in[k];

				if ((pl->ops[j].recompute != RECOMPUTE_FULL ||
				     pl->ops[j].stage != pl->ops[i].stage) && ckpt[j] != sx + 1) {
					ckpt[j] = sx + 1;
					ps->act = sat_add(ps->act, sat_of_double(
						cost_act_bytes(g, j, pl->precision, x->mb) /
						(pl->seq_parallel ? T : 1)));
				}
			}
		} else {
			seg[sx] = 0;
		}
		ps->params += (double)op->params / (tp_role_splits_params(x->role[i]) ? T : 1);
		/* what crosses to later stages: once over every cut up to its
		 * last consumer */
		int reach = sx;

		for (int e2 = s->w->cons_ofs[i]; e2 < s->w->cons_ofs[i + 1]; e2++) {
			int cs = plan_stage_index(pl, pl->ops[s->w->cons[e2]].stage);

			reach = cs > reach ? cs : reach;
		}
		for (int q = sx; q < reach; q++)
			x->st[q].send_bytes = sat_add(x->st[q].send_bytes, sat_of_double(outb));
	}
	sorted = malloc((size_t)(D * T) * sizeof *sorted);
	if (!st && !sorted)
		st = ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
	for (int sx = 0; sx + 1 < x->S && !st; sx++) {
		const struct plan_stage *a = &pl->stages[sx], *b = &pl->stages[sx + 1];
		struct pstage *ps = &x->st[sx];
		double piece = (double)ps->send_bytes / T;
		int share = 1;

		memcpy(sorted, a->devices, (size_t)(D * T) * sizeof *sorted);
		qsort(sorted, (size_t)(D * T), sizeof *sorted, int_cmp);
		if (cluster_link_class(s->c, a->devices[0], b->devices[0]) == LINK_INTER)
			share = most_on_a_node(s->c, sorted, D * T);
		ps->send_s = cost_transfer_s(s->c, a->devices[0], b->devices[0], piece * share);
		if (T > 1 && !pl->seq_parallel) {
			groups_of(b, &x->sh, tg, dg);
			ps->send_s += cost_allreduce_s(s->c, tg, T, ps->send_bytes) / 2;
		}
		r->link_bytes[cluster_link_class(s->c, a->devices[0], b->devices[0])] +=
			2 * pl->microbatches * ps->send_bytes * D;
	}
	for (int sx = 0; sx < x->S; sx++)
		r->link_bytes[LINK_INTRA] += (int64_t)(x->st[sx].tp_bytes * pl->microbatches * D * T);
out:
	free(ckpt);
	free(sorted);
	free(seg);
	free(tg);
	free(dg);
	return st;
}

/* Lists the schedule on one timeline per group: every item starts when
 * its group is free (free_groups: ignored, for the critical path) and
 * what it waits for has arrived.  end[] holds, per stage and micro-batch,
 * the F, B and W ends. */
static int run_order(struct pctx *x, int free_groups, double *end, double *group_end,
		     double *busy)
{
	const int G = x->sh.groups, m = x->m;
	int *next = calloc((size_t)G, sizeof *next), left = 0, st = AP_OK;
	double *gfree = calloc((size_t)G, sizeof *gfree);

	if (!next || !gfree) {
		st = ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
		goto out;
	}
	for (size_t k = 0; k < (size_t)x->S * m * 3; k++)
		end[k] = -1;
	for (int r = 0; r < G; r++) {
		left += x->norder[r];
		busy[r] = 0;
	}
#define END(s, j, pass) end[((size_t)(s) * m + (j)) * 3 + (pass)]
	while (left > 0) {
		int moved = 0;

		for (int r = 0; r < G; r++)
			for (; next[r] < x->norder[r]; next[r]++) {
				const struct sched_item *it = &x->order[r][next[r]];
				const struct pstage *ps = &x->st[it->stage];
				int sx = it->stage, j = it->mb;
				double ready, dur;

				/* a pass ends when what it sends has arrived:
				 * Megatron-LM's sends block */
				if (it->bwd == SCHED_F) {
					ready = sx == 0 ? 0 : END(sx - 1, j, SCHED_F);
					dur = ps->f + (sx < x->S - 1 ? ps->send_s : 0);
				} else if (it->bwd == SCHED_B) {
					ready = sx == x->S - 1 ? END(sx, j, SCHED_F) : END(sx + 1, j, SCHED_B);
					dur = ps->b + (sx > 0 ? x->st[sx - 1].send_s : 0);
				} else {
					ready = END(sx, j, SCHED_B);
					dur = ps->w;
				}
				if (ready < 0)
					break;
				if (free_groups && gfree[r] > ready)
					ready = gfree[r];
				if (x->record && free_groups &&
				    sim_record(x->s->w, it->bwd == SCHED_F ? TASK_FWD
						       : it->bwd == SCHED_B ? TASK_BWD : TASK_WGRAD,
					       x->pl->stages[sx].devices[0], x->first_op[sx], sx, j,
					       ready, dur, 0)) {
					st = ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
					goto out;
				}
				END(sx, j, it->bwd) = ready + dur;
				gfree[r] = ready + dur > gfree[r] ? ready + dur : gfree[r];
				busy[r] += dur;
				left--;
				moved = 1;
			}
		if (!moved) {
			st = ap_err(AP_EFAIL, NULL, 0, "simulator: the schedule's order waits on itself");
			goto out;
		}
	}
#undef END
	for (int r = 0; r < G; r++)
		group_end[r] = gfree[r];
out:
	free(next);
	free(gfree);
	return st;
}

/* Peak activations on a device of group r through its order. */
static int64_t group_act_peak(const struct pctx *x, int r)
{
	int64_t cur = 0, peak = 0;

	for (int k = 0; k < x->norder[r]; k++) {
		const struct sched_item *it = &x->order[r][k];
		const struct pstage *ps = &x->st[it->stage];
		int64_t keep = ps->wkeep < ps->act ? ps->wkeep : ps->act;

		if (it->bwd == SCHED_F) {
			cur = sat_add(cur, ps->act);
		} else if (it->bwd == SCHED_B) {
			int64_t top = sat_add(cur, ps->peak_extra);

			peak = top > peak ? top : peak;
			cur = sat_sub(cur, x->pl->sched == SCHED_ZB_H1 ? ps->act - keep : ps->act);
		} else {
			cur = sat_sub(cur, keep);
		}
		peak = cur > peak ? cur : peak;
	}
	return peak;
}

static int check_shape(struct pctx *x, char *why, size_t len)
{
	const struct plan *pl = x->pl;
	const struct graph *g = x->s->g;
	int *t, bad = -1;

	if (plan_pipe_shape(pl, &x->sh, why, len))
		return -1;
	if (sched_async(pl->sched)) {
		snprintf(why, len, "schedule %s is asynchronous", sched_name(pl->sched));
		return -1;
	}
	if (pl->sched == SCHED_INTERLEAVED && (x->sh.chunks < 2 || pl->microbatches % x->sh.groups)) {
		snprintf(why, len,
			 "interleaved-1f1b needs at least 2 chunks per group and micro-batches a multiple of the %d groups (it has %d chunks, %d micro-batches)",
			 x->sh.groups, x->sh.chunks, pl->microbatches);
		return -1;
	}
	if (pl->sched == SCHED_ZB_H1 && x->sh.chunks != 1) {
		snprintf(why, len, "zb-h1 runs one chunk per group (this plan has %d)", x->sh.chunks);
		return -1;
	}
	t = malloc((size_t)g->nops * sizeof *t);
	if (!t)
		return snprintf(why, len, "out of memory"), -1;
	for (int i = 0; i < g->nops; i++)
		t[i] = plan_op_tensor(pl, i);
	if (tensor_roles(g, t, x->role, &bad, why, len)) {
		free(t);
		return -1;
	}
	free(t);
	return 0;
}

int sim_pipe_run(struct sim *s, const struct plan *pl, const struct sim_opts *opts,
		 struct sim_result *r)
{
	struct sim_work *w = s->w;
	struct pctx x = { .s = s, .pl = pl, .S = pl->nstages, .m = pl->microbatches };
	double *end = NULL, *gend = NULL, *busy = NULL, *cpend = NULL, iter = 0, cp = 0, used = 0;
	int G, st = AP_OK, ndev = w->ndev;
	char why[200];

	x.role = malloc((size_t)s->g->nops * sizeof *x.role);
	if (!x.role)
		return ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
	if (check_shape(&x, why, sizeof why)) {
		free(x.role);
		return ap_err(AP_EINPUT, pl->model, 0,
			      "the simulator predicts tensor parallelism, mixed precision, ZeRO, selective recomputation and the interleaved and zero-bubble schedules for pipelines of device groups (docs/plan-format.md), but %s",
			      why);
	}
	G = x.sh.groups;
	x.mb = pl->batch / ((int64_t)pl->microbatches * x.sh.dp);
	x.record = w->record;
	x.first_op = malloc((size_t)x.S * sizeof *x.first_op);
	if (!x.first_op) {
		free(x.role);
		return ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
	}
	for (int k = 0; k < x.S; k++)
		x.first_op[k] = -1;
	for (int i = s->g->nops - 1; i >= 0; i--)
		x.first_op[plan_stage_index(pl, pl->ops[i].stage)] = i;
	x.st = calloc((size_t)x.S, sizeof *x.st);
	x.order = calloc((size_t)G, sizeof *x.order);
	x.norder = calloc((size_t)G, sizeof *x.norder);
	end = malloc((size_t)x.S * x.m * 3 * sizeof *end);
	gend = malloc((size_t)G * sizeof *gend);
	cpend = malloc((size_t)G * sizeof *cpend);
	busy = malloc((size_t)G * sizeof *busy);
	if (!x.st || !x.order || !x.norder || !end || !gend || !busy || !cpend) {
		st = ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
		goto out;
	}
	memset(&w->tally, 0, sizeof w->tally);
	st = stage_costs(&x, r);
	for (int q = 0; q < G && !st; q++) {
		x.order[q] = malloc((size_t)3 * x.sh.chunks * x.m * sizeof **x.order);
		x.norder[q] = x.order[q] ? sched_group_order(pl->sched, G, x.sh.chunks, x.m, q,
							      x.order[q]) : -1;
		if (x.norder[q] < 0)
			st = ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
	}
	/* the critical path, unless a search asks for the time alone */
	if (!st && !opts->lean)
		st = run_order(&x, 0, end, cpend, busy);
	if (!st)
		st = run_order(&x, 1, end, gend, busy);
	if (st)
		goto out;
	{
		const int T = x.sh.tp, D = x.sh.dp, nall = D * T;
		int *tg = malloc((size_t)T * sizeof *tg), *dg = malloc((size_t)D * sizeof *dg);
		int *all = malloc((size_t)nall * sizeof *all);
		double e = precision_elem_bytes(pl->precision);
		double state = cost_param_state_bytes(pl->precision, opts->optimizer, pl->zero, D);
		int tie_far = 0;

		if (!tg || !dg || !all) {
			free(tg), free(dg), free(all);
			st = ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
			goto out;
		}
		for (int i = 0; i < s->g->nops; i++) {
			int t = s->g->ops[i].a.tie;

			if (s->g->ops[i].kind == OP_LINEAR && t >= 0 &&
			    pl->ops[i].stage % G != pl->ops[t].stage % G)
				tie_far = i + 1;
		}
		memset(w->mem, 0, (size_t)ndev * sizeof *w->mem);
		r->peak_mem_bytes = 0;
		for (int q = 0; q < G; q++) {
			double params = 0, sync, upd, gbytes;
			int64_t act = group_act_peak(&x, q), fixed;

			for (int c = 0; c < x.sh.chunks; c++)
				params += x.st[c * G + q].params;
			groups_of(&pl->stages[q], &x.sh, tg, dg);
			memcpy(all, pl->stages[q].devices, (size_t)nall * sizeof *all);
			qsort(all, (size_t)nall, sizeof *all, int_cmp);
			gbytes = params * e;
			if (pl->zero >= 3) {
				/* per micro-batch: gather before F and B, scatter after B */
				double z = dp_allreduce_s(s->c, all, nall, dg, D, gbytes);

				sync = 0;
				gend[q] += 1.5 * z * x.m;
				busy[q] += 1.5 * z * x.m;
			} else {
				sync = dp_allreduce_s(s->c, all, nall, dg, D, gbytes);
			}
			if (tie_far && (q == 0 || q == G - 1)) {
				int a = pl->stages[0].devices[0], b = pl->stages[x.S - 1].devices[0];
				int pair[2] = { a < b ? a : b, a < b ? b : a };
				const struct op *tied = &s->g->ops[s->g->ops[tie_far - 1].a.tie];

				sync += cost_grad_sync_s(s->c, pair, 2,
							 (int64_t)((double)tied->params / T * e));
			}
			upd = cost_update_s(&s->p->dev, params * BYTES_PER_ELEM /
						  (pl->zero >= 1 ? D : 1), opts->optimizer);
			if (x.record && (sim_record(w, TASK_ALLREDUCE, pl->stages[q].devices[0], -1, q, -1,
						    gend[q], sync, (int64_t)gbytes) ||
					 sim_record(w, TASK_UPDATE, pl->stages[q].devices[0], -1,
						    pl->stages[q].devices[0], -1, gend[q] + sync, upd, 0))) {
				free(tg), free(dg), free(all);
				st = ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
				goto out;
			}
			iter = fmax(iter, gend[q] + sync + upd);
			cp = opts->lean ? NAN : fmax(cp, cpend[q] + sync + upd);
			used += busy[q] + upd;
			r->link_bytes[LINK_INTER] += (int64_t)(2 * gbytes * (D - 1) / (D > 0 ? D : 1) * nall);
			fixed = sat_of_double(params * state);
			for (int k = 0; k < nall; k++) {
				struct sim_mem *mm = &w->mem[pl->stages[q].devices[k]];

				mm->weights = sat_of_double(params * precision_elem_bytes(pl->precision) /
							    (pl->zero >= 3 ? D : 1));
				mm->opt_state = fixed - mm->weights;
				mm->act = act;
				mm->peak = sat_add(fixed, act);
			}
			if (sat_add(fixed, act) > r->peak_mem_bytes) {
				r->peak_mem_bytes = sat_add(fixed, act);
				r->peak_dev = pl->stages[q].devices[0];
			}
		}
		free(tg), free(dg), free(all);
		r->ndev = ndev;
		r->ndev_used = G * nall;
		r->iter_s = r->makespan_s = iter;
		r->critical_path_s = cp;
		r->samples_per_s = iter > 0 ? (double)pl->batch / iter : 0;
		r->bubble = iter > 0 ? 1 - used / (G * iter) : 0;
		r->compute_busy_s = used * nall;
		r->busiest_compute_s = 0;
		for (int q = 0; q < G; q++)
			r->busiest_compute_s = fmax(r->busiest_compute_s, busy[q]);
		r->ntasks = 0;
		for (int q = 0; q < G; q++)
			r->ntasks += (int64_t)x.norder[q] * nall;
		r->mem = w->mem;
		r->mem_bytes = s->c->mem_bytes > 0 ? s->c->mem_bytes : s->p->dev.mem_bytes;
		r->costs = w->tally;
		r->iters = 1;
	}
out:
	for (int q = 0; x.order && q < G; q++)
		free(x.order[q]);
	free(x.order);
	free(x.norder);
	free(x.st);
	free(x.role);
	free(x.first_op);
	free(end);
	free(gend);
	free(cpend);
	free(busy);
	return st;
}
