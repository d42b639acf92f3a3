/*
 * The fixtures of the simulator's tests (test_sim.c, test_sim_mixed.c,
 * test_sim_replicas.c): one graph, profile, cluster, plan and simulator
 * per test binary, set up empty before every test; small models, with an
 * in-memory profile whose rows give every shard a known time; and run(),
 * which validates and simulates the plan at hand and checks the
 * invariants every schedule keeps (makespan >= critical path and >= the
 * busiest device).
 */
#ifndef AUTOPAR_SIMTEST_H
#define AUTOPAR_SIMTEST_H

#include "testutil.h"

#include "hw/cluster.h"
#include "util/datadir.h"
#include "util/err.h"
#include "model/model_io.h"
#include "plan/plan.h"
#include "hw/profile.h"
#include "sim/sim.h"
#include "model/ops.h"
#include "plan/plan_check.h"
#include "plan/plan_build.h"

#define US 1e-6
#define EPS 1e-12

static struct graph g;
static struct profile prof;
static struct cluster cl;
static struct plan pl;
static struct sim sim;
static int have_sim;
static struct device_spec v100;

static inline void load(const char *text)
{
	graph_release(&g);
	if (model_parse(text, "t.model", 0, &g) != AP_OK)
		fail_msg("%s", ap_last_error());
}

static inline int op_of(const char *name)
{
	int i = graph_find(&g, name);

	if (i < 0)
		fail_msg("no op '%s'", name);
	return i;
}

static inline void cluster(const char *spec)
{
	char csv[4096];

	if (cluster_resolve(spec, datapath(csv, sizeof csv, "profiles/clusters.csv"),
			    &cl) != AP_OK)
		fail_msg("%s", ap_last_error());
}

/* Communication that costs nothing, which a spec cannot say (a zero
 * bandwidth or latency is refused as a typo). */
static inline void free_links(void)
{
	cl.intra.bw_bytes_per_s = cl.inter.bw_bytes_per_s = INFINITY;
	cl.intra.latency_s = cl.inter.latency_s = 0;
}

static inline void set_op(const char *name, int stage, int dn, int dc, const int *dev)
{
	int deg[NDIMS] = { dn, dc, 1, 1, 1 };

	assert_int_equal(plan_place(&pl, op_of(name), stage, deg, dev), AP_OK);
}

static inline void set_stage(int s, const int *dev, int ndev, int next)
{
	assert_int_equal(plan_stage(&pl, s, dev, ndev, 0), AP_OK);
	if (next >= 0)
		assert_int_equal(plan_link(&pl, s, next), AP_OK);
}

/* Every op of the plan at its degrees (n times its stage's micro-batches)
 * costs fwd_us and bwd_us of its own (by op index); measured rows, so the
 * lookups are exact. */
static inline void put_costs(const double *fwd_us, const double *bwd_us)
{
	char sig[1024];

	for (int i = 0; i < g.nops; i++) {
		int deg[NDIMS];

		memcpy(deg, pl.ops[i].degree, sizeof deg);
		deg[DIM_N] *= plan_stage_microbatches(&pl, pl.ops[i].stage);
		assert_int_equal(graph_op_signature(&g, i, deg, sig, sizeof sig), AP_OK);
		assert_int_equal(profile_put(&prof, sig, fwd_us[i], bwd_us[i], 0, 0),
				 AP_OK);
	}
}

/* Every op the same. */
static inline void put_uniform(double fwd_us, double bwd_us)
{
	double f[64], b[64];

	assert_true(g.nops <= 64);
	for (int i = 0; i < g.nops; i++) {
		f[i] = fwd_us;
		b[i] = bwd_us;
	}
	put_costs(f, b);
}

static inline void run(const struct sim_opts *o, struct sim_result *r)
{
	if (have_sim)
		sim_release(&sim);
	have_sim = 0;
	assert_int_equal(plan_validate(&pl, &g, &cl, "plan"), AP_OK);
	assert_int_equal(sim_init(&sim, &g, &prof, &cl), AP_OK);
	have_sim = 1;
	if (sim_run(&sim, &pl, o, r) != AP_OK)
		fail_msg("sim_run: %s", ap_last_error());
	/* The invariants every schedule keeps. */
	assert_true(r->makespan_s >= r->critical_path_s * (1 - EPS));
	assert_true(r->makespan_s >= r->busiest_compute_s * (1 - EPS));
	assert_true(r->iter_s <= r->makespan_s * (1 + EPS));
	assert_true(r->bubble >= -EPS && r->bubble < 1);
}

static inline void near(double got, double want)
{
	if (fabs(got - want) > 1e-9 * fabs(want) + 1e-15)
		fail_msg("got %.15g, expected %.15g", got, want);
}

static inline int setup(void **state)
{
	char path[4096];

	(void)state;
	ap_err_quiet(1);
	graph_init(&g);
	plan_init(&pl);
	profile_init(&prof);
	if (!v100.name[0] &&
	    device_find(datapath(path, sizeof path, "profiles/devices.csv"), "v100",
			&v100) != AP_OK) {
		print_error("device_find: %s\n", ap_last_error());
		return -1;
	}
	prof.dev = v100;
	return 0;
}

static inline int teardown(void **state)
{
	(void)state;
	if (have_sim)
		sim_release(&sim);
	have_sim = 0;
	plan_release(&pl);
	graph_release(&g);
	profile_release(&prof);
	return 0;
}

/* fc: 16 x 4 + 4 = 68 parameters, 272 bytes. */
static const char dp_model[] = "model t\nbatch 8\n"
			       "input x c=16\n"
			       "linear fc x out=4\n"
			       "loss l fc\n";

static inline void dp_plan(int m, enum sched_kind sched)
{
	static const int all[] = { 0, 1, 2, 3 };

	load(dp_model);
	assert_int_equal(plan_alloc(&pl, &g, 1), AP_OK);
	plan_schedule(&pl, sched, m);
	set_stage(0, all, 4, -1);
	set_op("x", 0, 4, 1, all);
	set_op("fc", 0, 4, 1, all);
	set_op("l", 0, 4, 1, all);
	put_costs((const double[]){ 0, 10, 3 }, (const double[]){ 0, 20, 4 });
}

/* Four relus (no parameters, so no all-reduce or update) on four stages:
 * every stage runs one op, the input and the loss cost nothing. */
static const char chain_model[] = "model t\nbatch 8\n"
				  "input x c=1024\n"
				  "relu r0 x\n"
				  "relu r1 r0\n"
				  "relu r2 r1\n"
				  "relu r3 r2\n"
				  "loss l r3\n";

static inline void chain_plan(int m, enum sched_kind sched, double tf, double tb)
{
	static const char *const ops[] = { "x", "r0", "r1", "r2", "r3", "l" };
	static const int stage_of[] = { 0, 0, 1, 2, 3, 3 };

	load(chain_model);
	assert_int_equal(plan_alloc(&pl, &g, 4), AP_OK);
	plan_schedule(&pl, sched, m);
	for (int s = 0; s < 4; s++)
		set_stage(s, &s, 1, s < 3 ? s + 1 : -1);
	for (int i = 0; i < 6; i++)
		set_op(ops[i], stage_of[i], 1, 1, &stage_of[i]);
	put_costs((const double[]){ 0, tf, tf, tf, tf, 0 },
		  (const double[]){ 0, tb, tb, tb, tb, 0 });
}

/* Every test starts from an empty graph, plan and profile. */
#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

#endif
