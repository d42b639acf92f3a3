/*
 * Device specs: reading and writing profiles/devices.csv (and the one-row
 * device.csv of a profile directory).  The numbers feed roofline estimates
 * and memory checks, so every field is validated where it is read and a bad
 * row is reported as "file:line: what was expected" rather than turning
 * into a silently wrong cost later.  Parsing goes through csvio (libcsv)
 * so quoted descriptions with commas work as any spreadsheet writes them.
 */
#include "hw/device.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/csvio.h"
#include "util/err.h"

static const char *const dev_header[] = {
	"name", "fp32_tflops", "tensor_tflops", "mem_bw_gbytes_per_s",
	"mem_bytes", "launch_us", "description",
};
#define DEV_NCOLS ((int)(sizeof dev_header / sizeof dev_header[0]))

/* --- fields -------------------------------------------------------------- */

int spec_name_valid(const char *s, size_t max)
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

static int parse_row(const char *path, const struct csvio_rec *r,
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
	if (!spec_name_valid(r->field[0], sizeof d->name))
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

/* The table and its rows, parsed; the table is kept for the lines of the
 * rows. */
static int load_table(const char *csv_path, struct csvio_table *t,
		      struct device_spec **out, int *n)
{
	struct device_spec *d = NULL;
	int rc, nd = 0;

	*out = NULL;
	*n = 0;
	rc = csvio_table_read(csv_path, dev_header, DEV_NCOLS, t);
	if (rc)
		return rc;
	if (t->nrec == 1) {
		rc = ap_err(AP_EINPUT, csv_path, t->rec[0].line,
			    "no device rows after the header (expected a row per device)");
		goto out;
	}
	d = calloc(t->nrec - 1, sizeof *d);
	if (!d) {
		rc = ap_err(AP_EFAIL, csv_path, 0, "out of memory");
		goto out;
	}
	for (int i = 1; i < t->nrec; i++) {
		rc = parse_row(csv_path, &t->rec[i], &d[nd]);
		if (rc)
			goto out;
		for (int j = 0; j < nd; j++)
			if (strcmp(d[j].name, d[nd].name) == 0) {
				rc = ap_err(AP_EINPUT, csv_path, t->rec[i].line,
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
	if (rc)
		csvio_table_release(t);
	return rc;
}

int devices_load(const char *csv_path, struct device_spec **out, int *n)
{
	struct csvio_table t;
	int rc = load_table(csv_path, &t, out, n);

	if (!rc)
		csvio_table_release(&t);
	return rc;
}

int device_load_one(const char *csv_path, struct device_spec *out)
{
	struct csvio_table t;
	struct device_spec *d;
	int rc, n;

	rc = load_table(csv_path, &t, &d, &n);
	if (rc)
		return rc;
	/* rec[0] is the header, so rec[2] is the row that should not be */
	if (n != 1)
		rc = ap_err(AP_EINPUT, csv_path, t.rec[2].line,
			    "expected exactly one device row after the header, found %d",
			    n);
	else
		*out = d[0];
	free(d);
	csvio_table_release(&t);
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

/* Numbers go out in the file's units as the shortest plain decimal that
 * reads back through parse_row's scaling to the same double, so the file
 * stays readable and load(write(load(f))) == load(f). */
int devices_write(FILE *f, const struct device_spec *d, int n)
{
	for (int i = 0; i < DEV_NCOLS; i++)
		fprintf(f, "%s%s", i ? "," : "", dev_header[i]);
	fputc('\n', f);
	for (int i = 0; i < n; i++) {
		csvio_put_text(f, d[i].name);
		fputc(',', f);
		csvio_put_number(f, d[i].fp32_flops_per_s, 1e12);
		fputc(',', f);
		csvio_put_number(f, d[i].tensor_flops_per_s, 1e12);
		fputc(',', f);
		csvio_put_number(f, d[i].mem_bw_bytes_per_s, 1e9);
		fprintf(f, ",%" PRId64 ",", d[i].mem_bytes);
		csvio_put_number(f, d[i].launch_us, 1);
		fputc(',', f);
		csvio_put_text(f, d[i].description);
		fputc('\n', f);
	}
	if (ferror(f))
		return ap_err(AP_EFAIL, NULL, 0, "cannot write device specs: %s",
			      strerror(errno));
	return AP_OK;
}
