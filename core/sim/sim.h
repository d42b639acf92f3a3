/*
 * The simulator (docs/simulator.md): turns (graph, profile, cluster, plan)
 * into a task graph of one training iteration and list-schedules it on the
 * cluster's resources, predicting the iteration time, the per-device peak
 * memory and the pipeline bubble.  Every planner ranks its candidates with
 * it, so it is built to be called many times: a struct sim binds the
 * inputs that do not change during a search (graph, profile, cluster) and
 * keeps its buffers and per-operator cost lookups between sim_run() calls.
 *
 * Tasks: a forward and a backward compute task per operator shard per
 * micro-batch; a transfer wherever a consumer shard needs part of a tensor
 * that lives on another device (forward: activations, backward: their
 * gradients over the same pair); ring all-reduces of the gradients of
 * replicated parameter shards; one optimizer update per device.  A stage
 * of round-robin replicas (plan.h) runs each micro-batch on one of its
 * replicas (sim.c).
 * Resources: each device, each directed device pair inside a node, and each
 * node's NIC (one send and one receive side).  sim.c explains the model,
 * sim_layout.c the regions, sim_transfers.c the transfers, sim_comm.c the all-reduces,
 * sim_sched.c the schedules, sim_delta.c delta re-simulation (sim_delta.h);
 * sim_trace.c writes the timeline (sim_trace.h).  What each piece of work
 * costs is the cost model's (cost/cost.h).
 */
#ifndef AUTOPAR_SIM_H
#define AUTOPAR_SIM_H

#include <stdint.h>

#include "cost/cost.h"
#include "hw/cluster.h"
#include "model/graph.h"
#include "plan/plan.h"
#include "hw/profile.h"

struct sim_opts {
	enum optimizer optimizer;
	int record; /* keep the task list of the run for sim_trace_write() */
	/* What a search reads and no more: the iteration time, memory,
	 * link bytes and task counts, without the critical path and the
	 * devices' busy time (critical_path_s, bubble, compute_busy_s and
	 * busiest_compute_s are then NAN).  Ignored when recording, and
	 * under 1f1b-async and async-predict, whose iteration time is a
	 * busy time.  sim_delta() runs as the last sim_run() did. */
	int lean;
};

enum sim_task_kind {
	TASK_FWD,
	TASK_BWD,
	TASK_SEND_ACT,   /* activations to a consumer on another device */
	TASK_SEND_GRAD,  /* their gradients back */
	TASK_ALLREDUCE,  /* one ring: all replicas inside a node, or one per node */
	TASK_REDUCE_SCATTER, /* hierarchical all-reduce: inside each node, */
	TASK_ALLREDUCE_INTER,/* across the nodes' NICs, */
	TASK_ALL_GATHER,     /* inside each node again */
	TASK_UPDATE,     /* the optimizer step of one device */
	TASK_WGRAD,      /* zb-h1's weight-gradient pass of a stage */
	NTASK_KINDS
};

const char *sim_task_kind_name(enum sim_task_kind k);

/* One scheduled task, recorded when sim_opts.record is set. */
struct sim_task {
	double start_s, dur_s;
	int64_t bytes;     /* moved over links (transfers and collectives) */
	int res;           /* the resource it is shown on (see sim_resource_name) */
	int op;            /* operator (a pipeline of groups' pass of a
			    * stage: its first); -1 for an update */
	int shard;         /* shard index of op (g x ndev + k for shard k in
			    * round-robin replica g), replica group for
			    * collectives, device for an update */
	int mb;            /* micro-batch; -1 for per-iteration tasks */
	enum sim_task_kind kind;
};

/* Peak memory of one device, in bytes: weights, gradients and optimizer
 * state of its parameter shards; weight versions stashed by asynchronous
 * 1F1B beyond the live one; the peak of the activations kept for the
 * micro-batches in flight (outputs and received inputs, freed by their
 * backward); the largest workspace of its shards. */
struct sim_mem {
	int64_t weights, grads, opt_state, stash, act, workspace;
	int64_t peak; /* the sum */
};

struct sim_result {
	double iter_s;          /* iteration time: the makespan for gpipe and
				 * 1f1b, the steady-state bottleneck for
				 * 1f1b-async (sim.c) */
	double makespan_s;      /* the list schedule of one iteration (of
				 * all `iters` of them) */
	double critical_path_s; /* longest dependency chain, resources ignored
				 * (the same) */
	double samples_per_s;   /* batch / iter_s */
	double bubble;          /* 1 - compute busy / (devices used x iter_s) */
	double compute_busy_s;  /* summed over devices */
	double busiest_compute_s;
	int ndev, ndev_used;
	int64_t ntasks;         /* per iteration, as link_bytes */
	int64_t link_bytes[3];  /* per iteration, by enum link_class */
	int64_t peak_mem_bytes; /* the largest of mem[].peak */
	int peak_dev;
	int64_t mem_bytes;      /* a device's capacity (cluster, else spec) */
	const struct sim_mem *mem; /* [ndev], valid until the next sim_run */
	struct cost_tally costs;   /* one lookup per operator */
	int ntask_kinds[NTASK_KINDS];
	/* Iterations simulated: 1, or under 1f1b-async and async-predict
	 * with round-robin replicas the period of their assignment (sim.c),
	 * of which busy times, bytes and task counts are the share of one;
	 * a recorded run holds the tasks of them all. */
	int iters;
};

struct sim_work; /* buffers and caches, sim_impl.h */

struct sim {
	const struct graph *g;
	const struct profile *p;
	const struct cluster *c;
	struct sim_work *w;
};

/* Binds the inputs (kept by pointer: they must outlive s and not change)
 * and allocates what does not depend on the plan. */
int sim_init(struct sim *s, const struct graph *g, const struct profile *p,
	     const struct cluster *c);
void sim_release(struct sim *s);

/* Simulates one iteration of plan pl, which should have passed
 * plan_validate(); what would crash the simulation is still refused with
 * AP_EINPUT.  opts may be NULL (SGD with momentum, no task list). */
int sim_run(struct sim *s, const struct plan *pl, const struct sim_opts *opts,
	    struct sim_result *r);
/* Whether the run's fullest device stays within its capacity (or no
 * capacity is known). */
int sim_fits(const struct sim_result *r);

/* The last run's task list (NULL, 0 unless it was recorded). */
const struct sim_task *sim_tasks(const struct sim *s, int64_t *n);
/* Resources are numbered devices first, then the directed links inside
 * nodes, then each node's NIC (send side, receive side).  The name is
 * "device 3", "link 0->1" or "node 2 nic tx"; -1 when res is out of
 * range. */
int sim_resource_name(const struct sim *s, int res, char *buf, size_t len);
int sim_nresources(const struct sim *s);


#endif
