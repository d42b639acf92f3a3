/*
 * graphpipe: on small branchy graphs its plan is as fast as the best plan
 * of an exhaustive enumeration of stage DAGs (every partition of the
 * operators into at most as many stages as devices whose stage graph is
 * acyclic, every data-parallel device count per stage, every micro-batch
 * count), each ranked by the simulator; its plans of the multi-branch
 * models validate, simulate, are real DAGs, keep small branches whole and
 * beat data parallelism; and the simulator's 1F1B on a stage DAG keeps
 * a short branch's micro-batches in flight to its own path to the sink.
 */
#include "testutil.h"

#include "util/datadir.h"
#include "util/err.h"
#include "model/model_io.h"
#include "driver.h"
#include "planner.h"
#include "sim/sim.h"
#include "plan/plan_io.h"
#include "plan/plan_check.h"
#include "plan/plan_build.h"

/* Two branches of different depth and cost between a stem and a head. */
static const char two_branch[] =
	"model two_branch\n"
	"batch 16\n"
	"input  x c=256\n"
	"linear stem x out=512\n"
	"relu   stem.relu stem\n"
	"linear a1 stem.relu out=2048\n"
	"relu   a.relu a1\n"
	"linear a2 a.relu out=256\n"
	"linear b stem.relu out=256\n"
	"concat cat a2 b dim=c\n"
	"linear fc cat out=10\n"
	"loss   loss fc\n";

/* The model given as text (written to a file) or by name, on cspec. */
static void load(struct instance *x, const char *model_text, const char *model,
		 const char *cspec)
{
	test_instance(x, model_text ? tmp_write("inline.model", model_text) : model, NULL, cspec);
}

/* graphpipe's plan with the given option spec, through the driver (which
 * validates it); its simulated iteration time in *iter_s. */
static void run_graphpipe(struct instance *x, const char *spec, struct plan *pl, double *iter_s)
{
	const struct planner *gp;
	struct planner_opts o = { 0 };
	struct planner_input input = { .g = &x->g, .p = &x->p, .c = &x->c, .budget_s = 30,
				    .seed = 1, .opts = &o };
	struct sim s;
	struct sim_result r;

	assert_int_equal(planner_parse(spec, "test", &gp, &o), AP_OK);
	plan_init(pl);
	if (planner_run(gp, &input, "test", pl) != AP_OK)
		fail_msg("%s on %s/%s: %s", spec, x->g.name, x->c.name, ap_last_error());
	assert_int_equal(sim_init(&s, &x->g, &x->p, &x->c), AP_OK);
	assert_int_equal(sim_run(&s, pl, NULL, &r), AP_OK);
	assert_true(sim_fits(&r));
	*iter_s = r.iter_s;
	sim_release(&s);
}

/* --- the oracle: every stage DAG ----------------------------------------- */

struct oracle {
	struct instance *x;
	struct sim s;
	struct plan cand;
	int ndev, max_m, lab[64], nb, dev[8];
	double best_s;
	int64_t tried;
};

static int acyclic(const struct oracle *o)
{
	const struct graph *g = &o->x->g;
	int adj[8][8] = { { 0 } }, indeg[8] = { 0 }, done = 0, q[8], nq = 0;

	for (int i = 0; i < g->nops; i++)
		for (int e = 0; e < g->ops[i].nin; e++) {
			int a = o->lab[g->ops[i].in[e]], b = o->lab[i];

			if (a != b && !adj[a][b]) {
				adj[a][b] = 1;
				indeg[b]++;
			}
		}
	for (int s = 0; s < o->nb; s++)
		if (!indeg[s])
			q[nq++] = s;
	while (nq) {
		int s = q[--nq];

		done++;
		for (int t = 0; t < o->nb; t++)
			if (adj[s][t] && --indeg[t] == 0)
				q[nq++] = t;
	}
	return done == o->nb;
}

