/*
 * The order of stage transfers (runtime/exec_order.c) and the receiving
 * side that posts receives in the sender's order (runtime/xpost.c), which
 * the NCCL transport relies on and which run here without a device.
 *
 * Every rank of a plan runs, one after the other in this process, on the
 * CPU backend through a recording transport: it moves no data (a task
 * computes on whatever its buffers hold, all-reduces nothing) but logs
 * each send and receive the executor issues, per peer, and it asks for
 * the order the way the NCCL transport does (transport_ops.order), so
 * exec_create() hands it exec_order()'s lists.  Those must be exactly what
 * the executor then issues, step after step, for pipelines of 2, 3 and 4
 * ranks (one with a transfer that two consumers share), replicated
 * stages, round-robin replicas (a micro-batch's transfers go between the
 * replicas that run it), a DAG of stages and every schedule; and posting the receives in
 * the sender's order must hand each request the message MPI's matching
 * by tag would have.
 */
#include "runtest.h"

#include <stdlib.h>

#include "backend.h"
#include "exec.h"
#include "exec_layout.h"
#include "exec_order.h"
#include "transport_self.h"
#include "util/grow.h"
#include "xpost.h"
#include "plan/plan_io.h"

#define STEPS 3

struct rec {
	struct xorder told;           /* what exec_create() passed to order */
	int *peer, *tag, *out, n, cap, cap_peer, cap_out;
};

static struct rec *rec_of(struct transport *t)
{
	return t->state;
}

static void log_event(struct transport *t, int peer, int tag, int out)
{
	struct rec *r = rec_of(t);

	assert_int_equal(grow(&r->peer, r->n, &r->cap_peer, sizeof *r->peer, 64), 0);
	assert_int_equal(grow(&r->tag, r->n, &r->cap, sizeof *r->tag, 64), 0);
	assert_int_equal(grow(&r->out, r->n, &r->cap_out, sizeof *r->out, 64), 0);
	r->peer[r->n] = peer;
	r->tag[r->n] = tag;
	r->out[r->n++] = out;
}

static int rec_isend(struct transport *t, const float *buf, int64_t n, int dst, int tag,
		     int *id)
{
	(void)buf, (void)n;
	log_event(t, dst, tag, 1);
	if (id)
		*id = -1;
	return 0;
}

static int rec_recv(struct transport *t, float *buf, int64_t n, int src, int tag)
{
	(void)buf, (void)n;
	log_event(t, src, tag, 0);
	return 0;
}

static int *dup_ints(const int *v, int n)
{
	int *d = malloc((size_t)(n > 0 ? n : 1) * sizeof *d);

	assert_non_null(d);
	memcpy(d, v, (size_t)n * sizeof *d);
	return d;
}

static int rec_order(struct transport *t, const struct xorder *o)
{
	struct xorder *c = &rec_of(t)->told;

	*c = *o;
	c->sofs = dup_ints(o->sofs, o->size + 1);
	c->rofs = dup_ints(o->rofs, o->size + 1);
	c->stags = dup_ints(o->stags, o->sofs[o->size]);
	c->rtags = dup_ints(o->rtags, o->rofs[o->size]);
	c->len = malloc((size_t)(o->ntags > 0 ? o->ntags : 1) * sizeof *c->len);
	assert_non_null(c->len);
	memcpy(c->len, o->len, (size_t)o->ntags * sizeof *c->len);
	return 0;
}

/* the self transport's table (nothing to wait for, nothing to reduce)
 * with the sends and receives logged and the order kept */
static struct transport_ops rec_ops(void)
{
	struct transport self;
	struct transport_ops o;

	transport_self_init(&self);
	o = *self.ops;
	o.name = "record";
	o.isend = rec_isend;
	o.recv = rec_recv;
	o.order = rec_order;
	return o;
}

/* The tags of r's log with peer d in direction out, in issue order. */
static int logged(const struct rec *r, int d, int out, int *tags)
{
	int n = 0;

	for (int k = 0; k < r->n; k++)
		if (r->peer[k] == d && r->out[k] == out)
			tags[n++] = r->tag[k];
	return n;
}

