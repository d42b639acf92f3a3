/*
 * Absurd sizes and numbers through the command line, as a user meets
 * them: clusters too large for their links to be counted in an int, models
 * whose memory totals pass 2^63, bandwidths, latencies and times that
 * make every cost inf, and batches past the documented 2^40.  Each is
 * refused with one message at the spec, file:line or JSON field that
 * holds it and exit code 2, or, where it is allowed, handled within
 * bounded memory with saturated totals instead of wrapped ones.  Runs the
 * built binary named by AUTOPAR_BIN (tests/testutil.h).
 */
#include "testutil.h"

#include <sys/resource.h>

/* Runs `autopar ARGS`, ARGS formatted with every %s the temporary
 * directory; returns the exit status, stderr (or both outputs) in out. */
static int run(const char *fmt, int both, char *out, size_t len)
{
	char args[2048], *a = args;
	const char *d = tmp_dir();

	for (const char *s = fmt; *s && a < args + sizeof args - 300; s++)
		if (s[0] == '%' && s[1] == 's')
			a += snprintf(a, 300, "%s", d), s++;
		else
			*a++ = *s;
	*a = 0;
	return test_autopar(args, both, out, len);
}

/* `autopar ARGS` exits 2 with one line on stderr that starts with where
 * (%s: the temporary directory) and holds what. */
static void refused(const char *args, const char *where, const char *what)
{
	char err[4096], want[600];
	int st = run(args, 0, err, sizeof err), lines = 0;

	for (const char *s = err; *s; s++)
		lines += *s == '\n';
	snprintf(want, sizeof want, where, tmp_dir());
	if (st != 2 || lines != 1 || strncmp(err, want, strlen(want)) || !strstr(err, what))
		fail_msg("%s: exit %d, %d lines: \"%s\", expected exit 2 and one line "
			 "\"%s...%s...\"", args, st, lines, err, want, what);
}

/* --- clusters ------------------------------------------------------------- */

/* A node of 65,536 devices has 2^32 directed pairs, past the int the
 * simulator's links were counted in (a crash); 1,024 on a node is the
 * most (docs/formats.md). */
static void test_cluster_too_large(void **state)
{
	char path[600], out[4096];

	(void)state;
	refused("plan -m mlp -c 1x65536:v100 -P dp -o %s/c.json",
		"autopar: cluster spec '1x65536:v100': ", "at most 1024");
	assert_int_equal(run("plan -m mlp -c 1x2:v100 -P dp -o %s/dp.json", 0, out, sizeof out), 0);
	refused("sim %s/dp.json -c 1x1025:v100", "", "devices per node '1025'");
	snprintf(path, sizeof path, "%s/c.json", tmp_dir());
	assert_int_not_equal(access(path, F_OK), 0);
}

/* The peak resident memory of `autopar ARGS` (kB) and its exit status,
 * from a child of its own so that no other command counts. */
static long peak_kb(const char *args, int *status)
{
	int fd[2];
	long kb = -1;
	pid_t pid;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char out[4096];
		struct rusage ru;
		int st = run(args, 0, out, sizeof out);

		getrusage(RUSAGE_CHILDREN, &ru);
		kb = ru.ru_maxrss;
		if (write(fd[1], &kb, sizeof kb) != (ssize_t)sizeof kb)
			_exit(255);
		_exit(st);
	}
	close(fd[1]);
	assert_int_equal(read(fd[0], &kb, sizeof kb), (ssize_t)sizeof kb);
	close(fd[0]);
	assert_int_equal(waitpid(pid, status, 0), pid);
	*status = WIFEXITED(*status) ? WEXITSTATUS(*status) : 128;
	return kb;
}

/* A large cluster that is allowed plans in megabytes: the simulator's
 * memory grows with the devices and the plan, not with devices x devices
 * per node or shards x devices (16 x 1,024 devices took 1.3 GB). */
static void test_large_cluster_memory(void **state)
{
	int st;
	long kb;

	(void)state;
	kb = peak_kb("plan -m mlp -b 16384 -c 16x1024:v100 -P dp -o %s/big.json", &st);
	assert_int_equal(st, 0);
	if (kb > 256 * 1024)
		fail_msg("16x1024:v100 took %ld MB", kb / 1024);
}

