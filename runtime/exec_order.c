/*
 * The order of a rank's stage transfers (exec_order.h): where a
 * transport matches point-to-point messages in issue order (NCCL) rather
 * than by tag (MPI), the receiver must post its receives in the order the
 * sender issues its sends.  This walks the rank's tasks exactly as
 * exec_step() runs them (items in schedule order, a stage's ops in graph
 * order forward and reverse backward; async schedules the slice of every
 * step of the run) and lists, per peer, each send and each receive at the
 * point exec.c issues it: a forward receives the pieces of its inputs (the
 * first of a transfer's sharers) and then sends its output's pieces; a
 * backward receives its output's gradients and sends its inputs' (the last
 * of the sharers); a round-robin replica runs its own micro-batches, with
 * the pieces and transfers of their replicas; zb-h1's W passes have none.
 * A rank knows its own tasks only, so each rank lists
 * what it sends and the transport exchanges the lists once at setup: simpler
 * and less fragile than replaying every other rank's layout.  The runtime
 * tests record the sends and receives the executor really issues and
 * compare them with these lists.
 */
#include "exec_order.h"

#include <stdlib.h>

#include "util/err.h"
#include "util/grow.h"
#include "exec_impl.h"

struct xlist {
	int *tag;         /* per event: tag; peer and direction alongside */
	int *peer, *out;
	int n, cap, cap_peer, cap_out;
	int *nfwd, *nbwd; /* the sharers' counters, as exec.c keeps them */
};

static int add(struct xlist *l, int peer, int tag, int out)
{
	if (grow(&l->tag, l->n, &l->cap, sizeof *l->tag, 64) ||
	    grow(&l->peer, l->n, &l->cap_peer, sizeof *l->peer, 64) ||
	    grow(&l->out, l->n, &l->cap_out, sizeof *l->out, 64))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	l->tag[l->n] = tag;
	l->peer[l->n] = peer;
	l->out[l->n++] = out;
	return AP_OK;
}

/* forward(): gather() of every input, then the output's sends; of
 * micro-batch j of the step (round-robin replicas: the pieces and
 * transfers of its replicas) */
static int forward_events(const struct exec *e, const struct rshard *s, int j,
			  struct xlist *l)
{
	if (e->g->ops[s->op].kind != OP_INPUT)
		for (int kk = 0; kk < s->kern.nin; kk++)
			for (int q = 0; !s->alias[kk] && q < s->nsrc[kk]; q++) {
				const struct src *x = &s->src[kk][q];

				if (x->xfer < 0 || !exec_src_live(x, j))
					continue;
				if (l->nfwd[x->xfer]++ == 0 && add(l, x->rank, 2 * x->xfer, 0))
					return AP_EFAIL;
				if (l->nfwd[x->xfer] == e->xf[x->xfer].nshare)
					l->nfwd[x->xfer] = 0;
			}
	for (int q = 0; q < s->nsends; q++)
		if (exec_xfer_live(&e->xf[s->sends[q]], j) &&
		    add(l, e->xf[s->sends[q]].cons_rank, 2 * s->sends[q], 1))
			return AP_EFAIL;
	return AP_OK;
}

/* backward(): the output's gradients, then scatter_grad() of every input
 * that has a gradient */
static int backward_events(const struct exec *e, const struct rshard *s, int j,
			   struct xlist *l)
{
	if (e->g->ops[s->op].kind == OP_INPUT)
		return AP_OK;
	for (int q = 0; q < s->nsends; q++)
		if (exec_xfer_live(&e->xf[s->sends[q]], j) &&
		    add(l, e->xf[s->sends[q]].cons_rank, 2 * s->sends[q] + 1, 0))
			return AP_EFAIL;
	for (int kk = 0; kk < s->kern.nin; kk++)
		for (int q = 0; s->din[kk] && q < s->nsrc[kk]; q++) {
			const struct src *x = &s->src[kk][q];

			if (x->xfer < 0 || !exec_src_live(x, j) ||
			    ++l->nbwd[x->xfer] < e->xf[x->xfer].nshare)
				continue;
			l->nbwd[x->xfer] = 0;
			if (add(l, x->rank, 2 * x->xfer + 1, 1))
				return AP_EFAIL;
		}
	return AP_OK;
}

