/*
 * piper: Piper's planner (Tarnawski et al., "Piper: Multidimensional
 * Planner for DNN Parallelization", NeurIPS 2021): a dynamic program over
 * the upsets of the layer DAG that cuts it into a sequence of convex
 * stages, each with a tensor-parallel degree t, a data-parallel degree d
 * and a configuration per layer, minimising the time per sample of the
 * slowest stage under each device's memory (core/piper_dp.c; the
 * objective is stated in core/piper_dp.h and docs/piper.md).
 *
 * The instance.  A model read from a Piper input keeps its instance
 * (graph.piper), whose configurations are used as given; the machine is
 * the cluster's (`-c piper` is the input's own).  Any other model is made
 * into one:
 *  - a node per layer (op_layers(): a repeat iteration, or a run of
 *    operators in series of at most 1/grain of the model's time), an
 *    edge per layer it feeds, carrying the producer's output bytes of
 *    one micro-batch (the batch runs as N micro-batches: solve_best());
 *  - degree t for every t up to `max-tp` that divides the channels of
 *    every operator of the layer that may split them (SOAP's c, our
 *    tensor parallelism), two configurations each.  "vanilla": time, the
 *    simulator's forward plus backward of the shards for one micro-batch
 *    (cost_op()), plus, for an input a c-split shard needs whole, its
 *    all-gather forward and reduce-scatter backward over the link inside
 *    a node; parameter bytes of the shards; memory a = their output
 *    bytes of one micro-batch (held for the backward, y of them in
 *    flight), b = 3 x their parameter bytes (weights, gradients,
 *    momentum).  "activation recomp", as the simulator charges it: the
 *    forward once more; a = the bytes the layer receives, b = vanilla's
 *    b + a (one micro-batch's outputs live again).  No tensor-parallel
 *    bytes on edges between stages;
 *  - the bandwidth is the cluster's slowest link (the NICs when it has
 *    several nodes), memory its devices'.
 *
 * The plan: one stage per Piper stage, in order, on the next t x d
 * devices, every operator split t ways along c (tensor parallelism) and
 * d ways along n (data parallelism: each micro-batch shared by the d
 * groups), or, where the micro-batch or an operator does not split d
 * ways, d round-robin replicas (the plan's stage `replicas`) of t
 * devices each, which take the micro-batches in turn; PipeDream-Flush
 * (`1f1b`, a synchronous 1F1B whose in-flight micro-batches are Piper's
 * y) over N micro-batches; the operators of a layer whose configuration
 * is "activation recomp" recompute (plan.h).  planner_est_ms is N times
 * the TPS.
 *
 * Tied weights.  Layers whose operators tie their weights to one
 * another's (`tie=`, models/FORMAT.md: GPT-2's output layer and token
 * embedding) hold one tensor, which must sit on the same devices
 * (plan_validate()).  A stage runs all its layers on its own devices,
 * every operator alike, its round-robin replicas included, so the DP
 * (piper_solve_tied()) makes only stages that hold both layers or
 * neither: it visits only the upsets that hold both or neither.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/err.h"
#include "algo/piper_dp.h"
#include "algo/ties.h"
#include "planner.h"
#include "sim/sim.h"
#include "model/ops.h"
#include "plan/plan_check.h"
#include "plan/plan_build.h"
#include "cost/cost.h"

/* The micro-batches of a model's batch: the option, or the smallest
 * divisor of the batch at least nd. */
static int microbatches(const struct planner_input *input, int nd)
{
	int64_t b = input->g->batch, m = planner_int(input, "microbatches");

	if (m > 0)
		return b % m == 0 ? (int)m : -1;
	for (int64_t d = nd; d <= b; d++)
		if (b % d == 0)
			return (int)d;
	return (int)b;
}

static double slowest_bw(const struct cluster *c)
{
	return c->nodes > 1 && c->inter.bw_bytes_per_s < c->intra.bw_bytes_per_s
		       ? c->inter.bw_bytes_per_s : c->intra.bw_bytes_per_s;
}

static int find_root(int *up, int x)
{
	while (up[x] != x)
		x = up[x] = up[up[x]];
	return x;
}

