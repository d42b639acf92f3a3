/*
 * The model text format: repeat blocks, quoting, round trips through the
 * writer, and a table of malformed models, each of which must be refused
 * with "file:line: message" naming what was expected.
 */
#include "testutil.h"

#include "util/err.h"
#include "model/model_io.h"

static void test_repeat(void **state)
{
	struct graph g;
	int a;

	(void)state;
	if (model_parse("model t\nbatch 2\ninput x c=8\nlinear stem x out=8\n"
			"repeat 3\n"
			"linear L{i}.fc @in out=8\n"
			"add L{i}.out @in L{i}.fc\n"
			"end\n"
			"loss l L2.out\n", "t.model", 0, &g) != AP_OK)
		fail_msg("%s", ap_last_error());
	assert_int_equal(g.nops, 2 + 6 + 1);
	assert_int_equal(g.nblocks, 1);
	a = graph_find(&g, "L1.fc");
	assert_true(a >= 0);
	assert_int_equal(g.ops[a].in[0], graph_find(&g, "L0.out"));
	assert_int_equal(g.ops[a].block, 0);
	assert_int_equal(g.ops[a].iter, 1);
	assert_int_equal(g.ops[graph_find(&g, "L0.fc")].in[0], graph_find(&g, "stem"));
	assert_int_equal(g.ops[graph_find(&g, "L2.out")].in[0], graph_find(&g, "L1.out"));
	assert_int_equal(g.ops[graph_find(&g, "stem")].block, -1);
	assert_int_equal(g.ops[a].line, 6);
	graph_release(&g);
}

static void test_batch_override_and_quotes(void **state)
{
	struct graph g;

	(void)state;
	assert_int_equal(model_parse("model t # name\nbatch 2\ninput x c=8 # dims\n"
				     "opaque o x c=4 fwd_us=10 bwd_us=20 desc=\"My Layer(1, 2)\"\n"
				     "loss l o\n", "t.model", 5, &g), AP_OK);
	assert_int_equal(g.batch, 5);
	assert_string_equal(g.ops[1].desc, "My Layer(1, 2)");
	assert_true(g.ops[1].m.valid);
	assert_true(g.ops[1].m.fwd_us == 10.0);
	assert_int_equal(g.ops[1].out.size[0], 5);
	graph_release(&g);
}

/* Every zoo model written out and read back has the same accounting. */
static void test_round_trip_zoo(void **state)
{
	static const char *const names[] = { "resnet50", "inception_v3", "gpt2", "gnmt",
					     "dlrm", "transformer_tiny" };

	(void)state;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		struct graph g, h;
		struct graph_totals a, b;
		char *buf = NULL;
		size_t len = 0;
		FILE *f;

		assert_int_equal(model_load(names[i], 0, &g), AP_OK);
		f = open_memstream(&buf, &len);
		assert_int_equal(model_write(&g, f), AP_OK);
		fclose(f);
		if (model_parse(buf, names[i], 0, &h) != AP_OK)
			fail_msg("%s: %s", names[i], ap_last_error());
		graph_totals(&g, &a);
		graph_totals(&h, &b);
		assert_int_equal(h.nops, g.nops);
		assert_int_equal(b.params, a.params);
		assert_int_equal(b.fwd_macs, a.fwd_macs);
		assert_int_equal(b.act_bytes, a.act_bytes);
		for (int k = 0; k < g.nops; k++)
			assert_int_equal(h.ops[k].split_mask, g.ops[k].split_mask);
		graph_release(&g);
		graph_release(&h);
		free(buf);
	}
}

