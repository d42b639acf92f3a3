/*
 * CPU kernels of the normalising operators: layer normalisation over the
 * features (eps 1e-5, scale then shift, PyTorch's defaults; parameters
 * gamma[c] then beta[c]), softmax along one dim, and the softmax
 * cross-entropy loss.  Sums run in double, so a shard and the whole tensor
 * agree to float32 round-off whatever the split; exponentials run in float
 * (cpu_expf, within 1 ulp), in loops the compiler vectorises.
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
	dbeta = dgamma ? dgamma + c : NULL;
	for (int64_t r = 0; r < rows; r++) {
		const float *x = b->in[0] + r * c, *dy = b->dout + r * c;
		double mean = b->ws[2 * r], rstd = b->ws[2 * r + 1];
		double sg = 0, sgx = 0;

		for (int64_t j = 0; j < c && dgamma; j++) {
			double xh = (x[j] - mean) * rstd;

			dgamma[j] += (float)(dy[j] * xh);
			dbeta[j] += dy[j];
		}
		if (!b->din[0])
			continue;
		for (int64_t j = 0; j < c; j++) {
			double xh = (x[j] - mean) * rstd, g = (double)dy[j] * gamma[j];

			sg += g;
			sgx += g * xh;
		}
		/* dx = rstd (g - mean(g) - xhat mean(g xhat)) */
		for (int64_t j = 0; j < c; j++) {
			double xh = (x[j] - mean) * rstd, g = (double)dy[j] * gamma[j];

			b->din[0][r * c + j] =
				(float)(rstd * (g - sg / (double)c - xh * sgx / (double)c));
		}
	}
	return 0;
}

const struct kernel_ops cpu_layernorm = { layernorm_fwd, layernorm_bwd, layernorm_ws, 1 };

/* softmax along dim di of a tensor [outer][size][inner] */
static int softmax_di(const struct kern *k)
{
	const struct shape *s = &k->out;
	enum dim_kind d = k->op->a.axis == NDIMS ? s->kind[s->rank - 1] : k->op->a.axis;

	return shape_dim(s, d);
}

float cpu_max(const float *x, int64_t n)
{
	float lane[CPU_LANES], mx = x[0];
	int64_t t = 0;

	for (int j = 0; j < CPU_LANES; j++)
		lane[j] = x[0];
	for (; t + CPU_LANES <= n; t += CPU_LANES)
		for (int j = 0; j < CPU_LANES; j++)
			lane[j] = x[t + j] > lane[j] ? x[t + j] : lane[j];
	for (; t < n; t++)
		mx = x[t] > mx ? x[t] : mx;
	for (int j = 0; j < CPU_LANES; j++)
		mx = lane[j] > mx ? lane[j] : mx;
	return mx;
}

/* Each block is read whole before it is written, so y may be x. */
double cpu_exp_sum(const float *x, float mx, float *y, int64_t n)
{
	double lane[CPU_LANES] = { 0 }, s = 0;
	int64_t t = 0;

	for (; t + CPU_LANES <= n; t += CPU_LANES) {
		float v[CPU_LANES];

		for (int j = 0; j < CPU_LANES; j++)
			v[j] = x[t + j];
		for (int j = 0; j < CPU_LANES; j++)
			v[j] = cpu_expf(v[j] - mx);
		for (int j = 0; j < CPU_LANES; j++)
			y[t + j] = v[j];
		for (int j = 0; j < CPU_LANES; j++)
			lane[j] += v[j];
	}
	for (; t < n; t++) {
		y[t] = cpu_expf(x[t] - mx);
		s += y[t];
	}
	for (int j = 0; j < CPU_LANES; j++)
		s += lane[j];
	return s;
}

/* p[t] = g (p[t] inv), rounded to float before g multiplies it as a
 * probability is */
static void scale_line(float *p, double inv, float g, int64_t n)
{
	int64_t t = 0;

	for (; t + CPU_LANES <= n; t += CPU_LANES)
		for (int j = 0; j < CPU_LANES; j++)
			p[t + j] = g * (float)(p[t + j] * inv);
	for (; t < n; t++)
		p[t] = g * (float)(p[t] * inv);
}

/* p[t * ps] = softmax of x[t * xs], t < size: a contiguous line through
 * the vectorised helpers, a strided one element by element; both with
 * cpu_expf and a sum in double, so they agree to round-off */
