/*
 * Every kernel of the CUDA backend against the CPU backend's kernel of the
 * same operator (docs/conventions.md, rule 5): on shapes drawn at random, the same
 * inputs, weights, output gradient and labels go to both; the outputs,
 * input gradients and accumulated weight gradients must agree within
 * tol + (|cpu| + max |cpu| of the array) x eps: a sum's round-off grows
 * with the size of its terms, not of its result, so an element far below
 * the array's scale (an input gradient of attention with 128-wide heads,
 * a bias gradient over 16,400 rows) is held to the array's scale, where
 * each backend's float32 round-off shows.  Also the backend's own memory functions (region
 * copies, fills, the optimizer, GEMM) against their CPU versions.
 * Without a CUDA device (or in a build without CUDA, or without
 * libautopar-cuda.so, which `make test` names in AUTOPAR_CUDA_LIB) every
 * test skips with a message saying why.
 */
#include "testutil.h"

#include "backend.h"
#include "util/err.h"
#include "gpu.h"
#include "gpu_opts.h"
#include "model/model_io.h"
#include "params.h"
#include "region.h"
#include "rng.h"
#include "model/needs.h"

#define TOL 1e-4
#define EPS 1e-4

/* what compare() accepts: float32 round-off, unless a test of another
 * precision loosens it */
static double tol = TOL, eps = EPS;

static char why[256];

static int have_gpu(void)
{
	static int n = -2;

	if (n == -2) {
		n = gpu_count(why, sizeof why);
		if (n > 0 && backend_cuda.init()) {
			snprintf(why, sizeof why, "the cuda backend failed to start: %s",
				 ap_last_error());
			n = 0;
		}
	}
	return n > 0;
}

#define NEED_GPU()                                                              \
	do {                                                                    \
		if (!have_gpu()) {                                              \
			print_message("skipped: no CUDA device (%s)\n", why);   \
			skip();                                                 \
		}                                                               \
	} while (0)

static uint64_t rng_state = 2024;

static float urand(void)
{
	return (float)(2.0 * rng_unit(rng_state++) - 1.0);
}

/* an integer in [lo, hi] */
static int irand(int lo, int hi)
{
	return lo + (int)(rng_unit(rng_state++) * (hi - lo + 1));
}

static float *dev_of(const float *host, int64_t n)
{
	float *d = backend_cuda.alloc((size_t)(n > 0 ? n : 1) * sizeof(float));

	assert_non_null(d);
	assert_int_equal(backend_cuda.upload(d, host, (size_t)n * sizeof(float)), 0);
	return d;
}

static void compare(const char *what, const char *op, const float *cpu, const float *gpu_dev,
		    int64_t n)
{
	float *g = malloc((size_t)(n > 0 ? n : 1) * sizeof *g);

	double scale = 0;

	assert_non_null(g);
	assert_int_equal(backend_cuda.download(g, gpu_dev, (size_t)n * sizeof *g), 0);
	for (int64_t e = 0; e < n; e++)
		scale = fmax(scale, fabs((double)cpu[e]));
	for (int64_t e = 0; e < n; e++)
		if (!(fabs((double)g[e] - cpu[e]) <= tol + (fabs((double)cpu[e]) + scale) * eps)) {
			print_error("%s of '%s' element %lld: cpu %.8g, cuda %.8g\n", what, op,
				    (long long)e, (double)cpu[e], (double)g[e]);
			free(g);
			fail();
		}
	free(g);
}

/* One op of a model text run by both backends. */
struct pair {
	struct graph g;
	const struct op *op;
	struct kern k;
	struct kbufs c, d; /* host buffers for cpu, device ones for cuda */
	int64_t nin[KERN_MAX_IN], nout, nw, nws_c, nws_d;
};

static float *host_rand(int64_t n, int ids, int64_t vocab)
{
	float *h = calloc((size_t)(n > 0 ? n : 1), sizeof *h);

	assert_non_null(h);
	for (int64_t e = 0; e < n; e++)
		h[e] = ids ? (float)(int64_t)(rng_unit(rng_state++) * (double)vocab) : urand();
	return h;
}

/* The kern of shard i of deg along output dim d (deg 1: the whole op),
 * reading of its inputs what the executor gathers (op_input_need). */
