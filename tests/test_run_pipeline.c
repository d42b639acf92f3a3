/*
 * `autopar run` on pipelines made by hand, beside those the planners make
 * (test_run_4ranks.c): every small model as a chain of two stages under GPipe and 1F1B, as two
 * replicated stages on four ranks, and under PipeDream's asynchronous
 * 1F1B (checked against the single-process simulation of weight
 * stashing); branchy_small as a DAG of stages whose branches run on
 * different ranks; activation recomputation.  Also what must not run: a split the runtime cannot
 * execute is refused before launch naming the operator, and a rank that
 * dies or fails ends the whole job promptly with a non-zero exit; and
 * what the ranks run is the plan the launcher read and validated, even
 * when the file changes after the launch.
 */
#include "runtest.h"
#include "plan/plan_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pipeline(const char *model, const char *cluster, int nstages, int rep,
		     enum sched_kind sched, int m)
{
	char path[1024], what[256];

	snprintf(path, sizeof path, "%s/%s-%s-%d.json", tmp_dir(), model, sched_name(sched),
		 rep);
	rt_pipeline_plan(model, 8, cluster, nstages, rep, sched, m, path);
	snprintf(what, sizeof what, "%s, %d stages x %d, %s", model, nstages, rep,
		 sched_name(sched));
	rt_check_plan(path, what);
}

static void test_chains(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof rt_models / sizeof *rt_models; k++) {
		pipeline(rt_models[k], "cpu-1x2", 2, 1, SCHED_GPIPE, 4);
		pipeline(rt_models[k], "cpu-1x2", 2, 1, SCHED_1F1B, 4);
	}
}

static void test_replicated_stages(void **state)
{
	(void)state;
	pipeline("mlp", "cpu-1x4", 2, 2, SCHED_1F1B, 2);
	pipeline("transformer_tiny", "cpu-1x4", 2, 2, SCHED_GPIPE, 2);
}

static void test_async(void **state)
{
	char path[1024], sync_path[1024], out[16384];
	double a, s;

	(void)state;
	pipeline("mlp", "cpu-1x2", 2, 1, SCHED_1F1B_ASYNC, 4);
	pipeline("cnn_small", "cpu-1x4", 2, 2, SCHED_1F1B_ASYNC, 2);
	/* weight updates per micro-batch train differently from one update
	 * per step: the last loss must differ from the synchronous one */
	snprintf(path, sizeof path, "%s/mlp-async.json", tmp_dir());
	snprintf(sync_path, sizeof sync_path, "%s/mlp-sync.json", tmp_dir());
	rt_pipeline_plan("mlp", 8, "cpu-1x2", 2, 1, SCHED_1F1B_ASYNC, 4, path);
	rt_pipeline_plan("mlp", 8, "cpu-1x2", 2, 1, SCHED_1F1B, 4, sync_path);
	assert_int_equal(rt_run(out, sizeof out, "run '%s' --steps 3 --warmup 0", path), 0);
	assert_non_null(strstr(out, "-> "));
	a = atof(strstr(out, "-> ") + 3);
	assert_int_equal(rt_run(out, sizeof out, "run '%s' --steps 3 --warmup 0", sync_path), 0);
	s = atof(strstr(out, "-> ") + 3);
	assert_true(fabs(a - s) > 1e-4);
}

/* branchy_small as a DAG of stages (rt_dag_plan) */
static void test_dag_of_stages(void **state)
{
	char path[1024];

	(void)state;
	snprintf(path, sizeof path, "%s/branchy-dag.json", tmp_dir());
	rt_dag_plan(path, SCHED_1F1B);
	rt_check_plan(path, "branchy_small as a DAG of stages");
}

/* Marks the ops of plan file path for model (batch 8) as recomputing:
 * those of stage `stage`, or every op when stage is -1. */
static void set_recompute(const char *path, const char *model, int stage)
{
	struct graph g;
	struct plan p;

	rt_plan_open(model, path, &g, &p);
	for (int i = 0; i < g.nops; i++)
		p.ops[i].recompute |= stage < 0 || p.ops[i].stage == stage;
	rt_plan_close(&g, &p, path);
}

/* Activation recomputation trains exactly as without: every op, or one
 * stage's, of a chain under each schedule that runs it, replicated
 * stages, and the DAG of stages whose rank 0 holds two stages (the stem's
 * output, read by the head's stage there, keeps a buffer per slot).
 * Without the recomputation the shared output buffers would hold the last
 * micro-batch's outputs, and the check would fail. */
