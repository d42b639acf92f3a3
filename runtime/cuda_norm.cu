/*
 * CUDA kernels of the normalising operators, with the CPU backend's
 * semantics (cpu_norm.c): layer normalisation over the last dim (eps
 * 1e-5, gamma then beta, the workspace keeping each row's mean and 1/std
 * as floats), softmax along one dim and the softmax cross-entropy loss
 * (each position's -log p(label), the executor seeding the backward with
 * 1 / positions).  Sums run in double as on the CPU, so both agree to
 * float32 round-off whatever the order of the additions.
 *
 * Batchnorm as cpu_batchnorm.c (its groups from kern_dims.h), one block
 * per channel of a group.  Layernorm reduces a row with one block;
 * softmax and the loss give each line (the elements along the normalised
 * dim) one thread, which is simple and exact, and fast while lines are
 * many and short.  Attention (cuda_attn.cu) runs its scores through the
 * same softmax, with its causal mask (cuda_softmax_rows).
 */
#include "cuda_ctx.cuh"
#include "kern_dims.h"

#define LN_EPS 1e-5

/* The sum of v over the block (blockDim.x == CUDA_THREADS), on every
 * thread. */
static __device__ double block_sum(double v)
{
	__shared__ double part[CUDA_THREADS];
	double s;

	__syncthreads(); /* part may still be read by a previous call */
	part[threadIdx.x] = v;
	__syncthreads();
	for (int h = CUDA_THREADS / 2; h > 0; h /= 2) {
		if ((int)threadIdx.x < h)
			part[threadIdx.x] += part[threadIdx.x + h];
		__syncthreads();
	}
	s = part[0];
	return s;
}

static __global__ void ln_fwd_kernel(const float *x, const float *gamma, const float *beta,
				     float *y, float *ws, int64_t c)
{
	const float *xr = x + blockIdx.x * c;
	float *yr = y + blockIdx.x * c;
	double s = 0, s2 = 0, mean, rstd;

	for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
		s += xr[j];
	mean = block_sum(s) / (double)c;
	for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
		s2 += (xr[j] - mean) * (xr[j] - mean);
	rstd = 1.0 / sqrt(block_sum(s2) / (double)c + LN_EPS);
	for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
		yr[j] = (float)((xr[j] - mean) * rstd) * gamma[j] + beta[j];
	if (threadIdx.x == 0) {
		ws[2 * blockIdx.x] = (float)mean;
		ws[2 * blockIdx.x + 1] = (float)rstd;
	}
}

/* dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma */
static __global__ void ln_dx_kernel(const float *x, const float *dy, const float *gamma,
				    const float *ws, float *dx, int64_t c)
{
	const float *xr = x + blockIdx.x * c, *dyr = dy + blockIdx.x * c;
	double mean = ws[2 * blockIdx.x], rstd = ws[2 * blockIdx.x + 1], sg = 0, sgx = 0;

	for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
		double xh = (xr[j] - mean) * rstd, g = (double)dyr[j] * gamma[j];

		sg += g;
		sgx += g * xh;
	}
	sg = block_sum(sg);
	sgx = block_sum(sgx);
	for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
		double xh = (xr[j] - mean) * rstd, g = (double)dyr[j] * gamma[j];

		dx[blockIdx.x * c + j] = (float)(rstd * (g - sg / (double)c - xh * sgx / (double)c));
	}
}

/* dgamma[j] += sum over rows of dy xhat, dbeta[j] += sum of dy */
static __global__ void ln_dw_kernel(const float *x, const float *dy, const float *ws,
				    float *dgamma, float *dbeta, int64_t rows, int64_t c)
{
	GRID_STRIDE(j, c) {
		double sg = 0, sb = 0;

		for (int64_t r = 0; r < rows; r++) {
			double mean = ws[2 * r], rstd = ws[2 * r + 1];
			double xh = (x[r * c + j] - mean) * rstd;

			sg += (double)(float)(dy[r * c + j] * xh);
			sb += dy[r * c + j];
		}
		dgamma[j] += (float)sg;
		dbeta[j] += (float)sb;
	}
}

static void rows_of(const struct shape *s, int64_t *rows, int64_t *c)
{
	*c = s->size[s->rank - 1];
	*rows = shape_elems(s) / *c;
}

static int64_t layernorm_ws(const struct kern *k)
{
	int64_t rows, c;

	rows_of(&k->out, &rows, &c);
	return 2 * rows;
}

