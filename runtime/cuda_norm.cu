/*
 * CUDA kernels of the normalising operators, with the CPU backend's
 * semantics (cpu_norm.c, cpu_batchnorm.c): layer normalisation over the
 * last dim (eps 1e-5, gamma then beta), softmax along one dim, the
 * softmax cross-entropy loss (each position's -log p(label), at most
 * LOSS_MAX, the executor seeding the backward with 1 / positions) and
 * batch normalisation over kern_dims.h's groups.  Sums run in double as
 * on the CPU (cuda_reduce.cuh), so both agree to float32 round-off.
 *
 * All are bound by memory bandwidth, so each reads its tensors as few
 * times as it can, four floats at a time where aligned (cuda_vec.cuh):
 *
 * - A line along the normalised dim is one block's where it is
 *   contiguous (the last dim), block reductions giving its statistics;
 *   a strided line (softmax or the loss along another dim) is one
 *   thread's, neighbouring threads reading neighbouring lines.
 * - Softmax and the loss keep a running maximum and sum of exponentials
 *   (Milakov and Gimelshein, "Online normalizer calculation for
 *   softmax", 2018): the loss's forward reads the logits once and keeps
 *   each position's maximum and 1 / sum in its workspace, as the CPU
 *   kernel does, so its backward, softmax - onehot, is one more pass.
 * - Layernorm's weight gradient and batchnorm's statistics and gradients
 *   are sums over rows per channel: partial sums per block, then a kernel per channel
 *   (cuda_reduce.cuh's chans), the partials in the op's workspace after
 *   the statistics the CPU kernel keeps there too.
 */
#include "cuda_reduce.cuh"
#include "kern_dims.h"

#define LN_EPS 1e-5
#define BN_EPS 1e-5
/* -log of a probability below 1e-30: the most the loss counts (cpu_norm.c) */
#define LOSS_MAX 69.07755278982137

/* Layernorm: rows of c features, a block each.  The workspace: every
 * row's mean and 1/std (as the CPU's), then the scratch of the weight
 * gradient's partial sums. */
static void rows_of(const struct shape *s, int64_t *rows, int64_t *c)
{
	*c = s->size[s->rank - 1];
	*rows = shape_elems(s) / *c;
}

static struct chans ln_chans(int64_t rows, int64_t c)
{
	return chans_plan(rows, c, 1);
}

static int64_t layernorm_ws(const struct kern *k)
{
	int64_t rows, c;

	rows_of(&k->out, &rows, &c);
	return 2 * rows + chans_floats(ln_chans(rows, c));
}

/* two passes over the row for the mean and the variance, as the CPU's
 * (the second reads the row from the cache) */
static __global__ void __launch_bounds__(ROW_THREADS_MAX)
	ln_fwd_kernel(const float *x, const float *gamma, const float *beta, float *y, float *stat,
		      int64_t rows, int64_t c)
{
	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *xr = x + r * c;
		float *yr = y + r * c;
		bool vec = same_phase(xr, yr) && same_phase(xr, gamma) && same_phase(xr, beta);
		int head = head_of(xr);
		double s = 0, s2 = 0, mean, rstd;

		line_walk<true>(c, vec, head, [&](int64_t t, auto w) {
			fvec<decltype(w)::n> a = ld<decltype(w)::n>(xr + t);

			for (int j = 0; j < decltype(w)::n; j++)
				s += a.v[j];
		});
		mean = block_join(s) / (double)c;
		line_walk<true>(c, vec, head, [&](int64_t t, auto w) {
			fvec<decltype(w)::n> a = ld<decltype(w)::n>(xr + t);

			for (int j = 0; j < decltype(w)::n; j++)
				s2 += (a.v[j] - mean) * (a.v[j] - mean);
		});
		rstd = 1.0 / sqrt(block_join(s2) / (double)c + LN_EPS);
		line_walk<true>(c, vec, head, [&](int64_t t, auto w) {
			constexpr int N = decltype(w)::n;
			fvec<N> a = ld<N>(xr + t), g = ld<N>(gamma + t), b = ld<N>(beta + t);

			for (int j = 0; j < N; j++)
				a.v[j] = (float)((a.v[j] - mean) * rstd) * g.v[j] + b.v[j];
			st<N>(yr + t, a);
		});
		if (threadIdx.x == 0) {
			stat[2 * r] = (float)mean;
			stat[2 * r + 1] = (float)rstd;
		}
	}
}

/* dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma */
static __global__ void __launch_bounds__(ROW_THREADS_MAX)
	ln_dx_kernel(const float *x, const float *dy, const float *gamma, const float *stat,
		     float *dx, int64_t rows, int64_t c)
{
	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *xr = x + r * c, *dyr = dy + r * c;
		float *dxr = dx + r * c;
		bool vec = same_phase(xr, dyr) && same_phase(xr, dxr) && same_phase(xr, gamma);
		int head = head_of(xr);
		double mean = stat[2 * r], rstd = stat[2 * r + 1], mg, mgx;
		dsum2 s = { 0, 0 };

		line_walk<true>(c, vec, head, [&](int64_t t, auto w) {
			constexpr int N = decltype(w)::n;
			fvec<N> a = ld<N>(xr + t), d = ld<N>(dyr + t), g = ld<N>(gamma + t);

			for (int j = 0; j < N; j++) {
				double xh = (a.v[j] - mean) * rstd, gg = (double)d.v[j] * g.v[j];

				s.a += gg;
				s.b += gg * xh;
			}
		});
		s = block_join(s);
		mg = s.a / (double)c;
		mgx = s.b / (double)c;
		line_walk<true>(c, vec, head, [&](int64_t t, auto w) {
			constexpr int N = decltype(w)::n;
			fvec<N> a = ld<N>(xr + t), d = ld<N>(dyr + t), g = ld<N>(gamma + t);

			for (int j = 0; j < N; j++) {
				double xh = (a.v[j] - mean) * rstd, gg = (double)d.v[j] * g.v[j];

				a.v[j] = (float)(rstd * (gg - mg - xh * mgx));
			}
			st<N>(dxr + t, a);
		});
	}
}

/* the weight gradient's terms per element: dy xhat, rounded to float as
 * the CPU rounds it before adding, and dy */
struct ln_dw_sum {
	const float *x, *dy, *stat;

	__device__ int coef(int64_t) const { return 0; }
	template <int N>
	__device__ void sum(int64_t off, int64_t r, int, dsum2 &acc) const
	{
		double mean = stat[2 * r], rstd = stat[2 * r + 1];
		fvec<N> a = ld<N>(x + off), d = ld<N>(dy + off);

		for (int j = 0; j < N; j++) {
			acc.a += (double)(float)(d.v[j] * ((a.v[j] - mean) * rstd));
			acc.b += d.v[j];
		}
	}
};

/* dgamma[j] += sum over rows of dy xhat, dbeta[j] += sum of dy */
static __global__ void ln_dw_kernel(struct chans s, const double *part, float *dgamma,
				    float *dbeta)
{
	GRID_STRIDE(j, s.C) {
		dsum2 v = chan_total(s, part, j);

		dgamma[j] += (float)v.a;
		dbeta[j] += (float)v.b;
	}
}

static int layernorm_fwd(const struct kern *k, struct kbufs *b)
{
	int64_t rows, c;

	rows_of(&k->out, &rows, &c);
	if (rows <= 0)
		return AP_OK;
	ln_fwd_kernel<<<line_blocks(rows), line_threads(c), 0, cuda_ctx.stream>>>(
		b->in[0], b->w, b->w + c, b->out, b->ws, rows, c);
	LAUNCH_CHECK();
	return AP_OK;
}

/* zero bubble's passes apart (backend.h): dw NULL, the input gradient
 * alone; din NULL, the weight gradient alone */
static int layernorm_bwd(const struct kern *k, struct kbufs *b)
{
	int64_t rows, c;

	rows_of(&k->out, &rows, &c);
	if (rows <= 0)
		return AP_OK;
	if (b->dw) {
		struct chans s = ln_chans(rows, c);
		double *part = chans_part(b->ws + 2 * rows);
		int st = chan_sums(s, ln_dw_sum{ b->in[0], b->dout, b->ws }, part);

		if (st)
			return st;
		ln_dw_kernel<<<cuda_blocks(c), CUDA_THREADS, 0, cuda_ctx.stream>>>(s, part, b->dw,
										  b->dw + c);
		LAUNCH_CHECK();
	}
	if (!b->din[0])
		return AP_OK;
	ln_dx_kernel<<<line_blocks(rows), line_threads(c), 0, cuda_ctx.stream>>>(
		b->in[0], b->dout, b->w, b->ws, b->din[0], rows, c);
	LAUNCH_CHECK();
	return AP_OK;
}

