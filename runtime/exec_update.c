/*
 * The optimizer step (exec_update.h; docs/plan-format.md, "Training").
 * A plan that names Adam (Megatron-LM's plans do) trains with it, with
 * PyTorch's defaults b1 0.9, b2 0.999, eps 1e-8; any other with SGD with
 * momentum.  The learning rate (and SGD's momentum) are the run's
 * (exec_opts); `autopar run` takes by default (exec_default_lr()) 0.02
 * for SGD and PyTorch's 0.001 for Adam, whose first steps move every
 * weight by about the rate whatever its gradient, where SGD moves it by
 * the rate times the gradient.
 *
 * ZeRO-1 (Rajbhandari et al., SC 2020; Megatron-LM's distributed
 * optimizer): the r members of a shard's replica group, which hold the
 * same parameters and sum their gradients, each keep the optimizer state
 * of one part of them.  w and dw hold r parts of zlen floats (the last
 * padded with zeros, which stay zero); the gradient is reduce-scattered,
 * so member q gets the sum of part q; q updates that part (wpart, its
 * copy of those weights, with their state) and the all-gather gives every
 * member the whole updated weights.  Each weight meets the same
 * arithmetic as under an all-reduce and a whole update, so the training
 * is plain data parallelism's, as --check compares; what a member keeps
 * of the optimizer's state is 1 / r of it.
 */
#include "exec_update.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "exec_groups.h"
#include "exec_impl.h"
#include "exec_layout.h"

#define ADAM_B1 0.9
#define ADAM_B2 0.999
#define ADAM_EPS 1e-8f

#define SGD_LR 0.02f
#define ADAM_LR 0.001f

static int adam(const struct plan *p)
{
	return p->has_optimizer && p->optimizer == OPTIMIZER_ADAM;
}

float exec_default_lr(const struct plan *p)
{
	return adam(p) ? ADAM_LR : SGD_LR;
}

/* The floats w and dw hold: the parameters, or under ZeRO-1 whole parts. */
static int64_t held(const struct rshard *s)
{
	return s->zparts ? s->zparts * s->zlen : s->nparams;
}

/* ZeRO-1's parts of s among the members of its replica group. */
static int zero_parts(struct exec *e, struct rshard *s)
{
	int *ranks = malloc((size_t)exec_ranks(e->p) * sizeof *ranks), n;

	if (!ranks)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	n = exec_param_members(e, s->op, s->cidx, s->trank, ranks);
	if (n > 1) {
		s->zparts = n;
		for (int q = 0; q < n; q++)
			if (ranks[q] == e->t->rank)
				s->zidx = q;
		s->zlen = (s->nparams + n - 1) / n;
	}
	free(ranks);
	return AP_OK;
}

int exec_update_setup(struct exec *e, struct rshard *s, const float *init)
{
	int64_t n, state;
	float *host;

	if (e->p->zero == 1 && zero_parts(e, s))
		return AP_EFAIL;
	n = held(s);
	state = s->zparts ? s->zlen : s->nparams;
	if (!(host = calloc((size_t)(n > 0 ? n : 1), sizeof *host)))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	memcpy(host, init, (size_t)s->nparams * sizeof *host);
	s->w = exec_alloc_from(e, host, n);
	if (s->zparts)
		s->wpart = exec_alloc_from(e, host + s->zidx * s->zlen, s->zlen);
	free(host);
	if (!s->w || !(s->dw = exec_alloc(e, n)) || !(s->mom = exec_alloc(e, state)) ||
	    (adam(e->p) && !(s->mom2 = exec_alloc(e, state))) ||
	    (s->zparts && (!s->wpart || !(s->gpart = exec_alloc(e, s->zlen)))))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	return AP_OK;
}

int exec_grad_sum(struct exec *e, struct rshard *s, int *id)
{
	struct transport *t = e->t;

	if (s->zparts)
		return t->ops->ireduce_scatter(t, s->gid, s->dw, s->gpart, s->zlen, id);
	return t->ops->iallreduce(t, s->gid, s->dw, s->nparams, id);
}

int exec_update(struct exec *e, struct rshard *s)
{
	float *w = s->zparts ? s->wpart : s->w, *g = s->zparts ? s->gpart : s->dw;
	int64_t n = s->zparts ? s->zlen : s->nparams;

	if (adam(e->p)) {
		double t = (double)++s->nupdates;
		struct adam_step a = { e->o.lr, (float)ADAM_B1, (float)ADAM_B2, ADAM_EPS,
				       (float)(1 - pow(ADAM_B1, t)), (float)(1 - pow(ADAM_B2, t)) };

		e->be->adam(w, s->mom, s->mom2, g, n, &a);
	} else {
		e->be->sgd(w, s->mom, g, n, e->o.lr, e->o.momentum);
	}
	if (s->zparts && e->t->ops->iallgather(e->t, s->gid, s->wpart, s->w, s->zlen, NULL))
		return AP_EFAIL;
	return e->be->fill(s->dw, held(s), 0.0f);
}

void exec_update_release(struct exec *e, struct rshard *s)
{
	e->be->release(s->w);
	e->be->release(s->dw);
	e->be->release(s->mom);
	e->be->release(s->mom2);
	e->be->release(s->gpart);
	e->be->release(s->wpart);
}
