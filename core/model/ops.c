/*
 * What every operator kind computes: its output shape, multiply-accumulates,
 * parameters, element-wise work and splittable dims (models/FORMAT.md has
 * the formulas), and the canonical signature of a shard that profiles are
 * keyed by.  One table row per kind; graph_finalize() runs the rules over
 * the graph in topological order.
 */
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/err.h"
#include "model/ops.h"

#define ALL_DIMS ((1u << NDIMS) - 1)
#define BIT(d) (1u << (d))

struct rule {
	const char *name;
	int min_in, max_in; /* max_in < 0: any number */
	int (*infer)(const struct graph *g, struct op *op, char *why, size_t len);
};

static const struct shape *in_shape(const struct graph *g, const struct op *op, int k)
{
	return &g->ops[op->in[k]].out;
}

static unsigned dims_mask(const struct shape *s)
{
	unsigned m = 0;

	for (int i = 0; i < s->rank; i++)
		m |= BIT(s->kind[i]);
	return m;
}

static int fail(char *why, size_t len, const char *fmt, const char *a)
{
	snprintf(why, len, fmt, a);
	return -1;
}

static int need_dim(const struct graph *g, const struct op *op, int k,
		    enum dim_kind d, char *why, size_t len)
{
	if (shape_dim(in_shape(g, op, k), d) >= 0)
		return 0;
	snprintf(why, len, "input '%s' has no '%s' dim (expected one for %s)",
		 g->ops[op->in[k]].name, dim_name(d), op->name);
	return -1;
}

/* Output size of a sliding window, as PyTorch computes it. */
static int64_t window_out(int64_t in, int k, int s, int p, int ceil_mode)
{
	int64_t span = in + 2 * p - k;
	int64_t out;

	if (span < 0)
		return 0;
	out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
	/* the last window must start inside the input or left padding */
	if (ceil_mode && (out - 1) * s >= in + p)
		out--;
	return out;
}

static int infer_input(const struct graph *g, struct op *op, char *why, size_t len)
{
	(void)g;
	if (op->a.target.rank < 1)
		return fail(why, len, "input '%s' needs its dims (e.g. c=3 h=224 w=224)",
			    op->name);
	op->out = op->a.target;
	op->split_mask = dims_mask(&op->out);
	return 0;
}

static int infer_conv2d(const struct graph *g, struct op *op, char *why, size_t len)
{
	const struct shape *x = in_shape(g, op, 0);
	const struct op_attrs *a = &op->a;
	int64_t c, oh, ow, n = x->size[0];

	if (x->rank != 4 || x->kind[1] != DIM_C || x->kind[2] != DIM_H ||
	    x->kind[3] != DIM_W)
		return fail(why, len, "input of '%s' must be (n, c, h, w)", op->name);
	if (a->out <= 0 || a->kh <= 0)
		return fail(why, len, "conv2d '%s' needs out= and k=", op->name);
	c = x->size[1];
	if (c % a->groups || a->out % a->groups)
		return fail(why, len, "groups of '%s' must divide its in and out channels",
			    op->name);
	oh = window_out(x->size[2], a->kh, a->sh, a->ph, 0);
	ow = window_out(x->size[3], a->kw, a->sw, a->pw, 0);
	if (oh <= 0 || ow <= 0)
		return fail(why, len, "kernel of '%s' is larger than its padded input",
			    op->name);
	op->out = *x;
	op->out.size[1] = a->out;
	op->out.size[2] = oh;
	op->out.size[3] = ow;
	op->params = sat_add(SAT_PROD(a->out, c / a->groups, a->kh, a->kw), a->bias ? a->out : 0);
	op->fwd_macs = SAT_PROD(n, a->out, oh, ow, c / a->groups, a->kh, a->kw);
	op->fwd_elems = shape_elems(&op->out);
	op->split_mask = ALL_DIMS & ~BIT(DIM_L);
	return 0;
}

