/*
 * The parameters of operators as the runtime holds them: the layout of an
 * op's whole parameter tensor, its seeded initial values, and the slice a
 * shard owns.  Parameters are indexed by the output channel (plan.h's
 * rule): a shard with output channels [c_lo, c_lo + cn) owns those rows of
 * a linear's or conv2d's weight and bias, of each of attention's four
 * projections and biases, those columns of an embedding table, those
 * entries of batchnorm's gamma and of its beta; ops that cannot be split
 * along c own everything.
 */
#ifndef AUTOPAR_PARAMS_H
#define AUTOPAR_PARAMS_H

#include <stdint.h>

#include "model/graph.h"

/* Floats of the slice of op's parameters for cn output channels. */
int64_t params_count(const struct graph *g, int i, int64_t cn);
/* The whole parameter tensor of op i, initialised from seed (PyTorch's
 * default scales: uniform in +-1/sqrt(fan_in) for weights and biases,
 * N(0, 1)-like tables for embeddings, ones and zeros for layernorm's and
 * batchnorm's scale and shift). */
void params_init(const struct graph *g, int i, uint64_t seed, float *full);
/* Copies between the whole tensor and the slice of channels
 * [c_lo, c_lo + cn): to_full 0 extracts the slice, 1 writes it back. */
void params_slice(const struct graph *g, int i, int64_t c_lo, int64_t cn, float *full,
		  float *slice, int to_full);

#endif
