/*
 * The NCCL transport (transport_nccl.h): one rank per GPU.  The world
 * communicator comes from an ncclUniqueId that rank 0 makes and sends to
 * every rank through the MPI transport; each replica group is an
 * ncclCommSplit of it (collective over all ranks, as groups are).
 * Gradient all-reduces (and ZeRO's reduce-scatters and all-gathers) run
 * on a stream of their own: the stream first
 * waits for what the compute stream has queued so far (the gradient is
 * complete), and completing one (wait_one, wait) makes the compute stream
 * wait for its event, so the host never blocks and the all-reduce
 * overlaps the backward of the ops before it.
 *
 * Stage transfers (the executor's activations and gradients between
 * ranks, tags below xorder.ntags) go by ncclSend/ncclRecv, device buffer
 * to device buffer.  NCCL matches point-to-point calls between two ranks
 * in issue order, not by tag, and two ranks' task orders differ (1F1B:
 * stage 0 sends micro-batch 1's activation before it asks for micro-batch
 * 0's gradient, which stage 1 sends before it asks for that activation).
 * So the executor tells the transport at setup (order(), exec_order.c)
 * the tags it will send to each peer in issue order; the ranks exchange
 * these lists once over the MPI transport, and a receiver posts its
 * receives in its sender's order (xpost.c): asking for tag T from src
 * posts every receive from src not posted yet up to T, the earlier ones
 * into receive slots of their own, sized at setup by replaying the
 * executor's requests, where they wait until asked for; a receive then
 * copies its slot into the executor's buffer on the compute stream.
 *
 * Each ordered pair of ranks with transfers has a communicator of its
 * own (an ncclCommSplit of the world: the sender is its rank 0) and a
 * stream on each side: it carries only the sender's sends and the
 * receiver's receives, in the same order, so its k-th receive matches
 * its k-th send.  Why this cannot deadlock: a send waits only for the
 * compute stream to have produced its data (an event) and for the sends
 * before it on its channel; a receive for the one before it on its
 * channel, its matching send, and the compute stream's copy out of its
 * slot's previous receive, queued before anything that asks for it.  A
 * receive posted early waits only for sends its sender issues before the
 * one the executor needs, which that one waits for anyway.  The compute
 * stream waits for receives its task needs, whose sends come from tasks
 * earlier in the executor's global order (exec.c), and for a send only
 * where the MPI transport's wait would (a staging buffer reused, the end
 * of a step); the host waits only for the compute stream (a loss read
 * back) and never for a channel.  So, by induction over the global
 * order, every wait ends.  Sends
 * that are not stage transfers (parameter gathers) and everything else
 * stay tagged MPI messages through host copies (transport_staged.c), as
 * all transfers do where NCCL cannot run (several ranks on one GPU).  The
 * channels' streams and the all-reduce stream run NCCL kernels of
 * different communicators at once, which NCCL allows as long as they fit
 * on the GPU together (a few blocks each), and nothing allocates device
 * memory once the slots are made at setup.  Two threads must not send at
 * once (the order would be a race): threads is 0, so async-predict runs a
 * stage's forward and backward one after the other.  The bandwidth of NCCL's
 * send/recv is measured by `autopar profile --comm` (comm_bench.cu).
 */
#include "nccl_check.cuh"

#include <stdlib.h>
#include <string.h>

extern "C" {
#include "transport_nccl.h"
#include "transport_staged.h"
#include "util/grow.h"
#include "xpost.h"
}

/* the tags of the unique id's bytes and of the transfer orders: above
 * every tag the executor uses (exec_layout.c keeps them below 32766) */
#define ID_TAG 32767
#define ORDER_TAG 32766

/* A receive slot: a device buffer an early receive lands in. */
struct rslot {
	float *buf;
	cudaEvent_t done;  /* received, on the channel's stream */
	cudaEvent_t freed; /* copied out, on the compute stream */
	int busy, used;
};

/* This rank's side of the channel of an ordered pair of ranks. */
struct chan {
	ncclComm_t comm;   /* the pair; the sender is its rank 0 */
	cudaStream_t stream;
	int *seq, n;       /* the tags the sender sends, in order */
	int64_t next;      /* sender: sends issued */
	struct xpost post; /* receiver */
	struct rslot *slot;
	int nslot;
};

