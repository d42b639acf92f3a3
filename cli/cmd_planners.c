/*
 * `autopar planners [--csv | --markdown]`: the registered planners.  The
 * Markdown table is the one README.md and docs/architecture.md show
 * (tests/test_cli.c checks that they hold it as the registry makes it).
 */
#include <stdio.h>

#include "args.h"
#include "commands.h"
#include "util/csvio.h"
#include "util/err.h"
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

/* One row per planner: its name, what it does, what it follows, its
 * contract (planner.h) and its options' names. */
static void markdown(void)
{
	printf("| planner | what it does | follows | estimate | may refuse | options |\n"
	       "|---|---|---|---|---|---|\n");
	for (int i = 0; i < nplanners; i++) {
		const struct planner *p = planners[i];

		printf("| `%s` | %s | %s | %s | %s |", p->name, p->description, p->follows,
		       planner_estimate_name(p->estimate), p->may_refuse ? "yes" : "no");
		for (const struct planner_option *o = p->options; o && o->name; o++)
			printf("%s`%s`", o == p->options ? " " : ", ", o->name);
		printf(" |\n");
	}
}

static int run(int argc, char **argv)
{
	char list[512];
	int csv = 0, md = 0, npos, rc;
	const struct opt opts[] = {
		{ NULL, "--csv", OPT_FLAG, &csv },
		{ NULL, "--markdown", OPT_FLAG, &md },
		{ 0 },
	};

	rc = args_parse("planners", argc, argv, opts, NULL, 0, &npos);
	if (rc)
		return rc;
	if (csv && md)
		return ap_err(AP_EINPUT, "planners", 0, "--csv and --markdown: expected one of them");
	if (md) {
		markdown();
		return 0;
	}
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
	.usage = "usage: autopar planners [--csv | --markdown]\n\n"
		 "Lists the registered planners: name, what it does, the paper or rule\n"
		 "it follows, and the planner's own options, which `autopar plan` takes\n"
		 "as --option [VALUE] and a bench matrix as NAME:option[=VALUE],...\n"
		 "--markdown prints the table of README.md, with each planner's contract\n"
		 "(its estimate, and whether it may refuse an instance: planner.h).\n",
	.run = run,
};
