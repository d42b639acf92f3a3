/*
 * `autopar planners [--csv]`: the registered planners.
 */
#include <stdio.h>

#include "args.h"
#include "commands.h"
#include "csvio.h"
#include "planner.h"

static int run(int argc, char **argv)
{
	int csv = 0, npos, rc;
	const struct opt opts[] = {
		{ NULL, "--csv", OPT_FLAG, &csv },
		{ 0 },
	};

	rc = args_parse("planners", argc, argv, opts, NULL, 0, &npos);
	if (rc)
		return rc;
	if (csv)
		printf("name,description,anchor\n");
	for (int i = 0; i < nplanners; i++) {
		const struct planner *p = planners[i];

		if (csv) {
			csvio_put_text(stdout, p->name);
			putchar(',');
			csvio_put_text(stdout, p->description);
			putchar(',');
			csvio_put_text(stdout, p->anchor);
			putchar('\n');
		} else {
			printf("%-12s %-66s %s\n", p->name, p->description, p->anchor);
		}
	}
	return 0;
}

const struct command cmd_planners = {
	.name = "planners",
	.summary = "list the planners",
	.usage = "usage: autopar planners [--csv]\n\n"
		 "Lists the registered planners: name, what it does, the paper or rule\n"
		 "it follows.\n",
	.run = run,
};
