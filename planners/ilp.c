/*
 * ilp: parallelisation as a mixed-integer linear program solved by GLPK,
 * so that autopar can say how far each heuristic planner is from the
 * optimum of a well-defined model (ilp.h describes the model).
 *
 * For every layout of K stages (K dividing the device count) and m
 * micro-batches (powers of two dividing the batch; m = 1 for one stage)
 * one program, built by ilp_program.c (its top comment gives the
 * variables and rows).
 *
 * Search: the programs are built and their LP relaxations solved first;
 * the one-stage program starts from the best of `dp`, `owt` and `single` evaluated
 * under the model (given to GLPK as a heuristic solution); then the
 * programs are solved in order of their relaxations, each with an
 * objective cutoff at the incumbent and a share of what is left of the
 * budget.  A program whose relaxation cannot beat the incumbent is
 * proven without branching.  The bound is the least of the programs'
 * bounds; the gap (incumbent - bound) / incumbent is 0 when every program
 * was solved to optimality.
 */
#include "ilp_impl.h"

#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/ties.h"
#include "driver.h"
#include "util/clock.h"
#include "util/err.h"
#include "sim/sim.h"

/* GLPK's return codes, as a message. */
static const char *glp_msg(int rc)
{
	switch (rc) {
	case GLP_EBADB: return "invalid initial basis";
	case GLP_ESING: return "singular basis matrix";
	case GLP_ECOND: return "ill-conditioned basis matrix";
	case GLP_EBOUND: return "invalid bounds";
	case GLP_EFAIL: return "solver failure";
	case GLP_EITLIM: return "iteration limit exceeded";
	case GLP_ETMLIM: return "time limit exceeded";
	case GLP_ENOPFS: return "no primal feasible solution";
	case GLP_ENODFS: return "no dual feasible solution";
	case GLP_EROOT: return "no optimal basis for the root relaxation";
	default: return "error";
	}
}

/* A GLPK call whose failure (but a time limit) is reported and returned. */
#define GLP_CHECK(call)                                                               \
	do {                                                                          \
		int glp_rc_ = (call);                                                 \
		if (glp_rc_ && glp_rc_ != GLP_ETMLIM)                                 \
			return ap_err(AP_EFAIL, "ilp", 0, "GLPK: %s: %s (%d)", #call, \
				      glp_msg(glp_rc_), glp_rc_);                     \
	} while (0)

/* GLPK's time limit for t seconds: at least 1 ms, and an int however
 * long t is (an unlimited budget is INFINITY, driver.c). */
static int ms_of(double t)
{
	return t <= 0.001 ? 1 : t > 1e6 ? 1000000000 : (int)(t * 1e3);
}

static int ms_left(double deadline)
{
	return ms_of(deadline - now_s());
}

/* Solves the relaxation; lp_ms is INFINITY when it is infeasible. */
static int relax(struct sub *sb, double deadline)
{
	glp_smcp sp;
	int status;

	glp_init_smcp(&sp);
	sp.msg_lev = GLP_MSG_OFF;
	sp.tm_lim = ms_left(deadline);
	GLP_CHECK(glp_simplex(sb->P, &sp));
	status = glp_get_status(sb->P);
	sb->lp_ms = status == GLP_OPT ? glp_get_obj_val(sb->P)
		    : status == GLP_NOFEAS ? INFINITY : 0;
	sb->feasible = status == GLP_OPT;
	return AP_OK;
}

/* The assignment of the program's current MIP solution (or LP solution,
 * `mip` 0, when every x is integral). */
static void read_assignment(const struct sub *sb, int mip, int *stage, int *cfg)
{
	const struct ilp_inst *x = &sb->x;

	for (int g = 0; g < x->ngroups; g++) {
		double best = -1;

		for (int s = 0; s < x->K; s++)
			for (int c = 0; c < x->grp[g].ncfg; c++) {
				double v;

				if (!LIVE(sb, g, c))
					continue;
				v = mip ? glp_mip_col_val(sb->P, xcol(sb, g, s, c))
					: glp_get_col_prim(sb->P, xcol(sb, g, s, c));
				if (v > best) {
					best = v;
					stage[g] = s;
					cfg[g] = c;
				}
			}
	}
}

/* The column values of an assignment: its x fixed, the rest from the LP,
 * into vals[1..ncols]; the bounds are restored after. */
