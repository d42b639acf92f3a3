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
 * Algorithm selection (docs/gpu.md, "Convolution algorithms"), as
 * PyTorch's cudnn.benchmark: the first call of a direction of a shape
 * runs cuDNN's Find, which times every algorithm on the device within
 * the workspace limit (cuda_workspace()), and the fastest is kept in the
 * process's cache (conv_algo.h) with the shape's descriptors, keyed by
 * shape and precision, so each is searched once per process.  Where the
 * search gives nothing to run (it fails, no room for its buffer, none of
 * its candidates usable) the shape takes cuDNN's heuristic choice (the
 * _v7 queries), as before the search, and --verbose says why.  In fp32
 * the search and the runs are in FMA math: no TF32, float32 results as
 * the CPU computes them; in tf32 cuDNN's default math, which lets tensor
 * cores round the inputs to TF32 (gpu_prec.h).
 */
#include "cuda_ctx.cuh"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "conv_algo.h"
#include "gpu_opts.h"
}

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

/* The descriptors of one convolution shape (its cache entry's descs).
 * The three directions share the convolution descriptor: each call sets
 * the math its choice runs in (conv_cand's run_math) first, as cuDNN
 * decides tensor cores from the algorithm and that math together. */
struct conv_descs {
	struct conv d;
	cudnnTensorDescriptor_t x, y, bias;
	cudnnFilterDescriptor_t w;
	cudnnConvolutionDescriptor_t conv;
};

/* conv_algo.c reads cuDNN's math types by these numbers */
static_assert((int)CUDNN_DEFAULT_MATH == CONV_DNN_DEFAULT &&
		      (int)CUDNN_TENSOR_OP_MATH == CONV_DNN_TENSOR_OP &&
		      (int)CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION == CONV_DNN_TENSOR_OP_CONVERT &&
		      (int)CUDNN_FMA_MATH == CONV_DNN_FMA,
	      "cudnnMathType_t's numbers differ from conv_algo.h's");

