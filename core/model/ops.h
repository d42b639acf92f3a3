/*
 * The operator table (ops.c): each kind's name, its shape and cost rules,
 * which graph_finalize() runs over a graph, the dims its inputs follow
 * when its output is split, and the signature of a shard that profiles
 * are keyed by.
 */
#ifndef AUTOPAR_OPS_H
#define AUTOPAR_OPS_H

#include <stddef.h>

#include "model/graph.h"

const char *op_kind_name(enum op_kind k);
int op_kind_parse(const char *s, enum op_kind *out);
/* Whether kind k is element-wise: each output element from the same
 * element of its inputs, the output of their shape (relu, gelu, tanh,
 * sigmoid, dropout, add, mul), so it splits as its inputs do. */
int op_kind_elementwise(enum op_kind k);

/* Computes shapes and accounting of every operator for g->batch.  Reports
 * the first inconsistency as "path:line: message" and returns AP_EINPUT. */
int graph_finalize(struct graph *g);
/* The same for ops [from, to), whose inputs are already finalised. */
int graph_finalize_range(struct graph *g, int from, int to);

/* Whether input k of op shrinks along dim d when op's output is split
 * along d (1), or every shard needs that dim of the input whole (0). */
int op_input_follows(const struct op *op, int k, enum dim_kind d);

/* A canonical signature of the shard of op `i` that runs when its output
 * dims are split by degree[] (indexed by enum dim_kind, 1 = not split):
 * kind, shard input and output shapes, and the attributes that change its
 * cost.  Profiles are keyed by it. */
int graph_op_signature(const struct graph *g, int i, const int degree[NDIMS],
		       char *buf, size_t len);

#endif
