/*
 * `autopar models import` on hard input (models/FORMAT.md, "Importing from
 * ONNX"): the graphs tests/onnx/make-cases writes (a cycle, a value
 * written twice, a Conv weight that does not fit, a node named `loss`, a
 * Concat too wide for a model line, 40,000 nodes with torch's scoped
 * names), files that are no ONNX file (empty, a device, a FIFO, a
 * directory), model names that are no plain name, a converter killed by a
 * signal or interrupted with the command, and the fuzzing inputs of
 * tests/fuzz/corpus/onnx and tests/fuzz/regress/onnx.  Each is imported,
 * or refused with exit 2, one line naming the file and the node, and
 * nothing written.  Skips where the onnx Python package is missing.
 */
#include "onnxtest.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>

#include "model/model_io.h"
#include "util/datadir.h"

/* Runs tests/onnx/make-cases into tmp_dir()/DIR with its arguments. */
static void make_cases(const char *dir, const char *args)
{
	char cmd[2048], said[4096];

	snprintf(cmd, sizeof cmd, "'%s' '%s/tests/onnx/make-cases' '%s/%s' %s 2>&1",
		 python_path(), getenv("AUTOPAR_DATA"), tmp_dir(), dir, args);
	if (test_shell(cmd, said, sizeof said) != 0)
		fail_msg("tests/onnx/make-cases: %s", said);
}

/* The path of case NAME of make-cases (written on the first call). */
static const char *case_path(const char *name)
{
	static char paths[4][600];
	static int slot, made;
	char *p = paths[slot++ % 4];

	if (!made) {
		make_cases("cases", "");
		made = 1;
	}
	snprintf(p, 600, "%s/cases/%s.onnx", tmp_dir(), name);
	return p;
}

/* out holds one refusal: a single line "PATH: MESSAGE..." */
static void assert_refusal(const char *path, const char *message)
{
	size_t n = strlen(path);

	if (strncmp(out, path, n) != 0 || strncmp(out + n, ": ", 2) != 0 ||
	    strncmp(out + n + 2, message, strlen(message)) != 0)
		fail_msg("expected '%s: %s...', found: %s", path, message, out);
	if (strchr(out, '\n') != out + strlen(out) - 1)
		fail_msg("expected one line: %s", out);
}

/* Invalid graphs are refused naming the node (or the opset, or the file),
 * not as a node with no autopar operator or an error of the converter;
 * what ONNX allows but a model line cannot hold says so; a size ONNX holds
 * but the model format does not names the node, not a line of the text
 * converted from it. */
static void test_refused(void **state)
{
	static const struct {
		const char *name, *message;
	} cases[] = {
		{ "cycle", "node 'r1' (Relu): on a cycle: its input 'b' comes from node 'r2' (Relu)" },
		{ "self_loop", "node 'acc' (Add): reads its own output 'a' (a cycle)" },
		{ "no_producer", "node 'add' (Add): input 'nowhere' is not a graph input, an "
				 "initializer or the output of a node" },
		{ "unsorted", "node 'second' (Relu): input 'a' comes from node 'first' (Relu), "
			      "which follows it" },
		{ "two_writers", "node 'w2' (Tanh): writes 'y', which node 'w1' (Relu) writes too" },
		{ "concat_axis", "node 'cat' (Concat): " },
		{ "conv_channels", "node 'conv' (Conv): a weight (8, 5, 3, 3) for 3 input channels" },
		{ "string_input", "node 'r' (Relu): " },
		{ "reshape_many", "node 'rs' (Reshape): " },
		{ "opset_99999", "opset 99999 of the default ONNX domain: expected 1 to " },
		{ "no_nodes", "expected an ONNX model (a graph of nodes), found no nodes" },
		{ "concat_wide", "node 'cat' (Concat): 1000 inputs, which make a line of 1003 tokens" },
		{ "huge_linear", "node 'fc' (Gemm): out=" },
	};
	char model[600];

	(void)state;
	SKIP_WITHOUT_ONNX();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *path = case_path(cases[i].name);

		if (import_file(path, cases[i].name, model, sizeof model) != 2)
			fail_msg("%s: expected exit 2: %s", cases[i].name, out);
		assert_refusal(path, cases[i].message);
		assert_int_not_equal(access(model, F_OK), 0);
	}
}

