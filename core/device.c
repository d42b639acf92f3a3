/*
 * Device specs: reading and writing profiles/devices.csv (and the one-row
 * device.csv of a profile directory).  The numbers feed roofline estimates
 * and memory checks, so every field is validated where it is read and a bad
 * row is reported as "file:line: what was expected" rather than turning
 * into a silently wrong cost later.  Parsing goes through libcsv so quoted
 * descriptions with commas work as any spreadsheet writes them.
 */
#include "device.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <csv.h>

#include "err.h"

static const char *const dev_header[] = {
	"name", "fp32_tflops", "tensor_tflops", "mem_bw_gbytes_per_s",
	"mem_bytes", "launch_us", "description",
};
#define DEV_NCOLS ((int)(sizeof dev_header / sizeof dev_header[0]))

/* --- a whole CSV file as records of strings, each with its line ---------- */

struct csv_rec {
	int line;
	int nfield;
	char **field;
};

struct csv_file {
	struct csv_rec *rec;
	int nrec, cap;
	struct csv_rec cur;  /* the record being assembled */
	int fcap;
	int line;            /* line of the chunk being fed to the parser */
	int nomem;
};

static void csv_rec_release(struct csv_rec *r)
{
	for (int i = 0; i < r->nfield; i++)
		free(r->field[i]);
	free(r->field);
	r->field = NULL;
	r->nfield = 0;
}

static void csv_file_release(struct csv_file *t)
{
	for (int i = 0; i < t->nrec; i++)
		csv_rec_release(&t->rec[i]);
	free(t->rec);
	csv_rec_release(&t->cur);
	memset(t, 0, sizeof *t);
}

static void on_field(void *s, size_t len, void *data)
{
	struct csv_file *t = data;
	char *copy;

	if (t->nomem)
		return;
	/* A field ends on the line it started on unless it is a quoted field
	 * spanning lines, so the first field dates the record. */
	if (t->cur.nfield == 0)
		t->cur.line = t->line;
	if (t->cur.nfield == t->fcap) {
		int cap = t->fcap ? 2 * t->fcap : 8;
		char **f = realloc(t->cur.field, cap * sizeof *f);
		if (!f) {
			t->nomem = 1;
			return;
		}
		t->cur.field = f;
		t->fcap = cap;
	}
	copy = malloc(len + 1);
	if (!copy) {
		t->nomem = 1;
		return;
	}
	if (len)
		memcpy(copy, s, len);
	copy[len] = 0;
	t->cur.field[t->cur.nfield++] = copy;
}

static void on_record(int c, void *data)
{
	struct csv_file *t = data;

	(void)c;
	if (t->nomem)
		return;
	if (t->nrec == t->cap) {
		int cap = t->cap ? 2 * t->cap : 16;
		struct csv_rec *r = realloc(t->rec, cap * sizeof *r);
		if (!r) {
			t->nomem = 1;
			return;
		}
		t->rec = r;
		t->cap = cap;
	}
	t->rec[t->nrec++] = t->cur;
	memset(&t->cur, 0, sizeof t->cur);
	t->fcap = 0;
}

/* Reads all of path.  Fed one line at a time so records know their line. */
static int csv_file_read(const char *path, struct csv_file *t)
{
	struct csv_parser p;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int rc = AP_OK;

	memset(t, 0, sizeof *t);
	f = fopen(path, "r");
	if (!f)
		return ap_err(AP_EINPUT, path, 0, "cannot open: %s", strerror(errno));
	if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
		fclose(f);
		return ap_err(AP_EFAIL, path, 0, "cannot set up the csv parser");
	}
	while ((len = getline(&buf, &cap, f)) > 0) {
		t->line++;
		if (csv_parse(&p, buf, len, on_field, on_record, t) != (size_t)len) {
			rc = ap_err(AP_EINPUT, path, t->line, "malformed csv (%s)",
				    csv_strerror(csv_error(&p)));
			goto out;
		}
		if (t->nomem)
			goto nomem;
	}
	if (ferror(f)) {
		rc = ap_err(AP_EINPUT, path, 0, "cannot read: %s", strerror(errno));
		goto out;
	}
	if (csv_fini(&p, on_field, on_record, t) != 0) {
		rc = ap_err(AP_EINPUT, path, t->line,
			    "malformed csv (unterminated quoted field)");
		goto out;
	}
	if (t->nomem)
		goto nomem;
	goto out;
