/*
 * megatron: Megatron-LM's PTD-P (Narayanan et al., "Efficient Large-Scale
 * Language Model Training on GPU Clusters Using Megatron-LM", SC 2021),
 * the expert baseline for transformers.  A model whose layers are one
 * repeat block (the zoo's GPTs) is cut into p pipeline groups of t x d
 * devices: t-way tensor parallelism inside a node (section 2.3; the
 * tensor rank innermost, so a tensor group shares the NVLink/NVSwitch of
 * a node), d-way data parallelism, p-way pipelining of equal runs of
 * layers, the embedding with the first layers and the final layernorm,
 * the LM head and the loss with the last (their tied weight shared by
 * the embedding group, section 2.1), optionally v model chunks per group
 * under the interleaved schedule (section 2.2).  It searches, as the
 * paper's section 3 reasons, over t (dividing the node and the heads), p
 * (dividing the layers), d = devices / (t p) (or, where the batch does
 * not split that many ways, the most it splits over, leaving devices
 * idle), the micro-batch size b,
 * the chunks v, recomputation (none, selective: attention's scores,
 * Korthikanti et al. 2023; full: every layer's ops but the residual add
 * that ends it, whose output is the checkpoint) and ZeRO-1 (the
 * distributed optimizer), in mixed precision with Adam by default,
 * and ranks every candidate by the simulator (sim.h, whose symmetric
 * pipeline simulation prices a candidate in about a millisecond at 3,072
 * GPUs); candidates whose parameter state cannot fit are dropped before
 * they are built; a recomputation is tried only when the cheaper ones
 * overflow (it only adds time).  With data parallelism it takes ZeRO-1,
 * which moves the bytes an all-reduce moves, updates 1/d of the weights
 * and keeps 1/d of their state, so no ZeRO is never faster.  The zero
 * option fixes the stage: zero=0 as the paper's 2021 code, which had no
 * distributed optimizer; zero=3 (a gather and a scatter every micro-
 * batch), whose many more fitting configurations at thousands of GPUs
 * the default search leaves out.  Its
 * estimate is the simulator's prediction of the plan it emits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "cost/transformer.h"
#include "model/tensor.h"
#include "plan/plan_build.h"
#include "plan/plan_check.h"
#include "sim/sim.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/intmath.h"

static const struct planner_option megatron_options[] = {
	{ "precision", POPT_CHOICE, "mixed", "mixed|fp32", "training precision" },
	{ "optimizer", POPT_CHOICE, "adam", "adam|sgd", "the optimizer the plan trains with" },
	{ "sp", POPT_FLAG, NULL, NULL, "also try sequence parallelism (Korthikanti et al. 2023)" },
	{ "schedule", POPT_CHOICE, "ptd-p", "ptd-p|1f1b|interleaved-1f1b|zb-h1|all",
	  "ptd-p: 1f1b and interleaved-1f1b, as the paper; all: zb-h1 too" },
	{ "tensor", POPT_INT, "0", NULL, "tensor-parallel size t (0: search)" },
	{ "pipeline", POPT_INT, "0", NULL, "pipeline-parallel size p (0: search)" },
	{ "chunks", POPT_INT, "0", NULL, "model chunks per device group v (0: search)" },
	{ "microbatch", POPT_INT, "0", NULL, "micro-batch size b (0: search 1, 2, 4, 8)" },
	{ "recompute", POPT_CHOICE, "auto", "auto|none|selective|full",
	  "auto: the cheapest that fits" },
	{ "zero", POPT_CHOICE, "auto", "auto|0|1|3",
	  "ZeRO stage; auto: 1 (with data parallelism)" },
	{ NULL, 0, NULL, NULL, NULL },
};

struct cand {
	int t, p, d, v, b, rc, zero, sp;
	enum sched_kind k;
};

struct mctx {
	const struct planner_input *in;
	int L;            /* layers: iterations of the repeat block */
	int *layer;       /* per op: its layer, -1 before the first, L after */
	int *tensor;      /* scratch for tensor_roles() */
	enum tp_role *role;
	enum precision prec;
	enum optimizer opt;
	struct sim s;
	struct plan cur, best;
	double best_s;
	int tried, fitted;
};

