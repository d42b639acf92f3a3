/*
 * The GPU entry points of a build without CUDA: they link and say so.
 */
#include <stdio.h>

#include "gpu.h"

int gpu_built(void)
{
	return 0;
}

int gpu_count(char *why, size_t len)
{
	snprintf(why, len, "not built with CUDA");
	return -1;
}

const char *gpu_versions(void)
{
	return "not built with CUDA";
}
