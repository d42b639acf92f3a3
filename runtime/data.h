/*
 * Synthetic but learnable training data: inputs from a seeded generator,
 * labels from a fixed random teacher, so that the loss of every model
 * falls and every rank can make any part of any batch on its own.
 *
 * A run cycles through `pool` distinct batches (step s uses batch
 * s mod pool).  An input with a c dim holds uniform values in [-1, 1)
 * (an image: one value per 4 x 4 patch, plus a little noise per pixel, so
 * that a convolutional network can learn the teacher from fresh batches);
 * an input without one holds token ids, uniform below the vocabulary of
 * the embedding that reads it.  Labels come from the graph's first input:
 * token ids map through a random table (position by position when the
 * loss keeps the l dim), anything else through a random linear teacher
 * whose arg-max over the classes is the label; the teacher reads at most
 * 4096 evenly spaced values of a sample, so that labelling a
 * 224 x 224 image among 1000 classes takes milliseconds, not seconds.
 */
#ifndef AUTOPAR_DATA_H
#define AUTOPAR_DATA_H

#include <stdint.h>

#include "model/graph.h"
#include "region.h"

struct data {
	const struct graph *g;
	uint64_t seed;
	int pool;
	int64_t *id_range; /* per op: > 0 for an input of token ids */
	int teacher;       /* the input labels are computed from */
};

int data_init(struct data *d, const struct graph *g, uint64_t seed, int pool);
void data_release(struct data *d);

/* Region r of input op i in the batch of step `step` into buf (r's n
 * counts samples from the batch's start). */
void data_input(const struct data *d, int i, int64_t step, const struct region *r,
		float *buf);
/* Region r of the labels of loss op i (shaped like its output). */
int data_labels(const struct data *d, int i, int64_t step, const struct region *r,
		float *buf);

#endif
