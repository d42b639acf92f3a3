/*
 * The cost model of the pipedream planner (pipedream.c, whose top comment
 * gives the levels and the dynamic program over them): the units the DP
 * cuts, with their times and bytes, and the time of a range as a stage of
 * r replicas, under each `cost` option, with the memory constraint.
 *
 * Units.  The DP cuts a linear order of the graph: its topological order
 * with every source (an input) moved to just before its first consumer,
 * so any cut is a valid chain of stages.  An input is never cut from that
 * consumer (the reference optimizer drops inputs, so they always sit in
 * the stage of their consumer).  A cut of a branchy graph sends every
 * tensor that crosses it; PipeDream plans over the antichain states of
 * the DAG for that, and collapses the branches of Inception and NASNet
 * first.  We do the same in one rule: while there are more than
 * `max-units` units, the cut with the most tensors crossing is dropped
 * (merging the units on its sides), and among equally wide cuts the one
 * between the two units with the least compute; chains keep every cut up
 * to the limit, ResNets keep their block boundaries longest, and the
 * search time stays bounded.  Tied weights: an operator that ties its
 * weight to another's (`tie=`, models/FORMAT.md) must run on its
 * partner's devices (plan_validate()), so no cut falls between the two:
 * the positions from the first of a tie group to its last are one unit
 * (GPT-2's token embedding and output layer make its whole body one unit,
 * so its plans are data parallelism, with at most the loss after it as a
 * stage of its own).  Per unit: forward plus backward time of one
 * minibatch (cost_op(), the simulator's lookup, with its rule that an
 * input has no backward; imported operators keep their measured times),
 * parameter bytes (cost_param_bytes(), the rule plan validation
 * uses), activation bytes, and the bytes crossing the cut before it.  The
 * minibatch is the reference's unit, the batch holds `units` of them, and
 * pipedream.c chooses it (its top comment: a pipeline under 1F1B runs
 * them as its micro-batches).
 *
 * Cost terms, `cost=placed` (the default): the reference optimizer's
 * (below), each sync term priced as the all-reduces the stage's replicas
 * run where the plan places them, one per operator with weights
 * (cost_allreduce_spread_s(), by default a ring inside a node, hierarchical across
 * nodes), added to the compute as the reference adds it (a replica waits
 * for its round's all-reduce; the simulator counts it on the replicas'
 * devices), and so is the optimizer's step over the stage's weights,
 * which the reference leaves out (placed_update()).  The reference's
 * 4 (r - 1) W / (r B) is twice a ring's bytes and its node level syncs
 * the whole range across nodes once a round of r x d minibatches, where
 * the flattened plan's device-level stages each all-reduce across the
 * nodes once a round of their own replicas; so at the node level a range
 * on r nodes is priced as the device-level stages its node solution
 * flattens into, (C_i + all-reduce_i) / (r r0_i) and their transfers
 * (placed_time()), or as one stage on every device of the r nodes when
 * that is faster (the node solution is the best for one node, and over
 * several nodes one stage may beat it; not under `straight`).  Two terms
 * refine the reference's where the plan runs otherwise than it assumes:
 *  - the whole model on every device is emitted as one stage, data
 *    parallelism, which PipeDream runs flushed: each device computes its
 *    shards of the micro-batches as the plan cuts them (pd_dp_costs():
 *    split along n, or whole ones taken by round-robin replicas, at the
 *    simulator's cost of a shard), and its all-reduces, one per operator
 *    in backward order on shared links, overlap the rest of the last
 *    micro-batch's backward (pd_flushed_dp(); the paper's recurrence
 *    takes the max of compute and sync for the same overlap);
 *  - across nodes a tensor goes from the stage that makes it to each
 *    device-level stage that consumes it, past the nodes between (GNMT's
 *    encoder output feeds every decoder layer's attention), and a NIC
 *    sends and receives at once: each node-level stage's NICs carry what
 *    it receives, counted once per consuming device-level stage, and
 *    what it sends, both ways, over its replicas (pd_node_inputs(),
 *    pd_nic_loads()), where the reference charges 2 max(a_in, a_out) / B
 *    per stage, and beside them the rings across nodes of the stage's
 *    own all-reduces (nic_ring()).  What a stage sends is known once the
 *    stages after it are: the prefix DP keeps the NIC time of every stage
 *    of a cell's solution and adds to it as it appends a stage, so a
 *    cell's best solution is chosen on the NIC time of its own stages
 *    (the later stages' share of its NICs can make another solution of
 *    the prefix the better one; the DP does not revisit it).
 * With these the estimate is the simulator's prediction of the emitted
 * plan within 2% on PipeDream's profiles, on one node and across nodes,
 * at the model's own batch and at it on every device
 * (tests/test_pipedream_planner.c, tests/test_estimates.c), but for
 * PipeDream-Flush (pipedream.c).
 *
 * `cost=code`: the terms of the published reference optimizer verbatim,
 * as documented with the imported profiles:
 *   one stage of r replicas:   (C + 4 (r - 1) W / (r B) / d) / r,
 *   the last stage of a split: max((C + 4 (r - 1) W / (r B)) / r,
 *                                  2 a_in / (B r x), 2 a_out / (B r x)),
 * with C the range's time, W its parameter bytes, B the level's bandwidth,
 * d the devices of one component (the reference divides the first sync
 * term by them, not the second), a_in and a_out the bytes crossing the
 * stage's first and last cut and x the `compression` ratio: the
 * reference charges activations only when given a ratio (its published
 * runs give 1.0, our default); `compression=0` leaves them out.
 * `cost=paper`: the paper's recurrence, T = max(C, 2 (r - 1) W / B) / r
 * for a stage and max(A(first part), 2 a_c / B, T(last stage)) for a cut.
 *
 * Memory (`memory=on`, the default): the reference's stash term, the
 * range's activations plus parameters times ceil((M - j) / r) (M the
 * level's components, j those of the subproblem), plus at level 0 the
 * weights, gradients and momentum a device keeps (3 W, which plan
 * validation demands and the reference leaves out), must fit a device.
 * The emitted plan is then simulated, and if its peak memory does not
 * fit, the next micro-batch counts are tried (smaller micro-batches hold
 * less; choose_microbatches() in pipedream.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "algo/ties.h"
#include "pipedream_impl.h"
#include "sim/sim.h"
#include "plan/plan_check.h"
#include "cost/cost.h"

/* --- units ---------------------------------------------------------------- */

