/*
 * plan_validate(): a plan checked against the graph and the cluster it is
 * meant for.  plan_read.c reads plans and checks only what the JSON
 * alone can tell (types, signs, known fields); everything that needs the
 * model or the cluster (ranges, divisibility, the stage DAG, memory) is
 * here, so planners can validate what they build before anything is
 * written.  Every complaint names the plan's field as a path, as plan_read()
 * does, and the first one found is the one reported.
 */
#include "plan/plan_check.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/intmath.h"
#include "model/ops.h"
#include "cost/cost.h"
#include "cost/transformer.h"
#include "model/tensor.h"
#include "plan/pipe.h"

/* What plan_validate() builds once and its checks share. */
struct vctx {
	const struct plan *p;
	const struct graph *g;
	const struct cluster *c;
	const char *path;
	int ndev;
	int *pos;                 /* stage id -> index in p->stages */
	unsigned char *reach;     /* [a * nstages + b]: b reachable from a */
	unsigned char *member;    /* [s * ndev + d]: device d in stages[s] */
	/* stamp[d] == tag: device d already seen in the list being checked;
	 * a new tag per list saves clearing stamp[]. */
	int *stamp, tag;
	enum tp_role *roles;      /* check_tensor()'s, by op */
	int pipe;                 /* a pipeline of groups with Megatron's features */
};

static int check_schedule(struct vctx *v)
{
	const struct plan *p = v->p;

	if (p->batch != v->g->batch)
		return ap_err(AP_EINPUT, v->path, 0,
			      "batch: the plan is for batch %lld but model '%s' has batch %lld",
			      (long long)p->batch, v->g->name, (long long)v->g->batch);
	int64_t whole;

	if (p->per_device_batch < 0 ||
	    (p->per_device_batch > 0 &&
	     (__builtin_mul_overflow(p->per_device_batch, (int64_t)v->ndev, &whole) ||
	      p->batch != whole)))
		return ap_err(AP_EINPUT, v->path, 0,
			      "per_device_batch: the batch %lld is not %lld per device on the %d devices of cluster '%s'",
			      (long long)p->batch, (long long)p->per_device_batch, v->ndev,
			      v->c->name);
	if ((unsigned)p->sched >= NSCHED_KINDS)
		return ap_err(AP_EINPUT, v->path, 0,
			      "schedule.kind: unknown schedule %d", (int)p->sched);
	if (p->microbatches < 1)
		return ap_err(AP_EINPUT, v->path, 0,
			      "schedule.microbatches: expected a positive integer, got %d",
			      p->microbatches);
	if (p->batch % p->microbatches)
		return ap_err(AP_EINPUT, v->path, 0,
			      "schedule.microbatches: %d does not divide the batch of %lld",
			      p->microbatches, (long long)p->batch);
	return AP_OK;
}

/* A stage id where fld names one: "stages 0..3", or "only stage 0" for a
 * plan of one stage, when it is none of the plan's. */
static int check_stage_id(const struct vctx *v, const char *fld, int id)
{
	int n = v->p->nstages;

	if (id >= 0 && id < n)
		return AP_OK;
	if (n == 1)
		return ap_err(AP_EINPUT, v->path, 0,
			      "%s: no stage %d (the plan has only stage 0)", fld, id);
	return ap_err(AP_EINPUT, v->path, 0,
		      "%s: no stage %d (the plan has stages 0..%d)", fld, id, n - 1);
}

/* The device list at fld (a stage's or an op's): ids of the cluster, none
 * twice (`twice` ends that message) and, when s >= 0, all in stages[s]. */
