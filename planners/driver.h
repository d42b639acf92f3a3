/*
 * The planner driver (driver.c), which every command that plans uses: it
 * runs a planner on an instance, holds it to its contract (planner.h) and
 * fills in what every plan shares.
 */
#ifndef AUTOPAR_DRIVER_H
#define AUTOPAR_DRIVER_H

#include <stdint.h>

#include "plan/instance.h"
#include "plan/plan.h"
#include "planner.h"

/* The input of a search on instance x (its graph, profile, cluster and
 * per-device batch), with budget (0: no limit), seed and options (NULL:
 * the defaults). */
struct planner_input planner_input_of(const struct instance *x, double budget_s,
				      uint64_t seed, const struct planner_opts *opts);

/* Sizes out for input->g, completes input->opts with pl's defaults, runs
 * pl timed, records the names of the inputs (profile_name is the
 * profile's name as the user gave it), the planner's spec, seed and
 * search time and the per-device batch, validates the plan and simulates
 * it, filling its prediction, and checks the planner's estimate against
 * it as pl->estimate declares (AP_EFAIL naming both when it breaks the
 * declaration: a bug of the planner).  A plan that does not fit the
 * devices' memory (the simulator's peak: weights, optimizer state,
 * stashed versions, activations in flight) is marked (pred_fits 0) and
 * reported as a warning with the numbers, whichever planner made it. */
int planner_run(const struct planner *pl, const struct planner_input *input,
		const char *profile_name, struct plan *out);
/* The planner alone, as a planner or test that starts from another's plan
 * calls it: out sized for one stage, input's options (NULL: the defaults)
 * completed; no timing, names, validation or prediction. */
int planner_call(const struct planner *pl, const struct planner_input *input,
		 struct plan *out);

#endif
