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
 * shards of a c-split attention sum their heads' context inside their
 * task (kbufs.csum, a blocking all-reduce over the c-group): every member
 * runs that same task, so it too waits only for tasks earlier in the
 * global order.  Round-robin replicas run a subsequence of their stage's
 * items each: the all-reduce of an asynchronous round is started at each
 * member's backward and waited for only at a task keyed after all of
 * them (end_round()), and the synchronous schedules sum a replicated
 * stage's gradients after the step's items, in op order on every member.
 * The earliest unfinished task therefore always has what it waits for.
 *
 * A pipeline of groups under interleaved 1F1B or zero bubble runs each
 * group's own order (exec_layout.c), and the argument holds for the
 * order those interleave into: each is a schedule whose every item
 * depends only on items that come earlier in their group's orders
 * (Megatron-LM's, and zero bubble's by construction, sched.c), and a
 * group's tensor collectives (exec_tensor.c) come in the same order on
 * all its members.  zb-h1's W passes receive and send nothing.
 */
#include "exec.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/err.h"
#include "exec_impl.h"
#include "exec_layout.h"
#include "exec_order.h"
#include "exec_tensor.h"
#include "exec_update.h"
#include "model/ops.h"
#include "plan/sched.h"

static int kernel_failed(const struct exec *e, const struct rshard *s, const char *dir)
{
	const struct op *op = &e->g->ops[s->op];

	return ap_err(AP_EFAIL, e->g->path, op->line, "%s of '%s' (%s) failed on rank %d",
		      dir, op->name, op_kind_name(op->kind), e->t->rank);
}

/* Tasks run on micro-batch slots (j below): buffers are indexed by the
 * slot, the data by e->step and e->mbj, which the caller sets.  The data
 * of the current task: index into the caches of inputs and labels. */
static int data_index(const struct exec *e)
{
	return (int)(e->step % e->o.pool) * e->m + e->mbj;
}

/* The output of shard s in slot j: an input's comes from the data made
 * at setup. */
static float *out_of(const struct exec *e, const struct rshard *s, int j)
{
	if (s->cache && e->g->ops[s->op].kind == OP_INPUT)
		return s->cache[data_index(e)];
	return s->out[j];
}

static const struct rshard *producer(const struct exec *e, const struct src *x)
{
	return &e->sh[e->mine[x->op]];
}

/* Input kk of s for slot j, gathered from its pieces. */
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

		if (!exec_src_live(x, e->mbj))
			continue;
		if (x->xfer >= 0) {
			struct xfer *xf = &e->xf[x->xfer];

			/* the first of the sharers receives it */
			if (xf->nfwd++ == 0 &&
			    t->ops->recv(t, xf->rbuf, region_elems(&x->o), x->rank, 2 * x->xfer))
				return AP_EFAIL;
			if (xf->nfwd == xf->nshare)
				xf->nfwd = 0;
			if (e->be->region_copy(sh, &x->o, buf, &s->inreg[kk], xf->rbuf, &x->o, 0))
				return AP_EFAIL;
		} else {
			const struct rshard *p = producer(e, x);

			if (e->be->region_copy(sh, &x->o, buf, &s->inreg[kk], out_of(e, p, j),
					       &p->reg, 0))
				return AP_EFAIL;
		}
	}
	*in = buf;
	return AP_OK;
}

/* kbufs.csum: a blocking all-reduce over the shard's c-group. */
static int csum_group(void *ctx, float *buf, int64_t n)
{
	struct cgroup *cg = ctx;
	int id;

	if (cg->t->ops->iallreduce(cg->t, cg->gid, buf, n, &id))
		return AP_EFAIL;
	return cg->t->ops->wait_one(cg->t, id);
}

static void fill_kbufs(const struct exec *e, struct rshard *s, int j, struct kbufs *b)
{
	memset(b, 0, sizeof *b);
	if (s->cg.gid >= 0) {
		b->csum = csum_group;
		b->csum_ctx = &s->cg;
	}
	b->w = s->stash ? s->stash[j] : NULL;
	b->dw = s->dw;
	b->out = s->out[j];
	b->dout = s->dout[j];
	b->ws = s->ws[j];
	b->salt = e->o.seed ^ ((uint64_t)e->step << 20);
	b->n0 = (int64_t)e->mbj * e->mb_n;
	if (s->cache && e->g->ops[s->op].kind == OP_LOSS)
		b->labels = s->cache[data_index(e)];
}

