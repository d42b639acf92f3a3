/*
 * Starting the ranks of `autopar run`: outside an MPI job the command
 * re-executes itself under mpirun with one process per device of the
 * plan, allowing root and more ranks than cores (Open MPI refuses both by
 * default, DESIGN section 7).  A multi-node job is the same command run
 * under mpirun with a hostfile, which this leaves alone.
 */
#ifndef AUTOPAR_LAUNCH_H
#define AUTOPAR_LAUNCH_H

/* Replaces this process with `mpirun -np ranks ... SELF argv...`; returns
 * only on failure (AP_EFAIL, reported). argv[0] is the subcommand. */
int launch_mpirun(int ranks, int argc, char **argv);

#endif
