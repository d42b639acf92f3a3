/*
 * PyTorch as a second numerical reference beside --check: `autopar run
 * --dump` writes the first step of a model on one device (initial
 * weights, batch, labels, loss and gradients, runtime/dump.h), and
 * bench/torch_peer_cpu.py builds the same network from the model file,
 * loads those weights and that batch, runs one forward and backward in
 * float64 and in float32, and compares the loss and every parameter's
 * gradient of autopar with float64's: within 1e-4 (float32 sums in
 * another order) or, for a network that loses more in float32 (resnet50
 * at batch 2: PyTorch's own float32 gradients are 16% off), within twice
 * PyTorch's own float32 difference.  Where python_path() (datadir.h:
 * what `autopar models import` runs, AUTOPAR_PYTHON or Debian's python3)
 * cannot import torch, the comparisons skip with a message; the option's
 * refusals are tested everywhere.
 */
#include "runtest.h"

#include "util/datadir.h"


/* Whether that Python can import torch. */
static int have_torch(void)
{
	static int known = -1;
	char cmd[1024];

	if (known < 0) {
		snprintf(cmd, sizeof cmd, "'%s' -c 'import torch' >/dev/null 2>&1", python_path());
		known = system(cmd) == 0;
	}
	return known;
}

/* The dp plan of model on cpu-1x2 (batch 0: the model's own), its dump
 * after one step, and the peer's comparison of it. */
static void compare_model(const char *model, int batch)
{
	char out[16384], plan[512], dump[512], cmd[2048], peer[1024];
	const char *tree = getenv("AUTOPAR_DATA");
	int st;

	if (!have_torch()) {
		print_message("skipped: python3 cannot import torch (Debian: python3-torch)\n");
		skip();
	}
	snprintf(plan, sizeof plan, "%s/%s-dp.json", tmp_dir(), model);
	snprintf(dump, sizeof dump, "%s/%s.dump", tmp_dir(), model);
	assert_int_equal(rt_run(out, sizeof out, "plan -m %s -b %d -c cpu-1x2 -P dp -o '%s'", model,
				batch, plan),
			 0);
	st = rt_run(out, sizeof out, "run '%s' --steps 1 --warmup 0 --dump '%s'", plan, dump);
	if (st != 0)
		fail_msg("%s: run --dump: exit %d:\n%s", model, st, out);
	snprintf(peer, sizeof peer, "%s/bench/torch_peer_cpu.py", tree && *tree ? tree : ".");
	snprintf(cmd, sizeof cmd, "'%s' '%s' compare %s '%s' --tolerance 1e-4 2>&1", python_path(),
		 peer, model, dump);
	st = test_shell(cmd, out, sizeof out);
	print_message("%s", out);
	if (st != 0)
		fail_msg("%s: PyTorch disagrees with autopar's first step:\n%s", model, out);
	assert_non_null(strstr(out, "largest relative difference"));
}

static void test_mlp(void **state)
{
	(void)state;
	compare_model("mlp", 0);
}

static void test_cnn_small(void **state)
{
	(void)state;
	compare_model("cnn_small", 0);
}

static void test_transformer_tiny(void **state)
{
	(void)state;
	compare_model("transformer_tiny", 0);
}

/* batchnorm: a small residual network, and resnet50 at a small batch */
static void test_resnet_small(void **state)
{
	(void)state;
	compare_model("resnet_small", 0);
}

static void test_resnet50(void **state)
{
	(void)state;
	compare_model("resnet50", 2);
}

/* A bad --dump, or one in a directory that does not exist, is refused
 * before anything runs (exit 2), leaving no file behind. */
static void test_dump_refusals(void **state)
{
	char out[8192], plan[512], path[600];

	(void)state;
	snprintf(plan, sizeof plan, "%s/mlp-single.json", tmp_dir());
	assert_int_equal(rt_run(out, sizeof out, "plan -m mlp -c cpu-1x2 -P single -o '%s'", plan),
			 0);
	assert_int_equal(rt_run(out, sizeof out, "run '%s' --dump ''", plan), 2);
	assert_non_null(strstr(out, "--dump"));
	assert_int_equal(rt_run(out, sizeof out, "run '%s' --dump", plan), 2);
	snprintf(path, sizeof path, "%s/no-such-dir/mlp.dump", tmp_dir());
	assert_int_equal(rt_run(out, sizeof out, "run '%s' --steps 1 --warmup 0 --dump '%s'", plan,
				path),
			 2);
	assert_non_null(strstr(out, "cannot write --dump: no directory"));
	assert_int_equal(access(path, F_OK), -1);
	/* a good one: the header, then the floats it announces */
	snprintf(path, sizeof path, "%s/mlp.dump", tmp_dir());
	assert_int_equal(rt_run(out, sizeof out, "run '%s' --steps 1 --warmup 0 --dump '%s'", plan,
				path),
			 0);
	test_read_file(path, out, sizeof out);
	assert_non_null(strstr(out, "autopar-dump 1\nmodel mlp\nbatch 64\n"));
	assert_non_null(strstr(out, "tensor grad fc3 5130\nend\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dump_refusals),
		cmocka_unit_test(test_mlp),
		cmocka_unit_test(test_cnn_small),
		cmocka_unit_test(test_transformer_tiny),
		cmocka_unit_test(test_resnet_small),
		cmocka_unit_test(test_resnet50),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