static int infer_pool(const struct graph *g, struct op *op, char *why, size_t len)
{
	const struct shape *x = in_shape(g, op, 0);
	const struct op_attrs *a = &op->a;
	int64_t oh, ow;

	if (x->rank != 4 || x->kind[2] != DIM_H || x->kind[3] != DIM_W)
		return fail(why, len, "input of '%s' must be (n, c, h, w)", op->name);
	if (a->kh <= 0)
		return fail(why, len, "pool '%s' needs k=", op->name);
	if (2 * a->ph > a->kh || 2 * a->pw > a->kw)
		return fail(why, len, "padding of '%s' must be at most half its kernel",
			    op->name);
	oh = window_out(x->size[2], a->kh, a->sh, a->ph, a->ceil_mode);
	ow = window_out(x->size[3], a->kw, a->sw, a->pw, a->ceil_mode);
	if (oh <= 0 || ow <= 0)
		return fail(why, len, "kernel of '%s' is larger than its padded input",
			    op->name);
	op->out = *x;
	op->out.size[2] = oh;
	op->out.size[3] = ow;
	op->fwd_elems = SAT_PROD(shape_elems(&op->out), a->kh, a->kw);
	op->split_mask = dims_mask(&op->out);
	return 0;
}

static int infer_adaptive(const struct graph *g, struct op *op, char *why, size_t len)
{
	const struct shape *x = in_shape(g, op, 0);

	if (x->rank != 4 || x->kind[2] != DIM_H || x->kind[3] != DIM_W)
		return fail(why, len, "input of '%s' must be (n, c, h, w)", op->name);
	if (op->a.out_h <= 0 || op->a.out_w <= 0)
		return fail(why, len, "adaptive_avgpool '%s' needs out= (1 for global)",
			    op->name);
	op->out = *x;
	op->out.size[2] = op->a.out_h;
	op->out.size[3] = op->a.out_w;
	op->fwd_elems = shape_elems(x);
	op->split_mask = BIT(DIM_N) | BIT(DIM_C);
	return 0;
}

static int infer_linear(const struct graph *g, struct op *op, char *why, size_t len)
{
	const struct shape *x = in_shape(g, op, 0);
	int ci = shape_dim(x, DIM_C);
	int64_t cin;

	if (need_dim(g, op, 0, DIM_C, why, len))
		return -1;
	if (op->a.out <= 0)
		return fail(why, len, "linear '%s' needs out=", op->name);
	cin = x->size[ci];
	op->out = *x;
	op->out.size[ci] = op->a.out;
	if (op->a.tie >= 0) {
		/* A tied weight is the transpose of an embedding table, as in
		 * GPT-2's output layer. */
		const struct op *t = &g->ops[op->a.tie];

		if (t->kind != OP_EMBEDDING || t->a.vocab != op->a.out || t->a.out != cin)
			return fail(why, len, "tie of '%s' must name an embedding of "
				    "vocab=out and out=its input features", op->name);
		op->params = op->a.bias ? op->a.out : 0;
	} else {
		op->params = sat_add(sat_mul(cin, op->a.out), op->a.bias ? op->a.out : 0);
	}
	op->fwd_macs = sat_mul(shape_elems(&op->out), cin);
	op->fwd_elems = shape_elems(&op->out);
	op->split_mask = dims_mask(&op->out) & (BIT(DIM_N) | BIT(DIM_C) | BIT(DIM_L));
	return 0;
}

static int infer_matmul(const struct graph *g, struct op *op, char *why, size_t len)
{
	const struct shape *a = in_shape(g, op, 0), *b = in_shape(g, op, 1);
	int r = a->rank;
	int64_t k, ncol, bk;

	if (r < 2 || b->rank != r)
		return fail(why, len, "inputs of matmul '%s' must have the same rank >= 2",
			    op->name);
	for (int i = 0; i < r - 2; i++)
		if (a->size[i] != b->size[i])
			return fail(why, len, "batch dims of matmul '%s' differ", op->name);
	k = a->size[r - 1];
	bk = op->a.trans_b ? b->size[r - 1] : b->size[r - 2];
	ncol = op->a.trans_b ? b->size[r - 2] : b->size[r - 1];
	if (k != bk)
		return fail(why, len, "inner dims of matmul '%s' differ", op->name);
	op->out = *a;
	op->out.size[r - 1] = ncol;
	op->fwd_macs = sat_mul(shape_elems(&op->out), k);
	op->fwd_elems = shape_elems(&op->out);
	op->split_mask = dims_mask(&op->out);
	return 0;
}

