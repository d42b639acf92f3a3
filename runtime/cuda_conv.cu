/*
 * CUDA kernels of the convolutional operators, with the CPU backend's
 * semantics and layouts (cpu_conv.c): conv2d through cuDNN (forward,
 * backward data, backward filter and bias; W[out][c/g][kh][kw] then
 * b[out] is cuDNN's NCHW filter layout with groups), max and average
 * pooling through cuDNN where its floor-mode output is the op's (max:
 * padding never wins; average: counting padding, as PyTorch), and own
 * kernels where it is not (ceil mode) and for adaptive average pooling
 * with PyTorch's bins.
 *
 * Algorithm selection: cuDNN's heuristics (the _v7 queries) rank the
 * algorithms of a shape; the first that succeeds within the workspace
 * limit (cuda_workspace()) is taken and kept with the shape's
 * descriptors, so a shape is planned once per process.  Convolutions run
 * in FMA math: no TF32, float32 results as the CPU computes them.
 */
#include "cuda_ctx.cuh"

#include <string.h>

#include "util/grow.h"

struct conv {
	int n, c, h, w, oc, oh, ow;
	int kh, kw, sh, sw, ph, pw, groups;
};

static struct conv conv_dims(const struct kern *k)
{
	const struct op_attrs *a = &k->op->a;
	struct conv d;

	d.n = (int)k->in[0].size[0];
	d.c = (int)k->in[0].size[1];
	d.h = (int)k->in[0].size[2];
	d.w = (int)k->in[0].size[3];
	d.oc = (int)k->out.size[1];
	d.oh = (int)k->out.size[2];
	d.ow = (int)k->out.size[3];
	d.kh = a->kh, d.kw = a->kw, d.sh = a->sh, d.sw = a->sw;
	d.ph = a->ph, d.pw = a->pw;
	d.groups = a->groups;
	return d;
}

/* One convolution shape, planned: descriptors and algorithms. */
struct conv_plan {
	struct conv d;
	cudnnTensorDescriptor_t x, y, bias;
	cudnnFilterDescriptor_t w;
	cudnnConvolutionDescriptor_t conv;
	cudnnConvolutionFwdAlgo_t fwd;
	cudnnConvolutionBwdDataAlgo_t bwd_data;
	cudnnConvolutionBwdFilterAlgo_t bwd_filter;
	size_t fwd_ws, data_ws, filter_ws;
};

static struct conv_plan *plans;
static int nplans, cap_plans;

/* The first of cuDNN's ranked algorithms that works within the limit,
 * deterministic ones first: a plan's ranks then sum their gradients in
 * one order, and --check compares runs that repeat exactly. */
#define PICK(perf, n, out, ws)                                                 \
	do {                                                                   \
		int found_ = 0;                                                \
		for (int pass_ = 0; pass_ < 2 && !found_; pass_++)             \
			for (int q_ = 0; q_ < (n) && !found_; q_++)            \
				if ((perf)[q_].status == CUDNN_STATUS_SUCCESS && \
				    (perf)[q_].memory <= cuda_ctx.ws_limit &&  \
				    (pass_ || (perf)[q_].determinism ==        \
						      CUDNN_DETERMINISTIC)) {  \
					(out) = (perf)[q_].algo;               \
					(ws) = (perf)[q_].memory;              \
					found_ = 1;                            \
				}                                              \
		if (!found_)                                                   \
			return ap_err(AP_EFAIL, "cudnn", 0,                    \
				      "no convolution algorithm fits a workspace of %zu bytes", \
				      cuda_ctx.ws_limit);                      \
	} while (0)

