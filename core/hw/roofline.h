/*
 * The roofline estimate of an operator shard's forward and backward time on
 * a device, from its datasheet specs alone (roofline.c has the model and
 * its sources), and the degree vectors an op is split by when analytic
 * profiles are generated or a measured row is sought to scale from.
 * profile.c is the user: a lookup that finds no row falls back to
 * roofline_cost(), and profile_add_analytic() writes its answers as rows.
 */
#ifndef AUTOPAR_ROOFLINE_H
#define AUTOPAR_ROOFLINE_H

#include <stdint.h>

#include "hw/device.h"
#include "model/graph.h"
#include "hw/profile.h" /* struct op_cost */

/* Roofline time of op i's shard on dev (source COST_ROOFLINE). */
/* The arithmetic a kernel runs in: float32 (the zoo's, the PipeDream- and
 * FlexFlow-era papers'), or mixed precision, fp16/bf16 operands at the
 * tensor-core rate with float32 accumulation (Micikevicius et al., ICLR
 * 2018), as large language models train. */
enum precision {
	PREC_FP32,
	PREC_MIXED,
	NPRECISIONS
};

const char *precision_name(enum precision p);
int precision_parse(const char *s, enum precision *out);
/* Bytes of one activation, weight or gradient element. */
int precision_elem_bytes(enum precision p);

/* roofline_cost() in precision prec: under mixed precision at the
 * device's tensor rate and with 2-byte elements. */
void roofline_cost_at(const struct device_spec *dev, const struct graph *g, int i,
		      const int degree[NDIMS], enum precision prec, struct op_cost *out);
void roofline_cost(const struct device_spec *dev, const struct graph *g, int i,
		   const int degree[NDIMS], struct op_cost *out);

/* Number of shards of a degree vector (entries <= 0 count as 1). */
int64_t shard_count(const int degree[NDIMS]);

typedef int (*degree_fn)(const int degree[NDIMS], void *ctx);

/* Calls fn for every degree vector of op whose entries are powers of two
 * over its splittable dims, each dividing the dim, product <= max_degree;
 * in a fixed order (dims n, c, h, w, l; smaller degrees first).  Stops at
 * the first non-zero return of fn and returns it. */
int for_each_degree(const struct op *op, int max_degree, degree_fn fn,
		    void *ctx);

#endif