static int check_devices(struct vctx *v, const char *fld, const int *dev, int n,
			 int s, const char *twice)
{
	v->tag++;
	for (int k = 0; k < n; k++) {
		int d = dev[k];

		if (d < 0 || d >= v->ndev)
			return ap_err(AP_EINPUT, v->path, 0,
				      "%s[%d]: device %d does not exist (cluster '%s' has devices 0..%d)",
				      fld, k, d, v->c->name, v->ndev - 1);
		if (v->stamp[d] == v->tag)
			return ap_err(AP_EINPUT, v->path, 0,
				      "%s[%d]: device %d is listed twice%s", fld, k, d, twice);
		v->stamp[d] = v->tag;
		if (s >= 0 && !v->member[(size_t)s * v->ndev + d])
			return plan_stage_replicas(v->p, s) > 1
				? ap_err(AP_EINPUT, v->path, 0,
					 "%s[%d]: device %d is not a device of replica 0 of stage %d (stages[%d].devices[0..%d), of its %d round-robin replicas)",
					 fld, k, d, v->p->stages[s].id, s,
					 v->p->stages[s].ndev / plan_stage_replicas(v->p, s),
					 plan_stage_replicas(v->p, s))
				: ap_err(AP_EINPUT, v->path, 0,
					 "%s[%d]: device %d is not a device of stage %d (stages[%d].devices)",
					 fld, k, d, v->p->stages[s].id, s);
	}
	return AP_OK;
}

/* Depth-first search over `next` with an explicit path, so a cycle can be
 * reported as the stages it runs through.  A stage finishes after every
 * stage it leads to, so its row of v->reach is theirs plus themselves. */
static int check_dag(struct vctx *v)
{
	const struct plan *p = v->p;
	int n = p->nstages;
	/* Per stage: 0 unseen, 1 on the path, 2 finished; its slot on the
	 * path; how many of its `next` have been followed. */
	int *colour = calloc(3 * (size_t)n, sizeof *colour);
	int *stack = colour + n, *iter = colour + 2 * n;
	int st = AP_OK;

	if (!colour)
		return ap_err(AP_EFAIL, v->path, 0, "out of memory");
	for (int root = 0; root < n && !st; root++) {
		int top = 0;

		if (colour[root])
			continue;
		stack[top++] = root;
		colour[root] = 1;
		while (top > 0) {
			int s = stack[top - 1], t;
			const struct plan_stage *ps = &p->stages[s];
			unsigned char *row = v->reach + (size_t)s * n;

			if (iter[s] == ps->nnext) {
				for (int k = 0; k < ps->nnext; k++) {
					t = v->pos[ps->next[k]];
					row[t] = 1;
					for (int b = 0; b < n; b++)
						row[b] |= v->reach[(size_t)t * n + b];
				}
				colour[s] = 2;
				top--;
				continue;
			}
			t = v->pos[ps->next[iter[s]++]];
			if (colour[t] == 0) {
				colour[t] = 1;
				stack[top++] = t;
			} else if (colour[t] == 1) {
				char cyc[512];
				size_t len = 0;
				int k = top - 1;

				while (stack[k] != t)
					k--;
				for (; k < top && len < sizeof cyc; k++)
					len += (size_t)snprintf(cyc + len, sizeof cyc - len,
								"%d -> ", p->stages[stack[k]].id);
				if (len < sizeof cyc)
					snprintf(cyc + len, sizeof cyc - len, "%d", p->stages[t].id);
				st = ap_err(AP_EINPUT, v->path, 0,
					    "stages[%d].next: stages form a cycle %s (expected a DAG)",
					    s, cyc);
				break;
			}
		}
	}
	free(colour);
	return st;
}

