/*
 * The executor of the runtime (docs/runtime.md): one rank's part of a
 * plan, run step by step.  exec_create() derives from the plan what this
 * rank holds (exec_layout.c): its shard of every operator it runs, with
 * its parameter slice, the regions of inputs it gathers, the transfers it
 * sends and receives and the replica groups it all-reduces in; and the
 * order of the schedule's items (core/sched.c, the order the simulator
 * predicts).  exec_step() runs one training step (exec.c): every item in
 * order, forward tasks in graph order, backward tasks in reverse, each
 * output region sent where it is consumed and each gradient sent back to
 * where it was produced; then the gradient all-reduces and the optimizer
 * (exec_update.c: the plan's Adam or SGD with momentum, under ZeRO-1 on
 * each replica's part of the state).  Megatron-LM's tensor parallelism is
 * exec_tensor.c's; a pipeline of groups under interleaved 1F1B or zero
 * bubble (whose backward runs as B and W passes) runs each group's own
 * order (core/plan/sched.c sched_group_order()).
 *
 * Schedules: GPipe and 1F1B (PipeDream-Flush) accumulate the gradients of
 * all micro-batches and update once per step, so they train exactly as one
 * device does.  PipeDream's asynchronous 1F1B updates each op's weights
 * after every micro-batch's backward and keeps (stashes) the version a
 * micro-batch's forward used for its backward (Narayanan et al., SOSP
 * 2019, section 3.3).  Both asynchronous schedules stream micro-batches
 * across steps: step t runs the items of the stream whose keys fall in
 * its share (exec.c exec_async_slice()), and only the last step drains.
 *
 * async-predict (core/sched.c) updates after every micro-batch as well,
 * but keeps no versions: a micro-batch's forward runs with the weights
 * extrapolated to the version its gradient will be applied to,
 * w - lr k v (v the momentum, k the updates the stage applies between the
 * forward and that gradient, counted from the schedule's keys: 2(K - d) - 1
 * on a stage of depth d once the pipeline has filled), computed into one
 * buffer per shard.  Its backward needs no prediction: by then exactly
 * those k updates have been applied, so the current weights are the
 * version the forward predicted.  This is SpecTrain's scheme (Chen et
 * al., 2018): one prediction buffer per shard instead of a version per
 * micro-batch in flight.  A rank runs a slot's forward and backward on two
 * threads (exec_opts.serial: one after the other, in the schedule's
 * order), as two concurrent streams would.
 *
 * Round-robin replicas (plan.h, PipeDream's replicated stages): replica
 * g of a stage runs the shards of replica 0 on its own devices, for the
 * micro-batches j with j mod r == g, whole; data goes from the producer's
 * replica of j to the consumer's.  Under GPipe and 1F1B the replicas'
 * gradients are summed with the n degree's once the step's items are
 * done.  Under asynchronous 1F1B the replicas are data-parallel among
 * themselves: the gradients of a round (micro-batches q r .. q r + r - 1,
 * one per replica) are summed and every replica applies that one update,
 * before its first task that comes after the round's last backward in
 * the schedule's order; so a forward runs with the weights of the rounds
 * completed before it, and its backward with those (stashed).  Waiting
 * for a round only at a task later than all its backwards keeps the
 * all-reduce among tasks earlier in the global order (exec.c).  r must
 * divide m there, and async-predict does not run replicas
 * (exec_supported()).
 *
 * This header is exec.c's interface.  Which plans the runtime can run is
 * exec_support.h's, the ranks a plan needs and where its shards run
 * exec_layout.h's, the order of a rank's stage transfers exec_order.h's,
 * tensor parallelism exec_tensor.h's, the optimizer step exec_update.h's;
 * what the executor's files share inside is exec_impl.h.
 */
#ifndef AUTOPAR_EXEC_H
#define AUTOPAR_EXEC_H

#include <stdint.h>

#include "backend.h"
#include "model/graph.h"
#include "plan/plan.h"
#include "plan/sched.h"
#include "transport.h"

struct exec_opts {
	uint64_t seed;   /* data, labels and initial weights */
	int64_t steps;   /* steps the run will take: where asynchronous 1F1B's
			  * stream of micro-batches ends */
	int pool;        /* distinct batches the steps cycle through */
	float lr, momentum; /* the optimizer's (exec_update.c) */
	/* Asynchronous schedules without their remedy for staleness: no
	 * stashed versions under 1f1b-async, no prediction under
	 * async-predict; every task runs with the weights current when it
	 * starts (the naive baseline of PipeDream's section 3.3). */
	int naive;
	/* async-predict: run a stage's paired forward and backward one after
	 * the other instead of on two threads (exec.c run_pair) */
	int serial;
	/* When this run is --check's one-device reference (check.h), the
	 * plan it checks; NULL: none.  Asynchronous 1F1B's stages update in
	 * the rounds of that plan's round-robin replicas, and batchnorm
	 * normalises over the groups of samples that plan's shards see. */
	const struct plan *checked;
};

struct exec;

/* Collective over t's ranks. */
int exec_create(struct exec **out, const struct graph *g, const struct plan *p,
		const struct backend *be, struct transport *t, const struct exec_opts *o);
/* One training step; *loss (every rank) is the batch's mean loss before
 * the update. */
int exec_step(struct exec *e, int64_t step, double *loss);
/* Records every task of the following steps into tr (NULL: stops). */
struct trace;
void exec_set_trace(struct exec *e, struct trace *tr);
/* The forward/backward pairs this rank has run on two threads so far
 * (async-predict, exec_opts.serial off). */
int64_t exec_pairs(const struct exec *e);
/* Collective: the whole parameters of op i on rank 0 (into full, which
 * holds g->ops[i].params floats there; other ranks pass NULL). */
int exec_gather_params(struct exec *e, int i, float *full);
/* The same for the momentum of SGD: after the first step of a plan that
 * updates once per step, that is exactly the step's gradient (v = 0.9 * 0
 * + g), which is how `autopar run --dump` reads gradients. */
int exec_gather_momentum(struct exec *e, int i, float *full);
void exec_free(struct exec *e);

#endif
