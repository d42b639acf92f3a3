/*
 * Inside Piper's dynamic program: costing one stage, which piper_dp.c
 * does for every pair of upsets it visits (piper_stage.c).  Not an
 * interface: only those two include it.
 */
#ifndef AUTOPAR_PIPER_STAGE_H
#define AUTOPAR_PIPER_STAGE_H

#include "model/piper_inst.h"

struct knap_swap;

/* Scratch for costing stages: per node of the stage its TMPCs' offset
 * and count, per TMPC x = crossing bytes / B + p, y = 4 w / (N B), the
 * memory terms and the TPS contribution c = x / d + (1 - 1 / d) y of the
 * degree d at hand (Piper's (E / d + R) / B + p / d), and the
 * knapsack's working arrays. */
struct stage_buf {
	int *ofs, *cnt, *fast, *low, *h;
	int *efw, *ebw; /* one node's crossing edges, in and out */
	double *x, *y, *c, *a, *b;
	struct knap_swap *sw;
};

/* sb sized for any stage of pi: AP_OK, or AP_EFAIL (reported).  Release
 * frees it either way, and a zeroed one. */
int piper_stage_buf_alloc(struct stage_buf *sb, const struct piper_inst *pi);
void piper_stage_buf_release(struct stage_buf *sb);

/* The stage's nodes' TMPCs for degree t into sb: counts, offsets, x (the
 * crossing bytes: edges to nodes outside in[], both passes, with their
 * sync bytes), y and memory; 0 when a node lacks t. */
int piper_crossing(const struct piper_inst *pi, const char *in, const int *nodes, int n,
		   int t, struct stage_buf *sb);
/* The TPS contribution of every one of the stage's total TMPCs for d. */
void piper_contributions(struct stage_buf *sb, int total, int d);
/* Piper's knapsack heuristic (piper_dp.h) over the n nodes' TMPCs,
 * cnt[i] of them from ofs[i] in c[] (TPS contribution), a[] and b[]
 * (memory), for y = 1 .. maxy into out[y]; with ychoice > 0, the choice
 * at y = ychoice into choice[]. */
int piper_knapsack(double mem, int n, struct stage_buf *sb, int maxy, double *out,
		   int ychoice, int *choice);

#endif
