/*
 * Tests of the simulator (core/sim*.c, core/trace.c) on small graphs with
 * an in-memory profile whose rows give every shard a known time, so
 * expected iteration times are worked out by hand from the formulas the
 * simulator documents: data parallelism is the per-device compute plus the
 * ring (or hierarchical) all-reduce plus the update; a uniform k-stage
 * pipeline with free communication takes (m + k - 1) stage times under
 * gpipe and 1f1b and m under asynchronous 1f1b; a change of split between
 * neighbours moves exactly the overlap.  Invariants (makespan >= critical
 * path and >= the busiest device; a faster link never slows a plan down)
 * are checked on every plan here.
 */
#include "testutil.h"

#include <jansson.h>

#include "cluster.h"
#include "datadir.h"
#include "err.h"
#include "model_io.h"
#include "plan.h"
#include "profile.h"
#include "sim.h"

#define US 1e-6
#define EPS 1e-12

static struct graph g;
static struct profile prof;
static struct cluster cl;
static struct plan pl;
static struct sim sim;
static int have_sim;
static struct device_spec v100;

static void load(const char *text)
{
	graph_release(&g);
	if (model_parse(text, "t.model", 0, &g) != AP_OK)
		fail_msg("%s", ap_last_error());
}

static int op_of(const char *name)
{
	int i = graph_find(&g, name);

	if (i < 0)
		fail_msg("no op '%s'", name);
	return i;
}

static void cluster(const char *spec)
{
	char csv[4096];

	if (cluster_resolve(spec, datapath(csv, sizeof csv, "profiles/clusters.csv"),
			    &cl) != AP_OK)
		fail_msg("%s", ap_last_error());
}

/* Communication that costs nothing, which a spec cannot say (a zero
 * bandwidth or latency is refused as a typo). */
static void free_links(void)
{
	cl.intra.bw_bytes_per_s = cl.inter.bw_bytes_per_s = INFINITY;
	cl.intra.latency_s = cl.inter.latency_s = 0;
}

static void set_op(const char *name, int stage, int dn, int dc, const int *dev)
{
	struct plan_op *o = &pl.ops[op_of(name)];

	o->stage = stage;
	o->degree[DIM_N] = dn;
	o->degree[DIM_C] = dc;
	assert_int_equal(plan_set_devices(&o->devices, &o->ndev, dev, dn * dc), AP_OK);
}

static void set_stage(int s, const int *dev, int ndev, int next)
{
	struct plan_stage *ps = &pl.stages[s];

	assert_int_equal(plan_set_devices(&ps->devices, &ps->ndev, dev, ndev), AP_OK);
	assert_int_equal(plan_set_devices(&ps->next, &ps->nnext, &next, next >= 0),
			 AP_OK);
}

/* Every op of the plan at its degrees (n times its stage's micro-batches)
 * costs fwd_us and bwd_us of its own (by op index); measured rows, so the
 * lookups are exact. */
static void put_costs(const double *fwd_us, const double *bwd_us)
{
	char sig[1024];

	for (int i = 0; i < g.nops; i++) {
		int deg[NDIMS];

		memcpy(deg, pl.ops[i].degree, sizeof deg);
		deg[DIM_N] *= plan_stage_microbatches(&pl, pl.ops[i].stage);
		assert_int_equal(graph_op_signature(&g, i, deg, sig, sizeof sig), AP_OK);
		assert_int_equal(profile_put(&prof, sig, fwd_us[i], bwd_us[i], 0, 0),
				 AP_OK);
	}
}

/* Every op the same. */
static void put_uniform(double fwd_us, double bwd_us)
{
	double f[64], b[64];

	assert_true(g.nops <= 64);
	for (int i = 0; i < g.nops; i++) {
		f[i] = fwd_us;
		b[i] = bwd_us;
	}
	put_costs(f, b);
}

static void run(const struct sim_opts *o, struct sim_result *r)
{
	if (have_sim)
		sim_release(&sim);
	have_sim = 0;
	assert_int_equal(plan_validate(&pl, &g, &cl, "plan"), AP_OK);
	assert_int_equal(sim_init(&sim, &g, &prof, &cl), AP_OK);
	have_sim = 1;
	if (sim_run(&sim, &pl, o, r) != AP_OK)
		fail_msg("sim_run: %s", ap_last_error());
	/* The invariants every schedule keeps. */
	assert_true(r->makespan_s >= r->critical_path_s * (1 - EPS));
	assert_true(r->makespan_s >= r->busiest_compute_s * (1 - EPS));
	assert_true(r->iter_s <= r->makespan_s * (1 + EPS));
	assert_true(r->bubble >= -EPS && r->bubble < 1);
}

/* The plan at hand on cluster `slow` and on `fast`, whose links are no
 * slower: start times are maxima and sums of durations in a fixed order,
 * so no schedule can get slower, for every schedule kind. */
static void faster_not_slower(const char *slow, const char *fast)
{
	struct sim_result a, b;
	enum sched_kind keep = pl.sched;

	for (int k = 0; k < NSCHED_KINDS; k++) {
		pl.sched = (enum sched_kind)k;
		cluster(slow);
		run(NULL, &a);
		cluster(fast);
		run(NULL, &b);
		if (b.iter_s > a.iter_s * (1 + EPS))
			fail_msg("%s: %s on %s takes %g s, on %s %g s",
				 sched_name(pl.sched), g.name, fast, b.iter_s, slow, a.iter_s);
	}
	pl.sched = keep;
}

static void near(double got, double want)
{
	if (fabs(got - want) > 1e-9 * fabs(want) + 1e-15)
		fail_msg("got %.15g, expected %.15g", got, want);
}

static int setup(void **state)
{
	char path[4096];

	(void)state;
	ap_err_quiet(1);
	graph_init(&g);
	plan_init(&pl);
	profile_init(&prof);
	if (!v100.name[0] &&
	    device_find(datapath(path, sizeof path, "profiles/devices.csv"), "v100",
			&v100) != AP_OK) {
		print_error("device_find: %s\n", ap_last_error());
		return -1;
	}
	prof.dev = v100;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (have_sim)
		sim_release(&sim);
	have_sim = 0;
	plan_release(&pl);
	graph_release(&g);
	profile_release(&prof);
	return 0;
}

/* --- data parallelism ------------------------------------------------------ */

/* fc: 16 x 4 + 4 = 68 parameters, 272 bytes. */
static const char dp_model[] = "model t\nbatch 8\n"
			       "input x c=16\n"
			       "linear fc x out=4\n"
			       "loss l fc\n";

static void dp_plan(int m, enum sched_kind sched)
{
	static const int all[] = { 0, 1, 2, 3 };

	load(dp_model);
	assert_int_equal(plan_alloc(&pl, &g, 1), AP_OK);
	pl.microbatches = m;
	pl.sched = sched;
	set_stage(0, all, 4, -1);
	set_op("x", 0, 4, 1, all);
	set_op("fc", 0, 4, 1, all);
	set_op("l", 0, 4, 1, all);
	put_costs((const double[]){ 0, 10, 3 }, (const double[]){ 0, 20, 4 });
}

/* Per device: m x (10 + 3 + 4 + 20) us of compute; then fc's gradients
 * are all-reduced (nothing else overlaps: fc's backward is the last one)
 * and the update reads and writes 5 x 272 bytes (SGD with momentum). */
