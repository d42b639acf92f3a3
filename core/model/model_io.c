/*
 * The model text format (models/FORMAT.md): one operator a line, inputs by
 * name, key=value attributes, `repeat N` ... `end` blocks.  Reading checks
 * every token and reports the first problem as "file:line: message"; the
 * graph is then finalised, which checks shapes.  Writing emits the same
 * format with repeat blocks expanded, so any graph (an imported one too)
 * round-trips.
 */
#include "model/model_io.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/checked.h"
#include "util/datadir.h"
#include "util/err.h"
#include "model/piper_io.h"
#include "model/ops.h"

#define MAX_TOKENS 256
#define LINE_MAX_LEN 4096

enum key_type { K_I64, K_INT, K_IDX, K_BOOL, K_PAIR, K_OUT, K_DBL, K_DIM, K_TIE, K_ORDER };

#define KB(k) (1u << (k))

struct key {
	const char *name;
	enum key_type type;
	size_t off, off2;
	uint32_t kinds; /* bit per op kind that accepts the key */
};

#define A(f) offsetof(struct op_attrs, f)
static const struct key keys[] = {
	{ "out", K_OUT, A(out), 0, KB(OP_CONV2D) | KB(OP_LINEAR) | KB(OP_EMBEDDING) |
	  KB(OP_LSTM) | KB(OP_ADAPTIVE_AVGPOOL) },
	{ "k", K_PAIR, A(kh), A(kw), KB(OP_CONV2D) | KB(OP_MAXPOOL) | KB(OP_AVGPOOL) },
	{ "stride", K_PAIR, A(sh), A(sw), KB(OP_CONV2D) | KB(OP_MAXPOOL) | KB(OP_AVGPOOL) },
	{ "pad", K_PAIR, A(ph), A(pw), KB(OP_CONV2D) | KB(OP_MAXPOOL) | KB(OP_AVGPOOL) },
	{ "groups", K_INT, A(groups), 0, KB(OP_CONV2D) },
	{ "bias", K_BOOL, A(bias), 0, KB(OP_CONV2D) | KB(OP_LINEAR) | KB(OP_LSTM) |
	  KB(OP_ATTENTION) },
	{ "ceil", K_BOOL, A(ceil_mode), 0, KB(OP_MAXPOOL) | KB(OP_AVGPOOL) },
	{ "vocab", K_I64, A(vocab), 0, KB(OP_EMBEDDING) },
	{ "heads", K_INT, A(heads), 0, KB(OP_ATTENTION) },
	{ "causal", K_BOOL, A(causal), 0, KB(OP_ATTENTION) },
	{ "dropout", K_DBL, A(dropout), 0, KB(OP_ATTENTION) },
	{ "bidir", K_BOOL, A(bidir), 0, KB(OP_LSTM) },
	{ "dim", K_DIM, A(axis), 0, KB(OP_CONCAT) | KB(OP_SPLIT) | KB(OP_SOFTMAX) },
	{ "parts", K_INT, A(parts), 0, KB(OP_SPLIT) },
	{ "index", K_IDX, A(index), 0, KB(OP_SPLIT) },
	{ "p", K_DBL, A(p), 0, KB(OP_DROPOUT) },
	{ "trans_b", K_BOOL, A(trans_b), 0, KB(OP_MATMUL) },
	{ "tie", K_TIE, A(tie), 0, KB(OP_LINEAR) },
	{ "order", K_ORDER, A(perm), 0, KB(OP_TRANSPOSE) },
};
#undef A

/* Kinds whose dims are given as c=.. h=.. w=.. l=.. */
#define GIVEN_DIMS (KB(OP_INPUT) | KB(OP_RESHAPE) | KB(OP_OPAQUE))

struct reader {
	const char *path;
	int line;
	struct graph *g;
	int block_in;  /* @in: last op before the block, or of the last iteration */
	int seen_init; /* an `init` line was read */
};

