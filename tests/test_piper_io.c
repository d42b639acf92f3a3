/*
 * Piper's JSON input: the published ResNet input reads as the file has it
 * (counts and values checked against the file), imports as a model
 * through the normal loader, and gives its machine as `-c piper`; a table
 * of broken inputs each fails with AP_EINPUT and a message naming the
 * JSON field; and the commands exit 0 on the input and 2 on broken ones.
 */
#include "testutil.h"

#include "util/datadir.h"
#include "util/err.h"
#include "model/graph.h"
#include "model/model_io.h"
#include "model/piper_inst.h"
#include "model/piper_io.h"
#include "hw/piper_machine.h"

#define RESNET "profiles/piper/resnet.json"

/* Three layers in file order 12, 10, 11 (so not topological), edges
 * 10 -> 11 -> 12 and 10 -> 12; layer 11 has two degrees, given "2" first,
 * and two configurations for degree 1. */
static const char tiny[] =
	"{\"maxDevices\": 4, \"maxMemoryPerDevice\": 1e9, \"bandwidth\": 2.5e10,\n"
	" \"mbsInBatch\": 8,\n"
	" \"nodes\": [\n"
	"  {\"id\": 12, \"TMPCs\": {\"1\": [{\"id\": \"vanilla\", \"timePerSample\": 0.3,\n"
	"   \"parameterSize\": 0, \"memoryUsageA\": 30, \"memoryUsageB\": 0,\n"
	"   \"syncTimeFw\": {\"10\": 7, \"11\": 5}, \"syncTimeBw\": {}}]}},\n"
	"  {\"id\": 10, \"name\": \"in\", \"TMPCs\": {\"1\": [{\"id\": \"vanilla\",\n"
	"   \"timePerSample\": 0.1, \"parameterSize\": 0, \"memoryUsageA\": 10,\n"
	"   \"memoryUsageB\": 0, \"syncTimeFw\": {}, \"syncTimeBw\": {\"11\": 0, \"12\": 0}}]}},\n"
	"  {\"id\": 11, \"name\": \"mid\", \"TMPCs\": {\n"
	"   \"2\": [{\"id\": \"vanilla\", \"timePerSample\": 0.15, \"parameterSize\": 500,\n"
	"    \"memoryUsageA\": 20, \"memoryUsageB\": 1000, \"syncTimeFw\": {\"10\": 64},\n"
	"    \"syncTimeBw\": {\"12\": 32}}],\n"
	"   \"1\": [{\"id\": \"activation recomp\", \"timePerSample\": 0.25,\n"
	"    \"parameterSize\": 1000, \"memoryUsageA\": 4, \"memoryUsageB\": 2036,\n"
	"    \"syncTimeFw\": {\"10\": 0}, \"syncTimeBw\": {\"12\": 0}},\n"
	"    {\"id\": \"vanilla\", \"timePerSample\": 0.2, \"parameterSize\": 1000,\n"
	"    \"memoryUsageA\": 40, \"memoryUsageB\": 2000, \"syncTimeFw\": {\"10\": 0},\n"
	"    \"syncTimeBw\": {\"12\": 0}}]}}\n"
	" ],\n"
	" \"edges\": [{\"sourceId\": 10, \"destId\": 11, \"communicationCost\": 400},\n"
	"  {\"sourceId\": 11, \"destId\": 12, \"communicationCost\": 800},\n"
	"  {\"sourceId\": 10, \"destId\": 12, \"communicationCost\": 100}]}\n";

/* tiny with the first `from` replaced by `to`, written to a temporary file. */
static const char *variant(const char *name, const char *from, const char *to)
{
	static char text[sizeof tiny + 512];
	const char *at = from ? strstr(tiny, from) : NULL;

	if (from && !at)
		fail_msg("'%s' is not in the tiny input", from);
	if (!from)
		snprintf(text, sizeof text, "%s", tiny);
	else
		snprintf(text, sizeof text, "%.*s%s%s", (int)(at - tiny), tiny, to,
			 at + strlen(from));
	return tmp_write(name, text);
}

