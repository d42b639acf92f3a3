/*
 * The CPU backend's kernels (runtime/cpu_*.c), through the backend table
 * as the executor calls them: every backward against central finite
 * differences of its forward (the loss sum(out x R) for a random R,
 * summed in double), and the forwards of the kernels with real arithmetic
 * (conv2d, maxpool, linear, attention, layernorm, batchnorm, softmax, the
 * loss)
 * against plain reference loops written here in double, and the float exp
 * the softmax kernels share against the C library's.
 */
#include "testutil.h"

#include "backend.h"
#include "cpu_kern.h"
#include "model/model_io.h"
#include "params.h"
#include "region.h"
#include "rng.h"

struct fixture {
	struct graph g;
	int op;
	struct kern k;
	const struct kernel_ops *ko;
	float *in[KERN_MAX_IN], *din[KERN_MAX_IN], *w, *dw, *out, *dout, *ws, *labels;
	int64_t nin_el[KERN_MAX_IN], nout, nw;
};

static float urand(uint64_t *s)
{
	return (float)(2.0 * rng_unit((*s)++) - 1.0);
}

/* The op named `name` of the model text, with random inputs (kept at
 * least 0.02 from zero, and apart, so relu and max have no kink within
 * the finite-difference step), weights and output gradient. */
static void setup(struct fixture *f, const char *text, const char *name)
{
	uint64_t seed = 12345;
	const struct op *op;

	memset(f, 0, sizeof *f);
	graph_init(&f->g);
	assert_int_equal(model_parse(text, "test", 0, &f->g), 0);
	f->op = graph_find(&f->g, name);
	assert_true(f->op >= 0);
	op = &f->g.ops[f->op];
	f->ko = backend_cpu.ops[op->kind];
	assert_non_null(f->ko);
	assert_int_equal(backend_cpu.init(), 0);
	f->k.op = op;
	f->k.op_index = f->op;
	f->k.nin = op->nin;
	f->k.out = op->out;
	for (int q = 0; q < op->out.rank; q++)
		f->k.gsize[q] = op->out.size[q];
	for (int kk = 0; kk < op->nin; kk++) {
		const struct op *src = &f->g.ops[op->in[kk]];

		f->k.in[kk] = src->out;
		for (int q = 0; q < src->out.rank; q++)
			f->k.igsize[kk][q] = src->out.size[q];
		f->nin_el[kk] = shape_elems(&src->out);
		f->in[kk] = calloc((size_t)f->nin_el[kk], sizeof(float));
		f->din[kk] = calloc((size_t)f->nin_el[kk], sizeof(float));
		for (int64_t e = 0; e < f->nin_el[kk]; e++) {
			if (op->kind == OP_EMBEDDING) {
				f->in[kk][e] = (float)(int64_t)(rng_unit(seed++) * (double)op->a.vocab);
				continue;
			}
			/* distinct magnitudes on a grid of 0.02: no ties, no zeros */
			f->in[kk][e] = (0.02f + 0.02f * (float)((e * 7919 + kk * 31) % 97)) *
				       (rng_unit(seed++) < 0.5 ? -1.0f : 1.0f);
		}
	}
	f->k.c_lo = 0;
	f->nw = op->params > 0 ? params_count(&f->g, f->op, shape_size(&op->out, DIM_C)) : 0;
	f->k.nparams = f->nw;
	f->w = calloc((size_t)(f->nw + 1), sizeof(float));
	f->dw = calloc((size_t)(f->nw + 1), sizeof(float));
	if (f->nw) {
		params_init(&f->g, f->op, 7, f->w);
		/* layernorm starts at ones and zeros: make it general */
		for (int64_t e = 0; e < f->nw; e++)
			f->w[e] += 0.3f * urand(&seed);
	}
	f->nout = shape_elems(&op->out);
	f->out = calloc((size_t)f->nout, sizeof(float));
	f->dout = calloc((size_t)f->nout, sizeof(float));
	for (int64_t e = 0; e < f->nout; e++)
		f->dout[e] = urand(&seed);
	f->ws = calloc((size_t)(f->ko->ws_floats ? f->ko->ws_floats(&f->k) : 0) + 1,
		       sizeof(float));
	if (op->kind == OP_LOSS) {
		const struct shape *x = &f->k.in[0];
		int64_t classes = x->size[shape_dim(x, DIM_C)];

		f->labels = calloc((size_t)f->nout, sizeof(float));
		for (int64_t e = 0; e < f->nout; e++)
			f->labels[e] = (float)(e * 5 % classes);
	}
}