extern "C" const struct kernel_ops cuda_layernorm = { layernorm_fwd, layernorm_bwd,
						      layernorm_ws, 1 };

/* A tensor seen as [outer][size][inner] around the dim normalised: line
 * q = (o, i) holds elements o size inner + i + t inner, t < size. */
struct lines {
	int64_t outer, size, inner;
};

static struct lines lines_at(const struct shape *s, int di)
{
	struct lines l = { 1, s->size[di], 1 };

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

/* Launches kernel<true> (a block per line) where lines are contiguous,
 * else kernel<false> (a thread per line); a kernel's lines are
 * contiguous exactly where it runs as <true>, which is what lets it
 * take four floats at a time there. */
template <class KB, class KT, class... A>
static int run_lines(const struct lines &l, KB by_block, KT by_thread, A... a)
{
	int64_t n = l.outer * l.inner;

	if (n <= 0)
		return AP_OK;
	if (l.inner == 1)
		by_block<<<line_blocks(n), line_threads(l.size), 0, cuda_ctx.stream>>>(l, a...);
	else
		by_thread<<<cuda_blocks(n), CUDA_THREADS, 0, cuda_ctx.stream>>>(l, a...);
	LAUNCH_CHECK();
	return AP_OK;
}

/* p = exp(x - max) / sum, as the CPU's (the exponential in float, times
 * 1 / sum in double).  In place when p == x: the statistics' reduction,
 * a barrier, lies between the reads of the first pass and the writes. */
template <bool BLOCK>
static __global__ void __launch_bounds__(ROW_THREADS_MAX)
	softmax_fwd_kernel(struct lines l, const float *x, float *p)
{
	for (int64_t q = team<BLOCK>::first(); q < l.outer * l.inner; q += team<BLOCK>::step()) {
		int64_t base = line_base(l, q), in = l.inner;
		const float *xl = x + base;
		float *pl = p + base;
		bool vec = BLOCK && same_phase(xl, pl);
		int head = head_of(xl);
		msum a = { -INFINITY, 0.0 };
		double inv;

		line_walk<BLOCK>(l.size, vec, head, [&](int64_t t, auto w) {
			ms_add(a, ld<decltype(w)::n>(xl + t * in));
		});
		a = team<BLOCK>::join_all(a);
		inv = 1.0 / a.s;
		line_walk<BLOCK>(l.size, vec, head, [&](int64_t t, auto w) {
			constexpr int N = decltype(w)::n;
			fvec<N> v = ld<N>(xl + t * in);

			for (int j = 0; j < N; j++)
				v.v[j] = (float)(expf(v.v[j] - a.m) * inv);
			st<N>(pl + t * in, v);
		});
	}
}

/* dx = p (dy - sum(dy p)); in place when dx == dy, as the forward */
template <bool BLOCK>
static __global__ void __launch_bounds__(ROW_THREADS_MAX)
	softmax_bwd_kernel(struct lines l, const float *p, const float *dy, float *dx)
{
	for (int64_t q = team<BLOCK>::first(); q < l.outer * l.inner; q += team<BLOCK>::step()) {
		int64_t base = line_base(l, q), in = l.inner;
		const float *pl = p + base, *dyl = dy + base;
		float *dxl = dx + base;
		bool vec = BLOCK && same_phase(pl, dyl) && same_phase(pl, dxl);
		int head = head_of(pl);
		double dot = 0;

		line_walk<BLOCK>(l.size, vec, head, [&](int64_t t, auto w) {
			constexpr int N = decltype(w)::n;
			fvec<N> a = ld<N>(pl + t * in), d = ld<N>(dyl + t * in);

			for (int j = 0; j < N; j++)
				dot += (double)d.v[j] * a.v[j];
		});
		dot = team<BLOCK>::join_all(dot);
		line_walk<BLOCK>(l.size, vec, head, [&](int64_t t, auto w) {
			constexpr int N = decltype(w)::n;
			fvec<N> a = ld<N>(pl + t * in), d = ld<N>(dyl + t * in);

			for (int j = 0; j < N; j++)
				a.v[j] = (float)(a.v[j] * (d.v[j] - dot));
			st<N>(dxl + t * in, a);
		});
	}
}

static struct lines softmax_lines(const struct kern *k)
{
	const struct shape *s = &k->out;
	enum dim_kind d = k->op->a.axis == NDIMS ? s->kind[s->rank - 1] : k->op->a.axis;

