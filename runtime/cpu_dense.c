/*
 * CPU kernels of the dense operators: linear, batched matmul and embedding,
 * every product through GEMM.  Parameters follow the output channel
 * (backend.h): linear keeps W[out][in] then b[out], so a c-split shard's
 * rows are a contiguous slice; embedding keeps its table [vocab][out] with
 * the shard's columns.  Under tensor parallelism (struct kern) a
 * row-parallel linear holds W[out][its inputs] and b[out], and a
 * vocabulary-parallel embedding the rows of its part of the vocabulary.
 */
#include "cpu_kern.h"
#include "kern_dims.h"

#include <string.h>

static int linear_fwd(const struct kern *k, struct kbufs *b)
{
	int rows, cin, cout;

	linear_dims(k, &rows, &cin, &cout);
	if (tp_adds_bias(k)) {
		const float *bias = b->w + (int64_t)cout * cin;

		for (int r = 0; r < rows; r++)
			memcpy(b->out + (int64_t)r * cout, bias, (size_t)cout * sizeof(float));
	}
	cpu_gemm(0, 1, rows, cout, cin, 1.0f, b->in[0], cin, b->w, cin,
		 tp_adds_bias(k) ? 1.0f : 0.0f, b->out, cout);
	return 0;
}

static int linear_bwd(const struct kern *k, struct kbufs *b)
{
	int rows, cin, cout;

	linear_dims(k, &rows, &cin, &cout);
	if (b->din[0])
		cpu_gemm(0, 0, rows, cin, cout, 1.0f, b->dout, cout, b->w, cin, 0.0f,
			 b->din[0], cin);
	if (!b->dw)
		return 0;
	cpu_gemm(1, 0, cout, cin, rows, 1.0f, b->dout, cout, b->in[0], cin, 1.0f,
		 b->dw, cin);
	/* the bias of a row-parallel linear: the same gradient on every
	 * member, each holding the whole bias */
	if (k->op->a.bias) {
		float *db = b->dw + (int64_t)cout * cin;

		for (int r = 0; r < rows; r++)
			for (int j = 0; j < cout; j++)
				db[j] += b->dout[(int64_t)r * cout + j];
	}
	return 0;
}

const struct kernel_ops cpu_linear = { linear_fwd, linear_bwd, NULL, 1 };

static int matmul_fwd(const struct kern *k, struct kbufs *b)
{
	struct mm d = mm_dims(k);
	int tb = k->op->a.trans_b;

	for (int i = 0; i < d.batch; i++)
		cpu_gemm(0, tb, d.m, d.n, d.kk, 1.0f, b->in[0] + (int64_t)i * d.m * d.kk,
			 d.kk, b->in[1] + (int64_t)i * d.kk * d.n, tb ? d.kk : d.n, 0.0f,
			 b->out + (int64_t)i * d.m * d.n, d.n);
	return 0;
}

static int matmul_bwd(const struct kern *k, struct kbufs *b)
{
	struct mm d = mm_dims(k);
	int tb = k->op->a.trans_b;

	for (int i = 0; i < d.batch; i++) {
		const float *a = b->in[0] + (int64_t)i * d.m * d.kk;
		const float *bb = b->in[1] + (int64_t)i * d.kk * d.n;
		const float *dy = b->dout + (int64_t)i * d.m * d.n;

		/* y = a b: da = dy b^T, db = a^T dy; y = a b^T: da = dy b,
		 * db = dy^T a */
		if (b->din[0])
			cpu_gemm(0, !tb, d.m, d.kk, d.n, 1.0f, dy, d.n, bb, tb ? d.kk : d.n,
				 0.0f, b->din[0] + (int64_t)i * d.m * d.kk, d.kk);
		if (b->din[1] && !tb)
			cpu_gemm(1, 0, d.kk, d.n, d.m, 1.0f, a, d.kk, dy, d.n, 0.0f,
				 b->din[1] + (int64_t)i * d.kk * d.n, d.n);
		else if (b->din[1])
			cpu_gemm(1, 0, d.n, d.kk, d.m, 1.0f, dy, d.n, a, d.kk, 0.0f,
				 b->din[1] + (int64_t)i * d.kk * d.n, d.kk);
	}
	return 0;
}

const struct kernel_ops cpu_matmul = { matmul_fwd, matmul_bwd, NULL, 0 };

/* embedding: ids (n[, l]) -> (n[, l], out); ids need no gradient.  The
 * shard's rows are ids [v0, v0 + vn): all of them, or under tensor
 * parallelism its part of the vocabulary, which writes zeros for the
 * other ids (the group's sum has each row once). */
static int embedding_fwd(const struct kern *k, struct kbufs *b)
{
	int64_t nid = shape_elems(&k->in[0]);
	int64_t cout = k->out.size[k->out.rank - 1], vocab = k->op->a.vocab, v0, vn;

	tp_part(k, vocab, &v0, &vn);
	for (int64_t i = 0; i < nid; i++) {
		int64_t id = (int64_t)b->in[0][i] - v0;

		if (id + v0 < 0 || id + v0 >= vocab)
			return -1;
		if (id >= 0 && id < vn)
			memcpy(b->out + i * cout, b->w + id * cout, (size_t)cout * sizeof(float));
		else
			memset(b->out + i * cout, 0, (size_t)cout * sizeof(float));
	}
	return 0;
}

static int embedding_bwd(const struct kern *k, struct kbufs *b)
{
	int64_t nid = shape_elems(&k->in[0]);
	int64_t cout = k->out.size[k->out.rank - 1], v0, vn;

	if (!b->dw)
		return 0;
	tp_part(k, k->op->a.vocab, &v0, &vn);
	for (int64_t i = 0; i < nid; i++) {
		int64_t id = (int64_t)b->in[0][i] - v0;
		float *row = b->dw + id * cout;

		if (id < 0 || id >= vn)
			continue;
		for (int64_t j = 0; j < cout; j++)
			row[j] += b->dout[i * cout + j];
	}
	return 0;
}

const struct kernel_ops cpu_embedding = { embedding_fwd, embedding_bwd, NULL, 1 };
