/*
 * Measuring operators with a backend, for `autopar profile -d cpu`: one
 * shard of an op, shaped as graph_op_signature() describes it for a degree
 * vector, run forward and backward on random data until the timing is
 * stable.  The simulator then predicts a plan from the same kernels the
 * runtime executes.
 */
#ifndef AUTOPAR_PROFILER_H
#define AUTOPAR_PROFILER_H

#include <stdint.h>

#include "backend.h"
#include "model/graph.h"

/* Median forward and backward microseconds of op i's shard at degree[]
 * (as the simulator looks it up: n already multiplied by micro-batches)
 * and its workspace bytes. */
int profiler_measure(const struct backend *be, const struct graph *g, int i,
		     const int degree[NDIMS], double *fwd_us, double *bwd_us,
		     int64_t *ws_bytes);

/* A device's measured rates with backend be (initialised): the float32
 * GEMM rate (an n x n x n product), the copy bandwidth (bytes read and
 * written per second, over `bytes`) and the cost of one tiny kernel;
 * each the median of its repeats after warm-up, into d's rate fields. */
struct device_spec;
int profiler_device(const struct backend *be, int gemm_n, int64_t bytes,
		    struct device_spec *d);

#endif