static void shard_kern(struct pair *p, enum dim_kind d, int i, int deg)
{
	const struct op *op = p->op;
	int qo = shape_dim(&op->out, d);
	int64_t olo = 0, ohi = 1;
	struct region r;

	p->k.op = op;
	p->k.op_index = p->g.nops - 1;
	p->k.nin = op->nin;
	p->k.out = op->out;
	for (int q = 0; q < op->out.rank; q++)
		p->k.gsize[q] = op->out.size[q];
	if (qo >= 0) {
		olo = i * op->out.size[qo] / deg;
		ohi = (i + 1) * op->out.size[qo] / deg;
		p->k.out.size[qo] = ohi - olo;
		p->k.glo[qo] = olo;
	}
	if (d == DIM_C)
		p->k.c_lo = olo;
	for (int kk = 0; kk < op->nin; kk++) {
		const struct shape *x = &p->g.ops[op->in[kk]].out;

		for (int e = 0; e < NDIMS; e++) {
			int q = shape_dim(x, e);

			r.lo[e] = 0;
			r.hi[e] = q >= 0 ? x->size[q] : 1;
			if (q >= 0 && e == (int)d)
				op_input_need(&p->g, op, kk, d, i, deg, olo, ohi, x->size[q],
					      &r.lo[e], &r.hi[e]);
		}
		region_shape(x, &r, &p->k.in[kk]);
		for (int q = 0; q < x->rank; q++) {
			p->k.ilo[kk][q] = r.lo[x->kind[q]];
			p->k.igsize[kk][q] = x->size[q];
		}
	}
}

static void pair_setup(struct pair *p, const char *text, enum dim_kind d, int i, int deg)
{
	const struct op *op;
	const struct kernel_ops *kc, *kd;

	memset(p, 0, sizeof *p);
	graph_init(&p->g);
	assert_int_equal(model_parse(text, "cuda-test", 0, &p->g), 0);
	op = p->op = &p->g.ops[p->g.nops - 1];
	kc = backend_cpu.ops[op->kind];
	kd = backend_cuda.ops[op->kind];
	assert_non_null(kc);
	assert_non_null(kd);
	shard_kern(p, d, i, deg);
	for (int kk = 0; kk < op->nin; kk++) {
		p->nin[kk] = shape_elems(&p->k.in[kk]);
		p->c.in[kk] = host_rand(p->nin[kk], op->kind == OP_EMBEDDING, op->a.vocab);
		p->d.in[kk] = dev_of(p->c.in[kk], p->nin[kk]);
		if (op->kind != OP_EMBEDDING) {
			p->c.din[kk] = calloc((size_t)p->nin[kk], sizeof(float));
			p->d.din[kk] = dev_of(p->c.din[kk], p->nin[kk]);
		}
	}
	p->nw = op->params > 0 ? params_count(&p->g, p->k.op_index, shape_size(&p->k.out, DIM_C))
			       : 0;
	p->k.nparams = p->nw;
	if (p->nw) {
		float *w = host_rand(p->nw, 0, 0), *dw = host_rand(p->nw, 0, 0);

		/* dw starts non-zero: kernels must add to it */
		p->c.w = w;
		p->c.dw = dw;
		p->d.w = dev_of(w, p->nw);
		p->d.dw = dev_of(dw, p->nw);
	}
	p->nout = shape_elems(&p->k.out);
	p->c.out = calloc((size_t)p->nout, sizeof(float));
	p->d.out = dev_of(p->c.out, p->nout);
	p->c.dout = host_rand(p->nout, 0, 0);
	p->d.dout = dev_of(p->c.dout, p->nout);
	p->nws_c = kc->ws_floats ? kc->ws_floats(&p->k) : 0;
	p->nws_d = kd->ws_floats ? kd->ws_floats(&p->k) : 0;
	p->c.ws = calloc((size_t)p->nws_c + 1, sizeof(float));
	p->d.ws = backend_cuda.alloc((size_t)(p->nws_d + 1) * sizeof(float));
	if (op->kind == OP_LOSS) {
		int64_t classes = shape_size(&p->k.in[0], DIM_C);
		float *y = host_rand(p->nout, 1, classes);

		p->c.labels = y;
		p->d.labels = dev_of(y, p->nout);
	}
	p->c.salt = p->d.salt = 77;
	p->c.n0 = p->d.n0 = 3;
}

