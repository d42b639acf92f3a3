/*
 * The initial weights (runtime/params.h): the model file's `init` line
 * (models/FORMAT.md) read, refused where malformed, and written back;
 * GPT-2's scheme on the zoo's transformers, each weight's spread measured
 * (0.02, and 0.02 / sqrt(2 x layers) for the projections that write into
 * the residual stream; zero biases, unit layernorm scales); PyTorch's
 * defaults, value for value, where a model has no `init` line (the CNNs);
 * and the first loss of the small transformers, which starts where
 * GPT-2's does: at ln(classes), the loss of a uniform guess.
 */
#include "runtest.h"

#include "util/err.h"
#include "model/model_io.h"
#include "params.h"
#include "rng.h"

#define GPT2_STD 0.02

/* The whole parameter tensor of op `name` of g, initialised with seed 1. */
static float *init_op(const struct graph *g, const char *name, int *i)
{
	float *w;

	*i = graph_find(g, name);
	if (*i < 0)
		fail_msg("%s: no op '%s'", g->name, name);
	w = malloc((size_t)g->ops[*i].params * sizeof *w);
	assert_non_null(w);
	assert_int_equal(params_init(g, *i, 1, w), AP_OK);
	return w;
}

/* w[a, b) has mean about 0 and standard deviation std, within 3% (the
 * spread of the sample's own, 1 / sqrt(2 (b - a)), is at most 0.6% for
 * the 16,384 floats of the smallest range checked). */
static void assert_spread(const float *w, int64_t a, int64_t b, double std, const char *what)
{
	double s = 0, ss = 0, n = (double)(b - a), mean, sd;

	for (int64_t k = a; k < b; k++) {
		s += w[k];
		ss += (double)w[k] * w[k];
	}
	mean = s / n;
	sd = sqrt(ss / n - mean * mean);
	if (fabs(sd - std) > 0.03 * std || fabs(mean) > 0.05 * std)
		fail_msg("%s: mean %g, standard deviation %g; expected 0 and %g", what, mean, sd,
			 std);
}

static void assert_all(const float *w, int64_t a, int64_t b, float v, const char *what)
{
	for (int64_t k = a; k < b; k++)
		if (w[k] != v)
			fail_msg("%s: element %lld is %g, expected %g", what, (long long)k, w[k], v);
}

/* A linear, conv2d or embedding of g: its weights from N(0, std^2), its
 * biases (after the weights) zero. */
static void assert_layer(const struct graph *g, const char *name, double std)
{
	int i;
	float *w = init_op(g, name, &i);
	const struct op *op = &g->ops[i];
	int64_t nb = op->kind != OP_EMBEDDING && op->a.bias ? op->a.out : 0;

	assert_spread(w, 0, op->params - nb, std, name);
	assert_all(w, op->params - nb, op->params, 0.0f, name);
	free(w);
}

/* An attention of g with biases: q, k and v from N(0, 0.02^2), the output
 * projection from N(0, out_std^2), the four biases zero. */
static void assert_attention(const struct graph *g, const char *name, double out_std)
{
	int i;
	float *w = init_op(g, name, &i);
	int64_t c = g->ops[i].out.size[shape_dim(&g->ops[i].out, DIM_C)];

	assert_int_equal(g->ops[i].params, 4 * (c * c + c));
	assert_spread(w, 0, 3 * c * c, GPT2_STD, name);
	assert_spread(w, 3 * c * c, 4 * c * c, out_std, name);
	assert_all(w, 4 * c * c, 4 * (c * c + c), 0.0f, name);
	free(w);
}

static void load(const char *name, struct graph *g)
{
	if (model_load(name, 0, g) != AP_OK)
		fail_msg("%s: %s", name, ap_last_error());
}

/* gpt2: 12 layers, so the residual projections at 0.02 / sqrt(24). */
static void test_gpt2(void **state)
{
	double resid = GPT2_STD / sqrt(24.0);
	struct graph g;
	int i;
	float *w;

	(void)state;
	load("gpt2", &g);
	assert_int_equal(g.init, INIT_GPT2);
	assert_layer(&g, "transformer.wte", GPT2_STD);
	assert_layer(&g, "transformer.wpe", GPT2_STD);
	assert_attention(&g, "transformer.h.0.attn", resid);
	assert_attention(&g, "transformer.h.11.attn", resid);
	assert_layer(&g, "transformer.h.3.mlp.c_fc", GPT2_STD);
	assert_layer(&g, "transformer.h.3.mlp.c_proj", resid);
	w = init_op(&g, "transformer.ln_f", &i);
	assert_all(w, 0, 768, 1.0f, "transformer.ln_f");
	assert_all(w, 768, 1536, 0.0f, "transformer.ln_f");
	free(w);
	graph_release(&g);
}

/* The stream's depth is counted along paths: bert_large's 24 post-LN
 * layers scale by 1/sqrt(48); mmt's samples pass 8 layers of a branch
 * and 2 of fusion (not all 34 layers), and its input projections, which
 * an add reads directly but which are no residual branch, are not
 * scaled; gpt_tiny's 2 layers scale by 1/2. */
