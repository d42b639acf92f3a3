/*
 * Inside the simulator: gradient synchronisation and the links a transfer
 * occupies (sim_comm.c).
 */
#ifndef AUTOPAR_SIM_COMM_H
#define AUTOPAR_SIM_COMM_H

#include "sim/sim_impl.h"

/* The replica groups and all-reduce tasks (after the shards
 * are laid out). */
int sim_layout_groups(struct sim *s, const struct plan *pl);
/* The groups of op i alone, appended to grp, grp_mem, coll, coll_res. */
int sim_layout_op_groups(struct sim *s, const struct plan *pl, int i);
/* The resources a transfer from device a to device b occupies (res[1] =
 * -1 when only one), a link inside a node made a resource on first use;
 * AP_EFAIL (reported) when out of memory. */
int sim_link_res(struct sim *s, int a, int b, int res[2]);
/* Forgets the links inside nodes, before a full layout. */
void sim_links_reset(struct sim_work *w);

#endif
