/*
 * The host-staged transport (transport_staged.h): a device backend's buffers
 * carried by a host transport.  A send copies its buffer to the host and
 * starts the inner send from there (the host copy lives until the send
 * completes); a receive receives on the host and copies up; an all-reduce
 * copies down and starts the inner all-reduce on the host copy, which is
 * copied back up when it completes (wait_one or wait); ZeRO's
 * reduce-scatter and all-gather the same, their result being the second
 * part of one host block.  Non-blocking as
 * the inner transport's: a rank that blocked in an all-reduce could not
 * send what another member of the group waits for before it reaches the
 * same all-reduce (round-robin replicas under 1f1b-async).  This is how
 * multi-rank plans run where NCCL cannot (several ranks on one GPU,
 * docs/runtime.md), and how the NCCL
 * transport carries the messages that are not stage transfers (parameter
 * gathers).  With the CPU backend the copies
 * are plain memcpy, which makes it testable without a device.
 */
#include "transport_staged.h"

#include <pthread.h>
#include <stdlib.h>

#include "backend.h"
#include "util/err.h"
#include "util/grow.h"

struct pending {
	int id;      /* the inner transport's send or collective */
	float *host; /* its host copy */
	float *dev;  /* a collective's result, copied up to on completion */
	int64_t off, n; /* from host + off, n floats */
};

