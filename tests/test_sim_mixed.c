/*
 * Tests of the simulator on stages of different micro-batch counts (a
 * stage's own "microbatches", plan.h): a finer stage feeding a coarser
 * one and the other way, worked out by hand with free links; a plan whose
 * stages all name one count gives what that count gives as the
 * schedule's; sched_order_mixed() keeps every dependency on random DAGs
 * of stages; and what the simulator refuses of mixed counts.  The
 * fixtures are simtest.h's.
 */
#include "simtest.h"
#include "plan/sched.h"

/* Two stages on devices 0 and 1, stage 0 {x, a} in m0 micro-batches and
 * stage 1 {b, l} in m1, batch 8; a relu of n samples sends n x 4 KiB. */
static void two_stage_plan(int m0, int m1, enum sched_kind sched, double f0, double b0,
			   double f1, double b1)
{
	static const char *const ops[] = { "x", "a", "b", "l" };
	static const int stage_of[] = { 0, 0, 1, 1 };

	load("model t\nbatch 8\ninput x c=1024\nrelu a x\nrelu b a\nloss l b\n");
	assert_int_equal(plan_alloc(&pl, &g, 2), AP_OK);
	pl.microbatches = m0;
	pl.sched = sched;
	pl.stages[1].microbatches = m1;
	for (int s = 0; s < 2; s++)
		set_stage(s, &s, 1, s == 0 ? 1 : -1);
	for (int i = 0; i < 4; i++)
		set_op(ops[i], stage_of[i], 1, 1, &stage_of[i]);
	put_costs((const double[]){ 0, f0, f1, 0 }, (const double[]){ 0, b0, b1, 0 });
}

/* A finer stage feeding a coarser one (4 micro-batches of 2 samples into
 * 2 of 4), free links, worked out by hand.  GPipe: stage 0 forwards at
 * 0..40; stage 1's first waits for two of them (20..50), its second for
 * four (50..80); backwards 80..120 and 120..160; stage 0's first two
 * backwards wait for stage 1's first (120..130), its last two for the
 * second (160..170).  1F1B: stage 1 alternates; stage 0 warms up with
 * three forwards (its successor's first micro-batch is two of its own),
 * then B0 at 90..95, F3 95..105, B1 105..110; stage 1's F1 105..135 and
 * B1 135..175; stage 0's B2 and B3 175..185. */
static void test_mixed_gather(void **state)
{
	struct sim_result r;
	int64_t piece = 2 * 4096; /* a's output for one micro-batch of stage 0 */

	(void)state;
	cluster("1x2:v100");
	free_links();
	two_stage_plan(4, 2, SCHED_GPIPE, 10, 5, 30, 40);
	run(NULL, &r);
	near(r.iter_s, 170 * US);
	two_stage_plan(4, 2, SCHED_1F1B, 10, 5, 30, 40);
	run(NULL, &r);
	near(r.iter_s, 185 * US);
	/* one transfer per micro-batch of the finer stage, each way, and the
	 * bytes of the whole batch once each way */
	assert_int_equal(r.ntask_kinds[TASK_SEND_ACT], 4);
	assert_int_equal(r.ntask_kinds[TASK_SEND_GRAD], 4);
	assert_int_equal(r.link_bytes[LINK_INTRA], 2 * 4 * piece);
	/* stage 0 keeps x and a of three micro-batches of 2; stage 1 one
	 * micro-batch of 4: the two pieces it received, b and the loss */
	assert_int_equal(r.mem[0].act, 3 * 2 * piece);
	assert_int_equal(r.mem[1].act, 2 * piece + 2 * piece + 4 * 4);
}

/* The other way: 2 micro-batches of 4 into 4 of 2.  GPipe: stage 0 at
 * 0..20 and 20..40; stage 1 forwards 20..35, 35..50, then (after stage
 * 0's second) 50..65, 65..80, backwards 80..120 in four steps of 10;
 * stage 0's first backward waits for stage 1's first two (100..125), its
 * second for the last two (125..150). */
static void test_mixed_scatter(void **state)
{
	struct sim_result r, u;

	(void)state;
	cluster("1x2:v100");
	free_links();
	two_stage_plan(2, 4, SCHED_GPIPE, 20, 25, 15, 10);
	run(NULL, &r);
	near(r.iter_s, 150 * US);
	assert_int_equal(r.ntask_kinds[TASK_SEND_ACT], 4);
	assert_int_equal(r.ntask_kinds[TASK_SEND_GRAD], 4);
	/* the same bytes as one count everywhere */
	two_stage_plan(4, 4, SCHED_GPIPE, 20, 25, 15, 10);
	run(NULL, &u);
	assert_int_equal(r.link_bytes[LINK_INTRA], u.link_bytes[LINK_INTRA]);
	/* slower links only slow it down, re-batched transfers too */
	for (int k = 0; k < 2; k++) {
		two_stage_plan(2, 4, k ? SCHED_1F1B : SCHED_GPIPE, 20, 25, 15, 10);
		cluster("1x2:v100,intra=100GB/s");
		run(NULL, &u);
		cluster("1x2:v100,intra=1GB/s");
		run(NULL, &r);
		assert_true(r.iter_s > u.iter_s && u.iter_s >= 150 * US * (1 - EPS));
	}
}