/* Each op's layer from its repeat block.  A model without a single block
 * of layers (a CNN, an MLP) is one layer: Megatron's data parallelism,
 * and its tensor parallelism where its operators allow. */
static void find_layers(struct mctx *x)
{
	const struct graph *g = x->in->g;
	int block = -1, seen = 0, single = 1;

	x->L = 0;
	for (int i = 0; i < g->nops; i++) {
		const struct op *op = &g->ops[i];

		if (op->block >= 0) {
			single &= block < 0 || op->block == block;
			block = op->block;
			x->L = op->iter + 1 > x->L ? op->iter + 1 : x->L;
			x->layer[i] = op->iter;
			seen = 1;
		} else {
			x->layer[i] = seen ? -2 : -1; /* -2: after the layers */
		}
	}
	if (!single || x->L == 0) {
		x->L = 1;
		for (int i = 0; i < g->nops; i++)
			x->layer[i] = 0;
		return;
	}
	for (int i = 0; i < g->nops; i++)
		if (x->layer[i] == -2)
			x->layer[i] = x->L;
}

/* Whether op i closes its layer: the last op of its iteration. */
static int ends_layer(const struct mctx *x, int i)
{
	return x->layer[i] >= 0 && x->layer[i] < x->L &&
	       (i + 1 >= x->in->g->nops || x->layer[i + 1] != x->layer[i]);
}

/* The stage of op i among S = p v: its layer's run of L / S layers, the
 * ops before the layers in the first, those after in the last. */
static int stage_of(const struct mctx *x, int i, int S)
{
	int l = x->layer[i];

	return l < 0 ? 0 : l >= x->L ? S - 1 : l / (x->L / S);
}

static int build(struct mctx *x, const struct cand *c, struct plan *out)
{
	const struct graph *g = x->in->g;
	int S = c->p * c->v, D = c->d;
	int deg[NDIMS] = { D, 1, 1, 1, 1 };
	int st = plan_alloc(out, g, S);

	for (int s = 0; s < S && !st; s++)
		st = plan_stage_range(out, s, (s % c->p) * D * c->t, D * c->t, 0);
	if (!st)
		st = plan_chain(out);
	for (int i = 0; i < g->nops && !st; i++) {
		int l = x->layer[i], s = stage_of(x, i, S);

		out->ops[i].tensor = c->t;
		if (l >= 0 && l < x->L) {
			if (c->rc == RECOMPUTE_FULL && !ends_layer(x, i))
				out->ops[i].recompute = RECOMPUTE_FULL;
			else if (c->rc == RECOMPUTE_SELECTIVE && g->ops[i].kind == OP_ATTENTION)
				out->ops[i].recompute = RECOMPUTE_SELECTIVE;
		}
		st = plan_place_range(out, i, s, deg, (s % c->p) * D * c->t);
	}
	plan_schedule(out, c->k, (int)(g->batch / ((int64_t)D * c->b)));
	out->precision = x->prec;
	out->zero = c->zero;
	out->seq_parallel = c->sp;
	out->has_optimizer = 1;
	out->optimizer = x->opt;
	return st;
}

/* Whether the weights, gradients and optimizer state every device of
 * candidate c holds fit its memory (plan_validate()'s check, made before
 * the candidate is built). */
static int weights_fit(const struct mctx *x, const struct cand *c)
{
	const struct graph *g = x->in->g;
	int S = c->p * c->v, D = c->d;
	double cap = (double)(x->in->c->mem_bytes > 0 ? x->in->c->mem_bytes
						      : x->in->p->dev.mem_bytes);
	double *group = calloc((size_t)c->p, sizeof *group), worst = 0;

	if (!group)
		return 0;
	for (int i = 0; i < g->nops; i++)
		group[stage_of(x, i, S) % c->p] += (double)g->ops[i].params /
						   (tp_role_splits_params(x->role[i]) ? c->t : 1);
	for (int q = 0; q < c->p; q++)
		worst = group[q] > worst ? group[q] : worst;
	free(group);
	return worst * cost_param_state_bytes(x->prec, x->opt, c->zero, D) <= cap;
}

