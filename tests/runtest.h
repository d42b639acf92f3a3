/*
 * Helpers of the runtime's end-to-end tests (test_run*.c): running the
 * built binary (AUTOPAR_BIN) and reading what it printed, making plans
 * with the planners, and writing pipeline plans that no planner makes yet
 * (chains of stages, replicated stages, round-robin replicas, a DAG of
 * stages).
 */
#ifndef AUTOPAR_RUNTEST_H
#define AUTOPAR_RUNTEST_H

#include "testutil.h"

#include <stdarg.h>

#include "model/model_io.h"
#include "plan/plan.h"
#include "plan/plan_io.h"
#include "plan/plan_build.h"

/* Runs `autopar ARGS` (printf-style) with stdout and stderr into out
 * (len bytes); returns the exit status (128 + signal when killed). */
__attribute__((format(printf, 3, 4)))
static inline int rt_run(char *out, size_t len, const char *fmt, ...)
{
	char args[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	return test_autopar(args, 1, out, len);
}

/* The check line's relative difference, or -1 when there is none. */
static inline double rt_check_diff(const char *out)
{
	const char *s = strstr(out, "largest relative difference ");
	double d;

	if (!s || sscanf(s, "largest relative difference %lf", &d) != 1)
		return -1;
	return d;
}

/* Runs PLAN with --check for a few steps and asserts it agrees with one
 * device to float32 round-off; a refusal before launch (exit 2) with the
 * message `refusal` (when not NULL) is accepted: 0 when refused, 1 when
 * checked. */
static inline int rt_check_plan_or(const char *plan, const char *what, const char *refusal)
{
	char out[16384];
	int st = rt_run(out, sizeof out, "run '%s' --check --steps 2 --warmup 1", plan);
	double d = rt_check_diff(out);

	if (refusal && st == 2 && strstr(out, refusal))
		return 0;
	if (st != 0 || d < 0 || d >= 1e-5) {
		print_error("%s: exit %d, difference %g:\n%s\n", what, st, d, out);
		fail();
	}
	return 1;
}

static inline void rt_check_plan(const char *plan, const char *what)
{
	(void)rt_check_plan_or(plan, what, NULL);
}

/* A chain of `nstages` stages in graph order (about the same number of
 * ops each) whose stage s has rep[s] round-robin replicas (plan.h) of
 * `width` devices each, consecutive devices from 0 on, the ops split
 * `width` ways along n on replica 0's; batch `batch`, schedule `sched`,
 * m micro-batches. */
static inline void rt_round_robin_plan(const char *model, int64_t batch, const char *cluster,
				       int nstages, const int *rep, int width,
				       enum sched_kind sched, int m, const char *path)
{
	struct graph g;
	struct plan p;
	int first[8], d = 0;

	assert_true(nstages <= 8);
	graph_init(&g);
	plan_init(&p);
	assert_int_equal(model_load(model, batch, &g), 0);
	assert_int_equal(plan_alloc(&p, &g, nstages), 0);
	snprintf(p.cluster, sizeof p.cluster, "%s", cluster);
	snprintf(p.planner, sizeof p.planner, "test-round-robin");
	plan_schedule(&p, sched, m);
	assert_int_equal(plan_chain(&p), 0);
	for (int s = 0; s < nstages; s++) {
		first[s] = d;
		assert_int_equal(plan_stage_range(&p, s, d, rep[s] * width, rep[s]), 0);
		d += rep[s] * width;
	}
	for (int i = 0; i < g.nops; i++) {
		int s = i * nstages / g.nops, deg[NDIMS] = { width, 1, 1, 1, 1 };

		assert_int_equal(plan_place_range(&p, i, s, deg, first[s]), 0);
	}
	assert_int_equal(plan_write(&p, &g, path), 0);
	plan_release(&p);
	graph_release(&g);
}

/* A pipeline of `nstages` stages in graph order (about the same number
 * of ops each), stage s on devices s*rep .. s*rep+rep-1 with the ops
 * split rep ways along n, under schedule `sched` with m micro-batches. */
static inline void rt_pipeline_plan(const char *model, int64_t batch, const char *cluster,
				    int nstages, int rep, enum sched_kind sched, int m,
				    const char *path)
{
	static const int one[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };

	rt_round_robin_plan(model, batch, cluster, nstages, one, rep, sched, m, path);
}

/* branchy_small, batch 8, as a DAG of stages under `sched` with 2
 * micro-batches, into path: stem and the pool branch on rank 0, the conv branch on rank 1, the head
 * back on rank 0: stages 0 -> {1, 2}, 1 -> 2 */
static inline void rt_dag_plan(const char *path, enum sched_kind sched)
{
	static const char *const branch[] = { "b.conv1", "b.relu", "b.conv2" };
	static const char *const head[] = { "cat", "flatten", "fc", "loss" };
	struct graph g;
	struct plan p;
	static const int one[NDIMS] = { 1, 1, 1, 1, 1 };

	graph_init(&g);
	plan_init(&p);
	assert_int_equal(model_load("branchy_small", 8, &g), 0);
	assert_int_equal(plan_alloc(&p, &g, 3), 0);
	snprintf(p.cluster, sizeof p.cluster, "cpu-1x2");
	plan_schedule(&p, sched, 2);
	for (int s = 0; s < 3; s++)
		assert_int_equal(plan_stage_range(&p, s, s == 1, 1, 0), 0);
	assert_int_equal(plan_link(&p, 0, 1), 0);
	assert_int_equal(plan_link(&p, 0, 2), 0);
	assert_int_equal(plan_link(&p, 1, 2), 0);
	for (int k = 0; k < 3; k++)
		assert_int_equal(plan_place_range(&p, graph_find(&g, branch[k]), 1, one, 1), 0);
	for (int k = 0; k < 4; k++)
		assert_int_equal(plan_place_range(&p, graph_find(&g, head[k]), 2, one, 0), 0);
	assert_int_equal(plan_write(&p, &g, path), 0);
	plan_release(&p);
	graph_release(&g);
}

/* A one-stage plan on device 0 in which op `name` alone is split as
 * degree[] says over devices 0 .. product - 1. */
static inline void rt_split_plan(const char *model, const char *cluster, const char *name,
				 const int degree[NDIMS], const char *path)
{
	static const int one[NDIMS] = { 1, 1, 1, 1, 1 };
	struct graph g;
	struct plan p;
	int n = 1, found = 0;

	for (int d = 0; d < NDIMS; d++)
		n *= degree[d];
	graph_init(&g);
	plan_init(&p);
	assert_int_equal(model_load(model, 8, &g), 0);
	assert_int_equal(plan_alloc(&p, &g, 1), 0);
	snprintf(p.cluster, sizeof p.cluster, "%s", cluster);
	snprintf(p.planner, sizeof p.planner, "test-split");
	assert_int_equal(plan_one_stage(&p, n, SCHED_GPIPE, 1), 0);
	for (int i = 0; i < g.nops; i++) {
		int mine = !strcmp(g.ops[i].name, name);

		found |= mine;
		assert_int_equal(plan_place_range(&p, i, 0, mine ? degree : one, 0), 0);
	}
	assert_true(found);
	assert_int_equal(plan_write(&p, &g, path), 0);
	plan_release(&p);
	graph_release(&g);
}

/* Plan file path of model (batch 8) read into *p, with the graph into
 * *g, to be edited; rt_plan_close() writes it to `to` (NULL: nowhere) and
 * releases both. */
static inline void rt_plan_open(const char *model, const char *path, struct graph *g,
				struct plan *p)
{
	graph_init(g);
	plan_init(p);
	assert_int_equal(model_load(model, 8, g), 0);
	assert_int_equal(plan_read(path, g, p), 0);
}

static inline void rt_plan_close(struct graph *g, struct plan *p, const char *to)
{
	if (to)
		assert_int_equal(plan_write(p, g, to), 0);
	plan_release(p);
	graph_release(g);
}

/* The small models, which every runtime test covers. */
static const char *const rt_models[] = { "mlp", "cnn_small", "branchy_small",
				      "transformer_tiny", "resnet_small" };

/* The registered planners, from `autopar planners --csv`. */
static inline int rt_planners(char names[][32], int max)
{
	char out[8192], *line;
	int n = 0;

	assert_int_equal(rt_run(out, sizeof out, "planners --csv"), 0);
	line = strchr(out, '\n');
	while (line && line[1] && n < max) {
		char *comma = strchr(++line, ',');

		if (!comma)
			break;
		snprintf(names[n++], 32, "%.*s", (int)(comma - line), line);
		line = strchr(comma, '\n');
	}
	return n;
}

/* --check on the plan of every planner for every small model on cluster
 * (batch 8); a planner may decline an instance, but single, dp and owt
 * must plan every model. */
static inline void rt_check_planners(const char *cluster)
{
	char names[32][32], out[16384], plan[2048], what[2048];
	int np = rt_planners(names, 32), ran = 0;

	assert_true(np >= 4);
	for (size_t m = 0; m < sizeof rt_models / sizeof *rt_models; m++)
		for (int k = 0; k < np; k++) {
			int st;

			snprintf(plan, sizeof plan, "%s/%s-%s-%s.json", tmp_dir(), rt_models[m],
				 names[k], cluster);
			st = rt_run(out, sizeof out, "plan -m %s -c %s -P %s -b 8 -o '%s'",
				    rt_models[m], cluster, names[k], plan);
			/* a planner may find no plan (exhaustive: instance too big) */
			if (st == 2 && strstr(out, names[k]))
				continue;
			assert_int_equal(st, 0);
			snprintf(what, sizeof what, "%s by %s on %s", rt_models[m], names[k],
				 cluster);
			/* every split a planner chooses is executed (conv2d and
			 * pools along h and w with their halo, attention along
			 * l and c, concat along its axis); the runtime refuses,
			 * before launch, an asynchronous plan whose round-robin
			 * replicas do not divide its micro-batches (pipedream's 3
			 * replicas on a batch of 8: rounds would straddle steps) */
			ran += rt_check_plan_or(plan, what,
						/* megatron plans in mixed precision by
						 * default, which the runtime does not
						 * execute yet (docs/runtime.md) */
						strcmp(names[k], "megatron")
							? "round-robin replicas, which do not divide"
							: "simulated but not executable by the runtime yet");
		}
	/* every model by at least single, dp and owt */
	assert_true(ran >= 3 * (int)(sizeof rt_models / sizeof *rt_models));
}

/* First and last loss of `autopar run PLAN` over 200 steps. */
static inline void rt_losses(const char *plan, double *first, double *last)
{
	char out[16384];
	const char *s;

	if (rt_run(out, sizeof out, "run '%s' --steps 200 --warmup 0", plan) != 0) {
		print_error("%s:\n%s\n", plan, out);
		fail();
	}
	s = strstr(out, "loss ");
	assert_non_null(s);
	assert_int_equal(sscanf(s, "loss %lf -> %lf", first, last), 2);
}

/* The loss of a small model falls by at least half over 200 steps. */
static inline void rt_falls_by_half(const char *model, const char *plan)
{
	double a, b;

	rt_losses(plan, &a, &b);
	if (!(b <= 0.5 * a)) {
		print_error("%s (%s): loss %g -> %g does not fall by half\n", model, plan, a, b);
		fail();
	}
}

#endif
