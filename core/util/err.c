/*
 * One place that formats and prints error messages, so every module reports
 * the same way and tests can read back what was said.
 */
#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>

static char last[1024];
static int quiet;

int ap_err(int st, const char *where, int line, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (where && line > 0)
		snprintf(last, sizeof last, "%s:%d: %s", where, line, msg);
	else if (where)
		snprintf(last, sizeof last, "%s: %s", where, msg);
	else
		snprintf(last, sizeof last, "autopar: %s", msg);
	if (!quiet)
		fprintf(stderr, "%s\n", last);
	return st;
}

const char *ap_last_error(void)
{
	return last;
}

void ap_err_quiet(int on)
{
	quiet = on;
}
