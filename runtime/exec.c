/*
 * Running one rank's part of a plan (exec.h): the tasks of every schedule
 * item in order, the transfers between them, gradient all-reduces and the
 * optimizer.
 *
 * Why this cannot deadlock: every rank walks the same global order of
 * tasks (items in schedule order, ops in graph order forward and reverse
 * backward) and runs the subsequence that is its own.  Sends never block;
 * a receive waits for a task earlier in the global order, and so does an
 * all-reduce, which the members of a group reach in the same order.  The
 * earliest unfinished task therefore always has what it waits for.
 */
#include "exec_impl.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "params.h"

static int kernel_failed(const struct exec *e, const struct rshard *s, const char *dir)
{
	const struct op *op = &e->g->ops[s->op];

	return ap_err(AP_EFAIL, e->g->path, op->line, "%s of '%s' (%s) failed on rank %d",
		      dir, op->name, op_kind_name(op->kind), e->t->rank);
}

/* The output of shard s for micro-batch j: an input's comes from the
 * data made at setup. */
static float *out_of(const struct exec *e, const struct rshard *s, int j)
{
	if (s->cache && e->g->ops[s->op].kind == OP_INPUT)
		return s->cache[(e->step % e->o.pool) * e->m + j];
	return s->out[j];
}

static const struct rshard *producer(const struct exec *e, const struct src *x)
{
	return &e->sh[e->mine[x->op]];
}

/* Input kk of s for micro-batch j, gathered from its pieces. */
static int gather(struct exec *e, struct rshard *s, int kk, int j, const float **in)
{
	struct transport *t = e->t;
	float *buf = s->in[j * s->kern.nin + kk];

	if (s->alias[kk]) {
		*in = out_of(e, producer(e, &s->src[kk][0]), j);
		return AP_OK;
	}
	for (int q = 0; q < s->nsrc[kk]; q++) {
		const struct src *x = &s->src[kk][q];
		const struct shape *sh = &e->g->ops[x->op].out;

		if (x->xfer >= 0) {
			if (t->ops->recv(t, e->rbuf, region_elems(&x->o), x->rank, 2 * x->xfer))
				return AP_EFAIL;
			region_copy(sh, &x->o, buf, &s->inreg[kk], e->rbuf, &x->o, 0);
		} else {
			const struct rshard *p = producer(e, x);

			region_copy(sh, &x->o, buf, &s->inreg[kk], out_of(e, p, j), &p->reg, 0);
		}
	}
	*in = buf;
	return AP_OK;
}

static void fill_kbufs(const struct exec *e, const struct rshard *s, int j, struct kbufs *b)
{
	memset(b, 0, sizeof *b);
	b->w = s->stash ? s->stash[j] : NULL;
	b->dw = s->dw;
	b->out = s->out[j];
	b->dout = s->dout[j];
	b->ws = s->ws[j];
	b->salt = e->o.seed ^ ((uint64_t)e->step << 20);
	b->n0 = (int64_t)j * e->mb_n;
	if (s->cache && e->g->ops[s->op].kind == OP_LOSS)
		b->labels = s->cache[(e->step % e->o.pool) * e->m + j];
}

static int forward(struct exec *e, struct rshard *s, int j)
{
	struct transport *t = e->t;
	struct kbufs b;
	float *out;

	if (e->g->ops[s->op].kind != OP_INPUT) {
		fill_kbufs(e, s, j, &b);
		if (exec_stashes(e) && s->nparams)
			memcpy(s->stash[j], s->w, (size_t)s->nparams * sizeof(float));
		if (s->pred && j > s->nupd) {
			/* the version update j will find: j - nupd more */
			e->be->predict(s->pred, s->w, s->mom, s->nparams,
				       e->o.lr * (float)(j - s->nupd));
			b.w = s->pred;
		}
		for (int kk = 0; kk < s->kern.nin; kk++)
			if (gather(e, s, kk, j, &b.in[kk]))
				return AP_EFAIL;
		if (s->ko->fwd(&s->kern, &b))
			return kernel_failed(e, s, "forward");
	}
	out = out_of(e, s, j);
	for (int q = 0; q < s->nsends; q++) {
		struct xfer *x = &e->xf[s->sends[q]];
		float *sb = x->sbuf[j];

		region_copy(&e->g->ops[s->op].out, &x->o, sb, &x->o, out, &s->reg, 0);
		if (t->ops->isend(t, sb, region_elems(&x->o), x->cons_rank, 2 * s->sends[q]))
			return AP_EFAIL;
	}
	return AP_OK;
}

