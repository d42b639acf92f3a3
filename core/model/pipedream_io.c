/*
 * Import of PipeDream's profiled graph.txt (profiles/pipedream/README.md):
 * every node becomes an operator that keeps its measured forward and
 * backward time, activation bytes and parameter bytes, so planners work on
 * real measurements.  Known PyTorch layers map to our operator kinds (which
 * decides how they may be split); anything else becomes `opaque`.  The file
 * lists nodes in no particular order, so they are sorted topologically
 * (ties broken by node number, for a stable order).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/err.h"
#include "model/model_io.h"
#include "util/grow.h"
#include "model/ops.h"

struct pd_node {
	char name[NAME_LEN];
	char *desc;
	double fwd_ms, bwd_ms, act, param;
	int line;
	int nin, cap, *in;
	int order; /* index in the sorted graph */
};

struct pd {
	const char *path;
	struct pd_node *v;
	int n, cap;
};

/* PyTorch module name (before the first '(') to our kind. */
static const struct {
	const char *torch;
	enum op_kind kind;
} kind_map[] = {
	{ "Conv2d", OP_CONV2D },
	{ "Linear", OP_LINEAR },
	{ "ReLU", OP_RELU },
	{ "ReLU6", OP_RELU },
	{ "MaxPool2d", OP_MAXPOOL },
	{ "AvgPool2d", OP_AVGPOOL },
	{ "AdaptiveAvgPool2d", OP_ADAPTIVE_AVGPOOL },
	{ "BatchNorm2d", OP_BATCHNORM },
	{ "Dropout", OP_DROPOUT },
	{ "Embedding", OP_EMBEDDING },
	{ "LSTM", OP_LSTM },
	{ "Sigmoid", OP_SIGMOID },
	{ "Tanh", OP_TANH },
	{ "Softmax", OP_SOFTMAX },
	{ "LogSoftmax", OP_SOFTMAX },
	{ "Add", OP_ADD },
	{ "__add__", OP_ADD },
	{ "__iadd__", OP_ADD },
	{ "Mul", OP_MUL },
	{ "__mul__", OP_MUL },
	{ "Concat", OP_CONCAT },
	{ "Cat", OP_CONCAT },
	{ "View", OP_FLATTEN },
	{ "Flatten", OP_FLATTEN },
};

static enum op_kind map_kind(const char *desc)
{
	size_t n = strcspn(desc, "( ");

	if (strncmp(desc, "Input", 5) == 0)
		return OP_INPUT;
	for (size_t i = 0; i < sizeof kind_map / sizeof kind_map[0]; i++)
		if (strlen(kind_map[i].torch) == n && strncmp(desc, kind_map[i].torch, n) == 0)
			return kind_map[i].kind;
	return OP_OPAQUE;
}

static int find(const struct pd *pd, const char *name)
{
	for (int i = 0; i < pd->n; i++)
		if (strcmp(pd->v[i].name, name) == 0)
			return i;
	return -1;
}

/* A statistic is a finite non-negative number (a NaN time would make
 * every prediction 0) of at most max (models/FORMAT.md, "Limits"). */
static int in_range(double x, double max)
{
	return x >= 0 && x <= max;
}

/* "key=V" inside the stats part; V may be "[a; b; c]" (summed). */
static int stat(const char *s, const char *key, double max, double *v)
{
	const char *p = strstr(s, key);
	char *end;

	if (!p)
		return -1;
	p += strlen(key);
	if (*p != '[') {
		errno = 0;
		*v = strtod(p, &end);
		return (errno || end == p || !in_range(*v, max)) ? -1 : 0;
	}
	*v = 0;
	for (p++;;) {
		double x;

		while (*p == ' ')
			p++;
		errno = 0;
		x = strtod(p, &end);
		if (errno || end == p || !in_range(x, max) || !in_range(*v + x, max))
			return -1;
		*v += x;
		p = end;
		while (*p == ' ')
			p++;
		if (*p == ']')
			return 0;
		if (*p != ';')
			return -1;
		p++;
	}
}

/* The statistics of a node, each with its bound: times in milliseconds,
 * at most 10^9 (eleven days an operator, beyond any profile, where sums
 * over a graph and a batch stay far from overflowing); sizes in bytes. */
