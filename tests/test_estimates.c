/*
 * A planner's estimate of the iteration (planner_est_ms) is what its
 * table declares (planner.h, enum planner_estimate), read from the
 * registry, not from a list kept here:
 *  - the driver refuses an estimate that breaks the declaration (a
 *    planner declaring none that reports one, one declaring the
 *    simulator's own number that reports another): tested with planners
 *    made to break it;
 *  - every planner declaring the simulator's number plans the small
 *    instances through the driver, which checks it;
 *  - every planner declaring a model estimate agrees with the simulator's
 *    prediction of the plan it emits within 5% on the instances below,
 *    where none of the terms its file documents as left to the simulator
 *    applies; a planner declaring a model estimate with no instance here
 *    fails the test.  The ILP's one-stage programs (no pipeline: its chain
 *    latency and 1F1B's in-flight waits play no part) on one node and
 *    across nodes, where an op's replica groups share the NICs;
 *    graphpipe's plans on one node with PipeDream's profiles and the
 *    zoo's chains (no NIC shared, the all-reduce hidden); pipedream at the
 *    profiled minibatch per GPU on one node (4 GB/s between devices) and
 *    on PipeDream's clusters, where its plans are data parallelism or
 *    pipelines with round-robin replicas whose transfers share the NICs.
 */
#include "testutil.h"

#include "driver.h"
#include "plan/plan_build.h"
#include "planner.h"
#include "sim/sim.h"
#include "util/err.h"

struct cell {
	const char *spec, *model, *cluster;
	double budget_s; /* 0: one second */
};

#define PD_NODE "1x8:v100,intra=4GB/s"
#define PD_4X4 "4x4:v100,intra=4GB/s,inter=10Gb/s"
/* pipedream's DP over the larger models takes a few seconds */
#define PD(model, cluster) { "pipedream", model, cluster, 60 }

static const struct cell model_cells[] = {
	/* ilp, one stage: the simulator's own costs, its all-reduce formulas
	 * over every replica group of an op (alexnet's classifier split by n
	 * and c over four nodes), its resharding transfers and its update */
	{ "ilp:max-stages=1", "mlp", "1x4:h100", 0 },
	{ "ilp:max-stages=1", "cnn_small", "pipedream-a", 0 },
	{ "ilp:max-stages=1", "transformer_tiny", "2x4:v100", 0 },
	{ "ilp:max-stages=1", "alexnet", "pipedream-a", 0 },
	{ "ilp:max-stages=1", "alexnet", "2x4:v100", 0 },
	{ "ilp:max-stages=1", "pipedream/alexnet", "pipedream-a", 0 },
	{ "ilp:max-stages=1", "pipedream/resnet18", "2x4:v100", 0 },
	{ "ilp:max-stages=1", "pipedream/vgg16", "h100-1x8", 0 },
	/* graphpipe on one node */
	{ "graphpipe", "pipedream/alexnet", "1x4:h100", 0 },
	{ "graphpipe", "pipedream/vgg16", "h100-1x8", 0 },
	{ "graphpipe", "pipedream/resnet18", "h100-1x8", 0 },
	{ "graphpipe", "vgg16", "1x4:h100", 0 },
	{ "graphpipe", "alexnet", "h100-1x8", 0 },
	/* pipedream on one node, and across nodes on PipeDream's clusters */
	PD("pipedream/vgg16", PD_NODE),
	PD("pipedream/alexnet", PD_NODE),
	PD("pipedream/gnmt", PD_NODE),
	PD("pipedream/resnet50", PD_NODE),
	PD("pipedream/resnet101", PD_NODE),
	PD("vgg16", PD_NODE),
	PD("alexnet", PD_NODE),
	PD("resnet50", PD_NODE),
	PD("gnmt", PD_NODE),
	PD("pipedream/vgg16", PD_4X4),
	PD("pipedream/alexnet", PD_4X4),
	PD("pipedream/gnmt", PD_4X4),
	PD("pipedream/resnet50", PD_4X4),
	PD("pipedream/resnet101", PD_4X4),
	PD("pipedream/vgg16", "pipedream-a"),
	PD("pipedream/alexnet", "pipedream-a"),
	PD("pipedream/gnmt", "pipedream-a"),
	PD("pipedream/resnet50", "pipedream-a"),
	PD("pipedream/resnet101", "pipedream-a"),
	PD("pipedream/vgg16", "pipedream-b"),
	PD("pipedream/alexnet", "pipedream-b"),
	PD("pipedream/gnmt", "pipedream-b"),
	PD("pipedream/resnet50", "pipedream-b"),
	PD("pipedream/resnet101", "pipedream-b"),
};

/* Runs spec through the driver on model and cluster at the model's own
 * batch on every device (weak scaling); the driver's status. */
static int plan_cell(const char *spec, const char *model, const char *cluster,
		     double budget_s, struct plan *out)
{
	const struct planner *pl;
	struct planner_opts o;
	struct instance x;
	struct planner_input input;
	int rc;

	test_instance(&x, model, "0/dev", cluster);
	input = planner_input_of(&x, budget_s > 0 ? budget_s : 1, 1, &o);
	plan_init(out);
	assert_int_equal(planner_parse(spec, "test", &pl, &o), AP_OK);
	rc = planner_run(pl, &input, x.c.profile, out);
	instance_release(&x);
	return rc;
}