/* Staging buffer k of transfer x, once the send that used it last is
 * done (asynchronous 1F1B reuses slots while earlier sends may be in
 * flight; the synchronous schedules wait for every send each step). */
static float *staging(struct exec *e, struct xfer *x, int k)
{
	if (x->sreq[k] >= 0 && e->t->ops->wait_one(e->t, x->sreq[k]))
		return NULL;
	x->sreq[k] = -1;
	return x->sbuf[k];
}

static int send_staged(struct exec *e, struct xfer *x, int k, int dst, int tag)
{
	return e->t->ops->isend(e->t, x->sbuf[k], region_elems(&x->o), dst, tag,
				e->async ? &x->sreq[k] : NULL);
}

/* The loss forward's share of the batch's mean loss: its positions'
 * losses, read back from the backend's memory, times seed. */
static int add_loss(struct exec *e, const float *out, int64_t n, float seed)
{
	float *host = malloc((size_t)(n > 0 ? n : 1) * sizeof *host);

	if (!host)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	if (e->be->download(host, out, (size_t)n * sizeof *host)) {
		free(host);
		return AP_EFAIL;
	}
	for (int64_t i = 0; i < n; i++)
		e->loss_acc += host[i] * (double)seed;
	free(host);
	return AP_OK;
}

static int forward(struct exec *e, struct rshard *s, int j)
{
	const struct op *op = &e->g->ops[s->op];
	struct kbufs b;
	float *out;
	int64_t n = shape_elems(&s->kern.out);

	if (op->kind != OP_INPUT) {
		/* the loss seeds the backward with d(mean)/d(position); any
		 * other output's gradient is whatever its consumers' backwards
		 * give it (add_dout) */
		float seed = op->kind == OP_LOSS ? (float)(1.0 / (double)shape_elems(&op->out))
						 : 0.0f;

		s->dfresh[j] = op->kind != OP_LOSS;
		if (op->kind == OP_LOSS && e->be->fill(s->dout[j], n, seed))
			return AP_EFAIL;
		fill_kbufs(e, s, j, &b);
		if (exec_stashes(e) && s->nparams && e->be->copy(s->stash[j], s->w, s->nparams))
			return AP_EFAIL;
		if (s->pred && e->pred_k > 0)
			b.w = s->pred; /* predict_item() wrote it */
		for (int kk = 0; kk < s->kern.nin; kk++)
			if (gather(e, s, kk, j, &b.in[kk]))
				return AP_EFAIL;
		if (s->ko->fwd(&s->kern, &b))
			return kernel_failed(e, s, "forward");
		if (exec_tensor_forward(e, s, j))
			return AP_EFAIL;
		/* a tensor group's members hold the same loss: it counts once */
		if (op->kind == OP_LOSS && s->trank == 0 && add_loss(e, s->out[j], n, seed))
			return AP_EFAIL;
	}
	out = out_of(e, s, j);
	for (int q = 0; q < s->nsends; q++) {
		struct xfer *x = &e->xf[s->sends[q]];
		float *sb;

		if (!exec_xfer_live(x, e->mbj))
			continue;
		if (!(sb = staging(e, x, j)))
			return AP_EFAIL;
		if (e->be->region_copy(&op->out, &x->o, sb, &x->o, out, &s->reg, 0) ||
		    send_staged(e, x, j, x->cons_rank, 2 * s->sends[q]))
			return AP_EFAIL;
	}
	return AP_OK;
}

/* Adds part o of src (a buffer holding region sr of the output, of shape
 * sh) to p's output gradient of slot j.  The first contribution of the
 * micro-batch overwrites instead, after zeroing what it does not cover. */
