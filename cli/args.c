/*
 * The shared option parser of the subcommands (args.h).
 */
#include "args.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

static int set(const struct opt *o, const char *as, const char *val)
{
	long long *ip = o->dst;
	struct opt_list *l = o->dst;
	char *end;

	switch (o->type) {
	case OPT_FLAG:
		*(int *)o->dst = 1;
		return AP_OK;
	case OPT_STR:
		*(const char **)o->dst = val;
		return AP_OK;
	case OPT_POS_INT:
		errno = 0;
		*ip = strtoll(val, &end, 10);
		if (!*val || *end || errno || *ip <= 0 || *ip > INT_MAX)
			return ap_err(AP_EINPUT, as, 0, "'%s' is not a positive integer", val);
		return AP_OK;
	case OPT_COUNT:
		errno = 0;
		*ip = strtoll(val, &end, 10);
		if (!*val || *end || errno || *ip < 0 || *ip > INT_MAX)
			return ap_err(AP_EINPUT, as, 0, "expected a non-negative integer, got '%s'",
				      val);
		return AP_OK;
	case OPT_LIST:
		l->v[l->n++] = val;
		return AP_OK;
	case OPT_SECONDS:
		errno = 0;
		*(double *)o->dst = strtod(val, &end);
		if (!*val || *end || errno || !(*(double *)o->dst >= 0) ||
		    *(double *)o->dst > 1e9)
			return ap_err(AP_EINPUT, as, 0, "'%s' is not a number of seconds", val);
		return AP_OK;
	case OPT_SEED:
		errno = 0;
		*(uint64_t *)o->dst = strtoull(val, &end, 10);
		if (!*val || *end || errno || val[0] == '-' ||
		    *(uint64_t *)o->dst > (uint64_t)INT64_MAX)
			return ap_err(AP_EINPUT, as, 0, "'%s' is not a seed (0 to 2^63-1)", val);
		return AP_OK;
	}
	return AP_EINPUT;
}

int args_parse(const char *cmd, int argc, char **argv, const struct opt *opts,
	       const char **pos, int maxpos, int *npos)
{
	int dashes = 0;

	*npos = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		const struct opt *o = NULL;

		if (dashes || a[0] != '-' || !a[1]) {
			if (*npos == maxpos)
				return ap_err(AP_EINPUT, cmd, 0, "unexpected argument '%s' "
					      "(see autopar help %s)", a, cmd);
			pos[(*npos)++] = a;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			dashes = 1;
			continue;
		}
		for (const struct opt *p = opts; p->lng && !o; p++) {
			size_t n = strlen(p->lng);

			if (strcmp(a, p->lng) == 0 || (p->shrt && strcmp(a, p->shrt) == 0))
				o = p;
			else if (p->type != OPT_FLAG && strncmp(a, p->lng, n) == 0 &&
				 a[n] == '=')
				o = p, val = a + n + 1;
		}
		if (!o)
			return ap_err(AP_EINPUT, cmd, 0, "unknown option '%s' (see autopar help %s)",
				      a, cmd);
		if (o->type != OPT_FLAG && !val) {
			if (i + 1 >= argc)
				return ap_err(AP_EINPUT, a, 0, "expected a value");
			val = argv[++i];
		}
		if (set(o, val && val > a && val < a + strlen(a) ? o->lng : a, val))
			return AP_EINPUT;
	}
	return AP_OK;
}