static int assignment_cols(struct sub *sb, const int *stage, const int *cfg, double *vals,
			   double deadline)
{
	const struct ilp_inst *x = &sb->x;
	int ncols = glp_get_num_cols(sb->P), st;

	for (int g = 0; g < x->ngroups; g++)
		for (int s = 0; s < x->K; s++)
			for (int c = 0; c < x->grp[g].ncfg; c++)
				if (LIVE(sb, g, c)) {
					double v = s == stage[g] && c == cfg[g];

					glp_set_col_bnds(sb->P, xcol(sb, g, s, c), GLP_FX, v, v);
				}
	st = relax(sb, deadline);
	for (int j = 1; j <= ncols; j++)
		vals[j] = glp_get_col_prim(sb->P, j);
	for (int g = 0; g < x->ngroups; g++)
		for (int s = 0; s < x->K; s++)
			for (int c = 0; c < x->grp[g].ncfg; c++)
				if (LIVE(sb, g, c))
					glp_set_col_bnds(sb->P, xcol(sb, g, s, c), GLP_DB, 0, 1);
	return st;
}

struct cb_info {
	const double *warm; /* a heuristic solution for GLPK, or NULL */
	double lb;          /* the best bound seen in the tree */
};

static void callback(glp_tree *T, void *info)
{
	struct cb_info *ci = info;
	int p;

	if (glp_ios_reason(T) == GLP_IHEUR && ci->warm) {
		glp_ios_heur_sol(T, ci->warm);
		ci->warm = NULL;
	}
	p = glp_ios_best_node(T);
	if (p)
		ci->lb = fmax(ci->lb, glp_ios_node_bound(T, p));
}

struct incumbent {
	double obj_s;
	int sub;
	int *stage, *cfg;
};

struct search {
	const struct planner_input *input;
	struct sub *subs;
	int nsubs;
	struct incumbent best;
	int *stage, *cfg; /* scratch */
	double glpk_s;
	int64_t cols, rows;
};

static void consider(struct search *se, int k, const int *stage, const int *cfg)
{
	double obj = ilp_inst_eval(&se->subs[k].x, stage, cfg);
	int n = se->subs[k].x.ngroups;

	if (obj < se->best.obj_s) {
		se->best.obj_s = obj;
		se->best.sub = k;
		memcpy(se->best.stage, stage, (size_t)n * sizeof *stage);
		memcpy(se->best.cfg, cfg, (size_t)n * sizeof *cfg);
	}
}

/* The best of dp, owt and single that is a point of program k (one
 * stage); single always is, so there is an incumbent whenever one device
 * holds the model. */
static void warm_start(struct search *se, int k)
{
	static const char *const names[] = { "dp", "owt", "single" };

	for (int i = 0; i < 3; i++) {
		const struct planner *pl = planner_find(names[i]);
		struct planner_input input = *se->input;
		struct plan p;

		if (!pl)
			continue;
		input.opts = NULL;
		plan_init(&p);
		if (planner_call(pl, &input, &p) == AP_OK &&
		    ilp_inst_from_plan(&se->subs[k].x, &p, se->stage, se->cfg) == 0)
			consider(se, k, se->stage, se->cfg);
		plan_release(&p);
	}
}

/* Branch and bound on program k with an objective cutoff at the
 * incumbent (warm: give GLPK the incumbent as its first solution). */
