/*
 * The ILP planner against its own model and the simulator: on small
 * instances its objective is the minimum of a brute-force enumeration of
 * the model's whole decision space (every layout, stage assignment and
 * configuration); its plan is never worse than dp's under the model and
 * simulates within 10% of its objective; the optimum of an FC-heavy model
 * mixes data and model parallelism; memory that one stage cannot hold
 * forces a pipeline; a budget too small to prove optimality still returns
 * the incumbent with a bound and a gap.
 */
#include "testutil.h"

#include "util/datadir.h"
#include "util/err.h"
#include "ilp.h"
#include "model/model_io.h"
#include "driver.h"
#include "planner.h"
#include "sim/sim.h"

struct run {
	struct instance x;
	struct planner_opts o;
	struct planner_input input;
	struct plan pl;
	int rc;
};

/* Loads model and cluster with the cluster's profile and runs `spec`
 * through the driver (which validates the plan). */
static void run(struct run *t, const char *model, const char *cspec, const char *spec,
		double budget_s)
{
	const struct planner *pln;

	memset(t, 0, sizeof *t);
	test_instance(&t->x, model, NULL, cspec);
	assert_int_equal(planner_parse(spec, "test", &pln, &t->o), AP_OK);
	t->input = planner_input_of(&t->x, budget_s, 1, &t->o);
	plan_init(&t->pl);
	t->rc = planner_run(pln, &t->input, t->x.profile, &t->pl);
}

static void done(struct run *t)
{
	plan_release(&t->pl);
	instance_release(&t->x);
}

static double simulate(struct run *t)
{
	struct sim s;
	struct sim_result r;

	assert_int_equal(sim_init(&s, &t->x.g, &t->x.p, &t->x.c), AP_OK);
	assert_int_equal(sim_run(&s, &t->pl, NULL, &r), AP_OK);
	sim_release(&s);
	return r.iter_s;
}

/* Every stage and configuration of every group, depth first. */
static double enumerate(const struct ilp_inst *x, int *stage, int *cfg, int g)
{
	double best = INFINITY;

	if (g == x->ngroups)
		return ilp_inst_eval(x, stage, cfg);
	for (int s = 0; s < x->K; s++)
		for (int c = 0; c < x->grp[g].ncfg; c++) {
			stage[g] = s;
			cfg[g] = c;
			/* dropped configurations are not points of the model */
			if (x->grp[g].cfg[c].alias == c)
				best = fmin(best, enumerate(x, stage, cfg, g + 1));
		}
	return best;
}

/* The model's optimum over the layouts the planner tries, by brute force. */
static double brute_force(struct run *t, int max_mb)
{
	int ndev = cluster_ndevices(&t->x.c), stage[64], cfg[64];
	double best = INFINITY;

	for (int K = 1; K <= ndev; K++)
		for (int m = 1; m <= (K > 1 ? max_mb : 1) && ndev % K == 0; m *= 2) {
			struct ilp_inst x;

			if (t->x.g.batch % m || ilp_inst_build(&x, &t->input, K, m, 1, 1) != AP_OK)
				continue;
			assert_true(x.ngroups <= 64);
			best = fmin(best, enumerate(&x, stage, cfg, 0));
			ilp_inst_release(&x);
		}
	return best;
}

/* dp's plan under the one-stage model, INFINITY when it does not fit. */
static double dp_under_model(struct run *t)
{
	struct plan p;
	struct ilp_inst x;
	int stage[512], cfg[512];
	double v = INFINITY;

	plan_init(&p);
	assert_int_equal(planner_call(planner_find("dp"), &t->input, &p), AP_OK);
	assert_int_equal(ilp_inst_build(&x, &t->input, 1, 1, 1, 0), AP_OK);
	assert_true(x.ngroups <= 512);
	if (ilp_inst_from_plan(&x, &p, stage, cfg) == 0)
		v = ilp_inst_eval(&x, stage, cfg);
	ilp_inst_release(&x);
	plan_release(&p);
	return v;
}

