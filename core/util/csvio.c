/*
 * The one CSV reader and field writer of autopar (csvio.h).  libcsv parses;
 * the file is fed to it a line at a time, so that the first field of each
 * record can note the line it started on (a quoted field may span lines,
 * and the record belongs to the line where it began).  Records are handed
 * out one by one (csvio_each) or kept as a table (csvio_table_read, which
 * is csvio_each appending copies); neither knows what a column means.
 */
#include "util/csvio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <csv.h>

#include "util/err.h"
#include "util/grow.h"

/* --- reading -------------------------------------------------------------- */

struct reader {
	const char *path;
	csvio_rec_fn fn;
	void *ctx;
	struct csvio_rec cur; /* the record being assembled */
	int fcap;             /* room in cur.field */
	int line;             /* line being fed to the parser */
	int rc;               /* first failure; later callbacks do nothing */
};

static void clear_fields(struct csvio_rec *r)
{
	for (int i = 0; i < r->nfield; i++)
		free(r->field[i]);
	r->nfield = 0;
}

static void on_field(void *s, size_t len, void *data)
{
	struct reader *rd = data;
	char *copy;

	if (rd->rc)
		return;
	if (rd->cur.nfield == 0)
		rd->cur.line = rd->line;
	if (grow(&rd->cur.field, rd->cur.nfield, &rd->fcap, sizeof *rd->cur.field, 16))
		goto nomem;
	copy = malloc(len + 1);
	if (!copy)
		goto nomem;
	if (len)
		memcpy(copy, s, len);
	copy[len] = 0;
	rd->cur.field[rd->cur.nfield++] = copy;
	return;
nomem:
	rd->rc = ap_err(AP_EFAIL, rd->path, 0, "out of memory");
}

static void on_record(int c, void *data)
{
	struct reader *rd = data;

	(void)c;
	if (!rd->rc)
		rd->rc = rd->fn(&rd->cur, rd->ctx);
	clear_fields(&rd->cur);
}

int csvio_each(const char *path, csvio_rec_fn fn, void *ctx)
{
	struct reader rd = { .path = path, .fn = fn, .ctx = ctx };
	struct csv_parser p;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return ap_err(AP_EINPUT, path, 0, "cannot open: %s", strerror(errno));
	if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
		fclose(f);
		return ap_err(AP_EFAIL, path, 0, "cannot set up the csv parser");
	}
	while (!rd.rc && (len = getline(&buf, &cap, f)) > 0) {
		rd.line++;
		if (csv_parse(&p, buf, (size_t)len, on_field, on_record, &rd) !=
		    (size_t)len && !rd.rc)
			rd.rc = ap_err(AP_EINPUT, path, rd.line, "malformed csv (%s)",
				       csv_strerror(csv_error(&p)));
	}
	if (!rd.rc && ferror(f))
		rd.rc = ap_err(AP_EINPUT, path, 0, "cannot read: %s", strerror(errno));
	/* csv_fini hands over a last record that has no newline. */
	if (!rd.rc && csv_fini(&p, on_field, on_record, &rd) != 0 && !rd.rc)
		rd.rc = ap_err(AP_EINPUT, path, rd.line,
			       "malformed csv (unterminated quoted field)");
	csv_free(&p);
	free(buf);
	fclose(f);
	clear_fields(&rd.cur);
	free(rd.cur.field);
	return rd.rc;
}

/* --- tables ------------------------------------------------------------- */

struct keeper {
	const char *path;
	struct csvio_table *t;
};

static void rec_release(struct csvio_rec *r)
{
	clear_fields(r);
	free(r->field);
	r->field = NULL;
}

static int keep_rec(const struct csvio_rec *r, void *ctx)
{
	struct keeper *k = ctx;
	struct csvio_table *t = k->t;
	struct csvio_rec *copy;

	if (grow(&t->rec, t->nrec, &t->cap, sizeof *t->rec, 16))
		goto nomem;
	copy = &t->rec[t->nrec];
	copy->line = r->line;
	copy->nfield = 0;
	copy->field = malloc(sizeof *copy->field * (size_t)r->nfield);
	if (!copy->field)
		goto nomem;
	t->nrec++;
	for (; copy->nfield < r->nfield; copy->nfield++) {
		copy->field[copy->nfield] = strdup(r->field[copy->nfield]);
		if (!copy->field[copy->nfield])
			goto nomem;
	}
	return AP_OK;
nomem:
	return ap_err(AP_EFAIL, k->path, 0, "out of memory");
}

void csvio_table_release(struct csvio_table *t)
{
	for (int i = 0; i < t->nrec; i++)
		rec_release(&t->rec[i]);
	free(t->rec);
	memset(t, 0, sizeof *t);
}

/* The fields of n strings joined by ',', cut where buf ends. */
static void join(char *buf, size_t len, const char *const *s, int n)
{
	size_t k = 0;

	buf[0] = 0;
	for (int i = 0; i < n && k < len; i++)
		k += snprintf(buf + k, len - k, "%s%s", i ? "," : "", s[i]);
}

int csvio_header_is(const struct csvio_rec *r, const char *const *cols,
		    int ncols)
{
	if (r->nfield != ncols)
		return 0;
	for (int i = 0; i < ncols; i++)
		if (strcmp(r->field[i], cols[i]) != 0)
			return 0;
	return 1;
}

int csvio_table_read(const char *path, const char *const *cols, int ncols,
		     struct csvio_table *t)
{
	struct keeper k = { .path = path, .t = t };
	char want[512], got[512];
	int rc;

	memset(t, 0, sizeof *t);
	rc = csvio_each(path, keep_rec, &k);
	if (rc)
		goto out;
	if (t->nrec == 0) {
		rc = ap_err(AP_EINPUT, path, 0, "empty file (expected a header row)");
		goto out;
	}
	if (!csvio_header_is(&t->rec[0], cols, ncols)) {
		join(want, sizeof want, cols, ncols);
		join(got, sizeof got, (const char *const *)t->rec[0].field,
		     t->rec[0].nfield);
		rc = ap_err(AP_EINPUT, path, t->rec[0].line,
			    "header '%s' is not the expected '%s'", got, want);
	}
out:
	if (rc)
		csvio_table_release(t);
	return rc;
}

/* --- writing ---------------------------------------------------------------- */

void csvio_put_text(FILE *f, const char *s)
{
	size_t n = strlen(s);

	/* libcsv trims unquoted spaces at either end of a field */
	if (strpbrk(s, ",\"\r\n") || (n && (strchr(" \t", s[0]) ||
					   strchr(" \t", s[n - 1]))))
		csv_fwrite(f, s, n);
	else
		fputs(s, f);
}

void csvio_put_number(FILE *f, double x, double unit)
{
	char buf[40], exp_form[40] = "";

	/* Shortest first keeps the file readable (4.37, not
	 * 4.3700000000000001).  %g turns to an exponent while the precision is
	 * below the integer digits (900 at one digit is "9e+02"), so a plain
	 * form a few digits longer is preferred to it. */
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, x / unit);
		if (strtod(buf, NULL) * unit != x)
			continue;
		if (!strchr(buf, 'e')) {
			fputs(buf, f);
			return;
		}
		if (!exp_form[0])
			strcpy(exp_form, buf);
	}
	fputs(exp_form[0] ? exp_form : buf, f);
}
