/*
 * CUDA kernels of the dense operators, with the CPU backend's layouts
 * (cpu_dense.c): linear keeps W[out][in] then b[out], embedding its table
 * [vocab][out]; every product is a cuBLAS SGEMM (matmul's batch one
 * strided-batched call; cuda_attn.cu's projections are linear's), in the
 * math mode of the command's precision (cuda_blas_math()).  cuBLAS is
 * column-major: a row-major C = A B is the column-major C^T = B^T A^T,
 * so every call swaps the operands.
 */
#include "cuda_ctx.cuh"
#include "kern_dims.h"

#include <limits.h>

int cuda_gemm_rm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
		 long long sa, const float *b, int ldb, long long sb, float beta, float *c,
		 int ldc, long long sc, int batch)
{
	cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;

	if (m <= 0 || n <= 0 || batch <= 0)
		return AP_OK;
	if (cuda_blas_math())
		return AP_EFAIL;
	if (batch == 1)
		CUBLAS_CHECK(cublasSgemm(cuda_ctx.blas, ob, oa, n, m, k, &alpha, b, ldb, a, lda,
					 &beta, c, ldc));
	else
		CUBLAS_CHECK(cublasSgemmStridedBatched(cuda_ctx.blas, ob, oa, n, m, k, &alpha, b,
						       ldb, sb, a, lda, sa, &beta, c, ldc, sc,
						       batch));
	return AP_OK;
}

extern "C" void cuda_gemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
			  const float *a, int lda, const float *b, int ldb, float beta, float *c,
			  int ldc)
{
	/* the table's gemm returns nothing: the failure is reported here */
	(void)cuda_gemm_rm(trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0,
			   1);
}

/* y[r][j] = bias[j] */
static __global__ void rows_kernel(float *y, const float *bias, int64_t rows, int64_t cout)
{
	GRID_STRIDE(i, rows * cout)
		y[i] = bias[i % cout];
}

/* A vector of at least n ones on the device, kept for the process:
 * grown by doubling in stream order (cudaMallocAsync/cudaFreeAsync), so
 * growing waits for nothing another stream runs. */
static int ones(int64_t n, const float **out)
{
	static float *v;
	static int64_t len;

	if (n > len) {
		int64_t m = len ? len : 4096;
		float *p;

		while (m < n)
			m *= 2;
		CUDA_CHECK(cudaMallocAsync((void **)&p, (size_t)m * sizeof(float), cuda_ctx.stream));
		if (cuda_fill(p, m, 1.0f)) {
			cudaFreeAsync(p, cuda_ctx.stream);
			return AP_EFAIL;
		}
		if (v)
			CUDA_CHECK(cudaFreeAsync(v, cuda_ctx.stream));
		v = p;
		len = m;
	}
	*out = v;
	return AP_OK;
}

/* db[j] += sum over rows of m[r][j], as one GEMV against a vector of ones:
 * the rows are read once by the whole device (one thread a column walking
 * every row, as before, left all but a few SMs idle). */
int cuda_colsum_add(float *db, const float *m, int64_t rows, int64_t cols)
{
	const float one = 1.0f, *x = NULL;

	if (rows <= 0 || cols <= 0)
		return AP_OK;
	if (rows > INT_MAX || cols > INT_MAX)
		return ap_err(AP_EFAIL, "cuda", 0, "column sum of %lld x %lld: too large for cuBLAS",
			      (long long)rows, (long long)cols);
	if (ones(rows, &x) || cuda_blas_math())
		return AP_EFAIL;
	/* row-major m is the column-major cols x rows matrix, ld cols */
	CUBLAS_CHECK(cublasSgemv(cuda_ctx.blas, CUBLAS_OP_N, (int)cols, (int)rows, &one, m,
				 (int)cols, x, 1, &one, db, 1));
	return AP_OK;
}

int cuda_project(const float *x, int rows, int cin, int cout, const float *w,
		 const float *bias, float *y)
{
	if (bias && (int64_t)rows * cout > 0) {
		rows_kernel<<<cuda_blocks((int64_t)rows * cout), CUDA_THREADS, 0, cuda_ctx.stream>>>(
			y, bias, rows, cout);
		LAUNCH_CHECK();
	}
	return cuda_gemm_rm(0, 1, rows, cout, cin, 1.0f, x, cin, 0, w, cin, 0, bias ? 1.0f : 0.0f,
			    y, cout, 0, 1);
}

int cuda_project_bwd(const float *x, int rows, int cin, int cout, const float *w,
		     const float *dy, float *dw, float *dbias, float *dx, float dx_beta)
{
	if (dx && cuda_gemm_rm(0, 0, rows, cin, cout, 1.0f, dy, cout, 0, w, cin, 0, dx_beta, dx,
			       cin, 0, 1))
		return AP_EFAIL;
	if (cuda_gemm_rm(1, 0, cout, cin, rows, 1.0f, dy, cout, 0, x, cin, 0, 1.0f, dw, cin, 0, 1))
		return AP_EFAIL;
	return dbias ? cuda_colsum_add(dbias, dy, rows, cout) : AP_OK;
}