static const struct {
	const char *text;
	int line;
	const char *msg;
} bad[] = {
	{ "model t\nbatch 2\ninput x c=3\ncnv2d c x out=4 k=3\n", 4, "unknown operator 'cnv2d'" },
	{ "model t\nbatch 2\ninput x c=3\nrelu r y\n", 4, "unknown input 'y'" },
	{ "model t\nbatch 2\ninput x c=3\nrelu x x\n", 4, "defined twice" },
	{ "model t\nbatch 0\ninput x c=3\n", 2, "positive integer" },
	{ "model t\ninput x c=3\n", 2, "missing 'batch" },
	{ "model t\nbatch 2\ninput x c=3 h=4 w=4\nconv2d c x k=3\n", 4, "needs out=" },
	{ "model t\nbatch 2\ninput x c=3 h=4 w=4\nconv2d c x out=4 k=9\n", 4, "larger than" },
	{ "model t\nbatch 2\ninput x c=3 h=4 w=4\nconv2d c x out=4 k=3 strid=2\n", 4,
	  "unknown attribute 'strid'" },
	{ "model t\nbatch 2\ninput x c=3 h=4 w=4\nconv2d c x out=four k=3\n", 4,
	  "positive integer" },
	{ "model t\nbatch 2\ninput x c=3 h=4 w=4\nconv2d c x out=4 k=3 groups=2\n", 4,
	  "groups" },
	{ "model t\nbatch 2\ninput x c=3\ninput y c=4\nadd a x y\n", 5, "same shape" },
	{ "model t\nbatch 2\ninput x c=3\nadd a x\n", 4, "at least 2 inputs" },
	{ "model t\nbatch 2\ninput x c=3\nrepeat 2\nrelu r{i} @in\n", 4, "without 'end'" },
	{ "model t\nbatch 2\ninput x c=3\nend\n", 4, "'end' without" },
	{ "model t\nbatch 2\ninput x c=3\nrelu r @in\n", 4, "repeat block" },
	{ "model t\nbatch 2\ninput x c=3\nrepeat 2\nrepeat 2\nend\nend\n", 5, "nest" },
	{ "model t\nbatch 2\ninput x c=3\nrepeat two\nend\n", 4, "repeat N" },
	{ "model t\nbatch 2\ninput x c=3 desc=\"open\n", 3, "unterminated quote" },
	{ "model t\nbatch 2\ninput x l=8\nlstm s x out=4\n", 4, "(n, l, c)" },
	{ "model t\nbatch 2\ninput x l=8 c=6\nattention a x heads=4\n", 4, "heads=" },
	{ "model t\nbatch 2\ninput x c=6\nsplit s x parts=4 index=0\n", 4, "parts=" },
	{ "model t\nbatch 2\ninput x c=6\ndropout d x p=1.5\n", 4, "0 <= p < 1" },
	{ "model t\nbatch 2\ninput x c=6\nlinear f x out=5 tie=x\n", 4, "tie" },
	{ "model t\nbatch 2\ninput x c=6 c=4\n", 3, "given twice" },
	{ "model t\nbatch 2\ninput x c=6\nreshape r x c=5\n", 4, "number of elements" },
	{ "model t\nbatch 2\ninput x c=6\ntranspose t x order=l\n", 4, "order" },
	{ "model t\nbatch 2\ninput x c=3\nbatch 4\n", 4, "before the first" },
	/* hardening: each of these was accepted before */
	{ "model t\nbatch 2\nbatch 3\ninput x c=3\n", 3, "'batch' given twice" },
	{ "batch 2\nmodel t\ninput x c=3\n", 1, "after 'model NAME'" },
	{ "model t\nmodel u\nbatch 2\ninput x c=3\n", 2, "once, first" },
	{ "model t\nbatch 2\ninput x c=3\nrelu r x fwd_us=nan\n", 4, "non-negative number" },
	{ "model t\nbatch 2\ninput x c=3\nrelu r x bwd_us=inf\n", 4, "non-negative number" },
	{ "model t\nbatch 2\ninput x c=3\nrelu r x act_bytes=1e30\n", 4, "above the limit" },
	{ "model t\nbatch 2\ninput x c=3 h=4 w=4\nconv2d c x out=4 k=3 k=1\n", 4,
	  "attribute 'k' of 'c' given twice" },
	{ "model t\nbatch 2\ninput x c=6 l=4\ntranspose t x order=c,c\n", 4, "names a dim twice" },
	{ "model t\nbatch 2\ninput x\xff c=3\n", 3, "not UTF-8" },
	{ "model t\nbatch 2\ninput x\xc0\xaf c=3\n", 3, "not UTF-8" },
	{ "model t\nbatch 2\ninput x c=2000000000000\n", 3, "up to 2^40" },
	{ "model t\nbatch 5000000000000\ninput x c=3\n", 2, "limit" },
	{ "model t\nbatch 1000000\ninput x c=1000000 h=1000000 w=1000000\n", 3, "too large" },
	{ "model t\nbatch 100000\ninput x c=100000 l=100000\nlinear f x out=100000\n", 4,
	  "too large" },
	{ "model t\nbatch 2\ninput x l=1000000\nembedding e x vocab=1000000000000 out=1000000000000\n",
	  4, "too large" },
	{ "model t\nbatch 2\ninput x\n", 3, "needs its dims" },
};

static void test_malformed(void **state)
{
	char want[64];

	(void)state;
	ap_err_quiet(1);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct graph g;
		int rc = model_parse(bad[i].text, "bad.model", 0, &g);

		if (rc != AP_EINPUT)
			fail_msg("case %zu: status %d, expected %d", i, rc, AP_EINPUT);
		snprintf(want, sizeof want, "bad.model:%d: ", bad[i].line);
		if (strncmp(ap_last_error(), want, strlen(want)) ||
		    !strstr(ap_last_error(), bad[i].msg))
			fail_msg("case %zu: got \"%s\", expected \"%s...%s\"", i,
				 ap_last_error(), want, bad[i].msg);
	}
	ap_err_quiet(0);
}

