/*
 * Inside the graphpipe planner: the state of one planning run, which the
 * planner (graphpipe.c: setup, the choice among candidates by
 * simulation, the plans) shares with its search (graphpipe_search.c: the
 * cost of a stage, the dynamic program over the series-parallel tree and
 * the candidates it collects).  Not an interface: only those two include
 * it.
 */
#ifndef AUTOPAR_GRAPHPIPE_IMPL_H
#define AUTOPAR_GRAPHPIPE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "planner.h"
#include "algo/sp_decomp.h"

struct gp_cell;

struct gp_stage {
	int a, b, d; /* positions a..b-1 on d devices */
};

struct gp_cand {
	int m, nst, ofs; /* its stages at ofs in gp.cst (their devices) */
	int lab;         /* the stage of each op at lab in gp.clab */
	double est, target;
};

struct gp {
	const struct planner_input *input;
	const struct graph *g;
	int n, D;
	int *cons_ofs, *cons;
	/* decomposition, and per node of it where its DP tables are in
	 * cells: tab[id], (nkid + 1) x (D + 1) cells; merge[id], a parallel
	 * child of a series: its tables H and G, 2 x (nkid + 1) x (D + 1)
	 * cells; else -1 */
	struct sp_decomp sp;
	int *tab, *merge;
	/* costs, in depth-first order */
	int ndiv;
	int64_t div[64];
	double *comp;     /* [ndiv][n + 1]: fwd + bwd of a div[s]-sample shard */
	int *comp_ready;  /* [ndiv] */
	double *par_pref, *act_pref;
	int *npar_pref, *nosplit_pref;
	int *lc_ofs, *lc; /* positions whose last consumer is at q */
	int *lastc;
	/* per op, the first and last position of its tie group (ties_span(),
	 * algo/ties.h); NULL when the model has no ties */
	int *tie_lo, *tie_hi;
	int *seen, seen_stamp;
	const struct link *link; /* the link guess transfers are priced on */
	double mem;
	/* the DP of one (m, T); feas: only whether T is feasible, each
	 * table row's cell 0 holding the fewest devices that meet T */
	int m, feas;
	int64_t mb;
	double T;
	struct gp_cell *cells;
	size_t ncells;
	/* candidates */
	struct gp_cand *cand;
	size_t cap_cand;
	int ncand;
	struct gp_stage *cst;
	size_t cap_cst;
	int ncst;
	int *clab;
	size_t cap_clab;
	int max_units;
	double deadline;
};

/* graphpipe_search.c.  After the tree is built: places the DP tables
 * and computes what the DP reads per position. */
int gp_tables(struct gp *gp);
/* One link guess (gp->link): both phases of the search over
 * the micro-batch counts, powers of two up to max_m that divide the
 * batch, adding their plans to the candidates. */
int gp_search(struct gp *gp, int max_m, int nverify);

#endif
