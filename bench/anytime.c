/*
 * anytime.csv (anytime.h): read whole, the cell's rows replaced, written
 * back atomically; small next to the search that produced it.
 */
#include "anytime.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/csvio.h"
#include "util/output.h"
#include "util/err.h"

static const char *const cols[] = { "model", "batch", "cluster", "planner", "seed",
				    "search_s", "best_iter_ms" };
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))

void anytime_path(const char *results_csv, char *buf, size_t len)
{
	const char *slash = strrchr(results_csv, '/');
	int dir = slash ? (int)(slash - results_csv + 1) : 0;

	snprintf(buf, len, "%.*sanytime.csv", dir, results_csv);
}

struct update {
	const struct csvio_table *old;
	const struct bench_row *row;
	const struct plan *p;
};

/* Whether record r is a row of the cell of row. */
static int same_cell(const struct csvio_rec *r, const struct bench_row *row)
{
	char batch[32], seed[32];

	snprintf(batch, sizeof batch, "%" PRId64, row->batch);
	snprintf(seed, sizeof seed, "%" PRIu64, row->seed);
	return !strcmp(r->field[0], row->model) && !strcmp(r->field[1], batch) &&
	       !strcmp(r->field[2], row->cluster) && !strcmp(r->field[3], row->planner) &&
	       !strcmp(r->field[4], seed);
}

static int write_rows(FILE *f, void *ctx)
{
	const struct update *u = ctx;

	fprintf(f, "%s\n", ANYTIME_HEADER);
	for (int i = 1; u->old && i < u->old->nrec; i++) {
		const struct csvio_rec *r = &u->old->rec[i];

		if (same_cell(r, u->row))
			continue;
		for (int k = 0; k < NCOLS; k++) {
			if (k)
				fputc(',', f);
			csvio_put_text(f, r->field[k]);
		}
		fputc('\n', f);
	}
	for (int k = 0; k < u->p->ncurve; k++) {
		csvio_put_text(f, u->row->model);
		fprintf(f, ",%" PRId64 ",", u->row->batch);
		csvio_put_text(f, u->row->cluster);
		fputc(',', f);
		csvio_put_text(f, u->row->planner);
		fprintf(f, ",%" PRIu64 ",", u->row->seed);
		csvio_put_number(f, u->p->curve[k][0], 1);
		fputc(',', f);
		csvio_put_number(f, u->p->curve[k][1], 1);
		fputc('\n', f);
	}
	return ferror(f) ? -1 : 0;
}

int anytime_update(const char *path, const struct bench_row *row, const struct plan *p)
{
	struct csvio_table old = { 0 };
	struct update u = { .row = row, .p = p };
	int st = AP_OK;

	if (access(path, F_OK) == 0) {
		st = csvio_table_read(path, cols, NCOLS, &old);
		u.old = &old;
	}
	if (!st)
		st = write_atomic(path, write_rows, &u);
	csvio_table_release(&old);
	return st;
}
