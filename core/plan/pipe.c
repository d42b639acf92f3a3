/*
 * The pipeline-of-groups shape of a plan (pipe.h).
 */
#include "plan/pipe.h"

#include <stdio.h>
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
	for (int a = 0; a < G; a++)
		for (int b = a + 1; b < G; b++)
			for (int k = 0; k < p->stages[a].ndev; k++)
				for (int l = 0; l < p->stages[b].ndev; l++)
					if (p->stages[a].devices[k] == p->stages[b].devices[l]) {
						snprintf(why, len, "stages %d and %d share device %d",
							 a, b, p->stages[a].devices[k]);
						return -1;
					}
	return 0;
}
