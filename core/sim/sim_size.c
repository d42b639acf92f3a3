/*
 * The size of a plan's simulation before it is laid out (sim_size.h).
 * The simulator makes a source of every pair of a producer shard and a
 * consumer shard whose regions meet, and a transfer with its tasks of
 * every such pair on two devices (sim_transfers.c), so its memory and
 * time grow with the pairs.  Those are few where neighbouring operators
 * split alike, but where a consumer needs whole a dim its producer
 * splits, or splits along a dim its producer does not, every shard of one
 * meets every shard of the other: two model-parallel layers in a row
 * over 1,024 devices make a million pairs of one edge, as owt's
 * fully-connected layers do.  sim_run() refuses a plan whose pairs would
 * take more than SIM_MAX_BYTES, saying so, rather than run out of memory;
 * a search keeps to plans well within it (planners/mcmc.c).
 *
 * The count follows connect() of sim_transfers.c: per dim, the consumer
 * indices along it (one where its need does not vary with the index)
 * meet the producer shards cost_meeting() gives, and the pairs of an edge
 * are the product over the dims, times the consumer shards along the
 * dims where the need is whole, times the pairs of round-robin replicas
 * that meet in some micro-batch (the least common multiple of their
 * counts).  A pair whose regions only touch counts too, so the count is
 * a bound of what the layout makes (where the splits divide the dims, as
 * owt's of the GPT models, the same number).
 */
#include "sim/sim_size.h"

#include "cost/cost.h"
#include "util/err.h"
#include "util/intmath.h"

/* The stage index of op i and its micro-batches and replicas. */
static void op_stage(const struct plan *pl, int i, int *m, int *r)
{
	int s = plan_stage_index(pl, pl->ops[i].stage);

	*m = s >= 0 ? plan_stage_microbatches(pl, s) : pl->microbatches;
	*r = s >= 0 ? plan_stage_replicas(pl, s) : 1;
}

int64_t sim_edge_pairs(const struct graph *g, const struct plan *pl, int c, int k)
{
	int p = g->ops[c].in[k], mp, mc, rp, rc;
	const struct shape *t = &g->ops[p].out;
	const int *dc = pl->ops[c].degree, *dp = pl->ops[p].degree;
	int64_t n = 1, mb;

	op_stage(pl, p, &mp, &rp);
	op_stage(pl, c, &mc, &rc);
	/* a micro-batch of the finer of the two, as connect() */
	mb = g->batch / (mp > mc ? mp : mc > 0 ? mc : 1);
	if (mb < 1)
		mb = 1;
	for (int d = 0; d < NDIMS && n > 0; d++) {
		int vary = cost_need_varies(g, c, k, d), nd = vary ? dc[d] : 1;
		int64_t sz = shape_extent(t, (enum dim_kind)d, mb), meet = 0;

		for (int i = 0; i < nd; i++) {
			int64_t a, b;
			int first, last;

			cost_need_span(g, c, k, d, i, nd, mb, &a, &b);
			cost_meeting(a, b, dp[d], sz, &first, &last);
			meet += last > first ? last - first : 0;
		}
		n *= vary ? meet : dc[d] * meet;
	}
	return n * lcm64(rp, rc);
}

int64_t sim_pairs_bytes(const struct plan *pl, int64_t pairs)
{
	int m = pl->microbatches;

	for (int s = 0; s < pl->nstages; s++)
		if (plan_stage_microbatches(pl, s) > m)
			m = plan_stage_microbatches(pl, s);
	return pairs * (SIM_PAIR_BYTES + SIM_PAIR_MB_BYTES * (int64_t)m);
}

int sim_size_check(const struct graph *g, const struct plan *pl)
{
	int64_t pairs = 0, most = -1, bytes, rmax = 1;
	int mc = 0, mk = 0;

	/* first a bound of the count that costs no span: every shard of
	 * every replica of a producer meeting every one of its consumer's */
	for (int s = 0; s < pl->nstages; s++)
		if (plan_stage_replicas(pl, s) > rmax)
			rmax = plan_stage_replicas(pl, s);
	for (int c = 0; c < g->nops; c++)
		for (int k = 0; k < g->ops[c].nin; k++)
			pairs += (int64_t)pl->ops[g->ops[c].in[k]].ndev * pl->ops[c].ndev * rmax * rmax;
	if (sim_pairs_bytes(pl, pairs) <= SIM_MAX_BYTES)
		return AP_OK;
	pairs = 0;
	for (int c = 0; c < g->nops; c++)
		for (int k = 0; k < g->ops[c].nin; k++) {
			int64_t n = sim_edge_pairs(g, pl, c, k);

			pairs += n;
			if (n > most) {
				most = n;
				mc = c;
				mk = k;
			}
		}
	bytes = sim_pairs_bytes(pl, pairs);
	if (bytes <= SIM_MAX_BYTES)
		return AP_OK;
	return ap_err(AP_EINPUT, "plan", 0,
		      "too large to simulate: its shards exchange data in %lld pairs, which "
		      "would take about %.1f GiB of the simulator's memory (at most %.1f GiB); "
		      "the most, %lld, between the %d shards of '%s' and the %d of its input '%s'",
		      (long long)pairs, bytes / 1073741824.0, SIM_MAX_BYTES / 1073741824.0,
		      (long long)most, pl->ops[mc].ndev, g->ops[mc].name,
		      pl->ops[g->ops[mc].in[mk]].ndev, g->ops[g->ops[mc].in[mk]].name);
}