static void test_resnet(void **state)
{
	char path[4096];
	struct piper_inst pi;
	const struct piper_node *v;
	const struct piper_tmpc *x;

	(void)state;
	if (piper_read(datapath(path, sizeof path, RESNET), &pi) != AP_OK)
		fail_msg("%s", ap_last_error());
	assert_int_equal(pi.nnodes, 177);
	assert_int_equal(pi.nedges, 193);
	assert_int_equal(pi.max_devices, 10);
	assert_int_equal(pi.mbs, 7680);
	assert_true(pi.mem == 80e9);
	assert_true(pi.bw == 25e9);
	/* the file's first node: id 0, "node77", edges 1 -> 0 and 0 -> 9 */
	v = &pi.nodes[0];
	assert_string_equal(v->name, "node77");
	assert_int_equal(v->ndeg, 1);
	assert_int_equal(v->deg[0].t, 1);
	assert_int_equal(v->deg[0].ntmpc, 2);
	x = &v->deg[0].tmpc[0];
	assert_string_equal(x->id, "vanilla");
	assert_true(x->time == 2.678);
	assert_true(x->params == 4096);
	assert_true(x->mem_a == 205520896 && x->mem_b == 8192);
	assert_string_equal(v->deg[0].tmpc[1].id, "activation recomp");
	assert_true(fabs(v->deg[0].tmpc[1].time - 3.914) < 1e-12);
	assert_int_equal(v->nin, 1);
	assert_int_equal(v->nout, 1);
	assert_int_equal(pi.edges[v->in[0]].src, 1);
	assert_int_equal(pi.edges[v->out[0]].dst, 9);
	assert_int_equal(pi.edges[0].src, 0);
	assert_int_equal(pi.edges[0].dst, 9);
	assert_true(pi.edges[0].bytes == 205520896);
	assert_true(x->sync_fw[0] == 0 && x->sync_bw[0] == 0);
	/* the last: id 176, "node169", from 175 */
	v = &pi.nodes[176];
	assert_string_equal(v->name, "node169");
	assert_int_equal(pi.edges[v->in[0]].src, 175);
	assert_true(piper_degree_of(v, 1) != NULL);
	assert_null(piper_degree_of(v, 2));
	piper_inst_release(&pi);
	assert_int_equal(pi.nnodes, 0);
}

/* Degrees sorted, sync arrays aligned with the edge lists, nodes in file
 * order. */
static void test_tiny(void **state)
{
	struct piper_inst pi;
	const struct piper_node *v;

	(void)state;
	if (piper_read(variant("tiny.json", NULL, NULL), &pi) != AP_OK)
		fail_msg("%s", ap_last_error());
	assert_int_equal(pi.nnodes, 3);
	assert_int_equal(pi.nedges, 3);
	assert_null(pi.nodes[0].name);
	assert_string_equal(pi.nodes[1].name, "in");
	/* id 12: incoming edges 11 -> 12 then 10 -> 12, as the file lists them */
	v = &pi.nodes[0];
	assert_int_equal(v->nin, 2);
	assert_int_equal(pi.edges[v->in[0]].src, 2);
	assert_int_equal(pi.edges[v->in[1]].src, 1);
	assert_true(v->deg[0].tmpc[0].sync_fw[0] == 5 && v->deg[0].tmpc[0].sync_fw[1] == 7);
	/* id 11: degrees 1 then 2 */
	v = &pi.nodes[2];
	assert_int_equal(v->ndeg, 2);
	assert_int_equal(v->deg[0].t, 1);
	assert_int_equal(v->deg[0].ntmpc, 2);
	assert_int_equal(v->deg[1].t, 2);
	assert_true(v->deg[1].tmpc[0].sync_fw[0] == 64 && v->deg[1].tmpc[0].sync_bw[0] == 32);
	assert_true(v->deg[1].tmpc[0].params == 500);
	piper_inst_release(&pi);

	/* maxBatchSize is the README's name for N */
	assert_int_equal(piper_read(variant("tiny-mbs.json", "\"mbsInBatch\"",
					    "\"maxBatchSize\""), &pi), AP_OK);
	assert_int_equal(pi.mbs, 8);
	piper_inst_release(&pi);
}

/* The model: an operator per node in topological order, with the numbers
 * of degree 1's vanilla configuration for a batch of 8 micro-batches. */
