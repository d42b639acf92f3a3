/*
 * `autopar bench [MATRIX] [-o FILE]`: every cell of a benchmark matrix is
 * planned, validated and simulated, and appended as one row of the results
 * CSV (bench/results.h).  A cell that fails (no plan, the plan does not fit)
 * records its reason in its row instead of stopping the run; the CSV is
 * rewritten after every row, so an interrupted run keeps what it finished
 * and a rerun skips those cells.  Benchmarks check before they time: every
 * plan is validated before it is simulated.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"
#include "args.h"
#include "commands.h"
#include "util/datadir.h"
#include "util/err.h"
#include "util/output.h"
#include "load.h"
#include "matrix.h"
#include "model/model_io.h"
#include "driver.h"
#include "planner.h"
#include "anytime.h"
#include "results.h"
#include "sim/sim.h"

/* The profile of the previous cell is kept: cells come grouped by cluster. */
struct profile_cache {
	char name[PLAN_NAME_LEN];
	struct profile p;
	int loaded;
};

static int cached_profile(struct profile_cache *pc, const struct cluster *c)
{
	char used[PLAN_NAME_LEN];
	int rc;

	if (pc->loaded && !strcmp(pc->name, c->profile))
		return AP_OK;
	if (pc->loaded)
		profile_release(&pc->p);
	pc->loaded = 0;
	profile_init(&pc->p);
	rc = load_profile(NULL, c, &pc->p, used, sizeof used);
	if (!rc) {
		snprintf(pc->name, sizeof pc->name, "%s", used);
		pc->loaded = 1;
	}
	return rc;
}

/* Plans and simulates one cell whose model and cluster are loaded. */
static int eval(const struct bench_cell *cell, const struct graph *g,
		const struct cluster *c, struct profile_cache *pc, struct bench_row *row,
		const char *anytime)
{
	const struct planner *pl;
	struct planner_opts opts;
	struct planner_input input = { .g = g, .c = c, .budget_s = cell->budget_s,
				    .seed = cell->seed, .opts = &opts };
	struct plan plan;
	int rc;

	if (cell->batch.per_device)
		input.per_device_batch = g->batch / cluster_ndevices(c);
	rc = planner_parse(cell->planner, "bench", &pl, &opts);
	if (!rc)
		rc = cached_profile(pc, c);
	if (rc)
		return rc;
	snprintf(row->profile, sizeof row->profile, "%s", pc->name);
	input.p = &pc->p;
	plan_init(&plan);
	rc = planner_run(pl, &input, pc->name, &plan);
	if (rc)
		goto out;
	row->search_s = plan.search_s;
	row->planner_est_ms = plan.est_ms;
	row->bound_ms = plan.bound_ms;
	row->gap = plan.gap;
	if (plan.ncurve > 0)
		rc = anytime_update(anytime, row, &plan);
	row->pred_iter_ms = plan.pred_iter_ms;
	row->pred_samples_s = plan.pred_samples_per_s;
	row->peak_mem_bytes = (double)plan.pred_peak_mem_bytes;
	row->bubble = plan.pred_bubble;
	row->fits = plan.pred_fits;
out:
	plan_release(&plan);
	return rc;
}

static void progress(int done, int total, double t0, int ran, int tty)
{
	double el = now_s() - t0, left = ran ? el / ran * (total - done) : 0;

	if (tty)
		fprintf(stderr, "\rbench: %d/%d cells, %.0f s, ~%.0f s left   ", done, total,
			el, left);
	else if (done == total || done % 50 == 0)
		fprintf(stderr, "bench: %d/%d cells, %.0f s, ~%.0f s left\n", done, total, el,
			left);
	if (tty && done == total)
		fputc('\n', stderr);
}