static void pair_release(struct pair *p)
{
	for (int kk = 0; kk < KERN_MAX_IN; kk++) {
		free((void *)p->c.in[kk]);
		free(p->c.din[kk]);
		backend_cuda.release((void *)p->d.in[kk]);
		backend_cuda.release(p->d.din[kk]);
	}
	free((void *)p->c.w);
	free(p->c.dw);
	free(p->c.out);
	free((void *)p->c.dout);
	free(p->c.ws);
	free((void *)p->c.labels);
	backend_cuda.release((void *)p->d.w);
	backend_cuda.release(p->d.dw);
	backend_cuda.release(p->d.out);
	backend_cuda.release((void *)p->d.dout);
	backend_cuda.release(p->d.ws);
	backend_cuda.release((void *)p->d.labels);
	graph_release(&p->g);
}

/* Forward and backward of the kern p holds on both backends; every
 * result compared. */
static void pair_check(struct pair *p)
{
	const char *name = p->op->name;

	assert_int_equal(backend_cpu.ops[p->op->kind]->fwd(&p->k, &p->c), 0);
	assert_int_equal(backend_cuda.ops[p->op->kind]->fwd(&p->k, &p->d), 0);
	compare("forward", name, p->c.out, p->d.out, p->nout);
	assert_int_equal(backend_cpu.ops[p->op->kind]->bwd(&p->k, &p->c), 0);
	assert_int_equal(backend_cuda.ops[p->op->kind]->bwd(&p->k, &p->d), 0);
	for (int kk = 0; kk < p->k.nin; kk++)
		if (p->c.din[kk])
			compare("input gradient", name, p->c.din[kk], p->d.din[kk], p->nin[kk]);
	if (p->nw)
		compare("weight gradient", name, p->c.dw, p->d.dw, p->nw);
	assert_int_equal(backend_cuda.sync(), 0);
}

/* Forward and backward of shard i of deg along d on both backends; every
 * result compared. */
static void same_shard(const char *text, enum dim_kind d, int i, int deg)
{
	struct pair p;

	pair_setup(&p, text, d, i, deg);
	pair_check(&p);
	pair_release(&p);
}

static void same(const char *text)
{
	same_shard(text, DIM_N, 0, 1);
}

#define HEAD "model t\nbatch %d\n"

static void test_conv(void **state)
{
	char m[512];

	(void)state;
	NEED_GPU();
	for (int r = 0; r < 4; r++) {
		int k = irand(1, 3), s = irand(1, 2), pad = irand(0, k / 2), g = r % 2 ? 2 : 1;

		snprintf(m, sizeof m, HEAD "input x c=%d h=%d w=%d\nconv2d y x out=%d k=%d stride=%d pad=%d groups=%d bias=%d\n",
			 irand(1, 4), 2 * irand(1, 4), irand(5, 11), irand(5, 11), 2 * irand(1, 4), k,
			 s, pad, g, r % 3 != 2);
		same(m);
	}
}

static void test_pool(void **state)
{
	char m[512];

	(void)state;
	NEED_GPU();
	for (int r = 0; r < 3; r++) {
		int n = irand(1, 3), c = irand(1, 4), h = irand(6, 12), w = irand(6, 12);

		snprintf(m, sizeof m, HEAD "input x c=%d h=%d w=%d\nmaxpool y x k=3 stride=2 pad=1\n",
			 n, c, h, w);
		same(m);
		/* ceil mode: the own kernel; floor mode: cuDNN */
		snprintf(m, sizeof m, HEAD "input x c=%d h=%d w=%d\navgpool y x k=3 stride=2 pad=1 ceil=%d\n",
			 n, c, h, w, r % 2);
		same(m);
		snprintf(m, sizeof m, HEAD "input x c=%d h=%d w=%d\nadaptive_avgpool y x out=%d\n", n, c,
			 h, w, irand(1, 5));
		same(m);
	}
}

