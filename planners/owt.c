/*
 * owt: Krizhevsky's "one weird trick" (arXiv 1404.5997, section 3).
 * Convolutional layers hold few parameters and much compute, so they run
 * data parallel; fully-connected layers hold most parameters and little
 * compute, so they run model parallel: every device computes its slice of
 * each FC layer's output features for the whole batch, whose activations
 * are gathered from all workers first.  This is the variant that matches
 * synchronous SGD exactly (the paper's scheme of sending 1/K of the batch at
 * a time overlaps the same traffic with compute).
 *
 * Here: every linear layer, and every element-wise op fed by one, is split
 * along its features (c) over the largest divisor of its width not above
 * the device count; everything else is data parallel as in `dp`.  A layer
 * that ties its weight to another's (GPT-2's output layer to the token
 * embedding, `tie=` in models/FORMAT.md) holds the same table, which
 * must sit on the same devices (plan_validate()): it takes its partner's
 * placement, degrees and devices, so it runs data parallel as the
 * embedding does.
 */
#include "planner.h"
#include "util/intmath.h"
#include "model/ops.h"
#include "plan/plan_build.h"

static int plan_owt(const struct planner_input *input, struct plan *out)
{
	const struct graph *g = input->g;
	int ndev = cluster_ndevices(input->c);
	int ndp = (int)largest_divisor(g->batch, ndev);
	int rc = plan_one_stage(out, ndev, SCHED_GPIPE, 1);

	for (int i = 0; i < g->nops && !rc; i++) {
		const struct op *op = &g->ops[i];
		int deg[NDIMS] = { ndp, 1, 1, 1, 1 };

		if (op->a.tie >= 0 && op->a.tie < i) {
			/* the partner, placed already (a tie names an earlier
			 * op), keeps the weight where it is */
			const struct plan_op *t = &out->ops[op->a.tie];

			rc = plan_place(out, i, t->stage, t->degree, t->devices);
			continue;
		}
		if (op->kind == OP_LINEAR && (op->split_mask & (1u << DIM_C))) {
			deg[DIM_N] = 1;
			deg[DIM_C] = (int)largest_divisor(shape_size(&op->out, DIM_C), ndev);
		} else if (op_kind_elementwise(op->kind) && op->nin > 0) {
			const struct plan_op *src = &out->ops[op->in[0]];

			/* keep the producer's feature split: no data moves */
			if (src->degree[DIM_C] > 1 && (op->split_mask & (1u << DIM_C))) {
				deg[DIM_N] = 1;
				deg[DIM_C] = src->degree[DIM_C];
			}
		}
		rc = plan_place_range(out, i, 0, deg, 0);
	}
	return rc;
}

const struct planner planner_owt = {
	.name = "owt",
	.description = "data-parallel convolutions, model-parallel fully-connected layers",
	.follows = "Krizhevsky, arXiv 1404.5997",
	.plan = plan_owt,
	.estimate = PLANNER_EST_NONE,
};