static int plan_make(struct conv_plan *p)
{
	const struct conv *d = &p->d;
	cudnnConvolutionFwdAlgoPerf_t fp[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
	cudnnConvolutionBwdDataAlgoPerf_t dp[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
	cudnnConvolutionBwdFilterAlgoPerf_t wp[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
	int n = 0, on, oc, oh, ow;

	CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->x));
	CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->y));
	CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->bias));
	CUDNN_CHECK(cudnnCreateFilterDescriptor(&p->w));
	CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&p->conv));
	CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d->n,
					       d->c, d->h, d->w));
	CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d->n,
					       d->oc, d->oh, d->ow));
	CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
					       d->oc, 1, 1));
	CUDNN_CHECK(cudnnSetFilter4dDescriptor(p->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, d->oc,
					       d->c / d->groups, d->kh, d->kw));
	CUDNN_CHECK(cudnnSetConvolution2dDescriptor(p->conv, d->ph, d->pw, d->sh, d->sw, 1, 1,
						    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
	CUDNN_CHECK(cudnnSetConvolutionGroupCount(p->conv, d->groups));
	CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv, CUDNN_FMA_MATH));
	CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(p->conv, p->x, p->w, &on, &oc, &oh, &ow));
	if (on != d->n || oc != d->oc || oh != d->oh || ow != d->ow)
		return ap_err(AP_EFAIL, "cudnn", 0,
			      "convolution output %dx%dx%dx%d, the operator's is %dx%dx%dx%d", on,
			      oc, oh, ow, d->n, d->oc, d->oh, d->ow);
	CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(cuda_ctx.dnn, p->x, p->w, p->conv, p->y,
							   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n,
							   fp));
	PICK(fp, n, p->fwd, p->fwd_ws);
	CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
		cuda_ctx.dnn, p->w, p->y, p->conv, p->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n,
		dp));
	PICK(dp, n, p->bwd_data, p->data_ws);
	CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
		cuda_ctx.dnn, p->x, p->y, p->conv, p->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n,
		wp));
	PICK(wp, n, p->bwd_filter, p->filter_ws);
	return AP_OK;
}

static struct conv_plan *plan_of(const struct kern *k)
{
	struct conv d = conv_dims(k);
	struct conv_plan *p;

	for (int q = 0; q < nplans; q++)
		if (!memcmp(&plans[q].d, &d, sizeof d))
			return &plans[q];
	if (grow(&plans, nplans, &cap_plans, sizeof *plans, 16)) {
		ap_err(AP_EFAIL, NULL, 0, "out of memory");
		return NULL;
	}
	p = &plans[nplans];
	memset(p, 0, sizeof *p);
	p->d = d;
	if (plan_make(p))
		return NULL; /* its descriptors are kept until the process ends */
	nplans++;
	return p;
}

static int conv_fwd(const struct kern *k, struct kbufs *b)
{
	struct conv_plan *p = plan_of(k);
	const float one = 1.0f, zero = 0.0f;
	void *ws;

	if (!p || cuda_workspace(p->fwd_ws, &ws))
		return AP_EFAIL;
	CUDNN_CHECK(cudnnConvolutionForward(cuda_ctx.dnn, &one, p->x, b->in[0], p->w, b->w,
					    p->conv, p->fwd, ws, p->fwd_ws, &zero, p->y, b->out));
	if (k->op->a.bias)
		CUDNN_CHECK(cudnnAddTensor(cuda_ctx.dnn, &one, p->bias,
					   b->w + (int64_t)p->d.oc * (p->d.c / p->d.groups) *
							  p->d.kh * p->d.kw,
					   &one, p->y, b->out));
	return AP_OK;
}

/* din is overwritten, dw (and the bias's) accumulated */
static int conv_bwd(const struct kern *k, struct kbufs *b)
{
	struct conv_plan *p = plan_of(k);
	const float one = 1.0f, zero = 0.0f;
	void *ws;

	if (!p)
		return AP_EFAIL;
	if (b->din[0]) {
		if (cuda_workspace(p->data_ws, &ws))
			return AP_EFAIL;
		CUDNN_CHECK(cudnnConvolutionBackwardData(cuda_ctx.dnn, &one, p->w, b->w, p->y,
							 b->dout, p->conv, p->bwd_data, ws,
							 p->data_ws, &zero, p->x, b->din[0]));
	}
	if (cuda_workspace(p->filter_ws, &ws))
		return AP_EFAIL;
	CUDNN_CHECK(cudnnConvolutionBackwardFilter(cuda_ctx.dnn, &one, p->x, b->in[0], p->y,
						   b->dout, p->conv, p->bwd_filter, ws,
						   p->filter_ws, &one, p->w, b->dw));
	if (k->op->a.bias)
		CUDNN_CHECK(cudnnConvolutionBackwardBias(
			cuda_ctx.dnn, &one, p->y, b->dout, &one, p->bias,
			b->dw + (int64_t)p->d.oc * (p->d.c / p->d.groups) * p->d.kh * p->d.kw));
	return AP_OK;
}