/* The most algorithms a direction has (forward's), and each one's count. */
#define MAX_ALGOS ((int)CUDNN_CONVOLUTION_FWD_ALGO_COUNT)
static_assert((int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT <= MAX_ALGOS &&
		      (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT <= MAX_ALGOS,
	      "a direction has more algorithms than MAX_ALGOS");
static const int nalgos[CONV_NDIRS] = { CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
					CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
					CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT };

/* every shape this process has met, in each precision it ran */
static struct conv_cache cache;

static struct conv_key key_of(const struct conv *d)
{
	struct conv_key k;

	memset(&k, 0, sizeof k);
	k.n = d->n, k.c = d->c, k.h = d->h, k.w = d->w;
	k.k = d->oc, k.r = d->kh, k.s = d->kw;
	k.stride_h = d->sh, k.stride_w = d->sw, k.pad_h = d->ph, k.pad_w = d->pw;
	k.dil_h = k.dil_w = 1; /* the operator has no dilation */
	k.groups = d->groups;
	k.precision = gpu_opt_prec();
	return k;
}

static const char *algo_name(enum conv_dir d, int a)
{
	if (d == CONV_FWD)
		switch ((cudnnConvolutionFwdAlgo_t)a) {
		case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
		case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
		case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
		case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
		case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
		case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
		case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
		case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
		default: return "?";
		}
	if (d == CONV_BWD_DATA)
		switch ((cudnnConvolutionBwdDataAlgo_t)a) {
		case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "ALGO_0";
		case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "ALGO_1";
		case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "FFT";
		case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "FFT_TILING";
		case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "WINOGRAD";
		case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
		default: return "?";
		}
	switch ((cudnnConvolutionBwdFilterAlgo_t)a) {
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "ALGO_0";
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "ALGO_1";
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "FFT";
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "ALGO_3";
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD: return "WINOGRAD";
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
	case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "FFT_TILING";
	default: return "?";
	}
}

static void descs_free(struct conv_descs *p)
{
	if (!p)
		return;
	if (p->x)
		cudnnDestroyTensorDescriptor(p->x);
	if (p->y)
		cudnnDestroyTensorDescriptor(p->y);
	if (p->bias)
		cudnnDestroyTensorDescriptor(p->bias);
	if (p->w)
		cudnnDestroyFilterDescriptor(p->w);
	if (p->conv)
		cudnnDestroyConvolutionDescriptor(p->conv);
	free(p);
}

static int descs_make(struct conv_descs *p)
{
	const struct conv *d = &p->d;
	int on, oc, oh, ow;

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
	CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(p->conv, p->x, p->w, &on, &oc, &oh, &ow));
	if (on != d->n || oc != d->oc || oh != d->oh || ow != d->ow)
		return ap_err(AP_EFAIL, "cudnn", 0,
			      "convolution output %dx%dx%dx%d, the operator's is %dx%dx%dx%d", on,
			      oc, oh, ow, d->n, d->oc, d->oh, d->ow);
	return AP_OK;
}

/* The cache entry of k's shape in the precision the command asks,
 * its descriptors made when the shape is new (nothing searched yet). */
static struct conv_entry *entry_of(const struct kern *k)
{
	struct conv d = conv_dims(k);
	struct conv_key key = key_of(&d);
	struct conv_entry *e = conv_cache_find(&cache, &key);
	struct conv_descs *p;

	if (e)
		return e;
	p = (struct conv_descs *)calloc(1, sizeof *p);
	if (!p) {
		ap_err(AP_EFAIL, NULL, 0, "out of memory");
		return NULL;
	}
	p->d = d;
	if (descs_make(p) || !(e = conv_cache_add(&cache, &key))) {
		descs_free(p);
		return NULL;
	}
	e->descs = p;
	return e;
}

static cudnnStatus_t ws_size(const struct conv_descs *p, enum conv_dir dir, int algo,
			     size_t *bytes)
{
	if (dir == CONV_FWD)
		return cudnnGetConvolutionForwardWorkspaceSize(
			cuda_ctx.dnn, p->x, p->w, p->conv, p->y, (cudnnConvolutionFwdAlgo_t)algo,
			bytes);
	if (dir == CONV_BWD_DATA)
		return cudnnGetConvolutionBackwardDataWorkspaceSize(
			cuda_ctx.dnn, p->w, p->y, p->conv, p->x,
			(cudnnConvolutionBwdDataAlgo_t)algo, bytes);
	return cudnnGetConvolutionBackwardFilterWorkspaceSize(
		cuda_ctx.dnn, p->x, p->y, p->conv, p->w, (cudnnConvolutionBwdFilterAlgo_t)algo,
		bytes);
}

/* cuDNN's results as candidates of precision p; the three directions'
 * results have the same fields under different types. */
template <typename Perf>
static void cands_of(const Perf *r, int n, enum gpu_prec p, struct conv_cand *cand)
{
	for (int q = 0; q < n; q++) {
		cand[q].algo = (int)r[q].algo;
		cand[q].ok = r[q].status == CUDNN_STATUS_SUCCESS;
		cand[q].deterministic = r[q].determinism == CUDNN_DETERMINISTIC;
		conv_cand_math(&cand[q], (int)r[q].mathType, p);
		cand[q].ws_bytes = r[q].memory;
		cand[q].ms = r[q].time;
	}
}

/* The candidates of one direction, in the descriptor's math now.  b set:
 * cuDNN's Find with the kernel's buffers: what it writes (y, dx) the
 * call after the search writes again; dw, which the call adds to, is
 * dw_scratch instead; ws: the workspace, ws_bytes.  b NULL: cuDNN's
 * heuristic ranking (the _v7 queries), which runs nothing and times
 * nothing. */
static cudnnStatus_t candidates(const struct conv_descs *p, enum conv_dir dir,
				const struct kbufs *b, void *dw_scratch, void *ws, size_t ws_bytes,
				enum gpu_prec prec, struct conv_cand *cand, int *n)
{
	cudnnStatus_t s;

	*n = 0;
	if (dir == CONV_FWD) {
		cudnnConvolutionFwdAlgoPerf_t r[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];

		s = b ? cudnnFindConvolutionForwardAlgorithmEx(
				cuda_ctx.dnn, p->x, b->in[0], p->w, b->w, p->conv, p->y, b->out,
				CUDNN_CONVOLUTION_FWD_ALGO_COUNT, n, r, ws, ws_bytes)
		      : cudnnGetConvolutionForwardAlgorithm_v7(cuda_ctx.dnn, p->x, p->w, p->conv,
							       p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
							       n, r);
		if (s == CUDNN_STATUS_SUCCESS)
			cands_of(r, *n, prec, cand);
	} else if (dir == CONV_BWD_DATA) {
		cudnnConvolutionBwdDataAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];

		s = b ? cudnnFindConvolutionBackwardDataAlgorithmEx(
				cuda_ctx.dnn, p->w, b->w, p->y, b->dout, p->conv, p->x, b->din[0],
				CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, n, r, ws, ws_bytes)
		      : cudnnGetConvolutionBackwardDataAlgorithm_v7(
				cuda_ctx.dnn, p->w, p->y, p->conv, p->x,
				CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, n, r);
		if (s == CUDNN_STATUS_SUCCESS)
			cands_of(r, *n, prec, cand);
	} else {
		cudnnConvolutionBwdFilterAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];

		s = b ? cudnnFindConvolutionBackwardFilterAlgorithmEx(
				cuda_ctx.dnn, p->x, b->in[0], p->y, b->dout, p->conv, p->w,
				dw_scratch, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, n, r, ws,
				ws_bytes)
		      : cudnnGetConvolutionBackwardFilterAlgorithm_v7(
				cuda_ctx.dnn, p->x, p->y, p->conv, p->w,
				CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, n, r);
		if (s == CUDNN_STATUS_SUCCESS)
			cands_of(r, *n, prec, cand);
	}
	return s;
}

