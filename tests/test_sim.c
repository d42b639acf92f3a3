/*
 * Tests of the simulator (core/sim*.c, core/sim/sim_trace.c) on small graphs with
 * an in-memory profile whose rows give every shard a known time, so
 * expected iteration times are worked out by hand from the formulas the
 * simulator documents: data parallelism is the per-device compute plus the
 * ring (or hierarchical) all-reduce plus the update; a uniform k-stage
 * pipeline with free communication takes (m + k - 1) stage times under
 * gpipe and 1f1b and m under asynchronous 1f1b; a change of split between
 * neighbours moves exactly the overlap.  Invariants (makespan >= critical
 * path and >= the busiest device; a faster link never slows a plan down)
 * are checked on every plan here.  Stages of different micro-batch counts
 * are tested in test_sim_mixed.c, round-robin replicas in
 * test_sim_replicas.c; the fixtures they share are simtest.h's.
 */
#include "simtest.h"
#include "plan/sched.h"
#include "plan/plan_build.h"
#include "sim/sim_trace.h"
#include "cost/cost.h"

#include <jansson.h>

/* The plan at hand on cluster `slow` and on `fast`, whose links are no
 * slower: start times are maxima and sums of durations in a fixed order,
 * so no schedule can get slower, for every schedule kind. */
static void faster_not_slower(const char *slow, const char *fast)
{
	struct sim_result a, b;
	enum sched_kind keep = pl.sched;

	for (int k = 0; k < SCHED_FIRST_PIPE; k++) {
		pl.sched = (enum sched_kind)k;
		cluster(slow);
		run(NULL, &a);
		cluster(fast);
		run(NULL, &b);
		if (b.iter_s > a.iter_s * (1 + EPS))
			fail_msg("%s: %s on %s takes %g s, on %s %g s",
				 sched_name(pl.sched), g.name, fast, b.iter_s, slow, a.iter_s);
	}
	pl.sched = keep;
}

/* --- data parallelism ------------------------------------------------------ */

/* Per device: m x (10 + 3 + 4 + 20) us of compute; then fc's gradients
 * are all-reduced (nothing else overlaps: fc's backward is the last one)
 * and the update reads and writes 5 x 272 bytes (SGD with momentum). */
static void test_dp_ring(void **state)
{
	struct sim_result r;
	double B = 272, ar, upd;

	(void)state;
	cluster("1x4:v100");
	for (int sched = 0; sched < SCHED_FIRST_PIPE; sched++) {
		dp_plan(2, (enum sched_kind)sched);
		run(NULL, &r);
		ar = 2.0 * 3 / 4 * B / cl.intra.bw_bytes_per_s + 2.0 * 3 * cl.intra.latency_s;
		upd = 5 * B / prof.dev.mem_bw_bytes_per_s;
		if (sched_async((enum sched_kind)sched))
			/* the busiest resource: a device, or a ring link */
			near(r.iter_s, fmax(2 * 37 * US + upd, ar));
		else
			near(r.iter_s, 2 * 37 * US + ar + upd);
		near(r.makespan_s, 2 * 37 * US + ar + upd);
		/* micro-batches depend on each other only through the
		 * device they share */
		near(r.critical_path_s, 37 * US + ar + upd);
		near(r.busiest_compute_s, 2 * 37 * US + upd);
		near(r.bubble, 1 - (2 * 37 * US + upd) / r.iter_s);
		near(r.samples_per_s, 8 / r.iter_s);
		assert_int_equal(r.link_bytes[LINK_INTRA], 2 * 3 * 272);
		assert_int_equal(r.link_bytes[LINK_INTER], 0);
		assert_int_equal(r.ntask_kinds[TASK_ALLREDUCE], 1);
		assert_int_equal(r.ntask_kinds[TASK_SEND_ACT], 0);
		/* 3 ops x 4 shards x 2 micro-batches, forward and backward,
		 * one all-reduce, four updates */
		assert_int_equal(r.ntasks, 3 * 4 * 2 * 2 + 1 + 4);
		assert_int_equal(r.ndev_used, 4);
		assert_int_equal(r.costs.n[COST_MEASURED], 3);
	}
}

/* Two nodes of two: reduce-scatter inside the nodes, a ring of two across
 * the NICs, all-gather inside. */