static int add_dout(struct exec *e, struct rshard *p, int j, const struct shape *sh,
		    const struct region *o, const float *src, const struct region *sr)
{
	int acc = !p->dfresh[j];

	if (p->dfresh[j] && !region_equal(o, &p->reg)) {
		if (e->be->fill(p->dout[j], region_elems(&p->reg), 0.0f))
			return AP_EFAIL;
		acc = 1;
	}
	p->dfresh[j] = 0;
	return e->be->region_copy(sh, o, p->dout[j], &p->reg, src, sr, acc);
}

/* Sends or adds the gradient of input kk to where its pieces came from. */
static int scatter_grad(struct exec *e, struct rshard *s, int kk, int j)
{
	const struct shape *sh = &e->g->ops[e->g->ops[s->op].in[kk]].out;

	for (int q = 0; q < s->nsrc[kk]; q++) {
		const struct src *x = &s->src[kk][q];

		if (!exec_src_live(x, e->mbj))
			continue;
		if (x->xfer >= 0) {
			struct xfer *xf = &e->xf[x->xfer];
			float *sb = xf->nbwd ? xf->sbuf[e->nbuf + j] : staging(e, xf, e->nbuf + j);

			if (!sb)
				return AP_EFAIL;
			/* the sharers' gradients add up; the last one sends */
			if (e->be->region_copy(sh, &x->o, sb, &x->o, s->din[kk], &s->inreg[kk],
					       xf->nbwd > 0))
				return AP_EFAIL;
			if (++xf->nbwd < xf->nshare)
				continue;
			xf->nbwd = 0;
			if (send_staged(e, xf, e->nbuf + j, x->rank, 2 * x->xfer + 1))
				return AP_EFAIL;
		} else {
			struct rshard *p = &e->sh[e->mine[x->op]];

			if (add_dout(e, p, j, sh, &x->o, s->din[kk], &s->inreg[kk]))
				return AP_EFAIL;
		}
	}
	return AP_OK;
}

/* Asynchronous 1F1B by rounds (exec.h): after s's backward of stream
 * micro-batch J, the last of its round that this rank runs, the round's
 * gradient starts summing over the replicas; it is applied by
 * apply_round() before s's first task keyed after the round's last
 * backward.  Until then no other backward of s adds to dw: the next one
 * this rank runs belongs to a later round, keyed after that. */
static int end_round(struct exec *e, struct rshard *s)
{
	int64_t J = e->step * e->m + e->mbj, R = s->round, last = (J / R + 1) * R - 1;

	if (J + s->nrep <= last)
		return AP_OK; /* more of the round on this rank (a reference) */
	s->red = -1;
	if (s->gid >= 0 && exec_grad_sum(e, s, &s->red))
		return AP_EFAIL;
	s->apply_key = sched_key(e->p->sched, e->K, e->o.steps * e->m, e->depth[s->stage], last, 1);
	s->pending = 1;
	return AP_OK;
}

static int apply_round(struct exec *e, struct rshard *s)
{
	int id = s->red;

	s->pending = 0;
	s->red = -1;
	if (id >= 0 && e->t->ops->wait_one(e->t, id))
		return AP_EFAIL;
	return exec_update(e, s);
}

/* The inputs of s's kernel on slot j, as its forward gathered them (a
 * local producer's output, or its own gathered copy). */
static void kernel_inputs(const struct exec *e, const struct rshard *s, int j, struct kbufs *b)
{
	for (int kk = 0; kk < s->kern.nin; kk++)
		b->in[kk] = s->alias[kk] ? out_of(e, producer(e, &s->src[kk][0]), j)
					 : s->in[j * s->kern.nin + kk];
}

/* Once s has added the last micro-batch's gradient to its weight's (its
 * backward, or under zb-h1 its W pass): the sum over the replicas and
 * the update, as the schedule has them. */
