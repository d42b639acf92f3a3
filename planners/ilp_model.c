/*
 * The ILP planner's cost model (ilp.h): groups of operators, their
 * candidate configurations with compute, synchronisation and memory
 * costs, the resharding cost of every edge for every pair of
 * configurations, dominance pruning, and the objective of an assignment.
 * Every term is the cost model's (cost/cost.h), as the simulator
 * charges it: compute (cost_op()), all-reduces (cost_allreduce_s(), every
 * replica group of an op, those across nodes one after another on the
 * NICs they share), the optimizer step (cost_update_s()), and the
 * resharding of an edge (cost_reshard_s(): what each consumer shard needs
 * of each producer shard moves between their devices, an edge costing its
 * busiest link, forward and again for the gradients backward).
 */
#include "ilp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "sim/sim.h"
#include "model/ops.h"
#include "plan/plan_check.h"
#include "plan/plan_build.h"
#include "cost/cost.h"

#define MAX_SPLIT_DIMS 2

/* Operators folded into their producer: cheap, and keeping its dims. */
static int foldable(const struct graph *g, int i)
{
	const struct op *op = &g->ops[i];
	const struct shape *a, *b;

	if (!op_kind_elementwise(op->kind) && op->kind != OP_BATCHNORM &&
	    op->kind != OP_MAXPOOL && op->kind != OP_AVGPOOL)
		return 0;
	if (op->nin < 1)
		return 0;
	a = &op->out;
	b = &g->ops[op->in[0]].out;
	if (a->rank != b->rank)
		return 0;
	for (int d = 0; d < a->rank; d++)
		if (a->kind[d] != b->kind[d])
			return 0;
	return 1;
}

/* Whether op i may run with these degrees at micro-batch mb. */
static int valid_for(const struct graph *g, int i, const int *deg, int64_t mb)
{
	const struct op *op = &g->ops[i];

	for (int d = 0; d < NDIMS; d++) {
		if (deg[d] == 1)
			continue;
		if (!(op->split_mask & (1u << d)) || shape_dim(&op->out, (enum dim_kind)d) < 0 ||
		    shape_extent(&op->out, (enum dim_kind)d, mb) % deg[d])
			return 0;
	}
	return 1;
}

/* The gradient all-reduces of one op's parameter shards of `bytes` under
 * degrees deg on the stage's ndev devices: its dc replica groups, the
 * shards with the same c index (every dc-th inner block, as sim_comm.c
 * groups them), each by the simulator's formulas (cost_grad_sync_s()).
 * Groups inside one node run side by side on their own ring links; the
 * rings of groups that span nodes all pass the same NICs, where they run
 * one after another, as the simulator schedules them: the busiest NIC's
 * rings plus the intra-node phases of one group.  devs is scratch for
 * ndev devices. */
static double op_allreduce_s(const struct cluster *cl, const int *deg, int ndev,
			     int64_t bytes, int *devs)
{
	int dc = deg[DIM_C], inner = deg[DIM_H] * deg[DIM_W] * deg[DIM_L], pn = cl->per_node;
	double nic[64] = { 0 }, side = 0, intra = 0, busiest = 0;

	for (int ci = 0; ci < dc; ci++) {
		int n = 0, nn = 0, heads[64];
		double t, rings;

		for (int s = 0; s < ndev; s++)
			if ((s / inner) % dc == ci)
				devs[n++] = s;
		t = cost_grad_sync_s(cl, devs, n, bytes);
		/* one member per node: the ring across the nodes alone */
		for (int k = 0; k < n && nn < 64; k++)
			if (k == 0 || devs[k] / pn != devs[k - 1] / pn)
				heads[nn++] = devs[k];
		if (nn < 2 || devs[n - 1] / pn >= 64) {
			side = fmax(side, t);
			continue;
		}
		rings = cost_grad_sync_s(cl, heads, nn, bytes);
		for (int k = 0; k < nn; k++) {
			nic[heads[k] / pn] += rings;
			busiest = fmax(busiest, nic[heads[k] / pn]);
		}
		intra = fmax(intra, t - rings);
	}
	return fmax(side, busiest + intra);
}