static void test_dp_hierarchical(void **state)
{
	struct sim_result r;
	double B = 272, rs, inter, upd;

	(void)state;
	cluster("2x2:v100,intra=20GB/s,inter=10Gb/s,intra_lat=2us,inter_lat=10us");
	dp_plan(2, SCHED_1F1B);
	run(NULL, &r);
	rs = 0.5 * B / 20e9 + 2e-6;
	inter = 2.0 * 1 / 2 * B / 1.25e9 + 2.0 * 1 * 10e-6;
	upd = 5 * B / prof.dev.mem_bw_bytes_per_s;
	near(r.iter_s, 2 * 37 * US + rs + inter + rs + upd);
	assert_int_equal(r.ntask_kinds[TASK_REDUCE_SCATTER], 1);
	assert_int_equal(r.ntask_kinds[TASK_ALLREDUCE_INTER], 1);
	assert_int_equal(r.ntask_kinds[TASK_ALL_GATHER], 1);
	/* inside: (2 - 1) x B per node, twice; across: 2 (N - 1) x B */
	assert_int_equal(r.link_bytes[LINK_INTRA], 2 * 2 * 272);
	assert_int_equal(r.link_bytes[LINK_INTER], 2 * 272);
	faster_not_slower("2x2:v100,intra=20GB/s,inter=10Gb/s",
			  "2x2:v100,intra=20GB/s,inter=100Gb/s");
	faster_not_slower("2x2:v100",
			  "2x2:v100,intra=450GB/s,inter=400GB/s,intra_lat=1us,inter_lat=1us");
}

/* Data parallelism's gradient synchronisation under every setting of the
 * cluster (hw/cluster.h), by hand on two layers on two nodes of two, one
 * micro-batch.  fc1 (272 bytes) and fc2 (80) end their backward at 50
 * and 30 us; under sync=overlap fc2's all-reduce (well under 20 us here)
 * hides behind fc1's backward, under sync=after both start at 50 us, one
 * after the other on the same links.  A level of m members costs
 * 2 (m-1)/m x B / bw + 2 (m-1) lat for a ring, 4 (m-1)/m x B / bw + 2 (m-1)
 * lat for parameter servers and (m-1) x (B / bw + lat) for a central one;
 * hierarchical runs half the intra-node level, the inter-node level, the
 * other half. */
static const char two_layers[] = "model t\nbatch 8\n"
				 "input x c=16\n"
				 "linear fc1 x out=4\n"
				 "linear fc2 fc1 out=4\n"
				 "loss l fc2\n";

static double level(double share, double steps, const struct link *l, double bytes)
{
	return share * bytes / l->bw_bytes_per_s + steps * l->latency_s;
}

/* One group's all-reduce of B bytes on 2 x 2 by algorithm a. */
static double sync_by_hand(enum grad_allreduce a, double B)
{
	const struct link *in = &cl.intra, *ex = &cl.inter;

	switch (a) {
	case ALLREDUCE_HIER:
		return level(1, 2, in, B) + level(1, 2, ex, B);
	case ALLREDUCE_PS:
		return level(2, 2, in, B) + level(2, 2, ex, B);
	case ALLREDUCE_CENTRAL:
		return level(1, 1, in, B) + level(1, 1, ex, B);
	case ALLREDUCE_RING: {
		struct link slow = { ex->bw_bytes_per_s, ex->latency_s };

		return level(1.5, 6, &slow, B);
	}
	default:
		fail_msg("no such algorithm");
	}
	return 0;
}