nomem:
	rc = ap_err(AP_EFAIL, path, 0, "out of memory");
out:
	csv_free(&p);
	free(buf);
	fclose(f);
	if (rc)
		csv_file_release(t);
	return rc;
}

/* The header must be exactly the expected columns, so a column added or
 * renamed by hand is caught instead of shifting every value. */
static int check_header(const char *path, const struct csv_rec *r,
			const char *const *cols, int ncols)
{
	char want[512], got[512];
	size_t w = 0, g = 0;
	int same = r->nfield == ncols;

	for (int i = 0; i < ncols; i++) {
		w += snprintf(want + w, w < sizeof want ? sizeof want - w : 0,
			      "%s%s", i ? "," : "", cols[i]);
		if (w >= sizeof want)
			w = sizeof want;
	}
	for (int i = 0; i < r->nfield; i++) {
		g += snprintf(got + g, g < sizeof got ? sizeof got - g : 0,
			      "%s%s", i ? "," : "", r->field[i]);
		if (g >= sizeof got)
			g = sizeof got;
		if (same && strcmp(r->field[i], cols[i]) != 0)
			same = 0;
	}
	if (!same)
		return ap_err(AP_EINPUT, path, r->line,
			      "header '%s' is not the expected '%s'", got, want);
	return AP_OK;
}

/* --- fields -------------------------------------------------------------- */

/* Names end up inside inline cluster specs and directory names, hence the
 * small alphabet. */
