/*
 * `autopar run --timeline`: the measured timeline of a step holds exactly
 * the forward and backward tasks the simulator's timeline of the same
 * plan holds (same rank, micro-batch and operator), and a rank runs its
 * tasks one after the other.
 */
#include "runtest.h"

#define MAX_ROWS 4096

struct row {
	char key[160]; /* rank, kind, micro-batch, op */
	double t0, t1;
	int res;
};

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const struct row *)a)->key, ((const struct row *)b)->key);
}

static int cmp_time(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;

	if (a->res != b->res)
		return a->res - b->res;
	return (a->t0 > b->t0) - (a->t0 < b->t0);
}

/* The fwd and bwd rows of a timeline file. */
static int read_tasks(const char *path, struct row *rows)
{
	char line[512], resource[64], kind[16], op[96];
	int n = 0, res, mb;
	double t0, t1;
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		if (line[0] == '#')
			continue;
		assert_int_equal(sscanf(line, "%d\t%63[^\t]\t%lf\t%lf\t%15s\t%d\t%95s", &res,
					resource, &t0, &t1, kind, &mb, op), 7);
		assert_true(t1 >= t0);
		if (strcmp(kind, "fwd") && strcmp(kind, "bwd"))
			continue;
		assert_true(n < MAX_ROWS);
		snprintf(rows[n].key, sizeof rows[n].key, "%d %s %d %s", res, kind, mb, op);
		rows[n].t0 = t0;
		rows[n].t1 = t1;
		rows[n].res = res;
		n++;
	}
	fclose(f);
	return n;
}

static void compare(const char *plan, const char *what)
{
	static struct row sim[MAX_ROWS], run[MAX_ROWS];
	char out[16384], a[1024], b[1024];
	int ns, nr;

	snprintf(a, sizeof a, "%s/sim.tsv", tmp_dir());
	snprintf(b, sizeof b, "%s/run.tsv", tmp_dir());
	assert_int_equal(rt_run(out, sizeof out, "sim '%s' --timeline '%s'", plan, a), 0);
	assert_int_equal(rt_run(out, sizeof out, "run '%s' --steps 2 --warmup 1 --timeline '%s'",
				plan, b), 0);
	ns = read_tasks(a, sim);
	nr = read_tasks(b, run);
	print_message("%s: %d tasks simulated, %d measured\n", what, ns, nr);
	assert_true(ns > 0);
	assert_int_equal(ns, nr);
	qsort(sim, (size_t)ns, sizeof *sim, cmp_key);
	qsort(run, (size_t)nr, sizeof *run, cmp_key);
	for (int i = 0; i < ns; i++)
		assert_string_equal(sim[i].key, run[i].key);
	qsort(run, (size_t)nr, sizeof *run, cmp_time);
	for (int i = 1; i < nr; i++)
		if (run[i].res == run[i - 1].res)
			assert_true(run[i].t0 >= run[i - 1].t1);
}

static void test_same_tasks(void **state)
{
	char path[1024];

	(void)state;
	snprintf(path, sizeof path, "%s/mlp-dp.json", tmp_dir());
	rt_pipeline_plan("mlp", 8, "cpu-1x2", 1, 2, SCHED_GPIPE, 1, path);
	compare(path, "mlp, dp on 2 ranks");
	snprintf(path, sizeof path, "%s/cnn-1f1b.json", tmp_dir());
	rt_pipeline_plan("cnn_small", 8, "cpu-1x4", 2, 2, SCHED_1F1B, 2, path);
	compare(path, "cnn_small, 2 stages x 2, 1F1B, 2 micro-batches");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_tasks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
