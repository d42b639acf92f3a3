/*
 * The mixed-integer program of one layout of the ilp planner (ilp.c), K
 * stages of m micro-batches, built for GLPK from the cost model's
 * instance (ilp.h); ilp_impl.h holds what the two files share.
 *
 * Binary x[g][s][c] puts group g in stage s with configuration c;
 * continuous e[uv][a][b] are the products x[u][.][a] x[v][.][b] on every
 * edge, linearised as in Alpa's intra-op ILP (Zheng et al., OSDI 2022,
 * section 4.2) by making their marginals equal the x's, so the
 * resharding cost sum e R is linear.  Across stages (K > 1), stage(g) =
 * sum_s s y[g][s] must not decrease along an edge (written with prefix
 * sums A_g(s) = [stage(g) >= s]), w[uv] >= A_v(s) - A_u(s) marks a
 * crossing edge, and its extra cost over staying, the bottleneck share
 * rho[uv][s] of a resharding inside stage s, use the edge's own largest
 * cost as the big-M.  The exposed synchronisation S, the update U and
 * the bottleneck T are maxima of linear forms; memory is one row per
 * stage.
 */
#include "ilp_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "cost/cost.h"

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
							((double)cost_state_factor(OPTIMIZER_SGD) * (double)cf->param_bytes +
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

/* Tied weights (ilp.h): the groups of a tied pair in the same stage on
 * as many devices, a row per stage and device count: the x of u's
 * configurations of that count in that stage sum to those of v's. */
static int tie_rows(struct rows *r, const struct sub *sb)
{
	const struct ilp_inst *x = &sb->x;
	const struct graph *g = x->input->g;
	int st = AP_OK;

	for (int i = 0; i < g->nops && !st; i++) {
		int u = x->group_of[i], v = g->ops[i].a.tie >= 0 ? x->group_of[g->ops[i].a.tie] : u;

		for (int s = 0; s < x->K && u != v && !st; s++)
			/* a configuration runs whole on one device or on
			 * every device of its stage (ilp.h) */
			for (int n = 1; n <= x->per && !st; n = n < x->per ? x->per : n + 1) {
				for (int c = 0; c < x->grp[u].ncfg; c++)
					if (LIVE(sb, u, c) && x->grp[u].cfg[c].ndev == n)
						term(r, xcol(sb, u, s, c), 1);
				for (int c = 0; c < x->grp[v].ncfg; c++)
					if (LIVE(sb, v, c) && x->grp[v].cfg[c].ndev == n)
						term(r, xcol(sb, v, s, c), -1);
				if (r->ntouched)
					st = row_end(r, GLP_FX, 0, 0);
			}
	}
	return st;
}

int ilp_build_program(struct sub *sb)
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
	if (!st)
		st = tie_rows(&r, sb);
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

void ilp_sub_release(struct sub *sb)
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
