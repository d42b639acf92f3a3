/*
 * The cost model (cost.h): the terms the simulator schedules and the
 * planners price.  The formulas are stated where they are defined; the
 * simulator's use of them (which transfers exist, how collectives occupy
 * links) is in docs/simulator.md.
 */
#include "cost/cost.h"

#include <math.h>
#include <string.h>

#include "model/needs.h"

/* --- compute ------------------------------------------------------------- */

int cost_op(const struct profile *p, const struct graph *g, int i, const int degree[NDIMS],
	    int microbatches, struct op_cost *out)
{
	int deg[NDIMS], st;

	memcpy(deg, degree, sizeof deg);
	deg[DIM_N] *= microbatches;
	st = profile_lookup(p, g, i, deg, out);
	if (!st && g->ops[i].kind == OP_INPUT)
		out->bwd_us = 0;
	return st;
}

/* --- point-to-point transfers -------------------------------------------- */

double cost_link_s(const struct link *l, double bytes)
{
	return l->latency_s + bytes / l->bw_bytes_per_s;
}

double cost_transfer_s(const struct cluster *c, int src, int dst, double bytes)
{
	return cost_link_s(cluster_link(c, src, dst), bytes);
}

int cost_need_span(const struct graph *g, int c, int k, int d, int i, int nd, int64_t mb,
		   int64_t *a, int64_t *b)
{
	const struct op *op = &g->ops[c];
	const struct shape *t = &g->ops[op->in[k]].out;
	int64_t sz = shape_extent(t, (enum dim_kind)d, mb);
	int64_t osz = shape_extent(&op->out, (enum dim_kind)d, mb);

	*a = 0;
	*b = sz;
	if (!cost_need_varies(g, c, k, d))
		return 0;
	op_input_need(g, op, k, (enum dim_kind)d, i, nd, i * osz / nd, (i + 1) * osz / nd, sz,
		      a, b);
	return 1;
}

int cost_need_varies(const struct graph *g, int c, int k, int d)
{
	const struct op *op = &g->ops[c];

	return shape_dim(&g->ops[op->in[k]].out, (enum dim_kind)d) >= 0 &&
	       op_input_varies(op, k, (enum dim_kind)d);
}

int64_t cost_need_bytes(const struct graph *g, int c, int k, const int dc[NDIMS], int64_t mb)
{
	int64_t v = BYTES_PER_ELEM;

	for (int d = 0; d < NDIMS; d++) {
		int64_t a, b;

		cost_need_span(g, c, k, d, 0, dc[d], mb, &a, &b);
		v *= b - a;
	}
	return v;
}

int cost_link_resources(const struct cluster *c)
{
	int ndev = cluster_ndevices(c);

	return ndev * ndev + 2 * c->nodes;
}

/* Adds a transfer of `bytes` from src to dst to the busy time of the
 * links it occupies (cost_link_resources()); the busier one after it.
 * clear: sets them back to 0 instead. */
static double occupy(const struct cluster *c, int src, int dst, double bytes, double *busy,
		     int clear)
{
	int ndev = cluster_ndevices(c);
	double t = clear ? 0 : cost_transfer_s(c, src, dst, bytes);

	if (cluster_link_class(c, src, dst) == LINK_INTER) {
		double *tx = &busy[ndev * ndev + 2 * cluster_node_of(c, src)];
		double *rx = &busy[ndev * ndev + 2 * cluster_node_of(c, dst) + 1];

		*tx = clear ? 0 : *tx + t;
		*rx = clear ? 0 : *rx + t;
		return fmax(*tx, *rx);
	}
	busy[src * ndev + dst] = clear ? 0 : busy[src * ndev + dst] + t;
	return busy[src * ndev + dst];
}

void cost_meeting(int64_t a, int64_t b, int dp, int64_t sz, int *first, int *last)
{
	*first = (int)(a * dp / sz);
	*last = (int)((b * dp + sz - 1) / sz);
	if (*last > dp)
		*last = dp;
}

/* Every overlap of what a producer shard owns and a consumer shard needs,
 * occupying its links (or clearing them); the busiest link's time. */
