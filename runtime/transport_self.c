/*
 * The transport of a single process: one rank, nothing to send.  Used for
 * the single-device reference run of --check and for one-device plans.
 */
#include "transport_self.h"

#include <stdlib.h>

#include "util/err.h"

static int self_isend(struct transport *t, const float *buf, int64_t n, int dst, int tag,
		      int *id)
{
	(void)t, (void)buf, (void)n, (void)tag, (void)id;
	return ap_err(AP_EFAIL, NULL, 0, "transport 'self': no rank %d to send to", dst);
}

static int self_recv(struct transport *t, float *buf, int64_t n, int src, int tag)
{
	(void)t, (void)buf, (void)n, (void)tag;
	return ap_err(AP_EFAIL, NULL, 0, "transport 'self': no rank %d to receive from", src);
}

static int self_group(struct transport *t, const int *ranks, int n, int *gid)
{
	(void)t;
	*gid = n == 1 && ranks[0] == 0 ? 0 : -1;
	return 0;
}

static int self_iallreduce(struct transport *t, int gid, float *buf, int64_t n, int *id)
{
	(void)t, (void)gid, (void)buf, (void)n;
	if (id)
		*id = -1;
	return 0;
}

/* ZeRO's collectives have no group of one to run over: the executor
 * keeps such a shard's optimizer state whole */
static int self_zero(struct transport *t, int gid, const float *in, float *out, int64_t n,
		     int *id)
{
	(void)t, (void)in, (void)out, (void)n, (void)id;
	return ap_err(AP_EFAIL, NULL, 0, "transport 'self': no group %d to share parts over", gid);
}

static int self_wait_one(struct transport *t, int id)
{
	(void)t, (void)id;
	return 0;
}

static int self_nop(struct transport *t)
{
	(void)t;
	return 0;
}

static int self_reduce(struct transport *t, double *v, int n)
{
	(void)t, (void)v, (void)n;
	return 0;
}

static void self_abort(struct transport *t, int code)
{
	(void)t;
	exit(code);
}

static void self_release(struct transport *t)
{
	(void)t;
}

static const struct transport_ops self_ops = {
	.name = "self",
	.isend = self_isend,
	.recv = self_recv,
	.group = self_group,
	.iallreduce = self_iallreduce,
	.ireduce_scatter = self_zero,
	.iallgather = self_zero,
	.wait_one = self_wait_one,
	.wait = self_nop,
	.progress = self_nop,
	.sum = self_reduce,
	.max = self_reduce,
	.barrier = self_nop,
	.abort = self_abort,
	.release = self_release,
};

void transport_self_init(struct transport *t)
{
	t->ops = &self_ops;
	t->rank = 0;
	t->size = 1;
	t->threads = 1; /* nothing shared */
	t->state = NULL;
}
