/*
 * The host side of the CUDA backend's convolution algorithms and
 * precision, without a GPU (runtime/conv_algo.h, runtime/gpu_prec.h,
 * runtime/gpu_opts.h): the cache of choices keyed by shape and precision
 * (lookup, insertion, growth), what the math cuDNN reports for a
 * candidate means in each precision (fp32 is FMA whatever the label, so
 * no label can reject every fp32 algorithm), the choice among synthetic
 * candidate lists as a search would time them (the fastest that fits
 * the workspace and the precision, failed ones skipped, ties broken the
 * same way whatever the order) and, where the search gives none, among
 * the heuristics' ranking, the search's workspace sizes, the --verbose
 * line, the precision names and math modes, and the command line's
 * --precision: a bad value, or tf32 where only the CPU computes, is
 * refused with exit 2 before anything runs.
 */
#include "testutil.h"

#include "conv_algo.h"
#include "gpu_opts.h"
#include "gpu_prec.h"

static struct conv_key key(int n, int c, int k, enum gpu_prec p)
{
	struct conv_key x;

	memset(&x, 0, sizeof x);
	x.n = n, x.c = c, x.h = 14, x.w = 14, x.k = k, x.r = 3, x.s = 3;
	x.stride_h = x.stride_w = 1, x.pad_h = x.pad_w = 1, x.dil_h = x.dil_w = 1;
	x.groups = 1;
	x.precision = p;
	return x;
}

static void test_cache(void **state)
{
	struct conv_cache c;
	struct conv_key k0 = key(8, 64, 64, GPU_FP32), k1 = key(8, 64, 64, GPU_TF32);
	struct conv_entry *e;
	int marker = 7;

	(void)state;
	conv_cache_init(&c);
	assert_null(conv_cache_find(&c, &k0));
	e = conv_cache_add(&c, &k0);
	assert_non_null(e);
	assert_false(e->dir[CONV_FWD].searched || e->dir[CONV_BWD_DATA].searched ||
		     e->dir[CONV_BWD_FILTER].searched);
	assert_null(e->descs);
	e->dir[CONV_BWD_FILTER].searched = 1;
	e->dir[CONV_BWD_FILTER].c.algo = 3;
	e->descs = &marker;
	/* the same shape in the other precision is another entry */
	assert_null(conv_cache_find(&c, &k1));
	assert_non_null(conv_cache_add(&c, &k1));
	/* many shapes: the array grows past its first 16, entries intact */
	for (int q = 0; q < 100; q++) {
		struct conv_key k = key(1 + q % 5, 3 + q, 16, q % 2 ? GPU_TF32 : GPU_FP32);

		assert_null(conv_cache_find(&c, &k));
		assert_non_null(conv_cache_add(&c, &k));
	}
	assert_int_equal(c.n, 102);
	assert_true(c.cap >= 102);
	for (int q = 0; q < 100; q++) {
		struct conv_key k = key(1 + q % 5, 3 + q, 16, q % 2 ? GPU_TF32 : GPU_FP32);

		e = conv_cache_find(&c, &k);
		assert_non_null(e);
		assert_memory_equal(&e->key, &k, sizeof k);
	}
	e = conv_cache_find(&c, &k0);
	assert_non_null(e);
	assert_true(e->dir[CONV_BWD_FILTER].searched && e->dir[CONV_BWD_FILTER].c.algo == 3);
	assert_false(e->dir[CONV_FWD].searched);
	assert_ptr_equal(e->descs, &marker);
	assert_ptr_not_equal(conv_cache_find(&c, &k1), e);
	/* every field is part of the key */
	for (int f = 0; f < (int)(sizeof k0 / sizeof(int)); f++) {
		struct conv_key k = k0;

		((int *)&k)[f] += 1;
		assert_null(conv_cache_find(&c, &k) == e ? e : NULL);
	}
	conv_cache_release(&c);
	assert_int_equal(c.n, 0);
	assert_null(conv_cache_find(&c, &k0));
}

#define MIB ((size_t)1 << 20)

static struct conv_cand cand(int algo, int ok, float ms, size_t ws, int det, enum conv_math m)
{
	struct conv_cand c = { .algo = algo, .ok = ok, .deterministic = det, .math = m,
			       .ws_bytes = ws, .ms = ms };

