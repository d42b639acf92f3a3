/*
 * The graph container: operators in topological order, lookup by name,
 * batch changes, totals and consumer lists.  What each operator kind
 * computes (shapes, multiply-accumulates, parameters) lives in ops.c.
 */
#include "model/graph.h"

#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/err.h"
#include "util/grow.h"
#include "model/piper_inst.h"
#include "model/ops.h"

static const char *const dim_names[NDIMS] = { "n", "c", "h", "w", "l" };

const char *dim_name(enum dim_kind d)
{
	return (unsigned)d < NDIMS ? dim_names[d] : "?";
}

int dim_parse(const char *s, enum dim_kind *out)
{
	for (int d = 0; d < NDIMS; d++) {
		if (strcmp(s, dim_names[d]) == 0) {
			*out = (enum dim_kind)d;
			return 0;
		}
	}
	return -1;
}

static const char *const init_names[NPARAM_INITS] = { "torch", "gpt2" };

const char *param_init_name(enum param_init s)
{
	return (unsigned)s < NPARAM_INITS ? init_names[s] : "?";
}

int param_init_parse(const char *s)
{
	for (int k = 0; k < NPARAM_INITS; k++)
		if (strcmp(s, init_names[k]) == 0)
			return k;
	return -1;
}

void op_init(struct op *op)
{
	memset(op, 0, sizeof *op);
	op->a.groups = 1;
	op->a.bias = 1;
	op->a.axis = NDIMS; /* kind's default */
	op->a.tie = -1;
	op->a.p = 0.5;
	op->a.index = -1;
	op->block = -1;
	op->iter = -1;
}

void graph_init(struct graph *g)
{
	memset(g, 0, sizeof *g);
}

void graph_release(struct graph *g)
{
	for (int i = 0; i < g->nops; i++) {
		free(g->ops[i].in);
		free(g->ops[i].desc);
	}
	free(g->ops);
	free(g->slots);
	free(g->path);
	if (g->piper) {
		piper_inst_release(g->piper);
		free(g->piper);
	}
	graph_init(g);
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* Puts op i into the index (a later op of the same name replaces it). */
static void index_put(struct graph *g, int i)
{
	uint32_t m = (uint32_t)g->nslots - 1, k = name_hash(g->ops[i].name) & m;

	while (g->slots[k] && strcmp(g->ops[g->slots[k] - 1].name, g->ops[i].name))
		k = (k + 1) & m;
	g->slots[k] = i + 1;
}

int graph_add(struct graph *g, const struct op *op)
{
	if (grow(&g->ops, g->nops, &g->cap, sizeof *g->ops, 64))
		return -1;
	if (2 * (g->nops + 1) > g->nslots) {
		int n = g->nslots ? 2 * g->nslots : 128, *s = calloc((size_t)n, sizeof *s);

		if (!s)
			return -1;
		free(g->slots);
		g->slots = s;
		g->nslots = n;
		for (int i = 0; i < g->nops; i++)
			index_put(g, i);
	}
	g->ops[g->nops] = *op;
	index_put(g, g->nops);
	return g->nops++;
}

int graph_find(const struct graph *g, const char *name)
{
	uint32_t m = (uint32_t)g->nslots - 1;

	if (!g->nslots)
		return -1;
	for (uint32_t k = name_hash(name) & m; g->slots[k]; k = (k + 1) & m)
		if (strcmp(g->ops[g->slots[k] - 1].name, name) == 0)
			return g->slots[k] - 1;
	return -1;
}

int graph_copy(struct graph *dst, const struct graph *src)
{
	graph_init(dst);
	memcpy(dst->name, src->name, sizeof dst->name);
	dst->batch = src->batch;
	dst->init = src->init;
	dst->init_std = src->init_std;
	dst->nblocks = src->nblocks;
	if (src->path && !(dst->path = strdup(src->path)))
		goto oom;
	for (int i = 0; i < src->nops; i++) {
		struct op op = src->ops[i];

		op.in = NULL;
		op.desc = NULL;
		if ((op.nin && !(op.in = malloc((size_t)op.nin * sizeof *op.in))) ||
		    (src->ops[i].desc && !(op.desc = strdup(src->ops[i].desc))) ||
		    graph_add(dst, &op) < 0) {
			free(op.in);
			free(op.desc);
			goto oom;
		}
		if (op.nin)
			memcpy(op.in, src->ops[i].in, (size_t)op.nin * sizeof *op.in);
	}
	return AP_OK;
oom:
	graph_release(dst);
	return ap_err(AP_EFAIL, NULL, 0, "out of memory");
}

int graph_set_batch(struct graph *g, int64_t batch)
{
	if (batch <= 0 || batch > AP_MAX_COUNT)
		return ap_err(AP_EINPUT, g->path, 0, "batch %lld must be positive, at most 2^40",
			      (long long)batch);
	if (batch != g->batch) {
		double r = (double)batch / (double)g->batch;

		/* Measured per-op numbers were taken at g->batch; per-sample
		 * cost is assumed constant, as PipeDream's profiles do. */
		for (int i = 0; i < g->nops; i++) {
			struct op_measured *m = &g->ops[i].m;

			if (!m->valid)
				continue;
			m->fwd_us *= r;
			m->bwd_us *= r;
			/* a scaled byte count past the limit is refused, never cast */
			if ((double)m->act_bytes * r > (double)AP_MAX_BYTES)
				return ap_err(AP_EINPUT, g->path, g->ops[i].line,
					      "'%s' at batch %lld keeps more than 2^62 bytes",
					      g->ops[i].name, (long long)batch);
			m->act_bytes = (int64_t)((double)m->act_bytes * r + 0.5);
		}
		g->batch = batch;
	}
	return graph_finalize(g);
}

int64_t shape_elems(const struct shape *s)
{
	return sat_prod(s->size, s->rank);
}

int shape_dim(const struct shape *s, enum dim_kind d)
{
	for (int i = 0; i < s->rank; i++)
		if (s->kind[i] == d)
			return i;
	return -1;
}

int64_t shape_size(const struct shape *s, enum dim_kind d)
{
	int i = shape_dim(s, d);

	return i < 0 ? 1 : s->size[i];
}

int64_t shape_extent(const struct shape *s, enum dim_kind d, int64_t mb_n)
{
	return d == DIM_N ? mb_n : shape_size(s, d);
}

void shape_format(const struct shape *s, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0; i < s->rank && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%lld", dim_name(s->kind[i]),
				      (long long)s->size[i]);
}