static const struct {
	const char *key, *most;
	double max;
} stats[] = {
	{ "forward_compute_time=", "1e9 ms", 1e9 },
	{ "backward_compute_time=", "1e9 ms", 1e9 },
	{ "activation_size=", "2^62 bytes", (double)AP_MAX_BYTES },
	{ "parameter_size=", "2^62 bytes", (double)AP_MAX_BYTES },
};

static int add_node(struct pd *pd, char *line, int lineno)
{
	char *first = strstr(line, " -- "), *last = NULL, *p;
	struct pd_node *nd;
	double *to[4];

	for (p = first; p; p = strstr(p + 4, " -- "))
		last = p;
	if (!first || last == first)
		return ap_err(AP_EINPUT, pd->path, lineno,
			      "expected 'NODE -- DESCRIPTION -- forward_compute_time=...'");
	*first = 0;
	*last = 0;
	if (!*line || strlen(line) >= NAME_LEN || strpbrk(line, " \t=\""))
		return ap_err(AP_EINPUT, pd->path, lineno, "bad node name '%s'", line);
	if (find(pd, line) >= 0)
		return ap_err(AP_EINPUT, pd->path, lineno, "node '%s' defined twice", line);
	if (grow(&pd->v, pd->n, &pd->cap, sizeof *pd->v, 64))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	nd = &pd->v[pd->n];
	memset(nd, 0, sizeof *nd);
	snprintf(nd->name, sizeof nd->name, "%s", line);
	nd->line = lineno;
	to[0] = &nd->fwd_ms;
	to[1] = &nd->bwd_ms;
	to[2] = &nd->act;
	to[3] = &nd->param;
	for (size_t k = 0; k < sizeof stats / sizeof stats[0]; k++)
		if (stat(last + 4, stats[k].key, stats[k].max, to[k]))
			return ap_err(AP_EINPUT, pd->path, lineno,
				      "expected %s with a non-negative number of at most %s",
				      stats[k].key, stats[k].most);
	nd->desc = strdup(first + 4);
	if (!nd->desc)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	/* the text format quotes descriptions with '"' */
	for (p = nd->desc; *p; p++)
		if (*p == '"')
			*p = '\'';
	pd->n++;
	return 0;
}

static int add_edge(struct pd *pd, char *line, int lineno)
{
	char a[NAME_LEN], b[NAME_LEN], extra[2];
	int ia, ib;
	struct pd_node *nd;

	if (sscanf(line, " %63s -- %63s %1s", a, b, extra) != 2)
		return ap_err(AP_EINPUT, pd->path, lineno, "expected '\\tNODE -- NODE'");
	ia = find(pd, a);
	ib = find(pd, b);
	if (ia < 0 || ib < 0)
		return ap_err(AP_EINPUT, pd->path, lineno, "edge names unknown node '%s'",
			      ia < 0 ? a : b);
	nd = &pd->v[ib];
	for (int k = 0; k < nd->nin; k++)
		if (nd->in[k] == ia)
			return 0; /* repeated edge */
	if (grow(&nd->in, nd->nin, &nd->cap, sizeof *nd->in, 4))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	nd->in[nd->nin++] = ia;
	return 0;
}

static long node_number(const char *name)
{
	const char *p = name + strlen(name);

	while (p > name && isdigit((unsigned char)p[-1]))
		p--;
	return *p ? strtol(p, NULL, 10) : -1;
}

static int less(const struct pd_node *a, const struct pd_node *b)
{
	long x = node_number(a->name), y = node_number(b->name);

	return x != y ? x < y : strcmp(a->name, b->name) < 0;
}

/* Kahn's algorithm, always taking the smallest ready node: quadratic, but
 * the largest profile has about a thousand nodes. */
static int toposort(struct pd *pd, int *order)
{
	int *left = calloc((size_t)pd->n + 1, sizeof *left);
	char *done = calloc((size_t)pd->n + 1, 1);
	int rc = AP_OK;

	if (!left || !done) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	for (int i = 0; i < pd->n; i++)
		left[i] = pd->v[i].nin;
	for (int k = 0; k < pd->n; k++) {
		int best = -1;

		for (int i = 0; i < pd->n; i++)
			if (!done[i] && left[i] == 0 && (best < 0 || less(&pd->v[i], &pd->v[best])))
				best = i;
		if (best < 0) {
			for (int i = 0; i < pd->n; i++)
				if (!done[i]) {
					rc = ap_err(AP_EINPUT, pd->path, pd->v[i].line,
						    "node '%s' is on a cycle (expected a DAG)",
						    pd->v[i].name);
					goto out;
				}
		}
		done[best] = 1;
		pd->v[best].order = k;
		order[k] = best;
		for (int i = 0; i < pd->n; i++)
			for (int e = 0; e < pd->v[i].nin; e++)
				if (pd->v[i].in[e] == best)
					left[i]--;
	}
out:
	free(left);
	free(done);
	return rc;
}

