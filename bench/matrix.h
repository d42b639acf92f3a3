/*
 * Benchmark matrices: text files listing which (model, batch, cluster,
 * planner, seed) cells to run.  A matrix is a sequence of blocks, each the
 * cross product of its lists:
 *
 *     # comment
 *     models   alexnet vgg16 pipedream/resnet50
 *     batch    0 256 64/dev   # 0 = the model's own batch (default);
 *                            # N/dev: N per device (weak scaling, batch.h)
 *     clusters pipedream-a summit-4x4
 *     planners all           # or names; all = every registered planner
 *     seeds    1 2           # default 1
 *     budget   10            # seconds per search (default 10; 0: no limit)
 *     end
 *
 * Errors name file:line and what was expected.
 */
#ifndef AUTOPAR_MATRIX_H
#define AUTOPAR_MATRIX_H

#include <stdint.h>

#include "model/batch.h"

struct bench_cell {
	const char *model, *cluster, *planner; /* point into the matrix */
	struct batch_spec batch;               /* n 0 = the model's own */
	uint64_t seed;
	double budget_s;
};

struct matrix {
	int ncells, cap;
	struct bench_cell *cells;
	char **strings; /* owned words the cells point into */
	int nstrings, scap;
};

/* Expands every block of the file; planner names are checked against the
 * registry, "all" expands to every registered planner. */
int matrix_read(const char *path, struct matrix *m);
void matrix_release(struct matrix *m);

#endif
