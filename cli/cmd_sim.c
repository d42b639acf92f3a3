/*
 * `autopar sim`: predicts a plan's iteration time, throughput, bubble and
 * memory with the simulator (core/sim/sim.h).  The plan names the model,
 * cluster, profile and batch it was made for; -m, -c and -p simulate it on
 * others (a faster network, another profile), --microbatches another
 * pipeline depth.  --trace writes the timeline
 * for chrome://tracing or Perfetto; --repeat times the simulator itself,
 * the number planners that call it in a loop care about.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "util/clock.h"
#include "commands.h"
#include "util/output.h"
#include "util/csvio.h"
#include "util/err.h"
#include "load.h"
#include "model/model_io.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "sim/sim_trace.h"


/* "1.23 GB", "512 KiB": sizes a person reads. */
static void fmt_bytes(char *buf, size_t len, double b)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (u < 4 && b >= 1024) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", b, units[u]);
}

static void print_summary(const struct plan_inputs *in, const struct sim_result *r,
			  enum optimizer opt)
{
	const struct sim_mem *m = &r->mem[r->peak_dev];
	char peak[32], cap[32], w[32], a[32], intra[32], inter[32];
	int lo = in->pl.microbatches, hi = lo;

	for (int s = 0; s < in->pl.nstages; s++) {
		int k = plan_stage_microbatches(&in->pl, s);

		lo = k < lo ? k : lo;
		hi = k > hi ? k : hi;
	}
	printf("%s: %s (batch %lld) on %s, profile %s\n", in->path, in->g.name,
	       (long long)in->g.batch, in->c.name, in->p.name[0] ? in->p.name : in->profile);
	printf("  schedule     %s, %d micro-batch%s", sched_name(in->pl.sched),
	       in->pl.microbatches, in->pl.microbatches == 1 ? "" : "es");
	if (lo != hi)
		printf(" (%d to %d per stage)", lo, hi);
	printf(", %d stage%s, %d of %d devices\n", in->pl.nstages,
	       in->pl.nstages == 1 ? "" : "s", r->ndev_used, r->ndev);
	printf("  iteration    %.3f ms (makespan %.3f ms, critical path %.3f ms)\n",
	       r->iter_s * 1e3, r->makespan_s * 1e3, r->critical_path_s * 1e3);
	printf("  throughput   %.1f samples/s\n", r->samples_per_s);
	/* a bubble within rounding of none prints as 0.0, not -0.0 */
	printf("  bubble       %.1f %%\n", fabs(r->bubble) < 5e-4 ? 0.0 : r->bubble * 100);
	fmt_bytes(peak, sizeof peak, (double)r->peak_mem_bytes);
	fmt_bytes(cap, sizeof cap, (double)r->mem_bytes);
	/* in doubles: a saturated total must not wrap the sum */
	fmt_bytes(w, sizeof w, (double)m->weights + (double)m->grads + (double)m->opt_state +
				       (double)m->stash);
	fmt_bytes(a, sizeof a, (double)m->act);
	printf("  memory       peak %s on device %d of %s (weights, gradients, %s state%s: %s; activations: %s)%s\n",
	       peak, r->peak_dev, cap, optimizer_name(opt),
	       in->pl.sched == SCHED_1F1B_ASYNC	     ? ", stashed versions"
	       : in->pl.sched == SCHED_ASYNC_PREDICT ? ", predicted weights"
						     : "",
	       w, a,
	       sim_fits(r) ? "" : ": does not fit");
	fmt_bytes(intra, sizeof intra, (double)r->link_bytes[LINK_INTRA]);
	fmt_bytes(inter, sizeof inter, (double)r->link_bytes[LINK_INTER]);
	printf("  links        %s inside nodes, %s across nodes per iteration\n", intra,
	       inter);
	printf("  tasks        %lld\n", (long long)r->ntasks);
	printf("  ");
	cost_tally_print(&r->costs, stdout);
}