extern "C" const struct kernel_ops cuda_conv2d = { conv_fwd, conv_bwd, NULL, 0 };

/* --- pooling --------------------------------------------------------- */

/* cpu_conv.c's windows: rows [y0, y1) and columns [x0, x1) of the input,
 * dividing by count */
struct window {
	int y0, y1, x0, x1;
	float count;
};

static __device__ struct window avg_window(const struct conv &d, int adaptive, int y, int x)
{
	struct window w;

	if (adaptive) {
		w.y0 = y * d.h / d.oh;
		w.y1 = ((y + 1) * d.h + d.oh - 1) / d.oh;
		w.x0 = x * d.w / d.ow;
		w.x1 = ((x + 1) * d.w + d.ow - 1) / d.ow;
		w.count = (float)((w.y1 - w.y0) * (w.x1 - w.x0));
		return w;
	}
	w.y0 = y * d.sh - d.ph;
	w.x0 = x * d.sw - d.pw;
	w.y1 = min(w.y0 + d.kh, d.h + d.ph);
	w.x1 = min(w.x0 + d.kw, d.w + d.pw);
	w.count = (float)((w.y1 - w.y0) * (w.x1 - w.x0));
	w.y0 = max(w.y0, 0);
	w.x0 = max(w.x0, 0);
	w.y1 = min(w.y1, d.h);
	w.x1 = min(w.x1, d.w);
	return w;
}

/* one thread per output element (plane p, y, x); max pooling keeps the
 * first maximum's index in ws, as the CPU does */
static __global__ void pool_fwd_kernel(struct conv d, int kind, const float *in, float *out,
				       float *ws, int64_t n)
{
	GRID_STRIDE(o, n) {
		int x = (int)(o % d.ow), y = (int)(o / d.ow % d.oh);
		const float *xp = in + o / ((int64_t)d.oh * d.ow) * d.h * d.w;

		if (kind == OP_MAXPOOL) {
			float best = -3.402823466e+38f;
			int arg = -1;

			for (int i = 0; i < d.kh; i++)
				for (int j = 0; j < d.kw; j++) {
					int iy = y * d.sh - d.ph + i, ix = x * d.sw - d.pw + j;

					if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w)
						continue;
					if (arg < 0 || xp[iy * d.w + ix] > best) {
						best = xp[iy * d.w + ix];
						arg = iy * d.w + ix;
					}
				}
			out[o] = best;
			ws[o] = (float)arg;
		} else {
			struct window w = avg_window(d, kind == OP_ADAPTIVE_AVGPOOL, y, x);
			float s = 0.0f;

			for (int iy = w.y0; iy < w.y1; iy++)
				for (int ix = w.x0; ix < w.x1; ix++)
					s += xp[iy * d.w + ix];
			out[o] = s / w.count;
		}
	}
}

/* windows overlap: the gradient's adds are atomic */
static __global__ void pool_bwd_kernel(struct conv d, int kind, const float *dy,
				       const float *ws, float *dx, int64_t n)
{
	GRID_STRIDE(o, n) {
		int x = (int)(o % d.ow), y = (int)(o / d.ow % d.oh);
		float *dp = dx + o / ((int64_t)d.oh * d.ow) * d.h * d.w;

		if (kind == OP_MAXPOOL) {
			if (ws[o] >= 0)
				atomicAdd(&dp[(int64_t)ws[o]], dy[o]);
		} else {
			struct window w = avg_window(d, kind == OP_ADAPTIVE_AVGPOOL, y, x);
			float g = dy[o] / w.count;

			for (int iy = w.y0; iy < w.y1; iy++)
				for (int ix = w.x0; ix < w.x1; ix++)
					atomicAdd(&dp[iy * d.w + ix], g);
		}
	}
}

/* cuDNN pools exactly as the op where its floor-mode output size is the
 * op's (then no average window reaches past the padding, so counting
 * padding is counting kh kw) */
