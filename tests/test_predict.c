/*
 * async-predict: the schedule (core/plan/sched.c), weight prediction (the
 * backend's predict and the executor's distance, runtime/exec.h) and
 * execution on ranks, against the stashing and naive alternatives.
 */
#include "runtest.h"

#include "backend.h"
#include "check.h"
#include "exec.h"
#include "plan/plan_io.h"

/* Where item (stage st, micro-batch j, bwd) sits in the order. */
static int pos_of(const struct sched_item *it, int n, int st, int j, int bwd)
{
	for (int k = 0; k < n; k++)
		if (it[k].stage == st && it[k].mb == j && it[k].bwd == bwd)
			return k;
	fail_msg("item %d/%d/%d missing", st, j, bwd);
	return -1;
}

/* Forwards flow down the chain, backwards up, each backward after its
 * forward; and a stage runs a forward beside an earlier backward (same
 * key), the last stage F(j + 1) beside B(j). */
static void test_schedule(void **state)
{
	enum { K = 3, M = 6 };
	static const int depth[K] = { 0, 1, 2 };
	struct sched_item it[2 * K * M];

	(void)state;
	sched_order(SCHED_ASYNC_PREDICT, K, depth, M, it);
	for (int j = 0; j < M; j++)
		for (int d = 0; d < K; d++) {
			int f = pos_of(it, 2 * K * M, d, j, 0), b = pos_of(it, 2 * K * M, d, j, 1);

			assert_true(f < b);
			if (d > 0)
				assert_true(pos_of(it, 2 * K * M, d - 1, j, 0) < f);
			if (d < K - 1)
				assert_true(pos_of(it, 2 * K * M, d + 1, j, 1) < b);
			if (j + 1 < M && d == K - 1)
				assert_true(it[pos_of(it, 2 * K * M, d, j + 1, 0)].key == it[b].key);
		}
	/* staleness: 2(K - d) - 1 under async-predict, K - 1 - d under
	 * 1F1B, capped by the micro-batches before; none when flushed */
	for (int d = 0; d < K; d++) {
		assert_int_equal(sched_staleness(SCHED_ASYNC_PREDICT, K, d, 100), 2 * (K - d) - 1);
		assert_int_equal(sched_staleness(SCHED_1F1B_ASYNC, K, d, 100), K - 1 - d);
		assert_int_equal(sched_staleness(SCHED_ASYNC_PREDICT, K, d, 2), 1);
		assert_int_equal(sched_staleness(SCHED_1F1B, K, d, 100), 0);
		assert_int_equal(sched_staleness(SCHED_GPIPE, K, d, 100), 0);
	}
	assert_int_equal(sched_async(SCHED_ASYNC_PREDICT), 1);
	assert_int_equal(sched_async(SCHED_1F1B), 0);
}

/* With a learning rate of 0 the prediction is the current weights,
 * whatever the momentum and the distance. */
static void test_lr_zero(void **state)
{
	float w[5] = { 1.5f, -2, 0, 3e-3f, 7 }, v[5] = { 4, -1, 9, 2e3f, 1e-3f }, out[5];

	(void)state;
	for (int k = 0; k < 4; k++) {
		backend_cpu.predict(out, w, v, 5, 0.0f * (float)k);
		assert_memory_equal(out, w, sizeof w);
	}
	backend_cpu.predict(out, w, v, 5, 0.1f);
	assert_true(fabsf(out[2] - (0 - 0.1f * 9)) < 1e-6f);
}

/*
 * A 2-stage pipeline under async-predict's order, each stage with a
 * constant gradient and its momentum settled (v = g / (1 - mu)): at every
 * forward the stage predicts over the updates its micro-batch's gradient
 * still waits for (the micro-batch's index minus the updates done, which
 * is the executor's count from the keys), and when that gradient is
 * applied the weights then
 * current must be the prediction.  The distance is checked against the
 * order itself (backwards of the stage between the forward and the
 * micro-batch's backward), and the check is not vacuous: stale weights
 * (no prediction) differ.
 */
static void test_prediction_lands(void **state)
{
	enum { K = 2, M = 8, N = 4 };
	static const int depth[K] = { 0, 1 };
	const float lr = 0.01f, mu = 0.9f, grad[N] = { 0.5f, -1, 2, 0.25f };
	struct sched_item it[2 * K * M];
	float w[K][N], v[K][N], pred[K][M][N], stale[K][M];
	int nupd[K] = { 0 }, dist[K][M], far = 0;

	(void)state;
	for (int d = 0; d < K; d++)
		for (int i = 0; i < N; i++) {
			w[d][i] = 1.0f + (float)(d + i);
			v[d][i] = grad[i] / (1 - mu);
		}
	sched_order(SCHED_ASYNC_PREDICT, K, depth, M, it);
	for (int x = 0; x < 2 * K * M; x++) {
		int d = it[x].stage, j = it[x].mb;

		if (!it[x].bwd) {
			int k = j - nupd[d], between = 0;

			for (int y = x + 1; it[y].stage != d || it[y].mb != j || !it[y].bwd; y++)
				between += it[y].stage == d && it[y].bwd;
			assert_int_equal(k, between);
			far = k > far ? k : far;
			dist[d][j] = k;
			stale[d][j] = w[d][0];
			backend_cpu.predict(pred[d][j], w[d], v[d], N, lr * (float)k);
			continue;
		}
		for (int i = 0; i < N; i++)
			assert_true(fabsf(pred[d][j][i] - w[d][i]) <= 1e-5f * fabsf(w[d][i]));
		if (dist[d][j] > 0) /* without prediction it would be off */
			assert_true(fabsf(stale[d][j] - w[d][0]) > 1e-3f);
		backend_cpu.sgd(w[d], v[d], grad, N, lr, mu);
		nupd[d]++;
	}
	assert_int_equal(far, 3); /* stage 0: 2 (K - 0) - 1 updates ahead */
}

