/*
 * Measuring NCCL on the GPUs of this machine, for `autopar profile
 * --comm`: all-reduce over all of them and send/recv between the first
 * two, over message sizes, as nccl-tests reports them (algorithm
 * bandwidth = bytes / time; bus bandwidth = what each link carried:
 * all-reduce x 2(n-1)/n, send/recv x 1).  One process drives every GPU
 * (ncclCommInitAll).  Results are checked before they are timed: the
 * all-reduce of known values must give their sum.
 */
#ifndef AUTOPAR_COMM_BENCH_H
#define AUTOPAR_COMM_BENCH_H

#include <stdint.h>

struct comm_row {
	char op[16];         /* allreduce, sendrecv */
	int devices;
	int64_t bytes;
	double time_us;      /* median */
	double algbw_bytes_per_s, busbw_bytes_per_s;
};

/* Rows for messages of 4 KiB to max_bytes (x4 steps) on the first ndev
 * GPUs (at least 2); *rows is malloc'ed.  Without NCCL in the build, or
 * with fewer GPUs, an error saying so. */
int comm_bench(int ndev, int64_t max_bytes, struct comm_row **rows, int *n);

#endif