/* The plan of the labels, device counts and m; its simulated time. */
static void evaluate(struct oracle *o, int m)
{
	const struct graph *g = &o->x->g;
	struct plan *p = &o->cand;
	struct sim_result r;
	int first[8];

	assert_int_equal(plan_alloc(p, g, o->nb), AP_OK);
	for (int s = 0, f = 0; s < o->nb; f += o->dev[s], s++) {
		first[s] = f;
		assert_int_equal(plan_stage_range(p, s, f, o->dev[s], 0), AP_OK);
	}
	for (int i = 0; i < g->nops; i++) {
		int deg[NDIMS] = { o->dev[o->lab[i]], 1, 1, 1, 1 };

		assert_int_equal(plan_place_range(p, i, o->lab[i], deg, first[o->lab[i]]), AP_OK);
	}
	assert_int_equal(plan_link_edges(p, g), AP_OK);
	plan_schedule(p, o->nb == 1 && m == 1 ? SCHED_GPIPE : SCHED_1F1B, m);
	if (sim_run(&o->s, p, NULL, &r) != AP_OK)
		fail_msg("oracle: %s", ap_last_error());
	o->tried++;
	if (sim_fits(&r) && r.iter_s < o->best_s)
		o->best_s = r.iter_s;
}

/* Device counts of stages s.. (each dividing the micro-batch), then m. */
static void devices(struct oracle *o, int s, int left, int m)
{
	int64_t mb = o->x->g.batch / m;

	if (s == o->nb) {
		evaluate(o, m);
		return;
	}
	for (int d = 1; d <= left - (o->nb - s - 1); d++)
		if (mb % d == 0 && (d == 1 || o->x->g.ops[0].split_mask & 1u)) {
			o->dev[s] = d;
			devices(o, s + 1, left - d, m);
		}
}

/* Every partition (restricted growth labels) into at most ndev stages. */
static void partitions(struct oracle *o, int i)
{
	const struct graph *g = &o->x->g;

	if (i == g->nops) {
		if (!acyclic(o))
			return;
		for (int m = 1; m <= o->max_m; m *= 2)
			if (g->batch % m == 0)
				devices(o, 0, o->ndev, m);
		return;
	}
	for (int b = 0; b <= o->nb && b < o->ndev; b++) {
		int grew = b == o->nb;

		o->lab[i] = b;
		o->nb += grew;
		partitions(o, i + 1);
		o->nb -= grew;
	}
}

static double oracle_best(struct instance *x, int max_m, int64_t *tried)
{
	struct oracle o = { .x = x, .ndev = cluster_ndevices(&x->c), .max_m = max_m,
			    .best_s = INFINITY };

	assert_true(x->g.nops <= 64 && o.ndev <= 8);
	assert_int_equal(sim_init(&o.s, &x->g, &x->p, &x->c), AP_OK);
	plan_init(&o.cand);
	partitions(&o, 0);
	plan_release(&o.cand);
	sim_release(&o.s);
	*tried = o.tried;
	return o.best_s;
}

/* graphpipe against the oracle: never faster (the oracle's space holds
 * every plan graphpipe can emit), and at most `slack` slower (0: it finds
 * the oracle's optimum, to float round-off). */
static void check_against_oracle(const char *text, const char *model, const char *cspec,
				 double slack)
{
	struct instance x;
	struct plan pl;
	double gp_s, best_s;
	int64_t tried;

	load(&x, text, model, cspec);
	run_graphpipe(&x, "graphpipe:max-microbatches=8", &pl, &gp_s);
	best_s = oracle_best(&x, 8, &tried);
	assert_true(tried > 10);
	print_message("%s on %s: graphpipe %.6f ms, best of %lld stage DAGs %.6f ms\n",
		      x.g.name, cspec, 1e3 * gp_s, (long long)tried, 1e3 * best_s);
	if (gp_s < best_s * (1 - 1e-9) || gp_s > best_s * (1 + slack + 1e-9))
		fail_msg("%s on %s: graphpipe %.6f ms, best of %lld stage DAGs %.6f ms",
			 x.g.name, cspec, 1e3 * gp_s, (long long)tried, 1e3 * best_s);
	plan_release(&pl);
	instance_release(&x);
}

