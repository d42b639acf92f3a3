/*
 * The MPI transport (transport_mpi.c): Open MPI point-to-point by tag,
 * replica groups as sub-communicators, gradients by MPI_Iallreduce; and
 * what a job started by mpirun needs of MPI besides (whether it is one,
 * the library's version, rank 0's bytes shared with every rank).
 */
#ifndef AUTOPAR_TRANSPORT_MPI_H
#define AUTOPAR_TRANSPORT_MPI_H

#include "transport.h"

/* MPI_Init (once), rank and size of MPI_COMM_WORLD. */
int transport_mpi_init(struct transport *t, int *argc, char ***argv);
/* The MPI library's version line. */
const char *transport_mpi_version(void);
/* Collective over an MPI transport: rank 0's bytes[0..*len) (*len < 0:
 * rank 0 has none, and has said why: AP_EINPUT on every rank) to every
 * rank, where *bytes becomes a malloc'd copy, NUL-terminated, of *len
 * bytes.  So every rank works from what rank 0 read once. */
int transport_mpi_share(struct transport *t, char **bytes, long *len);
/* Whether this process runs inside an MPI job (started by mpirun). */
int transport_mpi_in_job(void);

#endif
