/*
 * `autopar run --check` on every plan of every planner for the small models
 * on 4 ranks of cpu-1x4: the plan's training must match single-device training to
 * float32 round-off in the loss of every step and in every weight.  Runs
 * the built binary under mpirun with a small batch, so the matrix stays
 * affordable on two cores.  Hand-written plans pin the splits that need
 * more than their share of the input (halos, whole keys and values, the
 * heads' context exchanged), whatever the planners choose.
 */
#include "runtest.h"

static void test_every_planner(void **state)
{
	(void)state;
	rt_check_planners("cpu-1x4");
}

/* op of model split by (n, c, h, w, l) degrees */
static void split(const char *model, const char *op, int dn, int dc, int dh, int dw, int dl)
{
	int degree[NDIMS] = { dn, dc, dh, dw, dl };
	char path[1024], what[1024];

	snprintf(path, sizeof path, "%s/split-%s-%s-%d%d%d%d%d.json", tmp_dir(), model, op,
		 dn, dc, dh, dw, dl);
	snprintf(what, sizeof what, "%s of %s split n%d c%d h%d w%d l%d", op, model, dn, dc,
		 dh, dw, dl);
	rt_split_plan(model, "cpu-1x4", op, degree, path);
	rt_check_plan(path, what);
}

static void test_hand_splits(void **state)
{
	(void)state;
	/* a conv with padding along h and w: halos and padded edges */
	split("cnn_small", "conv1", 1, 1, 2, 2, 1);
	split("cnn_small", "conv2", 1, 1, 4, 1, 1);
	split("cnn_small", "pool1", 1, 2, 2, 1, 1);
	split("branchy_small", "cat", 1, 4, 1, 1, 1);
	/* attention: causal queries along l, heads along c, both */
	split("transformer_tiny", "h.0.attn", 1, 1, 1, 1, 4);
	split("transformer_tiny", "h.0.attn", 1, 2, 1, 1, 2);
	/* batchnorm: channels apart, samples apart in groups (the reference
	 * normalises over the same groups), both */
	split("resnet_small", "b2.bn1", 1, 4, 1, 1, 1);
	split("resnet_small", "b1.bn2", 4, 1, 1, 1, 1);
	split("resnet_small", "b2.down_bn", 2, 2, 1, 1, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hand_splits),
		cmocka_unit_test(test_every_planner),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