/* --- groups and candidates ---------------------------------------------- */

static int add_cfg(struct ilp_inst *x, struct ilp_group *gr, const int *deg)
{
	const struct planner_input *input = x->input;
	const struct graph *g = input->g;
	int64_t mb = g->batch / x->m;
	struct ilp_cfg *cf;
	int devs[4096];

	for (int k = 0; k < gr->nmem; k++)
		if (!valid_for(g, gr->mem[k], deg, mb))
			return AP_OK;
	cf = realloc(gr->cfg, (size_t)(gr->ncfg + 1) * sizeof *cf);
	if (!cf)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	gr->cfg = cf;
	cf = &gr->cfg[gr->ncfg];
	memset(cf, 0, sizeof *cf);
	memcpy(cf->degree, deg, sizeof cf->degree);
	cf->ndev = 1;
	for (int d = 0; d < NDIMS; d++)
		cf->ndev *= deg[d];
	cf->alias = gr->ncfg;
	for (int k = 0; k < gr->nmem; k++) {
		int i = gr->mem[k], r = cf->ndev / deg[DIM_C];
		const struct op *op = &g->ops[i];
		struct op_cost oc;
		int64_t pbytes = cost_param_bytes(op, deg[DIM_C]);
		int st = cost_op(input->p, g, i, deg, x->m, &oc);

		if (st)
			return st;
		cf->fwd_s += oc.fwd_us * 1e-6;
		cf->bwd_s += oc.bwd_us * 1e-6;
		cf->ws_bytes = oc.workspace_bytes > cf->ws_bytes ? oc.workspace_bytes : cf->ws_bytes;
		cf->param_bytes += pbytes;
		cf->act_bytes += op->out_bytes / g->batch * mb / cf->ndev;
		/* inputs from outside the group are received and kept too */
		for (int j = 0; j < op->nin; j++)
			if (x->group_of[op->in[j]] != x->group_of[gr->lead])
				cf->act_bytes += cost_need_bytes(g, i, j, deg, mb);
		if (pbytes > 0 && r > 1)
			cf->ar_s += op_allreduce_s(input->c, deg, cf->ndev, pbytes, devs);
	}
	/* SGD with momentum, as the simulator's default */
	cf->upd_s = cost_update_s(&input->p->dev, (double)cf->param_bytes, OPTIMIZER_SGD);
	gr->ncfg++;
	return AP_OK;
}

/* Every degree vector with product `left` over dims from d on, at most
 * `dims` of them split. */
static int enum_cfgs(struct ilp_inst *x, struct ilp_group *gr, unsigned mask, int *deg,
		     int d, int left, int dims)
{
	int st = AP_OK;

	if (left == 1)
		return add_cfg(x, gr, deg);
	if (d == NDIMS || dims == 0)
		return AP_OK;
	for (int f = 2; f <= left && !st; f++) {
		if (left % f || !(mask & (1u << d)))
			continue;
		deg[d] = f;
		st = enum_cfgs(x, gr, mask, deg, d + 1, left / f, dims - 1);
		deg[d] = 1;
	}
	return st ? st : enum_cfgs(x, gr, mask, deg, d + 1, left, dims);
}

static int make_groups(struct ilp_inst *x)
{
	const struct graph *g = x->input->g;
	int n = g->nops;

	x->group_of = malloc((size_t)n * sizeof *x->group_of);
	x->grp = calloc((size_t)n, sizeof *x->grp);
	if (!x->group_of || !x->grp)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int i = 0; i < n; i++) {
		struct ilp_group *gr;

		if (foldable(g, i)) {
			x->group_of[i] = x->group_of[g->ops[i].in[0]];
		} else {
			x->group_of[i] = x->ngroups;
			gr = &x->grp[x->ngroups++];
			gr->lead = i;
			gr->tie = -1;
		}
		gr = &x->grp[x->group_of[i]];
		if (!gr->mem && !(gr->mem = calloc((size_t)n, sizeof *gr->mem)))
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		gr->mem[gr->nmem++] = i;
	}
	return AP_OK;
}