static int valid_name(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n >= max || !isalpha((unsigned char)s[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return 0;
	return 1;
}

/* A plain positive decimal: no sign, no hex, no inf/nan, nothing after. */
static int positive_number(const char *s, double *v)
{
	char *end;

	if (!isdigit((unsigned char)s[0]) &&
	    !(s[0] == '.' && isdigit((unsigned char)s[1])))
		return -1;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return -1;
	errno = 0;
	*v = strtod(s, &end);
	if (*end || errno == ERANGE || !isfinite(*v) || *v <= 0)
		return -1;
	return 0;
}

static int positive_int64(const char *s, int64_t *v)
{
	char *end;
	long long x;

	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -1;
	if (!*s)
		return -1;
	errno = 0;
	x = strtoll(s, &end, 10);
	if (*end || errno == ERANGE || x <= 0)
		return -1;
	*v = x;
	return 0;
}

static int parse_row(const char *path, const struct csv_rec *r,
		     struct device_spec *d)
{
	/* the decimal columns: fp32_tflops, tensor_tflops, GB/s, launch_us */
	static const int col[4] = { 1, 2, 3, 5 };
	double v[4];

	memset(d, 0, sizeof *d);
	if (r->nfield != DEV_NCOLS)
		return ap_err(AP_EINPUT, path, r->line,
			      "row has %d fields, expected %d (%s,...,%s)",
			      r->nfield, DEV_NCOLS, dev_header[0],
			      dev_header[DEV_NCOLS - 1]);
	if (!valid_name(r->field[0], sizeof d->name))
		return ap_err(AP_EINPUT, path, r->line,
			      "device name '%s' is not a name (expected a letter, then letters, digits, '.', '_' or '-', at most %zu characters)",
			      r->field[0], sizeof d->name - 1);
	for (int i = 0; i < 4; i++)
		if (positive_number(r->field[col[i]], &v[i]) != 0)
			return ap_err(AP_EINPUT, path, r->line,
				      "%s '%s' of device '%s' is not a positive number",
				      dev_header[col[i]], r->field[col[i]],
				      r->field[0]);
	if (positive_int64(r->field[4], &d->mem_bytes) != 0)
		return ap_err(AP_EINPUT, path, r->line,
			      "mem_bytes '%s' of device '%s' is not a positive whole number of bytes",
			      r->field[4], r->field[0]);
	if (strlen(r->field[6]) >= sizeof d->description)
		return ap_err(AP_EINPUT, path, r->line,
			      "description of device '%s' is longer than %zu characters",
			      r->field[0], sizeof d->description - 1);
	strcpy(d->name, r->field[0]);
	strcpy(d->description, r->field[6]);
	d->fp32_flops_per_s = v[0] * 1e12;
	d->tensor_flops_per_s = v[1] * 1e12;
	d->mem_bw_bytes_per_s = v[2] * 1e9;
	d->launch_us = v[3];
	return AP_OK;
}

int devices_load(const char *csv_path, struct device_spec **out, int *n)
{
	struct csv_file t;
	struct device_spec *d = NULL;
	int rc, nd = 0;

	*out = NULL;
	*n = 0;
	rc = csv_file_read(csv_path, &t);
	if (rc)
		return rc;
	if (t.nrec == 0) {
		rc = ap_err(AP_EINPUT, csv_path, 0, "empty file (expected a header row)");
		goto out;
	}
	rc = check_header(csv_path, &t.rec[0], dev_header, DEV_NCOLS);
	if (rc)
		goto out;
	if (t.nrec == 1) {
		rc = ap_err(AP_EINPUT, csv_path, 0, "no device rows after the header");
		goto out;
	}
	d = calloc(t.nrec - 1, sizeof *d);
	if (!d) {
		rc = ap_err(AP_EFAIL, csv_path, 0, "out of memory");
		goto out;
	}
	for (int i = 1; i < t.nrec; i++) {
		rc = parse_row(csv_path, &t.rec[i], &d[nd]);
		if (rc)
			goto out;
		for (int j = 0; j < nd; j++)
			if (strcmp(d[j].name, d[nd].name) == 0) {
				rc = ap_err(AP_EINPUT, csv_path, t.rec[i].line,
					    "device '%s' is listed twice", d[nd].name);
				goto out;
			}
		nd++;
	}
	*out = d;
	*n = nd;
	d = NULL;
out:
	free(d);
	csv_file_release(&t);
	return rc;
}

int device_find(const char *csv_path, const char *name, struct device_spec *out)
{
	struct device_spec *d;
	char known[256] = "";
	size_t k = 0;
	int n, rc;

	rc = devices_load(csv_path, &d, &n);
	if (rc)
		return rc;
	for (int i = 0; i < n; i++) {
		if (strcmp(d[i].name, name) == 0) {
			*out = d[i];
			goto out;
		}
		k += snprintf(known + k, k < sizeof known ? sizeof known - k : 0,
			      "%s%s", i ? ", " : "", d[i].name);
		if (k >= sizeof known)
			k = sizeof known;
	}
	rc = ap_err(AP_EINPUT, csv_path, 0, "no device '%s' (expected one of %s)",
		    name, known);
out:
	free(d);
	return rc;
}

/* --- writing ------------------------------------------------------------- */

/* The shortest decimal that reads back, through the same scaling as
 * parse_row, to exactly x: the file stays readable (4.37, not
 * 4.3700000000000001) and load(write(load(f))) == load(f).  A value not
 * itself a product of the scaling may come back one ulp off. */
static void put_scaled(FILE *f, double x, double scale)
{
	char buf[40];

	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, x / scale);
		if (strtod(buf, NULL) * scale == x)
			break;
	}
	fputs(buf, f);
}

/* Quotes a text field only when a reader would otherwise split or trim it. */
static void put_text(FILE *f, const char *s)
{
	size_t n = strlen(s);

	if (strpbrk(s, ",\"\r\n") || (n && (isspace((unsigned char)s[0]) ||
					   isspace((unsigned char)s[n - 1]))))
		csv_fwrite(f, s, n);
	else
		fputs(s, f);
}

int devices_write(FILE *f, const struct device_spec *d, int n)
{
	for (int i = 0; i < DEV_NCOLS; i++)
		fprintf(f, "%s%s", i ? "," : "", dev_header[i]);
	fputc('\n', f);
	for (int i = 0; i < n; i++) {
		put_text(f, d[i].name);
		fputc(',', f);
		put_scaled(f, d[i].fp32_flops_per_s, 1e12);
		fputc(',', f);
		put_scaled(f, d[i].tensor_flops_per_s, 1e12);
		fputc(',', f);
		put_scaled(f, d[i].mem_bw_bytes_per_s, 1e9);
		fprintf(f, ",%" PRId64 ",", d[i].mem_bytes);
		put_scaled(f, d[i].launch_us, 1);
		fputc(',', f);
		put_text(f, d[i].description);
		fputc('\n', f);
	}
	if (ferror(f))
		return ap_err(AP_EFAIL, NULL, 0, "cannot write device specs: %s",
			      strerror(errno));
	return AP_OK;
}
