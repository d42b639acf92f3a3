/*
 * The order of a schedule, shared by the simulator (sim_layout.c) and the
 * runtime, so that what is predicted is what is run.
 */
#include "plan/sched.h"

#include <stdlib.h>
#include <string.h>

#include "util/err.h"

/*
 * Every stage's forward and backward of every micro-batch is an item with
 * a key; items run in key order, and that order is each resource's order
 * of work (sim_sched.c).  The keys are the start slots of the schedule
 * when every stage's forward and backward take one slot, with d the
 * stage's depth and K the number of depths:
 *   gpipe  F(j, d) = j + d                 B(j, d) = m + K + j + K - 1 - d
 *   1f1b   F(j, d) = d + j  (j <= K-1-d)   B(j, d) = 2K - 1 - d + 2j
 *                  = d + 2j (j > K-1-d)
 * For 1F1B this is PipeDream-Flush (Narayanan et al., ICML 2021, fig. 3):
 * K - 1 - d warm-up forwards, one forward and one backward alternating,
 * then the remaining backwards.  Both keys rise with d in the forward and
 * fall with d in the backward, and F(j, d) < B(j, d'), so every task comes
 * after all it depends on: the order is a topological one, which is what
 * lets the scheduler compute every start time in one pass.
 *
 * async-predict runs a stage's forward of one micro-batch beside the
 * backward of an earlier one: a slot holds one of each, so
 *   async-predict   F(j, d) = d + j        B(j, d) = 2K - 1 - d + j
 * (the last stage runs F(j + 1) beside B(j), the "forward of batch
 * i+1 and backward of batch i"; a stage of depth d has 2(K - d) micro-
 * batches in flight).  At equal keys the forward comes first: it started
 * with the weights from before the concurrent backward's update.  The
 * 1f1b-async order is 1F1B's; only the weight handling differs.
 */
int64_t sched_key(enum sched_kind k, int64_t K, int64_t m, int64_t d, int64_t j,
		  int bwd)
{
	if (k == SCHED_GPIPE)
		return bwd ? m + K + j + K - 1 - d : j + d;
	if (k == SCHED_ASYNC_PREDICT)
		return bwd ? 2 * K - 1 - d + j : d + j;
	if (bwd)
		return 2 * K - 1 - d + 2 * j;
	return j <= K - 1 - d ? d + j : d + 2 * j;
}


static int cmp_item(const void *pa, const void *pb)
{
	const struct sched_item *a = pa, *b = pb;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (a->bwd != b->bwd)
		return a->bwd - b->bwd;
	if (a->stage != b->stage)
		return a->stage - b->stage;
	return a->mb - b->mb;
}

void sched_order(enum sched_kind k, int nstages, const int *depth, int m,
		 struct sched_item *items)
{
	int n = 0, K = 1;

	for (int st = 0; st < nstages; st++)
		K = depth[st] + 1 > K ? depth[st] + 1 : K;
	for (int st = 0; st < nstages; st++)
		for (int j = 0; j < m; j++)
			for (int bwd = 0; bwd < 2; bwd++) {
				struct sched_item *it = &items[n++];

				it->stage = st;
				it->mb = j;
				it->bwd = bwd;
				it->key = sched_key(k, K, m, depth[st], j, bwd);
			}
	sched_sort(items, n);
}

void sched_sort(struct sched_item *items, int n)
{
	qsort(items, (size_t)n, sizeof *items, cmp_item);
}

/*
 * Stages of different micro-batch counts (GraphPipe, Jeon et al., ASPLOS
 * 2025, section 6): stage s runs m[s] micro-batches of batch / m[s]
 * samples, and counts of stages joined by `next` divide one another, so a
 * micro-batch of the coarser side is a whole number of the finer side's.
 * A forward of stage s can run once its predecessors have run the
 * forwards of every micro-batch of theirs that overlaps its samples, and
 * a backward once its successors have run those backwards.  Each stage
 * runs its items as GPipe or 1F1B would (1F1B: w[s] forwards of warm-up,
 * then one backward, one forward), and the order takes, of the stages
 * whose next item can run, the item of the smallest key, as sched_key()
 * gives it for the finer micro-batch that ends the item's samples among M
 * (the most micro-batches of any stage); at equal keys as cmp_item.  A
 * stage's warm-up is what its successors need before their first
 * backward can come back, plus one: for a successor q of warm-up w[q]
 * with r of its micro-batches to one of s, ceil((w[q] + r - 1) / r), or
 * with one of its micro-batches to r of s, r w[q]; a sink's is 1 and none
 * exceeds m[s].  With one count everywhere this is sched_order() item for
 * item: the warm-up is 1F1B's h + 1, and the item of the smallest key can
 * always run.  Should every stage's next item wait, the stage of the
 * smallest key runs a further forward instead (a longer warm-up), so the
 * order always completes.  The key of an item is its place in the order.
 */