static void test_dp_sync_settings(void **state)
{
	static const int all[] = { 0, 1, 2, 3 };
	static const char *const ar[] = { "hierarchical", "ring", "ps", "central" };
	/* intra and inter bytes of one group per byte it holds */
	static const double bytes[][2] = { { 4, 2 }, { 3, 3 }, { 8, 4 }, { 2, 1 } };
	char spec[128];

	(void)state;
	for (int a = 0; a < NALLREDUCES; a++)
		for (int after = 0; after < 2; after++) {
			struct sim_result r;
			double t1, t2, upd, want;

			snprintf(spec, sizeof spec,
				 "2x2:v100,intra=20GB/s,inter=10Gb/s,intra_lat=1us,inter_lat=2us,"
				 "sync=%s,allreduce=%s", after ? "after" : "overlap", ar[a]);
			cluster(spec);
			assert_int_equal((int)cl.allreduce, a);
			assert_int_equal((int)cl.sync, after ? SYNC_AFTER : SYNC_OVERLAP);
			if (have_sim)
				sim_release(&sim);
			have_sim = 0;
			plan_release(&pl);
			plan_init(&pl);
			load(two_layers);
			assert_int_equal(plan_alloc(&pl, &g, 1), AP_OK);
			plan_schedule(&pl, SCHED_GPIPE, 1);
			set_stage(0, all, 4, -1);
			set_op("x", 0, 4, 1, all);
			set_op("fc1", 0, 4, 1, all);
			set_op("fc2", 0, 4, 1, all);
			set_op("l", 0, 4, 1, all);
			put_costs((const double[]){ 0, 10, 5, 3 }, (const double[]){ 0, 20, 8, 4 });
			run(NULL, &r);
			t1 = sync_by_hand((enum grad_allreduce)a, 272);
			t2 = sync_by_hand((enum grad_allreduce)a, 80);
			assert_true(t2 < 20 * US);
			upd = 5 * (272 + 80) / prof.dev.mem_bw_bytes_per_s;
			want = 50 * US + (after ? t2 : 0) + t1 + upd;
			near(r.iter_s, want);
			assert_int_equal(r.link_bytes[LINK_INTRA], (int64_t)(bytes[a][0] * 272) +
								      (int64_t)(bytes[a][0] * 80));
			assert_int_equal(r.link_bytes[LINK_INTER], (int64_t)(bytes[a][1] * 272) +
								      (int64_t)(bytes[a][1] * 80));
		}
	/* a spec's sync settings are checked words */
	assert_int_not_equal(cluster_resolve("2x2:v100,sync=later", NULL, &cl), AP_OK);
	assert_int_not_equal(cluster_resolve("pipedream-a,allreduce=tree", NULL, &cl), AP_OK);
	assert_int_equal(cluster_resolve("pipedream-a,allreduce=ps,inter=25Gb/s", NULL, &cl), AP_OK);
	assert_int_equal((int)cl.allreduce, ALLREDUCE_PS);
	assert_true(cl.inter.bw_bytes_per_s == 25e9 / 8);
	assert_int_equal(cl.nodes, 4);
}

/* Adam keeps two copies of the weights as state, SGD with momentum one. */
static void test_dp_optimizer(void **state)
{
	struct sim_opts o = { .optimizer = OPTIMIZER_ADAM };
	struct sim_result r;
	double B = 272, ar;

	(void)state;
	cluster("1x4:v100");
	dp_plan(2, SCHED_GPIPE);
	run(&o, &r);
	ar = 1.5 * B / cl.intra.bw_bytes_per_s + 6 * cl.intra.latency_s;
	near(r.iter_s, 2 * 37 * US + ar + 7 * B / prof.dev.mem_bw_bytes_per_s);
	for (int d = 0; d < 4; d++) {
		assert_int_equal(r.mem[d].weights, 272);
		assert_int_equal(r.mem[d].grads, 272);
		assert_int_equal(r.mem[d].opt_state, 2 * 272);
		assert_int_equal(r.mem[d].stash, 0);
	}
	o.optimizer = OPTIMIZER_SGD;
	assert_int_equal(sim_run(&sim, &pl, &o, &r), AP_OK);
	assert_int_equal(r.mem[0].opt_state, 272);
	assert_int_equal(optimizer_parse("adam", &o.optimizer), 0);
	assert_int_equal(o.optimizer, OPTIMIZER_ADAM);
	assert_int_equal(optimizer_parse("lamb", &o.optimizer), -1);
}

/* --- pipelines ---------------------------------------------------------------- */