struct nccl_state {
	struct transport staged;  /* transfers, host reductions, barrier */
	ncclComm_t world;
	ncclComm_t *comm;         /* by group id */
	int ncomm, cap_comm;
	cudaStream_t stream;      /* the all-reduces' */
	cudaEvent_t *ev;          /* by event slot: its all-reduce's or
				   * send's completion */
	int *busy, nev, cap_ev;
	struct transport *inner;  /* the MPI transport: setup messages */
	int ordered;              /* order() has run: stage transfers by NCCL */
	int ntags, cyclic;
	int64_t *len;             /* by stage tag: floats */
	struct chan *out, *in;    /* by peer: sending to, receiving from it */
};

/* Event slot q (an all-reduce or a stage transfer's send) is id -(q + 2):
 * ids >= 0 are the staged transport's sends, -1 is "nothing to wait for". */
static int slot_of(int id)
{
	return -id - 2;
}

/* 1 when tag is a stage transfer (NCCL), 0 when not (staged), -1 when
 * its size is not the announced one */
static int stage_tag(const struct nccl_state *s, int tag, int64_t n)
{
	if (!s->ordered || tag >= s->ntags)
		return 0;
	if (n != s->len[tag]) {
		ap_err(AP_EFAIL, NULL, 0, "stage transfer tag %d: %lld floats, expected %lld", tag,
		       (long long)n, (long long)s->len[tag]);
		return -1;
	}
	return 1;
}

/* the tag a channel's sender sends next; -1 past the end of its order */
static int next_send(const struct nccl_state *s, const struct chan *c)
{
	if (c->n == 0 || (!s->cyclic && c->next >= c->n))
		return -1;
	return c->seq[c->next % c->n];
}

static int new_slot(struct nccl_state *s, int *q);

static int nccl_isend(struct transport *t, const float *buf, int64_t n, int dst, int tag,
		      int *id)
{
	struct nccl_state *s = (struct nccl_state *)t->state;
	struct chan *c;
	int st = stage_tag(s, tag, n), q;

	if (st <= 0)
		return st < 0 ? AP_EFAIL : s->staged.ops->isend(&s->staged, buf, n, dst, tag, id);
	c = &s->out[dst];
	/* the receiver posts in the announced order: any other order would
	 * hand it the wrong data */
	if (next_send(s, c) != tag)
		return ap_err(AP_EFAIL, NULL, 0, "rank %d sends stage transfer tag %d to rank %d "
			      "where its announced order has %d", t->rank, tag, dst, next_send(s, c));
	c->next++;
	if (id)
		*id = -1;
	if (new_slot(s, &q))
		return AP_EFAIL;
	/* the data is complete once the compute stream's work so far has run */
	CUDA_CHECK(cudaEventRecord(s->ev[q], cuda_ctx.stream));
	CUDA_CHECK(cudaStreamWaitEvent(c->stream, s->ev[q], 0));
	NCCL_CHECK(ncclSend(buf, (size_t)n, ncclFloat, 1, c->comm, c->stream));
	CUDA_CHECK(cudaEventRecord(s->ev[q], c->stream));
	if (id)
		*id = -(q + 2);
	return AP_OK;
}

/* Posts the channel's next receive into a free slot, once the compute
 * stream has copied out what the slot held before. */
static int post_next(struct nccl_state *s, struct chan *c, int src)
{
	int tag = xpost_peek(&c->post), k;

	for (k = 0; k < c->nslot && c->slot[k].busy; k++)
		;
	if (tag < 0 || k == c->nslot)
		return ap_err(AP_EFAIL, NULL, 0, "no receive slot left for stage transfer tag %d "
			      "from rank %d (%d slots)", tag, src, c->nslot);
	if (c->slot[k].used)
		CUDA_CHECK(cudaStreamWaitEvent(c->stream, c->slot[k].freed, 0));
	NCCL_CHECK(ncclRecv(c->slot[k].buf, (size_t)s->len[tag], ncclFloat, 0, c->comm,
			    c->stream));
	CUDA_CHECK(cudaEventRecord(c->slot[k].done, c->stream));
	c->slot[k].busy = c->slot[k].used = 1;
	return xpost_push(&c->post, k);
}

