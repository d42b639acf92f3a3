/*
 * `autopar run --check` on every plan of every planner for the small models
 * on 2 ranks (and 1, for the single planner) of cpu-1x2: the plan's training must match single-device training to
 * float32 round-off in the loss of every step and in every weight.  Runs
 * the built binary under mpirun with a small batch, so the matrix stays
 * affordable on two cores.
 */
#include "runtest.h"

static void test_every_planner(void **state)
{
	(void)state;
	rt_check_planners("cpu-1x2");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_planner),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
