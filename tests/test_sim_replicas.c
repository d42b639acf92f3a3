/*
 * Tests of the simulator on round-robin replicas (PipeDream's replicated
 * stages, plan.h): iteration times worked out by hand with free links
 * under gpipe and 1f1b, micro-batch j running on replica j mod r; the
 * period of the asynchronous schedules over lcm(m, r) micro-batches; a
 * stage of r replicas against the same stage split along n; one replica
 * as none; sim_delta() on a plan with replicas.  The fixtures are
 * simtest.h's.
 */
#include "simtest.h"
#include "sim/sim_trace.h"
#include "sim/sim_delta.h"
#include "cost/cost.h"

/* Two stages: stage 0 {x, a} (a linear of 16 x 16 + 16 = 272 parameters,
 * 1088 bytes) in r round-robin replicas of one device each (devices
 * 0..r-1), stage 1 {b, l} on device r; a's output is batch / m x 64 bytes
 * per micro-batch. */
static void rr_plan(int batch, int m, int r, enum sched_kind sched, double f0, double b0,
		    double f1, double b1)
{
	static const int dev[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	char text[256];

	snprintf(text, sizeof text,
		 "model t\nbatch %d\ninput x c=16\nlinear a x out=16\nrelu b a\nloss l b\n",
		 batch);
	load(text);
	assert_int_equal(plan_alloc(&pl, &g, 2), AP_OK);
	pl.microbatches = m;
	pl.sched = sched;
	set_stage(0, dev, r, 1);
	pl.stages[0].replicas = r;
	set_stage(1, &dev[r], 1, -1);
	set_op("x", 0, 1, 1, dev);
	set_op("a", 0, 1, 1, dev);
	set_op("b", 1, 1, 1, &dev[r]);
	set_op("l", 1, 1, 1, &dev[r]);
	put_costs((const double[]){ 0, f0, f1, 0 }, (const double[]){ 0, b0, b1, 0 });
}

/* The update of a's 1088 bytes of weights (SGD with momentum). */
static double rr_update_s(void)
{
	return 5 * 1088 / prof.dev.mem_bw_bytes_per_s;
}

/* The recorded compute tasks of op on device dev: how many, and whether
 * every one is of a micro-batch j with j % r == rep. */
static int rr_tasks_on(const char *op, int dev, int r, int rep)
{
	const struct sim_task *t;
	int64_t n;
	int count = 0, i = op_of(op);

	t = sim_tasks(&sim, &n);
	assert_non_null(t);
	for (int64_t k = 0; k < n; k++) {
		if (t[k].op != i || t[k].res != dev ||
		    (t[k].kind != TASK_FWD && t[k].kind != TASK_BWD))
			continue;
		assert_int_equal(t[k].mb % r, rep);
		count += t[k].kind == TASK_FWD;
	}
	return count;
}

/* Stage 0 (f 20, b 40) in two replicas feeding stage 1 (f 10, b 20),
 * free links, worked out by hand.  m = 2, gpipe: both replicas forward
 * at 0..20, stage 1 at 20..30 and 30..40, backward 40..60 and 60..80,
 * replica 0's backward 60..100, replica 1's 80..120, then the
 * all-reduce (free) and the updates: 120 (150 with one device).  1f1b
 * orders stage 1 F0 B0 F1 B1 (20..30, 30..50, 50..60, 60..80): the same
 * 120.  m = 4, gpipe: replica g runs micro-batches g and g + 2; stage 1
 * forwards at 20..30, 30..40, 40..50, 50..60 and backwards from 60 in
 * 20s, replica 0's backwards 80..120 and 120..160, replica 1's 100..140
 * and 140..180: 180.  1f1b: replica 0 runs F0 B0 F2 B2 in that order,
 * so F2 waits for B0 (50..90) and runs 90..110; B2 140..180 after stage
 * 1's 120..140; replica 1's B3 170..210: 210. */
static void test_rr_chain(void **state)
{
	static const struct {
		int m;
		enum sched_kind sched;
		double iter_us;
	} c[] = {
		{ 2, SCHED_GPIPE, 120 }, { 2, SCHED_1F1B, 120 },
		{ 4, SCHED_GPIPE, 180 }, { 4, SCHED_1F1B, 210 },
	};
	struct sim_opts o = { .record = 1 };
	struct sim_result r;

	(void)state;
	cluster("1x4:v100");
	free_links();
	for (int k = 0; k < 4; k++) {
		int m = c[k].m;

		rr_plan(8, m, 2, c[k].sched, 20, 40, 10, 20);
		run(&o, &r);
		near(r.iter_s, c[k].iter_us * US + rr_update_s());
		assert_int_equal(r.iters, 1);
		/* every micro-batch runs each of the 4 ops once */
		assert_int_equal(r.ntask_kinds[TASK_FWD], 4 * m);
		assert_int_equal(r.ntask_kinds[TASK_BWD], 4 * m);
		assert_int_equal(r.ntask_kinds[TASK_SEND_ACT], m);
		assert_int_equal(r.ntask_kinds[TASK_SEND_GRAD], m);
		assert_int_equal(r.ntask_kinds[TASK_ALLREDUCE], 1);
		assert_int_equal(r.ntask_kinds[TASK_UPDATE], 2);
		/* m x 512 / m bytes each way; a ring of two: 2 x 1088 */
		assert_int_equal(r.link_bytes[LINK_INTRA], 2 * 512 + 2 * 1088);
		assert_int_equal(r.ndev_used, 3);
		for (int d = 0; d < 2; d++) {
			assert_int_equal(r.mem[d].weights, 1088);
			assert_int_equal(rr_tasks_on("a", d, 2, d), m / 2);
			assert_int_equal(rr_tasks_on("x", d, 2, d), m / 2);
		}
		assert_int_equal(rr_tasks_on("b", 2, 1, 0), m);
		near(r.busiest_compute_s, m / 2 * 60 * US + rr_update_s());
		near(r.compute_busy_s, m * 60 * US + 2 * rr_update_s() + m * 30 * US);
		/* the trace of such a run */
		assert_int_equal(sim_trace_write(&sim, tmp_write("rr.json", "")), AP_OK);
		assert_int_equal(sim_timeline_write(&sim, tmp_write("rr.tsv", "")), AP_OK);
	}
	/* one device for stage 0 */
	rr_plan(8, 2, 1, SCHED_GPIPE, 20, 40, 10, 20);
	run(NULL, &r);
	near(r.iter_s, 150 * US + rr_update_s());
}

/* Three replicas, four micro-batches (gpipe): replica 0 runs micro-batches
 * 0 and 3, the others one each.  Stage 1 (f 5, b 10) forwards at 20..25,
 * 25..30, 30..35, 40..45 (micro-batch 3 waits for replica 0's second
 * forward) and backwards from 45 in 10s; replica 0's B0 at 55..95 and B3,
 * after stage 1's 75..85, at 95..135. */
static void test_rr_imbalance(void **state)
{
	struct sim_opts o = { .record = 1 };
	struct sim_result r;
	double u = rr_update_s();

	(void)state;
	cluster("1x4:v100");
	free_links();
	rr_plan(8, 4, 3, SCHED_GPIPE, 20, 40, 5, 10);
	run(&o, &r);
	near(r.iter_s, 135 * US + u);
	near(r.busiest_compute_s, 2 * 60 * US + u);
	near(r.compute_busy_s, (2 * 60 + 60 + 60) * US + 3 * u + 4 * 15 * US);
	assert_int_equal(rr_tasks_on("a", 0, 3, 0), 2);
	assert_int_equal(rr_tasks_on("a", 1, 3, 1), 1);
	assert_int_equal(rr_tasks_on("a", 2, 3, 2), 1);
	assert_int_equal(r.ntask_kinds[TASK_UPDATE], 3);
	/* a ring of three: 2 x 2 x 1088 */
	assert_int_equal(r.link_bytes[LINK_INTRA], 2 * 512 + 4 * 1088);
}

/* Asynchronous 1F1B, three replicas, two micro-batches: the assignment
 * repeats after lcm(2, 3) = 6 micro-batches, three iterations, in which
 * each replica runs two micro-batches, and the replicas all-reduce and
 * update after each of the two rounds of three: per iteration 2/3 x (f0
 * + b0 + the update), and stage 1 2 x (f1 + b1).  Whichever is slower
 * sets the pace.  Each replica has at most one of stage 0's two
 * micro-batches in flight: no stashed version.  Two replicas and four
 * micro-batches: two rounds an iteration.  Under async-predict the
 * replicas sync once an iteration. */
static void test_rr_async_period(void **state)
{
	struct sim_result r, r6;
	double u = rr_update_s();
	int64_t n;

	(void)state;
	cluster("1x4:v100");
	free_links();
	rr_plan(8, 2, 3, SCHED_1F1B_ASYNC, 20, 40, 5, 10);
	run(NULL, &r);
	near(r.iter_s, 40 * US + 2 * u / 3);
	near(r.busiest_compute_s, 40 * US + 2 * u / 3);
	assert_int_equal(r.iters, 3);
	assert_int_equal(r.ntask_kinds[TASK_FWD], 4 * 2);
	assert_int_equal(r.ntask_kinds[TASK_SEND_ACT], 2);
	/* 2 all-reduces and 6 updates in 3 iterations, rounded */
	assert_int_equal(r.ntask_kinds[TASK_ALLREDUCE], 1);
	assert_int_equal(r.ntask_kinds[TASK_UPDATE], 2);
	/* (3 x 2 x 512 + 2 x 4 x 1088) / 3, rounded */
	assert_int_equal(r.link_bytes[LINK_INTRA], (3 * 2 * 512 + 2 * 4 * 1088 + 1) / 3);
	for (int d = 0; d < 3; d++)
		assert_int_equal(r.mem[d].stash, 0);
	rr_plan(8, 4, 2, SCHED_1F1B_ASYNC, 20, 40, 5, 10);
	run(NULL, &r);
	assert_int_equal(r.iters, 1);
	near(r.iter_s, 2 * (60 * US + u));
	assert_int_equal(r.ntask_kinds[TASK_ALLREDUCE], 2);
	assert_int_equal(r.ntask_kinds[TASK_UPDATE], 4);
	assert_int_equal(r.link_bytes[LINK_INTRA], 2 * 512 + 2 * 2 * 1088);
	/* links that cost: a round's all-reduce holds its replicas'
	 * devices (PipeDream's replicas wait for it in their backward),
	 * two rounds in three iterations */
	cluster("1x4:v100");
	rr_plan(8, 2, 3, SCHED_1F1B_ASYNC, 20, 40, 5, 10);
	run(NULL, &r);
	{
		static const int rep[] = { 0, 1, 2 };
		double ar = cost_allreduce_s(&cl, rep, 3, 1088);

		assert_true(ar > 0);
		near(r.busiest_compute_s, 40 * US + 2 * u / 3 + 2 * ar / 3);
		assert_true(r.iter_s >= r.busiest_compute_s);
	}
	free_links();
	/* one replica: a version stashed for the second micro-batch */
	rr_plan(8, 2, 1, SCHED_1F1B_ASYNC, 20, 40, 5, 10);
	run(NULL, &r6);
	assert_int_equal(r6.mem[0].stash, 1088);
	/* stage 1 the bottleneck: three iterations of two micro-batches are
	 * one of six of the same size (batch 24), whose all-reduce and
	 * updates are off the bottleneck */
	rr_plan(8, 2, 3, SCHED_1F1B_ASYNC, 20, 40, 20, 40);
	run(NULL, &r);
	near(r.iter_s, 2 * 60 * US);
	rr_plan(24, 6, 3, SCHED_1F1B_ASYNC, 20, 40, 20, 40);
	run(NULL, &r6);
	near(r6.iter_s, 6 * 60 * US);
	near(3 * r.iter_s, r6.iter_s);
	near(3 * r.busiest_compute_s, r6.busiest_compute_s);
	assert_int_equal(3 * r.ntask_kinds[TASK_SEND_ACT], r6.ntask_kinds[TASK_SEND_ACT]);
	assert_int_equal(3 * r.ntask_kinds[TASK_FWD], r6.ntask_kinds[TASK_FWD]);
	/* async-predict runs the same period, recorded whole */
	rr_plan(8, 2, 3, SCHED_ASYNC_PREDICT, 20, 40, 5, 10);
	run(&(struct sim_opts){ .record = 1 }, &r);
	near(r.iter_s, 40 * US + u);
	assert_int_equal(r.ntask_kinds[TASK_UPDATE], 3);
	assert_int_equal(r.iters, 3);
	sim_tasks(&sim, &n);
	assert_int_equal(n, 3 * r.ntasks);
	for (int d = 0; d < 3; d++)
		assert_int_equal(rr_tasks_on("a", d, 3, d), 2);
}

/* One stage of r replicas of one device with m micro-batches does what
 * the same stage split along n over the r devices does with m / r: each
 * device computes m / r micro-batches of batch / m samples, and the
 * gradients of the same r shards are all-reduced. */
static void test_rr_vs_split(void **state)
{
	static const int all[] = { 0, 1, 2, 3 };
	struct sim_result a, b;
	int64_t wb[4];

	(void)state;
	cluster("1x4:v100");
	for (int m = 4; m <= 8; m *= 2) {
		dp_plan(m / 4, SCHED_GPIPE);
		run(NULL, &b);
		for (int d = 0; d < 4; d++)
			wb[d] = b.mem[d].weights;
		pl.microbatches = m;
		pl.stages[0].replicas = 4;
		set_op("x", 0, 1, 1, all);
		set_op("fc", 0, 1, 1, all);
		set_op("l", 0, 1, 1, all);
		put_costs((const double[]){ 0, 10, 3 }, (const double[]){ 0, 20, 4 });
		run(NULL, &a);
		near(a.iter_s, b.iter_s);
		near(a.busiest_compute_s, b.busiest_compute_s);
		near(a.compute_busy_s, b.compute_busy_s);
		assert_int_equal(a.link_bytes[LINK_INTRA], b.link_bytes[LINK_INTRA]);
		assert_int_equal(a.ntask_kinds[TASK_ALLREDUCE], b.ntask_kinds[TASK_ALLREDUCE]);
		assert_int_equal(a.ntask_kinds[TASK_FWD], b.ntask_kinds[TASK_FWD]);
		assert_int_equal(a.ndev_used, 4);
		for (int d = 0; d < 4; d++)
			assert_int_equal(a.mem[d].weights, wb[d]);
	}
}

/* One replica is none; sim_delta() runs a plan with replicas in full;
 * a period past the cap is refused. */
static void test_rr_plain(void **state)
{
	struct sim_result a, b;
	int dev[131];

	(void)state;
	cluster("1x4:v100");
	for (int sched = 0; sched < SCHED_FIRST_PIPE; sched++) {
		rr_plan(8, 4, 1, (enum sched_kind)sched, 20, 40, 5, 10);
		run(NULL, &a);
		pl.stages[0].replicas = 1;
		pl.stages[1].replicas = 1;
		run(NULL, &b);
		assert_memory_equal(&a.iter_s, &b.iter_s, sizeof a.iter_s);
		assert_memory_equal(&a.critical_path_s, &b.critical_path_s, sizeof a.iter_s);
		assert_int_equal(a.ntasks, b.ntasks);
		assert_int_equal(a.peak_mem_bytes, b.peak_mem_bytes);
		rr_plan(8, 4, 3, (enum sched_kind)sched, 20, 40, 5, 10);
		run(NULL, &a);
		pl.ops[op_of("a")].degree[DIM_N] = 1;
		assert_int_equal(sim_delta(&sim, &pl, (const int[]){ op_of("a") }, 1, &b), AP_OK);
		assert_memory_equal(&a.iter_s, &b.iter_s, sizeof a.iter_s);
		assert_int_equal(a.ntasks, b.ntasks);
	}
	/* lcm(64, 67) = 4288 micro-batches for one: more than the simulator
	 * runs */
	cluster("1x131:v100");
	load("model t\nbatch 8\ninput x c=16\nlinear a x out=16\nrelu b a\nloss l b\n");
	for (int k = 0; k < 131; k++)
		dev[k] = k;
	assert_int_equal(plan_alloc(&pl, &g, 2), AP_OK);
	pl.sched = SCHED_1F1B_ASYNC;
	set_stage(0, dev, 64, 1);
	set_stage(1, dev + 64, 67, -1);
	pl.stages[0].replicas = 64;
	pl.stages[1].replicas = 67;
	set_op("x", 0, 1, 1, dev);
	set_op("a", 0, 1, 1, dev);
	set_op("b", 1, 1, 1, dev + 64);
	set_op("l", 1, 1, 1, dev + 64);
	put_uniform(1, 2);
	assert_int_equal(plan_validate(&pl, &g, &cl, "plan"), AP_OK);
	sim_release(&sim);
	assert_int_equal(sim_init(&sim, &g, &prof, &cl), AP_OK);
	assert_int_equal(sim_run(&sim, &pl, NULL, &a), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "round-robin"));
	/* synchronous: one iteration as it comes */
	pl.sched = SCHED_1F1B;
	run(NULL, &a);
	assert_int_equal(a.ntask_kinds[TASK_UPDATE], 64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(test_rr_chain),
		TEST(test_rr_imbalance),
		TEST(test_rr_async_period),
		TEST(test_rr_vs_split),
		TEST(test_rr_plain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
