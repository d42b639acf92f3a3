/*
 * Tests of the cluster and device-spec modules: the shipped presets and
 * device rows carry the papers' and datasheets' numbers, the topology
 * helpers classify links right, the unit parsers accept what cluster.h
 * promises and reject the rest, and every malformed file or spec fails
 * with AP_EINPUT and a message that points at the culprit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/cluster.h"
#include "util/datadir.h"
#include "hw/device.h"
#include "util/err.h"

#define GiB (1024LL * 1024 * 1024)

static char clusters_csv[4096], devices_csv[4096];

static int setup(void **state)
{
	(void)state;
	ap_err_quiet(1);
	datapath(clusters_csv, sizeof clusters_csv, "profiles/clusters.csv");
	datapath(devices_csv, sizeof devices_csv, "profiles/devices.csv");
	return 0;
}

/* --- scratch directory for malformed files --------------------------------- */

static char tmpdir[4096];

static int tmp_setup(void **state)
{
	const char *base = getenv("TMPDIR");

	setup(state);
	snprintf(tmpdir, sizeof tmpdir, "%s/autopar-test-cluster-XXXXXX",
		 base && *base ? base : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static int tmp_teardown(void **state)
{
	char p[4200];

	(void)state;
	tmp_path(p, sizeof p, "devices.csv");
	remove(p);
	tmp_path(p, sizeof p, "clusters.csv");
	remove(p);
	rmdir(tmpdir);
	return 0;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* Copies the shipped device rows next to the scratch clusters.csv. */
static void write_shipped_devices(void)
{
	struct device_spec *d;
	char p[4200];
	FILE *f;
	int n;

	assert_int_equal(devices_load(devices_csv, &d, &n), AP_OK);
	tmp_path(p, sizeof p, "devices.csv");
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(devices_write(f, d, n), AP_OK);
	assert_int_equal(fclose(f), 0);
	free(d);
}

/* --- shipped data ------------------------------------------------------------ */

struct want_preset {
	const char *name;
	int nodes, per_node;
	const char *device, *profile;
	double intra_bw, inter_bw;
};

static const struct want_preset presets[] = {
	{ "pipedream-a", 4, 4, "v100", "v100-analytic", 12e9, 1.25e9 },
	{ "pipedream-b", 2, 8, "v100", "v100-analytic", 25e9, 3.125e9 },
	{ "flexflow-p100", 4, 4, "p100", "p100-analytic", 20e9, 12.5e9 },
	{ "flexflow-k80", 16, 4, "k80", "k80-analytic", 8e9, 7e9 },
	{ "summit-2x4", 2, 4, "v100", "v100-analytic", 50e9, 25e9 },
	{ "summit-4x4", 4, 4, "v100", "v100-analytic", 50e9, 25e9 },
	{ "summit-8x4", 8, 4, "v100", "v100-analytic", 50e9, 25e9 },
	{ "h100-1x8", 1, 8, "h100", "h100-analytic", 450e9, 400e9 },
	{ "h100-4x8", 4, 8, "h100", "h100-analytic", 450e9, 400e9 },
	{ "h200-1x8", 1, 8, "h200", "h200", 450e9, 400e9 },
	{ "cpu-1x2", 1, 2, "cpu", "cpu", 2.3e9, 2.3e9 },
	{ "cpu-1x4", 1, 4, "cpu", "cpu", 2.3e9, 2.3e9 },
};
#define NPRESETS (sizeof presets / sizeof presets[0])

static void test_presets_load(void **state)
{
	struct cluster *c;
	int n;

	(void)state;
	assert_int_equal(cluster_load_presets(clusters_csv, &c, &n), AP_OK);
	assert_true(n >= (int)NPRESETS);
	for (size_t i = 0; i < NPRESETS; i++) {
		const struct want_preset *w = &presets[i];
		const struct cluster *found = NULL;

		for (int j = 0; j < n; j++)
			if (strcmp(c[j].name, w->name) == 0)
				found = &c[j];
		if (!found)
			fail_msg("preset '%s' missing", w->name);
		assert_int_equal(found->nodes, w->nodes);
		assert_int_equal(found->per_node, w->per_node);
		assert_int_equal(cluster_ndevices(found), w->nodes * w->per_node);
		assert_string_equal(found->device, w->device);
		assert_string_equal(found->profile, w->profile);
		/* "2.3GB/s" parses to 2.3 x 1e9, a rounding away from 2.3e9 */
		assert_true(fabs(found->intra.bw_bytes_per_s - w->intra_bw) <= 1e-12 * w->intra_bw);
		assert_true(fabs(found->inter.bw_bytes_per_s - w->inter_bw) <= 1e-12 * w->inter_bw);
		/* latencies are microseconds, not seconds or nanoseconds */
		assert_true(found->intra.latency_s >= 1e-7 && found->intra.latency_s <= 1e-4);
		assert_true(found->inter.latency_s >= 1e-7 && found->inter.latency_s <= 1e-4);
		assert_true(strlen(found->description) > 0);
		assert_true(found->mem_bytes > 0);
	}
	free(c);
}

static void test_resolve_preset(void **state)
{
	struct cluster c;

	(void)state;
	assert_int_equal(cluster_resolve("pipedream-a", clusters_csv, &c), AP_OK);
	assert_string_equal(c.name, "pipedream-a");
	assert_int_equal(c.nodes, 4);
	assert_int_equal(c.per_node, 4);
	assert_true(c.inter.bw_bytes_per_s == 1.25e9);
	assert_true(c.intra.latency_s == 5e-6);
	/* no mem column in the presets: the device's capacity */
	assert_int_equal(c.mem_bytes, 16 * GiB);

	assert_int_equal(cluster_resolve("h100-4x8", NULL, &c), AP_OK);
	assert_int_equal(cluster_ndevices(&c), 32);
	assert_int_equal(c.mem_bytes, 80 * GiB);
	assert_true(c.intra.bw_bytes_per_s == 450e9);

	/* Selene as Megatron-LM (SC 2021) ran on it: DGX A100 80 GB nodes,
	 * NVSwitch inside, 8 x 200 Gb/s HDR per node; PRESET:NODES is the
	 * preset on that many nodes, named as given (a plan records it) */
	assert_int_equal(cluster_resolve("selene", NULL, &c), AP_OK);
	assert_int_equal(cluster_ndevices(&c), 3072);
	assert_string_equal(c.device, "a100");
	assert_string_equal(c.profile, "a100-analytic");
	assert_int_equal(c.mem_bytes, 80 * GiB);
	assert_true(c.intra.bw_bytes_per_s == 300e9);
	assert_true(c.inter.bw_bytes_per_s == 200e9);
	assert_int_equal(cluster_resolve("selene:64", NULL, &c), AP_OK);
	assert_string_equal(c.name, "selene:64");
	assert_int_equal(c.nodes, 64);
	assert_int_equal(c.per_node, 8);
	assert_true(c.inter.bw_bytes_per_s == 200e9);
	assert_int_equal(cluster_resolve("pipedream-a:2", clusters_csv, &c), AP_OK);
	assert_int_equal(cluster_ndevices(&c), 8);
	assert_true(c.inter.bw_bytes_per_s == 1.25e9);
}

static void test_devices_shipped(void **state)
{
	struct device_spec d;

	(void)state;
	assert_int_equal(device_find(devices_csv, "v100", &d), AP_OK);
	assert_true(d.fp32_flops_per_s == 15.7e12);
	assert_true(d.tensor_flops_per_s == 125e12);
	assert_true(d.mem_bw_bytes_per_s == 900e9);
	assert_int_equal(d.mem_bytes, 16 * GiB);
	assert_true(d.launch_us > 0);

	assert_int_equal(device_find(devices_csv, "k80", &d), AP_OK);
	assert_true(d.tensor_flops_per_s == d.fp32_flops_per_s);
	assert_int_equal(d.mem_bytes, 12 * GiB);

	assert_int_equal(device_find(devices_csv, "h200", &d), AP_OK);
	assert_int_equal(d.mem_bytes, 141000000000LL);
	assert_true(d.mem_bw_bytes_per_s == 4800e9);

	assert_int_equal(device_find(devices_csv, "a100", &d), AP_OK);
	assert_true(d.tensor_flops_per_s == 312e12);
	assert_int_equal(device_find(devices_csv, "h100", &d), AP_OK);
	assert_true(d.tensor_flops_per_s == 989e12);
	assert_int_equal(device_find(devices_csv, "p100", &d), AP_OK);
	assert_true(d.tensor_flops_per_s == 21.2e12);
	assert_int_equal(device_find(devices_csv, "cpu", &d), AP_OK);
	assert_true(d.fp32_flops_per_s < 1e12);

	assert_int_equal(device_find(devices_csv, "v200", &d), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "'v200'"));
}

/* --- topology ------------------------------------------------------------ */

static void test_links(void **state)
{
	struct cluster c;

	(void)state;
	assert_int_equal(cluster_resolve("4x4:v100", clusters_csv, &c), AP_OK);
	assert_int_equal(cluster_ndevices(&c), 16);
	assert_int_equal(cluster_node_of(&c, 0), 0);
	assert_int_equal(cluster_node_of(&c, 3), 0);
	assert_int_equal(cluster_node_of(&c, 4), 1);
	assert_int_equal(cluster_node_of(&c, 15), 3);
	assert_int_equal(cluster_node_of(&c, 16), -1);
	assert_int_equal(cluster_node_of(&c, -1), -1);

	assert_int_equal(cluster_link_class(&c, 5, 5), LINK_SELF);
	assert_int_equal(cluster_link_class(&c, 0, 3), LINK_INTRA);
	assert_int_equal(cluster_link_class(&c, 3, 0), LINK_INTRA);
	assert_int_equal(cluster_link_class(&c, 3, 4), LINK_INTER);
	assert_int_equal(cluster_link_class(&c, 15, 0), LINK_INTER);

	assert_ptr_equal(cluster_link(&c, 0, 3), &c.intra);
	assert_ptr_equal(cluster_link(&c, 3, 4), &c.inter);
	assert_true(cluster_link(&c, 7, 7)->latency_s == 0);
	assert_true(1e9 / cluster_link(&c, 7, 7)->bw_bytes_per_s == 0);
}

/* --- unit parsers ---------------------------------------------------------- */

static void test_parse_bandwidth(void **state)
{
	static const struct {
		const char *s;
		double v;
	} good[] = {
		{ "10Gb/s", 1.25e9 },  { "450GB/s", 450e9 }, { "12GB/s", 12e9 },
		{ "1000B/s", 1e3 },    { "2.5MB/s", 2.5e6 }, { "1TB/s", 1e12 },
		{ "100Mb/s", 12.5e6 }, { "8Kb/s", 1e3 },     { "1Tb/s", 125e9 },
		{ "12 GB/s", 12e9 },   { "1e3GB/s", 1e12 },  { ".5GB/s", 0.5e9 },
		{ "3kB/s", 3e3 },
	};
	static const char *const bad[] = {
		"", "12", "GB/s", "12GX/s", "-5GB/s", "+5GB/s", "0GB/s",
		"0.0Gb/s", "12GB/s junk", "12GB/sx", " 12GB/s", "12GB/s ",
		"inf GB/s", "nanGB/s", "0x10GB/s", "1e999GB/s", "12gb/s",
		"12Gbps", "1.2.3GB/s", "12 ", "e5GB/s",
	};
	static const char *const slow[] = { "1B/s", "999B/s", "7Kb/s", "1e-300B/s", "0.5kB/s" };
	double v;

	(void)state;
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		v = -1;
		if (parse_bandwidth(good[i].s, &v) != 0)
			fail_msg("'%s' rejected", good[i].s);
		if (v != good[i].v)
			fail_msg("'%s' read as %g, expected %g", good[i].s, v, good[i].v);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (parse_bandwidth(bad[i], &v) != -1)
			fail_msg("bandwidth '%s' accepted", bad[i]);
	/* well formed, but slower than any link: under 1 kB/s */
	for (size_t i = 0; i < sizeof slow / sizeof slow[0]; i++)
		if (parse_bandwidth(slow[i], &v) != -2)
			fail_msg("bandwidth '%s' not refused as out of range", slow[i]);
}

static void test_parse_duration(void **state)
{
	static const struct {
		const char *s;
		double v;
	} good[] = {
		{ "5us", 5e-6 }, { "2ms", 2e-3 }, { "1s", 1 }, { "1000ms", 1 },
		{ "100ns", 100e-9 }, { "1.5us", 1.5e-6 }, { "20 us", 20e-6 },
	};
	static const char *const bad[] = {
		"", "5", "us", "5 sec", "-1us", "0us", "5usx", "5us ", "5 u s",
		"5mus", "nan s",
	};
	static const char *const slow[] = { "1.5s", "1001ms", "1e300s", "2000000us" };
	double v;

	(void)state;
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		v = -1;
		if (parse_duration(good[i].s, &v) != 0)
			fail_msg("'%s' rejected", good[i].s);
		if (v != good[i].v)
			fail_msg("'%s' read as %g, expected %g", good[i].s, v, good[i].v);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (parse_duration(bad[i], &v) != -1)
			fail_msg("duration '%s' accepted", bad[i]);
	/* well formed, but longer than any link's latency: over 1 s */
	for (size_t i = 0; i < sizeof slow / sizeof slow[0]; i++)
		if (parse_duration(slow[i], &v) != -2)
			fail_msg("latency '%s' not refused as out of range", slow[i]);
}

static void test_parse_bytes(void **state)
{
	static const struct {
		const char *s;
		int64_t v;
	} good[] = {
		{ "16GiB", 16 * GiB }, { "141GB", 141000000000LL },
		{ "1.5KB", 1500 },     { "512B", 512 },
		{ "2MiB", 2 << 20 },   { "0.5GiB", GiB / 2 },
		{ "3KiB", 3072 },      { "7MB", 7000000 },
		{ "4194304TiB", INT64_C(1) << 62 },
	};
	/* well formed, but more than 2^62 bytes (util/checked.h) */
	static const char *const huge[] = { "4194305TiB", "9223372036854775807B", "99999999999GiB" };
	static const char *const bad[] = {
		"", "16", "1.5B", "-1GiB", "0B", "16GiBs", "16 gib",
		"GiB", "16GiB/s",
	};
	int64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		v = -1;
		if (parse_bytes(good[i].s, &v) != 0)
			fail_msg("'%s' rejected", good[i].s);
		if (v != good[i].v)
			fail_msg("'%s' read as %lld, expected %lld", good[i].s,
				 (long long)v, (long long)good[i].v);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (parse_bytes(bad[i], &v) != -1)
			fail_msg("size '%s' accepted", bad[i]);
	for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++)
		if (parse_bytes(huge[i], &v) != -2)
			fail_msg("size '%s' not refused as out of range", huge[i]);
}

/* --- inline specs --------------------------------------------------------- */

static void test_inline_spec(void **state)
{
	struct cluster c;

	(void)state;
	assert_int_equal(cluster_resolve("4x4:v100,intra=12GB/s,inter=10Gb/s",
					 clusters_csv, &c), AP_OK);
	assert_string_equal(c.name, "4x4:v100,intra=12GB/s,inter=10Gb/s");
	assert_int_equal(c.nodes, 4);
	assert_int_equal(c.per_node, 4);
	assert_string_equal(c.device, "v100");
	assert_string_equal(c.profile, "v100-analytic");
	assert_true(c.intra.bw_bytes_per_s == 12e9);
	assert_true(c.inter.bw_bytes_per_s == 1.25e9);
	assert_true(c.intra.latency_s == 5e-6);  /* defaults */
	assert_true(c.inter.latency_s == 20e-6);
	assert_int_equal(c.mem_bytes, 16 * GiB); /* from the device spec */

	assert_int_equal(cluster_resolve("2x3:a100,intra_lat=1us,inter_lat=3ms,mem=40GiB",
					 clusters_csv, &c), AP_OK);
	assert_int_equal(cluster_ndevices(&c), 6);
	assert_string_equal(c.device, "a100");
	assert_int_equal(c.mem_bytes, 40 * GiB);
	assert_true(c.intra.latency_s == 1e-6);
	assert_true(c.inter.latency_s == 3e-3);
	assert_true(c.intra.bw_bytes_per_s == 12e9);  /* defaults */
	assert_true(c.inter.bw_bytes_per_s == 1.25e9);

	/* every link set: longer than the 63 characters names once had */
	assert_int_equal(cluster_resolve("4x4:v100,intra=450GB/s,inter=400GB/s,intra_lat=2us,inter_lat=2us",
					 clusters_csv, &c), AP_OK);
	assert_string_equal(c.name, "4x4:v100,intra=450GB/s,inter=400GB/s,intra_lat=2us,inter_lat=2us");
	assert_true(c.intra.bw_bytes_per_s == 450e9);
	assert_true(c.inter.bw_bytes_per_s == 400e9);
	assert_true(c.intra.latency_s == 2e-6);
	assert_true(c.inter.latency_s == 2e-6);

	assert_int_equal(cluster_resolve("1x2:cpu", clusters_csv, &c), AP_OK);
	assert_string_equal(c.profile, "cpu");
	assert_int_equal(c.mem_bytes, 8 * GiB);
	assert_int_equal(cluster_link_class(&c, 0, 1), LINK_INTRA);
}

static void test_bad_specs(void **state)
{
	static const struct {
		const char *spec, *part;
	} bad[] = {
		{ "4x4", "NODESxPER_NODE:DEVICE" },
		{ "4x4:", "device ''" },
		{ "0x4:v100", "node count '0'" },
		{ "4x:v100", "devices per node ''" },
		{ "4y4:v100", "NODESxPER_NODE:DEVICE" },
		{ "-4x4:v100", "node count '-4'" },
		{ "4x4:v200", "unknown device 'v200'" },
		{ "4x4:v100,intra=12GX/s", "'12GX/s'" },
		{ "4x4:v100,inter=10", "inter bandwidth '10'" },
		{ "4x4:v100,bogus=1", "unknown option 'bogus'" },
		{ "4x4:v100,intra", "option 'intra' has no value" },
		{ "4x4:v100,intra=1GB/s,intra=2GB/s", "'intra' is given twice" },
		{ "4x4:v100,,inter=1GB/s", "empty option" },
		{ "4x4:v100,", "empty option" },
		{ "4x4:v100,mem=-1GiB", "mem '-1GiB'" },
		{ "4x4:v100,inter_lat=5", "inter_lat '5'" },
		{ "4x4:v100,intra_lat=0us", "intra_lat '0us'" },
		{ "2048x1024:v100", "more than" },
		/* a node of more devices than any, whose pairs of links would
		 * overflow the simulator's int (1 x 65536: 2^32 of them) */
		{ "1x65536:v100", "devices per node '65536'" },
		{ "4x1025:v100", "(at most 1024)" },
		{ "4x4:v100,intra=1e-300B/s", "less than 1kB/s" },
		{ "4x4:v100,inter=999B/s", "less than 1kB/s" },
		{ "4x4:v100,intra_lat=1e300s", "more than 1s" },
		{ "4x4:v100,mem=4194305TiB", "more than 2^62 bytes" },
		{ "2000000x2:v100", "node count '2000000'" },
		{ "pipedream-a:0", "node count '0'" },
		{ "pipedream-a:x", "PRESET:NODES" },
		{ "pipedream-a:", "node count ''" },
		{ "pipedream-a:600000", "more than" },
		{ "no-such-preset:4", "unknown cluster" },
		{ "4x4:v100,intra=450.000000000GB/s,inter=400.000000000GB/s,"
		  "intra_lat=2.000000000us,inter_lat=2.000000000us,mem=16.0000000000000000GiB",
		  "longer than" },
	};
	struct cluster c;

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = cluster_resolve(bad[i].spec, clusters_csv, &c);

		if (rc != AP_EINPUT)
			fail_msg("spec '%s' gave %d, expected AP_EINPUT", bad[i].spec, rc);
		if (!strstr(ap_last_error(), bad[i].spec))
			fail_msg("spec '%s': message '%s' does not name it",
				 bad[i].spec, ap_last_error());
		if (!strstr(ap_last_error(), bad[i].part))
			fail_msg("spec '%s': message '%s' lacks '%s'", bad[i].spec,
				 ap_last_error(), bad[i].part);
	}

	assert_int_equal(cluster_resolve("no-such-cluster", clusters_csv, &c), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "'no-such-cluster'"));
	assert_non_null(strstr(ap_last_error(), "autopar clusters"));
	assert_int_equal(cluster_resolve("", clusters_csv, &c), AP_EINPUT);
}