static int check_stages(struct vctx *v)
{
	const struct plan *p = v->p;
	char fld[64];
	int n = p->nstages;
	int st;

	if (n < 1)
		return ap_err(AP_EINPUT, v->path, 0, "stages: expected at least one stage");
	for (int s = 0; s < n; s++)
		v->pos[s] = -1;
	for (int s = 0; s < n; s++) {
		int id = p->stages[s].id;

		if (id < 0 || id >= n)
			return ap_err(AP_EINPUT, v->path, 0,
				      "stages[%d].id: %d is out of range (expected 0..%d, one id per stage)",
				      s, id, n - 1);
		if (v->pos[id] >= 0)
			return ap_err(AP_EINPUT, v->path, 0,
				      "stages[%d].id: stage %d is already stages[%d]",
				      s, id, v->pos[id]);
		v->pos[id] = s;
	}
	for (int s = 0; s < n; s++) {
		const struct plan_stage *ps = &p->stages[s];

		if (ps->ndev < 1)
			return ap_err(AP_EINPUT, v->path, 0,
				      "stages[%d].devices: expected at least one device", s);
		snprintf(fld, sizeof fld, "stages[%d].devices", s);
		st = check_devices(v, fld, ps->devices, ps->ndev, -1, "");
		if (st)
			return st;
		if (ps->replicas < 0 || ps->ndev % plan_stage_replicas(p, s))
			return ap_err(AP_EINPUT, v->path, 0,
				      "stages[%d].replicas: expected a divisor of the stage's %d devices, got %d",
				      s, ps->ndev, ps->replicas);
		if (plan_stage_replicas(p, s) > 1 && plan_stage_microbatches(p, s) != p->microbatches)
			return ap_err(AP_EINPUT, v->path, 0,
				      "stages[%d].microbatches: a stage of round-robin replicas runs the schedule's %d micro-batches, not %d",
				      s, p->microbatches, plan_stage_microbatches(p, s));
		/* ops name replica 0's devices */
		for (int k = 0; k < ps->ndev / plan_stage_replicas(p, s); k++)
			v->member[(size_t)s * v->ndev + ps->devices[k]] = 1;
		if (ps->microbatches < 0 || p->batch % plan_stage_microbatches(p, s))
			return ap_err(AP_EINPUT, v->path, 0,
				      "stages[%d].microbatches: expected a divisor of the batch %lld, got %d",
				      s, (long long)p->batch, ps->microbatches);
		for (int k = 0; k < ps->nnext; k++) {
			int t = ps->next[k];

			snprintf(fld, sizeof fld, "stages[%d].next[%d]", s, k);
			st = check_stage_id(v, fld, t);
			if (!st) {
				/* re-batching gathers or splits whole micro-batches */
				int a = plan_stage_microbatches(p, s);
				int b = plan_stage_microbatches(p, v->pos[t]);

				if (a % b && b % a)
					st = ap_err(AP_EINPUT, v->path, 0,
						    "%s: stage %d has %d micro-batches and stage %d has %d; expected counts that divide one another",
						    fld, ps->id, a, t, b);
			}
			for (int j = 0; j < k && !st; j++)
				if (ps->next[j] == t)
					st = ap_err(AP_EINPUT, v->path, 0,
						    "%s: stage %d is listed twice", fld, t);
			if (st)
				return st;
		}
	}
	return check_dag(v);
}

static void mask_format(unsigned mask, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int d = 0; d < NDIMS && n < len; d++)
		if (mask & (1u << d))
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
					      dim_name((enum dim_kind)d));
	if (!buf[0])
		snprintf(buf, len, "none");
}

static int check_degrees(struct vctx *v, int i)
{
	const struct op *op = &v->g->ops[i];
	const struct plan_op *po = &v->p->ops[i];
	char shp[128], ok[32];
	int64_t shards = 1;

	for (int d = 0; d < NDIMS; d++) {
		const char *dn = dim_name((enum dim_kind)d);
		int deg = po->degree[d];
		int64_t size;

		if (deg < 1)
			return ap_err(AP_EINPUT, v->path, 0,
				      "ops.%s.degree.%s: expected a positive degree, got %d",
				      op->name, dn, deg);
		if (deg == 1)
			continue;
		if (shape_dim(&op->out, (enum dim_kind)d) < 0) {
			shape_format(&op->out, shp, sizeof shp);
			return ap_err(AP_EINPUT, v->path, 0,
				      "ops.%s.degree.%s: operator '%s' has no dim %s (its output is %s), so its degree must be 1",
				      op->name, dn, op->name, dn, shp);
		}
		if (!(op->split_mask & (1u << d))) {
			mask_format(op->split_mask, ok, sizeof ok);
			return ap_err(AP_EINPUT, v->path, 0,
				      "ops.%s.degree.%s: operator '%s' (%s) cannot be split along %s (splittable: %s)",
				      op->name, dn, op->name, op_kind_name(op->kind),
				      dn, ok);
		}
		size = shape_size(&op->out, (enum dim_kind)d);
		/* Every micro-batch is split the same way, so the sample
		 * degree must divide the micro-batch, not just the batch. */
		if (d == DIM_N) {
			int m = plan_stage_microbatches(v->p, v->pos[v->p->ops[i].stage]);
			int64_t mb = size / m;

			if (mb % deg)
				return ap_err(AP_EINPUT, v->path, 0,
					      "ops.%s.degree.n: %d does not divide the micro-batch of %lld samples (batch %lld in %d micro-batches)",
					      op->name, deg, (long long)mb,
					      (long long)size, m);
		} else if (size % deg) {
			return ap_err(AP_EINPUT, v->path, 0,
				      "ops.%s.degree.%s: %d does not divide %lld, the size of dim %s",
				      op->name, dn, deg, (long long)size, dn);
		}
		/* Saturates instead of overflowing: anything past INT_MAX
		 * cannot match ndev anyway. */
		shards = shards > INT_MAX ? shards : shards * deg;
	}
	if (po->tensor < 0)
		return ap_err(AP_EINPUT, v->path, 0,
			      "ops.%s.tensor: expected a positive degree, got %d", op->name,
			      po->tensor);
	if (plan_op_tensor(v->p, i) > 1) {
		if (shards != po->degree[DIM_N])
			return ap_err(AP_EINPUT, v->path, 0,
				      "ops.%s.degree: a tensor-parallel operator splits only n besides its tensor degree",
				      op->name);
		shards *= plan_op_tensor(v->p, i);
	}
	if (shards != po->ndev)
		return ap_err(AP_EINPUT, v->path, 0,
			      "ops.%s.devices: %d devices listed but the degrees (n=%d c=%d h=%d w=%d l=%d tensor=%d) make %lld shards",
			      op->name, po->ndev, po->degree[DIM_N], po->degree[DIM_C],
			      po->degree[DIM_H], po->degree[DIM_W], po->degree[DIM_L],
			      plan_op_tensor(v->p, i), (long long)shards);
	return AP_OK;
}