static int layernorm_fwd(const struct kern *k, struct kbufs *b)
{
	int64_t rows, c;

	rows_of(&k->out, &rows, &c);
	if (rows <= 0)
		return AP_OK;
	ln_fwd_kernel<<<(unsigned)rows, CUDA_THREADS, 0, cuda_ctx.stream>>>(b->in[0], b->w, b->w + c,
									   b->out, b->ws, c);
	LAUNCH_CHECK();
	return AP_OK;
}

static int layernorm_bwd(const struct kern *k, struct kbufs *b)
{
	int64_t rows, c;

	rows_of(&k->out, &rows, &c);
	if (rows <= 0)
		return AP_OK;
	ln_dw_kernel<<<cuda_blocks(c), CUDA_THREADS, 0, cuda_ctx.stream>>>(
		b->in[0], b->dout, b->ws, b->dw, b->dw + c, rows, c);
	LAUNCH_CHECK();
	if (!b->din[0])
		return AP_OK;
	ln_dx_kernel<<<(unsigned)rows, CUDA_THREADS, 0, cuda_ctx.stream>>>(b->in[0], b->dout, b->w,
									  b->ws, b->din[0], c);
	LAUNCH_CHECK();
	return AP_OK;
}

extern "C" const struct kernel_ops cuda_layernorm = { layernorm_fwd, layernorm_bwd,
						      layernorm_ws, 0 };

/* Batchnorm (cpu_batchnorm.c's semantics, kern_dims.h's groups): for
 * each group of samples [lo, hi), one block per channel sums the
 * channel's values of the group, as lines of `inner` floats. */
static __device__ int64_t bn_at(const struct bn_dims &d, int64_t lo, int64_t e, int64_t ch)
{
	int64_t line = e / d.inner;

	return ((lo * d.per + line) * d.c + ch) * d.inner + e % d.inner;
}

static __global__ void bn_fwd_kernel(const float *x, const float *gamma, const float *beta,
				     float *y, float *stat, struct bn_dims d, int64_t lo,
				     int64_t cnt)
{
	int64_t ch = blockIdx.x;
	double s = 0, s2 = 0, mean, rstd;
	float g, sh;

	for (int64_t e = threadIdx.x; e < cnt; e += blockDim.x)
		s += x[bn_at(d, lo, e, ch)];
	mean = block_sum(s) / (double)cnt;
	for (int64_t e = threadIdx.x; e < cnt; e += blockDim.x) {
		double v = x[bn_at(d, lo, e, ch)] - mean;

		s2 += v * v;
	}
	rstd = 1.0 / sqrt(block_sum(s2) / (double)cnt + LN_EPS);
	g = (float)rstd * gamma[ch];
	sh = beta[ch] - (float)mean * g;
	for (int64_t e = threadIdx.x; e < cnt; e += blockDim.x)
		y[bn_at(d, lo, e, ch)] = x[bn_at(d, lo, e, ch)] * g + sh;
	if (threadIdx.x == 0) {
		stat[2 * ch] = (float)mean;
		stat[2 * ch + 1] = (float)rstd;
	}
}

/* dbeta += sum dy, dgamma += sum dy xhat, and (dx not NULL)
 * dx = gamma rstd (dy - mean(dy) - xhat mean(dy xhat)) over the group */
static __global__ void bn_bwd_kernel(const float *x, const float *dy, const float *gamma,
				     const float *stat, float *dx, float *dgamma, float *dbeta,
				     struct bn_dims d, int64_t lo, int64_t cnt)
{
	int64_t ch = blockIdx.x;
	double mean = stat[2 * ch], rstd = stat[2 * ch + 1], sdy = 0, sdyx = 0, sxh;
	float a, bb, c0, m = (float)mean;

	for (int64_t e = threadIdx.x; e < cnt; e += blockDim.x) {
		int64_t o = bn_at(d, lo, e, ch);

		sdy += dy[o];
		sdyx += (double)dy[o] * x[o];
	}
	sdy = block_sum(sdy);
	sxh = (block_sum(sdyx) - mean * sdy) * rstd;
	if (threadIdx.x == 0) {
		dbeta[ch] += (float)sdy;
		dgamma[ch] += (float)sxh;
	}
	if (!dx)
		return;
	a = (float)(gamma[ch] * rstd);
	bb = (float)(-gamma[ch] * rstd * rstd * sxh / (double)cnt);
	c0 = (float)(-gamma[ch] * rstd * sdy / (double)cnt);
	for (int64_t e = threadIdx.x; e < cnt; e += blockDim.x) {
		int64_t o = bn_at(d, lo, e, ch);

		dx[o] = a * dy[o] + bb * (x[o] - m) + c0;
	}
}