	return c;
}

/* the algorithm conv_pick() takes from the list, -1: none */
static int picked(const struct conv_cand *c, int n, size_t limit, enum gpu_prec p)
{
	int q = conv_pick(c, n, limit, p);

	return q < 0 ? -1 : c[q].algo;
}

static void test_pick(void **state)
{
	/* as Find lists them, fastest first: the fastest needs too much
	 * workspace, the next failed, the next is not a number */
	struct conv_cand c[] = {
		cand(5, 1, 0.10f, 2048 * MIB, 1, CONV_MATH_FMA),
		cand(4, 0, 0.15f, 0, 1, CONV_MATH_FMA),
		cand(6, 1, NAN, 0, 1, CONV_MATH_FMA),
		cand(7, 1, -1.0f, 0, 1, CONV_MATH_FMA),
		cand(1, 1, 0.30f, 12 * MIB, 0, CONV_MATH_FMA),
		cand(0, 1, 0.90f, 0, 1, CONV_MATH_FMA),
	};
	int n = (int)(sizeof c / sizeof c[0]);

	(void)state;
	assert_int_equal(picked(c, n, 1024 * MIB, GPU_FP32), 1);
	/* a non-deterministic algorithm wins on time */
	assert_int_equal(picked(c, n, 4096 * MIB, GPU_FP32), 5);
	/* the limit is inclusive */
	assert_int_equal(picked(c, n, 12 * MIB, GPU_FP32), 1);
	assert_int_equal(picked(c, n, 12 * MIB - 1, GPU_FP32), 0);
	/* none fits: only failures and workspace above the limit */
	c[5].ok = 0;
	assert_int_equal(picked(c, n, 1 * MIB, GPU_FP32), -1);
	assert_int_equal(picked(c, 0, 1 * MIB, GPU_FP32), -1);
}

static void test_pick_math(void **state)
{
	struct conv_cand c[] = {
		cand(2, 1, 0.05f, 0, 1, CONV_MATH_NARROW),
		cand(1, 1, 0.10f, 0, 1, CONV_MATH_TF32),
		cand(0, 1, 0.40f, 0, 1, CONV_MATH_FMA),
	};

	(void)state;
	/* fp32 runs FMA only; tf32 takes TF32 too; neither narrows to half */
	assert_int_equal(picked(c, 3, MIB, GPU_FP32), 0);
	assert_int_equal(picked(c, 3, MIB, GPU_TF32), 1);
	c[2].ms = 0.01f;
	assert_int_equal(picked(c, 3, MIB, GPU_TF32), 0);
	assert_int_equal(picked(c, 2, MIB, GPU_FP32), -1);
}

/* equal times: deterministic, then the smaller workspace, then the
 * lower number, in whatever order the list comes */
static void test_pick_ties(void **state)
{
	struct conv_cand c[] = {
		cand(3, 1, 0.25f, 0, 0, CONV_MATH_FMA),
		cand(6, 1, 0.25f, 4 * MIB, 1, CONV_MATH_FMA),
		cand(4, 1, 0.25f, 1 * MIB, 1, CONV_MATH_FMA),
		cand(2, 1, 0.25f, 1 * MIB, 1, CONV_MATH_FMA),
		cand(1, 1, 0.50f, 0, 1, CONV_MATH_FMA),
	};
	int n = (int)(sizeof c / sizeof c[0]);

	(void)state;
	for (int r = 0; r < 2 * n; r++) {
		/* rotate, and every other round reverse */
		struct conv_cand v[5];

		for (int q = 0; q < n; q++)
			v[q] = c[r % 2 ? n - 1 - (q + r / 2) % n : (q + r / 2) % n];
		assert_int_equal(picked(v, n, 64 * MIB, GPU_FP32), 2);
	}
	c[3].ws_bytes = 2 * MIB;
	assert_int_equal(picked(c, n, 64 * MIB, GPU_FP32), 4);
	c[1].deterministic = c[2].deterministic = c[3].deterministic = 0;
	assert_int_equal(picked(c, n, 64 * MIB, GPU_FP32), 3);
}

/* Labels as cuDNN may report them: the four math types, and a number
 * this build does not know. */
