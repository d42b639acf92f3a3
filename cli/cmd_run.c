/*
 * `autopar run`: executes a plan for real (docs/runtime.md), one process
 * per device of the plan.  Outside an MPI job it re-launches itself under
 * mpirun (runtime/launch.c); every rank then loads the same plan, builds
 * its part (runtime/exec.h) and trains for --warmup + --steps steps.  The
 * step time is the slowest rank's; samples/s is the batch over the median
 * step after warm-up, with the 10th and 90th percentile as its spread.
 * --check trains the same steps on one device and compares the loss of
 * every step and every weight at the end (runtime/check.h).  -o appends
 * one row to a results CSV with the simulator's prediction beside the
 * measurement; --loss-csv writes the loss of every step (warm-up
 * included), for loss curves; --times-csv the time of every timed step,
 * the samples behind the median, so that a benchmark can pool the steps
 * of several runs (bench/torch-peer-cpu); --dump writes the first step on one device
 * (initial weights, batch, loss, gradients) for another framework to
 * repeat (runtime/dump.h).
 *
 * A failing rank aborts the whole job (the transport's abort), so no rank
 * is left waiting for a message that will never come.  The plan is read
 * once (by the launcher, or rank 0 in a job started by hand) and its
 * bytes sent to every rank, so every rank runs what was validated.  The
 * launcher stays to supervise the job (runtime/watch.h): a rank that dies,
 * fails or makes no progress for --watchdog seconds ends the whole job
 * with exit 1 and a message naming it.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "backend.h"
#include "check.h"
#include "util/clock.h"
#include "commands.h"
#include "util/csvio.h"
#include "util/output.h"
#include "dump.h"
#include "util/err.h"
#include "util/stats.h"
#include "exec.h"
#include "exec_layout.h"
#include "exec_support.h"
#include "exec_update.h"
#include "gpu.h"
#include "gpu_opts.h"
#include "launch.h"
#include "load.h"
#include "model/model_io.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "trace.h"
#include "transport_mpi.h"
#include "transport_nccl.h"
#include "transport_self.h"
#include "transport_staged.h"
#include "watch.h"

#define WHO "autopar run"

#define RUN_HEADER                                                                  \
	"model,batch,cluster,planner,schedule,microbatches,stages,ranks,steps,warmup," \
	"pred_iter_ms,meas_iter_ms,meas_iter_ms_p10,meas_iter_ms_p90,"                \
	"meas_iter_ms_ci_lo,meas_iter_ms_ci_hi,samples_per_s,"                        \
	"loss_first,loss_last,check_rel_diff"


struct run_out {
	int steps, warmup, ranks;
	double pred_ms, med_ms, p10_ms, p90_ms, loss_first, loss_last, check;
	double ci_lo_ms, ci_hi_ms; /* the median's 95% interval (util/stats.h) */
	double pairs;  /* forward/backward pairs run on two threads, all ranks */
	const char *timeline; /* where the timeline of the middle timed step goes */
	double *loss; /* [warmup + steps] */
	double *ms;   /* [warmup + steps], the slowest rank's, in step order */
};

/* A fault to inject, for testing that a failing rank ends the job. */
struct fault {
	int rank;
	long long step;
	int sig; /* the rank raises SIGKILL or SIGSTOP; 0: a kernel reports an error */
};

static int parse_fault(const char *s, struct fault *f)
{
	char how[16] = "";

	f->rank = -1;
	if (!s)
		return AP_OK;
	if (sscanf(s, "%d:%lld:%15s", &f->rank, &f->step, how) != 3 || f->rank < 0 ||
	    f->step < 0 || (strcmp(how, "kill") && strcmp(how, "stop") && strcmp(how, "error")))
		return ap_err(AP_EINPUT, "--inject-fault", 0,
			      "expected RANK:STEP:kill, RANK:STEP:stop or RANK:STEP:error, got '%s'",
			      s);
	f->sig = !strcmp(how, "kill") ? SIGKILL : !strcmp(how, "stop") ? SIGSTOP : 0;
	return AP_OK;
}