static int solve(struct search *se, int k, double deadline, double share_s)
{
	struct sub *sb = &se->subs[k];
	int ncols = glp_get_num_cols(sb->P), st = AP_OK, status, rc;
	double *vals = NULL, t0 = now_s(), inc_ms = MS * se->best.obj_s;
	struct cb_info ci = { .lb = sb->lp_ms };
	glp_iocp ip;

	if (se->best.sub == k) {
		vals = malloc(((size_t)ncols + 1) * sizeof *vals);
		if (!vals)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		st = assignment_cols(sb, se->best.stage, se->best.cfg, vals, deadline);
		ci.warm = vals;
	} else if (isfinite(inc_ms)) {
		/* cutoff: only a better plan is of interest here */
		int row = glp_add_rows(sb->P, 1), *idx = malloc(((size_t)ncols + 1) * sizeof *idx);
		double *val = malloc(((size_t)ncols + 1) * sizeof *val);
		int n = 0;

		if (!idx || !val) {
			free(idx);
			free(val);
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		}
		for (int j = 1; j <= ncols; j++)
			if (glp_get_obj_coef(sb->P, j) != 0) {
				idx[++n] = j;
				val[n] = glp_get_obj_coef(sb->P, j);
			}
		glp_set_mat_row(sb->P, row, n, idx, val);
		glp_set_row_bnds(sb->P, row, GLP_UP, 0, inc_ms);
		free(idx);
		free(val);
	}
	if (!st)
		st = relax(sb, deadline);
	if (st || !sb->feasible) {
		/* nothing better than the incumbent here */
		sb->bound_ms = st ? 0 : inc_ms;
		sb->solved = !st;
		free(vals);
		se->glpk_s += now_s() - t0;
		return st;
	}
	glp_init_iocp(&ip);
	ip.msg_lev = GLP_MSG_OFF;
	ip.presolve = GLP_OFF;
	ip.cb_func = callback;
	ip.cb_info = &ci;
	ip.tm_lim = ms_of(fmin(share_s, deadline - now_s()));
	rc = glp_intopt(sb->P, &ip);
	free(vals);
	se->glpk_s += now_s() - t0;
	if (rc && rc != GLP_ETMLIM)
		return ap_err(AP_EFAIL, "ilp", 0, "GLPK: glp_intopt: %s (%d)", glp_msg(rc), rc);
	status = glp_mip_status(sb->P);
	if (status == GLP_OPT || status == GLP_FEAS) {
		read_assignment(sb, 1, se->stage, se->cfg);
		consider(se, k, se->stage, se->cfg);
	}
	if (status == GLP_OPT) {
		sb->bound_ms = glp_mip_obj_val(sb->P);
		sb->solved = 1;
	} else if (status == GLP_NOFEAS) {
		sb->bound_ms = inc_ms;
		sb->solved = 1;
	} else {
		sb->bound_ms = fmin(ci.lb, MS * se->best.obj_s);
	}
	return AP_OK;
}

static int by_lp(const void *a, const void *b, void *ctx)
{
	const struct sub *s = ctx;
	double x = s[*(const int *)a].lp_ms, y = s[*(const int *)b].lp_ms;

	return (x > y) - (x < y);
}

/* Insertion sort of the program indices by relaxation (few programs). */
static void order(const struct search *se, int *idx, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && by_lp(&idx[j - 1], &idx[j], se->subs) > 0; j--) {
			int t = idx[j];

			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
}

static int record(struct search *se, struct plan *out, int optimal, double bound_ms)
{
	double inc_ms = MS * se->best.obj_s;
	double gap = optimal ? 0 : inc_ms > 0 ? (inc_ms - bound_ms) / inc_ms : 1;
	int st = ilp_inst_plan(&se->subs[se->best.sub].x, se->best.stage, se->best.cfg, out);
	int dropped = 0, groups = se->subs[se->best.sub].x.ngroups;

	for (int k = 0; k < se->nsubs; k++)
		dropped += se->subs[k].x.ndropped;
	out->est_ms = inc_ms;
	out->bound_ms = optimal ? inc_ms : bound_ms;
	out->gap = gap > 0 ? gap : 0;
	if (!st)
		st = plan_set_stat(out, "optimal", optimal);
	if (!st)
		st = plan_set_stat(out, "variables", (double)se->cols);
	if (!st)
		st = plan_set_stat(out, "constraints", (double)se->rows);
	if (!st)
		st = plan_set_stat(out, "solve_s", se->glpk_s);
	if (!st)
		st = plan_set_stat(out, "programs", se->nsubs);
	if (!st)
		st = plan_set_stat(out, "groups", groups);
	if (!st)
		st = plan_set_stat(out, "dropped_configs", dropped);
	return st;
}

/* A bound of a layout without its program: every group at its cheapest
 * configuration, the stages perfectly balanced, nothing else counted:
 * sum_s t_s + (m - 1) max_s t_s >= C (1 + (m - 1) / K). */
