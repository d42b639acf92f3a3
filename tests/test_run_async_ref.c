/*
 * PipeDream's asynchronous 1F1B (Narayanan et al., SOSP 2019, section
 * 3.3) against a reference written here, independent of the executor: one
 * process runs the CPU kernels over whole micro-batches in 1F1B order,
 * stage by stage, with an explicit weight version per micro-batch in
 * flight (the forward stashes the weights it ran with, the backward runs
 * with that version and then updates the current weights).  Each stage's
 * own order of tasks decides the versions it uses: K - d forwards to fill
 * a pipeline of K stages at depth d, then a backward and a forward in
 * turn, then the backwards that drain it.
 *
 * `autopar run` of a 2- and a 4-stage plan reports a loss per step, the
 * sum of the losses of the step's own m micro-batches; each must be the
 * sum of the reference's losses of those micro-batches.  Without stashing
 * (--naive) it is not.
 *
 * Round-robin replicated stages (PipeDream's data-parallel replicas of a
 * stage) update once per round: the gradients of micro-batches
 * q r .. q r + r - 1, one per replica, summed and applied on every
 * replica.  In a stage's own order that is one update after the
 * backward of q r + r - 1, and every forward runs with the rounds
 * completed before it, whichever replica runs it.  A reference that
 * updates after every micro-batch instead must disagree with the run.
 */
#include "runtest.h"

#include <math.h>
#include <stdlib.h>

#include "backend.h"
#include "data.h"
#include "params.h"
#include "plan/plan_io.h"

#define SEED 1
#define POOL 4
#define LR 0.1f
#define MOMENTUM 0.9f

struct ref {
	const struct graph *g;
	const struct plan *p;
	struct data data;
	int m, S, T, N;          /* micro-batches a step, stages, steps, all */
	int rounds;              /* update per round of a stage's replicas
				  * (else after every micro-batch) */
	int64_t mb;              /* samples a micro-batch */
	float **w, **v, **dw;    /* per op: current weights, momentum, gradient */
	float **acc;             /* per op: the round's gradients so far */
	float ***ver;            /* [J][op]: the weights F(J) ran with */
	float ***out, ***dout, ***ws; /* [J][op] */
	double *loss;            /* [J] */
};

static float *zalloc(int64_t n)
{
	float *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);

	assert_non_null(p);
	return p;
}

/* The kernel of op i over one whole micro-batch. */
static void kern_of(const struct ref *r, int i, struct kern *k)
{
	const struct op *op = &r->g->ops[i];

	memset(k, 0, sizeof *k);
	k->op = op;
	k->op_index = i;
	k->nin = op->nin;
	k->out = op->out;
	k->out.size[0] = r->mb;
	k->nparams = op->params;
	for (int q = 0; q < op->out.rank; q++)
		k->gsize[q] = op->out.size[q];
	for (int kk = 0; kk < op->nin; kk++) {
		const struct shape *x = &r->g->ops[op->in[kk]].out;

		k->in[kk] = *x;
		k->in[kk].size[0] = r->mb;
		for (int q = 0; q < x->rank; q++)
			k->igsize[kk][q] = x->size[q];
	}
}

static void bufs_of(const struct ref *r, int i, int J, struct kbufs *b)
{
	const struct op *op = &r->g->ops[i];

	memset(b, 0, sizeof *b);
	for (int kk = 0; kk < op->nin; kk++)
		b->in[kk] = r->out[J][op->in[kk]];
	b->w = r->ver[J][i];
	b->dw = r->dw[i];
	b->out = r->out[J][i];
	b->dout = r->dout[J][i];
	b->ws = r->ws[J][i];
	b->salt = SEED ^ ((uint64_t)(J / r->m) << 20);
	b->n0 = (int64_t)(J % r->m) * r->mb;
}

/* Region of micro-batch J's share of op i's output (batch index n from
 * the batch's start). */
static void mb_region(const struct ref *r, int i, int J, struct region *rg)
{
	const struct shape *s = &r->g->ops[i].out;

	for (int d = 0; d < NDIMS; d++) {
		int q = shape_dim(s, d);

		rg->lo[d] = 0;
		rg->hi[d] = q >= 0 ? s->size[q] : 1;
	}
	rg->lo[DIM_N] = (int64_t)(J % r->m) * r->mb;
	rg->hi[DIM_N] = rg->lo[DIM_N] + r->mb;
}

static float *labels_of(const struct ref *r, int i, int J)
{
	float *l = zalloc(shape_elems(&r->g->ops[i].out) / r->g->batch * r->mb);
	struct region rg;

	mb_region(r, i, J, &rg);
	assert_int_equal(data_labels(&r->data, i, J / r->m % POOL, &rg, l), 0);
	return l;
}