static int check_op(struct vctx *v, int i)
{
	const struct op *op = &v->g->ops[i];
	const struct plan_op *po = &v->p->ops[i];
	char fld[NAME_LEN + 16];
	int s;
	int st;

	snprintf(fld, sizeof fld, "ops.%s.stage", op->name);
	st = check_stage_id(v, fld, po->stage);
	if (st)
		return st;
	s = v->pos[po->stage];
	st = check_degrees(v, i);
	if (st)
		return st;
	snprintf(fld, sizeof fld, "ops.%s.devices", op->name);
	st = check_devices(v, fld, po->devices, po->ndev, s,
			   " (each shard needs its own device)");
	if (st)
		return st;
	/* Data flows along `next` only: an input computed on a stage that
	 * cannot reach this one would have to travel backwards. */
	for (int k = 0; k < op->nin; k++) {
		int j = op->in[k];
		int sj = v->p->ops[j].stage;

		if (sj != po->stage &&
		    !v->reach[(size_t)v->pos[sj] * v->p->nstages + s])
			return ap_err(AP_EINPUT, v->path, 0,
				      "ops.%s.stage: stage %d cannot be reached along 'next' from stage %d of its input '%s' (edges must go forward)",
				      op->name, po->stage, sj, v->g->ops[j].name);
	}
	return AP_OK;
}

/* A list of devices as "0, 1, 2" (at most len bytes; cut with "...") */
static void format_devices(const struct plan_op *po, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int k = 0; k < po->ndev && n + 16 < len; k++)
		n += (size_t)snprintf(buf + n, len - n, "%s%d", k ? ", " : "", po->devices[k]);
	if (po->ndev > 0 && n + 16 >= len)
		snprintf(buf + n, len - n, ", ...");
}

/* At once when the lists are alike, else by sorted copies, so that a pair
 * on thousands of devices stays cheap. */
int plan_same_devices(const struct plan_op *a, const struct plan_op *b)
{
	size_t n = (size_t)a->ndev;
	int *x, *y, same;

	if (a->ndev != b->ndev)
		return 0;
	if (n == 0 || !memcmp(a->devices, b->devices, n * sizeof *x))
		return 1;
	x = malloc(2 * n * sizeof *x);
	if (!x) { /* out of memory: the quadratic walk needs none */
		same = 1;
		for (size_t k = 0; k < n && same; k++) {
			same = 0;
			for (size_t q = 0; q < n && !same; q++)
				same = a->devices[k] == b->devices[q];
		}
		return same;
	}
	y = x + n;
	memcpy(x, a->devices, n * sizeof *x);
	memcpy(y, b->devices, n * sizeof *y);
	qsort(x, n, sizeof *x, int_cmp);
	qsort(y, n, sizeof *y, int_cmp);
	same = !memcmp(x, y, n * sizeof *x);
	free(x);
	return same;
}

