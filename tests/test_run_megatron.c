/*
 * Megatron-LM's strategies in the runtime (docs/plan-format.md, "Tensor
 * parallelism", "Training", "Pipelines of groups"): plans of the megatron
 * planner for gpt_tiny (tied embedding and LM head, 2 layers, 4 heads)
 * run on 4 and 8 CPU ranks and agree with one device (--check): tensor
 * parallelism over 2 ranks in a pipeline of 2 groups under 1F1B, whose
 * first and last stages hold copies of the tied weight (Megatron's
 * embedding group), with full recomputation too; ZeRO-1 over 2
 * data-parallel replicas (alone, and on 8 ranks with t = 2, p = 2);
 * zero bubble's zb-h1 on p = 2; and interleaved 1F1B with 2 model chunks
 * per group of gpt_tiny4, the same model with 4 layers, which the test
 * writes to a data directory of its own.  Each plan runs as the planner
 * made it, with Adam, and with SGD in its place, whose steps follow the
 * gradients' round-off linearly: that checks the parallel arithmetic to
 * float32 round-off.  What the runtime does not execute yet (mixed
 * precision, sequence parallelism, selective recomputation, ZeRO-3) is
 * refused before launch with one message.
 */
#include "runtest.h"

/* gpt_tiny (models/gpt_tiny.model) with 4 layers */
static const char gpt_tiny4[] =
	"model gpt_tiny4\n"
	"batch 8\n"
	"input     input_ids    l=32\n"
	"input     position_ids l=32\n"
	"embedding wte   input_ids    vocab=512 out=64\n"
	"embedding wpe   position_ids vocab=32  out=64\n"
	"add       embed wte wpe\n"
	"repeat 4\n"
	"layernorm h.{i}.ln_1       @in\n"
	"attention h.{i}.attn       h.{i}.ln_1 heads=4 causal=1\n"
	"add       h.{i}.add_1      h.{i}.attn @in\n"
	"layernorm h.{i}.ln_2       h.{i}.add_1\n"
	"linear    h.{i}.mlp.c_fc   h.{i}.ln_2 out=256\n"
	"gelu      h.{i}.mlp.act    h.{i}.mlp.c_fc\n"
	"linear    h.{i}.mlp.c_proj h.{i}.mlp.act out=64\n"
	"add       h.{i}.add_2      h.{i}.mlp.c_proj h.{i}.add_1\n"
	"end\n"
	"layernorm ln_f    h.3.add_2\n"
	"linear    lm_head ln_f out=512 bias=0 tie=wte\n"
	"loss      loss    lm_head\n";

/* A data directory holding the tree's profiles and gpt_tiny, and
 * gpt_tiny4; the test process and the binary read it through
 * AUTOPAR_DATA. */
static int setup(void **state)
{
	const char *tree = getenv("AUTOPAR_DATA");
	char dir[512], link[600], path[1024];

	(void)state;
	snprintf(dir, sizeof dir, "%s/data", tmp_dir());
	mkdir(dir, 0700);
	snprintf(link, sizeof link, "%s/models", dir);
	mkdir(link, 0700);
	snprintf(path, sizeof path, "%s/profiles", tree && *tree ? tree : ".");
	if (!realpath(path, link))
		return -1;
	snprintf(path, sizeof path, "%s/profiles", dir);
	if (symlink(link, path))
		return -1;
	snprintf(path, sizeof path, "%s/models/gpt_tiny.model", tree && *tree ? tree : ".");
	if (!realpath(path, link))
		return -1;
	snprintf(path, sizeof path, "%s/models/gpt_tiny.model", dir);
	if (symlink(link, path) || !tmp_write("data/models/gpt_tiny4.model", gpt_tiny4))
		return -1;
	return setenv("AUTOPAR_DATA", dir, 1);
}

/* The megatron planner's plan of model on cluster (batch 8) in float32
 * with options opts, into path[len]. */
static void megatron_plan(const char *model, const char *cluster, const char *opts,
			  const char *name, char *path, size_t len)
{
	char out[4096];
	int st;

	snprintf(path, len, "%s/%s.json", tmp_dir(), name);
	st = rt_run(out, sizeof out, "plan -m %s -c %s -b 8 -P megatron:precision=fp32,%s -o '%s'",
		    model, cluster, opts, path);
	if (st != 0) {
		print_error("plan %s: exit %d:\n%s\n", name, st, out);
		fail();
	}
}

/* Plan `from` of model with ZeRO stage zero and, with sgd, SGD with
 * momentum in place of its optimizer, into `to`. */
