/*
 * Tests of the mcmc planner (planners/mcmc.c): its plan validates and is
 * never worse than its starting points dp and owt; the same seed gives the
 * same plan, and delta re-simulation the same search as full simulation;
 * a time budget is kept; the search curve is recorded, falls over time and
 * survives a write and read of the plan.
 */
#include "testutil.h"

#include "util/clock.h"
#include "util/datadir.h"
#include "util/err.h"
#include "model/model_io.h"
#include "driver.h"
#include "planner.h"
#include "sim/sim.h"
#include "plan/plan_io.h"
#include "plan/plan_check.h"

/* Plans x with spec; returns the simulated iteration time of the plan. */
static double plan_with(struct instance *x, const char *spec, double budget_s, uint64_t seed,
			struct plan *out)
{
	const struct planner *pln;
	struct planner_opts o;
	struct planner_input input;
	struct sim s;
	struct sim_result r;

	assert_int_equal(planner_parse(spec, "test", &pln, &o), AP_OK);
	input = (struct planner_input){ .g = &x->g, .p = &x->p, .c = &x->c,
				     .budget_s = budget_s, .seed = seed, .opts = &o };
	plan_init(out);
	if (planner_run(pln, &input, x->c.profile, out) != AP_OK)
		fail_msg("%s: %s", spec, ap_last_error());
	assert_int_equal(plan_validate(out, &x->g, &x->c, "plan"), AP_OK);
	assert_int_equal(sim_init(&s, &x->g, &x->p, &x->c), AP_OK);
	assert_int_equal(sim_run(&s, out, NULL, &r), AP_OK);
	sim_release(&s);
	return r.iter_s;
}

static void same_plan(const struct plan *a, const struct plan *b)
{
	assert_int_equal(a->nops, b->nops);
	for (int i = 0; i < a->nops; i++) {
		assert_memory_equal(a->ops[i].degree, b->ops[i].degree, sizeof a->ops[i].degree);
		assert_int_equal(a->ops[i].ndev, b->ops[i].ndev);
		assert_memory_equal(a->ops[i].devices, b->ops[i].devices,
				    (size_t)a->ops[i].ndev * sizeof(int));
	}
}

static void test_not_worse_than_starts(void **state)
{
	static const char *const models[] = { "alexnet", "branchy_small", "transformer_tiny" };
	struct instance x;
	struct plan pm, pb;

	(void)state;
	for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
		double t, tdp, towt;

		test_instance(&x, models[m], NULL, "flexflow-p100");
		t = plan_with(&x, "mcmc:proposals=1500", 60, 7, &pm);
		tdp = plan_with(&x, "dp", 1, 7, &pb);
		plan_release(&pb);
		towt = plan_with(&x, "owt", 1, 7, &pb);
		plan_release(&pb);
		if (t > tdp || t > towt)
			fail_msg("%s: mcmc %.6g ms, dp %.6g, owt %.6g", models[m], 1e3 * t,
				 1e3 * tdp, 1e3 * towt);
		/* its own estimate is the simulator's */
		assert_true(fabs(test_present(pm.est_ms, "planner_est_ms") - 1e3 * t) <= 1e-9 * 1e3 * t);
		assert_true(test_plan_stat(&pm, "proposals") > 0);
		assert_true(test_plan_stat(&pm, "acceptance") > 0 && test_plan_stat(&pm, "acceptance") <= 1);
		plan_release(&pm);
		instance_release(&x);
	}
}

/* The same seed, the same plan; delta and full simulation, the same
 * search; another seed, another search. */
