/*
 * The runtime's synthetic data (runtime/data.h) and region copies
 * (runtime/region.h): any part of a batch, made on its own, equals that
 * part of the whole batch, so ranks holding different shards see one
 * consistent dataset; labels are spread over the classes; the steps cycle
 * through the pool.
 */
#include "testutil.h"

#include "data.h"
#include "model/model_io.h"
#include "region.h"

static void whole(const struct shape *s, struct region *r)
{
	for (int d = 0; d < NDIMS; d++) {
		r->lo[d] = 0;
		r->hi[d] = shape_size(s, d);
	}
}

/* part [lo, hi) of dim d of a tensor made whole equals the part made
 * alone */
static void check_part(const struct data *dt, int op, int labels, enum dim_kind d,
		       int64_t lo, int64_t hi)
{
	const struct shape *s = &dt->g->ops[op].out;
	struct region all, part;
	float *a = calloc((size_t)shape_elems(s), sizeof *a);
	float *p = calloc((size_t)shape_elems(s), sizeof *p);
	float *back = calloc((size_t)shape_elems(s), sizeof *back);

	whole(s, &all);
	part = all;
	part.lo[d] = lo;
	part.hi[d] = hi;
	if (labels) {
		assert_int_equal(data_labels(dt, op, 3, &all, a), 0);
		assert_int_equal(data_labels(dt, op, 3, &part, p), 0);
	} else {
		data_input(dt, op, 3, &all, a);
		data_input(dt, op, 3, &part, p);
	}
	/* the part, cut out of the whole by region_copy */
	region_copy(s, &part, back, &part, a, &all, 0);
	for (int64_t e = 0; e < region_elems(&part); e++)
		assert_true(back[e] == p[e]);
	free(a);
	free(p);
	free(back);
}

static void test_parts_agree(void **state)
{
	struct graph g;
	struct data dt;

	(void)state;
	graph_init(&g);
	assert_int_equal(model_load("cnn_small", 8, &g), 0);
	assert_int_equal(data_init(&dt, &g, 5, 4), 0);
	check_part(&dt, graph_find(&g, "image"), 0, DIM_N, 3, 7);
	check_part(&dt, graph_find(&g, "image"), 0, DIM_H, 5, 17);
	check_part(&dt, graph_find(&g, "loss"), 1, DIM_N, 2, 6);
	data_release(&dt);
	graph_release(&g);
	assert_int_equal(model_load("transformer_tiny", 4, &g), 0);
	assert_int_equal(data_init(&dt, &g, 5, 4), 0);
	check_part(&dt, graph_find(&g, "input_ids"), 0, DIM_L, 8, 24);
	check_part(&dt, graph_find(&g, "loss"), 1, DIM_L, 1, 31);
	data_release(&dt);
	graph_release(&g);
}

static void test_labels_and_pool(void **state)
{
	struct graph g;
	struct data dt;
	struct region r;
	float a[64], b[64], c[64];
	int seen[10] = { 0 }, classes = 0, i;

	(void)state;
	graph_init(&g);
	assert_int_equal(model_load("mlp", 64, &g), 0);
	assert_int_equal(data_init(&dt, &g, 9, 4), 0);
	i = graph_find(&g, "loss");
	whole(&g.ops[i].out, &r);
	assert_int_equal(data_labels(&dt, i, 0, &r, a), 0);
	for (int e = 0; e < 64; e++) {
		assert_true(a[e] >= 0 && a[e] < 10 && a[e] == (int)a[e]);
		classes += !seen[(int)a[e]]++;
	}
	assert_true(classes >= 5);
	/* step 4 is step 0 again, step 1 another batch */
	assert_int_equal(data_labels(&dt, i, 4, &r, b), 0);
	assert_int_equal(data_labels(&dt, i, 1, &r, c), 0);
	assert_memory_equal(a, b, sizeof a);
	assert_memory_not_equal(a, c, sizeof a);
	data_release(&dt);
	graph_release(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parts_agree),
		cmocka_unit_test(test_labels_and_pool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