static void forward(struct ref *r, int st, int J)
{
	const struct graph *g = r->g;

	for (int i = 0; i < g->nops; i++) {
		const struct op *op = &g->ops[i];
		const struct kernel_ops *ko = backend_cpu.ops[op->kind];
		struct kern k;
		struct kbufs b;
		struct region rg;
		int64_t n = shape_elems(&op->out) / g->batch * r->mb;
		float seed = 0, *labels = NULL;

		if (r->p->ops[i].stage != st)
			continue;
		r->out[J][i] = zalloc(n);
		r->dout[J][i] = zalloc(n);
		mb_region(r, i, J, &rg);
		if (op->kind == OP_INPUT) {
			data_input(&r->data, i, J / r->m % POOL, &rg, r->out[J][i]);
			continue;
		}
		kern_of(r, i, &k);
		r->ws[J][i] = zalloc(ko->ws_floats ? ko->ws_floats(&k) : 0);
		if (op->params > 0) { /* the version F(J) runs with, kept for B(J) */
			r->ver[J][i] = zalloc(op->params);
			memcpy(r->ver[J][i], r->w[i], (size_t)op->params * sizeof(float));
		}
		bufs_of(r, i, J, &b);
		if (op->kind == OP_LOSS) {
			b.labels = labels = labels_of(r, i, J);
			/* the backward starts from d(batch mean)/d(position) */
			seed = (float)(1.0 / (double)shape_elems(&op->out));
		}
		assert_int_equal(ko->fwd(&k, &b), 0);
		for (int64_t e = 0; labels && e < n; e++) {
			r->loss[J] += r->out[J][i][e] * (double)seed;
			r->dout[J][i][e] = seed;
		}
		free(labels);
	}
}

static void backward(struct ref *r, int st, int J)
{
	const struct graph *g = r->g;

	for (int i = g->nops - 1; i >= 0; i--) {
		const struct op *op = &g->ops[i];
		const struct kernel_ops *ko = backend_cpu.ops[op->kind];
		struct kern k;
		struct kbufs b;
		float *din[KERN_MAX_IN] = { 0 }, *labels = NULL;

		if (r->p->ops[i].stage != st || op->kind == OP_INPUT)
			continue;
		kern_of(r, i, &k);
		bufs_of(r, i, J, &b);
		if (op->kind == OP_LOSS)
			b.labels = labels = labels_of(r, i, J);
		for (int kk = 0; kk < op->nin; kk++)
			if (g->ops[op->in[kk]].kind != OP_INPUT)
				b.din[kk] = din[kk] = zalloc(shape_elems(&k.in[kk]));
		assert_int_equal(ko->bwd(&k, &b), 0);
		free(labels);
		/* the gradients of the inputs add up at their producers */
		for (int kk = 0; kk < op->nin; kk++) {
			float *to = r->dout[J][op->in[kk]];

			for (int64_t e = 0; din[kk] && e < shape_elems(&k.in[kk]); e++)
				to[e] += din[kk][e];
			free(din[kk]);
		}
		/* the update after every micro-batch, or every round of
		 * the stage's replicas: their gradients, each computed
		 * alone, summed in replica order as the all-reduce of two
		 * does */
		if (op->params > 0 && r->rounds && plan_stage_replicas(r->p, st) > 1) {
			int R = plan_stage_replicas(r->p, st);

			for (int64_t e = 0; e < op->params; e++)
				r->acc[i][e] += r->dw[i][e];
			memset(r->dw[i], 0, (size_t)op->params * sizeof(float));
			if (J % R == R - 1) {
				backend_cpu.sgd(r->w[i], r->v[i], r->acc[i], op->params, LR, MOMENTUM);
				memset(r->acc[i], 0, (size_t)op->params * sizeof(float));
			}
		} else if (op->params > 0) {
			backend_cpu.sgd(r->w[i], r->v[i], r->dw[i], op->params, LR, MOMENTUM);
			memset(r->dw[i], 0, (size_t)op->params * sizeof(float));
		}
	}
}

/* A stage's own order: K - d forwards, then a backward and a forward in
 * turn; task t of stage d (a chain: depth = stage). */
static void task(const struct ref *r, int d, int t, int *J, int *bwd)
{
	int warm = r->S - d;

	if (t < warm) {
		*J = t, *bwd = 0;
	} else if (t - warm < 2 * (r->N - warm)) {
		*J = (t - warm) / 2 + ((t - warm) % 2 ? warm : 0);
		*bwd = (t - warm) % 2 == 0;
	} else {
		*J = t - r->N, *bwd = 1; /* draining */
	}
}

