/*
 * The `autopar` command: dispatches to one subcommand per file (cli/cmd_*.c)
 * and turns their status into the exit code (0 ok, 1 runtime failure,
 * 2 bad input or usage).  This is the only place that exits.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const struct command *const commands[] = {
	&cmd_version,
	&cmd_models,
	&cmd_clusters,
	&cmd_planners,
	&cmd_plan,
	&cmd_bench,
	&cmd_sim,
	&cmd_check,
	&cmd_profile,
	&cmd_run,
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct command *lookup(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

static int usage(FILE *f)
{
	fprintf(f, "usage: autopar COMMAND [ARGS]\n\n"
		   "autopar plans, simulates and runs parallel DNN training.\n\n"
		   "commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(f, "  %-10s %s\n", "help", "help on a command: autopar help COMMAND");
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2)
		return usage(stderr);
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		if (argc < 3 || strcmp(argv[2], "help") == 0)
			return usage(stdout);
		c = lookup(argv[2]);
		if (!c) {
			fprintf(stderr, "autopar: unknown command '%s' (see autopar help)\n",
				argv[2]);
			return 2;
		}
		fputs(c->usage, stdout);
		return 0;
	}
	c = lookup(argv[1]);
	if (!c) {
		fprintf(stderr, "autopar: unknown command '%s' (see autopar help)\n", argv[1]);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(c->usage, stdout);
			return 0;
		}
	}
	return c->run(argc - 1, argv + 1);
}
