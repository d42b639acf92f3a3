/*
 * CUDA kernels of the element-wise operators, with exactly the CPU
 * backend's semantics (cpu_elem.c): relu (the gradient passes where the
 * input is > 0), exact-erf gelu, tanh, sigmoid, sums and products of
 * equally shaped inputs (products' gradients without division), concat
 * as strided 2-D copies, the identity of flatten and reshape, and dropout
 * with the mask hashed from the element's position in the whole batch
 * (rng.h, the same function on the device), so a GPU shard draws the mask
 * a CPU rank draws.
 *
 * They are bound by memory bandwidth: every element-wise kernel moves four
 * floats per thread step as float4 where the sizes and pointers allow
 * (cuda_vec.cuh), and reads no input its formula does not need.
 */
#include "cuda_ctx.cuh"
#include "cuda_vec.cuh"

extern "C" {
#include "rng.h"
}

static int64_t nel(const struct kern *k)
{
	return shape_elems(&k->out);
}

/* Runs f over n elements, f.run<N>(i) taking [i, i + N): four at a time,
 * float4 loads and stores, where n is a multiple of 4 and every pointer
 * f holds is 16-byte aligned (f.aligned()), else one at a time.  A grid
 * stride, so any n fits the grid. */
template <int N, class F> static __global__ void each_kernel(F f, int64_t groups)
{
	GRID_STRIDE(g, groups)
		f.template run<N>(g * N);
}

template <class F> static int each(const F &f, int64_t n)
{
	if (n <= 0)
		return AP_OK;
	if (n % 4 == 0 && f.aligned())
		each_kernel<4><<<cuda_blocks(n / 4), CUDA_THREADS, 0, cuda_ctx.stream>>>(f, n / 4);
	else
		each_kernel<1><<<cuda_blocks(n), CUDA_THREADS, 0, cuda_ctx.stream>>>(f, n);
	LAUNCH_CHECK();
	return AP_OK;
}

#define INV_SQRT2 0.70710678118654752f
#define INV_SQRT2PI 0.39894228040143268f

/* Activations as functors: y = f(x), dx = g(x, y, dy).  relu passes dy
 * itself where x > 0 (a product with 1 would not keep every NaN and
 * signed zero as the CPU does); the others multiply dy by f'.  reads_x
 * and reads_y say which of x and y g reads: the backward loads no
 * other, a third less memory traffic. */
struct relu_f {
	static constexpr bool reads_x = true, reads_y = false;
	__device__ static float f(float x) { return x > 0.0f ? x : 0.0f; }
	__device__ static float g(float x, float, float dy) { return x > 0.0f ? dy : 0.0f; }
};
struct gelu_f {
	static constexpr bool reads_x = true, reads_y = false;
	__device__ static float f(float x) { return 0.5f * x * (1.0f + erff(x * INV_SQRT2)); }
	__device__ static float g(float x, float, float dy)
	{
		return dy * (0.5f * (1.0f + erff(x * INV_SQRT2)) +
			     x * INV_SQRT2PI * expf(-0.5f * x * x));
	}
};
struct tanh_f {
	static constexpr bool reads_x = false, reads_y = true;
	__device__ static float f(float x) { return tanhf(x); }
	__device__ static float g(float, float y, float dy) { return dy * (1.0f - y * y); }
};
struct sigmoid_f {
	static constexpr bool reads_x = false, reads_y = true;
	__device__ static float f(float x) { return 1.0f / (1.0f + expf(-x)); }
	__device__ static float g(float, float y, float dy) { return dy * (y * (1.0f - y)); }
};

template <class F> struct act_fwd_op {
	const float *x;
	float *y;

	bool aligned() const { return aligned16(x) && aligned16(y); }
	template <int N> __device__ void run(int64_t i) const
	{
		fvec<N> a = ld<N>(x + i);

		for (int j = 0; j < N; j++)
			a.v[j] = F::f(a.v[j]);
		st<N>(y + i, a);
	}
};

template <class F> struct act_bwd_op {
	const float *x, *y, *dy;
	float *dx;

	bool aligned() const
	{
		return aligned16(x) && aligned16(y) && aligned16(dy) && aligned16(dx);
	}
	template <int N> __device__ void run(int64_t i) const
	{
		fvec<N> g = ld<N>(dy + i), a = {}, b = {};

		if constexpr (F::reads_x)
			a = ld<N>(x + i);
		if constexpr (F::reads_y)
			b = ld<N>(y + i);
		for (int j = 0; j < N; j++)
			g.v[j] = F::g(a.v[j], b.v[j], g.v[j]);
		st<N>(dx + i, g);
	}
};

