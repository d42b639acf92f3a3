/*
 * Import of the 14 published PipeDream profiles: each loads, and its summed
 * forward and backward times and parameter bytes equal the file's own sums,
 * computed here by an independent scan of the text.
 */
#include "testutil.h"

#include "util/datadir.h"
#include "util/err.h"
#include "model/model_io.h"

static const char *const files[] = {
	"alexnet", "densenet121", "gnmt", "gnmt_large", "inception_v3", "nasnetalarge",
	"nasnetamobile", "resnet101", "resnet18", "resnet50", "resnext101", "resnext50",
	"squeezenet1_0", "vgg16",
};

struct sums {
	double fwd_ms, bwd_ms, param_bytes;
	int nodes;
};

static void scan(const char *path, struct sums *s)
{
	FILE *f = fopen(path, "r");
	char line[8192];

	assert_non_null(f);
	memset(s, 0, sizeof *s);
	while (fgets(line, sizeof line, f)) {
		char *p;

		if (line[0] == '\t' || line[0] == '\n')
			continue;
		s->nodes++;
		if (strstr(line, " -- Input"))
			continue; /* sources: their recorded time is data loading */
		p = strstr(line, "forward_compute_time=");
		assert_non_null(p);
		s->fwd_ms += atof(p + strlen("forward_compute_time="));
		p = strstr(line, "backward_compute_time=");
		s->bwd_ms += atof(p + strlen("backward_compute_time="));
		p = strstr(line, "parameter_size=");
		assert_non_null(p);
		s->param_bytes += atof(p + strlen("parameter_size="));
	}
	fclose(f);
}

static void test_imports(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char path[4096], rel[128];
		struct graph g;
		struct graph_totals t;
		struct sums s;

		snprintf(rel, sizeof rel, "profiles/pipedream/%s.txt", files[i]);
		datapath(path, sizeof path, rel);
		scan(path, &s);
		if (pipedream_read(path, 0, &g) != AP_OK)
			fail_msg("%s: %s", files[i], ap_last_error());
		graph_totals(&g, &t);
		assert_int_equal(g.nops, s.nodes);
		assert_true(t.measured);
		if (fabs(t.fwd_us + t.bwd_us - 1000 * (s.fwd_ms + s.bwd_ms)) >
		    1e-6 * 1000 * (s.fwd_ms + s.bwd_ms) + 1e-6)
			fail_msg("%s: fwd+bwd %.3f us, file sums %.3f us", files[i],
				 t.fwd_us + t.bwd_us, 1000 * (s.fwd_ms + s.bwd_ms));
		assert_true(fabs((double)t.param_bytes - s.param_bytes) < 0.5);
		/* topological order: inputs come first */
		for (int k = 0; k < g.nops; k++)
			for (int e = 0; e < g.ops[k].nin; e++)
				assert_true(g.ops[k].in[e] < k);
		graph_release(&g);
	}
}

/* Known layers map to our kinds; the profiled batch is recovered. */
static void test_mapping(void **state)
{
	struct graph g;
	int conv = 0, lin = 0, relu = 0, input = 0;

	(void)state;
	assert_int_equal(model_load("pipedream/alexnet", 0, &g), AP_OK);
	assert_int_equal(g.batch, 256); /* 154140672 input bytes = 256 x 3x224x224 x 4 */
	for (int k = 0; k < g.nops; k++) {
		conv += g.ops[k].kind == OP_CONV2D;
		lin += g.ops[k].kind == OP_LINEAR;
		relu += g.ops[k].kind == OP_RELU;
		input += g.ops[k].kind == OP_INPUT;
	}
	assert_int_equal(conv, 5);
	assert_int_equal(lin, 3);
	assert_int_equal(relu, 7);
	assert_int_equal(input, 1);
	/* linear and conv may be split along their features, the rest by sample */
	for (int k = 0; k < g.nops; k++) {
		unsigned want = g.ops[k].kind == OP_LINEAR || g.ops[k].kind == OP_CONV2D ? 3u : 1u;

		assert_int_equal(g.ops[k].split_mask, want);
	}
	graph_release(&g);
}

/* A new batch rescales measured times and activations linearly. */
static void test_rebatch(void **state)
{
	struct graph g;
	struct graph_totals a, b;

	(void)state;
	assert_int_equal(model_load("pipedream/vgg16", 0, &g), AP_OK);
	graph_totals(&g, &a);
	assert_int_equal(graph_set_batch(&g, g.batch / 2), AP_OK);
	graph_totals(&g, &b);
	assert_true(fabs(b.fwd_us - a.fwd_us / 2) < 1e-6 * a.fwd_us);
	assert_int_equal(b.param_bytes, a.param_bytes);
	graph_release(&g);
}

/* Writing an imported graph in the text format and reading it back gives
 * the same numbers. */
static void test_round_trip(void **state)
{
	struct graph g, h;
	struct graph_totals a, b;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(model_load("pipedream/gnmt", 0, &g), AP_OK);
	f = open_memstream(&buf, &len);
	assert_int_equal(model_write(&g, f), AP_OK);
	fclose(f);
	if (model_parse(buf, "gnmt.model", 0, &h) != AP_OK)
		fail_msg("%s", ap_last_error());
	graph_totals(&g, &a);
	graph_totals(&h, &b);
	assert_int_equal(h.nops, g.nops);
	assert_int_equal(b.param_bytes, a.param_bytes);
	assert_int_equal(b.act_bytes, a.act_bytes);
	assert_true(fabs(b.fwd_us - a.fwd_us) < 1e-9 * a.fwd_us);
	for (int k = 0; k < g.nops; k++) {
		assert_string_equal(h.ops[k].name, g.ops[k].name);
		assert_int_equal(h.ops[k].kind, g.ops[k].kind);
		assert_int_equal(h.ops[k].nin, g.ops[k].nin);
	}
	graph_release(&g);
	graph_release(&h);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_imports),
		cmocka_unit_test(test_mapping),
		cmocka_unit_test(test_rebatch),
		cmocka_unit_test(test_round_trip),
	};

	return cmocka_run_group_tests_name("pipedream", tests, NULL, NULL);
}
