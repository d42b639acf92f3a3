/*
 * mcmc: FlexFlow's search (Jia, Zaharia and Aiken, "Beyond Data and Model
 * Parallelism for Deep Neural Networks", SysML 2019, sections 4-6).
 *
 * The space is SOAP: per operator a degree for each dim it may split
 * (sample n; attributes h, w, l; parameter c), each dividing the dim,
 * their product at most the device count, and the devices its shards run
 * on, here a contiguous block (aligned to the product where it divides the
 * device count).  As in FlexFlow there is no pipelining: one stage over
 * all devices, one micro-batch; operators on different devices run
 * concurrently in the simulator's task graph.
 *
 * The search is Metropolis-Hastings (section 6.1) with the simulator as
 * cost: a proposal gives one random operator a random configuration of
 * its space and is accepted with probability
 *     min(1, exp(-beta x (cost(new) - cost(current)))),
 * cost being the simulated iteration time in percent of the first
 * starting point's, so beta means the same on every model (beta 1: a
 * proposal 1% slower is taken with probability 0.37, at the default 5
 * with 0.007).  A plan that does
 * not fit the devices' memory is never accepted from one that does.  Each
 * proposal is simulated by delta re-simulation (sim_delta(), section 5.2)
 * from the state of the last one: a rejected proposal is undone in the
 * plan and in the simulator (sim_undo()), which restores its layout and
 * task times.
 *
 * Tied weights.  An operator that ties its weight to another's (`tie=`,
 * models/FORMAT.md) holds the same tensor, so the two run on the same
 * set of devices (plan_validate()).  A proposal that changes one op of a
 * tie group changes the others with it (follow_ties()): each that is not
 * on the op's new devices already takes a random configuration of its
 * own space with as many devices, on those devices; where one has none
 * the proposal is rejected unsimulated.  The changed ops go to the
 * delta simulation together.  Starting plans are made to keep the ties
 * the same way (align_ties()).
 *
 * Chains start from `dp`, `owt` and then random plans (section 6.2 uses
 * data parallelism, an expert strategy and random ones), `chains` of them
 * with an equal share of the budget each.  A chain stops when its share
 * of the time is spent (never, without a budget: the driver's INFINITY
 * for --budget 0), after `proposals` proposals (0: no limit), or
 * when the best plan has not improved during the last half of its
 * proposals (counted, not timed, so a search that ends that way is the
 * same for the same seed however busy the machine is).  That last rule
 * applies once the chain has made as many proposals as there are
 * single-operator moves (every configuration of every operator on every
 * block of devices), at most MCMC_MIN_PROPOSALS: a small space is
 * explored, and left, in a few thousand proposals; a large one is given
 * at least ten thousand before the search may call it converged.
 *
 * The search keeps to plans whose simulation stays within 1/16 of
 * the simulator's bound (sim/sim_size.h), so that each proposal is
 * simulated quickly and the delta simulation's garbage has room: the
 * pairs of shards that exchange data, which grow as the product of the
 * shard counts of a producer and a consumer that split differently, are
 * counted per edge and kept up to date through each proposal's changed
 * ops.  A proposal beyond the bound is rejected unsimulated; a start
 * beyond it (owt's model-parallel layers or a random plan on a thousand
 * devices) is replaced by where the search stands: the best plan so far,
 * or while none fits the plan the last chain ended with (at first every
 * operator on one device).  On the small clusters of the papers no plan
 * comes near the bound.
 *
 * Statistics: proposals, proposals_per_s (over the whole search, setup
 * and starting plans included), proposal_us (mean microseconds per
 * proposal inside the chains: propose, simulate, accept or undo),
 * acceptance, planner_est_ms (the best simulated iteration ms), and the
 * plan's search curve (best ms over time).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/err.h"
#include "algo/ties.h"
#include "driver.h"
#include "planner.h"
#include "sim/sim.h"
#include "plan/plan_build.h"
#include "plan/plan_check.h"
#include "sim/sim_delta.h"
#include "sim/sim_size.h"
#include "cost/cost.h"

/* A chain runs at least this many proposals, or as many as there are
 * single-operator moves when that is fewer, before it may stop for want
 * of improvement. */
#define MCMC_MIN_PROPOSALS 10000

/* The share of the simulator's bound a searched plan may take. */
#define MCMC_SIM_SHARE 16