/* The layers of a model, gid[op] (dense ids, in order of their first
 * operator).  The operators of one repeat iteration are one layer (a
 * transformer or residual block, as Piper's inputs have them).  Two
 * layers in series (the first's only successor has it as its only
 * predecessor) are merged, lightest pair first, while the merged layer
 * costs at most cap seconds (forward and backward of one micro-batch) or
 * one of the two costs nothing; two blocks are never merged.  A chain of
 * light operators thus becomes a few layers of about cap each, not one:
 * the stages can still cut it, while a long branch no longer multiplies
 * the upsets.  Both rules keep every layer convex, so the layer graph
 * stays a DAG. */
static int layers(const struct graph *g, const double *cost, double cap, int *gid, int *ng)
{
	int n = g->nops, changed = 1;
	int *up = malloc((size_t)n * sizeof *up), *succ = malloc((size_t)n * sizeof *succ);
	int *pred = malloc((size_t)n * sizeof *pred);
	char *lay = malloc((size_t)n + 1); /* per root: it holds a block's iteration */
	double *w = malloc(((size_t)n + 1) * sizeof *w); /* per root: its cost */

	if (!up || !succ || !pred || !lay || !w) {
		free(up);
		free(succ);
		free(pred);
		free(lay);
		free(w);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		lay[i] = g->ops[i].block >= 0;
		w[i] = 0;
	}
	for (int i = 0; i < n; i++) {
		up[i] = i > 0 && g->ops[i].block >= 0 && g->ops[i].block == g->ops[i - 1].block &&
				g->ops[i].iter == g->ops[i - 1].iter
			? find_root(up, i - 1) : i;
		w[find_root(up, i)] += cost[i];
	}
	while (changed) {
		int best = -1;

		changed = 0;
		/* per root: its one successor and predecessor root, -1 none,
		 * -2 several */
		for (int i = 0; i < n; i++)
			succ[i] = pred[i] = -1;
		for (int i = 0; i < n; i++)
			for (int k = 0; k < g->ops[i].nin; k++) {
				int a = find_root(up, g->ops[i].in[k]), b = find_root(up, i);

				if (a == b)
					continue;
				succ[a] = succ[a] == -1 || succ[a] == b ? b : -2;
				pred[b] = pred[b] == -1 || pred[b] == a ? a : -2;
			}
		for (int a = 0; a < n; a++) {
			int b = succ[a];

			if (find_root(up, a) != a || b < 0 || pred[b] != a || (lay[a] && lay[b]) ||
			    (w[a] + w[b] > cap && w[a] > 0 && w[b] > 0))
				continue;
			if (best < 0 || w[a] + w[b] < w[best] + w[succ[best]])
				best = a;
		}
		if (best >= 0) {
			lay[best] |= lay[succ[best]];
			w[best] += w[succ[best]];
			up[succ[best]] = best;
			changed = 1;
		}
	}
	*ng = 0;
	for (int i = 0; i < n; i++)
		succ[i] = -1;
	for (int i = 0; i < n; i++) {
		int r = find_root(up, i);

		if (succ[r] < 0)
			succ[r] = (*ng)++;
		gid[i] = succ[r];
	}
	free(up);
	free(succ);
	free(pred);
	free(lay);
	free(w);
	return AP_OK;
}

/* layers() with each operator's forward and backward seconds of one
 * micro-batch and the cap of a merged chain: the model's time over
 * `grain` (by default 4 x the devices, so that stages of a few layers
 * each can balance). */
static int op_layers(const struct planner_input *input, int N, int *gid, int *ng)
{
	const struct graph *g = input->g;
	const int one[NDIMS] = { 1, 1, 1, 1, 1 };
	double *cost = malloc(((size_t)g->nops + 1) * sizeof *cost), total = 0;
	int grain = planner_int(input, "grain"), rc = AP_OK;
	struct op_cost oc;

	if (!cost)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	if (grain < 1)
		grain = 4 * cluster_ndevices(input->c);
	for (int i = 0; i < g->nops && !rc; i++) {
		rc = cost_op(input->p, g, i, one, N, &oc);
		cost[i] = 1e-6 * (oc.fwd_us + oc.bwd_us);
		total += cost[i];
	}
	if (!rc)
		rc = layers(g, cost, total / grain, gid, ng);
	free(cost);
	return rc;
}

/* Whether op i may run split t ways along c. */
static int splits(const struct op *op, int t)
{
	return t == 1 || ((op->split_mask & (1u << DIM_C)) && shape_size(&op->out, DIM_C) % t == 0);
}