static double quick_bound_ms(const struct ilp_inst *x)
{
	double c = 0;

	for (int g = 0; g < x->ngroups; g++) {
		double best = INFINITY;

		for (int k = 0; k < x->grp[g].ncfg; k++)
			best = fmin(best, x->grp[g].cfg[k].fwd_s + x->grp[g].cfg[k].bwd_s);
		c += best;
	}
	return MS * c * (1 + (x->m - 1.0) / x->K);
}

/* Before any program is built: the fewest stages of a layout (K stages
 * of ndev / K devices, at most ILP_MAX_LAYOUT of either, K at most max_k)
 * must be some, and no more than the model's tied weights allow, which
 * hold every operator on a path between two of a tie group's members in
 * the stage of the group (ties_forced()): a model whose whole body lies
 * between its embedding and the output layer that shares its table, as
 * a GPT's, runs as few stages as it has operators outside that path,
 * plus one, and no program of more has a point. */
static int check_layouts(const struct planner_input *input, int max_k)
{
	const struct graph *g = input->g;
	int ndev = cluster_ndevices(input->c), kmin = 0, most, tied, st;

	for (int K = 1; K <= max_k && K <= ILP_MAX_LAYOUT && !kmin; K++)
		if (ndev % K == 0 && ndev / K <= ILP_MAX_LAYOUT)
			kmin = K;
	if (!kmin)
		return ap_err(AP_EINPUT, "ilp", 0, "no layout of %d devices as equal stages: "
			      "expected at most %d stages (--max-stages %d) of at most %d devices",
			      ndev, max_k < ILP_MAX_LAYOUT ? max_k : ILP_MAX_LAYOUT, max_k,
			      ILP_MAX_LAYOUT);
	st = ties_forced(g, &most, &tied);
	if (!st && g->nops - most + 1 < kmin)
		st = ap_err(AP_EINPUT, "ilp", 0, "'%s' ties the weight of '%s' to '%s', which "
			    "holds %d of its %d operators in one stage, so it runs as at most %d "
			    "stages, but %d devices need at least %d stages of at most %d devices",
			    g->name, g->ops[tied].name, g->ops[g->ops[tied].a.tie].name, most,
			    g->nops, g->nops - most + 1, ndev, kmin, ILP_MAX_LAYOUT);
	return st;
}