static void plan_variant(const char *model, const char *from, int zero, int sgd, const char *to)
{
	struct graph g;
	struct plan p;

	rt_plan_open(model, from, &g, &p);
	p.zero = zero;
	if (sgd)
		p.has_optimizer = 0;
	rt_plan_close(&g, &p, to);
}

/* --check of path over 3 steps with the options args: within tol of one
 * device; the difference into *d. */
static void check_run(const char *path, const char *args, double tol, const char *what,
		      double *d)
{
	char out[16384];
	int st = rt_run(out, sizeof out, "run '%s' --check --steps 2 --warmup 1 --tolerance %g %s",
			path, tol, args);

	*d = rt_check_diff(out);
	if (st != 0 || *d < 0 || *d >= tol) {
		print_error("%s: exit %d, difference %g:\n%s\n", what, st, *d, out);
		fail();
	}
}

/* Plan `name` (of model) checked as made, with Adam, and with SGD.
 * Adam divides each gradient by its own size, so the round-off of a
 * gradient small against the others' changes its step relatively: at
 * 1e-4 gpt_tiny, initialised as GPT-2 (weights of 0.02, the largest of a
 * tensor, which a difference is relative to, about 0.08), stays within
 * 9e-5 of one device (gpt_tiny4, with PyTorch's larger defaults, within
 * 1e-6), where a step applied wrongly (a part ZeRO missed, a moment of
 * the wrong weight) moves a weight by about 1e-4, above 1e-3 of the
 * largest, 5 times the tolerance.  SGD at its default rate checks the
 * gradients to round-off (about 1e-7). */
#define ADAM_TOL 2e-4

static void check_both(const char *model, const char *name, const char *path, int zero)
{
	char plan[1024], sgd[1024], what[256];
	double d;

	snprintf(plan, sizeof plan, "%s/%s-z.json", tmp_dir(), name);
	snprintf(sgd, sizeof sgd, "%s/%s-sgd.json", tmp_dir(), name);
	plan_variant(model, path, zero, 0, plan);
	plan_variant(model, path, zero, 1, sgd);
	snprintf(what, sizeof what, "%s with adam", name);
	check_run(plan, "--lr 1e-4", ADAM_TOL, what, &d);
	snprintf(what, sizeof what, "%s with sgd", name);
	check_run(sgd, "", 1e-5, what, &d);
	assert_true(d < 1e-6);
}

/* The plan at path names Adam and the given schedule and zero stage, and
 * splits h.0.attn over 2 tensor ranks. */
static void assert_plan(const char *model, const char *path, enum sched_kind k, int zero)
{
	struct graph g;
	struct plan p;

	rt_plan_open(model, path, &g, &p);
	assert_int_equal(p.sched, k);
	assert_int_equal(p.zero, zero);
	assert_true(p.has_optimizer && p.optimizer == OPTIMIZER_ADAM);
	assert_int_equal(plan_op_tensor(&p, graph_find(&g, "h.0.attn")), 2);
	rt_plan_close(&g, &p, NULL);
}

/* (a) t = 2, p = 2 under 1F1B: the LM head on the last stage holds a
 * copy of the embedding's table, the two summing their gradients; with
 * full recomputation the forwards' all-reduces run again before the
 * backwards.  The loss falls under Adam at its default rate. */
static void test_tensor_pipeline(void **state)
{
	char path[1024];

	(void)state;
	megatron_plan("gpt_tiny", "cpu-1x4", "tensor=2,pipeline=2", "tp2-pp2", path, sizeof path);
	assert_plan("gpt_tiny", path, SCHED_1F1B, 0);
	check_both("gpt_tiny", "tp2-pp2", path, 0);
	rt_falls_by_half("gpt_tiny", path);
	megatron_plan("gpt_tiny", "cpu-1x4", "tensor=2,pipeline=2,recompute=full", "tp2-pp2-rc",
		      path, sizeof path);
	check_both("gpt_tiny", "tp2-pp2-rc", path, 0);
}

/* (c) ZeRO-1 over 2 data-parallel replicas of t = 2 (the planner
 * chooses ZeRO by its prediction, so the test sets it), and on 8 ranks
 * t = 2, p = 2, d = 2, where the embedding group's 4 members share the
 * tied weight's optimizer state. */
