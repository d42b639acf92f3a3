/*
 * Where a plan puts things, for the executor (exec_layout.c): the ranks a
 * plan needs, the rank and region of a shard, the round-robin replicas of
 * an op's stage; and exec_layout(), which derives one rank's part of a
 * plan into a struct exec (exec_impl.h) when exec_create() builds it.
 */
#ifndef AUTOPAR_EXEC_LAYOUT_H
#define AUTOPAR_EXEC_LAYOUT_H

#include <stdint.h>

#include "model/graph.h"
#include "plan/plan.h"
#include "region.h"

/* The ranks p needs: its highest device id + 1. */
int exec_ranks(const struct plan *p);

/* The rank running, in replica g of its stage, what shard k of op i runs
 * in replica 0; the round-robin replicas of op i's stage (at least 1). */
int exec_replica_rank(const struct plan *p, int i, int k, int g);
int exec_op_replicas(const struct plan *p, int i);

struct exec;

/* The region shard k of op i owns, for one micro-batch of e's; its
 * coordinates along every dim into coord (may be NULL): those of its n
 * shard under tensor parallelism, whose split roles cut c further by its
 * tensor rank (exec_tensor.c). */
void exec_shard_region(const struct exec *e, int i, int k, struct region *r, int coord[NDIMS]);

/* The floats of the slice of op i's parameters that shard k holds (its
 * output channels', or under tensor parallelism its tensor rank's), and
 * copies between that slice and the whole tensor (params.h). */
int64_t exec_param_count(const struct exec *e, int i, int k);
void exec_param_slice(const struct exec *e, int i, int k, float *full, float *slice,
		      int to_full);

/* Inside exec_create(): into e, the schedule's order of items and this
 * rank's shards with their parameters and buffers, the pieces they
 * gather, the transfers and the groups; exec_layout_release() frees what
 * it made. */
int exec_layout(struct exec *e);
void exec_layout_release(struct exec *e);

#endif