static int grad_done(struct exec *e, struct rshard *s)
{
	struct transport *t = e->t;
	struct rshard *o;
	int id;

	if (!s->nparams && s->tied < 0)
		return AP_OK;
	/* PipeDream updates after every micro-batch (never a tied pair,
	 * exec_supported()), or after every round of a replicated stage;
	 * the synchronous schedules once the last micro-batch's gradient is
	 * in: of every shard that adds to the weight's gradient (both of a
	 * tied pair), so that the replicas sum it once; a round-robin
	 * stage's once the step's items are done (exec_step()), as its
	 * replicas finish their micro-batches at different items */
	if (e->async && s->round > 1)
		return end_round(e, s);
	if (e->async) {
		if (s->gid >= 0 && (exec_grad_sum(e, s, &id) || t->ops->wait_one(t, id)))
			return AP_EFAIL;
		return exec_update(e, s);
	}
	if (s->nrep > 1)
		return AP_OK;
	o = exec_weight_owner(e, s);
	if (e->mbj < e->m - 1 || ++o->wdone < o->wusers)
		return AP_OK;
	o->wdone = 0;
	return o->gid >= 0 ? exec_grad_sum(e, o, NULL) : AP_OK;
}

/* zb-h1's W pass of s on slot j: its weight gradient alone, from the
 * inputs and output gradient its B pass left (struct kbufs). */
static int weight_pass(struct exec *e, struct rshard *s, int j)
{
	struct kbufs b;

	if (!s->nparams && s->tied < 0)
		return AP_OK;
	fill_kbufs(e, s, j, &b);
	kernel_inputs(e, s, j, &b);
	if (s->ko->bwd(&s->kern, &b))
		return kernel_failed(e, s, "weight gradient");
	return grad_done(e, s);
}

/* The backward of s on slot j: pass SCHED_B the whole of it, or under
 * zb-h1 (e->wpass) its input gradients alone; SCHED_W zb-h1's weight
 * gradient. */
static int backward(struct exec *e, struct rshard *s, int j, int pass)
{
	struct transport *t = e->t;
	const struct op *op = &e->g->ops[s->op];
	struct kbufs b;
	int direct[KERN_MAX_IN];

	if (op->kind == OP_INPUT)
		return AP_OK;
	if (pass == SCHED_W)
		return weight_pass(e, s, j);
	/* the gradients of this output that other ranks computed */
	for (int q = 0; q < s->nsends; q++) {
		struct xfer *x = &e->xf[s->sends[q]];

		if (!exec_xfer_live(x, e->mbj))
			continue;
		if (t->ops->recv(t, e->rbuf, region_elems(&x->o), x->cons_rank,
				 2 * s->sends[q] + 1))
			return AP_EFAIL;
		if (add_dout(e, s, j, &op->out, &x->o, e->rbuf, &x->o))
			return AP_EFAIL;
	}
	/* no consumer's gradient reached this output */
	if (s->dfresh[j] && e->be->fill(s->dout[j], region_elems(&s->reg), 0.0f))
		return AP_EFAIL;
	s->dfresh[j] = 0;
	fill_kbufs(e, s, j, &b);
	if (e->wpass)
		b.dw = NULL;
	kernel_inputs(e, s, j, &b);
	for (int kk = 0; kk < s->kern.nin; kk++) {
		struct rshard *p = s->alias[kk] ? &e->sh[e->mine[s->src[kk][0].op]] : NULL;

		b.din[kk] = s->din[kk];
		/* the first gradient of a whole local output is written
		 * there by the kernel itself */
		direct[kk] = p && s->din[kk] && p->dfresh[j];
		if (direct[kk]) {
			b.din[kk] = p->dout[j];
			p->dfresh[j] = 0;
		}
	}
	if (s->ko->bwd(&s->kern, &b))
		return kernel_failed(e, s, "backward");
	for (int kk = 0; kk < s->kern.nin; kk++)
		if (b.din[kk] && exec_tensor_backward(e, s, kk, b.din[kk]))
			return AP_EFAIL;
	for (int kk = 0; kk < s->kern.nin; kk++)
		if (s->din[kk] && !direct[kk] && scatter_grad(e, s, kk, j))
			return AP_EFAIL;
	return e->wpass ? AP_OK : grad_done(e, s);
}

/* The updates a stage applies between the forward of micro-batch J of
 * the stream and J's own: the backwards of earlier micro-batches keyed at
 * or after that forward (a forward runs first at equal keys, so it does
 * not see them; sched_staleness() is the worst of these over a step). */