struct bytes {
	const char *b;
	long len;
};

static int put_bytes(FILE *f, void *ctx)
{
	const struct bytes *b = ctx;

	return fwrite(b->b, 1, (size_t)b->len, f) == (size_t)b->len ? AP_OK : AP_EFAIL;
}

static int write_bytes(const char *path, const char *b, long len)
{
	struct bytes c = { b, len };

	if (write_atomic(path, put_bytes, &c))
		return ap_err(AP_EFAIL, path, 0, "cannot write the job's copy of the plan");
	return AP_OK;
}

static double predict_ms(struct plan_inputs *in)
{
	struct sim s = { 0 };
	struct sim_result r;
	double ms = NAN;

	if (!sim_init(&s, &in->g, &in->p, &in->c) && !sim_run(&s, &in->pl, NULL, &r))
		ms = r.iter_s * 1e3;
	if (s.w)
		sim_release(&s);
	return ms;
}

/* Compares the plan's training with the reference on rank 0; collective. */
static int check(struct plan_inputs *in, struct exec *e, struct transport *t,
		 const struct backend *be, const struct exec_opts *o, int nsteps,
		 const double *losses, double *worst)
{
	const struct graph *g = &in->g;
	float **mine = calloc((size_t)g->nops, sizeof *mine);
	float **ref = calloc((size_t)g->nops, sizeof *ref);
	double *rl = calloc((size_t)nsteps, sizeof *rl);
	struct plan rp;
	int st = mine && ref && rl ? AP_OK : ap_err(AP_EFAIL, NULL, 0, "out of memory");
	const char *where = "loss";

	plan_init(&rp);
	for (int i = 0; i < g->nops && !st; i++) {
		if (g->ops[i].params <= 0 || t->rank != 0)
			continue;
		mine[i] = calloc((size_t)g->ops[i].params, sizeof **mine);
		ref[i] = calloc((size_t)g->ops[i].params, sizeof **ref);
		if (!mine[i] || !ref[i])
			st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int i = 0; i < g->nops && !st; i++)
		if (g->ops[i].params > 0)
			st = exec_gather_params(e, i, mine[i]);
	*worst = 0;
	if (!st && t->rank == 0) {
		/* the reference follows the plan's round-robin rounds and
		 * its batchnorm groups (check.h) */
		struct exec_opts ro = *o;

		ro.checked = &in->pl;
		st = check_reference_plan(g, &in->pl, &rp);
		if (!st)
			st = check_train(g, &rp, be, &ro, nsteps, rl, ref);
		for (int s = 0; s < nsteps && !st; s++) {
			double d = fabs(losses[s] - rl[s]) / fmax(fabs(rl[s]), 1e-30);

			if (!(d <= *worst))
				*worst = d;
		}
		for (int i = 0; i < g->nops && !st; i++) {
			double d;

			if (!mine[i])
				continue;
			d = check_rel_diff(mine[i], ref[i], g->ops[i].params);
			if (!(d <= *worst)) {
				*worst = d;
				where = g->ops[i].name;
			}
		}
		if (!st)
			printf("check: %d steps against one device: largest relative difference %.3g (%s)\n",
			       nsteps, *worst, where);
	}
	if (!st)
		st = t->ops->max(t, worst, 1);
	for (int i = 0; i < g->nops; i++) {
		if (mine)
			free(mine[i]);
		if (ref)
			free(ref[i]);
	}
	free(mine);
	free(ref);
	free(rl);
	plan_release(&rp);
	return st;
}

struct row_ctx {
	const char *path;
	const struct plan_inputs *in;
	const struct run_out *r;
};

static void put_num(FILE *f, double x)
{
	putc(',', f);
	if (isfinite(x))
		csvio_put_number(f, x, 1);
}

