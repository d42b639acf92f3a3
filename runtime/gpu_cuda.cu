/*
 * The GPU entry points of a CUDA build: device discovery through the CUDA
 * runtime, and the library versions the build was compiled against.
 */
#include <stdio.h>

#include <cuda_runtime.h>
#if __has_include(<cudnn.h>)
#include <cudnn.h>
#endif
#if __has_include(<nccl.h>)
#include <nccl.h>
#endif

extern "C" {
#include "err.h"
#include "gpu.h"
}

static int selected = -1;

extern "C" int gpu_built(void)
{
	return 1;
}

extern "C" int gpu_count(char *why, size_t len)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		snprintf(why, len, "%s", cudaGetErrorString(e));
		return 0;
	}
	if (n == 0)
		snprintf(why, len, "no CUDA device present");
	return n;
}

extern "C" const char *gpu_versions(void)
{
	static char buf[128];
	int n = snprintf(buf, sizeof buf, "cudart %d", CUDART_VERSION);
#ifdef CUDNN_VERSION
	n += snprintf(buf + n, sizeof buf - n, ", cudnn %d.%d.%d", CUDNN_MAJOR,
		      CUDNN_MINOR, CUDNN_PATCHLEVEL);
#endif
#ifdef NCCL_VERSION_CODE
	snprintf(buf + n, sizeof buf - n, ", nccl %d.%d.%d", NCCL_MAJOR,
		 NCCL_MINOR, NCCL_PATCH);
#endif
	return buf;
}

extern "C" int gpu_select(int dev)
{
	char why[128];
	int n = gpu_count(why, sizeof why);

	if (n <= 0)
		return ap_err(AP_EINPUT, "cuda", 0, "no CUDA device present (%s)", why);
	if (dev < 0 || dev >= n)
		return ap_err(AP_EINPUT, "cuda", 0, "expected a device below %d, got %d", n, dev);
	selected = dev;
	return 0;
}

extern "C" int gpu_selected(void)
{
	return selected;
}

extern "C" int gpu_properties(int dev, char *name, size_t len, long long *mem_bytes)
{
	cudaDeviceProp p;
	cudaError_t e = cudaGetDeviceProperties(&p, dev);

	if (e != cudaSuccess)
		return ap_err(AP_EFAIL, "cuda", 0, "device %d: %s", dev, cudaGetErrorString(e));
	snprintf(name, len, "%s", p.name);
	*mem_bytes = (long long)p.totalGlobalMem;
	return 0;
}
