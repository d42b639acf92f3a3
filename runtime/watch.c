/*
 * The watchdog of `autopar run` (watch.h): the ranks' records and the
 * launcher that reads them.  A record is a file of the job's directory
 * mapped shared, written with lock-free atomics, so the launcher reads
 * whole values without locks and a rank's signal handler may write it.
 * Times are CLOCK_MONOTONIC microseconds, one clock for every process of
 * the machine (the launcher supervises only ranks it started here).
 */
#include "watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/err.h"

#define WHO "autopar run"
#define MAX_RANKS 4096

enum { RUNNING = 1, DONE, FAILED, SIGNALLED };

struct watch_rec {
	_Atomic int64_t pid;
	_Atomic int64_t beat_us;    /* renewed by the rank's heartbeat thread */
	_Atomic int64_t steps;
	_Atomic int64_t step_us;    /* when the last step ended, or the rank began */
	_Atomic int64_t slowest_us;
	_Atomic int64_t end_us;
	_Atomic int state, signo;
};

static struct watch_rec *mine;

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Maps the record fd is open on, and closes fd; NULL on failure. */
static struct watch_rec *map_fd(int fd)
{
	struct watch_rec *r = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	close(fd);
	return r == MAP_FAILED ? NULL : r;
}

/* The launcher's view of rank's record; NULL until the rank has made it.
 * A file of the name shorter than a record is left alone: touching past a
 * file's end is SIGBUS. */
static struct watch_rec *open_rec(const char *dir, int rank)
{
	char path[PATH_MAX];
	struct stat sb;
	int fd;

	snprintf(path, sizeof path, "%s/rank.%d", dir, rank);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) != 0 || sb.st_size < (off_t)sizeof(struct watch_rec)) {
		close(fd);
		return NULL;
	}
	return map_fd(fd);
}

/* The rank's own record, made under a temporary name and renamed into
 * place once it has its full size and is filled in, so the launcher never
 * sees one half made. */
static struct watch_rec *make_rec(const char *dir, int rank)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	struct watch_rec *r;
	int64_t t = now_us();
	int fd;

	snprintf(path, sizeof path, "%s/rank.%d", dir, rank);
	snprintf(tmp, sizeof tmp, "%s.new", path);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, sizeof *r) != 0) {
		close(fd);
		return NULL;
	}
	r = map_fd(fd);
	if (!r)
		return NULL;
	atomic_store(&r->beat_us, t);
	atomic_store(&r->step_us, t);
	atomic_store(&r->pid, (int64_t)getpid());
	atomic_store(&r->state, RUNNING);
	if (rename(tmp, path) != 0) {
		munmap(r, sizeof *r);
		return NULL;
	}
	return r;
}

/* --- rank side ----------------------------------------------------------- */

static void *heartbeat(void *arg)
{
	const struct timespec tick = { 0, 200 * 1000000 };

	(void)arg;
	for (;;) {
		atomic_store(&mine->beat_us, now_us());
		nanosleep(&tick, NULL);
	}
	return NULL;
}

/* A rank ended by a signal says so before it dies of it, so the launcher
 * can tell the rank that was killed from those mpirun ended after it. */
static void on_signal(int sig)
{
	int running = RUNNING;

	atomic_store(&mine->signo, sig);
	atomic_store(&mine->end_us, now_us());
	atomic_compare_exchange_strong(&mine->state, &running, SIGNALLED);
	signal(sig, SIG_DFL);
	raise(sig);
}

int watch_rank_start(int rank)
{
	const char *dir = getenv(WATCH_ENV);
	pthread_t th;

	if (!dir || !*dir || mine)
		return AP_OK;
	mine = make_rec(dir, rank);
	if (!mine)
		return ap_err(AP_EFAIL, WHO, 0, "rank %d cannot make its record in the job's "
			      "directory: %s", rank, strerror(errno));
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGHUP, on_signal);
	if (pthread_create(&th, NULL, heartbeat, NULL))
		return ap_err(AP_EFAIL, WHO, 0, "rank %d cannot start its heartbeat", rank);
	pthread_detach(th);
	return AP_OK;
}

void watch_progress(double step_s)
{
	int64_t us = (int64_t)(step_s * 1e6);

	if (!mine)
		return;
	if (us > atomic_load(&mine->slowest_us))
		atomic_store(&mine->slowest_us, us);
	atomic_fetch_add(&mine->steps, 1);
	atomic_store(&mine->step_us, now_us());
}