/* list must be exactly `got` (a synchronous list once per step). */
static void same(const char *what, int rank, int d, const int *list, int nlist, int cyclic,
		 const int *got, int ngot)
{
	int reps = cyclic ? STEPS : 1;

	if (ngot != reps * nlist)
		fail_msg("%s: rank %d, peer %d: the order lists %d a step, the executor issued %d "
			 "in %d steps", what, rank, d, nlist, ngot, STEPS);
	for (int k = 0; k < ngot; k++)
		if (got[k] != list[k % (nlist > 0 ? nlist : 1)])
			fail_msg("%s: rank %d, peer %d: issue %d is tag %d, the order says %d", what,
				 rank, d, k, got[k], list[k % nlist]);
}

struct ranks {
	int size;
	struct xorder *o;             /* per rank: what it was told */
};

/* Runs every rank of plan `path` (model at `batch`) for STEPS steps and
 * checks each one's order against what it issued; returns the orders in
 * rk and the stage transfers sent in all. */
static int check_plan(const char *model, int64_t batch, const char *path, const char *what,
		      struct ranks *rk)
{
	struct graph g;
	struct plan p;
	struct exec_opts o = { .seed = 1, .steps = STEPS, .pool = 2, .lr = 0.01f,
			       .momentum = 0.9f };
	struct transport_ops ops = rec_ops();
	int total = 0;

	graph_init(&g);
	plan_init(&p);
	assert_int_equal(model_load(model, batch, &g), 0);
	assert_int_equal(plan_read(path, &g, &p), 0);
	rk->size = exec_ranks(&p);
	rk->o = calloc((size_t)rk->size, sizeof *rk->o);
	assert_non_null(rk->o);
	for (int me = 0; me < rk->size; me++) {
		struct rec r = { 0 };
		struct transport t = { .ops = &ops, .rank = me, .size = rk->size, .state = &r };
		struct exec *e;
		int *buf;
		double loss;

		assert_int_equal(exec_create(&e, &g, &p, &backend_cpu, &t, &o), 0);
		assert_int_equal(r.told.size, rk->size);
		for (int64_t s = 0; s < STEPS; s++)
			assert_int_equal(exec_step(e, s, &loss), 0);
		buf = malloc((size_t)(r.n > 0 ? r.n : 1) * sizeof *buf);
		assert_non_null(buf);
		for (int d = 0; d < rk->size; d++) {
			const struct xorder *x = &r.told;
			int a = x->sofs[d], n = x->sofs[d + 1] - a;

			same(what, me, d, x->stags + a, n, x->cyclic, buf, logged(&r, d, 1, buf));
			a = x->rofs[d];
			same(what, me, d, x->rtags + a, x->rofs[d + 1] - a, x->cyclic, buf,
			     logged(&r, d, 0, buf));
			total += n;
		}
		free(buf);
		exec_free(e);
		rk->o[me] = r.told;
		free(r.peer);
		free(r.tag);
		free(r.out);
	}
	plan_release(&p);
	graph_release(&g);
	return total;
}

/* Posting in the sender's order on every pair of a plan: every request of
 * the receiver is served, by the k-th message of its tag when it is the
 * k-th request of that tag (what MPI's matching by tag gives). */
static void check_posting(const struct ranks *rk)
{
	for (int src = 0; src < rk->size; src++)
		for (int dst = 0; dst < rk->size; dst++) {
			const struct xorder *s = &rk->o[src], *r = &rk->o[dst];
			const int *seq = s->stags + s->sofs[dst], *req = r->rtags + r->rofs[src];
			int n = s->sofs[dst + 1] - s->sofs[dst], nreq = r->rofs[src + 1] - r->rofs[src];
			int *asked = calloc((size_t)(s->ntags > 0 ? s->ntags : 1), sizeof *asked);
			int *cnt = calloc((size_t)(s->ntags > 0 ? s->ntags : 1), sizeof *cnt);
			struct xpost x;

			assert_non_null(asked);
			assert_non_null(cnt);
			for (int q = 0; q < n; q++)
				cnt[seq[q]]++;
			assert_int_equal(n, nreq);
			xpost_init(&x, seq, n, s->cyclic);
			for (int rep = 0; rep < (s->cyclic ? STEPS : 1); rep++)
				for (int k = 0; k < nreq; k++) {
					int64_t due = xpost_due(&x, req[k]), pos;
					int seen = 0;

					assert_true(due >= 0);
					for (int64_t q = 0; q < due; q++)
						assert_int_equal(xpost_push(&x, (int)(x.next % (n ? n : 1))),
								 0);
					pos = xpost_take(&x, req[k]);
					assert_true(pos >= 0 && pos < n);
					assert_int_equal(seq[pos], req[k]);
					/* the k-th request of a tag gets its k-th
					 * message (of the step, when cyclic) */
					for (int q = 0; q <= pos; q++)
						seen += seq[q] == req[k];
					assert_int_equal(seen, asked[req[k]] % cnt[req[k]] + 1);
					asked[req[k]]++;
				}
			assert_int_equal(x.npend, 0);
			if (n)
				assert_true(xpost_slots(seq, n, s->cyclic, req, nreq) >= 1);
			xpost_release(&x);
			free(asked);
			free(cnt);
		}
}

