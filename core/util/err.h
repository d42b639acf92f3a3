/*
 * Error reporting shared by every module.  Functions report a problem once,
 * where it is found, as "file:line: message" (or "subject: message") on
 * stderr, and return a status that travels up to main(), which is the only
 * place that exits.  The status values are the command's exit codes.
 */
#ifndef AUTOPAR_ERR_H
#define AUTOPAR_ERR_H

enum ap_status {
	AP_OK = 0,
	AP_EFAIL = 1,  /* runtime failure: out of memory, a library error */
	AP_EINPUT = 2, /* bad input or usage */
};

/* Reports "where:line: message" (line > 0), "where: message" (where set) or
 * "autopar: message", and returns st so callers can write
 * `return ap_err(AP_EINPUT, path, line, "...")`. */
int ap_err(int st, const char *where, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The last message reported, for tests. */
const char *ap_last_error(void);

/* Quiet mode keeps the message for ap_last_error() but prints nothing. */
void ap_err_quiet(int on);

#endif
