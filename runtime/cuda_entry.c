/*
 * The GPU entry points the rest of autopar calls (gpu.h's device
 * selection, backend_cuda, transport_nccl_*, comm_bench), in every build:
 * each takes the table of libautopar-cuda.so from cuda_load() the first
 * time it needs it and forwards to it (cuda_load.h).  Where there is no
 * table (a build without CUDA, an object that is missing or cannot load),
 * each says why in one message under its subject, as AP_EINPUT, and the
 * command stops there.
 *
 * backend_cuda holds only its name, init and describe until its init
 * loads the object: the init copies the object's backend table into it
 * and runs that table's init.  Every caller runs init before anything
 * else of a backend, so none sees the empty table.
 */
#include <stdio.h>

#include "cuda_load.h"
#include "util/err.h"
#include "gpu.h"
#include "transport_nccl.h"

#define NO_NCCL "not built with NCCL (expected nvcc, cuDNN and nccl.h under CUDA_HOME at build time)"

/* The table, or NULL with the reason reported under who. */
static const struct cuda_plugin *plugin(const char *who)
{
	const char *why;
	const struct cuda_plugin *p = cuda_load(&why);

	if (!p)
		ap_err(AP_EINPUT, who, 0, "%s", why);
	return p;
}

/* The table when it has the NCCL parts, or NULL with the reason reported. */
static const struct cuda_plugin *nccl_plugin(const char *who)
{
	const struct cuda_plugin *p = plugin(who);

	if (p && !p->transport_nccl_init) {
		ap_err(AP_EINPUT, who, 0, NO_NCCL);
		return NULL;
	}
	return p;
}

static int load_init(void)
{
	const struct cuda_plugin *p = plugin("cuda");

	if (!p)
		return AP_EINPUT;
	backend_cuda = *p->backend;
	return backend_cuda.init();
}

static const char *load_describe(void)
{
	return "CUDA (not initialised)";
}

struct backend backend_cuda = {
	.name = "cuda",
	.init = load_init,
	.describe = load_describe,
};

static int selected = -1;

int gpu_select(int dev)
{
	char why[256];
	int n = gpu_count(why, sizeof why);

	if (n < 0)
		return ap_err(AP_EINPUT, "cuda", 0, "%s", why);
	if (n == 0)
		return ap_err(AP_EINPUT, "cuda", 0, "no CUDA device present (%s)", why);
	if (dev < 0 || dev >= n)
		return ap_err(AP_EINPUT, "cuda", 0, "expected a device below %d, got %d", n, dev);
	selected = dev;
	return AP_OK;
}

int gpu_selected(void)
{
	return selected;
}

int gpu_properties(int dev, char *name, size_t len, long long *mem_bytes)
{
	const struct cuda_plugin *p = plugin("cuda");

	return p ? p->gpu_properties(dev, name, len, mem_bytes) : AP_EINPUT;
}

int transport_nccl_init(struct transport *t, struct transport *inner, const struct backend *be)
{
	const struct cuda_plugin *p = nccl_plugin("nccl");

	return p ? p->transport_nccl_init(t, inner, be) : AP_EINPUT;
}

int transport_nccl_built(void)
{
	const char *why;
	const struct cuda_plugin *p = cuda_load(&why);

	return p && p->transport_nccl_init;
}

int comm_bench(int ndev, int64_t max_bytes, struct comm_row **rows, int *n)
{
	const struct cuda_plugin *p = nccl_plugin("--comm");

	*rows = NULL;
	*n = 0;
	return p ? p->comm_bench(ndev, max_bytes, rows, n) : AP_EINPUT;
}
