/*
 * The order of a schedule, shared by the simulator (sim_layout.c) and the
 * runtime, so that what is predicted is what is run.
 */
#include "plan.h"

#include <stdlib.h>

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