static int nccl_recv(struct transport *t, float *buf, int64_t n, int src, int tag)
{
	struct nccl_state *s = (struct nccl_state *)t->state;
	struct chan *c;
	int st = stage_tag(s, tag, n), k;
	int64_t due;

	if (st <= 0)
		return st < 0 ? AP_EFAIL : s->staged.ops->recv(&s->staged, buf, n, src, tag);
	c = &s->in[src];
	due = c->comm ? xpost_due(&c->post, tag) : -1;
	if (due < 0)
		return ap_err(AP_EFAIL, NULL, 0, "rank %d asks for stage transfer tag %d from rank "
			      "%d, which does not send it (any more)", t->rank, tag, src);
	for (int64_t i = 0; i < due; i++)
		if (post_next(s, c, src))
			return AP_EFAIL;
	k = xpost_take(&c->post, tag);
	CUDA_CHECK(cudaStreamWaitEvent(cuda_ctx.stream, c->slot[k].done, 0));
	CUDA_CHECK(cudaMemcpyAsync(buf, c->slot[k].buf, (size_t)n * sizeof *buf,
				   cudaMemcpyDeviceToDevice, cuda_ctx.stream));
	CUDA_CHECK(cudaEventRecord(c->slot[k].freed, cuda_ctx.stream));
	c->slot[k].busy = 0;
	return AP_OK;
}

static int nccl_group(struct transport *t, const int *ranks, int n, int *gid)
{
	struct nccl_state *s = (struct nccl_state *)t->state;
	ncclComm_t c = NULL;
	int member = 0;

	for (int i = 0; i < n; i++)
		member |= ranks[i] == t->rank;
	NCCL_CHECK(ncclCommSplit(s->world, member ? 0 : NCCL_SPLIT_NOCOLOR, t->rank, &c, NULL));
	*gid = -1;
	if (!member)
		return AP_OK;
	if (grow(&s->comm, s->ncomm, &s->cap_comm, sizeof *s->comm, 8))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	s->comm[s->ncomm] = c;
	*gid = s->ncomm++;
	return AP_OK;
}

/* a free event slot, its event made on first use */
static int new_slot(struct nccl_state *s, int *q)
{
	for (*q = 0; *q < s->nev; (*q)++)
		if (!s->busy[*q])
			break;
	if (*q == s->nev) {
		int cap = s->cap_ev;

		if (grow(&s->ev, s->nev, &s->cap_ev, sizeof *s->ev, 16) ||
		    grow(&s->busy, s->nev, &cap, sizeof *s->busy, 16))
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		CUDA_CHECK(cudaEventCreateWithFlags(&s->ev[s->nev], cudaEventDisableTiming));
		s->nev++;
	}
	s->busy[*q] = 1;
	return AP_OK;
}

/* A collective on the all-reduces' stream: begin() gives it an event
 * slot and makes the stream wait for what the compute stream has queued
 * so far (the gradient is complete); end() records its completion. */
static int begin(struct nccl_state *s, int *q, int *id)
{
	if (id)
		*id = -1;
	if (new_slot(s, q))
		return AP_EFAIL;
	CUDA_CHECK(cudaEventRecord(s->ev[*q], cuda_ctx.stream));
	CUDA_CHECK(cudaStreamWaitEvent(s->stream, s->ev[*q], 0));
	return AP_OK;
}

static int end(struct nccl_state *s, int q, int *id)
{
	CUDA_CHECK(cudaEventRecord(s->ev[q], s->stream));
	if (id)
		*id = -(q + 2);
	return AP_OK;
}

static int nccl_iallreduce(struct transport *t, int gid, float *buf, int64_t n, int *id)
{
	struct nccl_state *s = (struct nccl_state *)t->state;
	int q;

	if (begin(s, &q, id))
		return AP_EFAIL;
	NCCL_CHECK(ncclAllReduce(buf, buf, (size_t)n, ncclFloat, ncclSum, s->comm[gid], s->stream));
	return end(s, q, id);
}

/* ZeRO's: a communicator from ncclCommSplit keyed by the world rank
 * numbers its members in ascending order, as transport.h asks */
static int nccl_ireduce_scatter(struct transport *t, int gid, const float *in, float *out,
				int64_t n, int *id)
{
	struct nccl_state *s = (struct nccl_state *)t->state;
	int q;

	if (begin(s, &q, id))
		return AP_EFAIL;
	NCCL_CHECK(ncclReduceScatter(in, out, (size_t)n, ncclFloat, ncclSum, s->comm[gid],
				     s->stream));
	return end(s, q, id);
}

static int nccl_iallgather(struct transport *t, int gid, const float *in, float *out,
			   int64_t n, int *id)
{
	struct nccl_state *s = (struct nccl_state *)t->state;
	int q;

	if (begin(s, &q, id))
		return AP_EFAIL;
	NCCL_CHECK(ncclAllGather(in, out, (size_t)n, ncclFloat, s->comm[gid], s->stream));
	return end(s, q, id);
}

