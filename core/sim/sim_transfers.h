/*
 * Inside the simulator: the transfers between shards (sim_transfers.c).
 */
#ifndef AUTOPAR_SIM_TRANSFERS_H
#define AUTOPAR_SIM_TRANSFERS_H

#include "sim/sim_impl.h"

/* The transfers and sources of every edge, after the
 * shards are laid out.  What sim_delta() redoes of them: the transfers of
 * producer p to its consumers from op `from` on, appended to xf, shared
 * with the nkeep transfers keep[] that the consumers before made (in the
 * order they were made), and the sources they make as (key, value) pairs
 * in pairs (forward, np[0]) and bpairs (backward, np[1]); op_xbytes of op
 * i from its list xff (bwd 0) or xfb (1). */
int sim_layout_transfers(struct sim *s, const struct plan *pl);
int sim_layout_producer(struct sim *s, const struct plan *pl, int p, int from,
			const int *keep, int nkeep, int np[2]);
void sim_op_xbytes(struct sim_work *w, int i, int bwd);

#endif
