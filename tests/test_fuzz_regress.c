/*
 * Replays the fuzzing inputs kept in the tree through the parser calls the
 * libFuzzer harnesses make (tests/fuzz/targets.c), so `make test` (and
 * `make check-asan`, under the sanitizers the fuzzer ran with) keeps every
 * parser from crashing on them again.  One cmocka test per file:
 *   tests/fuzz/corpus/NAME/ the seeds, small valid inputs: each must parse;
 *   tests/fuzz/regress/NAME/ inputs that once crashed a parser: each must be
 *     refused or accepted with a status of err.h, a refusal with a message.
 * An input listed in tests/fuzz/regress/KNOWN (one path a line, from the
 * source tree's root; # starts a comment) is a crash not fixed yet: it is
 * skipped, saying so, until its fix removes it from the list.
 */
#include "testutil.h"

#include <dirent.h>
#include <limits.h>

#include "util/datadir.h"
#include "util/err.h"
#include "targets.h"

struct input {
	char rel[PATH_MAX];  /* from the source tree's root */
	const struct fuzz_target *target;
	int seed;            /* from corpus/: must parse */
	int known;           /* listed in KNOWN */
};

static char **known;
static int nknown;

static void read_known(void)
{
	char path[PATH_MAX], line[PATH_MAX];
	FILE *f = fopen(datapath(path, sizeof path, "tests/fuzz/regress/KNOWN"), "r");

	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char *hash = strchr(line, '#'), *end;
		char **grown;

		if (hash)
			*hash = 0;
		end = line + strlen(line);
		while (end > line && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t' ||
				      end[-1] == '\r'))
			*--end = 0;
		if (!line[0])
			continue;
		grown = realloc(known, (size_t)(nknown + 1) * sizeof *known);
		if (!grown || !(grown[nknown] = strdup(line))) {
			known = grown ? grown : known;
			break;
		}
		known = grown;
		nknown++;
	}
	fclose(f);
}

static int is_known(const char *rel)
{
	for (int i = 0; i < nknown; i++)
		if (strcmp(known[i], rel) == 0)
			return 1;
	return 0;
}

static uint8_t *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL, *grown;
	size_t n = 0, cap = 0, got;

	if (!f)
		return NULL;
	do {
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			grown = realloc(buf, cap);
			if (!grown) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = grown;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got > 0);
	fclose(f);
	*size = n;
	return buf;
}

static void test_input(void **state)
{
	const struct input *in = *state;
	char path[PATH_MAX];
	size_t size = 0;
	uint8_t *data;
	int rc;

	if (in->known) {
		print_message("skipped: %s is a known crash (tests/fuzz/regress/KNOWN)\n",
			      in->rel);
		skip();
	}
	data = slurp(datapath(path, sizeof path, in->rel), &size);
	if (!data)
		fail_msg("cannot read '%s'", in->rel);
	rc = in->target->run(data, size);
	free(data);
	if (rc == FUZZ_ESILENT)
		fail_msg("'%s': the %s parser failed without a message", in->rel,
			 in->target->name);
	if (rc != AP_OK && rc != AP_EINPUT && rc != AP_EFAIL)
		fail_msg("'%s': status %d is not an ap_status", in->rel, rc);
	if (in->seed && rc != AP_OK)
		fail_msg("seed '%s' no longer parses: %s", in->rel, ap_last_error());
}

static int group_setup(void **state)
{
	(void)state;
	return fuzz_setup();
}

static int group_teardown(void **state)
{
	(void)state;
	fuzz_teardown();
	return 0;
}

static int visible(const struct dirent *e)
{
	return e->d_name[0] != '.';
}

/* Appends one input per file of DIR/NAME for every target. */
static int collect(const char *dir, int seed, struct input **ins, int *n)
{
	for (int t = 0; t < fuzz_ntargets; t++) {
		char rel[256], path[PATH_MAX];
		struct dirent **names;
		int nn;

		snprintf(rel, sizeof rel, "%s/%s", dir, fuzz_targets[t].name);
		nn = scandir(datapath(path, sizeof path, rel), &names, visible, alphasort);
		for (int i = 0; i < nn; i++) {
			struct input *grown = realloc(*ins, (size_t)(*n + 1) * sizeof **ins);

			if (!grown)
				return -1;
			*ins = grown;
			snprintf(grown[*n].rel, sizeof grown[*n].rel, "%s/%s", rel,
				 names[i]->d_name);
			grown[*n].target = &fuzz_targets[t];
			grown[*n].seed = seed;
			grown[*n].known = is_known(grown[*n].rel);
			(*n)++;
			free(names[i]);
		}
		if (nn > 0)
			free(names);
	}
	return 0;
}

int main(void)
{
	struct input *ins = NULL;
	struct CMUnitTest *tests;
	int n = 0, rc;

	read_known();
	if (collect("tests/fuzz/corpus", 1, &ins, &n) ||
	    collect("tests/fuzz/regress", 0, &ins, &n)) {
		fprintf(stderr, "test_fuzz_regress: out of memory\n");
		return 1;
	}
	if (n == 0) {
		fprintf(stderr, "test_fuzz_regress: no inputs under '%s/tests/fuzz'\n",
			datadir());
		return 1;
	}
	tests = calloc((size_t)n, sizeof *tests);
	if (!tests)
		return 1;
	for (int i = 0; i < n; i++) {
		tests[i].name = ins[i].rel;
		tests[i].test_func = test_input;
		tests[i].initial_state = &ins[i];
	}
	rc = _cmocka_run_group_tests("fuzz_regress", tests, (size_t)n, group_setup,
				     group_teardown);
	free(tests);
	free(ins);
	for (int i = 0; i < nknown; i++)
		free(known[i]);
	free(known);
	return rc;
}