/* Adds operator i's share to layer configuration x for degree t, and its
 * forward seconds to *fwd. */
static int add_op(const struct planner_input *input, int i, int t, int N, struct piper_tmpc *x,
		  double *fwd)
{
	const struct graph *g = input->g;
	const struct op *op = &g->ops[i];
	int deg[NDIMS] = { 1, 1, 1, 1, 1 }, rc;
	struct op_cost oc;

	deg[DIM_C] = t;
	rc = cost_op(input->p, g, i, deg, N, &oc);
	if (rc)
		return rc;
	x->time += 1e-6 * (oc.fwd_us + oc.bwd_us);
	*fwd += 1e-6 * oc.fwd_us;
	for (int k = 0; k < op->nin && t > 1; k++)
		if (!op_input_follows(op, k, DIM_C))
			x->time += 2.0 * (t - 1) / t * (double)g->ops[op->in[k]].out_bytes / N /
				   input->c->intra.bw_bytes_per_s;
	x->params += (double)cost_param_bytes(op, t);
	x->mem_a += (double)op->out_bytes / N / t;
	x->mem_b = cost_state_factor(OPTIMIZER_SGD) * x->params;
	return AP_OK;
}

/* Edge u -> v of the layer graph, adding bytes (one edge per pair). */
static int add_edge(struct piper_inst *pi, int *cap, int u, int v, double bytes)
{
	for (int e = 0; e < pi->nedges; e++)
		if (pi->edges[e].src == u && pi->edges[e].dst == v) {
			pi->edges[e].bytes += bytes;
			return AP_OK;
		}
	if (pi->nedges == *cap) {
		int c = *cap ? 2 * *cap : 64;
		struct piper_edge *x = realloc(pi->edges, (size_t)c * sizeof *x);

		if (!x)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		pi->edges = x;
		*cap = c;
	}
	pi->edges[pi->nedges++] = (struct piper_edge){ u, v, bytes };
	return AP_OK;
}

/* The id of Piper's activation recomputation configuration. */
#define RECOMP "activation recomp"

/* Configuration c of node x, named id, with no sync bytes. */
static int tmpc_init(struct piper_tmpc *c, const char *id, const struct piper_node *x)
{
	c->id = strdup(id);
	c->sync_fw = calloc((size_t)x->nin + 1, sizeof(double));
	c->sync_bw = calloc((size_t)x->nout + 1, sizeof(double));
	return c->id && c->sync_fw && c->sync_bw ? AP_OK
						 : ap_err(AP_EFAIL, NULL, 0, "out of memory");
}

/* The instance of a model that is not a Piper input (see the top), over
 * its layers gid[]. */
static int build(const struct planner_input *input, int N, const int *gid, int ng,
		 struct piper_inst *pi)
{
	const struct graph *g = input->g;
	int tmax = planner_int(input, "max-tp") > 1 ? planner_int(input, "max-tp") : 1;
	int nd = cluster_ndevices(input->c), cap = 0, rc = AP_OK;

