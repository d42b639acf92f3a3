/*
 * NCCL's error macro (docs/conventions.md, rule 4) for the files that call NCCL: the
 * transport and the bandwidth benchmark.
 */
#ifndef AUTOPAR_NCCL_CHECK_CUH
#define AUTOPAR_NCCL_CHECK_CUH

#include <nccl.h>

#include "cuda_ctx.cuh"

#define NCCL_CHECK(call)                                                       \
	do {                                                                   \
		ncclResult_t r_ = (call);                                      \
		if (r_ != ncclSuccess)                                         \
			return ap_err(AP_EFAIL, __FILE__, __LINE__, "%s: %s",  \
				      #call, ncclGetErrorString(r_));          \
	} while (0)

#endif