/* The unit order: graph order, each source delayed to just before its
 * first consumer (sources without consumers stay where they are). */
static void unit_order(struct pd *pd, const int *cofs, char *placed)
{
	const struct graph *g = pd->input->g;
	int k = 0;

	for (int i = 0; i < g->nops; i++) {
		const struct op *op = &g->ops[i];

		if (op->nin == 0 && cofs[i + 1] > cofs[i])
			continue;
		for (int e = 0; e < op->nin; e++) {
			int u = op->in[e];

			if (g->ops[u].nin == 0 && !placed[u]) {
				placed[u] = 1;
				pd->order[k++] = u;
			}
		}
		placed[i] = 1;
		pd->order[k++] = i;
	}
}

/* Merges adjacent units until at most max_units remain: the cut with
 * the most tensors crossing goes first, and among equally wide cuts the
 * one between the two units with the least compute.  cut[] lists the
 * n + 1 unit boundaries in positions, w[] the width of each cut (w[0]
 * unused) and t[] the units' times. */
static int merge_units(int n, int max_units, int *cut, int *w, double *t)
{
	while (n > max_units) {
		int best = 0;

		for (int u = 1; u + 1 < n; u++)
			if (w[u + 1] > w[best + 1] ||
			    (w[u + 1] == w[best + 1] && t[u] + t[u + 1] < t[best] + t[best + 1]))
				best = u;
		t[best] += t[best + 1];
		memmove(&t[best + 1], &t[best + 2], (size_t)(n - best - 2) * sizeof *t);
		memmove(&cut[best + 1], &cut[best + 2], (size_t)(n - best - 1) * sizeof *cut);
		memmove(&w[best + 1], &w[best + 2], (size_t)(n - best - 1) * sizeof *w);
		n--;
	}
	return n;
}

/* Per operator in unit order: time, parameter and activation bytes, of
 * one minibatch (the simulator's lookup, with its rule that an input has
 * no backward). */
static int op_numbers(struct pd *pd, double *t, double *w, double *act)
{
	const struct graph *g = pd->input->g;
	const int one[NDIMS] = { 1, 1, 1, 1, 1 };

	for (int k = 0; k < pd->nops; k++) {
		const struct op *op = &g->ops[pd->order[k]];
		struct op_cost oc;
		int rc = cost_op(pd->input->p, g, pd->order[k], one, pd->units, &oc);

		if (rc)
			return rc;
		t[k] = 1e-6 * (oc.fwd_us + oc.bwd_us);
		w[k] = (double)cost_param_bytes(op, 1);
		pd->ow[k] = w[k];
		act[k] = (double)op->out_bytes / pd->units;
	}
	return AP_OK;
}