static void test_pipeline_uniform(void **state)
{
	static const int ms[] = { 1, 4, 8 };
	struct sim_result r;
	double tf = 10, tb = 25;

	(void)state;
	cluster("1x4:v100");
	free_links();
	for (int k = 0; k < 3; k++) {
		int m = ms[k];

		chain_plan(m, SCHED_GPIPE, tf, tb);
		run(NULL, &r);
		near(r.iter_s, (m + 4 - 1) * (tf + tb) * US);
		near(r.bubble, 1 - 4 * m * (tf + tb) / (4 * (m + 3) * (tf + tb)));
		chain_plan(m, SCHED_1F1B, tf, tb);
		run(NULL, &r);
		near(r.iter_s, (m + 4 - 1) * (tf + tb) * US);
		/* No flush: one micro-batch per stage time. */
		chain_plan(m, SCHED_1F1B_ASYNC, tf, tb);
		run(NULL, &r);
		near(r.iter_s, m * (tf + tb) * US);
		/* the two streams share a device: a stage's period is f + b */
		chain_plan(m, SCHED_ASYNC_PREDICT, tf, tb);
		run(NULL, &r);
		near(r.iter_s, m * (tf + tb) * US);
		/* forward of a micro-batch through all stages then back */
		near(r.critical_path_s, 4 * (tf + tb) * US);
	}
}

/* A DAG of stages (GraphPipe's shape): two branches on stages 1 and 2 run
 * side by side between stage 0 and stage 3, so with free communication
 * the pipeline is three stages deep: (m + 3 - 1) stage times. */
static void test_stage_dag(void **state)
{
	static const char *const ops[] = { "x", "a", "b1", "b2", "j", "l" };
	static const int stage_of[] = { 0, 0, 1, 2, 3, 3 };
	static const int next0[] = { 1, 2 };
	struct sim_result r;
	double tf = 10, tb = 20;

	(void)state;
	cluster("1x4:v100");
	free_links();
	load("model t\nbatch 8\ninput x c=256\nrelu a x\nrelu b1 a\n"
	     "relu b2 a\nadd j b1 b2\nloss l j\n");
	for (int sched = 0; sched < SCHED_FIRST_PIPE; sched++) {
		assert_int_equal(plan_alloc(&pl, &g, 4), AP_OK);
		plan_schedule(&pl, (enum sched_kind)sched, 4);
		for (int s = 0; s < 4; s++)
			set_stage(s, &s, 1, s == 1 || s == 2 ? 3 : -1);
		for (int e = 0; e < 2; e++)
			assert_int_equal(plan_link(&pl, 0, next0[e]), AP_OK);
		for (int i = 0; i < 6; i++)
			set_op(ops[i], stage_of[i], 1, 1, &stage_of[i]);
		put_costs((const double[]){ 0, tf, tf, tf, tf, 0 },
			  (const double[]){ 0, tb, tb, tb, tb, 0 });
		run(NULL, &r);
		if (sched_async((enum sched_kind)sched))
			near(r.iter_s, 4 * (tf + tb) * US);
		else
			near(r.iter_s, (4 + 3 - 1) * (tf + tb) * US);
	}
}

/* Communication on the critical path: each stage boundary sends a 1024 x
 * mb_n float tensor forward and its gradient back. */
static void test_pipeline_links(void **state)
{
	struct sim_result slow, fast;
	int64_t per_mb = 1024 * 4; /* batch 8, 8 micro-batches: n = 1 */

	(void)state;
	cluster("1x4:v100,intra=1GB/s,intra_lat=5us");
	chain_plan(8, SCHED_1F1B, 10, 25);
	run(NULL, &slow);
	assert_int_equal(slow.link_bytes[LINK_INTRA], 3 * 2 * 8 * per_mb);
	assert_int_equal(slow.ntask_kinds[TASK_SEND_ACT], 3 * 8);
	assert_int_equal(slow.ntask_kinds[TASK_SEND_GRAD], 3 * 8);
	/* the critical path crosses the three boundaries both ways */
	near(slow.critical_path_s,
	     4 * 35 * US + 6 * (5e-6 + (double)per_mb / 1e9));
	cluster("1x4:v100,intra=100GB/s,intra_lat=5us");
	run(NULL, &fast);
	assert_true(fast.iter_s < slow.iter_s);
	cluster("1x4:v100,intra=100GB/s,intra_lat=1us");
	run(NULL, &slow);
	assert_true(slow.iter_s < fast.iter_s);
}

/* Two stages joined by a slow link: each micro-batch's activations take
 * X = 10 us to cross, ten times a stage's compute, so the transfers queue
 * on the link one after another, both ways: under gpipe the iteration is
 * tf + m X + tb forward and the same backward. */
