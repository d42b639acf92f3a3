/*
 * The simulated timeline written out (sim_trace.c): Chrome trace JSON for
 * Perfetto, and columns for gnuplot.
 */
#ifndef AUTOPAR_SIM_TRACE_H
#define AUTOPAR_SIM_TRACE_H

#include "sim/sim.h"

/* Writes the last run's recorded tasks as Chrome trace JSON (trace.c),
 * atomically: one complete ("X") event per task, ts and dur in
 * microseconds, pid the resource, plus metadata naming the resources. */
int sim_trace_write(const struct sim *s, const char *path);
/* The same tasks as tab-separated columns (res, resource name, start_ms,
 * end_ms, kind, micro-batch, operator), for gnuplot. */
int sim_timeline_write(const struct sim *s, const char *path);

#endif