/* A plan whose stages all name one count, not the schedule's, takes the
 * path of mixed counts and must give what that count gives as the
 * schedule's: the same order (sched_order_mixed() reduces to
 * sched_order()), times and memory; on a DAG of stages too. */
static void test_mixed_same_count(void **state)
{
	struct sim_result a, b;

	(void)state;
	cluster("1x4:v100,intra=2GB/s");
	for (int sched = 0; sched < 2; sched++) {
		enum sched_kind k = sched ? SCHED_1F1B : SCHED_GPIPE;

		chain_plan(8, k, 10, 25);
		run(NULL, &a);
		chain_plan(8, k, 10, 25);
		pl.microbatches = 2;
		for (int s = 0; s < 4; s++)
			pl.stages[s].microbatches = 8;
		run(NULL, &b);
		near(b.iter_s, a.iter_s);
		near(b.critical_path_s, a.critical_path_s);
		assert_int_equal(b.peak_mem_bytes, a.peak_mem_bytes);
		assert_int_equal(b.link_bytes[LINK_INTRA], a.link_bytes[LINK_INTRA]);
	}
}

/* Random DAGs of stages with counts of 1, 2, 4 and 8 (any two joined
 * ones divide one another): every item once, each stage's forwards and
 * backwards in order, a backward after its forward, a forward after the
 * forwards of its predecessors' micro-batches that overlap it and a
 * backward after those backwards of its successors. */
static void test_mixed_order(void **state)
{
	unsigned seed = 7;

	(void)state;
	for (int trial = 0; trial < 200; trial++) {
		int n = 2 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 6;
		int m[8], depth[8], ofs[9] = { 0 }, next[64], ne = 0, total = 0;
		int nf[8] = { 0 }, nb[8] = { 0 };
		struct sched_item it[128];
		enum sched_kind k = trial % 2 ? SCHED_1F1B : SCHED_GPIPE;

		for (int s = 0; s < n; s++) {
			m[s] = 1 << (int)(((seed = seed * 1103515245u + 12345u) >> 16) % 4);
			depth[s] = 0;
			total += 2 * m[s];
		}
		for (int s = 0; s < n; s++) {
			for (int t = s + 1; t < n; t++)
				if ((((seed = seed * 1103515245u + 12345u) >> 16) % 3) == 0 ||
				    (t == s + 1 && s + 1 < n))
					next[ne++] = t;
			ofs[s + 1] = ne;
		}
		for (int s = 0; s < n; s++)
			for (int e = ofs[s]; e < ofs[s + 1]; e++)
				depth[next[e]] = depth[s] + 1 > depth[next[e]] ? depth[s] + 1
									    : depth[next[e]];
		assert_int_equal(sched_order_mixed(k, n, depth, m, ofs, next, it), 0);
		for (int i = 0; i < total; i++) {
			int s = it[i].stage, j = it[i].mb;

			assert_int_equal(it[i].key, i);
			assert_int_equal(j, it[i].bwd ? nb[s] : nf[s]);
			assert_true(j < m[s]);
			if (it[i].bwd)
				assert_true(nb[s] < nf[s]);
			for (int p = 0; p < n; p++)
				for (int e = ofs[p]; e < ofs[p + 1]; e++) {
					/* o: the neighbour waited for */
					int o = it[i].bwd ? next[e] : p, linked = it[i].bwd ? p == s
											      : next[e] == s;
					int64_t need = ((int64_t)(j + 1) * m[o] + m[s] - 1) / m[s];

					if (linked)
						assert_true((it[i].bwd ? nb[o] : nf[o]) >= need);
				}
			(it[i].bwd ? nb : nf)[s]++;
		}
		for (int s = 0; s < n; s++)
			assert_true(nf[s] == m[s] && nb[s] == m[s]);
	}
}

/* What the simulator refuses of mixed counts. */
static void test_mixed_bad(void **state)
{
	struct sim_result r;

	(void)state;
	cluster("1x2:v100");
	two_stage_plan(4, 2, SCHED_1F1B, 1, 1, 1, 1);
	run(NULL, &r);
	pl.sched = SCHED_1F1B_ASYNC;
	assert_int_equal(sim_run(&sim, &pl, NULL, &r), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "synchronous"));
	pl.sched = SCHED_1F1B;
	pl.stages[1].microbatches = 3;
	assert_int_equal(sim_run(&sim, &pl, NULL, &r), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "stages[1].microbatches"));
	pl.microbatches = 8;
	pl.stages[1].microbatches = 2;
	pl.stages[0].microbatches = 0;
	run(NULL, &r);
	pl.microbatches = 2;
	pl.stages[0].microbatches = 8;
	pl.stages[1].microbatches = 0;
	run(NULL, &r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(test_mixed_gather),
		TEST(test_mixed_scatter),
		TEST(test_mixed_same_count),
		TEST(test_mixed_order),
		TEST(test_mixed_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
