/*
 * `autopar profile` into a directory that holds a profile: the rows and
 * the device row it has are kept byte for byte and only the shards it has
 * no measured row of are measured, which the closing lines count;
 * --remeasure measures every shard of the models and the device row
 * again; a malformed profile there is refused with file:line (exit 2)
 * and left as it was.  On the CPU backend, which every machine has.
 */
#include "runtest.h"

#include "hw/profile.h"

struct counts {
	int rows, measured, kept, fresh;
};

/* `autopar profile -d cpu ARGS -o dir` (batch 8, up to 2 shards), its
 * closing line's counts into *c and its output into out[len]. */
static void profile_cpu(const char *dir, const char *args, struct counts *c, char *out,
			size_t len)
{
	const char *s;

	if (rt_run(out, len, "profile -d cpu %s -b 8 --max-degree 2 -o '%s'", args, dir) != 0)
		fail_msg("profile %s: %s", args, out);
	s = strstr(out, " rows for cpu (");
	while (s && s > out && s[-1] != '\n')
		s--;
	assert_non_null(s);
	s = strchr(s, ':');
	assert_non_null(s);
	if (sscanf(s, ": %d rows for cpu (%d measured, %d kept, %d new,", &c->rows, &c->measured,
		   &c->kept, &c->fresh) != 4)
		fail_msg("profile %s: no counts in:\n%s", args, out);
}

/* dir/name's bytes, which must fit in out[len]. */
static void read_in(const char *dir, const char *name, char *out, size_t len)
{
	char path[1024];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_true(test_read_file(path, out, len) < len - 1);
}

/* Lines of text (a CSV's rows) with `what` in them. */
static int count_lines(const char *text, const char *what)
{
	int n = 0;

	for (const char *l = text; *l;) {
		const char *e = strchr(l, '\n');
		size_t k = e ? (size_t)(e - l) : strlen(l);

		n += memmem(l, k, what, strlen(what)) != NULL;
		l += k + (e != NULL);
	}
	return n;
}

/* Every line of old is a line of now. */
static void assert_lines_kept(const char *old, const char *now)
{
	for (const char *l = old; *l;) {
		const char *e = strchr(l, '\n');
		size_t k = e ? (size_t)(e - l) + 1 : strlen(l);
		char line[2048];
		const char *at;

		assert_true(k < sizeof line);
		memcpy(line, l, k);
		line[k] = 0;
		at = strstr(now, line);
		if (!at || (at != now && at[-1] != '\n'))
			fail_msg("row not kept as it was: %s", line);
		l += k;
	}
}

static char ops0[1 << 20], dev0[4096], ops1[1 << 20], dev1[4096], ops2[1 << 20];


static void test_extend(void **state)
{
	char dir[512], out[16384];
	struct counts a, b, c;

	(void)state;
	snprintf(dir, sizeof dir, "%s/cpu", tmp_dir());
	/* a new profile: everything measured, nothing kept */
	profile_cpu(dir, "-m mlp", &a, out, sizeof out);
	assert_true(a.measured > 0);
	assert_int_equal(a.kept, 0);
	assert_int_equal(a.fresh, a.rows);
	assert_non_null(strstr(out, "device row measured\n"));
	read_in(dir, "ops.csv", ops0, sizeof ops0);
	read_in(dir, "device.csv", dev0, sizeof dev0);
	assert_int_equal(count_lines(ops0, ",measured"), a.measured);

	/* another model: the old rows and device row as they were, only
	 * cnn_small's own shards measured */
	profile_cpu(dir, "-m cnn_small", &b, out, sizeof out);
	assert_non_null(strstr(out, "device row kept from the profile (--remeasure measures it again)"));
	read_in(dir, "ops.csv", ops1, sizeof ops1);
	read_in(dir, "device.csv", dev1, sizeof dev1);
	assert_string_equal(dev1, dev0);
	assert_lines_kept(ops0, ops1);
	assert_int_equal(b.kept, a.rows);
	assert_int_equal(b.rows, a.rows + b.fresh);
	assert_true(b.measured > 0);
	assert_int_equal(count_lines(ops1, ",measured"), a.measured + b.measured);
	assert_true(count_lines(ops1, "\"conv2d:") > 0);
	/* again: nothing left to measure */
	profile_cpu(dir, "-m cnn_small -m mlp", &c, out, sizeof out);
	assert_int_equal(c.measured, 0);
	assert_int_equal(c.kept, b.rows);
	assert_int_equal(c.fresh, 0);
	read_in(dir, "ops.csv", ops2, sizeof ops2);
	assert_string_equal(ops2, ops1);

	/* --remeasure: every measured row, once each, and the device row */
	profile_cpu(dir, "-m cnn_small -m mlp --remeasure", &c, out, sizeof out);
	assert_non_null(strstr(out, "device row measured again\n"));
	assert_int_equal(c.measured, a.measured + b.measured);
	assert_int_equal(c.rows, b.rows);
	/* what was not measured again was kept, or, an analytic row of the
	 * old device row, recomputed */
	assert_int_equal(c.kept + c.fresh + c.measured, c.rows);
	read_in(dir, "ops.csv", ops2, sizeof ops2);
	assert_int_equal(count_lines(ops2, ",measured"), c.measured);
}

/* A malformed profile in the directory: refused with its file and line,
 * before anything is measured, and left as it was. */
static void test_malformed(void **state)
{
	static const char bad[] = "signature,fwd_us,bwd_us,workspace_bytes,source\n"
				  "\"relu:n8c8>n8c8\",1,2,0,measured\n"
				  "\"relu:n4c8>n4c8\",x,2,0,measured\n";
	char dir[512], path[600], out[16384], ops[4096], dev[4096], ls[4096];
	FILE *f;

	(void)state;
	snprintf(dir, sizeof dir, "%s/bad", tmp_dir());
	assert_int_equal(rt_run(out, sizeof out, "profile --analytic -d cpu -m mlp -o '%s'", dir),
			 0);
	read_in(dir, "device.csv", dev, sizeof dev);
	snprintf(path, sizeof path, "%s/ops.csv", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(bad, f);
	fclose(f);
	assert_int_equal(rt_run(out, sizeof out, "profile -d cpu -m mlp -o '%s'", dir), 2);
	if (!strstr(out, "ops.csv:3: fwd_us 'x'"))
		fail_msg("expected 'ops.csv:3: fwd_us', got:\n%s", out);
	read_in(dir, "ops.csv", ops, sizeof ops);
	assert_string_equal(ops, bad);
	read_in(dir, "device.csv", ops, sizeof ops);
	assert_string_equal(ops, dev);
	snprintf(path, sizeof path, "ls -A '%s'", dir);
	assert_int_equal(test_shell(path, ls, sizeof ls), 0);
	assert_string_equal(ls, "device.csv\nops.csv\n");
	/* an analytic profile measures nothing to measure again */
	assert_int_equal(rt_run(out, sizeof out, "profile --analytic --remeasure -d cpu -m mlp -o '%s'",
				dir),
			 2);
	assert_non_null(strstr(out, "--remeasure"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extend),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