static void test_tiny_model(void **state)
{
	struct graph g;
	const struct op *mid;
	const char *path;

	(void)state;
	if (model_load(variant("tiny-model.json", NULL, NULL), 0, &g) != AP_OK)
		fail_msg("%s", ap_last_error());
	assert_int_equal(g.nops, 3);
	assert_int_equal(g.batch, 8);
	assert_string_equal(g.ops[0].name, "in");
	assert_string_equal(g.ops[1].name, "mid");
	assert_string_equal(g.ops[2].name, "node12");
	assert_int_equal(g.ops[2].nin, 2);
	assert_int_equal(g.ops[2].in[0], 1);
	assert_int_equal(g.ops[2].in[1], 0);
	mid = &g.ops[1];
	assert_int_equal(mid->kind, OP_OPAQUE);
	assert_true(fabs(mid->m.fwd_us - 0.2 * 8 * 1e6 / 3) < 1e-6);
	assert_true(fabs(mid->m.bwd_us - 0.2 * 8 * 1e6 * 2 / 3) < 1e-6);
	assert_int_equal(mid->m.param_bytes, 1000);
	assert_int_equal(mid->params, 250);
	assert_int_equal(mid->out_bytes, 800 * 8);
	assert_int_equal(g.ops[0].out_bytes, 400 * 8);
	/* the instance follows the operators: node v is operator v */
	assert_non_null(g.piper);
	assert_string_equal(g.piper->nodes[1].name, "mid");
	assert_int_equal(g.piper->nodes[2].nin, 2);
	for (int e = 0; e < g.piper->nedges; e++)
		assert_true(g.piper->edges[e].src < g.piper->edges[e].dst);
	assert_true(g.piper->nodes[2].deg[0].tmpc[0].sync_fw[0] == 5);
	graph_release(&g);

	/* a batch asked for rescales the measured numbers */
	assert_int_equal(model_load(variant("tiny-model.json", NULL, NULL), 16, &g), AP_OK);
	assert_true(fabs(g.ops[1].m.fwd_us - 0.2 * 16 * 1e6 / 3) < 1e-6);
	graph_release(&g);

	/* a layer without a degree-1 configuration cannot be one operator */
	path = variant("tiny-no1.json", "{\"1\": [{\"id\": \"vanilla\", \"timePerSample\": 0.3",
		       "{\"3\": [{\"id\": \"vanilla\", \"timePerSample\": 0.3");
	assert_int_equal(model_load(path, 0, &g), AP_EINPUT);
	assert_non_null(strstr(ap_last_error(), "nodes[0].TMPCs: no configuration for degree 1"));
}

static void test_resnet_model(void **state)
{
	struct graph g, h;
	struct graph_totals t;
	struct piper_inst pi;
	char path[4096];
	double sum = 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(piper_read(datapath(path, sizeof path, RESNET), &pi), AP_OK);
	for (int v = 0; v < pi.nnodes; v++)
		sum += pi.nodes[v].deg[0].tmpc[0].time;
	piper_inst_release(&pi);
	if (model_load("piper/resnet", 0, &g) != AP_OK)
		fail_msg("%s", ap_last_error());
	assert_string_equal(g.name, "piper/resnet");
	assert_int_equal(g.nops, 177);
	assert_int_equal(g.batch, 7680);
	graph_totals(&g, &t);
	assert_true(t.measured);
	assert_int_equal(t.params, 102228128 / 4);
	assert_true(fabs(t.fwd_us + t.bwd_us - sum * 1e6 * 7680) < 1e-9 * sum * 1e6 * 7680);
	for (int k = 0; k < g.nops; k++) {
		assert_int_equal(g.ops[k].kind, OP_OPAQUE);
		assert_int_equal(g.ops[k].nin, g.piper->nodes[k].nin);
		for (int e = 0; e < g.ops[k].nin; e++)
			assert_true(g.ops[k].in[e] < k);
	}
	/* the text format writes it like any imported graph */
	f = open_memstream(&buf, &len);
	assert_int_equal(model_write(&g, f), AP_OK);
	fclose(f);
	if (model_parse(buf, "resnet.model", 0, &h) != AP_OK)
		fail_msg("%s", ap_last_error());
	assert_int_equal(h.nops, g.nops);
	graph_release(&h);
	free(buf);
	graph_release(&g);

	/* the same file by its path */
	assert_int_equal(model_load(path, 0, &g), AP_OK);
	assert_int_equal(g.nops, 177);
	graph_release(&g);
}