static void test_reported_math(void **state)
{
	static const int labels[] = { CONV_DNN_DEFAULT, CONV_DNN_TENSOR_OP,
				      CONV_DNN_TENSOR_OP_CONVERT, CONV_DNN_FMA, 7 };
	static const enum conv_math tf32_math[] = { CONV_MATH_TF32, CONV_MATH_TF32,
						    CONV_MATH_NARROW, CONV_MATH_FMA,
						    CONV_MATH_NARROW };
	struct conv_cand c[5];

	(void)state;
	assert_int_equal(conv_search_math(GPU_FP32), CONV_DNN_FMA);
	assert_int_equal(conv_search_math(GPU_TF32), CONV_DNN_DEFAULT);
	assert_int_equal(conv_search_math(NGPU_PRECS), CONV_DNN_FMA);
	for (int q = 0; q < 5; q++) {
		/* fp32 searched in FMA math: FMA kernels only, run in FMA
		 * math, whatever the label */
		memset(&c[q], 0, sizeof c[q]);
		conv_cand_math(&c[q], labels[q], GPU_FP32);
		assert_int_equal(c[q].math, CONV_MATH_FMA);
		assert_int_equal(c[q].run_math, CONV_DNN_FMA);
		conv_cand_math(&c[q], labels[q], NGPU_PRECS);
		assert_int_equal(c[q].math, CONV_MATH_FMA);
		assert_int_equal(c[q].run_math, CONV_DNN_FMA);
		/* tf32: the label tells, and the call runs in it */
		conv_cand_math(&c[q], labels[q], GPU_TF32);
		assert_int_equal(c[q].math, tf32_math[q]);
		assert_int_equal((int)c[q].run_math, labels[q]);
	}
	/* a search in fp32 whose every label reads default math (as cuDNN
	 * labels an algorithm without a tensor-core variant) still has its
	 * fastest to run */
	for (int q = 0; q < 5; q++) {
		c[q].algo = q, c[q].ok = 1, c[q].deterministic = 1;
		c[q].ws_bytes = 0, c[q].ms = 1.0f + (float)(q % 3);
		conv_cand_math(&c[q], CONV_DNN_DEFAULT, GPU_FP32);
	}
	c[0].ms = 0.5f;
	assert_int_equal(conv_pick(c, 5, 0, GPU_FP32), 0);
	assert_int_equal(conv_pick_ranked(c, 5, 0, GPU_FP32), 0);
}

/* cuDNN's heuristics rank, untimed (time -1): the first usable, the
 * deterministic ones first; time plays no part */
static void test_pick_ranked(void **state)
{
	struct conv_cand c[] = {
		cand(1, 1, -1.0f, 0, 0, CONV_MATH_FMA),
		cand(5, 1, -1.0f, 64 * MIB, 1, CONV_MATH_FMA),
		cand(2, 0, -1.0f, 0, 1, CONV_MATH_FMA),
		cand(6, 1, -1.0f, 0, 1, CONV_MATH_TF32),
		cand(0, 1, -1.0f, 0, 1, CONV_MATH_FMA),
		cand(7, 1, -1.0f, 0, 1, CONV_MATH_NARROW),
	};
	int n = (int)(sizeof c / sizeof c[0]), q;

	(void)state;
	/* 5 needs too much workspace, 2 is not supported, 6 is TF32 */
	q = conv_pick_ranked(c, n, MIB, GPU_FP32);
	assert_true(q >= 0 && c[q].algo == 0);
	q = conv_pick_ranked(c, n, 64 * MIB, GPU_FP32);
	assert_true(q >= 0 && c[q].algo == 5);
	q = conv_pick_ranked(c, n, MIB, GPU_TF32);
	assert_true(q >= 0 && c[q].algo == 6);
	/* no deterministic one usable: the first usable */
	c[3].deterministic = c[4].deterministic = 0;
	q = conv_pick_ranked(c, n, MIB, GPU_FP32);
	assert_true(q >= 0 && c[q].algo == 1);
	/* the timed choice takes none of these */
	assert_int_equal(conv_pick(c, n, 64 * MIB, GPU_TF32), -1);
	c[0].ok = c[1].ok = c[3].ok = c[4].ok = 0;
	assert_int_equal(conv_pick_ranked(c, n, 64 * MIB, GPU_TF32), -1);
	assert_int_equal(conv_pick_ranked(c, 0, 64 * MIB, GPU_FP32), -1);
}

