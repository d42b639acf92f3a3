/*
 * `autopar models import` on the ONNX files of tests/onnx/ (made by
 * scripts/export-onnx from torchvision's resnet18 and two small models):
 * each imports with PyTorch's parameter count, resnet18 with torchvision's
 * forward MACs, and plans with every planner; a node with no autopar
 * operator is refused by name, with nothing written.  Skips, with a
 * message, where the onnx Python package (python3-onnx) is missing.
 */
#include "testutil.h"

static char out[65536];

/* Imports tests/onnx/NAME.onnx to the temporary dir; returns the status. */
static int import(const char *name, char *model, size_t len)
{
	char args[1024];

	snprintf(model, len, "%s/%s.model", tmp_dir(), name);
	snprintf(args, sizeof args, "models import '%s/tests/onnx/%s.onnx' -o '%s'",
		 getenv("AUTOPAR_DATA"), name, model);
	return test_autopar(args, 0, out, sizeof out);
}

/* The onnx package is there: the import of a small file does not fail
 * for want of it. */
static int have_onnx(void)
{
	char model[600];
	int st = import("mlp_small", model, sizeof model);

	if (st == 1 && strstr(out, "python3-onnx"))
		return 0;
	return 1;
}

#define SKIP_WITHOUT_ONNX()                                                         \
	do {                                                                        \
		if (!have_onnx()) {                                                 \
			print_message("skipped: the onnx Python package is missing " \
				      "(apt-get install python3-onnx)\n");          \
			skip();                                                     \
		}                                                                   \
	} while (0)

/* params and forward MACs of a model file at batch 1, from `models --csv`. */
static void totals(const char *model, long long *params, double *gmacs)
{
	char args[700];
	const char *row;

	snprintf(args, sizeof args, "models '%s' -b 1 --csv", model);
	assert_int_equal(test_autopar(args, 1, out, sizeof out), 0);
	row = strchr(out, '\n');
	assert_non_null(row);
	/* model,batch,ops,params,fwd_gmacs,act_bytes */
	if (sscanf(row + 1, "%*[^,],%*d,%*d,%lld,%lf", params, gmacs) != 2)
		fail_msg("unexpected output: %s", out);
}

static void test_counts(void **state)
{
	static const struct {
		const char *name;
		long long params; /* sum(p.numel()) of the torch module */
	} cases[] = {
		{ "resnet18", 11689512 },
		{ "mlp_small", 26378 },
		{ "cnn_small", 12642 },
	};
	char model[600];
	long long params;
	double gmacs;

	(void)state;
	SKIP_WITHOUT_ONNX();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (import(cases[i].name, model, sizeof model))
			fail_msg("%s: %s", cases[i].name, out);
		totals(model, &params, &gmacs);
		if (params != cases[i].params)
			fail_msg("%s: %lld parameters, expected %lld", cases[i].name, params,
				 cases[i].params);
		/* torchvision's 1.82 GFLOPS (multiply-accumulates) per image */
		if (!strcmp(cases[i].name, "resnet18") && fabs(gmacs / 1.82 - 1) > 0.01)
			fail_msg("resnet18: %.4f GMACs, expected 1.82 +- 1%%", gmacs);
	}
}

/* Every planner plans the imported resnet18 on four GPUs, or refuses it
 * for its size where the planner is only for small instances. */
static void test_plans(void **state)
{
	char model[600], names[4096], args[2048], *line, *save;
	int planned = 0;

	(void)state;
	SKIP_WITHOUT_ONNX();
	assert_int_equal(import("resnet18", model, sizeof model), 0);
	assert_int_equal(test_autopar("planners --csv", 1, names, sizeof names), 0);
	line = strtok_r(names, "\n", &save); /* the header */
	while ((line = strtok_r(NULL, "\n", &save))) {
		char *comma = strchr(line, ',');
		int st;

		if (!comma || line[0] == '"')
			continue;
		*comma = 0;
		snprintf(args, sizeof args,
			 "plan -m '%s' -c 1x4:v100 -P %s --budget 1 -o '%s/plan.json'", model,
			 line, tmp_dir());
		st = test_autopar(args, 1, out, sizeof out);
		if (st != 0 && !(!strcmp(line, "exhaustive") && strstr(out, "small instances")) &&
		    !((!strcmp(line, "piper") || !strcmp(line, "ilp")) &&
		      (strstr(out, "budget") || strstr(out, "upsets"))))
			fail_msg("%s on the imported resnet18: %s", line, out);
		planned += st == 0;
	}
	assert_true(planned >= 5);
}

static void test_refused(void **state)
{
	char model[600], args[1400];

	(void)state;
	SKIP_WITHOUT_ONNX();
	assert_int_equal(import("unsupported", model, sizeof model), 2);
	if (!strstr(out, "unsupported.onnx: node 'weird_cos' (Cos): no autopar operator for it"))
		fail_msg("unexpected message: %s", out);
	assert_int_not_equal(access(model, F_OK), 0);
	/* a file that is not ONNX: bad input, nothing written */
	snprintf(model, sizeof model, "%s/bad.model", tmp_dir());
	snprintf(args, sizeof args, "models import '%s' -o '%s'",
		 tmp_write("bad.onnx", "not a protobuf\n"), model);
	assert_int_equal(test_autopar(args, 0, out, sizeof out), 2);
	assert_int_not_equal(access(model, F_OK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_plans),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
