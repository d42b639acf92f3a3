/*
 * The reductions of the normalising kernels (cuda_norm.cu): a block's
 * sum, pair of sums or softmax statistics, the same on every thread; a
 * line (the elements along the normalised dim) walked by a block or by
 * one thread; and per-channel sums of tensors seen as [R][C][I] in two
 * passes, partial sums per block into scratch and then a kernel adding
 * each channel's partials, so no thread loops over every row and no
 * atomics pile onto a few addresses.
 *
 * Sums run in double, as the CPU kernels' do, so the two agree to
 * float32 round-off whatever the order of the additions.  A block's
 * threads end a reduction with the same value to the last bit (each
 * combines the warps' results from shared memory in the same order), so
 * they agree on a row's mean or maximum.
 */
#ifndef AUTOPAR_CUDA_REDUCE_CUH
#define AUTOPAR_CUDA_REDUCE_CUH

#include "cuda_ctx.cuh"
#include "cuda_vec.cuh"

#define WARP 32
/* the most threads a block that walks a line has */
#define ROW_THREADS_MAX 1024

/* two sums at once */
struct dsum2 {
	double a, b;
};

/* softmax's statistics of some elements: their maximum m and the sum s
 * of exp(x - m) over them (m -inf and s 0: none yet) */
struct msum {
	float m;
	double s;
};

static __device__ __forceinline__ double shfl(double v, int o)
{
	return __shfl_xor_sync(0xffffffffu, v, o);
}

static __device__ __forceinline__ float shfl(float v, int o)
{
	return __shfl_xor_sync(0xffffffffu, v, o);
}

static __device__ __forceinline__ dsum2 shfl(dsum2 v, int o)
{
	return { shfl(v.a, o), shfl(v.b, o) };
}

static __device__ __forceinline__ msum shfl(msum v, int o)
{
	return { shfl(v.m, o), shfl(v.s, o) };
}

static __device__ __forceinline__ double join(double x, double y)
{
	return x + y;
}

static __device__ __forceinline__ dsum2 join(dsum2 x, dsum2 y)
{
	return { x.a + y.a, x.b + y.b };
}

/* both sums brought to the larger maximum */
static __device__ __forceinline__ msum join(msum x, msum y)
{
	float m = fmaxf(x.m, y.m);

	if (m == -INFINITY)
		return { m, 0.0 };
	return { m, x.s * exp((double)x.m - m) + y.s * exp((double)y.m - m) };
}

/* Adds N elements to softmax statistics: one rescale for the group
 * where its maximum is a new one, the exponentials summed in float
 * (cpu_exp_sum's too are floats) and then added in double. */
template <int N> static __device__ __forceinline__ void ms_add(msum &a, const fvec<N> &x)
{
	float m = x.v[0], e = 0.0f;

	for (int j = 1; j < N; j++)
		m = fmaxf(m, x.v[j]);
	if (m > a.m) {
		a.s *= expf(a.m - m);
		a.m = m;
	}
	if (a.m == -INFINITY) /* nothing but -inf so far: x - m would be NaN */
		return;
	for (int j = 0; j < N; j++)
		e += expf(x.v[j] - a.m);
	a.s += e;
}

/* v combined over the block (blockDim.x a multiple of WARP, at most
 * ROW_THREADS_MAX), on every thread: a butterfly in each warp, then every
 * thread combines the warps' results in the same order.  Called by every
 * thread of the block alike (it holds barriers). */
template <class T> static __device__ T block_join(T v)
{
	__shared__ T part[ROW_THREADS_MAX / WARP];
	int lane = threadIdx.x % WARP, w = threadIdx.x / WARP, nw = blockDim.x / WARP;

	for (int o = WARP / 2; o > 0; o /= 2)
		v = join(v, shfl(v, o));
	__syncthreads(); /* a previous call's readers are done with part */
	if (lane == 0)
		part[w] = v;
	__syncthreads();
	v = part[0];
	for (int i = 1; i < nw; i++)
		v = join(v, part[i]);
	return v;
}