/* The planner's estimate over the simulator's prediction of its plan. */
static double est_over_sim(const struct cell *k)
{
	struct plan out;
	double est, ratio;

	if (plan_cell(k->spec, k->model, k->cluster, k->budget_s, &out) != AP_OK)
		fail_msg("%s on %s/%s: %s", k->spec, k->model, k->cluster, ap_last_error());
	est = out.est_ms;
	assert_true(est > 0);
	assert_true(out.pred_iter_ms > 0);
	ratio = est / out.pred_iter_ms;
	print_message("%-18s %-20s %-34s est %10.3f ms sim %10.3f ms est/sim %.3f\n", k->spec,
		      k->model, k->cluster, est, out.pred_iter_ms, ratio);
	plan_release(&out);
	return ratio;
}

/* Whether spec names planner pl ("NAME" or "NAME:options"). */
static int names(const char *spec, const struct planner *pl)
{
	size_t n = strlen(pl->name);

	return !strncmp(spec, pl->name, n) && (spec[n] == '\0' || spec[n] == ':');
}

static void test_model_estimates(void **state)
{
	int bad = 0;

	(void)state;
	for (int p = 0; p < nplanners; p++) {
		int ncells = 0;

		if (planners[p]->estimate != PLANNER_EST_MODEL)
			continue;
		for (size_t i = 0; i < sizeof model_cells / sizeof model_cells[0]; i++) {
			double r;

			if (!names(model_cells[i].spec, planners[p]))
				continue;
			ncells++;
			r = est_over_sim(&model_cells[i]);
			if (fabs(r - 1) > 0.05) {
				print_error("%s on %s/%s: est/sim %.3f, not within 5%%\n",
					    model_cells[i].spec, model_cells[i].model,
					    model_cells[i].cluster, r);
				bad++;
			}
		}
		if (ncells == 0)
			fail_msg("planner '%s' declares a model estimate (PLANNER_EST_MODEL) but "
				 "tests/test_estimates.c names no instance where it agrees with "
				 "the simulation", planners[p]->name);
	}
	assert_int_equal(bad, 0);
}

/* Every planner that declares the simulator's number plans through the
 * driver, which holds it to that. */
static void test_simulated_estimates(void **state)
{
	static const char *const models[] = { "mlp", "cnn_small", "branchy_small" };
	int tried = 0;

	(void)state;
	for (int p = 0; p < nplanners; p++) {
		if (planners[p]->estimate != PLANNER_EST_SIM)
			continue;
		for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
			char spec[64];
			struct plan out;

			/* mcmc searches a fixed number of proposals, not a time */
			snprintf(spec, sizeof spec, "%s%s", planners[p]->name,
				 strcmp(planners[p]->name, "mcmc") ? "" : ":proposals=300");
			/* the budget a cap only, for the sanitizer build */
			if (plan_cell(spec, models[m], "1x2:v100", 600, &out) != AP_OK)
				fail_msg("%s on %s: %s", spec, models[m], ap_last_error());
			assert_true(fabs(out.est_ms - out.pred_iter_ms) <= 1e-9 * out.pred_iter_ms);
			plan_release(&out);
			tried++;
		}
	}
	assert_true(tried > 0);
}

/* Planners that break their declaration: one that declares the
 * simulator's number and reports half of it, one that declares none and
 * reports one, one that declares a model estimate and reports none. */
static int plan_halved(const struct planner_input *input, struct plan *out)
{
	int rc = plan_one_stage(out, 1, SCHED_GPIPE, 1);
	struct sim s;
	struct sim_result r;

	for (int i = 0; i < input->g->nops && !rc; i++)
		rc = plan_place_range(out, i, 0, (const int[NDIMS]){ 1, 1, 1, 1, 1 }, 0);
	if (!rc)
		rc = sim_init(&s, input->g, input->p, input->c);
	if (!rc) {
		rc = sim_run(&s, out, NULL, &r);
		sim_release(&s);
	}
	if (!rc && !strcmp(input->planner->name, "halved"))
		out->est_ms = 0.5e3 * r.iter_s;
	else if (!rc && !strcmp(input->planner->name, "claims-none"))
		out->est_ms = 1e3 * r.iter_s;
	return rc;
}

static void test_declarations_enforced(void **state)
{
	static const struct planner liars[] = {
		{ .name = "halved", .description = "-", .follows = "-", .plan = plan_halved,
		  .estimate = PLANNER_EST_SIM },
		{ .name = "claims-none", .description = "-", .follows = "-",
		  .plan = plan_halved, .estimate = PLANNER_EST_NONE },
		{ .name = "no-model", .description = "-", .follows = "-", .plan = plan_halved,
		  .estimate = PLANNER_EST_MODEL },
	};
	static const struct planner honest = { .name = "honest", .description = "-",
					       .follows = "-", .plan = plan_halved,
					       .estimate = PLANNER_EST_NONE };
	struct instance x;
	struct planner_input input;
	struct plan out;

	(void)state;
	ap_err_quiet(1);
	test_instance(&x, "mlp", NULL, "1x2:v100");
	input = planner_input_of(&x, 1, 1, NULL);
	for (size_t k = 0; k < sizeof liars / sizeof liars[0]; k++) {
		plan_init(&out);
		assert_int_equal(planner_run(&liars[k], &input, x.c.profile, &out), AP_EFAIL);
		assert_non_null(strstr(ap_last_error(), "breaks its declaration"));
		plan_release(&out);
	}
	plan_init(&out);
	assert_int_equal(planner_run(&honest, &input, x.c.profile, &out), AP_OK);
	plan_release(&out);
	ap_err_quiet(0);
	instance_release(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_declarations_enforced),
		cmocka_unit_test(test_simulated_estimates),
		cmocka_unit_test(test_model_estimates),
	};

	return cmocka_run_group_tests_name("planner estimates", tests, NULL, NULL);
}