static void test_deterministic(void **state)
{
	struct instance x;
	struct plan a, b, c;

	(void)state;
	test_instance(&x, "gnmt", NULL, "2x4:v100");
	plan_with(&x, "mcmc:proposals=800,chains=2", 60, 11, &a);
	plan_with(&x, "mcmc:proposals=800,chains=2", 60, 11, &b);
	same_plan(&a, &b);
	assert_true(test_plan_stat(&a, "acceptance") == test_plan_stat(&b, "acceptance"));
	plan_release(&b);
	plan_with(&x, "mcmc:proposals=800,chains=2,full-sim", 60, 11, &b);
	same_plan(&a, &b);
	assert_true(test_present(a.est_ms, "planner_est_ms") == test_present(b.est_ms, "planner_est_ms"));
	assert_true(test_plan_stat(&a, "acceptance") == test_plan_stat(&b, "acceptance"));
	plan_with(&x, "mcmc:proposals=800,chains=2", 60, 12, &c);
	assert_true(test_plan_stat(&a, "acceptance") != test_plan_stat(&c, "acceptance"));
	plan_release(&a);
	plan_release(&b);
	plan_release(&c);
	instance_release(&x);
}

static void test_budget(void **state)
{
	struct instance x;
	struct plan p;
	double t0;

	(void)state;
	test_instance(&x, "resnet50", NULL, "flexflow-p100");
	t0 = now_s();
	plan_with(&x, "mcmc:beta=2", 0.5, 3, &p);
	/* the margin: a proposal and the final plan, on a busy machine */
	if (p.search_s > 0.5 + 0.25 || now_s() - t0 > 0.5 + 1.0)
		fail_msg("budget 0.5 s, searched %.3f s", p.search_s);
	plan_release(&p);
	instance_release(&x);
}

/* The curve falls, ends at the plan's estimate and is read back. */
static void test_curve(void **state)
{
	struct instance x;
	struct plan p, q;
	const char *path;

	(void)state;
	test_instance(&x, "alexnet", NULL, "flexflow-p100");
	plan_with(&x, "mcmc:proposals=1000", 60, 5, &p);
	assert_true(p.ncurve >= 1);
	for (int k = 1; k < p.ncurve; k++) {
		assert_true(p.curve[k][0] >= p.curve[k - 1][0]);
		assert_true(p.curve[k][1] < p.curve[k - 1][1]);
	}
	assert_true(p.curve[p.ncurve - 1][1] == test_present(p.est_ms, "planner_est_ms"));
	path = tmp_write("mcmc.json", "");
	assert_int_equal(plan_write(&p, &x.g, path), AP_OK);
	plan_init(&q);
	assert_int_equal(plan_read(path, &x.g, &q), AP_OK);
	assert_int_equal(q.ncurve, p.ncurve);
	for (int k = 0; k < p.ncurve; k++)
		assert_true(fabs(q.curve[k][1] - p.curve[k][1]) <= 1e-9 * p.curve[k][1]);
	plan_release(&p);
	plan_release(&q);
	instance_release(&x);
}

/* Tied weights: a proposal that moves one op of a tied pair moves the
 * other onto the same devices (mcmc.c), and random starts are made to
 * keep the pair, so the plan validates (plan_with()) with the pair on
 * the same devices (this search's best plan split it before); the delta
 * simulation of such changes of two ops is the full simulation's, the
 * same search to the bit. */
static void test_tied_weights(void **state)
{
	struct instance x;
	struct plan a, b;

	(void)state;
	test_instance(&x, test_tied_model(), NULL, "2x2:v100");
	plan_with(&x, "mcmc:proposals=3000,chains=4", 60, 2, &a);
	test_same_devices(&a, &x.g, "wte", "head");
	plan_with(&x, "mcmc:proposals=3000,chains=4,full-sim", 60, 2, &b);
	same_plan(&a, &b);
	assert_true(test_present(a.est_ms, "planner_est_ms") == test_present(b.est_ms, "planner_est_ms"));
	assert_true(test_plan_stat(&a, "acceptance") == test_plan_stat(&b, "acceptance"));
	plan_release(&a);
	plan_release(&b);
	instance_release(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_worse_than_starts),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_curve),
		cmocka_unit_test(test_tied_weights),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