static int parse_i64(const char *s, int64_t *v)
{
	char *end;
	long long x;

	if (!isdigit((unsigned char)*s) && *s != '-')
		return -1;
	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

static int parse_pos_int(const char *s, int *v)
{
	int64_t x;

	if (parse_i64(s, &x) || x <= 0 || x > (1 << 30))
		return -1;
	*v = (int)x;
	return 0;
}

/* A finite number (NaN and infinities are refused: a NaN time would make
 * every prediction 0). */
static int parse_double(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return (errno || end == s || *end || !isfinite(*v)) ? -1 : 0;
}

/* "3" or "1x7"; zero is allowed for padding, so the caller checks range. */
static int parse_pair(const char *s, int *a, int *b)
{
	char buf[64], *x;
	int64_t u, v;

	snprintf(buf, sizeof buf, "%s", s);
	x = strchr(buf, 'x');
	if (x)
		*x = 0;
	if (parse_i64(buf, &u) || u < 0 || u > (1 << 20))
		return -1;
	v = u;
	if (x && (parse_i64(x + 1, &v) || v < 0 || v > (1 << 20)))
		return -1;
	*a = (int)u;
	*b = (int)v;
	return 0;
}

static int bad(struct reader *r, const char *fmt, const char *a, const char *b)
{
	char msg[512];

	snprintf(msg, sizeof msg, fmt, a, b);
	return ap_err(AP_EINPUT, r->path, r->line, "%s", msg);
}

static int set_given_dim(struct reader *r, struct op *op, enum dim_kind d,
			 const char *val)
{
	struct shape *t = &op->a.target;
	int64_t v;

	if (t->rank == 0) {
		t->kind[0] = DIM_N;
		t->size[0] = 1;
		t->rank = 1;
	}
	if (shape_dim(t, d) >= 0)
		return bad(r, "dim '%s' of '%s' given twice", dim_name(d), op->name);
	if (t->rank == MAX_RANK)
		return bad(r, "too many dims for '%s'%s", op->name, "");
	if (parse_i64(val, &v) || v <= 0 || v > AP_MAX_COUNT)
		return bad(r, "dim size '%s' of '%s' must be a positive integer up to 2^40", val,
			   op->name);
	t->kind[t->rank] = d;
	t->size[t->rank++] = v;
	return 0;
}

static int set_order(struct reader *r, struct op *op, const char *val)
{
	const struct shape *x = &r->g->ops[op->in[0]].out;
	char buf[64], *save = NULL, *tok;
	int n = 1;

	/* Inputs are finalised as they are read, so the input's dims are known
	 * here. */
	op->a.perm[0] = 0;
	snprintf(buf, sizeof buf, "%s", val);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		enum dim_kind d;
		int di;

		if (dim_parse(tok, &d) || d == DIM_N || n >= MAX_RANK)
			return bad(r, "order '%s' of '%s' must list dims c, h, w or l", val,
				   op->name);
		di = shape_dim(x, d);
		if (di < 0)
			return bad(r, "order '%s' of '%s' names a dim its input lacks", val,
				   op->name);
		for (int k = 1; k < n; k++)
			if (op->a.perm[k] == di)
				return bad(r, "order '%s' of '%s' names a dim twice", val, op->name);
		op->a.perm[n++] = di;
	}
	if (n != x->rank)
		return bad(r, "order '%s' of '%s' must name every input dim after n",
			   val, op->name);
	return 0;
}