static int infer_unary(const struct graph *g, struct op *op, char *why, size_t len)
{
	(void)why, (void)len;
	op->out = *in_shape(g, op, 0);
	op->fwd_elems = shape_elems(&op->out);
	op->split_mask = dims_mask(&op->out);
	if (op->kind == OP_DROPOUT && (op->a.p < 0 || op->a.p >= 1))
		return fail(why, len, "dropout '%s' needs 0 <= p < 1", op->name);
	return 0;
}

static int same_shape(const struct shape *a, const struct shape *b)
{
	if (a->rank != b->rank)
		return 0;
	for (int i = 0; i < a->rank; i++)
		if (a->kind[i] != b->kind[i] || a->size[i] != b->size[i])
			return 0;
	return 1;
}

static int infer_elementwise(const struct graph *g, struct op *op, char *why, size_t len)
{
	op->out = *in_shape(g, op, 0);
	for (int k = 1; k < op->nin; k++)
		if (!same_shape(in_shape(g, op, k), &op->out))
			return fail(why, len, "inputs of '%s' must have the same shape",
				    op->name);
	op->fwd_elems = sat_mul(shape_elems(&op->out), op->nin);
	op->split_mask = dims_mask(&op->out);
	return 0;
}

static enum dim_kind axis_or(const struct op *op, enum dim_kind d)
{
	return op->a.axis == NDIMS ? d : op->a.axis;
}

static int infer_concat(const struct graph *g, struct op *op, char *why, size_t len)
{
	enum dim_kind d = axis_or(op, DIM_C);
	int di = shape_dim(in_shape(g, op, 0), d);

	if (di < 0)
		return need_dim(g, op, 0, d, why, len);
	op->out = *in_shape(g, op, 0);
	for (int k = 1; k < op->nin; k++) {
		const struct shape *s = in_shape(g, op, k);

		if (s->rank != op->out.rank)
			return fail(why, len, "inputs of concat '%s' differ in rank", op->name);
		for (int i = 0; i < s->rank; i++) {
			if (s->kind[i] != op->out.kind[i] ||
			    (i != di && s->size[i] != op->out.size[i]))
				return fail(why, len, "inputs of concat '%s' differ "
					    "outside the concat dim", op->name);
		}
		op->out.size[di] = sat_add(op->out.size[di], s->size[di]);
	}
	op->fwd_elems = shape_elems(&op->out);
	op->split_mask = dims_mask(&op->out);
	return 0;
}

static int infer_split(const struct graph *g, struct op *op, char *why, size_t len)
{
	enum dim_kind d = axis_or(op, DIM_C);
	int di = shape_dim(in_shape(g, op, 0), d);

	if (di < 0)
		return need_dim(g, op, 0, d, why, len);
	op->out = *in_shape(g, op, 0);
	if (op->a.parts <= 0 || op->out.size[di] % op->a.parts)
		return fail(why, len, "parts= of split '%s' must divide its dim", op->name);
	if (op->a.index < 0 || op->a.index >= op->a.parts)
		return fail(why, len, "index= of split '%s' must be in [0, parts)",
			    op->name);
	op->out.size[di] /= op->a.parts;
	op->fwd_elems = shape_elems(&op->out);
	op->split_mask = dims_mask(&op->out);
	return 0;
}

static int infer_norm(const struct graph *g, struct op *op, char *why, size_t len)
{
	if (need_dim(g, op, 0, DIM_C, why, len))
		return -1;
	op->out = *in_shape(g, op, 0);
	op->params = sat_mul(2, shape_size(&op->out, DIM_C));
	/* mean, variance, normalise, scale: a few passes over the tensor */
	op->fwd_elems = sat_mul(4, shape_elems(&op->out));
	op->split_mask = dims_mask(&op->out);
	if (op->kind == OP_LAYERNORM)
		op->split_mask &= ~BIT(DIM_C);
	return 0;
}