static void print_csv(const struct plan_inputs *in, const struct sim_result *r,
		      enum optimizer opt)
{
	fputs("plan,model,batch,cluster,profile,schedule,microbatches,stages,optimizer,"
	      "iter_s,samples_per_s,bubble,peak_mem_bytes,peak_dev,mem_bytes,"
	      "intra_bytes,inter_bytes,makespan_s,critical_path_s,tasks",
	      stdout);
	for (int k = 0; k < NCOST_SOURCES; k++)
		printf(",cost_%s", cost_source_name((enum cost_source)k));
	putchar('\n');
	csvio_put_text(stdout, in->path);
	putchar(',');
	csvio_put_text(stdout, in->g.name);
	printf(",%lld,", (long long)in->g.batch);
	csvio_put_text(stdout, in->c.name);
	putchar(',');
	csvio_put_text(stdout, in->p.name[0] ? in->p.name : in->profile);
	printf(",%s,%d,%d,%s,", sched_name(in->pl.sched), in->pl.microbatches,
	       in->pl.nstages, optimizer_name(opt));
	csvio_put_number(stdout, r->iter_s, 1);
	putchar(',');
	csvio_put_number(stdout, r->samples_per_s, 1);
	putchar(',');
	csvio_put_number(stdout, r->bubble, 1);
	printf(",%lld,%d,%lld,%lld,%lld,", (long long)r->peak_mem_bytes, r->peak_dev,
	       (long long)r->mem_bytes, (long long)r->link_bytes[LINK_INTRA],
	       (long long)r->link_bytes[LINK_INTER]);
	csvio_put_number(stdout, r->makespan_s, 1);
	putchar(',');
	csvio_put_number(stdout, r->critical_path_s, 1);
	printf(",%lld", (long long)r->ntasks);
	for (int k = 0; k < NCOST_SOURCES; k++)
		printf(",%lld", (long long)r->costs.n[k]);
	putchar('\n');
}

