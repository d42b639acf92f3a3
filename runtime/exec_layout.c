/*
 * What a plan makes for one rank (exec_impl.h): this rank's shards with
 * their parameter slices and buffers, the pieces each shard gathers of its
 * inputs, the transfers between ranks, and the order of the schedule.
 * Which splits the runtime can execute is exec_support.c's, the replica
 * groups exec_groups.c's.
 *
 * Regions follow the simulator (core/sim_layout.c): shard k of an op owns
 * [i*S/D, (i+1)*S/D) of every dim of its output, i its coordinate in
 * row-major order over n, c, h, w, l; a consumer shard needs its own
 * fraction of the input dims that follow its split (op_input_follows())
 * and the whole of every other dim, and gets each overlapping piece from
 * the producer shard that owns it.  What a shard needs beyond its share
 * is op_input_need()'s, which the simulator prices too: the halo of a
 * conv2d or pool split along h or w (the rows its windows read beyond its
 * share) and the whole keys and values of attention split along l.  Such
 * pieces overlap between consumer shards; their gradients add up at the
 * producer.
 *
 * Under tensor parallelism (exec_tensor.c) shard k of an op of tensor
 * degree t is tensor rank k mod t of the n shard k / t: a split output or
 * input is cut along c by the tensor rank, and a whole output that every
 * member of a tensor group holds is taken from the member of the same
 * tensor rank.  The order of a pipeline of groups under interleaved 1F1B
 * or zero bubble is its group's (sched_group_order()).
 */
#include "exec_layout.h"

#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/grow.h"
#include "util/intmath.h"
#include "exec_groups.h"
#include "exec_impl.h"
#include "exec_support.h"
#include "exec_tensor.h"
#include "exec_update.h"
#include "params.h"
#include "model/needs.h"
#include "plan/pipe.h"
#include "plan/sched.h"

int exec_replica_rank(const struct plan *p, int i, int k, int g)
{
	int s = plan_stage_index(p, p->ops[i].stage), d = p->ops[i].devices[k];

	return g ? plan_replica_device(p, s, d, g) : d;
}

int exec_op_replicas(const struct plan *p, int i)
{
	return plan_stage_replicas(p, plan_stage_index(p, p->ops[i].stage));
}

int exec_ranks(const struct plan *p)
{
	int n = 1;

	for (int i = 0; i < p->nops; i++)
		for (int g = 0; g < exec_op_replicas(p, i); g++)
			for (int k = 0; k < p->ops[i].ndev; k++)
				if (exec_replica_rank(p, i, k, g) + 1 > n)
					n = exec_replica_rank(p, i, k, g) + 1;
	return n;
}

/* Tensor rank tr's part of [lo[DIM_C], hi[DIM_C]) of r, in place. */
static void cut_c(struct region *r, int tr, int t)
{
	int64_t lo, n;

	tensor_part(r->hi[DIM_C] - r->lo[DIM_C], tr, t, &lo, &n);
	r->lo[DIM_C] += lo;
	r->hi[DIM_C] = r->lo[DIM_C] + n;
}

void exec_shard_region(const struct exec *e, int i, int k, struct region *r, int coord[NDIMS])
{
	const int *deg = e->p->ops[i].degree;
	int c[NDIMS], tr = exec_tensor_rank(e, i, k);

	k = exec_tensor_data(e, i, k);
	for (int d = NDIMS - 1; d >= 0; d--) {
		c[d] = k % deg[d];
		k /= deg[d];
	}
	for (int d = 0; d < NDIMS; d++) {
		int64_t sz = shape_extent(&e->g->ops[i].out, d, e->mb_n);

		r->lo[d] = c[d] * sz / deg[d];
		r->hi[d] = (c[d] + 1) * sz / deg[d];
		if (coord)
			coord[d] = c[d];
	}
	if (exec_tensor_splits_out(e, i))
		cut_c(r, tr, plan_op_tensor(e->p, i));
}

/* What consumer shard k of op c needs of its input kk (needs.c): a
 * window op's halo, attention's whole keys and values, a concat's parts
 * in its share (none of some). */