static int updates_ahead(const struct exec *e, const struct sched_item *x)
{
	int64_t last = e->o.steps * e->m, d = e->depth[x->stage];
	int k = 0;

	for (int64_t J = x->mb - 1;
	     J >= 0 && sched_key(e->p->sched, e->K, last, d, J, 1) >= x->key; J--)
		k++;
	return k;
}

/* Before the forward item x (async-predict): the weights of each of its
 * shards on this rank extrapolated to the version its update will find,
 * from the weights as they are before any backward of the same key. */
static int pred_count(const struct exec *e, const struct sched_item *x)
{
	return !x->bwd && exec_predicts(e) ? updates_ahead(e, x) : 0;
}

static void predict_item(struct exec *e, const struct sched_item *x)
{
	int a = e->stage_ops_ofs[x->stage], z = e->stage_ops_ofs[x->stage + 1];

	e->pred_k = pred_count(e, x);
	if (e->pred_k <= 0)
		return;
	for (int q = a; q < z; q++) {
		struct rshard *s = e->mine[e->stage_ops[q]] < 0 ? NULL
							       : &e->sh[e->mine[e->stage_ops[q]]];

		if (s && s->pred)
			e->be->predict(s->pred, s->w, s->mom, s->nparams,
				       e->o.lr * (float)e->pred_k);
	}
}

/* The forward of a recomputing shard again, from the inputs it kept
 * (its gathered ones, or a local producer's output): its output (summed
 * over its tensor group where it is a partial sum), none of the
 * forward's sends, stashing or loss. */
static int recompute(struct exec *e, struct rshard *s, int j)
{
	struct kbufs b;

	fill_kbufs(e, s, j, &b);
	kernel_inputs(e, s, j, &b);
	if (s->ko->fwd(&s->kern, &b))
		return kernel_failed(e, s, "recomputed forward");
	return exec_tensor_forward(e, s, j);
}

/* Runs the tasks of item x of this rank, on slot j, once predict_item()
 * has run for it. */
static int run_tasks(struct exec *e, const struct sched_item *x, int j)
{
	int a = e->stage_ops_ofs[x->stage], z = e->stage_ops_ofs[x->stage + 1];
	double t0;

	/* a backward item (zb-h1: its B pass) first recomputes its stage's
	 * recomputing outputs of this micro-batch, in graph order
	 * (plan-format.md) */
	for (int q = a; q < z && x->bwd == SCHED_B; q++) {
		int i = e->stage_ops[q];

		if (e->mine[i] >= 0 && e->sh[e->mine[i]].recompute &&
		    exec_shard_runs(&e->sh[e->mine[i]], e->mbj) &&
		    recompute(e, &e->sh[e->mine[i]], j))
			return AP_EFAIL;
	}

	for (int q = 0; q < z - a; q++) {
		int i = e->stage_ops[x->bwd ? z - 1 - q : a + q];
		struct rshard *s;

		if (e->mine[i] < 0 || !exec_shard_runs(&e->sh[e->mine[i]], e->mbj))
			continue;
		s = &e->sh[e->mine[i]];
		if (s->pending && x->key > s->apply_key && apply_round(e, s))
			return AP_EFAIL;
		t0 = e->trace ? now_s() : 0;
		if (x->bwd ? backward(e, s, j, x->bwd) : forward(e, s, j))
			return AP_EFAIL;
		if (e->trace && trace_add(e->trace, i, x->bwd ? TRACE_BWD : TRACE_FWD, x->mb, t0,
					  now_s()))
			return AP_EFAIL;
		/* all-reduces and sends started advance under the tasks
		 * after them */
		if (e->t->ops->progress(e->t))
			return AP_EFAIL;
	}
	return AP_OK;
}

static int run_item(struct exec *e, const struct sched_item *x, int j)
{
	predict_item(e, x);
	return run_tasks(e, x, j);
}

/* Selects the data of stream micro-batch J for the tasks e runs next. */
static void set_stream_mb(struct exec *e, int64_t J)
{
	e->step = J / e->m;
	e->mbj = (int)(J % e->m);
}