/* Runs every stage's tasks, each as soon as what it needs is done. */
static void run_reference(struct ref *r)
{
	int *next = calloc((size_t)r->S, sizeof *next);
	int *fdone = calloc((size_t)r->S, sizeof *fdone); /* forwards done */
	int *bdone = calloc((size_t)r->S, sizeof *bdone);
	int left = 2 * r->S * r->N;

	assert_true(next && fdone && bdone);
	while (left > 0) {
		int moved = 0;

		for (int d = 0; d < r->S; d++) {
			int J, bwd;

			if (next[d] >= 2 * r->N)
				continue;
			task(r, d, next[d], &J, &bwd);
			if (!bwd && (d == 0 || fdone[d - 1] > J)) {
				forward(r, d, J);
				fdone[d]++;
			} else if (bwd && (d == r->S - 1 ? fdone[d] > J : bdone[d + 1] > J)) {
				backward(r, d, J);
				bdone[d]++;
			} else {
				continue;
			}
			next[d]++;
			left--;
			moved = 1;
		}
		assert_true(moved);
	}
	free(next);
	free(fdone);
	free(bdone);
}

static void ref_init(struct ref *r, const struct graph *g, const struct plan *p, int T,
		     int rounds)
{
	memset(r, 0, sizeof *r);
	r->rounds = rounds;
	assert_int_equal(backend_cpu.init(), 0); /* one BLAS thread, as a rank */
	r->g = g;
	r->p = p;
	r->m = p->microbatches;
	r->S = p->nstages;
	r->T = T;
	r->N = T * r->m;
	r->mb = g->batch / r->m;
	assert_int_equal(data_init(&r->data, g, SEED, POOL), 0);
	r->w = calloc((size_t)g->nops, sizeof *r->w);
	r->v = calloc((size_t)g->nops, sizeof *r->v);
	r->dw = calloc((size_t)g->nops, sizeof *r->dw);
	r->acc = calloc((size_t)g->nops, sizeof *r->acc);
	r->ver = calloc((size_t)r->N, sizeof *r->ver);
	r->out = calloc((size_t)r->N, sizeof *r->out);
	r->dout = calloc((size_t)r->N, sizeof *r->dout);
	r->ws = calloc((size_t)r->N, sizeof *r->ws);
	r->loss = calloc((size_t)r->N, sizeof *r->loss);
	assert_true(r->w && r->v && r->dw && r->acc && r->ver && r->out && r->dout && r->ws && r->loss);
	for (int J = 0; J < r->N; J++) {
		r->ver[J] = calloc((size_t)g->nops, sizeof **r->ver);
		r->out[J] = calloc((size_t)g->nops, sizeof **r->out);
		r->dout[J] = calloc((size_t)g->nops, sizeof **r->dout);
		r->ws[J] = calloc((size_t)g->nops, sizeof **r->ws);
		assert_true(r->ver[J] && r->out[J] && r->dout[J] && r->ws[J]);
	}
	for (int i = 0; i < g->nops; i++) {
		if (g->ops[i].params <= 0)
			continue;
		r->w[i] = zalloc(g->ops[i].params);
		r->v[i] = zalloc(g->ops[i].params);
		r->dw[i] = zalloc(g->ops[i].params);
		r->acc[i] = zalloc(g->ops[i].params);
		params_init(g, i, SEED, r->w[i]);
	}
}

static void ref_release(struct ref *r)
{
	for (int J = 0; J < r->N; J++) {
		for (int i = 0; i < r->g->nops; i++) {
			free(r->ver[J][i]);
			free(r->out[J][i]);
			free(r->dout[J][i]);
			free(r->ws[J][i]);
		}
		free(r->ver[J]);
		free(r->out[J]);
		free(r->dout[J]);
		free(r->ws[J]);
	}
	for (int i = 0; i < r->g->nops; i++) {
		free(r->w[i]);
		free(r->v[i]);
		free(r->dw[i]);
		free(r->acc[i]);
	}
	free(r->w);
	free(r->v);
	free(r->dw);
	free(r->acc);
	free(r->ver);
	free(r->out);
	free(r->dout);
	free(r->ws);
	free(r->loss);
	data_release(&r->data);
}

/* The per-step losses of `autopar run PLAN --steps T` (naive: without
 * stashing) into loss[T]. */