static void test_dp_ring(void **state)
{
	struct sim_result r;
	double B = 272, ar, upd;

	(void)state;
	cluster("1x4:v100");
	for (int sched = 0; sched < NSCHED_KINDS; sched++) {
		dp_plan(2, (enum sched_kind)sched);
		run(NULL, &r);
		ar = 2.0 * 3 / 4 * B / cl.intra.bw_bytes_per_s + 2.0 * 3 * cl.intra.latency_s;
		upd = 5 * B / prof.dev.mem_bw_bytes_per_s;
		if (sched_async((enum sched_kind)sched))
			/* the busiest resource: a device, or a ring link */
			near(r.iter_s, fmax(2 * 37 * US + upd, ar));
		else
			near(r.iter_s, 2 * 37 * US + ar + upd);
		near(r.makespan_s, 2 * 37 * US + ar + upd);
		/* micro-batches depend on each other only through the
		 * device they share */
		near(r.critical_path_s, 37 * US + ar + upd);
		near(r.busiest_compute_s, 2 * 37 * US + upd);
		near(r.bubble, 1 - (2 * 37 * US + upd) / r.iter_s);
		near(r.samples_per_s, 8 / r.iter_s);
		assert_int_equal(r.link_bytes[LINK_INTRA], 2 * 3 * 272);
		assert_int_equal(r.link_bytes[LINK_INTER], 0);
		assert_int_equal(r.ntask_kinds[TASK_ALLREDUCE], 1);
		assert_int_equal(r.ntask_kinds[TASK_SEND_ACT], 0);
		/* 3 ops x 4 shards x 2 micro-batches, forward and backward,
		 * one all-reduce, four updates */
		assert_int_equal(r.ntasks, 3 * 4 * 2 * 2 + 1 + 4);
		assert_int_equal(r.ndev_used, 4);
		assert_int_equal(r.costs.n[COST_MEASURED], 3);
	}
}

/* Two nodes of two: reduce-scatter inside the nodes, a ring of two across
 * the NICs, all-gather inside. */
static void test_dp_hierarchical(void **state)
{
	struct sim_result r;
	double B = 272, rs, inter, upd;

	(void)state;
	cluster("2x2:v100,intra=20GB/s,inter=10Gb/s,intra_lat=2us,inter_lat=10us");
	dp_plan(2, SCHED_1F1B);
	run(NULL, &r);
	rs = 0.5 * B / 20e9 + 2e-6;
	inter = 2.0 * 1 / 2 * B / 1.25e9 + 2.0 * 1 * 10e-6;
	upd = 5 * B / prof.dev.mem_bw_bytes_per_s;
	near(r.iter_s, 2 * 37 * US + rs + inter + rs + upd);
	assert_int_equal(r.ntask_kinds[TASK_REDUCE_SCATTER], 1);
	assert_int_equal(r.ntask_kinds[TASK_ALLREDUCE_INTER], 1);
	assert_int_equal(r.ntask_kinds[TASK_ALL_GATHER], 1);
	/* inside: (2 - 1) x B per node, twice; across: 2 (N - 1) x B */
	assert_int_equal(r.link_bytes[LINK_INTRA], 2 * 2 * 272);
	assert_int_equal(r.link_bytes[LINK_INTER], 2 * 272);
	faster_not_slower("2x2:v100,intra=20GB/s,inter=10Gb/s",
			  "2x2:v100,intra=20GB/s,inter=100Gb/s");
	faster_not_slower("2x2:v100",
			  "2x2:v100,intra=450GB/s,inter=400GB/s,intra_lat=1us,inter_lat=1us");
}

/* Adam keeps two copies of the weights as state, SGD with momentum one. */
static void test_dp_optimizer(void **state)
{
	struct sim_opts o = { .optimizer = SIM_ADAM };
	struct sim_result r;
	double B = 272, ar;

	(void)state;
	cluster("1x4:v100");
	dp_plan(2, SCHED_GPIPE);
	run(&o, &r);
	ar = 1.5 * B / cl.intra.bw_bytes_per_s + 6 * cl.intra.latency_s;
	near(r.iter_s, 2 * 37 * US + ar + 7 * B / prof.dev.mem_bw_bytes_per_s);
	for (int d = 0; d < 4; d++) {
		assert_int_equal(r.mem[d].weights, 272);
		assert_int_equal(r.mem[d].grads, 272);
		assert_int_equal(r.mem[d].opt_state, 2 * 272);
		assert_int_equal(r.mem[d].stash, 0);
	}
	o.optimizer = SIM_SGD;
	assert_int_equal(sim_run(&sim, &pl, &o, &r), AP_OK);
	assert_int_equal(r.mem[0].opt_state, 272);
	assert_int_equal(sim_optimizer_parse("adam", &o.optimizer), 0);
	assert_int_equal(o.optimizer, SIM_ADAM);
	assert_int_equal(sim_optimizer_parse("lamb", &o.optimizer), -1);
}

/* --- pipelines ---------------------------------------------------------------- */

/* Four relus (no parameters, so no all-reduce or update) on four stages:
 * every stage runs one op, the input and the loss cost nothing. */
static const char chain_model[] = "model t\nbatch 8\n"
				  "input x c=1024\n"
				  "relu r0 x\n"
				  "relu r1 r0\n"
				  "relu r2 r1\n"
				  "relu r3 r2\n"
				  "loss l r3\n";

static void chain_plan(int m, enum sched_kind sched, double tf, double tb)
{
	static const char *const ops[] = { "x", "r0", "r1", "r2", "r3", "l" };
	static const int stage_of[] = { 0, 0, 1, 2, 3, 3 };

	load(chain_model);
	assert_int_equal(plan_alloc(&pl, &g, 4), AP_OK);
	pl.microbatches = m;
	pl.sched = sched;
	for (int s = 0; s < 4; s++)
		set_stage(s, &s, 1, s < 3 ? s + 1 : -1);
	for (int i = 0; i < 6; i++)
		set_op(ops[i], stage_of[i], 1, 1, &stage_of[i]);
	put_costs((const double[]){ 0, tf, tf, tf, tf, 0 },
		  (const double[]){ 0, tb, tb, tb, tb, 0 });
}

static void test_pipeline_uniform(void **state)
{
	static const int ms[] = { 1, 4, 8 };
	struct sim_result r;
	double tf = 10, tb = 25;

	(void)state;
	cluster("1x4:v100");
	free_links();
	for (int k = 0; k < 3; k++) {
		int m = ms[k];

		chain_plan(m, SCHED_GPIPE, tf, tb);
		run(NULL, &r);
		near(r.iter_s, (m + 4 - 1) * (tf + tb) * US);
		near(r.bubble, 1 - 4 * m * (tf + tb) / (4 * (m + 3) * (tf + tb)));
		chain_plan(m, SCHED_1F1B, tf, tb);
		run(NULL, &r);
		near(r.iter_s, (m + 4 - 1) * (tf + tb) * US);
		/* No flush: one micro-batch per stage time. */
		chain_plan(m, SCHED_1F1B_ASYNC, tf, tb);
		run(NULL, &r);
		near(r.iter_s, m * (tf + tb) * US);
		/* the two streams share a device: a stage's period is f + b */
		chain_plan(m, SCHED_ASYNC_PREDICT, tf, tb);
		run(NULL, &r);
		near(r.iter_s, m * (tf + tb) * US);
		/* forward of a micro-batch through all stages then back */
		near(r.critical_path_s, 4 * (tf + tb) * US);
	}
}

/* A DAG of stages (GraphPipe's shape): two branches on stages 1 and 2 run
 * side by side between stage 0 and stage 3, so with free communication
 * the pipeline is three stages deep: (m + 3 - 1) stage times. */