static int set_measured(struct reader *r, struct op *op, const char *key,
			const char *val)
{
	double v;

	if (strcmp(key, "desc") == 0) {
		free(op->desc);
		op->desc = strdup(val);
		return op->desc ? 0 : ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	if (strcmp(key, "imported") == 0) {
		if (strcmp(val, "0") && strcmp(val, "1"))
			return bad(r, "imported= of '%s' must be 0 or 1, not '%s'", op->name, val);
		op->imported = val[0] == '1';
		return 0;
	}
	if (parse_double(val, &v) || v < 0)
		return bad(r, "%s= of '%s' must be a non-negative number", key, op->name);
	if ((!strcmp(key, "act_bytes") || !strcmp(key, "param_bytes")) && v > (double)AP_MAX_BYTES)
		return bad(r, "%s= of '%s' is above the limit of models/FORMAT.md", key, op->name);
	op->m.valid = 1;
	if (strcmp(key, "fwd_us") == 0)
		op->m.fwd_us = v;
	else if (strcmp(key, "bwd_us") == 0)
		op->m.bwd_us = v;
	else if (strcmp(key, "act_bytes") == 0)
		op->m.act_bytes = (int64_t)v;
	else
		op->m.param_bytes = (int64_t)v;
	return 0;
}

static int is_measured_key(const char *k)
{
	return !strcmp(k, "fwd_us") || !strcmp(k, "bwd_us") || !strcmp(k, "act_bytes") ||
	       !strcmp(k, "param_bytes") || !strcmp(k, "desc") || !strcmp(k, "imported");
}

static int set_attr(struct reader *r, struct op *op, const char *key, const char *val)
{
	char *base = (char *)&op->a;
	enum dim_kind d;

	if (is_measured_key(key))
		return set_measured(r, op, key, val);
	if ((GIVEN_DIMS & KB(op->kind)) && dim_parse(key, &d) == 0 && d != DIM_N)
		return set_given_dim(r, op, d, val);
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const struct key *k = &keys[i];
		int *ip = (int *)(base + k->off);
		int64_t *lp = (int64_t *)(base + k->off);

		if (strcmp(k->name, key))
			continue;
		if (!(k->kinds & KB(op->kind)))
			break;
		switch (k->type) {
		case K_I64:
			if (parse_i64(val, lp) || *lp <= 0 || *lp > AP_MAX_COUNT)
				return bad(r, "%s= must be a positive integer up to 2^40, not '%s'",
					   key, val);
			return 0;
		case K_INT:
			if (parse_pos_int(val, ip))
				return bad(r, "%s= must be a positive integer, not '%s'", key, val);
			return 0;
		case K_IDX: {
			int64_t v;

			if (parse_i64(val, &v) || v < 0 || v > (1 << 30))
				return bad(r, "%s= must be a non-negative integer, not '%s'", key,
					   val);
			*ip = (int)v;
			return 0;
		}
		case K_BOOL:
			if (strcmp(val, "0") && strcmp(val, "1"))
				return bad(r, "%s= must be 0 or 1, not '%s'", key, val);
			*ip = val[0] == '1';
			return 0;
		case K_PAIR:
			if (parse_pair(val, ip, (int *)(base + k->off2)) ||
			    (strcmp(key, "pad") && (*ip <= 0 || *(int *)(base + k->off2) <= 0)))
				return bad(r, "%s= must be N or HxW, not '%s'", key, val);
			return 0;
		case K_OUT:
			if (op->kind == OP_ADAPTIVE_AVGPOOL) {
				int oh, ow;

				if (parse_pair(val, &oh, &ow) || oh <= 0 || ow <= 0)
					return bad(r, "out= must be N or HxW, not '%s'%s", val, "");
				op->a.out_h = oh, op->a.out_w = ow;
				return 0;
			}
			if (parse_i64(val, &op->a.out) || op->a.out <= 0 || op->a.out > AP_MAX_COUNT)
				return bad(r, "out= must be a positive integer up to 2^40, not '%s'%s",
					   val, "");
			return 0;
		case K_DBL:
			if (parse_double(val, (double *)(base + k->off)))
				return bad(r, "%s= must be a number, not '%s'", key, val);
			return 0;
		case K_DIM:
			if (dim_parse(val, &op->a.axis))
				return bad(r, "dim= must be n, c, h, w or l, not '%s'%s", val, "");
			return 0;
		case K_TIE:
			op->a.tie = graph_find(r->g, val);
			if (op->a.tie < 0)
				return bad(r, "tie= names unknown operator '%s'%s", val, "");
			return 0;
		case K_ORDER:
			if (op->nin < 1)
				return bad(r, "transpose '%s' needs its input before order=%s",
					   op->name, "");
			return set_order(r, op, val);
		}
	}
	return bad(r, "unknown attribute '%s' for %s", key, op_kind_name(op->kind));
}