/* Ties each group of a repeat block's later iterations to the group at
 * the same position in its first iteration, when both have the same
 * members and candidates. */
static void tie_repeats(struct ilp_inst *x)
{
	const struct graph *g = x->input->g;

	for (int k = 0; k < x->ngroups; k++) {
		struct ilp_group *gr = &x->grp[k], *g0;
		const struct op *op = &g->ops[gr->lead];
		int first = -1, first0 = -1, j, same;

		if (op->block < 0 || op->iter <= 0)
			continue;
		for (int i = 0; i < g->nops && (first < 0 || first0 < 0); i++) {
			if (g->ops[i].block == op->block && g->ops[i].iter == op->iter && first < 0)
				first = i;
			if (g->ops[i].block == op->block && g->ops[i].iter == 0 && first0 < 0)
				first0 = i;
		}
		j = first0 + gr->lead - first;
		if (first0 < 0 || j < 0 || j >= gr->lead || g->ops[j].block != op->block ||
		    g->ops[j].iter != 0 || x->grp[x->group_of[j]].lead != j)
			continue;
		g0 = &x->grp[x->group_of[j]];
		same = g0->nmem == gr->nmem && g0->ncfg == gr->ncfg;
		for (int c = 0; c < gr->ncfg && same; c++)
			same = !memcmp(g0->cfg[c].degree, gr->cfg[c].degree, sizeof gr->cfg[c].degree);
		if (same)
			gr->tie = g0->tie >= 0 ? g0->tie : x->group_of[j];
	}
}

static struct ilp_edge *find_edge(struct ilp_inst *x, int u, int v)
{
	for (int e = 0; e < x->nedges; e++)
		if (x->edge[e].u == u && x->edge[e].v == v)
			return &x->edge[e];
	return NULL;
}

/* Every edge between groups, the costs of every op edge it holds summed:
 * inside a stage, and across stages (the worst pair of adjacent stages). */
static int make_edges(struct ilp_inst *x)
{
	const struct graph *g = x->input->g;
	const struct cluster *cl = x->input->c;
	int64_t mb = g->batch / x->m;
	double *busy = calloc((size_t)cost_link_resources(cl), sizeof *busy);

	x->edge = calloc((size_t)g->nops * 4 + 1, sizeof *x->edge);
	if (!busy || !x->edge) {
		free(busy);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int c = 0; c < g->nops; c++)
		for (int k = 0; k < g->ops[c].nin; k++) {
			int p = g->ops[c].in[k], u = x->group_of[p], v = x->group_of[c];
			struct ilp_edge *e;
			const struct ilp_group *gu = &x->grp[u], *gv = &x->grp[v];

			if (u == v)
				continue;
			e = find_edge(x, u, v);
			if (!e) {
				if (x->nedges >= g->nops * 4)
					continue; /* cannot happen: ops have few inputs */
				e = &x->edge[x->nedges++];
				e->u = u;
				e->v = v;
				e->same_s = calloc((size_t)gu->ncfg * gv->ncfg, sizeof *e->same_s);
				e->cross_s = calloc((size_t)gu->ncfg * gv->ncfg, sizeof *e->cross_s);
				if (!e->same_s || !e->cross_s) {
					free(busy);
					return ap_err(AP_EFAIL, NULL, 0, "out of memory");
				}
			}
			for (int a = 0; a < gu->ncfg; a++)
				for (int b = 0; b < gv->ncfg; b++) {
					const int *da = gu->cfg[a].degree, *db = gv->cfg[b].degree;
					double same = cost_reshard_s(g, cl, p, da, 0, c, k, db, 0, mb, busy);
					double cross = 0;

					for (int s = 0; s + 1 < x->K; s++)
						cross = fmax(cross, cost_reshard_s(g, cl, p, da, s * x->per, c,
								   k, db, (s + 1) * x->per, mb, busy));
					e->same_s[a * gv->ncfg + b] += same;
					/* crossing never costs less than staying */
					e->cross_s[a * gv->ncfg + b] += fmax(cross, same);
				}
		}
	free(busy);
	return AP_OK;
}

