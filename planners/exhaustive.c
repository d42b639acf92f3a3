/*
 * exhaustive: every plan of a small instance, ranked by the simulator; the
 * test oracle the other planners are checked against.
 *
 * The space: the operators, in topological order, cut into k contiguous
 * stages (k dividing the device count, each stage an equal block of
 * devices, chained by `next`), micro-batches m among the powers of two up
 * to 8 (by default) that divide the batch (m = 1 for one stage), and per operator one
 * configuration of its stage: whole on the stage's first device, or split
 * over all the stage's devices along the sample dim n or the feature dim c
 * (data and model parallelism; attribute splits are left to the searching
 * planners, as they multiply the space without changing what the oracle
 * checks).  Element-wise
 * operators take their producer's configuration (splitting them differently
 * only adds transfers).  This space holds the plans of `single`, `dp` and
 * `owt` on power-of-two clusters, so exhaustive is never worse than they
 * are.  Options narrow the space: `whole` keeps every operator unsplit
 * (pipelines only), `max-microbatches` bounds m, `schedule=1f1b-async` runs
 * pipelines with PipeDream's weight stashing (then a pipeline's time is its
 * bottleneck stage or link, as PipeDream's planner counts it).  Instances
 * whose space exceeds EX_MAX_PLANS are refused, and so is a search that
 * runs past its budget: an oracle must be complete.  A plan that puts an
 * operator whose weight is tied to another's (`tie=`, models/FORMAT.md)
 * on other devices than its partner is not a plan (plan_validate()), and
 * is skipped unsimulated.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/err.h"
#include "algo/ties.h"
#include "planner.h"
#include "sim/sim.h"
#include "model/ops.h"
#include "plan/plan_build.h"

#define EX_MAX_PLANS 2000000

struct ex {
	const struct planner_input *input;
	struct sim s;
	int k, m;              /* stages, micro-batches of the layout */
	int whole, max_mb;     /* options: no splits; most micro-batches */
	enum sched_kind sched; /* of pipelines (one stage: gpipe) */
	int *cut;              /* cut[s]: first op of stage s (cut[k] = nops) */
	int *stage_of;
	int *cfg;              /* per op: 0 whole, 1 + d split along dim d */
	int *free_ops, nfree;  /* ops that choose (the others follow) */
	double best_s;
	int best_k, best_m, *best_cut, *best_cfg;
	int64_t tried;
	int tied;              /* the model ties weights (algo/ties.h) */
	double deadline;
	struct plan cand;
};

static int follows(const struct op *op)
{
	return op_kind_elementwise(op->kind) && op->nin > 0;
}

/* Whether op may be split along d over n devices (micro-batch mb). */
static int can_split(const struct op *op, int d, int n, int64_t mb)
{
	int i = shape_dim(&op->out, (enum dim_kind)d);

	if (!(op->split_mask & (1u << d)) || i < 0 || op->out.size[i] % n)
		return 0;
	return d != DIM_N || mb % n == 0;
}

/* Fills ex->cand from the layout and the configurations. */
static int build(struct ex *ex, int k, int m, const int *cut, const int *cfg, struct plan *p)
{
	const struct graph *g = ex->input->g;
	int per = cluster_ndevices(ex->input->c) / k, rc = plan_alloc(p, g, k);

	plan_schedule(p, k > 1 ? ex->sched : SCHED_GPIPE, m);
	if (!rc)
		rc = plan_chain(p);
	for (int s = 0; s < k && !rc; s++) {
		rc = plan_stage_range(p, s, s * per, per, 0);
		for (int i = cut[s]; i < cut[s + 1] && !rc; i++) {
			int deg[NDIMS] = { 1, 1, 1, 1, 1 };

			if (cfg[i])
				deg[cfg[i] - 1] = per;
			rc = plan_place_range(p, i, s, deg, s * per);
		}
	}
	return rc;
}

