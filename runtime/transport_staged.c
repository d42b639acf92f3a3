/*
 * The host-staged transport (transport.h): a device backend's buffers
 * carried by a host transport.  A send copies its buffer to the host and
 * starts the inner send from there (the host copy lives until the send
 * completes); a receive receives on the host and copies up; an all-reduce
 * copies down, sums on the host and copies back before it returns, so it
 * completes at once.  This is how multi-rank plans run where NCCL cannot
 * (several ranks on one GPU, DESIGN section 7), and how the NCCL
 * transport carries the messages that are not stage transfers (parameter
 * gathers).  With the CPU backend the copies
 * are plain memcpy, which makes it testable without a device.
 */
#include "transport.h"

#include <stdlib.h>

#include "backend.h"
#include "err.h"
#include "grow.h"

struct pending {
	int id;      /* the inner transport's send */
	float *host; /* its host copy */
};

struct staged {
	struct transport *inner;
	const struct backend *be;
	struct pending *p;
	int np, cap;
};

static float *host_copy(struct staged *s, const float *buf, int64_t n)
{
	float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof *h);

	if (!h) {
		ap_err(AP_EFAIL, NULL, 0, "out of memory");
		return NULL;
	}
	if (s->be->download(h, buf, (size_t)n * sizeof *h)) {
		free(h);
		return NULL;
	}
	return h;
}

static int staged_isend(struct transport *t, const float *buf, int64_t n, int dst, int tag,
			int *id)
{
	struct staged *s = t->state;
	float *h;
	int iid = -1;

	if (grow(&s->p, s->np, &s->cap, sizeof *s->p, 16))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	if (!(h = host_copy(s, buf, n)))
		return AP_EFAIL;
	if (s->inner->ops->isend(s->inner, h, n, dst, tag, &iid)) {
		free(h);
		return AP_EFAIL;
	}
	s->p[s->np++] = (struct pending){ iid, h };
	if (id)
		*id = iid;
	return AP_OK;
}

static int staged_recv(struct transport *t, float *buf, int64_t n, int src, int tag)
{
	struct staged *s = t->state;
	float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof *h);
	int st;

	if (!h)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	st = s->inner->ops->recv(s->inner, h, n, src, tag);
	if (!st)
		st = s->be->upload(buf, h, (size_t)n * sizeof *h);
	free(h);
	return st ? AP_EFAIL : AP_OK;
}

static int staged_group(struct transport *t, const int *ranks, int n, int *gid)
{
	struct staged *s = t->state;

	return s->inner->ops->group(s->inner, ranks, n, gid);
}

static int staged_iallreduce(struct transport *t, int gid, float *buf, int64_t n, int *id)
{
	struct staged *s = t->state;
	float *h = host_copy(s, buf, n);
	int iid = -1, st;

	if (id)
		*id = -1; /* done on return: nothing to wait for */
	if (!h)
		return AP_EFAIL;
	st = s->inner->ops->iallreduce(s->inner, gid, h, n, &iid);
	if (!st && iid >= 0)
		st = s->inner->ops->wait_one(s->inner, iid);
	if (!st)
		st = s->be->upload(buf, h, (size_t)n * sizeof *h);
	free(h);
	return st ? AP_EFAIL : AP_OK;
}

static int staged_wait_one(struct transport *t, int id)
{
	struct staged *s = t->state;

	if (id < 0)
		return AP_OK;
	if (s->inner->ops->wait_one(s->inner, id))
		return AP_EFAIL;
	for (int q = s->np - 1; q >= 0; q--)
		if (s->p[q].id == id) {
			free(s->p[q].host);
			s->p[q] = s->p[--s->np];
			break;
		}
	return AP_OK;
}

static void drop_pending(struct staged *s)
{
	for (int q = 0; q < s->np; q++)
		free(s->p[q].host);
	s->np = 0;
}

static int staged_wait(struct transport *t)
{
	struct staged *s = t->state;

	if (s->inner->ops->wait(s->inner))
		return AP_EFAIL;
	drop_pending(s);
	return AP_OK;
}

static int staged_progress(struct transport *t)
{
	struct staged *s = t->state;

	return s->inner->ops->progress(s->inner);
}

static int staged_sum(struct transport *t, double *v, int n)
{
	struct staged *s = t->state;

	return s->inner->ops->sum(s->inner, v, n);
}

static int staged_max(struct transport *t, double *v, int n)
{
	struct staged *s = t->state;

	return s->inner->ops->max(s->inner, v, n);
}

static int staged_barrier(struct transport *t)
{
	struct staged *s = t->state;

	return s->inner->ops->barrier(s->inner);
}

static void staged_abort(struct transport *t, int code)
{
	struct staged *s = t->state;

	s->inner->ops->abort(s->inner, code);
}

static void staged_release(struct transport *t)
{
	struct staged *s = t->state;

	if (!s)
		return;
	drop_pending(s);
	free(s->p);
	free(s);
	t->state = NULL;
}

static const struct transport_ops staged_ops = {
	.name = "staged",
	.isend = staged_isend,
	.recv = staged_recv,
	.group = staged_group,
	.iallreduce = staged_iallreduce,
	.wait_one = staged_wait_one,
	.wait = staged_wait,
	.progress = staged_progress,
	.sum = staged_sum,
	.max = staged_max,
	.barrier = staged_barrier,
	.abort = staged_abort,
	.release = staged_release,
};

int transport_staged_init(struct transport *t, struct transport *inner,
			  const struct backend *be)
{
	struct staged *s = calloc(1, sizeof *s);

	if (!s)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	s->inner = inner;
	s->be = be;
	t->ops = &staged_ops;
	t->rank = inner->rank;
	t->size = inner->size;
	t->state = s;
	return AP_OK;
}