static void release_ranks(struct ranks *rk)
{
	for (int r = 0; r < rk->size; r++)
		xorder_release(&rk->o[r]);
	free(rk->o);
}

static void plan_case(const char *model, int64_t batch, const char *path, const char *what)
{
	struct ranks rk;

	if (check_plan(model, batch, path, what, &rk) == 0)
		fail_msg("%s: no stage transfer to check", what);
	check_posting(&rk);
	release_ranks(&rk);
}

static void pipeline_case(const char *model, const char *cluster, int nstages, int rep,
			  enum sched_kind sched, int m)
{
	char path[1024], what[256];

	snprintf(path, sizeof path, "%s/xorder-%s-%s-%d-%d.json", tmp_dir(), model,
		 sched_name(sched), nstages, rep);
	snprintf(what, sizeof what, "%s, %d stages x %d, %s", model, nstages, rep,
		 sched_name(sched));
	rt_pipeline_plan(model, 8, cluster, nstages, rep, sched, m, path);
	plan_case(model, 8, path, what);
}

static const enum sched_kind scheds[] = { SCHED_GPIPE, SCHED_1F1B, SCHED_1F1B_ASYNC,
					  SCHED_ASYNC_PREDICT };

static void test_two_ranks(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof rt_models / sizeof *rt_models; k++)
		for (size_t s = 0; s < sizeof scheds / sizeof *scheds; s++)
			pipeline_case(rt_models[k], "cpu-1x2", 2, 1, scheds[s], 4);
}

/* three stages of transformer_tiny: the second's ln_2 and add_2 both take
 * add_1 from the first, one transfer shared by two consumers */
static void test_longer_pipelines(void **state)
{
	(void)state;
	for (size_t s = 0; s < sizeof scheds / sizeof *scheds; s++) {
		pipeline_case("mlp", "cpu-1x4", 4, 1, scheds[s], 4);
		pipeline_case("transformer_tiny", "cpu-1x4", 4, 1, scheds[s], 2);
		pipeline_case("transformer_tiny", "cpu-1x4", 3, 1, scheds[s], 4);
	}
}

static void test_replicated_stages(void **state)
{
	(void)state;
	for (size_t s = 0; s < sizeof scheds / sizeof *scheds; s++) {
		pipeline_case("mlp", "cpu-1x4", 2, 2, scheds[s], 2);
		pipeline_case("cnn_small", "cpu-1x4", 2, 2, scheds[s], 2);
	}
}

static void rr_case(const char *model, int64_t batch, const char *cluster, int nstages,
		    const int *rep, int width, enum sched_kind sched, int m)
{
	char path[1024], what[256];

	snprintf(path, sizeof path, "%s/xorder-rr-%s-%s-%d-%d-%d-w%d-m%d.json", tmp_dir(), model,
		 sched_name(sched), nstages, rep[0], nstages > 1 ? rep[1] : 0, width, m);
	snprintf(what, sizeof what, "%s, round-robin replicas %d%s, %d devices each, %s, m %d",
		 model, rep[0], nstages > 1 ? " + more" : "", width, sched_name(sched), m);
	rt_round_robin_plan(model, batch, cluster, nstages, rep, width, sched, m, path);
	plan_case(model, batch, path, what);
}

/* Round-robin replicas: of the first stage, the second, both (a consumer
 * taking from three replicas; replicas of two ranks splitting n) under the schedules
 * that run them (async-predict does not); m no multiple of r under the
 * synchronous ones. */
static void test_round_robin(void **state)
{
	static const int r21[] = { 2, 1 }, r12[] = { 1, 2 }, r22[] = { 2, 2 }, r31[] = { 3, 1 };
	(void)state;
	for (size_t s = 0; s < 3; s++) {
		int m = scheds[s] == SCHED_1F1B_ASYNC ? 6 : 3;

		rr_case("mlp", 8, "cpu-1x4", 2, r21, 1, scheds[s], 4);
		rr_case("cnn_small", 8, "cpu-1x4", 2, r12, 1, scheds[s], 2);
		rr_case("cnn_small", 8, "cpu-1x4", 2, r22, 1, scheds[s], 4);
		rr_case("transformer_tiny", 12, "cpu-1x4", 2, r31, 1, scheds[s], m);
		rr_case("mlp", 8, "h100-1x8", 2, r21, 2, scheds[s], 4);
	}
}

