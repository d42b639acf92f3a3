/*
 * The order of a schedule's work (sched.c): the items every device runs,
 * each stage's depth and the staleness of its weights, the same for the
 * simulator, which predicts the order, and the runtime, which runs it.
 */
#ifndef AUTOPAR_SCHED_H
#define AUTOPAR_SCHED_H

#include <stdint.h>

#include "plan/plan.h"

/* A unit of a schedule: one stage's forward or backward of one
 * micro-batch.  The stage is an index into plan->stages.  bwd: 0 the
 * forward, 1 the backward (under zb-h1 its input-gradient pass B), 2
 * zb-h1's weight-gradient pass W. */
struct sched_item {
	int64_t key;
	int stage, mb, bwd;
};

enum { SCHED_F, SCHED_B, SCHED_W };

/* The 2 x nstages x m items of a schedule in the order every device runs
 * its work (core/plan/sched.c); depth[s] is stage index s's longest path from
 * a source stage along `next`. */
void sched_order(enum sched_kind k, int nstages, const int *depth, int m,
		 struct sched_item *items);
/* The same for stages of different micro-batch counts m[s] (stage
 * indices; next_ofs/next: each stage's successors, CSR), gpipe or 1f1b:
 * 2 x (m[0] + ... ) items, keyed by their place; -1 when out of memory. */
int sched_order_mixed(enum sched_kind k, int nstages, const int *depth, const int *m,
		      const int *next_ofs, const int *next, struct sched_item *items);
/* The key of one item (K depths, m micro-batches: only GPipe's backward
 * depends on m, so 1F1B keys hold for a stream of any length), and the
 * order of a list of items. */
int64_t sched_key(enum sched_kind k, int64_t K, int64_t m, int64_t d, int64_t j,
		  int bwd);
void sched_sort(struct sched_item *items, int n);

/* Each stage's depth in the schedule (by stage index), the same for the
 * simulator and the runtime: its position in a chain, and in a DAG of
 * stages as late as its successors allow (sched.c); the largest into
 * *depth_max.  AP_EINPUT naming the field when ids are not 0..n-1 or
 * `next` names no stage or forms a cycle. */
int sched_stage_depths(const struct plan *p, int *depth, int *depth_max);
/* The work of device group r of a pipeline of G groups with v model
 * chunks each (a chain of G v stages, stage s on group s mod G: docs/
 * plan-format.md, "Pipelines of groups") and m micro-batches, in the
 * order the group runs it, into items[] (room for 3 v m); the count, or
 * -1 when out of memory.  gpipe and 1f1b order by sched_key() with the
 * stage's place in the chain as its depth; interleaved-1f1b is
 * Megatron-LM's (Narayanan et al., SC 2021, section 2.2; m a multiple of
 * G); zb-h1 Qi et al.'s (ICLR 2024, section 3), B and W passes apart.
 * Keys are the places in the group's order. */
int sched_group_order(enum sched_kind k, int G, int v, int m, int r, struct sched_item *items);
/* Whether k updates the weights after every micro-batch (no flush). */
int sched_async(enum sched_kind k);
/* The most weight updates a stage of depth d (of K depths) sees between a
 * micro-batch's forward and the update with that micro-batch's gradient,
 * over the m micro-batches of a step: its weight staleness, what
 * PipeDream stashes versions for and async-predict extrapolates over; 0
 * for the synchronous schedules. */
int sched_staleness(enum sched_kind k, int K, int d, int m);

#endif
