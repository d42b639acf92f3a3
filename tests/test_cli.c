/*
 * Bad input through the command line, as a user meets it: malformed
 * models, profiles, cluster specs, plans and arguments.  Each must exit
 * with status 2 and print exactly one line, "file:line: message" (or the
 * argument at fault), with no crash and no sanitizer report; a failed
 * command leaves no output file behind.  Runs the built binary named by
 * AUTOPAR_BIN (the sanitizer build under `make check-asan`).
 */
#include "testutil.h"

#include "util/stats.h"

/* Runs `autopar ARGS` (%D in args = the temporary dir); returns the exit
 * status and the stderr text. */
static int run(const char *args, char *err, size_t len)
{
	char a[2048];
	const char *d = tmp_dir();
	size_t n = 0;

	for (const char *s = args; *s && n + 300 < sizeof a; s++) {
		if (s[0] == '%' && s[1] == 'D')
			n += (size_t)snprintf(a + n, sizeof a - n, "%s", d), s++;
		else
			a[n++] = *s;
	}
	a[n] = 0;
	return test_autopar(a, 0, err, len);
}

#define HDR "model t\nbatch 4\n"
#define OPS_HDR "signature,fwd_us,bwd_us,workspace_bytes,source\n"
#define DEV_HDR "name,fp32_tflops,tensor_tflops,mem_bw_gbytes_per_s,mem_bytes,launch_us,description\n"
#define DEV_ROW "v100,15.7,125,900,17179869184,5,test\n"
#define PLAN_OK(ops) "{\"format\": \"autopar-plan\", \"version\": 1, \"model\": \"t\", " \
	"\"batch\": 4, \"cluster\": \"2x2:v100\", \"profile\": \"v100-analytic\", " \
	"\"planner\": \"dp\", \"search\": {\"seconds\": 0, \"seed\": 1}, " \
	"\"schedule\": {\"kind\": \"1f1b\", \"microbatches\": 1}, " \
	"\"stages\": [{\"id\": 0, \"devices\": [0, 1], \"next\": []}], \"ops\": {" ops "}}\n"
#define PLAN_MODEL HDR "input x c=6\nlinear fc x out=4\nloss l fc\n"
/* a language model's head tied to its token embedding, and a plan that
 * puts the two on different devices */
#define TIE_MODEL HDR "input ids l=8\nembedding emb ids vocab=16 out=8\n" \
	"linear head emb out=16 bias=0 tie=emb\nloss l head\n"
#define TIE_PLAN PLAN_OK("\"ids\": {\"stage\": 0, \"devices\": [0]}, \"emb\": {\"stage\": 0, " \
			 "\"devices\": [0]}, \"head\": {\"stage\": 0, \"devices\": [1]}, " \
			 "\"l\": {\"stage\": 0, \"devices\": [1]}")

