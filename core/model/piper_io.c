/*
 * Piper's JSON input (piper_io.h; the format is docs/piper.md).  The
 * checks are those of Piper's reference implementation (its
 * checkInputCorrectness), each made an error that names the JSON field:
 * positive machine numbers, non-negative costs, node ids and edges given
 * once, edges between known nodes, a DAG, configuration ids non-empty and
 * distinct per node and degree, degrees that are integers >= 1, and sync
 * maps keyed by exactly the node's neighbours (Piper's "syncTimes should
 * contain only real edges" and "all edges").  Unknown fields are skipped,
 * as Piper's README allows debug information beside the data.
 *
 * Ids in the file are any integers; the instance numbers its nodes 0 ..
 * n-1 in file order and keeps each configuration's sync bytes as arrays
 * aligned with the node's edge lists.
 */
#include "model/piper_io.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/err.h"
#include "model/ops.h"

/* Piper's DEVICES_LIMIT: the most devices, so the largest degree too. */
#define MAX_DEGREE 10000
/* The most micro-batches N in a batch: the published inputs have 256 and
 * 7,680; a simulation keeps state for each micro-batch of a plan. */
#define MAX_MBS 65536
#define FLD_LEN 192

struct id_at {
	int id, v;
};

struct rd {
	const char *path;
	struct piper_inst *pi;
	int *ids;            /* the file's id of node v */
	struct id_at *byid;  /* sorted by id */
};

static const char *kind(const json_t *x)
{
	static const char *const names[] = {
		[JSON_OBJECT] = "an object", [JSON_ARRAY] = "an array",
		[JSON_STRING] = "a string", [JSON_INTEGER] = "an integer",
		[JSON_REAL] = "a real number", [JSON_TRUE] = "true",
		[JSON_FALSE] = "false", [JSON_NULL] = "null",
	};

	return names[json_typeof(x)];
}

__attribute__((format(printf, 3, 4)))
static int bad(const struct rd *r, const char *fld, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ap_err(AP_EINPUT, r->path, 0, "%s: %s", fld, msg);
}

/* A field path into buf (FLD_LEN bytes); a long map key is cut short. */
__attribute__((format(printf, 2, 3)))
static void field(char *buf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, FLD_LEN, fmt, ap);
	va_end(ap);
}

static int oom(void)
{
	return ap_err(AP_EFAIL, NULL, 0, "out of memory");
}

/* Member key of obj in *x and its field path in fld (FLD_LEN bytes); a
 * missing member is an error that says what was wanted. */
static int need(const struct rd *r, json_t *obj, const char *prefix, const char *key,
		const char *want, json_t **x, char *fld)
{
	field(fld, "%s%s%s", prefix, *prefix ? "." : "", key);
	*x = json_object_get(obj, key);
	return *x ? AP_OK : bad(r, fld, "missing (expected %s)", want);
}

/* What a number may be (docs/piper.md): > 0 (pos) or >= 0, and within
 * [min, max], the bounds past which it describes no machine or model
 * and the sums over a graph and a batch would overflow to inf. */
struct bound {
	int pos;
	double min, max;
	const char *least, *most; /* min and max, as the messages say them */
};

static const struct bound bytes_b = { 0, 0, (double)AP_MAX_BYTES, NULL, "2^62 bytes" };
static const struct bound memory_b = { 1, 0, (double)AP_MAX_BYTES, NULL, "2^62 bytes" };
static const struct bound bandwidth_b = { 1, 1e3, INFINITY, "1e3 bytes/s", NULL };
static const struct bound seconds_b = { 0, 0, 1e6, NULL, "1e6 seconds" };

/* A number within b.  JSON has no NaN or infinity and jansson rejects
 * numbers that overflow a double, so what parses is finite; the check
 * stays for the reader's sake. */
static int as_number(const struct rd *r, const char *fld, json_t *x, const struct bound *b,
		     double *out)
{
	const char *want = b->pos ? "a positive number" : "a non-negative number";
	double d;

	if (!json_is_number(x))
		return bad(r, fld, "expected %s, got %s", want, kind(x));
	d = json_number_value(x);
	if (!isfinite(d) || !(b->pos ? d > 0 : d >= 0))
		return bad(r, fld, "expected %s, got %g", want, d);
	if (d < b->min)
		return bad(r, fld, "expected at least %s, got %g", b->least, d);
	if (d > b->max)
		return bad(r, fld, "expected at most %s, got %g", b->most, d);
	*out = d;
	return AP_OK;
}