int pd_build_units(struct pd *pd)
{
	const struct graph *g = pd->input->g;
	int N = pd->nops, *cofs = NULL, *cons = NULL, *pos, *cut, *width, *cw;
	double *t, *w, *act, *xb, *ut;
	char *placed, *keep;
	int rc = graph_consumers(g, &cofs, &cons);

	if (rc)
		return rc;
	pos = calloc((size_t)N + 2, sizeof *pos);
	cut = calloc((size_t)N + 2, sizeof *cut);
	width = calloc((size_t)N + 2, sizeof *width);
	cw = calloc((size_t)N + 2, sizeof *cw);
	placed = calloc((size_t)N + 1, 1);
	keep = malloc((size_t)N + 1);
	t = calloc((size_t)N + 1, sizeof *t);
	w = calloc((size_t)N + 1, sizeof *w);
	act = calloc((size_t)N + 1, sizeof *act);
	xb = calloc((size_t)N + 2, sizeof *xb);
	ut = calloc((size_t)N + 1, sizeof *ut);
	if (!pos || !cut || !width || !cw || !placed || !keep || !t || !w || !act || !xb ||
	    !ut) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	unit_order(pd, cofs, placed);
	memset(keep, 1, (size_t)N + 1);
	if (ties_any(g) && (rc = ties_cuts(g, pd->order, keep)))
		goto out;
	for (int k = 0; k < N; k++)
		pos[pd->order[k]] = k;
	/* Tensors crossing the cut before position s: op u at position p
	 * whose last consumer is at q crosses the cuts p + 1 .. q. */
	for (int u = 0; u < N; u++) {
		int q = -1;

		for (int e = cofs[u]; e < cofs[u + 1]; e++)
			q = pos[cons[e]] > q ? pos[cons[e]] : q;
		if (q > pos[u]) {
			width[pos[u] + 1]++;
			width[q + 1]--;
			xb[pos[u] + 1] += (double)g->ops[u].out_bytes / pd->units;
			xb[q + 1] -= (double)g->ops[u].out_bytes / pd->units;
		}
	}
	for (int s = 1; s <= N; s++) {
		width[s] += width[s - 1];
		xb[s] += xb[s - 1];
	}
	rc = op_numbers(pd, t, w, act);
	if (rc)
		goto out;
	/* One unit per operator, except that an input stays with the
	 * operator after it, its first consumer: as in the reference, which
	 * drops the inputs, they are never a stage of their own; nor is a
	 * cut made between tied operators (the top comment).  Then the
	 * branches are collapsed. */
	pd->n = 0;
	for (int k = 0; k < N; k++) {
		int cuts = k == 0 || g->ops[pd->order[k - 1]].nin > 0 ||
			   cofs[pd->order[k - 1] + 1] == cofs[pd->order[k - 1]];

		pd->tied |= cuts && !keep[k];
		if (cuts && keep[k]) {
			cut[pd->n] = k;
			cw[pd->n] = width[k];
			ut[pd->n++] = 0;
		}
		ut[pd->n - 1] += t[k];
	}
	cut[pd->n] = N;
	pd->n = merge_units(pd->n, pd->max_units, cut, cw, ut);
	pd->first = malloc(((size_t)pd->n + 1) * sizeof *pd->first);
	pd->ct = calloc((size_t)pd->n + 1, sizeof *pd->ct);
	pd->cw = calloc((size_t)pd->n + 1, sizeof *pd->cw);
	pd->ca = calloc((size_t)pd->n + 1, sizeof *pd->ca);
	pd->cross = calloc((size_t)pd->n + 1, sizeof *pd->cross);
	pd->cn = calloc((size_t)pd->n + 1, sizeof *pd->cn);
	if (!pd->first || !pd->ct || !pd->cw || !pd->ca || !pd->cross || !pd->cn) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	memcpy(pd->first, cut, ((size_t)pd->n + 1) * sizeof *cut);
	for (int u = 0; u < pd->n; u++) {
		pd->ct[u + 1] = pd->ct[u];
		pd->cw[u + 1] = pd->cw[u];
		pd->ca[u + 1] = pd->ca[u];
		pd->cn[u + 1] = pd->cn[u];
		for (int k = cut[u]; k < cut[u + 1]; k++) {
			pd->ct[u + 1] += t[k];
			pd->cw[u + 1] += w[k];
			pd->ca[u + 1] += act[k];
			pd->cn[u + 1] += w[k] > 0;
		}
		pd->cross[u] = u ? xb[cut[u]] : 0;
	}
out:
	free(cofs);
	free(cons);
	free(pos);
	free(cut);
	free(width);
	free(cw);
	free(placed);
	free(keep);
	free(t);
	free(w);
	free(act);
	free(xb);
	free(ut);
	return rc;
}

