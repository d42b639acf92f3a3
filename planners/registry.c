/*
 * The list of planners: adding a planner is adding its file and one line
 * here.
 */
#include <string.h>

#include "util/err.h"
#include "planner.h"

/* One line per planner, in the order `autopar planners` lists them:
 * planners/NAME.c defines `const struct planner planner_NAME`. */
#define PLANNERS(X) \
	X(single)    \
	X(dp)        \
	X(owt)       \
	X(pipedream) \
	X(exhaustive) \
	X(ilp)       \
	X(mcmc)      \
	X(graphpipe) \
	X(piper)     \
	X(megatron)

#define DECLARE(name) extern const struct planner planner_##name;
#define ENTRY(name) &planner_##name,
PLANNERS(DECLARE)

const struct planner *const planners[] = { PLANNERS(ENTRY) };
const int nplanners = sizeof planners / sizeof planners[0];

const struct planner *planner_find(const char *name)
{
	for (int i = 0; i < nplanners; i++)
		if (strcmp(planners[i]->name, name) == 0)
			return planners[i];
	return NULL;
}

static const char *const estimate_names[] = {
	[PLANNER_EST_NONE] = "none",
	[PLANNER_EST_SIM] = "simulated",
	[PLANNER_EST_MODEL] = "model",
	[PLANNER_EST_OBJECTIVE] = "objective",
};

const char *planner_estimate_name(enum planner_estimate e)
{
	return (unsigned)e < sizeof estimate_names / sizeof estimate_names[0] ? estimate_names[e]
									       : "?";
}
