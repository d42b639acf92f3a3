/*
 * The MPI transport: transfers are MPI_Isend / MPI_Recv on MPI_COMM_WORLD
 * (the tag names the transfer, so messages between two ranks match
 * whatever order each side reaches them in), replica groups are
 * sub-communicators from MPI_Comm_split, gradients are summed with
 * MPI_Iallreduce so that a group's all-reduce overlaps the backward of the
 * ops before it (ZeRO's with MPI_Ireduce_scatter_block and
 * MPI_Iallgather).  Errors abort the job: with MPI a failed rank must take
 * the others down rather than leave them waiting.
 */
#include "transport_mpi.h"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/grow.h"

struct mpi_state {
	MPI_Comm *comm;
	int ncomm, cap_comm;
	MPI_Request *req;      /* ids index it; MPI_REQUEST_NULL when done */
	int nreq, cap_req;
	int *free_id;          /* ids completed by wait_one, for reuse */
	int nfree;
	pthread_mutex_t lock;  /* guards req, nreq, free_id, nfree */
};


/* 0, or a message naming call and what MPI says of its code rc. */
static int mpi_status(int rc, const char *call)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (rc == MPI_SUCCESS)
		return 0;
	MPI_Error_string(rc, msg, &len);
	return ap_err(AP_EFAIL, __FILE__, __LINE__, "%s: %s", call, msg);
}