/* --- malformed files ------------------------------------------------------- */

#define CL_HEADER "name,nodes,devices_per_node,device,intra_bw,intra_latency,inter_bw,inter_latency,profile,description\n"
#define CL_GOOD "good,2,2,v100,12GB/s,5us,10Gb/s,20us,v100-analytic,fine\n"

/* A malformed row after a scaffold that loads on its own. */
struct bad_row {
	const char *text;  /* the file after the scaffold */
	int line;
	const char *part;  /* the message names this */
};

static int load_clusters(const char *path)
{
	struct cluster *c = NULL;
	int n, rc = cluster_load_presets(path, &c, &n);

	free(c);
	return rc;
}

static int load_devices(const char *path)
{
	struct device_spec *d = NULL;
	int n, rc = devices_load(path, &d, &n);

	free(d);
	return rc;
}

/* Each row, appended to the scaffold, must be refused with
 * "path:line: ...part...". */
static void expect_bad_rows(const char *path, const char *scaffold,
			    const struct bad_row *bad, size_t nbad,
			    int (*load)(const char *path))
{
	char text[1024], where[4300];

	for (size_t i = 0; i < nbad; i++) {
		int rc;

		snprintf(text, sizeof text, "%s%s", scaffold, bad[i].text);
		write_file(path, text);
		rc = load(path);
		if (rc != AP_EINPUT)
			fail_msg("case %zu gave %d, expected AP_EINPUT", i, rc);
		snprintf(where, sizeof where, "%s:%d: ", path, bad[i].line);
		if (!strstr(ap_last_error(), where) || !strstr(ap_last_error(), bad[i].part))
			fail_msg("case %zu: message '%s' lacks '%s' or '%s'", i,
				 ap_last_error(), where, bad[i].part);
	}
}

