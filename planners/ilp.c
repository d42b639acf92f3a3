/*
 * ilp: parallelisation as a mixed-integer linear program solved by GLPK,
 * so that autopar can say how far each heuristic planner is from the
 * optimum of a well-defined model (ilp.h describes the model).
 *
 * For every layout of K stages (K dividing the device count) and m
 * micro-batches (powers of two dividing the batch; m = 1 for one stage)
 * one program: binary x[g][s][c] puts group g in stage s with
 * configuration c; continuous e[uv][a][b] are the products
 * x[u][.][a] x[v][.][b] on every edge, linearised as in Alpa's intra-op
 * ILP (Zheng et al., OSDI 2022, section 4.2) by making their marginals
 * equal the x's, so the resharding cost sum e R is linear.  Across stages
 * (K > 1), stage(g) = sum_s s y[g][s] must not decrease along an edge
 * (written with prefix sums A_g(s) = [stage(g) >= s]), w[uv] >=
 * A_v(s) - A_u(s) marks a crossing edge, and its extra cost over staying,
 * the bottleneck share rho[uv][s] of a resharding inside stage s, use the
 * edge's own largest cost as the big-M.  The exposed synchronisation S,
 * the update U and the bottleneck T are maxima of linear forms; memory is
 * one row per stage.
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
#include "ilp.h"

#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "err.h"
#include "sim.h"

#define GIB ((double)(1 << 30))
#define MS 1e3

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

/* Rows are built in a dense accumulator so terms on one column add up. */
struct rows {
	glp_prob *P;
	int n, cap, *ia, *ja;
	double *ar;
	double *acc;
	int *touched, ntouched;
	char *mark;
};

static void term(struct rows *r, int col, double v)
{
	if (v == 0)
		return;
	if (!r->mark[col]) {
		r->mark[col] = 1;
		r->touched[r->ntouched++] = col;
	}
	r->acc[col] += v;
}

static int row_end(struct rows *r, int type, double lb, double ub)
{
	int row = glp_add_rows(r->P, 1);

	glp_set_row_bnds(r->P, row, type, lb, ub);
	if (r->n + r->ntouched + 1 > r->cap) {
		int cap = 2 * (r->n + r->ntouched + 1);
		int *ia = realloc(r->ia, (size_t)cap * sizeof *ia);
		int *ja = ia ? realloc(r->ja, (size_t)cap * sizeof *ja) : NULL;
		double *ar = ja ? realloc(r->ar, (size_t)cap * sizeof *ar) : NULL;

		if (ia)
			r->ia = ia;
		if (ja)
			r->ja = ja;
		if (!ar)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		r->ar = ar;
		r->cap = cap;
	}
	for (int k = 0; k < r->ntouched; k++) {
		int col = r->touched[k];

		r->mark[col] = 0;
		if (r->acc[col] == 0)
			continue; /* terms that cancelled */
		r->n++;
		r->ia[r->n] = row;
		r->ja[r->n] = col;
		r->ar[r->n] = r->acc[col];
		r->acc[col] = 0;
	}
	r->ntouched = 0;
	return AP_OK;
}

/* One program: K stages of m micro-batches. */
struct sub {
	struct ilp_inst x;
	glp_prob *P;
	int *live;      /* [group][cfg]: position among live configs, -1 dropped */
	int *live_ofs;  /* [group]: offset into live */
	int *nlive;     /* [group] */
	int *xbase;     /* [group]: first x column */
	int *ebase;     /* [edge]: first e column */
	int *wcol, *kcol, *rcol; /* [edge], [edge], [edge * K] (0: none) */
	int tcol, scol, ucol, *wscol;
	double lp_ms, bound_ms;
	int built, feasible, solved;
};

static int xcol(const struct sub *sb, int g, int s, int c)
{
	return sb->xbase[g] + s * sb->nlive[g] + sb->live[sb->live_ofs[g] + c];
}

static int add_cols(glp_prob *P, int n, int kind, double ub)
{
	int first = glp_add_cols(P, n);

	for (int j = first; j < first + n; j++) {
		glp_set_col_kind(P, j, kind);
		if (kind == GLP_BV)
			continue;
		glp_set_col_bnds(P, j, ub > 0 ? GLP_DB : GLP_LO, 0, ub);
	}
	return first;
}

