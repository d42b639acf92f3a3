/*
 * The CUDA loader of a build without CUDA or cuDNN (docs/conventions.md, rule 3): in
 * place of cuda_load.c, it has no object to load and says so, and the
 * entry points of cuda_entry.c report that as they report an object they
 * cannot load, so no caller needs an #ifdef.
 */
#include <stdio.h>

#include "cuda_load.h"
#include "gpu.h"

#define NOT_BUILT "not built with CUDA"

const struct cuda_plugin *cuda_load(const char **why)
{
	*why = NOT_BUILT " (expected nvcc and cuDNN under CUDA_HOME at build time)";
	return NULL;
}

int gpu_built(void)
{
	return 0;
}

int gpu_count(char *why, size_t len)
{
	snprintf(why, len, NOT_BUILT);
	return -1;
}

const char *gpu_versions(void)
{
	return NOT_BUILT;
}