static int infer_softmax(const struct graph *g, struct op *op, char *why, size_t len)
{
	const struct shape *x = in_shape(g, op, 0);
	enum dim_kind d = axis_or(op, x->kind[x->rank - 1]);

	if (shape_dim(x, d) < 0)
		return need_dim(g, op, 0, d, why, len);
	op->out = *x;
	op->fwd_elems = sat_mul(3, shape_elems(x));
	op->split_mask = dims_mask(x) & ~BIT(d);
	return 0;
}

static int infer_embedding(const struct graph *g, struct op *op, char *why, size_t len)
{
	const struct shape *x = in_shape(g, op, 0);

	if (shape_dim(x, DIM_C) >= 0 || x->rank >= MAX_RANK)
		return fail(why, len, "input of embedding '%s' must be ids without a "
			    "'c' dim", op->name);
	if (op->a.vocab <= 0 || op->a.out <= 0)
		return fail(why, len, "embedding '%s' needs vocab= and out=", op->name);
	op->out = *x;
	op->out.kind[op->out.rank] = DIM_C;
	op->out.size[op->out.rank++] = op->a.out;
	op->params = sat_mul(op->a.vocab, op->a.out);
	op->fwd_elems = shape_elems(&op->out);
	op->split_mask = dims_mask(&op->out);
	return 0;
}

static int infer_lstm(const struct graph *g, struct op *op, char *why, size_t len)
{
	const struct shape *x = in_shape(g, op, 0);
	int64_t h = op->a.out, c, dirs = op->a.bidir ? 2 : 1;

	if (x->rank != 3 || x->kind[1] != DIM_L || x->kind[2] != DIM_C)
		return fail(why, len, "input of lstm '%s' must be (n, l, c)", op->name);
	if (h <= 0)
		return fail(why, len, "lstm '%s' needs out= (hidden size)", op->name);
	c = x->size[2];
	op->out = *x;
	op->out.size[2] = sat_mul(h, dirs);
	/* four gates, each a GEMM over [x_t, h_{t-1}]; PyTorch keeps two
	 * bias vectors (b_ih, b_hh) per gate */
	op->params = sat_mul(dirs, sat_add(SAT_PROD(4, h, sat_add(c, h)), op->a.bias ? 8 * h : 0));
	op->fwd_macs = SAT_PROD(x->size[0], x->size[1], dirs, 4, h, sat_add(c, h));
	op->fwd_elems = SAT_PROD(x->size[0], x->size[1], dirs, 10, h);
	op->split_mask = BIT(DIM_N) | BIT(DIM_C);
	return 0;
}

static int infer_attention(const struct graph *g, struct op *op, char *why, size_t len)
{
	const struct shape *q = in_shape(g, op, 0);
	const struct shape *kv = op->nin > 1 ? in_shape(g, op, 1) : q;
	int64_t n, lq, lk, c, scores;

	if (q->rank != 3 || q->kind[1] != DIM_L || q->kind[2] != DIM_C ||
	    kv->rank != 3 || kv->kind[1] != DIM_L || kv->kind[2] != DIM_C)
		return fail(why, len, "inputs of attention '%s' must be (n, l, c)",
			    op->name);
	n = q->size[0], lq = q->size[1], c = q->size[2], lk = kv->size[1];
	if (kv->size[0] != n || kv->size[2] != c)
		return fail(why, len, "query and key/value of '%s' differ in n or c",
			    op->name);
	if (op->a.heads <= 0 || c % op->a.heads)
		return fail(why, len, "heads= of attention '%s' must divide its features",
			    op->name);
	if (op->a.dropout < 0 || op->a.dropout >= 1)
		return fail(why, len, "attention '%s' needs 0 <= dropout < 1", op->name);
	op->out = *q;
	op->params = sat_add(SAT_PROD(4, c, c), op->a.bias ? 4 * c : 0);
	/* q and output projections over lq tokens, k and v over lk; then
	 * QK^T and the weighted sum of V, halved under a causal mask */
	scores = SAT_PROD(2, n, lq, lk, c);
	if (op->a.causal)
		scores /= 2;
	op->fwd_macs = sat_add(sat_add(SAT_PROD(2, n, lq, c, c), SAT_PROD(2, n, lk, c, c)), scores);
	op->fwd_elems = sat_add(SAT_PROD(3, n, op->a.heads, lq, lk), shape_elems(q));
	op->split_mask = BIT(DIM_N) | BIT(DIM_L) | BIT(DIM_C);
	return 0;
}