static int alloc_index(struct sub *sb)
{
	struct ilp_inst *x = &sb->x;
	int total = 0;

	for (int g = 0; g < x->ngroups; g++)
		total += x->grp[g].ncfg;
	sb->live = malloc((size_t)(total ? total : 1) * sizeof *sb->live);
	sb->live_ofs = calloc((size_t)x->ngroups, sizeof *sb->live_ofs);
	sb->nlive = calloc((size_t)x->ngroups, sizeof *sb->nlive);
	sb->xbase = calloc((size_t)x->ngroups, sizeof *sb->xbase);
	sb->ebase = calloc((size_t)x->nedges + 1, sizeof *sb->ebase);
	sb->wcol = calloc((size_t)x->nedges + 1, sizeof *sb->wcol);
	sb->kcol = calloc((size_t)x->nedges + 1, sizeof *sb->kcol);
	sb->rcol = calloc(((size_t)x->nedges + 1) * (size_t)x->K, sizeof *sb->rcol);
	sb->wscol = calloc((size_t)x->K, sizeof *sb->wscol);
	if (!sb->live || !sb->live_ofs || !sb->nlive || !sb->xbase || !sb->ebase || !sb->wcol ||
	    !sb->kcol || !sb->rcol || !sb->wscol)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	total = 0;
	for (int g = 0; g < x->ngroups; g++) {
		const struct ilp_group *gr = &x->grp[g];

		sb->live_ofs[g] = total;
		for (int c = 0; c < gr->ncfg; c++)
			sb->live[total + c] = gr->cfg[c].alias == c ? sb->nlive[g]++ : -1;
		total += gr->ncfg;
	}
	return AP_OK;
}

/* The columns; groups tied in a one-stage program share theirs. */
static void make_cols(struct sub *sb)
{
	struct ilp_inst *x = &sb->x;
	glp_prob *P = sb->P;

	for (int g = 0; g < x->ngroups; g++) {
		const struct ilp_group *gr = &x->grp[g];

		if (x->K == 1 && gr->tie >= 0) {
			sb->xbase[g] = sb->xbase[gr->tie];
		} else {
			sb->xbase[g] = add_cols(P, x->K * sb->nlive[g], GLP_BV, 1);
		}
		for (int s = 0; s < x->K; s++)
			for (int c = 0; c < gr->ncfg; c++)
				if (sb->live[sb->live_ofs[g] + c] >= 0)
					glp_set_obj_coef(P, xcol(sb, g, s, c),
							 MS * (gr->cfg[c].fwd_s + gr->cfg[c].bwd_s));
	}
	for (int e = 0; e < x->nedges; e++) {
		const struct ilp_edge *ed = &x->edge[e];
		const struct ilp_group *gu = &x->grp[ed->u], *gv = &x->grp[ed->v];

		sb->ebase[e] = add_cols(P, sb->nlive[ed->u] * sb->nlive[ed->v], GLP_CV, 1);
		for (int a = 0; a < gu->ncfg; a++)
			for (int b = 0; b < gv->ncfg; b++) {
				int pa = sb->live[sb->live_ofs[ed->u] + a];
				int pb = sb->live[sb->live_ofs[ed->v] + b];

				if (pa >= 0 && pb >= 0)
					glp_set_obj_coef(P, sb->ebase[e] + pa * sb->nlive[ed->v] + pb,
							 MS * ed->same_s[a * gv->ncfg + b]);
			}
		if (x->K > 1) {
			sb->wcol[e] = add_cols(P, 1, GLP_CV, 1);
			sb->kcol[e] = add_cols(P, 1, GLP_CV, 0);
			glp_set_obj_coef(P, sb->kcol[e], 1);
			if (x->m > 1) {
				sb->rcol[e * x->K] = add_cols(P, x->K, GLP_CV, 0);
				for (int s = 1; s < x->K; s++)
					sb->rcol[e * x->K + s] = sb->rcol[e * x->K] + s;
			}
		}
	}
	if (x->K > 1 && x->m > 1) {
		sb->tcol = add_cols(P, 1, GLP_CV, 0);
		glp_set_obj_coef(P, sb->tcol, x->m - 1);
	}
	sb->scol = add_cols(P, 1, GLP_CV, 0);
	sb->ucol = add_cols(P, 1, GLP_CV, 0);
	glp_set_obj_coef(P, sb->scol, 1);
	glp_set_obj_coef(P, sb->ucol, 1);
	for (int s = 0; s < x->K; s++)
		sb->wscol[s] = add_cols(P, 1, GLP_CV, 0);
}