void watch_rank_end(int ok)
{
	int running = RUNNING;

	if (!mine)
		return;
	atomic_store(&mine->end_us, now_us());
	atomic_compare_exchange_strong(&mine->state, &running, ok ? DONE : FAILED);
}

/* --- launcher side ------------------------------------------------------- */

int watch_job_dir(char *dir, size_t len)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, len, "%s/autopar-job.XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
	if (!mkdtemp(dir))
		return ap_err(AP_EFAIL, WHO, 0, "cannot make the job's directory '%s': %s", dir,
			      strerror(errno));
	if (setenv(WATCH_ENV, dir, 1))
		return ap_err(AP_EFAIL, WHO, 0, "out of memory");
	return AP_OK;
}

void watch_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX];

	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* Whether pid is still a process of this executable (not a pid the system
 * has given to another program since); a zombie counts as gone. */
static int ours(int64_t pid)
{
	char link[64], exe[PATH_MAX], self[PATH_MAX], stat[512];
	ssize_t n, m;
	FILE *f;
	char *p;
	int alive;

	if (pid <= 0)
		return 0;
	snprintf(link, sizeof link, "/proc/%lld/exe", (long long)pid);
	n = readlink(link, exe, sizeof exe - 1);
	m = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0 || m <= 0 || n != m || memcmp(exe, self, (size_t)n))
		return 0;
	snprintf(link, sizeof link, "/proc/%lld/stat", (long long)pid);
	f = fopen(link, "r");
	if (!f)
		return 0;
	alive = fgets(stat, sizeof stat, f) && (p = strrchr(stat, ')')) && p[1] && p[2] != 'Z';
	fclose(f);
	return alive;
}

static volatile sig_atomic_t interrupted;

static void on_launcher_signal(int sig)
{
	interrupted = sig;
}

/* Ends every rank (SIGKILL reaches a stopped one too). */
static void end_ranks(struct watch_rec **rec, int ranks)
{
	for (int r = 0; r < ranks; r++)
		if (rec[r] && ours(atomic_load(&rec[r]->pid)))
			kill((pid_t)atomic_load(&rec[r]->pid), SIGKILL);
}