static int64_t span_end(int64_t j, int mine, int theirs)
{
	/* the micro-batches of a stage of `theirs` that overlap micro-batch
	 * j of one of `mine`: those before ceil((j + 1) theirs / mine) */
	return ((j + 1) * theirs + mine - 1) / mine;
}

/* Whether item j of stage s can run after what has run of its
 * neighbours adj (predecessors and their forwards, or successors and
 * their backwards: done[]). */
static int can_run(int s, int j, const int *m, const int *ofs, const int *adj, const int *done)
{
	for (int e = ofs[s]; e < ofs[s + 1]; e++)
		if (done[adj[e]] < span_end(j, m[s], m[adj[e]]))
			return 0;
	return 1;
}

int sched_order_mixed(enum sched_kind k, int nstages, const int *depth, const int *m,
		      const int *next_ofs, const int *next, struct sched_item *items)
{
	int *nf = calloc((size_t)nstages, sizeof *nf), *nb = calloc((size_t)nstages, sizeof *nb);
	int *warm = calloc((size_t)nstages, sizeof *warm);
	int *prev_ofs = calloc((size_t)nstages + 1, sizeof *prev_ofs);
	int *prev = malloc(((size_t)next_ofs[nstages] + 1) * sizeof *prev);
	int n = 0, total = 0, K = 1, M = 1;

	if (!nf || !nb || !warm || !prev_ofs || !prev)
		goto out;
	for (int s = 0; s < nstages; s++) {
		total += 2 * m[s];
		K = depth[s] + 1 > K ? depth[s] + 1 : K;
		M = m[s] > M ? m[s] : M;
		for (int e = next_ofs[s]; e < next_ofs[s + 1]; e++)
			prev_ofs[next[e] + 1]++;
	}
	for (int s = 0; s < nstages; s++)
		prev_ofs[s + 1] += prev_ofs[s];
	for (int s = 0; s < nstages; s++)
		for (int e = next_ofs[s]; e < next_ofs[s + 1]; e++)
			prev[prev_ofs[next[e]] + nf[next[e]]++] = s;
	memset(nf, 0, (size_t)nstages * sizeof *nf);
	/* warm-ups, a stage after all its successors (n passes at most) */
	for (int pass = 0; pass < nstages; pass++)
		for (int s = 0; s < nstages; s++) {
			int w = 1, ok = !warm[s];

			for (int e = next_ofs[s]; e < next_ofs[s + 1] && ok; e++) {
				int q = next[e], r, need;

				ok = warm[q] > 0;
				r = m[q] >= m[s] ? m[q] / m[s] : m[s] / m[q];
				need = m[q] >= m[s] ? (warm[q] + 2 * (r - 1)) / r : warm[q] * r;
				w = need + 1 > w ? need + 1 : w;
			}
			if (ok)
				warm[s] = k == SCHED_GPIPE || w > m[s] ? m[s] : w;
		}
	for (; n < total; n++) {
		struct sched_item best = { -1, -1, 0, 0 };

		/* the stages' next items; failing that, a further forward */
		for (int forced = 0; forced < 2 && best.stage < 0; forced++)
			for (int s = 0; s < nstages; s++) {
				struct sched_item it = { 0, s, nf[s], 0 };

				if (!forced && nb[s] < nf[s] &&
				    (nf[s] == m[s] || nf[s] - nb[s] >= warm[s])) {
					it.mb = nb[s];
					it.bwd = 1;
				}
				if (it.mb >= m[s] ||
				    !(it.bwd ? can_run(s, it.mb, m, next_ofs, next, nb)
					     : can_run(s, it.mb, m, prev_ofs, prev, nf)))
					continue;
				it.key = sched_key(k, K, M, depth[s], span_end(it.mb, m[s], M) - 1,
						   it.bwd);
				if (best.stage < 0 || it.key < best.key ||
				    (it.key == best.key && it.bwd < best.bwd))
					best = it;
			}
		if (best.stage < 0)
			break;
		(best.bwd ? nb : nf)[best.stage]++;
		best.key = n;
		items[n] = best;
	}
out:
	free(prev);
	free(prev_ofs);
	free(warm);
	free(nb);
	free(nf);
	return n < total ? -1 : 0;
}

