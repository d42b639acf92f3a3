/*
 * The pipeline-of-groups shape of a plan (pipe.h).
 */
#include "plan/pipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int same_list(const int *a, int na, const int *b, int nb)
{
	return na == nb && !memcmp(a, b, (size_t)na * sizeof *a);
}

int plan_pipe_shape(const struct plan *p, struct plan_pipe *out, char *why, size_t len)
{
	int S = p->nstages, G = S;

	memset(out, 0, sizeof *out);
	for (int s = 0; s < S; s++) {
		const struct plan_stage *ps = &p->stages[s];

		if (ps->id != s || ps->nnext != (s + 1 < S) || (s + 1 < S && ps->next[0] != s + 1)) {
			snprintf(why, len, "its stages are not a chain 0 -> 1 -> ... in order");
			return -1;
		}
		if (plan_stage_replicas(p, s) > 1 || plan_stage_microbatches(p, s) != p->microbatches) {
			snprintf(why, len, "stage %d has replicas or its own micro-batches", s);
			return -1;
		}
	}
	/* the groups: the first stage whose devices repeat stage 0's */
	for (int s = 1; s < S; s++)
		if (same_list(p->stages[s].devices, p->stages[s].ndev, p->stages[0].devices,
			      p->stages[0].ndev)) {
			G = s;
			break;
		}
	if (S % G) {
		snprintf(why, len, "its %d stages are not a whole number of rounds over %d device groups",
			 S, G);
		return -1;
	}
	for (int s = G; s < S; s++)
		if (!same_list(p->stages[s].devices, p->stages[s].ndev, p->stages[s % G].devices,
			       p->stages[s % G].ndev)) {
			snprintf(why, len, "stage %d does not run on the devices of stage %d", s, s % G);
			return -1;
		}
	out->groups = G;
	out->chunks = S / G;
	out->dp = p->ops[0].degree[DIM_N];
	out->tp = plan_op_tensor(p, 0);
	for (int i = 0; i < p->nops; i++) {
		const struct plan_op *po = &p->ops[i];
		const struct plan_stage *ps = &p->stages[po->stage];
		int other = 1;

		for (int d = 0; d < NDIMS; d++)
			if (d != DIM_N)
				other *= po->degree[d];
		if (po->degree[DIM_N] != out->dp || plan_op_tensor(p, i) != out->tp || other != 1) {
			snprintf(why, len,
				 "operator %d does not split n %d ways and tensor %d ways alone as operator 0 does",
				 i, out->dp, out->tp);
			return -1;
		}
		if (!same_list(po->devices, po->ndev, ps->devices, ps->ndev)) {
			snprintf(why, len, "operator %d does not run on exactly its stage's devices", i);
			return -1;
		}
	}
	/* disjoint groups: each device in one group at most */
	int most = 0;
	unsigned char *seen;

	for (int q = 0; q < G; q++)
		for (int k = 0; k < p->stages[q].ndev; k++)
			most = p->stages[q].devices[k] > most ? p->stages[q].devices[k] : most;
	seen = calloc((size_t)most + 1, 1);
	if (!seen) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	for (int q = 0; q < G; q++)
		for (int k = 0; k < p->stages[q].ndev; k++) {
			int d = p->stages[q].devices[k];

			if (d >= 0 && seen[d]) {
				snprintf(why, len, "device %d is in two groups (stage %d's and an earlier one)",
					 d, q);
				free(seen);
				return -1;
			}
			if (d >= 0)
				seen[d] = 1;
		}
	free(seen);
	return 0;
}