/* the compute stream continues once event slot q is done */
static int join(struct nccl_state *s, int q)
{
	CUDA_CHECK(cudaStreamWaitEvent(cuda_ctx.stream, s->ev[q], 0));
	s->busy[q] = 0;
	return AP_OK;
}

static int nccl_wait_one(struct transport *t, int id)
{
	struct nccl_state *s = (struct nccl_state *)t->state;

	if (id >= 0)
		return s->staged.ops->wait_one(&s->staged, id);
	if (id == -1)
		return AP_OK;
	return join(s, slot_of(id));
}

static int nccl_wait(struct transport *t)
{
	struct nccl_state *s = (struct nccl_state *)t->state;

	for (int q = 0; q < s->nev; q++)
		if (s->busy[q] && join(s, q))
			return AP_EFAIL;
	return s->staged.ops->wait(&s->staged);
}

static int nccl_progress(struct transport *t)
{
	struct nccl_state *s = (struct nccl_state *)t->state;

	return s->staged.ops->progress(&s->staged);
}

static int nccl_sum(struct transport *t, double *v, int n)
{
	struct nccl_state *s = (struct nccl_state *)t->state;

	return s->staged.ops->sum(&s->staged, v, n);
}

static int nccl_max(struct transport *t, double *v, int n)
{
	struct nccl_state *s = (struct nccl_state *)t->state;

	return s->staged.ops->max(&s->staged, v, n);
}

static int nccl_barrier(struct transport *t)
{
	struct nccl_state *s = (struct nccl_state *)t->state;

	return s->staged.ops->barrier(&s->staged);
}

static void nccl_abort(struct transport *t, int code)
{
	struct nccl_state *s = (struct nccl_state *)t->state;

	s->staged.ops->abort(&s->staged, code);
}

static void chan_release(struct chan *c)
{
	for (int k = 0; k < c->nslot; k++) {
		cudaFree(c->slot[k].buf);
		if (c->slot[k].done)
			cudaEventDestroy(c->slot[k].done);
		if (c->slot[k].freed)
			cudaEventDestroy(c->slot[k].freed);
	}
	if (c->comm)
		ncclCommDestroy(c->comm);
	if (c->stream)
		cudaStreamDestroy(c->stream);
	xpost_release(&c->post);
	free(c->slot);
	free(c->seq);
	memset(c, 0, sizeof *c);
}

/* the channels and orders of order(), if any */
static void unorder(struct transport *t)
{
	struct nccl_state *s = (struct nccl_state *)t->state;

	for (int r = 0; r < t->size && s->out; r++) {
		chan_release(&s->out[r]);
		chan_release(&s->in[r]);
	}
	free(s->out);
	free(s->in);
	free(s->len);
	s->out = s->in = NULL;
	s->len = NULL;
	s->ordered = 0;
}

static void nccl_release(struct transport *t)
{
	struct nccl_state *s = (struct nccl_state *)t->state;

	if (!s)
		return;
	unorder(t);
	for (int i = 0; i < s->ncomm; i++)
		ncclCommDestroy(s->comm[i]);
	if (s->world)
		ncclCommDestroy(s->world);
	for (int q = 0; q < s->nev; q++)
		cudaEventDestroy(s->ev[q]);
	if (s->stream)
		cudaStreamDestroy(s->stream);
	if (s->staged.ops)
		s->staged.ops->release(&s->staged);
	free(s->comm);
	free(s->ev);
	free(s->busy);
	free(s);
	t->state = NULL;
}

/* This rank's list of tags to dst over the MPI transport: its length as
 * two 16-bit halves, then the tags (exact as floats, being below 32767),
 * from *keep, which must live until the sends complete.  recv_list()
 * receives one into a malloc'ed *tags. */
static int send_list(struct transport *inner, const int *tags, int n, int dst, float **keep)
{
	float *v = (float *)malloc((size_t)(n + 2) * sizeof *v);

	*keep = v;
	if (!v)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	v[0] = (float)(n & 0xffff);
	v[1] = (float)(n >> 16);
	for (int k = 0; k < n; k++)
		v[k + 2] = (float)tags[k];
	if (inner->ops->isend(inner, v, 2, dst, ORDER_TAG, NULL))
		return AP_EFAIL;
	return inner->ops->isend(inner, v + 2, n, dst, ORDER_TAG, NULL);
}