/* Links that make every transfer time inf, refused at the spec; and a
 * memory past 2^62 bytes, where totals could wrap. */
static void test_link_bounds(void **state)
{
	(void)state;
	refused("check -c '2x2:v100,intra=1e-300B/s'", "", "less than 1kB/s");
	refused("check -c '2x2:v100,inter_lat=1e300s'", "", "more than 1s");
	refused("check -c '2x2:v100,mem=4194305TiB'", "", "more than 2^62 bytes");
}

/* --- memory totals -------------------------------------------------------- */

/* Activations of 2^62 bytes each, within the reader's limits: their sum
 * passes 2^63, which the simulator holds at INT64_MAX (it wrapped, and a
 * peak of 2^62 was reported) and `models` shows as more than 2^63. */
static void test_memory_saturates(void **state)
{
	char out[8192], *hdr, *row, *h, *r;
	int col = -1;

	(void)state;
	assert_non_null(tmp_write("act.model", "model act\nbatch 1\n"
				  "input x c=1048576 h=1048576 w=1048576\n"
				  "relu r1 x\nrelu r2 r1\nrelu r3 r2\n"
				  "linear fc r3 out=1\nloss l fc\n"));
	assert_int_equal(run("models %s/act.model", 1, out, sizeof out), 0);
	if (!strstr(out, ">2^63"))
		fail_msg("models: %s", out);
	assert_int_equal(run("plan -m %s/act.model -c 1x1:v100 -P single -o %s/act.json", 0,
			     out, sizeof out), 0);
	assert_int_equal(run("sim -m %s/act.model %s/act.json --csv", 1, out, sizeof out), 0);
	/* the header, then the row: the column named peak_mem_bytes */
	hdr = out;
	row = strchr(out, '\n');
	assert_non_null(row);
	*row++ = 0;
	h = strtok(hdr, ",");
	for (int k = 0; h; k++, h = strtok(NULL, ","))
		if (strcmp(h, "peak_mem_bytes") == 0)
			col = k;
	assert_true(col >= 0);
	r = row;
	for (int k = 0; k < col; k++) {
		r = strchr(r, ',');
		assert_non_null(r);
		r++;
	}
	if (strtoll(r, NULL, 10) != INT64_MAX)
		fail_msg("peak_mem_bytes %lld, expected the saturated %lld",
			 strtoll(r, NULL, 10), (long long)INT64_MAX);
}

/* --- numbers of imported profiles ----------------------------------------- */

/* Piper's input with one number replaced: the bandwidth, mbsInBatch and
 * the first configuration's timePerSample. */
static void write_piper(const char *name, const char *bw, const char *mbs, const char *tps)
{
	char text[2048];

	snprintf(text, sizeof text,
		 "{\"maxDevices\": 4, \"maxMemoryPerDevice\": 1e9, \"bandwidth\": %s,\n"
		 " \"mbsInBatch\": %s,\n"
		 " \"nodes\": [\n"
		 "  {\"id\": 1, \"TMPCs\": {\"1\": [{\"id\": \"vanilla\", \"timePerSample\": %s,\n"
		 "   \"parameterSize\": 0, \"memoryUsageA\": 10, \"memoryUsageB\": 0,\n"
		 "   \"syncTimeFw\": {}, \"syncTimeBw\": {\"2\": 0}}]}},\n"
		 "  {\"id\": 2, \"TMPCs\": {\"1\": [{\"id\": \"vanilla\", \"timePerSample\": 0.2,\n"
		 "   \"parameterSize\": 1000, \"memoryUsageA\": 40, \"memoryUsageB\": 2000,\n"
		 "   \"syncTimeFw\": {\"1\": 0}, \"syncTimeBw\": {}}]}}],\n"
		 " \"edges\": [{\"sourceId\": 1, \"destId\": 2, \"communicationCost\": 400}]}\n",
		 bw, mbs, tps);
	assert_non_null(tmp_write(name, text));
}

/* Each refused at its JSON field, not later as a statistic, an output
 * file, "no partition fits" or the simulator out of memory. */