static void test_cluster(void **state)
{
	struct graph g;
	struct cluster c;

	(void)state;
	assert_int_equal(model_load("piper/resnet", 0, &g), AP_OK);
	assert_int_equal(piper_cluster(g.piper, g.name, &c), AP_OK);
	assert_string_equal(c.name, "piper");
	assert_int_equal(cluster_ndevices(&c), 10);
	assert_int_equal(c.nodes, 1);
	assert_int_equal(c.mem_bytes, 80000000000LL);
	assert_true(c.intra.bw_bytes_per_s == 25e9 && c.inter.bw_bytes_per_s == 25e9);
	assert_true(c.intra.latency_s == 0);
	graph_release(&g);
}

static const struct {
	const char *what, *from, *to, *want;
} broken[] = {
	{ "missing field", "\"timePerSample\": 0.1,", "",
	  "nodes[1].TMPCs[\"1\"][0].timePerSample: missing" },
	{ "negative time", "\"timePerSample\": 0.15", "\"timePerSample\": -0.15",
	  "nodes[2].TMPCs[\"2\"][0].timePerSample: expected a non-negative number" },
	{ "string for a number", "\"memoryUsageA\": 40,", "\"memoryUsageA\": \"40\",",
	  "nodes[2].TMPCs[\"1\"][1].memoryUsageA: expected a non-negative number, got a string" },
	{ "NaN", "\"bandwidth\": 2.5e10", "\"bandwidth\": NaN", "expected Piper's JSON input" },
	{ "zero bandwidth", "\"bandwidth\": 2.5e10", "\"bandwidth\": 0",
	  "bandwidth: expected a positive number" },
	{ "no devices", "\"maxDevices\": 4", "\"maxDevices\": 0",
	  "maxDevices: expected a positive integer" },
	{ "real devices", "\"maxDevices\": 4", "\"maxDevices\": 4.5",
	  "maxDevices: expected a positive integer of at most 10000, got 4.5" },
	{ "no micro-batches", "\"mbsInBatch\": 8,", "", "mbsInBatch: missing" },
	{ "duplicate edge", "{\"sourceId\": 10, \"destId\": 12, \"communicationCost\": 100}",
	  "{\"sourceId\": 10, \"destId\": 12, \"communicationCost\": 100},"
	  "{\"sourceId\": 10, \"destId\": 11, \"communicationCost\": 1}",
	  "edges[3]: the edge 10 -> 11 is edges[0] already" },
	{ "cycle", "{\"sourceId\": 10, \"destId\": 12, \"communicationCost\": 100}",
	  "{\"sourceId\": 10, \"destId\": 12, \"communicationCost\": 100},"
	  "{\"sourceId\": 12, \"destId\": 10, \"communicationCost\": 1}",
	  "edges: not a DAG: node " },
	{ "unknown endpoint", "\"destId\": 12, \"communicationCost\": 800",
	  "\"destId\": 13, \"communicationCost\": 800", "edges[1].destId: no node has id 13" },
	{ "negative cost", "\"communicationCost\": 100", "\"communicationCost\": -1",
	  "edges[2].communicationCost: expected a non-negative number" },
	{ "duplicate node id", "{\"id\": 12,", "{\"id\": 10,",
	  "nodes[1].id: 10 is the id of nodes[0] already" },
	{ "unknown edge in syncTimeFw", "\"syncTimeFw\": {}", "\"syncTimeFw\": {\"12\": 0}",
	  "nodes[1].TMPCs[\"1\"][0].syncTimeFw[\"12\"]: no edge 12 -> 10" },
	{ "edge missing from syncTimeFw", "{\"10\": 7, \"11\": 5}", "{\"11\": 5}",
	  "nodes[0].TMPCs[\"1\"][0].syncTimeFw: missing the edge 10 -> 12" },
	{ "non-integer key in syncTimeBw", "{\"11\": 0, \"12\": 0}", "{\"11\": 0, \"x\": 0}",
	  "nodes[1].TMPCs[\"1\"][0].syncTimeBw[\"x\"]: expected a node id" },
	{ "non-integer degree", "\"2\": [", "\"2.5\": [",
	  "nodes[2].TMPCs[\"2.5\"]: expected a tensor-parallel degree" },
	{ "degree zero", "\"2\": [", "\"0\": [",
	  "nodes[2].TMPCs[\"0\"]: expected a tensor-parallel degree" },
	{ "degree twice", "\"2\": [", "\"01\": [", "degree 1 is given twice" },
	{ "empty TMPC id", "\"id\": \"activation recomp\"", "\"id\": \"\"",
	  "nodes[2].TMPCs[\"1\"][0].id: expected a non-empty string" },
	{ "repeated TMPC id", "\"id\": \"activation recomp\"", "\"id\": \"vanilla\"",
	  "nodes[2].TMPCs[\"1\"][1].id: 'vanilla' is the id of configuration 0 already" },
	{ "TMPCs not an object", "\"name\": \"in\", \"TMPCs\": {",
	  "\"name\": \"in\", \"TMPCs\": [], \"x\": {",
	  "nodes[1].TMPCs: expected an object keyed by tensor-parallel degree, got an array" },
	{ "name not a string", "\"name\": \"in\"", "\"name\": 3",
	  "nodes[1].name: expected a string" },
	{ "empty nodes", "\"nodes\": [", "\"nodes\": [], \"x\": [",
	  "nodes: expected a non-empty array of layers, got an empty array" },
	{ "not JSON", "{", "model mlp\n", "expected Piper's JSON input" },
	{ "no nodes", "\"nodes\"", "\"layers\"", "nodes: missing" },
};