/* Simulates candidate c; 1 when it fits memory, 0 when not, < 0 an
 * error.  The fastest that fits is kept in x->best. */
static int try(struct mctx *x, const struct cand *c)
{
	static const struct sim_opts lean = { .lean = 1 };
	struct sim_result r;
	int st;

	if (!weights_fit(x, c))
		return 0;
	/* the simulation checks the shape it needs; a new best is validated
	 * as a whole (the driver validates the one emitted again) */
	st = build(x, c, &x->cur);
	if (!st)
		st = sim_run(&x->s, &x->cur, &lean, &r);
	if (st)
		return -1;
	x->tried++;
	if (!sim_fits(&r))
		return 0;
	x->fitted++;
	if (r.iter_s < x->best_s) {
		struct plan tmp = x->best;

		if (plan_validate(&x->cur, x->in->g, x->in->c, "megatron"))
			return -1;
		x->best_s = r.iter_s;
		x->best = x->cur;
		x->cur = tmp;
		x->best.est_ms = 1e3 * r.iter_s;
	}
	return 1;
}


/* Whether v is allowed by the option `name`: its value, or any where it
 * is 0 (searched). */
static int fixed(const struct planner_input *in, const char *name, int v)
{
	int f = planner_int(in, name);

	return f <= 0 || f == v;
}

/* The schedules tried for v chunks on p groups. */
static int schedules(const char *want, int v, int p, enum sched_kind *k)
{
	int n = 0;

	if (v > 1) {
		if (!strcmp(want, "ptd-p") || !strcmp(want, "all") || !strcmp(want, "interleaved-1f1b"))
			k[n++] = SCHED_INTERLEAVED;
		return n;
	}
	if (!strcmp(want, "ptd-p") || !strcmp(want, "all") || !strcmp(want, "1f1b"))
		k[n++] = SCHED_1F1B;
	if (p > 1 && (!strcmp(want, "all") || !strcmp(want, "zb-h1")))
		k[n++] = SCHED_ZB_H1;
	return n;
}

static int search(struct mctx *x)
{
	static const int costlier[3] = { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL };
	const struct planner_input *in = x->in;
	const struct graph *g = in->g;
	int N = cluster_ndevices(in->c), sp_too = planner_flag(in, "sp");
	const char *want = planner_choice(in, "schedule"), *rcw = planner_choice(in, "recompute");
	int rc_lo = 0, rc_hi = 2, zs[1] = { 1 }, nz_auto = 1;
	const char *zw = planner_choice(in, "zero");
	double deadline = now_s() + in->budget_s;

	if (strcmp(zw, "auto")) {
		zs[0] = atoi(zw);
		nz_auto = 1;
	}
	if (strcmp(rcw, "auto"))
		rc_lo = rc_hi = !strcmp(rcw, "none") ? 0 : !strcmp(rcw, "selective") ? 1 : 2;
	for (int t = 1; t <= in->c->per_node && t <= N; t *= 2) {
		int bad;
		char why[160];

		for (int i = 0; i < g->nops; i++)
			x->tensor[i] = t;
		if (!fixed(in, "tensor", t) || N % t ||
		    tensor_roles(g, x->tensor, x->role, &bad, why, sizeof why))
			continue;
		for (int p = 1; p <= x->L && t * p <= N; p++) {
			/* all the devices where the batch splits over them, as
			 * the paper; else the most it splits over */
			int D = (int)largest_divisor(g->batch, N / (t * p));
			struct cand least = { .t = t, .p = p, .d = D, .v = 1, .zero = D > 1 ? 3 : 0 };

			if (!fixed(in, "pipeline", p) || x->L % p || !weights_fit(x, &least))
				continue;
			/* ZeRO shards over data parallelism: none without it */
			int nz = D > 1 ? nz_auto : 1, z0 = D > 1 ? -1 : 0;

			for (int b = 1; (g->batch / D) % b == 0 && b <= g->batch / D; b *= 2) {
				int m = (int)(g->batch / D / b);

				if (planner_int(in, "microbatch") <= 0 ? b > 8 : b > planner_int(in, "microbatch"))
					break;
				if (!fixed(in, "microbatch", b))
					continue;
				for (int v = 1; v <= x->L / p; v++) {
					enum sched_kind ks[2];
					int nk = schedules(want, v, p, ks);

					if (!fixed(in, "chunks", v) || (x->L / p) % v ||
					    (v > 1 && (m % p || p == 1)))
						continue;
					for (int ki = 0; ki < nk; ki++)
						for (int sp = 0; sp <= (sp_too && t > 1); sp++) {
							int done = 0;

							/* recomputation: a costlier setting
							 * only when the cheaper overflow */
							for (int zi = 0; zi < nz && !done; zi++)
								for (int rc = rc_lo; rc <= rc_hi && !done; rc++) {
									struct cand c = { t, p, D, v, b, costlier[rc],
											  z0 >= 0 ? z0 : zs[zi], sp,
											  ks[ki] };
									int r = try(x, &c);

									if (r < 0)
										return -1;
									done = r;
								}
							if (now_s() > deadline)
								return 0;
						}
				}
			}
		}
	}
	return 0;
}

