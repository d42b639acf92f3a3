/*
 * The CUDA parts of autopar (the CUDA backend, the NCCL transport and its
 * benchmark) live in a shared object, libautopar-cuda.so, built beside the
 * binary and installed in PREFIX/lib/autopar, so that a command that
 * touches no GPU does not pay for loading the CUDA runtime, cuBLAS, cuDNN
 * and NCCL (their initialisers take 0.1 to 2 s).  The object fills one
 * table, struct cuda_plugin; the binary keeps the entry points of gpu.h,
 * backend_cuda (backend.h), transport_nccl_* (transport_nccl.h) and comm_bench
 * (comm_bench.h) in cuda_entry.c, which load the object the first time
 * they need it (cuda_load.c) and forward to its table.  A build without
 * CUDA links cuda_stub.c instead of cuda_load.c: its cuda_load() answers
 * "not built with CUDA", and every entry point reports that as it
 * reports an object it cannot load.
 *
 * Inside the object the functions keep their names (transport_nccl_init,
 * comm_bench), hidden from the binary; what the object calls back in the
 * binary (ap_err, the region and transport helpers, gpu_selected,
 * backend_cuda) the binary exports (-rdynamic).
 */
#ifndef AUTOPAR_CUDA_LOAD_H
#define AUTOPAR_CUDA_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "comm_bench.h"
#include "transport.h"

#define CUDA_PLUGIN_FILE "libautopar-cuda.so"
#define CUDA_PLUGIN_SYMBOL "autopar_cuda_plugin"
/* Raised when the table changes; with the sizes of the structs that cross
 * between the binary and the object, it refuses an object of another
 * build instead of calling it with the wrong layout. */
#define CUDA_PLUGIN_VERSION 1
#define CUDA_PLUGIN_ABI                                                            \
	{ CUDA_PLUGIN_VERSION, sizeof(struct cuda_plugin), sizeof(struct backend),   \
	  sizeof(struct kern), sizeof(struct kbufs), sizeof(struct transport),       \
	  sizeof(struct transport_ops), sizeof(struct comm_row) }
#define CUDA_PLUGIN_NABI 8

struct cuda_plugin {
	size_t abi[CUDA_PLUGIN_NABI];       /* CUDA_PLUGIN_ABI */
	const struct backend *backend;
	/* as gpu.h's gpu_properties */
	int (*gpu_properties)(int dev, char *name, size_t len, long long *mem_bytes);
	/* as transport_nccl.h's and comm_bench.h's; NULL in a build without NCCL */
	int (*transport_nccl_init)(struct transport *t, struct transport *inner,
				   const struct backend *be);
	int (*comm_bench)(int ndev, int64_t max_bytes, struct comm_row **rows, int *n);
};

/* The object's table, loaded on the first call; NULL when it cannot be
 * had, with *why saying why in one line ("not built with CUDA (...)",
 * "cannot load '...': ..."), reported by the caller under its subject. */
const struct cuda_plugin *cuda_load(const char **why);

#endif
