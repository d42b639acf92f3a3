/*
 * What a shard of an operator reads of its inputs (needs.c): the one rule
 * the simulator's transfers, the planners' cost model and the runtime's
 * gathers all follow, so the bytes charged are the bytes moved.
 */
#ifndef AUTOPAR_NEEDS_H
#define AUTOPAR_NEEDS_H

#include <stdint.h>

#include "model/graph.h"

/* Whether the part of input k a shard of op needs along dim d depends on
 * the shard's place along d (the dims that follow the split, a concat's
 * axis) or is the whole extent (a reduced dim; the sequence of a
 * self-attention). */
int op_input_varies(const struct op *op, int k, enum dim_kind d);
/* The dim a concat joins its inputs along. */
enum dim_kind op_concat_axis(const struct op *op);
/* The part [*lo, *hi) along d of input k (extent sz in one micro-batch)
 * that the shard of op with coordinate i of deg along d, owning output
 * [olo, ohi) along d, reads: its own fraction of a dim that follows the
 * split; of a conv2d's or pool's h and w the rows and columns its windows
 * read (its share and a halo); of a concat's axis the input's part in its
 * share, [0, 0) when none; the whole extent where op_input_varies() is 0. */
void op_input_need(const struct graph *g, const struct op *op, int k, enum dim_kind d,
		   int i, int deg, int64_t olo, int64_t ohi, int64_t sz, int64_t *lo,
		   int64_t *hi);

#endif