/*
 * Megatron-LM's interleaved 1F1B (its schedules.py, as the paper's
 * figure 4 draws it): group r's k-th forward runs chunk (k / G) mod v of
 * micro-batch (k / (G v)) G + k mod G, and its k-th backward the chunk
 * v - 1 - (k / G) mod v of the same; (G - r - 1) 2 + (v - 1) G warm-up
 * forwards, then one forward and one backward in turn, then the rest of
 * the backwards.
 */
static int interleaved(int G, int v, int m, int r, struct sched_item *it)
{
	int total = m * v, warm = (G - r - 1) * 2 + (v - 1) * G, n = 0, f = 0, b = 0;

	warm = warm < total ? warm : total;
	while (f < total || b < total) {
		int bwd = f >= warm + b + 1 ? 1 : 0, k;

		if (f >= total)
			bwd = 1;
		k = bwd ? b++ : f++;
		it[n].stage = ((bwd ? v - 1 - (k / G) % v : (k / G) % v)) * G + r;
		it[n].mb = (k / (G * v)) * G + k % G;
		it[n].bwd = bwd;
		it[n].key = n;
		n++;
	}
	return n;
}

/*
 * ZB-H1 (Qi et al., ICLR 2024, section 3.1, figure 3): the backward split
 * into B, the input gradient the previous stage waits for, and W, the
 * weight gradient nothing waits for.  Group r of G, counting x from 0:
 * p - 1 - r forwards alone (warm-up, as 1F1B); then r of (F x, B x - (G
 * - 1 - r)); then, while forwards remain, (F x, B x - (G - 1 - r),
 * W x - (G - 1)), each B sent on before its W; then G - 1 - r of (B, W)
 * and the r W passes left.  Every group's W lags its F by G - 1 micro-
 * batches, so the first group holds G micro-batches' activations, as
 * under 1F1B, while the W passes of the later groups fill the slots 1F1B
 * leaves idle: on unit times F = B = W its step takes 3m + G - 1 slots
 * against 1F1B's 3(m + G - 1).
 */
static int zb_h1(int G, int m, int r, struct sched_item *items)
{
	int n = 0;

	for (int x = 0; x < m + G - 1; x++) {
		int f = x, b = x - (G - 1 - r), w = x - (G - 1);
		const int mb[3] = { f, b, w };

		for (int pass = SCHED_F; pass <= SCHED_W; pass++)
			if (mb[pass] >= 0 && mb[pass] < m) {
				items[n].stage = r;
				items[n].mb = mb[pass];
				items[n].bwd = pass;
				items[n].key = n;
				n++;
			}
	}
	return n;
}

int sched_group_order(enum sched_kind k, int G, int v, int m, int r, struct sched_item *items)
{
	int n = 0;

	if (k == SCHED_INTERLEAVED)
		return interleaved(G, v, m, r, items);
	if (k == SCHED_ZB_H1)
		return zb_h1(G, m, r, items);
	if (v == 1 && (k == SCHED_1F1B || k == SCHED_GPIPE)) {
		/* sched_key()'s order for one chunk, written out: the warm-up
		 * forwards (all of them under gpipe), one forward and one
		 * backward in turn, the remaining backwards */
		int warm = k == SCHED_GPIPE ? m : G - 1 - r < m ? G - 1 - r : m, f = 0, b = 0;

		while (f < m || b < m) {
			int bwd = f >= m || f >= warm + b + 1;
			struct sched_item *it = &items[n];

			it->stage = r;
			it->mb = bwd ? b++ : f++;
			it->bwd = bwd;
			it->key = n++;
		}
		return n;
	}
	for (int c = 0; c < v; c++)
		for (int j = 0; j < m; j++)
			for (int bwd = 0; bwd < 2; bwd++) {
				struct sched_item *it = &items[n++];

				it->stage = c * G + r;
				it->mb = j;
				it->bwd = bwd;
				it->key = sched_key(k, (int64_t)G * v, m, it->stage, j, bwd);
			}
	sched_sort(items, n);
	for (int i = 0; i < n; i++)
		items[i].key = i;
	return n;
}