static void test_recompute(void **state)
{
	static const enum sched_kind sched[] = { SCHED_GPIPE, SCHED_1F1B, SCHED_1F1B_ASYNC };
	char path[1024], what[256], out[16384];

	(void)state;
	for (size_t k = 0; k < sizeof sched / sizeof *sched; k++)
		for (int stage = -1; stage < 1; stage++) {
			snprintf(path, sizeof path, "%s/rc-%zu-%d.json", tmp_dir(), k, stage);
			rt_pipeline_plan("cnn_small", 8, "cpu-1x2", 2, 1, sched[k], 4, path);
			set_recompute(path, "cnn_small", stage);
			snprintf(what, sizeof what, "cnn_small recomputing stage %d, %s", stage,
				 sched_name(sched[k]));
			rt_check_plan(path, what);
		}
	snprintf(path, sizeof path, "%s/rc-rep.json", tmp_dir());
	rt_pipeline_plan("transformer_tiny", 8, "cpu-1x4", 2, 2, SCHED_1F1B, 2, path);
	set_recompute(path, "transformer_tiny", -1);
	rt_check_plan(path, "transformer_tiny recomputing, replicated stages");
	snprintf(path, sizeof path, "%s/rc-dag.json", tmp_dir());
	rt_dag_plan(path, SCHED_GPIPE);
	set_recompute(path, "branchy_small", -1);
	rt_check_plan(path, "branchy_small recomputing, a DAG of stages");
	/* async-predict runs forwards beside backwards: refused */
	snprintf(path, sizeof path, "%s/rc-predict.json", tmp_dir());
	rt_pipeline_plan("mlp", 8, "cpu-1x2", 2, 1, SCHED_ASYNC_PREDICT, 4, path);
	set_recompute(path, "mlp", 0);
	assert_int_equal(rt_run(out, sizeof out, "run '%s' --steps 1", path), 2);
	assert_non_null(strstr(out, "recomputes"));
}

/* A split the runtime cannot execute, refused with one message before
 * anything starts: op of model split by degree, the message `why`. */
static void refused(const char *model, const char *cluster, const char *op,
		    const int degree[NDIMS], const char *why)
{
	char path[1024], out[4096];

	snprintf(path, sizeof path, "%s/refused-%s.json", tmp_dir(), op);
	rt_split_plan(model, cluster, op, degree, path);
	assert_int_equal(rt_run(out, sizeof out, "run '%s' --steps 1", path), 2);
	if (!strstr(out, why)) {
		print_error("%s\n", out);
		fail();
	}
	/* one message, before any rank started */
	assert_null(strchr(out, '\n') ? strchr(strchr(out, '\n') + 1, '\n') : NULL);
}

/* transformer_tiny's attention has 4 heads: 8 shards along c cannot each
 * run whole ones (a plan for 8 devices); a batchnorm split along h would
 * need statistics spanning its shards. */
static void test_refuses_before_launch(void **state)
{
	int heads8[NDIMS] = { 1, 8, 1, 1, 1 }, h2[NDIMS] = { 1, 1, 2, 1, 1 };

	(void)state;
	refused("transformer_tiny", "h100-1x8", "h.0.attn", heads8,
		"'h.0.attn' (attention) split 8 ways along 'c': not executable by the runtime yet");
	refused("resnet_small", "cpu-1x2", "bn1", h2,
		"'bn1' (batchnorm) split along 'h': its statistics would span shards");
}

/* No process of the job that ran `plan` is left (pgrep finds none: exit
 * 1); "[r]un" keeps pgrep from finding the shell that runs it. */
static void assert_no_rank_left(const char *plan)
{
	char cmd[1200];

	snprintf(cmd, sizeof cmd, "pgrep -f '[r]un .?%s' >/dev/null", plan);
	assert_int_not_equal(system(cmd), 0);
}

static void fault(const char *how)
{
	char path[1024], out[16384];
	struct timespec a, b;
	int st;

	snprintf(path, sizeof path, "%s/mlp-fault.json", tmp_dir());
	rt_pipeline_plan("mlp", 8, "cpu-1x2", 2, 1, SCHED_1F1B, 2, path);
	clock_gettime(CLOCK_MONOTONIC, &a);
	st = rt_run(out, sizeof out, "run '%s' --steps 1000 --warmup 0 --inject-fault 1:3:%s",
		    path, how);
	clock_gettime(CLOCK_MONOTONIC, &b);
	/* the job's exit code, not mpirun's 137; the launcher names a killed
	 * rank, a failing rank names itself */
	if (st != 1 || b.tv_sec - a.tv_sec > 30 || !strstr(out, "autopar run: rank 1")) {
		print_error("fault '%s': exit %d after %lld s:\n%s\n", how, st,
			    (long long)(b.tv_sec - a.tv_sec), out);
		fail();
	}
	assert_no_rank_left(path);
}