static int plan_ilp(const struct planner_input *input, struct plan *out)
{
	const struct graph *g = input->g;
	int ndev = cluster_ndevices(input->c), max_mb = planner_int(input, "max-microbatches");
	int max_k = planner_int(input, "max-stages"), collapse = !planner_flag(input, "no-collapse");
	double deadline = now_s() + input->budget_s, bound_ms = INFINITY;
	struct search se = { .input = input, .best = { .obj_s = INFINITY, .sub = -1 } };
	int st = AP_OK, optimal = 1, *idx = NULL, nsolve = 0;

	if (max_mb < 1 || max_k < 0)
		return ap_err(AP_EINPUT, "ilp", 0, "max-microbatches must be at least 1 and "
			      "max-stages at least 0");
	if (max_k == 0 || max_k > ndev)
		max_k = ndev;
	st = check_layouts(input, max_k);
	if (st)
		return st;
	glp_term_out(GLP_OFF);
	se.subs = calloc((size_t)ndev * 32 + 1, sizeof *se.subs);
	se.best.stage = calloc((size_t)g->nops + 1, sizeof(int));
	se.best.cfg = calloc((size_t)g->nops + 1, sizeof(int));
	se.stage = calloc((size_t)g->nops + 1, sizeof(int));
	se.cfg = calloc((size_t)g->nops + 1, sizeof(int));
	idx = calloc((size_t)ndev * 32 + 1, sizeof *idx);
	if (!se.subs || !se.best.stage || !se.best.cfg || !se.stage || !se.cfg || !idx) {
		st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	/* build every program and solve its relaxation */
	for (int K = 1; K <= max_k && !st; K++) {
		if (ndev % K)
			continue;
		for (int m = 1; m <= (K > 1 ? max_mb : 1) && !st; m *= 2) {
			struct sub *sb = &se.subs[se.nsubs];
			int b;

			if (g->batch % m)
				continue;
			if (now_s() > deadline) {
				optimal = 0; /* a layout never looked at */
				bound_ms = 0;
				continue;
			}
			b = ilp_inst_build(&sb->x, input, K, m, collapse, 1);
			if (b == AP_EFAIL)
				st = b; /* out of memory; a layout that cannot be is skipped */
			if (b)
				continue;
			se.nsubs++;
			sb->lp_ms = quick_bound_ms(&sb->x);
			if (sb->lp_ms >= MS * se.best.obj_s * (1 - 1e-9)) {
				/* cannot beat the incumbent: no program needed */
				sb->bound_ms = sb->lp_ms;
				sb->solved = 1;
				continue;
			}
			st = ilp_build_program(sb);
			if (!st && K == 1)
				warm_start(&se, se.nsubs - 1);
			if (!st) {
				double t0 = now_s();

				st = relax(sb, deadline);
				se.glpk_s += now_s() - t0;
			}
			if (!st) {
				se.cols += glp_get_num_cols(sb->P);
				se.rows += glp_get_num_rows(sb->P);
				sb->built = 1;
			}
		}
	}
	for (int k = 0; k < se.nsubs; k++)
		if (se.subs[k].built && (se.subs[k].feasible || se.best.sub == k))
			idx[nsolve++] = k;
		else if (se.subs[k].built && isinf(se.subs[k].lp_ms))
			se.subs[k].solved = 1; /* nothing fits: bound +inf */
	order(&se, idx, nsolve);
	/* the warm-started program first, then by relaxation */
	for (int i = 0; i < nsolve; i++)
		if (idx[i] == se.best.sub) {
			memmove(idx + 1, idx, (size_t)i * sizeof *idx);
			idx[0] = se.best.sub;
			break;
		}
	for (int i = 0; i < nsolve && !st; i++) {
		struct sub *sb = &se.subs[idx[i]];
		double left = deadline - now_s();

		if (sb->lp_ms >= MS * se.best.obj_s * (1 - 1e-9)) {
			sb->bound_ms = sb->lp_ms;
			sb->solved = 1;
			continue;
		}
		if (left <= 0) {
			sb->bound_ms = sb->lp_ms;
			continue;
		}
		st = solve(&se, idx[i], deadline, left / (nsolve - i));
	}
	for (int k = 0; k < se.nsubs && !st; k++) {
		optimal &= se.subs[k].solved;
		if (!se.subs[k].solved)
			bound_ms = fmin(bound_ms, se.subs[k].bound_ms);
	}
	bound_ms = fmin(bound_ms, MS * se.best.obj_s);
	if (!st && se.best.sub < 0) {
		int tried = 0;

		for (int k = 0; k < se.nsubs; k++)
			tried += se.subs[k].built;
		if (optimal && tried)
			st = ap_err(AP_EINPUT, "ilp", 0, "no configuration of '%s' fits the "
				    "devices' memory (%.3g GiB each) in any of the %d stage "
				    "layouts", g->name,
				    (double)se.subs[0].x.mem_cap / GIB, tried);
		else /* the input is fine; the search ran out of time (exit 1) */
			st = ap_err(AP_EFAIL, "ilp", 0, "GLPK found no integer solution for "
				    "'%s' within the budget of %g s, and neither dp, owt nor "
				    "single fits memory to fall back on: raise --budget, or plan "
				    "with a heuristic planner (-P pipedream, -P graphpipe)",
				    g->name, input->budget_s);
	}
	if (!st)
		st = record(&se, out, optimal, bound_ms);
out:
	for (int k = 0; se.subs && k < se.nsubs; k++)
		ilp_sub_release(&se.subs[k]);
	free(se.subs);
	free(se.best.stage);
	free(se.best.cfg);
	free(se.stage);
	free(se.cfg);
	free(idx);
	glp_free_env();
	return st;
}

const struct planner planner_ilp = {
	.name = "ilp",
	.description = "mixed-integer program solved by GLPK: configurations, stages, resharding",
	.follows = "Alpa's intra-op ILP, OSDI 2022",
	.plan = plan_ilp,
	.options = (const struct planner_option[]){
		{ "max-microbatches", POPT_INT, "16", NULL,
		  "micro-batches of pipelined layouts: powers of two up to this" },
		{ "max-stages", POPT_INT, "0", NULL, "most pipeline stages (0: the device count)" },
		{ "no-collapse", POPT_FLAG, NULL, NULL,
		  "repeated layers choose their configurations independently" },
		{ 0 },
	},
	.may_refuse = 1,
	.estimate = PLANNER_EST_MODEL,
};
