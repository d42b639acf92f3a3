/*
 * What the schedule keeps of a run for delta re-simulation (sim_delta.c):
 * checkpoints, the state before every SIM_CKPT_STEPS-th step that is a
 * forward, from which a later run continues; and the undo log of a
 * delta's times, the task times and checkpoints of the run before it
 * that the delta overwrote, put back by sim_undo() so that the delta
 * after a rejected one times the schedule from its own change only.
 *
 * The log holds what the steps from the delta's first up to the last
 * forward step wrote: a delta never starts after the last forward step
 * (a change is first felt at a forward), so every step after it is
 * timed again by the next delta anyway, before anything reads its times.
 * A step writes the times of its op's shards, one contiguous run of a
 * block, and of the transfers it sends, whose indices run in blocks too
 * (a producer's transfers are made together), so the log is a list of
 * runs copied whole.
 */
#include "sim/sim_ckpt.h"

#include <string.h>

#include "util/err.h"

/* --- checkpoints ------------------------------------------------------------ */

static size_t ckpt_nd_of(const struct sim_work *w, int nres)
{
	return 2 * (size_t)nres + 4 * (size_t)w->ndev + 1;
}

static size_t ckpt_nd(const struct sim_work *w)
{
	return ckpt_nd_of(w, w->ckpt_nres);
}

static size_t ckpt_ni(const struct sim_work *w)
{
	return 2 * (size_t)w->ndev + 3 + NTASK_KINDS + 1;
}

/* A checkpoint holds the free and busy times of ckpt_nres resources.
 * The links a delta's layout adds (sim_comm.c) are taken into every place
 * with the times 0: no step before the delta's first used them, or the
 * delta would start earlier.  Fewer resources come from a full layout,
 * after which no place is read again. */
int sim_ckpt_fit(struct sim_work *w)
{
	size_t old = (size_t)w->ckpt_nres, nres = (size_t)w->nres, add = nres - old;
	size_t rest = 4 * (size_t)w->ndev + 1, ond = ckpt_nd(w), nnd = ckpt_nd_of(w, w->nres);

	if (w->nres == w->ckpt_nres)
		return AP_OK;
	if (w->nres < w->ckpt_nres || !w->nckpt_sel) {
		w->nckpt = w->nckpt_sel = 0;
		w->ckpt_nres = w->nres;
		return AP_OK;
	}
	if (RESERVE(w, ckpt_d, 2 * (size_t)w->nckpt_sel * nnd))
		return AP_EFAIL;
	/* from the last place down, each part to where it goes: every part
	 * moves up, so none overwrites one not moved yet */
	for (size_t p = 2 * (size_t)w->nckpt_sel; p-- > 0;) {
		double *o = w->ckpt_d + p * ond, *n = w->ckpt_d + p * nnd;

		memmove(n + 2 * nres, o + 2 * old, rest * sizeof *n);
		memmove(n + nres, o + old, old * sizeof *n);
		memset(n + nres + old, 0, add * sizeof *n);
		memmove(n, o, old * sizeof *n);
		memset(n + old, 0, add * sizeof *n);
	}
	w->ckpt_nres = w->nres;
	return AP_OK;
}

/* Checkpoint k has two places, 2k and 2k + 1, the one in use ckpt_sel[k]:
 * a logging run writes the other and flips it, so an undo flips it back
 * instead of copying a checkpoint. */
int sim_ckpt_save(struct sim_work *w, int step)
{
	size_t nd = ckpt_nd(w), ni = ckpt_ni(w), k = (size_t)step / SIM_CKPT_STEPS, at;
	double *d;
	int64_t *v;

	if (RESERVE(w, ckpt_d, 2 * (k + 1) * nd) || RESERVE(w, ckpt_i, 2 * (k + 1) * ni) ||
	    RESERVE(w, ckpt_ok, k + 1) || RESERVE(w, ckpt_sel, k + 1) ||
	    (w->tlog_on && RESERVE(w, tlog_ck, w->ntlog_ck + 1)))
		return AP_EFAIL;
	/* the steps between are backward ones, or were not reached */
	for (int j = w->nckpt; j < (int)k; j++)
		w->ckpt_ok[j] = 0;
	w->ckpt_ok[k] = 1;
	/* a place in use stays defined past a reset: an undo may go back */
	for (; w->nckpt_sel <= (int)k; w->nckpt_sel++)
		w->ckpt_sel[w->nckpt_sel] = 0;
	if (w->tlog_on) {
		w->ckpt_sel[k] ^= 1;
		w->tlog_ck[w->ntlog_ck++] = (int)k;
	}
	at = 2 * k + (size_t)w->ckpt_sel[k];
	d = w->ckpt_d + at * nd;
	v = w->ckpt_i + at * ni;
	memcpy(d, w->res_free, (size_t)w->nres * sizeof *d);
	if (!w->lean) /* a lean run's busy times are not read */
		memcpy(d + w->nres, w->res_busy, (size_t)w->nres * sizeof *d);
	d += 2 * (size_t)w->nres;
	for (int i = 0; i < w->ndev; i++) {
		*d++ = w->grad_ready[i].end;
		*d++ = w->grad_ready[i].cp;
		*d++ = w->bwd_done[i].end;
		*d++ = w->bwd_done[i].cp;
		*v++ = w->act_cur[i];
		*v++ = w->mem[i].act;
	}
	*d = w->max_cp;
	memcpy(v, w->link_bytes, sizeof w->link_bytes);
	v += 3;
	for (int i = 0; i < NTASK_KINDS; i++)
		*v++ = w->ntask_kinds[i];
	*v = w->ntasks;
	if ((int)k >= w->nckpt)
		w->nckpt = (int)k + 1;
	return AP_OK;
}