/* The edge variable of configurations a of u and b of v (both live). */
static int ecol(const struct sub *sb, int e, int a, int b)
{
	const struct ilp_edge *ed = &sb->x.edge[e];

	return sb->ebase[e] + sb->live[sb->live_ofs[ed->u] + a] * sb->nlive[ed->v] +
	       sb->live[sb->live_ofs[ed->v] + b];
}

#define LIVE(sb, g, c) ((sb)->live[(sb)->live_ofs[g] + (c)] >= 0)

/* A_g(s) = [stage(g) >= s] with coefficient v. */
static void prefix(struct rows *r, const struct sub *sb, int g, int s, double v)
{
	for (int t = s; t < sb->x.K; t++)
		for (int c = 0; c < sb->x.grp[g].ncfg; c++)
			if (LIVE(sb, g, c))
				term(r, xcol(sb, g, t, c), v);
}

static int edge_rows(struct rows *r, const struct sub *sb, int e)
{
	const struct ilp_inst *x = &sb->x;
	const struct ilp_edge *ed = &x->edge[e];
	const struct ilp_group *gu = &x->grp[ed->u], *gv = &x->grp[ed->v];
	double dmax = 0, rmax = 0;
	int st = AP_OK;

	/* marginals: sum_b e[a][b] = x[u][.][a], sum_a e[a][b] = x[v][.][b] */
	for (int a = 0; a < gu->ncfg && !st; a++) {
		if (!LIVE(sb, ed->u, a))
			continue;
		for (int b = 0; b < gv->ncfg; b++)
			if (LIVE(sb, ed->v, b))
				term(r, ecol(sb, e, a, b), 1);
		for (int s = 0; s < x->K; s++)
			term(r, xcol(sb, ed->u, s, a), -1);
		st = row_end(r, GLP_FX, 0, 0);
	}
	for (int b = 0; b < gv->ncfg && !st; b++) {
		if (!LIVE(sb, ed->v, b))
			continue;
		for (int a = 0; a < gu->ncfg; a++)
			if (LIVE(sb, ed->u, a))
				term(r, ecol(sb, e, a, b), 1);
		for (int s = 0; s < x->K; s++)
			term(r, xcol(sb, ed->v, s, b), -1);
		st = row_end(r, GLP_FX, 0, 0);
	}
	if (x->K == 1 || st)
		return st;
	for (int a = 0; a < gu->ncfg; a++)
		for (int b = 0; b < gv->ncfg; b++)
			if (LIVE(sb, ed->u, a) && LIVE(sb, ed->v, b)) {
				int i = a * gv->ncfg + b;

				dmax = fmax(dmax, MS * (ed->cross_s[i] - ed->same_s[i]));
				rmax = fmax(rmax, MS * ed->same_s[i]);
			}
	for (int s = 1; s < x->K && !st; s++) {
		/* the DAG: A_v(s) >= A_u(s); crossing: w >= A_v(s) - A_u(s) */
		prefix(r, sb, ed->v, s, 1);
		prefix(r, sb, ed->u, s, -1);
		st = row_end(r, GLP_LO, 0, 0);
		term(r, sb->wcol[e], 1);
		prefix(r, sb, ed->v, s, -1);
		prefix(r, sb, ed->u, s, 1);
		if (!st)
			st = row_end(r, GLP_LO, 0, 0);
	}
	if (dmax > 0 && !st) {
		/* kappa >= sum e (cross - same) - dmax (1 - w) */
		term(r, sb->kcol[e], 1);
		for (int a = 0; a < gu->ncfg; a++)
			for (int b = 0; b < gv->ncfg; b++)
				if (LIVE(sb, ed->u, a) && LIVE(sb, ed->v, b))
					term(r, ecol(sb, e, a, b),
					     -MS * (ed->cross_s[a * gv->ncfg + b] -
						    ed->same_s[a * gv->ncfg + b]));
		term(r, sb->wcol[e], -dmax);
		st = row_end(r, GLP_LO, -dmax, 0);
	}
	for (int s = 0; s < x->K && x->m > 1 && rmax > 0 && !st; s++) {
		/* rho[s] >= sum e same - rmax (1 - [u in s]) - rmax w */
		term(r, sb->rcol[e * x->K + s], 1);
		for (int a = 0; a < gu->ncfg; a++)
			for (int b = 0; b < gv->ncfg; b++)
				if (LIVE(sb, ed->u, a) && LIVE(sb, ed->v, b))
					term(r, ecol(sb, e, a, b), -MS * ed->same_s[a * gv->ncfg + b]);
		for (int a = 0; a < gu->ncfg; a++)
			if (LIVE(sb, ed->u, a))
				term(r, xcol(sb, ed->u, s, a), -rmax);
		term(r, sb->wcol[e], rmax);
		st = row_end(r, GLP_LO, -rmax, 0);
	}
	return st;
}