static void teardown(struct fixture *f)
{
	for (int kk = 0; kk < KERN_MAX_IN; kk++) {
		free(f->in[kk]);
		free(f->din[kk]);
	}
	free(f->w);
	free(f->dw);
	free(f->out);
	free(f->dout);
	free(f->ws);
	free(f->labels);
	graph_release(&f->g);
}

static void bufs(struct fixture *f, struct kbufs *b)
{
	memset(b, 0, sizeof *b);
	for (int kk = 0; kk < f->k.nin; kk++) {
		b->in[kk] = f->in[kk];
		b->din[kk] = f->g.ops[f->g.ops[f->op].in[kk]].kind == OP_EMBEDDING ||
					     f->g.ops[f->op].kind == OP_EMBEDDING
				     ? NULL
				     : f->din[kk];
	}
	b->w = f->w;
	b->dw = f->dw;
	b->out = f->out;
	b->dout = f->dout;
	b->ws = f->ws;
	b->labels = f->labels;
	b->salt = 99;
}

/* sum(out x dout) in double after a forward */
static double objective(struct fixture *f)
{
	struct kbufs b;
	double s = 0;

	bufs(f, &b);
	assert_int_equal(f->ko->fwd(&f->k, &b), 0);
	for (int64_t e = 0; e < f->nout; e++)
		s += (double)f->out[e] * f->dout[e];
	return s;
}

/* d objective / d x[e] by central differences, against the analytic g */
static void compare(struct fixture *f, float *x, int64_t e, double analytic,
		    const char *what)
{
	const float h = 1e-3f;
	float keep = x[e];
	double up, down, numeric;

	x[e] = keep + h;
	up = objective(f);
	x[e] = keep - h;
	down = objective(f);
	x[e] = keep;
	numeric = (up - down) / (2.0 * ((double)(keep + h) - (double)keep));
	if (fabs(numeric - analytic) > 2e-2 * fmax(fabs(numeric), fabs(analytic)) + 2e-3) {
		print_error("%s of '%s' element %lld: analytic %.6g, numeric %.6g\n", what,
			    f->g.ops[f->op].name, (long long)e, analytic, numeric);
		fail();
	}
}

/* Every backward against finite differences, at up to 60 elements of each
 * input and of the weights; batchnorm's statistics over groups of samples
 * as struct kern's stat_mb and stat_deg say (0: the whole call). */
static void grad_check_groups(const char *text, const char *name, int64_t stat_mb, int stat_deg)
{
	struct fixture f;
	struct kbufs b;

	setup(&f, text, name);
	f.k.stat_mb = stat_mb;
	f.k.stat_deg = stat_deg;
	objective(&f);
	bufs(&f, &b);
	assert_int_equal(f.ko->bwd(&f.k, &b), 0);
	for (int kk = 0; kk < f.k.nin; kk++) {
		if (!b.din[kk])
			continue;
		for (int64_t t = 0; t < 60 && t < f.nin_el[kk]; t++) {
			int64_t e = (t * 104729) % f.nin_el[kk];

			compare(&f, f.in[kk], e, f.din[kk][e], "input gradient");
		}
	}
	for (int64_t t = 0; t < 60 && t < f.nw; t++) {
		int64_t e = (t * 104729) % f.nw;

		compare(&f, f.w, e, f.dw[e], "weight gradient");
	}
	teardown(&f);
}

static void grad_check(const char *text, const char *name)
{
	grad_check_groups(text, name, 0, 0);
}

#define M(body) "model t\nbatch 3\n" body

static void test_grad_conv(void **state)
{
	(void)state;
	grad_check(M("input x c=4 h=7 w=6\nconv2d y x out=6 k=3 stride=2 pad=1\n"), "y");
	grad_check(M("input x c=4 h=5 w=5\nconv2d y x out=4 k=1x3 groups=2 bias=0\n"), "y");
}

static void test_grad_pool(void **state)
{
	(void)state;
	grad_check(M("input x c=2 h=7 w=7\nmaxpool y x k=3 stride=2 pad=1\n"), "y");
	grad_check(M("input x c=2 h=7 w=7\navgpool y x k=3 stride=2 pad=1 ceil=1\n"), "y");
	grad_check(M("input x c=2 h=7 w=5\nadaptive_avgpool y x out=3\n"), "y");
}

