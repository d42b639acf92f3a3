/*
 * Reading, updating and writing the results CSV (results.h).
 */
#include "results.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/csvio.h"
#include "util/output.h"
#include "util/digest.h"
#include "util/err.h"
#include "util/grow.h"

static const char *const cols[] = {
	"model", "batch", "scaling", "cluster", "profile", "planner", "seed", "budget_s", "status",
	"search_s", "pred_iter_ms", "pred_samples_s", "peak_mem_bytes", "bubble",
	"planner_est_ms", "bound_ms", "gap", "measured_samples_s", "speedup_vs_dp", "fits", "error",
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))
#define NUM_FIRST 9 /* cols[9..18] are the optional numbers, in row order */

static double *num_field(struct bench_row *r, int k)
{
	double *f[] = { &r->search_s, &r->pred_iter_ms, &r->pred_samples_s,
			&r->peak_mem_bytes, &r->bubble, &r->planner_est_ms, &r->bound_ms,
			&r->gap, &r->measured_samples_s, &r->speedup_vs_dp };

	return f[k - NUM_FIRST];
}

void bench_row_init(struct bench_row *r)
{
	memset(r, 0, sizeof *r);
	r->fits = -1;
	for (int k = NUM_FIRST; k < NUM_FIRST + 10; k++)
		*num_field(r, k) = NAN;
}

static uint64_t cell_hash(const char *model, int64_t batch, int weak, const char *cluster,
			  const char *planner, uint64_t seed)
{
	uint64_t h = fnv1a64_str(FNV1A64_INIT, model);

	h = fnv1a64_str(fnv1a64(h, "", 1), cluster);
	h = fnv1a64_str(fnv1a64(h, "", 1), planner);
	h = fnv1a64(h, &batch, sizeof batch);
	h = fnv1a64(h, &weak, sizeof weak);
	return fnv1a64(h, &seed, sizeof seed);
}

static int same_cell(const struct bench_row *r, const char *model, int64_t batch, int weak,
		     const char *cluster, const char *planner, uint64_t seed)
{
	return r->batch == batch && r->weak == weak && r->seed == seed &&
	       !strcmp(r->model, model) && !strcmp(r->cluster, cluster) &&
	       !strcmp(r->planner, planner);
}

/* Puts row i into the index (a later row of the same cell replaces it). */
static void index_put(struct results *t, int i)
{
	const struct bench_row *r = &t->rows[i];
	uint32_t m = (uint32_t)t->nslots - 1;
	uint32_t k = (uint32_t)cell_hash(r->model, r->batch, r->weak, r->cluster, r->planner,
					 r->seed) & m;

	while (t->slots[k] >= 0 && !same_cell(&t->rows[t->slots[k]], r->model, r->batch,
					      r->weak, r->cluster, r->planner, r->seed))
		k = (k + 1) & m;
	t->slots[k] = i;
}

int results_add(struct results *t, const struct bench_row *r)
{
	if (grow(&t->rows, t->n, &t->cap, sizeof *t->rows, 64))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	t->rows[t->n++] = *r;
	if (2 * t->n > t->nslots) { /* at most half full */
		int n = t->nslots ? 2 * t->nslots : 128;
		int *s = malloc((size_t)n * sizeof *s);

		if (!s)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		free(t->slots);
		t->slots = s;
		t->nslots = n;
		memset(s, 0xff, (size_t)n * sizeof *s);
		for (int i = 0; i < t->n; i++)
			index_put(t, i);
	} else {
		index_put(t, t->n - 1);
	}
	return AP_OK;
}