static void test_bad_cluster_rows(void **state)
{
	static const struct bad_row bad[] = {
		{ "x,4,4,v100,12GB/s,5us,10Gb/s,20us,v100-analytic\n", 3, "9 fields, expected 10" },
		{ "x,4,4,v100,12GB/s,5us,10Gb/s,20us,v100-analytic,d,extra\n", 3, "11 fields" },
		{ "x,0,4,v100,12GB/s,5us,10Gb/s,20us,v100-analytic,d\n", 3, "nodes '0'" },
		{ "x,four,4,v100,12GB/s,5us,10Gb/s,20us,v100-analytic,d\n", 3, "nodes 'four'" },
		{ "x,4,2.5,v100,12GB/s,5us,10Gb/s,20us,v100-analytic,d\n", 3, "devices_per_node '2.5'" },
		{ "x,4,4,v200,12GB/s,5us,10Gb/s,20us,v100-analytic,d\n", 3, "device 'v200'" },
		{ "x,4,4,v100,12GX/s,5us,10Gb/s,20us,v100-analytic,d\n", 3,
		  "bandwidth '12GX/s' is not a positive bandwidth with a unit (expected e.g. 12GB/s or 10Gb/s)" },
		{ "x,4,4,v100,12GB/s,-5us,10Gb/s,20us,v100-analytic,d\n", 3, "intra latency '-5us'" },
		{ "x,4,4,v100,12GB/s,5us,10Gb/s,20,v100-analytic,d\n", 3, "inter latency '20'" },
		{ "x,4,4,v100,12GB/s,5us,0Gb/s,20us,v100-analytic,d\n", 3, "inter bandwidth '0Gb/s'" },
		{ "x,4,4,v100,12GB/s,5us,10Gb/s,20us,,d\n", 3, "profile ''" },
		{ "x,1,2048,v100,12GB/s,5us,10Gb/s,20us,v100-analytic,d\n", 3,
		  "devices_per_node '2048' is not a positive whole number (at most 1024)" },
		{ "x,4,4,v100,1e-308B/s,5us,10Gb/s,20us,v100-analytic,d\n", 3,
		  "intra bandwidth '1e-308B/s' is less than 1kB/s" },
		{ "x,4,4,v100,12GB/s,5us,10Gb/s,2s,v100-analytic,d\n", 3,
		  "inter latency '2s' is more than 1s" },
		{ ",4,4,v100,12GB/s,5us,10Gb/s,20us,v100-analytic,d\n", 3, "cluster name ''" },
		{ "4x4,4,4,v100,12GB/s,5us,10Gb/s,20us,v100-analytic,d\n", 3, "cluster name '4x4'" },
		{ CL_GOOD, 3, "'good' is listed twice" },
		{ "\n\nx,4,4,v100,12GB/s,5us,10Gb/s,20us,v100-analytic,\"open\n", 5, "unterminated" },
		{ "x,4,4,v100,12GB/s,5us,10Gb/s,20us,v100-analytic,\"a\"b\n", 3, "malformed csv" },
	};
	char path[4200], devpath[4200], text[1024];
	struct cluster *c, one;
	int n;

	(void)state;
	write_shipped_devices();
	tmp_path(path, sizeof path, "clusters.csv");

	/* the scaffold itself loads, so each failure below is its row's */
	write_file(path, CL_HEADER CL_GOOD);
	assert_int_equal(cluster_load_presets(path, &c, &n), AP_OK);
	assert_int_equal(n, 1);
	assert_string_equal(c[0].name, "good");
	free(c);

	expect_bad_rows(path, CL_HEADER CL_GOOD, bad, sizeof bad / sizeof bad[0], load_clusters);

	/* header: a column renamed */
	write_file(path, "name,nodes,per_node,device,intra_bw,intra_latency,inter_bw,inter_latency,profile,description\n" CL_GOOD);
	assert_int_equal(cluster_load_presets(path, &c, &n), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), ":1: header 'name,nodes,per_node,"));
	/* and one left out */
	write_file(path, "name,nodes,devices_per_node,device,intra_bw,intra_latency,inter_bw,inter_latency,profile\n" CL_GOOD);
	assert_int_equal(cluster_load_presets(path, &c, &n), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), ":1: header"));

	snprintf(text, sizeof text, CL_HEADER CL_GOOD
		 "x,4,4,v100,12GB/s,5us,10Gb/s,20us,v100-analytic,%0200d\n", 0);
	write_file(path, text);
	assert_int_equal(cluster_load_presets(path, &c, &n), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), ":3: description of cluster 'x' is longer"));

	/* an empty file, and a missing devices.csv beside the presets */
	write_file(path, "");
	assert_int_equal(cluster_load_presets(path, &c, &n), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "empty file"));
	tmp_path(devpath, sizeof devpath, "devices.csv");
	assert_int_equal(remove(devpath), 0);
	write_file(path, CL_HEADER CL_GOOD);
	assert_int_equal(cluster_load_presets(path, &c, &n), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "devices.csv: cannot open"));
	assert_int_equal(cluster_resolve("2x2:v100", path, &one), AP_EINPUT);
}