static void test_zero(void **state)
{
	char path[1024], z[1024];
	double d;

	(void)state;
	megatron_plan("gpt_tiny", "cpu-1x4", "tensor=2,pipeline=1", "tp2-dp2", path, sizeof path);
	check_both("gpt_tiny", "tp2-dp2", path, 1);
	snprintf(z, sizeof z, "%s/tp2-dp2-z.json", tmp_dir());
	assert_plan("gpt_tiny", z, SCHED_1F1B, 1);
	megatron_plan("gpt_tiny", "1x8:cpu", "tensor=2,pipeline=2", "tp2-pp2-dp2", path,
		      sizeof path);
	check_both("gpt_tiny", "tp2-pp2-dp2", path, 1);
	/* the staged transport's reduce-scatter and all-gather */
	snprintf(z, sizeof z, "%s/tp2-pp2-dp2-z.json", tmp_dir());
	check_run(z, "--lr 1e-4 --transport staged", ADAM_TOL, "t2 p2 d2 zero-1, staged", &d);
}

/* (d) zero bubble H1 on p = 2: B and W passes apart, also with full
 * recomputation, and on 8 ranks with d = 2. */
static void test_zb_h1(void **state)
{
	char path[1024];

	(void)state;
	megatron_plan("gpt_tiny", "cpu-1x4", "tensor=2,pipeline=2,schedule=zb-h1", "zb", path,
		      sizeof path);
	assert_plan("gpt_tiny", path, SCHED_ZB_H1, 0);
	check_both("gpt_tiny", "zb", path, 0);
	megatron_plan("gpt_tiny", "cpu-1x4", "tensor=2,pipeline=2,schedule=zb-h1,recompute=full",
		      "zb-rc", path, sizeof path);
	check_both("gpt_tiny", "zb-rc", path, 0);
	megatron_plan("gpt_tiny", "1x8:cpu", "tensor=2,pipeline=2,schedule=zb-h1", "zb-8", path,
		      sizeof path);
	check_both("gpt_tiny", "zb-8", path, 1);
}

/* (b) interleaved 1F1B, t = 2, p = 2, v = 2 on the 4 layers of
 * gpt_tiny4: stages 0 and 2 on one group, 1 and 3 on the other, the
 * tied weight's copies on stages 0 and 3; and on 8 ranks with d = 2. */
static void test_interleaved(void **state)
{
	char path[1024];

	(void)state;
	megatron_plan("gpt_tiny4", "cpu-1x4",
		      "tensor=2,pipeline=2,chunks=2,schedule=interleaved-1f1b", "il", path,
		      sizeof path);
	assert_plan("gpt_tiny4", path, SCHED_INTERLEAVED, 0);
	check_both("gpt_tiny4", "il", path, 0);
	megatron_plan("gpt_tiny4", "1x8:cpu",
		      "tensor=2,pipeline=2,chunks=2,schedule=interleaved-1f1b", "il-8", path,
		      sizeof path);
	check_both("gpt_tiny4", "il-8", path, 1);
}

/* exit 2 and the message of `autopar run PATH` */
static void assert_refused(const char *path, const char *msg)
{
	char out[4096];

	assert_int_equal(rt_run(out, sizeof out, "run '%s' --steps 1", path), 2);
	if (!strstr(out, msg) || !strstr(out, "not executable by the runtime yet")) {
		print_error("%s: expected '%s':\n%s\n", path, msg, out);
		fail();
	}
}

/* What the runtime does not execute yet is refused before launch. */
static void test_refusals(void **state)
{
	char path[1024], out[4096], z3[1024];

	(void)state;
	/* the planner's default: mixed precision */
	snprintf(path, sizeof path, "%s/mixed.json", tmp_dir());
	assert_int_equal(rt_run(out, sizeof out, "plan -m gpt_tiny -c cpu-1x2 -b 8 -P megatron "
				"-o '%s'", path), 0);
	assert_refused(path, "the plan uses mixed precision");
	megatron_plan("gpt_tiny", "cpu-1x4", "tensor=2,sp", "sp", path, sizeof path);
	assert_refused(path, "the plan uses sequence parallelism");
	megatron_plan("gpt_tiny", "cpu-1x4", "tensor=2,recompute=selective", "sel", path,
		      sizeof path);
	assert_refused(path, "the plan uses selective recomputation of 'h.0.attn'");
	megatron_plan("gpt_tiny", "cpu-1x4", "tensor=2,pipeline=1", "z3", path, sizeof path);
	snprintf(z3, sizeof z3, "%s/z3-3.json", tmp_dir());
	plan_variant("gpt_tiny", path, 3, 0, z3);
	assert_refused(z3, "the plan uses ZeRO-3");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tensor_pipeline),
		cmocka_unit_test(test_zero),
		cmocka_unit_test(test_zb_h1),
		cmocka_unit_test(test_interleaved),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
