/*
 * Megatron-LM's strategies (docs/plan-format.md, "Tensor parallelism",
 * "Pipelines of groups"; docs/simulator.md, "Large language models"):
 * Korthikanti et al.'s activation memory per layer, the bytes a parameter
 * costs, the interleaved and zero-bubble orders, and the megatron planner
 * on the GPT family of the paper's Table 1 at 32 to 3,072 GPUs: every
 * configuration of the table fits memory with its full recomputation and
 * the largest do not without it, interleaving beats 1F1B at a small
 * batch, ZB-H1 beats 1F1B at the same memory, and a plan survives its
 * JSON.  Times live in bench/megatron-table1, not here.
 */
#include "testutil.h"
#include "driver.h"
#include "planner.h"
#include "cost/transformer.h"
#include "model/model_io.h"
#include "model/tensor.h"
#include "plan/plan_io.h"
#include "plan/sched.h"
#include "sim/sim.h"

/* Plans model on cluster at batch with megatron options opts ("k=v,...")
 * into *out; the status. */
static int megatron(const char *model, const char *cluster, const char *batch, const char *opts,
		    struct instance *x, struct plan *out)
{
	const struct planner *pl = planner_find("megatron");
	struct planner_opts o = { 0 };
	const struct planner *got;
	struct planner_input in;
	char spec[256];

	snprintf(spec, sizeof spec, "megatron%s%s", *opts ? ":" : "", opts);
	assert_int_equal(planner_parse(spec, "test", &got, &o), AP_OK);
	assert_ptr_equal(got, pl);
	instance_init(x);
	test_instance(x, model, batch, cluster);
	in = planner_input_of(x, 10, 1, &o);
	plan_init(out);
	return planner_run(pl, &in, x->profile, out);
}

/* Korthikanti et al. (MLSys 2023), eqs. 1-4: a layer keeps
 * s b h (34 + 5 a s / h) bytes in 16-bit training, s b h (10 + 24 / t +
 * 5 a s / (h t)) with t-way tensor parallelism, s b h (34 / t +
 * 5 a s / (h t)) with sequence parallelism too, and without the score
 * terms under selective recomputation. */
static void test_korthikanti(void **state)
{
	struct instance x;
	const struct graph *g;
	enum tp_role *role;
	int *tens, bad;
	char why[160];

	(void)state;
	instance_init(&x);
	test_instance(&x, "gpt_1.7b", "1", "selene:1");
	g = &x.g;
	role = malloc((size_t)g->nops * sizeof *role);
	tens = malloc((size_t)g->nops * sizeof *tens);
	for (int t = 1; t <= 8; t *= 2)
		for (int sp = 0; sp <= (t > 1); sp++)
			for (int sel = 0; sel < 2; sel++) {
				double s = 2048, h = 2304, a = 24, b = 1, want, got = 0;

				for (int i = 0; i < g->nops; i++)
					tens[i] = t;
				assert_int_equal(tensor_roles(g, tens, role, &bad, why, sizeof why), 0);
				for (int i = 0; i < g->nops; i++) {
					struct tp_op o = { t, role[i], sp, 0, PREC_MIXED };

					if (g->ops[i].block < 0 || g->ops[i].iter != 0)
						continue;
					if (sel && g->ops[i].kind == OP_ATTENTION)
						o.recompute = RECOMPUTE_SELECTIVE;
					got += (double)cost_saved_bytes(g, i, &o, 1);
				}
				want = s * b * h * (sp ? 34.0 / t : 10 + 24.0 / t) +
				       (sel ? 0 : 5 * a * s * s * b / t);
				if (fabs(got - want) > 1e-6 * want)
					fail_msg("t=%d sp=%d selective=%d: %g bytes a layer, Korthikanti %g",
						 t, sp, sel, got, want);
			}
	free(role);
	free(tens);
	{
		/* the attention dropout survives writing the model */
		char *text = NULL;
		size_t n = 0;
		FILE *f = open_memstream(&text, &n);

		assert_non_null(f);
		assert_int_equal(model_write(g, f), AP_OK);
		fclose(f);
		assert_non_null(strstr(text, "dropout=0.1"));
		free(text);
	}
	instance_release(&x);
}

/* 16 bytes a parameter in mixed precision with Adam (ZeRO's count), the
 * master copy and state divided by d under ZeRO-1, everything by ZeRO-3. */
