/*
 * The subcommands of `autopar`.  Each lives in cli/cmd_<name>.c, parses its
 * own options, returns an exit status (0 ok, 1 runtime failure, 2 bad input
 * or usage) and prints its help text from a `help` function.
 */
#ifndef AUTOPAR_COMMANDS_H
#define AUTOPAR_COMMANDS_H

struct command {
	const char *name;
	const char *summary;   /* one line for `autopar help` */
	const char *usage;     /* full text for `autopar help NAME` and --help */
	int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
};

extern const struct command cmd_version;
extern const struct command cmd_models;
extern const struct command cmd_clusters;
extern const struct command cmd_planners;
extern const struct command cmd_plan;
extern const struct command cmd_bench;
extern const struct command cmd_sim;
extern const struct command cmd_check;
extern const struct command cmd_profile;
extern const struct command cmd_run;

/* `autopar models import` (cli/cmd_import.c), which `models` hands its
 * arguments to; argv[0] is "import". */
int models_import(int argc, char **argv);

#endif
