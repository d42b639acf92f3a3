/*
 * CPU kernels of the convolutional operators: conv2d as im2col + GEMM per
 * sample and group (the weight W[out][c/g][kh][kw] then b[out], so a
 * c-split shard holds a contiguous slice of output channels), max and
 * average pooling (PyTorch's semantics: padding never wins a max, the
 * average counts padded cells) and adaptive average pooling with PyTorch's
 * bins.  The workspace of conv2d is one sample's column matrix (the
 * columns of several samples for one GEMM per group over them measured
 * slower on small layers: they leave the cache, and the product must be
 * reordered into the output); maxpool's holds the arg-max of every output
 * for the backward.
 */
#include "cpu_kern.h"

#include <float.h>
#include <string.h>

/* A shard's local view: its input (h, w) and output (oh, ow) regions,
 * and the padding that puts its first window where the whole op's would
 * be.  A shard split along h or w gets the rows its windows read (the
 * halo, struct kern), so ph is the op's padding for the first shard and 0
 * for the others; a window leaves the local input only where it leaves
 * the whole one.  hend, wend: where the whole input's padding ends, in
 * local coordinates (average pooling counts up to there). */
struct conv {
	int64_t n, c, h, w, oc, oh, ow, ph, pw, hend, wend;
	int kh, kw, sh, sw, groups;
};

static struct conv conv_dims(const struct kern *k)
{
	const struct op_attrs *a = &k->op->a;
	struct conv d;

	d.n = k->in[0].size[0];
	d.c = k->in[0].size[1];
	d.h = k->in[0].size[2];
	d.w = k->in[0].size[3];
	d.oc = k->out.size[1];
	d.oh = k->out.size[2];
	d.ow = k->out.size[3];
	d.kh = a->kh, d.kw = a->kw, d.sh = a->sh, d.sw = a->sw;
	d.ph = a->ph + k->ilo[0][2] - k->glo[2] * a->sh;
	d.pw = a->pw + k->ilo[0][3] - k->glo[3] * a->sw;
	d.hend = k->igsize[0][2] + a->ph - k->ilo[0][2];
	d.wend = k->igsize[0][3] + a->pw - k->ilo[0][3];
	d.groups = a->groups;
	return d;
}

static int64_t conv_ws(const struct kern *k)
{
	struct conv d = conv_dims(k);

	return d.c / d.groups * d.kh * d.kw * d.oh * d.ow;
}

/* The output columns x whose input column x*sw - pw + j lies inside the
 * input: [*x0, *x1), the first x with x*sw >= pw - j and the first with
 * x*sw >= w + pw - j, clipped to [0, ow].  Hoisting the bounds out of the
 * inner loops leaves them branch-free. */
static void inside(int64_t ow, int64_t w, int s, int64_t p, int j, int64_t *x0, int64_t *x1)
{
	int64_t a0 = p - j, a1 = w + p - j;

	*x0 = a0 > 0 ? (a0 + s - 1) / s : 0;
	*x0 = *x0 < ow ? *x0 : ow;
	*x1 = a1 > 0 ? (a1 + s - 1) / s : 0;
	*x1 = *x1 < *x0 ? *x0 : *x1 < ow ? *x1 : ow;
}

/* col[(ci, i, j)][(y, x)] = x[ci][y*sh - ph + i][x*sw - pw + j], 0 outside.
 * A row is a few dozen floats: plain loops (Makefile: not turned into
 * memset and memcpy calls, which cost more than the row here) */
static void im2col(const struct conv *d, const float *x, int64_t cg, float *col)
{
	int64_t hw = d->oh * d->ow;

	for (int64_t ci = 0; ci < cg; ci++)
		for (int i = 0; i < d->kh; i++)
			for (int j = 0; j < d->kw; j++) {
				float *row = col + ((ci * d->kh + i) * d->kw + j) * hw;
				int64_t x0, x1, off = j - d->pw;

				inside(d->ow, d->w, d->sw, d->pw, j, &x0, &x1);
				for (int64_t y = 0; y < d->oh; y++) {
					int64_t iy = y * d->sh - d->ph + i, xo = 0;
					int in = iy >= 0 && iy < d->h;
					int64_t a = in ? x0 : d->ow, e = in ? x1 : d->ow;
					float *restrict r = row + y * d->ow;
					const float *restrict src =
						in ? x + (ci * d->h + iy) * d->w + off : x;

					for (; xo < a; xo++)
						r[xo] = 0.0f;
					if (d->sw == 1)
						for (; xo < e; xo++)
							r[xo] = src[xo];
					else
						for (; xo < e; xo++)
							r[xo] = src[xo * d->sw];
					for (; xo < d->ow; xo++)
						r[xo] = 0.0f;
				}
			}
}