static int evaluate(struct ex *ex)
{
	const struct graph *g = ex->input->g;
	struct sim_result r;
	int rc;

	/* followers take their producer's configuration when it applies */
	for (int i = 0; i < g->nops; i++) {
		const struct op *op = &g->ops[i];

		if (follows(op)) {
			int src = op->in[0], c = ex->cfg[src];
			int per = cluster_ndevices(ex->input->c) / ex->k;

			ex->cfg[i] = ex->stage_of[src] == ex->stage_of[i] && c &&
				     can_split(op, c - 1, per, g->batch / ex->m) ? c : 0;
		}
	}
	rc = build(ex, ex->k, ex->m, ex->cut, ex->cfg, &ex->cand);
	if (!rc && ex->tied && !ties_kept(&ex->cand, g))
		return AP_OK;
	if (!rc)
		rc = sim_run(&ex->s, &ex->cand, NULL, &r);
	if (rc)
		return rc;
	ex->tried++;
	if (!sim_fits(&r))
		return AP_OK;
	if (r.iter_s < ex->best_s) {
		ex->best_s = r.iter_s;
		ex->best_k = ex->k;
		ex->best_m = ex->m;
		memcpy(ex->best_cut, ex->cut, (size_t)(ex->k + 1) * sizeof *ex->cut);
		memcpy(ex->best_cfg, ex->cfg, (size_t)g->nops * sizeof *ex->cfg);
	}
	if ((ex->tried & 255) == 0 && now_s() > ex->deadline)
		return ap_err(AP_EINPUT, "exhaustive", 0, "the search did not finish within "
			      "its budget of %g s (an oracle must be complete)",
			      ex->input->budget_s);
	return AP_OK;
}

/* Every configuration of the free ops, depth first. */
static int configs(struct ex *ex, int j)
{
	const struct graph *g = ex->input->g;
	int per = cluster_ndevices(ex->input->c) / ex->k, rc;
	const struct op *op;

	if (j == ex->nfree)
		return evaluate(ex);
	op = &g->ops[ex->free_ops[j]];
	ex->cfg[ex->free_ops[j]] = 0;
	rc = configs(ex, j + 1);
	for (int d = DIM_N; d <= DIM_C && !rc && per > 1 && !ex->whole; d++) {
		if (!can_split(op, d, per, g->batch / ex->m))
			continue;
		ex->cfg[ex->free_ops[j]] = 1 + d;
		rc = configs(ex, j + 1);
	}
	return rc;
}

/* Every choice of k - 1 cuts after position `from`, stage s next. */
static int cuts(struct ex *ex, int s, int from)
{
	const struct graph *g = ex->input->g;
	int rc = AP_OK;

	if (s == ex->k) {
		for (int t = 0; t < ex->k; t++)
			for (int i = ex->cut[t]; i < ex->cut[t + 1]; i++)
				ex->stage_of[i] = t;
		return configs(ex, 0);
	}
	for (int c = from; c <= g->nops - (ex->k - s) && !rc; c++) {
		ex->cut[s] = c;
		rc = cuts(ex, s + 1, c + 1);
	}
	return rc;
}

/* The number of plans, to refuse large instances before enumerating them:
 * per layout of k stages, the cut choices times the micro-batch choices
 * times (1 + feasible splits) per free op (an upper bound, since the
 * micro-batch also limits sample splits). */
static double space(const struct ex *ex, int ndev)
{
	const struct graph *g = ex->input->g;
	double total = 0;

	for (int k = 1; k <= ndev && k <= g->nops; k++) {
		double layouts = 1, per_layout = 1;
		int per = ndev / k;

		if (ndev % k)
			continue;
		for (int t = 1; t < k; t++)
			layouts = layouts * (g->nops - t) / t;
		for (int j = 0; j < ex->nfree && per > 1 && !ex->whole; j++) {
			int c = 1;

			for (int d = DIM_N; d <= DIM_C; d++)
				c += can_split(&g->ops[ex->free_ops[j]], d, per, g->batch);
			per_layout *= c;
		}
		total += layouts * per_layout * (k > 1 ? 4 : 1);
	}
	return total;
}

