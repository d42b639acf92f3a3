/*
 * Planner options (planner.h): parsing a spec "NAME:opt=value,flag",
 * checking names and values against the planner's table, completing them
 * with defaults, and reading them back inside the planner.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "planner.h"

static const struct planner_option *find_option(const struct planner *pl, const char *name)
{
	for (const struct planner_option *o = pl->options; o && o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

static int is_choice(const char *choices, const char *v)
{
	size_t n = strlen(v);

	for (const char *c = choices; *c; c += strcspn(c, "|"), c += *c == '|')
		if (n && !strncmp(c, v, n) && (c[n] == '|' || !c[n]))
			return 1;
	return 0;
}

static int check_value(const struct planner_option *o, const char *v, const char *where)
{
	char *end;
	double x;

	if (o->type == POPT_FLAG)
		return v ? ap_err(AP_EINPUT, where, 0, "option '%s' takes no value", o->name)
			 : AP_OK;
	if (!v || !*v)
		return ap_err(AP_EINPUT, where, 0, "option '%s' needs a value", o->name);
	if (strlen(v) >= PLANNER_OPT_LEN)
		return ap_err(AP_EINPUT, where, 0, "value of '%s' is too long", o->name);
	errno = 0;
	x = strtod(v, &end);
	switch (o->type) {
	case POPT_INT:
		if (*end || errno || x != floor(x) || fabs(x) > INT_MAX)
			return ap_err(AP_EINPUT, where, 0, "option '%s': '%s' is not an "
				      "integer of at most %d", o->name, v, INT_MAX);
		return AP_OK;
	case POPT_REAL:
		if (*end || errno || !isfinite(x))
			return ap_err(AP_EINPUT, where, 0, "option '%s': '%s' is not a "
				      "number", o->name, v);
		return AP_OK;
	case POPT_CHOICE:
		if (!is_choice(o->choices, v))
			return ap_err(AP_EINPUT, where, 0, "option '%s': expected one of "
				      "%s, got '%s'", o->name, o->choices, v);
		return AP_OK;
	case POPT_FLAG:
		break;
	}
	return AP_OK;
}

int planner_opts_set(const struct planner *pl, struct planner_opts *o, const char *name,
		     const char *value, const char *where)
{
	const struct planner_option *opt = find_option(pl, name);
	int i, rc;

	if (!opt)
		return ap_err(AP_EINPUT, where, 0, "planner '%s' has no option '%s' "
			      "(autopar planners lists them)", pl->name, name);
	rc = check_value(opt, value, where);
	if (rc)
		return rc;
	for (i = 0; i < o->n && strcmp(o->name[i], name); i++)
		;
	if (i == PLANNER_MAX_OPTIONS)
		return ap_err(AP_EINPUT, where, 0, "too many options");
	snprintf(o->name[i], PLANNER_OPT_LEN, "%s", name);
	snprintf(o->value[i], PLANNER_OPT_LEN, "%s", value ? value : "1");
	if (i == o->n)
		o->n++;
	return AP_OK;
}

int planner_parse(const char *spec, const char *where, const struct planner **pl,
		  struct planner_opts *o)
{
	char buf[256], *opts, *save = NULL;

	o->n = 0;
	if (strlen(spec) >= sizeof buf)
		return ap_err(AP_EINPUT, where, 0, "planner spec '%.40s...' is too long", spec);
	snprintf(buf, sizeof buf, "%s", spec);
	opts = strchr(buf, ':');
	if (opts)
		*opts++ = '\0';
	*pl = planner_find(buf);
	if (!*pl)
		return ap_err(AP_EINPUT, where, 0, "unknown planner '%s' (autopar planners "
			      "lists them)", buf);
	for (char *t = opts ? strtok_r(opts, ",", &save) : NULL; t;
	     t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		int rc;

		if (eq)
			*eq++ = '\0';
		rc = planner_opts_set(*pl, o, t, eq, where);
		if (rc)
			return rc;
	}
	return AP_OK;
}

static const char *lookup(const struct planner_opts *o, const char *name)
{
	for (int i = 0; o && i < o->n; i++)
		if (!strcmp(o->name[i], name))
			return o->value[i];
	return NULL;
}

void planner_spec(const struct planner *pl, const struct planner_opts *o, char *buf,
		  size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%s", pl->name);
	char sep = ':';

	for (const struct planner_option *opt = pl->options; opt && opt->name; opt++) {
		const char *v = lookup(o, opt->name);

		if (!v || (opt->def && !strcmp(v, opt->def)) || n >= len)
			continue;
		if (opt->type == POPT_FLAG)
			n += (size_t)snprintf(buf + n, len - n, "%c%s", sep, opt->name);
		else
			n += (size_t)snprintf(buf + n, len - n, "%c%s=%s", sep, opt->name, v);
		sep = ',';
	}
}

void planner_opts_complete(const struct planner *pl, struct planner_opts *o)
{
	for (const struct planner_option *opt = pl->options; opt && opt->name; opt++)
		if (opt->def && !lookup(o, opt->name) && o->n < PLANNER_MAX_OPTIONS) {
			snprintf(o->name[o->n], PLANNER_OPT_LEN, "%s", opt->name);
			snprintf(o->value[o->n], PLANNER_OPT_LEN, "%s", opt->def);
			o->n++;
		}
}

/* The value of in's planner's option `name` of type t: the one given or
 * its default (NULL: an unset flag).  A name the planner does not declare
 * with that type is a bug of the planner, not bad input: it aborts. */
static const char *value(const struct planner_input *input, const char *name,
			 enum planner_opt_type t)
{
	const struct planner_option *o = input->planner ? find_option(input->planner, name) : NULL;
	const char *v;

	if (!o || o->type != t) {
		fprintf(stderr, "autopar: planner '%s' reads option '%s', which its table does "
			"not declare %s\n", input->planner ? input->planner->name : "(none)", name,
			t == POPT_FLAG ? "as a flag" : t == POPT_INT ? "as an integer" :
			t == POPT_REAL ? "as a number" : "as a choice");
		abort();
	}
	v = lookup(input->opts, name);
	return v || t == POPT_FLAG ? v : o->def;
}

int planner_flag(const struct planner_input *input, const char *name)
{
	return value(input, name, POPT_FLAG) != NULL;
}

int planner_int(const struct planner_input *input, const char *name)
{
	/* a value the table's check took: an integer within an int */
	return (int)strtod(value(input, name, POPT_INT), NULL);
}

double planner_real(const struct planner_input *input, const char *name)
{
	return strtod(value(input, name, POPT_REAL), NULL);
}

const char *planner_choice(const struct planner_input *input, const char *name)
{
	return value(input, name, POPT_CHOICE);
}