static void test_dense(void **state)
{
	char m[512];

	(void)state;
	NEED_GPU();
	for (int r = 0; r < 3; r++) {
		int n = irand(1, 4), l = irand(1, 6), c = irand(1, 9), o = irand(1, 9);

		snprintf(m, sizeof m, HEAD "input x l=%d c=%d\nlinear y x out=%d bias=%d\n", n, l, c, o,
			 r != 1);
		same(m);
		snprintf(m, sizeof m, HEAD "input a l=%d c=%d\ninput b l=%d c=%d\nmatmul y a b\n", n, l,
			 c, c, o);
		same(m);
		snprintf(m, sizeof m, HEAD "input a l=%d c=%d\ninput b l=%d c=%d\nmatmul y a b trans_b=1\n",
			 n, l, c, o, c);
		same(m);
		snprintf(m, sizeof m, HEAD "input ids l=%d\nembedding y ids vocab=%d out=%d\n", n, l,
			 irand(2, 20), o);
		same(m);
	}
	/* the bias gradient's column sum over more rows than its vector of
	 * ones holds at first (4096), then more than twice that: it grows */
	snprintf(m, sizeof m, HEAD "input x l=2000 c=8\nlinear y x out=5\n", 3);
	same(m);
	snprintf(m, sizeof m, HEAD "input x l=4100 c=3\nlinear y x out=33\n", 4);
	same(m);
}

static void test_elementwise(void **state)
{
	static const char *const act[] = { "relu", "gelu", "tanh", "sigmoid" };
	char m[512];

	(void)state;
	NEED_GPU();
	for (int r = 0; r < 2; r++) {
		int n = irand(1, 4), c = irand(1, 9), l = irand(1, 7);

		for (size_t a = 0; a < sizeof act / sizeof act[0]; a++) {
			snprintf(m, sizeof m, HEAD "input x c=%d l=%d\n%s y x\n", n, c, l, act[a]);
			same(m);
		}
		snprintf(m, sizeof m, HEAD "input x c=%d\ninput z c=%d\ninput u c=%d\nadd y x z u\n", n,
			 c, c, c);
		same(m);
		snprintf(m, sizeof m, HEAD "input x c=%d\ninput z c=%d\ninput u c=%d\nmul y x z u\n", n,
			 c, c, c);
		same(m);
		snprintf(m, sizeof m, HEAD "input x c=%d h=3 w=2\ninput z c=%d h=3 w=2\nconcat y x z\n",
			 n, c, irand(1, 5));
		same(m);
		snprintf(m, sizeof m, HEAD "input x c=%d l=%d\nflatten y x\n", n, c, l);
		same(m);
		snprintf(m, sizeof m, HEAD "input x c=%d l=%d\ndropout y x p=0.%d\n", n, c, l,
			 irand(1, 8));
		same(m);
	}
}

static void test_norm(void **state)
{
	char m[512];

	(void)state;
	NEED_GPU();
	for (int r = 0; r < 3; r++) {
		int n = irand(1, 4), c = irand(2, 40), l = irand(1, 6);

		snprintf(m, sizeof m, HEAD "input x l=%d c=%d\nlayernorm y x\n", n, l, c);
		same(m);
		snprintf(m, sizeof m, HEAD "input x l=%d c=%d\nsoftmax y x\n", n, l, c);
		same(m);
		snprintf(m, sizeof m, HEAD "input x c=%d l=%d\nsoftmax y x dim=c\n", n, c, l);
		same(m);
		snprintf(m, sizeof m, HEAD "input x c=%d\nloss y x\n", n, c);
		same(m);
		snprintf(m, sizeof m, HEAD "input x l=%d c=%d\nloss y x\n", n, l, c);
		same(m);
		snprintf(m, sizeof m, HEAD "input x c=%d h=%d w=3\nbatchnorm y x\n", n, c, l);
		same(m);
		snprintf(m, sizeof m, HEAD "input x l=%d c=%d\nbatchnorm y x\n", n, l, c);
		same(m);
	}
}

/* The normalising kernels where they take their edge paths: rows of odd
 * length (whose starts fall at every phase of a float4), rows longer
 * than a block's 1024 threads take in one step, row counts that are no
 * multiple of the weight gradient's tiles of 32 columns and their chunks
 * of rows, and lines along a dim other than the last (a thread each). */