static int plan_megatron(const struct planner_input *input, struct plan *out)
{
	const struct graph *g = input->g;
	struct mctx x = { .in = input, .best_s = INFINITY };
	const char *prec = planner_choice(input, "precision");
	int st;

	x.layer = malloc((size_t)g->nops * sizeof *x.layer);
	x.tensor = malloc((size_t)g->nops * sizeof *x.tensor);
	x.role = malloc((size_t)g->nops * sizeof *x.role);
	plan_init(&x.cur);
	plan_init(&x.best);
	if (!x.layer || !x.tensor || !x.role) {
		st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	find_layers(&x);
	if (optimizer_parse(planner_choice(input, "optimizer"), &x.opt) ||
	    precision_parse(prec, &x.prec)) {
		st = ap_err(AP_EINPUT, "--precision", 0, "megatron: unknown precision '%s'", prec);
		goto out;
	}
	st = sim_init(&x.s, g, input->p, input->c);
	if (st)
		goto out;
	st = search(&x);
	sim_release(&x.s);
	if (!st && !isfinite(x.best_s) && !x.tried)
		st = ap_err(AP_EINPUT, g->name, 0,
			    "megatron: no configuration of model '%s' on the %d devices of '%s' at batch %lld satisfies the sizes asked for and fits their memory (pipeline x chunks must divide its %d layers, tensor the node's %d devices and the heads, data parallelism the batch)",
			    g->name, cluster_ndevices(input->c), input->c->name,
			    (long long)g->batch, x.L, input->c->per_node);
	else if (!st && !isfinite(x.best_s))
		st = ap_err(AP_EINPUT, g->name, 0,
			    "megatron: no configuration of model '%s' on the %d devices of '%s' at batch %lld fits their memory (%d simulated; tensor size up to the node's %d devices, pipeline sizes dividing the %d layers, full recomputation and ZeRO-1 tried)",
			    g->name, cluster_ndevices(input->c), input->c->name,
			    (long long)g->batch, x.tried, input->c->per_node, x.L);
	if (st)
		goto out;
	plan_release(out);
	*out = x.best;
	plan_init(&x.best);
	st = plan_set_stat(out, "configs_simulated", x.tried);
	if (!st)
		st = plan_set_stat(out, "configs_fitting", x.fitted);
out:
	plan_release(&x.cur);
	plan_release(&x.best);
	free(x.layer);
	free(x.tensor);
	free(x.role);
	return st;
}

const struct planner planner_megatron = {
	.name = "megatron",
	.description = "Megatron-LM's PTD-P: tensor, pipeline (interleaved) and data parallelism, recomputation, ZeRO-1",
	.follows = "Narayanan et al. SC 2021",
	.plan = plan_megatron,
	.options = megatron_options,
	.may_refuse = 1,
	.estimate = PLANNER_EST_SIM,
	/* large models train in mixed precision with Adam; the zoo's cells
	 * compare in float32 with SGD */
	.same_footing = "precision=fp32,optimizer=sgd",
};