static const struct {
	const char *file, *text;     /* a file to create first (under %D) */
	const char *file2, *text2;   /* and a second one */
	const char *args;
	const char *where;           /* the message starts with this (%D expanded) */
	const char *what;            /* and contains this */
} cases[] = {
	/* models */
	{ "m1.model", HDR "input x c=3\ncnv2d c x\n", NULL, NULL, "models %D/m1.model",
	  "%D/m1.model:4: ", "unknown operator 'cnv2d'" },
	{ "m2.model", HDR "input x c=3\nrelu r y\n", NULL, NULL, "check -m %D/m2.model",
	  "%D/m2.model:4: ", "unknown input 'y'" },
	{ "m3.model", HDR "input x c=3 h=8 w=8\nconv2d c x out=4 k=3 stride=0\n", NULL, NULL,
	  "models %D/m3.model", "%D/m3.model:4: ", "stride=" },
	{ "m4.model", HDR "input x c=3\ninput y c=4\nconcat z x y dim=h\n", NULL, NULL,
	  "models %D/m4.model", "%D/m4.model:5: ", "'h' dim" },
	{ "m5.model", "model t\ninput x c=3\n", NULL, NULL, "models %D/m5.model",
	  "%D/m5.model:2: ", "batch" },
	{ "m6.model", HDR "input x c=3\nrepeat 2\nrelu r{i} @in\n", NULL, NULL,
	  "models %D/m6.model", "%D/m6.model:4: ", "without 'end'" },
	{ "p1.txt", "node1 -- Input -- forward_compute_time=1.0\n", NULL, NULL,
	  "models %D/p1.txt", "%D/p1.txt:1: ", "backward_compute_time" },
	{ NULL, NULL, NULL, NULL, "models %D/nosuch.model", "%D/nosuch.model: ",
	  "cannot read" },
	/* arguments */
	{ NULL, NULL, NULL, NULL, "models -b 0 mlp", "-b: ", "positive integer" },
	{ NULL, NULL, NULL, NULL, "models --bogus", "models: ", "unknown option '--bogus'" },
	{ NULL, NULL, NULL, NULL, "frobnicate", "autopar: ", "unknown command 'frobnicate'" },
	{ NULL, NULL, NULL, NULL, "check", "check: ", "nothing to check" },
	/* cluster specs */
	{ NULL, NULL, NULL, NULL, "check -c 4x4:nosuchgpu", "", "nosuchgpu" },
	/* empty names and zero bandwidths say so */
	{ NULL, NULL, NULL, NULL, "check -m ''", "-m: ", "got an empty string" },
	{ NULL, NULL, NULL, NULL, "check -m %D", "%D: ", "is a directory" },
	{ NULL, NULL, NULL, NULL, "check -p ''", "-p: ", "got an empty string" },
	{ NULL, NULL, NULL, NULL, "check -c 2x2:v100,intra=0GB/s", "", "positive bandwidth" },
	{ NULL, NULL, NULL, NULL, "check -c 4x:v100", "", "4x:v100" },
	{ NULL, NULL, NULL, NULL, "check -c 2x2:v100,intra=12GX/s", "", "12GX/s" },
	{ NULL, NULL, NULL, NULL, "check -c 2x2:v100,inter=-5Gb/s", "", "-5Gb/s" },
	{ NULL, NULL, NULL, NULL, "check -c nosuchpreset", "", "nosuchpreset" },
	/* profiles */
	{ "pr1/ops.csv", "sig,fwd,bwd\n", "pr1/device.csv", DEV_HDR DEV_ROW, "check -p %D/pr1",
	  "%D/pr1/ops.csv:1: ", "" },
	{ "pr2/ops.csv", OPS_HDR "\"relu:n4c8>n4c8\",-3,1,0,measured\n", "pr2/device.csv",
	  DEV_HDR DEV_ROW, "check -p %D/pr2", "%D/pr2/ops.csv:2: ", "" },
	{ "pr3/ops.csv", OPS_HDR "\"relu:n4c8>n4c8\",3,1,0\n", "pr3/device.csv",
	  DEV_HDR DEV_ROW, "check -p %D/pr3", "%D/pr3/ops.csv:2: ", "" },
	{ "pr4/ops.csv", OPS_HDR "\"relu:n4c8>n4c8\",3,1,0,guessed\n", "pr4/device.csv",
	  DEV_HDR DEV_ROW, "check -p %D/pr4", "%D/pr4/ops.csv:2: ", "guessed" },
	{ "pr5/ops.csv", OPS_HDR, "pr5/device.csv", DEV_HDR "v100,fast,125,900,1,5,x\n",
	  "check -p %D/pr5", "%D/pr5/device.csv:2: ", "fast" },
	/* plans */
	{ "t.model", PLAN_MODEL, "pl1.json", "{\"format\": \"autopar-plan\",\n\"version\": 1,,\n}\n",
	  "check -m %D/t.model -c 2x2:v100 %D/pl1.json", "%D/pl1.json:2: ", "" },
	{ "t.model", PLAN_MODEL, "pl2.json", "{\"format\": \"other\", \"version\": 1}\n",
	  "check -m %D/t.model -c 2x2:v100 %D/pl2.json", "%D/pl2.json", "format" },
	{ "t.model", PLAN_MODEL, "pl3.json",
	  PLAN_OK("\"x\": {\"stage\": 0, \"devices\": [0]}, \"fc\": {\"stage\": 0, "
		  "\"devices\": [0]}, \"l\": {\"stage\": 0, \"devices\": [0]}, "
		  "\"zz\": {\"stage\": 0, \"devices\": [0]}"),
	  "check -m %D/t.model -c 2x2:v100 %D/pl3.json", "%D/pl3.json", "zz" },
	{ "t.model", PLAN_MODEL, "pl4.json",
	  PLAN_OK("\"x\": {\"stage\": 0, \"devices\": [0]}, \"fc\": {\"stage\": 0, "
		  "\"degree\": {\"c\": 3}, \"devices\": [0, 1, 2]}, \"l\": {\"stage\": 0, "
		  "\"devices\": [0]}"),
	  "check -m %D/t.model -c 2x2:v100 %D/pl4.json", "%D/pl4.json", "fc" },
	{ "t.model", PLAN_MODEL, "pl5.json",
	  PLAN_OK("\"x\": {\"stage\": 0, \"devices\": [0]}, \"fc\": {\"stage\": 0, "
		  "\"devices\": [9]}, \"l\": {\"stage\": 0, \"devices\": [0]}"),
	  "check -m %D/t.model -c 2x2:v100 %D/pl5.json", "%D/pl5.json", "9" },
	/* without -m and -c, the model beside the plan and its cluster */
	{ "t.model", PLAN_MODEL, NULL, NULL, "check %D/pl5.json", "%D/pl5.json", "9" },
	{ "t.model", PLAN_MODEL, "pl6.json",
	  PLAN_OK("\"x\": {\"stage\": 0, \"devices\": [0]}, \"fc\": {\"stage\": 0, "
		  "\"devices\": [0]}, \"l\": {\"stage\": 0, \"devices\": [0]}"),
	  "check -b 8 %D/pl6.json", "-b: ", "is for batch 4" },
	/* a tied pair split across devices, named both ways */
	{ "tie.model", TIE_MODEL, "tie.json", TIE_PLAN,
	  "check -m %D/tie.model -c 2x2:v100 %D/tie.json", "%D/tie.json: ",
	  "'head' ties its weight to 'emb', so both must run on the same devices, but 'head' "
	  "runs on 1 and 'emb' on 0" },
	{ "tie.model", TIE_MODEL, "tie.json", TIE_PLAN, "sim %D/tie.json -m %D/tie.model",
	  "%D/tie.json: ", "'head' ties its weight to 'emb'" },
	/* run */
	{ NULL, NULL, NULL, NULL, "run %D/nosuch.json", "%D/nosuch.json: ", "cannot read" },
	{ NULL, NULL, "pl6.json", "{\"format\": \"autopar-plan\",\n", "run %D/pl6.json",
	  "%D/pl6.json:2: ", "" },
	{ NULL, NULL, NULL, NULL, "run x.json --inject-fault 1:2:melt", "--inject-fault: ",
	  "RANK:STEP" },
	{ NULL, NULL, NULL, NULL, "run x.json --lr 0", "--lr: ", "positive" },
	{ NULL, NULL, NULL, NULL, "run x.json --lr inf", "--lr: ", "finite" },
	{ NULL, NULL, NULL, NULL, "run x.json --tolerance inf", "--tolerance: ", "finite" },
	{ NULL, NULL, NULL, NULL, "run x.json --warmup -3", "--warmup: ",
	  "expected a non-negative integer, got '-3'" },
	{ "r.csv", "a,b\n", NULL, NULL, "run x.json -o %D/r.csv", "%D/r.csv:1: ",
	  "expected the header 'model,batch," },
	/* a results CSV is no loss curve: not overwritten */
	{ "r.csv", "a,b\n", NULL, NULL, "run x.json --loss-csv %D/r.csv", "%D/r.csv:1: ",
	  "expected the header 'step,loss'" },
	{ "r.csv", "a,b\n", NULL, NULL, "run x.json --times-csv %D/r.csv", "%D/r.csv:1: ",
	  "expected the header 'step,iter_ms'" },
	/* outputs checked before any work: empty, an input, one another */
	{ NULL, NULL, NULL, NULL, "plan -m mlp -c 1x2:v100 -P dp -o ''", "-o: ",
	  "an empty path" },
	{ NULL, NULL, NULL, NULL, "sim x.json --trace ''", "--trace: ", "an empty path" },
	{ NULL, NULL, NULL, NULL, "run x.json --loss-csv ''", "--loss-csv: ", "an empty path" },
	{ NULL, NULL, NULL, NULL, "run x.json --loss-csv %D", "%D: ", "is a directory" },
	{ "rr.csv", "", NULL, NULL, "run x.json -o %D/rr.csv --loss-csv %D/rr.csv",
	  "%D/rr.csv: ", "the output of --loss-csv is also the output of -o" },
	{ "rt.csv", "", NULL, NULL, "run x.json --loss-csv %D/rt.csv --times-csv %D/rt.csv",
	  "%D/rt.csv: ", "the output of --times-csv is also the output of --loss-csv" },
	{ "pc.json", PLAN_OK(""), NULL, NULL, "sim %D/pc.json --trace %D/pc.json",
	  "%D/pc.json: ", "the output of --trace is the input PLAN" },
	{ "mc.model", PLAN_MODEL, NULL, NULL, "plan -m %D/mc.model -c 1x2:v100 -P dp "
	  "-o %D/mc.model", "%D/mc.model: ", "the output of -o is the input -m" },
	{ "s.onnx", "not onnx\n", NULL, NULL, "models import %D/s.onnx -o %D/s.onnx",
	  "%D/s.onnx: ", "the output of -o is the input FILE.onnx" },
	/* a .json model is Piper's input, whatever it holds */
	{ "arr.json", "[1, 2]\n", NULL, NULL, "models %D/arr.json", "%D/arr.json: ",
	  "expected an object (Piper's JSON input)" },
	/* a directory as a matrix */
	{ NULL, NULL, NULL, NULL, "bench %D -o %D/b.csv", "%D: ", "Is a directory" },
	/* an output that is a directory, or in a missing one: both usage */
	{ NULL, NULL, NULL, NULL, "plan -m mlp -c 1x2:v100 -P dp -o %D", "%D: ",
	  "is a directory" },
	{ NULL, NULL, NULL, NULL, "plan -m mlp -c 1x2:v100 -P dp -o %D/missing/dir/x.json",
	  "%D/missing/dir/x.json: ", "cannot write -o: no directory" },
};

