/*
 * Gradient synchronisation in the simulator: the replica groups of every
 * op's parameter shards and the tasks of their all-reduces, built once per
 * run (sim_layout.c calls sim_layout_groups()), and the resources a
 * transfer between two devices occupies.
 *
 * Parameters are indexed by the output channel (SOAP's parameter dim), so
 * an op's c degree shards them and its other degrees replicate them: the
 * r shards with the same c index, in every round-robin replica of the
 * stage, form a replica group that all-reduces B bytes of gradients, in
 * the phases of the cluster's algorithm (cost_sync_phases(), cost/cost.h;
 * docs/simulator.md, "Gradient synchronisation").  By default, inside one
 * node that is a ring: a reduce-scatter and an all-gather of r - 1 steps
 * each, one task on the group's ring links.  When the group spans N > 1
 * nodes with at most q members on one node, it is hierarchical (as NCCL
 * and Horovod do it), three tasks: a reduce-scatter inside every node, an
 * all-reduce of each node's B/q slices across the nodes, an all-gather
 * inside every node, the node with the most members bounding the
 * intra-node phases; across nodes the q slice rings of a node all pass
 * its one NIC, which therefore sends and receives 2 (N - 1) / N x B
 * whatever q is.  Parameter servers (ps, central) keep that shape with
 * their own levels; a flat ring is one task on the ring links and the
 * NICs.
 */
#include "sim/sim_comm.h"

#include <stdlib.h>

#include "util/err.h"
#include "util/intmath.h"

/* The directed link a->b inside a node, a resource from the first
 * transfer that uses it on: resources of every pair of a node would grow
 * as the square of its devices, a few thousand of them as the cluster of
 * Piper's inputs has.  Its free and busy times start at 0, what a link
 * no task used has; the checkpoints of earlier runs take it in with
 * that value (sim_ckpt_fit()). */
static int link_res(struct sim_work *w, int a, int b, int *res)
{
	int *id, st = sim_map_at(&w->links, (int64_t)a * w->ndev + b, &id);

	if (st || *id >= 0) {
		*res = st ? -1 : *id;
		return st;
	}
	if (RESERVE(w, res_free, w->nres + 1) || RESERVE(w, res_busy, w->nres + 1) ||
	    RESERVE(w, link_ends, 2 * ((size_t)w->nres - w->res_link + 1)))
		return AP_EFAIL;
	w->res_free[w->nres] = w->res_busy[w->nres] = 0;
	w->link_ends[2 * (w->nres - w->res_link)] = a;
	w->link_ends[2 * (w->nres - w->res_link) + 1] = b;
	*id = *res = w->nres++;
	return AP_OK;
}

void sim_links_reset(struct sim_work *w)
{
	sim_map_clear(&w->links);
	w->nres = w->res_link;
}

/* The resources a transfer from device a to device b occupies: the
 * directed link inside a node, or a's NIC sending and b's receiving. */
int sim_link_res(struct sim *s, int a, int b, int res[2])
{
	const struct cluster *c = s->c;
	int na = a / c->per_node, nb = b / c->per_node;

	res[1] = -1;
	if (na == nb)
		return link_res(s->w, a, b, &res[0]);
	res[0] = s->w->res_nic + 2 * na;
	res[1] = s->w->res_nic + 2 * nb + 1;
	return AP_OK;
}

static int add_coll(struct sim_work *w, enum sim_task_kind kind, double dur_s,
		    int64_t bytes, enum link_class cls)
{
	struct sim_coll *x;

	if (RESERVE(w, coll, w->ncoll + 1))
		return AP_EFAIL;
	x = &w->coll[w->ncoll++];
	x->kind = kind;
	x->dur_s = dur_s;
	x->bytes = bytes;
	x->cls = cls;
	x->xbytes = 0;
	x->res_ofs = w->ncoll_res;
	x->nres = 0;
	x->waits = x->frees = 1;
	return AP_OK;
}

static int add_coll_res(struct sim_work *w, int res)
{
	if ((size_t)w->ncoll_res >= w->cap_coll_res &&
	    RESERVE(w, coll_res, w->ncoll_res + 1))
		return AP_EFAIL;
	w->coll_res[w->ncoll_res++] = res;
	w->coll[w->ncoll - 1].nres++;
	return AP_OK;
}

/* The directed ring links inside every node that holds two or more of the
 * n sorted devices dev[] (consecutive runs of one node). */
static int add_rings(struct sim *s, const int *dev, int n)
{
	int pn = s->c->per_node, st = AP_OK;

	for (int a = 0, b; a < n && !st; a = b) {
		int res[2];

		for (b = a + 1; b < n && dev[b] / pn == dev[a] / pn; b++)
			;
		for (int t = a; t < b && b - a > 1 && !st; t++) {
			st = sim_link_res(s, dev[t], dev[t + 1 < b ? t + 1 : a], res);
			if (!st)
				st = add_coll_res(s->w, res[0]);
		}
	}
	return st;
}

/* A reduce-scatter or all-gather inside every node of the group (the
 * push to or the pull from parameter servers) of dur_s. */
static int intra_phase(struct sim *s, enum sim_task_kind kind, const int *dev, int r, double dur_s,
		       int64_t link_bytes)
{
	int st = add_coll(s->w, kind, dur_s, link_bytes, LINK_INTRA);

	return st ? st : add_rings(s, dev, r);
}

/* Each NIC of the nodes of the group, sending and receiving. */
static int add_nics(struct sim *s, const int *dev, int r)
{
	int pn = s->c->per_node, st = AP_OK;

	for (int a = 0; a < r && !st; a++)
		if (a == 0 || dev[a] / pn != dev[a - 1] / pn) {
			st = add_coll_res(s->w, s->w->res_nic + 2 * (dev[a] / pn));
			if (!st)
				st = add_coll_res(s->w, s->w->res_nic + 2 * (dev[a] / pn) + 1);
		}
	return st;
}