/* Sends or adds the gradient of input kk to where its pieces came from. */
static int scatter_grad(struct exec *e, struct rshard *s, int kk, int j)
{
	struct transport *t = e->t;
	const struct shape *sh = &e->g->ops[e->g->ops[s->op].in[kk]].out;

	for (int q = 0; q < s->nsrc[kk]; q++) {
		const struct src *x = &s->src[kk][q];

		if (x->xfer >= 0) {
			float *sb = e->xf[x->xfer].sbuf[e->m + j];

			region_copy(sh, &x->o, sb, &x->o, s->din[kk], &s->inreg[kk], 0);
			if (t->ops->isend(t, sb, region_elems(&x->o), x->rank, 2 * x->xfer + 1))
				return AP_EFAIL;
		} else {
			struct rshard *p = &e->sh[e->mine[x->op]];

			region_copy(sh, &x->o, p->dout[j], &p->reg, s->din[kk], &s->inreg[kk], 1);
		}
	}
	return AP_OK;
}

static int update(struct exec *e, struct rshard *s)
{
	e->be->sgd(s->w, s->mom, s->dw, s->nparams, e->o.lr, e->o.momentum);
	s->nupd++;
	memset(s->dw, 0, (size_t)s->nparams * sizeof(float));
	return AP_OK;
}

static int backward(struct exec *e, struct rshard *s, int j)
{
	struct transport *t = e->t;
	const struct op *op = &e->g->ops[s->op];
	struct kbufs b;

	if (op->kind == OP_INPUT)
		return AP_OK;
	/* the gradients of this output that other ranks computed */
	for (int q = 0; q < s->nsends; q++) {
		struct xfer *x = &e->xf[s->sends[q]];

		if (t->ops->recv(t, e->rbuf, region_elems(&x->o), x->cons_rank,
				 2 * s->sends[q] + 1))
			return AP_EFAIL;
		region_copy(&op->out, &x->o, s->dout[j], &s->reg, e->rbuf, &x->o, 1);
	}
	fill_kbufs(e, s, j, &b);
	for (int kk = 0; kk < s->kern.nin; kk++) {
		b.in[kk] = s->alias[kk] ? out_of(e, producer(e, &s->src[kk][0]), j)
					: s->in[j * s->kern.nin + kk];
		b.din[kk] = s->din[kk];
	}
	if (s->ko->bwd(&s->kern, &b))
		return kernel_failed(e, s, "backward");
	for (int kk = 0; kk < s->kern.nin; kk++)
		if (s->din[kk] && scatter_grad(e, s, kk, j))
			return AP_EFAIL;
	if (!s->nparams)
		return AP_OK;
	/* PipeDream updates after every micro-batch, the synchronous
	 * schedules once the last micro-batch's gradient is in */
	if (sched_async(e->p->sched)) {
		if (s->gid >= 0 && (t->ops->iallreduce(t, s->gid, s->dw, s->nparams) ||
				    t->ops->wait(t)))
			return AP_EFAIL;
		return update(e, s);
	}
	if (j == e->m - 1 && s->gid >= 0)
		return t->ops->iallreduce(t, s->gid, s->dw, s->nparams);
	return AP_OK;
}

