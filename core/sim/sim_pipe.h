/*
 * The symmetric pipeline simulation (sim_pipe.c): plans shaped as a
 * pipeline of device groups (plan/pipe.h) that use tensor parallelism,
 * mixed precision, ZeRO, sequence parallelism, selective recomputation or
 * the interleaved and zero-bubble schedules.  Internal to core/sim/.
 */
#ifndef AUTOPAR_SIM_PIPE_H
#define AUTOPAR_SIM_PIPE_H

#include "sim/sim.h"

int sim_pipe_run(struct sim *s, const struct plan *pl, const struct sim_opts *opts,
		 struct sim_result *r);

#endif
