/*
 * pipedream: PipeDream's planner (Narayanan et al., SOSP 2019, section 3.1):
 * a hierarchical dynamic program over contiguous ranges of the operators,
 * the workers given to each range and the replication of each stage (data
 * parallelism inside a stage), scheduled with 1F1B.
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
 * search time stays bounded.  Per unit: forward plus backward time of one
 * minibatch (sim_op_cost(), the simulator's lookup, with its rule that an
 * input has no backward; imported operators keep their measured times),
 * parameter bytes (plan_param_shard_bytes(), the rule plan validation
 * uses), activation bytes, and the bytes crossing the cut before it.  The
 * minibatch is the reference's unit: under weak scaling the per-device
 * batch (the batch holds `units` of them), else the whole batch.
 *
 * Levels.  As in the paper the cluster is a hierarchy: level 0 joins the
 * devices of a node over the intra-node link, level 1 the nodes over their
 * NICs (a level of one component is dropped).  A[l][j][a, b) is the best
 * time per iteration of units [a, b) on j components of level l, whose
 * "compute" is the time of the range on one component of level l - 1
 * (that level's A on all its components), the paper's equation (2); it is
 * the minimum over one stage of j replicas and over every cut c and
 * replication r of the last stage of max(A[l][j - r][a, c), T([c, b), r)).
 * The top level is solved for ranges starting at 0 only.  Times are per
 * minibatch; units times the objective is the time of the batch, which
 * compares with the simulator's iteration time and is recorded as
 * planner_est_ms.  Replicas synchronise every round under PipeDream's
 * asynchronous 1F1B (the sync terms below, per minibatch), once a step
 * under PipeDream-Flush (the terms times r / units, sync_share()).
 *
 * Cost terms, `cost=placed` (the default): the reference optimizer's
 * (below), each sync term priced as the all-reduce the stage's replicas
 * run where the plan places them, sim_allreduce_s() (a ring inside a
 * node, hierarchical across nodes), added to the compute as the
 * reference adds it (a replica waits for its round's all-reduce; the
 * simulator counts it on the replicas' devices).  The reference's
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
 *    parallelism, which PipeDream runs flushed: its all-reduces, one per
 *    operator in backward order on shared links, overlap the rest of the
 *    last micro-batch's backward (flushed_dp(); the paper's recurrence
 *    takes the max of compute and sync for the same overlap);
 *  - across nodes a tensor goes from the stage that makes it to each
 *    device-level stage that consumes it, past the nodes between (GNMT's
 *    encoder output feeds every decoder layer's attention), and a NIC
 *    sends and receives at once: each node-level stage's NICs carry what
 *    it receives, counted once per consuming device-level stage, and
 *    what it sends, both ways, over its replicas (node_inputs(),
 *    nic_loads()), where the reference charges 2 max(a_in, a_out) / B
 *    per stage.  What a stage sends is known once the stages after it
 *    are: the prefix DP keeps the NIC bytes of every stage of a cell's
 *    solution and adds to them as it appends a stage, so a cell's best
 *    solution is chosen on the NIC bytes of its own stages (the later
 *    stages' share of its NICs can make another solution of the prefix
 *    the better one; the DP does not revisit it).
 * With these the estimate is the simulator's prediction of the emitted
 * plan within 2% on PipeDream's profiles, on one node and across nodes
 * (tests/test_pipedream_planner.c).
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
 * less).
 *
 * Replicated stages are PipeDream's: the r replicas of a stage take
 * whole micro-batches in turn (round robin, the plan's stage `replicas`)
 * and all-reduce their gradients, so a stage's time is (C + sync) / r as
 * costed above, and any r is admissible (the reference picks 3 and 15).
 * `fewer` lets a range use fewer components than it is given (the
 * reference's use_fewer_machines), `straight` forbids replication.
 *
 * The plan: one stage per device-level stage, chained, one round-robin
 * replica per device; PipeDream's 1F1B with weight stashing (`1f1b-async`)
 * or PipeDream-Flush (`1f1b-flush`).  A plan of one stage is data
 * parallelism, which PipeDream runs synchronously: it is flushed, and each
 * micro-batch is split along n over the devices.  Micro-batches: with a
 * batch per device (weak scaling, planner_input.per_device_batch) the
 * micro-batch is that batch, PipeDream's profiled minibatch; otherwise
 * NOAM = ceil(workers / replicas of the input stage).  The nearest
 * divisor of the batch is taken, first one that every stage's replicas
 * divide (a flushed step is then balanced, and an asynchronous step holds
 * whole rounds, which the runtime needs).
 *
 * `schedule=async-predict` plans for that schedule (core/sched.c): every
 * stage runs a forward beside a backward, so its period is its forward
 * plus backward time, the C the DP already balances; the schedule keeps
 * no replicas apart (implies `straight`), and its memory term keeps one
 * predicted copy of the weights instead of the k stashed versions; the
 * activation term stays the reference's (k x the range's activations).
 * The schedule holds 2k micro-batches in flight where 1F1B holds k, but
 * the term counts whole-batch activations per version, already above
 * what k micro-batches hold; doubling it excluded plans whose simulated
 * peak fits by a wide margin (resnet50 on pipedream-a: 4x slower).  The
 * simulated peak memory of the emitted plan is checked as for every
 * schedule (choose_microbatches()).
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "err.h"
#include "intmath.h"
#include "planner.h"
#include "sim.h"

#define PD_LEVELS 2

struct pd_level {
	int m;       /* components this level joins */
	int dev;     /* devices in one component */
	double bw;   /* bytes/s between two components */
	/* Per (j, a, b), AT(): the best time of units [a, b) on j components,
	 * and how: the cut c before the last stage (-1: one stage), the
	 * components sub of [a, c) and the last stage's replicas. */
	double *t;
	int *split, *sub, *rep;
};