/* --- the cost terms ------------------------------------------------------ */

/* The bytes node-level stage [c, b) (variant v, struct pd) receives of the
 * tensors made before unit x <= c: all of them (w = 0), or those whose
 * gradients it sends back (w = 1). */
static double qin(const struct pd *pd, int v, int w, int c, int b, int x)
{
	return pd->qin[2 * w + v][pd->qofs[(size_t)c * ((size_t)pd->n + 1) + (size_t)b] + (size_t)x];
}

/* cost=placed across nodes: the NIC time of the stages of [0, c) on j
 * nodes (the cell's, stored) once [c, b) on r nodes (variant vs), whose
 * own all-reduces keep its NICs busy ar seconds, follows them: each
 * sends it what it receives of theirs and takes back their gradients,
 * and [c, b) receives those and sends the gradients; into the store of
 * cell (jo, b) unless jo is 0.  Returns the busiest NIC's time, sending
 * or receiving, per minibatch.  A stage's NICs carry what it receives and
 * what it sends, as the simulator sends it: to the very stage that
 * consumes it, past the nodes between, a gradient back for every tensor
 * but an input; and the inter-node rings of its all-reduces both ways
 * (placed_time()). */
double pd_nic_loads(struct pd *pd, int j, int c, int b, int r, int vs, double ar, int jo)
{
	const struct pd_level *L = &pd->lv[1];
	size_t n1 = (size_t)pd->n + 1, h = (size_t)j * n1 + (size_t)c, o = (size_t)jo * n1 + (size_t)b;
	int k = pd->nic_k[h], M = L->m;
	double s = 1 / (L->bw * pd->ratio);
	double in = qin(pd, vs, 0, c, b, c) / r * s + ar, out = qin(pd, vs, 1, c, b, c) / r * s + ar;
	double most = fmax(in, out);

	for (int i = 0; i < k; i++) {
		int c0 = pd->nic_a[h * M + i], c1 = i + 1 < k ? pd->nic_a[h * M + i + 1] : c;
		double ri = pd->nic_r[h * M + i];
		double tx = pd->nic_ld[1][h * M + i] +
			    (qin(pd, vs, 0, c, b, c1) - qin(pd, vs, 0, c, b, c0)) / ri * s;
		double rx = pd->nic_ld[0][h * M + i] +
			    (qin(pd, vs, 1, c, b, c1) - qin(pd, vs, 1, c, b, c0)) / ri * s;

		most = fmax(most, fmax(tx, rx));
		if (jo) {
			pd->nic_a[o * M + i] = c0;
			pd->nic_r[o * M + i] = pd->nic_r[h * M + i];
			pd->nic_ld[0][o * M + i] = rx;
			pd->nic_ld[1][o * M + i] = tx;
		}
	}
	if (jo) {
		pd->nic_k[o] = k + 1;
		pd->nic_a[o * M + k] = c;
		pd->nic_r[o * M + k] = r;
		pd->nic_ld[0][o * M + k] = in;
		pd->nic_ld[1][o * M + k] = out;
	}
	return most;
}

/* The store of node-level cell (j, 0, b) as one stage of r nodes whose
 * all-reduces keep its NICs busy ar seconds, or as cell (f, 0, b)'s. */
void pd_nic_one(struct pd *pd, int j, int b, int r, int f, double ar)
{
	size_t n1 = (size_t)pd->n + 1, o = (size_t)j * n1 + (size_t)b, from = (size_t)f * n1 + (size_t)b;
	int M = pd->lv[1].m;

	if (f) {
		pd->nic_k[o] = pd->nic_k[from];
		memcpy(&pd->nic_a[o * M], &pd->nic_a[from * M], (size_t)M * sizeof *pd->nic_a);
		memcpy(&pd->nic_r[o * M], &pd->nic_r[from * M], (size_t)M * sizeof *pd->nic_r);
		for (int d = 0; d < 2; d++)
			memcpy(&pd->nic_ld[d][o * M], &pd->nic_ld[d][from * M],
			       (size_t)M * sizeof *pd->nic_ld[d]);
		return;
	}
	pd->nic_k[o] = 1;
	pd->nic_a[o * M] = 0;
	pd->nic_r[o * M] = r;
	pd->nic_ld[0][o * M] = pd->nic_ld[1][o * M] = ar;
}

