/*
 * The GPU entry points of a build without CUDA: they link and say so.
 */
#include <stdio.h>

#include "err.h"
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

int gpu_select(int dev)
{
	(void)dev;
	return ap_err(AP_EINPUT, "cuda", 0, "not built with CUDA");
}

int gpu_selected(void)
{
	return -1;
}

int gpu_properties(int dev, char *name, size_t len, long long *mem_bytes)
{
	(void)dev, (void)name, (void)len, (void)mem_bytes;
	return ap_err(AP_EINPUT, "cuda", 0, "not built with CUDA");
}