/* The profiled batch: image inputs reveal it (3x224x224 or 3x299x299
 * floats per sample); otherwise the PipeDream profiler's default of 64. */
static int64_t profiled_batch(const struct pd *pd)
{
	static const int64_t per_sample[] = { 3 * 224 * 224, 3 * 299 * 299 };

	for (int i = 0; i < pd->n; i++) {
		int64_t elems = (int64_t)(pd->v[i].act / BYTES_PER_ELEM);

		if (map_kind(pd->v[i].desc) != OP_INPUT || elems <= 0)
			continue;
		for (size_t k = 0; k < 2; k++)
			if (elems % per_sample[k] == 0)
				return elems / per_sample[k];
	}
	return 64;
}

static int build(struct pd *pd, const int *order, struct graph *g)
{
	for (int k = 0; k < pd->n; k++) {
		struct pd_node *nd = &pd->v[order[k]];
		struct op op;

		op_init(&op);
		snprintf(op.name, sizeof op.name, "%s", nd->name);
		op.kind = map_kind(nd->desc);
		op.line = nd->line;
		op.imported = 1;
		op.desc = nd->desc;
		nd->desc = NULL;
		op.m.valid = 1;
		/* Input nodes are sources of zero cost: their recorded forward
		 * time is data loading, which the reference optimizer ignores */
		op.m.fwd_us = op.kind == OP_INPUT ? 0 : nd->fwd_ms * 1000.0;
		op.m.bwd_us = op.kind == OP_INPUT ? 0 : nd->bwd_ms * 1000.0;
		op.m.act_bytes = (int64_t)(nd->act + 0.5);
		op.m.param_bytes = (int64_t)(nd->param + 0.5);
		op.nin = nd->nin;
		op.in = malloc((size_t)(nd->nin ? nd->nin : 1) * sizeof *op.in);
		if (!op.in || graph_add(g, &op) < 0) {
			free(op.in);
			free(op.desc);
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		}
		for (int e = 0; e < nd->nin; e++)
			g->ops[k].in[e] = pd->v[nd->in[e]].order;
	}
	return AP_OK;
}

int pipedream_read(const char *path, int64_t batch, struct graph *g)
{
	struct pd pd = { .path = path };
	FILE *f = fopen(path, "r");
	char *line = NULL, *slash, *dot;
	size_t cap = 0;
	int *order = NULL, rc = AP_OK, lineno = 0;
	ssize_t len;

	graph_init(g);
	if (!f)
		return ap_err(AP_EINPUT, path, 0, "cannot read profile: %s", strerror(errno));
	while ((len = getline(&line, &cap, f)) >= 0 && !rc) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (len == 0)
			continue;
		if (memchr(line, 0, (size_t)len))
			rc = ap_err(AP_EINPUT, path, lineno, "not a text file");
		else if (line[0] == '\t')
			rc = add_edge(&pd, line, lineno);
		else
			rc = add_node(&pd, line, lineno);
	}
	if (!rc && pd.n == 0)
		rc = ap_err(AP_EINPUT, path, 0, "no nodes (expected PipeDream graph.txt)");
	if (rc)
		goto out;
	order = malloc((size_t)pd.n * sizeof *order);
	if (!order) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	rc = toposort(&pd, order);
	if (rc)
		goto out;
	g->path = strdup(path);
	g->batch = profiled_batch(&pd);
	slash = strrchr(path, '/');
	snprintf(g->name, sizeof g->name, "%s", slash ? slash + 1 : path);
	dot = strrchr(g->name, '.');
	if (dot)
		*dot = 0;
	rc = g->path ? build(&pd, order, g) : ap_err(AP_EFAIL, NULL, 0, "out of memory");
	if (!rc)
		rc = graph_finalize(g);
	if (!rc && batch > 0)
		rc = graph_set_batch(g, batch);
out:
	for (int i = 0; i < pd.n; i++) {
		free(pd.v[i].desc);
		free(pd.v[i].in);
	}
	free(pd.v);
	free(order);
	free(line);
	fclose(f);
	if (rc)
		graph_release(g);
	return rc;
}