/* --verbose: direction dir's choice among the n candidates, one line;
 * why: why the search gave none (the choice is then the heuristics'),
 * else NULL */
static void report(const struct conv_entry *e, enum conv_dir dir, const struct conv_cand *cand,
		   int n, const char *why)
{
	const struct conv_cand *c = &e->dir[dir].c;
	FILE *f = gpu_opt_verbose();
	char line[768];
	int ran = 0;

	if (!f)
		return;
	for (int q = 0; q < n; q++)
		ran += cand[q].ok;
	conv_line(line, sizeof line, &e->key, dir, algo_name(dir, c->algo), c, ran, n, why);
	fprintf(f, "%s\n", line);
	fflush(f);
}

/* Keeps c as direction dir's choice.  Its workspace is the larger of
 * what cuDNN reported with it and what cuDNN says the algorithm needs in
 * the math the call sets (in fp32 FMA, whatever the label was), within
 * the limit: the call never gets less than its math needs. */
static void keep(struct conv_entry *e, enum conv_dir dir, const struct conv_cand *c)
{
	const struct conv_descs *p = (const struct conv_descs *)e->descs;
	size_t need = 0;

	e->dir[dir].c = *c;
	e->dir[dir].searched = 1;
	if (cudnnSetConvolutionMathType(p->conv, (cudnnMathType_t)c->run_math) ==
		    CUDNN_STATUS_SUCCESS &&
	    ws_size(p, dir, c->algo, &need) == CUDNN_STATUS_SUCCESS && need > c->ws_bytes &&
	    need <= cuda_ctx.ws_limit)
		e->dir[dir].c.ws_bytes = need;
}

/* Direction dir of e's shape where the search gave nothing to run (why
 * says what): cuDNN's heuristic choice within the workspace limit, as
 * the backend chose before it searched (conv_pick_ranked()), in the
 * search's math. */