static void test_grad_dense(void **state)
{
	(void)state;
	grad_check(M("input x l=4 c=5\nlinear y x out=3\n"), "y");
	grad_check(M("input a l=4 c=5\ninput b l=5 c=3\nmatmul y a b\n"), "y");
	grad_check(M("input a l=4 c=5\ninput b l=6 c=5\nmatmul y a b trans_b=1\n"), "y");
	grad_check(M("input ids l=4\nembedding y ids vocab=7 out=5\n"), "y");
}

static void test_grad_elementwise(void **state)
{
	(void)state;
	grad_check(M("input x c=5 l=3\nrelu y x\n"), "y");
	grad_check(M("input x c=5 l=3\ngelu y x\n"), "y");
	grad_check(M("input x c=5 l=3\ntanh y x\n"), "y");
	grad_check(M("input x c=5 l=3\nsigmoid y x\n"), "y");
	grad_check(M("input x c=5\ninput z c=5\ninput u c=5\nadd y x z u\n"), "y");
	grad_check(M("input x c=5\ninput z c=5\nmul y x z\n"), "y");
	grad_check(M("input x c=2 h=3 w=2\ninput z c=3 h=3 w=2\nconcat y x z\n"), "y");
	grad_check(M("input x c=6 l=4\ndropout y x p=0.3\n"), "y");
}

static void test_grad_norm(void **state)
{
	(void)state;
	grad_check(M("input x l=3 c=6\nlayernorm y x\n"), "y");
	grad_check(M("input x l=3 c=6\nsoftmax y x\n"), "y");
	grad_check(M("input x c=4 l=5\nsoftmax y x dim=c\n"), "y");
	grad_check(M("input x c=7\nloss y x\n"), "y");
	grad_check(M("input x l=3 c=7\nloss y x\n"), "y");
	/* whole blocks of lanes and a tail; a strided line (c before l) */
	grad_check(M("input x l=2 c=21\nsoftmax y x\n"), "y");
	grad_check(M("input x l=2 c=21\nloss y x\n"), "y");
	grad_check(M("input x c=19 l=3\nloss y x\n"), "y");
	/* batchnorm: an image (a lane block and a tail per line), an (n, l, c)
	 * tensor, and statistics over the groups {0}, {1, 2} of the batch */
	grad_check(M("input x c=3 h=4 w=5\nbatchnorm y x\n"), "y");
	grad_check(M("input x l=4 c=3\nbatchnorm y x\n"), "y");
	grad_check_groups(M("input x c=3 h=4 w=5\nbatchnorm y x\n"), "y", 3, 2);
}

static void test_grad_attention(void **state)
{
	(void)state;
	grad_check(M("input x l=5 c=8\nattention y x heads=2 causal=1\n"), "y");
	grad_check(M("input q l=3 c=4\ninput kv l=5 c=4\nattention y q kv heads=2\n"), "y");
}

/* --- forwards against reference loops ------------------------------------ */

static void close_to(double want, float got, const char *what, int64_t e)
{
	if (fabs(want - got) > 1e-4 * fabs(want) + 1e-5) {
		print_error("%s element %lld: expected %.7g, got %.7g\n", what, (long long)e,
			    want, (double)got);
		fail();
	}
}

/* conv2d of the model text against the formula; (kh, kw), stride,
 * padding and groups as the text has them */
static void conv_ref(const char *text, int kh, int kw, int s, int p, int64_t g)
{
	struct fixture f;
	int64_t n, c, h, w, oc, oh, ow, cg;

	setup(&f, text, "y");
	objective(&f);
	n = f.k.in[0].size[0], c = f.k.in[0].size[1], h = f.k.in[0].size[2];
	w = f.k.in[0].size[3], oc = f.k.out.size[1], oh = f.k.out.size[2], ow = f.k.out.size[3];
	cg = c / g;
	for (int64_t i = 0; i < n; i++)
		for (int64_t o = 0; o < oc; o++)
			for (int64_t y = 0; y < oh; y++)
				for (int64_t x = 0; x < ow; x++) {
					double acc = f.w[oc * cg * kh * kw + o];
					int64_t grp = o / (oc / g);

					for (int64_t ci = 0; ci < cg; ci++)
						for (int a = 0; a < kh; a++)
							for (int bb = 0; bb < kw; bb++) {
								int64_t iy = y * s - p + a, ix = x * s - p + bb;

								if (iy < 0 || iy >= h || ix < 0 || ix >= w)
									continue;
								acc += (double)f.w[((o * cg + ci) * kh + a) * kw + bb] *
								       f.in[0][((i * c + grp * cg + ci) * h + iy) * w + ix];
							}
					close_to(acc, f.out[((i * oc + o) * oh + y) * ow + x], "conv2d",
						 o);
				}
	teardown(&f);
}