/* Whether configuration a of group k is at least as good as b in every
 * term of the model and every edge against every live neighbour. */
static int dominates(const struct ilp_inst *x, int k, int a, int b)
{
	const struct ilp_cfg *ca = &x->grp[k].cfg[a], *cb = &x->grp[k].cfg[b];

	/* a tie of weights may need b's device count (ilp.h) */
	if (x->grp[k].wtie && ca->ndev != cb->ndev)
		return 0;
	if (ca->fwd_s > cb->fwd_s || ca->bwd_s > cb->bwd_s || ca->ar_s > cb->ar_s ||
	    ca->upd_s > cb->upd_s || ca->param_bytes > cb->param_bytes ||
	    ca->act_bytes > cb->act_bytes || ca->ws_bytes > cb->ws_bytes)
		return 0;
	for (int e = 0; e < x->nedges; e++) {
		const struct ilp_edge *ed = &x->edge[e];
		int other = ed->u == k ? ed->v : ed->v == k ? ed->u : -1;

		if (other < 0)
			continue;
		for (int o = 0; o < x->grp[other].ncfg; o++) {
			int no = x->grp[other].ncfg, nk = x->grp[k].ncfg;
			int ia = ed->u == k ? a * no + o : o * nk + a;
			int ib = ed->u == k ? b * no + o : o * nk + b;

			if (x->grp[other].cfg[o].alias != o)
				continue;
			if (ed->same_s[ia] > ed->same_s[ib] || ed->cross_s[ia] > ed->cross_s[ib])
				return 0;
		}
	}
	return 1;
}

/* The same for a group and every group tied to it, which choose alike. */
static int dominates_all(const struct ilp_inst *x, int k, int a, int b)
{
	if (!dominates(x, k, a, b))
		return 0;
	for (int j = k + 1; j < x->ngroups; j++)
		if (x->grp[j].tie == k && !dominates(x, j, a, b))
			return 0;
	return 1;
}

/* Drops dominated configurations until none is left; ties keep the
 * first.  A tied group keeps its leader's choice. */
static void prune(struct ilp_inst *x)
{
	for (int changed = 1; changed;) {
		changed = 0;
		for (int k = 0; k < x->ngroups; k++) {
			struct ilp_group *gr = &x->grp[k];

			if (gr->tie >= 0)
				continue;
			for (int b = 0; b < gr->ncfg; b++) {
				if (gr->cfg[b].alias != b)
					continue;
				for (int a = 0; a < gr->ncfg; a++) {
					if (a == b || gr->cfg[a].alias != a ||
					    !dominates_all(x, k, a, b))
						continue;
					if (a > b && dominates_all(x, k, b, a))
						continue; /* equal: keep the first */
					gr->cfg[b].alias = a;
					x->ndropped++;
					changed = 1;
					break;
				}
			}
		}
		for (int k = 0; k < x->ngroups; k++) {
			struct ilp_group *gr = &x->grp[k];

			if (gr->tie >= 0)
				for (int c = 0; c < gr->ncfg; c++)
					gr->cfg[c].alias = x->grp[gr->tie].cfg[c].alias;
		}
	}
}

int ilp_cfg_live(const struct ilp_group *gr, int c)
{
	while (gr->cfg[c].alias != c)
		c = gr->cfg[c].alias;
	return c;
}