/* the adjoint of im2col: dx += scattered dcol */
static void col2im(const struct conv *d, const float *col, int64_t cg, float *dx)
{
	int64_t hw = d->oh * d->ow;

	for (int64_t ci = 0; ci < cg; ci++)
		for (int i = 0; i < d->kh; i++)
			for (int j = 0; j < d->kw; j++) {
				const float *row = col + ((ci * d->kh + i) * d->kw + j) * hw;
				int64_t x0, x1;

				inside(d->ow, d->w, d->sw, d->pw, j, &x0, &x1);
				for (int64_t y = 0; y < d->oh; y++) {
					int64_t iy = y * d->sh - d->ph + i;
					const float *r = row + y * d->ow;
					float *dst;
					int64_t off = j - d->pw;

					if (iy < 0 || iy >= d->h)
						continue;
					dst = dx + (ci * d->h + iy) * d->w + off;
					if (d->sw == 1)
						for (int64_t xo = x0; xo < x1; xo++)
							dst[xo] += r[xo];
					else
						for (int64_t xo = x0; xo < x1; xo++)
							dst[xo * d->sw] += r[xo];
				}
			}
}

static int conv_fwd(const struct kern *k, struct kbufs *b)
{
	struct conv d = conv_dims(k);
	int64_t cg = d.c / d.groups, og = d.oc / d.groups, hw = d.oh * d.ow;
	int64_t kk = cg * d.kh * d.kw;
	const float *bias = b->w + d.oc * kk;

	for (int64_t s = 0; s < d.n; s++) {
		float *y = b->out + s * d.oc * hw;

		for (int g = 0; g < d.groups; g++) {
			im2col(&d, b->in[0] + (s * d.c + g * cg) * d.h * d.w, cg, b->ws);
			cpu_gemm(0, 0, (int)og, (int)hw, (int)kk, 1.0f, b->w + g * og * kk,
				 (int)kk, b->ws, (int)hw, 0.0f, y + g * og * hw, (int)hw);
		}
		if (k->op->a.bias)
			for (int64_t o = 0; o < d.oc; o++)
				for (int64_t p = 0; p < hw; p++)
					y[o * hw + p] += bias[o];
	}
	return 0;
}

static int conv_bwd(const struct kern *k, struct kbufs *b)
{
	struct conv d = conv_dims(k);
	int64_t cg = d.c / d.groups, og = d.oc / d.groups, hw = d.oh * d.ow;
	int64_t kk = cg * d.kh * d.kw;

	if (b->din[0])
		memset(b->din[0], 0, (size_t)shape_elems(&k->in[0]) * sizeof(float));
	for (int64_t s = 0; s < d.n; s++) {
		const float *dy = b->dout + s * d.oc * hw;

		for (int g = 0; g < d.groups; g++) {
			int64_t xo = (s * d.c + g * cg) * d.h * d.w;

			im2col(&d, b->in[0] + xo, cg, b->ws);
			cpu_gemm(0, 1, (int)og, (int)kk, (int)hw, 1.0f, dy + g * og * hw,
				 (int)hw, b->ws, (int)hw, 1.0f, b->dw + g * og * kk, (int)kk);
			if (!b->din[0])
				continue;
			cpu_gemm(1, 0, (int)kk, (int)hw, (int)og, 1.0f, b->w + g * og * kk,
				 (int)kk, dy + g * og * hw, (int)hw, 0.0f, b->ws, (int)hw);
			col2im(&d, b->ws, cg, b->din[0] + xo);
		}
		if (k->op->a.bias) {
			float *db = b->dw + d.oc * kk;

			for (int64_t o = 0; o < d.oc; o++)
				for (int64_t p = 0; p < hw; p++)
					db[o] += dy[o * hw + p];
		}
	}
	return 0;
}

const struct kernel_ops cpu_conv2d = { conv_fwd, conv_bwd, conv_ws, 0 };

/* Pools: one plane (sample, channel) at a time. */
static int zero_din(const struct kern *k, struct kbufs *b)
{
	if (b->din[0])
		memset(b->din[0], 0, (size_t)shape_elems(&k->in[0]) * sizeof(float));
	return b->din[0] != NULL;
}

static int64_t planes(const struct kern *k)
{
	return k->out.size[0] * k->out.size[1];
}

static int64_t maxpool_ws(const struct kern *k)
{
	return shape_elems(&k->out);
}

/* Window cell by window cell across an output row: the cells an output
 * column x sees are those with x in inside()'s range, so the loop over x
 * has no bounds test, and a cell wins, as in a plain scan of the window
 * in row-major order, when it is the window's first or strictly greater
 * than the best so far: a select, not a branch on the data, and the
 * cell's index converted from 32 bits (a plane's index is exact in a
 * float below 2^24), so that the loop vectorises. */