/* *sum + v, held at INT64_MAX past it. */
static void add_sat(int64_t *sum, int64_t v)
{
	if (__builtin_add_overflow(*sum, v, sum))
		*sum = INT64_MAX;
}

void graph_totals(const struct graph *g, struct graph_totals *t)
{
	memset(t, 0, sizeof *t);
	t->measured = g->nops > 0;
	for (int i = 0; i < g->nops; i++) {
		const struct op *op = &g->ops[i];

		add_sat(&t->params, op->params);
		add_sat(&t->fwd_macs, op->fwd_macs);
		add_sat(&t->bwd_macs, op->bwd_macs);
		add_sat(&t->act_bytes, op->out_bytes);
		add_sat(&t->param_bytes, op->params * BYTES_PER_ELEM);
		if (op->m.valid) {
			t->fwd_us += op->m.fwd_us;
			t->bwd_us += op->m.bwd_us;
		} else {
			t->measured = 0;
		}
	}
}

int graph_consumers(const struct graph *g, int **ofs_out, int **idx_out)
{
	int *ofs = calloc((size_t)g->nops + 1, sizeof *ofs);
	int *fill = calloc((size_t)g->nops + 1, sizeof *fill);
	int *idx = NULL;
	int nedges = 0;

	if (!ofs || !fill)
		goto fail;
	for (int i = 0; i < g->nops; i++)
		for (int k = 0; k < g->ops[i].nin; k++)
			ofs[g->ops[i].in[k] + 1]++, nedges++;
	for (int i = 0; i < g->nops; i++)
		ofs[i + 1] += ofs[i];
	idx = malloc((size_t)(nedges ? nedges : 1) * sizeof *idx);
	if (!idx)
		goto fail;
	for (int i = 0; i < g->nops; i++)
		for (int k = 0; k < g->ops[i].nin; k++) {
			int p = g->ops[i].in[k];

			idx[ofs[p] + fill[p]++] = i;
		}
	free(fill);
	*ofs_out = ofs;
	*idx_out = idx;
	return 0;
fail:
	free(ofs);
	free(fill);
	free(idx);
	return ap_err(AP_EFAIL, NULL, 0, "out of memory");
}
