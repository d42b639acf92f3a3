/*
 * Plan files: JSON through jansson, schema "autopar-plan" version 1
 * (docs/plan-format.md); read (plan_read.c) and written (plan_write.c).
 */
#ifndef AUTOPAR_PLAN_IO_H
#define AUTOPAR_PLAN_IO_H

#include <stddef.h>
#include <stdint.h>

#include "model/graph.h"
#include "plan/plan.h"

/* JSON; ops are matched to g by name and every op of g must be there.
 * "profile", "planner", "search", "predicted", a stage's "next" and an op's
 * "degree" (and any dim in it) may be left out.  Syntax errors read
 * "path:LINE: message"; schema errors "path: FIELD: message" with the field
 * as a path (ops.fc1.degree.c).  A name longer than PLAN_NAME_LEN - 1
 * characters is an error, not cut short.  On failure p is left empty
 * (plan_init). */
int plan_read(const char *path, const struct graph *g, struct plan *p);
/* What a plan file was made for, read before its model is loaded
 * (plan_read() needs the graph): the model, cluster, profile ("" when
 * the plan names none), batch, and where the model and profile came from
 * (struct plan_source).  The file's format and version are
 * checked; errors read as plan_read()'s. */
struct plan_head {
	char model[PLAN_NAME_LEN], cluster[PLAN_NAME_LEN], profile[PLAN_NAME_LEN];
	int64_t batch;
	struct plan_source src;
};
int plan_peek(const char *path, struct plan_head *h);
/* Writes atomically, pretty-printed, ops in graph order. */
int plan_write(const struct plan *p, const struct graph *g, const char *path);

#endif
