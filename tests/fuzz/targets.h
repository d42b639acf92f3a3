/*
 * The parsers under fuzzing, one entry point each, shared by the libFuzzer
 * harnesses (tests/fuzz/fuzz_*.c, built by `make fuzz`) and by the
 * regression test that replays the committed inputs
 * (tests/test_fuzz_regress.c, built by `make test`).  Each entry point
 * feeds the bytes to the project's own parser, the way a user's file would
 * reach it, and releases everything the parser allocated.
 */
#ifndef AUTOPAR_FUZZ_TARGETS_H
#define AUTOPAR_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

struct fuzz_target {
	const char *name; /* the harness and its corpus dir tests/fuzz/corpus/NAME */
	/* The parser's status: AP_OK, or AP_EINPUT / AP_EFAIL with a message
	 * recorded (core/util/err.h); FUZZ_ESILENT when it failed without one. */
	int (*run)(const uint8_t *data, size_t size);
};

/* Returned by a target whose parser failed without reporting why; the
 * harnesses abort on it (err.h: every failure is reported where found). */
#define FUZZ_ESILENT (-1000)

extern const struct fuzz_target fuzz_targets[];
extern const int fuzz_ntargets;
const struct fuzz_target *fuzz_target_find(const char *name);

/* Once per process: quiet errors, a private temporary directory for the
 * parsers that only read paths, and the model and cluster a plan is read
 * against (models/mlp.model, 1x2:v100, from the data directory).  0 ok. */
int fuzz_setup(void);
/* Removes the temporary directory and releases what setup loaded. */
void fuzz_teardown(void);

/* Runs target `name` on the input and aborts when the status breaks the
 * contract above: what every harness's LLVMFuzzerTestOneInput does. */
int fuzz_one(const char *name, const uint8_t *data, size_t size);

#endif
