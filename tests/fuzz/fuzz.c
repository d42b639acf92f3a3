/*
 * The libFuzzer harness of one parser, chosen when it is built
 * (-DFUZZ_TARGET='"model"'; `make fuzz` builds one per entry of
 * fuzz_targets[]): each input goes to that parser's call in targets.c,
 * which tests/test_fuzz_regress.c shares.  The parsers, by target: model
 * (model_parse), pipedream (pipedream_read), profile (profile_load of an
 * ops.csv), cluster (cluster_resolve, with an optional clusters.csv),
 * plan (plan_peek, plan_read, plan_validate against models/mlp.model),
 * matrix (matrix_read), piper (piper_read, piper_cluster).
 */
#include <stdlib.h>

#include "targets.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (fuzz_setup())
		abort();
	atexit(fuzz_teardown);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_one(FUZZ_TARGET, data, size);
	return 0;
}
