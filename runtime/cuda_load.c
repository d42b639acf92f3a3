/*
 * Finding and loading libautopar-cuda.so (cuda_load.h), in a build with
 * CUDA: the file AUTOPAR_CUDA_LIB names, else the one beside the running
 * binary (/proc/self/exe's directory: `make` builds it there), else the
 * one in AUTOPAR_LIBDIR (`make install`).  It is loaded once, on the
 * first call that needs it, with every symbol bound at once (RTLD_NOW),
 * so a missing CUDA library or a binary that lacks a function the object
 * calls is one message here, not a crash later.
 *
 * The questions `autopar version` asks (gpu.h: what was built, the
 * versions, how many GPUs) are answered without the object: the versions
 * are those of the headers this file was compiled with, the same the
 * object was, and the devices are counted through the CUDA runtime
 * alone, which loads in a millisecond where cuBLAS, cuDNN and NCCL take
 * tenths of a second.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <cudnn_version.h>
#ifdef AUTOPAR_NCCL
#include <nccl.h>
#endif

#include "cuda_load.h"
#include "gpu.h"

/* From the Makefile: AUTOPAR_LIBDIR, where make install puts the object,
 * and AUTOPAR_CUDART, the CUDA runtime's soname. */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const struct cuda_plugin *loaded;
static char why_not[PATH_MAX + 512];

/* 1 when the file dir/name (into path, PATH_MAX bytes) is there */
static int there(char *path, const char *dir, const char *name)
{
	int n = snprintf(path, PATH_MAX, "%s%s%s", dir, *dir ? "/" : "", name);

	return n > 0 && n < PATH_MAX && access(path, F_OK) == 0;
}

/* Where the object is, in path (PATH_MAX bytes): 1 when found, else 0
 * with the places looked at in why (len bytes). */
static int locate(char *path, char *why, size_t len)
{
	const char *env = getenv("AUTOPAR_CUDA_LIB");
	char self[PATH_MAX] = ".";
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	char *slash;

	if (env && *env) {
		if (there(path, "", env))
			return 1;
		snprintf(why, len, "cannot find '%s' (AUTOPAR_CUDA_LIB)", env);
		return 0;
	}
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
	}
	if (there(path, self, CUDA_PLUGIN_FILE) || there(path, AUTOPAR_LIBDIR, CUDA_PLUGIN_FILE))
		return 1;
	snprintf(why, len,
		 "cannot find " CUDA_PLUGIN_FILE " beside the binary (in '%s') nor in '%s' "
		 "(expected it built with the binary by make, or installed with it by make install)",
		 self, AUTOPAR_LIBDIR);
	return 0;
}

static void load(void)
{
	static const size_t abi[CUDA_PLUGIN_NABI] = CUDA_PLUGIN_ABI;
	char path[PATH_MAX];
	const struct cuda_plugin *p;
	void *h;

	if (!locate(path, why_not, sizeof why_not))
		return;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why_not, sizeof why_not,
			 "cannot load '%s': %s (expected the CUDA runtime, cuBLAS, cuDNN and NCCL "
			 "libraries it was built with on the library path: LD_LIBRARY_PATH or "
			 "ldconfig)", path, dlerror());
		return;
	}
	p = dlsym(h, CUDA_PLUGIN_SYMBOL);
	if (!p || memcmp(p->abi, abi, sizeof abi)) {
		snprintf(why_not, sizeof why_not,
			 "cannot use '%s': %s (expected the " CUDA_PLUGIN_FILE " built with this binary)",
			 path, p ? "it is from another build of autopar"
				 : "it has no table " CUDA_PLUGIN_SYMBOL);
		dlclose(h);
		return;
	}
	loaded = p;
}

const struct cuda_plugin *cuda_load(const char **why)
{
	pthread_once(&once, load);
	*why = why_not;
	return loaded;
}

int gpu_built(void)
{
	char path[PATH_MAX], why[PATH_MAX + 512];

	return locate(path, why, sizeof why);
}

const char *gpu_versions(void)
{
	static char buf[3 * PATH_MAX];
	char path[PATH_MAX], why[PATH_MAX + 512];
	int n = snprintf(buf, sizeof buf, "cudart %d, cudnn %d.%d.%d", CUDART_VERSION,
			 CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);

#ifdef NCCL_VERSION_CODE
	n += snprintf(buf + n, sizeof buf - n, ", nccl %d.%d.%d", NCCL_MAJOR, NCCL_MINOR,
		      NCCL_PATCH);
#endif
	if (locate(path, why, sizeof why))
		snprintf(buf + n, sizeof buf - n, " in '%s'", path);
	else
		snprintf(buf + n, sizeof buf - n, "; %s", why);
	return buf;
}

/* Through the CUDA runtime alone, kept loaded (it may start the driver) */
int gpu_count(char *why, size_t len)
{
	static void *rt;
	__typeof__(&cudaGetDeviceCount) count;
	__typeof__(&cudaGetErrorString) message;
	cudaError_t e;
	int n = 0;

	if (!rt && !(rt = dlopen(AUTOPAR_CUDART, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(why, len, "cannot load the CUDA runtime: %s", dlerror());
		return 0;
	}
	count = (__typeof__(count))dlsym(rt, "cudaGetDeviceCount");
	message = (__typeof__(message))dlsym(rt, "cudaGetErrorString");
	if (!count || !message) {
		snprintf(why, len, "no cudaGetDeviceCount in " AUTOPAR_CUDART);
		return 0;
	}
	e = count(&n);
	if (e != cudaSuccess) {
		snprintf(why, len, "%s", message(e));
		return 0;
	}
	if (n == 0)
		snprintf(why, len, "no CUDA device present");
	return n;
}
