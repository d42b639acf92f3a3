/*
 * `autopar models import` on the ONNX files of tests/onnx/ (made by
 * scripts/export-onnx from torchvision's resnet18, small models and
 * attention blocks): each imports with PyTorch's parameter count, resnet18
 * with torchvision's forward MACs, the GPT-style transformer as the zoo's
 * transformer_tiny (its multi-head attention one `attention` each layer);
 * both plan with every planner; a node with no autopar operator, an
 * attention pattern that differs from the one recognised, and
 * torch.nn.MultiheadAttention's export are refused by name, with nothing
 * written (invalid and awkward graphs: test_onnx_edges.c).  Skips, with a
 * message, where the onnx Python package (python3-onnx) is missing.
 */
#include "model/model_io.h"
#include "onnxtest.h"
#include "model/ops.h"

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
		{ "attention_fused", 4 * 16 * 16 }, /* q, k, v, o without biases */
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

/* The imported transformer is the zoo's transformer_tiny at its batch:
 * the same operators in the same order with the same shapes (each
 * attention with 4 causal heads and biases), 231,144 parameters and
 * 85,196,800 forward multiply-accumulates (models/transformer_tiny.model). */
static void test_transformer(void **state)
{
	char model[600], a[128], b[128];
	struct graph g, zoo;
	struct graph_totals tg, tz;
	int attentions = 0;

	(void)state;
	SKIP_WITHOUT_ONNX();
	if (import("transformer_tiny", model, sizeof model))
		fail_msg("transformer_tiny: %s", out);
	assert_int_equal(model_load("transformer_tiny", 0, &zoo), AP_OK);
	if (model_load(model, zoo.batch, &g) != AP_OK)
		fail_msg("%s", ap_last_error());
	assert_int_equal(g.nops, zoo.nops);
	for (int k = 0; k < g.nops; k++) {
		const struct op *x = &g.ops[k], *y = &zoo.ops[k];

		shape_format(&x->out, a, sizeof a);
		shape_format(&y->out, b, sizeof b);
		if (x->kind != y->kind || strcmp(a, b))
			fail_msg("operator %d: '%s' %s %s, the zoo's '%s' %s %s", k, x->name,
				 op_kind_name(x->kind), a, y->name, op_kind_name(y->kind), b);
		if (x->kind == OP_ATTENTION) {
			assert_int_equal(x->a.heads, 4);
			assert_int_equal(x->a.causal, 1);
			assert_int_equal(x->a.bias, 1);
			attentions++;
		}
	}
	assert_int_equal(attentions, 2);
	graph_totals(&g, &tg);
	graph_totals(&zoo, &tz);
	assert_int_equal(tg.params, 231144);
	assert_int_equal(tz.params, 231144);
	assert_int_equal(tg.fwd_macs, 85196800);
	assert_int_equal(tz.fwd_macs, 85196800);
	assert_int_equal(tg.act_bytes, tz.act_bytes);
	graph_release(&g);
	graph_release(&zoo);
}

/* One fused q, k, v projection (Split), no mask, no biases: one
 * attention of 2 heads, not causal, without biases. */
static void test_attention_fused(void **state)
{
	char model[600], text[4096];

	(void)state;
	SKIP_WITHOUT_ONNX();
	if (import("attention_fused", model, sizeof model))
		fail_msg("attention_fused: %s", out);
	test_read_file(model, text, sizeof text);
	if (!strstr(text, "heads=2 causal=0 bias=0") || strstr(text, "linear"))
		fail_msg("expected one attention, heads=2 causal=0 bias=0:\n%s", text);
}

/* Every planner plans the imported model on four GPUs, but exhaustive,
 * the test oracle, which refuses the whole space of a model this size
 * (it says so) and plans its pipelines-only space on two GPUs. */
static void plans(const char *name)
{
	char model[600], names[4096], args[2048], *line, *save;
	int planned = 0;

	assert_int_equal(import(name, model, sizeof model), 0);
	assert_int_equal(test_autopar("planners --csv", 1, names, sizeof names), 0);
	line = strtok_r(names, "\n", &save); /* the header */
	while ((line = strtok_r(NULL, "\n", &save))) {
		char *comma = strchr(line, ',');
		int oracle, st;

		if (!comma || line[0] == '"')
			continue;
		*comma = 0;
		oracle = !strcmp(line, "exhaustive");
		snprintf(args, sizeof args, "plan -m '%s' -c 1x4:v100 -P %s -o '%s/plan.json'", model,
			 line, tmp_dir());
		st = test_autopar(args, 1, out, sizeof out);
		if (oracle && st == 2 && strstr(out, "exhaustive is for small instances")) {
			snprintf(args, sizeof args,
				 "plan -m '%s' -c 1x2:v100 -P exhaustive:whole -o '%s/plan.json'",
				 model, tmp_dir());
			st = test_autopar(args, 1, out, sizeof out);
		}
		if (st != 0)
			fail_msg("%s on the imported %s: %s", line, name, out);
		planned++;
	}
	assert_true(planned >= 9);
}

static void test_plans(void **state)
{
	(void)state;
	SKIP_WITHOUT_ONNX();
	plans("resnet18");
	plans("transformer_tiny");
}

static void test_refused(void **state)
{
	static const struct {
		const char *name, *message;
	} cases[] = {
		{ "unsupported",
		  "unsupported.onnx: node 'weird_cos' (Cos): no autopar operator for it" },
		/* q reshaped straight to (n, heads, l, head size), no Transpose */
		{ "attention_bad", "attention_bad.onnx: node '/Reshape' (Reshape): multi-head "
				   "attention: expected q's heads (n, l, heads, head size) "
				   "transposed to (n, heads, l, head size)" },
		/* its heads merged with the batch */
		{ "attention_torch_mha", "attention_torch_mha.onnx: node '/attn/Transpose_2' "
					 "(Transpose): multi-head attention: expected the heads "
					 "kept apart from the batch" },
	};
	char model[600], args[1400];

	(void)state;
	SKIP_WITHOUT_ONNX();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_int_equal(import(cases[i].name, model, sizeof model), 2);
		if (!strstr(out, cases[i].message))
			fail_msg("%s: unexpected message: %s", cases[i].name, out);
		assert_int_not_equal(access(model, F_OK), 0);
	}
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
		cmocka_unit_test(test_transformer),
		cmocka_unit_test(test_attention_fused),
		cmocka_unit_test(test_plans),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