/* A node or an input named `loss` is imported: the loss appended after
 * the output takes a name not taken, loss_2. */
static void test_loss_named(void **state)
{
	static const char *const names[] = { "loss_node", "loss_input" };
	char model[600];
	struct graph g;

	(void)state;
	SKIP_WITHOUT_ONNX();
	for (int i = 0; i < 2; i++) {
		if (import_file(case_path(names[i]), names[i], model, sizeof model))
			fail_msg("%s: %s", names[i], out);
		if (model_load(model, 0, &g) != AP_OK)
			fail_msg("%s: %s", names[i], ap_last_error());
		assert_int_equal(g.ops[g.nops - 1].kind, OP_LOSS);
		assert_string_equal(g.ops[g.nops - 1].name, "loss_2");
		assert_true(graph_find(&g, "loss") >= 0);
		graph_release(&g);
	}
}

/* 40,000 nodes named as torch names nn.Sequential's layers import, one
 * operator each, in well under a minute: each node's name was made after
 * a scan of every node (20,000 took 48 s, 40,000 over three minutes); now
 * a binary search (40,000: about 2 s). */
static void test_scoped_chain(void **state)
{
	char chain[600], model[600], cmd[2048];
	struct graph g;
	int st;

	(void)state;
	SKIP_WITHOUT_ONNX();
	make_cases("chain", "40000");
	snprintf(chain, sizeof chain, "%s/chain/chain.onnx", tmp_dir());
	snprintf(model, sizeof model, "%s/chain.model", tmp_dir());
	snprintf(cmd, sizeof cmd, "timeout 60 '%s' models import '%s' -o '%s' 2>&1", test_bin(),
		 chain, model);
	st = test_shell(cmd, out, sizeof out);
	if (st == 124)
		fail_msg("the import of 40,000 nodes took over 60 s");
	if (st != 0)
		fail_msg("exit %d: %s", st, out);
	if (model_load(model, 0, &g) != AP_OK)
		fail_msg("%s", ap_last_error());
	assert_int_equal(g.nops, 40002); /* the input, 40,000 relu, the loss */
	assert_true(graph_find(&g, "layers.39999.act") >= 0);
	graph_release(&g);
}

/* What is no ONNX file is refused before the converter reads it: a device
 * or a FIFO would be read until memory ran out, or forever. */
static void test_not_a_file(void **state)
{
	char fifo[600], empty[600], cmd[2048];
	const char *paths[] = { "/dev/zero", fifo, empty, tmp_dir() };
	const char *messages[] = { "not a regular file", "not a regular file", "is empty",
				   "is a directory" };

	(void)state;
	snprintf(fifo, sizeof fifo, "%s/fifo.onnx", tmp_dir());
	snprintf(empty, sizeof empty, "%s", tmp_write("empty.onnx", ""));
	assert_true(mkfifo(fifo, 0600) == 0 || errno == EEXIST);
	for (int i = 0; i < 4; i++) {
		snprintf(cmd, sizeof cmd, "timeout 30 '%s' models import '%s' -o '%s/x.model' 2>&1",
			 test_bin(), paths[i], tmp_dir());
		if (test_shell(cmd, out, sizeof out) != 2)
			fail_msg("%s: expected exit 2: %s", paths[i], out);
		assert_refusal(paths[i], messages[i]);
	}
}

/* A model name is a plain name: one with a newline would write text of
 * its own into the model, and one from -o that is not blames -o, not the
 * ONNX file. */