static void test_norm_shapes(void **state)
{
	(void)state;
	NEED_GPU();
	same("model t\nbatch 5\ninput x l=37 c=45\nlayernorm y x\n");
	same("model t\nbatch 1\ninput x l=3 c=9001\nlayernorm y x\n");
	same("model t\nbatch 2\ninput x l=64 c=768\nlayernorm y x\n");
	same("model t\nbatch 3\ninput x l=300 c=7\nlayernorm y x\n");
	same("model t\nbatch 2\ninput x l=3 c=5001\nsoftmax y x\n");
	same("model t\nbatch 2\ninput x l=5 c=1024\nsoftmax y x\n");
	same("model t\nbatch 3\ninput x c=33 l=7\nsoftmax y x dim=c\n");
}

/* Layernorm's backward in zero bubble's two passes (backend.h): the
 * input gradient alone (dw NULL), then the weight gradient alone (din
 * NULL), against the CPU's backward in one. */
static void test_norm_passes(void **state)
{
	struct pair p;
	float *dw, *dx;

	(void)state;
	NEED_GPU();
	pair_setup(&p, "model t\nbatch 3\ninput x l=37 c=45\nlayernorm y x\n", DIM_N, 0, 1);
	assert_true(backend_cuda.ops[OP_LAYERNORM]->weight_pass);
	assert_int_equal(backend_cpu.ops[OP_LAYERNORM]->fwd(&p.k, &p.c), 0);
	assert_int_equal(backend_cuda.ops[OP_LAYERNORM]->fwd(&p.k, &p.d), 0);
	assert_int_equal(backend_cpu.ops[OP_LAYERNORM]->bwd(&p.k, &p.c), 0);
	dw = p.d.dw;
	p.d.dw = NULL;
	assert_int_equal(backend_cuda.ops[OP_LAYERNORM]->bwd(&p.k, &p.d), 0);
	p.d.dw = dw;
	dx = p.d.din[0];
	p.d.din[0] = NULL;
	assert_int_equal(backend_cuda.ops[OP_LAYERNORM]->bwd(&p.k, &p.d), 0);
	p.d.din[0] = dx;
	compare("input gradient (B pass)", p.op->name, p.c.din[0], p.d.din[0], p.nin[0]);
	compare("weight gradient (W pass)", p.op->name, p.c.dw, p.d.dw, p.nw);
	assert_int_equal(backend_cuda.sync(), 0);
	pair_release(&p);
}

/* The fused softmax cross-entropy: GPT-2's vocabulary over a few
 * positions (a block per position, many steps each), aligned rows of
 * 1000 classes, and classes along c with l after (a thread per
 * position). */
static void test_loss_fused(void **state)
{
	(void)state;
	NEED_GPU();
	same("model t\nbatch 1\ninput x l=3 c=50257\nloss y x\n");
	same("model t\nbatch 2\ninput x c=50257\nloss y x\n");
	same("model t\nbatch 4\ninput x l=9 c=1000\nloss y x\n");
	same("model t\nbatch 3\ninput x c=37 l=11\nloss y x\n");
}

/* Batchnorm in both layouts of its channel sums: planes of h x w (400
 * floats, four at a time; 49, one at a time; 1600, several steps of a
 * block) and columns (3 x 3 after the channels, and none: (n, l, c));
 * then groups of samples (kern.stat_mb, as --check's reference), one of
 * them a single sample. */
static void test_batchnorm_layouts(void **state)
{
	static const char *const groups[] = {
		"model t\nbatch 5\ninput x c=3 h=5 w=8\nbatchnorm y x\n",
		"model t\nbatch 5\ninput x l=6 c=10\nbatchnorm y x\n",
	};
	struct pair p;

	(void)state;
	NEED_GPU();
	same("model t\nbatch 2\ninput x c=3 h=20 w=20\nbatchnorm y x\n");
	same("model t\nbatch 4\ninput x c=5 h=7 w=7\nbatchnorm y x\n");
	same("model t\nbatch 2\ninput x c=3 h=40 w=40\nbatchnorm y x\n");
	same("model t\nbatch 2\ninput x c=200 h=6 w=6\nbatchnorm y x\n");
	same("model t\nbatch 3\ninput x c=6 h=3 w=3\nbatchnorm y x\n");
	same("model t\nbatch 4\ninput x l=50 c=70\nbatchnorm y x\n");
	for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
		pair_setup(&p, groups[g], DIM_N, 0, 1);
		p.k.stat_mb = 2;
		p.k.stat_deg = 1;
		pair_check(&p);
		pair_release(&p);
	}
}