/* Ends the ranks, then mpirun (still running: not yet waited for). */
static void end_job(int pid, struct watch_rec **rec, int ranks, int *ws)
{
	end_ranks(rec, ranks);
	kill(pid, SIGTERM);
	for (int i = 0; i < 50; i++) {
		if (waitpid(pid, ws, WNOHANG) == pid)
			return;
		usleep(100000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, ws, 0);
}

/* The rank to blame once mpirun has ended without every rank done: one
 * that failed, else one that died without a word (SIGKILL), else the
 * first one a signal ended, else one that never started; -1: none. */
static int blame(struct watch_rec **rec, int ranks, char *why, size_t len)
{
	int failed = -1, dead = -1, signalled = -1, absent = -1;

	for (int r = ranks - 1; r >= 0; r--) {
		int state = rec[r] ? atomic_load(&rec[r]->state) : 0;

		if (!rec[r])
			absent = r;
		else if (state == RUNNING)
			dead = r;
		else if (state == FAILED && (failed < 0 || atomic_load(&rec[r]->end_us) <=
							     atomic_load(&rec[failed]->end_us)))
			failed = r;
		else if (state == SIGNALLED &&
			 (signalled < 0 || atomic_load(&rec[r]->end_us) <=
						   atomic_load(&rec[signalled]->end_us)))
			signalled = r;
	}
	if (failed >= 0) {
		snprintf(why, len, "failed");
		return failed;
	}
	if (dead >= 0) {
		snprintf(why, len, "died (killed)");
		return dead;
	}
	if (signalled >= 0) {
		int sig = atomic_load(&rec[signalled]->signo);

		snprintf(why, len, "died of signal %d (%s)", sig, strsignal(sig));
		return signalled;
	}
	if (absent >= 0)
		snprintf(why, len, "did not start");
	return absent;
}

/* The rank that stalled the job, or -1: a rank whose heartbeat is older
 * than limit_us (stopped, or hung outside its threads' reach), else, when
 * no rank has finished a step for limit_us, the one whose last step is
 * the oldest (a deadlock: every rank waits for another). */
static int stalled(struct watch_rec **rec, int ranks, int64_t limit_us, int64_t since_us)
{
	int64_t t = now_us(), newest = since_us, oldest = INT64_MAX;
	int who = -1;

	for (int r = 0; r < ranks; r++) {
		if (!rec[r]) {
			if (t - since_us > limit_us)
				return r;
			continue;
		}
		if (atomic_load(&rec[r]->state) != RUNNING)
			continue;
		if (t - atomic_load(&rec[r]->beat_us) > limit_us)
			return r;
		if (atomic_load(&rec[r]->step_us) > newest)
			newest = atomic_load(&rec[r]->step_us);
		if (atomic_load(&rec[r]->step_us) < oldest) {
			oldest = atomic_load(&rec[r]->step_us);
			who = r;
		}
	}
	return t - newest > limit_us ? who : -1;
}

int watch_supervise(int pid, int ranks, double limit_s, const char *dir)
{
	struct watch_rec **rec = calloc((size_t)ranks, sizeof *rec);
	struct sigaction sa = { .sa_handler = on_launcher_signal }, old[3];
	static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	int64_t start = now_us(), trouble = 0;
	int ws = 0, st = 1, who, done = 0;
	char why[128];

	if (!rec) {
		end_job(pid, rec, 0, &ws);
		watch_remove(dir);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	while (!done) {
		int64_t limit_us = (int64_t)(limit_s * 1e6), slowest = 0;

		if (waitpid(pid, &ws, WNOHANG) == pid)
			break;
		for (int r = 0; r < ranks; r++) {
			if (!rec[r])
				rec[r] = open_rec(dir, r);
			if (rec[r] && atomic_load(&rec[r]->slowest_us) > slowest)
				slowest = atomic_load(&rec[r]->slowest_us);
			/* a rank that failed or died: mpirun ends the job,
			 * or the launcher does when it has not soon */
			if (rec[r] && !trouble &&
			    (atomic_load(&rec[r]->state) == FAILED ||
			     atomic_load(&rec[r]->state) == SIGNALLED ||
			     (atomic_load(&rec[r]->state) == RUNNING &&
			      !ours(atomic_load(&rec[r]->pid)))))
				trouble = now_us();
		}
		if (limit_s == 0)
			limit_us = slowest * WATCH_STEPS > (int64_t)(WATCH_MIN_S * 1e6) ?
					   slowest * WATCH_STEPS : (int64_t)(WATCH_MIN_S * 1e6);
		if (interrupted && !trouble) {
			kill(pid, SIGTERM);
			trouble = now_us();
		}
		if (trouble && now_us() - trouble > 10 * 1000000) {
			end_job(pid, rec, ranks, &ws);
			done = 1;
		} else if (limit_us > 0 && (who = stalled(rec, ranks, limit_us, start)) >= 0) {
			fflush(stdout);
			fprintf(stderr, "%s: rank %d made no progress for %.0f s; ending the job\n",
				WHO, who, limit_us / 1e6);
			end_job(pid, rec, ranks, &ws);
			st = 1;
			goto out;
		} else {
			usleep(100000);
		}
	}
	/* mpirun has ended: the records of ranks that started and ended
	 * between two looks are read now, and no rank of ours stays behind */
	for (int r = 0; r < ranks; r++)
		if (!rec[r])
			rec[r] = open_rec(dir, r);
	end_ranks(rec, ranks);
	if (interrupted) {
		fprintf(stderr, "%s: interrupted (%s); ended the job\n", WHO,
			strsignal(interrupted));
		st = 128 + interrupted;
		goto out;
	}
	who = blame(rec, ranks, why, sizeof why);
	if (who < 0 && WIFEXITED(ws)) {
		st = WEXITSTATUS(ws);
	} else if (who < 0 || (WIFEXITED(ws) && WEXITSTATUS(ws) == 127 && !rec[0])) {
		/* mpirun itself failed (or could not start); it said why */
		st = 1;
	} else {
		/* a rank that failed has said so itself (the transport's abort) */
		fflush(stdout);
		if (!rec[who] || atomic_load(&rec[who]->state) != FAILED)
			fprintf(stderr, "%s: rank %d %s; ending the job\n", WHO, who, why);
		st = 1;
	}
out:
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	for (int r = 0; r < ranks; r++)
		if (rec[r])
			munmap(rec[r], sizeof *rec[r]);
	free(rec);
	watch_remove(dir);
	return st;
}