struct pd_stage {
	int a, b; /* units */
	int ndev, *devs;
};

struct pd {
	const struct planner_input *in;
	/* Minibatches in the batch: the DP's times and bytes are those of
	 * one (its terms are per minibatch, as the reference's are); 1 but
	 * under weak scaling, where the minibatch is the per-device batch. */
	int units;
	/* PipeDream-Flush: replicas synchronise once a step, not every
	 * round (sync_share()). */
	int flush;
	int straight, fewer, paper, placed, memory, max_units;
	int *devs;              /* scratch: a replica group's devices */
	int predict; /* schedule=async-predict */
	double ratio; /* activation compression; 0: transfers not charged */
	double mem; /* bytes of one device */
	double deadline; /* of the search, now_s() */
	int nops, n;            /* operators, units */
	int *order;             /* operators in unit order */
	double *obwd, *ow;      /* [nops], in unit order: an operator's backward
				 * time and parameter bytes (flushed_dp()) */
	int *first;             /* [n + 1]: a unit's first position in order */
	double *ct, *cw, *ca;   /* [n + 1]: prefix sums of time, parameter and
				 * activation bytes over units */
	double *cross;          /* [n + 1]: bytes crossing the cut before a unit */
	int nlv;
	struct pd_level lv[PD_LEVELS];
	/* cost=placed across nodes, per node-level stage [c, b) as its node
	 * level's solution (0) or as one flat stage (1): qin[v] + qofs[c, b]
	 * holds for x = 0 .. c the bytes the stage receives, per minibatch,
	 * of the tensors made before unit x, once per device-level stage
	 * that consumes them (node_inputs()) */
	double *qin[2];
	size_t *qofs;
	/* and per node-level cell (j, 0, b), its stages' first units, replicas
	 * and NIC bytes per minibatch and replica, in order (nic_loads()) */
	int *nic_k, *nic_a, *nic_r;
	double *nic_ld;
	double *last;           /* the last-stage times of the level solved */
	int *lastrep;           /* and their replicas (stage_time()) */
	int nst, cap_st;
	struct pd_stage *st;    /* the device-level stages, in order */
};

static size_t at(const struct pd *pd, int j, int a, int b)
{
	size_t n1 = (size_t)pd->n + 1;

	return ((size_t)j * n1 + (size_t)a) * n1 + (size_t)b;
}

/* --- units ---------------------------------------------------------------- */

/* The unit order: graph order, each source delayed to just before its
 * first consumer (sources without consumers stay where they are). */
static void unit_order(struct pd *pd, const int *cofs, char *placed)
{
	const struct graph *g = pd->in->g;
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
	const struct graph *g = pd->in->g;
	const int one[NDIMS] = { 1, 1, 1, 1, 1 };
	struct plan_op po = { .degree = { 1, 1, 1, 1, 1 } };

	for (int k = 0; k < pd->nops; k++) {
		const struct op *op = &g->ops[pd->order[k]];
		struct op_cost oc;
		int rc = sim_op_cost(pd->in->p, g, pd->order[k], one, pd->units, &oc);

		if (rc)
			return rc;
		t[k] = 1e-6 * (oc.fwd_us + oc.bwd_us);
		w[k] = (double)plan_param_shard_bytes(op, &po);
		pd->obwd[k] = 1e-6 * oc.bwd_us;
		pd->ow[k] = w[k];
		act[k] = (double)op->out_bytes / pd->units;
	}
	return AP_OK;
}

