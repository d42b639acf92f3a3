/*
 * The NCCL transport (transport_nccl.cu, in libautopar-cuda.so; the
 * binary's entry points that load it are in cuda_entry.c, cuda_load.h).
 */
#ifndef AUTOPAR_TRANSPORT_NCCL_H
#define AUTOPAR_TRANSPORT_NCCL_H

#include "transport.h"

struct backend;
/* One rank per GPU; gradients all-reduced by NCCL on ncclCommSplit
 * groups, on a stream of their own so they overlap the backward; stage
 * transfers by NCCL send/recv in the order `order` gives, on a
 * communicator and stream per ordered pair of ranks; other messages as
 * transport_staged.  Collective over inner's ranks; without NCCL in the
 * build it says so. */
int transport_nccl_init(struct transport *t, struct transport *inner,
			const struct backend *be);
/* 1 when this build has the NCCL transport (cuda_entry.c) */
int transport_nccl_built(void);

#endif