static void test_fwd_conv(void **state)
{
	(void)state;
	conv_ref(M("input x c=4 h=6 w=5\nconv2d y x out=6 k=3x2 stride=2 pad=1 groups=2\n"), 3, 2,
		 2, 1, 2);
	/* stride 1 (whole rows of columns copied at once), odd sizes */
	conv_ref(M("input x c=6 h=7 w=9\nconv2d y x out=9 k=3 pad=1 groups=3\n"), 3, 3, 1, 1, 3);
	conv_ref(M("input x c=2 h=5 w=11\nconv2d y x out=3 k=2x5 stride=3 pad=2\n"), 2, 5, 3, 2,
		 1);
}

/* maxpool against the window scan: the largest of the cells inside the
 * input, its first cell on a tie (where the backward puts the gradient) */
static void maxpool_ref(const char *text, int k, int s, int p, int ties)
{
	struct fixture f;
	struct kbufs b;
	int64_t np, h, w, oh, ow;

	setup(&f, text, "y");
	if (ties)
		for (int64_t e = 0; e < f.nin_el[0]; e++)
			f.in[0][e] = (float)(e % 3 == 0);
	objective(&f);
	bufs(&f, &b);
	assert_int_equal(f.ko->bwd(&f.k, &b), 0);
	np = f.k.in[0].size[0] * f.k.in[0].size[1];
	h = f.k.in[0].size[2], w = f.k.in[0].size[3], oh = f.k.out.size[2], ow = f.k.out.size[3];
	for (int64_t q = 0; q < np; q++) {
		const float *x = f.in[0] + q * h * w;
		double *dx = calloc((size_t)(h * w), sizeof *dx);

		for (int64_t y = 0; y < oh; y++)
			for (int64_t xo = 0; xo < ow; xo++) {
				int64_t arg = -1, o = (q * oh + y) * ow + xo;

				for (int a = 0; a < k; a++)
					for (int bb = 0; bb < k; bb++) {
						int64_t iy = y * s - p + a, ix = xo * s - p + bb;

						if (iy >= 0 && iy < h && ix >= 0 && ix < w &&
						    (arg < 0 || x[iy * w + ix] > x[arg]))
							arg = iy * w + ix;
					}
				assert_true(f.out[o] == x[arg]);
				dx[arg] += f.dout[o];
			}
		for (int64_t e = 0; e < h * w; e++)
			close_to(dx[e], f.din[0][q * h * w + e], "maxpool gradient", e);
		free(dx);
	}
	teardown(&f);
}

static void test_fwd_maxpool(void **state)
{
	(void)state;
	maxpool_ref(M("input x c=2 h=7 w=7\nmaxpool y x k=3 stride=2 pad=1\n"), 3, 2, 1, 0);
	maxpool_ref(M("input x c=3 h=8 w=9\nmaxpool y x k=2\n"), 2, 2, 0, 0);
	maxpool_ref(M("input x c=2 h=9 w=6\nmaxpool y x k=3 stride=1 pad=1\n"), 3, 1, 1, 1);
	maxpool_ref(M("input x c=2 h=8 w=7\nmaxpool y x k=2\n"), 2, 2, 0, 1);
}

/* softmax or the loss over lines of `size` classes, `inner` apart, from
 * exp in double; the logits scaled up to 8 so that the exponentials span
 * a wide range */
static void softmax_ref(const char *text, int64_t size, int64_t inner)
{
	struct fixture f;
	int loss;

	setup(&f, text, "y");
	loss = f.g.ops[f.op].kind == OP_LOSS;
	for (int64_t e = 0; e < f.nin_el[0]; e++)
		f.in[0][e] *= 8.0f;
	objective(&f);
	for (int64_t line = 0; line < f.nin_el[0] / size; line++) {
		int64_t base = line / inner * size * inner + line % inner;
		double mx = -1e300, z = 0;

		for (int64_t t = 0; t < size; t++)
			mx = fmax(mx, f.in[0][base + t * inner]);
		for (int64_t t = 0; t < size; t++)
			z += exp(f.in[0][base + t * inner] - mx);
		if (loss) {
			int64_t y = (int64_t)f.labels[line];

			close_to(log(z) - (f.in[0][base + y * inner] - mx), f.out[line], "loss", line);
			continue;
		}
		for (int64_t t = 0; t < size; t++)
			close_to(exp(f.in[0][base + t * inner] - mx) / z, f.out[base + t * inner],
				 "softmax", base + t * inner);
	}
	teardown(&f);
}