#define DEV_HEADER "name,fp32_tflops,tensor_tflops,mem_bw_gbytes_per_s,mem_bytes,launch_us,description\n"
#define DEV_GOOD "v100,15.7,125,900,17179869184,5,ok\n"

static void test_bad_device_rows(void **state)
{
	static const struct bad_row bad[] = {
		{ "x,1,1,1,1,1\n", 3, "6 fields, expected 7" },
		{ "x,-1,1,1,1,1,d\n", 3, "fp32_tflops '-1'" },
		{ "x,1,0,1,1,1,d\n", 3, "tensor_tflops '0'" },
		{ "x,1,1,fast,1,1,d\n", 3, "mem_bw_gbytes_per_s 'fast'" },
		{ "x,1,1,1,16GiB,1,d\n", 3, "mem_bytes '16GiB'" },
		{ "x,1,1,1,1.5,1,d\n", 3, "mem_bytes '1.5'" },
		{ "x,1,1,1,0,1,d\n", 3, "mem_bytes '0'" },
		{ "x,1,1,1,-8,1,d\n", 3, "mem_bytes '-8'" },
		{ "x,1,1,1,1,inf,d\n", 3, "launch_us 'inf'" },
		{ "x,1,1,1,1,1e999,d\n", 3, "launch_us '1e999'" },
		{ "x,1,1,1,99999999999999999999,1,d\n", 3, "mem_bytes" },
		{ "v1:00,1,1,1,1,1,d\n", 3, "device name 'v1:00'" },
		{ DEV_GOOD, 3, "'v100' is listed twice" },
	};
	char path[4200], text[1024];
	struct device_spec *d;
	int n;

	(void)state;
	tmp_path(path, sizeof path, "devices.csv");
	write_file(path, DEV_HEADER DEV_GOOD);
	assert_int_equal(devices_load(path, &d, &n), AP_OK);
	assert_int_equal(n, 1);
	free(d);

	expect_bad_rows(path, DEV_HEADER DEV_GOOD, bad, sizeof bad / sizeof bad[0], load_devices);

	write_file(path, "name,fp32,tensor_tflops,mem_bw_gbytes_per_s,mem_bytes,launch_us,description\n" DEV_GOOD);
	assert_int_equal(devices_load(path, &d, &n), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), ":1: header"));
	write_file(path, "name,fp32_tflops,tensor_tflops,mem_bw_gbytes_per_s,mem_bytes,launch_us\n" DEV_GOOD);
	assert_int_equal(devices_load(path, &d, &n), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), ":1: header"));
	write_file(path, DEV_HEADER);
	assert_int_equal(devices_load(path, &d, &n), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "no device rows"));

	/* a description that does not fit is refused, not cut */
	snprintf(text, sizeof text, DEV_HEADER DEV_GOOD "x,1,1,1,1,1,%0200d\n", 0);
	write_file(path, text);
	assert_int_equal(devices_load(path, &d, &n), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), ":3: description of device 'x' is longer"));
}