/* Rows of the stages: non-empty, bottleneck, update, memory. */
static int stage_rows(struct rows *r, const struct sub *sb)
{
	const struct ilp_inst *x = &sb->x;
	int st = AP_OK;

	for (int s = 0; s < x->K && !st; s++) {
		int inflight = x->K > 1 ? (x->K - s < x->m ? x->K - s : x->m) : 1;

		for (int pass = 0; pass < 4 && !st; pass++) {
			if ((pass == 0 && x->K == 1) || (pass == 1 && !sb->tcol))
				continue;
			for (int g = 0; g < x->ngroups; g++)
				for (int c = 0; c < x->grp[g].ncfg; c++) {
					const struct ilp_cfg *cf = &x->grp[g].cfg[c];
					double v[4] = { 1, -MS * (cf->fwd_s + cf->bwd_s),
							-MS * cf->upd_s,
							(3.0 * (double)cf->param_bytes +
							 inflight * (double)cf->act_bytes) / GIB };

					if (LIVE(sb, g, c))
						term(r, xcol(sb, g, s, c), v[pass]);
				}
			if (pass == 0) {
				st = row_end(r, GLP_LO, 1, 0);
			} else if (pass == 1) {
				term(r, sb->tcol, 1);
				for (int e = 0; e < x->nedges; e++)
					if (sb->rcol[e * x->K + s])
						term(r, sb->rcol[e * x->K + s], -1);
				st = row_end(r, GLP_LO, 0, 0);
			} else if (pass == 2) {
				term(r, sb->ucol, 1);
				st = row_end(r, GLP_LO, 0, 0);
			} else {
				term(r, sb->wscol[s], 1.0 / GIB);
				st = row_end(r, GLP_UP, 0, (double)x->mem_cap / GIB);
			}
		}
		/* the largest workspace of the stage */
		for (int g = 0; g < x->ngroups && !st; g++) {
			int any = 0;

			for (int c = 0; c < x->grp[g].ncfg; c++)
				if (LIVE(sb, g, c) && x->grp[g].cfg[c].ws_bytes > 0) {
					term(r, xcol(sb, g, s, c), -(double)x->grp[g].cfg[c].ws_bytes);
					any = 1;
				}
			if (any) {
				term(r, sb->wscol[s], 1);
				st = row_end(r, GLP_LO, 0, 0);
			}
		}
	}
	return st;
}

/* S >= (all-reduces of groups 0..i) - (backward of groups 0..i-1), for
 * every group i that may have an all-reduce. */
static int sync_rows(struct rows *r, const struct sub *sb)
{
	const struct ilp_inst *x = &sb->x;
	int st = AP_OK;

	for (int i = 0; i < x->ngroups && !st; i++) {
		int any = 0;

		for (int c = 0; c < x->grp[i].ncfg; c++)
			any |= LIVE(sb, i, c) && x->grp[i].cfg[c].ar_s > 0;
		if (!any)
			continue;
		term(r, sb->scol, 1);
		for (int g = 0; g <= i; g++)
			for (int s = 0; s < x->K; s++)
				for (int c = 0; c < x->grp[g].ncfg; c++) {
					const struct ilp_cfg *cf = &x->grp[g].cfg[c];

					if (LIVE(sb, g, c))
						term(r, xcol(sb, g, s, c),
						     MS * (-cf->ar_s + (g < i ? cf->bwd_s : 0)));
				}
		st = row_end(r, GLP_LO, 0, 0);
	}
	return st;
}

static int group_rows(struct rows *r, const struct sub *sb)
{
	const struct ilp_inst *x = &sb->x;
	int st = AP_OK;

	for (int g = 0; g < x->ngroups && !st; g++) {
		const struct ilp_group *gr = &x->grp[g];

		if (x->K == 1 && gr->tie >= 0)
			continue;
		for (int s = 0; s < x->K; s++)
			for (int c = 0; c < gr->ncfg; c++)
				if (LIVE(sb, g, c))
					term(r, xcol(sb, g, s, c), 1);
		st = row_end(r, GLP_FX, 1, 1);
		/* a repeated layer chooses as its first instance */
		for (int c = 0; c < gr->ncfg && gr->tie >= 0 && !st; c++) {
			if (!LIVE(sb, g, c))
				continue;
			for (int s = 0; s < x->K; s++) {
				term(r, xcol(sb, g, s, c), 1);
				term(r, xcol(sb, gr->tie, s, c), -1);
			}
			st = row_end(r, GLP_FX, 0, 0);
		}
	}
	return st;
}