/* Fills qin for every node-level stage [c, b), once the node level's
 * solutions of every range are known.  The simulator sends a tensor once
 * to every device-level stage that consumes it (round-robin replicas
 * take each micro-batch on one of them), so a tensor that two stages of
 * a node consume crosses its NIC twice; a flat stage takes it once.  Each
 * crossing moves what its consumers there need of it (cost_need_bytes(),
 * the simulator's rule: a concat needs only what it keeps), the most any
 * of them needs, and pays the link's latency (cost_link_s()), counted as
 * the bytes the NIC would move meanwhile.  An input has no gradient to
 * send back (the simulator's rule, cost_op()'s). */
int pd_node_inputs(struct pd *pd)
{
	const struct graph *g = pd->input->g;
	const struct pd_level *L0 = &pd->lv[0];
	const struct link *nic = &pd->input->c->inter;
	double lat = nic->latency_s * nic->bw_bytes_per_s * pd->ratio;
	size_t n1 = (size_t)pd->n + 1, total = 0, ncell = ((size_t)pd->lv[1].m + 1) * n1;
	int *pos = malloc((size_t)pd->nops * sizeof *pos);
	int *unit = malloc((size_t)pd->nops * sizeof *unit);
	int *sid = malloc(n1 * sizeof *sid), *stamp = calloc((size_t)pd->nops, sizeof *stamp);
	double *bucket = malloc(2 * n1 * sizeof *bucket), *got = malloc((size_t)pd->nops * sizeof *got);
	int *eofs = malloc(((size_t)pd->nops + 1) * sizeof *eofs), rc = AP_OK, mark = 0, none = 0;
	int64_t *need = NULL, mb = g->batch / pd->units;
	const int one[NDIMS] = { 1, 1, 1, 1, 1 };

	pd->qofs = malloc(n1 * n1 * sizeof *pd->qofs);
	for (int c = 0; c < pd->n && pd->qofs; c++)
		for (int b = c + 1; b <= pd->n; b++) {
			pd->qofs[(size_t)c * n1 + (size_t)b] = total;
			total += (size_t)c + 1;
		}
	for (int q = 0; q < 4; q++) {
		pd->qin[q] = malloc((total ? total : 1) * sizeof **pd->qin);
		none |= !pd->qin[q];
	}
	pd->nic_k = calloc(ncell, sizeof *pd->nic_k);
	pd->nic_a = malloc(ncell * (size_t)pd->lv[1].m * sizeof *pd->nic_a);
	pd->nic_r = malloc(ncell * (size_t)pd->lv[1].m * sizeof *pd->nic_r);
	for (int d = 0; d < 2; d++) {
		pd->nic_ld[d] = malloc(ncell * (size_t)pd->lv[1].m * sizeof *pd->nic_ld[d]);
		none |= !pd->nic_ld[d];
	}
	if (eofs) {
		eofs[0] = 0;
		for (int i = 0; i < pd->nops; i++)
			eofs[i + 1] = eofs[i] + g->ops[i].nin;
		need = malloc(((size_t)eofs[pd->nops] + 1) * sizeof *need);
	}
	if (none || !pos || !unit || !sid || !stamp || !bucket || !got || !need || !pd->qofs ||
	    !pd->nic_k || !pd->nic_a || !pd->nic_r) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	for (int i = 0; i < pd->nops; i++)
		for (int e = 0; e < g->ops[i].nin; e++)
			need[eofs[i] + e] = cost_need_bytes(g, i, e, one, mb);
	for (int u = 0; u < pd->n; u++)
		for (int k = pd->first[u]; k < pd->first[u + 1]; k++) {
			pos[pd->order[k]] = k;
			unit[k] = u;
		}
	for (int c = 0; c < pd->n; c++)
		for (int b = c + 1; b <= pd->n; b++)
			for (int v = 0; v < 2; v++) {
				size_t cell = at(pd, L0->m, c, b), ofs = pd->qofs[(size_t)c * n1 + (size_t)b];

				/* the device-level stage of every unit: one (flat, or
				 * no solution), else the node level's, walked back */
				for (int u = c; u < b; u++)
					sid[u] = 0;
				for (int k = 1; !v && isfinite(L0->t[cell]) && L0->split[cell] >= 0;
				     k++) {
					for (int u = L0->split[cell]; u < (int)(cell % n1); u++)
						sid[u] = k;
					cell = at(pd, L0->sub[cell], c, L0->split[cell]);
				}
				for (int x = 0; x <= 2 * c + 1; x++)
					bucket[x] = 0;
				for (int k = pd->first[c]; k < pd->first[b]; k++) {
					const struct op *op = &g->ops[pd->order[k]];

					if (k == pd->first[c] || sid[unit[k]] != sid[unit[k - 1]])
						mark++;
					for (int e = 0; e < op->nin; e++) {
						int u = op->in[e], x = 2 * unit[pos[u]];
						double add = (double)need[eofs[pd->order[k]] + e];

						if (pos[u] >= pd->first[c])
							continue;
						if (stamp[u] != mark) {
							stamp[u] = mark;
							got[u] = 0;
							add += lat;
						} else {
							add = fmax(0, add - got[u]);
						}
						got[u] += add;
						bucket[x] += add;
						if (g->ops[u].kind != OP_INPUT)
							bucket[x + 1] += add;
					}
				}
				for (int w = 0; w < 2; w++) {
					double *q = pd->qin[2 * w + v] + ofs;

					q[0] = 0;
					for (int x = 1; x <= c; x++)
						q[x] = q[x - 1] + bucket[2 * (x - 1) + w];
				}
			}
out:
	free(pos);
	free(unit);
	free(sid);
	free(stamp);
	free(bucket);
	free(got);
	free(eofs);
	free(need);
	return rc;
}

