/*
 * Helpers shared by the cmocka tests: temporary files and the paths of the
 * data under test.  Tests run with AUTOPAR_DATA set to the source tree.
 */
#ifndef AUTOPAR_TESTUTIL_H
#define AUTOPAR_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>

/* A per-process temporary directory, made on first use. */
static inline const char *tmp_dir(void)
{
	static char dir[256];
	const char *base = getenv("TMPDIR");

	if (!dir[0]) {
		snprintf(dir, sizeof dir, "%s/autopar-test-%ld",
			 base && *base ? base : "/tmp", (long)getpid());
		mkdir(dir, 0700);
	}
	return dir;
}

/* Writes text to tmp_dir()/name and returns the path (a static buffer per
 * call, eight in rotation). */
static inline const char *tmp_write(const char *name, const char *text)
{
	static char paths[8][512];
	static int slot;
	char *p = paths[slot++ % 8];
	FILE *f;

	snprintf(p, 512, "%s/%s", tmp_dir(), name);
	f = fopen(p, "w");
	if (!f)
		return NULL;
	fputs(text, f);
	fclose(f);
	return p;
}

#endif