static int fallback(struct conv_entry *e, enum conv_dir dir, const char *why)
{
	const struct conv_descs *p = (const struct conv_descs *)e->descs;
	enum gpu_prec prec = e->key.precision;
	struct conv_cand cand[MAX_ALGOS];
	int n = 0, best;
	cudnnStatus_t s;

	CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv, (cudnnMathType_t)conv_search_math(prec)));
	s = candidates(p, dir, NULL, NULL, NULL, 0, prec, cand, &n);
	if (s != CUDNN_STATUS_SUCCESS)
		return ap_err(AP_EFAIL, "cudnn", 0, "%s convolution in %s: %s, and the heuristics: %s",
			      conv_dir_name(dir), gpu_prec_name(prec), why, cudnnGetErrorString(s));
	best = conv_pick_ranked(cand, n, cuda_ctx.ws_limit, prec);
	if (best < 0)
		return ap_err(AP_EFAIL, "cudnn", 0,
			      "%s convolution in %s: %s, and none of the heuristics' %d fits a "
			      "workspace of %zu bytes",
			      conv_dir_name(dir), gpu_prec_name(prec), why, n, cuda_ctx.ws_limit);
	keep(e, dir, &cand[best]);
	report(e, dir, cand, n, why);
	return AP_OK;
}

/* Searches direction dir of e's shape and keeps the choice.  The search
 * runs in a buffer of its own, freed after: the scratch dw, then the
 * largest workspace an algorithm within the limit needs (conv_ws_below();
 * smaller ones while the device has no room for it), so a rarely chosen
 * algorithm's large workspace is not kept for the run.  The buffer is
 * the stream's (cudaMallocAsync): cudaFree would wait for the whole
 * device, a transfer another rank has yet to match included.  Where the
 * search gives nothing to run, cuDNN's heuristics choose (fallback()).
 * A CUDA error around the search (the stream's sync, the free) is the
 * run's: it is returned, not covered by the heuristics. */
static int search(struct conv_entry *e, enum conv_dir dir, const struct kbufs *b)
{
	struct conv_descs *p = (struct conv_descs *)e->descs;
	const struct conv *d = &p->d;
	enum gpu_prec prec = e->key.precision;
	struct conv_cand cand[MAX_ALGOS];
	size_t need[MAX_ALGOS], ws = 0, scratch = 0;
	int nneed = 0, n = 0, best = -1, st = AP_OK;
	char *buf = NULL, why[160] = "";
	cudaError_t ce;
	cudnnStatus_t s;

	CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv, (cudnnMathType_t)conv_search_math(prec)));
	for (int a = 0; a < nalgos[dir]; a++)
		if (ws_size(p, dir, a, &need[nneed]) == CUDNN_STATUS_SUCCESS)
			nneed++;
	if (dir == CONV_BWD_FILTER) /* rounded up: the workspace after it stays aligned */
		scratch = ((size_t)d->oc * (d->c / d->groups) * d->kh * d->kw * sizeof(float) +
			   255) / 256 * 256;
	ws = conv_ws_below(need, nneed, cuda_ctx.ws_limit);
	while (scratch + ws > 0 &&
	       cudaMallocAsync((void **)&buf, scratch + ws, cuda_ctx.stream) != cudaSuccess) {
		(void)cudaGetLastError(); /* not left for the next launch's check */
		buf = NULL;
		if (!ws) {
			snprintf(why, sizeof why, "no room for the search's %zu bytes", scratch);
			return fallback(e, dir, why);
		}
		ws = conv_ws_below(need, nneed, ws - 1);
	}
	/* Find is synchronous: the stream first finishes the inputs */
	ce = cudaStreamSynchronize(cuda_ctx.stream);
	if (ce != cudaSuccess)
		st = ap_err(AP_EFAIL, "cuda", 0, "cudaStreamSynchronize: %s", cudaGetErrorString(ce));
	if (!st) {
		s = candidates(p, dir, b, buf, ws ? buf + scratch : NULL, ws, prec, cand, &n);
		if (s != CUDNN_STATUS_SUCCESS)
			snprintf(why, sizeof why, "the search failed (%s)", cudnnGetErrorString(s));
	}
	/* the stream's sync hands the buffer back to the device (the pool
	 * keeps nothing above its threshold, 0), so cudaMalloc has it */
	ce = buf ? cudaFreeAsync(buf, cuda_ctx.stream) : cudaSuccess;
	if (ce == cudaSuccess)
		ce = cudaStreamSynchronize(cuda_ctx.stream);
	if (!st && ce != cudaSuccess)
		st = ap_err(AP_EFAIL, "cuda", 0, "freeing the search's buffer: %s",
			    cudaGetErrorString(ce));
	if (st)
		return st;
	if (!why[0] && (best = conv_pick(cand, n, ws, prec)) < 0)
		snprintf(why, sizeof why, "none of the %d it timed ran in %s within %zu bytes",
			 n, gpu_prec_name(prec), ws);
	if (best < 0)
		return fallback(e, dir, why);
	keep(e, dir, &cand[best]);
	report(e, dir, cand, n, NULL);
	return AP_OK;
}

