/*
 * --check of `autopar run`: the same training on one device, with the
 * plan's optimizer, to compare a plan's execution with.  For the
 * synchronous schedules the reference is plain single-device training of
 * the whole batch; for PipeDream's
 * asynchronous 1F1B it is the plan's own stages and micro-batches on one
 * device, which runs the same items in the same order and so applies the
 * same weight versions (a single-process simulation of weight stashing).
 * Round-robin replicas are all this one process: each stage updates once
 * per round of its replicas' micro-batches, when the round's last
 * backward is done (exec_opts.checked names the plan checked), so every
 * forward runs with the rounds completed before it, as on its replica.
 * Batchnorm's statistics run over the samples of one shard of one
 * micro-batch of the plan checked, here as there (docs/runtime.md).
 */
#ifndef AUTOPAR_CHECK_H
#define AUTOPAR_CHECK_H

#include <stdint.h>

#include "exec.h"

/* The reference plan of p (plan_release() it). */
int check_reference_plan(const struct graph *g, const struct plan *p, struct plan *ref);

/* Trains ref in this process for nsteps (o->checked: the plan ref is
 * the reference of): losses[nsteps], and the whole
 * parameters of every op into params[i] (g->ops[i].params floats each,
 * NULL for ops without). */
int check_train(const struct graph *g, const struct plan *ref, const struct backend *be,
		const struct exec_opts *o, int nsteps, double *losses, float **params);

/* max |a - b| / max |b|: the relative difference of two tensors. */
double check_rel_diff(const float *a, const float *b, int64_t n);

#endif
