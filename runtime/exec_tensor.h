/*
 * Megatron-LM's tensor parallelism in the executor (exec_tensor.c): which
 * part of an op's tensors each tensor rank holds, the tensor groups, and
 * the all-reduces of partial sums that the roles of model/tensor.h ask
 * for.
 */
#ifndef AUTOPAR_EXEC_TENSOR_H
#define AUTOPAR_EXEC_TENSOR_H

#include <stdint.h>

struct exec;
struct rshard;

/* Every op's role (e->role; TP_NONE for all without tensor parallelism),
 * before the shards are laid out. */
int exec_tensor_roles(struct exec *e);

/* The tensor rank of shard k of op i (the rank is innermost: k mod t),
 * and its data-parallel index (k / t), 0 and k without. */
int exec_tensor_rank(const struct exec *e, int i, int k);
int exec_tensor_data(const struct exec *e, int i, int k);

/* Whether op i's output is split along c over its tensor group (column,
 * split), and whether it reads its inputs so split (row, split, loss). */
int exec_tensor_splits_out(const struct exec *e, int i);
int exec_tensor_splits_in(const struct exec *e, int i);

/* Collective, after the replica groups: the tensor group of each shard
 * (s->tgid), the one the parallel cross-entropy sums over (its cg). */
int exec_tensor_groups(struct exec *e);

/* After s's forward kernel: its output of slot j summed over the tensor
 * group where it is a partial sum (row, heads, vocab). */
int exec_tensor_forward(struct exec *e, struct rshard *s, int j);
/* After s's backward kernel: the gradient buf of its input kk summed
 * over the tensor group where that input is whole and the op's output
 * is not (column, heads). */
int exec_tensor_backward(struct exec *e, struct rshard *s, int kk, float *buf);

#endif