/* Direction dir of e's shape ready to run: searched (the first time),
 * its math set, its workspace in *ws. */
static int ready(struct conv_entry *e, enum conv_dir dir, const struct kbufs *b, void **ws)
{
	const struct conv_descs *p = (const struct conv_descs *)e->descs;

	if (!e->dir[dir].searched && search(e, dir, b))
		return AP_EFAIL;
	CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv, (cudnnMathType_t)e->dir[dir].c.run_math));
	return cuda_workspace(e->dir[dir].c.ws_bytes, ws);
}

static int conv_fwd(const struct kern *k, struct kbufs *b)
{
	struct conv_entry *e = entry_of(k);
	const float one = 1.0f, zero = 0.0f;
	struct conv_descs *p;
	void *ws;

	if (!e || ready(e, CONV_FWD, b, &ws))
		return AP_EFAIL;
	p = (struct conv_descs *)e->descs;
	CUDNN_CHECK(cudnnConvolutionForward(cuda_ctx.dnn, &one, p->x, b->in[0], p->w, b->w,
					    p->conv,
					    (cudnnConvolutionFwdAlgo_t)e->dir[CONV_FWD].c.algo, ws,
					    e->dir[CONV_FWD].c.ws_bytes, &zero, p->y, b->out));
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
	struct conv_entry *e = entry_of(k);
	const float one = 1.0f, zero = 0.0f;
	struct conv_descs *p;
	void *ws;

	if (!e)
		return AP_EFAIL;
	p = (struct conv_descs *)e->descs;
	if (b->din[0]) {
		if (ready(e, CONV_BWD_DATA, b, &ws))
			return AP_EFAIL;
		CUDNN_CHECK(cudnnConvolutionBackwardData(
			cuda_ctx.dnn, &one, p->w, b->w, p->y, b->dout, p->conv,
			(cudnnConvolutionBwdDataAlgo_t)e->dir[CONV_BWD_DATA].c.algo, ws,
			e->dir[CONV_BWD_DATA].c.ws_bytes, &zero, p->x, b->din[0]));
	}
	if (ready(e, CONV_BWD_FILTER, b, &ws))
		return AP_EFAIL;
	CUDNN_CHECK(cudnnConvolutionBackwardFilter(
		cuda_ctx.dnn, &one, p->x, b->in[0], p->y, b->dout, p->conv,
		(cudnnConvolutionBwdFilterAlgo_t)e->dir[CONV_BWD_FILTER].c.algo, ws,
		e->dir[CONV_BWD_FILTER].c.ws_bytes, &one, p->w, b->dw));
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