static void test_broken(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
		struct piper_inst pi;
		struct graph g;
		char name[64];
		const char *path;
		int rc;

		snprintf(name, sizeof name, "broken-%zu.json", i);
		path = variant(name, broken[i].from, broken[i].to);
		ap_err_quiet(1);
		rc = piper_read(path, &pi);
		ap_err_quiet(0);
		if (rc != AP_EINPUT || !strstr(ap_last_error(), broken[i].want) ||
		    strncmp(ap_last_error(), path, strlen(path)))
			fail_msg("%s: got %d, '%s'; expected '%s'", broken[i].what, rc,
				 ap_last_error(), broken[i].want);
		assert_int_equal(pi.nnodes, 0);
		assert_null(pi.nodes);
		/* the model loader says the same (a .json that starts with '{') */
		ap_err_quiet(1);
		rc = model_load(path, 0, &g);
		ap_err_quiet(0);
		assert_int_equal(rc, AP_EINPUT);
		if (broken[i].from[0] != '{' && !strstr(ap_last_error(), broken[i].want))
			fail_msg("%s via model_load: '%s'", broken[i].what, ap_last_error());
	}
}

/* The commands: exit 0 on the input, 2 on a broken one (naming the file)
 * and on `-c piper` with a model that is not a Piper input. */
static void test_commands(void **state)
{
	char out[8192], args[2048];
	const char *bad = variant("cmd-bad.json", "\"timePerSample\": 0.1,", "");

	(void)state;
	if (!getenv("AUTOPAR_BIN"))
		skip();
	assert_int_equal(test_autopar("models " RESNET, 1, out, sizeof out), 0);
	assert_non_null(strstr(out, RESNET));
	/* the shipped inputs are listed beside the zoo */
	assert_int_equal(test_autopar("models", 1, out, sizeof out), 0);
	assert_non_null(strstr(out, "\npiper/resnet "));
	assert_non_null(strstr(out, "\npiper/gnmt "));
	snprintf(args, sizeof args, "plan -m piper/resnet -c piper -P dp -o '%s/dp.json'",
		 tmp_dir());
	assert_int_equal(test_autopar(args, 0, out, sizeof out), 0);
	snprintf(args, sizeof args, "sim '%s/dp.json'", tmp_dir());
	assert_int_equal(test_autopar(args, 0, out, sizeof out), 0);
	snprintf(args, sizeof args, "check -m '%s' -c piper", bad);
	assert_int_equal(test_autopar(args, 0, out, sizeof out), 2);
	assert_non_null(strstr(out, bad));
	assert_non_null(strstr(out, "timePerSample: missing"));
	snprintf(args, sizeof args, "plan -m vgg16 -c piper -P dp -o '%s/no.json'", tmp_dir());
	assert_int_equal(test_autopar(args, 0, out, sizeof out), 2);
	assert_non_null(strstr(out, "not a Piper input"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resnet),
		cmocka_unit_test(test_tiny),
		cmocka_unit_test(test_tiny_model),
		cmocka_unit_test(test_resnet_model),
		cmocka_unit_test(test_cluster),
		cmocka_unit_test(test_broken),
		cmocka_unit_test(test_commands),
	};

	return cmocka_run_group_tests_name("piper_io", tests, NULL, NULL);
}
