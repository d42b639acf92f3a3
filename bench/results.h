/*
 * The benchmark's results CSV (docs/formats.md): one row per (model,
 * batch, scaling, cluster, profile, planner, seed) with the search time, the
 * simulator's prediction, the planner's own estimate and bound where it has
 * them, measured throughput when executed, and the speedup over data
 * parallelism on the same row.  The file is rewritten atomically (after
 * each second's rows, by `bench`), so an interrupted run keeps what it
 * finished and a rerun skips those cells.
 */
#ifndef AUTOPAR_RESULTS_H
#define AUTOPAR_RESULTS_H

#include <stdint.h>

#include "plan/plan.h"

#define RESULTS_HEADER                                                                  \
	"model,batch,scaling,cluster,profile,planner,seed,budget_s,status,search_s,pred_iter_ms," \
	"pred_samples_s,peak_mem_bytes,bubble,planner_est_ms,bound_ms,gap,"               \
	"measured_samples_s,speedup_vs_dp,fits,error"

/* Numbers that do not apply are NAN (written as an empty field). */
struct bench_row {
	/* as the matrix names them (bench/matrix.h: at most PLAN_NAME_LEN - 1) */
	char model[PLAN_NAME_LEN], cluster[PLAN_NAME_LEN], profile[PLAN_NAME_LEN];
	char planner[PLAN_NAME_LEN];
	int64_t batch;        /* 0: the model did not load (its own batch) */
	int weak;             /* the batch was given per device (batch.h) */
	uint64_t seed;
	double budget_s;
	int ok;
	double search_s, pred_iter_ms, pred_samples_s, peak_mem_bytes, bubble;
	double planner_est_ms, bound_ms, gap, measured_samples_s, speedup_vs_dp;
	int fits;             /* the plan fits memory: 1, 0, -1 unknown */
	char error[512];
};

struct results {
	int n, cap;
	struct bench_row *rows;
	int *slots, nslots; /* open addressing over the cells' keys, -1 empty */
};

void bench_row_init(struct bench_row *r);

/* Reads path; a missing file is an empty table. */
int results_read(const char *path, struct results *t);
int results_write(const char *path, const struct results *t);
void results_release(struct results *t);
int results_add(struct results *t, const struct bench_row *r);
/* Index of the row of that cell, or -1 (a hash lookup). */
int results_find(const struct results *t, const char *model, int64_t batch, int weak,
		 const char *cluster, const char *planner, uint64_t seed);
/* speedup_vs_dp of every row: its samples/s over the samples/s of the `dp`
 * row with the same model, batch, scaling, cluster, profile and seed. */
void results_speedups(struct results *t);

#endif