	return lines_at(s, shape_dim(s, d));
}

static int softmax_fwd(const struct kern *k, struct kbufs *b)
{
	return run_lines(softmax_lines(k), softmax_fwd_kernel<true>, softmax_fwd_kernel<false>,
			 b->in[0], b->out);
}

static int softmax_bwd(const struct kern *k, struct kbufs *b)
{
	if (!b->din[0])
		return AP_OK;
	return run_lines(softmax_lines(k), softmax_bwd_kernel<true>, softmax_bwd_kernel<false>,
			 b->out, b->dout, b->din[0]);
}

extern "C" const struct kernel_ops cuda_softmax = { softmax_fwd, softmax_bwd, NULL, 0 };

/* The loss: logits [outer][classes][inner], labels and output
 * [outer][inner].  A label outside [0, classes) sets the flag.  The
 * forward writes -log p(y) = log sum exp(x - max) - (x_y - max) and
 * keeps the line's max and 1 / sum (the workspace, two floats per
 * position, as the CPU's after its line of classes). */
template <bool BLOCK>
static __global__ void __launch_bounds__(ROW_THREADS_MAX)
	loss_fwd_kernel(struct lines l, const float *x, const float *labels, float *out,
			float *stat, int *flag)
{
	for (int64_t q = team<BLOCK>::first(); q < l.outer * l.inner; q += team<BLOCK>::step()) {
		const float *xl = x + line_base(l, q);
		int64_t in = l.inner;
		msum a = { -INFINITY, 0.0 };

		line_walk<BLOCK>(l.size, BLOCK, head_of(xl), [&](int64_t t, auto w) {
			ms_add(a, ld<decltype(w)::n>(xl + t * in));
		});
		a = team<BLOCK>::join_all(a);
		if (team<BLOCK>::lane() == 0) {
			int64_t y = (int64_t)labels[q];

			if (y < 0 || y >= l.size) {
				*flag = 1;
				continue;
			}
			out[q] = (float)fmin(log(a.s) - ((double)xl[y * in] - a.m), LOSS_MAX);
			stat[2 * q] = a.m;
			stat[2 * q + 1] = (float)(1.0 / a.s);
		}
	}
}

/* dx = g (p - onehot(y)), p = exp(x - max) (1 / sum) from the forward's
 * statistics: the product rounded to float before g multiplies it, as
 * the CPU's (a float times the float 1 / sum is its double product
 * rounded) */
template <bool BLOCK>
static __global__ void __launch_bounds__(ROW_THREADS_MAX)
	loss_bwd_kernel(struct lines l, const float *x, const float *labels, const float *dy,
			const float *stat, float *dx)
{
	for (int64_t q = team<BLOCK>::first(); q < l.outer * l.inner; q += team<BLOCK>::step()) {
		int64_t base = line_base(l, q), in = l.inner, y = (int64_t)labels[q];
		const float *xl = x + base;
		float *dxl = dx + base, g = dy[q], mx = stat[2 * q], inv = stat[2 * q + 1];
		auto grad = [&](int64_t t, auto w) {
			constexpr int N = decltype(w)::n;
			fvec<N> a = ld<N>(xl + t * in);

			for (int j = 0; j < N; j++) {
				float p = __fmul_rn(expf(a.v[j] - mx), inv);

				a.v[j] = g * (t + j == y ? p - 1.0f : p);
			}
			st<N>(dxl + t * in, a);
		};

		line_walk<BLOCK>(l.size, BLOCK && same_phase(xl, dxl), head_of(xl), grad);
	}
}

static struct lines loss_lines(const struct kern *k)
{
	return lines_at(&k->in[0], shape_dim(&k->in[0], DIM_C));
}

static int64_t loss_ws(const struct kern *k)
{
	return 2 * shape_elems(&k->out);
}

static int loss_fwd(const struct kern *k, struct kbufs *b)
{
	int st;

	if (cuda_flag_clear())
		return AP_EFAIL;
	st = run_lines(loss_lines(k), loss_fwd_kernel<true>, loss_fwd_kernel<false>, b->in[0],
		       b->labels, b->out, b->ws, cuda_ctx.flag);
	return st ? st : cuda_flag_check("loss: a label outside the classes");
}

static int loss_bwd(const struct kern *k, struct kbufs *b)
{
	if (!b->din[0])
		return AP_OK;
	return run_lines(loss_lines(k), loss_bwd_kernel<true>, loss_bwd_kernel<false>, b->in[0],
			 b->labels, b->dout, b->ws, b->din[0]);
}

extern "C" const struct kernel_ops cuda_loss = { loss_fwd, loss_bwd, loss_ws, 0 };

/* Batchnorm (cpu_batchnorm.c's semantics, kern_dims.h's groups): a
 * group is [(hi - lo) per][c][inner] at sample lo, its channel sums
 * those of chans.  The workspace: a mean and a 1/std per group and
 * channel, as the CPU's; then the backward's three coefficients of dx
 * per channel, and the partial sums' scratch, sized for the largest
 * group (all samples). */
static struct chans bn_chans(const struct bn_dims &d, int64_t lo, int64_t hi)
{
	return chans_plan((hi - lo) * d.per, d.c, d.inner);
}

static int64_t batchnorm_ws(const struct kern *k)
{
	struct bn_dims d = bn_dims(k);

	return bn_ws_floats(k) + 3 * d.c + chans_floats(bn_chans(d, 0, d.n));
}

/* the forward's sums: of x - K and (x - K)^2, K the channel's first
 * value in the group, a shift that keeps E x^2 - (E x)^2 from
 * cancelling where the mean is far from 0 (the CPU sums (x - mean)^2 in
 * a second pass) */
struct bn_stat_sum {
	const float *x;
	int64_t inner;

