/*
 * Tests of delta re-simulation (core/sim/sim_delta.c): random proposals, each
 * giving one operator a random configuration (a random divisor of each of
 * its splittable dims, product at most the device count, on random
 * distinct devices) or undoing the last one, are applied to a plan; after
 * every one sim_delta() on a long-lived simulator must give exactly what
 * a full sim_run() on a fresh one gives: the same iteration time, memory
 * of every device, critical path, bubble, task counts, link bytes and
 * cost sources.  11,500 proposals over five models of the zoo on 16, 8
 * and 4 devices, one stage or two, among them changes of two operators
 * at once, changes that leave an operator as it was, and changes taken
 * back by sim_undo(), one after another too as a search rejects them.
 * Some runs are lean, as a search's are (sim_opts): those must give a
 * full non-lean run's iteration time, memory, task counts and link bytes,
 * and leave out only the critical path and the busy times.
 */
#include "testutil.h"

#include <math.h>

#include "hw/cluster.h"
#include "util/datadir.h"
#include "util/err.h"
#include "model/model_io.h"
#include "plan/plan.h"
#include "hw/profile.h"
#include "sim/sim.h"
#include "plan/plan_build.h"
#include "sim/sim_delta.h"
#include "cost/cost.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int rand_below(int n)
{
	return (int)(next_rand() % (uint64_t)n);
}

/* A random configuration of op i on ndev devices into po. */
static void random_config(const struct graph *g, int i, int ndev, struct plan_op *po)
{
	const struct op *op = &g->ops[i];
	int left = ndev, devs[64], n = 1;

	for (int d = 0; d < NDIMS; d++) {
		int64_t size = shape_size(&op->out, (enum dim_kind)d);
		int divs[64], nd = 0;

		po->degree[d] = 1;
		if (!(op->split_mask & (1u << d)) || shape_dim(&op->out, (enum dim_kind)d) < 0)
			continue;
		for (int k = 1; k <= left && nd < 64; k++)
			if (size % k == 0)
				divs[nd++] = k;
		/* half the time unsplit along d, so configurations vary */
		po->degree[d] = next_rand() & 1 ? divs[rand_below(nd)] : 1;
		left /= po->degree[d];
		n *= po->degree[d];
	}
	for (int k = 0; k < ndev; k++)
		devs[k] = k;
	for (int k = 0; k < n; k++) {
		int j = k + rand_below(ndev - k), t = devs[k];

		devs[k] = devs[j];
		devs[j] = t;
	}
	assert_int_equal(plan_set_devices(&po->devices, &po->ndev, devs, n), AP_OK);
}

static void copy_op(struct plan_op *dst, const struct plan_op *src)
{
	memcpy(dst->degree, src->degree, sizeof dst->degree);
	dst->stage = src->stage;
	assert_int_equal(plan_set_devices(&dst->devices, &dst->ndev, src->devices, src->ndev),
			 AP_OK);
}

/* Equal, or both not computed (a lean run's NAN). */
static int differ(double a, double b)
{
	return a != b && !(isnan(a) && isnan(b));
}

/* What a lean run computes too. */
static void same_lean(const struct sim_result *a, const struct sim_result *b, int step)
{
	if (a->iter_s != b->iter_s || a->makespan_s != b->makespan_s ||
	    a->ntasks != b->ntasks || a->peak_mem_bytes != b->peak_mem_bytes ||
	    a->ndev_used != b->ndev_used || a->samples_per_s != b->samples_per_s ||
	    a->peak_dev != b->peak_dev)
		fail_msg("proposal %d: iter %.17g makespan %.17g tasks %lld peak %lld, "
			 "against %.17g %.17g %lld %lld", step, a->iter_s, a->makespan_s,
			 (long long)a->ntasks, (long long)a->peak_mem_bytes, b->iter_s,
			 b->makespan_s, (long long)b->ntasks, (long long)b->peak_mem_bytes);
	for (int k = 0; k < 3; k++)
		assert_int_equal(a->link_bytes[k], b->link_bytes[k]);
	for (int k = 0; k < NTASK_KINDS; k++)
		assert_int_equal(a->ntask_kinds[k], b->ntask_kinds[k]);
	for (int k = 0; k < NCOST_SOURCES; k++)
		assert_int_equal(a->costs.n[k], b->costs.n[k]);
	for (int d = 0; d < a->ndev; d++)
		if (a->mem[d].peak != b->mem[d].peak || a->mem[d].act != b->mem[d].act)
			fail_msg("proposal %d: device %d peak %lld act %lld, against %lld %lld",
				 step, d, (long long)a->mem[d].peak, (long long)a->mem[d].act,
				 (long long)b->mem[d].peak, (long long)b->mem[d].act);
}