static int batchnorm_fwd(const struct kern *k, struct kbufs *b)
{
	struct bn_dims d = bn_dims(k);
	float *stat = b->ws;

	for (int64_t lo = 0, hi; lo < d.n && d.c > 0; lo = hi, stat += 2 * d.c) {
		hi = bn_group_end(k, b->n0, d.n, lo);
		bn_fwd_kernel<<<(unsigned)d.c, CUDA_THREADS, 0, cuda_ctx.stream>>>(
			b->in[0], b->w, b->w + d.c, b->out, stat, d, lo, (hi - lo) * d.per * d.inner);
		LAUNCH_CHECK();
	}
	return AP_OK;
}

static int batchnorm_bwd(const struct kern *k, struct kbufs *b)
{
	struct bn_dims d = bn_dims(k);
	const float *stat = b->ws;

	for (int64_t lo = 0, hi; lo < d.n && d.c > 0; lo = hi, stat += 2 * d.c) {
		hi = bn_group_end(k, b->n0, d.n, lo);
		bn_bwd_kernel<<<(unsigned)d.c, CUDA_THREADS, 0, cuda_ctx.stream>>>(
			b->in[0], b->dout, b->w, stat, b->din[0], b->dw, b->dw + d.c, d, lo,
			(hi - lo) * d.per * d.inner);
		LAUNCH_CHECK();
	}
	return AP_OK;
}

extern "C" const struct kernel_ops cuda_batchnorm = { batchnorm_fwd, batchnorm_bwd,
						      bn_ws_floats, 0 };

/* A tensor seen as [outer][size][inner] around the dim normalised: line
 * q = (o, i) holds elements o size inner + i + t inner, t < size.  With
 * a mask (period > 0, attention's causal one) line q takes part in its
 * first first + q % period elements only, the others' probabilities
 * being 0. */
struct lines {
	int64_t outer, size, inner;
	int64_t period, first;
};

static struct lines lines_at(const struct shape *s, int di)
{
	struct lines l = { 1, s->size[di], 1, 0, 0 };

	for (int i = 0; i < di; i++)
		l.outer *= s->size[i];
	for (int i = di + 1; i < s->rank; i++)
		l.inner *= s->size[i];
	return l;
}

static __device__ int64_t line_base(const struct lines &l, int64_t q)
{
	return q / l.inner * l.size * l.inner + q % l.inner;
}

/* the elements of line q that take part */
static __device__ int64_t line_lim(const struct lines &l, int64_t q)
{
	int64_t lim = l.period > 0 ? l.first + q % l.period : l.size;

	return lim < 0 ? 0 : lim > l.size ? l.size : lim;
}

/* the maximum and the sum of exp(x - max) of the first lim elements of a
 * line, as the CPU's softmax_line() */
static __device__ void line_stats(const float *x, const struct lines &l, int64_t lim,
				  double *mx, double *s)
{
	*mx = -INFINITY;
	*s = 0;
	for (int64_t t = 0; t < lim; t++)
		*mx = x[t * l.inner] > *mx ? x[t * l.inner] : *mx;
	for (int64_t t = 0; t < lim; t++)
		*s += exp(x[t * l.inner] - *mx);
}

/* in place when p == x: each element is read before it is written */
static __global__ void softmax_fwd_kernel(struct lines l, const float *x, float *p)
{
	GRID_STRIDE(q, l.outer * l.inner) {
		int64_t base = line_base(l, q), lim = line_lim(l, q);
		double mx, s;

		line_stats(x + base, l, lim, &mx, &s);
		for (int64_t t = 0; t < l.size; t++)
			p[base + t * l.inner] =
				t < lim ? (float)(exp(x[base + t * l.inner] - mx) / s) : 0.0f;
	}
}

/* in place when dx == dy */
static __global__ void softmax_bwd_kernel(struct lines l, const float *p, const float *dy,
					  float *dx)
{
	GRID_STRIDE(q, l.outer * l.inner) {
		int64_t base = line_base(l, q);
		double dot = 0;

		for (int64_t t = 0; t < l.size; t++)
			dot += (double)dy[base + t * l.inner] * p[base + t * l.inner];
		for (int64_t t = 0; t < l.size; t++) {
			int64_t e = base + t * l.inner;

			dx[e] = (float)(p[e] * (dy[e] - dot));
		}
	}
}