int ilp_inst_build(struct ilp_inst *x, const struct planner_input *input, int K, int m,
		   int collapse, int quiet)
{
	const struct graph *g = input->g;
	int ndev = cluster_ndevices(input->c), st;

	memset(x, 0, sizeof *x);
	x->input = input;
	x->K = K;
	x->m = m;
	x->per = K > 0 ? ndev / K : 0;
	x->mem_cap = input->c->mem_bytes > 0 ? input->c->mem_bytes : input->p->dev.mem_bytes;
	if (K < 1 || ndev % K || m < 1 || g->batch % m || x->per > ILP_MAX_LAYOUT ||
	    K > ILP_MAX_LAYOUT)
		return quiet ? AP_EINPUT : ap_err(AP_EINPUT, "ilp", 0, "%d stages of %d "
						 "micro-batches do not fit %d devices and a batch "
						 "of %lld", K, m, ndev, (long long)g->batch);
	st = make_groups(x);
	for (int i = 0; i < g->nops && !st; i++)
		if (g->ops[i].a.tie >= 0)
			x->grp[x->group_of[i]].wtie = x->grp[x->group_of[g->ops[i].a.tie]].wtie = 1;
	if (!st && x->ngroups < K)
		st = quiet ? AP_EINPUT : ap_err(AP_EINPUT, "ilp", 0, "'%s' has %d groups of "
						"operators, fewer than %d stages", g->name,
						x->ngroups, K);
	for (int k = 0; k < x->ngroups && !st; k++) {
		struct ilp_group *gr = &x->grp[k];
		unsigned mask = ~0u;
		int deg[NDIMS] = { 1, 1, 1, 1, 1 };

		for (int j = 0; j < gr->nmem; j++)
			mask &= g->ops[gr->mem[j]].split_mask;
		st = add_cfg(x, gr, deg);
		if (!st && x->per > 1)
			st = enum_cfgs(x, gr, mask, deg, 0, x->per, MAX_SPLIT_DIMS);
	}
	if (!st && collapse)
		tie_repeats(x);
	if (!st)
		st = make_edges(x);
	if (!st)
		prune(x);
	if (st)
		ilp_inst_release(x);
	return st;
}

void ilp_inst_release(struct ilp_inst *x)
{
	for (int k = 0; x->grp && k < x->ngroups; k++) {
		free(x->grp[k].mem);
		free(x->grp[k].cfg);
	}
	for (int e = 0; x->edge && e < x->nedges; e++) {
		free(x->edge[e].same_s);
		free(x->edge[e].cross_s);
	}
	free(x->grp);
	free(x->edge);
	free(x->group_of);
	memset(x, 0, sizeof *x);
}

/* --- one assignment ------------------------------------------------------- */

