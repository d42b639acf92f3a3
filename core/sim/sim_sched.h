/*
 * Inside the simulator: the list schedule of one iteration (sim_sched.c).
 */
#ifndef AUTOPAR_SIM_SCHED_H
#define AUTOPAR_SIM_SCHED_H

#include "sim/sim_ckpt.h"
#include "sim/sim_impl.h"

/* Schedules the tasks of one iteration from step `from` on (0, or a step
 * whose checkpoint the last run kept: sim_ckpt_before()), filling the
 * per-run state of s->w and leaving the earlier steps' times as they are;
 * mem[].weights and the run's optimizer must be set.  Checkpoints are
 * kept (sim_ckpt.h). */
int sim_schedule_from(struct sim *s, int from);
/* Appends a task to the recorded list (call it only when the run
 * records); AP_EFAIL when out of memory. */
int sim_record(struct sim_work *w, enum sim_task_kind kind, int res, int op, int shard, int mb,
	       double start, double dur, int64_t bytes);

#endif