static void test_link_contention(void **state)
{
	static const int d0 = 0, d1 = 1;
	struct sim_result r;
	int m = 4;

	(void)state;
	cluster("1x2:v100");
	cl.intra.latency_s = 1e-6;
	cl.intra.bw_bytes_per_s = 1024 * 4 / 9e-6; /* a micro-batch in 9 us */
	load("model t\nbatch 4\n"
	     "input x c=1024\n"
	     "relu r0 x\n"
	     "relu r1 r0\n"
	     "loss l r1\n");
	assert_int_equal(plan_alloc(&pl, &g, 2), AP_OK);
	pl.microbatches = m;
	set_stage(0, &d0, 1, 1);
	set_stage(1, &d1, 1, -1);
	set_op("x", 0, 1, 1, &d0);
	set_op("r0", 0, 1, 1, &d0);
	set_op("r1", 1, 1, 1, &d1);
	set_op("l", 1, 1, 1, &d1);
	put_costs((const double[]){ 0, 1, 1, 0 }, (const double[]){ 0, 1, 1, 0 });
	run(NULL, &r);
	near(r.iter_s, 2 * (1 + m * 10 + 1) * US);
	/* each way, the link is busy m X: the asynchronous pace */
	pl.sched = SCHED_1F1B_ASYNC;
	run(NULL, &r);
	near(r.iter_s, m * 10 * US);
}

/* --- transfers between splits ------------------------------------------------- */

/* a splits n, b splits c, both over devices 0 and 1: b's input is needed
 * whole (a linear's input does not follow a c split), so each of b's
 * shards fetches the half of a's output the other device computed. */
static const char reshard_model[] = "model t\nbatch 8\n"
				    "input x c=64\n"
				    "linear a x out=64\n"
				    "linear b a out=64\n"
				    "loss l b\n";

static void reshard_plan(int bn, int bc, const int *bdev)
{
	static const int two[] = { 0, 1 };

	load(reshard_model);
	assert_int_equal(plan_alloc(&pl, &g, 1), AP_OK);
	pl.microbatches = 2;
	set_stage(0, two, 2, -1);
	set_op("x", 0, 2, 1, two);
	set_op("a", 0, 2, 1, two);
	set_op("b", 0, bn, bc, bdev);
	set_op("l", 0, 1, 1, two);
	put_uniform(10, 20);
}

static int64_t sent_bytes(const struct sim *s, const char *op, enum sim_task_kind kind)
{
	const struct sim_task *t;
	int64_t n, sum = 0;
	int i = op_of(op);

	t = sim_tasks(s, &n);
	for (int64_t k = 0; k < n; k++)
		if (t[k].op == i && t[k].kind == kind)
			sum += t[k].bytes;
	return sum;
}

static void test_reshard(void **state)
{
	static const int two[] = { 0, 1 }, swapped[] = { 1, 0 };
	struct sim_opts o = { .record = 1 };
	struct sim_result r;
	int64_t a_mb = 4 * 64 * 4; /* a's output for one micro-batch */

	(void)state;
	cluster("1x2:v100");
	/* n -> c: half of the tensor moves each way, per micro-batch */
	reshard_plan(1, 2, two);
	run(&o, &r);
	assert_int_equal(sent_bytes(&sim, "a", TASK_SEND_ACT), 2 * 2 * (a_mb / 2));
	assert_int_equal(sent_bytes(&sim, "a", TASK_SEND_GRAD), 2 * 2 * (a_mb / 2));
	/* n -> n on the same devices: nothing moves */
	reshard_plan(2, 1, two);
	run(&o, &r);
	assert_int_equal(sent_bytes(&sim, "a", TASK_SEND_ACT), 0);
	assert_int_equal(sent_bytes(&sim, "a", TASK_SEND_GRAD), 0);
	/* n -> n with the devices swapped: all of it moves */
	reshard_plan(2, 1, swapped);
	run(&o, &r);
	assert_int_equal(sent_bytes(&sim, "a", TASK_SEND_ACT), 2 * a_mb);
	assert_int_equal(sent_bytes(&sim, "a", TASK_SEND_GRAD), 2 * a_mb);
	/* the input never receives a gradient */
	assert_int_equal(sent_bytes(&sim, "x", TASK_SEND_GRAD), 0);
	reshard_plan(1, 2, two);
	faster_not_slower("1x2:v100,intra=1GB/s", "1x2:v100,intra=2GB/s");
	faster_not_slower("1x2:v100,intra_lat=50us", "1x2:v100,intra_lat=49us");
}