template <class F> static int act_fwd(const struct kern *k, struct kbufs *b)
{
	return each(act_fwd_op<F>{ b->in[0], b->out }, nel(k));
}

template <class F> static int act_bwd(const struct kern *k, struct kbufs *b)
{
	if (!b->din[0])
		return AP_OK;
	return each(act_bwd_op<F>{ b->in[0], b->out, b->dout, b->din[0] }, nel(k));
}

extern "C" const struct kernel_ops cuda_relu = { act_fwd<relu_f>, act_bwd<relu_f>, NULL, 0 };
extern "C" const struct kernel_ops cuda_gelu = { act_fwd<gelu_f>, act_bwd<gelu_f>, NULL, 0 };
extern "C" const struct kernel_ops cuda_tanh = { act_fwd<tanh_f>, act_bwd<tanh_f>, NULL, 0 };
extern "C" const struct kernel_ops cuda_sigmoid = { act_fwd<sigmoid_f>, act_bwd<sigmoid_f>,
						     NULL, 0 };

/* The inputs of add and mul, by value into the kernel.  The kernels
 * index them only in loops unrolled over KERN_MAX_IN, so every index is
 * a constant: an array in the kernel's parameters indexed at run time
 * would be copied to local memory and read from there per element. */
struct ins {
	const float *p[KERN_MAX_IN];
	int n;

	bool aligned() const
	{
		for (int j = 0; j < n; j++)
			if (!aligned16(p[j]))
				return false;
		return true;
	}
};

static struct ins ins_of(const struct kern *k, const struct kbufs *b)
{
	struct ins v = {};

	v.n = k->nin;
	for (int j = 0; j < k->nin; j++)
		v.p[j] = b->in[j];
	return v;
}

/* in the CPU's order: ((x0 + x1) + x2) .. and ((x0 x1) x2) .. */
struct sum_op {
	struct ins v;
	float *y;
	int mul;

	bool aligned() const { return v.aligned() && aligned16(y); }
	template <int N> __device__ void run(int64_t i) const
	{
		fvec<N> s = ld<N>(v.p[0] + i);

#pragma unroll
		for (int j = 1; j < KERN_MAX_IN; j++) {
			if (j >= v.n)
				continue;
			fvec<N> a = ld<N>(v.p[j] + i);

			for (int e = 0; e < N; e++)
				s.v[e] = mul ? s.v[e] * a.v[e] : s.v[e] + a.v[e];
		}
		st<N>(y + i, s);
	}
};

static int add_fwd(const struct kern *k, struct kbufs *b)
{
	return each(sum_op{ ins_of(k, b), b->out, 0 }, nel(k));
}

static int add_bwd(const struct kern *k, struct kbufs *b)
{
	for (int j = 0; j < k->nin; j++)
		if (b->din[j])
			CUDA_CHECK(cudaMemcpyAsync(b->din[j], b->dout, (size_t)nel(k) * sizeof(float),
						   cudaMemcpyDeviceToDevice, cuda_ctx.stream));
	return AP_OK;
}

extern "C" const struct kernel_ops cuda_add = { add_fwd, add_bwd, NULL, 0 };

/* d/dx_j of a product: dy times the other inputs, in the CPU's order */
struct mul_grad_op {
	struct ins v;
	int j;
	const float *dy;
	float *dx;

	bool aligned() const { return v.aligned() && aligned16(dy) && aligned16(dx); }
	template <int N> __device__ void run(int64_t i) const
	{
		fvec<N> g = ld<N>(dy + i);

#pragma unroll
		for (int o = 0; o < KERN_MAX_IN; o++) {
			if (o >= v.n || o == j)
				continue;
			fvec<N> a = ld<N>(v.p[o] + i);

			for (int e = 0; e < N; e++)
				g.v[e] *= a.v[e];
		}
		st<N>(dx + i, g);
	}
};

static int mul_fwd(const struct kern *k, struct kbufs *b)
{
	return each(sum_op{ ins_of(k, b), b->out, 1 }, nel(k));
}

static int mul_bwd(const struct kern *k, struct kbufs *b)
{
	for (int j = 0, st; j < k->nin; j++)
		if (b->din[j] && (st = each(mul_grad_op{ ins_of(k, b), j, b->dout, b->din[j] }, nel(k))))
			return st;
	return AP_OK;
}

extern "C" const struct kernel_ops cuda_mul = { mul_fwd, mul_bwd, NULL, 0 };

