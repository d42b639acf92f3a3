/*
 * The CUDA backend of a build without CUDA or cuDNN (CONVENTIONS 3): they link, and say "not built with CUDA" when asked to
 * run, so no caller needs an #ifdef.
 */
#include <stddef.h>

#include "backend.h"
#include "err.h"

static int not_built(void)
{
	return ap_err(AP_EINPUT, "cuda", 0, "not built with CUDA (expected nvcc and cuDNN under CUDA_HOME at build time)");
}

static const char *describe(void)
{
	return "not built with CUDA";
}

const struct backend backend_cuda = {
	.name = "cuda",
	.init = not_built,
	.describe = describe,
};