int exec_step(struct exec *e, int64_t step, double *loss)
{
	struct transport *t = e->t;
	double sum = 0;

	e->step = step;
	for (int q = 0; q < e->nsh; q++) {
		struct rshard *s = &e->sh[q];
		int64_t n = shape_elems(&s->kern.out);
		/* the loss seeds the backward with d(mean)/d(position) */
		float seed = e->g->ops[s->op].kind == OP_LOSS
				     ? (float)(1.0 / (double)shape_elems(&e->g->ops[s->op].out))
				     : 0.0f;

		for (int j = 0; j < e->m; j++)
			for (int64_t i = 0; i < n; i++)
				s->dout[j][i] = seed;
		s->nupd = 0;
	}
	for (int it = 0; it < e->nitems; it++) {
		const struct sched_item *x = &e->items[it];
		int a = e->stage_ops_ofs[x->stage], z = e->stage_ops_ofs[x->stage + 1];

		for (int q = 0; q < z - a; q++) {
			int i = e->stage_ops[x->bwd ? z - 1 - q : a + q];
			struct rshard *s;

			if (e->mine[i] < 0)
				continue;
			s = &e->sh[e->mine[i]];
			if (x->bwd ? backward(e, s, x->mb) : forward(e, s, x->mb))
				return AP_EFAIL;
		}
	}
	if (t->ops->wait(t))
		return AP_EFAIL;
	for (int q = 0; q < e->nsh; q++) {
		struct rshard *s = &e->sh[q];

		if (s->nparams && !sched_async(e->p->sched))
			update(e, s);
		if (e->g->ops[s->op].kind != OP_LOSS)
			continue;
		for (int j = 0; j < e->m; j++)
			for (int64_t i = 0, n = shape_elems(&s->kern.out); i < n; i++)
				sum += s->out[j][i] / (double)shape_elems(&e->g->ops[s->op].out);
	}
	if (t->ops->sum(t, &sum, 1))
		return AP_EFAIL;
	*loss = sum;
	return AP_OK;
}

int exec_gather_params(struct exec *e, int i, float *full)
{
	struct transport *t = e->t;
	const struct plan_op *po = &e->p->ops[i];
	int tag = 2 * e->nxf + i, me = t->rank;

	/* the owner of each c slice: its first shard */
	for (int k = 0; k < po->ndev; k++) {
		int coord[NDIMS], first = 1, owner = po->devices[k];
		struct region r;
		int64_t cn, n;

		exec_shard_region(e->g, e->p, i, k, e->mb_n, &r, coord);
		for (int d = 0; d < NDIMS; d++)
			first &= d == DIM_C || coord[d] == 0;
		if (!first)
			continue;
		cn = r.hi[DIM_C] - r.lo[DIM_C];
		n = params_count(e->g, i, cn);
		if (owner == me && me == 0) {
			params_slice(e->g, i, r.lo[DIM_C], cn, full, e->sh[e->mine[i]].w, 1);
		} else if (owner == me) {
			if (t->ops->isend(t, e->sh[e->mine[i]].w, n, 0, tag) || t->ops->wait(t))
				return AP_EFAIL;
		} else if (me == 0) {
			float *buf = malloc((size_t)n * sizeof *buf);

			if (!buf)
				return ap_err(AP_EFAIL, NULL, 0, "out of memory");
			if (t->ops->recv(t, buf, n, owner, tag)) {
				free(buf);
				return AP_EFAIL;
			}
			params_slice(e->g, i, r.lo[DIM_C], cn, full, buf, 1);
			free(buf);
		}
	}
	return AP_OK;
}

int exec_create(struct exec **out, const struct graph *g, const struct plan *p,
		const struct backend *be, struct transport *t, const struct exec_opts *o)
{
	struct exec *e = calloc(1, sizeof *e);
	int st;

	*out = NULL;
	if (!e)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	e->g = g;
	e->p = p;
	e->be = be;
	e->t = t;
	e->o = *o;
	if (e->o.pool < 1)
		e->o.pool = 1;
	if (exec_ranks(p) > t->size) {
		free(e);
		return ap_err(AP_EINPUT, NULL, 0, "the plan needs %d ranks, the job has %d",
			      exec_ranks(p), t->size);
	}
	st = be->init();
	if (!st)
		st = exec_layout(e);
	if (st) {
		exec_free(e);
		return st;
	}
	*out = e;
	return AP_OK;
}

void exec_free(struct exec *e)
{
	if (!e)
		return;
	exec_layout_release(e);
	free(e);
}
