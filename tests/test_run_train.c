/*
 * Training for real: over 200 steps of the seeded, teacher-labelled data
 * (runtime/data.h) the loss of every small model falls by at least half
 * under a data-parallel plan on two CPU ranks (a batch of 8 keeps it
 * affordable; test_run_train_pipe.c does the same for a pipeline).
 */
#include "runtest.h"

static void test_dp(void **state)
{
	char plan[1024], out[4096];

	(void)state;
	for (size_t k = 0; k < sizeof rt_models / sizeof *rt_models; k++) {
		snprintf(plan, sizeof plan, "%s/%s-dp.json", tmp_dir(), rt_models[k]);
		assert_int_equal(rt_run(out, sizeof out, "plan -m %s -c cpu-1x2 -P dp -b 8 -o '%s'",
					rt_models[k], plan), 0);
		rt_falls_by_half(rt_models[k], plan);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
