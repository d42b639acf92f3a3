/*
 * The planner interface (docs/adding-a-planner.md).  A planner is one file
 * that fills a `const struct planner` with designated initialisers and is
 * listed once in registry.c; the driver (driver.h: `autopar plan`,
 * `autopar bench`) owns the plan, runs the planner and fills in what every
 * plan shares: the model, cluster, profile and planner names, the search
 * time and seed, the validation and the simulator's prediction.
 *
 * The contract.  A planner
 *  - reads its inputs const, allocates nothing global, respects its time
 *    budget and is deterministic for a given seed;
 *  - prices work with the cost model (cost/cost.h: operators, transfers,
 *    resharding, all-reduces, the optimizer step, the memory a placement
 *    keeps), the terms the simulator schedules, or with the simulator
 *    itself (sim/sim.h);
 *  - returns a plan that passes plan_validate() (plan/plan_check.h): among
 *    its rules, an op that ties its weight to another (tie=) runs on the
 *    same devices as that op.  The driver validates every plan and refuses
 *    one that breaks a rule, naming it;
 *  - or returns AP_EINPUT with the reason (ap_err()).  Any planner may say
 *    that nothing it considers fits the devices' memory; refusing an
 *    instance for its size or the search's budget is allowed only to a
 *    planner that declares `may_refuse` (tests/test_planners.c holds every
 *    other to planning every instance of its matrix);
 *  - reports an estimate of the iteration as it declares in `estimate`,
 *    which the driver checks against the simulator's prediction of the
 *    plan (driver.c).
 */
#ifndef AUTOPAR_PLANNER_H
#define AUTOPAR_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#include "hw/cluster.h"
#include "model/graph.h"
#include "plan/plan.h"
#include "hw/profile.h"

/* A planner's own options (options.c).  On the command line of
 * `autopar plan` each is a long option (--straight, --beta 2); anywhere a
 * planner is named (-P, a bench matrix) they follow its name as a spec,
 * "pipedream:straight,schedule=1f1b-flush". */
enum planner_opt_type {
	POPT_FLAG,   /* present or not */
	POPT_INT,    /* an integer */
	POPT_REAL,   /* a finite number */
	POPT_CHOICE, /* one word of choices */
};

struct planner_option {
	const char *name;
	enum planner_opt_type type;
	const char *def;     /* the default as text; NULL for a flag */
	const char *choices; /* POPT_CHOICE: "a|b|c" */
	const char *help;    /* one line */
};

#define PLANNER_MAX_OPTIONS 10
#define PLANNER_OPT_LEN 32

/* Option values by name, as text; the driver completes them with the
 * defaults before the planner runs, so every declared option has one. */
struct planner_opts {
	int n;
	char name[PLANNER_MAX_OPTIONS][PLANNER_OPT_LEN];
	char value[PLANNER_MAX_OPTIONS][PLANNER_OPT_LEN];
};

struct planner_input {
	const struct graph *g;
	const struct profile *p;
	const struct cluster *c;
	double budget_s; /* wall-clock budget of the search; INFINITY for
			  * none (the driver's for a budget of 0) */
	/* Weak scaling: g's batch is this many samples per device (the
	 * papers' convention: a planner that pipelines may take it as its
	 * micro-batch, as PipeDream's minibatch is); 0: a global batch. */
	int64_t per_device_batch;
	uint64_t seed;
	const struct planner_opts *opts; /* NULL: every option at its default */
	/* The planner that runs (planner_run() and planner_call() set it):
	 * the table its options are read against. */
	const struct planner *planner;
};

/* What a planner's own estimate of the iteration (plan.est_ms, the
 * plan's "planner_est_ms") is; the driver checks it against the
 * simulator's prediction of the plan the planner emits. */
enum planner_estimate {
	/* none: est_ms stays NAN */
	PLANNER_EST_NONE,
	/* the simulator's own prediction of the plan it emits (it ranks
	 * candidates by simulating them): equal to the driver's prediction
	 * within a relative 1e-9 */
	PLANNER_EST_SIM,
	/* its own model of the iteration from the cost model's terms,
	 * simplified where its file says: within 5% of the simulation
	 * where none of those simplifications applies
	 * (tests/test_estimates.c names the instances); finite and positive */
	PLANNER_EST_MODEL,
	/* the objective of its paper, not the iteration time of this plan
	 * (piper: the micro-batches times the slowest stage's time per
	 * sample); finite and positive */
	PLANNER_EST_OBJECTIVE,
};

struct planner {
	const char *name;
	const char *description; /* one line */
	const char *follows;     /* the paper or rule it follows */
	/* Fills stages, ops, schedule and micro-batches of out, which the
	 * driver has sized for one stage (plan_alloc(out, input->g, 1), every
	 * op on device 0); a planner of several stages sizes it again with
	 * plan_alloc(out, input->g, n) and builds it with plan_build.h's
	 * plan_stage(), plan_link()/plan_chain(), plan_place()/
	 * plan_place_range() and plan_schedule(). */
	int (*plan)(const struct planner_input *input, struct plan *out);
	const struct planner_option *options; /* ended by a NULL name; may be NULL */
	/* The contract (the top of this file): whether it may refuse an
	 * instance for its size or its budget, and what its estimate is. */
	int may_refuse;
	enum planner_estimate estimate;
	/* Options under which its plans compare with the other planners'
	 * (the zoo's float32 and SGD with momentum), where its defaults
	 * differ: a benchmark matrix's `planners all` runs it with them
	 * (bench/matrix.c).  NULL: its defaults. */
	const char *same_footing;
};

/* The registry (registry.c): every planner, in the order `autopar
 * planners` lists them, and the one named name (NULL when none). */
extern const struct planner *const planners[];
extern const int nplanners;

const struct planner *planner_find(const char *name);
const char *planner_estimate_name(enum planner_estimate e);

/* The options (options.c). */

/* "NAME[:OPT[=VALUE][,OPT[=VALUE]...]]": the planner and its options,
 * checked against its table; where names the source in messages. */
int planner_parse(const char *spec, const char *where, const struct planner **pl,
		  struct planner_opts *o);
/* Sets one option of pl in o after checking its name and value. */
int planner_opts_set(const struct planner *pl, struct planner_opts *o, const char *name,
		     const char *value, const char *where);
/* The canonical spec: the name, then the options that differ from their
 * defaults in table order ("pipedream:straight"). */
void planner_spec(const struct planner *pl, const struct planner_opts *o, char *buf,
		  size_t len);
/* Fills what o lacks with the defaults of pl's table (flags stay unset). */
void planner_opts_complete(const struct planner *pl, struct planner_opts *o);
/* The running planner's options, by their type in its table: given or
 * the default.  Reading a name the table does not declare with that type
 * is a bug of the planner: it aborts with a message naming both. */
int planner_flag(const struct planner_input *input, const char *name);
int planner_int(const struct planner_input *input, const char *name);
double planner_real(const struct planner_input *input, const char *name);
const char *planner_choice(const struct planner_input *input, const char *name);

#endif