/* cpu_expf within 2 ulp of the rounded exp wherever the result is a
 * normal float, 0 below, NaN kept; cpu_exp_sum's lanes and tail, in
 * place, against it */
static void test_expf(void **state)
{
	float x[37], y[37];

	(void)state;
	for (int i = 0; i <= 2000000; i++) {
		float v = -87.33f * (float)i / 2000000.0f, want = (float)exp((double)v);
		float ulp = nextafterf(want, INFINITY) - want;

		if (fabsf(cpu_expf(v) - want) > 2.0f * ulp) {
			print_error("cpu_expf(%.9g) = %.9g, expected %.9g\n", (double)v,
				    (double)cpu_expf(v), (double)want);
			fail();
		}
	}
	assert_true(cpu_expf(-87.34f) == 0.0f && cpu_expf(-1e30f) == 0.0f);
	assert_true(cpu_expf(-INFINITY) == 0.0f && isnan(cpu_expf(NAN)));
	assert_true(cpu_expf(0.0f) == 1.0f);
	for (int n = 1; n <= 37; n += 4) {
		double want = 0, got;
		float mx;

		for (int i = 0; i < n; i++)
			x[i] = y[i] = (float)((i * 37) % 11) - 3.0f;
		mx = x[0];
		for (int i = 1; i < n; i++)
			mx = fmaxf(mx, x[i]);
		assert_true(cpu_max(x, n) == mx);
		for (int i = 0; i < n; i++)
			want += cpu_expf(x[i] - 2.0f);
		got = cpu_exp_sum(y, 2.0f, y, n);
		assert_true(fabs(got - want) <= 1e-12 * want);
		for (int i = 0; i < n; i++)
			assert_true(y[i] == cpu_expf(x[i] - 2.0f));
	}
}

/* cpu_erf1p against 1 + erf in double (erfc(-x) where x < 0), relative:
 * within 2e-6 from x = -4 up, within 1e-5 below, down to 1e-30 (where
 * exp's argument, x^2 in float, has lost that much); its limits and NaN */
static void test_erf1p(void **state)
{
	(void)state;
	for (int i = -3000000; i <= 3000000; i++) {
		float v = 9.0f * (float)i / 3000000.0f;
		double want = v < 0 ? erfc(-(double)v) : 1.0 + erf((double)v);

		if (want >= 1e-30 &&
		    fabs(cpu_erf1p(v) - want) > (v >= -4.0f ? 2e-6 : 1e-5) * want) {
			print_error("cpu_erf1p(%.9g) = %.9g, expected %.9g\n", (double)v,
				    (double)cpu_erf1p(v), want);
			fail();
		}
	}
	assert_true(cpu_erf1p(1e30f) == 2.0f && cpu_erf1p(-1e30f) == 0.0f);
	assert_true(cpu_erf1p(INFINITY) == 2.0f && cpu_erf1p(-INFINITY) == 0.0f);
	assert_true(fabsf(cpu_erf1p(0.0f) - 1.0f) <= 2e-7f && isnan(cpu_erf1p(NAN)));
}

static void test_fwd_linear_norm_loss(void **state)
{
	struct fixture f;

	(void)state;
	setup(&f, M("input x l=2 c=5\nlinear y x out=3\n"), "y");
	objective(&f);
	for (int64_t r = 0; r < 6; r++)
		for (int64_t j = 0; j < 3; j++) {
			double acc = f.w[15 + j];

			for (int64_t q = 0; q < 5; q++)
				acc += (double)f.w[j * 5 + q] * f.in[0][r * 5 + q];
			close_to(acc, f.out[r * 3 + j], "linear", r * 3 + j);
		}
	teardown(&f);

	setup(&f, M("input x l=2 c=6\nlayernorm y x\n"), "y");
	objective(&f);
	for (int64_t r = 0; r < 6; r++) {
		double mean = 0, var = 0;

		for (int q = 0; q < 6; q++)
			mean += f.in[0][r * 6 + q] / 6.0;
		for (int q = 0; q < 6; q++)
			var += (f.in[0][r * 6 + q] - mean) * (f.in[0][r * 6 + q] - mean) / 6.0;
		for (int q = 0; q < 6; q++)
			close_to((f.in[0][r * 6 + q] - mean) / sqrt(var + 1e-5) * f.w[q] + f.w[6 + q],
				 f.out[r * 6 + q], "layernorm", r * 6 + q);
	}
	teardown(&f);

	softmax_ref(M("input x c=4\nloss y x\n"), 4, 1);
	softmax_ref(M("input x l=2 c=21\nloss y x\n"), 21, 1);
	softmax_ref(M("input x c=19 l=3\nloss y x\n"), 19, 3);
	softmax_ref(M("input x l=2 c=21\nsoftmax y x\n"), 21, 1);
	softmax_ref(M("input x c=19 l=3\nsoftmax y x dim=c\n"), 19, 3);
}

