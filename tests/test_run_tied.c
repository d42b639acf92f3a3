/*
 * Tied weights in the runtime: a tiny language model whose head shares the
 * token embedding's table (tie=, as GPT-2's) trains on one rank and
 * data-parallel on two, the two ranks agreeing with one device to float32
 * round-off (--check) with one or several micro-batches, in a pipeline
 * whose stage holds both ops, and its loss falls; the pair on different
 * ranks is not a valid plan (plan_validate(): run and check refuse it),
 * and placements the runtime cannot run (the weight split along c, an
 * asynchronous schedule) are refused before launch, each with one
 * message naming both ops; the profiler times the tied head.  The model is
 * written to a data directory of the test's own, beside the tree's
 * profiles.
 */
#include "runtest.h"
#include "plan/plan_build.h"

#include <unistd.h>

static const char tied_model[] =
	"model tied_tiny\n"
	"batch 8\n"
	"input     ids   l=8\n"
	"embedding wte   ids  vocab=64 out=16\n"
	"layernorm ln    wte\n"
	"linear    fc    ln   out=16\n"
	"gelu      act   fc\n"
	"add       res   act wte\n"
	"linear    head  res  out=64 bias=0 tie=wte\n"
	"loss      loss  head\n";

/* A data directory holding the tied model and the tree's profiles; the
 * test process and the binary read it through AUTOPAR_DATA. */
static int setup(void **state)
{
	char dir[512], link[600], prof[1024];
	const char *tree = getenv("AUTOPAR_DATA");

	(void)state;
	snprintf(dir, sizeof dir, "%s/data", tmp_dir());
	snprintf(prof, sizeof prof, "%s/profiles", tree && *tree ? tree : ".");
	if (!realpath(prof, link))
		return -1;
	snprintf(prof, sizeof prof, "%s", link);
	mkdir(dir, 0700);
	snprintf(link, sizeof link, "%s/profiles", dir);
	if (symlink(prof, link))
		return -1;
	snprintf(link, sizeof link, "%s/models", dir);
	mkdir(link, 0700);
	if (!tmp_write("data/models/tied_tiny.model", tied_model))
		return -1;
	return setenv("AUTOPAR_DATA", dir, 1);
}

/* The plan of planner P for the tied model on cpu-1x2, into path. */
static void plan_with(const char *planner, char *path, size_t len)
{
	char out[4096];

	snprintf(path, len, "%s/tied-%s.json", tmp_dir(), planner);
	assert_int_equal(rt_run(out, sizeof out, "plan -m tied_tiny -c cpu-1x2 -P %s -b 8 -o '%s'",
				planner, path), 0);
}

static void test_single_and_dp(void **state)
{
	char plan[1024];

	(void)state;
	plan_with("single", plan, sizeof plan);
	rt_check_plan(plan, "tied_tiny by single");
	rt_falls_by_half("tied_tiny", plan);
	plan_with("dp", plan, sizeof plan);
	rt_check_plan(plan, "tied_tiny by dp");
	rt_falls_by_half("tied_tiny", plan);
}

/* Several micro-batches: the pair's gradients add up over all of them
 * before the replicas sum them once. */
static void test_microbatches(void **state)
{
	char plan[1024];

	(void)state;
	snprintf(plan, sizeof plan, "%s/tied-dp-m4.json", tmp_dir());
	rt_pipeline_plan("tied_tiny", 8, "cpu-1x2", 1, 2, SCHED_GPIPE, 4, plan);
	rt_check_plan(plan, "tied_tiny, 1 stage x 2, 4 micro-batches");
}

/* The tied model at batch 8 in g, and p sized for it with nstages
 * stages, for cpu-1x2, made by planner. */
static void tied_plan_begin(struct graph *g, struct plan *p, int nstages, const char *planner)
{
	graph_init(g);
	plan_init(p);
	assert_int_equal(model_load("tied_tiny", 8, g), 0);
	assert_int_equal(plan_alloc(p, g, nstages), 0);
	snprintf(p->cluster, sizeof p->cluster, "cpu-1x2");
	snprintf(p->planner, sizeof p->planner, "%s", planner);
}

/* Two stages under 1F1B: every op on rank 0 but the loss on rank 1. */
static void test_pipeline_same_stage(void **state)
{
	char plan[1024];
	struct graph g;
	struct plan p;
	static const int one[NDIMS] = { 1, 1, 1, 1, 1 };
	int dev[2] = { 0, 1 };

	(void)state;
	tied_plan_begin(&g, &p, 2, "test-pipeline");
	plan_schedule(&p, SCHED_1F1B, 4);
	for (int s = 0; s < 2; s++)
		assert_int_equal(plan_stage(&p, s, &dev[s], 1, 0), 0);
	assert_int_equal(plan_chain(&p), 0);
	for (int i = 0; i < g.nops; i++) {
		int s = g.ops[i].kind == OP_LOSS;

		assert_int_equal(plan_place(&p, i, s, one, &dev[s]), 0);
	}
	snprintf(plan, sizeof plan, "%s/tied-1f1b.json", tmp_dir());
	assert_int_equal(plan_write(&p, &g, plan), 0);
	plan_release(&p);
	graph_release(&g);
	rt_check_plan(plan, "tied_tiny, the pair on stage 0 of 2, 1F1B");
}