static void test_stage_dag(void **state)
{
	static const char *const ops[] = { "x", "a", "b1", "b2", "j", "l" };
	static const int stage_of[] = { 0, 0, 1, 2, 3, 3 };
	static const int next0[] = { 1, 2 };
	struct sim_result r;
	double tf = 10, tb = 20;

	(void)state;
	cluster("1x4:v100");
	free_links();
	load("model t\nbatch 8\ninput x c=256\nrelu a x\nrelu b1 a\n"
	     "relu b2 a\nadd j b1 b2\nloss l j\n");
	for (int sched = 0; sched < NSCHED_KINDS; sched++) {
		assert_int_equal(plan_alloc(&pl, &g, 4), AP_OK);
		pl.microbatches = 4;
		pl.sched = (enum sched_kind)sched;
		for (int s = 0; s < 4; s++)
			set_stage(s, &s, 1, s == 1 || s == 2 ? 3 : -1);
		assert_int_equal(plan_set_devices(&pl.stages[0].next, &pl.stages[0].nnext,
						  next0, 2), AP_OK);
		for (int i = 0; i < 6; i++)
			set_op(ops[i], stage_of[i], 1, 1, &stage_of[i]);
		put_costs((const double[]){ 0, tf, tf, tf, tf, 0 },
			  (const double[]){ 0, tb, tb, tb, tb, 0 });
		run(NULL, &r);
		if (sched_async((enum sched_kind)sched))
			near(r.iter_s, 4 * (tf + tb) * US);
		else
			near(r.iter_s, (4 + 3 - 1) * (tf + tb) * US);
	}
}

/* Communication on the critical path: each stage boundary sends a 1024 x
 * mb_n float tensor forward and its gradient back. */
static void test_pipeline_links(void **state)
{
	struct sim_result slow, fast;
	int64_t per_mb = 1024 * 4; /* batch 8, 8 micro-batches: n = 1 */

	(void)state;
	cluster("1x4:v100,intra=1GB/s,intra_lat=5us");
	chain_plan(8, SCHED_1F1B, 10, 25);
	run(NULL, &slow);
	assert_int_equal(slow.link_bytes[LINK_INTRA], 3 * 2 * 8 * per_mb);
	assert_int_equal(slow.ntask_kinds[TASK_SEND_ACT], 3 * 8);
	assert_int_equal(slow.ntask_kinds[TASK_SEND_GRAD], 3 * 8);
	/* the critical path crosses the three boundaries both ways */
	near(slow.critical_path_s,
	     4 * 35 * US + 6 * (5e-6 + (double)per_mb / 1e9));
	cluster("1x4:v100,intra=100GB/s,intra_lat=5us");
	run(NULL, &fast);
	assert_true(fast.iter_s < slow.iter_s);
	cluster("1x4:v100,intra=100GB/s,intra_lat=1us");
	run(NULL, &slow);
	assert_true(slow.iter_s < fast.iter_s);
}

/* Two stages joined by a slow link: each micro-batch's activations take
 * X = 10 us to cross, ten times a stage's compute, so the transfers queue
 * on the link one after another, both ways: under gpipe the iteration is
 * tf + m X + tb forward and the same backward. */
static void test_link_contention(void **state)
{
	static const int d0 = 0, d1 = 1;
	struct sim_result r;
	int m = 4;

	(void)state;
	cluster("1x2:v100");
	cl.intra.latency_s = 1e-6;
	cl.intra.bw_bytes_per_s = 1024 * 4 / 9e-6; /* a micro-batch in 9 us */
	load("model t\nbatch 4\n"
	     "input x c=1024\n"
	     "relu r0 x\n"
	     "relu r1 r0\n"
	     "loss l r1\n");
	assert_int_equal(plan_alloc(&pl, &g, 2), AP_OK);
	pl.microbatches = m;
	set_stage(0, &d0, 1, 1);
	set_stage(1, &d1, 1, -1);
	set_op("x", 0, 1, 1, &d0);
	set_op("r0", 0, 1, 1, &d0);
	set_op("r1", 1, 1, 1, &d1);
	set_op("l", 1, 1, 1, &d1);
	put_costs((const double[]){ 0, 1, 1, 0 }, (const double[]){ 0, 1, 1, 0 });
	run(NULL, &r);
	near(r.iter_s, 2 * (1 + m * 10 + 1) * US);
	/* each way, the link is busy m X: the asynchronous pace */
	pl.sched = SCHED_1F1B_ASYNC;
	run(NULL, &r);
	near(r.iter_s, m * 10 * US);
}

/* --- transfers between splits ------------------------------------------------- */

/* a splits n, b splits c, both over devices 0 and 1: b's input is needed
 * whole (a linear's input does not follow a c split), so each of b's
 * shards fetches the half of a's output the other device computed. */
static const char reshard_model[] = "model t\nbatch 8\n"
				    "input x c=64\n"
				    "linear a x out=64\n"
				    "linear b a out=64\n"
				    "loss l b\n";

static void reshard_plan(int bn, int bc, const int *bdev)
{
	static const int two[] = { 0, 1 };

	load(reshard_model);
	assert_int_equal(plan_alloc(&pl, &g, 1), AP_OK);
	pl.microbatches = 2;
	set_stage(0, two, 2, -1);
	set_op("x", 0, 2, 1, two);
	set_op("a", 0, 2, 1, two);
	set_op("b", 0, bn, bc, bdev);
	set_op("l", 0, 1, 1, two);
	put_uniform(10, 20);
}

static int64_t sent_bytes(const struct sim *s, const char *op, enum sim_task_kind kind)
{
	const struct sim_task *t;
	int64_t n, sum = 0;
	int i = op_of(op);

	t = sim_tasks(s, &n);
	for (int64_t k = 0; k < n; k++)
		if (t[k].op == i && t[k].kind == kind)
			sum += t[k].bytes;
	return sum;
}

static void test_reshard(void **state)
{
	static const int two[] = { 0, 1 }, swapped[] = { 1, 0 };
	struct sim_opts o = { .record = 1 };
	struct sim_result r;
	int64_t a_mb = 4 * 64 * 4; /* a's output for one micro-batch */

	(void)state;
	cluster("1x2:v100");
	/* n -> c: half of the tensor moves each way, per micro-batch */
	reshard_plan(1, 2, two);
	run(&o, &r);
	assert_int_equal(sent_bytes(&sim, "a", TASK_SEND_ACT), 2 * 2 * (a_mb / 2));
	assert_int_equal(sent_bytes(&sim, "a", TASK_SEND_GRAD), 2 * 2 * (a_mb / 2));
	/* n -> n on the same devices: nothing moves */
	reshard_plan(2, 1, two);
	run(&o, &r);
	assert_int_equal(sent_bytes(&sim, "a", TASK_SEND_ACT), 0);
	assert_int_equal(sent_bytes(&sim, "a", TASK_SEND_GRAD), 0);
	/* n -> n with the devices swapped: all of it moves */
	reshard_plan(2, 1, swapped);
	run(&o, &r);
	assert_int_equal(sent_bytes(&sim, "a", TASK_SEND_ACT), 2 * a_mb);
	assert_int_equal(sent_bytes(&sim, "a", TASK_SEND_GRAD), 2 * a_mb);
	/* the input never receives a gradient */
	assert_int_equal(sent_bytes(&sim, "x", TASK_SEND_GRAD), 0);
	reshard_plan(1, 2, two);
	faster_not_slower("1x2:v100,intra=1GB/s", "1x2:v100,intra=2GB/s");
	faster_not_slower("1x2:v100,intra_lat=50us", "1x2:v100,intra_lat=49us");
}