/*
 * async-predict runs a stage's forward of one micro-batch and the
 * backward of an earlier one at the same time: the items of one key
 * [f0, f1) (forwards) and [b0, b1) (backwards) of this rank.  The forwards
 * run on a second thread with a lane, a copy of the executor's per-task
 * fields (data step, micro-batch, prediction count, loss sum); everything
 * behind its pointers is shared, and the two sides touch disjoint parts of
 * it: their own micro-batch slots, the forward or backward half of every
 * transfer's staging and counters, the predicted weights (written before
 * the threads start) against the current ones the backward updates.
 * Items of one key depend only on items of smaller keys, so the two sides
 * never wait for each other.
 */
struct lane {
	struct exec e;
	const struct sched_item *x;
	int n, st;
};

static void *run_forwards(void *arg)
{
	struct lane *l = arg;

	for (int i = 0; i < l->n && !l->st; i++) {
		set_stream_mb(&l->e, l->x[i].mb);
		l->e.pred_k = pred_count(&l->e, &l->x[i]);
		l->st = run_tasks(&l->e, &l->x[i], (int)(l->x[i].mb % l->e.nbuf));
	}
	return NULL;
}

static int run_pair(struct exec *e, const struct sched_item *f, int nf,
		    const struct sched_item *b, int nb)
{
	struct lane l = { .e = *e, .x = f, .n = nf };
	pthread_t th;
	int st = AP_OK;

	for (int i = 0; i < nf; i++) {
		set_stream_mb(e, f[i].mb);
		predict_item(e, &f[i]);
	}
	if (pthread_create(&th, NULL, run_forwards, &l))
		return ap_err(AP_EFAIL, NULL, 0, "cannot start the forward thread of rank %d",
			      e->t->rank);
	for (int i = 0; i < nb && !st; i++) {
		set_stream_mb(e, b[i].mb);
		st = run_tasks(e, &b[i], (int)(b[i].mb % e->nbuf));
	}
	pthread_join(th, NULL);
	e->loss_acc = l.e.loss_acc;
	e->npairs++;
	return st ? st : l.st;
}

/* Whether this rank runs a task of items [x, x + n); with csum, a task
 * whose kernel calls a collective (kbufs.csum): two threads must not
 * issue collectives on one group in an order that differs between
 * ranks. */
static int has_tasks(const struct exec *e, const struct sched_item *x, int n, int csum)
{
	for (int i = 0; i < n; i++)
		for (int q = e->stage_ops_ofs[x[i].stage]; q < e->stage_ops_ofs[x[i].stage + 1]; q++) {
			int k = e->mine[e->stage_ops[q]];

			if (k >= 0 && (!csum || e->sh[k].cg.gid >= 0))
				return 1;
		}
	return 0;
}

/* Whether the nf forwards and nb backwards of one key at x run as a
 * concurrent pair: async-predict with prediction (without it the forward
 * would read the weights the backward updates), on a backend and a
 * transport two threads may use, with tasks of this rank on both sides
 * and no collective inside a kernel. */
static int pairs(const struct exec *e, const struct sched_item *x, int nf, int nb)
{
	return exec_predicts(e) && e->t->threads && e->be->two_threads && !e->o.serial &&
	       has_tasks(e, x, nf, 0) && has_tasks(e, x + nf, nb, 0) && !has_tasks(e, x, nf + nb, 1);
}

/* An asynchronous schedule's slice of the stream for step `step`: the
 * items whose keys fall in [r step m, r (step + 1) m) + o, where each
 * stage runs m forwards and m backwards in steady state, a micro-batch
 * every r key slots (1F1B alternates a forward slot and a backward slot,
 * r = 2; async-predict runs one of each in a slot, r = 1).  The last
 * stage's forward of micro-batch j has key K - 1 + r j under both (for
 * j > 0), so o = K - 1 makes its forwards, the losses, of the step's own
 * m micro-batches fall in it: the step's loss is its own batch's.  The
 * first step starts at the beginning, the last one drains the pipeline.
 * Items of micro-batches past the run's last step are left out. */
