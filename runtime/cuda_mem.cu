/*
 * The CUDA backend's device context and memory (cuda_kern.h): one device
 * per process, one compute stream that every kernel and library call is
 * queued on, the cuBLAS and cuDNN handles bound to it, and what the
 * executor needs to move data itself: uploads, downloads, fills, the
 * strided region copies of every gather and gradient sum, and the
 * optimizer's element-wise updates; for the profiler, a timer of CUDA
 * events, an L2 eviction and the device's name and memory.
 *
 * cuBLAS's math mode follows the precision the command asks (gpu_opts.h,
 * gpu_prec.h): in fp32, the default, its default math (no TF32), as
 * cuDNN's convolutions run in FMA math (cuda_conv.cu), so results match
 * the CPU backend to float32 round-off, which --check and the kernel
 * tests rely on; in tf32, CUBLAS_TF32_TENSOR_OP_MATH.
 */
#include "cuda_ctx.cuh"

#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "gpu.h"
#include "gpu_opts.h"
#include "region.h"
}

struct cuda_ctx cuda_ctx;

/* The rank's GPU: the one gpu_select() chose, else its index among the
 * ranks of its node (Open MPI tells each rank) modulo the GPUs there. */
static int pick_device(int ndev)
{
	const char *v = getenv("OMPI_COMM_WORLD_LOCAL_RANK");

	if (gpu_selected() >= 0)
		return gpu_selected();
	return v ? atoi(v) % ndev : 0;
}

extern "C" int cuda_init(void)
{
	struct cuda_ctx *c = &cuda_ctx;
	int ndev = 0;
	size_t free_b = 0, total_b = 0;
	cudaDeviceProp prop;
	cudaError_t e;

	if (c->ready)
		return AP_OK;
	e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev == 0)
		return ap_err(AP_EFAIL, "cuda", 0, "no CUDA device present (%s)",
			      e != cudaSuccess ? cudaGetErrorString(e) : "none found");
	c->device = pick_device(ndev);
	if (c->device >= ndev)
		return ap_err(AP_EINPUT, "cuda", 0, "device %d requested, %d present",
			      c->device, ndev);
	CUDA_CHECK(cudaSetDevice(c->device));
	CUDA_CHECK(cudaGetDeviceProperties(&prop, c->device));
	CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
	CUBLAS_CHECK(cublasCreate(&c->blas));
	CUBLAS_CHECK(cublasSetStream(c->blas, c->stream));
	c->blas_precision = -1;
	if (cuda_blas_math())
		return AP_EFAIL;
	CUDNN_CHECK(cudnnCreate(&c->dnn));
	CUDNN_CHECK(cudnnSetStream(c->dnn, c->stream));
	CUDA_CHECK(cudaMalloc((void **)&c->flag, sizeof *c->flag));
	CUDA_CHECK(cudaEventCreate(&c->t0));
	CUDA_CHECK(cudaEventCreate(&c->t1));
	CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
	/* cuDNN's algorithms may use up to an eighth of the free memory,
	 * at most 1 GiB: the rest is the plan's */
	c->ws_limit = free_b / 8 < ((size_t)1 << 30) ? free_b / 8 : ((size_t)1 << 30);
	snprintf(c->what, sizeof c->what, "%.120s (device %d, sm_%d%d, %.1f GiB), cudnn %zu",
		 prop.name, c->device, prop.major, prop.minor,
		 (double)total_b / (1u << 30), cudnnGetVersion());
	c->ready = 1;
	return AP_OK;
}

/* the device, and the precision its products run in now */
extern "C" const char *cuda_describe(void)
{
	static char d[sizeof cuda_ctx.what + 32];

	if (!cuda_ctx.ready)
		return "CUDA (not initialised)";
	snprintf(d, sizeof d, "%s, %s", cuda_ctx.what, gpu_prec_name(gpu_opt_prec()));
	return d;
}

int cuda_blas_math(void)
{
	enum gpu_prec p = gpu_opt_prec();

	if ((int)p == cuda_ctx.blas_precision)
		return AP_OK;
	CUBLAS_CHECK(cublasSetMathMode(cuda_ctx.blas, gpu_prec_math(p).blas_tf32
							      ? CUBLAS_TF32_TENSOR_OP_MATH
							      : CUBLAS_DEFAULT_MATH));
	cuda_ctx.blas_precision = (int)p;
	return AP_OK;
}

extern "C" int cuda_properties(int dev, char *name, size_t len, long long *mem_bytes)
{
	cudaDeviceProp p;
	cudaError_t e = cudaGetDeviceProperties(&p, dev);

	if (e != cudaSuccess)
		return ap_err(AP_EFAIL, "cuda", 0, "device %d: %s", dev, cudaGetErrorString(e));
	snprintf(name, len, "%s", p.name);
	*mem_bytes = (long long)p.totalGlobalMem;
	return AP_OK;
}

