/*
 * The layout rules of docs/architecture.md hold on the tree and the build
 * this test belongs to (scripts/check-layout): core/ in its layers, every
 * header declaring the functions of at most two files, the include rules
 * between the folders, and no comment citing a document outside the
 * repository.  The build is the one the test binary sits in
 * (BUILD/tests/test_layout), so `make check-asan` checks its own objects.
 */
#include "testutil.h"

#include <libgen.h>

static char build_dir[1024];

static void test_layout(void **state)
{
	char cmd[1200], out[8192];

	(void)state;
	snprintf(cmd, sizeof cmd, "scripts/check-layout '%s' 2>&1", build_dir);
	if (test_shell(cmd, out, sizeof out) != 0)
		fail_msg("scripts/check-layout %s failed:\n%s", build_dir, out);
	print_message("%s", out);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
	};
	char self[1024];

	(void)argc;
	/* BUILD/tests/test_layout: BUILD is two levels up */
	snprintf(self, sizeof self, "%s", argv[0]);
	snprintf(build_dir, sizeof build_dir, "%s", dirname(dirname(self)));
	return cmocka_run_group_tests_name("layout", tests, NULL, NULL);
}
