/*
 * graphpipe: graph pipeline parallelism after GraphPipe (Jeon et al.,
 * ASPLOS 2025).  Stages form a DAG that keeps a model's branches side by
 * side, so a multi-branch model gets a shallower pipeline than any chain
 * of stages would give it.  This file is the planner: its setup, the
 * choice among the search's candidate plans, the plans and the stages'
 * own micro-batch counts; graphpipe_search.c is the search, and
 * graphpipe_impl.h what the two share.
 *
 * Decomposition (section 5.1).  The operator graph is cut into its
 * series-parallel tree (core/sp_decomp.h, which says how): series and
 * parallel compositions over leaves that are units of operators, the
 * branches of a parallel composition lightest first, numbered depth
 * first so that every node, every run of a series' children and every
 * run of a parallel composition's branches is a contiguous interval: a
 * stage is such an interval, run data parallel on its own devices.
 * Units: the tree keeps at most `max-units` leaves, merging adjacent
 * leaves of a series by least compute; no stage boundary falls inside a
 * unit, and a graph of at most max-units operators keeps one leaf per
 * operator.  The DP's work grows with the square of a series' length,
 * so long chains (mmt's) cost max-units squared, not their length
 * squared.  The default, 4096, coarsens no model of the zoo: merging by
 * least compute costs good cuts on other graphs (at 128, mmt on 32
 * devices searches about five times faster and finds a slightly better
 * plan, but densenet121 and resnext50 on pipedream-a get plans about 2x
 * slower and resnet50 on flexflow-p100 16% slower).
 *
 * Tied weights.  An operator that ties its weight to another's (`tie=`,
 * models/FORMAT.md) must run on the same devices (plan_validate()); a
 * stage runs all its operators on its own devices, so a stage holds both
 * or neither: the search admits no stage that holds part of a tie group
 * (eval() in graphpipe_search.c).  GPT-2's token embedding and output
 * layer so share the stage of its whole body.
 *
 * Partitioning (section 5.2, graphpipe_search.c).  For each micro-batch
 * count m, a binary search on the target time per sample T, each step a
 * dynamic program over the tree that partitions it into stages on the
 * cluster's devices, every stage within T and the device's memory, with
 * the smallest pipeline latency.
 *
 * Choice.  The smallest feasible T of each m and a few looser targets
 * (a looser bottleneck can buy a shallower pipeline) give candidate
 * plans, ranked by the 1F1B estimate latency + (m - 1) x the slowest
 * stage's time per micro-batch (the latency holds the all-reduces the
 * backward leaves exposed); the best
 * `verify` of them are simulated and the fastest that fits memory wins.
 * The schedule is synchronous 1F1B over the DAG of stages: the simulator
 * gives each stage as many micro-batches in flight as there are stages on
 * its longest path to the sink and runs each backward as early as it can
 * (sim_layout.c).
 *
 * The estimate (planner_est_ms, the chosen candidate's est) is the
 * paper's cost model, not the simulator: it agrees with the prediction
 * within a few percent on one node (tests/test_estimates.c), and leaves to
 * the simulator four terms it models more precisely.  (1) Transfers: a
 * stage's are one device's share at the bandwidth of the search's link
 * guess; the simulator sends them over the links the placement gives,
 * where a stage's devices on one node share its NIC (vgg16 and gnmt on
 * pipedream-a: est/sim 0.70 and 0.57).  (2) The all-reduce: each stage's,
 * less two thirds of its compute, is counted on its path; the simulator
 * runs each op's all-reduce after that op's backward, one after another,
 * so a later stage's hides behind the earlier stages' drain (alexnet on
 * pipedream-a: 1.10) while a large one-stage all-reduce shows more (mmt
 * on summit-2x4: 0.88).  (3) The optimizer update (5 x a device's
 * parameter bytes at memory bandwidth) is left out (dlrm's embeddings on
 * summit-4x4: 0.47).  (4) 1F1B keeps at most as many micro-batches in
 * flight at a stage as there are stages on its path, so a stage waits
 * when the round trip through the later stages is longer; the estimate's
 * bottleneck never waits.
 *
 * Stages of their own micro-batch counts (`stage-microbatches`, off by
 * default because the runtime does not execute such plans yet): from the
 * chosen plan, refine_counts() tries each stage at other counts by
 * simulation (the simulator re-batches between stages of different
 * counts, sim_layout.c).
 */
#include <math.h>
#include <stdlib.h>

#include "util/clock.h"
#include "util/err.h"
#include "graphpipe_impl.h"
#include "planner.h"
#include "sim/sim.h"
#include "plan/plan_build.h"
#include "cost/cost.h"

/* --- plans ---------------------------------------------------------------- */

/* The plan of candidate cd: stages in depth-first order on consecutive
 * blocks of devices, each op data parallel over its stage's devices,
 * `next` wherever an edge crosses stages. */