static int number(const struct rd *r, json_t *obj, const char *prefix, const char *key,
		  const struct bound *b, double *out)
{
	char fld[FLD_LEN];
	json_t *x;
	int st = need(r, obj, prefix, key, b->pos ? "a positive number" : "a non-negative number",
		      &x, fld);

	return st ? st : as_number(r, fld, x, b, out);
}

/* An integer in [lo, hi].  A real with an integral value counts, as
 * Piper's reader converts it. */
static int integer(const struct rd *r, const char *fld, json_t *x, long long lo, long long hi,
		   const char *want, int *out)
{
	long long v;

	if (json_is_integer(x)) {
		v = json_integer_value(x);
	} else if (json_is_real(x) && json_real_value(x) == floor(json_real_value(x)) &&
		   fabs(json_real_value(x)) < 1e15) {
		v = (long long)json_real_value(x);
	} else {
		if (json_is_real(x))
			return bad(r, fld, "expected %s, got %g", want, json_real_value(x));
		return bad(r, fld, "expected %s, got %s", want, kind(x));
	}
	if (v < lo || v > hi)
		return bad(r, fld, "expected %s, got %lld", want, v);
	*out = (int)v;
	return AP_OK;
}

/* A map key that is a decimal integer.  Piper reads keys with stoi, which
 * also takes "3abc"; this takes digits only, with an optional '-'. */
static int key_int(const char *s, long long *v)
{
	char *end;

	if (!isdigit((unsigned char)s[0]) && !(s[0] == '-' && isdigit((unsigned char)s[1])))
		return -1;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return errno || *end ? -1 : 0;
}

static int cmp_id(const void *a, const void *b)
{
	const struct id_at *x = a, *y = b;

	return x->id != y->id ? (x->id < y->id ? -1 : 1) : x->v - y->v;
}