extern "C" void *cuda_alloc(size_t bytes)
{
	void *p = NULL;
	cudaError_t e;

	if (!bytes)
		bytes = 1;
	e = cudaMalloc(&p, bytes);
	if (e == cudaSuccess)
		e = cudaMemsetAsync(p, 0, bytes, cuda_ctx.stream);
	if (e != cudaSuccess) {
		ap_err(AP_EFAIL, "cuda", 0, "cannot allocate %zu bytes on the device: %s", bytes,
		       cudaGetErrorString(e));
		if (p)
			cudaFree(p);
		return NULL;
	}
	return p;
}

extern "C" void cuda_release(void *p)
{
	cudaError_t e;

	if (!p)
		return;
	e = cudaFree(p);
	if (e != cudaSuccess)
		ap_err(AP_EFAIL, "cuda", 0, "cudaFree: %s", cudaGetErrorString(e));
}

/* Host buffers are pageable and may be freed on return: both directions
 * wait for the copy. */
static int move(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
	if (!bytes)
		return AP_OK;
	CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, cuda_ctx.stream));
	CUDA_CHECK(cudaStreamSynchronize(cuda_ctx.stream));
	return AP_OK;
}

extern "C" int cuda_upload(void *dst, const void *host, size_t bytes)
{
	return move(dst, host, bytes, cudaMemcpyHostToDevice);
}

extern "C" int cuda_download(void *host, const void *src, size_t bytes)
{
	return move(host, src, bytes, cudaMemcpyDeviceToHost);
}

extern "C" int cuda_copy(float *dst, const float *src, int64_t n)
{
	if (n <= 0)
		return AP_OK;
	CUDA_CHECK(cudaMemcpyAsync(dst, src, (size_t)n * sizeof *dst, cudaMemcpyDeviceToDevice,
				   cuda_ctx.stream));
	return AP_OK;
}

static __global__ void fill_kernel(float *p, int64_t n, float v)
{
	GRID_STRIDE(i, n)
		p[i] = v;
}

extern "C" int cuda_fill(float *p, int64_t n, float v)
{
	if (n <= 0)
		return AP_OK;
	fill_kernel<<<cuda_blocks(n), CUDA_THREADS, 0, cuda_ctx.stream>>>(p, n, v);
	LAUNCH_CHECK();
	return AP_OK;
}

/* region_copy's walk (region.h), one thread per element of the part */
static __global__ void region_kernel(struct region_walk w, int64_t total, float *dst,
				     const float *src, int accumulate)
{
	GRID_STRIDE(i, total) {
		int64_t rest = i, od = w.dbase, os = w.sbase;

		for (int d = w.rank - 1; d >= 0; d--) {
			int64_t c = rest % w.ext[d];

			rest /= w.ext[d];
			od += c * w.dstr[d];
			os += c * w.sstr[d];
		}
		if (accumulate)
			dst[od] += src[os];
		else
			dst[od] = src[os];
	}
}

extern "C" int cuda_region_copy(const struct shape *s, const struct region *o, float *dst,
				const struct region *dr, const float *src,
				const struct region *sr, int accumulate)
{
	struct region_walk w;
	int64_t total = 1;

	region_walk_init(&w, s, o, dr, sr);
	for (int d = 0; d < w.rank; d++)
		total *= w.ext[d];
	if (total <= 0)
		return AP_OK;
	region_kernel<<<cuda_blocks(total), CUDA_THREADS, 0, cuda_ctx.stream>>>(w, total, dst, src,
										 accumulate);
	LAUNCH_CHECK();
	return AP_OK;
}

extern "C" int cuda_sync(void)
{
	CUDA_CHECK(cudaStreamSynchronize(cuda_ctx.stream));
	return AP_OK;
}

/* A cold L2 for the kernel timed next: writes over four times its size
 * (at least 8 MiB), a different byte each time.  The table's evict
 * returns nothing: a failure is reported, and the timing runs warm. */
extern "C" void cuda_evict(void)
{
	struct cuda_ctx *c = &cuda_ctx;
	static int round;
	cudaError_t e = cudaSuccess;

	if (!c->evict) {
		int l2 = 0;

		e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, c->device);
		c->evict_bytes = l2 > (2 << 20) ? 4 * (size_t)l2 : (size_t)8 << 20;
		if (e == cudaSuccess)
			e = cudaMalloc(&c->evict, c->evict_bytes);
		if (e != cudaSuccess)
			c->evict = NULL;
	}
	if (e == cudaSuccess)
		e = cudaMemsetAsync(c->evict, ++round & 0xff, c->evict_bytes, c->stream);
	if (e != cudaSuccess)
		ap_err(AP_EFAIL, "cuda", 0, "cannot evict the L2 cache: %s", cudaGetErrorString(e));
}