static void test_param_bytes(void **state)
{
	(void)state;
	assert_true(cost_param_state_bytes(PREC_MIXED, OPTIMIZER_ADAM, 0, 8) == 16);
	assert_true(cost_param_state_bytes(PREC_MIXED, OPTIMIZER_ADAM, 1, 8) == 4 + 12.0 / 8);
	assert_true(cost_param_state_bytes(PREC_MIXED, OPTIMIZER_ADAM, 3, 8) == 2);
	assert_true(cost_param_state_bytes(PREC_FP32, OPTIMIZER_SGD, 0, 1) ==
		    BYTES_PER_ELEM * cost_state_factor(OPTIMIZER_SGD));
}

/* Every group's order holds each stage's passes of each micro-batch once
 * (F and B; zb-h1 W too), and Megatron's interleaved order starts with its
 * (G - r - 1) 2 + (v - 1) G warm-up forwards. */
static void test_orders(void **state)
{
	static struct sched_item it[3 * 4 * 16];
	static const enum sched_kind ks[] = { SCHED_1F1B, SCHED_INTERLEAVED, SCHED_ZB_H1 };

	(void)state;
	for (size_t k = 0; k < sizeof ks / sizeof *ks; k++) {
		int G = 4, v = ks[k] == SCHED_INTERLEAVED ? 2 : 1, m = 8;

		for (int r = 0; r < G; r++) {
			int n = sched_group_order(ks[k], G, v, m, r, it), seen[8][16][3] = { { { 0 } } };
			int warm = 0;

			assert_int_equal(n, (ks[k] == SCHED_ZB_H1 ? 3 : 2) * v * m);
			for (int i = 0; i < n; i++) {
				assert_int_equal(it[i].stage % G, r);
				seen[it[i].stage / G][it[i].mb][it[i].bwd]++;
			}
			for (int c = 0; c < v; c++)
				for (int j = 0; j < m; j++)
					for (int p = 0; p < (ks[k] == SCHED_ZB_H1 ? 3 : 2); p++)
						assert_int_equal(seen[c][j][p], 1);
			while (warm < n && it[warm].bwd == SCHED_F)
				warm++;
			if (ks[k] == SCHED_INTERLEAVED)
				assert_int_equal(warm, (G - r - 1) * 2 + (v - 1) * G + 1);
		}
	}
}

/* For one chunk, 1f1b's and gpipe's group orders are sched_order()'s
 * (the keys of the general simulator and runtime), stage by stage. */
static void test_orders_match_keys(void **state)
{
	static struct sched_item all[2 * 8 * 12], mine[2 * 12];
	static const enum sched_kind ks[] = { SCHED_GPIPE, SCHED_1F1B };
	int depth[8];

	(void)state;
	for (size_t k = 0; k < 2; k++)
		for (int G = 1; G <= 8; G++)
			for (int m = 1; m <= 12; m++) {
				for (int s = 0; s < G; s++)
					depth[s] = s;
				sched_order(ks[k], G, depth, m, all);
				for (int r = 0; r < G; r++) {
					int n = sched_group_order(ks[k], G, 1, m, r, mine), j = 0;

					assert_int_equal(n, 2 * m);
					for (int i = 0; i < 2 * G * m; i++)
						if (all[i].stage == r) {
							assert_int_equal(all[i].mb, mine[j].mb);
							assert_int_equal(all[i].bwd, mine[j].bwd);
							j++;
						}
				}
			}
}

/* Table 1's configurations (t, p, GPUs, batch) with full recomputation fit
 * an A100's 80 GB without ZeRO, as the paper ran them; without
 * recomputation the three largest cannot, with any micro-batch, chunks
 * or ZeRO-1 (145.6B then fits with ZeRO-1; ZeRO-3 fits 310.1B too). */
