/*
 * The NCCL transport and benchmark of a build without NCCL (CONVENTIONS
 * 3): they link, and say so when asked for.
 */
#include <stddef.h>

#include "comm_bench.h"
#include "err.h"
#include "transport.h"

int transport_nccl_init(struct transport *t, struct transport *inner, const struct backend *be)
{
	(void)t, (void)inner, (void)be;
	return ap_err(AP_EINPUT, "nccl", 0,
		      "not built with NCCL (expected nvcc, cuDNN and nccl.h under CUDA_HOME at build time)");
}

int transport_nccl_built(void)
{
	return 0;
}

int comm_bench(int ndev, int64_t max_bytes, struct comm_row **rows, int *n)
{
	(void)ndev, (void)max_bytes;
	*rows = NULL;
	*n = 0;
	return ap_err(AP_EINPUT, "--comm", 0,
		      "not built with NCCL (expected nvcc, cuDNN and nccl.h under CUDA_HOME at build time)");
}
