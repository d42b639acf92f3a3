/*
 * `autopar run --check` on random plans: every operator of every small
 * model split by a random degree vector among those the runtime executes
 * (n everywhere; channels of linear, conv2d, pools, embeddings; any dim of
 * element-wise operators; l of sequence operators), on random devices of
 * cpu-1x4.  Neighbours disagree about their splits, so pieces of tensors
 * move between ranks in every direction; the training must still match
 * one device.
 */
#include "runtest.h"

#include "exec_support.h"
#include "rng.h"
#include "hw/roofline.h"
#include "plan/plan_build.h"

struct pick {
	const struct graph *g;
	int i, n, chosen[NDIMS];
	uint64_t key;
};

/* reservoir sampling over the runnable degree vectors */
static int consider(const int degree[NDIMS], void *ctx)
{
	struct pick *p = ctx;

	if (!exec_can_split(&backend_cpu, p->g, p->i, degree))
		return 0;
	p->n++;
	if (rng_unit(rng_key(p->key, (uint64_t)p->i, (uint64_t)p->n)) * p->n < 1.0)
		memcpy(p->chosen, degree, sizeof p->chosen);
	return 0;
}

static void random_plan(const char *model, uint64_t seed, const char *path)
{
	struct graph g;
	struct plan p;

	graph_init(&g);
	plan_init(&p);
	assert_int_equal(model_load(model, 8, &g), 0);
	assert_int_equal(plan_alloc(&p, &g, 1), 0);
	snprintf(p.cluster, sizeof p.cluster, "cpu-1x4");
	snprintf(p.planner, sizeof p.planner, "test-random");
	assert_int_equal(plan_one_stage(&p, 4, SCHED_GPIPE, 1), 0);
	for (int i = 0; i < g.nops; i++) {
		struct pick pk = { .g = &g, .i = i, .key = seed };
		int dev[4], n = 1;

		for (int d = 0; d < NDIMS; d++)
			pk.chosen[d] = 1;
		assert_int_equal(for_each_degree(&g.ops[i], 4, consider, &pk), 0);
		for (int d = 0; d < NDIMS; d++)
			n *= pk.chosen[d];
		/* n distinct devices, from a random rotation */
		for (int k = 0; k < n; k++)
			dev[k] = (int)((k + rng_key(seed, 77, (uint64_t)i) % 4) % 4);
		assert_int_equal(plan_place(&p, i, 0, pk.chosen, dev), 0);
	}
	assert_int_equal(plan_write(&p, &g, path), 0);
	plan_release(&p);
	graph_release(&g);
}

static void test_random_plans(void **state)
{
	char path[1024], what[256];

	(void)state;
	for (size_t k = 0; k < sizeof rt_models / sizeof *rt_models; k++)
		for (uint64_t seed = 1; seed <= 2; seed++) {
			snprintf(path, sizeof path, "%s/%s-random%llu.json", tmp_dir(), rt_models[k],
				 (unsigned long long)seed);
			random_plan(rt_models[k], seed * 1000 + k, path);
			snprintf(what, sizeof what, "%s, random plan %llu", rt_models[k],
				 (unsigned long long)seed);
			rt_check_plan(path, what);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_plans),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
