/*
 * Every planner but megatron (whose own tests are test_megatron.c) on the
 * large language models at a thousand devices: gpt2, gpt_1.7b and
 * gpt_18.4b on 1,024 H100s (128x8:h100) and on 64 DGX A100 nodes
 * (selene:64), each run as `autopar plan` runs it, at its default
 * options.  Each either returns a plan that `autopar check` accepts
 * (written, read back and validated) or refuses the instance as bad
 * input with a message that names the reason: the memory it does not
 * fit, a search space or a simulation beyond the planner's bound, or the
 * tied weights that hold the model to fewer stages than the devices
 * need.  How long each takes and how much memory is bench/scale-planners'
 * question (results/scale_planners.csv): timings are not asserted here.
 * The search budget is 2 s instead of the command's 10, which changes
 * what mcmc finds, never whether its answer is a plan or a reason.
 */
#include "testutil.h"

#include "driver.h"
#include "planner.h"
#include "plan/plan_io.h"

static const char *const models[] = { "gpt2", "gpt_1.7b", "gpt_18.4b" };
static const char *const clusters[] = { "128x8:h100", "selene:64" };

/* What a refusal at this scale may give as its reason. */
static const char *const reasons[] = {
	"weights, gradients",    /* the memory of the weights (plan_validate()) */
	"fit",                   /* the memory of a stage, of any plan found */
	"too large to simulate", /* the simulator's bound (sim/sim_size.h) */
	"small instances",       /* exhaustive's search space */
	"ties the weight",       /* the ilp's layouts */
};

static int names_reason(const char *msg)
{
	for (size_t k = 0; k < sizeof reasons / sizeof reasons[0]; k++)
		if (strstr(msg, reasons[k]))
			return 1;
	return 0;
}

/* The plan as `autopar check` sees it: written, read back, validated. */
static void check_plan(const struct plan *pl, const struct instance *x, const char *what)
{
	char path[512];
	struct plan back;

	snprintf(path, sizeof path, "%s/scale.json", tmp_dir());
	if (plan_write(pl, &x->g, path) != AP_OK)
		fail_msg("%s: %s", what, ap_last_error());
	plan_init(&back);
	if (plan_read(path, &x->g, &back) != AP_OK ||
	    plan_validate(&back, &x->g, &x->c, "plan") != AP_OK)
		fail_msg("%s: its plan does not check: %s", what, ap_last_error());
	plan_release(&back);
}

/* pl's run on model and cluster as `autopar plan` runs it, quietly: its
 * status, the plan in out and the instance in x (the caller releases
 * both). */
static int run(const struct planner *pl, const char *model, const char *cluster,
	       struct instance *x, struct plan *out)
{
	struct planner_input input;
	int rc;

	test_instance(x, model, NULL, cluster);
	input = planner_input_of(x, 2, 1, NULL);
	plan_init(out);
	ap_err_quiet(1);
	rc = planner_run(pl, &input, x->c.profile, out);
	ap_err_quiet(0);
	return rc;
}

static void test_plan_or_reason(void **state)
{
	(void)state;
	for (int k = 0; k < nplanners; k++) {
		if (!strcmp(planners[k]->name, "megatron"))
			continue;
		for (size_t m = 0; m < sizeof models / sizeof models[0]; m++)
			for (size_t c = 0; c < sizeof clusters / sizeof clusters[0]; c++) {
				struct instance x;
				struct plan out;
				char what[128];
				int rc = run(planners[k], models[m], clusters[c], &x, &out);
				const char *msg = ap_last_error();

				snprintf(what, sizeof what, "%s on %s/%s", planners[k]->name,
					 models[m], clusters[c]);
				if (rc == AP_OK)
					check_plan(&out, &x, what);
				else if (rc != AP_EINPUT)
					fail_msg("%s: failed (status %d), expected a plan or a "
						 "refusal: %s", what, rc, msg);
				else if (!*msg || strchr(msg, '\n') || !names_reason(msg))
					fail_msg("%s: refused without a reason: '%s'", what, msg);
				plan_release(&out);
				instance_release(&x);
			}
	}
}

/* The status of planner name's run on model and cluster. */
static int status_of(const char *name, const char *model, const char *cluster)
{
	struct instance x;
	struct plan out;
	int rc = run(planner_find(name), model, cluster, &x, &out);

	plan_release(&out);
	instance_release(&x);
	return rc;
}

/* Which bound refuses what: owt's model-parallel layers over 1,024
 * devices make more pairs of shards than the simulator holds (a million
 * on one edge), over 512 they do not; the ilp's layouts of a thousand
 * devices need more stages than a GPT's tied embedding allows. */
static void test_bounds(void **state)
{
	(void)state;
	assert_int_equal(status_of("owt", "gpt2", "128x8:h100"), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "too large to simulate"));
	assert_non_null(strstr(ap_last_error(), "786432, between the 768 shards"));
	assert_int_equal(status_of("owt", "gpt2", "selene:64"), AP_OK);
	assert_int_equal(status_of("ilp", "gpt2", "selene:64"), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "so it runs as at most 5 stages, but 512 "
				"devices need at least 8 stages"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_plan_or_reason),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