/* Time of [a, b) on one component of level l - 1 (level 0: its compute). */
static double lower_time(const struct pd *pd, int l, int a, int b)
{
	if (l == 0)
		return pd->ct[b] - pd->ct[a];
	return pd->lv[l - 1].t[at(pd, pd->lv[l - 1].m, a, b)];
}

/* Whether [a, b) may run as a stage at level l: its lower solution
 * exists.  Replicas take whole micro-batches in turn, so any count of
 * them is admissible (PipeDream's optimizer picks 3 and 15). */
int pd_admissible(const struct pd *pd, int l, int a, int b)
{
	return isfinite(lower_time(pd, l, a, b));
}

/* Whether [a, b) with k stashed copies fits a device (see the top). */
int pd_fits(const struct pd *pd, int l, int a, int b, int k)
{
	double w = pd->cw[b] - pd->cw[a], need = k * (pd->ca[b] - pd->ca[a] + w);

	if (pd->predict)
		need = k * (pd->ca[b] - pd->ca[a]) + w;

	if (l == 0)
		need += cost_state_factor(OPTIMIZER_SGD) * w;
	return !pd->memory || need <= pd->mem;
}

/* The share of one synchronisation a replica's minibatch carries, times
 * r: every round of r minibatches under PipeDream's 1F1B (1), once a
 * step of `units` minibatches under PipeDream-Flush (r / units). */
static double sync_share(const struct pd *pd, int r)
{
	return pd->flush ? (double)r / pd->units : 1.0;
}

/* cost=placed: the all-reduces of w bytes over a device-level stage's
 * replicas as they are placed, r0 devices on each of r nodes (r = 1: in
 * one node; a cluster of one level: r0 components of it), priced as the
 * simulator runs them (cost_allreduce_spread_s(): the cluster's algorithm,
 * by default a ring in a node, hierarchical across nodes), one for each of the msgs operators with
 * weights, each paying its latencies. */
static double placed_allreduce(const struct pd *pd, int r, int r0, double w, int msgs)
{
	int per = pd->input->c->per_node, k = 0, nodes, qmax;
	int64_t intra;

	for (int n = 0; n < r; n++)
		for (int t = 0; t < r0; t++)
			pd->devs[k++] = pd->nlv > 1 ? n * per + t : t * (r > 1 ? per : 1) + n;
	if (k < 2)
		return 0;
	cost_spread(pd->input->c, pd->devs, k, (int64_t)w, &nodes, &qmax, &intra);
	return cost_allreduce_spread_s(pd->input->c, k, nodes, qmax, w, msgs);
}

/* cost=placed: the optimizer step over w bytes of weights on each of a
 * stage's r replicas (cost_update_s(), with SGD's momentum as the memory
 * term has it), a share of it per minibatch as sync_share() gives the
 * all-reduce's: the simulator steps a stage of replicas once a round and
 * one of a single device once an iteration (`units` minibatches) under
 * 1F1B, every device once a step under PipeDream-Flush. */
static double placed_update(const struct pd *pd, int r, double w)
{
	double share = pd->flush || r == 1 ? (double)r / pd->units : 1.0;

	return share * cost_update_s(&pd->input->p->dev, w, OPTIMIZER_SGD);
}