static void test_piper_numbers(void **state)
{
	char out[4096];

	(void)state;
	write_piper("ok.json", "2.5e10", "8", "0.3");
	assert_int_equal(run("plan -m %s/ok.json -c piper -P piper -o %s/ok-plan.json", 0, out,
			     sizeof out), 0);
	write_piper("tps.json", "2.5e10", "8", "1e308");
	refused("plan -m %s/tps.json -c piper -P piper -o %s/p.json",
		"%s/tps.json: nodes[0].TMPCs[\"1\"][0].timePerSample: ", "at most 1e6 seconds");
	write_piper("mbs.json", "2.5e10", "2147483647", "0.3");
	refused("plan -m %s/mbs.json -c piper -P piper -o %s/p.json", "%s/mbs.json: mbsInBatch: ",
		"at most 65536");
	write_piper("bw.json", "1e-308", "8", "0.3");
	refused("plan -m %s/bw.json -c piper -P piper -o %s/p.json", "%s/bw.json: bandwidth: ",
		"at least 1e3 bytes/s");
}

/* A PipeDream time past 10^9 ms, at its line. */
static void test_pipedream_times(void **state)
{
	(void)state;
	assert_non_null(tmp_write("pd.txt",
				  "node1 -- Input -- forward_compute_time=0.5, backward_compute_time=0.0, "
				  "activation_size=1024.0, parameter_size=0.0\n"
				  "node2 -- Linear(8, 8) -- forward_compute_time=1e12, "
				  "backward_compute_time=1.0, activation_size=1024.0, "
				  "parameter_size=256.0\n"
				  "\tnode1 -- node2\n"));
	refused("models %s/pd.txt", "%s/pd.txt:2: ", "forward_compute_time= with a non-negative "
		"number of at most 1e9 ms");
}

/* --- arguments ------------------------------------------------------------ */

/* -b N and -b N/dev are both at most 2^40 in all (models/FORMAT.md). */
static void test_batch_bounds(void **state)
{
	(void)state;
	refused("plan -m mlp -c 1x2:v100 -P dp -b 1099511627777 -o %s/b.json", "-b: ",
		"at most 2^40");
	refused("plan -m mlp -c 1x2:v100 -P dp -b 1099511627776/dev -o %s/b.json", "mlp: ",
		"is more than 2^40");
}

/* sim --repeat is at most 10,000 runs (2^31 - 1 ran for days). */
static void test_repeat_bound(void **state)
{
	char out[4096];

	(void)state;
	assert_int_equal(run("plan -m mlp -c 1x2:v100 -P dp -o %s/rp.json", 0, out, sizeof out), 0);
	refused("sim %s/rp.json --repeat 2147483647", "--repeat: ", "at most 10000");
	assert_int_equal(run("sim %s/rp.json --repeat 3", 0, out, sizeof out), 0);
}

/* --budget 0 is no limit to every planner: those that took it as no
 * time refused ("did not finish within its budget of 0 s") or gave up. */
static void test_budget_zero(void **state)
{
	static const char *const planners[] = { "ilp", "pipedream", "exhaustive", "mcmc", "piper" };
	char out[4096], args[512];

	(void)state;
	for (size_t k = 0; k < sizeof planners / sizeof planners[0]; k++) {
		snprintf(args, sizeof args, "plan -m mlp -c 1x4:v100 -P %s --budget 0 -o %%s/z.json",
			 planners[k]);
		if (run(args, 0, out, sizeof out) != 0)
			fail_msg("%s --budget 0: %s", planners[k], out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cluster_too_large),
		cmocka_unit_test(test_large_cluster_memory),
		cmocka_unit_test(test_link_bounds),
		cmocka_unit_test(test_memory_saturates),
		cmocka_unit_test(test_piper_numbers),
		cmocka_unit_test(test_pipedream_times),
		cmocka_unit_test(test_batch_bounds),
		cmocka_unit_test(test_budget_zero),
		cmocka_unit_test(test_repeat_bound),
	};

	return cmocka_run_group_tests_name("limits", tests, NULL, NULL);
}