static int maxpool_fwd(const struct kern *k, struct kbufs *b)
{
	struct conv d = conv_dims(k);

	for (int64_t p = 0; p < planes(k); p++) {
		const float *x = b->in[0] + p * d.h * d.w;

		for (int64_t y = 0; y < d.oh; y++) {
			float *restrict best = b->out + (p * d.oh + y) * d.ow;
			float *restrict arg = b->ws + (p * d.oh + y) * d.ow;

			for (int64_t xo = 0; xo < d.ow; xo++) {
				best[xo] = -FLT_MAX;
				arg[xo] = -1.0f;
			}
			for (int i = 0; i < d.kh; i++) {
				int64_t iy = y * d.sh - d.ph + i;

				if (iy < 0 || iy >= d.h)
					continue;
				for (int j = 0; j < d.kw; j++) {
					int64_t x0, x1;
					int32_t at = (int32_t)(iy * d.w + j - d.pw), sw = d.sw;

					inside(d.ow, d.w, d.sw, d.pw, j, &x0, &x1);
					for (int32_t xo = (int32_t)x0; xo < (int32_t)x1; xo++) {
						float v = x[at + xo * sw];
						int win = (v > best[xo]) | (arg[xo] < 0.0f);

						best[xo] = cpu_select(v, best[xo], win);
						arg[xo] = cpu_select((float)(at + xo * sw), arg[xo], win);
					}
				}
			}
		}
	}
	return 0;
}

static int maxpool_bwd(const struct kern *k, struct kbufs *b)
{
	struct conv d = conv_dims(k);

	if (!zero_din(k, b))
		return 0;
	for (int64_t p = 0; p < planes(k); p++)
		for (int64_t o = 0; o < d.oh * d.ow; o++) {
			int64_t q = p * d.oh * d.ow + o;

			b->din[0][p * d.h * d.w + (int64_t)b->ws[q]] += b->dout[q];
		}
	return 0;
}

const struct kernel_ops cpu_maxpool = { maxpool_fwd, maxpool_bwd, maxpool_ws, 0 };

/* Average pooling and its adaptive form share one loop over windows:
 * window (y, x) covers rows [y0, y1) and columns [x0, x1) of the input,
 * clipped to it, and divides by `count`. */
struct window {
	int64_t y0, y1, x0, x1;
	float count;
};

static struct window avg_window(const struct kern *k, const struct conv *d,
				int64_t y, int64_t x)
{
	struct window w;

	if (k->op->kind == OP_ADAPTIVE_AVGPOOL) {
		w.y0 = y * d->h / d->oh;
		w.y1 = ((y + 1) * d->h + d->oh - 1) / d->oh;
		w.x0 = x * d->w / d->ow;
		w.x1 = ((x + 1) * d->w + d->ow - 1) / d->ow;
		w.count = (float)((w.y1 - w.y0) * (w.x1 - w.x0));
		return w;
	}
	w.y0 = y * d->sh - d->ph;
	w.x0 = x * d->sw - d->pw;
	w.y1 = w.y0 + d->kh;
	w.x1 = w.x0 + d->kw;
	/* PyTorch counts padding but not the part past it (ceil mode) */
	if (w.y1 > d->hend)
		w.y1 = d->hend;
	if (w.x1 > d->wend)
		w.x1 = d->wend;
	w.count = (float)((w.y1 - w.y0) * (w.x1 - w.x0));
	w.y0 = w.y0 < 0 ? 0 : w.y0;
	w.x0 = w.x0 < 0 ? 0 : w.x0;
	w.y1 = w.y1 > d->h ? d->h : w.y1;
	w.x1 = w.x1 > d->w ? d->w : w.x1;
	return w;
}

static int avgpool_fwd(const struct kern *k, struct kbufs *b)
{
	struct conv d = conv_dims(k);

	for (int64_t p = 0; p < planes(k); p++) {
		const float *x = b->in[0] + p * d.h * d.w;

		for (int64_t y = 0; y < d.oh; y++)
			for (int64_t xo = 0; xo < d.ow; xo++) {
				struct window w = avg_window(k, &d, y, xo);
				float s = 0.0f;

				for (int64_t iy = w.y0; iy < w.y1; iy++)
					for (int64_t ix = w.x0; ix < w.x1; ix++)
						s += x[iy * d.w + ix];
				b->out[(p * d.oh + y) * d.ow + xo] = s / w.count;
			}
	}
	return 0;
}

static int avgpool_bwd(const struct kern *k, struct kbufs *b)
{
	struct conv d = conv_dims(k);

	if (!zero_din(k, b))
		return 0;
	for (int64_t p = 0; p < planes(k); p++) {
		float *dx = b->din[0] + p * d.h * d.w;

		for (int64_t y = 0; y < d.oh; y++)
			for (int64_t xo = 0; xo < d.ow; xo++) {
				struct window w = avg_window(k, &d, y, xo);
				float g = b->dout[(p * d.oh + y) * d.ow + xo] / w.count;

				for (int64_t iy = w.y0; iy < w.y1; iy++)
					for (int64_t ix = w.x0; ix < w.x1; ix++)
						dx[iy * d.w + ix] += g;
			}
	}
	return 0;
}

const struct kernel_ops cpu_avgpool = { avgpool_fwd, avgpool_bwd, NULL, 0 };
const struct kernel_ops cpu_adaptive_avgpool = { avgpool_fwd, avgpool_bwd, NULL, 0 };