/* In one process: a 2-stage async-predict plan of mlp on one device,
 * trained with and without prediction. */
static void train_mlp(float lr, int naive, double *loss, int nsteps)
{
	char path[1024];
	struct graph g;
	struct plan p, ref;
	struct exec_opts o = { .seed = 3, .steps = nsteps, .pool = 2, .lr = lr,
			       .momentum = 0.9f, .naive = naive };
	float *params[64] = { 0 };

	graph_init(&g);
	plan_init(&p);
	plan_init(&ref);
	snprintf(path, sizeof path, "%s/mlp-predict.json", tmp_dir());
	rt_pipeline_plan("mlp", 16, "cpu-1x2", 2, 1, SCHED_ASYNC_PREDICT, 4, path);
	assert_int_equal(model_load("mlp", 16, &g), 0);
	assert_int_equal(plan_read(path, &g, &p), 0);
	assert_int_equal(check_reference_plan(&g, &p, &ref), 0);
	assert_int_equal(ref.sched, SCHED_ASYNC_PREDICT);
	assert_true(g.nops <= 64);
	assert_int_equal(check_train(&g, &ref, &backend_cpu, &o, nsteps, loss, params), 0);
	plan_release(&ref);
	plan_release(&p);
	graph_release(&g);
}

static void test_runtime_prediction(void **state)
{
	enum { S = 6 };
	double pred[S], naive[S];
	int differ = 0;

	(void)state;
	/* lr 0: predicting changes nothing */
	train_mlp(0, 0, pred, S);
	train_mlp(0, 1, naive, S);
	assert_memory_equal(pred, naive, sizeof pred);
	/* lr > 0: the forwards run with other weights than naive ones */
	train_mlp(0.05f, 0, pred, S);
	train_mlp(0.05f, 1, naive, S);
	for (int s = 0; s < S; s++) {
		assert_true(isfinite(pred[s]));
		differ |= fabs(pred[s] - naive[s]) > 1e-6;
	}
	assert_true(differ);
	assert_true(pred[S - 1] < pred[0]);
}

/* On ranks: 2 and 4 stages agree with the same schedule on one device;
 * --naive too; the loss CSV has a row per step. */
static void test_ranks(void **state)
{
	char path[1024], csv[1024], out[16384], line[256];
	int rows = 0;
	FILE *f;

	(void)state;
	snprintf(path, sizeof path, "%s/cnn-predict.json", tmp_dir());
	rt_pipeline_plan("cnn_small", 8, "cpu-1x2", 2, 1, SCHED_ASYNC_PREDICT, 4, path);
	rt_check_plan(path, "cnn_small, 2 stages, async-predict");
	snprintf(path, sizeof path, "%s/tf-predict.json", tmp_dir());
	rt_pipeline_plan("transformer_tiny", 8, "cpu-1x4", 4, 1, SCHED_ASYNC_PREDICT, 4, path);
	rt_check_plan(path, "transformer_tiny, 4 stages, async-predict");
	snprintf(path, sizeof path, "%s/mlp-predict4.json", tmp_dir());
	snprintf(csv, sizeof csv, "%s/loss.csv", tmp_dir());
	rt_pipeline_plan("mlp", 8, "cpu-1x4", 4, 1, SCHED_ASYNC_PREDICT, 4, path);
	assert_int_equal(rt_run(out, sizeof out,
				"run '%s' --naive --check --steps 2 --warmup 1 --loss-csv '%s'",
				path, csv), 0);
	assert_true(rt_check_diff(out) >= 0 && rt_check_diff(out) < 1e-5);
	f = fopen(csv, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof line, f));
	assert_string_equal(line, "step,loss\n");
	while (fgets(line, sizeof line, f))
		rows += atof(strchr(line, ',') + 1) > 0;
	fclose(f);
	assert_int_equal(rows, 3);
}

/* The loss CSV of `run PLAN EXTRA` (6 steps) into buf (blen bytes); the run's output
 * into out. */
static void run_losses(const char *plan, const char *extra, char *out, size_t len,
		       char *buf, size_t blen)
{
	char csv[1024];

	snprintf(csv, sizeof csv, "%s/pair-loss.csv", tmp_dir());
	assert_int_equal(rt_run(out, len, "run '%s' --steps 4 --warmup 2 --loss-csv '%s' %s",
				plan, csv, extra), 0);
	assert_true(test_read_file(csv, buf, blen) > 20);
}

/* A stage's paired forward and backward run on two threads, and training
 * is the same to the bit as with the two one after the other. */
static void test_paired(void **state)
{
	char path[1024], out[16384], a[4096], b[4096];
	double pairs = -1;
	const char *s;

	(void)state;
	snprintf(path, sizeof path, "%s/tf-pair.json", tmp_dir());
	rt_pipeline_plan("transformer_tiny", 8, "cpu-1x4", 4, 1, SCHED_ASYNC_PREDICT, 4, path);
	run_losses(path, "", out, sizeof out, a, sizeof a);
	s = strstr(out, "overlap ");
	assert_non_null(s);
	assert_int_equal(sscanf(s, "overlap %lf", &pairs), 1);
	assert_true(pairs > 0);
	run_losses(path, "--serial", out, sizeof out, b, sizeof b);
	assert_non_null(strstr(out, "overlap      0 "));
	assert_string_equal(a, b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_lr_zero),
		cmocka_unit_test(test_prediction_lands),
		cmocka_unit_test(test_runtime_prediction),
		cmocka_unit_test(test_ranks),
		cmocka_unit_test(test_paired),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