/* attention in double, straight from the formula */
static void test_fwd_attention(void **state)
{
	struct fixture f;
	const int L = 5, C = 8, H = 2, D = 4;

	(void)state;
	setup(&f, M("input x l=5 c=8\nattention y x heads=2 causal=1\n"), "y");
	objective(&f);
	for (int i = 0; i < 3; i++) {
		const float *x = f.in[0] + i * L * C;
		double q[5][8], k[5][8], v[5][8], ctx[5][8];

		for (int t = 0; t < L; t++)
			for (int o = 0; o < C; o++) {
				double a = f.w[4 * C * C + o], b = f.w[4 * C * C + C + o];
				double cc = f.w[4 * C * C + 2 * C + o];

				for (int j = 0; j < C; j++) {
					a += (double)f.w[o * C + j] * x[t * C + j];
					b += (double)f.w[C * C + o * C + j] * x[t * C + j];
					cc += (double)f.w[2 * C * C + o * C + j] * x[t * C + j];
				}
				q[t][o] = a, k[t][o] = b, v[t][o] = cc;
			}
		for (int hh = 0; hh < H; hh++)
			for (int t = 0; t < L; t++) {
				double sc[5], mx = -1e300, z = 0;

				for (int u = 0; u <= t; u++) {
					sc[u] = 0;
					for (int d = 0; d < D; d++)
						sc[u] += q[t][hh * D + d] * k[u][hh * D + d] / sqrt(D);
					mx = fmax(mx, sc[u]);
				}
				for (int u = 0; u <= t; u++)
					z += exp(sc[u] - mx);
				for (int d = 0; d < D; d++) {
					ctx[t][hh * D + d] = 0;
					for (int u = 0; u <= t; u++)
						ctx[t][hh * D + d] += exp(sc[u] - mx) / z * v[u][hh * D + d];
				}
			}
		for (int t = 0; t < L; t++)
			for (int o = 0; o < C; o++) {
				double y = f.w[4 * C * C + 3 * C + o];

				for (int j = 0; j < C; j++)
					y += (double)f.w[3 * C * C + o * C + j] * ctx[t][j];
				close_to(y, f.out[(i * L + t) * C + o], "attention", t * C + o);
			}
	}
	teardown(&f);
}

/* batchnorm in double from the formula, over the groups {0}, {1, 2} of a
 * batch of 3 (the reference of a plan cutting its batch of 3 two ways),
 * and the same groups computed as two shards of one group each: the
 * outputs and input gradients equal to the last bit, the weight gradients'
 * sums too. */
static void test_batchnorm_groups(void **state)
{
	static const int64_t lo[] = { 0, 1, 3 };
	const int64_t C = 3, HW = 20;
	struct fixture f;
	struct kbufs b;
	float *dw_sum;

	(void)state;
	setup(&f, M("input x c=3 h=4 w=5\nbatchnorm y x\n"), "y");
	f.k.stat_mb = 3;
	f.k.stat_deg = 2;
	objective(&f);
	bufs(&f, &b);
	assert_int_equal(f.ko->bwd(&f.k, &b), 0);
	for (int gi = 0; gi < 2; gi++)
		for (int64_t ch = 0; ch < C; ch++) {
			double mean = 0, var = 0, cnt = (double)(lo[gi + 1] - lo[gi]) * HW;

			for (int64_t i = lo[gi]; i < lo[gi + 1]; i++)
				for (int64_t t = 0; t < HW; t++)
					mean += f.in[0][(i * C + ch) * HW + t] / cnt;
			for (int64_t i = lo[gi]; i < lo[gi + 1]; i++)
				for (int64_t t = 0; t < HW; t++) {
					double d = f.in[0][(i * C + ch) * HW + t] - mean;

					var += d * d / cnt;
				}
			for (int64_t i = lo[gi]; i < lo[gi + 1]; i++)
				for (int64_t t = 0; t < HW; t++) {
					int64_t e = (i * C + ch) * HW + t;

					close_to((f.in[0][e] - mean) / sqrt(var + 1e-5) * f.w[ch] +
							 f.w[C + ch],
						 f.out[e], "batchnorm", e);
				}
		}
	dw_sum = calloc((size_t)f.nw, sizeof *dw_sum);
	for (int gi = 0; gi < 2; gi++) {
		struct kern k = f.k;
		int64_t n = lo[gi + 1] - lo[gi], off = lo[gi] * C * HW, ne = n * C * HW;
		float *y = calloc((size_t)ne, sizeof *y), *dx = calloc((size_t)ne, sizeof *dx);
		float *ws = calloc((size_t)f.ko->ws_floats(&f.k), sizeof *ws);

		k.out.size[0] = k.in[0].size[0] = n;
		k.glo[0] = k.ilo[0][0] = lo[gi];
		k.stat_mb = 0;
		memset(&b, 0, sizeof b);
		b.in[0] = f.in[0] + off;
		b.din[0] = dx;
		b.w = f.w;
		b.dw = dw_sum;
		b.out = y;
		b.dout = f.dout + off;
		b.ws = ws;
		assert_int_equal(f.ko->fwd(&k, &b), 0);
		assert_int_equal(f.ko->bwd(&k, &b), 0);
		assert_memory_equal(y, f.out + off, (size_t)ne * sizeof *y);
		assert_memory_equal(dx, f.din[0] + off, (size_t)ne * sizeof *dx);
		free(y);
		free(dx);
		free(ws);
	}
	assert_memory_equal(dw_sum, f.dw, (size_t)f.nw * sizeof *dw_sum);
	free(dw_sum);
	teardown(&f);
}

