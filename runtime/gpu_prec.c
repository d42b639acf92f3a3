/*
 * Precision names and their math modes (gpu_prec.h).  Built into the
 * binary, which parses the option, and into libautopar-cuda.so, which
 * sets the modes (a hidden copy there, as the Makefile says).
 */
#include "gpu_prec.h"

#include <string.h>

#include "util/err.h"

static const char *const names[NGPU_PRECS] = {
	[GPU_FP32] = "fp32",
	[GPU_TF32] = "tf32",
};

int gpu_prec_parse(const char *s, enum gpu_prec *p)
{
	for (int q = 0; q < NGPU_PRECS; q++)
		if (s && !strcmp(s, names[q])) {
			*p = (enum gpu_prec)q;
			return AP_OK;
		}
	return ap_err(AP_EINPUT, "--precision", 0, "expected fp32 or tf32, got '%s'",
		      s ? s : "");
}

const char *gpu_prec_name(enum gpu_prec p)
{
	return (unsigned)p < NGPU_PRECS ? names[p] : "?";
}

struct gpu_math gpu_prec_math(enum gpu_prec p)
{
	struct gpu_math m = { 0, 0 };

	/* only tf32 leaves float32 FMA: anything else (a value outside the
	 * enum included) keeps the results the CPU backend checks */
	if (p == GPU_TF32)
		m.blas_tf32 = m.dnn_tf32 = 1;
	return m;
}
