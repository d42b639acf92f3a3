/*
 * Piper's dynamic program (core/piper_dp.c) against exhaustive search on
 * tiny DAGs, with and without nodes that must share a stage, and the
 * `piper` planner on the zoo through the command and on models with tied
 * weights.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "testutil.h"

#include "util/clock.h"
#include "util/err.h"
#include "algo/piper_dp.h"
#include "driver.h"
#include "planner.h"

static uint64_t rng = 88172645463325252ull;

static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

/* A random DAG of n nodes (edges only forward in id order), degrees 1
 * and, for some instances, 2 on every node, one or two configurations
 * per degree (the second slower and smaller: activation recomputation). */
static void random_inst(struct piper_inst *pi, int n)
{
	int tp = uniform() < 0.4;

	memset(pi, 0, sizeof *pi);
	pi->nnodes = n;
	pi->max_devices = 1 + (int)(uniform() * 4);
	pi->mbs = uniform() < 0.5 ? 2 : 4;
	pi->bw = 1e9;
	pi->mem = 2e9 + uniform() * 8e9;
	pi->nodes = calloc((size_t)n, sizeof *pi->nodes);
	pi->edges = calloc((size_t)n * (size_t)n, sizeof *pi->edges);
	assert_non_null(pi->nodes);
	assert_non_null(pi->edges);
	for (int v = 1; v < n; v++)
		for (int u = 0; u < v; u++)
			if (u == v - 1 || uniform() < 0.3)
				pi->edges[pi->nedges++] = (struct piper_edge){ u, v, uniform() * 1e7 };
	assert_int_equal(piper_edge_lists(pi), AP_OK);
	for (int v = 0; v < n; v++) {
		struct piper_node *x = &pi->nodes[v];

		x->ndeg = tp ? 2 : 1;
		x->deg = calloc(2, sizeof *x->deg);
		assert_non_null(x->deg);
		for (int k = 0; k < x->ndeg; k++) {
			struct piper_degree *g = &x->deg[k];

			g->t = k + 1;
			g->ntmpc = uniform() < 0.5 ? 2 : 1;
			g->tmpc = calloc(2, sizeof *g->tmpc);
			assert_non_null(g->tmpc);
			for (int l = 0; l < g->ntmpc; l++) {
				struct piper_tmpc *c = &g->tmpc[l];

				c->id = strdup(l ? "activation recomp" : "vanilla");
				c->time = (0.001 + uniform() * 0.01) / g->t * (l ? 1.5 : 1);
				c->params = uniform() * 5e8 / g->t;
				c->mem_a = uniform() * 1e9 / g->t * (l ? 0.2 : 1);
				c->mem_b = 3 * c->params + (l ? uniform() * 1e8 : 0);
				c->sync_fw = calloc((size_t)x->nin + 1, sizeof(double));
				c->sync_bw = calloc((size_t)x->nout + 1, sizeof(double));
				assert_non_null(c->sync_fw);
				assert_non_null(c->sync_bw);
				for (int e = 0; e < x->nin && g->t > 1; e++)
					c->sync_fw[e] = uniform() * 1e6;
				for (int e = 0; e < x->nout && g->t > 1; e++)
					c->sync_bw[e] = uniform() * 1e6;
			}
		}
	}
}

/* Exhaustive search: every chain of upsets from the whole set down to
 * the empty one, each difference a stage with every t and d; a plan's
 * stages take y = ceil(sum of d from it on / d).  With a group (tied,
 * nonzero), only upsets that hold all of it or none. */
struct ex {
	const struct piper_inst *pi;
	unsigned up[8], tied;
	int t[8], d[8], m;
	double best;
};

static int is_upset(const struct piper_inst *pi, unsigned set)
{
	for (int e = 0; e < pi->nedges; e++)
		if ((set >> pi->edges[e].src & 1) && !(set >> pi->edges[e].dst & 1))
			return 0;
	return 1;
}

static void evaluate(struct ex *x)
{
	int dev = 0, sum = 0, suffix, S = x->pi->mbs < x->pi->max_devices ? x->pi->mbs
									     : x->pi->max_devices;
	double worst = 0;

	for (int i = 0; i < x->m; i++) {
		dev += x->t[i] * x->d[i];
		sum += x->d[i];
	}
	if (dev > x->pi->max_devices || sum > S)
		return;
	suffix = sum;
	for (int i = 0; i < x->m; i++) {
		int nodes[8], n = 0;
		unsigned stage = x->up[i] & ~(i + 1 < x->m ? x->up[i + 1] : 0u);

		for (int v = 0; v < x->pi->nnodes; v++)
			if (stage >> v & 1)
				nodes[n++] = v;
		worst = fmax(worst, piper_stage_tps(x->pi, nodes, n, x->t[i], x->d[i],
						    (suffix + x->d[i] - 1) / x->d[i], NULL));
		suffix -= x->d[i];
	}
	x->best = fmin(x->best, worst);
}