static void test_residual_depth(void **state)
{
	struct graph g;

	(void)state;
	load("bert_large", &g);
	assert_int_equal(g.init, INIT_GPT2);
	assert_layer(&g, "embeddings.word_embeddings", GPT2_STD);
	assert_attention(&g, "encoder.layer.7.attention.self", GPT2_STD / sqrt(48.0));
	assert_layer(&g, "encoder.layer.7.intermediate.dense", GPT2_STD);
	assert_layer(&g, "encoder.layer.7.output.dense", GPT2_STD / sqrt(48.0));
	assert_layer(&g, "pooler.dense", GPT2_STD);
	graph_release(&g);

	load("mmt", &g);
	assert_layer(&g, "branches.2.input_proj", GPT2_STD);
	assert_attention(&g, "branches.1.layers.5.self_attn", GPT2_STD / sqrt(20.0));
	assert_layer(&g, "branches.3.layers.0.linear1", GPT2_STD);
	assert_layer(&g, "branches.3.layers.0.linear2", GPT2_STD / sqrt(20.0));
	assert_layer(&g, "fusion.layers.1.linear2", GPT2_STD / sqrt(20.0));
	assert_layer(&g, "head.classifier", GPT2_STD);
	graph_release(&g);

	/* a wide GPT's own std= (models/gpt_1.7b.model says why), its 24
	 * layers' projections scaled by 1/sqrt(48) */
	load("gpt_1.7b", &g);
	assert_layer(&g, "wpe", 0.0132);
	assert_layer(&g, "h.23.mlp.c_fc", 0.0132);
	assert_layer(&g, "h.0.mlp.c_proj", 0.0132 / sqrt(48.0));
	graph_release(&g);

	load("gpt_tiny", &g);
	assert_layer(&g, "h.1.mlp.c_proj", GPT2_STD / 2);
	assert_layer(&g, "h.1.mlp.c_fc", GPT2_STD);
	graph_release(&g);
}

/* Two parallel linears added are no residual branch (neither input of
 * the add leads to the other); a linear added, through a dropout or
 * not, to an ancestor of its input is one: two such on the path, so
 * scaled by 1/sqrt(2). */
static void test_residual_rule(void **state)
{
	struct graph g;

	(void)state;
	if (model_parse("model t\nbatch 2\ninit gpt2\ninput x c=128\n"
			"linear a x out=128\nlinear b x out=128\nadd s a b\n"
			"relu r s\nlinear f r out=128\ndropout d f\nadd t s d\n"
			"linear f2 t out=128\nadd u f2 t\nloss l u\n", "t.model", 0, &g) != AP_OK)
		fail_msg("%s", ap_last_error());
	assert_layer(&g, "a", GPT2_STD);
	assert_layer(&g, "b", GPT2_STD);
	assert_layer(&g, "f", GPT2_STD / sqrt(2.0));
	assert_layer(&g, "f2", GPT2_STD / sqrt(2.0));
	graph_release(&g);
}

/* Without an `init` line the CNNs keep PyTorch's defaults, value for
 * value: uniform in +-1/sqrt(fan_in), drawn by (seed, op, element). */
static void test_torch_default(void **state)
{
	static const char *const names[] = { "cnn_small", "resnet_small", "mlp" };

	(void)state;
	for (size_t m = 0; m < sizeof names / sizeof *names; m++) {
		struct graph g;

		load(names[m], &g);
		assert_int_equal(g.init, INIT_TORCH);
		for (int i = 0; i < g.nops; i++) {
			const struct op *op = &g.ops[i];
			float *w;
			int64_t fan;
			double bound;
			int j;

			if (op->params <= 0 || op->kind == OP_BATCHNORM)
				continue;
			assert_true(op->kind == OP_CONV2D || op->kind == OP_LINEAR);
			fan = shape_size(&g.ops[op->in[0]].out, DIM_C);
			if (op->kind == OP_CONV2D)
				fan = fan / op->a.groups * op->a.kh * op->a.kw;
			bound = 1.0 / sqrt((double)fan);
			w = init_op(&g, op->name, &j);
			assert_int_equal(j, i);
			for (int64_t k = 0; k < op->params; k++) {
				float v = (float)(bound * (2.0 * rng_unit(rng_key(1, (uint64_t)i,
										 (uint64_t)k)) - 1.0));

				if (w[k] != v)
					fail_msg("%s: '%s' element %lld is %g, expected %g", names[m],
						 op->name, (long long)k, w[k], v);
			}
			free(w);
		}
		graph_release(&g);
	}
}

/* The `init` line: read, written back, refused with file:line where it
 * names no scheme, comes twice, or comes outside the header. */