	memset(pi, 0, sizeof *pi);
	pi->nnodes = ng;
	pi->max_devices = nd;
	pi->mbs = N;
	pi->mem = (double)(input->c->mem_bytes > 0 ? input->c->mem_bytes : input->p->dev.mem_bytes);
	pi->bw = slowest_bw(input->c);
	pi->nodes = calloc((size_t)ng, sizeof *pi->nodes);
	if (!pi->nodes)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	/* a producer's output goes once to each layer that reads it */
	for (int i = 0; i < g->nops && !rc; i++)
		for (int k = 0; k < g->ops[i].nin && !rc; k++) {
			int u = g->ops[i].in[k], dup = 0;

			for (int q = 0; q < k; q++)
				dup |= g->ops[i].in[q] == u;
			for (int j = 0; j < i && !dup; j++)
				for (int q = 0; q < g->ops[j].nin && !dup; q++)
					dup = gid[j] == gid[i] && g->ops[j].in[q] == u;
			if (gid[u] != gid[i] && !dup)
				rc = add_edge(pi, &cap, gid[u], gid[i], (double)g->ops[u].out_bytes / N);
		}
	if (!rc)
		rc = piper_edge_lists(pi);
	for (int v = 0; v < ng && !rc; v++) {
		struct piper_node *x = &pi->nodes[v];

		x->deg = calloc((size_t)tmax, sizeof *x->deg);
		if (!x->deg)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		for (int t = 1; t <= tmax && t <= nd && !rc; t++) {
			struct piper_degree *d;
			double fwd = 0, in_bytes = 0;
			int ok = 1;

			for (int i = 0; i < g->nops && ok; i++)
				ok = gid[i] != v || splits(&g->ops[i], t);
			if (!ok)
				continue;
			d = &x->deg[x->ndeg++];
			d->t = t;
			d->tmpc = calloc(2, sizeof *d->tmpc);
			if (!d->tmpc)
				return ap_err(AP_EFAIL, NULL, 0, "out of memory");
			d->ntmpc = 2;
			for (int c = 0; c < 2 && !rc; c++)
				rc = tmpc_init(&d->tmpc[c], c ? RECOMP : "vanilla", x);
			for (int i = 0; i < g->nops && !rc; i++)
				if (gid[i] == v)
					rc = add_op(input, i, t, N, d->tmpc, &fwd);
			for (int k = 0; k < x->nin; k++)
				in_bytes += pi->edges[x->in[k]].bytes;
			/* recomputation: the forward again; only the inputs
			 * kept per micro-batch in flight, the outputs live
			 * again for one */
			d->tmpc[1].time = d->tmpc->time + fwd;
			d->tmpc[1].params = d->tmpc->params;
			d->tmpc[1].mem_a = in_bytes;
			d->tmpc[1].mem_b = d->tmpc->mem_b + d->tmpc->mem_a;
		}
	}
	return rc;
}

/* Fills out from the solution: stage by stage on consecutive devices. */
static int in_stage(const struct piper_stage *st, int layer)
{
	for (int q = 0; q < st->nnodes; q++)
		if (st->nodes[q] == layer)
			return 1;
	return 0;
}

/* Whether the q-th layer of stage st runs Piper's recomputation
 * configuration. */
static int recomputes(const struct piper_inst *pi, const struct piper_stage *st, int q)
{
	const struct piper_degree *d = piper_degree_of(&pi->nodes[st->nodes[q]], st->t);

	return d && strcmp(d->tmpc[st->tmpc[q]].id, RECOMP) == 0;
}

static int emit(const struct graph *g, const struct piper_inst *pi,
		const struct piper_result *r, int N, const int *gid, struct plan *out)
{
	int rc = plan_alloc(out, g, r->nstages), base = 0, split;

	plan_schedule(out, SCHED_1F1B, N);
	if (!rc)
		rc = plan_chain(out);
	for (int s = 0; s < r->nstages && !rc; s++) {
		const struct piper_stage *st = &r->stages[s];
		int nd = st->t * st->d;

		/* data parallelism splits every micro-batch d ways along n
		 * where it divides and every operator allows it, else the d
		 * groups are round-robin replicas */
		split = st->d > 1 && g->batch / N % st->d == 0;
		for (int i = 0; i < g->nops && split; i++)
			split = !in_stage(st, gid[i]) || (g->ops[i].split_mask & (1u << DIM_N));
		rc = plan_stage_range(out, s, base, nd, split ? 1 : st->d);
		for (int i = 0; i < g->nops && !rc; i++) {
			int deg[NDIMS] = { split ? st->d : 1, st->t, 1, 1, 1 };

			if (!in_stage(st, gid[i]))
				continue;
			if (st->t > 1 && !splits(&g->ops[i], st->t)) {
				rc = ap_err(AP_EINPUT, "piper", 0, "the solution splits layer '%s' "
					    "%d ways (tensor parallelism), which its operator "
					    "cannot express (an imported layer splits only "
					    "along n); --max-tp 1 plans without it",
					    g->ops[i].name, st->t);
				break;
			}
			for (int q = 0; q < st->nnodes; q++)
				out->ops[i].recompute |= st->nodes[q] == gid[i] &&
							 recomputes(pi, st, q);
			rc = plan_place_range(out, i, s, deg, base);
		}
		base += nd;
	}
	return rc;
}

/* Tied weights: the layers gid[] (ng of them) whose operators tie
 * their weights to one another's must share a stage (the top comment),
 * as groups for piper_solve_tied(): *tie, the next layer of each one's
 * group in a cycle, or NULL when the model has no ties. */
