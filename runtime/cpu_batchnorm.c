/*
 * The CPU kernel of batch normalisation in training mode, as PyTorch's
 * BatchNorm (eps 1e-5; parameters gamma[c] then beta[c], a c-split shard
 * holding its channels of each): every channel is normalised by the mean
 * and the biased variance of its values over the samples and every other
 * dim, then scaled and shifted.  No running statistics are kept: the
 * runtime only trains.
 *
 * The statistics run over a group of samples: those of one shard of one
 * micro-batch (struct kern's stat_mb and stat_deg), as a data-parallel
 * replica or a pipeline's micro-batch normalises over its own samples
 * (docs/runtime.md).  Sums run in double, in blocks of independent lanes
 * the compiler vectorises; a group is summed in the same order wherever it
 * lies in the call, so a shard and a one-device reference of the same
 * groups agree to the last bit.
 */
#include "cpu_kern.h"
#include "kern_dims.h"

#include <math.h>

#define BN_EPS 1e-5

/* sum of x[0..n) and of x[t] y[t] (y NULL: of (x[t] - m)^2), in lanes */
static void line_sums(const float *x, const float *y, double m, int64_t n, double *s1,
		      double *s2)
{
	double a[CPU_LANES] = { 0 }, q[CPU_LANES] = { 0 };
	int64_t t = 0;

	for (; t + CPU_LANES <= n; t += CPU_LANES)
		for (int j = 0; j < CPU_LANES; j++) {
			double v = x[t + j], w = y ? (double)y[t + j] : v - m;

			a[j] += v;
			q[j] += y ? v * w : w * w;
		}
	for (; t < n; t++) {
		double v = x[t], w = y ? (double)y[t] : v - m;

		*s1 += v;
		*s2 += y ? v * w : w * w;
	}
	for (int j = 0; j < CPU_LANES; j++) {
		*s1 += a[j];
		*s2 += q[j];
	}
}

/* The float offset of (sample i, per p, channel ch) */
static int64_t at(const struct bn_dims *d, int64_t i, int64_t p, int64_t ch)
{
	return ((i * d->per + p) * d->c + ch) * d->inner;
}

/* the sum over the group's lines of channel ch of x (and, with y, of
 * x y; without, of (x - m)^2) */
static void group_sums(const struct bn_dims *d, int64_t lo, int64_t hi, int64_t ch, const float *x,
		       const float *y, double m, double *s1, double *s2)
{
	*s1 = *s2 = 0;
	for (int64_t i = lo; i < hi; i++)
		for (int64_t p = 0; p < d->per; p++) {
			int64_t o = at(d, i, p, ch);

			line_sums(x + o, y ? y + o : NULL, m, d->inner, s1, s2);
		}
}

static int bn_fwd(const struct kern *k, struct kbufs *b)
{
	struct bn_dims d = bn_dims(k);
	const float *gamma = b->w, *beta = b->w + d.c, *x = b->in[0];
	float *stat = b->ws;

	for (int64_t lo = 0, hi; lo < d.n; lo = hi, stat += 2 * d.c) {
		double cnt;

		hi = bn_group_end(k, b->n0, d.n, lo);
		cnt = (double)(hi - lo) * d.per * d.inner;
		for (int64_t ch = 0; ch < d.c; ch++) {
			double s, dummy, var;
			float mean, rstd, g, sh;

			group_sums(&d, lo, hi, ch, x, NULL, 0, &s, &dummy);
			group_sums(&d, lo, hi, ch, x, NULL, s / cnt, &dummy, &var);
			mean = (float)(s / cnt);
			rstd = (float)(1.0 / sqrt(var / cnt + BN_EPS));
			stat[2 * ch] = mean;
			stat[2 * ch + 1] = rstd;
			g = rstd * gamma[ch];
			sh = beta[ch] - mean * g;
			for (int64_t i = lo; i < hi; i++)
				for (int64_t p = 0; p < d.per; p++) {
					int64_t o = at(&d, i, p, ch);

					for (int64_t t = 0; t < d.inner; t++)
						b->out[o + t] = x[o + t] * g + sh;
				}
		}
	}
	return 0;
}

/* dbeta = sum dy, dgamma = sum dy xhat, and
 * dx = gamma rstd (dy - mean(dy) - xhat mean(dy xhat)) over the group */
static int bn_bwd(const struct kern *k, struct kbufs *b)
{
	struct bn_dims d = bn_dims(k);
	const float *gamma = b->w, *x = b->in[0], *dy = b->dout, *stat = b->ws;
	float *dgamma = b->dw, *dbeta = b->dw + d.c;

	for (int64_t lo = 0, hi; lo < d.n; lo = hi, stat += 2 * d.c) {
		double cnt;

		hi = bn_group_end(k, b->n0, d.n, lo);
		cnt = (double)(hi - lo) * d.per * d.inner;
		for (int64_t ch = 0; ch < d.c; ch++) {
			double mean = stat[2 * ch], rstd = stat[2 * ch + 1], sdy, sdyx, sxhdy;
			float a, bb, c0, m = (float)mean;

			/* sum dy (x - mean) = sum dy x - mean sum dy */
			group_sums(&d, lo, hi, ch, dy, x, 0, &sdy, &sdyx);
			sxhdy = (sdyx - mean * sdy) * rstd;
			dbeta[ch] += (float)sdy;
			dgamma[ch] += (float)sxhdy;
			if (!b->din[0])
				continue;
			/* dx = a dy + bb (x - mean) + c0 */
			a = (float)(gamma[ch] * rstd);
			bb = (float)(-gamma[ch] * rstd * rstd * sxhdy / cnt);
			c0 = (float)(-gamma[ch] * rstd * sdy / cnt);
			for (int64_t i = lo; i < hi; i++)
				for (int64_t p = 0; p < d.per; p++) {
					int64_t o = at(&d, i, p, ch);
					float *dx = b->din[0] + o;

					for (int64_t t = 0; t < d.inner; t++)
						dx[t] = a * dy[o + t] + bb * (x[o + t] - m) + c0;
				}
		}
	}
	return 0;
}

const struct kernel_ops cpu_batchnorm = { bn_fwd, bn_bwd, bn_ws_floats, 0 };
