/*
 * What the files of the ilp planner share (docs/conventions.md, rule 9):
 * one layout's program, struct sub, which ilp_program.c builds and ilp.c
 * solves, and the indexing of its columns.  The cost model the program
 * is made of is ilp.h's.
 */
#ifndef AUTOPAR_ILP_IMPL_H
#define AUTOPAR_ILP_IMPL_H

#include <glpk.h>

#include "ilp.h"

#define GIB ((double)(1 << 30))
#define MS 1e3

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

static inline int xcol(const struct sub *sb, int g, int s, int c)
{
	return sb->xbase[g] + s * sb->nlive[g] + sb->live[sb->live_ofs[g] + c];
}

#define LIVE(sb, g, c) ((sb)->live[(sb)->live_ofs[g] + (c)] >= 0)

/* Builds program sb->P of instance sb->x: its columns, objective and
 * rows. */
int ilp_build_program(struct sub *sb);
/* Frees what sb holds, its instance included. */
void ilp_sub_release(struct sub *sb);

#endif