/* A tied weight is one tensor (tie=, models/FORMAT.md): the op that ties
 * and the op it ties to must hold it on the same devices, or the weight
 * would have to live twice and its two gradients be summed across
 * devices, which neither the simulator charges nor the runtime does.  So
 * both run on the same set of devices, and, when they sit in different
 * stages, neither stage has round-robin replicas (whose replicas run on
 * other devices in turn). */
enum plan_tie plan_tie_broken(const struct plan *p, const struct graph *g, int i)
{
	int j = g->ops[i].a.tie, sa, sb;
	const struct plan_op *a = &p->ops[i], *b;

	if (j < 0 || j >= p->nops)
		return PLAN_TIE_KEPT;
	b = &p->ops[j];
	if (!plan_same_devices(a, b))
		return PLAN_TIE_DEVICES;
	sa = plan_stage_index(p, a->stage);
	sb = plan_stage_index(p, b->stage);
	if (a->stage != b->stage && ((sa >= 0 && plan_stage_replicas(p, sa) > 1) ||
				     (sb >= 0 && plan_stage_replicas(p, sb) > 1)))
		return PLAN_TIE_STAGE;
	return PLAN_TIE_KEPT;
}

static int check_tie(struct vctx *v, int i)
{
	const struct op *op = &v->g->ops[i];
	const struct plan_op *a = &v->p->ops[i], *b;
	char da[96], db[96];

	switch (plan_tie_broken(v->p, v->g, i)) {
	case PLAN_TIE_KEPT:
		return AP_OK;
	case PLAN_TIE_DEVICES:
		b = &v->p->ops[op->a.tie];
		/* Megatron-LM's embedding group: in a pipeline of groups the
		 * first and last stages each hold a copy and sum their
		 * gradients (docs/plan-format.md, "Tied weights"). */
		if (v->pipe && a->degree[DIM_N] == b->degree[DIM_N] && a->tensor == b->tensor)
			return AP_OK;
		format_devices(a, da, sizeof da);
		format_devices(b, db, sizeof db);
		return ap_err(AP_EINPUT, v->path, 0,
			      "ops.%s.devices: '%s' ties its weight to '%s', so both must run "
			      "on the same devices, but '%s' runs on %s and '%s' on %s",
			      op->name, op->name, v->g->ops[op->a.tie].name, op->name, da,
			      v->g->ops[op->a.tie].name, db);
	case PLAN_TIE_STAGE:
		break;
	}
	return ap_err(AP_EINPUT, v->path, 0,
		      "ops.%s.stage: '%s' ties its weight to '%s', so both must run on the same "
		      "devices, but they are in stages %d and %d, which have round-robin "
		      "replicas running on other devices",
		      op->name, op->name, v->g->ops[op->a.tie].name, a->stage,
		      v->p->ops[op->a.tie].stage);
}

/* Weights, their gradients and the optimizer's momentum: the cost model's
 * state of every parameter shard (cost_param_state_bytes(), SGD with
 * momentum, in the plan's precision and ZeRO stage over the shard's data-
 * parallel replicas) stays on its device for the whole iteration, so a
 * plan that overflows here cannot run whatever the activations need. */
static int check_memory(struct vctx *v)
{
	const struct graph *g = v->g;
	const struct plan *p = v->p;
	/* Per device: bytes needed, and its largest shard for the message. */
	struct { double need; int64_t big; int big_op; } *dev;
	int st = AP_OK;

	dev = calloc((size_t)v->ndev, sizeof *dev);
	if (!dev)
		return ap_err(AP_EFAIL, v->path, 0, "out of memory");
	for (int i = 0; i < g->nops; i++) {
		const struct plan_op *po = &p->ops[i];
		int t = plan_op_tensor(p, i);
		int64_t b = cost_param_bytes(&g->ops[i], po->degree[DIM_C] *
						(v->roles && tp_role_splits_params(v->roles[i]) ? t : 1));
		double f = cost_param_state_bytes(p->precision,
						  p->has_optimizer ? p->optimizer : OPTIMIZER_SGD, p->zero,
						  po->degree[DIM_N]) / BYTES_PER_ELEM;

		for (int k = 0; k < po->ndev; k++) {
			int d = po->devices[k];

			dev[d].need += f * (double)b;
			if (b > dev[d].big) {
				dev[d].big = b;
				dev[d].big_op = i;
			}
		}
	}
	for (int d = 0; d < v->ndev && !st; d++)
		if (dev[d].need > (double)v->c->mem_bytes)
			st = ap_err(AP_EINPUT, v->path, 0,
				    "device %d: weights, gradients and momentum need %.0f bytes in %s (largest: 'ops.%s', %lld bytes of fp32 parameters) but cluster '%s' has %lld bytes per device",
				    d, dev[d].need, precision_name(p->precision),
				    g->ops[dev[d].big_op].name, (long long)dev[d].big,
				    v->c->name, (long long)v->c->mem_bytes);
	free(dev);
	return st;
}

