/*
 * Every registered planner on a spread of models and clusters returns a
 * plan that validates, and the baselines have the shape their definitions
 * give: `single` one device, `dp` every op split by samples over all
 * devices, `owt` convolutions by samples and fully-connected layers by
 * features (Krizhevsky, arXiv 1404.5997).
 */
#include "testutil.h"

#include "util/datadir.h"
#include "util/err.h"
#include "model/model_io.h"
#include "driver.h"
#include "planner.h"
#include "util/intmath.h"
#include "sim/sim.h"
#include "plan/plan_check.h"
#include "cost/cost.h"

#include <signal.h>
#include <sys/wait.h>

static const char *const models[] = {
	"mlp", "cnn_small", "branchy_small", "transformer_tiny", "alexnet", "vgg16",
	"resnet50", "inception_v3", "gnmt", "dlrm", "pipedream/alexnet", "pipedream/gnmt",
};
static const char *const clusters[] = { "pipedream-a", "cpu-1x4", "2x3:v100", "summit-8x4" };

/* The planner's plan of model on cspec (with the cluster's profile)
 * without the driver's validation, which the tests do themselves. */
static int make_plan(const struct planner *pl, const char *model, const char *cspec,
		     struct instance *x, struct plan *out)
{
	struct planner_input input;
	struct planner_opts o = { 0 };
	int rc;

	test_instance(x, model, NULL, cspec);
	plan_init(out);
	/* A search's plan must validate whatever it found; how good it is
	 * after how long is test_mcmc.c's question. */
	if (!strcmp(pl->name, "mcmc"))
		assert_int_equal(planner_opts_set(pl, &o, "proposals", "500", "test"), AP_OK);
	input = planner_input_of(x, 1, 1, &o);
	rc = planner_call(pl, &input, out);
	if (rc == AP_OK)
		snprintf(out->cluster, sizeof out->cluster, "%s", x->c.name);
	return rc;
}

/* A plan may be refused only because the replicated weights, gradients and
 * momentum of some op's shards do not fit, and then they really do not. */
static int refused_rightly(const struct graph *g, const struct cluster *c,
			   const struct plan *pl)
{
	int64_t need = 0;

	if (!strstr(ap_last_error(), "weights, gradients and momentum need"))
		return 0;
	for (int i = 0; i < g->nops; i++)
		if (pl->ops[i].devices[0] == 0)
			need += cost_state_factor(OPTIMIZER_SGD) *
				cost_param_bytes(&g->ops[i], pl->ops[i].degree[DIM_C]);
	return need > c->mem_bytes;
}

static void test_every_plan_validates(void **state)
{
	(void)state;
	ap_err_quiet(1);
	for (int k = 0; k < nplanners; k++)
		for (size_t m = 0; m < sizeof models / sizeof models[0]; m++)
			for (size_t c = 0; c < sizeof clusters / sizeof clusters[0]; c++) {
				struct instance x;
				struct plan pl;
				int rc = make_plan(planners[k], models[m], clusters[c], &x, &pl);

				if (rc) {
					/* only a planner that declares so may
					 * refuse an instance (planner.h): as bad
					 * input, with its reason */
					if (planners[k]->may_refuse && rc == AP_EINPUT &&
					    *ap_last_error()) {
						plan_release(&pl);
						instance_release(&x);
						continue;
					}
					fail_msg("%s on %s/%s: %s", planners[k]->name, models[m],
						 clusters[c], ap_last_error());
				}
				if (plan_validate(&pl, &x.g, &x.c, "plan") != AP_OK &&
				    !refused_rightly(&x.g, &x.c, &pl))
					fail_msg("%s on %s/%s: %s", planners[k]->name, models[m],
						 clusters[c], ap_last_error());
				plan_release(&pl);
				instance_release(&x);
			}
	ap_err_quiet(0);
}