static int build(struct gp *gp, const struct gp_cand *cd, struct plan *p)
{
	const struct graph *g = gp->g;
	const struct gp_stage *S = gp->cst + cd->ofs;
	const int *lab = gp->clab + cd->lab;
	int ns = cd->nst, *first = malloc((size_t)ns * sizeof *first);
	int rc = !first ? ap_err(AP_EFAIL, NULL, 0, "out of memory") : plan_alloc(p, g, ns);

	for (int s = 0, f = 0; s < ns && !rc; f += S[s].d, s++) {
		first[s] = f;
		rc = plan_stage_range(p, s, f, S[s].d, 0);
	}
	for (int i = 0; i < g->nops && !rc; i++) {
		int s = lab[i], deg[NDIMS] = { S[s].d, 1, 1, 1, 1 };

		rc = plan_place_range(p, i, s, deg, first[s]);
	}
	if (!rc)
		rc = plan_link_edges(p, g);
	plan_schedule(p, ns == 1 && cd->m == 1 ? SCHED_GPIPE : SCHED_1F1B, cd->m);
	free(first);
	return rc;
}

static int cmp_est(const void *pa, const void *pb)
{
	const struct gp_cand *a = pa, *b = pb;

	return (a->est > b->est) - (a->est < b->est);
}

/* Simulates the best `verify` candidates by estimate (every one of a
 * small graph) and keeps the fastest that fits memory in *best. */
static int verify(struct gp *gp, int nverify, int *best, double *best_s)
{
	struct sim s;
	struct plan cand;
	int rc = sim_init(&s, gp->g, gp->input->p, gp->input->c);

	*best = -1;
	*best_s = INFINITY;
	if (rc)
		return rc;
	plan_init(&cand);
	if (gp->ncand > 0) /* none may fit memory: no array to sort */
		qsort(gp->cand, (size_t)gp->ncand, sizeof *gp->cand, cmp_est);
	if (gp->n <= 40)
		nverify = gp->ncand;
	for (int k = 0; k < gp->ncand && !rc; k++) {
		struct sim_result r;

		if (k >= nverify && *best >= 0)
			break;
		rc = build(gp, &gp->cand[k], &cand);
		if (!rc)
			rc = sim_run(&s, &cand, NULL, &r);
		if (!rc && sim_fits(&r) &&
		    r.iter_s < *best_s) {
			*best_s = r.iter_s;
			*best = k;
		}
	}
	plan_release(&cand);
	sim_release(&s);
	return rc;
}

/* Whether stage s of p may run c micro-batches: a divisor of the batch
 * that its devices divide (each takes a share of every micro-batch), and
 * a count that divides or is divided by those of the stages joined to it
 * (re-batching sends whole micro-batches of the finer side). */
static int count_ok(const struct plan *p, int s, int c)
{
	if (c < 1 || p->batch % c || (p->batch / c) % p->stages[s].ndev)
		return 0;
	for (int t = 0; t < p->nstages; t++) {
		int o = plan_stage_microbatches(p, t), joined = 0;

		for (int e = 0; e < p->stages[s].nnext; e++)
			joined |= p->stages[s].next[e] == t;
		for (int e = 0; e < p->stages[t].nnext; e++)
			joined |= p->stages[t].next[e] == s;
		if (joined && c % o && o % c)
			return 0;
	}
	return 1;
}

/* Per-stage micro-batch counts (`stage-microbatches`): GraphPipe gives
 * every stage its own micro-batch size.  From the chosen plan, each stage
 * in turn tries a quarter, half, twice and four times its count; a change
 * is kept when the simulated iteration gets faster and fits memory, and
 * passes repeat while one helps (at most three).  Stage ids are indices
 * here (build()). */
static int refine_counts(struct gp *gp, struct plan *p, double *best_s)
{
	static const int num[] = { 1, 1, 2, 4 }, den[] = { 4, 2, 1, 1 };
	struct sim s;
	int rc = sim_init(&s, gp->g, gp->input->p, gp->input->c), better = 1;

	for (int pass = 0; pass < 3 && better && !rc; pass++) {
		better = 0;
		for (int st = 0; st < p->nstages && !rc; st++)
			for (int k = 0; k < 4 && !rc && now_s() < gp->deadline; k++) {
				int old = p->stages[st].microbatches;
				int c = plan_stage_microbatches(p, st) * num[k] / den[k];
				struct sim_result r;

				if (plan_stage_microbatches(p, st) % den[k] || !count_ok(p, st, c))
					continue;
				p->stages[st].microbatches = c == p->microbatches ? 0 : c;
				rc = sim_run(&s, p, NULL, &r);
				if (!rc && sim_fits(&r) &&
				    r.iter_s < *best_s * (1 - 1e-9)) {
					*best_s = r.iter_s;
					better = 1;
				} else {
					p->stages[st].microbatches = old;
				}
			}
	}
	sim_release(&s);
	return rc;
}

/* --- the planner ---------------------------------------------------------- */

static void gp_release(struct gp *gp)
{
	free(gp->cons_ofs);
	free(gp->cons);
	sp_decomp_release(&gp->sp);
	free(gp->tab);
	free(gp->merge);
	free(gp->comp);
	free(gp->comp_ready);
	free(gp->par_pref);
	free(gp->act_pref);
	free(gp->npar_pref);
	free(gp->nosplit_pref);
	free(gp->lc_ofs);
	free(gp->lc);
	free(gp->lastc);
	free(gp->tie_lo);
	free(gp->tie_hi);
	free(gp->seen);
	free(gp->cells);
	free(gp->cand);
	free(gp->cst);
	free(gp->clab);
}