static void softmax_line(const float *x, int64_t xs, float *p, int64_t ps, int64_t size)
{
	float mx = x[0];
	double s = 0;

	if (xs == 1 && ps == 1) {
		mx = cpu_max(x, size);
		scale_line(p, 1.0 / cpu_exp_sum(x, mx, p, size), 1.0f, size);
		return;
	}
	for (int64_t t = 1; t < size; t++)
		mx = x[t * xs] > mx ? x[t * xs] : mx;
	for (int64_t t = 0; t < size; t++) {
		p[t * ps] = cpu_expf(x[t * xs] - mx);
		s += p[t * ps];
	}
	for (int64_t t = 0; t < size; t++)
		p[t * ps] = (float)(p[t * ps] * (1.0 / s));
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

const struct kernel_ops cpu_softmax = { softmax_fwd, softmax_bwd, NULL, 0 };

/* loss: logits [outer][classes][inner], labels and output [outer][inner].
 * The workspace: one line of classes (a strided line gathered), then per
 * position the forward's max logit and 1 / sum exp(logit - max), so the
 * backward computes its probabilities in one pass.
 *
 * Megatron's parallel cross-entropy (struct kern's TP_LOSS: logits split
 * by vocabulary over the tensor group) holds classes [v0, v0 + classes)
 * of the whole.  Each member writes its max m_r, its sum of exponentials
 * s_r and, where it holds the label, the label's logit at its place in a
 * line per position, zeros elsewhere; the group sums the lines
 * (kbufs.csum, an all-gather: x + 0 is exact), and every member combines
 * them alike into the whole max M = max m_r and sum S = sum s_r
 * exp(m_r - M): the max, the sum and the label's logit that Megatron
 * all-reduces. */
static int loss_tp(const struct kern *k)
{
	return k->role == TP_LOSS && k->tp > 1 ? k->tp : 1;
}

static int64_t loss_ws(const struct kern *k)
{
	int64_t npos = shape_elems(&k->out);

	return k->in[0].size[shape_dim(&k->in[0], DIM_C)] + 2 * npos +
	       (loss_tp(k) > 1 ? npos * (2 * loss_tp(k) + 1) : 0);
}

/* -log of a probability below 1e-30: the most the loss counts */
#define LOSS_MAX 69.07755278982137

/* The parallel cross-entropy's lines summed over the group: each
 * position's whole max, 1 / sum and loss. */
static int loss_combine(const struct kern *k, struct kbufs *b, float *line, float *stat)
{
	int tp = loss_tp(k);
	int64_t npos = shape_elems(&k->out), w = 2 * tp + 1;

	if (!b->csum || b->csum(b->csum_ctx, line, npos * w))
		return -1;
	for (int64_t q = 0; q < npos; q++) {
		const float *l = line + q * w;
		double mx = l[0], s = 0;

		for (int r = 1; r < tp; r++)
			mx = l[2 * r] > mx ? l[2 * r] : mx;
		for (int r = 0; r < tp; r++)
			s += l[2 * r + 1] * exp(l[2 * r] - mx);
		b->out[q] = (float)fmin(log(s) - ((double)l[2 * tp] - mx), LOSS_MAX);
		stat[2 * q] = (float)mx;
		stat[2 * q + 1] = (float)(1.0 / s);
	}
	return 0;
}

static int loss_fwd(const struct kern *k, struct kbufs *b)
{
	int64_t outer, classes, inner, v0, whole;
	int di = shape_dim(&k->in[0], DIM_C), tp = loss_tp(k);
	float *stat, *line;

	cpu_split_at(&k->in[0], di, &outer, &classes, &inner);
	v0 = tp > 1 ? k->ilo[0][di] : 0;
	whole = tp > 1 ? k->igsize[0][di] : classes;
	stat = b->ws + classes;
	line = stat + 2 * shape_elems(&k->out);
	if (tp > 1)
		memset(line, 0, (size_t)(shape_elems(&k->out) * (2 * tp + 1)) * sizeof *line);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t q = o * inner + i, y = (int64_t)b->labels[q] - v0;
			const float *x = b->in[0] + o * classes * inner + i;
			float mx, xy = y >= 0 && y < classes ? x[y * inner] : 0.0f;
			double s;

			if (y + v0 < 0 || y + v0 >= whole)
				return -1;
			if (inner > 1) {
				for (int64_t t = 0; t < classes; t++)
					b->ws[t] = x[t * inner];
				x = b->ws;
			}
			/* -log p(y) = log sum exp(x - mx) - (x_y - mx), the
			 * softmax and the cross-entropy in one pass */
			mx = cpu_max(x, classes);
			s = cpu_exp_sum(x, mx, b->ws, classes);
			if (tp > 1) {
				float *l = line + q * (2 * tp + 1);

				l[2 * k->trank] = mx;
				l[2 * k->trank + 1] = (float)s;
				l[2 * tp] = xy;
				continue;
			}
			b->out[q] = (float)fmin(log(s) - ((double)xy - mx), LOSS_MAX);
			stat[2 * q] = mx;
			stat[2 * q + 1] = (float)(1.0 / s);
		}
	return tp > 1 ? loss_combine(k, b, line, stat) : 0;
}

/* dx = g (softmax(x) - onehot(y)), the probabilities from the forward's
 * max and sum (the workspace of the same micro-batch); the one-hot term
 * where the shard holds the label */
static int loss_bwd(const struct kern *k, struct kbufs *b)
{
	int64_t outer, classes, inner, v0;
	int di = shape_dim(&k->in[0], DIM_C);
	const float *stat;

	if (!b->din[0])
		return 0;
	cpu_split_at(&k->in[0], di, &outer, &classes, &inner);
	v0 = loss_tp(k) > 1 ? k->ilo[0][di] : 0;
	stat = b->ws + classes;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t q = o * inner + i, y = (int64_t)b->labels[q] - v0;
			int64_t base = o * classes * inner + i;
			const float *x = b->in[0] + base;
			float g = b->dout[q], mx = stat[2 * q], *dx = b->din[0] + base;
			double inv = stat[2 * q + 1];

			if (inner == 1) {
				cpu_exp_sum(x, mx, dx, classes);
				scale_line(dx, inv, g, classes);
			} else {
				for (int64_t t = 0; t < classes; t++)
					b->ws[t] = x[t * inner];
				cpu_exp_sum(b->ws, mx, b->ws, classes);
				for (int64_t t = 0; t < classes; t++)
					dx[t * inner] = g * (float)(b->ws[t] * inv);
			}
			if (y >= 0 && y < classes) {
				float py = (float)(cpu_expf(x[y * inner] - mx) * inv);

				dx[y * inner] = g * (py - 1.0f);
			}
		}
	return 0;
}

const struct kernel_ops cpu_loss = { loss_fwd, loss_bwd, loss_ws, 0 };
