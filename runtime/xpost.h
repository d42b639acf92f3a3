/*
 * The receiving side of point-to-point transfers that match in issue
 * order (the NCCL transport's stage transfers).  A source sends a known
 * sequence of tags (exec_order.c); the receiver must post its receives in
 * that same sequence, while the executor asks for them in its own task
 * order, which may differ.  Asking for tag T posts, in the source's order,
 * every receive not posted yet up to T's next occurrence; the ones before
 * T stay pending, each in a slot of its own, until they are asked for.
 * Plain C, no device: the transport keeps the buffers, this the order.
 */
#ifndef AUTOPAR_XPOST_H
#define AUTOPAR_XPOST_H

#include <stdint.h>

struct xpend {
	int64_t pos;      /* its place in the source's sequence */
	int slot;         /* where it is received */
};

struct xpost {
	const int *seq;   /* the tags the source sends, in order (borrowed) */
	int n;
	int cyclic;       /* seq repeats: one step of a synchronous schedule */
	int64_t next;     /* receives posted so far: the next is seq[next % n] */
	struct xpend *pend; /* posted, not asked for yet, oldest first */
	int npend, cap;
};

void xpost_init(struct xpost *x, const int *seq, int n, int cyclic);
void xpost_release(struct xpost *x);
/* The receives to post before tag can be taken: 0 when one is pending,
 * -1 when the source sends no more of it. */
int64_t xpost_due(const struct xpost *x, int tag);
/* The tag of the next receive to post; -1 past the end. */
int xpost_peek(const struct xpost *x);
/* Records the next receive as posted into slot (AP_EFAIL out of memory,
 * or past the end). */
int xpost_push(struct xpost *x, int slot);
/* Takes the oldest pending receive of tag: its slot, -1 when none. */
int xpost_take(struct xpost *x, int tag);
/* The most receives pending at once (the slots a source needs) when the
 * executor asks for req[0 .. nreq) in that order from a source sending
 * seq; -1 when one of them never comes. */
int xpost_slots(const int *seq, int n, int cyclic, const int *req, int nreq);

#endif