	__device__ float coef(int64_t ch) const { return x[ch * inner]; }
	template <int N>
	__device__ void sum(int64_t off, int64_t, float shift, dsum2 &acc) const
	{
		fvec<N> a = ld<N>(x + off);

		for (int j = 0; j < N; j++) {
			double v = (double)a.v[j] - shift;

			acc.a += v;
			acc.b += v * v;
		}
	}
};

static __global__ void bn_stat_kernel(struct chans s, const double *part, const float *x,
				      float *stat)
{
	GRID_STRIDE(ch, s.C) {
		dsum2 v = chan_total(s, part, ch);
		double cnt = (double)s.R * s.I, d = v.a / cnt, var = v.b / cnt - d * d;

		stat[2 * ch] = (float)(x[ch * s.I] + d);
		stat[2 * ch + 1] = (float)(1.0 / sqrt((var > 0 ? var : 0) + BN_EPS));
	}
}

/* y = x g + sh, g = rstd gamma, sh = beta - mean g */
struct bn_norm_put {
	const float *x, *stat, *gamma, *beta;
	float *y;

	__device__ float2 coef(int64_t ch) const
	{
		float g = stat[2 * ch + 1] * gamma[ch];

		return make_float2(g, beta[ch] - stat[2 * ch] * g);
	}
	template <int N> __device__ void put(int64_t off, const float2 &k) const
	{
		fvec<N> a = ld<N>(x + off);

		for (int j = 0; j < N; j++)
			a.v[j] = a.v[j] * k.x + k.y;
		st<N>(y + off, a);
	}
};

/* the backward's sums: of dy and dy x */
struct bn_grad_sum {
	const float *x, *dy;

	__device__ int coef(int64_t) const { return 0; }
	template <int N>
	__device__ void sum(int64_t off, int64_t, int, dsum2 &acc) const
	{
		fvec<N> a = ld<N>(x + off), d = ld<N>(dy + off);

		for (int j = 0; j < N; j++) {
			acc.a += d.v[j];
			acc.b += (double)d.v[j] * a.v[j];
		}
	}
};

/* dbeta += sum dy, dgamma += sum dy xhat, and (coef not NULL) dx's
 * coefficients a, bb, c0 of dx = a dy + bb (x - mean) + c0, that is
 * gamma rstd (dy - mean(dy) - xhat mean(dy xhat)), as the CPU's */
static __global__ void bn_grad_kernel(struct chans s, const double *part, const float *gamma,
				      const float *stat, float *dgamma, float *dbeta, float *coef)
{
	GRID_STRIDE(ch, s.C) {
		dsum2 v = chan_total(s, part, ch);
		double mean = stat[2 * ch], rstd = stat[2 * ch + 1], cnt = (double)s.R * s.I;
		double sxh = (v.b - mean * v.a) * rstd;

		dbeta[ch] += (float)v.a;
		dgamma[ch] += (float)sxh;
		if (!coef)
			continue;
		coef[3 * ch] = (float)(gamma[ch] * rstd);
		coef[3 * ch + 1] = (float)(-gamma[ch] * rstd * rstd * sxh / cnt);
		coef[3 * ch + 2] = (float)(-gamma[ch] * rstd * v.a / cnt);
	}
}

/* dx = a dy + bb (x - mean) + c0, the coefficients per channel in abc */
struct bn_dx_put {
	const float *x, *dy, *stat, *abc;
	float *dx;

