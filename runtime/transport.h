/*
 * How ranks talk (docs/runtime.md): point-to-point transfers of tensor
 * regions, all-reduces of gradients inside replica groups, and the few
 * whole-job reductions the driver needs.  A transport fills `struct
 * transport_ops`; transport_mpi.c is Open MPI (send/recv and all-reduce on
 * sub-communicators), transport_self.c a single process that has nobody to
 * talk to, transport_staged.c a device backend's buffers through host
 * copies, transport_nccl.cu NCCL.  Each declares its constructor in a
 * header of its own (transport_mpi.h, transport_self.h, transport_staged.h,
 * transport_nccl.h); this one is the interface they share.
 *
 * Sends are non-blocking: the buffer must stay untouched until wait(), or
 * wait_one() of the id the send returned (ids are valid until wait()).
 * Every rank creates the same groups in the same order; a rank outside a
 * group gets the id -1.
 */
#ifndef AUTOPAR_TRANSPORT_H
#define AUTOPAR_TRANSPORT_H

#include <stdint.h>

struct transport;

/* The stage transfers of one rank (exec_order.c): per peer d, the tags it
 * sends to d in the order it issues them, stags[sofs[d] .. sofs[d + 1]),
 * and the tags it receives from d in the order it asks for them,
 * rtags[rofs[d] .. rofs[d + 1]).  With cyclic, the lists are one step and
 * every step repeats them (the synchronous schedules); else they are the
 * whole run.  Tags below ntags are stage transfers, of len[tag] floats
 * each; the others (parameter gathers) are not ordered. */
struct xorder {
	int size, cyclic, ntags;
	int *sofs, *stags, *rofs, *rtags;
	int64_t *len;
};

struct transport_ops {
	const char *name;
	int (*isend)(struct transport *t, const float *buf, int64_t n, int dst, int tag,
		     int *id);
	int (*recv)(struct transport *t, float *buf, int64_t n, int src, int tag);
	/* collective over all ranks: a group of ranks[0..n) */
	int (*group)(struct transport *t, const int *ranks, int n, int *gid);
	/* starts summing buf over group gid in place */
	int (*iallreduce)(struct transport *t, int gid, float *buf, int64_t n, int *id);
	/* ZeRO's collectives over group gid of r members, member q being
	 * the q-th of its ranks in ascending order: reduce-scatter sums
	 * in[0 .. r n) over the members and gives member q part q of the
	 * sum, in[q n .. (q + 1) n), into out[0 .. n); all-gather puts
	 * member q's in[0 .. n) at out[q n ..] of every member.  in and out
	 * do not overlap; non-blocking as iallreduce. */
	int (*ireduce_scatter)(struct transport *t, int gid, const float *in, float *out,
			       int64_t n, int *id);
	int (*iallgather)(struct transport *t, int gid, const float *in, float *out, int64_t n,
			  int *id);
	/* completes the send or all-reduce `id` */
	int (*wait_one)(struct transport *t, int id);
	/* completes every send and all-reduce started */
	int (*wait)(struct transport *t);
	/* lets started sends and all-reduces advance without waiting for
	 * them (MPI moves data only inside its calls) */
	int (*progress)(struct transport *t);
	/* sums / maxima of v[0..n) over all ranks, in place */
	int (*sum)(struct transport *t, double *v, int n);
	int (*max)(struct transport *t, double *v, int n);
	int (*barrier)(struct transport *t);
	/* ends the whole job now with exit code `code` */
	void (*abort)(struct transport *t, int code);
	void (*release)(struct transport *t);
	/* Only where point-to-point messages match in issue order, not by
	 * tag (NCCL), else NULL: the stage transfers this rank will send and
	 * receive, before the first (collective). */
	int (*order)(struct transport *t, const struct xorder *o);
};

struct transport {
	const struct transport_ops *ops;
	int rank, size;
	int threads;    /* two threads may call the ops at once */
	void *state;
};

#endif
