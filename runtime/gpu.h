/*
 * What GPU support this build has.  With the CUDA toolkit the runtime links
 * gpu_cuda.cu; without it gpu_stub.c answers "not built with CUDA", so no
 * caller needs an #ifdef.
 */
#ifndef AUTOPAR_GPU_H
#define AUTOPAR_GPU_H

#include <stddef.h>

/* 1 when the CUDA backend is compiled in. */
int gpu_built(void);
/* Number of usable devices (0 with the reason in why) or -1 when not built. */
int gpu_count(char *why, size_t len);
/* Versions compiled against, e.g. "cudart 13000, cudnn 9.x, nccl 2.x". */
const char *gpu_versions(void);

#endif
