/*
 * The host-staged transport (transport_staged.c): a device backend's
 * buffers carried by a host transport through host copies.
 */
#ifndef AUTOPAR_TRANSPORT_STAGED_H
#define AUTOPAR_TRANSPORT_STAGED_H

#include "transport.h"

struct backend;
/* The buffers of backend be carried by a host transport (inner, kept by
 * the caller): where NCCL cannot run, e.g. several ranks on one GPU. */
int transport_staged_init(struct transport *t, struct transport *inner,
			  const struct backend *be);

#endif