/* The element-wise kernels four floats at a time (2 x 6 x 50 elements)
 * and one at a time (3 x 5 x 7), sums and products of five inputs. */
static void test_elem_vector(void **state)
{
	static const char *const act[] = { "relu", "gelu", "tanh", "sigmoid" };
	static const int size[2][3] = { { 2, 6, 50 }, { 3, 5, 7 } };
	char m[512];

	(void)state;
	NEED_GPU();
	for (int r = 0; r < 2; r++) {
		int n = size[r][0], c = size[r][1], l = size[r][2];

		for (size_t a = 0; a < sizeof act / sizeof act[0]; a++) {
			snprintf(m, sizeof m, HEAD "input x c=%d l=%d\n%s y x\n", n, c, l, act[a]);
			same(m);
		}
		for (int mul = 0; mul < 2; mul++) {
			snprintf(m, sizeof m,
				 HEAD "input a c=%d l=%d\ninput b c=%d l=%d\ninput d c=%d l=%d\n"
				      "input e c=%d l=%d\ninput f c=%d l=%d\n%s y a b d e f\n",
				 n, c, l, c, l, c, l, c, l, c, l, mul ? "mul" : "add");
			same(m);
		}
		snprintf(m, sizeof m, HEAD "input x c=%d l=%d\ndropout y x p=0.3\n", n, c, l);
		same(m);
	}
}

/* Attention whole and as the executor splits it: along l (a band of
 * queries against whole keys, the causal mask offset by the band's
 * place; a separate query input gathered as that band) and along c (the
 * shard's heads; without csum the other heads' context is 0 on both). */
static void test_attention(void **state)
{
	char m[512];

	(void)state;
	NEED_GPU();
	for (int r = 0; r < 3; r++) {
		int n = irand(1, 3), h = irand(1, 3), d = irand(1, 5), l = irand(2, 9);
		int lk = irand(1, 7), c = 2 * h * d;

		snprintf(m, sizeof m, HEAD "input x l=%d c=%d\nattention y x heads=%d causal=%d bias=%d\n",
			 n, l, c, 2 * h, r != 1, r != 2);
		same(m);
		same_shard(m, DIM_L, irand(0, 1), 2);
		same_shard(m, DIM_C, 1, 2);
		snprintf(m, sizeof m, HEAD "input q l=%d c=%d\ninput kv l=%d c=%d\n"
			 "attention y q kv heads=%d causal=%d\n", n, l, c, lk, c, 2 * h, r == 0);
		same(m);
		same_shard(m, DIM_L, 1, 2);
		same_shard(m, DIM_C, 0, 2);
	}
}

/* Attention at the shapes the batched kernel must get right beyond
 * test_attention's: score rows longer than a warp and not a multiple of
 * it, many (sample, head) pairs, wide heads, queries and keys of
 * different lengths, bands of three along l; and a sequence long enough
 * that the backward takes its score gradients in more than one chunk. */
static void test_attention_shapes(void **state)
{
	char m[512];

	(void)state;
	NEED_GPU();
	for (int r = 0; r < 4; r++) {
		int n = irand(2, 4), h = r == 3 ? 1 : irand(1, 3), d = r == 3 ? 128 : irand(1, 24);
		int l = irand(33, 90), lk = irand(20, 70), c = 2 * h * d;

		snprintf(m, sizeof m, HEAD "input x l=%d c=%d\nattention y x heads=%d causal=%d bias=%d\n",
			 n, l, c, 2 * h, r % 2 == 0, r != 1);
		same(m);
		same_shard(m, DIM_L, irand(0, 2), 3);
		same_shard(m, DIM_C, irand(0, 1), 2);
		snprintf(m, sizeof m, HEAD "input q l=%d c=%d\ninput kv l=%d c=%d\n"
			 "attention y q kv heads=%d causal=%d bias=%d\n", n, l, c, lk, c, 2 * h,
			 r % 2 == 1, r != 2);
		same(m);
		same_shard(m, DIM_L, irand(0, 2), 3);
		same_shard(m, DIM_C, irand(0, 1), 2);
	}
	/* 3 samples of 2 heads x 1000 x 1000 scores (2M floats each): the
	 * backward's chunks of 2 samples (cuda_attn.cu DS_CAP_FLOATS), the
	 * last one short */
	for (int causal = 0; causal < 2; causal++) {
		snprintf(m, sizeof m, HEAD "input x l=1000 c=4\nattention y x heads=2 causal=%d bias=%d\n",
			 3, causal, causal);
		same(m);
	}
}