/* Data parallelism on every device as the plan of one stage runs it,
 * the batch cut into `shards` pieces (micro-batches, each split along n
 * over the devices, or taken whole by round-robin replicas: dp_shape() in
 * pipedream.c) of which the busiest device computes k: each operator's
 * time on one shard (cost_op(), the simulator's lookup). */
int pd_dp_costs(struct pd *pd, int shards, int k)
{
	const int one[NDIMS] = { 1, 1, 1, 1, 1 };

	for (int i = 0; i < pd->nops; i++) {
		struct op_cost oc;
		int rc = cost_op(pd->input->p, pd->input->g, pd->order[i], one, shards, &oc);

		if (rc)
			return rc;
		pd->dpt[i] = 1e-6 * (oc.fwd_us + oc.bwd_us);
		pd->dpb[i] = 1e-6 * oc.bwd_us;
	}
	pd->dp_k = k;
	return AP_OK;
}

/* cost=placed: data parallelism as PipeDream runs it, one stage on every
 * device, flushed (the plan of one stage), as pd_dp_costs() cuts it: the
 * busiest device computes its k shards, each operator's all-reduce starts
 * when the backward of the last of them has passed it and the previous
 * operator's all-reduce has ended (they share the links), so the
 * all-reduces overlap the rest of that backward, and the step ends with
 * the later of the compute and the last all-reduce, then the optimizer's.
 * Per minibatch. */
double pd_flushed_dp(const struct pd *pd)
{
	int nodes = pd->nlv > 1 ? pd->lv[1].m : 1;
	double t = 0, bwd = 0, net = 0, upd, all = 0;

	/* sync=after: every all-reduce waits for the whole backward */
	for (int i = 0; i < pd->nops && pd->input->c->sync == SYNC_AFTER; i++)
		all += pd->dpb[i];
	for (int i = pd->nops - 1; i >= 0; i--) {
		t += pd->dpt[i] * pd->dp_k;
		bwd += pd->dpb[i];
		if (pd->ow[i] > 0)
			net = fmax(net, fmax(bwd, all)) +
			      placed_allreduce(pd, nodes, pd->lv[0].m, pd->ow[i], 1);
	}
	upd = cost_update_s(&pd->input->p->dev, pd->cw[pd->n] - pd->cw[0], OPTIMIZER_SGD);
	return (t + fmax(0, net - bwd) + upd) / pd->units;
}

/* Whether [a, b) on r components of level l is the whole model on every
 * device, which is emitted as one stage (pd_flushed_dp()). */
int pd_whole(const struct pd *pd, int l, int a, int b, int r)
{
	return pd->placed && l == pd->nlv - 1 && a == 0 && b == pd->n && r == pd->lv[l].m;
}

/* cost=placed at the node level: the rings across r nodes of the msgs
 * all-reduces of w bytes over rr replicas on them, which keep each of
 * their NICs busy (cost_allreduce_spread_s()'s inter-node term), per
 * minibatch: once a round of the replicas (sync_share()). */
static double nic_ring(const struct pd *pd, int r, int rr, double w, int msgs)
{
	/* one member a node: the inter-node phase alone */
	return sync_share(pd, rr) * cost_allreduce_spread_s(pd->input->c, r, r, 1, w, msgs) / rr;
}

/* cost=placed at the node level: [a, b) on r nodes, each running the
 * node level's solution of it, which flattens into device-level stages
 * of r x r0 replicas each: every such stage's (C + its all-reduce) / (r
 * r0) and its transfers as at the node level, over r copies; the last
 * stage of a split also its transfers across nodes.  The node level's
 * best solution is for one node; over r of them its stages' all-reduces
 * cross the nodes, so one stage replicated on every device of the r
 * nodes is priced too, and *flat says whether it is the faster (ties
 * go to it: fewer stages).  *nic is the time per minibatch that the
 * all-reduces of the variant chosen keep each of its NICs busy, beside
 * the transfers (pd_nic_loads()). */