/* Splits a line into tokens in place; "quoted values" keep their spaces
 * and lose their quotes.  Returns the count, or -1 on an open quote. */
static int tokenize(char *s, char **tok, int max)
{
	int n = 0;

	for (;;) {
		char *w;

		while (isspace((unsigned char)*s))
			s++;
		if (!*s || *s == '#')
			return n;
		if (n == max)
			return -2;
		tok[n++] = w = s;
		while (*s && !isspace((unsigned char)*s)) {
			if (*s == '"') {
				char *q = strchr(s + 1, '"');

				if (!q)
					return -1;
				memmove(w, s + 1, (size_t)(q - s - 1));
				w += q - s - 1;
				s = q + 1;
			} else {
				*w++ = *s++;
			}
		}
		if (*s)
			s++;
		*w = 0;
	}
}

static int read_op(struct reader *r, char **tok, int ntok, int block, int iter)
{
	struct graph *g = r->g;
	struct op op;
	int rc, idx;

	op_init(&op);
	op.line = r->line;
	op.block = block;
	op.iter = iter;
	if (op_kind_parse(tok[0], &op.kind))
		return bad(r, "unknown operator '%s' (expected a kind of models/FORMAT.md)%s",
			   tok[0], "");
	if (ntok < 2)
		return bad(r, "%s needs a name%s", tok[0], "");
	if (strlen(tok[1]) >= NAME_LEN || strchr(tok[1], '='))
		return bad(r, "bad operator name '%s'%s", tok[1], "");
	if (graph_find(g, tok[1]) >= 0)
		return bad(r, "operator '%s' defined twice%s", tok[1], "");
	snprintf(op.name, sizeof op.name, "%s", tok[1]);
	op.in = calloc((size_t)ntok, sizeof *op.in);
	if (!op.in)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int t = 2; t < ntok; t++) {
		const char *name = tok[t];
		char *eq = strchr(tok[t], '=');

		if (eq) {
			*eq = 0;
			/* given twice: the last would silently win */
			for (int q = 2; q < t; q++)
				if (strcmp(tok[q], tok[t]) == 0) {
					rc = bad(r, "attribute '%s' of '%s' given twice", tok[t], op.name);
					goto fail;
				}
			rc = set_attr(r, &op, tok[t], eq + 1);
			if (rc)
				goto fail;
			continue;
		}
		if (strcmp(name, "@in") == 0) {
			if (block < 0) {
				rc = bad(r, "'@in' is only meaningful inside a repeat block%s%s",
					 "", "");
				goto fail;
			}
			if (r->block_in < 0) {
				rc = bad(r, "'@in' has no operator before the block%s%s", "", "");
				goto fail;
			}
			op.in[op.nin++] = r->block_in;
			continue;
		}
		op.in[op.nin] = graph_find(g, name);
		if (op.in[op.nin] < 0) {
			rc = bad(r, "unknown input '%s' of '%s' (inputs must be defined "
				 "on earlier lines)", name, op.name);
			goto fail;
		}
		op.nin++;
	}
	if (op.kind == OP_CONV2D || op.kind == OP_MAXPOOL || op.kind == OP_AVGPOOL) {
		int pool = op.kind != OP_CONV2D;

		if (op.a.sh == 0)
			op.a.sh = pool ? op.a.kh : 1, op.a.sw = pool ? op.a.kw : 1;
	}
	idx = graph_add(g, &op);
	if (idx < 0) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto fail;
	}
	/* Finalise each op as it is read, so later lines (order=) see the
	 * shapes of their inputs and a shape error names its own line. */
	return graph_finalize_range(g, idx, idx + 1);
fail:
	free(op.in);
	free(op.desc);
	return rc;
}

