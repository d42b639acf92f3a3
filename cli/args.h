/*
 * One option parser for every subcommand, so they all accept the same
 * forms ("-b 8", "--batch 8", "--batch=8") and report the same messages:
 * an unknown option names the command, a bad value names the option.
 */
#ifndef AUTOPAR_ARGS_H
#define AUTOPAR_ARGS_H

enum opt_type {
	OPT_FLAG,    /* int *: set to 1 */
	OPT_STR,     /* const char **: the value */
	OPT_POS_INT, /* long long *: a positive integer */
	OPT_LIST,    /* struct opt_list *: every value, in order */
	OPT_SECONDS, /* double *: a non-negative number of seconds */
	OPT_SEED,    /* uint64_t *: a non-negative integer */
	OPT_COUNT,   /* long long *: a non-negative integer (up to INT_MAX) */
};

struct opt_list {
	const char **v;
	int n;
};

struct opt {
	const char *shrt, *lng; /* "-b" (or NULL), "--batch" */
	enum opt_type type;
	void *dst;
};

/* Parses argv[1..argc) against opts (ended by an entry with lng NULL);
 * positional arguments go to pos[0..maxpos).  OPT_LIST entries must have
 * room for argc values.  Returns AP_OK or AP_EINPUT with one message. */
int args_parse(const char *cmd, int argc, char **argv, const struct opt *opts,
	       const char **pos, int maxpos, int *npos);

#endif