/* Rows of 2049 scores, one sample's 2049 x 2049 more than the backward's
 * 16 MiB of score gradients (cuda_attn.cu DS_CAP_FLOATS): a chunk of one
 * sample, an odd number of floats, so the address table after it starts
 * at an odd float offset in the workspace, and its addresses must still
 * be rounded up to 8 bytes (cuBLAS loads them as pointers). */
static void test_attention_odd_table(void **state)
{
	(void)state;
	NEED_GPU();
	same("model t\nbatch 2\ninput x l=2049 c=2\nattention y x heads=1 causal=1 bias=1\n");
}

/* The executor's own moves and the optimizer. */
static void test_memory_and_optimizer(void **state)
{
	struct shape s = { .rank = 3, .kind = { DIM_N, DIM_C, DIM_L }, .size = { 4, 6, 5 } };
	struct region whole = { { 0, 0, 0, 0, 0 }, { 4, 6, 1, 1, 5 } };
	struct region part = { { 1, 2, 0, 0, 1 }, { 3, 5, 1, 1, 4 } };
	int64_t n = 4 * 6 * 5, np = 2 * 3 * 3;
	float *a, *b, *v, *g, *c, *da, *db, *dv, *dg, *dc;

	(void)state;
	NEED_GPU();
	a = host_rand(n, 0, 0), b = host_rand(np, 0, 0), v = host_rand(n, 0, 0);
	g = host_rand(n, 0, 0), c = host_rand(6 * 7, 0, 0);
	da = dev_of(a, n), db = dev_of(b, np), dv = dev_of(v, n), dg = dev_of(g, n);
	dc = dev_of(c, 6 * 7);
	/* gather a part, then add it back */
	region_copy(&s, &part, b, &part, a, &whole, 0);
	assert_int_equal(backend_cuda.region_copy(&s, &part, db, &part, da, &whole, 0), 0);
	compare("region copy", "-", b, db, np);
	region_copy(&s, &part, a, &whole, b, &part, 1);
	assert_int_equal(backend_cuda.region_copy(&s, &part, da, &whole, db, &part, 1), 0);
	compare("region add", "-", a, da, n);
	backend_cpu.sgd(a, v, g, n, 0.1f, 0.9f);
	backend_cuda.sgd(da, dv, dg, n, 0.1f, 0.9f);
	compare("sgd weights", "-", a, da, n);
	compare("sgd momentum", "-", v, dv, n);
	backend_cpu.predict(g, a, v, n, 0.3f);
	backend_cuda.predict(dg, da, dv, n, 0.3f);
	compare("predict", "-", g, dg, n);
	backend_cpu.gemm(0, 1, 6, 7, 5, 1.5f, a, 5, v, 5, 0.5f, c, 7);
	backend_cuda.gemm(0, 1, 6, 7, 5, 1.5f, da, 5, dv, 5, 0.5f, dc, 7);
	compare("gemm", "-", c, dc, 6 * 7);
	assert_int_equal(backend_cuda.fill(dg, n, 0.25f), 0);
	backend_cpu.fill(g, n, 0.25f);
	compare("fill", "-", g, dg, n);
	assert_int_equal(backend_cuda.sync(), 0);
	free(a), free(b), free(v), free(g), free(c);
	backend_cuda.release(da), backend_cuda.release(db), backend_cuda.release(dv);
	backend_cuda.release(dg), backend_cuda.release(dc);
}