static void test_baseline_shapes(void **state)
{
	struct instance x;
	struct plan pl;
	int linears = 0;

	(void)state;
	assert_int_equal(make_plan(planner_find("single"), "alexnet", "pipedream-a", &x, &pl), AP_OK);
	for (int i = 0; i < x.g.nops; i++) {
		assert_int_equal(pl.ops[i].ndev, 1);
		assert_int_equal(pl.ops[i].devices[0], 0);
	}
	plan_release(&pl);
	instance_release(&x);

	/* 16 devices, batch 128: every op split 16 ways by samples */
	assert_int_equal(make_plan(planner_find("dp"), "alexnet", "pipedream-a", &x, &pl), AP_OK);
	for (int i = 0; i < x.g.nops; i++) {
		assert_int_equal(pl.ops[i].degree[DIM_N], 16);
		assert_int_equal(pl.ops[i].ndev, 16);
	}
	plan_release(&pl);
	instance_release(&x);

	/* a batch of 6 on 4 devices: dp uses the 3 that divide it */
	assert_int_equal(make_plan(planner_find("dp"), "mlp", "cpu-1x4", &x, &pl),
			 AP_OK);
	assert_int_equal(graph_set_batch(&x.g, 6), AP_OK);
	plan_release(&pl);
	plan_init(&pl);
	{
		struct planner_input input = planner_input_of(&x, 1, 0, NULL);

		assert_int_equal(planner_call(planner_find("dp"), &input, &pl), AP_OK);
	}
	assert_int_equal(pl.ops[0].degree[DIM_N], 3);
	assert_int_equal(pl.stages[0].ndev, 3);
	plan_release(&pl);
	instance_release(&x);

	/* owt: convolutions by samples, fully-connected layers by features
	 * over all 16 devices, their ReLUs and dropouts following them */
	assert_int_equal(make_plan(planner_find("owt"), "alexnet", "pipedream-a", &x, &pl), AP_OK);
	for (int i = 0; i < x.g.nops; i++) {
		const struct op *op = &x.g.ops[i];

		if (op->kind == OP_CONV2D) {
			assert_int_equal(pl.ops[i].degree[DIM_N], 16);
			assert_int_equal(pl.ops[i].degree[DIM_C], 1);
		}
		if (op->kind == OP_LINEAR) {
			linears++;
			assert_int_equal(pl.ops[i].degree[DIM_N], 1);
			/* 4096 and 1000 output features: 16 and 10 shards */
			assert_int_equal(pl.ops[i].degree[DIM_C],
					 op->a.out == 1000 ? 10 : 16);
		}
		if (op->kind == OP_RELU && op->in[0] >= 0 &&
		    x.g.ops[op->in[0]].kind == OP_LINEAR)
			assert_int_equal(pl.ops[i].degree[DIM_C], pl.ops[op->in[0]].degree[DIM_C]);
	}
	assert_int_equal(linears, 3);
	plan_release(&pl);
	instance_release(&x);
}

static void test_registry(void **state)
{
	(void)state;
	assert_non_null(planner_find("dp"));
	assert_null(planner_find("nosuch"));
	for (int i = 0; i < nplanners; i++) {
		assert_non_null(planners[i]->description);
		assert_non_null(planners[i]->follows);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(planners[i]->name, planners[j]->name);
	}
	assert_int_equal(largest_divisor(128, 16), 16);
	assert_int_equal(largest_divisor(1000, 16), 10);
	assert_int_equal(largest_divisor(7, 4), 1);
}

/* The command writes a plan that reads back and validates. */
static void test_command(void **state)
{
	const char *bin = getenv("AUTOPAR_BIN");
	char cmd[2048];

	(void)state;
	if (!bin || !*bin)
		skip();
	snprintf(cmd, sizeof cmd, "'%s' plan -m cnn_small -c cpu-1x4 -P owt -o '%s/p.json' "
		 ">/dev/null && '%s' check -m cnn_small -c cpu-1x4 '%s/p.json' >/dev/null",
		 bin, tmp_dir(), bin, tmp_dir());
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "'%s' plan -m cnn_small -c cpu-1x4 -P nosuch -o '%s/q.json' "
		 "2>/dev/null", bin, tmp_dir());
	assert_int_equal(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof cmd, "%s/q.json", tmp_dir());
	assert_int_not_equal(access(cmd, F_OK), 0);
}

/* Plans with the planner (a spec: name and options) on the cluster's
 * shipped profile and returns the simulated iteration time (INFINITY when
 * there is no plan). */