double ilp_inst_eval(const struct ilp_inst *x, const int *stage, const int *cfg)
{
	double sum = 0, t[ILP_MAX_LAYOUT] = { 0 }, upd[ILP_MAX_LAYOUT] = { 0 }, tmax = 0, umax = 0,
	       S = 0, ar = 0, bwd = 0;
	int64_t mem[ILP_MAX_LAYOUT] = { 0 }, ws[ILP_MAX_LAYOUT] = { 0 };
	int used[ILP_MAX_LAYOUT] = { 0 };

	for (int k = 0; k < x->ngroups; k++) {
		const struct ilp_group *gr = &x->grp[k];
		const struct ilp_cfg *cf;
		int s = stage[k], inflight;

		if (s < 0 || s >= x->K || cfg[k] < 0 || cfg[k] >= gr->ncfg ||
		    gr->cfg[cfg[k]].alias != cfg[k] || (gr->tie >= 0 && cfg[k] != cfg[gr->tie]))
			return INFINITY;
		cf = &gr->cfg[cfg[k]];
		inflight = x->K > 1 ? (x->K - s < x->m ? x->K - s : x->m) : 1;
		used[s] = 1;
		sum += cf->fwd_s + cf->bwd_s;
		t[s] += cf->fwd_s + cf->bwd_s;
		upd[s] += cf->upd_s;
		mem[s] += cost_state_factor(OPTIMIZER_SGD) * cf->param_bytes + inflight * cf->act_bytes;
		ws[s] = cf->ws_bytes > ws[s] ? cf->ws_bytes : ws[s];
		/* groups in graph order: the backward runs them in reverse */
		ar += cf->ar_s;
		if (cf->ar_s > 0)
			S = fmax(S, ar - bwd);
		bwd += cf->bwd_s;
	}
	/* tied weights: the same stage and as many of its first devices */
	for (int i = 0; i < x->input->g->nops; i++) {
		int j = x->input->g->ops[i].a.tie, u = x->group_of[i], v;

		if (j < 0)
			continue;
		v = x->group_of[j];
		if (stage[u] != stage[v] || x->grp[u].cfg[cfg[u]].ndev != x->grp[v].cfg[cfg[v]].ndev)
			return INFINITY;
	}
	for (int e = 0; e < x->nedges; e++) {
		const struct ilp_edge *ed = &x->edge[e];
		int i = cfg[ed->u] * x->grp[ed->v].ncfg + cfg[ed->v];

		if (stage[ed->u] > stage[ed->v])
			return INFINITY;
		if (stage[ed->u] == stage[ed->v]) {
			sum += ed->same_s[i];
			t[stage[ed->u]] += ed->same_s[i];
		} else {
			sum += ed->cross_s[i];
		}
	}
	for (int s = 0; s < x->K; s++) {
		if (!used[s] || mem[s] + ws[s] > x->mem_cap)
			return INFINITY;
		tmax = fmax(tmax, t[s]);
		umax = fmax(umax, upd[s]);
	}
	return sum + (x->m - 1) * tmax + S + umax;
}

int ilp_inst_plan(const struct ilp_inst *x, const int *stage, const int *cfg,
		  struct plan *out)
{
	int rc = plan_alloc(out, x->input->g, x->K);

	plan_schedule(out, x->K > 1 ? SCHED_1F1B : SCHED_GPIPE, x->m);
	if (!rc)
		rc = plan_chain(out);
	for (int s = 0; s < x->K && !rc; s++)
		rc = plan_stage_range(out, s, s * x->per, x->per, 0);
	for (int k = 0; k < x->ngroups && !rc; k++) {
		const struct ilp_group *gr = &x->grp[k];

		for (int j = 0; j < gr->nmem && !rc; j++)
			rc = plan_place_range(out, gr->mem[j], stage[k], gr->cfg[cfg[k]].degree,
					stage[k] * x->per);
	}
	return rc;
}

int ilp_inst_from_plan(const struct ilp_inst *x, const struct plan *pl, int *stage, int *cfg)
{
	if (pl->nstages != x->K || pl->microbatches != x->m)
		return -1;
	for (int k = 0; k < x->ngroups; k++) {
		const struct ilp_group *gr = &x->grp[k];
		const struct plan_op *po = &pl->ops[gr->lead];
		int s = po->stage, c;

		if (s < 0 || s >= x->K)
			return -1;
		for (int j = 0; j < po->ndev; j++)
			if (po->devices[j] != s * x->per + j)
				return -1;
		for (int j = 1; j < gr->nmem; j++)
			if (memcmp(pl->ops[gr->mem[j]].degree, po->degree, sizeof po->degree) ||
			    pl->ops[gr->mem[j]].stage != s)
				return -1;
		for (c = 0; c < gr->ncfg; c++)
			if (!memcmp(gr->cfg[c].degree, po->degree, sizeof po->degree))
				break;
		if (c == gr->ncfg)
			return -1;
		stage[k] = s;
		cfg[k] = ilp_cfg_live(gr, c);
	}
	for (int k = 0; k < x->ngroups; k++)
		if (x->grp[k].tie >= 0 && cfg[k] != cfg[x->grp[k].tie])
			return -1;
	return 0;
}