static int recv_list(struct transport *inner, int src, int **tags, int *n)
{
	float h[2], *v;

	if (inner->ops->recv(inner, h, 2, src, ORDER_TAG))
		return AP_EFAIL;
	*n = (int)h[0] + ((int)h[1] << 16);
	v = (float *)malloc((size_t)(*n > 0 ? *n : 1) * sizeof *v);
	*tags = (int *)malloc((size_t)(*n > 0 ? *n : 1) * sizeof **tags);
	if (!v || !*tags) {
		free(v);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	if (inner->ops->recv(inner, v, *n, src, ORDER_TAG)) {
		free(v);
		return AP_EFAIL;
	}
	for (int k = 0; k < *n; k++)
		(*tags)[k] = (int)v[k];
	free(v);
	return AP_OK;
}

/* Every rank's sends to every other: pairs[a * size + b] > 0 where a
 * sends stage transfers to b; then this rank's lists to the peers it
 * sends to and theirs from those it receives from. */
static int exchange(struct transport *t, const struct xorder *o, double *pairs)
{
	struct nccl_state *s = (struct nccl_state *)t->state;
	int me = t->rank, size = t->size, st = AP_OK;
	float **keep = (float **)calloc((size_t)size, sizeof *keep);

	if (!keep)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int d = 0; d < size; d++)
		pairs[me * size + d] = o->sofs[d + 1] > o->sofs[d];
	st = s->inner->ops->sum(s->inner, pairs, size * size);
	for (int d = 0; d < size && !st; d++)
		if (pairs[me * size + d] > 0)
			st = send_list(s->inner, o->stags + o->sofs[d], o->sofs[d + 1] - o->sofs[d], d,
				       &keep[d]);
	for (int r = 0; r < size && !st; r++)
		if (pairs[r * size + me] > 0)
			st = recv_list(s->inner, r, &s->in[r].seq, &s->in[r].n);
	if (!st)
		st = s->inner->ops->wait(s->inner);
	for (int d = 0; d < size; d++)
		free(keep[d]);
	free(keep);
	return st;
}

/* The receiving side of the channel from src: the order, and enough
 * slots of the largest transfer for the receives pending at once while
 * this rank asks for src's transfers in its own order. */
static int in_setup(struct nccl_state *s, struct chan *c, const struct xorder *o, int src,
		    int me)
{
	const int *req = o->rtags + o->rofs[src];
	int nreq = o->rofs[src + 1] - o->rofs[src];
	int64_t most = 1;

	if (nreq != c->n)
		return ap_err(AP_EFAIL, NULL, 0, "rank %d sends %d stage transfers to rank %d, "
			      "which asks for %d", src, c->n, me, nreq);
	xpost_init(&c->post, c->seq, c->n, o->cyclic);
	c->nslot = xpost_slots(c->seq, c->n, o->cyclic, req, nreq);
	if (c->nslot < 0)
		return ap_err(AP_EFAIL, NULL, 0, "rank %d asks for a stage transfer that rank %d "
			      "does not send", me, src);
	c->slot = (struct rslot *)calloc((size_t)(c->nslot > 0 ? c->nslot : 1), sizeof *c->slot);
	if (!c->slot)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int k = 0; k < c->n; k++)
		most = s->len[c->seq[k]] > most ? s->len[c->seq[k]] : most;
	for (int k = 0; k < c->nslot; k++) {
		CUDA_CHECK(cudaMalloc((void **)&c->slot[k].buf, (size_t)most * sizeof(float)));
		CUDA_CHECK(cudaEventCreateWithFlags(&c->slot[k].done, cudaEventDisableTiming));
		CUDA_CHECK(cudaEventCreateWithFlags(&c->slot[k].freed, cudaEventDisableTiming));
	}
	return AP_OK;
}

/* The channel of pair a -> b: a communicator of the two (collective over
 * all ranks, in the same order everywhere) and a stream on each side. */
static int pair_setup(struct transport *t, int a, int b)
{
	struct nccl_state *s = (struct nccl_state *)t->state;
	int me = t->rank, member = me == a || me == b;
	struct chan *c = me == a ? &s->out[b] : &s->in[a];
	ncclComm_t comm = NULL;

	NCCL_CHECK(ncclCommSplit(s->world, member ? 0 : NCCL_SPLIT_NOCOLOR, me == a ? 0 : 1,
				 &comm, NULL));
	if (!member)
		return AP_OK;
	c->comm = comm;
	CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
	return AP_OK;
}