static void test_matches_oracle(void **state)
{
	(void)state;
	check_against_oracle(NULL, "branchy_small", "1x2:v100,intra=12GB/s", 0);
	/* The best plans of two_branch and of branchy_small on three devices
	 * put the light branches in the stem's stage and the heavy one with
	 * the head, so that the light ones run while the heavy one does: a
	 * stage that holds part of a parallel composition and what comes
	 * before it.  The two-node clusters add the choice of link. */
	check_against_oracle(two_branch, NULL, "1x4:v100,intra=50GB/s", 0);
	check_against_oracle(NULL, "branchy_small", "1x3:v100,intra=50GB/s", 0);
	check_against_oracle(two_branch, NULL, "2x2:v100,intra=50GB/s,inter=10GB/s", 0);
	check_against_oracle(NULL, "branchy_small", "2x2:v100,intra=50GB/s,inter=10GB/s", 0);
}

/* --- the multi-branch models ---------------------------------------------- */

static int stage_of(const struct instance *x, const struct plan *pl, const char *op)
{
	int i = graph_find(&x->g, op);

	assert_true(i >= 0);
	return pl->ops[i].stage;
}

/* A stage with two successors or two predecessors: not a chain. */
static int is_dag(const struct plan *pl)
{
	int pred[1024] = { 0 };

	for (int s = 0; s < pl->nstages; s++) {
		if (pl->stages[s].nnext > 1)
			return 1;
		for (int e = 0; e < pl->stages[s].nnext; e++)
			if (++pred[pl->stages[s].next[e]] > 1)
				return 1;
	}
	return 0;
}

static double dp_time(struct instance *x)
{
	struct plan pl;
	double s;
	struct planner_opts o = { 0 };
	struct planner_input input = { .g = &x->g, .p = &x->p, .c = &x->c, .budget_s = 5,
				    .seed = 1, .opts = &o };
	struct sim sim;
	struct sim_result r;

	plan_init(&pl);
	assert_int_equal(planner_run(planner_find("dp"), &input, "test", &pl), AP_OK);
	assert_int_equal(sim_init(&sim, &x->g, &x->p, &x->c), AP_OK);
	assert_int_equal(sim_run(&sim, &pl, NULL, &r), AP_OK);
	s = r.iter_s;
	sim_release(&sim);
	plan_release(&pl);
	return s;
}

static void test_multi_branch(void **state)
{
	static const char *const models[] = { "dlrm", "candle_uno" };
	static const char *const clusters[] = { "summit-2x4", "summit-4x4" };

	(void)state;
	for (size_t m = 0; m < sizeof models / sizeof models[0]; m++)
		for (size_t c = 0; c < sizeof clusters / sizeof clusters[0]; c++) {
			struct instance x;
			struct plan pl;
			double gp_s;
			char path[512];

			load(&x, NULL, models[m], clusters[c]);
			run_graphpipe(&x, "graphpipe", &pl, &gp_s);
			assert_true(pl.nstages > 1);
			assert_true(is_dag(&pl));
			if (!(gp_s < dp_time(&x)))
				fail_msg("%s on %s: graphpipe %.3f ms is not faster than dp",
					 models[m], clusters[c], 1e3 * gp_s);
			/* a lookup branch is one embedding: splitting it only adds a
			 * transfer and a device */
			for (int k = 0; k < 8 && !strcmp(models[m], "dlrm"); k++) {
				char in_name[32], emb[32], flat[40];

				snprintf(in_name, sizeof in_name, "sparse%d", k);
				snprintf(emb, sizeof emb, "emb_l.%d", k);
				snprintf(flat, sizeof flat, "emb_l.%d.flat", k);
				assert_int_equal(stage_of(&x, &pl, in_name), stage_of(&x, &pl, emb));
				assert_int_equal(stage_of(&x, &pl, flat), stage_of(&x, &pl, emb));
			}
			/* the plan file reads back and validates */
			snprintf(path, sizeof path, "%s/gp-%s.json", tmp_dir(), models[m]);
			assert_int_equal(plan_write(&pl, &x.g, path), AP_OK);
			plan_release(&pl);
			assert_int_equal(plan_read(path, &x.g, &pl), AP_OK);
			assert_int_equal(plan_validate(&pl, &x.g, &x.c, path), AP_OK);
			plan_release(&pl);
			instance_release(&x);
		}
}