static void test_names(void **state)
{
	char args[2048], model[600];

	(void)state;
	SKIP_WITHOUT_ONNX();
	snprintf(model, sizeof model, "%s/named.model", tmp_dir());
	snprintf(args, sizeof args, "models import '%s' -o '%s' --name \"$(printf 'a\\nbatch 1')\"",
		 case_path("loss_node"), model);
	assert_int_equal(test_autopar(args, 0, out, sizeof out), 2);
	assert_refusal("models import", "--name: expected a model name of at most 63 letters");
	assert_int_not_equal(access(model, F_OK), 0);
	snprintf(model, sizeof model, "%s/my net.model", tmp_dir());
	snprintf(args, sizeof args, "models import '%s' -o '%s'", case_path("loss_node"), model);
	assert_int_equal(test_autopar(args, 0, out, sizeof out), 2);
	assert_refusal(model, "the file's name before .model is the model's name");
	assert_int_not_equal(access(model, F_OK), 0);
	/* given, the name is the model's */
	snprintf(args, sizeof args, "models import '%s' -o '%s' --name ok.v2", case_path("loss_node"),
		 model);
	assert_int_equal(test_autopar(args, 0, out, sizeof out), 0);
	test_read_file(model, out, sizeof out);
	assert_non_null(strstr(out, "\nmodel ok.v2\n"));
}

/* A stand-in for python3 (AUTOPAR_PYTHON): a shell script of body. */
static const char *fake_python(const char *body)
{
	static char path[600];
	char text[2048];

	snprintf(text, sizeof text, "#!/bin/sh\n%s\n", body);
	snprintf(path, sizeof path, "%s", tmp_write("fake-python", text));
	assert_int_equal(chmod(path, 0755), 0);
	return path;
}

/* A converter killed by a signal is said to be so, with the signal. */
static void test_converter_killed(void **state)
{
	char model[600], onnx[600];
	int st;

	(void)state;
	snprintf(onnx, sizeof onnx, "%s/tests/onnx/mlp_small.onnx", getenv("AUTOPAR_DATA"));
	setenv("AUTOPAR_PYTHON", fake_python("kill -SEGV $$"), 1);
	st = import_file(onnx, "killed", model, sizeof model);
	unsetenv("AUTOPAR_PYTHON");
	assert_int_equal(st, 1);
	if (!strstr(out, "was killed by signal 11 ("))
		fail_msg("unexpected message: %s", out);
	assert_int_not_equal(access(model, F_OK), 0);
}

/* Whether pid is a process that has not ended (a zombie has). */
static int alive(pid_t pid)
{
	char path[64], stat_line[256] = "";
	FILE *f;

	if (kill(pid, 0) != 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(stat_line, sizeof stat_line, f))
		stat_line[0] = 0;
	fclose(f);
	return !strstr(stat_line, ") Z ");
}

/* The pid the fake converter wrote to tmp_dir()/NAME, 0 before; then
 * the file is removed, so that the next test does not read it. */
static pid_t read_pid(const char *name)
{
	char path[600], text[32] = "";

	snprintf(path, sizeof path, "%s/%s", tmp_dir(), name);
	if (access(path, R_OK) != 0)
		return 0;
	test_read_file(path, text, sizeof text);
	remove(path);
	return (pid_t)atol(text);
}

/* SIGTERM or SIGINT to `models import` ends its converter, and what that
 * started, before the command ends with 128 + the signal: the converter
 * here runs until it is killed, as a long conversion would. */