static int softmax_lines_fwd(struct lines l, const float *x, float *p)
{
	if (l.outer * l.inner <= 0)
		return AP_OK;
	softmax_fwd_kernel<<<cuda_blocks(l.outer * l.inner), CUDA_THREADS, 0, cuda_ctx.stream>>>(
		l, x, p);
	LAUNCH_CHECK();
	return AP_OK;
}

static int softmax_lines_bwd(struct lines l, const float *p, const float *dy, float *dx)
{
	if (l.outer * l.inner <= 0)
		return AP_OK;
	softmax_bwd_kernel<<<cuda_blocks(l.outer * l.inner), CUDA_THREADS, 0, cuda_ctx.stream>>>(
		l, p, dy, dx);
	LAUNCH_CHECK();
	return AP_OK;
}

int cuda_softmax_rows(const float *x, float *p, int64_t rows, int64_t size, int64_t period,
		      int64_t first)
{
	struct lines l = { rows, size, 1, period, first };

	return softmax_lines_fwd(l, x, p);
}

int cuda_softmax_rows_bwd(const float *p, const float *dy, float *dx, int64_t rows,
			  int64_t size)
{
	struct lines l = { rows, size, 1, 0, 0 };

	return softmax_lines_bwd(l, p, dy, dx);
}

static struct lines softmax_lines(const struct kern *k)
{
	const struct shape *s = &k->out;
	enum dim_kind d = k->op->a.axis == NDIMS ? s->kind[s->rank - 1] : k->op->a.axis;

	return lines_at(s, shape_dim(s, d));
}

static int softmax_fwd(const struct kern *k, struct kbufs *b)
{
	return softmax_lines_fwd(softmax_lines(k), b->in[0], b->out);
}

static int softmax_bwd(const struct kern *k, struct kbufs *b)
{
	if (!b->din[0])
		return AP_OK;
	return softmax_lines_bwd(softmax_lines(k), b->out, b->dout, b->din[0]);
}

extern "C" const struct kernel_ops cuda_softmax = { softmax_fwd, softmax_bwd, NULL, 0 };

/* loss: logits [outer][classes][inner], labels and output [outer][inner];
 * a label outside [0, classes) sets the flag */
static __global__ void loss_fwd_kernel(struct lines l, const float *x, const float *labels,
				       float *out, int *flag)
{
	GRID_STRIDE(q, l.outer * l.inner) {
		int64_t base = line_base(l, q), y = (int64_t)labels[q];
		double mx, s;
		float p;

		if (y < 0 || y >= l.size) {
			*flag = 1;
			continue;
		}
		line_stats(x + base, l, l.size, &mx, &s);
		p = (float)(exp(x[base + y * l.inner] - mx) / s);
		out[q] = -logf(fmaxf(p, 1e-30f));
	}
}

static __global__ void loss_bwd_kernel(struct lines l, const float *x, const float *labels,
				       const float *dy, float *dx)
{
	GRID_STRIDE(q, l.outer * l.inner) {
		int64_t base = line_base(l, q), y = (int64_t)labels[q];
		float g = dy[q];
		double mx, s;

		line_stats(x + base, l, l.size, &mx, &s);
		for (int64_t t = 0; t < l.size; t++) {
			float p = (float)(exp(x[base + t * l.inner] - mx) / s);

			dx[base + t * l.inner] = g * (p - (t == y ? 1.0f : 0.0f));
		}
	}
}

static struct lines loss_lines(const struct kern *k)
{
	return lines_at(&k->in[0], shape_dim(&k->in[0], DIM_C));
}

static int loss_fwd(const struct kern *k, struct kbufs *b)
{
	struct lines l = loss_lines(k);

	if (cuda_flag_clear())
		return AP_EFAIL;
	loss_fwd_kernel<<<cuda_blocks(l.outer * l.inner), CUDA_THREADS, 0, cuda_ctx.stream>>>(
		l, b->in[0], b->labels, b->out, cuda_ctx.flag);
	LAUNCH_CHECK();
	return cuda_flag_check("loss: a label outside the classes");
}

static int loss_bwd(const struct kern *k, struct kbufs *b)
{
	struct lines l = loss_lines(k);

	if (!b->din[0])
		return AP_OK;
	loss_bwd_kernel<<<cuda_blocks(l.outer * l.inner), CUDA_THREADS, 0, cuda_ctx.stream>>>(
		l, b->in[0], b->labels, b->dout, b->din[0]);
	LAUNCH_CHECK();
	return AP_OK;
}

/* no workspace: a thread recomputes its line's statistics */
extern "C" const struct kernel_ops cuda_loss = { loss_fwd, loss_bwd, NULL, 0 };