static int infer_loss(const struct graph *g, struct op *op, char *why, size_t len)
{
	const struct shape *x = in_shape(g, op, 0);
	int ci = shape_dim(x, DIM_C);

	if (ci < 0)
		return need_dim(g, op, 0, DIM_C, why, len);
	op->out.rank = 0;
	for (int i = 0; i < x->rank; i++) {
		if (i == ci)
			continue;
		op->out.kind[op->out.rank] = x->kind[i];
		op->out.size[op->out.rank++] = x->size[i];
	}
	op->fwd_elems = sat_mul(3, shape_elems(x));
	op->split_mask = dims_mask(&op->out) & (BIT(DIM_N) | BIT(DIM_L));
	return 0;
}

static int infer_flatten(const struct graph *g, struct op *op, char *why, size_t len)
{
	const struct shape *x = in_shape(g, op, 0);

	(void)why, (void)len;
	op->out.rank = 2;
	op->out.kind[0] = DIM_N;
	op->out.size[0] = x->size[0];
	op->out.kind[1] = DIM_C;
	op->out.size[1] = shape_elems(x) / x->size[0];
	op->split_mask = BIT(DIM_N);
	return 0;
}

/* reshape and opaque: dims after n as given; reshape keeps the elements */
static int infer_given(const struct graph *g, struct op *op, char *why, size_t len)
{
	const struct shape *x = op->nin ? in_shape(g, op, 0) : NULL;

	if (op->a.target.rank < 1)
		return fail(why, len, "'%s' needs its output dims (e.g. c=768 l=128)",
			    op->name);
	op->out = op->a.target;
	if (x)
		op->out.size[0] = x->size[0];
	if (op->kind == OP_RESHAPE && shape_elems(&op->out) != shape_elems(x))
		return fail(why, len, "reshape '%s' must keep the number of elements",
			    op->name);
	op->split_mask = BIT(DIM_N);
	return 0;
}

static int infer_transpose(const struct graph *g, struct op *op, char *why, size_t len)
{
	const struct shape *x = in_shape(g, op, 0);

	op->out.rank = x->rank;
	for (int i = 0; i < x->rank; i++) {
		int p = op->a.perm[i];

		if (p < 0 || p >= x->rank)
			return fail(why, len, "order= of transpose '%s' must list the "
				    "input's dims after n", op->name);
		op->out.kind[i] = x->kind[p];
		op->out.size[i] = x->size[p];
	}
	op->fwd_elems = shape_elems(x);
	op->split_mask = dims_mask(x);
	return 0;
}