static double placed_time(const struct pd *pd, int a, int b, int r, int last, int *flat,
			  double *nic)
{
	const struct pd_level *L0 = &pd->lv[0], *L1 = &pd->lv[1];
	size_t cell = at(pd, L0->m, a, b), n1 = (size_t)pd->n + 1;
	double t = 0, w = pd->cw[b] - pd->cw[a], one, nic_t = 0, nic_one;
	int rr = r * L0->m;

	one = pd_whole(pd, 1, a, b, r)
		? pd_flushed_dp(pd)
		: (pd->ct[b] - pd->ct[a] +
		   sync_share(pd, rr) * placed_allreduce(pd, r, L0->m, w, pd->cn[b] - pd->cn[a]) +
		   placed_update(pd, rr, w)) / rr;
	nic_one = nic_ring(pd, r, rr, w, pd->cn[b] - pd->cn[a]);
	if (!isfinite(L0->t[cell]))
		t = INFINITY;
	while (isfinite(t)) {
		int sa = L0->split[cell] < 0 ? a : L0->split[cell], sb = (int)(cell % n1);
		int r0 = L0->rep[cell];
		double ws = pd->cw[sb] - pd->cw[sa];
		double x = (pd->ct[sb] - pd->ct[sa] +
			    sync_share(pd, r * r0) * placed_allreduce(pd, r, r0, ws, pd->cn[sb] - pd->cn[sa]) +
			    placed_update(pd, r * r0, ws)) / (r * r0);

		if (L0->split[cell] >= 0 && pd->ratio > 0)
			x = fmax(x, 2.0 * fmax(pd->cross[sa], pd->cross[sb]) /
					    (L0->bw * r * r0 * pd->ratio));
		t = fmax(t, x);
		nic_t += nic_ring(pd, r, r * r0, ws, pd->cn[sb] - pd->cn[sa]);
		if (L0->split[cell] < 0)
			break;
		cell = at(pd, L0->sub[cell], a, L0->split[cell]);
	}
	/* the last stage of a split: what it receives passes its NICs, and
	 * the gradients of it go back, beside its all-reduces (what it sends
	 * is charged when the next stage is known, best_split() in
	 * pipedream.c) */
	if (last && pd->ratio > 0) {
		t = fmax(t, qin(pd, 0, 0, a, b, a) / (L1->bw * r * pd->ratio) + nic_t);
		one = fmax(one, qin(pd, 1, 0, a, b, a) / (L1->bw * r * pd->ratio) + nic_one);
	}
	/* `straight` forbids replication: no flat stage */
	*flat = !pd->straight && one <= t;
	*nic = *flat ? nic_one : nic_t;
	return *flat ? one : t;
}


/* The time of [a, b) as a stage of r replicas whose time on one
 * component is c: alone (last = 0) or as the last stage of a split
 * (last = 1), by the terms at the top; *nic as placed_time()'s (0 where
 * no NIC is modelled). */
static double replicated_time(const struct pd *pd, int l, double c, int a, int b, int r,
			      int last, int *flat, double *nic)
{
	const struct pd_level *L = &pd->lv[l];
	double w = pd->cw[b] - pd->cw[a], sync;

	*flat = 0;
	*nic = 0;
	if (pd->paper) {
		double t = fmax(c, sync_share(pd, r) * 2.0 * (r - 1) * w / L->bw) / r;

		return last ? fmax(t, 2.0 * pd->cross[a] / L->bw) : t;
	}
	if (!last && l == 0 && pd_whole(pd, l, a, b, r))
		return pd_flushed_dp(pd);
	if (pd->placed && l > 0)
		return placed_time(pd, a, b, r, last, flat, nic);
	sync = pd->placed ? sync_share(pd, r) * placed_allreduce(pd, 1, r, w, pd->cn[b] - pd->cn[a]) +
				    placed_update(pd, r, w)
			  : sync_share(pd, r) * 4.0 * (r - 1) * w / (r * L->bw);
	if (!last)
		return (c + sync / L->dev) / r;
	c = (c + sync) / r;
	if (pd->ratio > 0) /* its input and its output, shared by its replicas */
		c = fmax(c, 2.0 * fmax(pd->cross[a], pd->cross[b]) / (L->bw * r * pd->ratio));
	return c;
}

/* The same with the lower level's solution as c; a negative replica
 * count in a cell stands for cost=placed's one flat stage (emit(),
 * pipedream.c). */
double pd_stage_time(const struct pd *pd, int l, int a, int b, int r, int last, int *rep,
		     double *nic)
{
	int flat;
	double t = replicated_time(pd, l, lower_time(pd, l, a, b), a, b, r, last, &flat, nic);

	*rep = flat ? -r : r;
	return t;
}

/* Data parallelism by the same terms: one stage of every component at
 * every level, the paper's baseline (cost=placed: one stage replicated on
 * every device, its all-reduce over all of them); per minibatch. */
double pd_dp_time(const struct pd *pd)
{
	double t = pd->ct[pd->n] - pd->ct[0];
	int flat;
	double nic;

	if (pd->placed)
		return pd_flushed_dp(pd);
	for (int l = 0; l < pd->nlv; l++)
		t = replicated_time(pd, l, t, 0, pd->n, pd->lv[l].m, 0, &flat, &nic);
	return t;
}