static double simulated(const char *planner, const char *model, const char *cspec)
{
	const struct planner *pln;
	struct planner_opts o;
	struct instance x;
	struct plan pl;
	struct planner_input input;
	struct sim s;
	struct sim_result r;
	double t = INFINITY;

	test_instance(&x, model, NULL, cspec);
	plan_init(&pl);
	assert_int_equal(planner_parse(planner, "test", &pln, &o), AP_OK);
	/* a cap only: the searches take well under a second, but the
	 * sanitizer build on a busy machine is many times slower */
	input = planner_input_of(&x, 600, 1, &o);
	if (planner_run(pln, &input, x.profile, &pl) == AP_OK) {
		assert_int_equal(sim_init(&s, &x.g, &x.p, &x.c), AP_OK);
		assert_int_equal(sim_run(&s, &pl, NULL, &r), AP_OK);
		if (r.peak_mem_bytes <= r.mem_bytes)
			t = r.iter_s;
		sim_release(&s);
	}
	plan_release(&pl);
	instance_release(&x);
	return t;
}

/* The oracle is never worse than any baseline on the instances it can
 * enumerate. */
static void test_exhaustive_oracle(void **state)
{
	static const struct {
		const char *model, *cluster;
	} cases[] = {
		{ "mlp", "cpu-1x2" }, { "mlp", "cpu-1x4" }, { "mlp", "2x2:v100" },
		{ "mlp", "pipedream-a" }, { "cnn_small", "cpu-1x2" }, { "cnn_small", "2x2:v100" },
		{ "branchy_small", "cpu-1x2" }, { "branchy_small", "1x2:v100" },
	};

	(void)state;
	ap_err_quiet(1);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		double ex = simulated("exhaustive", cases[i].model, cases[i].cluster);
		double best = INFINITY;
		static const char *const base[] = { "single", "dp", "owt" };

		for (size_t b = 0; b < 3; b++) {
			double t = simulated(base[b], cases[i].model, cases[i].cluster);

			best = t < best ? t : best;
		}
		if (isinf(ex) || ex > best * (1 + 1e-9))
			fail_msg("%s on %s: exhaustive %.6g s, best baseline %.6g s (%s)",
				 cases[i].model, cases[i].cluster, ex, best, ap_last_error());
	}
	ap_err_quiet(0);
}

/* Planner options: specs parse, are checked against the planner's table,
 * come back in canonical form, and reach the planner. */
static void test_options(void **state)
{
	static const char *const bad[] = {
		"exhaustive:nosuch", "exhaustive:whole=3", "exhaustive:max-microbatches",
		"exhaustive:max-microbatches=x", "exhaustive:max-microbatches=1.5", "nosuch:whole",
		"exhaustive:max-microbatches=3000000000",
	};
	const struct planner *pl;
	struct planner_opts o;
	char spec[PLAN_NAME_LEN];
	const char *bin = getenv("AUTOPAR_BIN");
	char cmd[2048];

	(void)state;
	ap_err_quiet(1);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (planner_parse(bad[i], "test", &pl, &o) != AP_EINPUT)
			fail_msg("'%s' was accepted", bad[i]);
	ap_err_quiet(0);
	assert_int_equal(planner_parse("exhaustive:max-microbatches=8,whole", "t", &pl, &o), AP_OK);
	planner_spec(pl, &o, spec, sizeof spec);
	assert_string_equal(spec, "exhaustive:whole");
	assert_int_equal(planner_parse("exhaustive:max-microbatches=2", "t", &pl, &o), AP_OK);
	planner_spec(pl, &o, spec, sizeof spec);
	assert_string_equal(spec, "exhaustive:max-microbatches=2");
	/* whole plans are a subset: never better than the full space */
	assert_true(simulated("exhaustive:whole", "mlp", "cpu-1x2") >=
		    simulated("exhaustive", "mlp", "cpu-1x2") * (1 - 1e-12));
	if (!bin || !*bin)
		skip();
	snprintf(cmd, sizeof cmd, "'%s' plan -m mlp -c cpu-1x2 -P exhaustive --whole "
		 "--max-microbatches 2 -o '%s/o.json' >/dev/null && grep -q "
		 "'\"planner\": \"exhaustive:whole,max-microbatches=2\"' '%s/o.json'",
		 bin, tmp_dir(), tmp_dir());
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "'%s' plan -m mlp -c cpu-1x2 -P dp --whole -o '%s/o2.json' "
		 "2>/dev/null", bin, tmp_dir());
	assert_int_equal(WEXITSTATUS(system(cmd)), 2);
}

/* Whether reading option `name` of exhaustive by type t (0 flag, 1
 * integer, 2 number, 3 choice) aborts, in a child process. */
