/*
 * `autopar run --check` on plans with round-robin replicated stages
 * (PipeDream's, plan.h): micro-batch j runs whole on replica j mod r of
 * each stage.  Under GPipe and 1F1B the replicas' gradients add up to one
 * device's, so the check holds to float32 round-off against one device,
 * also where m is no multiple of r (a replica may run more micro-batches
 * than another, or none).  Under asynchronous 1F1B a replicated stage
 * updates once per round of r micro-batches, and the check is against the
 * single-process reference of the plan's own stages.  Plans whose rounds
 * would straddle steps, and async-predict with replicas, are refused
 * before launch.
 */
#include "runtest.h"

static void rr_check(const char *model, int64_t batch, const char *cluster, int nstages,
		     const int *rep, int width, enum sched_kind sched, int m)
{
	char path[1024], what[256], reps[32] = "";

	for (int s = 0; s < nstages; s++)
		snprintf(reps + strlen(reps), sizeof reps - strlen(reps), "%s%d", s ? "-" : "",
			 rep[s]);
	snprintf(path, sizeof path, "%s/rr-%s-%s-%s-w%d-m%d.json", tmp_dir(), model,
		 sched_name(sched), reps, width, m);
	rt_round_robin_plan(model, batch, cluster, nstages, rep, width, sched, m, path);
	snprintf(what, sizeof what, "%s, replicas %s x %d devices, %s, %d micro-batches", model,
		 reps, width, sched_name(sched), m);
	rt_check_plan(path, what);
}

/* one stage of two replicas on two ranks */
static void test_two_ranks(void **state)
{
	static const char *const models[] = { "mlp", "cnn_small" };
	static const int two[] = { 2 };

	(void)state;
	for (int k = 0; k < 2; k++) {
		rr_check(models[k], 8, "cpu-1x2", 1, two, 1, SCHED_1F1B_ASYNC, 4);
		rr_check(models[k], 8, "cpu-1x2", 1, two, 1, SCHED_1F1B, 4);
		/* three micro-batches: replica 0 runs two of them */
		rr_check(models[k], 12, "cpu-1x2", 1, two, 1, SCHED_GPIPE, 3);
	}
}

/* two stages on four ranks: 3 + 1 and 2 + 2 replicas, 1 + 2 */
static void test_four_ranks(void **state)
{
	static const int r31[] = { 3, 1 }, r22[] = { 2, 2 }, r12[] = { 1, 2 }, two[] = { 2 };

	(void)state;
	rr_check("mlp", 12, "cpu-1x4", 2, r31, 1, SCHED_1F1B_ASYNC, 6);
	rr_check("cnn_small", 12, "cpu-1x4", 2, r31, 1, SCHED_1F1B, 3);
	rr_check("mlp", 8, "cpu-1x4", 2, r22, 1, SCHED_GPIPE, 2);
	rr_check("cnn_small", 8, "cpu-1x4", 2, r22, 1, SCHED_1F1B_ASYNC, 4);
	rr_check("cnn_small", 12, "cpu-1x4", 2, r12, 1, SCHED_1F1B_ASYNC, 2);
	/* replicas of two devices splitting n: gradients summed over both
	 * the replicas and the n degree; with one micro-batch a step,
	 * replica 1 runs none and adds nothing */
	rr_check("mlp", 8, "cpu-1x4", 1, two, 2, SCHED_1F1B_ASYNC, 2);
	rr_check("cnn_small", 8, "cpu-1x4", 1, two, 2, SCHED_GPIPE, 1);
}

/* exit 2 and one message naming the stage, before any rank started */
static void refused(const int *rep, enum sched_kind sched, int m, const char *msg)
{
	char path[1024], out[4096];

	snprintf(path, sizeof path, "%s/rr-refused-%s.json", tmp_dir(), sched_name(sched));
	rt_round_robin_plan("mlp", 12, "cpu-1x4", 2, rep, 1, sched, m, path);
	if (rt_run(out, sizeof out, "run '%s' --steps 1", path) != 2 || !strstr(out, msg) ||
	    (strchr(out, '\n') && strchr(strchr(out, '\n') + 1, '\n'))) {
		print_error("%s:\n%s\n", path, out);
		fail();
	}
}

static void test_refusals(void **state)
{
	static const int r21[] = { 2, 1 }, r12[] = { 1, 2 };

	(void)state;
	refused(r21, SCHED_1F1B_ASYNC, 3,
		"stage 0 has 2 round-robin replicas, which do not divide the 3 micro-batches");
	refused(r12, SCHED_ASYNC_PREDICT, 2,
		"stage 1 has 2 round-robin replicas: not executable by the runtime under "
		"async-predict yet");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_ranks),
		cmocka_unit_test(test_four_ranks),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