/* --- units ------------------------------------------------------------------- */

/* A chain of linear layers of uneven widths. */
static const char chain[] =
	"model chain\n"
	"batch 16\n"
	"input  x c=512\n"
	"linear l1 x out=4096\n"
	"relu   r1 l1\n"
	"linear l2 r1 out=512\n"
	"relu   r2 l2\n"
	"linear l3 r2 out=4096\n"
	"relu   r3 l3\n"
	"linear l4 r3 out=1024\n"
	"relu   r4 l4\n"
	"linear l5 r4 out=4096\n"
	"relu   r5 l5\n"
	"linear l6 r5 out=256\n"
	"linear fc l6 out=10\n"
	"loss   loss fc\n";

/* The units of a chain (ops in graph order) cut to at most u: unit k
 * starts at op first[k]; the two adjacent units of least compute are
 * merged first, the earliest such pair on ties. */
static int chain_units(struct instance *x, int u, int *first)
{
	double w[64];
	int n = x->g.nops;

	assert_true(n <= 64);
	for (int i = 0; i < n; i++) {
		int one[NDIMS] = { 1, 1, 1, 1, 1 };
		struct op_cost oc;

		assert_int_equal(profile_lookup(&x->p, &x->g, i, one, &oc), AP_OK);
		w[i] = oc.fwd_us + oc.bwd_us;
		first[i] = i;
	}
	while (n > u) {
		int b = 0;

		for (int k = 1; k + 1 < n; k++)
			if (w[k] + w[k + 1] < w[b] + w[b + 1])
				b = k;
		w[b] += w[b + 1];
		memmove(w + b + 1, w + b + 2, (size_t)(n - b - 2) * sizeof *w);
		memmove(first + b + 1, first + b + 2, (size_t)(n - b - 2) * sizeof *first);
		n--;
	}
	first[n] = x->g.nops;
	return n;
}

/* A graph of at most max-units ops is planned op by op; a larger one in
 * units, each unit's ops in one stage; max-units is validated. */
static void test_units(void **state)
{
	static const char *const bad[] = { "graphpipe:max-units=1", "graphpipe:max-units=0" };
	const char *cspec = "1x4:v100,intra=2GB/s";
	struct instance x;
	struct plan pl;
	struct planner_opts o = { 0 };
	struct planner_input input = { .budget_s = 30, .seed = 1, .opts = &o };
	const struct planner *gp;
	double s;
	int first[65], cut_inside = 0, n;

	(void)state;
	load(&x, two_branch, NULL, cspec);
	run_graphpipe(&x, "graphpipe", &pl, &s);
	assert_true(test_plan_stat(&pl, "units") == x.g.nops);
	plan_release(&pl);
	instance_release(&x);

	load(&x, chain, NULL, cspec);
	run_graphpipe(&x, "graphpipe", &pl, &s);
	assert_true(test_plan_stat(&pl, "units") == x.g.nops);
	n = chain_units(&x, 2, first);
	for (int k = 0; k < n; k++)
		for (int i = first[k] + 1; i < first[k + 1]; i++)
			cut_inside |= pl.ops[i].stage != pl.ops[first[k]].stage;
	/* unconstrained, the plan cuts inside one of two units */
	assert_true(cut_inside);
	plan_release(&pl);
	run_graphpipe(&x, "graphpipe:max-units=2", &pl, &s);
	assert_true(test_plan_stat(&pl, "units") == 2);
	assert_true(pl.nstages > 1);
	for (int k = 0; k < n; k++)
		for (int i = first[k] + 1; i < first[k + 1]; i++)
			assert_int_equal(pl.ops[i].stage, pl.ops[first[k]].stage);
	plan_release(&pl);

	input.g = &x.g;
	input.p = &x.p;
	input.c = &x.c;
	ap_err_quiet(1);
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		assert_int_equal(planner_parse(bad[k], "test", &gp, &o), AP_OK);
		plan_init(&pl);
		assert_int_equal(planner_run(gp, &input, "test", &pl), AP_EINPUT);
		plan_release(&pl);
	}
	ap_err_quiet(0);
	instance_release(&x);
}