static int read_aborts(const struct planner_input *input, int t, const char *name)
{
	pid_t pid = fork();
	int ws;

	assert_true(pid >= 0);
	if (pid == 0) {
		fclose(stderr); /* the message is the planner author's */
		if (t == 0)
			_exit(planner_flag(input, name) < 0);
		if (t == 1)
			_exit(planner_int(input, name) < 0);
		if (t == 2)
			_exit(planner_real(input, name) < 0);
		_exit(planner_choice(input, name) == NULL);
	}
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	return WIFSIGNALED(ws) && WTERMSIG(ws) == SIGABRT;
}

/* A planner reads its options by their declared type, given or default;
 * a name its table lacks, or the wrong type, is caught at once. */
static void test_option_readers(void **state)
{
	struct planner_opts o;
	struct planner_input input = { .planner = planner_find("exhaustive") };

	(void)state;
	assert_int_equal(planner_int(&input, "max-microbatches"), 8);
	assert_string_equal(planner_choice(&input, "schedule"), "1f1b");
	assert_int_equal(planner_flag(&input, "whole"), 0);
	assert_int_equal(planner_parse("exhaustive:max-microbatches=3,whole,schedule=1f1b-async",
				       "t", &input.planner, &o), AP_OK);
	input.opts = &o;
	assert_int_equal(planner_int(&input, "max-microbatches"), 3);
	assert_string_equal(planner_choice(&input, "schedule"), "1f1b-async");
	assert_int_equal(planner_flag(&input, "whole"), 1);
	assert_true(read_aborts(&input, 1, "max-microbatch"));
	assert_true(read_aborts(&input, 2, "max-microbatches"));
	assert_true(read_aborts(&input, 0, "schedule"));
	assert_false(read_aborts(&input, 1, "max-microbatches"));
}

/* Krizhevsky's rationale: FC-heavy models on a slow network train faster
 * with model-parallel FC layers than with data parallelism. */
static void test_owt_beats_dp(void **state)
{
	static const char *const fc_heavy[] = { "alexnet", "vgg16" };

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		double owt = simulated("owt", fc_heavy[i], "pipedream-a");
		double dp = simulated("dp", fc_heavy[i], "pipedream-a");

		if (!(owt < dp))
			fail_msg("%s on pipedream-a: owt %.6g s, dp %.6g s", fc_heavy[i], owt, dp);
	}
}

/* README.md and docs/architecture.md show the planners as the registry
 * has them: the block between their markers is `autopar planners
 * --markdown`, so a planner added or renamed, or a contract changed,
 * fails here until the tables are refreshed. */
static void test_planner_tables(void **state)
{
	static const char *const docs[] = { "README.md", "docs/architecture.md" };
	static const char begin[] = "<!-- planners: bin/autopar planners --markdown -->\n";
	static const char end[] = "<!-- /planners -->";
	size_t cap = 1 << 20;
	char *table = malloc(cap), *doc = malloc(cap), path[1024];

	(void)state;
	assert_non_null(table);
	assert_non_null(doc);
	assert_int_equal(test_autopar("planners --markdown", 1, table, cap), 0);
	for (int k = 0; k < nplanners; k++) {
		char cell[64];

		snprintf(cell, sizeof cell, "| `%s` |", planners[k]->name);
		assert_non_null(strstr(table, cell));
	}
	for (size_t k = 0; k < sizeof docs / sizeof docs[0]; k++) {
		char *b, *e;

		test_read_file(datapath(path, sizeof path, docs[k]), doc, cap);
		b = strstr(doc, begin);
		e = b ? strstr(b, end) : NULL;
		if (!e)
			fail_msg("%s: no planner table between '%.40s' and '%s'", docs[k], begin,
				 end);
		b += strlen(begin);
		if ((size_t)(e - b) != strlen(table) || memcmp(b, table, strlen(table)))
			fail_msg("%s: its planner table is not what `bin/autopar planners "
				 "--markdown` prints; put that output between its markers",
				 docs[k]);
	}
	free(table);
	free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_plan_validates),
		cmocka_unit_test(test_baseline_shapes),
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_planner_tables),
		cmocka_unit_test(test_command),
		cmocka_unit_test(test_exhaustive_oracle),
		cmocka_unit_test(test_owt_beats_dp),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_option_readers),
	};

	return cmocka_run_group_tests_name("planners", tests, NULL, NULL);
}