static int order_setup(struct transport *t, const struct xorder *o, double *pairs)
{
	struct nccl_state *s = (struct nccl_state *)t->state;
	int size = t->size, me = t->rank;

	s->ntags = o->ntags;
	s->cyclic = o->cyclic;
	s->out = (struct chan *)calloc((size_t)size, sizeof *s->out);
	s->in = (struct chan *)calloc((size_t)size, sizeof *s->in);
	s->len = (int64_t *)malloc((size_t)(o->ntags > 0 ? o->ntags : 1) * sizeof *s->len);
	if (!s->out || !s->in || !s->len)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	memcpy(s->len, o->len, (size_t)o->ntags * sizeof *s->len);
	if (exchange(t, o, pairs))
		return AP_EFAIL;
	for (int a = 0; a < size; a++)
		for (int b = 0; b < size; b++)
			if (pairs[a * size + b] > 0 && pair_setup(t, a, b))
				return AP_EFAIL;
	for (int d = 0; d < size; d++) {
		struct chan *c = &s->out[d];

		c->n = o->sofs[d + 1] - o->sofs[d];
		c->seq = (int *)malloc((size_t)(c->n > 0 ? c->n : 1) * sizeof *c->seq);
		if (!c->seq)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		memcpy(c->seq, o->stags + o->sofs[d], (size_t)c->n * sizeof *c->seq);
		if (o->rofs[d + 1] > o->rofs[d] && !s->in[d].comm)
			return ap_err(AP_EFAIL, NULL, 0, "rank %d expects stage transfers from rank %d, "
				      "which sends none", me, d);
		if (s->in[d].comm && in_setup(s, &s->in[d], o, d, me))
			return AP_EFAIL;
	}
	s->ordered = 1;
	return AP_OK;
}

/* transport_ops.order: collective; a later call replaces the channels */
static int nccl_order(struct transport *t, const struct xorder *o)
{
	double *pairs = (double *)calloc((size_t)t->size * (size_t)t->size, sizeof *pairs);
	int st;

	if (!pairs)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	unorder(t);
	st = order_setup(t, o, pairs);
	free(pairs);
	if (st)
		unorder(t);
	return st;
}

static const struct transport_ops nccl_ops = {
	"nccl",          nccl_isend, nccl_recv,    nccl_group, nccl_iallreduce,
	nccl_ireduce_scatter,        nccl_iallgather,
	nccl_wait_one,   nccl_wait,  nccl_progress, nccl_sum,  nccl_max,
	nccl_barrier,    nccl_abort, nccl_release, nccl_order,
};

/* Rank 0's unique id to every rank of inner, a byte per float (exact). */
static int share_id(struct transport *inner, ncclUniqueId *id)
{
	float v[sizeof id->internal];

	if (inner->rank == 0) {
		NCCL_CHECK(ncclGetUniqueId(id));
		for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
			v[i] = (float)(unsigned char)id->internal[i];
		for (int r = 1; r < inner->size; r++)
			if (inner->ops->isend(inner, v, (int64_t)(sizeof v / sizeof v[0]), r, ID_TAG,
					      NULL))
				return AP_EFAIL;
		return inner->ops->wait(inner);
	}
	if (inner->ops->recv(inner, v, (int64_t)(sizeof v / sizeof v[0]), 0, ID_TAG))
		return AP_EFAIL;
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		id->internal[i] = (char)(unsigned char)v[i];
	return AP_OK;
}

static int nccl_setup(struct nccl_state *s, struct transport *inner, const struct backend *be)
{
	ncclUniqueId id;

	if (be->init())
		return AP_EFAIL;
	if (be != &backend_cuda)
		return ap_err(AP_EINPUT, "nccl", 0, "the NCCL transport carries the cuda backend's "
			      "memory, not the %s backend's", be->name);
	if (transport_staged_init(&s->staged, inner, be) || share_id(inner, &id))
		return AP_EFAIL;
	NCCL_CHECK(ncclCommInitRank(&s->world, inner->size, id, inner->rank));
	CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
	return AP_OK;
}

extern "C" int transport_nccl_init(struct transport *t, struct transport *inner,
				   const struct backend *be)
{
	struct nccl_state *s = (struct nccl_state *)calloc(1, sizeof *s);

	if (!s)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	t->ops = &nccl_ops;
	t->rank = inner->rank;
	t->size = inner->size;
	t->threads = 0; /* sends must reach NCCL in the announced order */
	t->state = s;
	s->inner = inner;
	if (nccl_setup(s, inner, be)) {
		nccl_release(t);
		return AP_EFAIL;
	}
	return AP_OK;
}
