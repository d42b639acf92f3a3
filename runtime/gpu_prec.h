/*
 * The arithmetic of the float32 products the CUDA backend runs (GEMMs,
 * batched matmuls, convolutions): `--precision` of `autopar run` and
 * `autopar profile` (docs/gpu.md, "Precision").  fp32, the default, keeps
 * float32 products (cuBLAS's default math, cuDNN restricted to FMA
 * kernels), so results agree with the CPU backend to round-off; tf32 lets
 * tensor cores round the products' inputs to TF32 (8 bits of exponent, 10
 * of mantissa, accumulating in float32), as PyTorch does with
 * torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32.
 * Plain C without CUDA, so that the names and the mapping to the
 * libraries' math modes are tested without a GPU; the CUDA backend turns
 * struct gpu_math into the libraries' enums.
 */
#ifndef AUTOPAR_GPU_PREC_H
#define AUTOPAR_GPU_PREC_H

enum gpu_prec {
	GPU_FP32,
	GPU_TF32,
	NGPU_PRECS,
};

/* What a precision asks of the libraries. */
struct gpu_math {
	/* cuBLAS: CUBLAS_TF32_TENSOR_OP_MATH when set, else
	 * CUBLAS_DEFAULT_MATH (float32 products, no tensor cores) */
	int blas_tf32;
	/* cuDNN: CUDNN_DEFAULT_MATH when set (tensor cores on TF32 where
	 * the GPU has them), else CUDNN_FMA_MATH (float32 FMA kernels
	 * only); never a math that converts float32 data to half */
	int dnn_tf32;
};

/* "fp32" or "tf32" into *p; else AP_EINPUT with "--precision: expected
 * fp32 or tf32, got 'S'" (under the option's name, as each command spells
 * it). */
int gpu_prec_parse(const char *s, enum gpu_prec *p);

/* "fp32", "tf32" ("?" for a value outside the enum) */
const char *gpu_prec_name(enum gpu_prec p);

struct gpu_math gpu_prec_math(enum gpu_prec p);

#endif
