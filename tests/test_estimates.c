/*
 * A planner that reports its own estimate of the iteration time
 * (planner_est_ms) agrees with the simulator's prediction of the plan it
 * emits within 5%, where none of the terms its header documents as left
 * to the simulator applies: the ILP's one-stage programs (no pipeline:
 * its chain latency and 1F1B's in-flight waits play no part) on one node
 * and across nodes, where an op's replica groups share the NICs, and
 * graphpipe's plans on one node with PipeDream's profiles and the zoo's
 * chains (no NIC shared, the all-reduce hidden).  pipedream has its own
 * test (test_pipedream_planner.c); mcmc and exhaustive report the
 * simulator's own number.
 */
#include "testutil.h"

#include "model/batch.h"
#include "util/datadir.h"
#include "util/err.h"
#include "model/model_io.h"
#include "planner.h"
#include "sim/sim.h"

struct cell {
	const char *spec, *model, *cluster;
};

/* The planner's estimate over the simulator's prediction of its plan. */
static double est_over_sim(const struct cell *k)
{
	const struct planner *pl;
	struct planner_opts o;
	struct instance x;
	struct plan out;
	struct planner_input input;
	double est, ratio;

	/* the model's own batch on every device (weak scaling) */
	test_instance(&x, k->model, "0/dev", k->cluster);
	input = (struct planner_input){ .g = &x.g, .p = &x.p, .c = &x.c, .budget_s = 1,
				     .seed = 1, .opts = &o, .per_device_batch = 0 };
	plan_init(&out);
	assert_int_equal(planner_parse(k->spec, "test", &pl, &o), AP_OK);
	if (planner_run(pl, &input, x.c.profile, &out) != AP_OK)
		fail_msg("%s on %s/%s: %s", k->spec, k->model, k->cluster, ap_last_error());
	est = out.est_ms;
	assert_true(est > 0);
	assert_true(out.pred_iter_ms > 0);
	ratio = est / out.pred_iter_ms;
	print_message("%-18s %-18s %-12s est %10.3f ms sim %10.3f ms est/sim %.3f\n", k->spec,
		      k->model, k->cluster, est, out.pred_iter_ms, ratio);
	plan_release(&out);
	instance_release(&x);
	return ratio;
}

static void check_cells(const struct cell *cells, int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		double r = est_over_sim(&cells[i]);

		if (fabs(r - 1) > 0.05) {
			print_error("%s on %s/%s: est/sim %.3f, not within 5%%\n", cells[i].spec,
				    cells[i].model, cells[i].cluster, r);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* One stage (max-stages=1): the model is the simulator's own costs, its
 * all-reduce formulas over every replica group of an op (those across
 * nodes one after another on the NICs they share: alexnet's classifier
 * split by n and c over four nodes), its resharding transfers and its
 * update. */
static void test_ilp_one_stage(void **state)
{
	static const struct cell cells[] = {
		{ "ilp:max-stages=1", "mlp", "1x4:h100" },
		{ "ilp:max-stages=1", "cnn_small", "pipedream-a" },
		{ "ilp:max-stages=1", "transformer_tiny", "2x4:v100" },
		{ "ilp:max-stages=1", "alexnet", "pipedream-a" },
		{ "ilp:max-stages=1", "alexnet", "2x4:v100" },
		{ "ilp:max-stages=1", "pipedream/alexnet", "pipedream-a" },
		{ "ilp:max-stages=1", "pipedream/resnet18", "2x4:v100" },
		{ "ilp:max-stages=1", "pipedream/vgg16", "h100-1x8" },
	};

	(void)state;
	check_cells(cells, (int)(sizeof cells / sizeof cells[0]));
}

/* graphpipe on one node: its stages' transfers have their own links and
 * the stages' all-reduces hide behind their backward. */
static void test_graphpipe_one_node(void **state)
{
	static const struct cell cells[] = {
		{ "graphpipe", "pipedream/alexnet", "1x4:h100" },
		{ "graphpipe", "pipedream/vgg16", "h100-1x8" },
		{ "graphpipe", "pipedream/resnet18", "h100-1x8" },
		{ "graphpipe", "vgg16", "1x4:h100" },
		{ "graphpipe", "alexnet", "h100-1x8" },
	};

	(void)state;
	check_cells(cells, (int)(sizeof cells / sizeof cells[0]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ilp_one_stage),
		cmocka_unit_test(test_graphpipe_one_node),
	};

	return cmocka_run_group_tests_name("planner estimates", tests, NULL, NULL);
}