static void test_bad_input(void **state)
{
	char err[4096], want[600];

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int st, lines = 0;

		if (cases[i].file) {
			char sub[600];

			snprintf(sub, sizeof sub, "mkdir -p '%s/pr%c'", tmp_dir(),
				 cases[i].file[2]);
			if (strncmp(cases[i].file, "pr", 2) == 0 && system(sub) != 0)
				fail_msg("mkdir");
			assert_non_null(tmp_write(cases[i].file, cases[i].text));
		}
		if (cases[i].file2)
			assert_non_null(tmp_write(cases[i].file2, cases[i].text2));
		st = run(cases[i].args, err, sizeof err);
		if (st != 2)
			fail_msg("case %zu (%s): exit %d, expected 2; stderr: %s", i,
				 cases[i].args, st, err);
		for (const char *s = err; *s; s++)
			lines += *s == '\n';
		if (lines != 1)
			fail_msg("case %zu (%s): %d lines on stderr, expected one: %s", i,
				 cases[i].args, lines, err);
		snprintf(want, sizeof want, "%s", cases[i].where);
		if (strncmp(want, "%D", 2) == 0)
			snprintf(want, sizeof want, "%s%s", tmp_dir(), cases[i].where + 2);
		if (strncmp(err, want, strlen(want)) || !strstr(err, cases[i].what))
			fail_msg("case %zu (%s): got \"%s\", expected \"%s...%s\"", i,
				 cases[i].args, err, want, cases[i].what);
	}
}