static void test_format(void **state)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "model t\nbatch 2\ninit xavier\ninput x c=4\nloss l x\n",
		  "t.model:3: expected 'init torch' or 'init gpt2 [std=X]'" },
		{ "model t\nbatch 2\ninit\ninput x c=4\nloss l x\n",
		  "t.model:3: expected 'init torch' or 'init gpt2 [std=X]'" },
		{ "model t\nbatch 2\ninit torch std=0.1\ninput x c=4\nloss l x\n",
		  "t.model:3: expected 'init torch' or 'init gpt2 [std=X]'" },
		{ "model t\nbatch 2\ninit gpt2 std=0.1 x\ninput x c=4\nloss l x\n",
		  "t.model:3: expected 'init torch' or 'init gpt2 [std=X]'" },
		{ "model t\nbatch 2\ninit gpt2 std=0\ninput x c=4\nloss l x\n",
		  "t.model:3: init 'std=0': expected std=X with X in (0, 1]" },
		{ "model t\nbatch 2\ninit gpt2 std=nan\ninput x c=4\nloss l x\n",
		  "t.model:3: init 'std=nan': expected std=X with X in (0, 1]" },
		{ "model t\nbatch 2\ninit gpt2 mean=0\ninput x c=4\nloss l x\n",
		  "t.model:3: init 'mean=0': expected std=X with X in (0, 1]" },
		{ "model t\nbatch 2\ninit gpt2\ninit torch\ninput x c=4\nloss l x\n",
		  "t.model:4: 'init' given twice" },
		{ "model t\nbatch 2\ninput x c=4\ninit gpt2\nloss l x\n",
		  "t.model:4: 'init' must come after 'model NAME' and before the first operator" },
		{ "init gpt2\nmodel t\nbatch 2\ninput x c=4\nloss l x\n",
		  "t.model:1: 'init' must come after 'model NAME' and before the first operator" },
	};
	struct graph g, h;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		assert_int_equal(model_parse(bad[k].text, "t.model", 0, &g), AP_EINPUT);
		if (!strstr(ap_last_error(), bad[k].msg))
			fail_msg("case %zu: '%s', expected '%s'", k, ap_last_error(), bad[k].msg);
	}
	assert_int_equal(model_parse("model t\ninit torch\nbatch 2\ninput x c=4\nloss l x\n",
				     "t.model", 0, &g), AP_OK);
	assert_int_equal(g.init, INIT_TORCH);
	graph_release(&g);
	load("gpt_tiny", &g);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(model_write(&g, f), AP_OK);
	fclose(f);
	assert_non_null(strstr(buf, "\ninit gpt2\n"));
	assert_int_equal(model_parse(buf, "gpt_tiny", 0, &h), AP_OK);
	assert_int_equal(h.init, INIT_GPT2);
	graph_release(&h);
	graph_release(&g);
	free(buf);
	/* a std= comes back to the bit */
	load("gpt_1.7b", &g);
	assert_true(g.init_std == 0.0132);
	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(model_write(&g, f), AP_OK);
	fclose(f);
	assert_int_equal(model_parse(buf, "gpt_1.7b", 0, &h), AP_OK);
	assert_true(h.init == INIT_GPT2 && h.init_std == g.init_std);
	graph_release(&h);
	graph_release(&g);
	free(buf);
}

/* The first loss of a small transformer: its logits' spread is about
 * 0.02 sqrt(hidden) = 0.16, so the loss starts within 1% of ln(classes)
 * (PyTorch's defaults put transformer_tiny's 2.3% above it, and the tied
 * N(0, 1) table of gpt_tiny far above). */
static void test_first_loss(void **state)
{
	static const char *const names[] = { "transformer_tiny", "gpt_tiny" };
	char out[16384], plan[512];

	(void)state;
	for (size_t m = 0; m < sizeof names / sizeof *names; m++) {
		struct graph g;
		double first, last, want;
		const char *s;
		int l;

		load(names[m], &g);
		l = g.nops - 1;
		assert_int_equal(g.ops[l].kind, OP_LOSS);
		want = log((double)shape_size(&g.ops[g.ops[l].in[0]].out, DIM_C));
		graph_release(&g);
		snprintf(plan, sizeof plan, "%s/%s.json", tmp_dir(), names[m]);
		assert_int_equal(rt_run(out, sizeof out, "plan -m %s -c cpu-1x2 -P single -o '%s'",
					names[m], plan),
				 0);
		if (rt_run(out, sizeof out, "run '%s' --steps 1 --warmup 0", plan) != 0)
			fail_msg("%s: %s", names[m], out);
		s = strstr(out, "loss ");
		assert_non_null(s);
		assert_int_equal(sscanf(s, "loss %lf -> %lf", &first, &last), 2);
		if (fabs(first - want) > 0.01 * want)
			fail_msg("%s: first loss %g, expected ln(classes) = %g within 1%%", names[m],
				 first, want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpt2),
		cmocka_unit_test(test_residual_depth),
		cmocka_unit_test(test_residual_rule),
		cmocka_unit_test(test_torch_default),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_first_loss),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