/* Events on the compute stream: what they time is what the device ran
 * between them, without the host's launch and wait. */
extern "C" int cuda_timer_start(void)
{
	CUDA_CHECK(cudaEventRecord(cuda_ctx.t0, cuda_ctx.stream));
	return AP_OK;
}

extern "C" int cuda_timer_stop(double *us)
{
	float ms = 0;

	CUDA_CHECK(cudaEventRecord(cuda_ctx.t1, cuda_ctx.stream));
	CUDA_CHECK(cudaEventSynchronize(cuda_ctx.t1));
	CUDA_CHECK(cudaEventElapsedTime(&ms, cuda_ctx.t0, cuda_ctx.t1));
	*us = (double)ms * 1e3;
	return AP_OK;
}

/* SGD with momentum as PyTorch (backend.h) */
static __global__ void sgd_kernel(float *w, float *v, const float *g, int64_t n, float lr,
				  float mu)
{
	GRID_STRIDE(i, n) {
		float vi = mu * v[i] + g[i];

		v[i] = vi;
		w[i] -= lr * vi;
	}
}

/* Adam as PyTorch without weight decay (backend.h struct adam_step) */
static __global__ void adam_kernel(float *w, float *m, float *v, const float *g, int64_t n,
				   struct adam_step a)
{
	GRID_STRIDE(i, n) {
		float mi = a.b1 * m[i] + (1.0f - a.b1) * g[i];
		float vi = a.b2 * v[i] + (1.0f - a.b2) * g[i] * g[i];

		m[i] = mi;
		v[i] = vi;
		w[i] -= a.lr * (mi / a.c1) / (sqrtf(vi / a.c2) + a.eps);
	}
}

static __global__ void predict_kernel(float *out, const float *w, const float *v, int64_t n,
				      float step)
{
	GRID_STRIDE(i, n)
		out[i] = w[i] - step * v[i];
}

/* The table's optimizer entries return nothing: a launch error stays
 * pending and the next checked call on the stream reports it. */
extern "C" void cuda_sgd(float *w, float *v, const float *g, int64_t n, float lr, float mu)
{
	if (n > 0)
		sgd_kernel<<<cuda_blocks(n), CUDA_THREADS, 0, cuda_ctx.stream>>>(w, v, g, n, lr, mu);
}

extern "C" void cuda_adam(float *w, float *m, float *v, const float *g, int64_t n,
			  const struct adam_step *a)
{
	if (n > 0)
		adam_kernel<<<cuda_blocks(n), CUDA_THREADS, 0, cuda_ctx.stream>>>(w, m, v, g, n, *a);
}

extern "C" void cuda_predict(float *out, const float *w, const float *v, int64_t n, float step)
{
	if (n > 0)
		predict_kernel<<<cuda_blocks(n), CUDA_THREADS, 0, cuda_ctx.stream>>>(out, w, v, n,
										     step);
}

int cuda_workspace(size_t bytes, void **ws)
{
	struct cuda_ctx *c = &cuda_ctx;
	cudaError_t e;

	*ws = c->ws;
	if (bytes <= c->ws_bytes)
		return AP_OK;
	if (bytes > c->ws_limit)
		return ap_err(AP_EFAIL, "cuda", 0, "workspace of %zu bytes above the limit of %zu",
			      bytes, c->ws_limit);
	/* the stream may still use the old one */
	e = cudaStreamSynchronize(c->stream);
	if (e == cudaSuccess && c->ws)
		e = cudaFree(c->ws);
	c->ws = *ws = NULL;
	c->ws_bytes = 0;
	if (e == cudaSuccess)
		e = cudaMalloc(&c->ws, bytes);
	if (e != cudaSuccess) {
		c->ws = NULL;
		return ap_err(AP_EFAIL, "cuda", 0, "cannot allocate a workspace of %zu bytes: %s",
			      bytes, cudaGetErrorString(e));
	}
	c->ws_bytes = bytes;
	*ws = c->ws;
	return AP_OK;
}

int cuda_flag_clear(void)
{
	CUDA_CHECK(cudaMemsetAsync(cuda_ctx.flag, 0, sizeof *cuda_ctx.flag, cuda_ctx.stream));
	return AP_OK;
}

int cuda_flag_check(const char *what)
{
	int flag = 0;

	CUDA_CHECK(cudaMemcpyAsync(&flag, cuda_ctx.flag, sizeof flag, cudaMemcpyDeviceToHost,
				   cuda_ctx.stream));
	CUDA_CHECK(cudaStreamSynchronize(cuda_ctx.stream));
	if (flag)
		return ap_err(AP_EFAIL, "cuda", 0, "%s", what);
	return AP_OK;
}