static void search(struct ex *x, unsigned cur)
{
	if (cur == 0) {
		evaluate(x);
		return;
	}
	for (unsigned sub = (cur - 1) & cur;; sub = (sub - 1) & cur) {
		if (is_upset(x->pi, sub) && ((sub & x->tied) == 0 || (sub & x->tied) == x->tied))
			for (int t = 1; t <= 2; t++)
				for (int d = 1; t * d <= x->pi->max_devices; d++) {
					if (x->pi->mbs % d)
						continue;
					x->up[x->m] = cur;
					x->t[x->m] = t;
					x->d[x->m] = d;
					x->m++;
					if (x->m < 8)
						search(x, sub);
					x->m--;
				}
		if (sub == 0)
			break;
	}
}

/* The DP against the exhaustive search on 300 random DAGs: of 1 to 5
 * nodes; or, tied, of 2 to 5 nodes of which a random pair or triple must
 * share a stage (piper_solve_tied()), the search then going over the
 * plans whose every stage holds all of them or none.  The DP finds the
 * optimum (or that nothing fits), and its stages cover every node once,
 * within the devices, its worst stage being its TPS and, tied, every
 * stage holding the group whole or not at all. */
static void against_exhaustive(int tied)
{
	int feasible = 0;

	for (int k = 0; k < 300; k++) {
		struct piper_inst pi;
		struct piper_result r;
		struct ex x = { .best = INFINITY };
		int tie[8], grp[3], ng = 0, rc;

		random_inst(&pi, tied ? 2 + k % 4 : 1 + k % 5);
		x.pi = &pi;
		if (tied)
			ng = pi.nnodes > 2 && k % 3 == 0 ? 3 : 2;
		for (int v = 0; v < pi.nnodes; v++)
			tie[v] = v;
		for (int i = 0; i < ng; i++) {
			do
				grp[i] = (int)(uniform() * pi.nnodes);
			while (x.tied >> grp[i] & 1);
			x.tied |= 1u << grp[i];
		}
		for (int i = 0; i < ng; i++)
			tie[grp[i]] = grp[(i + 1) % ng];
		search(&x, (1u << pi.nnodes) - 1);
		rc = tied ? piper_solve_tied(&pi, tie, 40000, 0, &r) : piper_solve(&pi, 40000, 0, &r);
		assert_int_equal(rc, AP_OK);
		if (isinf(x.best) != isinf(r.tps) ||
		    (isfinite(x.best) && fabs(r.tps - x.best) > 1e-9 * x.best))
			fail_msg("instance %d (%d nodes, %d edges, %d devices, N %d, group %#x): "
				 "DP %.12g, exhaustive %.12g", k, pi.nnodes, pi.nedges,
				 pi.max_devices, pi.mbs, x.tied, r.tps, x.best);
		if (isfinite(r.tps)) {
			int dev = 0, covered = 0;
			double worst = 0;

			feasible++;
			for (int s = 0; s < r.nstages; s++) {
				unsigned in = 0;

				dev += r.stages[s].t * r.stages[s].d;
				covered += r.stages[s].nnodes;
				worst = fmax(worst, r.stages[s].tps);
				for (int q = 0; q < r.stages[s].nnodes; q++)
					in |= 1u << r.stages[s].nodes[q];
				if ((in & x.tied) != 0 && (in & x.tied) != x.tied)
					fail_msg("instance %d: stage %d holds part of group %#x", k,
						 s, x.tied);
			}
			assert_int_equal(covered, pi.nnodes);
			assert_true(dev <= pi.max_devices);
			assert_true(worst <= r.tps * (1 + 1e-9));
		}
		piper_result_release(&r);
		piper_inst_release(&pi);
	}
	assert_true(feasible > 150);
}

static void test_exact_on_tiny_dags(void **state)
{
	(void)state;
	against_exhaustive(0);
}

static void test_tied_on_tiny_dags(void **state)
{
	(void)state;
	against_exhaustive(1);
}

/* The planner on the zoo through the command: plans validate and
 * simulate, and the search statistics are recorded. */