int sim_ckpt_before(const struct sim_work *w, int step)
{
	int k = step / SIM_CKPT_STEPS;

	if (k >= w->nckpt)
		k = w->nckpt - 1;
	while (k > 0 && !w->ckpt_ok[k])
		k--;
	return k > 0 ? k * SIM_CKPT_STEPS : 0;
}

void sim_ckpt_restore(struct sim_work *w, int step)
{
	size_t k = (size_t)step / SIM_CKPT_STEPS, at = 2 * k + (size_t)w->ckpt_sel[k];
	const double *d = w->ckpt_d + at * ckpt_nd(w);
	const int64_t *v = w->ckpt_i + at * ckpt_ni(w);

	memcpy(w->res_free, d, (size_t)w->nres * sizeof *d);
	if (!w->lean)
		memcpy(w->res_busy, d + w->nres, (size_t)w->nres * sizeof *d);
	d += 2 * (size_t)w->nres;
	for (int i = 0; i < w->ndev; i++) {
		w->grad_ready[i].end = *d++;
		w->grad_ready[i].cp = *d++;
		w->bwd_done[i].end = *d++;
		w->bwd_done[i].cp = *d++;
		w->act_cur[i] = *v++;
		w->mem[i].act = *v++;
	}
	w->max_cp = *d;
	memcpy(w->link_bytes, v, sizeof w->link_bytes);
	v += 3;
	for (int i = 0; i < NTASK_KINDS; i++)
		w->ntask_kinds[i] = (int)*v++;
	w->ntasks = *v;
}

/* --- the undo log of a delta's times -------------------------------------- */

/* The last forward step: steps after it are never logged. */
static int last_forward(const struct sim_work *w)
{
	int step = 0, last = 0;

	for (int it = 0; it < w->nitems; it++) {
		const struct sched_item *x = &w->items[it];
		int n = w->stage_ops_ofs[x->stage + 1] - w->stage_ops_ofs[x->stage];

		if (!x->bwd && n > 0)
			last = step + n - 1;
		step += n;
	}
	return last;
}

void sim_tlog_begin(struct sim_work *w)
{
	w->tlog_last = last_forward(w);
	w->ntrun = w->ntlog = w->ntlog_ck = 0;
	w->tlog_nckpt = w->nckpt;
}

/* Keeps times t[idx .. idx + n) of micro-batch j's block, direction bwd. */
static void log_run(struct sim_work *w, int bwd, int j, int idx, int n)
{
	struct sim_trun *r = &w->trun[w->ntrun++];

	r->bwd = bwd;
	r->j = j;
	r->idx = idx;
	r->n = n;
	memcpy(w->tlog + w->ntlog, sim_times(w, bwd, j) + idx, (size_t)n * sizeof *w->tlog);
	w->ntlog += n;
	if (!w->lean) {
		memcpy(w->tlog + w->ntlog, sim_cps(w, bwd, j) + idx, (size_t)n * sizeof *w->tlog);
		w->ntlog += n;
	}
}

int sim_tlog_step(struct sim_work *w, int op, int j, int bwd)
{
	const int *list = bwd ? w->xfb : w->xff;
	int a = bwd ? w->xfb_ofs[op] : w->xff_ofs[op], b = bwd ? w->xfb_end[op] : w->xff_end[op];
	int ns = w->shard_end[op] - w->shard_base[op];

	if (RESERVE(w, trun, w->ntrun + 1 + (b - a)) ||
	    RESERVE(w, tlog, w->ntlog + 2 * ((size_t)ns + (b - a))))
		return AP_EFAIL;
	log_run(w, bwd, j, w->shard_base[op], ns);
	/* transfers x0..x1 sit at SRC_XFER(x1)..SRC_XFER(x0).  A list xff
	 * ascends (a producer's transfers are made in order, those a delta
	 * keeps before those it makes), and one made by one layout of its
	 * producer is a single block */
	if (!bwd && b > a && list[b - 1] - list[a] == b - 1 - a) {
		log_run(w, bwd, j, SRC_XFER(list[b - 1]), b - a);
		return AP_OK;
	}
	for (int e = a, x0 = 0; e < b; e++) {
		if (e == a || list[e] != list[e - 1] + 1)
			x0 = list[e];
		if (e + 1 == b || list[e + 1] != list[e] + 1)
			log_run(w, bwd, j, SRC_XFER(list[e]), list[e] - x0 + 1);
	}
	return AP_OK;
}

void sim_tlog_undo(struct sim_work *w)
{
	/* latest first, so a time written twice gets its first value back */
	for (int k = w->ntrun - 1, v = w->ntlog; k >= 0; k--) {
		const struct sim_trun *r = &w->trun[k];

		v -= w->lean ? r->n : 2 * r->n;
		memcpy(sim_times(w, r->bwd, r->j) + r->idx, w->tlog + v,
		       (size_t)r->n * sizeof *w->tlog);
		if (!w->lean)
			memcpy(sim_cps(w, r->bwd, r->j) + r->idx, w->tlog + v + r->n,
			       (size_t)r->n * sizeof *w->tlog);
	}
	for (int k = 0; k < w->ntlog_ck; k++)
		w->ckpt_sel[w->tlog_ck[k]] ^= 1;
	w->nckpt = w->tlog_nckpt;
}
