/*
 * Inside the simulator: checkpoints of the schedule and the undo log of a
 * delta's times (sim_ckpt.c).
 */
#ifndef AUTOPAR_SIM_CKPT_H
#define AUTOPAR_SIM_CKPT_H

#include "sim/sim_impl.h"

/* Checkpoints are kept before every SIM_CKPT_STEPS-th step of a
 * schedule that is a forward: a change is first felt at a forward step. */
#define SIM_CKPT_STEPS 4

/* Keeping and restoring the state before a step; and the
 * undo log of a delta's times: sim_tlog_begin() before its schedule
 * runs, sim_tlog_step() before each step it runs (the times op's step
 * writes; a step after w->tlog_last needs none), sim_tlog_undo() puts
 * them back, and the checkpoints the run saved. */
int sim_ckpt_save(struct sim_work *w, int step);
/* Takes the resources added since the checkpoints were kept into them,
 * before a schedule saves or restores one. */
int sim_ckpt_fit(struct sim_work *w);
void sim_ckpt_restore(struct sim_work *w, int step);
int sim_ckpt_before(const struct sim_work *w, int step);
void sim_tlog_begin(struct sim_work *w);
int sim_tlog_step(struct sim_work *w, int op, int j, int bwd);
void sim_tlog_undo(struct sim_work *w);

#endif