int exec_async_slice(struct exec *e, int64_t step)
{
	int64_t m = e->m, last = e->o.steps * m, K = e->K;
	int predict = e->p->sched == SCHED_ASYNC_PREDICT;
	int64_t r = predict ? 1 : 2, o = K - 1;
	int64_t lo = step == 0 ? INT64_MIN : r * step * m + o;
	int64_t hi = step >= e->o.steps - 1 ? INT64_MAX : r * (step + 1) * m + o;
	int64_t jlo = step * m - 2 * K - 2, jhi = step >= e->o.steps - 1 ? last
									 : (step + 1) * m + K + 2;
	int n = 0;

	jlo = jlo < 0 ? 0 : jlo;
	jhi = jhi > last ? last : jhi;
	for (int st = 0; st < e->p->nstages; st++)
		for (int64_t J = jlo; J < jhi; J++)
			for (int bwd = 0; bwd < 2; bwd++) {
				int64_t key = sched_key(e->p->sched, K, last, e->depth[st], J, bwd);

				if (key < lo || key >= hi)
					continue;
				if (n >= e->cap_slice)
					return ap_err(AP_EFAIL, NULL, 0, "async slice of step %lld overflows",
						      (long long)step);
				e->slice[n++] = (struct sched_item){ key, st, (int)J, bwd };
			}
	sched_sort(e->slice, n);
	return n;
}

int exec_step(struct exec *e, int64_t step, double *loss)
{
	struct transport *t = e->t;
	double sum;

	e->loss_acc = 0;
	if (!e->async) {
		e->step = step;
		for (int it = 0; it < e->nitems; it++) {
			e->mbj = e->items[it].mb;
			if (run_item(e, &e->items[it], e->mbj))
				return AP_EFAIL;
		}
		/* round-robin stages: every replica's gradients, in op order
		 * on every member */
		for (int q = 0; q < e->nsh; q++) {
			struct rshard *s = &e->sh[q];

			if (s->nrep > 1 && s->nparams && s->gid >= 0 && exec_grad_sum(e, s, NULL))
				return AP_EFAIL;
		}
		if (t->ops->wait(t))
			return AP_EFAIL;
		for (int q = 0; q < e->nsh; q++) {
			double t0 = now_s();

			if (!e->sh[q].nparams)
				continue;
			if (exec_update(e, &e->sh[q]))
				return AP_EFAIL;
			if (e->trace && trace_add(e->trace, e->sh[q].op, TRACE_UPDATE, -1, t0, now_s()))
				return AP_EFAIL;
		}
		/* ZeRO-1's all-gathers of the updated parts */
		if (e->p->zero && t->ops->wait(t))
			return AP_EFAIL;
	} else {
		int n = exec_async_slice(e, step);

		if (n < 0)
			return AP_EFAIL;
		for (int it = 0, next; it < n; it = next) {
			const struct sched_item *x = &e->slice[it];
			int nf = 0;

			/* the key's forwards come first (sched_sort) */
			for (next = it; next < n && e->slice[next].key == x->key; next++)
				nf += !e->slice[next].bwd;
			if (pairs(e, x, nf, next - it - nf)) {
				if (run_pair(e, x, nf, x + nf, next - it - nf))
					return AP_EFAIL;
				continue;
			}
			for (int q = it; q < next; q++) {
				set_stream_mb(e, e->slice[q].mb);
				if (run_item(e, &e->slice[q], (int)(e->slice[q].mb % e->nbuf)))
					return AP_EFAIL;
			}
		}
		/* sends may be waiting for receives of the next step: only
		 * the end of the stream waits for them all */
		if (step >= e->o.steps - 1) {
			for (int q = 0; q < e->nsh; q++)
				if (e->sh[q].pending && apply_round(e, &e->sh[q]))
					return AP_EFAIL;
			if (t->ops->wait(t))
				return AP_EFAIL;
			for (int x = 0; x < e->nxf; x++)
				for (int k = 0; e->xf[x].sreq && k < 2 * e->nbuf; k++)
					e->xf[x].sreq[k] = -1;
		}
	}
	sum = e->loss_acc;
	if (t->ops->sum(t, &sum, 1))
		return AP_EFAIL;
	*loss = sum;
	return AP_OK;
}

