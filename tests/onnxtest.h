/*
 * Helpers of the tests of `autopar models import` (test_onnx.c on what it
 * converts, test_onnx_edges.c on what it refuses and how it ends): an
 * import into the temporary directory, and the skip where the onnx Python
 * package (python3-onnx) is missing.
 */
#ifndef AUTOPAR_ONNXTEST_H
#define AUTOPAR_ONNXTEST_H

#include "testutil.h"

static char out[65536]; /* what the last command said */

/* Imports the ONNX file at path to tmp_dir()/NAME.model (its path into
 * model); returns the exit status, the command's stderr in out. */
static inline int import_file(const char *path, const char *name, char *model, size_t len)
{
	char args[2048];

	snprintf(model, len, "%s/%s.model", tmp_dir(), name);
	snprintf(args, sizeof args, "models import '%s' -o '%s'", path, model);
	return test_autopar(args, 0, out, sizeof out);
}

/* Imports tests/onnx/NAME.onnx. */
static inline int import(const char *name, char *model, size_t len)
{
	char path[1024];

	snprintf(path, sizeof path, "%s/tests/onnx/%s.onnx", getenv("AUTOPAR_DATA"), name);
	return import_file(path, name, model, len);
}

/* The onnx package is there: the import of a small file does not fail
 * for want of it. */
static inline int have_onnx(void)
{
	char model[600];
	int st = import("mlp_small", model, sizeof model);

	if (st == 1 && strstr(out, "python3-onnx"))
		return 0;
	return 1;
}

#define SKIP_WITHOUT_ONNX()                                                         \
	do {                                                                        \
		if (!have_onnx()) {                                                 \
			print_message("skipped: the onnx Python package is missing " \
				      "(apt-get install python3-onnx)\n");          \
			skip();                                                     \
		}                                                                   \
	} while (0)

#endif