/* --- 1F1B on a stage DAG ---------------------------------------------------- */

struct ev {
	double t;
	int delta;
};

/* Ends before starts at the same time: a device frees a micro-batch's
 * activations before the next forward keeps new ones. */
static int cmp_ev(const void *pa, const void *pb)
{
	const struct ev *a = pa, *b = pb;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->delta - b->delta;
}

/* The most micro-batches op holds between a forward's start and its
 * backward's end. */
static int max_in_flight(const struct sim *s, int op)
{
	int64_t n;
	const struct sim_task *t = sim_tasks(s, &n);
	struct ev *ev = calloc((size_t)n, sizeof *ev);
	int cur = 0, most = 0, nev = 0;

	assert_non_null(ev);
	for (int64_t k = 0; k < n; k++)
		if (t[k].op == op && t[k].shard == 0 && t[k].kind == TASK_FWD)
			ev[nev++] = (struct ev){ t[k].start_s, 1 };
		else if (t[k].op == op && t[k].shard == 0 && t[k].kind == TASK_BWD)
			ev[nev++] = (struct ev){ t[k].start_s + t[k].dur_s, -1 };
	qsort(ev, (size_t)nev, sizeof *ev, cmp_ev);
	for (int k = 0; k < nev; k++) {
		cur += ev[k].delta;
		most = cur > most ? cur : most;
	}
	free(ev);
	return most;
}

static void test_dag_1f1b_in_flight(void **state)
{
	/* stem | b.conv1 b.relu | b.conv2 on the long branch, a and c on a
	 * short one, then the head: the short branch has one stage after it,
	 * the long branch's first stage two */
	static const char *const stage_ops[5][4] = {
		{ "image", "stem" }, { "b.conv1", "b.relu" }, { "b.conv2" },
		{ "a.conv", "c.pool" }, { "cat", "flatten", "fc", "loss" },
	};
	static const int next[5][2] = { { 1, 3 }, { 2, -1 }, { 4, -1 }, { 4, -1 }, { -1, -1 } };
	struct instance x;
	struct plan pl;
	struct sim s;
	struct sim_result r;
	struct sim_opts so = { .record = 1 };

	(void)state;
	load(&x, NULL, "branchy_small", "1x5:v100,intra=50GB/s");
	plan_init(&pl);
	assert_int_equal(plan_alloc(&pl, &x.g, 5), AP_OK);
	for (int st = 0; st < 5; st++) {
		int one[NDIMS] = { 1, 1, 1, 1, 1 };

		assert_int_equal(plan_stage_range(&pl, st, st, 1, 0), AP_OK);
		for (int e = 0; e < 2; e++)
			if (next[st][e] >= 0)
				assert_int_equal(plan_link(&pl, st, next[st][e]), AP_OK);
		for (int k = 0; k < 4 && stage_ops[st][k]; k++)
			assert_int_equal(plan_place_range(&pl, graph_find(&x.g, stage_ops[st][k]), st,
						    one, st), AP_OK);
	}
	plan_schedule(&pl, SCHED_1F1B, 8);
	assert_int_equal(plan_validate(&pl, &x.g, &x.c, "dag"), AP_OK);
	assert_int_equal(sim_init(&s, &x.g, &x.p, &x.c), AP_OK);
	assert_int_equal(sim_run(&s, &pl, &so, &r), AP_OK);
	/* heights: stem 3, b.conv1 2, b.conv2 1, a/c 1, head 0 */
	assert_int_equal(max_in_flight(&s, graph_find(&x.g, "stem")), 4);
	assert_int_equal(max_in_flight(&s, graph_find(&x.g, "b.conv1")), 3);
	assert_int_equal(max_in_flight(&s, graph_find(&x.g, "a.conv")), 2);
	assert_int_equal(max_in_flight(&s, graph_find(&x.g, "fc")), 1);
	assert_true(r.makespan_s >= r.critical_path_s * (1 - 1e-12));
	sim_release(&s);
	plan_release(&pl);
	instance_release(&x);
}

/* `stage-microbatches`: stages of their own micro-batch counts, never
 * slower than the plan of one count, faster on candle_uno/summit-4x4
 * (whose wide input stages gain from larger micro-batches than the
 * stages after them), written and read back with the counts, and refused
 * by the runtime with a message naming the stage. */