/* concat along dim di: input j is [outer][size_j][inner], a block of
 * rows in every outer slice of the output: one 2-D copy per input */
static int concat_move(const struct kern *k, struct kbufs *b, int bwd)
{
	enum dim_kind d = k->op->a.axis == NDIMS ? DIM_C : k->op->a.axis;
	int di = shape_dim(&k->out, d);
	int64_t outer = 1, inner = 1, at = 0, row;

	for (int i = 0; i < di; i++)
		outer *= k->out.size[i];
	for (int i = di + 1; i < k->out.rank; i++)
		inner *= k->out.size[i];
	row = k->out.size[di] * inner;
	for (int j = 0; j < k->nin; j++) {
		int64_t sz = k->in[j].size[di] * inner;
		size_t w = (size_t)sz * sizeof(float), pitch = (size_t)row * sizeof(float);

		if (bwd && b->din[j])
			CUDA_CHECK(cudaMemcpy2DAsync(b->din[j], w, b->dout + at, pitch, w,
						     (size_t)outer, cudaMemcpyDeviceToDevice,
						     cuda_ctx.stream));
		else if (!bwd)
			CUDA_CHECK(cudaMemcpy2DAsync(b->out + at, pitch, b->in[j], w, w,
						     (size_t)outer, cudaMemcpyDeviceToDevice,
						     cuda_ctx.stream));
		at += sz;
	}
	return AP_OK;
}

static int concat_fwd(const struct kern *k, struct kbufs *b)
{
	return concat_move(k, b, 0);
}

static int concat_bwd(const struct kern *k, struct kbufs *b)
{
	return concat_move(k, b, 1);
}

extern "C" const struct kernel_ops cuda_concat = { concat_fwd, concat_bwd, NULL, 0 };

static int identity_fwd(const struct kern *k, struct kbufs *b)
{
	return cuda_copy(b->out, b->in[0], nel(k));
}

static int identity_bwd(const struct kern *k, struct kbufs *b)
{
	return b->din[0] ? cuda_copy(b->din[0], b->dout, nel(k)) : AP_OK;
}

extern "C" const struct kernel_ops cuda_identity = { identity_fwd, identity_bwd, NULL, 0 };

/* Where the local output sits in the batch (backend.h's glo, gsize) */
struct drop_args {
	int rank;
	int64_t size[MAX_RANK], glo[MAX_RANK], gsize[MAX_RANK];
	int64_t n0;
	uint64_t salt;
	double p;
};

/* cpu_elem.c's keep_scale() */
static __device__ float keep_scale(const struct drop_args &a, int64_t i)
{
	int64_t g = 0, rest = i, coord[MAX_RANK];
	double u;

	for (int d = a.rank - 1; d >= 0; d--) {
		coord[d] = rest % a.size[d];
		rest /= a.size[d];
	}
	for (int d = 0; d < a.rank; d++)
		g = g * a.gsize[d] + a.glo[d] + coord[d] + (d == 0 ? a.n0 : 0);
	u = rng_unit(a.salt ^ rng_mix((uint64_t)g));
	return u < a.p ? 0.0f : (float)(1.0 / (1.0 - a.p));
}

/* y = x keep_scale, as the CPU's loop */
struct drop_op {
	struct drop_args a;
	const float *x;
	float *y;

	bool aligned() const { return aligned16(x) && aligned16(y); }
	template <int N> __device__ void run(int64_t i) const
	{
		fvec<N> v = ld<N>(x + i);

		for (int e = 0; e < N; e++)
			v.v[e] *= keep_scale(a, i + e);
		st<N>(y + i, v);
	}
};

static int dropout_run(const struct kern *k, struct kbufs *b, const float *x, float *y)
{
	struct drop_args a = {};

	a.rank = k->out.rank;
	for (int d = 0; d < a.rank; d++) {
		a.size[d] = k->out.size[d];
		a.glo[d] = k->glo[d];
		a.gsize[d] = k->gsize[d];
	}
	a.n0 = b->n0;
	a.salt = rng_mix(b->salt ^ (uint64_t)k->op_index);
	a.p = k->op->a.p;
	return each(drop_op{ a, x, y }, nel(k));
}

static int dropout_fwd(const struct kern *k, struct kbufs *b)
{
	return dropout_run(k, b, b->in[0], b->out);
}

static int dropout_bwd(const struct kern *k, struct kbufs *b)
{
	return b->din[0] ? dropout_run(k, b, b->dout, b->din[0]) : AP_OK;
}

extern "C" const struct kernel_ops cuda_dropout = { dropout_fwd, dropout_bwd, NULL, 0 };
