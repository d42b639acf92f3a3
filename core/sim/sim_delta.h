/*
 * Delta re-simulation (sim_delta.c): a search's next plan simulated from
 * what its last one left, redoing only what a change touches.
 */
#ifndef AUTOPAR_SIM_DELTA_H
#define AUTOPAR_SIM_DELTA_H

#include "plan/plan.h"
#include "sim/sim.h"

/* Delta re-simulation (sim_delta.c; FlexFlow, SysML 2019, section 5.2):
 * pl is the plan of the last sim_run() or sim_delta() on s with the
 * configurations (degrees and devices, not stages) of ops[0..n) changed
 * since, and nothing else; only what those changes touch is laid out and
 * timed again.  The result is the one sim_run() with the last run's
 * optimizer gives, to the bit.  Plans with more than one micro-batch or
 * with round-robin replicas, a recorded last run or a changed stage are
 * simulated in full.  After an error the next call is a full run. */
int sim_delta(struct sim *s, const struct plan *pl, const int *ops, int n,
	      struct sim_result *r);

/* Takes back the last sim_delta(): the caller has put the configurations
 * it changed back as they were, and the next sim_delta() continues from
 * the run before it (its layout and task times are restored, not laid
 * out and timed again).  As a rejected proposal of a search does.  After anything but a
 * successful incremental sim_delta() the next sim_delta() is a full run. */
void sim_undo(struct sim *s);

#endif
