/*
 * The NCCL transport (transport.h): one rank per GPU.  The world
 * communicator comes from an ncclUniqueId that rank 0 makes and sends to
 * every rank through the MPI transport; each replica group is an
 * ncclCommSplit of it (collective over all ranks, as groups are).
 * Gradient all-reduces run on a stream of their own: the stream first
 * waits for what the compute stream has queued so far (the gradient is
 * complete), and completing one (wait_one, wait) makes the compute stream
 * wait for its event, so the host never blocks and the all-reduce
 * overlaps the backward of the ops before it.
 *
 * Transfers between stages stay tagged MPI messages through host copies
 * (transport_staged.c): the executor matches a transfer by its tag,
 * whatever order the two sides reach it in, and NCCL's point-to-point
 * calls match in issue order only, which two ranks' task orders need not
 * share.  The bandwidth of NCCL's send/recv is measured by
 * `autopar profile --comm` (comm_bench.cu).
 */
#include "nccl_check.cuh"

#include <stdlib.h>
#include <string.h>

extern "C" {
#include "grow.h"
#include "transport.h"
}

/* the tag of the unique id's bytes: above every tag the executor uses */
#define ID_TAG 32767

struct nccl_state {
	struct transport staged;  /* transfers, host reductions, barrier */
	ncclComm_t world;
	ncclComm_t *comm;         /* by group id */
	int ncomm, cap_comm;
	cudaStream_t stream;      /* the all-reduces' */
	cudaEvent_t *ev;          /* by all-reduce slot: its completion */
	int *busy, nev, cap_ev;
};

/* All-reduce slot q is id -(q + 2): ids >= 0 are the staged transport's
 * sends, -1 is "nothing to wait for". */
static int slot_of(int id)
{
	return -id - 2;
}

static int nccl_isend(struct transport *t, const float *buf, int64_t n, int dst, int tag,
		      int *id)
{
	struct nccl_state *s = (struct nccl_state *)t->state;

	return s->staged.ops->isend(&s->staged, buf, n, dst, tag, id);
}

static int nccl_recv(struct transport *t, float *buf, int64_t n, int src, int tag)
{
	struct nccl_state *s = (struct nccl_state *)t->state;

	return s->staged.ops->recv(&s->staged, buf, n, src, tag);
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

/* a free all-reduce slot, its event made on first use */
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

static int nccl_iallreduce(struct transport *t, int gid, float *buf, int64_t n, int *id)
{
	struct nccl_state *s = (struct nccl_state *)t->state;
	int q;

	if (id)
		*id = -1;
	if (new_slot(s, &q))
		return AP_EFAIL;
	/* the gradient is complete once the compute stream's work so far
	 * has run */
	CUDA_CHECK(cudaEventRecord(s->ev[q], cuda_ctx.stream));
	CUDA_CHECK(cudaStreamWaitEvent(s->stream, s->ev[q], 0));
	NCCL_CHECK(ncclAllReduce(buf, buf, (size_t)n, ncclFloat, ncclSum, s->comm[gid], s->stream));
	CUDA_CHECK(cudaEventRecord(s->ev[q], s->stream));
	if (id)
		*id = -(q + 2);
	return AP_OK;
}

/* the compute stream continues once all-reduce slot q is done */
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

static void nccl_release(struct transport *t)
{
	struct nccl_state *s = (struct nccl_state *)t->state;

	if (!s)
		return;
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

static const struct transport_ops nccl_ops = {
	"nccl",          nccl_isend, nccl_recv,    nccl_group, nccl_iallreduce,
	nccl_wait_one,   nccl_wait,  nccl_progress, nccl_sum,  nccl_max,
	nccl_barrier,    nccl_abort, nccl_release, NULL,
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
	t->state = s;
	if (nccl_setup(s, inner, be)) {
		nccl_release(t);
		return AP_EFAIL;
	}
	return AP_OK;
}

extern "C" int transport_nccl_built(void)
{
	return 1;
}
