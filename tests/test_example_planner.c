/*
 * The planner of docs/adding-a-planner.md, whole, and its tests: a chain
 * of stages, one device each, that splits the operators in graph order so
 * that every stage's forward and backward time is about the same, under
 * 1F1B.  The tests run it as autopar runs any planner (the driver
 * validates and simulates its plan), check the balance it promises, train
 * its plan for real on two ranks with --check, and check that every code
 * block of the guide is a piece of this file, so the guide cannot drift
 * from code that builds and passes.
 */
#include "runtest.h"

#include "driver.h"
#include "util/datadir.h"

/* --- what planners/balanced.c includes --- */
#include "cost/cost.h"
#include "plan/plan_build.h"
#include "planner.h"
#include "util/intmath.h"

/* --- the planner (docs/adding-a-planner.md) ---------------------------- */

static int plan_balanced(const struct planner_input *input, struct plan *out)
{
	const struct graph *g = input->g;
	int k = planner_int(input, "stages");
	int m = (int)largest_divisor(g->batch, 2 * (int64_t)k);
	int one[NDIMS] = { 1, 1, 1, 1, 1 };
	double total = 0, done = 0, *cost = malloc((size_t)g->nops * sizeof *cost);
	int rc = cost ? AP_OK : ap_err(AP_EFAIL, NULL, 0, "out of memory");

	if (!rc && (k < 1 || k > cluster_ndevices(input->c) || k > g->nops))
		rc = ap_err(AP_EINPUT, "balanced", 0, "--stages %d: expected 1 to %d", k,
			    cluster_ndevices(input->c) < g->nops ? cluster_ndevices(input->c) : g->nops);
	for (int i = 0; i < g->nops && !rc; i++) {
		struct op_cost oc;

		rc = cost_op(input->p, g, i, one, m, &oc);
		cost[i] = oc.fwd_us + oc.bwd_us;
		total += cost[i];
	}
	if (!rc)
		rc = plan_alloc(out, g, k);
	if (!rc)
		rc = plan_chain(out);
	for (int s = 0; s < k && !rc; s++)
		rc = plan_stage_range(out, s, s, 1, 0);
	for (int i = 0, s = 0; i < g->nops && !rc; i++) {
		/* the next stage starts once this one has its share, leaving
		 * at least one operator for each stage after it */
		if (s + 1 < k && (done >= total * (s + 1) / k || g->nops - i == k - s - 1))
			s++;
		done += cost[i];
		rc = plan_place_range(out, i, s, one, s);
	}
	plan_schedule(out, SCHED_1F1B, m);
	free(cost);
	return rc;
}

static const struct planner planner_balanced = {
	.name = "balanced",
	.description = "a chain of stages of equal compute, one device each, 1F1B",
	.follows = "docs/adding-a-planner.md",
	.plan = plan_balanced,
	.options = (const struct planner_option[]){
		{ "stages", POPT_INT, "2", NULL, "pipeline stages (one device each)" },
		{ 0 },
	},
	.may_refuse = 0,
	.estimate = PLANNER_EST_NONE,
};

/* --- its tests ------------------------------------------------------- */

/* The planner through the driver, as `autopar plan` runs it. */
static int balanced(const char *model, const char *cluster, const char *opts,
		    struct instance *x, struct plan *out)
{
	struct planner_opts o = { 0 };
	struct planner_input input;

	test_instance(x, model, NULL, cluster);
	if (opts)
		assert_int_equal(planner_opts_set(&planner_balanced, &o, "stages", opts, "test"),
				 AP_OK);
	input = planner_input_of(x, 10, 1, &o);
	plan_init(out);
	return planner_run(&planner_balanced, &input, x->profile, out);
}

/* Every stage's share of the compute is within the largest operator of
 * an equal share, and the plan is a chain of one-device stages. */
static void test_balanced_stages(void **state)
{
	static const char *const models[] = { "mlp", "cnn_small", "transformer_tiny", "vgg16" };

	(void)state;
	for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
		struct instance x;
		struct plan pl;
		double share[4] = { 0 }, total = 0, biggest = 0;

		assert_int_equal(balanced(models[k], "1x4:v100", "4", &x, &pl), AP_OK);
		assert_int_equal(pl.nstages, 4);
		assert_true(pl.pred_iter_ms > 0);
		for (int s = 0; s < 4; s++) {
			assert_int_equal(pl.stages[s].ndev, 1);
			assert_int_equal(pl.stages[s].nnext, s < 3);
		}
		for (int i = 0; i < x.g.nops; i++) {
			int one[NDIMS] = { 1, 1, 1, 1, 1 };
			struct op_cost oc;

			assert_int_equal(cost_op(&x.p, &x.g, i, one, pl.microbatches, &oc), AP_OK);
			share[pl.ops[i].stage] += oc.fwd_us + oc.bwd_us;
			total += oc.fwd_us + oc.bwd_us;
			if (oc.fwd_us + oc.bwd_us > biggest)
				biggest = oc.fwd_us + oc.bwd_us;
		}
		for (int s = 0; s < 4; s++)
			if (fabs(share[s] - total / 4) > biggest * (1 + 1e-9))
				fail_msg("%s: stage %d has %.3f us of %.3f (largest op %.3f us)",
					 models[k], s, share[s], total, biggest);
		plan_release(&pl);
		instance_release(&x);
	}
}

/* A stage count the cluster cannot hold is refused with the reason. */
static void test_refused(void **state)
{
	struct instance x;
	struct plan pl;

	(void)state;
	ap_err_quiet(1);
	assert_int_equal(balanced("mlp", "1x2:v100", "3", &x, &pl), AP_EINPUT);
	ap_err_quiet(0);
	assert_non_null(strstr(ap_last_error(), "--stages 3: expected 1 to 2"));
	plan_release(&pl);
	instance_release(&x);
}

/* Its plan trains on two ranks as on one device (the runtime's check). */
static void test_runs(void **state)
{
	char path[1024];
	struct instance x;
	struct plan pl;

	(void)state;
	assert_int_equal(balanced("mlp", "cpu-1x2", NULL, &x, &pl), AP_OK);
	snprintf(path, sizeof path, "%s/balanced.json", tmp_dir());
	assert_int_equal(plan_write(&pl, &x.g, path), AP_OK);
	plan_release(&pl);
	instance_release(&x);
	rt_check_plan(path, "mlp by balanced on cpu-1x2");
}

/* Every ```c block of the guide is a piece of this file. */
static void test_guide_matches(void **state)
{
	char guide[1024], self[1024], *doc = malloc(1 << 16), *src = malloc(1 << 17);
	int blocks = 0;

	(void)state;
	assert_non_null(doc);
	assert_non_null(src);
	test_read_file(datapath(guide, sizeof guide, "docs/adding-a-planner.md"), doc, 1 << 16);
	test_read_file(datapath(self, sizeof self, "tests/test_example_planner.c"), src, 1 << 17);
	for (char *b = strstr(doc, "```c\n"); b; b = strstr(b, "```c\n")) {
		char *e = strstr(b += 5, "```");

		assert_non_null(e);
		*e = '\0';
		if (!strstr(src, b))
			fail_msg("this block of docs/adding-a-planner.md is not in "
				 "tests/test_example_planner.c:\n%s", b);
		blocks++;
		b = e + 3;
	}
	assert_true(blocks >= 3);
	free(doc);
	free(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_balanced_stages),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_runs),
		cmocka_unit_test(test_guide_matches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