static int layer_ties(const struct graph *g, const int *gid, int ng, int **tie)
{
	int *up, *last;

	*tie = NULL;
	if (!ties_any(g))
		return AP_OK;
	up = malloc(((size_t)ng + 1) * sizeof *up);
	last = malloc(((size_t)ng + 1) * sizeof *last);
	*tie = malloc(((size_t)ng + 1) * sizeof **tie);
	if (!up || !last || !*tie) {
		free(up);
		free(last);
		free(*tie);
		*tie = NULL;
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int v = 0; v < ng; v++) {
		up[v] = v;
		last[v] = -1;
		(*tie)[v] = v;
	}
	for (int i = 0; i < g->nops; i++)
		if (g->ops[i].a.tie >= 0) {
			int a = find_root(up, gid[i]), b = find_root(up, gid[g->ops[i].a.tie]);

			up[a > b ? a : b] = a < b ? a : b;
		}
	/* each group's layers in order, the last back to its root, the
	 * first */
	for (int v = 0; v < ng; v++) {
		int r = find_root(up, v);

		if (last[r] >= 0)
			(*tie)[last[r]] = v;
		last[r] = v;
	}
	for (int v = 0; v < ng; v++)
		if (find_root(up, v) == v)
			(*tie)[last[v]] = v;
	free(up);
	free(last);
	return AP_OK;
}

/* piper_solve() with the layers' ties. */
static int solve(const struct planner_input *input, const int *gid, const struct piper_inst *pi,
		 double budget_s, struct piper_result *r)
{
	int *tie, rc = layer_ties(input->g, gid, pi->nnodes, &tie);

	if (!rc)
		rc = piper_solve_tied(pi, tie, planner_int(input, "max-ideals"), budget_s, r);
	free(tie);
	return rc;
}

/* Piper on a model that is not a Piper input, for N micro-batches: its
 * layers gid[], its instance and the DP's result; budget_s 0 for none. */
static int solve_own(const struct planner_input *input, int N, double budget_s, int *gid,
		     struct piper_inst *pi, struct piper_result *r)
{
	int ng = 0, rc = op_layers(input, N, gid, &ng);

	if (!rc)
		rc = build(input, N, gid, ng, pi);
	if (!rc)
		rc = solve(input, gid, pi, budget_s, r);
	return rc;
}

/* The instance of a Piper input: its configurations of degree up to
 * max-tp, the cluster's devices, memory and bandwidth.  pi->nodes is a
 * copy of the array the caller frees; the nodes' contents are shared. */
static int input_inst(const struct planner_input *input, struct piper_inst *pi)
{
	const struct graph *g = input->g;

	*pi = *g->piper;
	pi->nodes = malloc(((size_t)pi->nnodes + 1) * sizeof *pi->nodes);
	if (!pi->nodes)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int v = 0; v < pi->nnodes; v++) {
		pi->nodes[v] = g->piper->nodes[v];
		while (pi->nodes[v].ndeg > 1 &&
		       pi->nodes[v].deg[pi->nodes[v].ndeg - 1].t > planner_int(input, "max-tp"))
			pi->nodes[v].ndeg--;
	}
	pi->max_devices = cluster_ndevices(input->c);
	pi->mem = (double)(input->c->mem_bytes > 0 ? input->c->mem_bytes : input->p->dev.mem_bytes);
	pi->bw = slowest_bw(input->c);
	if (g->batch % pi->mbs)
		return ap_err(AP_EINPUT, "piper", 0, "the batch (%lld) is not %d micro-batches "
			      "of the Piper input", (long long)g->batch, pi->mbs);
	return AP_OK;
}

/* Piper takes the micro-batches N as given.  On a model, microbatches=0
 * runs it for every N that divides the batch, up to the smallest at
 * least the devices (a larger N offers no more data parallelism: the
 * sum of d is at most min(N, k)), and keeps the fastest batch, N times
 * the TPS (the first on a tie).  Each run has what is left of the
 * budget. */
static int solve_best(const struct planner_input *input, int *gid, int *N, struct piper_inst *pi,
		      struct piper_result *r, long long *pairs)
{
	int nmax = microbatches(input, cluster_ndevices(input->c)), rc = AP_OK;
	int *gtry = malloc(((size_t)input->g->nops + 1) * sizeof *gtry);
	struct timespec t0;