struct staged {
	struct transport *inner;
	const struct backend *be;
	pthread_mutex_t lock; /* guards p, np, cap */
	struct pending *p;
	int np, cap;
	int *members, cap_groups; /* by group id: its size */
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

/* Keeps host copy h of inner operation iid until it completes. */
static int keep(struct staged *s, int iid, float *h, float *dev, int64_t off, int64_t n)
{
	int st = AP_OK;

	pthread_mutex_lock(&s->lock);
	if (grow(&s->p, s->np, &s->cap, sizeof *s->p, 16))
		st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
	else
		s->p[s->np++] = (struct pending){ iid, h, dev, off, n };
	pthread_mutex_unlock(&s->lock);
	return st;
}

/* Completes a kept operation: a collective's result goes up to its
 * buffer. */
static int finish(struct staged *s, struct pending *q)
{
	int st = q->dev ? s->be->upload(q->dev, q->host + q->off, (size_t)q->n * sizeof *q->host)
			: AP_OK;

	free(q->host);
	return st ? AP_EFAIL : AP_OK;
}

static int staged_isend(struct transport *t, const float *buf, int64_t n, int dst, int tag,
			int *id)
{
	struct staged *s = t->state;
	float *h;
	int iid = -1;

	if (!(h = host_copy(s, buf, n)))
		return AP_EFAIL;
	if (s->inner->ops->isend(s->inner, h, n, dst, tag, &iid)) {
		free(h);
		return AP_EFAIL;
	}
	if (keep(s, iid, h, NULL, 0, n))
		return AP_EFAIL; /* h is left allocated: the send may still read it */
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

	if (s->inner->ops->group(s->inner, ranks, n, gid))
		return AP_EFAIL;
	if (*gid < 0)
		return AP_OK;
	if (grow(&s->members, *gid, &s->cap_groups, sizeof *s->members, 8))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	s->members[*gid] = n;
	return AP_OK;
}

/* Started inner collective iid on host block h, whose floats [off, off +
 * n) go up to dev when it completes (at once when iid < 0). */
static int kept(struct staged *s, int iid, float *h, float *dev, int64_t off, int64_t n, int *id)
{
	int st;

	if (iid < 0) { /* the inner transport finished it at once */
		st = s->be->upload(dev, h + off, (size_t)n * sizeof *h);
		free(h);
		return st ? AP_EFAIL : AP_OK;
	}
	if (keep(s, iid, h, dev, off, n))
		return AP_EFAIL;
	if (id)
		*id = iid;
	return AP_OK;
}

static int staged_iallreduce(struct transport *t, int gid, float *buf, int64_t n, int *id)
{
	struct staged *s = t->state;
	float *h = host_copy(s, buf, n);
	int iid = -1;

	if (id)
		*id = -1;
	if (!h)
		return AP_EFAIL;
	if (s->inner->ops->iallreduce(s->inner, gid, h, n, &iid)) {
		free(h);
		return AP_EFAIL;
	}
	return kept(s, iid, h, buf, 0, n, id);
}

/* A host block of `in` floats of in, then room for `out` floats. */
static float *host_block(struct staged *s, const float *in, int64_t nin, int64_t nout)
{
	float *h = malloc((size_t)(nin + nout > 0 ? nin + nout : 1) * sizeof *h);

	if (!h) {
		ap_err(AP_EFAIL, NULL, 0, "out of memory");
		return NULL;
	}
	if (s->be->download(h, in, (size_t)nin * sizeof *h)) {
		free(h);
		return NULL;
	}
	return h;
}

static int staged_ireduce_scatter(struct transport *t, int gid, const float *in, float *out,
				  int64_t n, int *id)
{
	struct staged *s = t->state;
	int64_t r = s->members[gid];
	float *h = host_block(s, in, r * n, n);
	int iid = -1;

	if (id)
		*id = -1;
	if (!h)
		return AP_EFAIL;
	if (s->inner->ops->ireduce_scatter(s->inner, gid, h, h + r * n, n, &iid)) {
		free(h);
		return AP_EFAIL;
	}
	return kept(s, iid, h, out, r * n, n, id);
}

static int staged_iallgather(struct transport *t, int gid, const float *in, float *out,
			     int64_t n, int *id)
{
	struct staged *s = t->state;
	int64_t r = s->members[gid];
	float *h = host_block(s, in, n, r * n);
	int iid = -1;

	if (id)
		*id = -1;
	if (!h)
		return AP_EFAIL;
	if (s->inner->ops->iallgather(s->inner, gid, h, h + n, n, &iid)) {
		free(h);
		return AP_EFAIL;
	}
	return kept(s, iid, h, out, n, r * n, id);
}

static int staged_wait_one(struct transport *t, int id)
{
	struct staged *s = t->state;
	struct pending q = { -1, NULL, NULL, 0, 0 };

	if (id < 0)
		return AP_OK;
	if (s->inner->ops->wait_one(s->inner, id))
		return AP_EFAIL;
	pthread_mutex_lock(&s->lock);
	for (int k = s->np - 1; k >= 0; k--)
		if (s->p[k].id == id) {
			q = s->p[k];
			s->p[k] = s->p[--s->np];
			break;
		}
	pthread_mutex_unlock(&s->lock);
	return q.host ? finish(s, &q) : AP_OK;
}

/* Every kept operation has completed: their sums go up, copies are freed. */
static int finish_all(struct staged *s)
{
	int st = AP_OK;

	pthread_mutex_lock(&s->lock);
	for (int k = 0; k < s->np; k++)
		if (finish(s, &s->p[k]))
			st = AP_EFAIL;
	s->np = 0;
	pthread_mutex_unlock(&s->lock);
	return st;
}

static int staged_wait(struct transport *t)
{
	struct staged *s = t->state;

	if (s->inner->ops->wait(s->inner))
		return AP_EFAIL;
	return finish_all(s);
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
	for (int k = 0; k < s->np; k++)
		free(s->p[k].host);
	pthread_mutex_destroy(&s->lock);
	free(s->p);
	free(s->members);
	free(s);
	t->state = NULL;
}

static const struct transport_ops staged_ops = {
	.name = "staged",
	.isend = staged_isend,
	.recv = staged_recv,
	.group = staged_group,
	.iallreduce = staged_iallreduce,
	.ireduce_scatter = staged_ireduce_scatter,
	.iallgather = staged_iallgather,
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
	pthread_mutex_init(&s->lock, NULL);
	t->ops = &staged_ops;
	t->rank = inner->rank;
	t->size = inner->size;
	t->state = s;
	return AP_OK;
}
