/*
 * The calls a planner builds its plan with (plan_build.c,
 * docs/adding-a-planner.md).
 */
#ifndef AUTOPAR_PLAN_BUILD_H
#define AUTOPAR_PLAN_BUILD_H

#include "model/graph.h"
#include "plan/plan.h"

/* Building a plan (plan_build.c, docs/adding-a-planner.md): size it with
 * plan_alloc(p, g, nstages), then give every stage its devices and the
 * `next` edges between stages, every operator its place (all start on
 * stage 0, device 0, degree 1) and the schedule.  Each returns AP_OK or
 * reports (AP_EFAIL) a stage or operator out of range, or no memory. */
/* Stage s runs on devs[0..n), as `replicas` round-robin replicas of
 * n / replicas devices each (0 or 1: none; plan_stage.replicas). */
int plan_stage(struct plan *p, int s, const int *devs, int n, int replicas);
/* The same on the n consecutive devices first, first + 1, ... */
int plan_stage_range(struct plan *p, int s, int first, int n, int replicas);
/* Stage s sends to stage t (a `next` edge, kept once). */
int plan_link(struct plan *p, int s, int t);
/* The stages as a chain: s -> s + 1 for each. */
int plan_chain(struct plan *p);
/* A `next` edge wherever an edge of g goes from an operator of one stage
 * to one of another (the operators placed first): a DAG of stages. */
int plan_link_edges(struct plan *p, const struct graph *g);
/* Operator i in stage s with degree[] per dim kind, its shards on
 * devs[0..product of the degrees) in the layout of the top comment (times
 * its tensor degree, when the op has one: the tensor rank innermost). */
int plan_place(struct plan *p, int i, int s, const int degree[NDIMS], const int *devs);
/* The same on consecutive devices from first. */
int plan_place_range(struct plan *p, int i, int s, const int degree[NDIMS], int first);
void plan_schedule(struct plan *p, enum sched_kind k, int microbatches);
/* One stage on devices 0..ndev-1 under the given schedule. */
int plan_one_stage(struct plan *p, int ndev, enum sched_kind sched, int microbatches);

#endif