static int item_events(const struct exec *e, const struct sched_item *x, struct xlist *l)
{
	int a = e->stage_ops_ofs[x->stage], z = e->stage_ops_ofs[x->stage + 1];
	int j = x->mb % e->m; /* a stream's: replicas divide m */

	if (x->bwd == SCHED_W) /* zb-h1's weight gradients: no transfers */
		return AP_OK;
	for (int q = 0; q < z - a; q++) {
		int i = e->stage_ops[x->bwd ? z - 1 - q : a + q];
		const struct rshard *s = e->mine[i] < 0 ? NULL : &e->sh[e->mine[i]];

		if (!s || !exec_shard_runs(s, j))
			continue;
		if (x->bwd ? backward_events(e, s, j, l) : forward_events(e, s, j, l))
			return AP_EFAIL;
	}
	return AP_OK;
}

static int walk(struct exec *e, struct xlist *l)
{
	if (!e->async) {
		for (int it = 0; it < e->nitems; it++)
			if (item_events(e, &e->items[it], l))
				return AP_EFAIL;
		return AP_OK;
	}
	for (int64_t step = 0; step < e->o.steps; step++) {
		int n = exec_async_slice(e, step);

		if (n < 0)
			return AP_EFAIL;
		for (int it = 0; it < n; it++)
			if (item_events(e, &e->slice[it], l))
				return AP_EFAIL;
	}
	return AP_OK;
}

/* The events of direction `out` by peer into ofs/tags (a counting sort,
 * which keeps each peer's order). */
static int bucket(const struct xlist *l, int size, int out, int **ofs, int **tags)
{
	int *at;

	*ofs = calloc((size_t)size + 1, sizeof **ofs);
	*tags = malloc((size_t)(l->n > 0 ? l->n : 1) * sizeof **tags);
	at = malloc((size_t)size * sizeof *at);
	if (!*ofs || !*tags || !at) {
		free(at);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int k = 0; k < l->n; k++)
		if (l->out[k] == out)
			(*ofs)[l->peer[k] + 1]++;
	for (int d = 0; d < size; d++) {
		(*ofs)[d + 1] += (*ofs)[d];
		at[d] = (*ofs)[d];
	}
	for (int k = 0; k < l->n; k++)
		if (l->out[k] == out)
			(*tags)[at[l->peer[k]]++] = l->tag[k];
	free(at);
	return AP_OK;
}

int exec_order(struct exec *e, struct xorder *o)
{
	struct xlist l = { 0 };
	int st;

	*o = (struct xorder){ .size = e->t->size, .cyclic = !e->async, .ntags = 2 * e->nxf };
	l.nfwd = calloc((size_t)(e->nxf > 0 ? e->nxf : 1), sizeof *l.nfwd);
	l.nbwd = calloc((size_t)(e->nxf > 0 ? e->nxf : 1), sizeof *l.nbwd);
	o->len = malloc((size_t)(o->ntags > 0 ? o->ntags : 1) * sizeof *o->len);
	st = !l.nfwd || !l.nbwd || !o->len ? ap_err(AP_EFAIL, NULL, 0, "out of memory") : AP_OK;
	for (int x = 0; x < e->nxf && !st; x++)
		o->len[2 * x] = o->len[2 * x + 1] = region_elems(&e->xf[x].o);
	if (!st)
		st = walk(e, &l);
	if (!st)
		st = bucket(&l, o->size, 1, &o->sofs, &o->stags);
	if (!st)
		st = bucket(&l, o->size, 0, &o->rofs, &o->rtags);
	free(l.tag);
	free(l.peer);
	free(l.out);
	free(l.nfwd);
	free(l.nbwd);
	if (st)
		xorder_release(o);
	return st;
}

void xorder_release(struct xorder *o)
{
	free(o->sofs);
	free(o->stags);
	free(o->rofs);
	free(o->rtags);
	free(o->len);
	*o = (struct xorder){ 0 };
}
