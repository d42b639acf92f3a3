/*
 * The shipped data hangs together: every cluster preset names a device of
 * devices.csv and a profile directory that loads and was made for that
 * device, and that profile answers every operator of the zoo models meant
 * for it from its own rows (no silent fallback for the shipped defaults).
 */
#include "testutil.h"

#include <math.h>

#include "hw/cluster.h"
#include "util/datadir.h"
#include "util/err.h"
#include "model/model_io.h"
#include "hw/profile.h"
#include "cost/cost.h"

static void test_presets_have_profiles(void **state)
{
	char csv[4096], dir[4096], rel[256];
	struct cluster *c;
	int n;

	(void)state;
	assert_int_equal(cluster_load_presets(datapath(csv, sizeof csv,
						       "profiles/clusters.csv"), &c, &n), AP_OK);
	assert_true(n >= 11);
	for (int i = 0; i < n; i++) {
		struct profile p;

		snprintf(rel, sizeof rel, "profiles/%s", c[i].profile);
		if (profile_load(datapath(dir, sizeof dir, rel), &p) != AP_OK)
			fail_msg("preset '%s': %s", c[i].name, ap_last_error());
		if (strcmp(p.dev.name, c[i].device))
			fail_msg("preset '%s' runs on '%s' but its profile is for '%s'",
				 c[i].name, c[i].device, p.dev.name);
		assert_true(c[i].mem_bytes > 0);
		profile_release(&p);
	}
	free(c);
}

/* An inline spec runs on its device's analytic profile (cluster.c), so
 * every GPU of devices.csv has one shipped: a spec such as 1x1:h200
 * plans instead of failing to open it. */
static void test_devices_have_profiles(void **state)
{
	struct device_spec *d;
	struct profile p;
	char csv[4096], dir[4096], rel[256];
	int n;

	(void)state;
	assert_int_equal(devices_load(datapath(csv, sizeof csv, "profiles/devices.csv"), &d, &n),
			 AP_OK);
	for (int i = 0; i < n; i++) {
		snprintf(rel, sizeof rel, "profiles/%s%s", d[i].name,
			 strcmp(d[i].name, "cpu") ? "-analytic" : "");
		if (profile_load(datapath(dir, sizeof dir, rel), &p) != AP_OK)
			fail_msg("device '%s': %s", d[i].name, ap_last_error());
		assert_string_equal(p.dev.name, d[i].name);
		profile_release(&p);
	}
	free(d);
}

/* Every op of every zoo model, unsplit and split in two along each
 * splittable dim, has a row in the V100 profile; the small models also in
 * the CPU one. */
static void check_covered(const char *prof, const char *const *models, size_t nm)
{
	char dir[4096], rel[256];
	struct profile p;

	snprintf(rel, sizeof rel, "profiles/%s", prof);
	assert_int_equal(profile_load(datapath(dir, sizeof dir, rel), &p), AP_OK);
	for (size_t m = 0; m < nm; m++) {
		struct graph g;
		struct cost_tally t = { { 0 } };

		assert_int_equal(model_load(models[m], 0, &g), AP_OK);
		for (int i = 0; i < g.nops; i++) {
			for (int d = -1; d < NDIMS; d++) {
				int deg[NDIMS] = { 1, 1, 1, 1, 1 };
				struct op_cost cost;

				if (d >= 0) {
					int k = shape_dim(&g.ops[i].out, (enum dim_kind)d);

					if (!(g.ops[i].split_mask & (1u << d)) || k < 0 ||
					    g.ops[i].out.size[k] % 2)
						continue;
					deg[d] = 2;
				}
				assert_int_equal(profile_lookup(&p, &g, i, deg, &cost), AP_OK);
				cost_tally_add(&t, cost.source);
				assert_true(cost.fwd_us >= 0 && cost.bwd_us >= 0);
			}
		}
		if (t.n[COST_SCALED] || t.n[COST_ROOFLINE])
			fail_msg("%s on %s: %lld scaled and %lld roofline lookups", models[m],
				 prof, (long long)t.n[COST_SCALED], (long long)t.n[COST_ROOFLINE]);
		graph_release(&g);
	}
	profile_release(&p);
}

static void test_profiles_cover_zoo(void **state)
{
	static const char *const zoo[] = {
		"alexnet", "vgg16", "resnet50", "resnet101", "inception_v3", "gnmt",
		"bert_large", "gpt2", "mmt", "dlrm", "candle_uno", "mlp", "cnn_small",
		"branchy_small", "transformer_tiny",
	};
	static const char *const small[] = { "mlp", "cnn_small", "branchy_small",
					     "transformer_tiny" };
	/* measured on an H100 (docs/gpu.md) */
	static const char *const gpu[] = { "mlp", "cnn_small", "transformer_tiny" };

	(void)state;
	check_covered("v100-analytic", zoo, sizeof zoo / sizeof zoo[0]);
	check_covered("cpu", small, sizeof small / sizeof small[0]);
	check_covered("h100", gpu, sizeof gpu / sizeof gpu[0]);
}

/* The simulator against the single-GPU steps measured on the H200 its
 * profile measures (profiles/h200/steps.csv, through bench/gpu-steps):
 * each row's verdict follows from its error and bound, and every model is
 * within its bound but transformer_tiny, whose profiled operators (timed
 * with a cold L2, one at a time) add up to more than its measured step
 * (docs/gpu.md says why that one is open).  Fixing it flips the last
 * assertion, which is then to go. */
static void test_h200_steps(void **state)
{
	char cmd[4096], out[8192], csv[600];
	int rows = 0;

	(void)state;
	snprintf(csv, sizeof csv, "%s/gpu_steps.csv", tmp_dir());
	snprintf(cmd, sizeof cmd, "BIN='%s' bench/gpu-steps '%s' >/dev/null 2>&1", test_bin(), csv);
	assert_int_equal(system(cmd), 0);
	test_read_file(csv, out, sizeof out);
	for (char *line = strtok(strchr(out, '\n') + 1, "\n"); line; line = strtok(NULL, "\n")) {
		char model[64], verdict[16];
		double meas, pred, err, bound;

		if (sscanf(line, "%63[^,],%*[^,],%*[^,],%*[^,],%lf,%lf,%lf,%lf,%15[^,]", model,
			   &meas, &pred, &err, &bound, verdict) != 6)
			fail_msg("gpu_steps.csv: cannot read '%s'", line);
		rows++;
		assert_true(meas > 0 && pred > 0);
		assert_true(fabs(err - 100 * (pred - meas) / meas) < 0.06);
		assert_string_equal(verdict, fabs(err) <= bound ? "within" : "outside");
		if (strcmp(model, "transformer_tiny"))
			assert_true(fabs(err) <= bound);
		else
			assert_string_equal(verdict, "outside");
	}
	assert_int_equal(rows, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_presets_have_profiles),
		cmocka_unit_test(test_devices_have_profiles),
		cmocka_unit_test(test_h200_steps),
		cmocka_unit_test(test_profiles_cover_zoo),
	};

	return cmocka_run_group_tests_name("data", tests, NULL, NULL);
}
