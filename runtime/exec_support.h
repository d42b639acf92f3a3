/*
 * Which plans the runtime can execute (exec_support.c): the dims each
 * operator kind can be split along, the operators a backend implements,
 * tied weights, and the schedules round-robin replicas and recomputation
 * run under.  The plan validator (plan/plan_check.h) allows more than
 * this.
 */
#ifndef AUTOPAR_EXEC_SUPPORT_H
#define AUTOPAR_EXEC_SUPPORT_H

#include "backend.h"
#include "model/graph.h"
#include "plan/plan.h"

/* Whether backend be can run every operator of p (a plan that
 * plan_validate() accepts) as p splits it; one message naming the first
 * operator it cannot run (AP_EINPUT). */
int exec_supported(const struct graph *g, const struct plan *p, const struct backend *be,
		   const char *path);

/* Whether the runtime can execute op i of g split by degree[] on be (the
 * splits exec_supported() accepts). */
int exec_can_split(const struct backend *be, const struct graph *g, int i,
		   const int degree[NDIMS]);

/* Why op i, a linear tied to an embedding's weight, cannot run under p
 * (a bias, an asynchronous schedule, either split along c; that both run
 * on the same devices is plan_validate()'s rule), reported with ap_err
 * (naming path, which may be NULL) as AP_EINPUT; AP_OK when it can or is
 * not tied. */
int exec_tie_check(const struct graph *g, const struct plan *p, int i, const char *path);

#endif