/* The existing rows (when the header is ours), then the new one. */
static int write_rows(FILE *f, void *ctx)
{
	const struct row_ctx *c = ctx;
	const struct plan_inputs *in = c->in;
	const struct run_out *r = c->r;
	struct stat sb;
	/* a device or FIFO written in place has no rows to keep */
	FILE *old = stat(c->path, &sb) == 0 && S_ISREG(sb.st_mode) ? fopen(c->path, "r") : NULL;
	char line[4096];

	if (old && fgets(line, sizeof line, old) && !strncmp(line, RUN_HEADER, strlen(RUN_HEADER))) {
		fputs(line, f);
		while (fgets(line, sizeof line, old))
			fputs(line, f);
	} else {
		fputs(RUN_HEADER "\n", f);
	}
	if (old)
		fclose(old);
	csvio_put_text(f, in->g.name);
	fprintf(f, ",%lld,", (long long)in->g.batch);
	csvio_put_text(f, in->c.name);
	putc(',', f);
	csvio_put_text(f, in->pl.planner);
	fprintf(f, ",%s,%d,%d,%d,%d,%d", sched_name(in->pl.sched), in->pl.microbatches,
		in->pl.nstages, r->ranks, r->steps, r->warmup);
	put_num(f, r->pred_ms);
	put_num(f, r->med_ms);
	put_num(f, r->p10_ms);
	put_num(f, r->p90_ms);
	put_num(f, r->ci_lo_ms);
	put_num(f, r->ci_hi_ms);
	put_num(f, in->g.batch / (r->med_ms * 1e-3));
	put_num(f, r->loss_first);
	put_num(f, r->loss_last);
	put_num(f, r->check);
	putc('\n', f);
	return ferror(f) ? AP_EFAIL : AP_OK;
}

#define LOSS_HEADER "step,loss\n"

#define TIMES_HEADER "step,iter_ms\n"

/* The timed steps only: the file holds the samples of the median. */
static int write_times(FILE *f, void *ctx)
{
	const struct run_out *r = ctx;

	fputs(TIMES_HEADER, f);
	for (int s = r->warmup; s < r->warmup + r->steps; s++) {
		fprintf(f, "%d", s);
		put_num(f, r->ms[s]);
		putc('\n', f);
	}
	return ferror(f) ? AP_EFAIL : AP_OK;
}

static int write_losses(FILE *f, void *ctx)
{
	const struct run_out *r = ctx;

	fputs(LOSS_HEADER, f);
	for (int s = 0; s < r->warmup + r->steps; s++) {
		fprintf(f, "%d", s);
		put_num(f, r->loss[s]);
		putc('\n', f);
	}
	return ferror(f) ? AP_EFAIL : AP_OK;
}

/* An existing regular file at path must begin with header (what it is
 * about to hold): -o appends rows to a results file, --loss-csv replaces a
 * loss curve; neither may take another file's place. */
static int check_existing(const char *opt, const char *path, const char *header)
{
	char line[4096];
	struct stat sb;
	int ok = 1;
	FILE *f;

	if (!path || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || !(f = fopen(path, "r")))
		return AP_OK;
	if (fgets(line, sizeof line, f))
		ok = !strncmp(line, header, strlen(header));
	fclose(f);
	if (!ok)
		return ap_err(AP_EINPUT, path, 1, "expected the header '%.*s' of the file %s writes "
			      "(it is not overwritten)", (int)strcspn(header, "\n"), header, opt);
	return AP_OK;
}

/* Ranks of this job on this node (Open MPI tells each rank). */
static int local_ranks(const struct transport *t)
{
	const char *v = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");

	return v && atoi(v) > 0 ? atoi(v) : t->size;
}

static const char *const transports[] = { "auto", "mpi", "staged", "nccl" };

