/*
 * CPU kernels of the normalising operators: layer normalisation over the
 * features (eps 1e-5, scale then shift, PyTorch's defaults; parameters
 * gamma[c] then beta[c]), softmax along one dim, and the softmax
 * cross-entropy loss.  Sums run in double, so a shard and the whole tensor
 * agree to float32 round-off whatever the split.
 *
 * The loss writes each position's -log p(label) as its output; the
 * executor seeds the backward with dout = 1 / (positions in the batch), so
 * the gradient is that of the mean loss over the whole batch however the
 * batch is split into shards and micro-batches.
 */
#include "cpu_kern.h"

#include <math.h>

#define LN_EPS 1e-5

/* features are the last dim of a layernorm's input */
static void rows_of(const struct shape *s, int64_t *rows, int64_t *c)
{
	*c = s->size[s->rank - 1];
	*rows = shape_elems(s) / *c;
}

static int64_t layernorm_ws(const struct kern *k)
{
	int64_t rows, c;

	rows_of(&k->out, &rows, &c);
	return 2 * rows; /* mean and 1/std of every row */
}

static int layernorm_fwd(const struct kern *k, struct kbufs *b)
{
	int64_t rows, c;
	const float *gamma = b->w, *beta = b->w;

	rows_of(&k->out, &rows, &c);
	beta = gamma + c;
	for (int64_t r = 0; r < rows; r++) {
		const float *x = b->in[0] + r * c;
		float *y = b->out + r * c;
		double s = 0, s2 = 0, mean, rstd;

		for (int64_t j = 0; j < c; j++)
			s += x[j];
		mean = s / (double)c;
		for (int64_t j = 0; j < c; j++)
			s2 += (x[j] - mean) * (x[j] - mean);
		rstd = 1.0 / sqrt(s2 / (double)c + LN_EPS);
		for (int64_t j = 0; j < c; j++)
			y[j] = (float)((x[j] - mean) * rstd) * gamma[j] + beta[j];
		b->ws[2 * r] = (float)mean;
		b->ws[2 * r + 1] = (float)rstd;
	}
	return 0;
}

static int layernorm_bwd(const struct kern *k, struct kbufs *b)
{
	int64_t rows, c;
	const float *gamma = b->w;
	float *dgamma = b->dw, *dbeta;

	rows_of(&k->out, &rows, &c);
	dbeta = dgamma + c;
	for (int64_t r = 0; r < rows; r++) {
		const float *x = b->in[0] + r * c, *dy = b->dout + r * c;
		double mean = b->ws[2 * r], rstd = b->ws[2 * r + 1];
		double sg = 0, sgx = 0;

		for (int64_t j = 0; j < c; j++) {
			double xh = (x[j] - mean) * rstd, g = (double)dy[j] * gamma[j];

			dgamma[j] += (float)(dy[j] * xh);
			dbeta[j] += dy[j];
			sg += g;
			sgx += g * xh;
		}
		if (!b->din[0])
			continue;
		/* dx = rstd (g - mean(g) - xhat mean(g xhat)) */
		for (int64_t j = 0; j < c; j++) {
			double xh = (x[j] - mean) * rstd, g = (double)dy[j] * gamma[j];

			b->din[0][r * c + j] =
				(float)(rstd * (g - sg / (double)c - xh * sgx / (double)c));
		}
	}
	return 0;
}

const struct kernel_ops cpu_layernorm = { layernorm_fwd, layernorm_bwd, layernorm_ws };

/* softmax along dim di of a tensor [outer][size][inner] */
static int softmax_di(const struct kern *k)
{
	const struct shape *s = &k->out;
	enum dim_kind d = k->op->a.axis == NDIMS ? s->kind[s->rank - 1] : k->op->a.axis;

	return shape_dim(s, d);
}

/* p[t * ps] = softmax of x[t * xs], t < size */
static void softmax_line(const float *x, int64_t xs, float *p, int64_t ps, int64_t size)
{
	double mx = x[0], s = 0;

	for (int64_t t = 1; t < size; t++)
		mx = x[t * xs] > mx ? x[t * xs] : mx;
	for (int64_t t = 0; t < size; t++)
		s += exp(x[t * xs] - mx);
	for (int64_t t = 0; t < size; t++)
		p[t * ps] = (float)(exp(x[t * xs] - mx) / s);
}

static int softmax_fwd(const struct kern *k, struct kbufs *b)
{
	int64_t outer, size, inner;

	cpu_split_at(&k->out, softmax_di(k), &outer, &size, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++)
			softmax_line(b->in[0] + o * size * inner + i, inner,
				     b->out + o * size * inner + i, inner, size);
	return 0;
}

static int softmax_bwd(const struct kern *k, struct kbufs *b)
{
	int64_t outer, size, inner;

	if (!b->din[0])
		return 0;
	cpu_split_at(&k->out, softmax_di(k), &outer, &size, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t base = o * size * inner + i;
			double dot = 0;

			for (int64_t t = 0; t < size; t++)
				dot += (double)b->dout[base + t * inner] * b->out[base + t * inner];
			for (int64_t t = 0; t < size; t++)
				b->din[0][base + t * inner] = (float)(
					b->out[base + t * inner] * (b->dout[base + t * inner] - dot));
		}
	return 0;
}

const struct kernel_ops cpu_softmax = { softmax_fwd, softmax_bwd, NULL };

/* loss: logits [outer][classes][inner], labels and output [outer][inner] */
static int64_t loss_ws(const struct kern *k)
{
	return k->in[0].size[shape_dim(&k->in[0], DIM_C)];
}

static int loss_fwd(const struct kern *k, struct kbufs *b)
{
	int64_t outer, classes, inner;

	cpu_split_at(&k->in[0], shape_dim(&k->in[0], DIM_C), &outer, &classes, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t y = (int64_t)b->labels[o * inner + i];

			if (y < 0 || y >= classes)
				return -1;
			softmax_line(b->in[0] + o * classes * inner + i, inner, b->ws, 1, classes);
			b->out[o * inner + i] = -logf(fmaxf(b->ws[y], 1e-30f));
		}
	return 0;
}

static int loss_bwd(const struct kern *k, struct kbufs *b)
{
	int64_t outer, classes, inner;

	if (!b->din[0])
		return 0;
	cpu_split_at(&k->in[0], shape_dim(&k->in[0], DIM_C), &outer, &classes, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t y = (int64_t)b->labels[o * inner + i], base = o * classes * inner + i;
			float g = b->dout[o * inner + i];

			softmax_line(b->in[0] + base, inner, b->ws, 1, classes);
			for (int64_t t = 0; t < classes; t++)
				b->din[0][base + t * inner] = g * (b->ws[t] - (t == y ? 1.0f : 0.0f));
		}
	return 0;
}

const struct kernel_ops cpu_loss = { loss_fwd, loss_bwd, loss_ws };
