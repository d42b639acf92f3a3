/*
 * What a command asks of the CUDA backend beyond the backend table: the
 * precision of its float32 products (gpu_prec.h) and where it tells the
 * algorithms it chooses (`--verbose`: one line per convolution shape and
 * direction, docs/gpu.md).  `autopar run` and `autopar profile` set them
 * from their options before the backend starts; libautopar-cuda.so reads
 * them back from the binary, as it reads gpu_selected() (cuda_load.h),
 * at every product and every new convolution shape, so a test may change
 * them between calls.  The binary holds them (gpu_opts.c is not built
 * into the object, whose copy would be another variable).
 */
#ifndef AUTOPAR_GPU_OPTS_H
#define AUTOPAR_GPU_OPTS_H

#include <stdio.h>

#include "gpu_prec.h"

/* Sets the precision and the stream of --verbose (NULL: quiet, the
 * default). */
void gpu_opts_set(enum gpu_prec p, FILE *verbose);

/* GPU_FP32 until set */
enum gpu_prec gpu_opt_prec(void);

/* NULL until set */
FILE *gpu_opt_verbose(void);

#endif