/* Who walks a line: a block (BLOCK: a contiguous line, its threads
 * taking every blockDim.x-th element) or one thread (a line strided by
 * inner > 1: neighbouring threads take neighbouring lines, whose
 * elements are neighbours in memory, so the loads coalesce).  A block's
 * loop over lines is the same for all its threads, so the barriers of
 * block_join inside it are reached by all. */
template <bool BLOCK> struct team {
	static __device__ int64_t first()
	{
		return BLOCK ? (int64_t)blockIdx.x : (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	}
	static __device__ int64_t step()
	{
		return BLOCK ? (int64_t)gridDim.x : (int64_t)gridDim.x * blockDim.x;
	}
	static __device__ int lane() { return BLOCK ? (int)threadIdx.x : 0; }
	static __device__ int width() { return BLOCK ? (int)blockDim.x : 1; }
	template <class T> static __device__ T join_all(T v)
	{
		if constexpr (BLOCK)
			return block_join(v);
		else
			return v;
	}
};

/* Calls f(t, w) for the elements [0, n) of a line, the team's lanes in
 * turn, f taking [t, t + decltype(w)::n).  With vec (a contiguous line
 * whose pointers f uses all sit at one 16-byte phase, `head` floats
 * before the first boundary) the elements between the head and the last
 * whole group of four go four at a time; otherwise all one at a time. */
template <bool BLOCK, class F>
static __device__ __forceinline__ void line_walk(int64_t n, bool vec, int head, F f)
{
	int lane = team<BLOCK>::lane(), width = team<BLOCK>::width();
	int64_t h = !vec ? n : head < n ? head : n, nv = vec ? (n - h) / 4 : 0;

	for (int64_t t = lane; t < h; t += width)
		f(t, one{});
	for (int64_t i = lane; i < nv; i += width)
		f(h + 4 * i, four{});
	for (int64_t t = h + 4 * nv + lane; t < n; t += width)
		f(t, one{});
}

/* Blocks and threads for lines of n floats walked by blocks: about eight
 * floats a thread, whole warps, at most ROW_THREADS_MAX; a block per
 * line, the grid capped (its blocks then take several lines in turn). */
static inline unsigned line_threads(int64_t n)
{
	int64_t t = (n + 8 * WARP - 1) / (8 * WARP) * WARP;

	return (unsigned)(t < WARP ? WARP : t > ROW_THREADS_MAX ? ROW_THREADS_MAX : t);
}

static inline unsigned line_blocks(int64_t lines)
{
	return (unsigned)(lines < 1 ? 1 : lines > (1 << 30) ? (1 << 30) : lines);
}

/*
 * Per-channel sums of a tensor seen as [R][C][I], element (r, ch, t) at
 * (r C + ch) I + t: batchnorm's group (R its samples times the dims
 * between samples and channels, I the dims after) and layernorm's weight
 * gradient (R rows, C features, I 1).  Two layouts of the work:
 *
 * - columns (I < CHAN_COL_I): a row's C I floats are columns; a block of
 *   32 x CHAN_COL_ROWS threads takes 32 columns of one chunk of rows,
 *   thread (x, y) a column and every CHAN_COL_ROWS-th row from y, so a
 *   warp reads 32 neighbouring floats.  Partials per chunk and column.
 * - planes (I >= CHAN_COL_I): a block of CHAN_THREADS takes one channel
 *   over one chunk of rows, groups of W threads a plane (I contiguous
 *   floats) each, four floats at a time where vec.  Partials per chunk
 *   and channel.
 *
 * The chunks (P) are as many as fill the GPU with about CHAN_BLOCKS
 * blocks, bounded so that the partials stay small (chans_floats()).  A
 * functor F says what is summed or written: f.coef(ch) the channel's
 * constants k, f.sum<N>(off, r, k, acc) adds elements [off, off + N) of
 * row r to two sums, f.put<N>(off, k) writes them.
 */
#define CHAN_COL_I 32
#define CHAN_COL_ROWS 8
#define CHAN_THREADS 256
#define CHAN_BLOCKS 1024
#define CHAN_PARTS_MAX 65536 /* partial pairs per column, columns layout */

struct chans {
	int64_t R, C, I;
	int64_t P; /* chunks of rows */
	int W;     /* planes: threads per plane, a power of 2 from WARP to CHAN_THREADS */
	int col;   /* the columns layout */
	int vec;   /* planes: I % 4 == 0 and the pointers 16-byte aligned */
};

static inline int64_t ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

static inline int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The plan of a reduction over R rows.  P grows with R, so the scratch
 * sized for the most rows holds the partials of fewer. */
static inline struct chans chans_plan(int64_t R, int64_t C, int64_t I)
{
	struct chans s = { R, C, I, 1, WARP, I < CHAN_COL_I, 0 };
	int64_t c = C > 1 ? C : 1; /* an empty shard sizes like one channel */

	if (s.col) {
		int64_t L = c * (I > 1 ? I : 1), most = CHAN_PARTS_MAX / L;

		s.P = clamp64(ceil_div(R, 4 * CHAN_COL_ROWS), 1,
			      clamp64(ceil_div(CHAN_BLOCKS, ceil_div(L, WARP)), 1, most > 1 ? most : 1));
	} else {
		while (s.W < CHAN_THREADS && 4 * (int64_t)s.W < I)
			s.W *= 2;
		s.P = clamp64(ceil_div(R, CHAN_THREADS / s.W), 1, ceil_div(CHAN_BLOCKS, c));
	}
	return s;
}

/* the scratch floats of the partials: a pair of doubles per chunk and
 * column (channel), and one float to align them to 8 bytes */
static inline int64_t chans_floats(const struct chans &s)
{
	return 4 * s.P * s.C * (s.col ? s.I : 1) + 1;
}

static inline double *chans_part(float *scratch)
{
	return (double *)(((uintptr_t)scratch + 7) & ~(uintptr_t)7);
}

static inline void chans_grid(const struct chans &s, dim3 *grid, dim3 *block)
{
	if (s.col) {
		*block = dim3(WARP, CHAN_COL_ROWS);
		*grid = dim3((unsigned)ceil_div(s.C * s.I, WARP), (unsigned)s.P);
	} else {
		*block = dim3(CHAN_THREADS);
		*grid = dim3((unsigned)s.P, (unsigned)(s.C < 65535 ? s.C : 65535));
	}
}

/* the rows of chunk p */
static __device__ __forceinline__ void chans_rows(const struct chans &s, int64_t p, int64_t *r0,
						  int64_t *r1)
{
	*r0 = p * s.R / s.P;
	*r1 = (p + 1) * s.R / s.P;
}

/* planes: v(off, r, w) over channel ch's planes in chunk blockIdx.x */
template <class V>
static __device__ __forceinline__ void plane_walk(const struct chans &s, int64_t ch, V v)
{
	int g = threadIdx.x / s.W, lane = threadIdx.x % s.W, groups = blockDim.x / s.W;
	int64_t r0, r1;

	chans_rows(s, blockIdx.x, &r0, &r1);
	for (int64_t r = r0 + g; r < r1; r += groups) {
		int64_t base = (r * s.C + ch) * s.I;

		if (s.vec)
			for (int64_t t = 4 * lane; t < s.I; t += 4 * s.W)
				v(base + t, r, four{});
		else
			for (int64_t t = lane; t < s.I; t += s.W)
				v(base + t, r, one{});
	}
}

/* Partials: columns layout part[2 (p C I + j) + 0/1] for column j,
 * planes layout part[2 (p C + ch) + 0/1]. */
template <class F>
static __global__ void __launch_bounds__(CHAN_THREADS)
	chan_sum_kernel(struct chans s, F f, double *part)
{
	if (s.col) {
		__shared__ dsum2 rows_part[CHAN_COL_ROWS][WARP];
		int64_t L = s.C * s.I, j = (int64_t)blockIdx.x * WARP + threadIdx.x, r0, r1;
		dsum2 acc = { 0, 0 };

		chans_rows(s, blockIdx.y, &r0, &r1);
		if (j < L) {
			auto k = f.coef(j / s.I);

			for (int64_t r = r0 + threadIdx.y; r < r1; r += CHAN_COL_ROWS)
				f.template sum<1>(r * L + j, r, k, acc);
		}
		rows_part[threadIdx.y][threadIdx.x] = acc;
		__syncthreads();
		if (threadIdx.y == 0 && j < L) {
			for (int y = 1; y < CHAN_COL_ROWS; y++)
				acc = join(acc, rows_part[y][threadIdx.x]);
			part[2 * (blockIdx.y * L + j)] = acc.a;
			part[2 * (blockIdx.y * L + j) + 1] = acc.b;
		}
		return;
	}
	for (int64_t ch = blockIdx.y; ch < s.C; ch += gridDim.y) {
		auto k = f.coef(ch);
		dsum2 acc = { 0, 0 };

		plane_walk(s, ch, [&](int64_t off, int64_t r, auto w) {
			f.template sum<decltype(w)::n>(off, r, k, acc);
		});
		acc = block_join(acc);
		if (threadIdx.x == 0) {
			part[2 * (blockIdx.x * s.C + ch)] = acc.a;
			part[2 * (blockIdx.x * s.C + ch) + 1] = acc.b;
		}
	}
}

/* f.put over every element, walked as chan_sum_kernel walks them */
template <class F>
static __global__ void __launch_bounds__(CHAN_THREADS) chan_put_kernel(struct chans s, F f)
{
	if (s.col) {
		int64_t L = s.C * s.I, j = (int64_t)blockIdx.x * WARP + threadIdx.x, r0, r1;

		if (j >= L)
			return;
		chans_rows(s, blockIdx.y, &r0, &r1);
		auto k = f.coef(j / s.I);

		for (int64_t r = r0 + threadIdx.y; r < r1; r += CHAN_COL_ROWS)
			f.template put<1>(r * L + j, k);
		return;
	}
	for (int64_t ch = blockIdx.y; ch < s.C; ch += gridDim.y) {
		auto k = f.coef(ch);

		plane_walk(s, ch, [&](int64_t off, int64_t, auto w) {
			f.template put<decltype(w)::n>(off, k);
		});
	}
}

/* the two sums of channel ch: its partials added in a fixed order */
static __device__ dsum2 chan_total(const struct chans &s, const double *part, int64_t ch)
{
	int64_t q = s.col ? s.I : 1;
	dsum2 v = { 0, 0 };

	for (int64_t p = 0; p < s.P; p++)
		for (int64_t t = 0; t < q; t++) {
			const double *e = part + 2 * ((p * s.C + ch) * q + t);

			v.a += e[0];
			v.b += e[1];
		}
	return v;
}

template <class F> static int chan_sums(const struct chans &s, const F &f, double *part)
{
	dim3 grid, block;

	chans_grid(s, &grid, &block);
	chan_sum_kernel<<<grid, block, 0, cuda_ctx.stream>>>(s, f, part);
	LAUNCH_CHECK();
	return AP_OK;
}

template <class F> static int chan_puts(const struct chans &s, const F &f)
{
	dim3 grid, block;

	chans_grid(s, &grid, &block);
	chan_put_kernel<<<grid, block, 0, cuda_ctx.stream>>>(s, f);
	LAUNCH_CHECK();
	return AP_OK;
}

#endif
