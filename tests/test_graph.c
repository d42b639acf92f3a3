/*
 * Operator rules: shapes, parameters and multiply-accumulates of each kind
 * against hand-computed values (and PyTorch's parameter counts), splittable
 * dims, consumers and shard signatures.
 */
#include "testutil.h"

#include "util/err.h"
#include "model/model_io.h"
#include "model/ops.h"

static struct graph g;

static const struct op *get(const char *name)
{
	int i = graph_find(&g, name);

	if (i < 0)
		fail_msg("no op '%s'", name);
	return &g.ops[i];
}

static void load(const char *text)
{
	if (model_parse(text, "t.model", 0, &g) != AP_OK)
		fail_msg("%s", ap_last_error());
}

static int teardown(void **state)
{
	(void)state;
	graph_release(&g);
	return 0;
}

static void test_conv_pool(void **state)
{
	(void)state;
	load("model t\nbatch 2\n"
	     "input x c=3 h=224 w=224\n"
	     "conv2d c1 x out=64 k=11 stride=4 pad=2\n"           /* alexnet conv1 */
	     "maxpool p1 c1 k=3 stride=2\n"
	     "conv2d c2 p1 out=64 k=3 pad=1 groups=32 bias=0\n"
	     "conv2d c3 c2 out=8 k=1x7 pad=0x3\n"
	     "maxpool p2 c3 k=2 ceil=1\n"
	     "avgpool p3 c3 k=3 stride=2 pad=1\n"
	     "adaptive_avgpool gap c3 out=1\n");
	assert_int_equal(get("c1")->out.size[2], 55);
	assert_int_equal(get("c1")->params, 64 * 3 * 11 * 11 + 64);
	assert_int_equal(get("c1")->fwd_macs, 2LL * 64 * 55 * 55 * 3 * 11 * 11);
	assert_int_equal(get("c1")->bwd_macs, 2 * get("c1")->fwd_macs);
	assert_int_equal(get("p1")->out.size[3], 27);
	assert_int_equal(get("c2")->params, 64 * 2 * 3 * 3);
	assert_int_equal(get("c3")->out.size[2], 27);
	assert_int_equal(get("c3")->out.size[3], 27);
	assert_int_equal(get("c3")->params, 8 * 64 * 7 + 8);
	assert_int_equal(get("p2")->out.size[2], 14); /* ceil(27/2) */
	assert_int_equal(get("p3")->out.size[2], 14);
	assert_int_equal(get("gap")->out.size[2], 1);
	assert_int_equal(get("gap")->out_bytes, 2 * 8 * 4);
	assert_int_equal(get("c1")->split_mask,
			 (1u << DIM_N) | (1u << DIM_C) | (1u << DIM_H) | (1u << DIM_W));
	assert_int_equal(get("gap")->split_mask, (1u << DIM_N) | (1u << DIM_C));
}

/* PyTorch's own counts: LSTM(1024, 1024) has 8,396,800 parameters (the
 * PipeDream GNMT profile lists 33,587,200 bytes), bidirectional twice that. */
static void test_sequence_ops(void **state)
{
	(void)state;
	load("model t\nbatch 4\n"
	     "input tok l=10\n"
	     "embedding emb tok vocab=32320 out=1024\n"
	     "lstm l1 emb out=1024\n"
	     "lstm l2 emb out=1024 bidir=1\n"
	     "attention att l1 heads=16\n"
	     "attention x l1 emb heads=8 bias=0\n"
	     "layernorm ln att\n"
	     "linear fc ln out=32320 bias=0 tie=emb\n"
	     "softmax sm fc\n"
	     "loss loss fc\n");
	assert_int_equal(get("emb")->params, 32320LL * 1024);
	assert_int_equal(get("emb")->out.rank, 3);
	assert_int_equal(get("l1")->params, 8396800);
	assert_int_equal(get("l2")->params, 2 * 8396800);
	assert_int_equal(get("l2")->out.size[2], 2048);
	assert_int_equal(get("l1")->fwd_macs, 4LL * 10 * 4 * 1024 * 2048);
	assert_int_equal(get("att")->params, 4 * (1024LL * 1024 + 1024));
	assert_int_equal(get("att")->fwd_macs,
			 4LL * 4 * 10 * 1024 * 1024 + 2LL * 4 * 10 * 10 * 1024);
	assert_int_equal(get("x")->params, 4LL * 1024 * 1024);
	assert_int_equal(get("ln")->params, 2048);
	assert_false(get("ln")->split_mask & (1u << DIM_C));
	assert_int_equal(get("fc")->params, 0);
	assert_int_equal(get("fc")->fwd_macs, 4LL * 10 * 1024 * 32320);
	assert_false(get("sm")->split_mask & (1u << DIM_C));
	assert_int_equal(get("loss")->out.rank, 2); /* (n, l) */
}