static void test_zoo_plans(void **state)
{
	static const char *const cases[][2] = {
		{ "mlp", "1x4:v100" }, { "resnet50", "summit-2x4" }, { "gnmt", "summit-4x4" },
		{ "dlrm", "summit-2x4" }, { "candle_uno", "summit-4x4" },
	};
	char out[8192], cmd[1024], buf[65536];

	(void)state;
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		const char *plan = tmp_write("piper-plan.json", "");

		/* the budget a cap only, for the sanitizer build */
		snprintf(cmd, sizeof cmd, "plan -m %s -c %s -P piper --budget 600 -o %s",
			 cases[k][0], cases[k][1], plan);
		if (test_autopar(cmd, 1, out, sizeof out) != 0)
			fail_msg("%s: %s", cmd, out);
		test_read_file(plan, buf, sizeof buf);
		assert_non_null(strstr(buf, "\"ideals\""));
		assert_non_null(strstr(buf, "\"tps_ms\""));
		snprintf(cmd, sizeof cmd, "sim %s", plan);
		if (test_autopar(cmd, 1, out, sizeof out) != 0)
			fail_msg("%s: %s", cmd, out);
	}
}

/* A number from a plan file's text: the value after "key": */
static double plan_number(const char *buf, const char *key)
{
	char pat[64];
	const char *at;

	snprintf(pat, sizeof pat, "\"%s\":", key);
	at = strstr(buf, pat);
	if (!at)
		fail_msg("no %s in the plan", key);
	return strtod(at + strlen(pat), NULL);
}

/* A chain is cut into layers the stages can split (a run of operators in
 * series is not one layer), and where memory is short the planner
 * chooses Piper's recomputation for some layers, which the plan records
 * and the simulator charges. */
static void test_layers_and_recompute(void **state)
{
	char out[8192], cmd[1024], buf[1 << 17];
	const char *plan = tmp_write("piper-rc.json", "");

	(void)state;
	snprintf(cmd, sizeof cmd, "plan -m vgg16 -c 1x4:v100 -P piper -o %s", plan);
	if (test_autopar(cmd, 1, out, sizeof out) != 0)
		fail_msg("%s: %s", cmd, out);
	test_read_file(plan, buf, sizeof buf);
	assert_true(plan_number(buf, "layers") >= 8);
	assert_true(plan_number(buf, "stages") > 1);
	assert_null(strstr(buf, "\"recompute\""));

	snprintf(cmd, sizeof cmd, "plan -m gnmt -c '1x4:v100,mem=1GiB' -P piper -o %s", plan);
	if (test_autopar(cmd, 1, out, sizeof out) != 0)
		fail_msg("%s: %s", cmd, out);
	test_read_file(plan, buf, sizeof buf);
	assert_true(plan_number(buf, "recomputed") > 0);
	assert_non_null(strstr(buf, "\"recompute\": true"));
	snprintf(cmd, sizeof cmd, "sim %s", plan);
	if (test_autopar(cmd, 1, out, sizeof out) != 0)
		fail_msg("%s: %s", cmd, out);
}

/* On Piper's own inputs the planner finds the time per sample Piper's
 * published reference (algo.cpp, its DP with its default options) finds:
 * the values below are that program's output on the same inputs and
 * machines (ResNet-50 on 2, 4 and 8 devices of the file's 80 GB and
 * 25 GB/s; on 8 devices of 4 GiB at 25 GiB/s, where it chooses 7 stages
 * and activation recomputation for most layers; GNMT on 2 devices of
 * 2.5 GiB, the paper's slow case). */
static void test_reference_values(void **state)
{
	static const struct {
		const char *model, *cluster;
		double tps, stages;
	} cases[] = {
		{ "piper/resnet", "1x2:v100,mem=80GB,intra=25GB/s", 231.19050106487637, 1 },
		{ "piper/resnet", "1x4:v100,mem=80GB,intra=25GB/s", 115.59525159731442, 1 },
		{ "piper/resnet", "1x8:v100,mem=80GB,intra=25GB/s", 57.797626863533573, 1 },
		{ "piper/resnet", "1x8:v100,mem=4GiB,intra=26.8435456GB/s", 73.493286000131647, 7 },
		{ "piper/gnmt", "1x2:v100,mem=2.5GiB,intra=25GB/s", 263.35438412031993, 2 },
	};
	char out[8192], cmd[1024], buf[1 << 16];

	(void)state;
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		const char *plan = tmp_write("piper-ref.json", "");
		const char *at;
		double tps, stages;

		snprintf(cmd, sizeof cmd, "plan -m %s -c '%s' -P piper --budget 600 -o %s",
			 cases[k].model, cases[k].cluster, plan);
		if (test_autopar(cmd, 1, out, sizeof out) != 0)
			fail_msg("%s: %s", cmd, out);
		test_read_file(plan, buf, sizeof buf);
		at = strstr(buf, "\"tps_ms\":");
		assert_non_null(at);
		tps = strtod(at + 9, NULL) / 1e3;
		at = strstr(buf, "\"stages\":");
		assert_non_null(at);
		stages = strtod(at + 9, NULL);
		if (fabs(tps / cases[k].tps - 1) > 1e-9 || stages != cases[k].stages)
			fail_msg("%s on %s: %.17g in %g stages, Piper's reference %.17g in %g",
				 cases[k].model, cases[k].cluster, tps, stages, cases[k].tps,
				 cases[k].stages);
	}
}