static int plan_exhaustive(const struct planner_input *input, struct plan *out)
{
	const struct graph *g = input->g;
	int ndev = cluster_ndevices(input->c), n = g->nops, rc;
	struct ex ex = { .input = input, .best_s = INFINITY, .whole = planner_flag(input, "whole"),
			 .max_mb = planner_int(input, "max-microbatches") };
	double size;

	ex.sched = strcmp(planner_choice(input, "schedule"), "1f1b-async") ? SCHED_1F1B
								      : SCHED_1F1B_ASYNC;
	if (ex.max_mb < 1)
		return ap_err(AP_EINPUT, "exhaustive", 0, "max-microbatches must be at least 1");
	ex.cut = calloc((size_t)ndev + 1, sizeof *ex.cut);
	ex.best_cut = calloc((size_t)ndev + 1, sizeof *ex.best_cut);
	ex.stage_of = calloc((size_t)n, sizeof *ex.stage_of);
	ex.cfg = calloc((size_t)n, sizeof *ex.cfg);
	ex.best_cfg = calloc((size_t)n, sizeof *ex.best_cfg);
	ex.free_ops = calloc((size_t)n, sizeof *ex.free_ops);
	plan_init(&ex.cand);
	if (!ex.cut || !ex.best_cut || !ex.stage_of || !ex.cfg || !ex.best_cfg || !ex.free_ops) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++)
		if (!follows(&g->ops[i]))
			ex.free_ops[ex.nfree++] = i;
	size = space(&ex, ndev);
	if (size > EX_MAX_PLANS) {
		rc = ap_err(AP_EINPUT, "exhaustive", 0, "'%s' on %d devices has about %.3g plans "
			    "(at most %d: exhaustive is for small instances)", g->name, ndev,
			    size, EX_MAX_PLANS);
		goto out;
	}
	rc = sim_init(&ex.s, g, input->p, input->c);
	if (rc)
		goto out;
	ex.tied = ties_any(g);
	ex.deadline = now_s() + input->budget_s;
	for (int k = 1; k <= ndev && k <= n && !rc; k++) {
		if (ndev % k)
			continue;
		ex.k = k;
		ex.cut[0] = 0;
		ex.cut[k] = n;
		for (int m = 1; m <= (k > 1 ? ex.max_mb : 1) && !rc; m *= 2) {
			if (g->batch % m)
				continue;
			ex.m = m;
			rc = k > 1 ? cuts(&ex, 1, 1) : configs(&ex, 0);
		}
	}
	sim_release(&ex.s);
	if (!rc && isinf(ex.best_s))
		rc = ap_err(AP_EINPUT, "exhaustive", 0, "no plan of '%s' fits the devices' memory",
			    g->name);
	if (!rc)
		rc = build(&ex, ex.best_k, ex.best_m, ex.best_cut, ex.best_cfg, out);
	if (!rc)
		rc = plan_set_stat(out, "plans_tried", (double)ex.tried);
	out->est_ms = 1e3 * ex.best_s;
out:
	plan_release(&ex.cand);
	free(ex.cut);
	free(ex.best_cut);
	free(ex.stage_of);
	free(ex.cfg);
	free(ex.best_cfg);
	free(ex.free_ops);
	return rc;
}

const struct planner planner_exhaustive = {
	.name = "exhaustive",
	.description = "every plan of a small instance, ranked by the simulator (test oracle)",
	.follows = "-",
	.plan = plan_exhaustive,
	.options = (const struct planner_option[]){
		{ "whole", POPT_FLAG, NULL, NULL, "operators are never split: pipelines only" },
		{ "max-microbatches", POPT_INT, "8", NULL,
		  "micro-batches tried: powers of two up to this" },
		{ "schedule", POPT_CHOICE, "1f1b", "1f1b|1f1b-async",
		  "schedule of pipelines: 1F1B with flushes, or PipeDream's weight stashing" },
		{ 0 },
	},
	.may_refuse = 1,
	.estimate = PLANNER_EST_SIM,
};