static void test_search_workspace(void **state)
{
	const size_t need[] = { 0, 100, 5000, (size_t)1 << 40, 5000, 64 };
	int n = (int)(sizeof need / sizeof need[0]), steps = 0;
	size_t ws, tried[8];

	(void)state;
	assert_int_equal(conv_ws_below(need, n, (size_t)1 << 30), 5000);
	assert_int_equal(conv_ws_below(need, n, (size_t)1 << 40), (size_t)1 << 40);
	assert_int_equal(conv_ws_below(need, n, 4999), 100);
	assert_int_equal(conv_ws_below(need, n, 63), 0);
	assert_int_equal(conv_ws_below(need, 0, 1000), 0);
	/* an allocation that keeps failing walks down every distinct need
	 * within the limit to none */
	for (ws = conv_ws_below(need, n, (size_t)1 << 30); ws; ws = conv_ws_below(need, n, ws - 1))
		tried[steps++] = ws;
	assert_int_equal(steps, 3);
	assert_true(tried[0] == 5000 && tried[1] == 100 && tried[2] == 64);
}

static void test_verbose_line(void **state)
{
	struct conv_key k = key(64, 256, 128, GPU_FP32);
	struct conv_cand c = cand(1, 1, 0.4125f, 5 * MIB / 4, 1, CONV_MATH_FMA);
	char line[512];

	(void)state;
	k.h = k.w = 56, k.r = k.s = 1, k.stride_h = k.stride_w = 2, k.pad_h = k.pad_w = 0;
	conv_line(line, sizeof line, &k, CONV_BWD_DATA, "ALGO_1", &c, 5, 6, NULL);
	assert_string_equal(line, "conv n=64 c=256 h=56 w=56 k=128 r=1 s=1 stride=2x2 pad=0x0 "
				  "dilation=1x1 groups=1 fp32, backward data: ALGO_1 (fma, "
				  "deterministic) 0.412 ms, workspace 1.25 MiB; 5 of 6 ran");
	k.precision = GPU_TF32;
	c = cand(0, 1, 2.0f, 0, 0, CONV_MATH_TF32);
	conv_line(line, sizeof line, &k, CONV_BWD_FILTER, "ALGO_0", &c, 7, 7, NULL);
	assert_non_null(strstr(line, " tf32, backward filter: ALGO_0 (tf32, not deterministic) "
				     "2.000 ms, no workspace; 7 of 7 ran"));
	/* the heuristics' choice, untimed, and why the search gave none */
	c = cand(1, 1, -1.0f, 0, 1, CONV_MATH_FMA);
	k.precision = GPU_FP32;
	conv_line(line, sizeof line, &k, CONV_FWD, "IMPLICIT_PRECOMP_GEMM", &c, 6, 8,
		  "the search failed (CUDNN_STATUS_NOT_SUPPORTED)");
	assert_non_null(strstr(line, " fp32, forward: IMPLICIT_PRECOMP_GEMM (fma, deterministic) "
				     "not timed, no workspace; cuDNN's heuristic choice: the search "
				     "failed (CUDNN_STATUS_NOT_SUPPORTED)"));
	c.ms = NAN;
	conv_line(line, sizeof line, &k, CONV_FWD, "GEMM", &c, 1, 1, "x");
	assert_non_null(strstr(line, "not timed"));
	c.ms = 2.0f;
	assert_string_equal(conv_dir_name(CONV_FWD), "forward");
	/* a short buffer is cut, not overrun */
	assert_true(conv_line(line, 16, &k, CONV_FWD, "GEMM", &c, 1, 8, NULL) > 16);
	assert_int_equal(strlen(line), 15);
}