struct mcmc {
	const struct planner_input *input;
	struct plan *out;
	struct sim s;
	int ndev, full;
	double beta, unit_s;     /* cost unit: 1% of the first start's time */
	int64_t max_props;       /* per chain; 0 none */
	int64_t min_props;       /* before a chain may stop unimproved */
	uint64_t rng;
	int *cfg_ofs, (*cfg)[NDIMS]; /* per op: its degree vectors */
	int ncfg, cap_cfg;
	struct plan cur, best;
	double cur_s, best_s;    /* iteration times; INFINITY: does not fit */
	int64_t proposals, accepted;
	double t0, prop_s;       /* search start; seconds inside the chains' loops */
	int *devs, *old_devs;
	/* tie groups (ties_ring()), NULL when the model has none; the ops a
	 * proposal changed (chg[0], the one drawn) and the degrees and
	 * devices the others had (follow_ties()) */
	int *ring, *chg, (*tie_deg)[NDIMS], *tie_devs;
	/* the pairs of shards of each edge of the current plan (edge k of op
	 * c at in_ofs[c] + k; sim_edge_pairs()), their sum, and each op's
	 * consumers (graph_consumers()) */
	int *in_ofs, *cons_ofs, *cons;
	int64_t *epairs, pairs;
};

static uint64_t next_rand(struct mcmc *mc)
{
	/* splitmix64 */
	uint64_t z = (mc->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int rand_below(struct mcmc *mc, int n)
{
	return (int)(next_rand(mc) % (uint64_t)n);
}

static double rand_unit(struct mcmc *mc)
{
	return (double)(next_rand(mc) >> 11) * 0x1.0p-53;
}

/* --- the configuration space ------------------------------------------ */

/* Every degree vector of op from dim d on, with `left` devices to share. */
static int enum_degrees(struct mcmc *mc, const struct op *op, int d, int left,
			int deg[NDIMS])
{
	int64_t size;

	if (d == NDIMS) {
		if (mc->ncfg >= mc->cap_cfg) {
			int cap = mc->cap_cfg ? 2 * mc->cap_cfg : 64;
			void *v = realloc(mc->cfg, (size_t)cap * sizeof *mc->cfg);

			if (!v)
				return ap_err(AP_EFAIL, NULL, 0, "out of memory");
			mc->cfg = v;
			mc->cap_cfg = cap;
		}
		memcpy(mc->cfg[mc->ncfg++], deg, sizeof mc->cfg[0]);
		return AP_OK;
	}
	deg[d] = 1;
	if (!(op->split_mask & (1u << d)) || shape_dim(&op->out, (enum dim_kind)d) < 0)
		return enum_degrees(mc, op, d + 1, left, deg);
	size = shape_size(&op->out, (enum dim_kind)d);
	for (int k = 1; k <= left; k++) {
		int st;

		if (size % k)
			continue;
		deg[d] = k;
		st = enum_degrees(mc, op, d + 1, left / k, deg);
		if (st)
			return st;
	}
	deg[d] = 1;
	return AP_OK;
}

/* The device count of configuration k, and the blocks of devices
 * random_config() may put it on. */
static int cfg_devices(const struct mcmc *mc, int k, int *nblocks)
{
	int prod = 1;

	for (int d = 0; d < NDIMS; d++)
		prod *= mc->cfg[k][d];
	*nblocks = mc->ndev % prod == 0 ? mc->ndev / prod : mc->ndev - prod + 1;
	return prod;
}

static int build_space(struct mcmc *mc)
{
	const struct graph *g = mc->input->g;
	int deg[NDIMS], st = AP_OK;

	mc->cfg_ofs = calloc((size_t)g->nops + 1, sizeof *mc->cfg_ofs);
	if (!mc->cfg_ofs)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int i = 0; i < g->nops && !st; i++) {
		mc->cfg_ofs[i] = mc->ncfg;
		st = enum_degrees(mc, &g->ops[i], 0, mc->ndev, deg);
	}
	mc->cfg_ofs[g->nops] = mc->ncfg;
	/* the single-operator moves */
	mc->min_props = 0;
	for (int k = 0; k < mc->ncfg && mc->min_props < MCMC_MIN_PROPOSALS; k++) {
		int nblocks;

		cfg_devices(mc, k, &nblocks);
		mc->min_props += nblocks;
	}
	if (mc->min_props > MCMC_MIN_PROPOSALS)
		mc->min_props = MCMC_MIN_PROPOSALS;
	return st;
}

/* Gives op i of p a random configuration: degrees from its space, a block
 * of devices. */
static int random_config(struct mcmc *mc, struct plan *p, int i)
{
	int a = mc->cfg_ofs[i], n = mc->cfg_ofs[i + 1] - a, k = a + rand_below(mc, n);
	int nblocks, prod = cfg_devices(mc, k, &nblocks);
	int first = rand_below(mc, nblocks) * (mc->ndev % prod == 0 ? prod : 1);

	for (int j = 0; j < prod; j++)
		mc->devs[j] = first + j;
	return plan_place(p, i, 0, mc->cfg[k], mc->devs);
}

/* Puts op j of p on op i's devices with a random configuration of j's
 * space on that many; *ok 0 (and j unchanged) when it has none. */
static int place_like(struct mcmc *mc, struct plan *p, int j, int i, int *ok)
{
	int a = mc->cfg_ofs[j], b = mc->cfg_ofs[j + 1], nd = p->ops[i].ndev, n = 0, nb, k;

	for (k = a; k < b; k++)
		n += cfg_devices(mc, k, &nb) == nd;
	*ok = n > 0;
	if (!n)
		return AP_OK;
	n = rand_below(mc, n);
	for (k = a; cfg_devices(mc, k, &nb) != nd || n-- > 0; k++)
		;
	return plan_place(p, j, 0, mc->cfg[k], p->ops[i].devices);
}

/* Puts the ops chg[1..n) of p back as follow_ties() found them. */
static int put_back(struct mcmc *mc, struct plan *p, int n)
{
	int st = AP_OK;

	for (int k = 1; k < n && !st; k++)
		st = plan_place(p, mc->chg[k], 0, mc->tie_deg[k],
				mc->tie_devs + (size_t)k * mc->ndev);
	return st;
}

/* Op i of p has changed: every other op of its tie group goes onto its
 * devices (the top comment), listed in chg after i with what it had.
 * *n: the ops changed, i included, or 0 when one cannot follow (the
 * others are put back then; i is the caller's). */
static int follow_ties(struct mcmc *mc, struct plan *p, int i, int *n)
{
	int st = AP_OK, ok = 1;

	*n = 1;
	mc->chg[0] = i;
	for (int j = mc->ring[i]; j != i && ok && !st; j = mc->ring[j]) {
		if (plan_same_devices(&p->ops[i], &p->ops[j]))
			continue;
		memcpy(mc->tie_deg[*n], p->ops[j].degree, sizeof mc->tie_deg[0]);
		memcpy(mc->tie_devs + (size_t)*n * mc->ndev, p->ops[j].devices,
		       (size_t)p->ops[j].ndev * sizeof(int));
		mc->chg[(*n)++] = j;
		st = place_like(mc, p, j, i, &ok);
	}
	if (!st && !ok) {
		st = put_back(mc, p, *n);
		*n = 0;
	}
	return st;
}

/* A starting plan keeps the ties: the others of each tie group follow its
 * first op, and where one cannot, the whole group runs unsplit on that
 * op's first device (every op's space has the unsplit configuration). */
static int align_ties(struct mcmc *mc, struct plan *p)
{
	static const int one[NDIMS] = { 1, 1, 1, 1, 1 };
	int st = AP_OK, n;

	for (int i = 0; i < p->nops && !st; i++) {
		int first = mc->ring[i] != i;

		/* once per group, from its first op */
		for (int j = mc->ring[i]; j != i && first; j = mc->ring[j])
			first = j > i;
		if (!first)
			continue;
		st = follow_ties(mc, p, i, &n);
		if (st || n)
			continue;
		mc->devs[0] = p->ops[i].devices[0];
		for (int j = mc->ring[i]; !st; j = mc->ring[j]) {
			st = plan_place(p, j, 0, one, mc->devs);
			if (j == i)
				break;
		}
	}
	return st;
}

/* dst takes src's configurations (both one stage over all devices). */
static int copy_configs(struct plan *dst, const struct plan *src)
{
	int st = AP_OK;

	for (int i = 0; i < src->nops && !st; i++)
		st = plan_place(dst, i, 0, src->ops[i].degree, src->ops[i].devices);
	return st;
}

/* --- the size of its simulation ------------------------------------------- */

static int size_init(struct mcmc *mc)
{
	const struct graph *g = mc->input->g;
	int st = graph_consumers(g, &mc->cons_ofs, &mc->cons);

	mc->in_ofs = malloc(((size_t)g->nops + 1) * sizeof *mc->in_ofs);
	if (!st && !mc->in_ofs)
		st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
	if (st)
		return st;
	mc->in_ofs[0] = 0;
	for (int i = 0; i < g->nops; i++)
		mc->in_ofs[i + 1] = mc->in_ofs[i] + g->ops[i].nin;
	mc->epairs = calloc((size_t)mc->in_ofs[g->nops] + 1, sizeof *mc->epairs);
	return mc->epairs ? AP_OK : ap_err(AP_EFAIL, NULL, 0, "out of memory");
}

static void count_edge(struct mcmc *mc, const struct plan *p, int c, int k)
{
	int64_t *e = &mc->epairs[mc->in_ofs[c] + k], n = sim_edge_pairs(mc->input->g, p, c, k);

	mc->pairs += n - *e;
	*e = n;
}

/* Every edge counted under p. */
static void count_all(struct mcmc *mc, const struct plan *p)
{
	const struct graph *g = mc->input->g;

	for (int c = 0; c < g->nops; c++)
		for (int k = 0; k < g->ops[c].nin; k++)
			count_edge(mc, p, c, k);
}

/* The edges into and out of the n ops ops[] counted again under p. */
static void count_ops(struct mcmc *mc, const struct plan *p, const int *ops, int n)
{
	const struct graph *g = mc->input->g;

	for (int j = 0; j < n; j++) {
		int i = ops[j];

		for (int k = 0; k < g->ops[i].nin; k++)
			count_edge(mc, p, i, k);
		for (int e = mc->cons_ofs[i]; e < mc->cons_ofs[i + 1]; e++)
			for (int k = 0; k < g->ops[mc->cons[e]].nin; k++)
				if (g->ops[mc->cons[e]].in[k] == i)
					count_edge(mc, p, mc->cons[e], k);
	}
}

/* Whether the simulation of p, counted, passes the search's bound. */
static int too_large(const struct mcmc *mc, const struct plan *p)
{
	return sim_pairs_bytes(p, mc->pairs) > SIM_MAX_BYTES / MCMC_SIM_SHARE;
}

/* --- the chain ------------------------------------------------------------- */

static double iter_or_inf(const struct sim_result *r)
{
	return sim_fits(r) ? r->iter_s : INFINITY;
}

static int improve(struct mcmc *mc)
{
	int st;

	mc->best_s = mc->cur_s;
	st = copy_configs(&mc->best, &mc->cur);
	if (!st)
		st = plan_add_curve(mc->out, now_s() - mc->t0, 1e3 * mc->best_s);
	return st;
}

/* A rejected proposal of op i, which had degrees old_deg on old_devs,
 * taken back: the ops it changed (n, the ties that followed i included)
 * as they were, and their edges counted again. */
static int take_back(struct mcmc *mc, int i, const int *old_deg, int n)
{
	int st = plan_place(&mc->cur, i, 0, old_deg, mc->old_devs);

	if (!st && n > 1)
		st = put_back(mc, &mc->cur, n);
	if (!st)
		count_ops(mc, &mc->cur, n > 1 ? mc->chg : &i, n);
	return st;
}

/* Metropolis-Hastings from the configurations of `start` until the chain's
 * deadline. */
static int chain(struct mcmc *mc, const struct plan *start, double deadline)
{
	static const struct sim_opts lean = { .optimizer = OPTIMIZER_SGD, .lean = 1 };
	const struct graph *g = mc->input->g;
	struct sim_result r;
	int64_t n = 0, last_better = 0;
	double t_loop;
	int st;

	st = copy_configs(&mc->cur, start);
	if (!st) {
		count_all(mc, &mc->cur);
		st = sim_run(&mc->s, &mc->cur, &lean, &r);
	}
	if (st)
		return st;
	mc->cur_s = iter_or_inf(&r);
	if (!(mc->unit_s > 0))
		mc->unit_s = r.iter_s / 100;
	if (mc->cur_s < mc->best_s && (st = improve(mc)))
		return st;
	t_loop = now_s();
	for (;; n++) {
		int i = rand_below(mc, g->nops), old_n;
		double new_s;
		int accept;

		if ((n & 15) == 0 && now_s() > deadline)
			break;
		if ((mc->max_props && n >= mc->max_props) ||
		    (n >= mc->min_props && last_better < n / 2))
			break;
		old_n = mc->cur.ops[i].ndev;
		memcpy(mc->old_devs, mc->cur.ops[i].devices, (size_t)old_n * sizeof(int));
		{
			int old_deg[NDIMS], nchg = 1;

			memcpy(old_deg, mc->cur.ops[i].degree, sizeof old_deg);
			st = random_config(mc, &mc->cur, i);
			if (!st && mc->ring && mc->ring[i] != i)
				st = follow_ties(mc, &mc->cur, i, &nchg);
			if (!st && !nchg) {
				/* a tied op cannot follow: rejected */
				mc->proposals++;
				st = plan_place(&mc->cur, i, 0, old_deg, mc->old_devs);
				if (st)
					return st;
				continue;
			}
			if (st)
				return st;
			count_ops(mc, &mc->cur, nchg > 1 ? mc->chg : &i, nchg);
			if (too_large(mc, &mc->cur)) {
				/* rejected unsimulated */
				mc->proposals++;
				st = take_back(mc, i, old_deg, nchg);
				if (st)
					return st;
				continue;
			}
			st = mc->full ? sim_run(&mc->s, &mc->cur, &lean, &r)
				      : sim_delta(&mc->s, &mc->cur, nchg > 1 ? mc->chg : &i, nchg, &r);
			if (st)
				return st;
			mc->proposals++;
			new_s = iter_or_inf(&r);
			if (isinf(new_s))
				accept = isinf(mc->cur_s);
			else
				accept = new_s <= mc->cur_s ||
					 rand_unit(mc) < exp(-mc->beta * (new_s - mc->cur_s) /
							      mc->unit_s);
			if (!accept) {
				st = take_back(mc, i, old_deg, nchg);
				if (st)
					return st;
				if (!mc->full)
					sim_undo(&mc->s);
				continue;
			}
		}
		mc->accepted++;
		mc->cur_s = new_s;
		if (new_s < mc->best_s) {
			last_better = n;
			st = improve(mc);
			if (st)
				return st;
		}
	}
	mc->prop_s += now_s() - t_loop;
	return AP_OK;
}

/* A starting point: a planner's plan, or a random one (name NULL). */
static int start_plan(struct mcmc *mc, const char *name, struct plan *p)
{
	const struct graph *g = mc->input->g;
	struct planner_input input = *mc->input;
	struct plan tmp;
	int st;

	input.opts = NULL;
	plan_init(&tmp);
	st = name ? planner_call(planner_find(name), &input, &tmp) : plan_alloc(&tmp, g, 1);
	for (int i = 0; i < g->nops && !st && !name; i++)
		st = random_config(mc, &tmp, i);
	if (!st)
		st = copy_configs(p, &tmp);
	if (!st && mc->ring)
		st = align_ties(mc, p);
	plan_release(&tmp);
	return st;
}

static int one_stage_plan(struct mcmc *mc, struct plan *p)
{
	int st = plan_alloc(p, mc->input->g, 1);

	return st ? st : plan_one_stage(p, mc->ndev, SCHED_GPIPE, 1);
}

static int plan_mcmc(const struct planner_input *input, struct plan *out)
{
	static const char *const starts[] = { "dp", "owt" };
	struct mcmc mc = { .input = input, .out = out, .best_s = INFINITY,
			   .beta = planner_real(input, "beta"),
			   .max_props = planner_int(input, "proposals"),
			   .full = planner_flag(input, "full-sim"),
			   .ndev = cluster_ndevices(input->c), .rng = input->seed };
	int nchains = planner_int(input, "chains"), st;
	struct plan start;
	double deadline;

	if (!(mc.beta >= 0) || nchains < 1 || mc.max_props < 0)
		return ap_err(AP_EINPUT, "mcmc", 0, "expected beta >= 0, chains >= 1 and "
			      "proposals >= 0");
	mc.t0 = now_s();
	deadline = mc.t0 + input->budget_s;
	plan_init(&mc.cur);
	plan_init(&mc.best);
	plan_init(&start);
	mc.devs = calloc((size_t)mc.ndev, sizeof *mc.devs);
	mc.old_devs = calloc((size_t)mc.ndev, sizeof *mc.old_devs);
	st = !mc.devs || !mc.old_devs ? ap_err(AP_EFAIL, NULL, 0, "out of memory") : AP_OK;
	if (!st)
		st = build_space(&mc);
	if (!st && ties_any(input->g)) {
		st = ties_ring(input->g, &mc.ring);
		mc.chg = malloc(((size_t)input->g->nops + 1) * sizeof *mc.chg);
		mc.tie_deg = malloc(((size_t)input->g->nops + 1) * sizeof *mc.tie_deg);
		mc.tie_devs = malloc(((size_t)input->g->nops + 1) * (size_t)mc.ndev *
				     sizeof *mc.tie_devs);
		if (!st && (!mc.chg || !mc.tie_deg || !mc.tie_devs))
			st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	if (!st)
		st = one_stage_plan(&mc, &mc.cur);
	if (!st)
		st = one_stage_plan(&mc, &mc.best);
	if (!st)
		st = one_stage_plan(&mc, &start);
	if (!st)
		st = size_init(&mc);
	if (!st)
		st = sim_init(&mc.s, input->g, input->p, input->c);
	for (int c = 0; c < nchains && !st; c++) {
		double left = deadline - now_s();

		if (c > 0 && left <= 0)
			break;
		st = start_plan(&mc, c < 2 ? starts[c] : NULL, &start);
		if (!st) {
			count_all(&mc, &start);
			if (too_large(&mc, &start))
				st = copy_configs(&start, isinf(mc.best_s) ? &mc.cur : &mc.best);
		}
		if (!st)
			st = chain(&mc, &start, now_s() + left / (nchains - c));
	}
	sim_release(&mc.s);
	if (!st && isinf(mc.best_s))
		st = ap_err(AP_EINPUT, "mcmc", 0, "no plan of '%s' found that fits the "
			    "devices' memory", input->g->name);
	if (!st)
		st = plan_one_stage(out, mc.ndev, SCHED_GPIPE, 1);
	if (!st)
		st = copy_configs(out, &mc.best);
	if (!st)
		st = plan_set_stat(out, "proposals", (double)mc.proposals);
	if (!st)
		st = plan_set_stat(out, "proposals_per_s",
				   mc.proposals / fmax(now_s() - mc.t0, 1e-9));
	if (!st)
		st = plan_set_stat(out, "proposal_us",
				   mc.proposals ? 1e6 * mc.prop_s / mc.proposals : 0);
	if (!st)
		st = plan_set_stat(out, "acceptance",
				   mc.proposals ? (double)mc.accepted / mc.proposals : 0);
	out->est_ms = 1e3 * mc.best_s;
	plan_release(&mc.cur);
	plan_release(&mc.best);
	plan_release(&start);
	free(mc.devs);
	free(mc.old_devs);
	free(mc.cfg_ofs);
	free(mc.cfg);
	free(mc.ring);
	free(mc.chg);
	free(mc.tie_deg);
	free(mc.tie_devs);
	free(mc.in_ofs);
	free(mc.cons_ofs);
	free(mc.cons);
	free(mc.epairs);
	return st;
}

const struct planner planner_mcmc = {
	.name = "mcmc",
	.description = "Metropolis-Hastings over SOAP configurations, simulator cost, delta re-simulation",
	.follows = "FlexFlow, Jia et al., SysML 2019",
	.plan = plan_mcmc,
	.options = (const struct planner_option[]){
		{ "beta", POPT_REAL, "5", NULL,
		  "acceptance: exp(-beta x slowdown in % of the first start)" },
		{ "chains", POPT_INT, "3", NULL, "chains: from dp, owt, then random plans" },
		{ "proposals", POPT_INT, "0", NULL, "proposals per chain at most (0: no limit)" },
		{ "full-sim", POPT_FLAG, NULL, NULL,
		  "simulate every proposal in full, not by delta (to measure it)" },
		{ 0 },
	},
	.estimate = PLANNER_EST_SIM,
};