static void test_dag_of_stages(void **state)
{
	(void)state;
	for (size_t s = 0; s < sizeof scheds / sizeof *scheds; s++) {
		char path[1024], what[128];

		snprintf(path, sizeof path, "%s/xorder-dag-%s.json", tmp_dir(),
			 sched_name(scheds[s]));
		snprintf(what, sizeof what, "branchy_small as a DAG, %s", sched_name(scheds[s]));
		rt_dag_plan(path, scheds[s]);
		plan_case("branchy_small", 8, path, what);
	}
}

/* The sender issues A B C A; the receiver asks for B, A, C, A. */
static void test_post_in_sender_order(void **state)
{
	enum { A = 4, B = 7, C = 9 };
	static const int seq[] = { A, B, C, A }, cyc[] = { A, B, C };
	static const int req[] = { B, A, C, A }, creq[] = { C, A, B, C, B, A };
	struct xpost x;

	(void)state;
	xpost_init(&x, seq, 4, 0);
	/* B: A then B are posted, A waits */
	assert_int_equal(xpost_due(&x, B), 2);
	assert_int_equal(xpost_peek(&x), A);
	assert_int_equal(xpost_push(&x, 10), 0);
	assert_int_equal(xpost_peek(&x), B);
	assert_int_equal(xpost_push(&x, 11), 0);
	assert_int_equal(xpost_take(&x, B), 11);
	/* A: already posted */
	assert_int_equal(xpost_due(&x, A), 0);
	assert_int_equal(xpost_take(&x, A), 10);
	assert_int_equal(xpost_take(&x, A), -1);
	/* C, then the second A */
	assert_int_equal(xpost_due(&x, C), 1);
	assert_int_equal(xpost_push(&x, 12), 0);
	assert_int_equal(xpost_take(&x, C), 12);
	assert_int_equal(xpost_due(&x, A), 1);
	assert_int_equal(xpost_push(&x, 13), 0);
	assert_int_equal(xpost_take(&x, A), 13);
	/* the sequence is over */
	assert_int_equal(xpost_due(&x, A), -1);
	assert_int_equal(xpost_peek(&x), -1);
	assert_int_not_equal(xpost_push(&x, 14), 0);
	xpost_release(&x);
	assert_int_equal(xpost_slots(seq, 4, 0, req, 4), 2);
	/* asking for the last first holds everything before it */
	assert_int_equal(xpost_slots(seq, 4, 0, (const int[]){ A, C, B, A }, 4), 2);
	assert_int_equal(xpost_slots(seq, 4, 0, (const int[]){ A, B, C, A }, 4), 1);
	assert_int_equal(xpost_slots(seq, 4, 0, (const int[]){ C, B, A, A }, 4), 3);
	/* a tag the source never sends, or once too often */
	assert_int_equal(xpost_slots(seq, 4, 0, (const int[]){ A, 5 }, 2), -1);
	assert_int_equal(xpost_slots(seq, 4, 0, (const int[]){ B, B }, 2), -1);
	/* cyclic: each step repeats A B C; asking for C posts A and B of the
	 * same step, and the second C wraps into the next step */
	xpost_init(&x, cyc, 3, 1);
	assert_int_equal(xpost_due(&x, C), 3);
	for (int k = 0; k < 3; k++)
		assert_int_equal(xpost_push(&x, k), 0);
	for (int k = 1; k < 3; k++)
		assert_int_equal(xpost_take(&x, creq[k]), k - 1);
	assert_int_equal(xpost_take(&x, C), 2);
	assert_int_equal(xpost_due(&x, C), 3);
	assert_int_equal(xpost_due(&x, 5), -1);
	xpost_release(&x);
	assert_int_equal(xpost_slots(cyc, 3, 1, creq, 6), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_post_in_sender_order),
		cmocka_unit_test(test_two_ranks),
		cmocka_unit_test(test_longer_pipelines),
		cmocka_unit_test(test_replicated_stages),
		cmocka_unit_test(test_dag_of_stages),
		cmocka_unit_test(test_round_robin),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