static void test_table1_memory(void **state)
{
	static const struct { const char *m; int t, p, gpus, batch; } rows[] = {
		{ "gpt_1.7b", 1, 1, 32, 512 },      { "gpt_3.6b", 2, 1, 64, 512 },
		{ "gpt_7.5b", 4, 1, 128, 512 },     { "gpt_18.4b", 8, 1, 256, 1024 },
		{ "gpt_39.1b", 8, 2, 512, 1536 },   { "gpt_76.1b", 8, 4, 1024, 1792 },
		{ "gpt_145.6b", 8, 8, 1536, 2304 }, { "gpt_310.1b", 8, 16, 1920, 2160 },
		{ "gpt_529.6b", 8, 35, 2520, 2520 }, { "gpt_1t", 8, 64, 3072, 3072 },
	};

	(void)state;
	for (size_t k = 0; k < sizeof rows / sizeof *rows; k++) {
		char cl[32], b[32], opts[128];
		struct instance x;
		struct plan p;

		snprintf(cl, sizeof cl, "selene:%d", rows[k].gpus / 8);
		snprintf(b, sizeof b, "%d", rows[k].batch);
		for (int none = 0; none < 2; none++) {
			int st;

			snprintf(opts, sizeof opts, "tensor=%d,pipeline=%d,recompute=%s,zero=%d",
				 rows[k].t, rows[k].p, none ? "none" : "full", none);
			st = megatron(rows[k].m, cl, b, opts, &x, &p);
			if (!none) {
				if (st)
					fail_msg("%s %s: %s", rows[k].m, opts, ap_last_error());
				assert_int_equal(p.pred_fits, 1);
				assert_true(fabs(p.est_ms - p.pred_iter_ms) <= 1e-9 * p.pred_iter_ms);
			} else if (k >= 7) {
				assert_int_equal(st, AP_EINPUT);
				assert_non_null(strstr(ap_last_error(), "fits their memory"));
			}
			plan_release(&p);
			instance_release(&x);
		}
	}
}

static double iter_ms(const char *model, const char *cluster, const char *batch, const char *opts,
		      int64_t *peak)
{
	struct instance x;
	struct plan p;
	double ms;

	if (megatron(model, cluster, batch, opts, &x, &p))
		fail_msg("%s %s: %s", model, opts, ap_last_error());
	ms = p.pred_iter_ms;
	*peak = p.pred_peak_mem_bytes;
	plan_release(&p);
	instance_release(&x);
	return ms;
}

/* The paper's section 2.2: at a small batch (16 micro-batches of one
 * sequence on each of 8 pipeline groups) interleaving two chunks a group
 * cuts the bubble; 10% or more, as its figure 12 measures.  ZB-H1 beats
 * 1F1B by 10% or more at the same peak memory (Qi et al., table 3: up to
 * 23%). */
static void test_schedules(void **state)
{
	int64_t m1, m2;
	double plain, inter, zb;

	(void)state;
	plain = iter_ms("gpt_39.1b", "selene:64", "128",
			"tensor=8,pipeline=8,microbatch=1,recompute=full,schedule=1f1b", &m1);
	inter = iter_ms("gpt_39.1b", "selene:64", "128",
			"tensor=8,pipeline=8,microbatch=1,recompute=full,chunks=2,schedule=interleaved-1f1b",
			&m2);
	print_message("1f1b %.1f ms, interleaved %.1f ms\n", plain, inter);
	assert_true(inter < 0.9 * plain);
	plain = iter_ms("gpt_1.7b", "selene:1", "16",
			"tensor=1,pipeline=8,microbatch=1,recompute=none,schedule=1f1b", &m1);
	zb = iter_ms("gpt_1.7b", "selene:1", "16",
		     "tensor=1,pipeline=8,microbatch=1,recompute=none,schedule=zb-h1", &m2);
	print_message("1f1b %.1f ms, zb-h1 %.1f ms\n", plain, zb);
	assert_true(zb < 0.9 * plain);
	assert_true(m2 <= m1);
}

/* The planner's own choice is no slower than the paper's configuration
 * (it searches a superset), and its plan survives JSON: training, tensor
 * degrees and schedule as written, the same prediction from `autopar sim`. */
static void test_choice_and_json(void **state)
{
	struct instance x;
	struct plan p, q;
	int64_t peak;
	double paper = iter_ms("gpt_18.4b", "selene:32", "1024", "tensor=8,pipeline=1,recompute=full",
			       &peak);
	char path[600], out[4096], args[1024];
	static char timeline[1 << 22];

	(void)state;
	assert_int_equal(megatron("gpt_18.4b", "selene:32", "1024", "", &x, &p), AP_OK);
	assert_true(p.pred_iter_ms <= paper * (1 + 1e-9));
	snprintf(path, sizeof path, "%s/m.json", tmp_dir());
	assert_int_equal(plan_write(&p, &x.g, path), AP_OK);
	plan_init(&q);
	assert_int_equal(plan_read(path, &x.g, &q), AP_OK);
	assert_int_equal(q.precision, PREC_MIXED);
	assert_int_equal(q.zero, p.zero);
	assert_int_equal(q.sched, p.sched);
	assert_int_equal(q.has_optimizer, 1);
	for (int i = 0; i < x.g.nops; i++) {
		assert_int_equal(plan_op_tensor(&q, i), plan_op_tensor(&p, i));
		assert_int_equal(q.ops[i].recompute, p.ops[i].recompute);
	}
	/* check and sim find the model and cluster the plan names */
	snprintf(args, sizeof args, "check '%s'", path);
	assert_int_equal(test_autopar(args, 1, out, sizeof out), 0);
	assert_non_null(strstr(out, ": ok"));
	snprintf(args, sizeof args, "sim '%s' --timeline '%s/t.tsv'", path, tmp_dir());
	assert_int_equal(test_autopar(args, 1, out, sizeof out), 0);
	snprintf(path, sizeof path, "%s/t.tsv", tmp_dir());
	test_read_file(path, timeline, sizeof timeline);
	assert_non_null(strstr(timeline, "\tfwd\t"));
	assert_non_null(strstr(timeline, "\tupdate\t"));
	plan_release(&q);
	plan_release(&p);
	instance_release(&x);
}