static int build_units(struct pd *pd)
{
	const struct graph *g = pd->in->g;
	int N = pd->nops, *cofs = NULL, *cons = NULL, *pos, *cut, *width, *cw;
	double *t, *w, *act, *xb, *ut;
	char *placed;
	int rc = graph_consumers(g, &cofs, &cons);

	if (rc)
		return rc;
	pos = calloc((size_t)N + 2, sizeof *pos);
	cut = calloc((size_t)N + 2, sizeof *cut);
	width = calloc((size_t)N + 2, sizeof *width);
	cw = calloc((size_t)N + 2, sizeof *cw);
	placed = calloc((size_t)N + 1, 1);
	t = calloc((size_t)N + 1, sizeof *t);
	w = calloc((size_t)N + 1, sizeof *w);
	act = calloc((size_t)N + 1, sizeof *act);
	xb = calloc((size_t)N + 2, sizeof *xb);
	ut = calloc((size_t)N + 1, sizeof *ut);
	if (!pos || !cut || !width || !cw || !placed || !t || !w || !act || !xb || !ut) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	unit_order(pd, cofs, placed);
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
	 * drops the inputs, they are never a stage of their own.  Then the
	 * branches are collapsed. */
	pd->n = 0;
	for (int k = 0; k < N; k++) {
		if (k == 0 || g->ops[pd->order[k - 1]].nin > 0 ||
		    cofs[pd->order[k - 1] + 1] == cofs[pd->order[k - 1]]) {
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
	if (!pd->first || !pd->ct || !pd->cw || !pd->ca || !pd->cross) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	memcpy(pd->first, cut, ((size_t)pd->n + 1) * sizeof *cut);
	for (int u = 0; u < pd->n; u++) {
		pd->ct[u + 1] = pd->ct[u];
		pd->cw[u + 1] = pd->cw[u];
		pd->ca[u + 1] = pd->ca[u];
		for (int k = cut[u]; k < cut[u + 1]; k++) {
			pd->ct[u + 1] += t[k];
			pd->cw[u + 1] += w[k];
			pd->ca[u + 1] += act[k];
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
	free(t);
	free(w);
	free(act);
	free(xb);
	free(ut);
	return rc;
}

/* --- the dynamic program -------------------------------------------------- */

/* The bytes node-level stage [c, b) (variant v, above) receives of the
 * tensors made before unit x <= c. */
static double qin(const struct pd *pd, int v, int c, int b, int x)
{
	return pd->qin[v][pd->qofs[(size_t)c * ((size_t)pd->n + 1) + (size_t)b] + (size_t)x];
}

/* cost=placed across nodes: the NIC bytes of the stages of [0, c) on j
 * nodes (the cell's, stored) once [c, b) on r nodes (variant vs) follows
 * them: each sends it what it receives of theirs, and takes back the
 * gradients, and [c, b) carries what it receives, both ways; into the
 * store of cell (jo, b) unless jo is 0.  Returns the busiest NIC's time,
 * per minibatch.  A stage's NICs carry what it receives and what it
 * sends, as the simulator sends it: to the very stage that consumes it,
 * past the nodes between. */
static double nic_loads(struct pd *pd, int j, int c, int b, int r, int vs, int jo)
{
	const struct pd_level *L = &pd->lv[1];
	size_t n1 = (size_t)pd->n + 1, h = (size_t)j * n1 + (size_t)c, o = (size_t)jo * n1 + (size_t)b;
	int k = pd->nic_k[h], M = L->m;
	double most = qin(pd, vs, c, b, c) / r;

	for (int i = 0; i < k; i++) {
		int c0 = pd->nic_a[h * M + i], c1 = i + 1 < k ? pd->nic_a[h * M + i + 1] : c;
		double ld = pd->nic_ld[h * M + i] +
			    (qin(pd, vs, c, b, c1) - qin(pd, vs, c, b, c0)) / pd->nic_r[h * M + i];

		most = fmax(most, ld);
		if (jo) {
			pd->nic_a[o * M + i] = c0;
			pd->nic_r[o * M + i] = pd->nic_r[h * M + i];
			pd->nic_ld[o * M + i] = ld;
		}
	}
	if (jo) {
		pd->nic_k[o] = k + 1;
		pd->nic_a[o * M + k] = c;
		pd->nic_r[o * M + k] = r;
		pd->nic_ld[o * M + k] = qin(pd, vs, c, b, c) / r;
	}
	return most / (L->bw * pd->ratio);
}

/* The store of node-level cell (j, 0, b) as one stage of r nodes, or as
 * cell (f, 0, b)'s. */
static void nic_one(struct pd *pd, int j, int b, int r, int f)
{
	size_t n1 = (size_t)pd->n + 1, o = (size_t)j * n1 + (size_t)b, from = (size_t)f * n1 + (size_t)b;
	int M = pd->lv[1].m;

	if (f) {
		pd->nic_k[o] = pd->nic_k[from];
		memcpy(&pd->nic_a[o * M], &pd->nic_a[from * M], (size_t)M * sizeof *pd->nic_a);
		memcpy(&pd->nic_r[o * M], &pd->nic_r[from * M], (size_t)M * sizeof *pd->nic_r);
		memcpy(&pd->nic_ld[o * M], &pd->nic_ld[from * M], (size_t)M * sizeof *pd->nic_ld);
		return;
	}
	pd->nic_k[o] = 1;
	pd->nic_a[o * M] = 0;
	pd->nic_r[o * M] = r;
	pd->nic_ld[o * M] = 0;
}

/* Fills qin for every node-level stage [c, b), once the node level's
 * solutions of every range are known.  The simulator sends a tensor once
 * to every device-level stage that consumes it (round-robin replicas
 * take each micro-batch on one of them), so a tensor that two stages of
 * a node consume crosses its NIC twice; a flat stage takes it once. */
static int node_inputs(struct pd *pd)
{
	const struct graph *g = pd->in->g;
	const struct pd_level *L0 = &pd->lv[0];
	size_t n1 = (size_t)pd->n + 1, total = 0;
	int *pos = malloc((size_t)pd->nops * sizeof *pos);
	int *unit = malloc((size_t)pd->nops * sizeof *unit);
	int *sid = malloc(n1 * sizeof *sid), *stamp = calloc((size_t)pd->nops, sizeof *stamp);
	double *bucket = malloc(n1 * sizeof *bucket);
	int rc = AP_OK, mark = 0;

	pd->qofs = malloc(n1 * n1 * sizeof *pd->qofs);
	for (int c = 0; c < pd->n && pd->qofs; c++)
		for (int b = c + 1; b <= pd->n; b++) {
			pd->qofs[(size_t)c * n1 + (size_t)b] = total;
			total += (size_t)c + 1;
		}
	pd->qin[0] = malloc((total ? total : 1) * sizeof **pd->qin);
	pd->qin[1] = malloc((total ? total : 1) * sizeof **pd->qin);
	pd->nic_k = calloc(((size_t)pd->lv[1].m + 1) * n1, sizeof *pd->nic_k);
	pd->nic_a = malloc(((size_t)pd->lv[1].m + 1) * n1 * (size_t)pd->lv[1].m * sizeof *pd->nic_a);
	pd->nic_r = malloc(((size_t)pd->lv[1].m + 1) * n1 * (size_t)pd->lv[1].m * sizeof *pd->nic_r);
	pd->nic_ld = malloc(((size_t)pd->lv[1].m + 1) * n1 * (size_t)pd->lv[1].m * sizeof *pd->nic_ld);
	if (!pos || !unit || !sid || !stamp || !bucket || !pd->qofs || !pd->qin[0] ||
	    !pd->qin[1] || !pd->nic_k || !pd->nic_a || !pd->nic_r || !pd->nic_ld) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	for (int u = 0; u < pd->n; u++)
		for (int k = pd->first[u]; k < pd->first[u + 1]; k++) {
			pos[pd->order[k]] = k;
			unit[k] = u;
		}
	for (int c = 0; c < pd->n; c++)
		for (int b = c + 1; b <= pd->n; b++)
			for (int v = 0; v < 2; v++) {
				double *q = pd->qin[v] + pd->qofs[(size_t)c * n1 + (size_t)b];
				size_t cell = at(pd, L0->m, c, b);

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
				for (int x = 0; x <= c; x++)
					bucket[x] = 0;
				for (int k = pd->first[c]; k < pd->first[b]; k++) {
					const struct op *op = &g->ops[pd->order[k]];

					if (k == pd->first[c] || sid[unit[k]] != sid[unit[k - 1]])
						mark++;
					for (int e = 0; e < op->nin; e++) {
						int u = op->in[e];

						if (pos[u] < pd->first[c] && stamp[u] != mark) {
							stamp[u] = mark;
							bucket[unit[pos[u]]] +=
								(double)g->ops[u].out_bytes / pd->units;
						}
					}
				}
				q[0] = 0;
				for (int x = 1; x <= c; x++)
					q[x] = q[x - 1] + bucket[x - 1];
			}
out:
	free(pos);
	free(unit);
	free(sid);
	free(stamp);
	free(bucket);
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
static int admissible(const struct pd *pd, int l, int a, int b)
{
	return isfinite(lower_time(pd, l, a, b));
}

/* Whether [a, b) with k stashed copies fits a device (see the top). */
static int fits(const struct pd *pd, int l, int a, int b, int k)
{
	double w = pd->cw[b] - pd->cw[a], need = k * (pd->ca[b] - pd->ca[a] + w);

	if (pd->predict)
		need = k * (pd->ca[b] - pd->ca[a]) + w;

	if (l == 0)
		need += 3 * w;
	return !pd->memory || need <= pd->mem;
}

/* The share of one synchronisation a replica's minibatch carries, times
 * r: every round of r minibatches under PipeDream's 1F1B (1), once a
 * step of `units` minibatches under PipeDream-Flush (r / units). */
static double sync_share(const struct pd *pd, int r)
{
	return pd->flush ? (double)r / pd->units : 1.0;
}

/* cost=placed: the all-reduce of w bytes over a device-level stage's
 * replicas as they are placed, r0 devices on each of r nodes (r = 1: in
 * one node; a cluster of one level: r0 components of it), priced as the
 * simulator runs it (sim_allreduce_s(): a ring in a node, hierarchical
 * across nodes). */
static double placed_allreduce(const struct pd *pd, int r, int r0, double w)
{
	int per = pd->in->c->per_node, k = 0;

	for (int n = 0; n < r; n++)
		for (int t = 0; t < r0; t++)
			pd->devs[k++] = pd->nlv > 1 ? n * per + t : t * (r > 1 ? per : 1) + n;
	return sim_allreduce_s(pd->in->c, pd->devs, k, (int64_t)w);
}

/* cost=placed: data parallelism as PipeDream runs it, one stage on every
 * device, flushed (the plan of one stage): a device computes units / nd
 * minibatches, and each operator's all-reduce starts when the backward of
 * the last micro-batch (`mb` minibatches on a device) has passed it and
 * the previous operator's all-reduce has ended (they share the links), so
 * the all-reduces overlap the rest of that backward and the step ends
 * with the later of the compute and the last all-reduce.  Per minibatch. */
static double flushed_dp(const struct pd *pd, double mb)
{
	int nd = cluster_ndevices(pd->in->c), nodes = pd->nlv > 1 ? pd->lv[1].m : 1;
	double bwd = 0, net = 0;

	for (int k = pd->nops - 1; k >= 0; k--) {
		bwd += pd->obwd[k] * mb;
		if (pd->ow[k] > 0)
			net = fmax(net, bwd) + placed_allreduce(pd, nodes, pd->lv[0].m, pd->ow[k]);
	}
	return ((pd->ct[pd->n] - pd->ct[0]) / nd * pd->units + fmax(0, net - bwd)) / pd->units;
}

/* Whether [a, b) on r components of level l is the whole model on every
 * device, which is emitted as one stage (flushed_dp()). */
static int whole(const struct pd *pd, int l, int a, int b, int r)
{
	return pd->placed && l == pd->nlv - 1 && a == 0 && b == pd->n && r == pd->lv[l].m;
}

/* cost=placed at the node level: [a, b) on r nodes, each running the
 * node level's solution of it, which flattens into device-level stages
 * of r x r0 replicas each: every such stage's (C + its all-reduce) / (r
 * r0) and its transfers as at the node level, over r copies; the last
 * stage of a split also its transfers across nodes.  The node level's
 * best solution is for one node; over r of them its stages' all-reduces
 * cross the nodes, so one stage replicated on every device of the r
 * nodes is priced too, and *flat says whether it is the faster (ties
 * go to it: fewer stages). */
static double placed_time(const struct pd *pd, int a, int b, int r, int last, int *flat)
{
	const struct pd_level *L0 = &pd->lv[0], *L1 = &pd->lv[1];
	size_t cell = at(pd, L0->m, a, b), n1 = (size_t)pd->n + 1;
	double t = 0, w = pd->cw[b] - pd->cw[a], one;
	int rr = r * L0->m;

	one = whole(pd, 1, a, b, r) ? flushed_dp(pd, (double)pd->units / rr)
				    : (pd->ct[b] - pd->ct[a] +
				       sync_share(pd, rr) * placed_allreduce(pd, r, L0->m, w)) / rr;
	if (!isfinite(L0->t[cell]))
		t = INFINITY;
	while (isfinite(t)) {
		int sa = L0->split[cell] < 0 ? a : L0->split[cell], sb = (int)(cell % n1);
		int r0 = L0->rep[cell];
		double ws = pd->cw[sb] - pd->cw[sa];
		double x = (pd->ct[sb] - pd->ct[sa] +
			    sync_share(pd, r * r0) * placed_allreduce(pd, r, r0, ws)) / (r * r0);

		if (L0->split[cell] >= 0 && pd->ratio > 0)
			x = fmax(x, 2.0 * fmax(pd->cross[sa], pd->cross[sb]) /
					    (L0->bw * r * r0 * pd->ratio));
		t = fmax(t, x);
		if (L0->split[cell] < 0)
			break;
		cell = at(pd, L0->sub[cell], a, L0->split[cell]);
	}
	/* the last stage of a split: what it receives passes its NICs, and
	 * the gradients of it go back (what it sends is charged when the
	 * next stage is known, best_split()) */
	if (last && pd->ratio > 0) {
		t = fmax(t, qin(pd, 0, a, b, a) / (L1->bw * r * pd->ratio));
		one = fmax(one, qin(pd, 1, a, b, a) / (L1->bw * r * pd->ratio));
	}
	/* `straight` forbids replication: no flat stage */
	*flat = !pd->straight && one <= t;
	return *flat ? one : t;
}


/* The time of [a, b) as a stage of r replicas whose time on one
 * component is c: alone (last = 0) or as the last stage of a split
 * (last = 1), by the terms at the top. */
static double replicated_time(const struct pd *pd, int l, double c, int a, int b, int r,
			      int last, int *flat)
{
	const struct pd_level *L = &pd->lv[l];
	double w = pd->cw[b] - pd->cw[a], sync;

	if (pd->paper) {
		double t = fmax(c, sync_share(pd, r) * 2.0 * (r - 1) * w / L->bw) / r;

		return last ? fmax(t, 2.0 * pd->cross[a] / L->bw) : t;
	}
	*flat = 0;
	if (!last && l == 0 && whole(pd, l, a, b, r))
		return flushed_dp(pd, (double)pd->units / r);
	if (pd->placed && l > 0)
		return placed_time(pd, a, b, r, last, flat);
	sync = sync_share(pd, r) * (pd->placed ? placed_allreduce(pd, 1, r, w)
					       : 4.0 * (r - 1) * w / (r * L->bw));
	if (!last)
		return (c + sync / L->dev) / r;
	c = (c + sync) / r;
	if (pd->ratio > 0) /* its input and its output, shared by its replicas */
		c = fmax(c, 2.0 * fmax(pd->cross[a], pd->cross[b]) / (L->bw * r * pd->ratio));
	return c;
}

/* The same with the lower level's solution as c; a negative replica
 * count in a cell stands for cost=placed's one flat stage (emit()). */
static double stage_time(const struct pd *pd, int l, int a, int b, int r, int last, int *rep)
{
	int flat;
	double t = replicated_time(pd, l, lower_time(pd, l, a, b), a, b, r, last, &flat);

	*rep = flat ? -r : r;
	return t;
}

/* Data parallelism by the same terms: one stage of every component at
 * every level, the paper's baseline (cost=placed: one stage replicated on
 * every device, its all-reduce over all of them); per minibatch. */
static double dp_time(const struct pd *pd)
{
	double t = pd->ct[pd->n] - pd->ct[0];
	int nd = cluster_ndevices(pd->in->c), flat;

	if (pd->placed)
		return flushed_dp(pd, (double)pd->units / nd);
	for (int l = 0; l < pd->nlv; l++)
		t = replicated_time(pd, l, t, 0, pd->n, pd->lv[l].m, 0, &flat);
	return t;
}

static void set_cell(struct pd_level *L, size_t i, double t, int split, int sub, int rep)
{
	L->t[i] = t;
	L->split[i] = split;
	L->sub[i] = sub;
	L->rep[i] = rep;
}

static void copy_cell(struct pd_level *L, size_t to, size_t from)
{
	set_cell(L, to, L->t[from], L->split[from], L->sub[from], L->rep[from]);
}

/* The best split of [a, b) on j components. */
static void best_split(struct pd *pd, int l, int j, int a, int b)
{
	struct pd_level *L = &pd->lv[l];
	size_t cell = at(pd, j, a, b);
	int rmax = pd->straight ? 1 : j - 1, nics = pd->placed && l > 0 && pd->ratio > 0;

	for (int r = 1; r <= rmax; r++) {
		int k = (L->m - j + r - 1) / r, arg = -1, c = a + 1;
		const double *head = &L->t[at(pd, j - r, a, 0)];
		const double *tail = &pd->last[at(pd, r, b, 0)];
		double v = INFINITY;

		while (c < b && !fits(pd, l, c, b, k))
			c++;
		for (; c < b; c++) {
			double x = head[c] > tail[c] ? head[c] : tail[c];

			if (nics && isfinite(x))
				x = fmax(x, nic_loads(pd, j - r, c, b, r,
						      pd->lastrep[at(pd, r, b, c)] < 0, 0));

			if (x < v) {
				v = x;
				arg = c;
			}
		}
		/* a split must be better by more than round-off: between equal
		 * costs the fewer stages win (data parallelism over a
		 * pipeline that only ties it) */
		if (arg >= 0 && v < L->t[cell] * (1 - 1e-9)) {
			set_cell(L, cell, v, arg, j - r, pd->lastrep[at(pd, r, b, arg)]);
			if (nics)
				nic_loads(pd, j - r, arg, b, r, pd->lastrep[at(pd, r, b, arg)] < 0, j);
		}
	}
}

static int solve_level(struct pd *pd, int l, int amax)
{
	struct pd_level *L = &pd->lv[l];
	int n = pd->n, M = L->m;
	size_t size = at(pd, M + 1, 0, 0);

	L->t = malloc(size * sizeof *L->t);
	L->split = malloc(size * sizeof *L->split);
	L->sub = malloc(size * sizeof *L->sub);
	L->rep = malloc(size * sizeof *L->rep);
	if (!L->t || !L->split || !L->sub || !L->rep)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (size_t i = 0; i < size; i++)
		set_cell(L, i, INFINITY, -1, 0, 0);
	/* one stage of j replicas */
	for (int j = 1; j <= (pd->straight ? 1 : M); j++)
		for (int a = 0; a < amax; a++)
			for (int b = a + 1; b <= n; b++)
				if (admissible(pd, l, a, b) && fits(pd, l, a, b, (M - 1) / j)) {
					int rep;
					double t = stage_time(pd, l, a, b, j, 0, &rep);

					set_cell(L, at(pd, j, a, b), t, -1, 0, rep);
					if (l > 0 && pd->nic_k)
						nic_one(pd, j, b, j, 0);
				}
	/* the last stage of a split, [c, b) on r replicas, by r, b, c */
	for (int r = 1; r < M; r++)
		for (int b = 1; b <= n; b++)
			for (int c = 0; c < b; c++) {
				int rep = r;

				pd->last[at(pd, r, b, c)] =
					admissible(pd, l, c, b) ? stage_time(pd, l, c, b, r, 1, &rep)
								: INFINITY;
				pd->lastrep[at(pd, r, b, c)] = rep;
			}
	for (int j = 1; j <= M; j++) {
		if (now_s() > pd->deadline)
			return ap_err(AP_EINPUT, "pipedream", 0, "the search did not finish "
				      "within its budget of %g s (%d units, %d components at "
				      "level %d; max-units bounds the first)", pd->in->budget_s,
				      n, M, l);
		for (int a = 0; a < amax; a++)
			for (int b = a + 1; b <= n; b++) {
				size_t cell = at(pd, j, a, b);

				if (pd->fewer && j > 1 && L->t[at(pd, j - 1, a, b)] < L->t[cell]) {
					copy_cell(L, cell, at(pd, j - 1, a, b));
					if (l > 0 && pd->nic_k)
						nic_one(pd, j, b, 0, j - 1);
				}
				if (j > 1 && b - a > 1)
					best_split(pd, l, j, a, b);
			}
	}
	return AP_OK;
}

/* --- the plan ------------------------------------------------------------- */

static int add_stage(struct pd *pd, int a, int b, const int *devs, int ndev)
{
	struct pd_stage *s;

	if (pd->nst == pd->cap_st) {
		int cap = pd->cap_st ? 2 * pd->cap_st : 16;
		struct pd_stage *v = realloc(pd->st, (size_t)cap * sizeof *v);

		if (!v)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		pd->st = v;
		pd->cap_st = cap;
	}
	s = &pd->st[pd->nst];
	s->devs = malloc((size_t)ndev * sizeof *s->devs);
	if (!s->devs)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	memcpy(s->devs, devs, (size_t)ndev * sizeof *devs);
	s->a = a;
	s->b = b;
	s->ndev = ndev;
	pd->nst++;
	return AP_OK;
}

/* The solution of [a, b) on j components of level l, run by nb copies
 * whose first devices are bases[]: each of its stages takes the next r
 * components of every copy, and is either a device-level stage (level 0)
 * or the lower level's solution of its range on each of them.  Copies
 * and replicas take micro-batches in turn (copy k the j-th when j mod nb
 * is k), so the r x nb of a stage are listed replica by replica, each
 * with every copy's: the one that takes micro-batch j, (j mod (r nb)),
 * then lies in copy j mod nb, and what it sends stays in that copy. */
static int emit(struct pd *pd, int l, int a, int b, int j, const int *bases, int nb)
{
	const struct pd_level *L = &pd->lv[l];
	int *sa = malloc(((size_t)pd->n + 1) * 3 * sizeof *sa), ns = 0, q = 0, rc = AP_OK;
	int *devs = NULL;

	if (!sa)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (size_t cell = at(pd, j, a, b);; cell = at(pd, L->sub[cell], a, L->split[cell])) {
		sa[3 * ns] = L->split[cell] < 0 ? a : L->split[cell];
		sa[3 * ns + 1] = (int)(cell % ((size_t)pd->n + 1));
		sa[3 * ns + 2] = L->rep[cell];
		ns++;
		if (L->split[cell] < 0)
			break;
	}
	for (int s = ns - 1; s >= 0 && !rc; s--) {
		int r = abs(sa[3 * s + 2]), flat = sa[3 * s + 2] < 0, nd = 0;
		int lm = l > 0 ? pd->lv[l - 1].m : 1;
		int *v = realloc(devs, (size_t)nb * r * lm * sizeof *devs);

		if (!v) {
			rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
			break;
		}
		devs = v;
		for (int t = 0; t < r; t++)
			for (int k = 0; k < nb; k++)
				devs[nd++] = bases[k] + (q + t) * L->dev;
		q += r;
		/* a flat stage: every device of its components one replica,
		 * replica by replica as above */
		if (flat) {
			for (int u = 1; u < lm; u++)
				for (int k = 0; k < r * nb; k++)
					devs[nd++] = devs[k] + u * pd->lv[l - 1].dev;
		}
		rc = l == 0 || flat ? add_stage(pd, sa[3 * s], sa[3 * s + 1], devs, nd)
				    : emit(pd, l - 1, sa[3 * s], sa[3 * s + 1], pd->lv[l - 1].m,
					   devs, nd);
	}
	free(sa);
	free(devs);
	return rc;
}

/* The n split of a plan's stages: a plan of one stage is data
 * parallelism, each micro-batch split along n over the devices where
 * they divide the batch (the same work as PipeDream's, every worker its
 * own minibatch and the gradients all-reduced once a step); otherwise
 * every device is a round-robin replica. */
static int nsplit(const struct pd *pd)
{
	return pd->nst == 1 && pd->in->g->batch % pd->st[0].ndev == 0 ? pd->st[0].ndev : 1;
}

/* Fills out with the stages and m micro-batches.  A stage of several
 * devices is PipeDream's replicated stage: one round-robin replica per
 * device, each taking whole micro-batches in turn (but see nsplit()). */
static int fill_plan(const struct pd *pd, enum sched_kind sched, int m, struct plan *out)
{
	const struct graph *g = pd->in->g;
	int rc = plan_alloc(out, g, pd->nst);

	plan_schedule(out, sched, m);
	if (!rc)
		rc = plan_chain(out);
	for (int s = 0; s < pd->nst && !rc; s++) {
		const struct pd_stage *st = &pd->st[s];
		int split = nsplit(pd), deg[NDIMS] = { split, 1, 1, 1, 1 };

		rc = plan_stage(out, s, st->devs, st->ndev, st->ndev / split);
		for (int k = pd->first[st->a]; k < pd->first[st->b] && !rc; k++)
			rc = plan_op(out, pd->order[k], s, deg, st->devs);
	}
	return rc;
}

/* Whether micro-batch count x goes before y: a count every stage's
 * replicas divide first (a flushed step is then balanced, and an
 * asynchronous one holds whole rounds of its replicas, as the runtime
 * needs), then the nearer to the target, then the larger. */
static int before(int x, int y, int target, int64_t l)
{
	int ex = x % l == 0, ey = y % l == 0, dx = abs(x - target), dy = abs(y - target);

	if (ex != ey)
		return ex;
	return dx < dy || (dx == dy && x > y);
}

/* The micro-batch counts, divisors of the batch, in the order they are
 * tried.  The target is the micro-batch of the weak-scaling instance (the
 * per-device batch, as PipeDream's minibatch is what it profiled) or else
 * NOAM. */
static int microbatch_choices(const struct pd *pd, int noam, int *mb,
			      int cap)
{
	int64_t q = pd->in->g->batch / nsplit(pd), l = 1, per = pd->in->per_device_batch;
	int n = 0, target = per > 0 && q % per == 0 && pd->nst > 1 ? (int)(q / per) : noam;

	if (nsplit(pd) == 1)
		for (int s = 0; s < pd->nst && l <= q; s++)
			l = lcm64(l, pd->st[s].ndev);
	for (int64_t d = 1; d * d <= q && n + 1 < cap; d++)
		if (q % d == 0) {
			mb[n++] = (int)d;
			/* a plan counts its micro-batches in an int */
			if (d * d < q && q / d <= INT_MAX)
				mb[n++] = (int)(q / d);
		}
	for (int x = 1; x < n; x++)
		for (int y = x; y > 0 && before(mb[y], mb[y - 1], target, l); y--) {
			int t = mb[y];

			mb[y] = mb[y - 1];
			mb[y - 1] = t;
		}
	return n;
}

/* Chooses the micro-batches (NOAM, or the nearest count that the plan
 * admits and whose simulated peak memory fits) and fills out. */
static int choose_microbatches(struct pd *pd, enum sched_kind sched, struct plan *out)
{
	int W = 0, noam, mb[256], n, rc = AP_OK, tries = 0;
	struct sim s;
	struct sim_result r = { 0 };

	for (int k = 0; k < pd->nst; k++)
		W += pd->st[k].ndev;
	noam = (W + pd->st[0].ndev - 1) / pd->st[0].ndev;
	n = microbatch_choices(pd, noam, mb, 256);
	if (pd->memory)
		rc = sim_init(&s, pd->in->g, pd->in->p, pd->in->c);
	for (int k = 0; k < n && !rc; k++) {
		rc = fill_plan(pd, sched, mb[k], out);
		tries++;
		if (rc || !pd->memory)
			break;
		rc = sim_run(&s, out, NULL, &r);
		if (!rc && sim_fits(&r))
			break;
		if (!rc && k + 1 == n)
			rc = ap_err(AP_EINPUT, "pipedream", 0, "the plan of '%s' (%d stages) "
				    "needs %lld bytes on device %d, more than its %lld, at "
				    "every micro-batch count it admits", pd->in->g->name,
				    pd->nst, (long long)r.peak_mem_bytes, r.peak_dev,
				    (long long)r.mem_bytes);
	}
	if (pd->memory)
		sim_release(&s);
	if (!rc)
		rc = plan_set_stat(out, "noam", noam);
	if (!rc)
		rc = plan_set_stat(out, "microbatch_tries", tries);
	return rc;
}

/* --- the planner ---------------------------------------------------------- */

static void levels(struct pd *pd)
{
	const struct cluster *c = pd->in->c;

	pd->nlv = 0;
	if (c->per_node > 1 || c->nodes == 1)
		pd->lv[pd->nlv++] = (struct pd_level){ .m = c->per_node, .dev = 1,
						       .bw = c->intra.bw_bytes_per_s };
	if (c->nodes > 1)
		pd->lv[pd->nlv++] = (struct pd_level){ .m = c->nodes,
						       .dev = pd->nlv ? c->per_node : 1,
						       .bw = c->inter.bw_bytes_per_s };
}

static void pd_release(struct pd *pd)
{
	free(pd->devs);
	free(pd->order);
	free(pd->obwd);
	free(pd->ow);
	free(pd->first);
	free(pd->ct);
	free(pd->cw);
	free(pd->ca);
	free(pd->cross);
	free(pd->qin[0]);
	free(pd->qin[1]);
	free(pd->qofs);
	free(pd->nic_k);
	free(pd->nic_a);
	free(pd->nic_r);
	free(pd->nic_ld);
	free(pd->last);
	free(pd->lastrep);
	for (int l = 0; l < pd->nlv; l++) {
		free(pd->lv[l].t);
		free(pd->lv[l].split);
		free(pd->lv[l].sub);
		free(pd->lv[l].rep);
	}
	for (int s = 0; s < pd->nst; s++)
		free(pd->st[s].devs);
	free(pd->st);
}

static int plan_pipedream(const struct planner_input *in, struct plan *out)
{
	struct pd pd = { .in = in, .nops = in->g->nops };
	const char *sched = planner_choice(in, "schedule");
	int top, base = 0, rc;
	double est;

	pd.predict = !strcmp(sched, "async-predict");
	pd.straight = planner_flag(in, "straight") || pd.predict;
	pd.fewer = planner_flag(in, "fewer");
	pd.paper = !strcmp(planner_choice(in, "cost"), "paper");
	pd.placed = !strcmp(planner_choice(in, "cost"), "placed");
	pd.memory = !strcmp(planner_choice(in, "memory"), "on");
	pd.max_units = planner_int(in, "max-units");
	pd.ratio = planner_real(in, "compression");
	pd.units = in->per_device_batch > 0 && in->g->batch % in->per_device_batch == 0
			   ? (int)(in->g->batch / in->per_device_batch) : 1;
	pd.flush = !strcmp(sched, "1f1b-flush");
	pd.deadline = now_s() + in->budget_s;
	pd.mem = (double)(in->c->mem_bytes > 0 ? in->c->mem_bytes : in->p->dev.mem_bytes);
	if (pd.ratio < 0)
		return ap_err(AP_EINPUT, "pipedream", 0, "compression must be 0 (activation "
			      "transfers not charged) or a positive ratio");
	if (pd.max_units < 2)
		return ap_err(AP_EINPUT, "pipedream", 0, "max-units must be at least 2");
	if (pd.nops < 1)
		return ap_err(AP_EINPUT, "pipedream", 0, "model '%s' has no operators",
			      in->g->name);
	levels(&pd);
	pd.order = malloc((size_t)pd.nops * sizeof *pd.order);
	pd.obwd = malloc((size_t)pd.nops * sizeof *pd.obwd);
	pd.ow = malloc((size_t)pd.nops * sizeof *pd.ow);
	pd.devs = malloc((size_t)cluster_ndevices(in->c) * sizeof *pd.devs);
	if (!pd.order || !pd.obwd || !pd.ow || !pd.devs) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	rc = build_units(&pd);
	for (int l = 0; l < pd.nlv && !rc; l++) {
		if (l > 0 && pd.placed && pd.ratio > 0)
			rc = node_inputs(&pd);
		if (rc)
			break;
		free(pd.last);
		pd.last = malloc(at(&pd, pd.lv[l].m + 1, 0, 0) * sizeof *pd.last);
		free(pd.lastrep);
		pd.lastrep = malloc(at(&pd, pd.lv[l].m + 1, 0, 0) * sizeof *pd.lastrep);
		rc = pd.last && pd.lastrep ? solve_level(&pd, l, l + 1 < pd.nlv ? pd.n : 1)
			     : ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	if (rc)
		goto out;
	top = pd.nlv - 1;
	est = pd.units * pd.lv[top].t[at(&pd, pd.lv[top].m, 0, pd.n)];
	if (!isfinite(est)) {
		rc = ap_err(AP_EINPUT, "pipedream", 0, "no pipeline of '%s' on %d devices "
			    "meets the constraints (%d units%s%s)%s", in->g->name,
			    cluster_ndevices(in->c), pd.n,
			    pd.straight ? ", one device per stage" : "",
			    pd.memory ? ", each stage fitting a device's memory" : "",
			    pd.fewer ? "" : "; 'fewer' lets it use fewer devices");
		goto out;
	}
	rc = emit(&pd, top, 0, pd.n, pd.lv[top].m, &base, 1);
	/* one stage is data parallelism, which PipeDream runs synchronously */
	if (!rc)
		rc = choose_microbatches(&pd, !strcmp(sched, "1f1b-flush") || pd.nst == 1
						      ? SCHED_1F1B
						      : pd.predict ? SCHED_ASYNC_PREDICT : SCHED_1F1B_ASYNC,
					 out);
	/* data parallelism: its last micro-batch, as chosen, bounds the
	 * all-reduces' overlap */
	if (!rc && whole(&pd, top, 0, pd.n, pd.lv[top].m) && pd.nst == 1 &&
	    pd.st[0].ndev == cluster_ndevices(in->c))
		est = pd.units * flushed_dp(&pd, (double)pd.units /
						 ((double)out->microbatches * nsplit(&pd)));
	out->est_ms = 1e3 * est;
	/* the same cost model's data parallelism (one stage on every
	 * device), the baseline the paper's speedups are over */
	if (!rc)
		rc = plan_set_stat(out, "dp_est_ms", 1e3 * pd.units * dp_time(&pd));
	if (!rc)
		rc = plan_set_stat(out, "stages", pd.nst);
	if (!rc)
		rc = plan_set_stat(out, "replicas_input", pd.st[0].ndev);
	if (!rc)
		rc = plan_set_stat(out, "units", pd.n);
out:
	pd_release(&pd);
	return rc;
}

const struct planner planner_pipedream = {
	.name = "pipedream",
	.description = "hierarchical DP over layer ranges, workers and stage replication; 1F1B",
	.anchor = "Narayanan et al., SOSP 2019",
	.plan = plan_pipedream,
	.options = (const struct planner_option[]){
		{ "straight", POPT_FLAG, NULL, NULL, "no replication: one device per stage" },
		{ "fewer", POPT_FLAG, NULL, NULL, "a range may use fewer devices than it is given" },
		{ "schedule", POPT_CHOICE, "1f1b-async", "1f1b-async|1f1b-flush|async-predict",
		  "PipeDream's weight stashing, PipeDream-Flush, or concurrent forward and backward with weight prediction (implies straight)" },
		{ "cost", POPT_CHOICE, "placed", "placed|code|paper",
		  "the reference's terms with each all-reduce as placed and run, the reference's verbatim, or the paper's recurrence" },
		{ "compression", POPT_REAL, "1", NULL,
		  "cost=code: activations shrink by this ratio on the wire; 0: not charged" },
		{ "memory", POPT_CHOICE, "on", "on|off", "the memory constraint" },
		{ "max-units", POPT_INT, "128", NULL,
		  "at most this many units (adjacent ones merged, least compute first)" },
		{ 0 },
	},
};
