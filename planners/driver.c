/*
 * The planner driver shared by `autopar plan` and `autopar bench`: the
 * planner fills in its decisions, the driver everything every plan shares.
 */
#include "driver.h"

#include <math.h>
#include <stdio.h>

#include "plan/plan_check.h"
#include "sim/sim.h"
#include "util/clock.h"
#include "util/err.h"

/* Every planner's plan is simulated as it leaves the driver: its
 * prediction, and whether it fits the devices' memory as the simulator
 * counts it (weights, gradients, optimizer state, stashed versions,
 * activations in flight, workspace), whichever planner made it.  A plan
 * that does not fit is marked (pred_fits 0, "fits_memory": false, the
 * bench's fits column) and reported as a warning, not refused: a
 * baseline keeps its number beside the planners that search for plans
 * that fit. */
static int predict(const struct planner *pl, const struct planner_input *input, struct plan *p)
{
	struct sim s;
	struct sim_result r;
	int rc = sim_init(&s, input->g, input->p, input->c);

	if (rc)
		return rc;
	rc = sim_run(&s, p, NULL, &r);
	if (!rc) {
		p->pred_iter_ms = 1e3 * r.iter_s;
		p->pred_samples_per_s = r.samples_per_s;
		p->pred_peak_mem_bytes = r.peak_mem_bytes;
		p->pred_bubble = r.bubble;
		p->pred_fits = sim_fits(&r);
		if (!p->pred_fits) /* a warning: reported, and the plan kept */
			ap_err(AP_OK, pl->name, 0, "warning: the plan does not fit memory: "
				 "device %d needs %.2f GiB (weights %.2f, gradients %.2f, "
				 "optimizer state %.2f, stashed weights %.2f, activations %.2f, "
				 "workspace %.2f), more than its %.2f GiB", r.peak_dev,
				 r.peak_mem_bytes / 1073741824.0,
				 r.mem[r.peak_dev].weights / 1073741824.0,
				 r.mem[r.peak_dev].grads / 1073741824.0,
				 r.mem[r.peak_dev].opt_state / 1073741824.0,
				 r.mem[r.peak_dev].stash / 1073741824.0,
				 r.mem[r.peak_dev].act / 1073741824.0,
				 r.mem[r.peak_dev].workspace / 1073741824.0,
				 r.mem_bytes / 1073741824.0);
	}
	sim_release(&s);
	return rc;
}

/* The planner's estimate is what it declares (planner.h): a planner that
 * breaks its declaration has a bug, which no user input can cause. */
static int check_estimate(const struct planner *pl, const struct plan *p)
{
	double est = p->est_ms, sim = p->pred_iter_ms;

	switch (pl->estimate) {
	case PLANNER_EST_NONE:
		if (isnan(est))
			return AP_OK;
		break;
	case PLANNER_EST_SIM:
		if (fabs(est - sim) <= 1e-9 * sim)
			return AP_OK;
		break;
	case PLANNER_EST_MODEL:
	case PLANNER_EST_OBJECTIVE:
		if (isfinite(est) && est > 0)
			return AP_OK;
		break;
	}
	return ap_err(AP_EFAIL, pl->name, 0,
		      "the planner's estimate (%.9g ms) breaks its declaration '%s' "
		      "(planner.h) against the simulator's prediction of its plan (%.9g ms)",
		      est, planner_estimate_name(pl->estimate), sim);
}

struct planner_input planner_input_of(const struct instance *x, double budget_s,
				      uint64_t seed, const struct planner_opts *opts)
{
	return (struct planner_input){ .g = &x->g, .p = &x->p, .c = &x->c,
				       .budget_s = budget_s, .seed = seed, .opts = opts,
				       .per_device_batch = x->per_device_batch };
}

/* Runs pl on in with its options completed into *opts.  A budget of 0
 * (`--budget 0`, `budget 0` in a matrix) means no limit, for every
 * planner alike: they see INFINITY, a deadline never reached. */
static int run_planner(const struct planner *pl, const struct planner_input *input,
		       struct planner_opts *opts, struct plan *out)
{
	struct planner_input full = *input;
	int rc = plan_alloc(out, input->g, 1);

	if (rc)
		return rc;
	*opts = input->opts ? *input->opts : (struct planner_opts){ 0 };
	planner_opts_complete(pl, opts);
	full.opts = opts;
	full.planner = pl;
	if (full.budget_s == 0)
		full.budget_s = INFINITY;
	return pl->plan(&full, out);
}

int planner_call(const struct planner *pl, const struct planner_input *input,
		 struct plan *out)
{
	struct planner_opts opts;

	return run_planner(pl, input, &opts, out);
}

int planner_run(const struct planner *pl, const struct planner_input *input,
		const char *profile_name, struct plan *out)
{
	struct planner_opts opts;
	double t0 = now_s();
	int rc = run_planner(pl, input, &opts, out);

	out->search_s = now_s() - t0;
	if (rc)
		return rc;
	snprintf(out->model, sizeof out->model, "%s", input->g->name);
	snprintf(out->cluster, sizeof out->cluster, "%s", input->c->name);
	snprintf(out->profile, sizeof out->profile, "%s", profile_name);
	planner_spec(pl, &opts, out->planner, sizeof out->planner);
	out->seed = input->seed;
	out->per_device_batch = input->per_device_batch;
	rc = plan_validate(out, input->g, input->c, pl->name);
	if (!rc)
		rc = predict(pl, input, out);
	return rc ? rc : check_estimate(pl, out);
}