static int parse_row(const struct csvio_rec *rec, const char *path, struct bench_row *r)
{
	char *const *f = rec->field;
	char *end;

	bench_row_init(r);
	if (rec->nfield != NCOLS)
		return ap_err(AP_EINPUT, path, rec->line, "%d fields, expected %d", rec->nfield,
			      NCOLS);
	for (int k = 0; k < 6; k++)
		if (k != 1 && k != 2 && strlen(f[k]) >= sizeof r->model)
			return ap_err(AP_EINPUT, path, rec->line, "%s: %zu characters, expected "
				      "at most %zu", cols[k], strlen(f[k]), sizeof r->model - 1);
	snprintf(r->model, sizeof r->model, "%s", f[0]);
	snprintf(r->cluster, sizeof r->cluster, "%s", f[3]);
	snprintf(r->profile, sizeof r->profile, "%s", f[4]);
	snprintf(r->planner, sizeof r->planner, "%s", f[5]);
	snprintf(r->error, sizeof r->error, "%s", f[20]);
	errno = 0;
	r->batch = strtoll(f[1], &end, 10);
	if (*end || errno || r->batch < 0)
		return ap_err(AP_EINPUT, path, rec->line, "batch '%s' is not a non-negative "
			      "integer", f[1]);
	if (strcmp(f[2], "strong") && strcmp(f[2], "weak"))
		return ap_err(AP_EINPUT, path, rec->line, "scaling '%s' (expected strong or weak)",
			      f[2]);
	r->weak = f[2][0] == 'w';
	r->seed = strtoull(f[6], &end, 10);
	if (*end || errno || !*f[6])
		return ap_err(AP_EINPUT, path, rec->line, "seed '%s' is not an integer", f[6]);
	r->budget_s = strtod(f[7], &end);
	if (*end || errno)
		return ap_err(AP_EINPUT, path, rec->line, "budget_s '%s' is not a number", f[7]);
	if (strcmp(f[8], "ok") && strcmp(f[8], "failed"))
		return ap_err(AP_EINPUT, path, rec->line, "status '%s' (expected ok or failed)",
			      f[8]);
	r->ok = f[8][0] == 'o';
	if (strcmp(f[19], "") && strcmp(f[19], "0") && strcmp(f[19], "1"))
		return ap_err(AP_EINPUT, path, rec->line, "fits '%s' (expected 1, 0 or empty)",
			      f[19]);
	r->fits = *f[19] ? f[19][0] - '0' : -1;
	for (int k = NUM_FIRST; k < NUM_FIRST + 10; k++) {
		if (!*f[k])
			continue;
		*num_field(r, k) = strtod(f[k], &end);
		if (*end || errno)
			return ap_err(AP_EINPUT, path, rec->line, "%s '%s' is not a number",
				      cols[k], f[k]);
	}
	return AP_OK;
}

int results_read(const char *path, struct results *t)
{
	struct csvio_table tab;
	int rc;

	memset(t, 0, sizeof *t);
	if (access(path, F_OK) != 0)
		return AP_OK;
	rc = csvio_table_read(path, cols, NCOLS, &tab);
	for (int i = 1; i < tab.nrec && !rc; i++) {
		struct bench_row r;

		rc = parse_row(&tab.rec[i], path, &r);
		if (!rc)
			rc = results_add(t, &r);
	}
	csvio_table_release(&tab);
	if (rc)
		results_release(t);
	return rc;
}

static void put_num(FILE *f, double x)
{
	/* six significant digits: the simulator is no more precise, and the
	 * CSV stays readable */
	fputc(',', f);
	if (!isnan(x))
		fprintf(f, "%.6g", x);
}

static int write_rows(FILE *f, void *ctx)
{
	const struct results *t = ctx;

	fprintf(f, "%s\n", RESULTS_HEADER);
	for (int i = 0; i < t->n; i++) {
		struct bench_row *r = &t->rows[i];

		csvio_put_text(f, r->model);
		fprintf(f, ",%lld,%s,", (long long)r->batch, r->weak ? "weak" : "strong");
		csvio_put_text(f, r->cluster);
		fputc(',', f);
		csvio_put_text(f, r->profile);
		fputc(',', f);
		csvio_put_text(f, r->planner);
		fprintf(f, ",%llu", (unsigned long long)r->seed);
		put_num(f, r->budget_s);
		fprintf(f, ",%s", r->ok ? "ok" : "failed");
		for (int k = NUM_FIRST; k < NUM_FIRST + 10; k++)
			put_num(f, *num_field(r, k));
		fputc(',', f);
		if (r->fits >= 0)
			fputc('0' + r->fits, f);
		fputc(',', f);
		csvio_put_text(f, r->error);
		fputc('\n', f);
	}
	return ferror(f) ? AP_EFAIL : AP_OK;
}

int results_write(const char *path, const struct results *t)
{
	return write_atomic(path, write_rows, (void *)t);
}

void results_release(struct results *t)
{
	free(t->rows);
	free(t->slots);
	memset(t, 0, sizeof *t);
}

int results_find(const struct results *t, const char *model, int64_t batch, int weak,
		 const char *cluster, const char *planner, uint64_t seed)
{
	uint32_t m = (uint32_t)t->nslots - 1, k;

	if (!t->nslots)
		return -1;
	for (k = (uint32_t)cell_hash(model, batch, weak, cluster, planner, seed) & m;
	     t->slots[k] >= 0; k = (k + 1) & m)
		if (same_cell(&t->rows[t->slots[k]], model, batch, weak, cluster, planner, seed))
			return t->slots[k];
	return -1;
}

void results_speedups(struct results *t)
{
	for (int i = 0; i < t->n; i++) {
		struct bench_row *r = &t->rows[i];
		int d = results_find(t, r->model, r->batch, r->weak, r->cluster, "dp", r->seed);

		r->speedup_vs_dp = NAN;
		if (d >= 0 && r->ok && t->rows[d].ok && !strcmp(t->rows[d].profile, r->profile) &&
		    t->rows[d].pred_samples_s > 0)
			r->speedup_vs_dp = r->pred_samples_s / t->rows[d].pred_samples_s;
	}
}