/* Megatron's tensor parallelism: every tensor-parallel op must take the
 * role its kind and inputs give it (model/tensor.h). */
static int check_tensor(struct vctx *v)
{
	const struct graph *g = v->g;
	int *t = malloc((size_t)g->nops * sizeof *t), bad = -1, any = 0;
	char why[160];

	v->roles = malloc((size_t)g->nops * sizeof *v->roles);
	if (!t || !v->roles) {
		free(t);
		return ap_err(AP_EFAIL, v->path, 0, "out of memory");
	}
	for (int i = 0; i < g->nops; i++) {
		t[i] = plan_op_tensor(v->p, i);
		any |= t[i] > 1;
	}
	if (tensor_roles(g, t, v->roles, &bad, why, sizeof why)) {
		free(t);
		return ap_err(AP_EINPUT, v->path, 0, "ops.%s.tensor: %d: %s",
			      g->ops[bad].name, plan_op_tensor(v->p, bad), why);
	}
	free(t);
	if (v->p->seq_parallel && !any)
		return ap_err(AP_EINPUT, v->path, 0,
			      "training.sequence_parallel: no operator is tensor-parallel");
	for (int i = 0; i < g->nops; i++)
		if (v->p->ops[i].recompute == RECOMPUTE_SELECTIVE &&
		    g->ops[i].kind != OP_ATTENTION)
			return ap_err(AP_EINPUT, v->path, 0,
				      "ops.%s.recompute: selective recomputation is attention's (this is %s)",
				      g->ops[i].name, op_kind_name(g->ops[i].kind));
	return AP_OK;
}

int plan_validate(const struct plan *p, const struct graph *g,
		  const struct cluster *c, const char *path)
{
	struct vctx v = { .p = p, .g = g, .c = c, .path = path ? path : "plan" };
	size_t n = p->nstages > 0 ? (size_t)p->nstages : 1;
	int st;

	v.ndev = cluster_ndevices(c);
	if (p->nops != g->nops)
		return ap_err(AP_EINPUT, v.path, 0,
			      "ops: the plan has %d operators but model '%s' has %d",
			      p->nops, g->name, g->nops);
	if (v.ndev < 1)
		return ap_err(AP_EINPUT, v.path, 0, "cluster '%s' has no devices", c->name);
	v.pos = malloc(n * sizeof *v.pos);
	v.reach = calloc(n * n, 1);
	v.member = calloc(n * (size_t)v.ndev, 1);
	v.stamp = calloc((size_t)v.ndev, sizeof *v.stamp);
	if (!v.pos || !v.reach || !v.member || !v.stamp) {
		st = ap_err(AP_EFAIL, v.path, 0, "out of memory");
		goto out;
	}
	st = check_schedule(&v);
	if (!st)
		st = check_stages(&v);
	/* Inputs have smaller indices, so every op's inputs are checked
	 * before the edge from them is. */
	for (int i = 0; i < g->nops && !st; i++)
		st = check_op(&v, i);
	if (!st && plan_megatron_features(p)) {
		struct plan_pipe shape;
		char why[160];

		v.pipe = !plan_pipe_shape(p, &shape, why, sizeof why);
	}
	for (int i = 0; i < g->nops && !st; i++)
		st = check_tie(&v, i);
	if (!st)
		st = check_tensor(&v);
	if (!st && c->mem_bytes > 0)
		st = check_memory(&v);
out:
	free(v.roles);
	free(v.stamp);
	free(v.pos);
	free(v.reach);
	free(v.member);
	return st;
}