	if (!gtry)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	if (nmax < 1) {
		free(gtry);
		return ap_err(AP_EINPUT, "piper", 0, "microbatches must divide the batch (%lld)",
			      (long long)input->g->batch);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	*N = 0;
	*pairs = 0;
	for (int n = planner_int(input, "microbatches") > 0 ? nmax : 1; n <= nmax && !rc; n++) {
		struct piper_inst ti = { 0 };
		struct piper_result tr = { 0 };
		struct timespec t1;
		double left = 0;

		if (input->g->batch % n)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (input->budget_s > 0) {
			left = input->budget_s - (double)(t1.tv_sec - t0.tv_sec) -
			       1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
			if (left <= 0)
				left = 1e-9;
		}
		rc = solve_own(input, n, left, gtry, &ti, &tr);
		*pairs += tr.pairs;
		if (!rc && (!*N || tr.tps * n < r->tps * *N)) {
			piper_inst_release(pi);
			piper_result_release(r);
			*pi = ti;
			*r = tr;
			*N = n;
			memcpy(gid, gtry, (size_t)input->g->nops * sizeof *gid);
		} else {
			piper_inst_release(&ti);
			piper_result_release(&tr);
		}
	}
	free(gtry);
	return rc;
}

static int plan_piper(const struct planner_input *input, struct plan *out)
{
	const struct graph *g = input->g;
	struct piper_inst pi = { 0 };
	struct piper_result r = { 0 };
	int nd = cluster_ndevices(input->c), N = 0, rc, recomputed = 0;
	int *gid = malloc(((size_t)g->nops + 1) * sizeof *gid);
	long long pairs = 0;

	if (!gid)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int i = 0; i < g->nops; i++)
		gid[i] = i;
	if (g->piper) {
		rc = input_inst(input, &pi);
		N = pi.mbs;
		if (!rc)
			rc = solve(input, gid, &pi, input->budget_s, &r);
		pairs = r.pairs;
	} else {
		rc = solve_best(input, gid, &N, &pi, &r, &pairs);
	}
	if (!rc && !isfinite(r.tps))
		rc = ap_err(AP_EINPUT, "piper", 0, "no partition of '%s' on %d devices fits "
			    "%.3g GB per device", g->name, nd, pi.mem / 1e9);
	if (!rc)
		rc = emit(g, &pi, &r, N, gid, out);
	for (int s = 0; s < r.nstages; s++)
		for (int i = 0; i < r.stages[s].nnodes; i++)
			recomputed += recomputes(&pi, &r.stages[s], i);
	out->est_ms = 1e3 * r.tps * N;
	if (!rc)
		rc = plan_set_stat(out, "tps_ms", 1e3 * r.tps);
	if (!rc)
		rc = plan_set_stat(out, "ideals", (double)r.ideals);
	if (!rc)
		rc = plan_set_stat(out, "pairs", (double)pairs);
	if (!rc)
		rc = plan_set_stat(out, "stages", r.nstages);
	if (!rc)
		rc = plan_set_stat(out, "recomputed", recomputed);
	if (!rc)
		rc = plan_set_stat(out, "layers", pi.nnodes);
	piper_result_release(&r);
	if (g->piper)
		free(pi.nodes);
	else
		piper_inst_release(&pi);
	free(gid);
	return rc;
}

const struct planner planner_piper = {
	.name = "piper",
	.description = "DP over the DAG's upsets: convex stages with tensor, data parallelism "
		       "and per-layer configurations",
	.follows = "Tarnawski et al., NeurIPS 2021",
	.plan = plan_piper,
	.options = (const struct planner_option[]){
		{ "microbatches", POPT_INT, "0", NULL,
		  "micro-batches N of a model's batch (0: the best N up to the smallest divisor "
		  "of the batch at least the devices)" },
		{ "max-tp", POPT_INT, "8", NULL, "the largest tensor-parallel degree offered" },
		{ "grain", POPT_INT, "0", NULL,
		  "a chain of operators becomes layers of at most 1/grain of the model's time "
		  "(0: 4 x the devices)" },
		{ "max-ideals", POPT_INT, "40000", NULL,
		  "refuse a DAG with more upsets (Piper's own limit)" },
		{ 0 },
	},
	.may_refuse = 1,
	.estimate = PLANNER_EST_OBJECTIVE,
};