/* --- round trip ------------------------------------------------------------- */

static void assert_same_devices(const struct device_spec *a,
				const struct device_spec *b, int n)
{
	for (int i = 0; i < n; i++) {
		assert_string_equal(a[i].name, b[i].name);
		assert_true(a[i].fp32_flops_per_s == b[i].fp32_flops_per_s);
		assert_true(a[i].tensor_flops_per_s == b[i].tensor_flops_per_s);
		assert_true(a[i].mem_bw_bytes_per_s == b[i].mem_bw_bytes_per_s);
		assert_int_equal(a[i].mem_bytes, b[i].mem_bytes);
		assert_true(a[i].launch_us == b[i].launch_us);
		assert_string_equal(a[i].description, b[i].description);
	}
}

static void test_devices_roundtrip(void **state)
{
	struct device_spec *a, *b, odd[2];
	char path[4200];
	FILE *f;
	int na, nb;

	(void)state;
	assert_int_equal(devices_load(devices_csv, &a, &na), AP_OK);
	assert_true(na >= 7);
	tmp_path(path, sizeof path, "devices.csv");
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(devices_write(f, a, na), AP_OK);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(devices_load(path, &b, &nb), AP_OK);
	assert_int_equal(nb, na);
	assert_same_devices(a, b, na);
	free(a);
	free(b);

	/* values no datasheet has, and text that needs quoting */
	memset(odd, 0, sizeof odd);
	strcpy(odd[0].name, "odd.gpu_1");
	/* products, as a loaded spec holds: the file's unit is TFLOPS */
	odd[0].fp32_flops_per_s = (1.0 / 3.0) * 1e12;
	odd[0].tensor_flops_per_s = 123456.789 * 1e12;
	odd[0].mem_bw_bytes_per_s = 0.1 * 1e9;
	odd[0].mem_bytes = 1;
	odd[0].launch_us = 1e-3;
	strcpy(odd[0].description, "has, commas and \"quotes\"");
	strcpy(odd[1].name, "plain");
	odd[1].fp32_flops_per_s = odd[1].tensor_flops_per_s = 7e12;
	odd[1].mem_bw_bytes_per_s = 7e9;
	odd[1].mem_bytes = INT64_MAX;
	odd[1].launch_us = 7;
	strcpy(odd[1].description, " padded ");
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(devices_write(f, odd, 2), AP_OK);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(devices_load(path, &b, &nb), AP_OK);
	assert_int_equal(nb, 2);
	assert_same_devices(odd, b, 2);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_presets_load, setup),
		cmocka_unit_test_setup(test_resolve_preset, setup),
		cmocka_unit_test_setup(test_devices_shipped, setup),
		cmocka_unit_test_setup(test_links, setup),
		cmocka_unit_test(test_parse_bandwidth),
		cmocka_unit_test(test_parse_duration),
		cmocka_unit_test(test_parse_bytes),
		cmocka_unit_test_setup(test_inline_spec, setup),
		cmocka_unit_test_setup(test_bad_specs, setup),
		cmocka_unit_test_setup_teardown(test_bad_cluster_rows, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_bad_device_rows, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_devices_roundtrip, tmp_setup, tmp_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