/* Two consumers on one device that need the same region of a remote
 * tensor share one transfer (a runtime sends it once). */
static void test_shared_transfer(void **state)
{
	static const int d0 = 0, d1 = 1, two[] = { 0, 1 };
	struct sim_opts o = { .record = 1 };
	struct sim_result r;

	(void)state;
	cluster("1x2:v100");
	load("model t\nbatch 4\n"
	     "input x c=8\n"
	     "relu p x\n"
	     "relu q p\n"
	     "relu s p\n"
	     "add t q s\n"
	     "loss l t\n");
	assert_int_equal(plan_alloc(&pl, &g, 1), AP_OK);
	set_stage(0, two, 2, -1);
	set_op("x", 0, 1, 1, &d0);
	set_op("p", 0, 1, 1, &d0);
	set_op("q", 0, 1, 1, &d1);
	set_op("s", 0, 1, 1, &d1);
	set_op("t", 0, 1, 1, &d1);
	set_op("l", 0, 1, 1, &d1);
	put_uniform(1, 2);
	run(&o, &r);
	assert_int_equal(r.ntask_kinds[TASK_SEND_ACT], 1);
	assert_int_equal(sent_bytes(&sim, "p", TASK_SEND_ACT), 4 * 8 * 4);
	assert_int_equal(r.ntask_kinds[TASK_SEND_GRAD], 1);
}

/* --- memory ---------------------------------------------------------------------- */

static void test_memory_in_flight(void **state)
{
	struct sim_result r;
	int64_t mb = 1024 * 4;              /* one micro-batch of a relu */
	int64_t first = 2 * mb, last = 2 * mb + 4; /* stage 0: x, r0; stage 3:
						     * received r2, r3, l */

	(void)state;
	cluster("1x4:v100");
	chain_plan(8, SCHED_GPIPE, 10, 25);
	run(NULL, &r);
	assert_int_equal(r.mem[0].act, 8 * first);
	assert_int_equal(r.mem[3].act, 8 * last);
	chain_plan(8, SCHED_1F1B, 10, 25);
	run(NULL, &r);
	/* stage d keeps 4 - d micro-batches */
	assert_int_equal(r.mem[0].act, 4 * first);
	assert_int_equal(r.mem[1].act, 3 * 2 * mb);
	assert_int_equal(r.mem[3].act, 1 * last);
	/* two micro-batches of n = 4 */
	chain_plan(2, SCHED_1F1B, 10, 25);
	run(NULL, &r);
	assert_int_equal(r.mem[0].act, 2 * 4 * first);
	assert_int_equal(r.peak_mem_bytes, 2 * 4 * first);
	assert_int_equal(r.peak_dev, 0);
}

/* Activation recomputation (plan.h): every op of the 1F1B chain above
 * recomputes.  A backward re-runs its forward first (a stage time is
 * 2 tf + tb), a stage keeps only the inputs it receives for each
 * micro-batch in flight, and the outputs of one micro-batch are live
 * again during its backward. */
static void test_recompute(void **state)
{
	struct sim_result r;
	int64_t mb = 1024 * 4;
	double tf = 10, tb = 25;

	(void)state;
	cluster("1x4:v100");
	free_links();
	chain_plan(8, SCHED_1F1B, tf, tb);
	for (int i = 0; i < g.nops; i++)
		pl.ops[i].recompute = 1;
	run(NULL, &r);
	near(r.iter_s, (8 + 4 - 1) * (2 * tf + tb) * US);
	/* stage 0 receives nothing: x and r0 of one micro-batch */
	assert_int_equal(r.mem[0].act, 2 * mb);
	/* stage 1 keeps r0 for its 3 in flight, and r1 of one is back */
	assert_int_equal(r.mem[1].act, 3 * mb + mb);
	/* stage 3, one in flight: received r2, then r3 and l back */
	assert_int_equal(r.mem[3].act, 2 * mb + 4);
	/* only stage 1 recomputes: the others as without */
	chain_plan(8, SCHED_1F1B, tf, tb);
	pl.ops[op_of("r1")].recompute = 1;
	run(NULL, &r);
	assert_int_equal(r.mem[0].act, 4 * 2 * mb);
	assert_int_equal(r.mem[1].act, 4 * mb);
}

