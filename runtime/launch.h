/*
 * Starting the ranks of `autopar run`: outside an MPI job the command
 * runs itself under mpirun with one process per device of the plan, and
 * stays to supervise the job (watch.h); allowing root and more ranks than
 * cores (Open MPI refuses both by default, docs/runtime.md).  A multi-node job is the same command run
 * under mpirun with a hostfile, which this leaves alone.
 */
#ifndef AUTOPAR_LAUNCH_H
#define AUTOPAR_LAUNCH_H

/* Starts `mpirun -np ranks ... SELF argv...` as a child process (*pid),
 * which the caller supervises (watch.h) and waits for; AP_EFAIL, reported,
 * when it cannot.  argv[0] is the subcommand.  A job directory exported
 * (watch_job_dir()) is passed on to the ranks. */
int launch_mpirun(int ranks, int argc, char **argv, int *pid);

#endif