static void same_result(const struct sim_result *a, const struct sim_result *b, int step)
{
	same_lean(a, b, step);
	if (differ(a->critical_path_s, b->critical_path_s) ||
	    differ(a->compute_busy_s, b->compute_busy_s) || differ(a->bubble, b->bubble) ||
	    differ(a->busiest_compute_s, b->busiest_compute_s))
		fail_msg("proposal %d: delta cp %.17g busy %.17g bubble %.17g busiest %.17g, "
			 "full %.17g %.17g %.17g %.17g", step, a->critical_path_s,
			 a->compute_busy_s, a->bubble, a->busiest_compute_s, b->critical_path_s,
			 b->compute_busy_s, b->bubble, b->busiest_compute_s);
}

/* n proposals on model `name` over cluster `spec`, its ops in nstages
 * stages of consecutive ops, a chain; lean runs if `lean`, every eighth
 * of them compared with a full run that is not. */
static void proposals(const char *name, const char *spec, int nstages, int n, int lean)
{
	const struct sim_opts o = { .optimizer = OPTIMIZER_SGD, .lean = lean };
	struct instance x;
	struct plan pl;
	struct plan_op old;
	struct sim sd, sf, sn;
	struct sim_result rd, rf, rn;
	int ndev, last = -1;

	plan_init(&pl);
	memset(&old, 0, sizeof old);
	test_instance(&x, name, NULL, spec);
	ndev = cluster_ndevices(&x.c);
	assert_int_equal(plan_alloc(&pl, &x.g, nstages), AP_OK);
	assert_int_equal(plan_chain(&pl), AP_OK);
	for (int i = 0; i < x.g.nops; i++) {
		pl.ops[i].stage = i * nstages / x.g.nops;
		random_config(&x.g, i, ndev, &pl.ops[i]);
	}
	assert_int_equal(sim_init(&sd, &x.g, &x.p, &x.c), AP_OK);
	assert_int_equal(sim_init(&sf, &x.g, &x.p, &x.c), AP_OK);
	assert_int_equal(sim_init(&sn, &x.g, &x.p, &x.c), AP_OK);
	assert_int_equal(sim_run(&sd, &pl, &o, &rd), AP_OK);
	for (int step = 0; step < n; step++) {
		int ops[2], nops = 1, u = rand_below(10);

		if (u < 3 && last >= 0) {
			/* undo the last change, as a rejected proposal does:
			 * by a delta of it, or by sim_undo() and a delta of
			 * nothing or of the next proposal */
			ops[0] = last;
			copy_op(&pl.ops[last], &old);
			if (u > 0) {
				sim_undo(&sd);
				nops = 0;
			}
			last = -1;
			if (u == 2) {
				/* a search's next proposal, which may be
				 * rejected in turn */
				ops[0] = last = rand_below(x.g.nops);
				copy_op(&old, &pl.ops[last]);
				random_config(&x.g, ops[0], ndev, &pl.ops[ops[0]]);
				nops = 1;
			}
		} else {
			ops[0] = rand_below(x.g.nops);
			copy_op(&old, &pl.ops[ops[0]]);
			last = ops[0];
			if (u != 3)
				random_config(&x.g, ops[0], ndev, &pl.ops[ops[0]]);
			if (u == 4) {
				/* two at once: the undo and the next proposal */
				ops[1] = rand_below(x.g.nops);
				random_config(&x.g, ops[1], ndev, &pl.ops[ops[1]]);
				nops = 2;
				last = -1;
			}
		}
		if (sim_delta(&sd, &pl, ops, nops, &rd) != AP_OK ||
		    sim_run(&sf, &pl, &o, &rf) != AP_OK)
			fail_msg("%s on %s, proposal %d: %s", name, spec, step, ap_last_error());
		same_result(&rd, &rf, step);
		assert_true(isnan(rd.critical_path_s) == lean && isnan(rd.bubble) == lean);
		if (lean && step % 8 == 0) {
			assert_int_equal(sim_run(&sn, &pl, NULL, &rn), AP_OK);
			same_lean(&rd, &rn, step);
			assert_false(isnan(rn.critical_path_s) || isnan(rn.bubble));
		}
	}
	sim_release(&sd);
	sim_release(&sf);
	sim_release(&sn);
	free(old.devices);
	plan_release(&pl);
	instance_release(&x);
}

