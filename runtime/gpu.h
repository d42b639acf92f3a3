/*
 * What GPU support this build has.  cuda_load.c answers without loading
 * libautopar-cuda.so (the versions built against, the devices counted
 * through the CUDA runtime alone); selection and properties are in
 * cuda_entry.c.  Without CUDA, cuda_stub.c answers "not built with CUDA",
 * so no caller needs an #ifdef.
 */
#ifndef AUTOPAR_GPU_H
#define AUTOPAR_GPU_H

#include <stddef.h>

/* 1 when the CUDA backend is built and its shared object is found. */
int gpu_built(void);
/* Number of usable devices (0 with the reason in why) or -1 when not built. */
int gpu_count(char *why, size_t len);
/* Makes device dev the one this process's CUDA backend uses (before the
 * backend's init; by default the MPI local rank modulo the devices);
 * not built: an error. */
int gpu_select(int dev);
/* The device gpu_select() chose, or -1. */
int gpu_selected(void);
/* Name and memory of device dev; not built or no such device: an error. */
int gpu_properties(int dev, char *name, size_t len, long long *mem_bytes);
/* Versions compiled against, e.g. "cudart 13000, cudnn 9.x, nccl 2.x",
 * and where the shared object is (or why it is not found). */
const char *gpu_versions(void);

#endif
