/*
 * The process's settings of the CUDA backend (gpu_opts.h): one precision
 * and one stream per process, as there is one device per process.
 */
#include "gpu_opts.h"

static enum gpu_prec precision = GPU_FP32;
static FILE *verbose;

void gpu_opts_set(enum gpu_prec p, FILE *f)
{
	precision = p;
	verbose = f;
}

enum gpu_prec gpu_opt_prec(void)
{
	return precision;
}

FILE *gpu_opt_verbose(void)
{
	return verbose;
}