/* Node with file id id, or -1. */
static int lookup(const struct rd *r, long long id)
{
	int lo = 0, hi = r->pi->nnodes;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (r->byid[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->pi->nnodes && r->byid[lo].id == id ? r->byid[lo].v : -1;
}

static int read_machine(const struct rd *r, json_t *root)
{
	struct piper_inst *pi = r->pi;
	char fld[FLD_LEN];
	json_t *x, *y;
	int st, m;

	st = need(r, root, "", "maxDevices", "a positive integer", &x, fld);
	if (!st)
		st = integer(r, fld, x, 1, MAX_DEGREE, "a positive integer of at most 10000",
			     &pi->max_devices);
	if (!st)
		st = number(r, root, "", "maxMemoryPerDevice", &memory_b, &pi->mem);
	if (!st)
		st = number(r, root, "", "bandwidth", &bandwidth_b, &pi->bw);
	if (st)
		return st;
	/* the README calls N maxBatchSize, the published inputs mbsInBatch */
	x = json_object_get(root, "mbsInBatch");
	y = json_object_get(root, "maxBatchSize");
	if (!x && !y)
		return bad(r, "mbsInBatch", "missing (expected a positive integer, the "
			   "micro-batches in a batch; maxBatchSize is read too)");
	if (x)
		st = integer(r, "mbsInBatch", x, 1, MAX_MBS, "a positive integer of at most 65536",
			     &pi->mbs);
	if (!st && y) {
		st = integer(r, "maxBatchSize", y, 1, MAX_MBS, "a positive integer of at most 65536",
			     &m);
		if (!st && x && m != pi->mbs)
			st = bad(r, "maxBatchSize", "%d differs from mbsInBatch (%d)", m, pi->mbs);
		pi->mbs = m;
	}
	return st;
}

/* Ids and names; the configurations wait until the edges are known. */
static int read_nodes(struct rd *r, json_t *arr)
{
	struct piper_inst *pi = r->pi;
	size_t n = json_array_size(arr);

	if (!json_is_array(arr) || n == 0)
		return bad(r, "nodes", "expected a non-empty array of layers, got %s",
			   json_is_array(arr) ? "an empty array" : kind(arr));
	if (n > INT_MAX / 4)
		return bad(r, "nodes", "%zu nodes are too many", n);
	pi->nodes = calloc(n, sizeof *pi->nodes);
	r->ids = malloc(n * sizeof *r->ids);
	r->byid = malloc(n * sizeof *r->byid);
	if (!pi->nodes || !r->ids || !r->byid)
		return oom();
	pi->nnodes = (int)n;
	for (int v = 0; v < pi->nnodes; v++) {
		json_t *x = json_array_get(arr, (size_t)v), *y;
		char pre[FLD_LEN], fld[FLD_LEN];
		int st;

		field(pre, "nodes[%d]", v);
		if (!json_is_object(x))
			return bad(r, pre, "expected an object, got %s", kind(x));
		st = need(r, x, pre, "id", "an integer", &y, fld);
		if (!st)
			st = integer(r, fld, y, INT_MIN, INT_MAX, "an integer", &r->ids[v]);
		if (!st)
			st = need(r, x, pre, "TMPCs", "an object", &y, fld);
		if (!st && !json_is_object(y))
			st = bad(r, fld, "expected an object keyed by tensor-parallel degree, "
				 "got %s", kind(y));
		if (st)
			return st;
		r->byid[v] = (struct id_at){ r->ids[v], v };
		y = json_object_get(x, "name");
		if (y && !json_is_string(y))
			return bad(r, strcat(pre, ".name"), "expected a string, got %s", kind(y));
		if (y && !(pi->nodes[v].name = strdup(json_string_value(y))))
			return oom();
	}
	qsort(r->byid, n, sizeof *r->byid, cmp_id);
	for (int k = 1; k < pi->nnodes; k++)
		if (r->byid[k].id == r->byid[k - 1].id) {
			char fld[FLD_LEN];

			field(fld, "nodes[%d].id", r->byid[k].v);
			return bad(r, fld, "%d is the id of nodes[%d] already", r->byid[k].id,
				   r->byid[k - 1].v);
		}
	return AP_OK;
}

static int cmp_edge(const void *a, const void *b, void *arg)
{
	const struct piper_edge *e = arg;
	int x = *(const int *)a, y = *(const int *)b;

	if (e[x].src != e[y].src)
		return e[x].src < e[y].src ? -1 : 1;
	if (e[x].dst != e[y].dst)
		return e[x].dst < e[y].dst ? -1 : 1;
	return x - y;
}

static int read_edges(struct rd *r, json_t *arr)
{
	struct piper_inst *pi = r->pi;
	size_t n = json_array_size(arr);
	int *order, st = AP_OK;

	if (!json_is_array(arr))
		return bad(r, "edges", "expected an array, got %s", kind(arr));
	if (n > INT_MAX / 4)
		return bad(r, "edges", "%zu edges are too many", n);
	pi->edges = calloc(n ? n : 1, sizeof *pi->edges);
	if (!pi->edges)
		return oom();
	pi->nedges = (int)n;
	for (int e = 0; e < pi->nedges && !st; e++) {
		json_t *x = json_array_get(arr, (size_t)e), *y;
		char pre[FLD_LEN], fld[FLD_LEN];
		int end[2] = { 0, 0 };

		field(pre, "edges[%d]", e);
		if (!json_is_object(x))
			return bad(r, pre, "expected an object, got %s", kind(x));
		for (int k = 0; k < 2 && !st; k++) {
			int id;

			st = need(r, x, pre, k ? "destId" : "sourceId", "a node id", &y, fld);
			if (!st)
				st = integer(r, fld, y, INT_MIN, INT_MAX, "a node id", &id);
			if (!st && (end[k] = lookup(r, id)) < 0)
				st = bad(r, fld, "no node has id %d", id);
		}
		if (!st)
			st = number(r, x, pre, "communicationCost", &bytes_b, &pi->edges[e].bytes);
		pi->edges[e].src = end[0];
		pi->edges[e].dst = end[1];
	}
	if (st || n == 0)
		return st;
	order = malloc(n * sizeof *order);
	if (!order)
		return oom();
	for (int e = 0; e < pi->nedges; e++)
		order[e] = e;
	qsort_r(order, n, sizeof *order, cmp_edge, pi->edges);
	for (int k = 1; k < pi->nedges && !st; k++) {
		const struct piper_edge *a = &pi->edges[order[k - 1]], *b = &pi->edges[order[k]];

		if (a->src == b->src && a->dst == b->dst) {
			char fld[FLD_LEN];

			field(fld, "edges[%d]", order[k]);
			st = bad(r, fld, "the edge %d -> %d is edges[%d] already", r->ids[a->src],
				 r->ids[a->dst], order[k - 1]);
		}
	}
	free(order);
	return st ? st : piper_edge_lists(pi);
}

/* Kahn's algorithm, first come first served: order[] receives the nodes
 * (when it is not NULL); returns how many were ordered, fewer than the
 * nodes when there is a cycle.  left[] (nnodes ints) is scratch, and
 * keeps the unordered nodes' counts of unordered predecessors. */
static int topo_order(const struct piper_inst *pi, int *left, int *order)
{
	int head = 0, tail = 0, *q = order ? order : malloc((size_t)pi->nnodes * sizeof *q);

	if (!q)
		return -1;
	for (int v = 0; v < pi->nnodes; v++)
		if (!(left[v] = pi->nodes[v].nin))
			q[tail++] = v;
	while (head < tail) {
		const struct piper_node *u = &pi->nodes[q[head++]];

		for (int k = 0; k < u->nout; k++) {
			int w = pi->edges[u->out[k]].dst;

			if (--left[w] == 0)
				q[tail++] = w;
		}
	}
	if (q != order)
		free(q);
	return tail;
}

static int check_dag(const struct rd *r)
{
	const struct piper_inst *pi = r->pi;
	int *left = malloc((size_t)pi->nnodes * sizeof *left), v = -1, done = 0, st = AP_OK;
	char *seen = calloc((size_t)pi->nnodes, 1);

	if (!left || !seen || (done = topo_order(pi, left, NULL)) < 0) {
		st = oom();
		goto out;
	}
	if (done < pi->nnodes) {
		/* every node left has a predecessor left: walking back from
		 * one must come round to a node on a cycle */
		for (v = 0; !left[v]; v++)
			;
		while (!seen[v]) {
			const struct piper_node *x = &pi->nodes[v];

			seen[v] = 1;
			for (int k = 0; k < x->nin; k++)
				if (left[pi->edges[x->in[k]].src]) {
					v = pi->edges[x->in[k]].src;
					break;
				}
		}
		st = bad(r, "edges", "not a DAG: node %d (nodes[%d]) is on a cycle", r->ids[v], v);
	}
out:
	free(left);
	free(seen);
	return st;
}

/* syncTimeFw (out = 0) or syncTimeBw (out = 1) of a configuration of node
 * v: bytes per edge, keyed by the id of the edge's other end, into an
 * array aligned with the node's in or out edges. */
static int read_sync(const struct rd *r, json_t *obj, const char *pre, int v, int out,
		     double **arr)
{
	const struct piper_node *n = &r->pi->nodes[v];
	const char *name = out ? "syncTimeBw" : "syncTimeFw", *key;
	int cnt = out ? n->nout : n->nin, *list = out ? n->out : n->in, st;
	char fld[FLD_LEN], kf[FLD_LEN];
	json_t *map, *val;

	st = need(r, obj, pre, name, "an object", &map, fld);
	if (st)
		return st;
	if (!json_is_object(map))
		return bad(r, fld, "expected an object keyed by the ids of the node's %s "
			   "neighbours, got %s", out ? "successors" : "predecessors", kind(map));
	*arr = malloc((size_t)(cnt ? cnt : 1) * sizeof **arr);
	if (!*arr)
		return oom();
	for (int k = 0; k < cnt; k++)
		(*arr)[k] = NAN; /* not given yet */
	json_object_foreach(map, key, val) {
		long long id;
		int u, k = 0;

		field(kf, "%s[\"%s\"]", fld, key);
		if (key_int(key, &id))
			return bad(r, kf, "expected a node id as key");
		u = lookup(r, id);
		while (k < cnt && u >= 0 &&
		       (out ? r->pi->edges[list[k]].dst : r->pi->edges[list[k]].src) != u)
			k++;
		if (u < 0 || k == cnt)
			return bad(r, kf, "no edge %lld -> %lld in edges", out ? r->ids[v] : id,
				   out ? id : r->ids[v]);
		if (!isnan((*arr)[k]))
			return bad(r, kf, "node %lld is given twice", id);
		st = as_number(r, kf, val, &bytes_b, &(*arr)[k]);
		if (st)
			return st;
	}
	for (int k = 0; k < cnt; k++)
		if (isnan((*arr)[k])) {
			const struct piper_edge *e = &r->pi->edges[list[k]];

			return bad(r, fld, "missing the edge %d -> %d (expected a key for each %s "
				   "edge)", r->ids[e->src], r->ids[e->dst],
				   out ? "outgoing" : "incoming");
		}
	return AP_OK;
}

static int read_tmpc(const struct rd *r, json_t *obj, const char *pre, int v,
		     struct piper_tmpc *x)
{
	char fld[FLD_LEN];
	json_t *y;
	int st;

	if (!json_is_object(obj))
		return bad(r, pre, "expected an object, got %s", kind(obj));
	st = need(r, obj, pre, "id", "a non-empty string", &y, fld);
	if (!st && (!json_is_string(y) || !json_string_length(y)))
		st = bad(r, fld, "expected a non-empty string, got %s",
			 json_is_string(y) ? "an empty one" : kind(y));
	if (st)
		return st;
	x->id = strdup(json_string_value(y));
	if (!x->id)
		return oom();
	st = number(r, obj, pre, "timePerSample", &seconds_b, &x->time);
	if (!st)
		st = number(r, obj, pre, "parameterSize", &bytes_b, &x->params);
	if (!st)
		st = number(r, obj, pre, "memoryUsageA", &bytes_b, &x->mem_a);
	if (!st)
		st = number(r, obj, pre, "memoryUsageB", &bytes_b, &x->mem_b);
	if (!st)
		st = read_sync(r, obj, pre, v, 0, &x->sync_fw);
	if (!st)
		st = read_sync(r, obj, pre, v, 1, &x->sync_bw);
	return st;
}

static int cmp_deg(const void *a, const void *b)
{
	return ((const struct piper_degree *)a)->t - ((const struct piper_degree *)b)->t;
}

static int read_degrees(const struct rd *r, json_t *node, int v)
{
	struct piper_node *n = &r->pi->nodes[v];
	json_t *map = json_object_get(node, "TMPCs"), *list;
	const char *key;
	char pre[FLD_LEN], fld[FLD_LEN];
	int st;

	n->deg = calloc(json_object_size(map) ? json_object_size(map) : 1, sizeof *n->deg);
	if (!n->deg)
		return oom();
	json_object_foreach(map, key, list) {
		struct piper_degree *d = &n->deg[n->ndeg];
		long long t;

		field(pre, "nodes[%d].TMPCs[\"%s\"]", v, key);
		if (key_int(key, &t) || t < 1 || t > MAX_DEGREE)
			return bad(r, pre, "expected a tensor-parallel degree as key, an integer "
				   "from 1 to %d", MAX_DEGREE);
		for (int k = 0; k < n->ndeg; k++)
			if (n->deg[k].t == t)
				return bad(r, pre, "degree %lld is given twice", t);
		if (!json_is_array(list))
			return bad(r, pre, "expected an array of configurations, got %s",
				   kind(list));
		n->ndeg++;
		d->t = (int)t;
		d->tmpc = calloc(json_array_size(list) ? json_array_size(list) : 1,
				 sizeof *d->tmpc);
		if (!d->tmpc)
			return oom();
		for (size_t l = 0; l < json_array_size(list); l++) {
			struct piper_tmpc *x = &d->tmpc[d->ntmpc++];

			field(fld, "%s[%zu]", pre, l);
			st = read_tmpc(r, json_array_get(list, l), fld, v, x);
			for (int k = 0; k + 1 < d->ntmpc && !st; k++)
				if (strcmp(d->tmpc[k].id, x->id) == 0)
					st = bad(r, strcat(fld, ".id"), "'%s' is the id of "
						 "configuration %d already", x->id, k);
			if (st)
				return st;
		}
	}
	qsort(n->deg, (size_t)n->ndeg, sizeof *n->deg, cmp_deg);
	return AP_OK;
}

/* piper_read(), and the file's node ids into *ids (when not NULL). */
static int read_input(const char *path, struct piper_inst *out, int **ids)
{
	struct rd r = { .path = path, .pi = out };
	json_error_t jerr;
	json_t *root, *nodes;
	char fld[FLD_LEN];
	FILE *f;
	int st;

	memset(out, 0, sizeof *out);
	f = fopen(path, "r");
	if (!f)
		return ap_err(AP_EINPUT, path, 0, "cannot read: %s", strerror(errno));
	root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
	fclose(f);
	if (!root)
		return ap_err(AP_EINPUT, path, jerr.line, "%s (expected Piper's JSON input)",
			      jerr.text);
	if (!json_is_object(root))
		st = ap_err(AP_EINPUT, path, 0, "expected an object (Piper's JSON input), got %s",
			    kind(root));
	else if (!json_object_get(root, "nodes") && !json_object_get(root, "edges"))
		st = ap_err(AP_EINPUT, path, 0, "not a Piper input (expected an object with "
			    "\"nodes\" and \"edges\")");
	else
		st = read_machine(&r, root);
	if (!st)
		st = need(&r, root, "", "nodes", "a non-empty array", &nodes, fld);
	if (!st)
		st = read_nodes(&r, nodes);
	if (!st) {
		json_t *edges;

		st = need(&r, root, "", "edges", "an array", &edges, fld);
		if (!st)
			st = read_edges(&r, edges);
	}
	if (!st)
		st = check_dag(&r);
	for (int v = 0; v < out->nnodes && !st; v++)
		st = read_degrees(&r, json_array_get(nodes, (size_t)v), v);
	json_decref(root);
	if (!st && ids)
		*ids = r.ids;
	else
		free(r.ids);
	free(r.byid);
	if (st)
		piper_inst_release(out);
	return st;
}

int piper_read(const char *path, struct piper_inst *out)
{
	return read_input(path, out, NULL);
}

/* Names the model format takes as one token, shared by no other op. */
static int name_ok(const char *s)
{
	if (!s || !*s || strlen(s) >= NAME_LEN)
		return 0;
	for (; *s; s++)
		if (!isgraph((unsigned char)*s) || strchr("=\"#,", *s))
			return 0;
	return 1;
}

static void op_name(const struct graph *g, const struct piper_node *x, int id, char *buf)
{
	char base[NAME_LEN];

	if (name_ok(x->name))
		snprintf(base, sizeof base, "%s", x->name);
	else
		snprintf(base, sizeof base, "node%d", id);
	snprintf(buf, NAME_LEN, "%s", base);
	/* Piper's names are for debugging and repeat (BERT's "tensor") */
	for (int k = 1; graph_find(g, buf) >= 0; k++) {
		if (k == 1)
			snprintf(buf, NAME_LEN, "%.40s.%d", base, id);
		else
			snprintf(buf, NAME_LEN, "%.40s.%d.%d", base, id, k);
	}
}

/* The configuration whose numbers an operator keeps: degree 1's
 * "vanilla", else its first. */
static const struct piper_tmpc *plain_tmpc(const struct piper_node *x)
{
	const struct piper_degree *d = piper_degree_of(x, 1);

	if (!d)
		return NULL;
	for (int l = 0; l < d->ntmpc; l++)
		if (strcmp(d->tmpc[l].id, "vanilla") == 0)
			return &d->tmpc[l];
	return &d->tmpc[0];
}

/* Operator k for node k of pi (already in topological order; file index
 * fv, for messages, and file id id).  A "sample" of the graph is one of Piper's micro-
 * batches, so the whole-batch numbers op_measured holds are N times the
 * micro-batch's. */
static int add_op(const char *path, const struct piper_inst *pi, int k, int fv, int id,
		  struct graph *g)
{
	const struct piper_node *x = &pi->nodes[k];
	const struct piper_tmpc *c = plain_tmpc(x);
	double out = 0, us;
	struct op op;

	if (!c)
		return ap_err(AP_EINPUT, path, 0, "nodes[%d].TMPCs: no configuration for degree "
			      "1 (a layer of the model runs on one device)", fv);
	for (int e = 0; e < x->nout; e++)
		out = fmax(out, pi->edges[x->out[e]].bytes);
	if (out * pi->mbs >= 0x1p62 || c->params >= 0x1p62)
		return ap_err(AP_EINPUT, path, 0, "nodes[%d]: %g parameter bytes or %g output "
			      "bytes x %d micro-batches are too many", fv, c->params, out,
			      pi->mbs);
	op_init(&op);
	op_name(g, x, id, op.name);
	op.kind = OP_OPAQUE;
	op.imported = 1;
	op.m.valid = 1;
	/* Piper gives forward plus backward only; the split is the usual
	 * backward-is-twice-forward (two GEMMs per forward one) */
	us = 1e6 * c->time * pi->mbs;
	op.m.fwd_us = us / 3;
	op.m.bwd_us = us - op.m.fwd_us;
	op.m.act_bytes = llround(out * pi->mbs);
	op.m.param_bytes = llround(c->params);
	op.nin = x->nin;
	op.in = malloc((size_t)(x->nin ? x->nin : 1) * sizeof *op.in);
	if (op.in)
		for (int e = 0; e < x->nin; e++)
			op.in[e] = pi->edges[x->in[e]].src;
	if (!op.in || graph_add(g, &op) < 0) {
		free(op.in);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	return AP_OK;
}

/* Renumbers pi's nodes as order[] lists them.  Edge indices, so the
 * nodes' edge lists and sync arrays, stay as they are. */
static int permute(struct piper_inst *pi, const int *order)
{
	struct piper_node *nodes = malloc((size_t)pi->nnodes * sizeof *nodes);
	int *rank = malloc((size_t)pi->nnodes * sizeof *rank);

	if (!nodes || !rank) {
		free(nodes);
		free(rank);
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	for (int k = 0; k < pi->nnodes; k++) {
		nodes[k] = pi->nodes[order[k]];
		rank[order[k]] = k;
	}
	for (int e = 0; e < pi->nedges; e++) {
		pi->edges[e].src = rank[pi->edges[e].src];
		pi->edges[e].dst = rank[pi->edges[e].dst];
	}
	free(pi->nodes);
	pi->nodes = nodes;
	free(rank);
	return AP_OK;
}

int piper_read_model(const char *path, struct graph *g)
{
	struct piper_inst *pi = calloc(1, sizeof *pi);
	int *order = NULL, *left = NULL, *ids = NULL, st;
	const char *slash;
	char *dot;

	graph_init(g);
	if (!pi)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	st = read_input(path, pi, &ids);
	if (st) {
		free(pi);
		return st;
	}
	/* the planner pairs node v with operator v, and operators come in a
	 * topological order */
	order = malloc((size_t)pi->nnodes * sizeof *order);
	left = malloc((size_t)pi->nnodes * sizeof *left);
	if (!order || !left || topo_order(pi, left, order) != pi->nnodes)
		st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
	if (!st)
		st = permute(pi, order);
	g->piper = pi;
	g->batch = pi->mbs;
	g->path = strdup(path);
	if (!st && !g->path)
		st = ap_err(AP_EFAIL, NULL, 0, "out of memory");
	slash = strrchr(path, '/');
	snprintf(g->name, sizeof g->name, "%s", slash ? slash + 1 : path);
	dot = strrchr(g->name, '.');
	if (dot)
		*dot = 0;
	for (int k = 0; k < pi->nnodes && !st; k++)
		st = add_op(path, pi, k, order[k], ids[order[k]], g);
	if (!st)
		st = graph_finalize(g);
	free(ids);
	free(order);
	free(left);
	if (st)
		graph_release(g);
	return st;
}