/* Per-device peak memory by kind, one row per device, for plotting. */
static int write_memory(FILE *f, void *ctx)
{
	const struct sim_result *r = ctx;

	fputs("# device\tweights\tgrads\topt_state\tstash\tact\tworkspace\tpeak\n", f);
	for (int d = 0; d < r->ndev; d++) {
		const struct sim_mem *m = &r->mem[d];

		fprintf(f, "%d\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld\n", d,
			(long long)m->weights, (long long)m->grads, (long long)m->opt_state,
			(long long)m->stash, (long long)m->act, (long long)m->workspace,
			(long long)m->peak);
	}
	return ferror(f) ? AP_EFAIL : AP_OK;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Times n more runs of the same plan and prints the median: the cost a
 * planner pays per candidate once the struct sim is warm. */
static int time_runs(struct sim *s, const struct plan *pl, const struct sim_opts *o,
		     long long n, FILE *out)
{
	struct sim_result r;
	double *t = malloc((size_t)n * sizeof *t);
	int st = AP_OK;

	if (!t)
		return ap_err(AP_EFAIL, "sim", 0, "out of memory");
	for (long long k = 0; k < n && !st; k++) {
		double t0 = now_s();

		st = sim_run(s, pl, o, &r);
		t[k] = now_s() - t0;
	}
	if (!st) {
		qsort(t, (size_t)n, sizeof *t, cmp_double);
		fprintf(out, "sim: %lld runs of %lld tasks, median %.3f ms per simulation (min %.3f ms, max %.3f ms)\n",
			n, (long long)r.ntasks, t[n / 2] * 1e3, t[0] * 1e3, t[n - 1] * 1e3);
	}
	free(t);
	return st;
}

/* --repeat's most runs: a median of more says nothing new. */
#define SIM_MAX_REPEAT 10000

static int run(int argc, char **argv)
{
	const char *model = NULL, *cspec = NULL, *prof = NULL, *trace = NULL;
	const char *timeline = NULL, *memf = NULL;
	const char *optname = "sgd";
	long long repeat = 0, microbatches = 0;
	int csv = 0, npos, st;
	struct sim_opts o = { .optimizer = OPTIMIZER_SGD };
	const struct opt opts[] = {
		{ "-m", "--model", OPT_STR, &model },
		{ "-c", "--cluster", OPT_STR, &cspec },
		{ "-p", "--profile", OPT_STR, &prof },
		{ NULL, "--trace", OPT_STR, &trace },
		{ NULL, "--timeline", OPT_STR, &timeline },
		{ NULL, "--memory", OPT_STR, &memf },
		{ NULL, "--csv", OPT_FLAG, &csv },
		{ NULL, "--optimizer", OPT_STR, &optname },
		{ NULL, "--microbatches", OPT_POS_INT, &microbatches },
		{ NULL, "--repeat", OPT_POS_INT, &repeat },
		{ 0 },
	};
	struct plan_inputs in;
	struct sim s = { 0 };
	struct sim_result r;

	plan_inputs_init(&in);
	st = args_parse("sim", argc, argv, opts, &in.path, 1, &npos);
	if (st)
		return st;
	if (npos != 1)
		return ap_err(AP_EINPUT, "sim", 0,
			      "expected one plan file (see autopar help sim)");
	if (repeat > SIM_MAX_REPEAT)
		return ap_err(AP_EINPUT, "--repeat", 0, "expected at most %d runs, got %lld",
			      SIM_MAX_REPEAT, repeat);
	if (optimizer_parse(optname, &o.optimizer) != 0)
		return ap_err(AP_EINPUT, "--optimizer", 0,
			      "unknown optimizer '%s' (expected sgd or adam)", optname);
	o.record = trace || timeline;
	st = io_paths_check((const struct io_path[]){
		{ "PLAN", in.path, 0 }, { "-m", model, 0 }, { "--trace", trace, 1 },
		{ "--timeline", timeline, 1 }, { "--memory", memf, 1 } }, 5);
	if (!st)
		st = load_plan_inputs(&in, model, cspec, prof, microbatches);
	/* a plan that names its optimizer trains with it (docs/plan-format.md) */
	if (!st && in.pl.has_optimizer)
		o.optimizer = in.pl.optimizer;
	if (!st)
		st = sim_init(&s, &in.g, &in.p, &in.c);
	if (!st)
		st = sim_run(&s, &in.pl, &o, &r);
	if (!st && trace)
		st = sim_trace_write(&s, trace);
	if (!st && timeline)
		st = sim_timeline_write(&s, timeline);
	if (!st && memf)
		st = write_atomic(memf, write_memory, &r);
	if (!st) {
		if (csv)
			print_csv(&in, &r, o.optimizer);
		else
			print_summary(&in, &r, o.optimizer);
	}
	if (!st && repeat) {
		o.record = 0;
		/* under --csv, stdout stays one table */
		st = time_runs(&s, &in.pl, &o, repeat, csv ? stderr : stdout);
	}
	if (s.w)
		sim_release(&s);
	plan_inputs_release(&in);
	return st;
}

const struct command cmd_sim = {
	.name = "sim",
	.summary = "predict a plan's iteration time, memory and bubble",
	.usage = "usage: autopar sim PLAN.json [-m MODEL] [-c CLUSTER] [-p PROFILE]\n"
		 "                  [--trace FILE] [--csv] [--optimizer sgd|adam]\n"
		 "                  [--microbatches N] [--repeat N]\n\n"
		 "Simulates one training iteration of the plan on the model, cluster\n"
		 "and profile it names (each may be overridden) and prints the\n"
		 "iteration time, samples/s, the bubble fraction, the peak memory of\n"
		 "the fullest device, the bytes sent inside and across nodes, and where\n"
		 "the operator costs came from (measured, analytic, scaled, roofline).\n\n"
		 "  -m, --model M       zoo name, .model file, pipedream/NAME, or a Piper\n"
		 "                      .json input (or piper/NAME)\n"
		 "  -c, --cluster C     preset name or inline spec (4x4:v100,inter=10Gb/s);\n"
		 "                      piper: the machine of the Piper input -m names\n"
		 "  -p, --profile P     profile directory: a name under profiles/ or a path\n"
		 "  --trace FILE        write the timeline as Chrome trace JSON\n"
		 "  --timeline FILE     the same tasks as tab-separated columns\n"
		 "  --memory FILE       per-device peak memory by kind, tab-separated\n"
		 "  --csv               a header row and one row of numbers (SI units)\n"
		 "  --optimizer O       sgd (with momentum, default) or adam: the state\n"
		 "                      the update reads and keeps in memory; a plan\n"
		 "                      that names its own (training.optimizer) uses it\n"
		 "  --microbatches N    simulate with N micro-batches instead of the plan's\n"
		 "                      (a stage that names its own count keeps it)\n"
		 "  --repeat N          then time N more simulations and print the median\n"
		 "                      (at most 10000)\n",
	.run = run,
};