/* `run PLAN` exits 2 before launching with one line naming both ops and
 * what the runtime requires, of a plan that `check` accepts. */
static void refused(const char *plan, const char *requires)
{
	char out[4096];
	int st = rt_run(out, sizeof out, "run '%s' --steps 2 --warmup 0", plan);

	if (st != 2 || !strstr(out, "operator 'head' (linear) ties its weight to 'wte': the "
				    "runtime runs a tied pair only") ||
	    !strstr(out, requires) || strchr(out, '\n') != strrchr(out, '\n')) {
		print_error("%s: exit %d, expected the refusal '%s':\n%s\n", plan, st, requires,
			    out);
		fail();
	}
	st = rt_run(out, sizeof out, "check -m tied_tiny -b 8 -c cpu-1x2 '%s'", plan);
	if (st != 0) {
		print_error("check %s: exit %d, expected a valid plan:\n%s\n", plan, st, out);
		fail();
	}
}

/* One stage on ranks 0 and 1: the head split along its output channels
 * (the table's rows), the embedding along n on the same two ranks, every
 * other op on rank 0: a valid plan, which the runtime cannot run. */
static void csplit_plan(const char *path)
{
	static const int one[NDIMS] = { 1, 1, 1, 1, 1 };
	static const int by_c[NDIMS] = { 1, 2, 1, 1, 1 }, by_n[NDIMS] = { 2, 1, 1, 1, 1 };
	struct graph g;
	struct plan p;

	tied_plan_begin(&g, &p, 1, "test-split");
	assert_int_equal(plan_one_stage(&p, 2, SCHED_GPIPE, 1), 0);
	for (int i = 0; i < g.nops; i++) {
		const char *name = g.ops[i].name;
		const int *degree = !strcmp(name, "head") ? by_c : !strcmp(name, "wte") ? by_n : one;

		assert_int_equal(plan_place_range(&p, i, 0, degree, 0), 0);
	}
	assert_int_equal(plan_write(&p, &g, path), 0);
	plan_release(&p);
	graph_release(&g);
}

/* `run PLAN` and `check PLAN` exit 2 with plan_validate()'s message
 * (`expect`): a plan that no runtime may run, refused before the runtime's
 * own checks. */
static void invalid(const char *plan, const char *expect)
{
	char out[4096];
	int st = rt_run(out, sizeof out, "run '%s' --steps 2 --warmup 0", plan);

	if (st != 2 || !strstr(out, expect) || strchr(out, '\n') != strrchr(out, '\n')) {
		print_error("run %s: exit %d, expected the refusal '%s':\n%s\n", plan, st,
			    expect, out);
		fail();
	}
	st = rt_run(out, sizeof out, "check -m tied_tiny -b 8 -c cpu-1x2 '%s'", plan);
	if (st != 2 || !strstr(out, expect)) {
		print_error("check %s: exit %d, expected the refusal '%s':\n%s\n", plan, st,
			    expect, out);
		fail();
	}
}

static void test_refusals(void **state)
{
	char plan[1024];
	(void)state;
	/* a chain of two stages: the embedding on rank 0, the head on 1 */
	snprintf(plan, sizeof plan, "%s/tied-chain.json", tmp_dir());
	rt_pipeline_plan("tied_tiny", 8, "cpu-1x2", 2, 1, SCHED_GPIPE, 2, plan);
	invalid(plan, "ops.head.devices: 'head' ties its weight to 'wte', so both must run on "
		      "the same devices, but 'head' runs on 1 and 'wte' on 0");
	/* the head split along its output channels (the table's rows) */
	snprintf(plan, sizeof plan, "%s/tied-csplit.json", tmp_dir());
	csplit_plan(plan);
	refused(plan, "when neither is split along 'c'");
	/* PipeDream's weight stashing */
	snprintf(plan, sizeof plan, "%s/tied-async.json", tmp_dir());
	rt_pipeline_plan("tied_tiny", 8, "cpu-1x2", 1, 2, SCHED_1F1B_ASYNC, 2, plan);
	refused(plan, "under a synchronous schedule");
}

/* The profiler times the tied head with a weight of its shape. */
static void test_profile(void **state)
{
	char out[4096], dir[1024], csv[2048];

	(void)state;
	snprintf(dir, sizeof dir, "%s/tied-profile", tmp_dir());
	assert_int_equal(rt_run(out, sizeof out, "profile -d cpu -m tied_tiny -b 8 "
				"--max-degree 2 -o '%s'", dir), 0);
	snprintf(csv, sizeof csv, "%s/ops.csv", dir);
	test_read_file(csv, out, sizeof out);
	assert_non_null(strstr(out, "\"linear:n8l8c16>n8l8c64\","));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_and_dp),
		cmocka_unit_test(test_microbatches),
		cmocka_unit_test(test_pipeline_same_stage),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_profile),
	};

	if (setup(NULL))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