static double reshard_walk(const struct graph *g, const struct cluster *c, int p,
			   const int dp[NDIMS], int pb, int cons, int k, const int dc[NDIMS], int cb,
			   int64_t mb, double *busy, int clear)
{
	const struct shape *t = &g->ops[p].out;
	int nd[NDIMS], ci[NDIMS] = { 0 }, kc = 0;
	double worst = 0;

	for (int d = 0; d < NDIMS; d++)
		nd[d] = cost_need_varies(g, cons, k, d) ? dc[d] : 1;
	do {
		int first[NDIMS], last[NDIMS], pi[NDIMS], empty = 0;
		int64_t a[NDIMS], b[NDIMS];

		/* the consumer shard's need, and the producer shards that can
		 * meet it */
		for (int d = 0; d < NDIMS; d++) {
			int64_t sz = shape_extent(t, (enum dim_kind)d, mb);

			cost_need_span(g, cons, k, d, nd[d] > 1 ? ci[d] : 0, nd[d], mb, &a[d], &b[d]);
			cost_meeting(a[d], b[d], dp[d], sz, &first[d], &last[d]);
			pi[d] = first[d];
			empty |= first[d] >= last[d];
		}
		do {
			int64_t vol = BYTES_PER_ELEM;
			int kp = 0, src, dst;

			if (empty)
				break;
			for (int d = 0; d < NDIMS; d++) {
				int64_t sz = shape_extent(t, (enum dim_kind)d, mb);
				int64_t lo = pi[d] * sz / dp[d], hi = (pi[d] + 1) * sz / dp[d];

				lo = lo > a[d] ? lo : a[d];
				hi = hi < b[d] ? hi : b[d];
				vol *= hi > lo ? hi - lo : 0;
				kp = kp * dp[d] + pi[d];
			}
			src = pb + kp;
			dst = cb + kc;
			if (vol > 0 && src != dst)
				worst = fmax(worst, occupy(c, src, dst, (double)vol, busy, clear));
		} while (shard_coord_next(pi, first, last));
		kc++;
	} while (shard_coord_next(ci, NULL, dc));
	return worst;
}

/* The walk twice: the links' busy times, then those entries back to 0,
 * so that a call touches only the links it uses (busy[] has ndev^2
 * entries: 8 MB at 1,024 devices, which clearing whole cost more than the
 * pricing). */
double cost_reshard_s(const struct graph *g, const struct cluster *c, int p, const int dp[NDIMS],
		      int pb, int cons, int k, const int dc[NDIMS], int cb, int64_t mb,
		      double *busy)
{
	double worst = reshard_walk(g, c, p, dp, pb, cons, k, dc, cb, mb, busy, 0);

	reshard_walk(g, c, p, dp, pb, cons, k, dc, cb, mb, busy, 1);
	return g->ops[p].kind == OP_INPUT ? worst : 2 * worst;
}

/* --- collectives ----------------------------------------------------------- */

/* The bytes a member moves over a level of m members by algorithm a, per
 * byte it holds: the factor of level_s()'s formulas. */
static double level_share(enum grad_allreduce a, int m)
{
	return a == ALLREDUCE_CENTRAL ? m - 1.0 : (a == ALLREDUCE_PS ? 4.0 : 2.0) * (m - 1) / m;
}

double cost_level_bytes(enum grad_allreduce a, int m)
{
	return a == ALLREDUCE_CENTRAL ? m - 1.0 : level_share(a, m) * m;
}

/* One level of a gradient all-reduce by algorithm a: m members joined
 * by link l, each holding `bytes` (docs/simulator.md, "Gradient
 * synchronisation"):
 *   ring (and hierarchical): 2 (m - 1) / m x bytes / bw + 2 (m - 1) latencies,
 *   ps:      4 (m - 1) / m x bytes / bw + 2 (m - 1) latencies,
 *   central: (m - 1) x bytes / bw + (m - 1) latencies,
 * the latencies once for each of the msgs all-reduces fused by bytes. */
static double level_s(enum grad_allreduce a, const struct link *l, int m, double bytes, int msgs)
{
	double steps = a == ALLREDUCE_CENTRAL ? m - 1.0 : 2.0 * (m - 1);

	return level_share(a, m) * bytes / l->bw_bytes_per_s + steps * l->latency_s * msgs;
}

