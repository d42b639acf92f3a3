/*
 * The planner interface.  A planner is one file that fills a
 * `const struct planner` with designated initialisers and is listed once in
 * registry.c.  It reads its inputs const, allocates nothing global, respects
 * its time budget, is deterministic for a given seed, and returns a plan or
 * a clear reason (ap_err) why none exists.  The driver (`autopar plan`,
 * `autopar bench`) owns the plan and fills in what every plan shares: the
 * model, cluster, profile and planner names, the search time and seed.
 */
#ifndef AUTOPAR_PLANNER_H
#define AUTOPAR_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#include "hw/cluster.h"
#include "model/graph.h"
#include "plan/instance.h"
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

#define PLANNER_MAX_OPTIONS 8
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
	double budget_s; /* wall-clock budget of the search */
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

struct planner {
	const char *name;
	const char *description; /* one line */
	const char *follows;     /* the paper or rule it follows */
	/* Fills stages, ops, schedule and micro-batches of out, which the
	 * driver has sized for one stage (plan_alloc(out, input->g, 1), every
	 * op on device 0); a planner of several stages sizes it again with
	 * plan_alloc(out, input->g, n) and builds it with plan.h's plan_stage(),
	 * plan_link()/plan_chain(), plan_place_range()/plan_place() and
	 * plan_schedule().  Costs come from sim.h's cost_op(), the
	 * simulator's own lookup, and whole plans from sim_run(). */
	int (*plan)(const struct planner_input *input, struct plan *out);
	const struct planner_option *options; /* ended by a NULL name; may be NULL */
};

/* The input of a search on instance x (its graph, profile, cluster and
 * per-device batch), with budget, seed and options (NULL: the defaults). */
struct planner_input planner_input_of(const struct instance *x, double budget_s,
				      uint64_t seed, const struct planner_opts *opts);

extern const struct planner *const planners[];
extern const int nplanners;

const struct planner *planner_find(const char *name);

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

/* The driver: sizes out for input->g, completes input->opts with pl's defaults,
 * runs pl timed, records the names of the inputs (profile_name is the
 * profile's name as the user gave it), the planner's spec, seed and
 * search time and the per-device batch, validates the plan and simulates
 * it, filling its prediction: a plan that does not fit the devices'
 * memory (the simulator's peak: weights, optimizer state, stashed
 * versions, activations in flight) is marked (pred_fits 0) and reported
 * as a warning with the numbers, whichever planner made it. */
int planner_run(const struct planner *pl, const struct planner_input *input,
		const char *profile_name, struct plan *out);
/* The planner alone, as a planner or test that starts from another's plan
 * calls it: out sized for one stage, in's options (NULL: the defaults)
 * completed; no timing, names, validation or prediction. */
int planner_call(const struct planner *pl, const struct planner_input *input,
		 struct plan *out);

/* Helpers every planner may use. */

/* Largest divisor of n that is at most cap (at least 1). */
int64_t largest_divisor(int64_t n, int64_t cap);


#endif