static void test_matches_brute_force(void **state)
{
	static const struct {
		const char *model, *cluster;
	} cases[] = {
		{ "mlp", "cpu-1x2" }, { "mlp", "1x4:h100" }, { "cnn_small", "cpu-1x2" },
		{ "branchy_small", "1x2:v100" }, { "mlp", "2x2:v100" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct run t;
		double est, bf;

		run(&t, cases[i].model, cases[i].cluster, "ilp:max-microbatches=8", 60);
		if (t.rc)
			fail_msg("%s on %s: %s", cases[i].model, cases[i].cluster, ap_last_error());
		est = test_present(t.pl.est_ms, "planner_est_ms") * 1e-3;
		bf = brute_force(&t, 8);
		if (fabs(est - bf) > 1e-9 * bf)
			fail_msg("%s on %s: ilp %.9g s, brute force %.9g s", cases[i].model,
				 cases[i].cluster, est, bf);
		assert_true(test_plan_stat(&t.pl, "optimal") == 1);
		assert_true(test_present(t.pl.gap, "gap") == 0);
		assert_true(est <= dp_under_model(&t) * (1 + 1e-12));
		done(&t);
	}
}

/* AlexNet on an H100 node: convolutions by samples, the big
 * fully-connected layers by features, as Krizhevsky's trick has it,
 * proven optimal; the plan simulates within 10% of the model; never worse
 * than dp. */
static void test_mixed_parallelism(void **state)
{
	struct run t;
	int by_n = 0, by_c = 0;
	double est, sim;

	(void)state;
	run(&t, "alexnet", "h100-1x8", "ilp", 60);
	assert_int_equal(t.rc, AP_OK);
	for (int i = 0; i < t.x.g.nops; i++) {
		by_n += t.x.g.ops[i].kind == OP_CONV2D && t.pl.ops[i].degree[DIM_N] > 1;
		by_c += t.x.g.ops[i].kind == OP_LINEAR && t.pl.ops[i].degree[DIM_C] > 1;
	}
	assert_true(by_n > 0 && by_c > 0);
	assert_true(test_plan_stat(&t.pl, "optimal") == 1);
	est = test_present(t.pl.est_ms, "planner_est_ms") * 1e-3;
	sim = simulate(&t);
	if (fabs(sim - est) > 0.1 * est)
		fail_msg("alexnet: model %.6g s, simulated %.6g s", est, sim);
	assert_true(est <= dp_under_model(&t));
	done(&t);
}

/* PipeDream's imported AlexNet can split its layers by samples only, so
 * with 600 MB per device the replicated weights, gradients and momentum
 * of one stage do not fit: the ILP pipelines, and without stages it says
 * nothing fits. */
static void test_memory_forces_stages(void **state)
{
	const char *cl = "1x4:v100,mem=600MB";
	struct run t;
	double est;

	(void)state;
	run(&t, "pipedream/alexnet", cl, "ilp", 60);
	if (t.rc)
		fail_msg("%s", ap_last_error());
	assert_true(t.pl.nstages > 1);
	assert_true(isinf(dp_under_model(&t)));
	assert_true(test_plan_stat(&t.pl, "optimal") == 1);
	est = test_present(t.pl.est_ms, "planner_est_ms") * 1e-3;
	assert_true(fabs(simulate(&t) - est) <= 0.1 * est);
	done(&t);
	ap_err_quiet(1);
	run(&t, "pipedream/alexnet", cl, "ilp:max-stages=1", 60);
	ap_err_quiet(0);
	assert_int_equal(t.rc, AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "fits the devices' memory"));
	done(&t);
}

/* A budget far too small to prove anything still yields the warm start,
 * a bound below it and the gap between them. */
static void test_budget(void **state)
{
	struct run t;
	double est, bound, gap;

	(void)state;
	run(&t, "inception_v3", "h100-1x8", "ilp", 0.3);
	assert_int_equal(t.rc, AP_OK);
	est = test_present(t.pl.est_ms, "planner_est_ms");
	bound = test_present(t.pl.bound_ms, "bound_ms");
	gap = test_present(t.pl.gap, "gap");
	assert_true(bound <= est * (1 + 1e-9));
	assert_true(gap >= 0 && gap <= 1);
	assert_true(fabs(gap - (est - bound) / est) < 1e-9 || test_plan_stat(&t.pl, "optimal") == 1);
	assert_true(test_plan_stat(&t.pl, "variables") > 0);
	done(&t);
}

/* A budget too short for GLPK to find an integer solution, where no
 * simple plan fits memory to fall back on: the search failed (exit 1), the
 * input was fine (not 2), and the message says what to do. */
static void test_budget_exhausted(void **state)
{
	struct run t;

	(void)state;
	ap_err_quiet(1);
	run(&t, "gpt2", "1x8:v100,mem=2GiB", "ilp", 0.01);
	ap_err_quiet(0);
	assert_int_equal(t.rc, AP_EFAIL);
	assert_non_null(strstr(ap_last_error(), "raise --budget"));
	assert_non_null(strstr(ap_last_error(), "heuristic planner"));
	done(&t);
}

/* Tied weights: the group of an op that ties its weight to another's runs
 * in the other's stage on as many of its first devices (ilp.h), and the
 * driver validates the plan (run()).  On a small tied model the optimum
 * is still the brute force's, whose model refuses a broken tie; on one
 * with layers after the pair, whose plan before split it, the pair runs
 * on the same devices. */
static void test_tied_weights(void **state)
{
	static const char small[] = "model tied_small\n"
				    "batch 32\n"
				    "input     ids   l=64\n"
				    "embedding wte   ids  vocab=512 out=256\n"
				    "linear    a1    wte  out=256\n"
				    "linear    head  a1   out=512 bias=0 tie=wte\n"
				    "linear    b1    head out=1024\n"
				    "loss      loss  b1\n";
	struct run t;
	double est, bf;

	(void)state;
	run(&t, tmp_write("tied_small.model", small), "1x2:v100", "ilp:max-microbatches=8", 60);
	if (t.rc)
		fail_msg("tied_small: %s", ap_last_error());
	test_same_devices(&t.pl, &t.x.g, "wte", "head");
	est = test_present(t.pl.est_ms, "planner_est_ms") * 1e-3;
	bf = brute_force(&t, 8);
	if (fabs(est - bf) > 1e-9 * bf)
		fail_msg("tied_small: ilp %.9g s, brute force %.9g s", est, bf);
	assert_true(test_plan_stat(&t.pl, "optimal") == 1);
	done(&t);
	run(&t, test_tied_model(), "1x4:v100", "ilp", 60);
	if (t.rc)
		fail_msg("tied_mid: %s", ap_last_error());
	test_same_devices(&t.pl, &t.x.g, "wte", "head");
	done(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_brute_force),
		cmocka_unit_test(test_tied_weights),
		cmocka_unit_test(test_mixed_parallelism),
		cmocka_unit_test(test_memory_forces_stages),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_budget_exhausted),
	};

	return cmocka_run_group_tests_name("ilp", tests, NULL, NULL);
}