static void test_rank_killed(void **state)
{
	(void)state;
	fault("kill");
}

static void test_rank_error(void **state)
{
	char out[16384];

	(void)state;
	fault("error");
	rt_run(out, sizeof out, "run '%s/mlp-fault.json' --steps 5 --inject-fault 1:3:error",
	       tmp_dir());
	assert_non_null(strstr(out, "injected kernel error"));
}

/* A stopped rank (SIGSTOP: alive, but making no progress) cannot hang the
 * job: the watchdog ends it, naming the rank, and leaves no rank behind. */
static void test_rank_stopped(void **state)
{
	char path[1024], out[16384];
	struct timespec a, b;
	int st;

	(void)state;
	snprintf(path, sizeof path, "%s/mlp-stop.json", tmp_dir());
	rt_pipeline_plan("mlp", 8, "cpu-1x2", 2, 1, SCHED_1F1B, 2, path);
	clock_gettime(CLOCK_MONOTONIC, &a);
	st = rt_run(out, sizeof out, "run '%s' --steps 100000 --warmup 0 --watchdog 5 "
		    "--inject-fault 1:3:stop", path);
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (st != 1 || b.tv_sec - a.tv_sec > 60 ||
	    !strstr(out, "rank 1 made no progress for 5 s; ending the job")) {
		print_error("stopped rank: exit %d after %lld s:\n%s\n", st,
			    (long long)(b.tv_sec - a.tv_sec), out);
		fail();
	}
	assert_no_rank_left(path);
}

/* A fault for a rank the plan does not have is refused before launch. */
static void test_fault_rank_refused(void **state)
{
	char path[1024], out[4096];

	(void)state;
	snprintf(path, sizeof path, "%s/mlp-fault.json", tmp_dir());
	rt_pipeline_plan("mlp", 8, "cpu-1x2", 2, 1, SCHED_1F1B, 2, path);
	assert_int_equal(rt_run(out, sizeof out, "run '%s' --steps 1 --inject-fault 5:0:kill",
				path), 2);
	if (!strstr(out, "--inject-fault: rank 5 is not a rank of the job (the plan has ranks "
		    "0 to 1)") || strstr(out, "loss")) {
		print_error("%s\n", out);
		fail();
	}
}

/* The plan is read once, by the launcher, and every rank runs those
 * bytes: a plan file whose content changes after the launch (a FIFO that
 * gives a two-rank plan to its first reader and something else to every
 * later one) changes nothing the job runs. */
static void test_plan_read_once(void **state)
{
	char path[1024], fifo[1024], plan[16384], out[16384];
	pid_t writer;
	int st;

	(void)state;
	snprintf(path, sizeof path, "%s/mlp-once.json", tmp_dir());
	rt_pipeline_plan("mlp", 8, "cpu-1x2", 2, 1, SCHED_1F1B, 2, path);
	test_read_file(path, plan, sizeof plan);
	snprintf(fifo, sizeof fifo, "%s/mlp-fifo.json", tmp_dir());
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	writer = fork();
	assert_true(writer >= 0);
	if (writer == 0) {
		for (int k = 0;; k++) {
			const char *b = k == 0 ? plan : "{ \"changed after the launch\": 1 }\n";
			int fd = open(fifo, O_WRONLY);

			if (fd < 0 || write(fd, b, strlen(b)) != (ssize_t)strlen(b))
				_exit(1);
			close(fd);
			sleep(1); /* the first reader sees the end of its plan */
		}
	}
	st = rt_run(out, sizeof out, "run '%s' --steps 2 --warmup 0 --watchdog 30", fifo);
	kill(writer, SIGKILL);
	waitpid(writer, NULL, 0);
	unlink(fifo);
	if (st != 0 || !strstr(out, "mlp (batch 8) on 2 ranks") || !strstr(out, "loss")) {
		print_error("plan changed after the launch: exit %d:\n%s\n", st, out);
		fail();
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chains),
		cmocka_unit_test(test_replicated_stages),
		cmocka_unit_test(test_async),
		cmocka_unit_test(test_dag_of_stages),
		cmocka_unit_test(test_recompute),
		cmocka_unit_test(test_refuses_before_launch),
		cmocka_unit_test(test_rank_killed),
		cmocka_unit_test(test_rank_error),
		cmocka_unit_test(test_rank_stopped),
		cmocka_unit_test(test_fault_rank_refused),
		cmocka_unit_test(test_plan_read_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