/* The all-reduce tasks of one group of r devices dev[] (sorted) moving
 * bytes each: the phases of the cluster's algorithm (cost_sync_phases(),
 * the formulas at the top of this file), the bytes each moves over links
 * by the same formulas. */
static int plan_allreduce(struct sim *s, const int *dev, int r, int64_t bytes)
{
	const struct cluster *c = s->c;
	struct sim_work *w = s->w;
	enum grad_allreduce a = c->allreduce;
	struct sync_phases ph;
	double b = (double)bytes;
	int64_t intra_bytes;
	int nodes, qmax, st;

	cost_spread(c, dev, r, bytes, &nodes, &qmax, &intra_bytes);
	cost_sync_phases(c, r, nodes, qmax, b, 1, &ph);
	switch (ph.shape) {
	case SHAPE_INTRA:
		st = add_coll(w, TASK_ALLREDUCE, ph.whole_s, (int64_t)(cost_level_bytes(a, r) * b),
			      LINK_INTRA);
		return st ? st : add_rings(s, dev, r);
	case SHAPE_FLAT:
		/* of its r hops, one a node leaves through the NIC */
		st = add_coll(w, TASK_ALLREDUCE, ph.whole_s,
			      (int64_t)(cost_level_bytes(a, r) * (r - nodes) / r * b), LINK_INTRA);
		if (!st) {
			w->coll[w->ncoll - 1].xbytes =
				(int64_t)(cost_level_bytes(a, r) * nodes / r * b);
			st = add_rings(s, dev, r);
		}
		return st ? st : add_nics(s, dev, r);
	case SHAPE_INTER:
		st = add_coll(w, TASK_ALLREDUCE, ph.whole_s, (int64_t)(cost_level_bytes(a, nodes) * b),
			      LINK_INTER);
		return st ? st : add_nics(s, dev, r);
	case SHAPE_HIER:
		break;
	}
	/* a node of q members moves half its level's bytes in each half,
	 * (q - 1) x bytes for a ring's (intra_bytes sums those); the levels'
	 * bytes grow as q - 1 for every algorithm */
	intra_bytes = (int64_t)((double)intra_bytes * cost_level_bytes(a, qmax) /
				(2.0 * (qmax - 1)));
	st = intra_phase(s, TASK_REDUCE_SCATTER, dev, r, ph.half_s, intra_bytes);
	if (st)
		return st;
	w->coll[w->ncoll - 1].frees = 0; /* the all-gather does (sim_coll) */
	st = add_coll(w, TASK_ALLREDUCE_INTER, ph.inter_s, (int64_t)(cost_level_bytes(a, nodes) * b),
		      LINK_INTER);
	if (!st)
		st = add_nics(s, dev, r);
	if (!st)
		st = intra_phase(s, TASK_ALL_GATHER, dev, r, ph.half_s, intra_bytes);
	if (!st)
		w->coll[w->ncoll - 1].waits = 0;
	return st;
}

int sim_layout_op_groups(struct sim *s, const struct plan *pl, int i)
{
	struct sim_work *w = s->w;
	const struct plan_op *po = &pl->ops[i];
	/* the shards of every round-robin replica of the stage */
	int nd = po->ndev, nsh = nd * w->op_r[i];
	int dc = po->degree[DIM_C], r = nsh / dc;
	int inner = po->degree[DIM_H] * po->degree[DIM_W] * po->degree[DIM_L];
	int base = w->shard_base[i], st = AP_OK;

	w->op_grp_ofs[i] = w->ngrp;
	w->op_grp_end[i] = w->ngrp;
	if (w->shard_params[base] == 0)
		return AP_OK;
	if (RESERVE(w, grp, w->ngrp + dc) ||
	    RESERVE(w, grp_mem, w->ngrp_mem + nsh) || RESERVE(w, scratch, r))
		return AP_EFAIL;
	for (int ci = 0; ci < dc && !st; ci++) {
		struct sim_group *gr = &w->grp[w->ngrp++];

		gr->op = i;
		gr->cidx = ci;
		gr->mem_ofs = w->ngrp_mem;
		gr->nmem = 0;
		for (int g0 = 0; g0 < nsh; g0 += nd)
			for (int k = 0; k < nd; k++)
				if ((k / inner) % dc == ci) {
					w->scratch[gr->nmem++] = w->shard_dev[base + g0 + k];
					w->grp_mem[w->ngrp_mem++] = base + g0 + k;
				}
		gr->coll_ofs = w->ncoll;
		if (r > 1) {
			int sorted = 1;

			/* plans list devices in order more often than not */
			for (int k = 1; k < r && sorted; k++)
				sorted = w->scratch[k - 1] < w->scratch[k];
			if (!sorted)
				qsort(w->scratch, (size_t)r, sizeof(int), int_cmp);
			st = plan_allreduce(s, w->scratch, r, w->shard_params[base]);
		}
		gr->ncoll = w->ncoll - gr->coll_ofs;
	}
	w->op_grp_end[i] = w->ngrp;
	return st;
}

int sim_layout_groups(struct sim *s, const struct plan *pl)
{
	const struct graph *g = s->g;
	struct sim_work *w = s->w;
	int st = AP_OK;

	w->ngrp = w->ngrp_mem = w->ncoll = w->ncoll_res = 0;
	if (RESERVE(w, op_grp_ofs, g->nops + 1) || RESERVE(w, op_grp_end, g->nops))
		return AP_EFAIL;
	for (int i = 0; i < g->nops && !st; i++)
		st = sim_layout_op_groups(s, pl, i);
	w->op_grp_ofs[g->nops] = w->ngrp;
	return st;
}