static void interrupted(int sig)
{
	char body[1024], model[600], errf[600], onnx[600];
	const char *python;
	pid_t pid, conv = 0, child = 0;
	int ws = 0;

	snprintf(body, sizeof body,
		 "cd '%s' || exit 1\n"
		 "echo $$ >conv.pid.tmp; sleep 1000 & echo $! >child.pid.tmp\n"
		 "mv conv.pid.tmp conv.pid; mv child.pid.tmp child.pid\n"
		 "while :; do :; done", tmp_dir());
	python = fake_python(body);
	snprintf(model, sizeof model, "%s/intr.model", tmp_dir());
	snprintf(errf, sizeof errf, "%s/intr.err", tmp_dir());
	snprintf(onnx, sizeof onnx, "%s/tests/onnx/mlp_small.onnx", getenv("AUTOPAR_DATA"));
	remove(model);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("AUTOPAR_PYTHON", python, 1);
		if (!freopen(errf, "w", stderr))
			_exit(126);
		signal(sig, SIG_DFL);
		execl(test_bin(), "autopar", "models", "import", onnx, "-o", model, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500 && !(conv = read_pid("conv.pid")); i++)
		usleep(20000);
	for (int i = 0; i < 500 && !(child = read_pid("child.pid")); i++)
		usleep(20000);
	assert_true(conv > 0 && child > 0);
	assert_int_equal(kill(pid, sig), 0);
	for (int i = 0; i < 1000 && waitpid(pid, &ws, WNOHANG) == 0; i++)
		usleep(20000);
	if (alive(pid)) {
		kill(pid, SIGKILL);
		waitpid(pid, &ws, 0);
		fail_msg("models import still running 20 s after signal %d", sig);
	}
	for (int i = 0; i < 250 && (alive(conv) || alive(child)); i++)
		usleep(20000);
	if (alive(conv) || alive(child)) {
		kill(conv, SIGKILL);
		kill(child, SIGKILL);
		fail_msg("the converter (%s) outlived models import", alive(conv) ? "itself" :
				"a process it started");
	}
	assert_true(WIFEXITED(ws));
	assert_int_equal(WEXITSTATUS(ws), 128 + sig);
	test_read_file(errf, out, sizeof out);
	assert_non_null(strstr(out, "models import: interrupted ("));
	assert_int_not_equal(access(model, F_OK), 0);
	remove(errf);
}

static void test_sigterm(void **state)
{
	(void)state;
	interrupted(SIGTERM);
}

static void test_sigint(void **state)
{
	(void)state;
	interrupted(SIGINT);
}

/* The files of tests/fuzz/DIR/onnx, imported: a seed (corpus) must be;
 * an input that once crashed the importer (regress) may be refused, with
 * one line that names it and nothing written. */
static void replay(const char *dir, int seed)
{
	char rel[256], path[1024], model[600];
	struct dirent **names;
	int n, st;

	snprintf(rel, sizeof rel, "tests/fuzz/%s/onnx", dir);
	n = scandir(datapath(path, sizeof path, rel), &names, NULL, alphasort);
	assert_true(n > 2);
	snprintf(model, sizeof model, "%s/replay.model", tmp_dir());
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			snprintf(path, sizeof path, "%s/%s/%s", getenv("AUTOPAR_DATA"), rel,
				 names[i]->d_name);
			remove(model);
			st = import_file(path, "replay", model, sizeof model);
			if (st == 0 && access(model, F_OK) != 0)
				fail_msg("%s: exit 0, nothing written", path);
			if (st != 0 && (seed || st != 2))
				fail_msg("%s: exit %d: %s", path, st, out);
			if (st == 2) {
				assert_refusal(path, "");
				assert_int_not_equal(access(model, F_OK), 0);
			}
		}
		free(names[i]);
	}
	free(names);
}

static void test_fuzz_inputs(void **state)
{
	(void)state;
	SKIP_WITHOUT_ONNX();
	replay("corpus", 1);
	replay("regress", 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_loss_named),
		cmocka_unit_test(test_scoped_chain),
		cmocka_unit_test(test_not_a_file),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_converter_killed),
		cmocka_unit_test(test_sigterm),
		cmocka_unit_test(test_sigint),
		cmocka_unit_test(test_fuzz_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
