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
 * minibatch; units times the objective is the time of the batch, which
 * compares with the simulator's iteration time and is recorded as
 * planner_est_ms.  Replicas synchronise every round under PipeDream's
 * asynchronous 1F1B (the sync terms of pipedream_cost.c, per minibatch),
 * once a step under PipeDream-Flush (the terms times r / units,
 * sync_share() there).
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
				pd_nic_loads(pd, j - r, arg, b, r,
					     pd->lastrep[at(pd, r, b, arg)] < 0, j);
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
					double t = pd_stage_time(pd, l, a, b, j, 0, &rep);

					set_cell(L, at(pd, j, a, b), t, -1, 0, rep);
					if (l > 0 && pd->nic_k)
						pd_nic_one(pd, j, b, j, 0);
				}
	/* the last stage of a split, [c, b) on r replicas, by r, b, c */
	for (int r = 1; r < M; r++)
		for (int b = 1; b <= n; b++)
			for (int c = 0; c < b; c++) {
				int rep = r;

				pd->last[at(pd, r, b, c)] =
					pd_admissible(pd, l, c, b)
						? pd_stage_time(pd, l, c, b, r, 1, &rep)
						: INFINITY;
				pd->lastrep[at(pd, r, b, c)] = rep;
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
						pd_nic_one(pd, j, b, 0, j - 1);
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
	return pd->nst == 1 && pd->input->g->batch % pd->st[0].ndev == 0 ? pd->st[0].ndev : 1;
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
	int64_t q = pd->input->g->batch / nsplit(pd), l = 1, per = pd->input->per_device_batch;
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
		rc = sim_init(&s, pd->input->g, pd->input->p, pd->input->c);
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
				    "every micro-batch count it admits", pd->input->g->name,
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

static int plan_pipedream(const struct planner_input *input, struct plan *out)
{
	struct pd pd = { .input = input, .nops = input->g->nops };
	const char *sched = planner_choice(input, "schedule");
	int top, base = 0, rc;
	double est;

	pd.predict = !strcmp(sched, "async-predict");
	pd.straight = planner_flag(input, "straight") || pd.predict;
	pd.fewer = planner_flag(input, "fewer");
	pd.paper = !strcmp(planner_choice(input, "cost"), "paper");
	pd.placed = !strcmp(planner_choice(input, "cost"), "placed");
	pd.memory = !strcmp(planner_choice(input, "memory"), "on");
	pd.max_units = planner_int(input, "max-units");
	pd.ratio = planner_real(input, "compression");
	pd.units = input->per_device_batch > 0 && input->g->batch % input->per_device_batch == 0
			   ? (int)(input->g->batch / input->per_device_batch) : 1;
	pd.flush = !strcmp(sched, "1f1b-flush");
	pd.deadline = now_s() + input->budget_s;
	pd.mem = (double)(input->c->mem_bytes > 0 ? input->c->mem_bytes : input->p->dev.mem_bytes);
	if (pd.ratio < 0)
		return ap_err(AP_EINPUT, "pipedream", 0, "compression must be 0 (activation "
			      "transfers not charged) or a positive ratio");
	if (pd.max_units < 2)
		return ap_err(AP_EINPUT, "pipedream", 0, "max-units must be at least 2");
	if (pd.nops < 1)
		return ap_err(AP_EINPUT, "pipedream", 0, "model '%s' has no operators",
			      input->g->name);
	levels(&pd);
	pd.order = malloc((size_t)pd.nops * sizeof *pd.order);
	pd.obwd = malloc((size_t)pd.nops * sizeof *pd.obwd);
	pd.ow = malloc((size_t)pd.nops * sizeof *pd.ow);
	pd.devs = malloc((size_t)cluster_ndevices(input->c) * sizeof *pd.devs);
	if (!pd.order || !pd.obwd || !pd.ow || !pd.devs) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	rc = pd_build_units(&pd);
	for (int l = 0; l < pd.nlv && !rc; l++) {
		if (l > 0 && pd.placed && pd.ratio > 0)
			rc = pd_node_inputs(&pd);
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
			    "meets the constraints (%d units%s%s%s)%s", input->g->name,
			    cluster_ndevices(input->c), pd.n,
			    pd.tied ? ", tied weights holding what lies between them in one" : "",
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
	if (!rc && pd_whole(&pd, top, 0, pd.n, pd.lv[top].m) && pd.nst == 1 &&
	    pd.st[0].ndev == cluster_ndevices(input->c))
		est = pd.units * pd_flushed_dp(&pd, (double)pd.units /
						    ((double)out->microbatches * nsplit(&pd)));
	out->est_ms = 1e3 * est;
	/* the same cost model's data parallelism (one stage on every
	 * device), the baseline the paper's speedups are over */
	if (!rc)
		rc = plan_set_stat(out, "dp_est_ms", 1e3 * pd.units * pd_dp_time(&pd));
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