static void test_shape_ops(void **state)
{
	(void)state;
	load("model t\nbatch 2\n"
	     "input x c=4 h=3 w=5\n"
	     "input y c=6 h=3 w=5\n"
	     "concat cat x y\n"
	     "split s cat parts=2 index=1\n"
	     "add a s s s\n"
	     "flatten f a\n"
	     "reshape r f c=15 l=5\n"
	     "transpose t r order=l,c\n"
	     "matmul mm t r\n"
	     "matmul mt r r trans_b=1\n"
	     "mul m mm mm\n"
	     "dropout d m p=0.1\n");
	assert_int_equal(get("cat")->out.size[1], 10);
	assert_int_equal(get("s")->out.size[1], 5);
	assert_int_equal(get("f")->out.size[1], 75);
	assert_int_equal(get("t")->out.kind[1], DIM_L);
	assert_int_equal(get("t")->out.size[2], 15);
	assert_int_equal(get("mm")->out.size[2], 5);   /* (n,l5,c15) x (n,c15,l5) */
	assert_int_equal(get("mm")->fwd_macs, 2 * 5 * 5 * 15);
	assert_int_equal(get("mt")->out.size[2], 15);
	assert_int_equal(get("f")->split_mask, 1u << DIM_N);
}

static void test_batch_and_totals(void **state)
{
	struct graph_totals t;

	(void)state;
	load("model t\nbatch 8\ninput x c=16\nlinear a x out=32\nrelu r a\n"
	     "linear b r out=4 bias=0\nloss l b\n");
	graph_totals(&g, &t);
	assert_int_equal(t.params, 16 * 32 + 32 + 32 * 4);
	assert_int_equal(t.fwd_macs, 8 * (16 * 32 + 32 * 4));
	assert_false(t.measured);
	assert_int_equal(graph_set_batch(&g, 3), AP_OK);
	graph_totals(&g, &t);
	assert_int_equal(t.fwd_macs, 3 * (16 * 32 + 32 * 4));
	assert_int_equal(get("b")->out.size[0], 3);
	ap_err_quiet(1);
	assert_int_equal(graph_set_batch(&g, 0), AP_EINPUT);
	ap_err_quiet(0);
}

static void test_consumers(void **state)
{
	int *ofs, *idx;
	int x;

	(void)state;
	load("model t\nbatch 2\ninput x c=4\nrelu a x\nrelu b x\nadd s a b\nloss l s\n");
	assert_int_equal(graph_consumers(&g, &ofs, &idx), AP_OK);
	x = graph_find(&g, "x");
	assert_int_equal(ofs[x + 1] - ofs[x], 2);
	assert_int_equal(idx[ofs[x]], graph_find(&g, "a"));
	assert_int_equal(idx[ofs[x] + 1], graph_find(&g, "b"));
	assert_int_equal(ofs[g.nops] - ofs[g.nops - 1], 0);
	free(ofs);
	free(idx);
}

/* A shard's signature is the op's at the shard's sizes: splitting a conv's
 * output channels keeps its input whole; a sample split halves both. */
static void test_signatures(void **state)
{
	int d1[NDIMS] = { 1, 1, 1, 1, 1 }, dn[NDIMS] = { 2, 1, 1, 1, 1 },
	    dc[NDIMS] = { 1, 2, 1, 1, 1 };
	char s1[256], sn[256], sc[256];
	int c;

	(void)state;
	load("model t\nbatch 8\ninput x c=3 h=32 w=32\nconv2d c x out=16 k=3 pad=1\n"
	     "loss l c\n");
	c = graph_find(&g, "c");
	assert_int_equal(graph_op_signature(&g, c, d1, s1, sizeof s1), AP_OK);
	assert_int_equal(graph_op_signature(&g, c, dn, sn, sizeof sn), AP_OK);
	assert_int_equal(graph_op_signature(&g, c, dc, sc, sizeof sc), AP_OK);
	assert_string_equal(s1, "conv2d:n8c3h32w32>n8c16h32w32:k3x3,s1x1,p1x1,g1,b1");
	assert_string_equal(sn, "conv2d:n4c3h32w32>n4c16h32w32:k3x3,s1x1,p1x1,g1,b1");
	assert_string_equal(sc, "conv2d:n8c3h32w32>n8c8h32w32:k3x3,s1x1,p1x1,g1,b1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_conv_pool, teardown),
		cmocka_unit_test_teardown(test_sequence_ops, teardown),
		cmocka_unit_test_teardown(test_shape_ops, teardown),
		cmocka_unit_test_teardown(test_batch_and_totals, teardown),
		cmocka_unit_test_teardown(test_consumers, teardown),
		cmocka_unit_test_teardown(test_signatures, teardown),
	};

	return cmocka_run_group_tests_name("graph", tests, NULL, NULL);
}