/* The transport the ranks talk through (*use): the MPI (or self)
 * transport base itself for "mpi", or wrap on top of it: "staged" (host
 * copies of backend memory), "nccl"; "auto" is mpi for the CPU backend,
 * else nccl with one rank per GPU and staged where ranks share a GPU or
 * NCCL is not built.  Collective. */
static int open_transport(struct transport *base, struct transport *wrap,
			  struct transport **use, const char *kind, const struct backend *be)
{
	char why[128];
	int auto_ = !strcmp(kind, "auto"), st;

	*use = base;
	if (!strcmp(kind, "mpi") || base->size == 1 || (auto_ && be == &backend_cpu))
		return AP_OK;
	if (!strcmp(kind, "staged") ||
	    (auto_ && (!transport_nccl_built() || local_ranks(base) > gpu_count(why, sizeof why))))
		st = transport_staged_init(wrap, base, be);
	else
		st = transport_nccl_init(wrap, base, be);
	if (!st)
		*use = wrap;
	return st;
}

/* The training loop of every rank. */
static int train(struct plan_inputs *in, struct transport *t, const struct backend *be,
		 const struct exec_opts *o, int do_check, const struct fault *fault,
		 struct run_out *r)
{
	int n = r->warmup + r->steps, traced = r->timeline ? r->warmup + r->steps / 2 : -1, st;
	double *ms = calloc((size_t)n, sizeof *ms), *loss = calloc((size_t)n, sizeof *loss);
	double *sorted = calloc((size_t)r->steps, sizeof *sorted);
	struct exec *e = NULL;
	struct trace tr;