/* The dropout mask depends on where an element is in the whole batch, not
 * on the shard that computes it. */
/* The whole region of shape s. */
static void whole(const struct shape *s, struct region *r)
{
	for (int d = 0; d < NDIMS; d++) {
		int q = shape_dim(s, d);

		r->lo[d] = 0;
		r->hi[d] = q >= 0 ? s->size[q] : 1;
	}
}

static void expect_close(const float *a, const float *b, int64_t n, const char *what)
{
	double big = 0, diff = 0;

	for (int64_t e = 0; e < n; e++) {
		big = fmax(big, fabs((double)b[e]));
		diff = fmax(diff, fabs((double)a[e] - b[e]));
	}
	if (diff > 1e-5 * big) {
		print_error("%s: shards differ from the whole op by %g (of %g)\n", what, diff, big);
		fail();
	}
}

/* The contract of struct kern for an op split D ways along dim d of its
 * output: each shard gets the input its outputs read (a window op's rows
 * with the halo, clipped to the input; attention's whole keys and
 * values), computes its part of the output, and its input and weight
 * gradients sum to the whole op's. */
static void split_check(const char *text, const char *name, enum dim_kind d, int D)
{
	struct fixture f;
	struct kbufs b;
	const struct op_attrs *a;
	const struct shape *xs;
	struct region wout, win;
	float *din_sum, *dw_sum;
	int qo, qi, window;

	setup(&f, text, name);
	a = &f.g.ops[f.op].a;
	xs = &f.k.in[0];
	window = f.g.ops[f.op].kind != OP_ATTENTION;
	qo = shape_dim(&f.k.out, d);
	qi = shape_dim(xs, d);
	objective(&f);
	bufs(&f, &b);
	assert_int_equal(f.ko->bwd(&f.k, &b), 0);
	whole(&f.k.out, &wout);
	whole(xs, &win);
	din_sum = calloc((size_t)f.nin_el[0], sizeof(float));
	dw_sum = calloc((size_t)f.nw + 1, sizeof(float));
	for (int i = 0; i < D; i++) {
		struct kern k = f.k;
		struct region ro = wout, ri = win;
		int kw = d == DIM_H ? a->kh : a->kw, st = d == DIM_H ? a->sh : a->sw;
		int pd = d == DIM_H ? a->ph : a->pw;
		int64_t no, ni, nws;
		float *x, *dx, *y, *dy, *ws, *dw;

		ro.lo[d] = i * f.k.out.size[qo] / D;
		ro.hi[d] = (i + 1) * f.k.out.size[qo] / D;
		if (window) {
			ri.lo[d] = ro.lo[d] * st - pd > 0 ? ro.lo[d] * st - pd : 0;
			ri.hi[d] = (ro.hi[d] - 1) * st - pd + kw;
			ri.hi[d] = ri.hi[d] < xs->size[qi] ? ri.hi[d] : xs->size[qi];
		}
		region_shape(&f.k.out, &ro, &k.out);
		region_shape(xs, &ri, &k.in[0]);
		k.glo[qo] = ro.lo[d];
		k.ilo[0][qi] = ri.lo[d];
		no = region_elems(&ro);
		ni = region_elems(&ri);
		nws = f.ko->ws_floats ? f.ko->ws_floats(&k) : 0;
		x = calloc((size_t)ni, sizeof(float));
		dx = calloc((size_t)ni, sizeof(float));
		y = calloc((size_t)no, sizeof(float));
		dy = calloc((size_t)no, sizeof(float));
		ws = calloc((size_t)nws + 1, sizeof(float));
		dw = calloc((size_t)f.nw + 1, sizeof(float));
		region_copy(xs, &ri, x, &ri, f.in[0], &win, 0);
		region_copy(&f.k.out, &ro, dy, &ro, f.dout, &wout, 0);
		memset(&b, 0, sizeof b);
		b.in[0] = x;
		b.din[0] = dx;
		b.w = f.w;
		b.dw = dw;
		b.out = y;
		b.dout = dy;
		b.ws = ws;
		assert_int_equal(f.ko->fwd(&k, &b), 0);
		assert_int_equal(f.ko->bwd(&k, &b), 0);
		/* the output against the whole op's, in place */
		region_copy(&f.k.out, &ro, dy, &ro, f.out, &wout, 0);
		expect_close(y, dy, no, "output");
		region_copy(xs, &ri, din_sum, &win, dx, &ri, 1);
		for (int64_t e = 0; e < f.nw; e++)
			dw_sum[e] += dw[e];
		free(x);
		free(dx);
		free(y);
		free(dy);
		free(ws);
		free(dw);
	}
	expect_close(din_sum, f.din[0], f.nin_el[0], "input gradient");
	expect_close(dw_sum, f.dw, f.nw, "weight gradient");
	free(din_sum);
	free(dw_sum);
	teardown(&f);
}