/* Tied weights through the driver (which validates the plan): a stage
 * holds both layers of a tied pair or neither.  GPT-2 on PipeDream's
 * cluster A, at the batch per device (one stage of round-robin replicas)
 * and at its own, where the stages of the plans before split the pair;
 * a small model whose pair spans its body still pipelines its tail. */
static void test_tied_weights(void **state)
{
	static const char *const batches[] = { "0/dev", NULL };
	const struct planner *pl = planner_find("piper");
	struct instance x;
	struct planner_input input;
	struct plan p;

	(void)state;
	assert_non_null(pl);
	for (size_t k = 0; k < sizeof batches / sizeof batches[0] + 1; k++) {
		if (k < sizeof batches / sizeof batches[0])
			test_instance(&x, "gpt2", batches[k], "pipedream-a");
		else
			test_instance(&x, test_tied_model(), NULL, "1x4:v100");
		input = planner_input_of(&x, 600, 1, NULL);
		plan_init(&p);
		if (planner_run(pl, &input, x.c.profile, &p) != AP_OK)
			fail_msg("%s: %s", x.g.name, ap_last_error());
		if (k < sizeof batches / sizeof batches[0]) {
			test_same_devices(&p, &x.g, "transformer.wte", "lm_head");
		} else {
			test_same_devices(&p, &x.g, "wte", "head");
			assert_true(p.nstages > 1);
		}
		plan_release(&p);
		instance_release(&x);
	}
}

/* A chain of n nodes with no configurations: enough for the enumeration
 * of its n + 1 upsets, which is all the tests below reach. */
static void chain_inst(struct piper_inst *pi, int n)
{
	memset(pi, 0, sizeof *pi);
	pi->nnodes = n;
	pi->max_devices = 4;
	pi->mbs = 4;
	pi->bw = 1e9;
	pi->mem = 1e9;
	pi->nodes = calloc((size_t)n, sizeof *pi->nodes);
	pi->edges = calloc((size_t)n, sizeof *pi->edges);
	assert_non_null(pi->nodes);
	assert_non_null(pi->edges);
	for (int v = 1; v < n; v++)
		pi->edges[pi->nedges++] = (struct piper_edge){ v - 1, v, 1 };
	assert_int_equal(piper_edge_lists(pi), AP_OK);
}

/* A DAG of n nodes has at least n + 1 upsets: one of more than
 * max-ideals - 1 nodes is refused at once, before an enumeration that
 * takes seconds and a gigabyte to find as many. */
static void test_too_many_nodes(void **state)
{
	struct piper_inst pi;
	struct piper_result r;
	double t0;
	int rc;

	(void)state;
	chain_inst(&pi, 50000);
	t0 = now_s();
	ap_err_quiet(1);
	rc = piper_solve(&pi, 40000, 5, &r);
	ap_err_quiet(0);
	assert_int_equal(rc, AP_EINPUT);
	if (!strstr(ap_last_error(), "50000 nodes") || now_s() - t0 > 1)
		fail_msg("after %.2f s: %s", now_s() - t0, ap_last_error());
	piper_result_release(&r);
	piper_inst_release(&pi);
}

/* The budget holds while the upsets are enumerated: with a group (which
 * the refusal above cannot count) on a chain whose enumeration alone
 * takes seconds, the search stops within a fraction of one. */
static void test_budget_in_enumeration(void **state)
{
	struct piper_inst pi;
	struct piper_result r;
	int *tie = malloc(20000 * sizeof *tie), rc;
	double t0;

	(void)state;
	assert_non_null(tie);
	chain_inst(&pi, 20000);
	for (int v = 0; v < pi.nnodes; v++)
		tie[v] = v;
	t0 = now_s();
	ap_err_quiet(1);
	rc = piper_solve_tied(&pi, tie, 40000, 0.1, &r);
	ap_err_quiet(0);
	assert_int_equal(rc, AP_EINPUT);
	if (!strstr(ap_last_error(), "budget") || now_s() - t0 > 1)
		fail_msg("after %.2f s: %s", now_s() - t0, ap_last_error());
	piper_result_release(&r);
	piper_inst_release(&pi);
	free(tie);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_on_tiny_dags),
		cmocka_unit_test(test_tied_on_tiny_dags),
		cmocka_unit_test(test_tied_weights),
		cmocka_unit_test(test_zoo_plans),
		cmocka_unit_test(test_layers_and_recompute),
		cmocka_unit_test(test_reference_values),
		cmocka_unit_test(test_too_many_nodes),
		cmocka_unit_test(test_budget_in_enumeration),
	};

	return cmocka_run_group_tests_name("piper planner", tests, NULL, NULL);
}
