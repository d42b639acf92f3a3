/*
 * Output files (core/util/output.h): a regular file is replaced whole, a
 * device, FIFO or symbolic link is not replaced, an interrupt leaves no
 * temporary behind, and a command's paths are checked before any work.
 */
#include "testutil.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "util/err.h"
#include "util/output.h"

static int put_hello(FILE *f, void *ctx)
{
	(void)ctx;
	fputs("hello\n", f);
	return ferror(f) ? AP_EFAIL : AP_OK;
}

/* Writes half, then is interrupted as by Ctrl-C. */
static int put_interrupted(FILE *f, void *ctx)
{
	(void)ctx;
	fputs("half", f);
	fflush(f);
	raise(SIGINT);
	return AP_OK;
}

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmp_dir(), name);
}

/* Files of the temporary directory whose name has ".tmp." in it. */
static int leftovers(void)
{
	DIR *d = opendir(tmp_dir());
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strstr(e->d_name, ".tmp.") != NULL;
	closedir(d);
	return n;
}

static void test_regular_replaced(void **state)
{
	char p[600], text[64];
	struct stat st;

	(void)state;
	path_of(p, sizeof p, "reg.txt");
	assert_non_null(tmp_write("reg.txt", "old old old\n"));
	assert_int_equal(chmod(p, 0640), 0);
	assert_int_equal(write_atomic(p, put_hello, NULL), AP_OK);
	test_read_file(p, text, sizeof text);
	assert_string_equal(text, "hello\n");
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640); /* it keeps its permissions */
	assert_int_equal(leftovers(), 0);
}

/* A link is followed: its target gets the content, the link stays. */
static void test_symlink_kept(void **state)
{
	char link[600], target[600], text[64];
	struct stat st;

	(void)state;
	path_of(link, sizeof link, "link.txt");
	path_of(target, sizeof target, "target.txt");
	assert_non_null(tmp_write("target.txt", "old\n"));
	unlink(link);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(write_atomic(link, put_hello, NULL), AP_OK);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	test_read_file(target, text, sizeof text);
	assert_string_equal(text, "hello\n");
}

/* A FIFO is written through, not replaced by a regular file. */
static void test_fifo_in_place(void **state)
{
	char fifo[600], got[600], cmd[1400], text[64];
	struct stat st;

	(void)state;
	path_of(fifo, sizeof fifo, "out.fifo");
	path_of(got, sizeof got, "fifo.got");
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	snprintf(cmd, sizeof cmd, "cat '%s' > '%s' &", fifo, got);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(write_atomic(fifo, put_hello, NULL), AP_OK);
	assert_int_equal(stat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	for (int i = 0; i < 100 && test_read_file(got, text, sizeof text) < 6; i++)
		usleep(20000);
	assert_string_equal(text, "hello\n");
	/* and /dev/null stays a device */
	assert_int_equal(write_atomic("/dev/null", put_hello, NULL), AP_OK);
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
}

/* Ctrl-C in the middle of a write ends the process as it would, and leaves
 * neither the temporary nor a changed file. */
static void test_interrupt_no_leftover(void **state)
{
	char p[600], text[64];
	pid_t pid;
	int ws;

	(void)state;
	path_of(p, sizeof p, "intr.txt");
	assert_non_null(tmp_write("intr.txt", "before\n"));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		write_atomic(p, put_interrupted, NULL);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFSIGNALED(ws));
	assert_int_equal(WTERMSIG(ws), SIGINT);
	assert_int_equal(leftovers(), 0);
	test_read_file(p, text, sizeof text);
	assert_string_equal(text, "before\n");
}

static void test_paths_check(void **state)
{
	char in[600], out[600], other[600];

	(void)state;
	path_of(in, sizeof in, "in.json");
	path_of(out, sizeof out, "fresh.json");
	snprintf(other, sizeof other, "%s/../%s/fresh.json", tmp_dir(),
		 strrchr(tmp_dir(), '/') + 1);
	assert_non_null(tmp_write("in.json", "{}\n"));
	ap_err_quiet(1);
	/* fine: distinct files, devices shared, a zoo name that is no file */
	assert_int_equal(io_paths_check((const struct io_path[]){
		{ "PLAN", in, 0 }, { "-o", out, 1 }, { "--trace", "/dev/null", 1 },
		{ "--timeline", "/dev/null", 1 }, { "-m", "mlp", 0 }, { "--dump", NULL, 1 } }, 6),
		AP_OK);
	/* the input */
	assert_int_equal(io_paths_check((const struct io_path[]){
		{ "PLAN", in, 0 }, { "--trace", in, 1 } }, 2), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "is the input PLAN"));
	/* two outputs on one new file, named two ways */
	assert_int_equal(io_paths_check((const struct io_path[]){
		{ "-o", out, 1 }, { "--loss-csv", other, 1 } }, 2), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "also the output of -o"));
	assert_int_equal(io_paths_check((const struct io_path[]){ { "-o", "", 1 } }, 1),
			 AP_EINPUT);
	assert_string_equal(ap_last_error(), "-o: an empty path (expected the path of a file)");
	assert_int_equal(io_paths_check((const struct io_path[]){ { "-o", tmp_dir(), 1 } }, 1),
			 AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "is a directory"));
	ap_err_quiet(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regular_replaced),
		cmocka_unit_test(test_symlink_kept),
		cmocka_unit_test(test_fifo_in_place),
		cmocka_unit_test(test_interrupt_no_leftover),
		cmocka_unit_test(test_paths_check),
	};

	return cmocka_run_group_tests_name("output", tests, NULL, NULL);
}