static int build_program(struct sub *sb)
{
	struct rows r = { 0 };
	int st, ncols;

	sb->P = glp_create_prob();
	glp_set_obj_dir(sb->P, GLP_MIN);
	st = alloc_index(sb);
	if (st)
		return st;
	make_cols(sb);
	ncols = glp_get_num_cols(sb->P);
	r.P = sb->P;
	r.acc = calloc((size_t)ncols + 1, sizeof *r.acc);
	r.touched = calloc((size_t)ncols + 1, sizeof *r.touched);
	r.mark = calloc((size_t)ncols + 1, 1);
	if (!r.acc || !r.touched || !r.mark)
		st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
	if (!st)
		st = group_rows(&r, sb);
	for (int e = 0; e < sb->x.nedges && !st; e++)
		st = edge_rows(&r, sb, e);
	if (!st)
		st = stage_rows(&r, sb);
	if (!st)
		st = sync_rows(&r, sb);
	if (!st) {
		glp_load_matrix(sb->P, r.n, r.ia, r.ja, r.ar);
		glp_scale_prob(sb->P, GLP_SF_AUTO);
	}
	free(r.ia);
	free(r.ja);
	free(r.ar);
	free(r.acc);
	free(r.touched);
	free(r.mark);
	return st;
}

static void sub_release(struct sub *sb)
{
	if (sb->P)
		glp_delete_prob(sb->P);
	free(sb->live);
	free(sb->live_ofs);
	free(sb->nlive);
	free(sb->xbase);
	free(sb->ebase);
	free(sb->wcol);
	free(sb->kcol);
	free(sb->rcol);
	free(sb->wscol);
	ilp_inst_release(&sb->x);
	memset(sb, 0, sizeof *sb);
}

static int ms_left(double deadline)
{
	double t = deadline - now_s();

	return t <= 0.001 ? 1 : t > 1e6 ? 1000000000 : (int)(t * 1e3);
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
	const struct planner_input *in;
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
		struct planner_input in = *se->in;
		struct plan p;

		if (!pl)
			continue;
		in.opts = NULL;
		plan_init(&p);
		if (planner_seed(pl, &in, &p) == AP_OK &&
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
	ip.tm_lim = (int)(1e3 * fmax(0.001, fmin(share_s, deadline - now_s())));
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

static int plan_ilp(const struct planner_input *in, struct plan *out)
{
	const struct graph *g = in->g;
	int ndev = cluster_ndevices(in->c), max_mb = planner_int(in, "max-microbatches");
	int max_k = planner_int(in, "max-stages"), collapse = !planner_flag(in, "no-collapse");
	double deadline = now_s() + in->budget_s, bound_ms = INFINITY;
	struct search se = { .in = in, .best = { .obj_s = INFINITY, .sub = -1 } };
	int st = AP_OK, optimal = 1, *idx = NULL, nsolve = 0;

	if (max_mb < 1 || max_k < 0)
		return ap_err(AP_EINPUT, "ilp", 0, "max-microbatches must be at least 1 and "
			      "max-stages at least 0");
	if (max_k == 0 || max_k > ndev)
		max_k = ndev;
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
			b = ilp_inst_build(&sb->x, in, K, m, collapse, 1);
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
			st = build_program(sb);
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
				    g->name, in->budget_s);
	}
	if (!st)
		st = record(&se, out, optimal, bound_ms);
out:
	for (int k = 0; se.subs && k < se.nsubs; k++)
		sub_release(&se.subs[k]);
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
	.anchor = "Alpa's intra-op ILP, OSDI 2022",
	.plan = plan_ilp,
	.options = (const struct planner_option[]){
		{ "max-microbatches", POPT_INT, "16", NULL,
		  "micro-batches of pipelined layouts: powers of two up to this" },
		{ "max-stages", POPT_INT, "0", NULL, "most pipeline stages (0: the device count)" },
		{ "no-collapse", POPT_FLAG, NULL, NULL,
		  "repeated layers choose their configurations independently" },
		{ 0 },
	},
};
