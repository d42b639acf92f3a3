/*
 * Whether a plan can run: the rules every plan obeys, checked against its
 * model and cluster (plan_check.c).
 */
#ifndef AUTOPAR_PLAN_CHECK_H
#define AUTOPAR_PLAN_CHECK_H

#include <stdint.h>

#include "hw/cluster.h"
#include "model/graph.h"
#include "plan/plan.h"

/* Whether ops a and b run on the same set of devices (each list holding
 * distinct devices, as plan_validate() requires). */
int plan_same_devices(const struct plan_op *a, const struct plan_op *b);

/* Whether op i of g, where it ties its weight to another (tie=), runs as
 * plan_validate() requires: on the same set of devices as that op, and in
 * its stage where either stage has round-robin replicas.  Planners that
 * build plans by changing them test their candidates with it. */
enum plan_tie {
	PLAN_TIE_KEPT,    /* kept, or op i ties to nothing */
	PLAN_TIE_DEVICES, /* the two run on different sets of devices */
	PLAN_TIE_STAGE,   /* in different stages, one with round-robin replicas */
};
enum plan_tie plan_tie_broken(const struct plan *p, const struct graph *g, int i);

/* Checks against the model and the cluster (plan_check.c): the plan's
 * batch is g's and the micro-batches divide it; stage ids are
 * 0..nstages-1, each stage has devices of the cluster, `next` names stages
 * and forms a DAG; per op: degrees >= 1, > 1 only on dims the op has and
 * its split mask allows, each dividing its dim (n: the micro-batch), ndev =
 * product of the degrees, device ids exist, are distinct and belong to the
 * op's stage; every edge of the graph goes from a stage to itself or one
 * reachable along `next`; an op that ties its weight to another (tie=)
 * runs on the same devices as that op, and in its stage unless neither
 * stage has round-robin replicas.  When c->mem_bytes > 0, each device's parameter
 * shards x 3 (weights, gradients, momentum: cost_state_factor()) must fit it; activations are
 * the simulator's to check.  The first failure is reported naming path and
 * the field; AP_EINPUT. */
int plan_validate(const struct plan *p, const struct graph *g,
		  const struct cluster *c, const char *path);

#endif