static void need_region(const struct exec *e, int c, int k, int kk, struct region *r)
{
	const struct op *op = &e->g->ops[c];
	const struct shape *t = &e->g->ops[op->in[kk]].out;
	int coord[NDIMS];
	struct region own;

	exec_shard_region(e, c, k, &own, coord);
	for (int d = 0; d < NDIMS; d++) {
		int64_t sz = shape_extent(t, d, e->mb_n);

		if (shape_dim(t, d) < 0) {
			r->lo[d] = 0;
			r->hi[d] = sz;
			continue;
		}
		op_input_need(e->g, op, kk, d, coord[d], e->p->ops[c].degree[d], own.lo[d],
			      own.hi[d], sz, &r->lo[d], &r->hi[d]);
	}
	if (exec_tensor_splits_in(e, c) && shape_dim(t, DIM_C) >= 0)
		cut_c(r, exec_tensor_rank(e, c, k), plan_op_tensor(e->p, c));
}

/* Whether consumer shard k of op c takes from producer shard kp of op
 * pi: not from a member of a tensor group holding the same whole tensor
 * as its peer of the consumer's tensor rank. */
static int takes_from(const struct exec *e, int c, int k, int pi, int kp)
{
	int tp = plan_op_tensor(e->p, pi);

	return tp < 2 || exec_tensor_splits_out(e, pi) ||
	       exec_tensor_rank(e, pi, kp) == exec_tensor_rank(e, c, k) % tp;
}

static int add_src(struct rshard *s, int kk, const struct src *x)
{
	struct src *v = realloc(s->src[kk], (size_t)(s->nsrc[kk] + 1) * sizeof *v);

	if (!v)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	v[s->nsrc[kk]++] = *x;
	s->src[kk] = v;
	return AP_OK;
}

static int add_send(struct rshard *s, int x)
{
	int *v = realloc(s->sends, (size_t)(s->nsends + 1) * sizeof *v);

	if (!v)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	v[s->nsends++] = x;
	s->sends = v;
	return AP_OK;
}

/* The transfer of piece o of producer shard (pi, kp) on rank `prank` (a
 * round-robin replica's) to consumers of stage `stage` on rank `rank`
 * that an earlier consumer asked for: it is shared (exec_impl.h); -1 when
 * there is none. */
static int find_xfer(struct exec *e, int pi, int kp, int prank, int rank, int stage,
		     const struct region *o)
{
	for (int x = e->nxf - 1; x >= 0; x--) {
		struct xfer *t = &e->xf[x];

		if (t->prod_op == pi && t->prod_k == kp && t->prod_rank == prank &&
		    t->cons_rank == rank &&
		    t->cons_stage == stage && region_equal(&t->o, o)) {
			t->nshare++;
			return x;
		}
	}
	return -1;
}

static int new_xfer(struct exec *e, int pi, int kp, int c, int crank, const struct src *x)
{
	struct xfer *t;

	if (grow(&e->xf, e->nxf, &e->cap_xf, sizeof *e->xf, 16))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory"), -1;
	t = &e->xf[e->nxf];
	memset(t, 0, sizeof *t);
	t->prod_op = pi;
	t->prod_k = kp;
	t->prod_rank = x->rank;
	t->cons_op = c;
	t->cons_rank = crank;
	t->cons_stage = e->p->ops[c].stage;
	t->no_grad = e->g->ops[pi].kind == OP_INPUT;
	t->o = x->o;
	t->nshare = 1;
	if (x->rank == e->t->rank && add_send(&e->sh[e->mine[pi]], e->nxf))
		return -1;
	return e->nxf++;
}

/* The transfer of piece x to consumer op c on rank crank, its replica gc
 * of rc: shared with an earlier consumer's or new, into x->xfer. */
static int link_xfer(struct exec *e, int c, int crank, int gc, int rc, struct src *x)
{
	x->xfer = find_xfer(e, x->op, x->k, x->rank, crank, e->p->ops[c].stage, &x->o);
	if (x->xfer < 0 && (x->xfer = new_xfer(e, x->op, x->k, c, crank, x)) < 0)
		return AP_EFAIL;
	e->xf[x->xfer].cons_rep = gc;
	e->xf[x->xfer].cons_nrep = rc;
	return AP_OK;
}

