/*
 * Posting receives in the sender's order (xpost.h).  Why the early posts
 * cannot deadlock: a receive posted ahead of its turn is one the source
 * issues before the one the executor waits for, so on the pair's
 * in-order channel it only waits for sends that come first anyway; the
 * one asked for completes as soon as those and its own send have run.
 */
#include "xpost.h"

#include <stdlib.h>

#include "util/err.h"
#include "util/grow.h"

void xpost_init(struct xpost *x, const int *seq, int n, int cyclic)
{
	*x = (struct xpost){ .seq = seq, .n = n, .cyclic = cyclic && n > 0 };
}

void xpost_release(struct xpost *x)
{
	free(x->pend);
	x->pend = NULL;
	x->npend = x->cap = 0;
}

static int tag_at(const struct xpost *x, int64_t pos)
{
	if (x->cyclic)
		return x->seq[pos % x->n];
	return pos < x->n ? x->seq[pos] : -1;
}

int64_t xpost_due(const struct xpost *x, int tag)
{
	/* a cyclic sequence holds every tag it has within one period */
	int64_t end = x->cyclic ? x->next + x->n : x->n;

	for (int i = 0; i < x->npend; i++)
		if (tag_at(x, x->pend[i].pos) == tag)
			return 0;
	for (int64_t p = x->next; p < end; p++)
		if (tag_at(x, p) == tag)
			return p - x->next + 1;
	return -1;
}

int xpost_peek(const struct xpost *x)
{
	return tag_at(x, x->next);
}

int xpost_push(struct xpost *x, int slot)
{
	if (xpost_peek(x) < 0)
		return ap_err(AP_EFAIL, NULL, 0, "no receive left to post");
	if (grow(&x->pend, x->npend, &x->cap, sizeof *x->pend, 8))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	x->pend[x->npend++] = (struct xpend){ x->next++, slot };
	return AP_OK;
}

int xpost_take(struct xpost *x, int tag)
{
	for (int i = 0; i < x->npend; i++) {
		int slot = x->pend[i].slot;

		if (tag_at(x, x->pend[i].pos) != tag)
			continue;
		for (int k = i + 1; k < x->npend; k++)
			x->pend[k - 1] = x->pend[k];
		x->npend--;
		return slot;
	}
	return -1;
}

int xpost_slots(const int *seq, int n, int cyclic, const int *req, int nreq)
{
	struct xpost x;
	int most = 0;

	xpost_init(&x, seq, n, cyclic);
	for (int r = 0; r < nreq; r++) {
		int64_t due = xpost_due(&x, req[r]);

		for (int64_t k = 0; k < due; k++)
			if (xpost_push(&x, 0)) {
				xpost_release(&x);
				return -1;
			}
		if (due < 0) {
			xpost_release(&x);
			return -1;
		}
		most = x.npend > most ? x.npend : most;
		xpost_take(&x, req[r]);
	}
	xpost_release(&x);
	return most;
}