/* Builds the tree, numbered, and the costs every search shares. */
static int setup(struct gp *gp)
{
	const struct graph *g = gp->g;
	int n = gp->n, rc;
	double *op_w = NULL;

	sp_decomp_init(&gp->sp);
	rc = graph_consumers(g, &gp->cons_ofs, &gp->cons);
	if (rc)
		return rc;
	gp->seen = calloc((size_t)n, sizeof *gp->seen);
	op_w = calloc((size_t)n, sizeof *op_w);
	if (!gp->seen || !op_w) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		int one[NDIMS] = { 1, 1, 1, 1, 1 };
		struct op_cost oc;

		rc = cost_op(gp->input->p, g, i, one, 1, &oc);
		if (rc)
			goto out;
		op_w[i] = oc.fwd_us + oc.bwd_us;
	}
	rc = sp_decomp_build(&gp->sp, g, gp->cons_ofs, gp->cons, op_w, gp->max_units);
	if (rc)
		goto out;
	for (int64_t d = 1; d <= g->batch && gp->ndiv < 64; d++)
		if (g->batch % d == 0)
			gp->div[gp->ndiv++] = d;
	gp->comp = malloc((size_t)gp->ndiv * (n + 1) * sizeof *gp->comp);
	gp->comp_ready = calloc((size_t)gp->ndiv, sizeof *gp->comp_ready);
	if (!gp->comp || !gp->comp_ready)
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
out:
	free(op_w);
	return rc;
}

static int plan_graphpipe(const struct planner_input *input, struct plan *out)
{
	const struct cluster *c = input->c;
	struct gp gp = { .input = input, .g = input->g, .n = input->g->nops, .D = cluster_ndevices(c) };
	int max_m = planner_int(input, "max-microbatches");
	int nverify = planner_int(input, "verify"), best = -1, rc;
	double best_s = INFINITY;

	if (max_m < 1 || nverify < 1)
		return ap_err(AP_EINPUT, "graphpipe", 0,
			      "max-microbatches and verify must be at least 1");
	gp.max_units = planner_int(input, "max-units");
	if (gp.max_units < 2)
		return ap_err(AP_EINPUT, "graphpipe", 0, "max-units must be at least 2");
	gp.deadline = now_s() + 0.8 * input->budget_s;
	gp.mem = c->mem_bytes > 0 ? (double)c->mem_bytes : (double)input->p->dev.mem_bytes;
	rc = setup(&gp);
	/* transfers between stages: over the NICs when the plan spans nodes,
	 * and, as a second guess, between neighbours inside a node */
	if (!rc)
		rc = gp_tables(&gp);
	for (int l = 0; l < (gp.D > c->per_node ? 2 : 1) && !rc; l++) {
		const struct link *ln = gp.D > c->per_node && l == 0 ? &c->inter : &c->intra;

		gp.link = ln;
		rc = gp_search(&gp, max_m, nverify);
	}
	if (!rc)
		rc = verify(&gp, nverify, &best, &best_s);
	if (!rc && best < 0)
		rc = ap_err(AP_EINPUT, "graphpipe", 0,
			    "no stage graph of '%s' fits the memory of %d devices", input->g->name,
			    gp.D);
	if (!rc)
		rc = build(&gp, &gp.cand[best], out);
	if (!rc && planner_flag(input, "stage-microbatches") && out->sched != SCHED_GPIPE)
		rc = refine_counts(&gp, out, &best_s);
	if (!rc) {
		out->est_ms = 1e3 * gp.cand[best].est;
		rc = plan_set_stat(out, "stages", gp.cand[best].nst);
	}
	if (!rc)
		rc = plan_set_stat(out, "target_ms", 1e3 * gp.cand[best].target *
							(double)input->g->batch);
	if (!rc)
		rc = plan_set_stat(out, "candidates", gp.ncand);
	if (!rc)
		rc = plan_set_stat(out, "units", gp.sp.nunits);
	gp_release(&gp);
	return rc;
}

const struct planner planner_graphpipe = {
	.name = "graphpipe",
	.description = "a DAG of data-parallel stages from a series-parallel decomposition, 1F1B",
	.follows = "GraphPipe, ASPLOS 2025",
	.plan = plan_graphpipe,
	.options = (const struct planner_option[]){
		{ "max-microbatches", POPT_INT, "64", NULL,
		  "micro-batch counts tried: powers of two up to this" },
		{ "verify", POPT_INT, "8", NULL,
		  "candidate plans simulated (every one on graphs of at most 40 ops)" },
		{ "max-units", POPT_INT, "4096", NULL,
		  "at most this many units (adjacent ops of a series merged, least compute first)" },
		{ "stage-microbatches", POPT_FLAG, NULL, NULL,
		  "let stages run their own micro-batch counts (simulated; the runtime "
		  "refuses such plans)" },
		{ 0 },
	},
	.estimate = PLANNER_EST_MODEL,
};
