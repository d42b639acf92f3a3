/*
 * The order of one rank's stage transfers (exec_order.c), for a transport
 * whose point-to-point messages match in issue order (NCCL: its `order`
 * entry, transport.h).
 */
#ifndef AUTOPAR_EXEC_ORDER_H
#define AUTOPAR_EXEC_ORDER_H

#include "transport.h"

struct exec;

/* The stage transfers e sends and receives, per peer, in the order its
 * steps issue them (struct xorder in transport.h); xorder_release() frees
 * it. */
int exec_order(struct exec *e, struct xorder *o);
void xorder_release(struct xorder *o);

#endif
