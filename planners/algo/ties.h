/*
 * Tied weights (`tie=OP`, models/FORMAT.md): an operator that ties its
 * weight to another's holds the same tensor, so plan_validate()
 * (core/plan/plan_check.c) requires the two to run on the same set of
 * devices, and in one stage where either stage has round-robin replicas.
 * What the planners share to obey that by construction (ties.c).  A tie
 * group is the operators joined by ties, transitively (several may tie to
 * one); every function here leaves a model without ties as it is.
 */
#ifndef AUTOPAR_TIES_H
#define AUTOPAR_TIES_H

#include "model/graph.h"
#include "plan/plan.h"

/* Whether some operator of g ties its weight to another. */
int ties_any(const struct graph *g);

/* *ring (g->nops entries, the caller frees it): the next operator of each
 * one's tie group, in a cycle through the group; i itself for an
 * operator without ties.  AP_EFAIL (reported) when out of memory. */
int ties_ring(const struct graph *g, int **ring);

/* For operators at positions pos[i] of some order: lo[i] and hi[i], the
 * least and the greatest position in i's tie group (pos[i] for both when
 * i has no ties).  A contiguous run of positions holds the whole group of
 * every operator in it iff none of them has lo before the run or hi after
 * it. */
void ties_span(const struct graph *g, const int *pos, int *lo, int *hi);

/* For order[0..g->nops), a linear order of every operator: keep[k] for
 * k = 0 .. nops, whether a cut before position k (order[0..k) on one
 * side, order[k..nops) on the other) leaves every tie group on one side;
 * keep[0] and keep[nops] are 1.  AP_EFAIL (reported) when out of
 * memory. */
int ties_cuts(const struct graph *g, const int *order, char *keep);

/* The most operators one tie group holds in one stage of any plan whose
 * stages follow the graph's edges (an operator's inputs come from its
 * stage or earlier ones): the group's members and every operator on a
 * path between two of them, *most; 1 without ties.  *tied: an operator
 * of that group that ties its weight to another, -1 without ties.
 * AP_EFAIL (reported) when out of memory. */
int ties_forced(const struct graph *g, int *most, int *tied);

/* Whether plan p keeps every tie of g as plan_validate() requires: each
 * tied pair on the same set of devices, and in one stage where either
 * stage has round-robin replicas. */
int ties_kept(const struct plan *p, const struct graph *g);

#endif