/* Two consumers on one device that need the same region of a remote
 * tensor share one transfer (a runtime sends it once). */
static void test_shared_transfer(void **state)
{
	static const int d0 = 0, d1 = 1, two[] = { 0, 1 };
	struct sim_opts o = { .record = 1 };
	struct sim_result r;

	(void)state;
	cluster("1x2:v100");
	load("model t\nbatch 4\n"
	     "input x c=8\n"
	     "relu p x\n"
	     "relu q p\n"
	     "relu s p\n"
	     "add t q s\n"
	     "loss l t\n");
	assert_int_equal(plan_alloc(&pl, &g, 1), AP_OK);
	set_stage(0, two, 2, -1);
	set_op("x", 0, 1, 1, &d0);
	set_op("p", 0, 1, 1, &d0);
	set_op("q", 0, 1, 1, &d1);
	set_op("s", 0, 1, 1, &d1);
	set_op("t", 0, 1, 1, &d1);
	set_op("l", 0, 1, 1, &d1);
	put_uniform(1, 2);
	run(&o, &r);
	assert_int_equal(r.ntask_kinds[TASK_SEND_ACT], 1);
	assert_int_equal(sent_bytes(&sim, "p", TASK_SEND_ACT), 4 * 8 * 4);
	assert_int_equal(r.ntask_kinds[TASK_SEND_GRAD], 1);
}

/* --- memory ---------------------------------------------------------------------- */

static void test_memory_in_flight(void **state)
{
	struct sim_result r;
	int64_t mb = 1024 * 4;              /* one micro-batch of a relu */
	int64_t first = 2 * mb, last = 2 * mb + 4; /* stage 0: x, r0; stage 3:
						     * received r2, r3, l */

	(void)state;
	cluster("1x4:v100");
	chain_plan(8, SCHED_GPIPE, 10, 25);
	run(NULL, &r);
	assert_int_equal(r.mem[0].act, 8 * first);
	assert_int_equal(r.mem[3].act, 8 * last);
	chain_plan(8, SCHED_1F1B, 10, 25);
	run(NULL, &r);
	/* stage d keeps 4 - d micro-batches */
	assert_int_equal(r.mem[0].act, 4 * first);
	assert_int_equal(r.mem[1].act, 3 * 2 * mb);
	assert_int_equal(r.mem[3].act, 1 * last);
	/* two micro-batches of n = 4 */
	chain_plan(2, SCHED_1F1B, 10, 25);
	run(NULL, &r);
	assert_int_equal(r.mem[0].act, 2 * 4 * first);
	assert_int_equal(r.peak_mem_bytes, 2 * 4 * first);
	assert_int_equal(r.peak_dev, 0);
}

/* Activation recomputation (plan.h): every op of the 1F1B chain above
 * recomputes.  A backward re-runs its forward first (a stage time is
 * 2 tf + tb), a stage keeps only the inputs it receives for each
 * micro-batch in flight, and the outputs of one micro-batch are live
 * again during its backward. */
static void test_recompute(void **state)
{
	struct sim_result r;
	int64_t mb = 1024 * 4;
	double tf = 10, tb = 25;

	(void)state;
	cluster("1x4:v100");
	free_links();
	chain_plan(8, SCHED_1F1B, tf, tb);
	for (int i = 0; i < g.nops; i++)
		pl.ops[i].recompute = 1;
	run(NULL, &r);
	near(r.iter_s, (8 + 4 - 1) * (2 * tf + tb) * US);
	/* stage 0 receives nothing: x and r0 of one micro-batch */
	assert_int_equal(r.mem[0].act, 2 * mb);
	/* stage 1 keeps r0 for its 3 in flight, and r1 of one is back */
	assert_int_equal(r.mem[1].act, 3 * mb + mb);
	/* stage 3, one in flight: received r2, then r3 and l back */
	assert_int_equal(r.mem[3].act, 2 * mb + 4);
	/* only stage 1 recomputes: the others as without */
	chain_plan(8, SCHED_1F1B, tf, tb);
	pl.ops[op_of("r1")].recompute = 1;
	run(NULL, &r);
	assert_int_equal(r.mem[0].act, 4 * 2 * mb);
	assert_int_equal(r.mem[1].act, 4 * mb);
}

/* Asynchronous 1F1B stashes a weight version per micro-batch in flight
 * beyond the live one: K - d - 1 on stage depth d. */
static void test_memory_stash(void **state)
{
	static const char *const ops[] = { "x", "fc0", "fc1", "fc2", "l" };
	static const int stage_of[] = { 0, 0, 1, 2, 2 };
	struct sim_result r;
	int64_t w = (64 * 64 + 64) * 4;

	(void)state;
	cluster("1x4:v100");
	load("model t\nbatch 8\ninput x c=64\nlinear fc0 x out=64\n"
	     "linear fc1 fc0 out=64\nlinear fc2 fc1 out=64\nloss l fc2\n");
	for (int sched = 0; sched < NSCHED_KINDS; sched++) {
		assert_int_equal(plan_alloc(&pl, &g, 3), AP_OK);
		pl.microbatches = 4;
		pl.sched = (enum sched_kind)sched;
		for (int s = 0; s < 3; s++)
			set_stage(s, &s, 1, s < 2 ? s + 1 : -1);
		for (int i = 0; i < 5; i++)
			set_op(ops[i], stage_of[i], 1, 1, &stage_of[i]);
		put_uniform(5, 10);
		run(NULL, &r);
		for (int d = 0; d < 3; d++) {
			assert_int_equal(r.mem[d].weights, w);
			/* async-predict: one predicted copy per stage */
			assert_int_equal(r.mem[d].stash,
					 sched == SCHED_1F1B_ASYNC	  ? (2 - d) * w
					 : sched == SCHED_ASYNC_PREDICT ? w
									: 0);
			assert_int_equal(r.mem[d].peak,
					 r.mem[d].weights + r.mem[d].grads +
						 r.mem[d].opt_state + r.mem[d].stash +
						 r.mem[d].act + r.mem[d].workspace);
		}
		assert_int_equal(r.mem[3].peak, 0);
		assert_int_equal(r.ndev_used, 3);
		faster_not_slower("1x4:v100,intra=1GB/s", "1x4:v100,intra=1.5GB/s");
	}
}

/* --- trace ----------------------------------------------------------------------- */

static void test_trace(void **state)
{
	struct sim_opts o = { .record = 1 };
	struct sim_result r;
	json_error_t err;
	json_t *root, *ev, *e;
	const char *path;
	size_t k;
	int64_t nx = 0, ntasks;

	(void)state;
	cluster("2x2:v100");
	dp_plan(2, SCHED_1F1B);
	run(&o, &r);
	path = tmp_write("trace.json", "");
	assert_non_null(path);
	assert_int_equal(sim_trace_write(&sim, path), AP_OK);
	root = json_load_file(path, 0, &err);
	if (!root)
		fail_msg("%s:%d: %s", path, err.line, err.text);
	ev = json_object_get(root, "traceEvents");
	assert_true(json_is_array(ev));
	json_array_foreach(ev, k, e) {
		const char *ph = json_string_value(json_object_get(e, "ph"));

		assert_non_null(ph);
		if (strcmp(ph, "X") != 0)
			continue;
		nx++;
		assert_true(json_is_number(json_object_get(e, "ts")));
		assert_true(json_number_value(json_object_get(e, "dur")) >= 0);
		assert_true(json_integer_value(json_object_get(e, "pid")) <
			    sim_nresources(&sim));
		assert_non_null(json_string_value(json_object_get(e, "name")));
	}
	json_decref(root);
	sim_tasks(&sim, &ntasks);
	assert_int_equal(nx, r.ntasks);
	assert_int_equal(ntasks, r.ntasks);
	/* without a recorded run there is nothing to write */
	assert_int_equal(sim_run(&sim, &pl, NULL, &r), AP_OK);
	assert_int_equal(sim_trace_write(&sim, path), AP_EINPUT);
}

