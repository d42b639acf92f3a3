/*
 * The runtime's device-memory paths, end to end: `autopar run` on 2
 * ranks through the host-staged transport (the transport a GPU backend
 * uses where NCCL cannot run), which with the CPU backend moves every
 * transfer and all-reduce through backend copies, must still train
 * exactly as one device does (--check).  Then the cuda backend: with a
 * device it must pass --check on 1 and 2 ranks; without one `run` must
 * refuse with one clear message (the test says it skipped that part).
 */
#include "runtest.h"

#include "gpu.h"

/* Runs PLAN with --check and the extra arguments; asserts agreement. */
static void check_with(const char *plan, const char *extra, const char *what)
{
	char out[16384];
	int st = rt_run(out, sizeof out, "run '%s' --check --steps 2 --warmup 1 %s", plan, extra);
	double d = rt_check_diff(out);

	if (st != 0 || d < 0 || d >= 1e-5) {
		print_error("%s (%s): exit %d, difference %g:\n%s\n", what, extra, st, d, out);
		fail();
	}
}

static const char *make_plan(const char *model, const char *planner)
{
	static char plan[1024];
	char out[8192];

	snprintf(plan, sizeof plan, "%s/%s-%s.json", tmp_dir(), model, planner);
	if (rt_run(out, sizeof out, "plan -m %s -c cpu-1x2 -P %s -b 8 -o '%s'", model, planner,
		   plan) != 0) {
		print_error("%s\n", out);
		fail();
	}
	return plan;
}

static void test_staged_cpu(void **state)
{
	static const char *const models[] = { "mlp", "cnn_small" };
	char pipe[1024];

	(void)state;
	for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
		/* replica groups' all-reduces; c-split transfers */
		check_with(make_plan(models[m], "dp"), "--transport staged", models[m]);
		check_with(make_plan(models[m], "owt"), "--transport staged", models[m]);
	}
	/* stage-to-stage transfers, forward and back */
	snprintf(pipe, sizeof pipe, "%s/mlp-pipe.json", tmp_dir());
	rt_pipeline_plan("mlp", 8, "cpu-1x2", 2, 1, SCHED_1F1B, 4, pipe);
	check_with(pipe, "--transport staged", "mlp 2-stage 1f1b");
}

/* Round-robin replicas under 1f1b-async all-reduce once per round, while
 * their neighbours still send and receive: a staged all-reduce that
 * blocked the rank until the sum came back deadlocked there (the other
 * replica waited on a transfer the blocked rank had not yet sent). */
static void test_staged_round_robin(void **state)
{
	static const int rep[] = { 1, 2, 1 };
	char plan[1024];

	(void)state;
	snprintf(plan, sizeof plan, "%s/tt-rr.json", tmp_dir());
	rt_round_robin_plan("transformer_tiny", 16, "cpu-1x4", 3, rep, 1, SCHED_1F1B_ASYNC, 2,
			    plan);
	check_with(plan, "--transport staged --watchdog 30", "transformer_tiny 1f1b-async, 2 replicas");
}

static void test_bad_options(void **state)
{
	char out[8192];
	const char *plan;

	(void)state;
	plan = make_plan("mlp", "single");
	assert_int_equal(rt_run(out, sizeof out, "run '%s' --transport pigeon", plan), 2);
	assert_non_null(strstr(out, "--transport"));
	assert_int_equal(rt_run(out, sizeof out, "run '%s' --backend tpu", plan), 2);
	assert_non_null(strstr(out, "--backend"));
}

static void test_cuda_run(void **state)
{
	char out[16384], why[256];
	const char *plan;

	(void)state;
	plan = make_plan("mlp", "dp");
	if (gpu_count(why, sizeof why) <= 0) {
		/* one clear message, no crash, no launch */
		int st = rt_run(out, sizeof out, "run '%s' --backend cuda --steps 1", plan);

		assert_true(st == 1 || st == 2);
		assert_non_null(strstr(out, "cuda"));
		assert_null(strstr(out, "Segmentation"));
		print_message("skipped the GPU runs: no CUDA device (%s)\n", why);
		skip();
	}
	check_with(make_plan("mlp", "single"), "--backend cuda", "mlp on one GPU");
	check_with(make_plan("cnn_small", "single"), "--backend cuda", "cnn_small on one GPU");
	check_with(plan, "--backend cuda --transport staged", "mlp dp on 2 GPU ranks");
	check_with(make_plan("cnn_small", "owt"), "--backend cuda", "cnn_small owt on 2 GPU ranks");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_staged_cpu),
		cmocka_unit_test(test_staged_round_robin),
		cmocka_unit_test(test_cuda_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