void exec_set_trace(struct exec *e, struct trace *tr)
{
	e->trace = tr;
}

int64_t exec_pairs(const struct exec *e)
{
	return e->npairs;
}

/* Writes slice w (n floats of backend memory) of shard k of op i into the
 * host tensor full. */
static int slice_to_host(struct exec *e, int i, int k, float *full, const float *w, int64_t n)
{
	float *host = malloc((size_t)(n > 0 ? n : 1) * sizeof *host);
	int st;

	if (!host)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	st = e->be->download(host, w, (size_t)n * sizeof *host);
	if (!st)
		exec_param_slice(e, i, k, full, host, 1);
	free(host);
	return st ? AP_EFAIL : AP_OK;
}

/* exec_gather_params() and exec_gather_momentum(): the owners' slices of
 * the weights (mom 0) or of the momentum (mom 1) onto rank 0. */
static int gather_weights(struct exec *e, int i, float *full, int mom)
{
	struct transport *t = e->t;
	const struct plan_op *po = &e->p->ops[i];
	int tag = 2 * e->nxf + i, me = t->rank;

	if (mom && e->p->zero)
		return ap_err(AP_EINPUT, NULL, 0, "ZeRO-1 keeps the momentum in parts");
	/* the owner of each slice: its first shard of that c coordinate (and
	 * tensor rank, where the role splits the parameters) */
	for (int k = 0; k < po->ndev; k++) {
		int coord[NDIMS], first = 1, owner = po->devices[k];
		struct region r;
		int64_t n;

		exec_shard_region(e, i, k, &r, coord);
		for (int d = 0; d < NDIMS; d++)
			first &= d == DIM_C || coord[d] == 0;
		if (!first || (exec_tensor_rank(e, i, k) && !tp_role_splits_params(e->role[i])))
			continue;
		n = exec_param_count(e, i, k);
		if (owner == me && me == 0) {
			const struct rshard *s = &e->sh[e->mine[i]];

			if (slice_to_host(e, i, k, full, mom ? s->mom : s->w, n))
				return AP_EFAIL;
		} else if (owner == me) {
			const struct rshard *s = &e->sh[e->mine[i]];

			if (t->ops->isend(t, mom ? s->mom : s->w, n, 0, tag, NULL) || t->ops->wait(t))
				return AP_EFAIL;
		} else if (me == 0) {
			/* the transport moves backend memory */
			float *buf = e->be->alloc((size_t)n * sizeof *buf);
			int st;

			if (!buf)
				return ap_err(AP_EFAIL, NULL, 0, "out of memory");
			st = t->ops->recv(t, buf, n, owner, tag);
			if (!st)
				st = slice_to_host(e, i, k, full, buf, n);
			e->be->release(buf);
			if (st)
				return AP_EFAIL;
		}
	}
	return AP_OK;
}

int exec_gather_params(struct exec *e, int i, float *full)
{
	return gather_weights(e, i, full, 0);
}

int exec_gather_momentum(struct exec *e, int i, float *full)
{
	return gather_weights(e, i, full, 1);
}

/* A transport that matches transfers in issue order learns the order
 * (exec_order.c) before the first step. */
static int tell_order(struct exec *e)
{
	struct xorder o;
	int st = exec_order(e, &o);

	if (!st)
		st = e->t->ops->order(e->t, &o);
	xorder_release(&o);
	return st;
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
	if (sched_async(p->sched) && o->steps < 1) {
		free(e);
		return ap_err(AP_EFAIL, NULL, 0,
			      "an asynchronous schedule needs the number of steps of the run");
	}
	if (exec_ranks(p) > t->size) {
		free(e);
		return ap_err(AP_EINPUT, NULL, 0, "the plan needs %d ranks, the job has %d",
			      exec_ranks(p), t->size);
	}
	st = be->init();
	if (!st)
		st = exec_layout(e);
	if (!st && t->ops->order)
		st = tell_order(e);
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
