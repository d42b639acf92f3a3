/*
 * CSV files as autopar reads and writes them.  The data files a user edits
 * (profiles/devices.csv, profiles/clusters.csv, a profile's ops.csv and
 * device.csv) all go through here: libcsv underneath, strict quoting (a
 * stray quote or an unterminated quoted field is an error, not a guess),
 * and every record tagged with the line of the file it starts on, so the
 * module that knows what a row means can say "file:line: what was
 * expected".  Errors are reported with ap_err() (err.h): a file that cannot
 * be opened or is not CSV is AP_EINPUT, lack of memory AP_EFAIL.
 */
#ifndef AUTOPAR_CSVIO_H
#define AUTOPAR_CSVIO_H

#include <stdio.h>

struct csvio_rec {
	int line;     /* line of the file the record starts on (1-based) */
	int nfield;
	char **field; /* nfield strings, quotes removed */
};

/* Called for each record in file order (blank lines are no records); a
 * non-zero return stops the reading and is what csvio_each returns. */
typedef int (*csvio_rec_fn)(const struct csvio_rec *r, void *ctx);

/* Streams path through fn, so a large table need not be held twice. */
int csvio_each(const char *path, csvio_rec_fn fn, void *ctx);

/* A whole small table in memory, for files whose rows are checked against
 * each other (names listed twice) or against another file. */
struct csvio_table {
	struct csvio_rec *rec;
	int nrec, cap;
};

/* Reads all of path, whose first record must be exactly the columns
 * cols[0..ncols-1]: a column added or renamed by hand is caught instead of
 * shifting every value.  rec[0] is then the header.  On failure t is left
 * empty. */
int csvio_table_read(const char *path, const char *const *cols, int ncols,
		     struct csvio_table *t);
void csvio_table_release(struct csvio_table *t);

/* 1 when r is exactly the columns cols[0..ncols-1], else 0. */
int csvio_header_is(const struct csvio_rec *r, const char *const *cols,
		    int ncols);

/* Writes s as one field, quoted only where a reader would otherwise split
 * or trim it. */
void csvio_put_text(FILE *f, const char *s);

/* Writes x / unit as the shortest plain decimal (900, not 9e+02) that reads
 * back, multiplied by unit, to exactly x; where no plain form does (1e-05,
 * 1e+20) the shortest exponent form that does, and where neither does (x
 * not itself a product of unit) 17 digits. */
void csvio_put_number(FILE *f, double x, double unit);

#endif