/* A plan names its model: one of the zoo or a file beside the plan, never
 * any other file of the machine (whose first line a message would echo). */
static void test_plan_model_paths(void **state)
{
	static const char ops[] = "\"x\": {\"stage\": 0, \"devices\": [0]}, \"fc\": "
		"{\"stage\": 0, \"devices\": [0]}, \"l\": {\"stage\": 0, \"devices\": [0]}";
	const char *outside = tmp_write("outside.model", "model secret-first-line\nbatch 4\n"
					"input x c=6\nlinear fc x out=4\nloss l fc\n");
	char dir[600], model[700], plan[4096], args[2048], err[4096], want_buf[700];

	(void)state;
	snprintf(dir, sizeof dir, "mkdir -p '%s/inner'", tmp_dir());
	assert_int_equal(system(dir), 0);
	assert_non_null(tmp_write("inner/t.model", PLAN_MODEL));
	snprintf(model, sizeof model, "%s/inner/t.model", tmp_dir());
	/* beside the plan: by its file name, by a path to that directory, or
	 * by the model's name (t, of t.model: what `autopar plan -m
	 * DIR/t.model` records) */
	for (int k = 0; k < 4; k++) {
		const char *m = k == 0 ? "t.model" : k == 1 ? model : k == 2 ? "t" : outside;

		snprintf(plan, sizeof plan, "{\"format\": \"autopar-plan\", \"version\": 1, "
			 "\"model\": \"%s\", \"batch\": 4, \"cluster\": \"2x2:v100\", "
			 "\"profile\": \"v100-analytic\", \"schedule\": {\"kind\": \"1f1b\", "
			 "\"microbatches\": 1}, \"stages\": [{\"id\": 0, \"devices\": [0], "
			 "\"next\": []}], \"ops\": {%s}}\n", m, ops);
		assert_non_null(tmp_write("inner/pm.json", plan));
		snprintf(args, sizeof args, "sim %%D/inner/pm.json");
		if (k < 3) {
			if (run(args, err, sizeof err) != 0)
				fail_msg("model '%s' beside the plan: %s", m, err);
			continue;
		}
		/* a file elsewhere is refused, naming the plan and the field */
		assert_int_equal(run(args, err, sizeof err), 2);
		snprintf(want_buf, sizeof want_buf, "%s/inner/pm.json: model: ", tmp_dir());
		if (strncmp(err, want_buf, strlen(want_buf)) || strstr(err, "secret-first-line"))
			fail_msg("model '%s' outside the plan's directory: %s", m, err);
		snprintf(args, sizeof args, "run %%D/inner/pm.json --steps 1");
		assert_int_equal(run(args, err, sizeof err), 2);
		assert_non_null(strstr(err, "model: "));
	}
}