/* --- reuse and bad plans -------------------------------------------------------- */

/* One struct sim runs many plans: its answers equal a fresh one's. */
static void test_reuse(void **state)
{
	static const int two[] = { 0, 1 };
	struct sim_result a, b, c;
	struct sim fresh;

	(void)state;
	cluster("1x2:v100");
	reshard_plan(1, 2, two);
	run(NULL, &a);
	pl.ops[op_of("b")].degree[DIM_N] = 2;
	pl.ops[op_of("b")].degree[DIM_C] = 1;
	put_uniform(10, 20);
	assert_int_equal(sim_run(&sim, &pl, NULL, &b), AP_OK);
	assert_int_equal(a.ntask_kinds[TASK_SEND_ACT], 2 * 3);
	assert_int_equal(b.ntask_kinds[TASK_SEND_ACT], 2 * 1);
	assert_int_equal(sim_init(&fresh, &g, &prof, &cl), AP_OK);
	assert_int_equal(sim_run(&fresh, &pl, NULL, &c), AP_OK);
	near(b.iter_s, c.iter_s);
	assert_int_equal(b.ntasks, c.ntasks);
	assert_int_equal(b.link_bytes[LINK_INTRA], c.link_bytes[LINK_INTRA]);
	assert_int_equal(b.peak_mem_bytes, c.peak_mem_bytes);
	sim_release(&fresh);
}

static void test_bad_plan(void **state)
{
	struct sim_result r;

	(void)state;
	cluster("1x4:v100");
	chain_plan(2, SCHED_1F1B, 1, 1);
	run(NULL, &r);
	pl.stages[3].nnext = 0;
	assert_int_equal(plan_set_devices(&pl.stages[3].next, &pl.stages[3].nnext,
					  (const int[]){ 0 }, 1), AP_OK);
	assert_int_equal(sim_run(&sim, &pl, NULL, &r), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "cycle"));
	chain_plan(2, SCHED_1F1B, 1, 1);
	run(NULL, &r);
	pl.ops[op_of("r1")].ndev = 2;
	assert_int_equal(sim_run(&sim, &pl, NULL, &r), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "ops.r1.devices"));
	pl.ops[op_of("r1")].ndev = 1;
	pl.microbatches = 3;
	assert_int_equal(sim_run(&sim, &pl, NULL, &r), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "microbatches"));
}

/* --- stages of different micro-batch counts ------------------------------ */

/* Two stages on devices 0 and 1, stage 0 {x, a} in m0 micro-batches and
 * stage 1 {b, l} in m1, batch 8; a relu of n samples sends n x 4 KiB. */
static void two_stage_plan(int m0, int m1, enum sched_kind sched, double f0, double b0,
			   double f1, double b1)
{
	static const char *const ops[] = { "x", "a", "b", "l" };
	static const int stage_of[] = { 0, 0, 1, 1 };

	load("model t\nbatch 8\ninput x c=1024\nrelu a x\nrelu b a\nloss l b\n");
	assert_int_equal(plan_alloc(&pl, &g, 2), AP_OK);
	pl.microbatches = m0;
	pl.sched = sched;
	pl.stages[1].microbatches = m1;
	for (int s = 0; s < 2; s++)
		set_stage(s, &s, 1, s == 0 ? 1 : -1);
	for (int i = 0; i < 4; i++)
		set_op(ops[i], stage_of[i], 1, 1, &stage_of[i]);
	put_costs((const double[]){ 0, f0, f1, 0 }, (const double[]){ 0, b0, b1, 0 });
}

/* A finer stage feeding a coarser one (4 micro-batches of 2 samples into
 * 2 of 4), free links, worked out by hand.  GPipe: stage 0 forwards at
 * 0..40; stage 1's first waits for two of them (20..50), its second for
 * four (50..80); backwards 80..120 and 120..160; stage 0's first two
 * backwards wait for stage 1's first (120..130), its last two for the
 * second (160..170).  1F1B: stage 1 alternates; stage 0 warms up with
 * three forwards (its successor's first micro-batch is two of its own),
 * then B0 at 90..95, F3 95..105, B1 105..110; stage 1's F1 105..135 and
 * B1 135..175; stage 0's B2 and B3 175..185. */
static void test_mixed_gather(void **state)
{
	struct sim_result r;
	int64_t piece = 2 * 4096; /* a's output for one micro-batch of stage 0 */

	(void)state;
	cluster("1x2:v100");
	free_links();
	two_stage_plan(4, 2, SCHED_GPIPE, 10, 5, 30, 40);
	run(NULL, &r);
	near(r.iter_s, 170 * US);
	two_stage_plan(4, 2, SCHED_1F1B, 10, 5, 30, 40);
	run(NULL, &r);
	near(r.iter_s, 185 * US);
	/* one transfer per micro-batch of the finer stage, each way, and the
	 * bytes of the whole batch once each way */
	assert_int_equal(r.ntask_kinds[TASK_SEND_ACT], 4);
	assert_int_equal(r.ntask_kinds[TASK_SEND_GRAD], 4);
	assert_int_equal(r.link_bytes[LINK_INTRA], 2 * 4 * piece);
	/* stage 0 keeps x and a of three micro-batches of 2; stage 1 one
	 * micro-batch of 4: the two pieces it received, b and the loss */
	assert_int_equal(r.mem[0].act, 3 * 2 * piece);
	assert_int_equal(r.mem[1].act, 2 * piece + 2 * piece + 4 * 4);
}

/* The other way: 2 micro-batches of 4 into 4 of 2.  GPipe: stage 0 at
 * 0..20 and 20..40; stage 1 forwards 20..35, 35..50, then (after stage
 * 0's second) 50..65, 65..80, backwards 80..120 in four steps of 10;
 * stage 0's first backward waits for stage 1's first two (100..125), its
 * second for the last two (125..150). */
static void test_mixed_scatter(void **state)
{
	struct sim_result r, u;

	(void)state;
	cluster("1x2:v100");
	free_links();
	two_stage_plan(2, 4, SCHED_GPIPE, 20, 25, 15, 10);
	run(NULL, &r);
	near(r.iter_s, 150 * US);
	assert_int_equal(r.ntask_kinds[TASK_SEND_ACT], 4);
	assert_int_equal(r.ntask_kinds[TASK_SEND_GRAD], 4);
	/* the same bytes as one count everywhere */
	two_stage_plan(4, 4, SCHED_GPIPE, 20, 25, 15, 10);
	run(NULL, &u);
	assert_int_equal(r.link_bytes[LINK_INTRA], u.link_bytes[LINK_INTRA]);
	/* slower links only slow it down, re-batched transfers too */
	for (int k = 0; k < 2; k++) {
		two_stage_plan(2, 4, k ? SCHED_1F1B : SCHED_GPIPE, 20, 25, 15, 10);
		cluster("1x2:v100,intra=100GB/s");
		run(NULL, &u);
		cluster("1x2:v100,intra=1GB/s");
		run(NULL, &r);
		assert_true(r.iter_s > u.iter_s && u.iter_s >= 150 * US * (1 - EPS));
	}
}