static void test_precision(void **state)
{
	enum gpu_prec p = NGPU_PRECS;
	struct gpu_math m;
	const char *bad[] = { "fp16", "FP32", "", "tf32 ", "mixed", NULL };

	(void)state;
	assert_int_equal(gpu_prec_parse("fp32", &p), AP_OK);
	assert_int_equal(p, GPU_FP32);
	assert_int_equal(gpu_prec_parse("tf32", &p), AP_OK);
	assert_int_equal(p, GPU_TF32);
	ap_err_quiet(1);
	for (size_t q = 0; q < sizeof bad / sizeof bad[0]; q++) {
		p = GPU_TF32;
		assert_int_equal(gpu_prec_parse(bad[q], &p), AP_EINPUT);
		assert_int_equal(p, GPU_TF32);
		assert_non_null(strstr(ap_last_error(), "expected fp32 or tf32"));
	}
	ap_err_quiet(0);
	assert_string_equal(gpu_prec_name(GPU_FP32), "fp32");
	assert_string_equal(gpu_prec_name(GPU_TF32), "tf32");
	assert_string_equal(gpu_prec_name(NGPU_PRECS), "?");
	/* fp32: cuBLAS's default math and cuDNN's FMA; tf32: TF32 in both */
	m = gpu_prec_math(GPU_FP32);
	assert_true(!m.blas_tf32 && !m.dnn_tf32);
	m = gpu_prec_math(GPU_TF32);
	assert_true(m.blas_tf32 && m.dnn_tf32);
	m = gpu_prec_math(NGPU_PRECS);
	assert_true(!m.blas_tf32 && !m.dnn_tf32);
}

static void test_gpu_opts(void **state)
{
	(void)state;
	assert_int_equal(gpu_opt_prec(), GPU_FP32);
	assert_null(gpu_opt_verbose());
	gpu_opts_set(GPU_TF32, stderr);
	assert_int_equal(gpu_opt_prec(), GPU_TF32);
	assert_ptr_equal(gpu_opt_verbose(), stderr);
	gpu_opts_set(GPU_FP32, NULL);
	assert_int_equal(gpu_opt_prec(), GPU_FP32);
	assert_null(gpu_opt_verbose());
}

/* run and profile: refused with exit 2 before anything is read or run */
static void test_cli(void **state)
{
	static const struct {
		const char *args, *says;
	} cases[] = {
		{ "run no-such-plan.json --precision fp16", "--precision: expected fp32 or tf32, got 'fp16'" },
		{ "run no-such-plan.json --precision=TF32 --backend cuda", "expected fp32 or tf32" },
		{ "run no-such-plan.json --precision tf32", "--precision: tf32 needs --backend cuda" },
		{ "run no-such-plan.json --precision tf32 --backend cpu", "tf32 needs --backend cuda" },
		{ "profile -d cpu -m mlp -o x --precision tf32", "--precision: tf32 needs -d cuda" },
		{ "profile --analytic -d h100 -m mlp -o x --precision tf32", "tf32 needs -d cuda" },
		{ "profile -d cuda -m mlp -o x --precision half", "expected fp32 or tf32, got 'half'" },
	};
	char out[4096];

	(void)state;
	for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++) {
		int st = test_autopar(cases[q].args, 0, out, sizeof out);

		if (st != 2 || !strstr(out, cases[q].says))
			fail_msg("'autopar %s': exit %d, expected 2 and '%s'; stderr: %s",
				 cases[q].args, st, cases[q].says, out);
	}
}

/* fp32 on the CPU backend is what it always ran; --verbose has nothing
 * to tell there */
static void test_cli_cpu_fp32(void **state)
{
	char out[8192], cmd[1024], plan[512];

	(void)state;
	snprintf(plan, sizeof plan, "%s/mlp.json", tmp_dir());
	snprintf(cmd, sizeof cmd, "plan -m mlp -c cpu-1x2 -P single -o '%s'", plan);
	assert_int_equal(test_autopar(cmd, 1, out, sizeof out), 0);
	snprintf(cmd, sizeof cmd, "run '%s' --steps 1 --warmup 0 --precision fp32 --verbose", plan);
	if (test_autopar(cmd, 1, out, sizeof out) != 0)
		fail_msg("autopar %s: %s", cmd, out);
	assert_null(strstr(out, "conv n="));
	assert_non_null(strstr(out, "backend cpu"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_pick_math),
		cmocka_unit_test(test_pick_ties),
		cmocka_unit_test(test_reported_math),
		cmocka_unit_test(test_pick_ranked),
		cmocka_unit_test(test_search_workspace),
		cmocka_unit_test(test_verbose_line),
		cmocka_unit_test(test_precision),
		cmocka_unit_test(test_gpu_opts),
		cmocka_unit_test(test_cli),
		cmocka_unit_test(test_cli_cpu_fp32),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
