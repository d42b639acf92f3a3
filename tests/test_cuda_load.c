/*
 * The CUDA parts load on first use (runtime/cuda_load.h): the binary
 * under test (AUTOPAR_BIN) links none of the CUDA libraries, so a command
 * that touches no GPU loads none; a GPU command whose shared object is
 * missing says so in one message and exits 2; where the object is there,
 * it loads (every symbol it needs from the binary bound) and the
 * backend's own start speaks.  In a build without CUDA the same commands
 * say "not built with CUDA".
 */
#include "testutil.h"

/* Runs the shell command (printf-style) with stdout and stderr into out
 * (len bytes); returns its exit status (128 + signal when killed). */
__attribute__((format(printf, 3, 4)))
static int sh(char *out, size_t len, const char *fmt, ...)
{
	char cmd[4096], path[600];
	va_list ap;
	int st, n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	snprintf(path, sizeof path, "%s/sh.out", tmp_dir());
	snprintf(cmd + n, sizeof cmd - (size_t)n, " >'%s' 2>&1", path);
	st = system(cmd);
	test_read_file(path, out, len);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A one-device plan to run, made once. */
static const char *plan(void)
{
	static char path[512];
	char out[4096];

	if (!path[0]) {
		snprintf(path, sizeof path, "%s/mlp.json", tmp_dir());
		assert_int_equal(sh(out, sizeof out, "'%s' plan -m mlp -c cpu-1x2 -P single -o '%s'",
				    test_bin(), path), 0);
	}
	return path;
}

static void test_links_no_cuda_library(void **state)
{
	static const char *const libs[] = { "libcudart", "libcublas", "libcublasLt",
					    "libcudnn", "libnccl" };
	char out[16384];

	(void)state;
	if (sh(out, sizeof out, "ldd '%s'", test_bin()) != 0) {
		print_message("skipped: ldd cannot list the binary's libraries\n");
		skip();
	}
	for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
		if (strstr(out, libs[i]))
			fail_msg("the binary links %s:\n%s", libs[i], out);
}

/* The message of a GPU command without the object, under subject who. */
static void expect_missing(const char *out, const char *who)
{
	char subject[32];

	snprintf(subject, sizeof subject, "%s: ", who);
	if (!strstr(out, subject) ||
	    (!strstr(out, "libautopar-cuda.so") && !strstr(out, "not built with CUDA")))
		fail_msg("expected '%s' and why it has no CUDA object, got:\n%s", subject, out);
	assert_null(strstr(out, "Segmentation"));
}

static void test_object_missing(void **state)
{
	char out[16384], env[600];

	(void)state;
	snprintf(env, sizeof env, "%s/nowhere/libautopar-cuda.so", tmp_dir());
	assert_int_equal(sh(out, sizeof out, "AUTOPAR_CUDA_LIB='%s' '%s' version", env, test_bin()),
			 0);
	assert_non_null(strstr(out, "cuda: "));
	assert_int_equal(sh(out, sizeof out, "AUTOPAR_CUDA_LIB='%s' '%s' run '%s' --backend cuda",
			    env, test_bin(), plan()), 2);
	expect_missing(out, "cuda");
	assert_int_equal(sh(out, sizeof out, "AUTOPAR_CUDA_LIB='%s' '%s' profile -d cuda -m mlp -o '%s/p'",
			    env, test_bin(), tmp_dir()), 2);
	assert_int_equal(sh(out, sizeof out, "AUTOPAR_CUDA_LIB='%s' '%s' profile --comm -o '%s/c'",
			    env, test_bin(), tmp_dir()), 2);
	expect_missing(out, "--comm");
}

/* The binary alone in a directory finds no object beside it (unless one
 * is installed, which version shows). */
static void test_binary_alone(void **state)
{
	char out[16384];

	(void)state;
	assert_int_equal(sh(out, sizeof out, "mkdir -p '%s/alone' && cp '%s' '%s/alone/autopar'",
			    tmp_dir(), test_bin(), tmp_dir()), 0);
	assert_int_equal(sh(out, sizeof out, "env -u AUTOPAR_CUDA_LIB '%s/alone/autopar' version",
			    tmp_dir()), 0);
	if (strstr(out, "/libautopar-cuda.so'")) {
		print_message("skipped: an installed libautopar-cuda.so is found: %s\n", out);
		skip();
	}
	assert_int_equal(sh(out, sizeof out, "env -u AUTOPAR_CUDA_LIB '%s/alone/autopar' run '%s' "
			    "--backend cuda", tmp_dir(), plan()), 2);
	expect_missing(out, "cuda");
}

static void test_object_loads(void **state)
{
	char out[16384];
	int st;

	(void)state;
	assert_int_equal(sh(out, sizeof out, "env -u AUTOPAR_CUDA_LIB '%s' version", test_bin()), 0);
	if (strstr(out, "not built with CUDA") || strstr(out, "cannot find")) {
		print_message("skipped: no CUDA object beside the binary\n");
		skip();
	}
	st = sh(out, sizeof out, "env -u AUTOPAR_CUDA_LIB '%s' run '%s' --backend cuda --steps 1",
		test_bin(), plan());
	if (strstr(out, "cannot load") || strstr(out, "cannot use") || strstr(out, "cannot find"))
		fail_msg("the CUDA object did not load:\n%s", out);
	assert_null(strstr(out, "Segmentation"));
	if (st != 0) {
		assert_non_null(strstr(out, "cuda"));
		print_message("the object loaded; the backend says (no GPU here?): %s", out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_links_no_cuda_library),
		cmocka_unit_test(test_object_missing),
		cmocka_unit_test(test_binary_alone),
		cmocka_unit_test(test_object_loads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
