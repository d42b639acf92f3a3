/*
 * The transport of a single process (transport_self.c): one rank, nobody
 * to talk to; one-device plans and --check's reference.
 */
#ifndef AUTOPAR_TRANSPORT_SELF_H
#define AUTOPAR_TRANSPORT_SELF_H

#include "transport.h"

/* One rank. */
void transport_self_init(struct transport *t);

#endif