static void run_losses(const char *plan, int T, int naive, double *loss)
{
	char out[16384], csv[1024], line[256];
	FILE *f;
	int n = 0;

	snprintf(csv, sizeof csv, "%s/async-loss.csv", tmp_dir());
	if (rt_run(out, sizeof out, "run '%s' --steps %d --warmup 0 --lr %g --pool %d "
		   "--seed %d%s --loss-csv '%s'", plan, T, (double)LR, POOL, SEED,
		   naive ? " --naive" : "", csv) != 0) {
		print_error("%s:\n%s\n", plan, out);
		fail();
	}
	f = fopen(csv, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof line, f)); /* header */
	while (n < T && fgets(line, sizeof line, f)) {
		int s;

		assert_int_equal(sscanf(line, "%d,%lf", &s, &loss[n]), 2);
		assert_int_equal(s, n);
		n++;
	}
	fclose(f);
	assert_int_equal(n, T);
}

/* Whether each of the T step losses is the sum of the reference's losses
 * of that step's m micro-batches.  Both sides run the same kernels on the
 * same whole micro-batches, so they agree up to the order of the double
 * sums; a weight version off by one update moves the losses by far more
 * than TOL (about 1e-8 relative in a few steps of transformer_tiny), and
 * so does a micro-batch counted in the wrong step. */
#define TOL 1e-12

static int agrees(const double *step, int T, const double *mb, int m)
{
	for (int t = 0; t < T; t++) {
		double b = 0;

		for (int J = t * m; J < (t + 1) * m; J++)
			b += mb[J];
		if (!(fabs(step[t] - b) <= TOL * fabs(b)))
			return 0;
	}
	return 1;
}

/* The reference of plan `path` (rounds: by the replicas' rounds) over T
 * steps against the run's losses. */
static int ref_agrees(const char *model, int64_t batch, const char *path, int T, int rounds,
		      const double *loss)
{
	struct graph g;
	struct plan p;
	struct ref r;
	int ok;

	graph_init(&g);
	plan_init(&p);
	assert_int_equal(model_load(model, batch, &g), 0);
	assert_int_equal(plan_read(path, &g, &p), 0);
	ref_init(&r, &g, &p, T, rounds);
	run_reference(&r);
	ok = agrees(loss, T, r.loss, r.m);
	if (!ok && rounds) {
		for (int t = 0; t < T; t++)
			print_error("step %d: run %.17g\n", t, loss[t]);
		for (int J = 0; J < r.N; J++)
			print_error("micro-batch %d: reference %.17g\n", J, r.loss[J]);
	}
	ref_release(&r);
	plan_release(&p);
	graph_release(&g);
	return ok;
}

/* A chain of S stages (stage s with rep[s] round-robin replicas; NULL:
 * none) under asynchronous 1F1B against the reference. */
static void check_async_rr(const char *model, int64_t batch, const char *cluster, int S,
			   const int *rep, int m, int T)
{
	char path[1024];
	double *loss = calloc((size_t)T, sizeof *loss);

	assert_non_null(loss);
	snprintf(path, sizeof path, "%s/async-%s-%d%s.json", tmp_dir(), model, S,
		 rep ? "-rr" : "");
	if (rep)
		rt_round_robin_plan(model, batch, cluster, S, rep, 1, SCHED_1F1B_ASYNC, m, path);
	else
		rt_pipeline_plan(model, batch, cluster, S, 1, SCHED_1F1B_ASYNC, m, path);
	run_losses(path, T, 0, loss);
	if (!ref_agrees(model, batch, path, T, 1, loss))
		fail();
	/* the reference tells a round's one update from one per
	 * micro-batch */
	if (rep)
		assert_false(ref_agrees(model, batch, path, T, 0, loss));
	/* and stashing from its absence */
	run_losses(path, T, 1, loss);
	assert_false(ref_agrees(model, batch, path, T, 1, loss));
	free(loss);
}

static void check_async(const char *model, const char *cluster, int S, int m, int T)
{
	check_async_rr(model, 8, cluster, S, NULL, m, T);
}

static void test_two_stages(void **state)
{
	(void)state;
	check_async("mlp", "cpu-1x2", 2, 4, 5);
}

static void test_four_stages(void **state)
{
	(void)state;
	check_async("transformer_tiny", "cpu-1x4", 4, 4, 4);
	check_async("cnn_small", "cpu-1x4", 4, 2, 5);
}

/* round-robin replicas: the first stage's, both stages', the second's
 * (two each: the order in which MPI sums three is its own, and the
 * comparison is exact; test_run_replicas checks three to round-off) */
static void test_round_robin(void **state)
{
	static const int r21[] = { 2, 1 }, r22[] = { 2, 2 }, r12[] = { 1, 2 };

	(void)state;
	check_async_rr("mlp", 8, "cpu-1x4", 2, r21, 4, 4);
	check_async_rr("cnn_small", 8, "cpu-1x4", 2, r22, 4, 3);
	check_async_rr("mlp", 8, "cpu-1x4", 2, r12, 2, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_stages),
		cmocka_unit_test(test_four_stages),
		cmocka_unit_test(test_round_robin),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
