/*
 * pipedream: PipeDream's planner (Narayanan et al., SOSP 2019, section 3.1):
 * a hierarchical dynamic program over contiguous ranges of the operators,
 * the workers given to each range and the replication of each stage (data
 * parallelism inside a stage), scheduled with 1F1B.
 *
 * The units the DP cuts and the cost terms of a stage, with the memory
 * constraint, are pipedream_cost.c's (its top comment); the structures
 * both files share are in pipedream_impl.h.
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
 * minibatch, `units` of which make the batch; units times the objective is
 * the time of the batch, recorded as planner_est_ms.  Replicas
 * synchronise and step every round under PipeDream's asynchronous 1F1B
 * (the sync terms of pipedream_cost.c, per minibatch), once a step under
 * PipeDream-Flush (the terms times r / units, sync_share() there).
 *
 * The minibatch.  A pipeline under 1F1B (or async-predict) runs the DP's
 * minibatches as its micro-batches, so the objective is the simulated
 * time of the plan it emits at the batch given (the simulator counts
 * those schedules by their busiest resource, the steady state the DP
 * balances): were the DP's minibatch the batch and the plan's
 * micro-batches eight of them, a stage of 8 replicas would all-reduce
 * once a batch where the DP counted once in 8.  The minibatch is the
 * per-device batch under weak scaling (PipeDream's profiled minibatch),
 * else the batch itself: every count prices the same compute and
 * transfers, but a replicated stage all-reduces and steps once a round of
 * its replicas, so the fewest micro-batches are the fastest.  Where no
 * plan of that minibatch fits (the DP's memory term, then the simulated
 * peak of the plan), the DP is solved again for ever smaller ones
 * (search()).  PipeDream-Flush keeps the DP's minibatch (the batch, or
 * the per-device batch) and chooses its micro-batches after it (below);
 * its estimate leaves the pipeline's fill and drain, and replicas that
 * the micro-batches do not divide, to the simulator.
 *
 * Replicated stages are PipeDream's: the r replicas of a stage take
 * whole micro-batches in turn (round robin, the plan's stage `replicas`)
 * and all-reduce their gradients, so a stage's time is (C + sync) / r as
 * pipedream_cost.c costs it, and any r is admissible (the reference
 * picks 3 and 15).
 * `fewer` lets a range use fewer components than it is given (the
 * reference's use_fewer_machines), `straight` forbids replication.
 *
 * The plan: one stage per device-level stage, chained, one round-robin
 * replica per device; PipeDream's 1F1B with weight stashing (`1f1b-async`)
 * or PipeDream-Flush (`1f1b-flush`).  A plan of one stage is data
 * parallelism, which PipeDream runs synchronously: it is flushed, and each
 * micro-batch is split along n over the devices where they divide the
 * batch.  A flushed plan's micro-batches: with a batch per device (weak
 * scaling, planner_input.per_device_batch) the count that makes the
 * micro-batch that batch, PipeDream's profiled minibatch; otherwise NOAM
 * = ceil(workers / replicas of the input stage); the nearest divisor of
 * the batch is taken, first one that every stage's replicas divide (the
 * step is then balanced), and the nearest after it whose simulated peak
 * memory fits.  The DP prices data parallelism at the first of them, and
 * the estimate at the count chosen (pd_flushed_dp()).  An asynchronous
 * pipeline whose replicas do not divide its micro-batches (all of them
 * where the batch is one micro-batch) simulates as it runs in turn across
 * iterations; the runtime runs whole rounds only (docs/runtime.md).
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
 *
 * Tied weights.  An operator that ties its weight to another's must run
 * on the same devices (plan_validate()), so no stage boundary falls
 * between the two: they share a unit (pipedream_cost.c), and so a stage,
 * whatever its replicas.  Where that took cuts away (GPT-2's embedding
 * and output layer leave its body one unit), a straight pipeline may no
 * longer have a stage for every device, so `straight` (and async-predict)
 * also admits the whole model as one stage on every device: data
 * parallelism, no pipeline stage, which the plan runs synchronously
 * under 1F1B whatever the schedule (as every plan of one stage); the DP
 * takes it where it beats the straight pipelines left.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/err.h"
#include "util/intmath.h"
#include "pipedream_impl.h"
#include "planner.h"
#include "sim/sim.h"
#include "plan/plan_build.h"

/* --- the dynamic program -------------------------------------------------- */

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

		while (c < b && !pd_fits(pd, l, c, b, k))
			c++;
		for (; c < b; c++) {
			double x = head[c] > tail[c] ? head[c] : tail[c];

			if (nics && isfinite(x))
				x = fmax(x, pd_nic_loads(pd, j - r, c, b, r,
							 pd->lastrep[at(pd, r, b, c)] < 0,
							 pd->lastnic[at(pd, r, b, c)], 0));

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
				pd_nic_loads(pd, j - r, arg, b, r,
					     pd->lastrep[at(pd, r, b, arg)] < 0,
					     pd->lastnic[at(pd, r, b, arg)], j);
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
	/* one stage of j replicas; under `straight` only the whole model,
	 * data parallelism, and only where a tie took cuts away (the top
	 * comment) */
	for (int j = 1; j <= (pd->straight && !pd->tied ? 1 : M); j++)
		for (int a = 0; a < amax; a++)
			for (int b = a + 1; b <= n; b++)
				if ((!pd->straight || j == 1 || (a == 0 && b == n)) &&
				    pd_admissible(pd, l, a, b) &&
				    pd_fits(pd, l, a, b, (M - 1) / j)) {
					int rep;
					double nic, t = pd_stage_time(pd, l, a, b, j, 0, &rep, &nic);

					set_cell(L, at(pd, j, a, b), t, -1, 0, rep);
					if (l > 0 && pd->nic_k)
						pd_nic_one(pd, j, b, j, 0, nic);
				}
	/* the last stage of a split, [c, b) on r replicas, by r, b, c */
	for (int r = 1; r < M; r++)
		for (int b = 1; b <= n; b++)
			for (int c = 0; c < b; c++) {
				int rep = r;
				double nic = 0;

				pd->last[at(pd, r, b, c)] =
					pd_admissible(pd, l, c, b)
						? pd_stage_time(pd, l, c, b, r, 1, &rep, &nic)
						: INFINITY;
				pd->lastrep[at(pd, r, b, c)] = rep;
				pd->lastnic[at(pd, r, b, c)] = nic;
			}
	for (int j = 1; j <= M; j++) {
		if (now_s() > pd->deadline)
			return ap_err(AP_EINPUT, "pipedream", 0, "the search did not finish "
				      "within its budget of %g s (%d units, %d components at "
				      "level %d; max-units bounds the first)", pd->input->budget_s,
				      n, M, l);
		for (int a = 0; a < amax; a++)
			for (int b = a + 1; b <= n; b++) {
				size_t cell = at(pd, j, a, b);

				if (pd->fewer && j > 1 && L->t[at(pd, j - 1, a, b)] < L->t[cell]) {
					copy_cell(L, cell, at(pd, j - 1, a, b));
					if (l > 0 && pd->nic_k)
						pd_nic_one(pd, j, b, 0, j - 1, 0);
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

/* The n split of a plan of one stage on ndev devices, data parallelism:
 * each micro-batch split along n over the devices where they divide the
 * batch (the same work as PipeDream's, every worker its own minibatch and
 * the gradients all-reduced once a step); otherwise every device is a
 * round-robin replica. */
static int split_over(const struct pd *pd, int ndev)
{
	return pd->input->g->batch % ndev == 0 ? ndev : 1;
}

/* The n split of the plan's stages: none but in a plan of one stage. */
static int nsplit(const struct pd *pd)
{
	return pd->nst == 1 ? split_over(pd, pd->st[0].ndev) : 1;
}

/* Fills out with the stages and m micro-batches.  A stage of several
 * devices is PipeDream's replicated stage: one round-robin replica per
 * device, each taking whole micro-batches in turn (but see nsplit()). */
static int fill_plan(const struct pd *pd, enum sched_kind sched, int m, struct plan *out)
{
	const struct graph *g = pd->input->g;
	int rc = plan_alloc(out, g, pd->nst);

	plan_schedule(out, sched, m);
	if (!rc)
		rc = plan_chain(out);
	for (int s = 0; s < pd->nst && !rc; s++) {
		const struct pd_stage *st = &pd->st[s];
		int split = nsplit(pd), deg[NDIMS] = { split, 1, 1, 1, 1 };

		rc = plan_stage(out, s, st->devs, st->ndev, st->ndev / split);
		for (int k = pd->first[st->a]; k < pd->first[st->b] && !rc; k++)
			rc = plan_place(out, pd->order[k], s, deg, st->devs);
	}
	return rc;
}

/* Whether count x goes before y: a count that l divides first (l = 1:
 * any), then the nearer to the target, then the larger. */
static int before(int x, int y, int target, int64_t l)
{
	int ex = x % l == 0, ey = y % l == 0, dx = abs(x - target), dy = abs(y - target);

	if (ex != ey)
		return ex;
	return dx < dy || (dx == dy && x > y);
}

/* The divisors of q (at most cap of them) in the order before() gives. */
static int divisors(int64_t q, int target, int64_t l, int *mb, int cap)
{
	int n = 0;

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

/* The micro-batch counts of a flushed plan (PipeDream-Flush, or data
 * parallelism), divisors of the batch, in the order they are tried: a
 * count every stage's replicas divide first (the step is then balanced),
 * then the nearest to the target: the weak-scaling instance's minibatches
 * (the per-device batch, as PipeDream's minibatch is what it profiled),
 * or else NOAM. */
static int microbatch_choices(const struct pd *pd, int noam, int *mb, int cap)
{
	int64_t q = pd->input->g->batch / nsplit(pd), l = 1, per = pd->input->per_device_batch;
	int target = per > 0 && q % per == 0 && pd->nst > 1 ? (int)(q / per) : noam;

	if (nsplit(pd) == 1)
		for (int s = 0; s < pd->nst && l <= q; s++)
			l = lcm64(l, pd->st[s].ndev);
	return divisors(q, target, l, mb, cap);
}

/* Data parallelism on every device with m micro-batches, as fill_plan()
 * emits it, priced (pd_dp_costs(), pd_flushed_dp()): m = 0, the count
 * microbatch_choices() tries first, which the DP prices. */
static int dp_shape(struct pd *pd, int m)
{
	int nd = cluster_ndevices(pd->input->c), split = split_over(pd, nd), first[256];
	struct pd_stage all = { .ndev = nd };
	struct pd one = *pd;

	if (m == 0) {
		one.nst = 1;
		one.st = &all;
		microbatch_choices(&one, 1, first, 256);
		m = first[0];
	}
	return pd_dp_costs(pd, m * split, split > 1 ? m : (m + nd - 1) / nd);
}

/* Fills out with the plan's micro-batches and says whether its simulated
 * peak memory fits (*fits; always, under memory=off, when s is NULL),
 * the last simulation in *r.  A pipeline under an asynchronous schedule
 * runs the DP's minibatches, `units` micro-batches, which its terms are
 * of (a stage's replicas all-reduce once a round of r of them); a flushed
 * plan takes the first of microbatch_choices() that fits. */
static int choose_microbatches(struct pd *pd, enum sched_kind sched, struct sim *s,
			       struct plan *out, int *tries, int *fits, struct sim_result *r)
{
	int W = 0, noam, mb[256], n = 1, rc = AP_OK;

	for (int k = 0; k < pd->nst; k++)
		W += pd->st[k].ndev;
	noam = (W + pd->st[0].ndev - 1) / pd->st[0].ndev;
	mb[0] = pd->units;
	if (sched == SCHED_1F1B)
		n = microbatch_choices(pd, noam, mb, 256);
	*fits = 0;
	for (int k = 0; k < n && !rc && !*fits; k++) {
		rc = fill_plan(pd, sched, mb[k], out);
		++*tries;
		if (!rc && s)
			rc = sim_run(s, out, NULL, r);
		*fits = !rc && (!s || sim_fits(r));
	}
	return rc ? rc : plan_set_stat(out, "noam", noam);
}

/* --- the planner ---------------------------------------------------------- */

static void levels(struct pd *pd)
{
	const struct cluster *c = pd->input->c;

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
	free(pd->dpt);
	free(pd->dpb);
	free(pd->ow);
	free(pd->first);
	free(pd->ct);
	free(pd->cw);
	free(pd->ca);
	free(pd->cross);
	free(pd->cn);
	for (int q = 0; q < 4; q++)
		free(pd->qin[q]);
	free(pd->qofs);
	free(pd->nic_k);
	free(pd->nic_a);
	free(pd->nic_r);
	free(pd->nic_ld[0]);
	free(pd->nic_ld[1]);
	free(pd->last);
	free(pd->lastrep);
	free(pd->lastnic);
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

/* The DP with pd->units minibatches in the batch: the units, then every
 * level; *est the best time of the batch, infinite when no pipeline
 * meets the constraints.  pd_release() frees what it allocates. */
static int solve(struct pd *pd, double *est)
{
	int rc, top;

	levels(pd);
	pd->order = malloc((size_t)pd->nops * sizeof *pd->order);
	pd->ow = malloc((size_t)pd->nops * sizeof *pd->ow);
	pd->dpt = malloc((size_t)pd->nops * sizeof *pd->dpt);
	pd->dpb = malloc((size_t)pd->nops * sizeof *pd->dpb);
	pd->devs = malloc((size_t)cluster_ndevices(pd->input->c) * sizeof *pd->devs);
	if (!pd->order || !pd->ow || !pd->dpt || !pd->dpb || !pd->devs)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	rc = pd_build_units(pd);
	if (!rc)
		rc = dp_shape(pd, 0);
	for (int l = 0; l < pd->nlv && !rc; l++) {
		size_t size = at(pd, pd->lv[l].m + 1, 0, 0);

		if (l > 0 && pd->placed && pd->ratio > 0)
			rc = pd_node_inputs(pd);
		if (rc)
			break;
		free(pd->last);
		free(pd->lastrep);
		free(pd->lastnic);
		pd->last = malloc(size * sizeof *pd->last);
		pd->lastrep = malloc(size * sizeof *pd->lastrep);
		pd->lastnic = malloc(size * sizeof *pd->lastnic);
		rc = pd->last && pd->lastrep && pd->lastnic
			     ? solve_level(pd, l, l + 1 < pd->nlv ? pd->n : 1)
			     : ap_err(AP_EFAIL, NULL, 0, "out of memory");
	}
	top = pd->nlv - 1;
	if (!rc)
		*est = pd->units * pd->lv[top].t[at(pd, pd->lv[top].m, 0, pd->n)];
	return rc;
}

/* The minibatches in the batch that the DP is solved for, in the order
 * tried: each is an asynchronous pipeline's micro-batch count
 * (choose_microbatches()), so that the DP's terms are those of the plan
 * it emits at this batch.  Under weak scaling the per-device batch is
 * PipeDream's minibatch (what it profiled), else the batch itself; then
 * ever smaller minibatches, which only hold less memory: a plan's compute
 * and transfers take as long at any count, but each replicated stage
 * all-reduces and steps once a round of its replicas, so the fewest
 * micro-batches take the least time.  PipeDream-Flush chooses its
 * micro-batches after the DP (microbatch_choices()): one count. */
static int unit_counts(const struct pd *pd, int *mb, int cap)
{
	const struct planner_input *in = pd->input;
	int64_t per = in->per_device_batch;
	int target = per > 0 && in->g->batch % per == 0 ? (int)(in->g->batch / per) : 1, n = 0;
	int all = divisors(in->g->batch, target, 1, mb, cap);

	if (pd->flush)
		all = 1;
	/* nearest first: those above the target come in ascending order */
	for (int k = 0; k < all; k++)
		if (mb[k] >= target)
			mb[n++] = mb[k];
	return n;
}

/* PipeDream-Flush, and data parallelism (one stage), which PipeDream
 * runs synchronously, flush every step; else the asynchronous schedule. */
static enum sched_kind schedule(const struct pd *pd)
{
	if (pd->flush || pd->nst == 1)
		return SCHED_1F1B;
	return pd->predict ? SCHED_ASYNC_PREDICT : SCHED_1F1B_ASYNC;
}

static int no_pipeline(const struct pd *pd)
{
	const struct planner_input *in = pd->input;

	return ap_err(AP_EINPUT, "pipedream", 0, "no pipeline of '%s' on %d devices "
		      "meets the constraints (%d units%s%s%s)%s", in->g->name,
		      cluster_ndevices(in->c), pd->n,
		      pd->tied ? ", tied weights holding what lies between them in one" : "",
		      pd->straight ? ", one device per stage" : "",
		      pd->memory ? ", each stage fitting a device's memory" : "",
		      pd->fewer ? "" : "; 'fewer' lets it use fewer devices");
}

/* Solves the DP for each count of unit_counts() until its plan fits.
 * Where no pipeline meets the constraints at a count, larger ones may
 * (their memory constraint holds less activation per minibatch); where
 * the largest count has none either, none has. */
static int search(struct pd *pd, const struct pd *opt, struct sim *s, struct plan *out,
		  int *tries, double *est)
{
	int counts[256], n = unit_counts(opt, counts, 256), fits = 0, base = 0;
	int probed = 0, nst = 0, rc = AP_OK;
	struct sim_result r = { 0 };

	for (int k = 0; k < n && !rc && !fits; k++) {
		pd_release(pd);
		*pd = *opt;
		pd->units = counts[k];
		rc = solve(pd, est);
		if (!rc && !isfinite(*est)) {
			if (!probed && k + 1 < n) {
				probed = 1;
				pd_release(pd);
				*pd = *opt;
				pd->units = counts[n - 1];
				rc = solve(pd, est);
				if (!rc && !isfinite(*est))
					break;
			}
			continue;
		}
		if (!rc)
			rc = emit(pd, pd->nlv - 1, 0, pd->n, pd->lv[pd->nlv - 1].m, &base, 1);
		if (!rc)
			rc = choose_microbatches(pd, schedule(pd), s, out, tries, &fits, &r);
		nst = pd->nst;
		/* a flushed plan has tried every micro-batch count */
		if (!rc && schedule(pd) == SCHED_1F1B)
			break;
	}
	if (rc || fits)
		return rc;
	if (!nst)
		return no_pipeline(pd);
	return ap_err(AP_EINPUT, "pipedream", 0, "the plan of '%s' (%d stages) needs %lld bytes "
		      "on device %d, more than its %lld, at every micro-batch count it admits",
		      opt->input->g->name, nst, (long long)r.peak_mem_bytes, r.peak_dev,
		      (long long)r.mem_bytes);
}

static int plan_pipedream(const struct planner_input *input, struct plan *out)
{
	struct pd opt = { .input = input, .nops = input->g->nops }, pd;
	const char *sched = planner_choice(input, "schedule");
	int top, rc, tries = 0;
	struct sim s;
	double est = INFINITY;

	opt.predict = !strcmp(sched, "async-predict");
	opt.straight = planner_flag(input, "straight") || opt.predict;
	opt.fewer = planner_flag(input, "fewer");
	opt.paper = !strcmp(planner_choice(input, "cost"), "paper");
	opt.placed = !strcmp(planner_choice(input, "cost"), "placed");
	opt.memory = !strcmp(planner_choice(input, "memory"), "on");
	opt.max_units = planner_int(input, "max-units");
	opt.ratio = planner_real(input, "compression");
	opt.flush = !strcmp(sched, "1f1b-flush");
	opt.deadline = now_s() + input->budget_s;
	opt.mem = (double)(input->c->mem_bytes > 0 ? input->c->mem_bytes : input->p->dev.mem_bytes);
	if (opt.ratio < 0)
		return ap_err(AP_EINPUT, "pipedream", 0, "compression must be 0 (activation "
			      "transfers not charged) or a positive ratio");
	if (opt.max_units < 2)
		return ap_err(AP_EINPUT, "pipedream", 0, "max-units must be at least 2");
	if (opt.nops < 1)
		return ap_err(AP_EINPUT, "pipedream", 0, "model '%s' has no operators",
			      input->g->name);
	pd = opt;
	rc = opt.memory ? sim_init(&s, input->g, input->p, input->c) : AP_OK;
	if (rc)
		return rc;
	rc = search(&pd, &opt, opt.memory ? &s : NULL, out, &tries, &est);
	if (opt.memory)
		sim_release(&s);
	if (rc)
		goto out;
	top = pd.nlv - 1;
	/* data parallelism: priced again at the micro-batches chosen, whose
	 * last bounds the all-reduces' overlap */
	if (pd_whole(&pd, top, 0, pd.n, pd.lv[top].m) && pd.nst == 1 &&
	    pd.st[0].ndev == cluster_ndevices(input->c)) {
		rc = dp_shape(&pd, out->microbatches);
		if (rc)
			goto out;
		est = pd.units * pd_flushed_dp(&pd);
	}
	out->est_ms = 1e3 * est;
	/* the same cost model's data parallelism (one stage on every
	 * device), the baseline the paper's speedups are over */
	rc = plan_set_stat(out, "dp_est_ms", 1e3 * pd.units * pd_dp_time(&pd));
	if (!rc)
		rc = plan_set_stat(out, "stages", pd.nst);
	if (!rc)
		rc = plan_set_stat(out, "replicas_input", pd.st[0].ndev);
	if (!rc)
		rc = plan_set_stat(out, "units", pd.n);
	if (!rc)
		rc = plan_set_stat(out, "minibatches", pd.units);
	if (!rc)
		rc = plan_set_stat(out, "microbatch_tries", tries);
out:
	pd_release(&pd);
	return rc;
}

const struct planner planner_pipedream = {
	.name = "pipedream",
	.description = "hierarchical DP over layer ranges, workers and stage replication; 1F1B",
	.follows = "Narayanan et al., SOSP 2019",
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
	.estimate = PLANNER_EST_MODEL,
};