/* Asynchronous 1F1B stashes a weight version per micro-batch in flight
 * beyond the live one: K - d - 1 on stage depth d. */
static void test_memory_stash(void **state)
{
	static const char *const ops[] = { "x", "fc0", "fc1", "fc2", "l" };
	static const int stage_of[] = { 0, 0, 1, 2, 2 };
	struct sim_result r;
	int64_t w = (64 * 64 + 64) * 4;

	(void)state;
	cluster("1x4:v100");
	load("model t\nbatch 8\ninput x c=64\nlinear fc0 x out=64\n"
	     "linear fc1 fc0 out=64\nlinear fc2 fc1 out=64\nloss l fc2\n");
	for (int sched = 0; sched < SCHED_FIRST_PIPE; sched++) {
		assert_int_equal(plan_alloc(&pl, &g, 3), AP_OK);
		pl.microbatches = 4;
		pl.sched = (enum sched_kind)sched;
		for (int s = 0; s < 3; s++)
			set_stage(s, &s, 1, s < 2 ? s + 1 : -1);
		for (int i = 0; i < 5; i++)
			set_op(ops[i], stage_of[i], 1, 1, &stage_of[i]);
		put_uniform(5, 10);
		run(NULL, &r);
		for (int d = 0; d < 3; d++) {
			assert_int_equal(r.mem[d].weights, w);
			/* async-predict: one predicted copy per stage */
			assert_int_equal(r.mem[d].stash,
					 sched == SCHED_1F1B_ASYNC	  ? (2 - d) * w
					 : sched == SCHED_ASYNC_PREDICT ? w
									: 0);
			assert_int_equal(r.mem[d].peak,
					 r.mem[d].weights + r.mem[d].grads +
						 r.mem[d].opt_state + r.mem[d].stash +
						 r.mem[d].act + r.mem[d].workspace);
		}
		assert_int_equal(r.mem[3].peak, 0);
		assert_int_equal(r.ndev_used, 3);
		faster_not_slower("1x4:v100,intra=1GB/s", "1x4:v100,intra=1.5GB/s");
	}
}

/* --- trace ----------------------------------------------------------------------- */

static void test_trace(void **state)
{
	struct sim_opts o = { .record = 1 };
	struct sim_result r;
	json_error_t err;
	json_t *root, *ev, *e;
	const char *path;
	size_t k;
	int64_t nx = 0, ntasks;

	(void)state;
	cluster("2x2:v100");
	dp_plan(2, SCHED_1F1B);
	run(&o, &r);
	path = tmp_write("trace.json", "");
	assert_non_null(path);
	assert_int_equal(sim_trace_write(&sim, path), AP_OK);
	root = json_load_file(path, 0, &err);
	if (!root)
		fail_msg("%s:%d: %s", path, err.line, err.text);
	ev = json_object_get(root, "traceEvents");
	assert_true(json_is_array(ev));
	json_array_foreach(ev, k, e) {
		const char *ph = json_string_value(json_object_get(e, "ph"));

		assert_non_null(ph);
		if (strcmp(ph, "X") != 0)
			continue;
		nx++;
		assert_true(json_is_number(json_object_get(e, "ts")));
		assert_true(json_number_value(json_object_get(e, "dur")) >= 0);
		assert_true(json_integer_value(json_object_get(e, "pid")) <
			    sim_nresources(&sim));
		assert_non_null(json_string_value(json_object_get(e, "name")));
	}
	json_decref(root);
	sim_tasks(&sim, &ntasks);
	assert_int_equal(nx, r.ntasks);
	assert_int_equal(ntasks, r.ntasks);
	/* without a recorded run there is nothing to write */
	assert_int_equal(sim_run(&sim, &pl, NULL, &r), AP_OK);
	assert_int_equal(sim_trace_write(&sim, path), AP_EINPUT);
}

/* --- reuse and bad plans -------------------------------------------------------- */