static void test_split_shards(void **state)
{
	(void)state;
	split_check(M("input x c=4 h=9 w=6\nconv2d y x out=6 k=3 stride=2 pad=1\n"), "y", DIM_H, 3);
	split_check(M("input x c=4 h=5 w=8\nconv2d y x out=4 k=3 pad=1\n"), "y", DIM_W, 4);
	split_check(M("input x c=2 h=8 w=7\nmaxpool y x k=3 stride=2 pad=1\n"), "y", DIM_H, 2);
	split_check(M("input x c=2 h=8 w=7\navgpool y x k=3 stride=2 pad=1 ceil=1\n"), "y",
		    DIM_W, 2);
	split_check(M("input x l=7 c=8\nattention y x heads=2 causal=1\n"), "y", DIM_L, 3);
	split_check(M("input x l=6 c=8\nattention y x heads=4\n"), "y", DIM_L, 2);
}

static void test_dropout_mask_split(void **state)
{
	struct fixture f;
	struct kbufs b;
	float *whole;
	int64_t kept = 0;

	(void)state;
	setup(&f, M("input x c=40\ndropout y x p=0.25\n"), "y");
	objective(&f);
	whole = malloc((size_t)f.nout * sizeof *whole);
	memcpy(whole, f.out, (size_t)f.nout * sizeof *whole);
	for (int64_t e = 0; e < f.nout; e++)
		kept += whole[e] != 0.0f;
	/* 120 draws at p = 0.25: 90 kept on average */
	assert_true(kept > 70 && kept < 110);
	/* the second sample alone, as the shard of an n-split computes it */
	f.k.out.size[0] = 1;
	f.k.in[0].size[0] = 1;
	f.k.glo[0] = 1;
	bufs(&f, &b);
	b.in[0] = f.in[0] + 40;
	assert_int_equal(f.ko->fwd(&f.k, &b), 0);
	for (int e = 0; e < 40; e++)
		assert_true(f.out[e] == whole[40 + e]);
	free(whole);
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grad_conv),
		cmocka_unit_test(test_grad_pool),
		cmocka_unit_test(test_grad_dense),
		cmocka_unit_test(test_grad_elementwise),
		cmocka_unit_test(test_grad_norm),
		cmocka_unit_test(test_grad_attention),
		cmocka_unit_test(test_fwd_conv),
		cmocka_unit_test(test_fwd_maxpool),
		cmocka_unit_test(test_expf),
		cmocka_unit_test(test_erf1p),
		cmocka_unit_test(test_fwd_linear_norm_loss),
		cmocka_unit_test(test_fwd_attention),
		cmocka_unit_test(test_batchnorm_groups),
		cmocka_unit_test(test_split_shards),
		cmocka_unit_test(test_dropout_mask_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