/* Every piece of input kk of every shard of op c: local sources and
 * transfers, recorded where this rank takes part.  With round-robin
 * replicas, for every replica gc of the consumer the pieces of every
 * producer replica gp that hands it micro-batches: j = gc mod r_c and
 * j = gp mod r_p hold together for some j when gp = gc mod gcd(r_p, r_c). */
static int connect(struct exec *e, int c, int kk)
{
	const struct plan_op *pc = &e->p->ops[c];
	int pi = e->g->ops[c].in[kk], me = e->t->rank;
	const struct plan_op *pp = &e->p->ops[pi];
	int rc = exec_op_replicas(e->p, c), rp = exec_op_replicas(e->p, pi);
	int gg = (int)gcd64(rc, rp);

	for (int k = 0; k < pc->ndev; k++) {
		struct region need;

		need_region(e, c, k, kk, &need);
		for (int gc = 0; gc < rc; gc++) {
			int crank = exec_replica_rank(e->p, c, k, gc);

			if (crank == me)
				e->sh[e->mine[c]].inreg[kk] = need;
			for (int gp = gc % gg; gp < rp; gp += gg)
				for (int kp = 0; kp < pp->ndev; kp++) {
					struct region own;
					struct src x = { .op = pi, .k = kp,
							 .rank = exec_replica_rank(e->p, pi,
										   kp, gp),
							 .rep = gp, .nrep = rp, .xfer = -1 };

					exec_shard_region(e, pi, kp, &own, NULL);
					if (!takes_from(e, c, k, pi, kp) ||
					    !region_meet(&own, &need, &x.o))
						continue;
					if (x.rank != crank && link_xfer(e, c, crank, gc, rc, &x))
						return AP_EFAIL;
					if (crank == me && add_src(&e->sh[e->mine[c]], kk, &x))
						return AP_EFAIL;
				}
		}
	}
	return AP_OK;
}

/* The executor's own tables live on the host; only tensors (exec_alloc()) live
 * in the backend's memory. */