/* One plan simulated again with the training changed: ZeRO-1 keeps the
 * step's time (a reduce-scatter and an all-gather move what the all-
 * reduce moved; the step updates 1/d of the weights) and cuts the
 * optimizer state by d; ZeRO-3 cuts the weights too and costs a gather
 * and a scatter every micro-batch; sequence parallelism divides the
 * whole-tensor activations by t at the same communication volume, and
 * their compute too (Korthikanti et al. measure it a little faster). */
static void test_zero_and_sp(void **state)
{
	struct instance x;
	struct plan p;
	struct sim s;
	struct sim_result base, z1, z3, sp;

	(void)state;
	assert_int_equal(megatron("gpt_18.4b", "selene:8", "64",
				  "tensor=8,pipeline=1,microbatch=1,recompute=selective", &x, &p),
			 AP_OK);
	assert_int_equal(sim_init(&s, &x.g, &x.p, &x.c), AP_OK);
	p.zero = 0;
	assert_int_equal(sim_run(&s, &p, NULL, &base), AP_OK);
	p.zero = 1;
	assert_int_equal(sim_run(&s, &p, NULL, &z1), AP_OK);
	p.zero = 3;
	assert_int_equal(sim_run(&s, &p, NULL, &z3), AP_OK);
	p.zero = 0;
	p.seq_parallel = 1;
	assert_int_equal(sim_run(&s, &p, NULL, &sp), AP_OK);
	print_message("peak GB: %.2f, zero-1 %.2f, zero-3 %.2f, sp %.2f; ms: %.1f %.1f %.1f %.1f\n",
		      base.peak_mem_bytes / 1e9, z1.peak_mem_bytes / 1e9, z3.peak_mem_bytes / 1e9,
		      sp.peak_mem_bytes / 1e9, 1e3 * base.iter_s, 1e3 * z1.iter_s, 1e3 * z3.iter_s,
		      1e3 * sp.iter_s);
	assert_true(z1.peak_mem_bytes < base.peak_mem_bytes);
	assert_true(z3.peak_mem_bytes < z1.peak_mem_bytes);
	assert_true(sp.peak_mem_bytes < base.peak_mem_bytes);
	assert_true(z1.iter_s <= base.iter_s * (1 + 1e-9));
	assert_true(z3.iter_s > z1.iter_s);
	assert_true(sp.iter_s <= base.iter_s * (1 + 1e-9));
	sim_release(&s);
	plan_release(&p);
	instance_release(&x);
}

/* The runtime refuses what it does not execute yet, before any work. */
static void test_runtime_refuses(void **state)
{
	char args[1024], out[4096];

	(void)state;
	snprintf(args, sizeof args, "plan -m gpt_tiny -c cpu-1x2 -P megatron -o '%s/t.json'",
		 tmp_dir());
	assert_int_equal(test_autopar(args, 1, out, sizeof out), 0);
	snprintf(args, sizeof args, "run '%s/t.json' --steps 1", tmp_dir());
	assert_int_equal(test_autopar(args, 1, out, sizeof out), 2);
	assert_non_null(strstr(out, "not executable by the runtime yet"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_korthikanti),
		cmocka_unit_test(test_param_bytes),
		cmocka_unit_test(test_orders),
		cmocka_unit_test(test_orders_match_keys),
		cmocka_unit_test(test_table1_memory),
		cmocka_unit_test(test_schedules),
		cmocka_unit_test(test_choice_and_json),
		cmocka_unit_test(test_zero_and_sp),
		cmocka_unit_test(test_runtime_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