/* One struct sim runs many plans: its answers equal a fresh one's. */
static void test_reuse(void **state)
{
	static const int two[] = { 0, 1 };
	struct sim_result a, b, c;
	struct sim fresh;

	(void)state;
	cluster("1x2:v100");
	reshard_plan(1, 2, two);
	run(NULL, &a);
	pl.ops[op_of("b")].degree[DIM_N] = 2;
	pl.ops[op_of("b")].degree[DIM_C] = 1;
	put_uniform(10, 20);
	assert_int_equal(sim_run(&sim, &pl, NULL, &b), AP_OK);
	assert_int_equal(a.ntask_kinds[TASK_SEND_ACT], 2 * 3);
	assert_int_equal(b.ntask_kinds[TASK_SEND_ACT], 2 * 1);
	assert_int_equal(sim_init(&fresh, &g, &prof, &cl), AP_OK);
	assert_int_equal(sim_run(&fresh, &pl, NULL, &c), AP_OK);
	near(b.iter_s, c.iter_s);
	assert_int_equal(b.ntasks, c.ntasks);
	assert_int_equal(b.link_bytes[LINK_INTRA], c.link_bytes[LINK_INTRA]);
	assert_int_equal(b.peak_mem_bytes, c.peak_mem_bytes);
	sim_release(&fresh);
}

static void test_bad_plan(void **state)
{
	struct sim_result r;

	(void)state;
	cluster("1x4:v100");
	chain_plan(2, SCHED_1F1B, 1, 1);
	run(NULL, &r);
	assert_int_equal(plan_link(&pl, 3, 0), AP_OK);
	assert_int_equal(sim_run(&sim, &pl, NULL, &r), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "cycle"));
	chain_plan(2, SCHED_1F1B, 1, 1);
	run(NULL, &r);
	pl.ops[op_of("r1")].ndev = 2;
	assert_int_equal(sim_run(&sim, &pl, NULL, &r), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "ops.r1.devices"));
	pl.ops[op_of("r1")].ndev = 1;
	pl.microbatches = 3;
	assert_int_equal(sim_run(&sim, &pl, NULL, &r), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "microbatches"));
}

/* The depths both the simulator and the runtime order a DAG of stages by:
 * a branch shorter than its sibling sits as late as its sink allows, not
 * at its distance from the source (0 -> 1 -> 2 beside 0 -> 3: stage 3 at
 * depth 2, as stage 2); a chain's depths are its positions. */
static void test_stage_depths(void **state)
{
	int depth[4], dmax;

	(void)state;
	load(chain_model);
	assert_int_equal(plan_alloc(&pl, &g, 4), AP_OK);
	assert_int_equal(plan_link(&pl, 0, 1), AP_OK);
	assert_int_equal(plan_link(&pl, 1, 2), AP_OK);
	assert_int_equal(plan_link(&pl, 0, 3), AP_OK);
	assert_int_equal(sched_stage_depths(&pl, depth, &dmax), AP_OK);
	assert_int_equal(dmax, 2);
	assert_int_equal(depth[0], 0);
	assert_int_equal(depth[1], 1);
	assert_int_equal(depth[2], 2);
	assert_int_equal(depth[3], 2);
	assert_int_equal(plan_alloc(&pl, &g, 4), AP_OK);
	assert_int_equal(plan_chain(&pl), AP_OK);
	assert_int_equal(sched_stage_depths(&pl, depth, &dmax), AP_OK);
	for (int s = 0; s < 4; s++)
		assert_int_equal(depth[s], s);
	assert_int_equal(plan_link(&pl, 3, 1), AP_OK);
	assert_int_equal(sched_stage_depths(&pl, depth, &dmax), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "cycle"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(test_dp_ring),
		TEST(test_dp_hierarchical),
		TEST(test_dp_sync_settings),
		TEST(test_dp_optimizer),
		TEST(test_pipeline_uniform),
		TEST(test_stage_dag),
		TEST(test_pipeline_links),
		TEST(test_link_contention),
		TEST(test_reshard),
		TEST(test_shared_transfer),
		TEST(test_memory_in_flight),
		TEST(test_recompute),
		TEST(test_memory_stash),
		TEST(test_trace),
		TEST(test_reuse),
		TEST(test_bad_plan),
		TEST(test_stage_depths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