static void *host_table(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

#define NEW(e, p, n) ((void)(e), ((p) = host_table((size_t)(n), sizeof *(p))) != NULL)

/* Whether an op of another stage than op i's reads op i's output on
 * this rank. */
static int read_by_other_stage(const struct exec *e, int i)
{
	for (int c = i + 1; c < e->g->nops; c++)
		for (int kk = 0; kk < e->g->ops[c].nin; kk++)
			if (e->g->ops[c].in[kk] == i && e->mine[c] >= 0 &&
			    e->p->ops[c].stage != e->p->ops[i].stage)
				return 1;
	return 0;
}

/* The kernel description and buffers of shard s. */
static int shard_setup(struct exec *e, struct rshard *s)
{
	const struct graph *g = e->g;
	const struct op *op = &g->ops[s->op];
	struct kern *kn = &s->kern;
	int m = e->nbuf, nin = op->nin;

	kn->op = op;
	kn->op_index = s->op;
	kn->nin = nin;
	region_shape(&op->out, &s->reg, &kn->out);
	kn->c_lo = s->reg.lo[DIM_C];
	kn->role = e->role[s->op];
	kn->tp = plan_op_tensor(e->p, s->op);
	kn->trank = s->trank;
	for (int q = 0; q < op->out.rank; q++) {
		kn->glo[q] = s->reg.lo[op->out.kind[q]];
		kn->gsize[q] = op->out.size[q];
	}
	if (e->o.checked && op->kind == OP_BATCHNORM) {
		kn->stat_mb = g->batch / e->o.checked->microbatches;
		kn->stat_deg = e->o.checked->ops[s->op].degree[DIM_N];
	}
	for (int kk = 0; kk < nin; kk++) {
		const struct src *x = s->nsrc[kk] ? &s->src[kk][0] : NULL;
		const struct shape *xs = &g->ops[op->in[kk]].out;
		struct region prod;

		region_shape(xs, &s->inreg[kk], &kn->in[kk]);
		for (int q = 0; q < xs->rank; q++) {
			kn->ilo[kk][q] = s->inreg[kk].lo[xs->kind[q]];
			kn->igsize[kk][q] = xs->size[q];
		}
		if (!x) /* a concat shard holding none of this input */
			continue;
		exec_shard_region(e, op->in[kk], x->k, &prod, NULL);
		s->alias[kk] = s->nsrc[kk] == 1 && x->xfer < 0 &&
			       region_equal(&x->o, &s->inreg[kk]) && region_equal(&prod, &x->o);
	}
	s->ko = op->kind == OP_INPUT ? NULL : e->be->ops[op->kind];
	if (!NEW(e, s->out, m) || !NEW(e, s->dout, m) || !NEW(e, s->ws, m) ||
	    !NEW(e, s->dfresh, m) ||
	    !NEW(e, s->in, (size_t)m * (nin ? nin : 1)) || !NEW(e, s->stash, m))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	/* a recomputing shard's output lives from its forward to the end
	 * of the item, and again from the recomputation to the end of its
	 * backward item: one buffer serves every slot (not when a W pass,
	 * which may come after other slots' items, reads it) */
	s->recompute = e->p->ops[s->op].recompute && op->kind != OP_INPUT;
	s->out_shared = s->recompute && !read_by_other_stage(e, s->op) && !e->wpass;
	for (int j = 0; j < m; j++) {
		int64_t ws = s->ko && s->ko->ws_floats ? s->ko->ws_floats(kn) : 0;

		if (j > 0 && s->out_shared)
			s->out[j] = s->out[0];
		else if (op->kind != OP_INPUT &&
			 !(s->out[j] = exec_alloc(e, shape_elems(&kn->out))))
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		if (!(s->dout[j] = exec_alloc(e, shape_elems(&kn->out))) ||
		    !(s->ws[j] = exec_alloc(e, ws)))
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		for (int kk = 0; kk < nin; kk++)
			if (!s->alias[kk] &&
			    !(s->in[j * nin + kk] = exec_alloc(e, shape_elems(&kn->in[kk]))))
				return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int kk = 0; kk < nin; kk++)
		if (g->ops[op->in[kk]].kind != OP_INPUT &&
		    !(s->din[kk] = exec_alloc(e, shape_elems(&kn->in[kk]))))
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	return AP_OK;
}

int64_t exec_param_count(const struct exec *e, int i, int k)
{
	struct region r;

	if (plan_op_tensor(e->p, i) > 1)
		return params_tensor_count(e->g, i, e->role[i], exec_tensor_rank(e, i, k),
					   plan_op_tensor(e->p, i));
	exec_shard_region(e, i, k, &r, NULL);
	return params_count(e->g, i, r.hi[DIM_C] - r.lo[DIM_C]);
}

void exec_param_slice(const struct exec *e, int i, int k, float *full, float *slice,
		      int to_full)
{
	struct region r;

	if (plan_op_tensor(e->p, i) > 1) {
		params_tensor_slice(e->g, i, e->role[i], exec_tensor_rank(e, i, k),
				    plan_op_tensor(e->p, i), full, slice, to_full);
		return;
	}
	exec_shard_region(e, i, k, &r, NULL);
	params_slice(e->g, i, r.lo[DIM_C], r.hi[DIM_C] - r.lo[DIM_C], full, slice, to_full);
}

/* The shard's parameter slice, from the seeded whole tensor.  A tied
 * linear's copy (exec_tie_copy()) holds what its embedding's shard of
 * the same tensor rank holds (neither is split along c). */
static int params_setup(struct exec *e, struct rshard *s)
{
	int copy = exec_tie_copy(e, s->op), i = copy ? e->g->ops[s->op].a.tie : s->op;
	int k = copy ? s->trank : s->k, st = AP_OK;
	const struct op *op = &e->g->ops[i];
	float *full, *slice;

	s->gid = -1;
	if (op->params <= 0)
		return AP_OK;
	s->nparams = exec_param_count(e, i, k);
	s->wusers = 1;
	s->kern.nparams = s->nparams;
	full = calloc((size_t)op->params, sizeof *full);
	slice = calloc((size_t)s->nparams, sizeof *slice);
	if (full && slice) {
		st = params_init(e->g, i, e->o.seed, full);
		if (!st) {
			exec_param_slice(e, i, k, full, slice, 0);
			st = exec_update_setup(e, s, slice);
		}
	} else {
		st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	free(full);
	free(slice);
	if (st)
		return st;
	if (exec_predicts(e) && !(s->pred = exec_alloc(e, s->nparams)))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int j = 0; j < e->nbuf; j++) {
		if (!exec_stashes(e))
			s->stash[j] = s->w;
		else if (!(s->stash[j] = exec_alloc(e, s->nparams)))
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	return AP_OK;
}

/* Tied linears run with the embedding's weight, gradient and weight
 * versions (exec_support.c says why they can; plan_validate() that the
 * embedding runs on the same ranks); it applies the update.  A copy on
 * other ranks (exec_tie_copy()) has its own, which params_setup() made. */
static int ties_setup(struct exec *e)
{
	for (int q = 0; q < e->nsh; q++) {
		struct rshard *s = &e->sh[q], *o;
		const struct op *op = &e->g->ops[s->op];

		if (op->kind != OP_LINEAR || op->a.tie < 0)
			continue;
		if (exec_tie_check(e->g, e->p, s->op, NULL))
			return AP_EINPUT;
		if (exec_tie_copy(e, s->op))
			continue;
		if (e->mine[op->a.tie] < 0)
			return ap_err(AP_EINPUT, NULL, 0,
				      "operator '%s' ties its weight to '%s', which rank %d does "
				      "not run: the plan was not validated (plan_validate())",
				      op->name, e->g->ops[op->a.tie].name, e->t->rank);
		s->tied = e->mine[op->a.tie];
		o = &e->sh[s->tied];
		s->w = o->w;
		s->dw = o->dw;
		s->mom = o->mom;
		s->kern.nparams = o->nparams;
		for (int j = 0; j < e->nbuf; j++)
			s->stash[j] = o->stash[j];
		o->wusers++;
	}
	return AP_OK;
}

/* Inputs and labels of every batch of the pool, made once: the timed
 * steps only read them. */
static int data_setup(struct exec *e, struct rshard *s)
{
	const struct op *op = &e->g->ops[s->op];
	int n = e->o.pool * e->m;

	if (op->kind != OP_INPUT && op->kind != OP_LOSS)
		return AP_OK;
	if (!NEW(e, s->cache, n))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int b = 0; b < e->o.pool; b++)
		for (int j = 0; j < e->m; j++) {
			struct region r = s->reg;
			float *buf = calloc((size_t)region_elems(&r), sizeof *buf);
			int st = AP_OK;

			if (!buf)
				return ap_err(AP_EFAIL, NULL, 0, "out of memory");
			r.lo[DIM_N] += j * e->mb_n;
			r.hi[DIM_N] += j * e->mb_n;
			if (op->kind == OP_INPUT)
				data_input(&e->data, s->op, b, &r, buf);
			else
				st = data_labels(&e->data, s->op, b, &r, buf);
			if (!st &&
			    !(s->cache[b * e->m + j] = exec_alloc_from(e, buf, region_elems(&r))))
				st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
			free(buf);
			if (st)
				return st;
		}
	return AP_OK;
}

/* A pipeline of groups under interleaved 1F1B or zero bubble: the
 * items of this rank's group in its order (sched_group_order(), the one
 * the symmetric simulation predicts), the stages of other groups having
 * no task here; none on a rank of no group. */
static int group_order(struct exec *e)
{
	const struct plan *p = e->p;
	struct plan_pipe pp;
	char why[160];
	int r = -1;

	if (plan_pipe_shape(p, &pp, why, sizeof why))
		return ap_err(AP_EINPUT, NULL, 0,
			      "%s needs a pipeline of device groups: %s (plan_validate() "
			      "refuses it)", sched_name(p->sched), why);
	for (int s = 0; s < pp.groups; s++)
		for (int k = 0; k < p->stages[s].ndev; k++)
			if (p->stages[s].devices[k] == e->t->rank)
				r = s;
	e->nitems = r < 0 ? 0
			  : sched_group_order(p->sched, pp.groups, pp.chunks, e->m, r, e->items);
	return e->nitems < 0 ? ap_err(AP_EFAIL, NULL, 0, "out of memory") : AP_OK;
}

/* Stage depths (sched_stage_depths(), the simulator's) and the order of
 * the items. */
static int order_setup(struct exec *e)
{
	const struct plan *p = e->p;
	int n = p->nstages, *depth = calloc((size_t)n, sizeof *depth);
	int *pos = malloc((size_t)n * sizeof *pos), np = 0, depth_max, st;

	e->depth = depth;
	if (!depth || !pos || !NEW(e, e->items, 3 * n * e->m) ||
	    !NEW(e, e->stage_ops_ofs, n + 1) || !NEW(e, e->stage_ops, e->g->nops) ||
	    !NEW(e, e->stage_of, e->g->nops)) {
		free(pos);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	st = sched_stage_depths(p, depth, &depth_max);
	if (st) {
		free(pos);
		return st;
	}
	for (int k = 0; k < n; k++)
		pos[p->stages[k].id] = k;
	sched_order(p->sched, n, depth, e->m, e->items);
	e->nitems = 2 * n * e->m;
	if (p->sched >= SCHED_FIRST_PIPE)
		st = group_order(e);
	if (st) {
		free(pos);
		return st;
	}
	e->K = depth_max + 1;
	/* async: a stage has at most K micro-batches in flight (1F1B's
	 * warm-up plus one; async-predict 2K), and a step's slice touches
	 * m + 3K of them */
	e->cap_slice = 2 * n * (e->m + 2 * e->K + 8);
	if (e->async && !NEW(e, e->slice, e->cap_slice)) {
		free(pos);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int k = 0; k < n; k++) {
		e->stage_ops_ofs[k] = np;
		for (int i = 0; i < e->g->nops; i++)
			if (pos[p->ops[i].stage] == k)
				e->stage_ops[np++] = i;
	}
	for (int i = 0; i < e->g->nops; i++)
		e->stage_of[i] = pos[p->ops[i].stage];
	e->stage_ops_ofs[n] = np;
	free(pos);
	return AP_OK;
}

/* Staging buffers: each transfer this rank sends, per micro-batch and
 * direction; one receive buffer for the largest piece. */
static int xfer_setup(struct exec *e)
{
	int me = e->t->rank;

	/* MPI promises tags up to 32767 */
	if (2 * e->nxf + e->g->nops >= 32767)
		return ap_err(AP_EINPUT, NULL, 0,
			      "the plan needs %d transfers; the runtime handles at most %d",
			      e->nxf, (32767 - e->g->nops) / 2);
	for (int x = 0; x < e->nxf; x++) {
		struct xfer *t = &e->xf[x];
		int64_t n = region_elems(&t->o);

		if (n > e->rbuf_n)
			e->rbuf_n = n;
		if (t->prod_rank != me && t->cons_rank != me)
			continue;
		if (t->cons_rank == me && !(t->rbuf = exec_alloc(e, n)))
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		if (!NEW(e, t->sbuf, 2 * e->nbuf) || !NEW(e, t->sreq, 2 * e->nbuf))
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		for (int j = 0; j < 2 * e->nbuf; j++) {
			t->sreq[j] = -1;
			if (!(t->sbuf[j] = exec_alloc(e, n)))
				return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		}
	}
	if (!(e->rbuf = exec_alloc(e, e->rbuf_n)))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	return AP_OK;
}

int exec_layout(struct exec *e)
{
	const struct graph *g = e->g;
	const struct plan *p = e->p;
	int me = e->t->rank, st, inflight;

	e->m = p->microbatches;
	e->mb_n = g->batch / e->m;
	e->async = sched_async(p->sched);
	e->wpass = p->sched == SCHED_ZB_H1;
	st = exec_tensor_roles(e);
	if (!st)
		st = order_setup(e);
	if (st)
		return st;
	/* in flight on a stage of depth 0: 1F1B's K, async-predict's 2K */
	inflight = p->sched == SCHED_ASYNC_PREDICT ? 2 * e->K : e->K;
	e->nbuf = e->async && inflight > e->m ? inflight : e->m;
	if (!NEW(e, e->mine, g->nops))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	/* a rank is in one replica of a stage at most (its devices are
	 * distinct) */
	for (int i = 0; i < g->nops; i++) {
		e->mine[i] = -1;
		for (int gr = 0; gr < exec_op_replicas(p, i); gr++)
			for (int k = 0; k < p->ops[i].ndev; k++)
				if (exec_replica_rank(p, i, k, gr) == me)
					e->mine[i] = e->nsh++;
	}
	if (!NEW(e, e->sh, e->nsh ? e->nsh : 1))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int i = 0; i < g->nops; i++) {
		struct rshard *s;
		int coord[NDIMS];

		if (e->mine[i] < 0)
			continue;
		s = &e->sh[e->mine[i]];
		s->op = i;
		s->tied = -1;
		s->tgid = -1;
		s->cg.t = e->t;
		s->cg.gid = -1;
		s->red = -1;
		s->stage = e->stage_of[i];
		s->nrep = exec_op_replicas(p, i);
		s->round = 1;
		if (e->async)
			s->round = plan_stage_replicas(e->o.checked ? e->o.checked : p,
						       s->stage);
		for (int gr = 0; gr < s->nrep; gr++)
			for (int k = 0; k < p->ops[i].ndev; k++)
				if (exec_replica_rank(p, i, k, gr) == me) {
					s->k = k;
					s->rep = gr;
				}
		exec_shard_region(e, i, s->k, &s->reg, coord);
		s->cidx = coord[DIM_C];
		s->trank = exec_tensor_rank(e, i, s->k);
	}
	st = data_init(&e->data, g, e->o.seed, e->o.pool);
	for (int c = 0; c < g->nops && !st; c++)
		for (int kk = 0; kk < g->ops[c].nin && !st; kk++)
			st = connect(e, c, kk);
	for (int q = 0; q < e->nsh && !st; q++) {
		st = shard_setup(e, &e->sh[q]);
		if (!st)
			st = params_setup(e, &e->sh[q]);
		if (!st)
			st = data_setup(e, &e->sh[q]);
	}
	if (!st)
		st = ties_setup(e);
	if (!st)
		st = exec_groups_setup(e);
	if (!st)
		st = exec_cgroups_setup(e);
	if (!st)
		st = exec_tensor_groups(e);
	if (!st)
		st = xfer_setup(e);
	return st;
}

static void free_list(struct exec *e, float **v, int n)
{
	if (!v)
		return;
	for (int j = 0; j < n; j++)
		e->be->release(v[j]);
	free(v);
}

void exec_layout_release(struct exec *e)
{
	for (int q = 0; q < e->nsh; q++) {
		struct rshard *s = &e->sh[q];
		int nin = e->g->ops[s->op].nin;

		free_list(e, s->out, s->out_shared ? 1 : e->nbuf);
		free_list(e, s->dout, e->nbuf);
		free(s->dfresh);
		free_list(e, s->ws, e->nbuf);
		free_list(e, s->in, e->nbuf * nin);
		free_list(e, s->cache, s->cache ? e->o.pool * e->m : 0);
		if (s->stash && exec_stashes(e) && s->w)
			free_list(e, s->stash, e->nbuf);
		else
			free(s->stash);
		for (int kk = 0; kk < KERN_MAX_IN; kk++) {
			e->be->release(s->din[kk]);
			free(s->src[kk]);
		}
		if (s->tied < 0) {
			exec_update_release(e, s);
			e->be->release(s->pred);
		}
		free(s->sends);
	}
	for (int x = 0; x < e->nxf; x++) {
		free_list(e, e->xf[x].sbuf, e->xf[x].sbuf ? 2 * e->nbuf : 0);
		free(e->xf[x].sreq);
		e->be->release(e->xf[x].rbuf);
	}
	free(e->xf);
	free(e->sh);
	free(e->mine);
	e->be->release(e->rbuf);
	free(e->items);
	free(e->slice);
	free(e->depth);
	free(e->stage_ops_ofs);
	free(e->stage_ops);
	free(e->stage_of);
	free(e->role);
	data_release(&e->data);
}