static char *substitute(const char *line, int iter)
{
	size_t cap = strlen(line) * 2 + 32, n = 0;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	for (const char *s = line; *s; s++) {
		if (n + 16 >= cap) {
			char *o = realloc(out, cap *= 2);

			if (!o) {
				free(out);
				return NULL;
			}
			out = o;
		}
		if (strncmp(s, "{i}", 3) == 0) {
			n += (size_t)snprintf(out + n, cap - n, "%d", iter);
			s += 2;
		} else {
			out[n++] = *s;
		}
	}
	out[n] = 0;
	return out;
}

/* One line of the file (after substitution). */
static int read_line(struct reader *r, char *s, int block, int iter, int *seen_batch)
{
	char *tok[MAX_TOKENS];
	int ntok = tokenize(s, tok, MAX_TOKENS);
	int64_t v;

	if (ntok == -1)
		return bad(r, "unterminated quote%s%s", "", "");
	if (ntok == -2)
		return bad(r, "too many tokens on one line%s%s", "", "");
	if (ntok == 0)
		return 0;
	if (strcmp(tok[0], "model") == 0) {
		if (ntok != 2 || strlen(tok[1]) >= NAME_LEN)
			return bad(r, "expected 'model NAME'%s%s", "", "");
		if (r->g->name[0] || *seen_batch || r->g->nops)
			return bad(r, "'model' must come once, first (models/FORMAT.md)%s%s", "", "");
		snprintf(r->g->name, sizeof r->g->name, "%s", tok[1]);
		return 0;
	}
	if (strcmp(tok[0], "init") == 0) {
		int k = ntok >= 2 ? param_init_parse(tok[1]) : -1;
		double std = 0;

		if (k < 0 || ntok > 3 || (ntok == 3 && k != INIT_GPT2))
			return bad(r, "expected 'init torch' or 'init gpt2 [std=X]'%s%s", "", "");
		if (ntok == 3 && (strncmp(tok[2], "std=", 4) || parse_double(tok[2] + 4, &std) ||
				  !(std > 0 && std <= 1)))
			return bad(r, "init '%s': expected std=X with X in (0, 1]%s", tok[2], "");
		if (!r->g->name[0] || r->g->nops)
			return bad(r, "'init' must come after 'model NAME' and before the first operator%s%s",
				   "", "");
		if (r->seen_init)
			return bad(r, "'init' given twice%s%s", "", "");
		r->g->init = (enum param_init)k;
		r->g->init_std = std;
		r->seen_init = 1;
		return 0;
	}
	if (strcmp(tok[0], "batch") == 0) {
		if (ntok != 2 || parse_i64(tok[1], &v) || v <= 0)
			return bad(r, "expected 'batch N' with N a positive integer%s%s", "", "");
		if (r->g->nops)
			return bad(r, "'batch' must come before the first operator%s%s", "", "");
		if (*seen_batch)
			return bad(r, "'batch' given twice%s%s", "", "");
		if (!r->g->name[0])
			return bad(r, "'batch' must come after 'model NAME' (models/FORMAT.md)%s%s",
				   "", "");
		if (v > AP_MAX_COUNT)
			return bad(r, "batch is above the limit of models/FORMAT.md%s%s", "", "");
		if (!r->g->batch)
			r->g->batch = v;
		*seen_batch = 1;
		return 0;
	}
	if (!r->g->batch)
		return bad(r, "missing 'batch N' line before the first operator%s%s", "", "");
	return read_op(r, tok, ntok, block, iter);
}

struct lines {
	char **v;
	int *no;
	int n;
};

static void lines_free(struct lines *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	free(l->no);
}

static int split_lines(const char *text, struct lines *l)
{
	int cap = 1;

	for (const char *s = text; *s; s++)
		cap += *s == '\n';
	l->v = calloc((size_t)cap, sizeof *l->v);
	l->no = calloc((size_t)cap, sizeof *l->no);
	l->n = 0;
	if (!l->v || !l->no)
		return -1;
	for (const char *s = text; *s || l->n == 0;) {
		const char *e = strchr(s, '\n');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		l->v[l->n] = strndup(s, len);
		if (!l->v[l->n])
			return -1;
		l->no[l->n] = l->n + 1;
		l->n++;
		if (!e)
			break;
		s = e + 1;
	}
	return 0;
}

