/*
 * `autopar planners [--csv]`: the registered planners.
 */
#include <stdio.h>

#include "args.h"
#include "commands.h"
#include "util/csvio.h"
#include "planner.h"

/* "straight;schedule=1f1b-async|1f1b-flush": the options of p. */
static const char *option_list(const struct planner *p, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (const struct planner_option *o = p->options; o && o->name && n < len; o++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s%s%s", n ? ";" : "", o->name,
				      o->type == POPT_FLAG ? "" : "=",
				      o->type == POPT_CHOICE ? o->choices :
				      o->type == POPT_FLAG ? "" : o->def);
	return buf;
}

static int run(int argc, char **argv)
{
	char list[512];
	int csv = 0, npos, rc;
	const struct opt opts[] = {
		{ NULL, "--csv", OPT_FLAG, &csv },
		{ 0 },
	};

	rc = args_parse("planners", argc, argv, opts, NULL, 0, &npos);
	if (rc)
		return rc;
	if (csv)
		printf("name,description,follows,options\n");
	for (int i = 0; i < nplanners; i++) {
		const struct planner *p = planners[i];

		if (csv) {
			csvio_put_text(stdout, p->name);
			putchar(',');
			csvio_put_text(stdout, p->description);
			putchar(',');
			csvio_put_text(stdout, p->follows);
			putchar(',');
			csvio_put_text(stdout, option_list(p, list, sizeof list));
			putchar('\n');
			continue;
		}
		printf("%-12s %-66s %s\n", p->name, p->description, p->follows);
		for (const struct planner_option *o = p->options; o && o->name; o++) {
			snprintf(list, sizeof list, "--%s%s%s", o->name,
				 o->type == POPT_FLAG ? "" : " ",
				 o->type == POPT_CHOICE ? o->choices :
				 o->type == POPT_FLAG ? "" : o->type == POPT_INT ? "N" : "X");
			printf("    %-28s %s%s%s%s\n", list, o->help, o->def ? " (default " : "",
			       o->def ? o->def : "", o->def ? ")" : "");
		}
	}
	return 0;
}

const struct command cmd_planners = {
	.name = "planners",
	.summary = "list the planners",
	.usage = "usage: autopar planners [--csv]\n\n"
		 "Lists the registered planners: name, what it does, the paper or rule\n"
		 "it follows, and the planner's own options, which `autopar plan` takes\n"
		 "as --option [VALUE] and a bench matrix as NAME:option[=VALUE],...\n",
	.run = run,
};