static void test_alexnet(void **state)
{
	(void)state;
	proposals("alexnet", "flexflow-p100", 1, 2500, 1);
	proposals("alexnet", "2x4:v100", 1, 500, 0);
}

static void test_resnet50(void **state)
{
	(void)state;
	proposals("resnet50", "flexflow-p100", 1, 1200, 1);
}

static void test_gnmt(void **state)
{
	(void)state;
	proposals("gnmt", "4x4:v100", 1, 1300, 1);
	proposals("gnmt", "1x4:v100", 1, 500, 0);
}

static void test_small(void **state)
{
	(void)state;
	proposals("transformer_tiny", "flexflow-p100", 1, 1500, 0);
	proposals("branchy_small", "2x4:v100", 1, 1500, 1);
	proposals("branchy_small", "1x4:v100", 1, 1000, 0);
}

/* Every gradient synchronisation of the cluster (docs/simulator.md): under
 * sync=after the all-reduces wait for the end of a backward item, which
 * the checkpoints carry. */
static void test_sync_settings(void **state)
{
	(void)state;
	proposals("alexnet", "flexflow-p100,sync=after,allreduce=central", 1, 800, 1);
	proposals("transformer_tiny", "2x4:v100,sync=after,allreduce=ring", 2, 600, 1);
	proposals("branchy_small", "2x4:v100,allreduce=ps", 1, 500, 0);
}

/* Stages: the schedule's steps run stage by stage, the delta's first
 * step and its checkpoints are among them. */
static void test_stages(void **state)
{
	(void)state;
	proposals("transformer_tiny", "2x4:v100", 2, 800, 1);
	proposals("branchy_small", "1x4:v100", 3, 700, 0);
}

/* Plans the delta does not continue (several micro-batches) are
 * simulated in full, with the same result. */
static void test_fallback(void **state)
{
	struct instance x;
	struct plan pl;
	struct sim sd, sf;
	struct sim_result rd, rf;
	int op = 3, dev = 2;

	(void)state;
	plan_init(&pl);
	test_instance(&x, "alexnet", NULL, "1x4:v100");
	assert_int_equal(plan_alloc(&pl, &x.g, 1), AP_OK);
	pl.microbatches = 4;
	assert_int_equal(sim_init(&sd, &x.g, &x.p, &x.c), AP_OK);
	assert_int_equal(sim_init(&sf, &x.g, &x.p, &x.c), AP_OK);
	assert_int_equal(sim_run(&sd, &pl, NULL, &rd), AP_OK);
	assert_int_equal(plan_place(&pl, op, 0, pl.ops[op].degree, &dev), AP_OK);
	assert_int_equal(sim_delta(&sd, &pl, &op, 1, &rd), AP_OK);
	assert_int_equal(sim_run(&sf, &pl, NULL, &rf), AP_OK);
	same_result(&rd, &rf, 0);
	op = x.g.nops;
	ap_err_quiet(1);
	assert_int_equal(sim_delta(&sd, &pl, &op, 1, &rd), AP_EINPUT);
	ap_err_quiet(0);
	sim_release(&sd);
	sim_release(&sf);
	plan_release(&pl);
	instance_release(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alexnet),
		cmocka_unit_test(test_resnet50),
		cmocka_unit_test(test_gnmt),
		cmocka_unit_test(test_small),
		cmocka_unit_test(test_stages),
		cmocka_unit_test(test_sync_settings),
		cmocka_unit_test(test_fallback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