	__device__ float4 coef(int64_t ch) const
	{
		return make_float4(abc[3 * ch], abc[3 * ch + 1], abc[3 * ch + 2], stat[2 * ch]);
	}
	template <int N> __device__ void put(int64_t off, const float4 &k) const
	{
		fvec<N> a = ld<N>(x + off), d = ld<N>(dy + off);

		for (int j = 0; j < N; j++)
			a.v[j] = k.x * d.v[j] + k.y * (a.v[j] - k.w) + k.z;
		st<N>(dx + off, a);
	}
};

/* where a group's statistics, coefficients and partials lie */
struct bn_scratch {
	float *coef;
	double *part;
};

static struct bn_scratch bn_scratch_of(const struct bn_dims &d, float *ws)
{
	struct bn_scratch sc;

	sc.coef = ws + 2 * d.n * d.c;
	sc.part = chans_part(sc.coef + 3 * d.c);
	return sc;
}

static int batchnorm_fwd(const struct kern *k, struct kbufs *b)
{
	struct bn_dims d = bn_dims(k);
	struct bn_scratch sc = bn_scratch_of(d, b->ws);
	float *stat = b->ws;
	int st = AP_OK;

	for (int64_t lo = 0, hi; lo < d.n && d.c > 0 && !st; lo = hi, stat += 2 * d.c) {
		int64_t at = lo * d.per * d.c * d.inner;
		const float *x = b->in[0] + at;
		float *y = b->out + at;
		struct chans s;

		hi = bn_group_end(k, b->n0, d.n, lo);
		s = bn_chans(d, lo, hi);
		s.vec = d.inner % 4 == 0 && aligned16(x) && aligned16(y);
		if ((st = chan_sums(s, bn_stat_sum{ x, d.inner }, sc.part)))
			break;
		bn_stat_kernel<<<cuda_blocks(d.c), CUDA_THREADS, 0, cuda_ctx.stream>>>(s, sc.part, x,
										      stat);
		LAUNCH_CHECK();
		st = chan_puts(s, bn_norm_put{ x, stat, b->w, b->w + d.c, y });
	}
	return st;
}

static int batchnorm_bwd(const struct kern *k, struct kbufs *b)
{
	struct bn_dims d = bn_dims(k);
	struct bn_scratch sc = bn_scratch_of(d, b->ws);
	const float *stat = b->ws;
	int st = AP_OK;

	for (int64_t lo = 0, hi; lo < d.n && d.c > 0 && !st; lo = hi, stat += 2 * d.c) {
		int64_t at = lo * d.per * d.c * d.inner;
		const float *x = b->in[0] + at, *dy = b->dout + at;
		float *dx = b->din[0] ? b->din[0] + at : NULL;
		struct chans s;

		hi = bn_group_end(k, b->n0, d.n, lo);
		s = bn_chans(d, lo, hi);
		s.vec = d.inner % 4 == 0 && aligned16(x) && aligned16(dy) && (!dx || aligned16(dx));
		if ((st = chan_sums(s, bn_grad_sum{ x, dy }, sc.part)))
			break;
		bn_grad_kernel<<<cuda_blocks(d.c), CUDA_THREADS, 0, cuda_ctx.stream>>>(
			s, sc.part, b->w, stat, b->dw, b->dw + d.c, dx ? sc.coef : NULL);
		LAUNCH_CHECK();
		if (dx)
			st = chan_puts(s, bn_dx_put{ x, dy, stat, sc.coef, dx });
	}
	return st;
}

extern "C" const struct kernel_ops cuda_batchnorm = { batchnorm_fwd, batchnorm_bwd,
						      batchnorm_ws, 0 };