static const struct rule rules[NOP_KINDS] = {
	[OP_INPUT] = { "input", 0, 0, infer_input },
	[OP_CONV2D] = { "conv2d", 1, 1, infer_conv2d },
	[OP_MAXPOOL] = { "maxpool", 1, 1, infer_pool },
	[OP_AVGPOOL] = { "avgpool", 1, 1, infer_pool },
	[OP_ADAPTIVE_AVGPOOL] = { "adaptive_avgpool", 1, 1, infer_adaptive },
	[OP_LINEAR] = { "linear", 1, 1, infer_linear },
	[OP_MATMUL] = { "matmul", 2, 2, infer_matmul },
	[OP_RELU] = { "relu", 1, 1, infer_unary },
	[OP_GELU] = { "gelu", 1, 1, infer_unary },
	[OP_TANH] = { "tanh", 1, 1, infer_unary },
	[OP_SIGMOID] = { "sigmoid", 1, 1, infer_unary },
	[OP_ADD] = { "add", 2, -1, infer_elementwise },
	[OP_MUL] = { "mul", 2, -1, infer_elementwise },
	[OP_CONCAT] = { "concat", 1, -1, infer_concat },
	[OP_SPLIT] = { "split", 1, 1, infer_split },
	[OP_BATCHNORM] = { "batchnorm", 1, 1, infer_norm },
	[OP_LAYERNORM] = { "layernorm", 1, 1, infer_norm },
	[OP_DROPOUT] = { "dropout", 1, 1, infer_unary },
	[OP_EMBEDDING] = { "embedding", 1, 1, infer_embedding },
	[OP_LSTM] = { "lstm", 1, 1, infer_lstm },
	[OP_ATTENTION] = { "attention", 1, 2, infer_attention },
	[OP_SOFTMAX] = { "softmax", 1, 1, infer_softmax },
	[OP_LOSS] = { "loss", 1, 1, infer_loss },
	[OP_FLATTEN] = { "flatten", 1, 1, infer_flatten },
	[OP_RESHAPE] = { "reshape", 1, 1, infer_given },
	[OP_TRANSPOSE] = { "transpose", 1, 1, infer_transpose },
	[OP_OPAQUE] = { "opaque", 0, -1, infer_given },
};

const char *op_kind_name(enum op_kind k)
{
	return (unsigned)k < NOP_KINDS ? rules[k].name : "?";
}

int op_kind_elementwise(enum op_kind k)
{
	return (unsigned)k < NOP_KINDS &&
	       (rules[k].infer == infer_unary || rules[k].infer == infer_elementwise);
}

int op_kind_parse(const char *s, enum op_kind *out)
{
	for (int k = 0; k < NOP_KINDS; k++) {
		if (strcmp(s, rules[k].name) == 0) {
			*out = (enum op_kind)k;
			return 0;
		}
	}
	return -1;
}

/* An imported operator's shape is (n, c = its elements per sample) and its
 * costs are what was measured; the kind only says how it may be split. */
static void infer_imported(const struct graph *g, struct op *op)
{
	int64_t per_sample = op->m.act_bytes / BYTES_PER_ELEM / g->batch;

	op->out.rank = 2;
	op->out.kind[0] = DIM_N;
	op->out.size[0] = g->batch;
	op->out.kind[1] = DIM_C;
	op->out.size[1] = per_sample > 0 ? per_sample : 1;
	op->split_mask = BIT(DIM_N);
	if (op->kind == OP_LINEAR || op->kind == OP_CONV2D)
		op->split_mask |= BIT(DIM_C);
}

int graph_finalize(struct graph *g)
{
	return graph_finalize_range(g, 0, g->nops);
}

int graph_finalize_range(struct graph *g, int from, int to)
{
	char why[256];

	for (int i = from; i < to; i++) {
		struct op *op = &g->ops[i];
		const struct rule *r = &rules[op->kind];

		if (!op->imported &&
		    (op->nin < r->min_in || (r->max_in >= 0 && op->nin > r->max_in))) {
			if (r->max_in < 0)
				snprintf(why, sizeof why, "%s '%s' takes at least %d inputs",
					 r->name, op->name, r->min_in);
			else
				snprintf(why, sizeof why, "%s '%s' takes %d to %d inputs",
					 r->name, op->name, r->min_in, r->max_in);
			return ap_err(AP_EINPUT, g->path, op->line, "%s", why);
		}
		for (int k = 0; k < op->nin; k++)
			if (op->in[k] < 0 || op->in[k] >= i)
				return ap_err(AP_EINPUT, g->path, op->line,
					      "inputs of '%s' must come before it", op->name);
		op->params = op->fwd_macs = op->fwd_elems = 0;
		if (op->imported) {
			infer_imported(g, op);
		} else {
			if (op->kind == OP_INPUT)
				op->a.target.size[0] = g->batch;
			if (r->infer(g, op, why, sizeof why))
				return ap_err(AP_EINPUT, g->path, op->line, "%s", why);
		}
		/* past the limits, nothing computed from the op is meaningful */
		if (shape_elems(&op->out) > AP_MAX_WORK || op->params > AP_MAX_WORK ||
		    op->fwd_macs > AP_MAX_WORK || op->fwd_elems > AP_MAX_WORK)
			return ap_err(AP_EINPUT, g->path, op->line,
				      "'%s' is too large: its output, parameters or work pass "
				      "2^60 (the limits of models/FORMAT.md)", op->name);
		op->bwd_macs = 2 * op->fwd_macs;
		op->out_bytes = shape_elems(&op->out) * BYTES_PER_ELEM;
		if (op->m.valid) {
			op->params = op->m.param_bytes / BYTES_PER_ELEM;
			if (op->m.act_bytes > 0)
				op->out_bytes = op->m.act_bytes;
		}
	}
	return AP_OK;
}