int sched_async(enum sched_kind k)
{
	return k == SCHED_1F1B_ASYNC || k == SCHED_ASYNC_PREDICT;
}

/* A backward of the same stage keyed at or after F(j) runs after it (the
 * forward first at equal keys, cmp_item), so its update is one the
 * forward did not see. */
int sched_staleness(enum sched_kind k, int K, int d, int m)
{
	int worst = 0;

	if (!sched_async(k))
		return 0;
	for (int j = 1; j < m; j++) {
		int64_t f = sched_key(k, K, m, d, j, 0);
		int n = 0;

		for (int jj = 0; jj < j; jj++)
			n += sched_key(k, K, m, d, jj, 1) >= f;
		worst = n > worst ? n : worst;
	}
	return worst;
}

/* In a chain a stage's depth is its position; in a DAG of stages a stage
 * sits as late as its successors allow: depth = K - 1 - h, with K the
 * number of stages on the longest path and h the longest path from the
 * stage to a sink.  Under 1F1B a stage then keeps h + 1 micro-batches in
 * flight, the stages after it on its longest path to the sink, and starts
 * a micro-batch's backward as soon as that micro-batch can have come back:
 * GraphPipe's schedule of a DAG of stages (Jeon et al., ASPLOS 2025,
 * section 6), of which PipeDream-Flush is the chain case.  A branch
 * shorter than its siblings thus holds fewer micro-batches than it would
 * at its depth from the source.  The simulator and the runtime both order
 * by these depths, so the runtime runs the order predicted. */
int sched_stage_depths(const struct plan *p, int *depth, int *depth_max)
{
	int n = p->nstages, changed = 1, st = AP_OK;
	int *pos = malloc((n > 0 ? (size_t)n : 1) * sizeof *pos);

	if (!pos)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int k = 0; k < n; k++)
		pos[k] = -1;
	for (int k = 0; k < n && !st; k++) {
		int id = p->stages[k].id;

		if (id < 0 || id >= n || pos[id] >= 0)
			st = ap_err(AP_EINPUT, "plan", 0,
				    "stages[%d].id: expected distinct ids 0..%d, got %d", k, n - 1, id);
		else
			pos[id] = k;
		depth[k] = 0;
	}
	for (int k = 0; k < n && !st; k++)
		for (int e = 0; e < p->stages[k].nnext && !st; e++)
			if (p->stages[k].next[e] < 0 || p->stages[k].next[e] >= n)
				st = ap_err(AP_EINPUT, "plan", 0, "stages[%d].next[%d]: no stage %d",
					    k, e, p->stages[k].next[e]);
	/* the longest paths from a source: n passes settle an acyclic graph */
	for (int pass = 0; pass <= n && changed && !st; pass++) {
		changed = 0;
		for (int k = 0; k < n; k++)
			for (int e = 0; e < p->stages[k].nnext; e++) {
				int t = pos[p->stages[k].next[e]];

				if (depth[t] < depth[k] + 1) {
					depth[t] = depth[k] + 1;
					changed = 1;
				}
			}
	}
	if (!st && changed)
		st = ap_err(AP_EINPUT, "plan", 0, "stages: 'next' forms a cycle");
	*depth_max = 0;
	for (int k = 0; k < n && !st; k++)
		if (depth[k] > *depth_max)
			*depth_max = depth[k];
	/* the heights, the longest paths to a sink, as depth_max - height */
	for (int k = 0; k < n && !st; k++)
		depth[k] = *depth_max;
	for (int pass = 0, moved = 1; pass <= n && moved && !st; pass++) {
		moved = 0;
		for (int k = 0; k < n; k++)
			for (int e = 0; e < p->stages[k].nnext; e++) {
				int t = pos[p->stages[k].next[e]];

				if (depth[k] > depth[t] - 1) {
					depth[k] = depth[t] - 1;
					moved = 1;
				}
			}
	}
	free(pos);
	return st;
}
