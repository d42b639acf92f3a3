/*
 * Inside the simulator: gradient synchronisation and the links a transfer
 * occupies (sim_comm.c).
 */
#ifndef AUTOPAR_SIM_COMM_H
#define AUTOPAR_SIM_COMM_H

#include "sim/sim_impl.h"

/* The replica groups and all-reduce tasks (after the shards
 * are laid out), and the resources a transfer from device a to device b
 * occupies (res[1] = -1 when only one). */
int sim_layout_groups(struct sim *s, const struct plan *pl);
/* The groups of op i alone, appended to grp, grp_mem, coll, coll_res. */
int sim_layout_op_groups(struct sim *s, const struct plan *pl, int i);
void sim_link_res(const struct sim *s, int a, int b, int res[2]);

#endif
