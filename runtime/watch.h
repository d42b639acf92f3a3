/*
 * The watchdog of `autopar run` (docs/runtime.md): the process that
 * starts mpirun stays behind to supervise the job, so that a rank that
 * dies, fails or stops cannot leave the others waiting forever.  Each rank
 * keeps a small record in a file of the job's directory, mapped shared:
 * its pid, a heartbeat a thread of its own renews every fraction of a
 * second (a stopped process renews nothing), the steps it has completed
 * and when, its slowest step, and how it ended.  The launcher reads the
 * records a few times a second and ends the whole job, naming the rank,
 * when a rank's heartbeat or the job's progress is older than the
 * watchdog's limit, or when mpirun ends with a rank that died or failed.
 * Outside a launched job (one rank, or mpirun started by hand) the rank
 * side does nothing.
 */
#ifndef AUTOPAR_WATCH_H
#define AUTOPAR_WATCH_H

#include <stddef.h>

/* Where the launcher tells the ranks the job's directory is. */
#define WATCH_ENV "AUTOPAR_JOB_DIR"

/* Default limit: the longer of this and WATCH_STEPS slowest steps. */
#define WATCH_MIN_S 60.0
#define WATCH_STEPS 5

/* Rank side.  watch_rank_start() maps this rank's record (when the
 * launcher made a job directory) and starts its heartbeat; the others
 * are no-ops when it did not. */
int watch_rank_start(int rank);
/* One step (or unit of work) done, which took step_s seconds. */
void watch_progress(double step_s);
/* The rank ends: ok 1 when it finished, 0 when it failed. */
void watch_rank_end(int ok);

/* Launcher side: makes the job's private directory (into dir, len bytes)
 * and exports it to the ranks. */
int watch_job_dir(char *dir, size_t len);
/* Removes the job's directory and what is in it. */
void watch_remove(const char *dir);
/* Supervises mpirun (pid) of `ranks` ranks until it ends: limit_s > 0 the
 * watchdog's limit, 0 the default (WATCH_MIN_S or WATCH_STEPS slowest
 * steps), < 0 none.  Returns the job's exit code: mpirun's when every
 * rank ended well, else 1 after one message naming the rank, with no rank
 * left running.  Removes the job directory. */
int watch_supervise(int pid, int ranks, double limit_s, const char *dir);

#endif
