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
#include "model/tensor.h"

/* Floats of the slice of op's parameters for cn output channels. */
int64_t params_count(const struct graph *g, int i, int64_t cn);
/* The whole parameter tensor of op i, initialised from seed by the
 * model's scheme (graph.h's enum param_init, the model file's `init`
 * line, models/FORMAT.md).  Layernorm's and batchnorm's scales start at
 * one and their shifts at zero in both.  `torch`: PyTorch's default
 * scales, uniform in +-1/sqrt(fan_in) for weights and biases, N(0, 1)-like
 * tables for embeddings.  `gpt2`: the weights of linear, conv2d,
 * attention and embedding from N(0, std^2) (std 0.02 unless the line
 * gives one), those of the projections that write into the residual
 * stream (attention's output projection, an MLP's second linear) with
 * std / sqrt(2 x layers), biases zero; lstm keeps PyTorch's defaults.
 * AP_EFAIL only when out of memory. */
int params_init(const struct graph *g, int i, uint64_t seed, float *full);
/* Copies between the whole tensor and the slice of channels
 * [c_lo, c_lo + cn): to_full 0 extracts the slice, 1 writes it back. */
void params_slice(const struct graph *g, int i, int64_t c_lo, int64_t cn, float *full,
		  float *slice, int to_full);

/* Under Megatron's tensor parallelism (model/tensor.h): the floats of
 * tensor rank tr's slice of op i's parameters in role r over t ranks,
 * and copies between it and the whole tensor as params_slice().  A
 * column-parallel linear holds its output features' rows of W and b as
 * above; a row-parallel one the columns of W for its input features and
 * the whole b; attention split by heads the rows of Wq, Wk, Wv and their
 * biases for its heads' channels, the columns of Wo for them and the
 * whole bo; an embedding split by vocabulary its ids' rows of the table;
 * every other role the whole tensor. */
int64_t params_tensor_count(const struct graph *g, int i, enum tp_role r, int tr, int t);
void params_tensor_slice(const struct graph *g, int i, enum tp_role r, int tr, int t,
			 float *full, float *slice, int to_full);

#endif