/* A plan whose stages all name one count, not the schedule's, takes the
 * path of mixed counts and must give what that count gives as the
 * schedule's: the same order (sched_order_mixed() reduces to
 * sched_order()), times and memory; on a DAG of stages too. */
static void test_mixed_same_count(void **state)
{
	struct sim_result a, b;

	(void)state;
	cluster("1x4:v100,intra=2GB/s");
	for (int sched = 0; sched < 2; sched++) {
		enum sched_kind k = sched ? SCHED_1F1B : SCHED_GPIPE;

		chain_plan(8, k, 10, 25);
		run(NULL, &a);
		chain_plan(8, k, 10, 25);
		pl.microbatches = 2;
		for (int s = 0; s < 4; s++)
			pl.stages[s].microbatches = 8;
		run(NULL, &b);
		near(b.iter_s, a.iter_s);
		near(b.critical_path_s, a.critical_path_s);
		assert_int_equal(b.peak_mem_bytes, a.peak_mem_bytes);
		assert_int_equal(b.link_bytes[LINK_INTRA], a.link_bytes[LINK_INTRA]);
	}
}

/* Random DAGs of stages with counts of 1, 2, 4 and 8 (any two joined
 * ones divide one another): every item once, each stage's forwards and
 * backwards in order, a backward after its forward, a forward after the
 * forwards of its predecessors' micro-batches that overlap it and a
 * backward after those backwards of its successors. */
static void test_mixed_order(void **state)
{
	unsigned seed = 7;

	(void)state;
	for (int trial = 0; trial < 200; trial++) {
		int n = 2 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 6;
		int m[8], depth[8], ofs[9] = { 0 }, next[64], ne = 0, total = 0;
		int nf[8] = { 0 }, nb[8] = { 0 };
		struct sched_item it[128];
		enum sched_kind k = trial % 2 ? SCHED_1F1B : SCHED_GPIPE;

		for (int s = 0; s < n; s++) {
			m[s] = 1 << (int)(((seed = seed * 1103515245u + 12345u) >> 16) % 4);
			depth[s] = 0;
			total += 2 * m[s];
		}
		for (int s = 0; s < n; s++) {
			for (int t = s + 1; t < n; t++)
				if ((((seed = seed * 1103515245u + 12345u) >> 16) % 3) == 0 ||
				    (t == s + 1 && s + 1 < n))
					next[ne++] = t;
			ofs[s + 1] = ne;
		}
		for (int s = 0; s < n; s++)
			for (int e = ofs[s]; e < ofs[s + 1]; e++)
				depth[next[e]] = depth[s] + 1 > depth[next[e]] ? depth[s] + 1
									    : depth[next[e]];
		assert_int_equal(sched_order_mixed(k, n, depth, m, ofs, next, it), 0);
		for (int i = 0; i < total; i++) {
			int s = it[i].stage, j = it[i].mb;

			assert_int_equal(it[i].key, i);
			assert_int_equal(j, it[i].bwd ? nb[s] : nf[s]);
			assert_true(j < m[s]);
			if (it[i].bwd)
				assert_true(nb[s] < nf[s]);
			for (int p = 0; p < n; p++)
				for (int e = ofs[p]; e < ofs[p + 1]; e++) {
					/* o: the neighbour waited for */
					int o = it[i].bwd ? next[e] : p, linked = it[i].bwd ? p == s
											      : next[e] == s;
					int64_t need = ((int64_t)(j + 1) * m[o] + m[s] - 1) / m[s];

					if (linked)
						assert_true((it[i].bwd ? nb[o] : nf[o]) >= need);
				}
			(it[i].bwd ? nb : nf)[s]++;
		}
		for (int s = 0; s < n; s++)
			assert_true(nf[s] == m[s] && nb[s] == m[s]);
	}
}

/* What the simulator refuses of mixed counts. */
static void test_mixed_bad(void **state)
{
	struct sim_result r;

	(void)state;
	cluster("1x2:v100");
	two_stage_plan(4, 2, SCHED_1F1B, 1, 1, 1, 1);
	run(NULL, &r);
	pl.sched = SCHED_1F1B_ASYNC;
	assert_int_equal(sim_run(&sim, &pl, NULL, &r), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "synchronous"));
	pl.sched = SCHED_1F1B;
	pl.stages[1].microbatches = 3;
	assert_int_equal(sim_run(&sim, &pl, NULL, &r), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "stages[1].microbatches"));
	pl.microbatches = 8;
	pl.stages[1].microbatches = 2;
	pl.stages[0].microbatches = 0;
	run(NULL, &r);
	pl.microbatches = 2;
	pl.stages[0].microbatches = 8;
	pl.stages[1].microbatches = 0;
	run(NULL, &r);
}

/* --- round-robin replicas ------------------------------------------------------ */

/* Two stages: stage 0 {x, a} (a linear of 16 x 16 + 16 = 272 parameters,
 * 1088 bytes) in r round-robin replicas of one device each (devices
 * 0..r-1), stage 1 {b, l} on device r; a's output is batch / m x 64 bytes
 * per micro-batch. */