/* Runs autopar ARGS from the directory %D/SUB, stdout and stderr into out. */
static int run_in(const char *sub, const char *args, char *out, size_t len)
{
	char cmd[4096];

	snprintf(cmd, sizeof cmd, "cd '%s/%s' && '%s' %s 2>&1", tmp_dir(), sub, test_bin(), args);
	return test_shell(cmd, out, len);
}

/* Writes the plan at path, less its line of field key, to %D/to. */
static void drop_field(const char *path, const char *key, const char *to)
{
	char text[8192], *at, *start, *end;

	test_read_file(path, text, sizeof text);
	at = strstr(text, key);
	assert_non_null(at);
	for (start = at; start > text && start[-1] != '\n'; start--)
		;
	end = strchr(at, '\n');
	assert_non_null(end);
	memmove(start, end + 1, strlen(end + 1) + 1);
	assert_non_null(tmp_write(to, text));
}

/* A plan made from a model file records where it came from: sim, run
 * --check and check load that file from any working directory, and a
 * model of the zoo with the same name cannot stand in for it. */
static void test_plan_source(void **state)
{
	/* named like the zoo's mlp, with another graph and batch */
	static const char model[] = "model mlp\nbatch 4\ninput x c=6\nlinear fc x out=4\n"
				    "loss l fc\n";
	char mk[1024], out[8192], plan[600];

	(void)state;
	snprintf(mk, sizeof mk, "mkdir -p '%1$s/ps/src/dir' '%1$s/ps/plans' '%1$s/ps/cwd'",
		 tmp_dir());
	assert_int_equal(system(mk), 0);
	assert_non_null(tmp_write("ps/src/dir/rn50.model", model));
	snprintf(mk, sizeof mk, "cp -r '%s/profiles/cpu' '%s/ps/src/prof'", getenv("AUTOPAR_DATA"),
		 tmp_dir());
	assert_int_equal(system(mk), 0);
	if (run_in("ps/src", "plan -m dir/rn50.model -c 1x2:cpu -p ./prof -P dp -o ../plans/p.json",
		   out, sizeof out))
		fail_msg("plan: %s", out);
	snprintf(plan, sizeof plan, "%s/ps/plans/p.json", tmp_dir());
	test_read_file(plan, out, sizeof out);
	assert_non_null(strstr(out, "\"model_file\": \"../src/dir/rn50.model\""));
	assert_non_null(strstr(out, "\"model_digest\": \"fnv1a64:"));
	assert_non_null(strstr(out, "\"profile_dir\": \"../src/prof\""));
	if (run_in("ps/cwd", "sim ../plans/p.json", out, sizeof out) ||
	    !strstr(out, "mlp (batch 4)") || !strstr(out, "profile prof"))
		fail_msg("sim from another directory: %s", out);
	if (run_in("ps/cwd", "check ../plans/p.json", out, sizeof out))
		fail_msg("check from another directory: %s", out);
	if (run_in("ps/cwd", "run ../plans/p.json --check --steps 2", out, sizeof out))
		fail_msg("run --check from another directory: %s", out);
	/* a profile edited since, or named by a path the plan did not record:
	 * refused before any of it is read */
	drop_field(plan, "profile_dir", "ps/plans/r.json");
	assert_int_equal(run_in("ps/cwd", "sim ../plans/r.json", out, sizeof out), 2);
	assert_non_null(strstr(out, "r.json: profile: expected a profile of profiles/ by name"));
	snprintf(mk, sizeof mk, "echo '# x' >> '%s/ps/src/prof/ops.csv'", tmp_dir());
	assert_int_equal(system(mk), 0);
	assert_int_equal(run_in("ps/cwd", "sim ../plans/p.json", out, sizeof out), 2);
	assert_non_null(strstr(out, "p.json: profile_dir: "));
	assert_int_equal(run_in("ps/cwd", "sim ../plans/p.json -p cpu", out, sizeof out), 0);
	/* the model changed: refused, naming the field */
	assert_non_null(tmp_write("ps/src/dir/rn50.model", "# edited\n"));
	assert_int_equal(run_in("ps/cwd", "sim ../plans/p.json -p cpu", out, sizeof out), 2);
	assert_non_null(strstr(out, "p.json: model_file: "));
	assert_non_null(strstr(out, "is not the model this plan was made from"));
	/* without its model_file, the name would pick the zoo's mlp: refused
	 * by the digest */
	drop_field(plan, "model_file", "ps/plans/q.json");
	assert_int_equal(run_in("ps/cwd", "sim ../plans/q.json -p cpu", out, sizeof out), 2);
	if (!strstr(out, "q.json: model: 'mlp' is ") || !strstr(out, "models/mlp.model"))
		fail_msg("a zoo model of the same name: %s", out);
}