static void test_stage_counts(void **state)
{
	static const char *const cases[][2] = { { "candle_uno", "summit-4x4" },
						 { "dlrm", "summit-2x4" },
						 { "gnmt", "pipedream-b" } };
	char path[600], args[800], out[4096];

	(void)state;
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct instance x;
		struct plan one, own, back;
		double t1, t2;

		load(&x, NULL, cases[k][0], cases[k][1]);
		run_graphpipe(&x, "graphpipe", &one, &t1);
		run_graphpipe(&x, "graphpipe:stage-microbatches", &own, &t2);
		assert_false(plan_mixed_microbatches(&one));
		assert_true(t2 <= t1 * (1 + 1e-12));
		if (k == 0) {
			assert_true(plan_mixed_microbatches(&own));
			assert_true(t2 < t1 * 0.99);
			snprintf(path, sizeof path, "%s/counts.json", tmp_dir());
			assert_int_equal(plan_write(&own, &x.g, path), AP_OK);
			plan_init(&back);
			assert_int_equal(plan_read(path, &x.g, &back), AP_OK);
			for (int s = 0; s < own.nstages; s++)
				assert_int_equal(plan_stage_microbatches(&back, s),
						 plan_stage_microbatches(&own, s));
			plan_release(&back);
			snprintf(args, sizeof args,
				 "plan -m candle_uno -c summit-4x4 -P graphpipe:stage-microbatches -o '%s'",
				 path);
			assert_int_equal(test_autopar(args, 0, out, sizeof out), 0);
			snprintf(args, sizeof args, "run '%s' --steps 1", path);
			assert_int_equal(test_autopar(args, 0, out, sizeof out), 2);
			if (!strstr(out, "micro-batches where the schedule has"))
				fail_msg("%s", out);
		}
		plan_release(&one);
		plan_release(&own);
		instance_release(&x);
	}
}

/* When no candidate fits memory, a clear refusal (exit 2) and nothing
 * sorted from an empty array (qsort(NULL, 0), which `make check-asan`'s
 * undefined-behaviour checks report). */
static void test_nothing_fits(void **state)
{
	char args[800], out[4096];

	(void)state;
	snprintf(args, sizeof args, "plan -m mlp -c '1x2:v100,mem=1KiB' -P graphpipe -o '%s/none.json'",
		 tmp_dir());
	assert_int_equal(test_autopar(args, 0, out, sizeof out), 2);
	if (!strstr(out, "fits the memory of 2 devices"))
		fail_msg("%s", out);
}

/* Tied weights: a stage holds both or neither of an op and the one whose
 * weight it ties (eval() in graphpipe_search.c), and the driver validates
 * the plan (run_graphpipe()).  GPT-2 on PipeDream's cluster A, at the
 * batch per device and at its own, where the stages of the plans before
 * split the pair: one stage holds its embedding, body and head; a small
 * model whose pair spans its body still pipelines its tail. */
static void test_tied_weights(void **state)
{
	static const char *const batches[] = { "0/dev", NULL };
	struct instance x;
	struct plan pl;
	double iter_s;

	(void)state;
	for (size_t k = 0; k < sizeof batches / sizeof batches[0]; k++) {
		test_instance(&x, "gpt2", batches[k], "pipedream-a");
		run_graphpipe(&x, "graphpipe", &pl, &iter_s);
		test_same_devices(&pl, &x.g, "transformer.wte", "lm_head");
		plan_release(&pl);
		instance_release(&x);
	}
	test_instance(&x, test_tied_model(), NULL, "1x4:v100");
	run_graphpipe(&x, "graphpipe", &pl, &iter_s);
	test_same_devices(&pl, &x.g, "wte", "head");
	assert_true(pl.nstages > 1);
	plan_release(&pl);
	instance_release(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_fits),
		cmocka_unit_test(test_matches_oracle),
		cmocka_unit_test(test_multi_branch),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_dag_1f1b_in_flight),
		cmocka_unit_test(test_stage_counts),
		cmocka_unit_test(test_tied_weights),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