/* Reduced dims (the c that a conv, linear, lstm, attention or norm
 * contracts or normalises over) stay whole in every shard. */
int op_input_follows(const struct op *op, int k, enum dim_kind d)
{
	if (d == DIM_N)
		return 1;
	switch (op->kind) {
	case OP_CONV2D:
	case OP_LINEAR:
	case OP_LSTM:
	case OP_ATTENTION:
	case OP_LAYERNORM:
	case OP_SOFTMAX:
	case OP_LOSS:
		return d != DIM_C;
	case OP_MATMUL:
		return k == 0 && d != DIM_C;
	case OP_FLATTEN:
	case OP_RESHAPE:
	case OP_OPAQUE:
		return 0;
	default:
		return 1;
	}
}

static void shard_shape(const struct shape *s, const int degree[NDIMS],
			const struct op *op, int k, char *buf, size_t len)
{
	struct shape t = *s;

	for (int i = 0; i < t.rank; i++)
		if (k < 0 || op_input_follows(op, k, t.kind[i]))
			t.size[i] = (t.size[i] + degree[t.kind[i]] - 1) / degree[t.kind[i]];
	shape_format(&t, buf, len);
}

int graph_op_signature(const struct graph *g, int i, const int degree[NDIMS],
		       char *buf, size_t len)
{
	const struct op *op = &g->ops[i];
	const struct op_attrs *a = &op->a;
	char sh[96];
	size_t n;

	n = (size_t)snprintf(buf, len, "%s:", op_kind_name(op->kind));
	for (int k = 0; k < op->nin && n < len; k++) {
		shard_shape(&g->ops[op->in[k]].out, degree, op, k, sh, sizeof sh);
		n += (size_t)snprintf(buf + n, len - n, "%s%s", k ? "," : "", sh);
	}
	shard_shape(&op->out, degree, op, -1, sh, sizeof sh);
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, ">%s", sh);
	switch (op->kind) {
	case OP_CONV2D:
	case OP_MAXPOOL:
	case OP_AVGPOOL:
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, ":k%dx%d,s%dx%d,p%dx%d,g%d,b%d",
					      a->kh, a->kw, a->sh, a->sw, a->ph, a->pw,
					      a->groups, a->bias);
		break;
	case OP_ATTENTION:
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, ":h%d,causal%d%s",
					      a->heads / degree[DIM_C], a->causal,
					      a->dropout > 0 ? ",dropout" : "");
		break;
	case OP_LSTM:
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, ":bidir%d", a->bidir);
		break;
	case OP_MATMUL:
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, ":tb%d", a->trans_b);
		break;
	case OP_OPAQUE:
		if (n < len && op->desc)
			n += (size_t)snprintf(buf + n, len - n, ":%s", op->desc);
		break;
	default:
		break;
	}
	if (n >= len)
		return ap_err(AP_EFAIL, g->path, op->line, "signature of '%s' too long",
			      op->name);
	return AP_OK;
}