static int use_cudnn(const struct kern *k, const struct conv *d)
{
	return k->op->kind != OP_ADAPTIVE_AVGPOOL &&
	       (d->h + 2 * d->ph - d->kh) / d->sh + 1 == d->oh &&
	       (d->w + 2 * d->pw - d->kw) / d->sw + 1 == d->ow && d->ph < d->kh && d->pw < d->kw;
}

struct pool_descs {
	cudnnPoolingDescriptor_t pool;
	cudnnTensorDescriptor_t x, y;
};

static void pool_descs_release(struct pool_descs *p)
{
	if (p->pool)
		cudnnDestroyPoolingDescriptor(p->pool);
	if (p->x)
		cudnnDestroyTensorDescriptor(p->x);
	if (p->y)
		cudnnDestroyTensorDescriptor(p->y);
}

static int pool_descs_make(const struct kern *k, const struct conv *d, struct pool_descs *p)
{
	cudnnPoolingMode_t mode = k->op->kind == OP_MAXPOOL
					  ? CUDNN_POOLING_MAX_DETERMINISTIC
					  : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;

	CUDNN_CHECK(cudnnCreatePoolingDescriptor(&p->pool));
	CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->x));
	CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->y));
	CUDNN_CHECK(cudnnSetPooling2dDescriptor(p->pool, mode, CUDNN_NOT_PROPAGATE_NAN, d->kh,
						d->kw, d->ph, d->pw, d->sh, d->sw));
	CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d->n,
					       d->c, d->h, d->w));
	CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d->n,
					       d->oc, d->oh, d->ow));
	return AP_OK;
}

static int pool_cudnn(const struct kern *k, struct kbufs *b, const struct conv *d, int bwd)
{
	struct pool_descs p = {};
	const float one = 1.0f, zero = 0.0f;
	cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
	int st = pool_descs_make(k, d, &p);

	if (!st && !bwd)
		s = cudnnPoolingForward(cuda_ctx.dnn, p.pool, &one, p.x, b->in[0], &zero, p.y,
					b->out);
	else if (!st)
		s = cudnnPoolingBackward(cuda_ctx.dnn, p.pool, &one, p.y, b->out, p.y, b->dout, p.x,
					 b->in[0], &zero, p.x, b->din[0]);
	pool_descs_release(&p);
	if (!st && s != CUDNN_STATUS_SUCCESS)
		st = ap_err(AP_EFAIL, "cudnn", 0, "pooling %s: %s", bwd ? "backward" : "forward",
			    cudnnGetErrorString(s));
	return st;
}

static int64_t pool_ws(const struct kern *k)
{
	return k->op->kind == OP_MAXPOOL ? shape_elems(&k->out) : 0;
}

static int pool_fwd(const struct kern *k, struct kbufs *b)
{
	struct conv d = conv_dims(k);
	int64_t n = shape_elems(&k->out);

	if (use_cudnn(k, &d))
		return pool_cudnn(k, b, &d, 0);
	pool_fwd_kernel<<<cuda_blocks(n), CUDA_THREADS, 0, cuda_ctx.stream>>>(d, k->op->kind,
									     b->in[0], b->out,
									     b->ws, n);
	LAUNCH_CHECK();
	return AP_OK;
}

static int pool_bwd(const struct kern *k, struct kbufs *b)
{
	struct conv d = conv_dims(k);
	int64_t n = shape_elems(&k->out);

	if (!b->din[0])
		return AP_OK;
	if (use_cudnn(k, &d))
		return pool_cudnn(k, b, &d, 1);
	CUDA_CHECK(cudaMemsetAsync(b->din[0], 0, (size_t)shape_elems(&k->in[0]) * sizeof(float),
				   cuda_ctx.stream));
	pool_bwd_kernel<<<cuda_blocks(n), CUDA_THREADS, 0, cuda_ctx.stream>>>(d, k->op->kind,
									     b->dout, b->ws,
									     b->din[0], n);
	LAUNCH_CHECK();
	return AP_OK;
}

extern "C" const struct kernel_ops cuda_maxpool = { pool_fwd, pool_bwd, pool_ws, 0 };
extern "C" const struct kernel_ops cuda_avgpool = { pool_fwd, pool_bwd, NULL, 0 };
extern "C" const struct kernel_ops cuda_adaptive_avgpool = { pool_fwd, pool_bwd, NULL, 0 };