static void phases(const struct cluster *c, enum grad_allreduce a, int r, int nodes, int qmax,
		   double bytes, int msgs, struct sync_phases *ph)
{
	memset(ph, 0, sizeof *ph);
	if (nodes <= 1) {
		ph->shape = SHAPE_INTRA;
		ph->whole_s = level_s(a, &c->intra, qmax, bytes, msgs);
	} else if (a == ALLREDUCE_RING && qmax > 1) {
		struct link slow = {
			fmin(c->intra.bw_bytes_per_s, c->inter.bw_bytes_per_s),
			fmax(c->intra.latency_s, c->inter.latency_s),
		};

		ph->shape = SHAPE_FLAT;
		ph->whole_s = level_s(a, &slow, r, bytes, msgs);
	} else if (qmax == 1) {
		ph->shape = SHAPE_INTER;
		ph->whole_s = level_s(a, &c->inter, nodes, bytes, msgs);
	} else {
		ph->shape = SHAPE_HIER;
		ph->half_s = level_s(a, &c->intra, qmax, bytes, msgs) / 2;
		ph->inter_s = level_s(a, &c->inter, nodes, bytes, msgs);
	}
}

void cost_sync_phases(const struct cluster *c, int r, int nodes, int qmax, double bytes, int msgs,
		      struct sync_phases *ph)
{
	phases(c, c->allreduce, r, nodes, qmax, bytes, msgs, ph);
}

/* The phases' sum by algorithm a; 0 for r < 2. */
static double spread_by(const struct cluster *c, enum grad_allreduce a, int r, int nodes, int qmax,
			double bytes, int msgs)
{
	struct sync_phases ph;

	if (r < 2)
		return 0;
	phases(c, a, r, nodes, qmax, bytes, msgs, &ph);
	return ph.shape == SHAPE_HIER ? 2 * ph.half_s + ph.inter_s : ph.whole_s;
}

double cost_allreduce_spread_s(const struct cluster *c, int r, int nodes, int qmax, double bytes,
			       int msgs)
{
	return spread_by(c, c->allreduce, r, nodes, qmax, bytes, msgs);
}

void cost_spread(const struct cluster *c, const int *dev, int r, int64_t bytes, int *nodes,
		 int *qmax, int64_t *intra_bytes)
{
	int pn = c->per_node;

	*nodes = *qmax = 0;
	*intra_bytes = 0;
	for (int a = 0, e; a < r; a = e) {
		for (e = a + 1; e < r && dev[e] / pn == dev[a] / pn; e++)
			;
		(*nodes)++;
		*qmax = e - a > *qmax ? e - a : *qmax;
		*intra_bytes += (int64_t)(e - a - 1) * bytes;
	}
}

/* The all-reduce of `bytes` over the r sorted devices dev[] by algorithm a. */
static double allreduce_by(const struct cluster *c, enum grad_allreduce a, const int *dev, int r,
			   int64_t bytes)
{
	int nodes, qmax;
	int64_t intra_bytes;

	cost_spread(c, dev, r, bytes, &nodes, &qmax, &intra_bytes);
	return spread_by(c, a, r, nodes, qmax, (double)bytes, 1);
}

double cost_allreduce_s(const struct cluster *c, const int *dev, int r, int64_t bytes)
{
	return allreduce_by(c, ALLREDUCE_HIER, dev, r, bytes);
}

double cost_grad_sync_s(const struct cluster *c, const int *dev, int r, int64_t bytes)
{
	return allreduce_by(c, c->allreduce, dev, r, bytes);
}

/* --- memory and the optimizer ---------------------------------------------- */

static const char *const optimizer_names[NOPTIMIZERS] = {
	[OPTIMIZER_SGD] = "sgd",
	[OPTIMIZER_ADAM] = "adam",
};

static const int optimizer_copies[NOPTIMIZERS] = {
	[OPTIMIZER_SGD] = 1,
	[OPTIMIZER_ADAM] = 2,
};

const char *optimizer_name(enum optimizer o)
{
	return (unsigned)o < NOPTIMIZERS ? optimizer_names[o] : "?";
}

int optimizer_parse(const char *s, enum optimizer *out)
{
	for (int k = 0; k < NOPTIMIZERS; k++)
		if (strcmp(s, optimizer_names[k]) == 0) {
			*out = (enum optimizer)k;
			return 0;
		}
	return -1;
}

int optimizer_state_copies(enum optimizer o)
{
	return optimizer_copies[o];
}

int64_t cost_param_bytes(const struct op *op, int c_degree)
{
	int64_t bytes = op->params * BYTES_PER_ELEM;

	if (op->m.valid && op->m.param_bytes > 0)
		bytes = op->m.param_bytes;
	return (bytes + c_degree - 1) / c_degree;
}

int cost_state_factor(enum optimizer o)
{
	return 2 + optimizer_copies[o];
}

double cost_update_s(const struct device_spec *dev, double param_bytes, enum optimizer o)
{
	return param_bytes * (3 + 2 * optimizer_copies[o]) / dev->mem_bw_bytes_per_s;
}
