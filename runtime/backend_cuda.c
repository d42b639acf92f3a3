/*
 * The CUDA backend (docs/runtime.md#backends; built only with CUDA and
 * cuDNN, docs/architecture.md#dependencies): cuDNN convolution and pooling
 * (cuda_conv.cu), cuBLAS GEMM and batched matmul (cuda_dense.cu),
 * attention from cuBLAS products and own softmax (cuda_attn.cu), own
 * kernels for the rest (cuda_elem.cu, cuda_norm.cu), the device context
 * and memory (cuda_mem.cu), filled into the backend table of backend.h.
 * One process drives one GPU; every call is queued on one stream, in the
 * executor's order.
 *
 * The backend is part of libautopar-cuda.so, with the NCCL transport and
 * its benchmark where NCCL is built (AUTOPAR_NCCL); this file fills the
 * one table the object exports (cuda_load.h), the only symbol it shows
 * the binary (built with -fvisibility=hidden).
 */
#include "cuda_kern.h"
#include "cuda_load.h"
#include "transport_nccl.h"

static const struct backend backend = {
	.name = "cuda",
	.ops = {
		[OP_CONV2D] = &cuda_conv2d,
		[OP_MAXPOOL] = &cuda_maxpool,
		[OP_AVGPOOL] = &cuda_avgpool,
		[OP_ADAPTIVE_AVGPOOL] = &cuda_adaptive_avgpool,
		[OP_LINEAR] = &cuda_linear,
		[OP_MATMUL] = &cuda_matmul,
		[OP_RELU] = &cuda_relu,
		[OP_GELU] = &cuda_gelu,
		[OP_TANH] = &cuda_tanh,
		[OP_SIGMOID] = &cuda_sigmoid,
		[OP_ADD] = &cuda_add,
		[OP_MUL] = &cuda_mul,
		[OP_CONCAT] = &cuda_concat,
		[OP_BATCHNORM] = &cuda_batchnorm,
		[OP_LAYERNORM] = &cuda_layernorm,
		[OP_DROPOUT] = &cuda_dropout,
		[OP_EMBEDDING] = &cuda_embedding,
		[OP_SOFTMAX] = &cuda_softmax,
		[OP_ATTENTION] = &cuda_attention,
		[OP_LOSS] = &cuda_loss,
		[OP_FLATTEN] = &cuda_identity,
		[OP_RESHAPE] = &cuda_identity,
	},
	.gemm = cuda_gemm,
	.sgd = cuda_sgd,
	.adam = cuda_adam,
	.predict = cuda_predict,
	.alloc = cuda_alloc,
	.release = cuda_release,
	.upload = cuda_upload,
	.download = cuda_download,
	.copy = cuda_copy,
	.fill = cuda_fill,
	.region_copy = cuda_region_copy,
	.sync = cuda_sync,
	.evict = cuda_evict,
	.timer_start = cuda_timer_start,
	.timer_stop = cuda_timer_stop,
	.init = cuda_init,
	.describe = cuda_describe,
};

__attribute__((visibility("default"))) const struct cuda_plugin autopar_cuda_plugin = {
	.abi = CUDA_PLUGIN_ABI,
	.backend = &backend,
	.gpu_properties = cuda_properties,
#ifdef AUTOPAR_NCCL
	.transport_nccl_init = transport_nccl_init,
	.comm_bench = comm_bench,
#endif
};
