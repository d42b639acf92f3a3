/*
 * Inside the simulator: the layout of a plan's shards (sim_layout.c).
 */
#ifndef AUTOPAR_SIM_LAYOUT_H
#define AUTOPAR_SIM_LAYOUT_H

#include "sim/sim_impl.h"

/* Everything a plan fixes, built once per run. */
int sim_layout(struct sim *s, const struct plan *pl);
/* Its parts that sim_delta() redoes for one op: the checks of op i; op
 * i's shards at shard_base[i] (room made by sim_reserve_shards()); a CSR
 * list from pairs (key, value), and one into struct sim_work's f_ofs and
 * f (CSR()). */
int sim_check_op(const struct sim *s, const struct plan *pl, int i);
int sim_reserve_shards(struct sim_work *w, int n);
int sim_layout_op_shards(struct sim *s, const struct plan *pl, int i);
int sim_build_csr(struct sim_work *w, const int *pr, int np, int nkeys,
		  int **ofs, size_t *cap_ofs, int **vals, size_t *cap_vals);
#define CSR(w, pr, np, nkeys, f) \
	sim_build_csr(w, pr, np, nkeys, &(w)->f##_ofs, &(w)->cap_##f##_ofs, \
		  &(w)->f, &(w)->cap_##f)

#endif
