/*
 * The optimizer step of the executor (exec_update.c): SGD with momentum or
 * Adam, as the plan names it, on a shard's whole parameters or, under
 * ZeRO-1, on its part of them.
 */
#ifndef AUTOPAR_EXEC_UPDATE_H
#define AUTOPAR_EXEC_UPDATE_H

#include <stdint.h>

#include "plan/plan.h"

struct exec;
struct rshard;

/* Shard s's parameters from init[0 .. s->nparams) (its slice of the
 * seeded tensor), their gradient and the optimizer's state, in the
 * backend's memory; under ZeRO-1 its part of them among the members of
 * its replica group (exec_param_members()). */
int exec_update_setup(struct exec *e, struct rshard *s, const float *init);
/* Starts summing s's gradient over its replica group (s->gid >= 0): an
 * all-reduce, or under ZeRO-1 a reduce-scatter into its part; id as
 * transport.h's (NULL: completed by the transport's wait). */
int exec_grad_sum(struct exec *e, struct rshard *s, int *id);
/* Once the sum is complete: the step, and the gradient zeroed; under
 * ZeRO-1 the step of its part, whose all-gather it starts (the
 * transport's wait completes it). */
int exec_update(struct exec *e, struct rshard *s);
/* The learning rate a run of p takes by default: 0.02 for SGD, 0.001
 * (PyTorch's) for Adam. */
float exec_default_lr(const struct plan *p);
/* Frees what exec_update_setup() made. */
void exec_update_release(struct exec *e, struct rshard *s);

#endif