/* The lines --verbose has written to f so far. */
static int lines_of(FILE *f, char *text, size_t len)
{
	size_t n;
	int lines = 0;

	fflush(f);
	rewind(f);
	n = fread(text, 1, len - 1, f);
	text[n] = 0;
	for (size_t q = 0; q < n; q++)
		lines += text[q] == '\n';
	fseek(f, 0, SEEK_END);
	return lines;
}

/* One convolution shape (out=12: none of test_conv's) in fp32, then in
 * tf32 (gpu_opts.h): each precision's first call searches the three
 * directions (a --verbose line each), its second finds them in the cache
 * (no line); tf32 agrees with the CPU within TF32's round-off (10 bits of
 * mantissa: 2^-11 relative per input, summed over 54 to 300 products
 * here).  A linear layer in tf32 as well: cuBLAS's math mode follows. */
static void test_conv_precision(void **state)
{
	FILE *f = tmpfile();
	char conv[256], linear[256], text[4096];

	(void)state;
	NEED_GPU();
	assert_non_null(f);
	snprintf(conv, sizeof conv,
		 HEAD "input x c=6 h=10 w=10\nconv2d y x out=12 k=3 stride=1 pad=1 bias=1\n", 3);
	snprintf(linear, sizeof linear, HEAD "input x l=7 c=96\nlinear y x out=80 bias=1\n", 3);
	gpu_opts_set(GPU_FP32, f);
	same(conv);
	assert_int_equal(lines_of(f, text, sizeof text), 3);
	assert_non_null(strstr(text, "conv n=3 c=6 h=10 w=10 k=12 r=3 s=3 stride=1x1 pad=1x1 "
				     "dilation=1x1 groups=1 fp32, forward: "));
	assert_non_null(strstr(text, " fp32, backward data: "));
	assert_non_null(strstr(text, " fp32, backward filter: "));
	/* fp32 runs FMA kernels only */
	assert_null(strstr(text, "(tf32"));
	same(conv);
	assert_int_equal(lines_of(f, text, sizeof text), 3);
	gpu_opts_set(GPU_TF32, f);
	tol = 5e-2, eps = 1e-2;
	same(conv);
	assert_int_equal(lines_of(f, text, sizeof text), 6);
	assert_non_null(strstr(text, " tf32, forward: "));
	assert_non_null(strstr(text, " tf32, backward filter: "));
	/* every choice came from the search, none from the heuristics'
	 * fallback (which keeps a run going but says why the search failed) */
	assert_null(strstr(text, "heuristic choice"));
	same(conv);
	assert_int_equal(lines_of(f, text, sizeof text), 6);
	same(linear);
	tol = TOL, eps = EPS;
	gpu_opts_set(GPU_FP32, NULL);
	fclose(f);
}

/* A bad label is an error, not a wrong number. */
static void test_bad_label(void **state)
{
	struct pair p;

	(void)state;
	NEED_GPU();
	pair_setup(&p, "model t\nbatch 2\ninput x c=3\nloss y x\n", DIM_N, 0, 1);
	{
		float bad[2] = { 1, 7 };

		assert_int_equal(backend_cuda.upload((void *)p.d.labels, bad, sizeof bad), 0);
	}
	ap_err_quiet(1);
	assert_int_not_equal(backend_cuda.ops[OP_LOSS]->fwd(&p.k, &p.d), 0);
	ap_err_quiet(0);
	pair_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_and_optimizer),
		cmocka_unit_test(test_conv),
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_dense),
		cmocka_unit_test(test_elementwise),
		cmocka_unit_test(test_norm),
		cmocka_unit_test(test_norm_shapes),
		cmocka_unit_test(test_norm_passes),
		cmocka_unit_test(test_loss_fused),
		cmocka_unit_test(test_batchnorm_layouts),
		cmocka_unit_test(test_elem_vector),
		cmocka_unit_test(test_attention),
		cmocka_unit_test(test_attention_shapes),
		cmocka_unit_test(test_attention_odd_table),
		cmocka_unit_test(test_bad_label),
		cmocka_unit_test(test_conv_precision),
	};

	if (!have_gpu())
		printf("test_cuda_kernels: no CUDA device (%s): every test skips\n", why);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
