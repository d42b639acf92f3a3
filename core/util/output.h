/*
 * The one way autopar writes an output file, and the checks every command
 * makes on its output paths before it does any work (docs/formats.md, "Output files").
 */
#ifndef AUTOPAR_OUTPUT_H
#define AUTOPAR_OUTPUT_H

#include <stdio.h>

/* Writes path through write_cb (0 on success).  A regular file, or a path
 * that names nothing yet, is written to path.tmp.PID beside it and renamed
 * into place only when complete (a symbolic link is followed: its target
 * is replaced, the link stays); the temporary is removed on failure, and
 * SIGINT, SIGTERM and SIGHUP wait until it is gone.  Anything else (a
 * device such as /dev/null or /dev/stdout, a FIFO) is written in place:
 * it is never replaced. */
int write_atomic(const char *path, int (*write_cb)(FILE *f, void *ctx), void *ctx);

/* One path a command reads or writes, named by the option that gave it. */
struct io_path {
	const char *opt;  /* "-o", "--trace", "PLAN" */
	const char *path; /* NULL: not given, skipped */
	int output;       /* written (else read) */
};

/* Checks a command's paths before it does any work: every output is a
 * non-empty path of a file that is not a directory, in a directory that
 * exists; no output is one of the inputs or another output (the same file
 * by any name; devices and FIFOs may be shared).  Returns AP_OK or
 * AP_EINPUT with one message naming the option. */
int io_paths_check(const struct io_path *io, int n);

#endif