static int run(int argc, char **argv)
{
	const char *mpath = NULL, *outf = "results/bench.csv";
	char def[4096], anytime[4096];
	const struct opt opts[] = {
		{ "-o", "--output", OPT_STR, &outf },
		{ 0 },
	};
	struct profile_cache pc = { .loaded = 0 };
	struct matrix m;
	struct results t;
	int rc, npos, ran = 0, failed = 0, tty = isatty(2), dirty = 0;
	double t0 = now_s(), written = t0;

	rc = args_parse("bench", argc, argv, opts, &mpath, 1, &npos);
	if (rc)
		return rc;
	if (!mpath)
		mpath = datapath(def, sizeof def, "bench/default.matrix");
	rc = io_paths_check((const struct io_path[]){ { "MATRIX", mpath, 0 }, { "-o", outf, 1 } },
			    2);
	if (!rc)
		rc = matrix_read(mpath, &m);
	if (rc)
		return rc;
	anytime_path(outf, anytime, sizeof anytime);
	rc = results_read(outf, &t);
	if (rc)
		goto out;
	for (int i = 0; i < m.ncells && !rc; i++) {
		const struct bench_cell *cell = &m.cells[i];
		struct bench_row row;
		struct graph g;
		struct cluster c;
		int st, prev;

		bench_row_init(&row);
		snprintf(row.model, sizeof row.model, "%s", cell->model);
		snprintf(row.cluster, sizeof row.cluster, "%s", cell->cluster);
		snprintf(row.planner, sizeof row.planner, "%s", cell->planner);
		row.seed = cell->seed;
		row.budget_s = cell->budget_s;
		row.weak = cell->batch.per_device;
		ap_err_quiet(1);
		st = load_cluster(cell->cluster, cell->model, &c);
		if (!st)
			st = batch_model_load(cell->model, &cell->batch, cluster_ndevices(&c), &g);
		/* a model that does not load keeps the batch asked for (0 = its own) */
		row.batch = st ? cell->batch.n : g.batch;
		prev = results_find(&t, cell->model, row.batch, row.weak, cell->cluster,
				    cell->planner, cell->seed);
		if (prev >= 0 && t.rows[prev].ok) {
			ap_err_quiet(0);
			graph_release(&g);
			progress(i + 1, m.ncells, t0, ran, tty);
			continue;
		}
		if (!st) {
			st = eval(cell, &g, &c, &pc, &row, anytime);
			graph_release(&g);
		}
		ap_err_quiet(0);
		row.ok = st == AP_OK;
		if (!row.ok) {
			snprintf(row.error, sizeof row.error, "%s", ap_last_error());
			failed++;
		}
		ran++;
		/* a failed cell is tried again on a rerun and its row replaced */
		if (prev >= 0)
			t.rows[prev] = row;
		else
			rc = results_add(&t, &row);
		/* the file is rewritten at most once a second (and at the end):
		 * an interrupt loses a second's cells, which a rerun redoes */
		if (!rc && now_s() - written >= 1) {
			results_speedups(&t);
			rc = results_write(outf, &t);
			written = now_s();
			dirty = 0;
		} else {
			dirty = 1;
		}
		progress(i + 1, m.ncells, t0, ran, tty);
	}
	if (!rc && dirty) {
		results_speedups(&t);
		rc = results_write(outf, &t);
	}
	if (!rc)
		printf("%s: %d rows (%d new, %d failed with their reason in the row) in %.1f s\n",
		       outf, t.n, ran, failed, now_s() - t0);
	results_release(&t);
out:
	if (pc.loaded)
		profile_release(&pc.p);
	matrix_release(&m);
	return rc;
}

const struct command cmd_bench = {
	.name = "bench",
	.summary = "plan and simulate a benchmark matrix into a results CSV",
	.usage = "usage: autopar bench [MATRIX] [-o FILE]\n\n"
		 "Plans, validates and simulates every cell of MATRIX (default\n"
		 "bench/default.matrix; format in bench/matrix.h) and writes one CSV row\n"
		 "per cell to FILE (default results/bench.csv): search time, predicted\n"
		 "iteration time and samples/s, peak memory, bubble, the planner's own\n"
		 "estimate and bound where it has them, and the speedup over dp. Cells\n"
		 "already in FILE are skipped, so an interrupted run resumes; a failed\n"
		 "cell records its reason in its row. The search curves of plans that\n"
		 "have one (best iteration time over search time) go to anytime.csv\n"
		 "next to FILE.\n\n"
		 "  -o, --output FILE   the results CSV\n",
	.run = run,
};