static void rr_plan(int batch, int m, int r, enum sched_kind sched, double f0, double b0,
		    double f1, double b1)
{
	static const int dev[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	char text[256];

	snprintf(text, sizeof text,
		 "model t\nbatch %d\ninput x c=16\nlinear a x out=16\nrelu b a\nloss l b\n",
		 batch);
	load(text);
	assert_int_equal(plan_alloc(&pl, &g, 2), AP_OK);
	pl.microbatches = m;
	pl.sched = sched;
	set_stage(0, dev, r, 1);
	pl.stages[0].replicas = r;
	set_stage(1, &dev[r], 1, -1);
	set_op("x", 0, 1, 1, dev);
	set_op("a", 0, 1, 1, dev);
	set_op("b", 1, 1, 1, &dev[r]);
	set_op("l", 1, 1, 1, &dev[r]);
	put_costs((const double[]){ 0, f0, f1, 0 }, (const double[]){ 0, b0, b1, 0 });
}

/* The update of a's 1088 bytes of weights (SGD with momentum). */
static double rr_update_s(void)
{
	return 5 * 1088 / prof.dev.mem_bw_bytes_per_s;
}

/* The recorded compute tasks of op on device dev: how many, and whether
 * every one is of a micro-batch j with j % r == rep. */
static int rr_tasks_on(const char *op, int dev, int r, int rep)
{
	const struct sim_task *t;
	int64_t n;
	int count = 0, i = op_of(op);

	t = sim_tasks(&sim, &n);
	assert_non_null(t);
	for (int64_t k = 0; k < n; k++) {
		if (t[k].op != i || t[k].res != dev ||
		    (t[k].kind != TASK_FWD && t[k].kind != TASK_BWD))
			continue;
		assert_int_equal(t[k].mb % r, rep);
		count += t[k].kind == TASK_FWD;
	}
	return count;
}

/* Stage 0 (f 20, b 40) in two replicas feeding stage 1 (f 10, b 20),
 * free links, worked out by hand.  m = 2, gpipe: both replicas forward
 * at 0..20, stage 1 at 20..30 and 30..40, backward 40..60 and 60..80,
 * replica 0's backward 60..100, replica 1's 80..120, then the
 * all-reduce (free) and the updates: 120 (150 with one device).  1f1b
 * orders stage 1 F0 B0 F1 B1 (20..30, 30..50, 50..60, 60..80): the same
 * 120.  m = 4, gpipe: replica g runs micro-batches g and g + 2; stage 1
 * forwards at 20..30, 30..40, 40..50, 50..60 and backwards from 60 in
 * 20s, replica 0's backwards 80..120 and 120..160, replica 1's 100..140
 * and 140..180: 180.  1f1b: replica 0 runs F0 B0 F2 B2 in that order,
 * so F2 waits for B0 (50..90) and runs 90..110; B2 140..180 after stage
 * 1's 120..140; replica 1's B3 170..210: 210. */
static void test_rr_chain(void **state)
{
	static const struct {
		int m;
		enum sched_kind sched;
		double iter_us;
	} c[] = {
		{ 2, SCHED_GPIPE, 120 }, { 2, SCHED_1F1B, 120 },
		{ 4, SCHED_GPIPE, 180 }, { 4, SCHED_1F1B, 210 },
	};
	struct sim_opts o = { .record = 1 };
	struct sim_result r;

	(void)state;
	cluster("1x4:v100");
	free_links();
	for (int k = 0; k < 4; k++) {
		int m = c[k].m;

		rr_plan(8, m, 2, c[k].sched, 20, 40, 10, 20);
		run(&o, &r);
		near(r.iter_s, c[k].iter_us * US + rr_update_s());
		assert_int_equal(r.iters, 1);
		/* every micro-batch runs each of the 4 ops once */
		assert_int_equal(r.ntask_kinds[TASK_FWD], 4 * m);
		assert_int_equal(r.ntask_kinds[TASK_BWD], 4 * m);
		assert_int_equal(r.ntask_kinds[TASK_SEND_ACT], m);
		assert_int_equal(r.ntask_kinds[TASK_SEND_GRAD], m);
		assert_int_equal(r.ntask_kinds[TASK_ALLREDUCE], 1);
		assert_int_equal(r.ntask_kinds[TASK_UPDATE], 2);
		/* m x 512 / m bytes each way; a ring of two: 2 x 1088 */
		assert_int_equal(r.link_bytes[LINK_INTRA], 2 * 512 + 2 * 1088);
		assert_int_equal(r.ndev_used, 3);
		for (int d = 0; d < 2; d++) {
			assert_int_equal(r.mem[d].weights, 1088);
			assert_int_equal(rr_tasks_on("a", d, 2, d), m / 2);
			assert_int_equal(rr_tasks_on("x", d, 2, d), m / 2);
		}
		assert_int_equal(rr_tasks_on("b", 2, 1, 0), m);
		near(r.busiest_compute_s, m / 2 * 60 * US + rr_update_s());
		near(r.compute_busy_s, m * 60 * US + 2 * rr_update_s() + m * 30 * US);
		/* the trace of such a run */
		assert_int_equal(sim_trace_write(&sim, tmp_write("rr.json", "")), AP_OK);
		assert_int_equal(sim_timeline_write(&sim, tmp_write("rr.tsv", "")), AP_OK);
	}
	/* one device for stage 0 */
	rr_plan(8, 2, 1, SCHED_GPIPE, 20, 40, 10, 20);
	run(NULL, &r);
	near(r.iter_s, 150 * US + rr_update_s());
}

/* Three replicas, four micro-batches (gpipe): replica 0 runs micro-batches
 * 0 and 3, the others one each.  Stage 1 (f 5, b 10) forwards at 20..25,
 * 25..30, 30..35, 40..45 (micro-batch 3 waits for replica 0's second
 * forward) and backwards from 45 in 10s; replica 0's B0 at 55..95 and B3,
 * after stage 1's 75..85, at 95..135. */
static void test_rr_imbalance(void **state)
{
	struct sim_opts o = { .record = 1 };
	struct sim_result r;
	double u = rr_update_s();

	(void)state;
	cluster("1x4:v100");
	free_links();
	rr_plan(8, 4, 3, SCHED_GPIPE, 20, 40, 5, 10);
	run(&o, &r);
	near(r.iter_s, 135 * US + u);
	near(r.busiest_compute_s, 2 * 60 * US + u);
	near(r.compute_busy_s, (2 * 60 + 60 + 60) * US + 3 * u + 4 * 15 * US);
	assert_int_equal(rr_tasks_on("a", 0, 3, 0), 2);
	assert_int_equal(rr_tasks_on("a", 1, 3, 1), 1);
	assert_int_equal(rr_tasks_on("a", 2, 3, 2), 1);
	assert_int_equal(r.ntask_kinds[TASK_UPDATE], 3);
	/* a ring of three: 2 x 2 x 1088 */
	assert_int_equal(r.link_bytes[LINK_INTRA], 2 * 512 + 4 * 1088);
}

/* Asynchronous 1F1B, three replicas, two micro-batches: the assignment
 * repeats after lcm(2, 3) = 6 micro-batches, three iterations, in which
 * each replica runs two micro-batches, and the replicas all-reduce and
 * update after each of the two rounds of three: per iteration 2/3 x (f0
 * + b0 + the update), and stage 1 2 x (f1 + b1).  Whichever is slower
 * sets the pace.  Each replica has at most one of stage 0's two
 * micro-batches in flight: no stashed version.  Two replicas and four
 * micro-batches: two rounds an iteration.  Under async-predict the
 * replicas sync once an iteration. */
static void test_rr_async_period(void **state)
{
	struct sim_result r, r6;
	double u = rr_update_s();
	int64_t n;

	(void)state;
	cluster("1x4:v100");
	free_links();
	rr_plan(8, 2, 3, SCHED_1F1B_ASYNC, 20, 40, 5, 10);
	run(NULL, &r);
	near(r.iter_s, 40 * US + 2 * u / 3);
	near(r.busiest_compute_s, 40 * US + 2 * u / 3);
	assert_int_equal(r.iters, 3);
	assert_int_equal(r.ntask_kinds[TASK_FWD], 4 * 2);
	assert_int_equal(r.ntask_kinds[TASK_SEND_ACT], 2);
	/* 2 all-reduces and 6 updates in 3 iterations, rounded */
	assert_int_equal(r.ntask_kinds[TASK_ALLREDUCE], 1);
	assert_int_equal(r.ntask_kinds[TASK_UPDATE], 2);
	/* (3 x 2 x 512 + 2 x 4 x 1088) / 3, rounded */
	assert_int_equal(r.link_bytes[LINK_INTRA], (3 * 2 * 512 + 2 * 4 * 1088 + 1) / 3);
	for (int d = 0; d < 3; d++)
		assert_int_equal(r.mem[d].stash, 0);
	rr_plan(8, 4, 2, SCHED_1F1B_ASYNC, 20, 40, 5, 10);
	run(NULL, &r);
	assert_int_equal(r.iters, 1);
	near(r.iter_s, 2 * (60 * US + u));
	assert_int_equal(r.ntask_kinds[TASK_ALLREDUCE], 2);
	assert_int_equal(r.ntask_kinds[TASK_UPDATE], 4);
	assert_int_equal(r.link_bytes[LINK_INTRA], 2 * 512 + 2 * 2 * 1088);
	/* links that cost: a round's all-reduce holds its replicas'
	 * devices (PipeDream's replicas wait for it in their backward),
	 * two rounds in three iterations */
	cluster("1x4:v100");
	rr_plan(8, 2, 3, SCHED_1F1B_ASYNC, 20, 40, 5, 10);
	run(NULL, &r);
	{
		static const int rep[] = { 0, 1, 2 };
		double ar = sim_allreduce_s(&cl, rep, 3, 1088);

		assert_true(ar > 0);
		near(r.busiest_compute_s, 40 * US + 2 * u / 3 + 2 * ar / 3);
		assert_true(r.iter_s >= r.busiest_compute_s);
	}
	free_links();
	/* one replica: a version stashed for the second micro-batch */
	rr_plan(8, 2, 1, SCHED_1F1B_ASYNC, 20, 40, 5, 10);
	run(NULL, &r6);
	assert_int_equal(r6.mem[0].stash, 1088);
	/* stage 1 the bottleneck: three iterations of two micro-batches are
	 * one of six of the same size (batch 24), whose all-reduce and
	 * updates are off the bottleneck */
	rr_plan(8, 2, 3, SCHED_1F1B_ASYNC, 20, 40, 20, 40);
	run(NULL, &r);
	near(r.iter_s, 2 * 60 * US);
	rr_plan(24, 6, 3, SCHED_1F1B_ASYNC, 20, 40, 20, 40);
	run(NULL, &r6);
	near(r6.iter_s, 6 * 60 * US);
	near(3 * r.iter_s, r6.iter_s);
	near(3 * r.busiest_compute_s, r6.busiest_compute_s);
	assert_int_equal(3 * r.ntask_kinds[TASK_SEND_ACT], r6.ntask_kinds[TASK_SEND_ACT]);
	assert_int_equal(3 * r.ntask_kinds[TASK_FWD], r6.ntask_kinds[TASK_FWD]);
	/* async-predict runs the same period, recorded whole */
	rr_plan(8, 2, 3, SCHED_ASYNC_PREDICT, 20, 40, 5, 10);
	run(&(struct sim_opts){ .record = 1 }, &r);
	near(r.iter_s, 40 * US + u);
	assert_int_equal(r.ntask_kinds[TASK_UPDATE], 3);
	assert_int_equal(r.iters, 3);
	sim_tasks(&sim, &n);
	assert_int_equal(n, 3 * r.ntasks);
	for (int d = 0; d < 3; d++)
		assert_int_equal(rr_tasks_on("a", d, 3, d), 2);
}

/* One stage of r replicas of one device with m micro-batches does what
 * the same stage split along n over the r devices does with m / r: each
 * device computes m / r micro-batches of batch / m samples, and the
 * gradients of the same r shards are all-reduced. */
static void test_rr_vs_split(void **state)
{
	static const int all[] = { 0, 1, 2, 3 };
	struct sim_result a, b;
	int64_t wb[4];

	(void)state;
	cluster("1x4:v100");
	for (int m = 4; m <= 8; m *= 2) {
		dp_plan(m / 4, SCHED_GPIPE);
		run(NULL, &b);
		for (int d = 0; d < 4; d++)
			wb[d] = b.mem[d].weights;
		pl.microbatches = m;
		pl.stages[0].replicas = 4;
		set_op("x", 0, 1, 1, all);
		set_op("fc", 0, 1, 1, all);
		set_op("l", 0, 1, 1, all);
		put_costs((const double[]){ 0, 10, 3 }, (const double[]){ 0, 20, 4 });
		run(NULL, &a);
		near(a.iter_s, b.iter_s);
		near(a.busiest_compute_s, b.busiest_compute_s);
		near(a.compute_busy_s, b.compute_busy_s);
		assert_int_equal(a.link_bytes[LINK_INTRA], b.link_bytes[LINK_INTRA]);
		assert_int_equal(a.ntask_kinds[TASK_ALLREDUCE], b.ntask_kinds[TASK_ALLREDUCE]);
		assert_int_equal(a.ntask_kinds[TASK_FWD], b.ntask_kinds[TASK_FWD]);
		assert_int_equal(a.ndev_used, 4);
		for (int d = 0; d < 4; d++)
			assert_int_equal(a.mem[d].weights, wb[d]);
	}
}

/* One replica is none; sim_delta() runs a plan with replicas in full;
 * a period past the cap is refused. */
static void test_rr_plain(void **state)
{
	struct sim_result a, b;
	int dev[131];

	(void)state;
	cluster("1x4:v100");
	for (int sched = 0; sched < NSCHED_KINDS; sched++) {
		rr_plan(8, 4, 1, (enum sched_kind)sched, 20, 40, 5, 10);
		run(NULL, &a);
		pl.stages[0].replicas = 1;
		pl.stages[1].replicas = 1;
		run(NULL, &b);
		assert_memory_equal(&a.iter_s, &b.iter_s, sizeof a.iter_s);
		assert_memory_equal(&a.critical_path_s, &b.critical_path_s, sizeof a.iter_s);
		assert_int_equal(a.ntasks, b.ntasks);
		assert_int_equal(a.peak_mem_bytes, b.peak_mem_bytes);
		rr_plan(8, 4, 3, (enum sched_kind)sched, 20, 40, 5, 10);
		run(NULL, &a);
		pl.ops[op_of("a")].degree[DIM_N] = 1;
		assert_int_equal(sim_delta(&sim, &pl, (const int[]){ op_of("a") }, 1, &b), AP_OK);
		assert_memory_equal(&a.iter_s, &b.iter_s, sizeof a.iter_s);
		assert_int_equal(a.ntasks, b.ntasks);
	}
	/* lcm(64, 67) = 4288 micro-batches for one: more than the simulator
	 * runs */
	cluster("1x131:v100");
	load("model t\nbatch 8\ninput x c=16\nlinear a x out=16\nrelu b a\nloss l b\n");
	for (int k = 0; k < 131; k++)
		dev[k] = k;
	assert_int_equal(plan_alloc(&pl, &g, 2), AP_OK);
	pl.sched = SCHED_1F1B_ASYNC;
	set_stage(0, dev, 64, 1);
	set_stage(1, dev + 64, 67, -1);
	pl.stages[0].replicas = 64;
	pl.stages[1].replicas = 67;
	set_op("x", 0, 1, 1, dev);
	set_op("a", 0, 1, 1, dev);
	set_op("b", 1, 1, 1, dev + 64);
	set_op("l", 1, 1, 1, dev + 64);
	put_uniform(1, 2);
	assert_int_equal(plan_validate(&pl, &g, &cl, "plan"), AP_OK);
	sim_release(&sim);
	assert_int_equal(sim_init(&sim, &g, &prof, &cl), AP_OK);
	assert_int_equal(sim_run(&sim, &pl, NULL, &a), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "round-robin"));
	/* synchronous: one iteration as it comes */
	pl.sched = SCHED_1F1B;
	run(NULL, &a);
	assert_int_equal(a.ntask_kinds[TASK_UPDATE], 64);
}

/* Every test starts from an empty graph, plan and profile. */
#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(test_dp_ring),          TEST(test_dp_hierarchical),
		TEST(test_dp_optimizer),     TEST(test_pipeline_uniform),
		TEST(test_stage_dag),
		TEST(test_pipeline_links),   TEST(test_link_contention),
		TEST(test_reshard),          TEST(test_shared_transfer),
		TEST(test_memory_in_flight), TEST(test_recompute), TEST(test_memory_stash),
		TEST(test_trace),            TEST(test_reuse),
		TEST(test_bad_plan),
		TEST(test_mixed_gather),     TEST(test_mixed_scatter),
		TEST(test_mixed_same_count), TEST(test_mixed_order),
		TEST(test_mixed_bad),
		TEST(test_rr_chain),         TEST(test_rr_imbalance),
		TEST(test_rr_async_period),  TEST(test_rr_vs_split),
		TEST(test_rr_plain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
