/*
 * Training for real: over 200 steps of the seeded, teacher-labelled data
 * (runtime/data.h) the loss of every small model falls by at least half
 * under a two-stage 1F1B pipeline on two CPU ranks (a batch of 8 keeps it
 * affordable; test_run_train.c does the same for data parallelism).
 */
#include "runtest.h"

static void test_pipeline(void **state)
{
	char plan[1024];

	(void)state;
	for (size_t k = 0; k < sizeof rt_models / sizeof *rt_models; k++) {
		snprintf(plan, sizeof plan, "%s/%s-1f1b.json", tmp_dir(), rt_models[k]);
		rt_pipeline_plan(rt_models[k], 8, "cpu-1x2", 2, 1, SCHED_1F1B, 2, plan);
		rt_falls_by_half(rt_models[k], plan);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipeline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