static int linear_fwd(const struct kern *k, struct kbufs *b)
{
	int rows, cin, cout;

	linear_dims(k, &rows, &cin, &cout);
	return cuda_project(b->in[0], rows, cin, cout, b->w,
			    k->op->a.bias ? b->w + (int64_t)cout * cin : NULL, b->out);
}

static int linear_bwd(const struct kern *k, struct kbufs *b)
{
	int rows, cin, cout;

	linear_dims(k, &rows, &cin, &cout);
	return cuda_project_bwd(b->in[0], rows, cin, cout, b->w, b->dout, b->dw,
				k->op->a.bias ? b->dw + (int64_t)cout * cin : NULL, b->din[0], 0.0f);
}

extern "C" const struct kernel_ops cuda_linear = { linear_fwd, linear_bwd, NULL, 0 };

static int matmul_fwd(const struct kern *k, struct kbufs *b)
{
	struct mm d = mm_dims(k);
	int tb = k->op->a.trans_b;

	return cuda_gemm_rm(0, tb, d.m, d.n, d.kk, 1.0f, b->in[0], d.kk, (long long)d.m * d.kk,
			    b->in[1], tb ? d.kk : d.n, (long long)d.kk * d.n, 0.0f, b->out, d.n,
			    (long long)d.m * d.n, d.batch);
}

/* y = a b: da = dy b^T, db = a^T dy; y = a b^T: da = dy b, db = dy^T a */
static int matmul_bwd(const struct kern *k, struct kbufs *b)
{
	struct mm d = mm_dims(k);
	int tb = k->op->a.trans_b;
	long long sa = (long long)d.m * d.kk, sb = (long long)d.kk * d.n, sy = (long long)d.m * d.n;

	if (b->din[0] && cuda_gemm_rm(0, !tb, d.m, d.kk, d.n, 1.0f, b->dout, d.n, sy, b->in[1],
				      tb ? d.kk : d.n, sb, 0.0f, b->din[0], d.kk, sa, d.batch))
		return AP_EFAIL;
	if (b->din[1] && !tb)
		return cuda_gemm_rm(1, 0, d.kk, d.n, d.m, 1.0f, b->in[0], d.kk, sa, b->dout, d.n, sy,
				    0.0f, b->din[1], d.n, sb, d.batch);
	if (b->din[1])
		return cuda_gemm_rm(1, 0, d.n, d.kk, d.m, 1.0f, b->dout, d.n, sy, b->in[0], d.kk, sa,
				    0.0f, b->din[1], d.kk, sb, d.batch);
	return AP_OK;
}

extern "C" const struct kernel_ops cuda_matmul = { matmul_fwd, matmul_bwd, NULL, 0 };

/* embedding: ids (n[, l]) -> (n[, l], out); an id outside the vocabulary
 * sets the flag */
static __global__ void embed_fwd_kernel(const float *ids, const float *table, float *y,
					int64_t nid, int64_t cout, int64_t vocab, int *flag)
{
	GRID_STRIDE(e, nid * cout) {
		int64_t id = (int64_t)ids[e / cout];

		if (id < 0 || id >= vocab) {
			*flag = 1;
			continue;
		}
		y[e] = table[id * cout + e % cout];
	}
}

/* rows of the table gather the gradients of their tokens; a token may
 * repeat, so the adds are atomic */
static __global__ void embed_bwd_kernel(const float *ids, const float *dy, float *dtable,
					int64_t nid, int64_t cout, int64_t vocab)
{
	GRID_STRIDE(e, nid * cout) {
		int64_t id = (int64_t)ids[e / cout];

		if (id >= 0 && id < vocab)
			atomicAdd(&dtable[id * cout + e % cout], dy[e]);
	}
}

static int embedding_fwd(const struct kern *k, struct kbufs *b)
{
	int64_t nid = shape_elems(&k->in[0]), cout = k->out.size[k->out.rank - 1];

	if (cuda_flag_clear())
		return AP_EFAIL;
	embed_fwd_kernel<<<cuda_blocks(nid * cout), CUDA_THREADS, 0, cuda_ctx.stream>>>(
		b->in[0], b->w, b->out, nid, cout, k->op->a.vocab, cuda_ctx.flag);
	LAUNCH_CHECK();
	return cuda_flag_check("embedding: a token id outside the vocabulary");
}

static int embedding_bwd(const struct kern *k, struct kbufs *b)
{
	int64_t nid = shape_elems(&k->in[0]), cout = k->out.size[k->out.rank - 1];

	embed_bwd_kernel<<<cuda_blocks(nid * cout), CUDA_THREADS, 0, cuda_ctx.stream>>>(
		b->in[0], b->dout, b->dw, nid, cout, k->op->a.vocab);
	LAUNCH_CHECK();
	return AP_OK;
}

extern "C" const struct kernel_ops cuda_embedding = { embedding_fwd, embedding_bwd, NULL, 0 };