	if (!ms || !loss || !sorted) {
		free(ms);
		free(loss);
		free(sorted);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	r->loss = loss;
	r->ms = ms;
	st = trace_init(&tr);
	if (!st)
		st = exec_create(&e, &in->g, &in->pl, be, t, o);
	for (int s = 0; s < n && !st; s++) {
		double t0;

		if (fault->rank == t->rank && fault->step == s) {
			if (fault->sig)
				raise(fault->sig);
			st = ap_err(AP_EFAIL, "--inject-fault", 0, "rank %d: injected kernel error at step %d",
				    t->rank, s);
			break;
		}
		st = t->ops->barrier(t);
		if (!st && traced == s) {
			trace_start(&tr);
			exec_set_trace(e, &tr);
		}
		t0 = now_s();
		if (!st)
			st = exec_step(e, s, &loss[s]);
		ms[s] = (now_s() - t0) * 1e3;
		if (!st && traced == s)
			exec_set_trace(e, NULL);
		if (!st)
			st = t->ops->max(t, &ms[s], 1);
		if (!st)
			watch_progress(ms[s] * 1e-3);
	}
	if (!st) {
		memcpy(sorted, ms + r->warmup, (size_t)r->steps * sizeof *sorted);
		stats_sort(sorted, r->steps);
		r->med_ms = stats_quantile(sorted, r->steps, 0.5);
		r->p10_ms = stats_quantile(sorted, r->steps, 0.1);
		r->p90_ms = stats_quantile(sorted, r->steps, 0.9);
		stats_median_ci(sorted, r->steps, &r->ci_lo_ms, &r->ci_hi_ms);
		r->loss_first = loss[0];
		r->loss_last = loss[n - 1];
		r->pairs = (double)exec_pairs(e);
		st = t->ops->sum(t, &r->pairs, 1);
	}
	if (!st && r->timeline)
		st = trace_write(&tr, t, &in->g, r->timeline);
	if (!st && do_check)
		st = check(in, e, t, be, o, n, loss, &r->check);
	exec_free(e);
	trace_release(&tr);
	free(sorted);
	return st;
}

static int run(int argc, char **argv)
{
	const char *out = NULL, *fault_s = NULL, *lr_s = NULL, *tol_s = NULL, *loss_out = NULL;
	const char *timeline = NULL, *dump = NULL, *times_out = NULL;
	const char *be_name = "cpu", *tr_kind = "auto", *prec_s = "fp32";
	long long steps = 20, pool = 4, warmup = 3;
	uint64_t seed = 1;
	double watchdog = -1;
	char *bytes = NULL, job[4096];
	long len = -1;
	int mpirun = 0;
	int do_check = 0, naive = 0, serial = 0, verbose = 0, npos, st;
	const struct opt opts[] = {
		{ NULL, "--steps", OPT_POS_INT, &steps },
		{ NULL, "--warmup", OPT_COUNT, &warmup },
		{ NULL, "--watchdog", OPT_SECONDS, &watchdog },
		{ NULL, "--check", OPT_FLAG, &do_check },
		{ NULL, "--seed", OPT_SEED, &seed },
		{ NULL, "--lr", OPT_STR, &lr_s },
		{ NULL, "--pool", OPT_POS_INT, &pool },
		{ NULL, "--tolerance", OPT_STR, &tol_s },
		{ NULL, "--naive", OPT_FLAG, &naive },
		{ NULL, "--serial", OPT_FLAG, &serial },
		{ NULL, "--loss-csv", OPT_STR, &loss_out },
		{ NULL, "--times-csv", OPT_STR, &times_out },
		{ NULL, "--timeline", OPT_STR, &timeline },
		{ NULL, "--dump", OPT_STR, &dump },
		{ "-o", "--output", OPT_STR, &out },
		{ NULL, "--inject-fault", OPT_STR, &fault_s },
		{ NULL, "--backend", OPT_STR, &be_name },
		{ NULL, "--transport", OPT_STR, &tr_kind },
		{ NULL, "--precision", OPT_STR, &prec_s },
		{ NULL, "--verbose", OPT_FLAG, &verbose },
		{ 0 },
	};
	const struct backend *be = &backend_cpu;
	struct exec_opts o = { .momentum = 0.9f };
	struct plan_inputs in;
	struct run_out r = { 0 };
	struct transport t = { 0 }, wrap = { 0 }, *tp = &t;
	struct fault fault;
	enum gpu_prec prec = GPU_FP32;
	double tol = 1e-5;
	char *end;

	plan_inputs_init(&in);
	st = args_parse("run", argc, argv, opts, &in.path, 1, &npos);
	if (!st && npos != 1)
		st = ap_err(AP_EINPUT, "run", 0, "expected one plan file (see autopar help run)");
	if (!st && lr_s && (o.lr = strtof(lr_s, &end), *end || !(o.lr > 0) || !isfinite(o.lr)))
		st = ap_err(AP_EINPUT, "--lr", 0, "expected a positive finite number, got '%s'",
			    lr_s);
	if (!st && tol_s && (tol = strtod(tol_s, &end), *end || !(tol > 0) || !isfinite(tol)))
		st = ap_err(AP_EINPUT, "--tolerance", 0,
			    "expected a positive finite number, got '%s'", tol_s);
	if (!st)
		st = parse_fault(fault_s, &fault);
	if (!st && !(be = backend_find(be_name)))
		st = ap_err(AP_EINPUT, "--backend", 0, "expected cpu or cuda, got '%s'", be_name);
	if (!st)
		st = gpu_prec_parse(prec_s, &prec);
	/* the CPU backend's products are float32 only: tf32 there would
	 * claim a speed-up it does not have */
	if (!st && prec != GPU_FP32 && be != &backend_cuda)
		st = ap_err(AP_EINPUT, "--precision", 0,
			    "%s needs --backend cuda (the cpu backend computes in fp32 only)",
			    gpu_prec_name(prec));
	if (!st)
		gpu_opts_set(prec, verbose ? stdout : NULL);
	if (!st) {
		size_t k = 0;

		while (k < sizeof transports / sizeof transports[0] && strcmp(transports[k], tr_kind))
			k++;
		if (k == sizeof transports / sizeof transports[0])
			st = ap_err(AP_EINPUT, "--transport", 0,
				    "expected auto, mpi, staged or nccl, got '%s'", tr_kind);
	}
	/* a backend that cannot run here says why before anything starts */
	if (!st)
		st = be->init();
	if (!st && steps > 1000000)
		st = ap_err(AP_EINPUT, "--steps", 0, "expected at most 1000000 steps");
	if (!st && warmup > 1000000)
		st = ap_err(AP_EINPUT, "--warmup", 0, "expected at most 1000000 steps");
	if (!st)
		st = io_paths_check((const struct io_path[]){
			{ "PLAN", in.path, 0 }, { "-o", out, 1 }, { "--loss-csv", loss_out, 1 },
			{ "--times-csv", times_out, 1 }, { "--timeline", timeline, 1 },
			{ "--dump", dump, 1 } }, 6);
	if (!st)
		st = check_existing("-o", out, RUN_HEADER);
	if (!st)
		st = check_existing("--loss-csv", loss_out, LOSS_HEADER);
	if (!st)
		st = check_existing("--times-csv", times_out, TIMES_HEADER);
	if (st)
		goto out;
	/* The plan is read once: by the launcher, which validates it before
	 * anything starts and leaves a copy of those bytes in the job's
	 * directory, or, in a job started by hand, by rank 0; rank 0 sends
	 * them to every rank, and every rank parses the same bytes. */
	if (transport_mpi_in_job()) {
		int read_st = AP_OK;

		st = transport_mpi_init(&t, &argc, &argv);
		if (st)
			goto out;
		if (t.rank == 0) {
			const char *dir = getenv(WATCH_ENV);

			snprintf(job, sizeof job, "%s/plan.json", dir ? dir : "");
			read_st = load_plan_bytes(dir && *dir ? job : in.path, &bytes, &len);
		}
		/* rank 0 sends even when it could not read (len -1): no rank waits */
		st = transport_mpi_share(&t, &bytes, &len);
		if (read_st)
			st = read_st;
		if (!st)
			st = watch_rank_start(t.rank);
	} else {
		st = load_plan_bytes(in.path, &bytes, &len);
	}
	if (!st)
		st = load_plan_inputs_bytes(&in, bytes, len, NULL, NULL, NULL, 0);
	if (!st)
		st = exec_supported(&in.g, &in.pl, be, in.path);
	if (!st && fault.rank >= exec_ranks(&in.pl))
		st = ap_err(AP_EINPUT, "--inject-fault", 0,
			    "rank %d is not a rank of the job (the plan has ranks 0 to %d)",
			    fault.rank, exec_ranks(&in.pl) - 1);
	if (st) {
		watch_rank_end(1); /* every rank refuses the same bytes alike */
		if (t.ops)
			t.ops->release(&t);
		goto out;
	}
	if (!lr_s)
		o.lr = exec_default_lr(&in.pl);
	r.steps = (int)steps;
	r.warmup = (int)warmup;
	r.timeline = timeline;
	r.ranks = exec_ranks(&in.pl);
	o.seed = seed;
	/* only the steps run use a batch: a larger pool is never built */
	o.pool = (int)(pool < r.warmup + r.steps ? pool : r.warmup + r.steps);
	o.naive = naive;
	o.serial = serial;
	o.steps = r.warmup + r.steps;
	/* once per run: by the launcher, or rank 0 of a job started by hand */
	if (dump && (!t.ops || (t.rank == 0 && !getenv(WATCH_ENV))))
		st = dump_first_step(dump, &in.g, be, &o);
	if (st) {
		if (t.ops)
			t.ops->abort(&t, st);
		goto out;
	}
	if (!t.ops && r.ranks > 1) {
		/* supervised (watch.h): the job ends, naming the rank, when one
		 * dies, fails or makes no progress */
		st = watch_job_dir(job, sizeof job);
		if (!st) {
			char copy[sizeof job + 16];

			snprintf(copy, sizeof copy, "%s/plan.json", job);
			st = write_bytes(copy, bytes, len);
			if (!st)
				st = launch_mpirun(r.ranks, argc, argv, &mpirun);
			if (!st)
				st = watch_supervise(mpirun, r.ranks,
						     watchdog < 0 ? 0 : watchdog == 0 ? -1 : watchdog,
						     job);
			else
				watch_remove(job);
		}
		goto out;
	}
	if (!t.ops)
		transport_self_init(&t);
	st = open_transport(&t, &wrap, &tp, tr_kind, be);
	if (st) {
		fflush(stdout);
		watch_rank_end(0);
		t.ops->abort(&t, st);
	}
	if (t.rank == 0)
		printf("%s: %s (batch %lld) on %d rank%s, %s, %s, %d micro-batch%s; backend %s (%s)\n",
		       in.path, in.g.name, (long long)in.g.batch, r.ranks, r.ranks == 1 ? "" : "s",
		       in.pl.planner, sched_name(in.pl.sched), in.pl.microbatches,
		       in.pl.microbatches == 1 ? "" : "es", be->name, be->describe());
	r.pred_ms = predict_ms(&in);
	r.check = NAN;
	st = train(&in, tp, be, &o, do_check, &fault, &r);
	if (st) {
		fflush(stdout);
		watch_rank_end(0);
		tp->ops->abort(tp, st);
	}
	if (t.rank == 0) {
		printf("  loss         %.4f -> %.4f over %d steps\n", r.loss_first, r.loss_last,
		       r.warmup + r.steps);
		printf("  iteration    %.3f ms median", r.med_ms);
		if (isnan(r.ci_lo_ms))
			printf(" (p10 %.3f, p90 %.3f; a 95%% interval needs 8 steps)", r.p10_ms,
			       r.p90_ms);
		else
			printf(" (95%% CI %.3f-%.3f; p10 %.3f, p90 %.3f)", r.ci_lo_ms, r.ci_hi_ms,
			       r.p10_ms, r.p90_ms);
		printf(" over %d steps after %d warm-up; predicted %.3f ms\n", r.steps, r.warmup,
		       r.pred_ms);
		printf("  throughput   %.1f samples/s\n", in.g.batch / (r.med_ms * 1e-3));
		if (in.pl.sched == SCHED_ASYNC_PREDICT)
			printf("  overlap      %.0f forward/backward pairs ran on two threads\n",
			       r.pairs);
		if (do_check && !(r.check <= tol)) {
			ap_err(AP_EFAIL, in.path, 0,
			       "check failed: relative difference %.3g above the tolerance %.3g",
			       r.check, tol);
			st = AP_EFAIL;
		}
		if (out && !st) {
			struct row_ctx c = { out, &in, &r };

			st = write_atomic(out, write_rows, &c);
		}
		if (loss_out && !st)
			st = write_atomic(loss_out, write_losses, &r);
		if (times_out && !st)
			st = write_atomic(times_out, write_times, &r);
	}
	if (!st && do_check && !(r.check <= tol))
		st = AP_EFAIL;
	if (tp != &t)
		tp->ops->release(tp);
	t.ops->release(&t);
	watch_rank_end(1);
out:
	free(bytes);
	free(r.loss);
	free(r.ms);
	plan_inputs_release(&in);
	return st;
}

const struct command cmd_run = {
	.name = "run",
	.summary = "execute a plan on CPU or GPU ranks and measure it",
	.usage = "usage: autopar run PLAN.json [--steps N] [--warmup N] [--check] [--seed N]\n"
		 "                  [--lr X] [--pool N] [--tolerance X] [--naive] [--serial]\n"
		 "                  [-o RESULTS.csv] [--loss-csv LOSS.csv] [--times-csv T.csv]\n"
		 "                  [--timeline T.tsv] [--backend cpu|cuda]\n"
		 "                  [--precision fp32|tf32] [--verbose]\n"
		 "                  [--transport auto|mpi|staged|nccl] [--watchdog SECONDS]\n"
		 "                  [--dump FILE]\n\n"
		 "Trains the plan's model with one process per device of the plan (MPI\n"
		 "ranks; started under mpirun when run outside an MPI job, which is also\n"
		 "how a multi-node job is run: mpirun -hostfile H -np N autopar run ...).\n"
		 "Prints the loss, the median iteration time after warm-up with its\n"
		 "spread, samples/s and the simulator's prediction.\n\n"
		 "  --steps N           timed steps (default 20)\n"
		 "  --warmup N          untimed steps first (default 3)\n"
		 "  --check             also train on one device and compare the loss of\n"
		 "                      every step and all weights at the end (exit 1 when\n"
		 "                      they differ by more than the tolerance); check a\n"
		 "                      few steps: once round-off flips a max-pool winner\n"
		 "                      or a ReLU, two correct runs drift apart\n"
		 "  --tolerance X       relative difference --check accepts (default 1e-5)\n"
		 "  --seed N            seed of data, labels and initial weights (default 1)\n"
		 "  --lr X              learning rate of the plan's optimizer: Adam where the\n"
		 "                      plan names it (default 0.001), else SGD with momentum\n"
		 "                      0.9 (default 0.02)\n"
		 "  --pool N            distinct batches the steps cycle through (default 4;\n"
		 "                      at most the warm-up and steps run)\n"
		 "  --serial            async-predict: a stage's paired forward and\n"
		 "                      backward one after the other, not on two threads\n"
		 "  --naive             asynchronous schedules without stashing or\n"
		 "                      prediction: every task runs with the current weights\n"
		 "  -o, --output FILE   append one row to a results CSV\n"
		 "  --loss-csv FILE     write the loss of every step (step,loss)\n"
		 "  --times-csv FILE    write the time of every timed step (step,iter_ms;\n"
		 "                      the slowest rank's), the samples of the median\n"
		 "  --timeline FILE     write when each rank ran each task of the middle\n"
		 "                      timed step, in the format of `autopar sim --timeline`\n"
		 "  --dump FILE         first write the first step of the model on one\n"
		 "                      device: initial weights, batch, labels, loss and\n"
		 "                      gradients (a text header, then float32 data;\n"
		 "                      docs/runtime.md), for another framework to repeat\n"
		 "  --backend NAME      cpu (default) or cuda: one GPU per rank, the\n"
		 "                      rank's local index modulo the GPUs of its node\n"
		 "  --precision P       cuda: fp32 (default; float32 products, as the cpu\n"
		 "                      backend) or tf32 (tensor cores on TF32 inputs,\n"
		 "                      as PyTorch's allow_tf32; --check then needs a\n"
		 "                      looser --tolerance, such as 1e-3); cpu: fp32 only\n"
		 "  --verbose           cuda: one line per convolution shape and direction\n"
		 "                      with the algorithm cuDNN's search chose, its time\n"
		 "                      and workspace\n"
		 "  --transport KIND    mpi; staged (backend memory through host copies);\n"
		 "                      nccl (one rank per GPU: NCCL all-reduces); auto\n"
		 "                      (default): mpi on cpu, on cuda nccl with one rank\n"
		 "                      per GPU, else staged\n"
		 "  --watchdog SECONDS  end the job (exit 1, naming the rank) when a rank\n"
		 "                      makes no progress for this long (default: 60 s or\n"
		 "                      5 slowest steps, whichever is longer; 0: never);\n"
		 "                      a rank that dies or fails ends it at once\n"
		 "  --inject-fault RANK:STEP:kill|stop|error\n"
		 "                      make a rank die, stop (SIGSTOP) or fail, to test\n"
		 "                      that the job ends\n",
	.run = run,
};
