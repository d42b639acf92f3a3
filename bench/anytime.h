/*
 * The anytime curves of a benchmark: for every cell whose plan carries a
 * search curve (plan.h; the mcmc planner's), the best predicted iteration
 * time its search had found after each point in time, one row per point,
 * in anytime.csv next to the results CSV.  scripts/anytime.gp draws it:
 * search time against plan quality.
 */
#ifndef AUTOPAR_ANYTIME_H
#define AUTOPAR_ANYTIME_H

#include <stddef.h>

#include "plan/plan.h"
#include "results.h"

#define ANYTIME_HEADER "model,batch,cluster,planner,seed,search_s,best_iter_ms"

/* The anytime file next to the results CSV at results_csv. */
void anytime_path(const char *results_csv, char *buf, size_t len);

/* Replaces the rows of row's cell (model, batch, cluster, planner, seed)
 * in the file at path (created when missing) by p's curve, atomically. */
int anytime_update(const char *path, const struct bench_row *row, const struct plan *p);

#endif