/* Whether s is valid UTF-8 (no overlong forms, surrogates or code points
 * past U+10FFFF). */
static int utf8_valid(const unsigned char *s)
{
	while (*s) {
		int n = *s < 0x80 ? 0 : (*s & 0xe0) == 0xc0 ? 1 : (*s & 0xf0) == 0xe0 ? 2
			: (*s & 0xf8) == 0xf0 ? 3 : -1;
		uint32_t c = n == 0 ? *s : n == 1 ? *s & 0x1fu : n == 2 ? *s & 0x0fu : *s & 0x07u;

		if (n < 0)
			return 0;
		for (int k = 1; k <= n; k++) {
			if ((s[k] & 0xc0) != 0x80)
				return 0;
			c = c << 6 | (s[k] & 0x3fu);
		}
		if ((n == 1 && c < 0x80) || (n == 2 && c < 0x800) || (n == 3 && c < 0x10000) ||
		    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return 0;
		s += n + 1;
	}
	return 1;
}

static int block_header(char *s, int *count)
{
	char *tok[4];
	char buf[LINE_MAX_LEN];
	int n;
	int64_t v;

	snprintf(buf, sizeof buf, "%s", s);
	n = tokenize(buf, tok, 4);
	if (n < 1 || strcmp(tok[0], "repeat"))
		return n >= 1 && strcmp(tok[0], "end") == 0 ? 2 : 0;
	if (n != 2 || parse_i64(tok[1], &v) || v <= 0 || v > 100000)
		return -1;
	*count = (int)v;
	return 1;
}

int model_parse(const char *text, const char *path, int64_t batch, struct graph *g)
{
	struct reader r = { .path = path, .g = g, .block_in = -1 };
	struct lines l = { 0 };
	int rc = AP_OK, seen_batch = 0;

	graph_init(g);
	g->path = strdup(path);
	g->batch = batch > 0 ? batch : 0;
	if (!g->path || split_lines(text, &l)) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	for (int i = 0; i < l.n && !rc; i++)
		if (!utf8_valid((const unsigned char *)l.v[i])) {
			r.line = l.no[i];
			rc = bad(&r, "not UTF-8 text%s%s", "", "");
		}
	for (int i = 0; i < l.n && !rc; i++) {
		int count = 0, kind = block_header(l.v[i], &count);
		int start = i + 1, end;

		r.line = l.no[i];
		if (kind < 0) {
			rc = bad(&r, "expected 'repeat N' with N a positive integer%s%s", "", "");
			break;
		}
		if (kind == 2) {
			rc = bad(&r, "'end' without 'repeat'%s%s", "", "");
			break;
		}
		if (kind == 0) {
			char *s = l.v[i];
			char buf[LINE_MAX_LEN];

			if (strlen(s) >= sizeof buf) {
				rc = bad(&r, "line too long%s%s", "", "");
				break;
			}
			snprintf(buf, sizeof buf, "%s", s);
			rc = read_line(&r, buf, -1, -1, &seen_batch);
			continue;
		}
		for (end = start; end < l.n; end++) {
			int c2, k2 = block_header(l.v[end], &c2);

			if (k2 == 1 || k2 < 0) {
				r.line = l.no[end];
				rc = bad(&r, "repeat blocks do not nest%s%s", "", "");
				goto out;
			}
			if (k2 == 2)
				break;
		}
		if (end == l.n) {
			rc = bad(&r, "'repeat' without 'end'%s%s", "", "");
			break;
		}
		r.block_in = g->nops - 1;
		for (int it = 0; it < count && !rc; it++) {
			for (int j = start; j < end && !rc; j++) {
				char *s = substitute(l.v[j], it);

				if (!s) {
					rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
					break;
				}
				r.line = l.no[j];
				if (strlen(s) >= LINE_MAX_LEN)
					rc = bad(&r, "line too long%s%s", "", "");
				else
					rc = read_line(&r, s, g->nblocks, it, &seen_batch);
				free(s);
			}
			r.block_in = g->nops - 1;
		}
		g->nblocks++;
		i = end;
	}
	if (!rc && !seen_batch && batch <= 0)
		rc = ap_err(AP_EINPUT, path, 0, "missing 'batch N' line");
	if (!rc && g->nops == 0)
		rc = ap_err(AP_EINPUT, path, 0, "no operators");
	if (!rc && !g->name[0])
		rc = ap_err(AP_EINPUT, path, 0, "missing 'model NAME' line");
out:
	lines_free(&l);
	if (rc)
		graph_release(g);
	return rc;
}

/* The file's bytes, NUL-terminated, and their count in *len. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto out;
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf) {
		buf[n] = 0;
		*len = (size_t)n;
	}
out:
	fclose(f);
	return buf;
}

int model_read(const char *path, int64_t batch, struct graph *g)
{
	size_t len = 0;
	char *text = slurp(path, &len);
	const char *nul;
	int rc;

	struct stat sb;

	if (!stat(path, &sb) && S_ISDIR(sb.st_mode))
		return ap_err(AP_EINPUT, path, 0,
			      "is a directory (expected a model file or a zoo name)");
	if (!text)
		return ap_err(AP_EINPUT, path, 0, "cannot read model: %s", strerror(errno));
	nul = memchr(text, 0, len);
	if (nul) {
		int line = 1;

		for (const char *c = text; c < nul; c++)
			line += *c == '\n';
		rc = ap_err(AP_EINPUT, path, line, "a NUL byte: not a text file");
	} else {
		rc = model_parse(text, path, batch, g);
	}
	free(text);
	return rc;
}

static int key_allowed(const char *name, enum op_kind kind)
{
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (strcmp(keys[i].name, name) == 0)
			return (keys[i].kinds & KB(kind)) != 0;
	return 0;
}

static void write_dims(FILE *f, const struct shape *s)
{
	for (int i = 1; i < s->rank; i++)
		fprintf(f, " %s=%lld", dim_name(s->kind[i]), (long long)s->size[i]);
}

static void write_attrs(FILE *f, const struct graph *g, const struct op *op)
{
	const struct op_attrs *a = &op->a;
	struct op def;

	op_init(&def);
	if (op->kind == OP_ADAPTIVE_AVGPOOL)
		fprintf(f, " out=%lldx%lld", (long long)a->out_h, (long long)a->out_w);
	else if (a->out)
		fprintf(f, " out=%lld", (long long)a->out);
	if (a->kh)
		fprintf(f, " k=%dx%d stride=%dx%d pad=%dx%d", a->kh, a->kw, a->sh, a->sw,
			a->ph, a->pw);
	if (op->kind == OP_CONV2D && a->groups != 1)
		fprintf(f, " groups=%d", a->groups);
	if (key_allowed("bias", op->kind) && a->bias != def.a.bias)
		fprintf(f, " bias=%d", a->bias);
	if (a->ceil_mode)
		fprintf(f, " ceil=1");
	if (a->vocab)
		fprintf(f, " vocab=%lld", (long long)a->vocab);
	if (a->heads)
		fprintf(f, " heads=%d", a->heads);
	if (a->causal)
		fprintf(f, " causal=1");
	if (a->dropout > 0)
		fprintf(f, " dropout=%g", a->dropout);
	if (a->bidir)
		fprintf(f, " bidir=1");
	if (a->axis != NDIMS)
		fprintf(f, " dim=%s", dim_name(a->axis));
	if (op->kind == OP_SPLIT)
		fprintf(f, " parts=%d index=%d", a->parts, a->index);
	if (op->kind == OP_DROPOUT)
		fprintf(f, " p=%g", a->p);
	if (a->trans_b)
		fprintf(f, " trans_b=1");
	if (a->tie >= 0)
		fprintf(f, " tie=%s", g->ops[a->tie].name);
	if (op->kind == OP_TRANSPOSE) {
		const struct shape *x = &g->ops[op->in[0]].out;

		fprintf(f, " order=");
		for (int i = 1; i < x->rank; i++)
			fprintf(f, "%s%s", i > 1 ? "," : "", dim_name(x->kind[a->perm[i]]));
	}
	if ((GIVEN_DIMS & KB(op->kind)) && !op->imported)
		write_dims(f, &a->target);
}

int model_write(const struct graph *g, FILE *f)
{
	fprintf(f, "model %s\nbatch %lld\n", g->name, (long long)g->batch);
	if (g->init != INIT_TORCH) {
		fprintf(f, "init %s", param_init_name(g->init));
		if (g->init_std > 0)
			fprintf(f, " std=%.17g", g->init_std);
		fputc('\n', f);
	}
	for (int i = 0; i < g->nops; i++) {
		const struct op *op = &g->ops[i];

		fprintf(f, "%s %s", op_kind_name(op->kind), op->name);
		for (int k = 0; k < op->nin; k++)
			fprintf(f, " %s", g->ops[op->in[k]].name);
		write_attrs(f, g, op);
		if (op->imported)
			fprintf(f, " imported=1");
		if (op->m.valid)
			fprintf(f, " fwd_us=%.17g bwd_us=%.17g act_bytes=%lld param_bytes=%lld",
				op->m.fwd_us, op->m.bwd_us, (long long)op->m.act_bytes,
				(long long)op->m.param_bytes);
		if (op->desc)
			fprintf(f, " desc=\"%s\"", op->desc);
		fputc('\n', f);
	}
	return ferror(f) ? ap_err(AP_EFAIL, NULL, 0, "write failed") : AP_OK;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* pipedream/NAME or piper/NAME: a profile of the data dir by its name. */
static int data_name(const char *arg, const char *prefix, const char *ext)
{
	size_t k = strlen(prefix);

	return !strncmp(arg, prefix, k) && arg[k] && !strchr(arg + k, '/') &&
	       strcmp(arg + k, ".") && strcmp(arg + k, "..") && !ends_with(arg, ext);
}

int model_data_name(const char *arg)
{
	return data_name(arg, "pipedream/", ".txt") || data_name(arg, "piper/", ".json");
}

void model_source(const char *arg, char *path, size_t len)
{
	if (data_name(arg, "pipedream/", ".txt"))
		snprintf(path, len, "%s/profiles/%s.txt", datadir(), arg);
	else if (data_name(arg, "piper/", ".json"))
		snprintf(path, len, "%s/profiles/%s.json", datadir(), arg);
	else if (ends_with(arg, ".txt") || ends_with(arg, ".json"))
		snprintf(path, len, "%s", arg);
	else
		model_path(path, len, arg);
}

int model_load(const char *arg, int64_t batch, struct graph *g)
{
	char path[4096];
	int rc;

	if (!*arg)
		return ap_err(AP_EINPUT, "-m", 0,
			      "expected a model: a zoo name (autopar models) or a file, got an empty string");
	model_source(arg, path, sizeof path);
	if (ends_with(path, ".txt")) {
		rc = pipedream_read(path, batch, g);
		/* the name plans and results carry must load the same graph */
		if (!rc && data_name(arg, "pipedream/", ".txt"))
			snprintf(g->name, sizeof g->name, "%s", arg);
		return rc;
	}
	/* a .json is a Piper input, whatever it holds (piper_io.h) */
	if (ends_with(path, ".json")) {
		rc = piper_read_model(path, g);
		/* named as given, so a plan's model loads again as it was */
		if (!rc && strlen(arg) < sizeof g->name)
			snprintf(g->name, sizeof g->name, "%s", arg);
		if (!rc && batch > 0)
			rc = graph_set_batch(g, batch);
		if (rc)
			graph_release(g);
		return rc;
	}
	return model_read(path, batch, g);
}
