/*
 * Inside the plan module: what plan.c, plan_read.c and plan_write.c share.
 * Not an interface: only those three include it.
 */
#ifndef AUTOPAR_PLAN_IMPL_H
#define AUTOPAR_PLAN_IMPL_H

#include "plan/plan.h"

/* The schema a plan file declares in its "format" and "version". */
#define PLAN_FORMAT "autopar-plan"
#define PLAN_VERSION 1

/* One plan_op per operator of g, degree 1 on every dim and no devices yet;
 * at least one is allocated, so NULL means out of memory. */
struct plan_op *plan_ops_new(const struct graph *g);
/* Whether name is one that struct plan keeps in a field of its own
 * ("seconds", "seed", "curve", the common statistics), never a
 * planner-specific statistic's. */
int plan_stat_reserved(const char *name);

/* The common statistics: their JSON names and their fields' offsets in
 * struct plan (doubles, NAN when absent). */
#define PLAN_NCOMMON 3
extern const char *const plan_common_names[PLAN_NCOMMON];
extern const size_t plan_common_ofs[PLAN_NCOMMON];
#define PLAN_COMMON(p, k) (*(double *)((char *)(p) + plan_common_ofs[k]))

#endif