/* run --pool larger than the steps builds only the batches the steps use
 * (2^31 - 1 used to build them all before step 1). */
static void test_run_pool(void **state)
{
	char err[4096];

	(void)state;
	assert_int_equal(run("plan -m mlp -c cpu-1x2 -P single -o %D/pool.json", err, sizeof err),
			 0);
	if (run("run %D/pool.json --steps 2 --warmup 1 --pool 2147483647", err, sizeof err))
		fail_msg("run --pool 2^31-1: %s", err);
}

/* run's results carry the median's 95% interval (docs/runtime.md,
 * "Measured numbers"), which holds the median; --times-csv writes the
 * timed steps it is the median of, in step order after the warm-up. */
static void test_run_interval(void **state)
{
	char err[4096], text[4096], path[600];
	double v[20], t[8];
	char *row;
	int k = 0, n = 0, step;

	(void)state;
	assert_int_equal(run("plan -m mlp -c cpu-1x2 -P single -o %D/ci.json", err, sizeof err), 0);
	snprintf(path, sizeof path, "%s/ci.csv", tmp_dir());
	remove(path);
	if (run("run %D/ci.json --steps 8 --warmup 1 -o %D/ci.csv --times-csv %D/ci-times.csv",
		err, sizeof err))
		fail_msg("run: %s", err);
	snprintf(path, sizeof path, "%s/ci-times.csv", tmp_dir());
	test_read_file(path, text, sizeof text);
	assert_true(strncmp(text, "step,iter_ms\n", 13) == 0);
	for (char *l = strchr(text, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
		assert_true(n < 8);
		assert_int_equal(sscanf(l + 1, "%d,%lf", &step, &t[n]), 2);
		assert_int_equal(step, n + 1);
		n++;
	}
	assert_int_equal(n, 8);
	stats_sort(t, 8);
	snprintf(path, sizeof path, "%s/ci.csv", tmp_dir());
	test_read_file(path, text, sizeof text);
	assert_non_null(strstr(text, "meas_iter_ms,meas_iter_ms_p10,meas_iter_ms_p90,"
				     "meas_iter_ms_ci_lo,meas_iter_ms_ci_hi,"));
	row = strchr(text, '\n') + 1;
	for (char *f = strtok(row, ","); f && k < 20; f = strtok(NULL, ","))
		v[k++] = atof(f);
	/* fields 11..15 (0-based): measured median, p10, p90, lo, hi; both
	 * files hold each number to its last bit */
	assert_true(k > 15);
	assert_true(v[14] > 0 && v[14] <= v[11] && v[11] <= v[15]);
	assert_true(v[11] == stats_quantile(t, 8, 0.5));
	assert_true(v[14] == t[0] && v[15] == t[7]);
}

/* A command that fails leaves no partial output behind. */
static void test_no_partial_output(void **state)
{
	char err[4096], out[600];

	(void)state;
	tmp_write("m1.model", HDR "input x c=3\ncnv2d c x\n");
	assert_int_equal(run("profile --analytic -d v100 -m %D/m1.model -o %D/prof-out",
			     err, sizeof err), 2);
	snprintf(out, sizeof out, "%s/prof-out/ops.csv", tmp_dir());
	assert_int_not_equal(access(out, F_OK), 0);
}

/* The good paths of the same commands, so the table above cannot pass by
 * every command failing. */
static void test_good_input(void **state)
{
	char err[4096];

	(void)state;
	assert_int_equal(run("models mlp", err, sizeof err), 0);
	assert_int_equal(run("check -m resnet50 -c pipedream-a", err, sizeof err), 0);
	assert_int_equal(run("check -c 4x4:v100,intra=12GB/s,inter=10Gb/s", err, sizeof err), 0);
	assert_int_equal(run("clusters --csv", err, sizeof err), 0);
	assert_int_equal(run("version", err, sizeof err), 0);
	assert_int_equal(run("help models", err, sizeof err), 0);
	assert_int_equal(run("help help", err, sizeof err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_no_partial_output),
		cmocka_unit_test(test_plan_model_paths),
		cmocka_unit_test(test_plan_source),
		cmocka_unit_test(test_run_pool),
		cmocka_unit_test(test_run_interval),
		cmocka_unit_test(test_good_input),
	};

	return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