/* Returns from the caller with a message naming the call when it fails. */
#define MPI_CHECK(call)                                                        \
	do {                                                                   \
		int rc_ = (call);                                              \
		if (rc_ != MPI_SUCCESS)                                        \
			return mpi_status(rc_, #call);                         \
	} while (0)

static MPI_Request *new_req(struct mpi_state *s, int *id)
{
	int *f;

	if (s->nfree) {
		*id = s->free_id[--s->nfree];
		return &s->req[*id];
	}
	if (grow(&s->req, s->nreq, &s->cap_req, sizeof *s->req, 16))
		return NULL;
	/* room to return every id to the free list */
	f = realloc(s->free_id, (size_t)s->cap_req * sizeof *s->free_id);
	if (!f)
		return NULL;
	s->free_id = f;
	*id = s->nreq;
	return &s->req[s->nreq++];
}

/* counts above INT_MAX would need derived types; tensors here are far
 * smaller, and a larger one is refused rather than cut */
static int count_of(int64_t n, int *out)
{
	if (n < 0 || n > 0x7fffffff)
		return ap_err(AP_EFAIL, NULL, 0, "transfer of %lld floats is too large",
			      (long long)n);
	*out = (int)n;
	return 0;
}

/* A non-blocking call of n floats: start() locks the state and takes a
 * request slot and the count (unlocking on failure), started() unlocks
 * once the call rc is made and names it if it failed. */
static int start(struct transport *t, int64_t n, MPI_Request **r, int *cnt, int *id)
{
	struct mpi_state *s = t->state;
	int dummy;

	pthread_mutex_lock(&s->lock);
	if (!(*r = new_req(s, id ? id : &dummy))) {
		pthread_mutex_unlock(&s->lock);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	if (count_of(n, cnt)) {
		pthread_mutex_unlock(&s->lock);
		return AP_EFAIL;
	}
	return AP_OK;
}

static int started(struct transport *t, int rc, const char *call)
{
	struct mpi_state *s = t->state;

	pthread_mutex_unlock(&s->lock);
	return mpi_status(rc, call);
}

static int mpi_isend(struct transport *t, const float *buf, int64_t n, int dst, int tag,
		     int *id)
{
	MPI_Request *r;
	int cnt;

	if (start(t, n, &r, &cnt, id))
		return AP_EFAIL;
	return started(t, MPI_Isend(buf, cnt, MPI_FLOAT, dst, tag, MPI_COMM_WORLD, r), "MPI_Isend");
}

static int mpi_recv(struct transport *t, float *buf, int64_t n, int src, int tag)
{
	int cnt = 0;

	(void)t;
	if (count_of(n, &cnt))
		return AP_EFAIL;
	MPI_CHECK(MPI_Recv(buf, cnt, MPI_FLOAT, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	return 0;
}

static int mpi_group(struct transport *t, const int *ranks, int n, int *gid)
{
	struct mpi_state *s = t->state;
	MPI_Comm c;
	int member = 0;

	for (int i = 0; i < n; i++)
		member |= ranks[i] == t->rank;
	MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, t->rank, &c));
	*gid = -1;
	if (!member)
		return 0;
	if (grow(&s->comm, s->ncomm, &s->cap_comm, sizeof *s->comm, 8))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	s->comm[s->ncomm] = c;
	*gid = s->ncomm++;
	return 0;
}

static int mpi_iallreduce(struct transport *t, int gid, float *buf, int64_t n, int *id)
{
	struct mpi_state *s = t->state;
	MPI_Request *r;
	int cnt;

	if (start(t, n, &r, &cnt, id))
		return AP_EFAIL;
	return started(t,
		       MPI_Iallreduce(MPI_IN_PLACE, buf, cnt, MPI_FLOAT, MPI_SUM, s->comm[gid], r),
		       "MPI_Iallreduce");
}

static int mpi_ireduce_scatter(struct transport *t, int gid, const float *in, float *out,
			       int64_t n, int *id)
{
	struct mpi_state *s = t->state;
	MPI_Request *r;
	int cnt;

	if (start(t, n, &r, &cnt, id))
		return AP_EFAIL;
	return started(t,
		       MPI_Ireduce_scatter_block(in, out, cnt, MPI_FLOAT, MPI_SUM, s->comm[gid], r),
		       "MPI_Ireduce_scatter_block");
}

static int mpi_iallgather(struct transport *t, int gid, const float *in, float *out, int64_t n,
			  int *id)
{
	struct mpi_state *s = t->state;
	MPI_Request *r;
	int cnt;

	if (start(t, n, &r, &cnt, id))
		return AP_EFAIL;
	return started(t, MPI_Iallgather(in, cnt, MPI_FLOAT, out, cnt, MPI_FLOAT, s->comm[gid], r),
		       "MPI_Iallgather");
}

static int mpi_wait_one(struct transport *t, int id)
{
	struct mpi_state *s = t->state;
	int done = 0, rc;

	for (;;) {
		pthread_mutex_lock(&s->lock);
		rc = MPI_Test(&s->req[id], &done, MPI_STATUS_IGNORE);
		if (rc == MPI_SUCCESS && done)
			s->free_id[s->nfree++] = id;
		pthread_mutex_unlock(&s->lock);
		if (rc != MPI_SUCCESS || done)
			return mpi_status(rc, "MPI_Test");
		sched_yield();
	}
}

/* Called by one thread when no other is running tasks. */
static int mpi_wait(struct transport *t)
{
	struct mpi_state *s = t->state;

	MPI_CHECK(MPI_Waitall(s->nreq, s->req, MPI_STATUSES_IGNORE));
	s->nreq = 0;
	s->nfree = 0;
	return 0;
}

static int mpi_progress(struct transport *t)
{
	struct mpi_state *s = t->state;
	int done = 0, rc = MPI_SUCCESS;

	pthread_mutex_lock(&s->lock);
	if (s->nreq)
		rc = MPI_Testall(s->nreq, s->req, &done, MPI_STATUSES_IGNORE);
	pthread_mutex_unlock(&s->lock);
	return mpi_status(rc, "MPI_Testall");
}

static int mpi_sum(struct transport *t, double *v, int n)
{
	(void)t;
	MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
	return 0;
}

static int mpi_max(struct transport *t, double *v, int n)
{
	(void)t;
	MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
	return 0;
}

static int mpi_barrier(struct transport *t)
{
	(void)t;
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	return 0;
}

static void mpi_abort(struct transport *t, int code)
{
	fprintf(stderr, "autopar run: rank %d failed; ending the job\n", t->rank);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, code);
	exit(code);
}

static void mpi_release(struct transport *t)
{
	struct mpi_state *s = t->state;

	if (!s)
		return;
	for (int i = 0; i < s->ncomm; i++)
		MPI_Comm_free(&s->comm[i]);
	free(s->comm);
	free(s->req);
	free(s->free_id);
	pthread_mutex_destroy(&s->lock);
	free(s);
	t->state = NULL;
	MPI_Finalize();
}

static const struct transport_ops mpi_ops = {
	.name = "mpi",
	.isend = mpi_isend,
	.recv = mpi_recv,
	.group = mpi_group,
	.iallreduce = mpi_iallreduce,
	.ireduce_scatter = mpi_ireduce_scatter,
	.iallgather = mpi_iallgather,
	.wait_one = mpi_wait_one,
	.wait = mpi_wait,
	.progress = mpi_progress,
	.sum = mpi_sum,
	.max = mpi_max,
	.barrier = mpi_barrier,
	.abort = mpi_abort,
	.release = mpi_release,
};

const char *transport_mpi_version(void)
{
	static char v[MPI_MAX_LIBRARY_VERSION_STRING];
	int len = 0;

	if (MPI_Get_library_version(v, &len) != MPI_SUCCESS)
		return "unknown";
	v[strcspn(v, ",\n")] = '\0';
	return v;
}

int transport_mpi_in_job(void)
{
	return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

int transport_mpi_share(struct transport *t, char **bytes, long *len)
{
	long n = t->rank == 0 ? *len : 0;

	MPI_CHECK(MPI_Bcast(&n, 1, MPI_LONG, 0, MPI_COMM_WORLD));
	if (n < 0)
		return AP_EINPUT; /* rank 0 could not read them, and said why */
	if (t->rank != 0) {
		*bytes = malloc((size_t)n + 1);
		if (!*bytes)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		*len = n;
	}
	for (long at = 0; at < n; at += 1L << 30) {
		int chunk = n - at < (1L << 30) ? (int)(n - at) : 1 << 30;

		MPI_CHECK(MPI_Bcast(*bytes + at, chunk, MPI_CHAR, 0, MPI_COMM_WORLD));
	}
	(*bytes)[n] = '\0';
	return AP_OK;
}

int transport_mpi_init(struct transport *t, int *argc, char ***argv)
{
	struct mpi_state *s = calloc(1, sizeof *s);
	int inited = 0, level = MPI_THREAD_SINGLE;

	if (!s)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	t->state = s;
	pthread_mutex_init(&s->lock, NULL);
	MPI_CHECK(MPI_Initialized(&inited));
	if (!inited)
		MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &level));
	else
		MPI_CHECK(MPI_Query_thread(&level));
	t->threads = level == MPI_THREAD_MULTIPLE;
	/* errors come back as codes, so MPI_CHECK can name the call */
	MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &t->rank));
	MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &t->size));
	t->ops = &mpi_ops;
	return 0;
}