/* A NUL byte is not text: reported with its line, not read past. */
static void test_nul_byte(void **state)
{
	static const char text[] = "model t\nbatch 2\ninput x c=3\0\nrelu r x\n";
	const char *path = tmp_write("nul.model", "");
	FILE *f = fopen(path, "wb");
	struct graph g;

	(void)state;
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, sizeof text - 1, f), sizeof text - 1);
	fclose(f);
	ap_err_quiet(1);
	assert_int_equal(model_read(path, 0, &g), AP_EINPUT);
	ap_err_quiet(0);
	assert_non_null(strstr(ap_last_error(), ":3: a NUL byte"));
}

/* Reading is linear in the operators: 200,000 of them in repeat blocks
 * (every input a name lookup) read in well under a second, where a scan
 * per lookup took minutes; and lookups find the right operator. */
static void test_many_ops(void **state)
{
	const char *text = "model big\nbatch 2\ninput x c=4\nrepeat 100000\n"
			   "relu a{i} @in\nrelu b{i} a{i}\nend\nloss l b99999\n";
	struct graph g;

	(void)state;
	assert_int_equal(model_parse(text, "big.model", 0, &g), AP_OK);
	assert_int_equal(g.nops, 200002);
	assert_int_equal(graph_find(&g, "a0"), 1);
	assert_int_equal(graph_find(&g, "b99999"), 200000);
	assert_int_equal(graph_find(&g, "b100000"), -1);
	assert_int_equal(g.ops[graph_find(&g, "b5")].in[0], graph_find(&g, "a5"));
	graph_release(&g);
}

static void test_malformed_pipedream(void **state)
{
	static const struct {
		const char *text;
		int line;
		const char *msg;
	} pd[] = {
		{ "node1 -- Input -- forward_compute_time=1, backward_compute_time=0, "
		  "activation_size=4, parameter_size=0\n\tnode1 -- node2\n", 2, "unknown node" },
		{ "node1 -- Input -- forward_compute_time=x, backward_compute_time=0, "
		  "activation_size=4, parameter_size=0\n", 1, "forward_compute_time" },
		{ "node1 Input forward_compute_time=1\n", 1, "expected 'NODE -- " },
		{ "node1 -- ReLU -- forward_compute_time=1, backward_compute_time=0, "
		  "activation_size=4, parameter_size=0\n"
		  "node2 -- ReLU -- forward_compute_time=1, backward_compute_time=0, "
		  "activation_size=4, parameter_size=0\n\tnode1 -- node2\n\tnode2 -- node1\n",
		  1, "cycle" },
		{ "node1 -- ReLU -- forward_compute_time=1, backward_compute_time=0, "
		  "activation_size=[4; x], parameter_size=0\n", 1, "activation_size" },
		/* hardening: a NaN time, a byte count past 2^62, a sum past it */
		{ "node1 -- ReLU -- forward_compute_time=nan, backward_compute_time=0, "
		  "activation_size=4, parameter_size=0\n", 1, "forward_compute_time" },
		{ "node1 -- ReLU -- forward_compute_time=1, backward_compute_time=0, "
		  "activation_size=4, parameter_size=1e30\n", 1, "parameter_size" },
		{ "node1 -- ReLU -- forward_compute_time=1, backward_compute_time=0, "
		  "activation_size=[4e18; 4e18], parameter_size=0\n", 1, "activation_size" },
	};

	(void)state;
	ap_err_quiet(1);
	for (size_t i = 0; i < sizeof pd / sizeof pd[0]; i++) {
		const char *path = tmp_write("bad.txt", pd[i].text);
		char want[600];
		struct graph g;

		assert_int_equal(pipedream_read(path, 0, &g), AP_EINPUT);
		snprintf(want, sizeof want, "%s:%d: ", path, pd[i].line);
		if (strncmp(ap_last_error(), want, strlen(want)) ||
		    !strstr(ap_last_error(), pd[i].msg))
			fail_msg("case %zu: got \"%s\"", i, ap_last_error());
	}
	ap_err_quiet(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_repeat),
		cmocka_unit_test(test_batch_override_and_quotes),
		cmocka_unit_test(test_round_trip_zoo),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_many_ops),
		cmocka_unit_test(test_malformed_pipedream),
	};

	return cmocka_run_group_tests_name("model_io", tests, NULL, NULL);
}
