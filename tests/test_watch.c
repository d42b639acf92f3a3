/*
 * The watchdog's records (watch.h) as the launcher and a rank see them: a
 * rank's record appears in the job's directory whole, and the launcher
 * supervising a job leaves alone a record file shorter than a record
 * instead of dying of SIGBUS when it reads past the file's end, and reads
 * the record of a rank that started and ended between two of its looks.
 */
#include "testutil.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "watch.h"

static void job_dir(char *dir, size_t len)
{
	snprintf(dir, len, "%s/job.XXXXXX", tmp_dir());
	assert_non_null(mkdtemp(dir));
}

/* A launcher that finds a rank's record file empty (a rank that has
 * opened it and not yet sized it, in a version that did so in place)
 * treats the rank as not started: the job ends with exit 1 naming it. */
static void test_short_record(void **state)
{
	char dir[1024], rec[1100];
	struct stat sb;
	FILE *f;
	pid_t pid;

	(void)state;
	job_dir(dir, sizeof dir);
	snprintf(rec, sizeof rec, "%s/rank.0", dir);
	f = fopen(rec, "w");
	assert_non_null(f);
	fclose(f);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		usleep(300000);
		_exit(0);
	}
	assert_int_equal(watch_supervise(pid, 1, -1, dir), 1);
	assert_int_not_equal(stat(dir, &sb), 0); /* the job's directory is gone */
}

/* A rank's record is published whole: full size, no temporary left. */
static void test_record_whole(void **state)
{
	char dir[1024], path[1100];
	struct stat sb;

	(void)state;
	job_dir(dir, sizeof dir);
	assert_int_equal(setenv(WATCH_ENV, dir, 1), 0);
	assert_int_equal(watch_rank_start(3), 0);
	snprintf(path, sizeof path, "%s/rank.3", dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_true(sb.st_size >= 6 * 8 + 2 * 4);
	snprintf(path, sizeof path, "%s/rank.3.new", dir);
	assert_int_not_equal(stat(path, &sb), 0);
	watch_rank_end(1);
	watch_remove(dir);
	unsetenv(WATCH_ENV);
}

/* A job so short that it started and ended between two looks of the
 * launcher (here: ended before the first) ends well, not with "rank 0 did
 * not start". */
static void test_quick_job(void **state)
{
	char dir[1024];
	siginfo_t info;
	pid_t pid;

	(void)state;
	job_dir(dir, sizeof dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setenv(WATCH_ENV, dir, 1) || watch_rank_start(0))
			_exit(3);
		watch_rank_end(1);
		_exit(0);
	}
	/* ended, not yet waited for: the launcher's first look finds it so */
	assert_int_equal(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0);
	assert_int_equal(watch_supervise(pid, 1, -1, dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_record),
		/* before test_record_whole, which makes this process a rank */
		cmocka_unit_test(test_quick_job),
		cmocka_unit_test(test_record_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
