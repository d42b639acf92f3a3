/*
 * Seeded inputs and teacher labels (data.h).  Every value is a hash of its
 * position (rng.h), so a shard is generated without the rest of the batch.
 */
#include "data.h"

#include <stdlib.h>

#include "util/err.h"
#include "rng.h"

/* key spaces of the hash, so inputs, teacher weights and tables differ */
enum { KEY_INPUT = 1, KEY_TEACHER, KEY_TABLE };

int data_init(struct data *d, const struct graph *g, uint64_t seed, int pool)
{
	d->g = g;
	d->seed = seed;
	d->pool = pool > 0 ? pool : 1;
	d->teacher = -1;
	d->id_range = calloc((size_t)g->nops, sizeof *d->id_range);
	if (!d->id_range)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int i = 0; i < g->nops; i++) {
		const struct op *op = &g->ops[i];

		if (op->kind == OP_INPUT && d->teacher < 0)
			d->teacher = i;
		if (op->kind != OP_EMBEDDING)
			continue;
		if (g->ops[op->in[0]].kind != OP_INPUT)
			return ap_err(AP_EINPUT, g->path, op->line,
				      "embedding '%s' must read an input of token ids to be run",
				      op->name);
		if (!d->id_range[op->in[0]] || d->id_range[op->in[0]] > op->a.vocab)
			d->id_range[op->in[0]] = op->a.vocab;
	}
	if (d->teacher < 0)
		return ap_err(AP_EINPUT, g->path, 0, "model '%s' has no input", g->name);
	return AP_OK;
}

void data_release(struct data *d)
{
	free(d->id_range);
	d->id_range = NULL;
}

/* Images are made of BLOCK x BLOCK patches of one value each, plus a
 * little noise per pixel (so that no two pixels tie in a max-pool): a
 * teacher linear in the pixels is then one a convolutional network can
 * learn from fresh batches.  On white noise it only memorises the batches
 * it has seen. */
#define BLOCK 4
#define PIXEL_NOISE 0.1

/* Element f of a sample of shape s (memory order, n left out) with its h
 * and w coordinates divided by BLOCK. */
static int64_t block_of(const struct shape *s, int64_t f)
{
	int64_t key = 0, rest = f, unit = 1;

	for (int q = s->rank - 1; q >= 1; q--) {
		int64_t i = rest % s->size[q], size = s->size[q];

		rest /= s->size[q];
		if (s->kind[q] == DIM_H || s->kind[q] == DIM_W) {
			i /= BLOCK;
			size = (size + BLOCK - 1) / BLOCK;
		}
		key += i * unit;
		unit *= size;
	}
	return key;
}

static double unit_at(const struct data *d, int i, int64_t s, uint64_t key)
{
	return rng_unit(rng_key(d->seed ^ KEY_INPUT, ((uint64_t)i << 40) ^ (uint64_t)s, key));
}

/* sample s of the pool, element f of it (memory order, n left out) */
static float value(const struct data *d, int i, int64_t s, int64_t f)
{
	const struct shape *sh = &d->g->ops[i].out;
	double u = unit_at(d, i, s, (uint64_t)f);

	if (d->id_range[i] > 0)
		return (float)(int64_t)(u * (double)d->id_range[i]);
	if (shape_dim(sh, DIM_H) >= 0 || shape_dim(sh, DIM_W) >= 0)
		return (float)((1.0 - PIXEL_NOISE) *
				       (2.0 * unit_at(d, i, s, (uint64_t)block_of(sh, f) | 1ull << 63) - 1.0) +
			       PIXEL_NOISE * (2.0 * u - 1.0));
	return (float)(2.0 * u - 1.0);
}

static int64_t pool_sample(const struct data *d, int64_t step, int64_t n)
{
	return (step % d->pool) * d->g->batch + n;
}

/* Visits region r of a tensor of shape s in memory order, giving each
 * element's sample and its index inside the sample. */
#define FOR_REGION(s, r, n, f, body)                                           \
	do {                                                                   \
		int64_t idx_[MAX_RANK], k_ = 0;                                \
		int more_ = 1;                                                 \
		for (int q_ = 0; q_ < (s)->rank; q_++)                         \
			idx_[q_] = (r)->lo[(s)->kind[q_]];                     \
		while (more_) {                                                \
			int64_t n = idx_[0], f = 0;                            \
			for (int q_ = 1; q_ < (s)->rank; q_++)                 \
				f = f * (s)->size[q_] + idx_[q_];              \
			body;                                                  \
			k_++;                                                  \
			more_ = 0;                                             \
			for (int q_ = (s)->rank - 1; q_ >= 0; q_--) {          \
				if (++idx_[q_] < (r)->hi[(s)->kind[q_]]) {     \
					more_ = 1;                             \
					break;                                 \
				}                                              \
				idx_[q_] = (r)->lo[(s)->kind[q_]];             \
			}                                                      \
		}                                                              \
	} while (0)

void data_input(const struct data *d, int i, int64_t step, const struct region *r,
		float *buf)
{
	const struct shape *s = &d->g->ops[i].out;

	FOR_REGION(s, r, n, f, buf[k_] = value(d, i, pool_sample(d, step, n), f));
}

/* the most input values the linear teacher reads */
#define TEACH_FEATURES 4096

/* The teacher's label of sample s at sequence position l (-1: the whole
 * sample) among `classes`. */
static int64_t teach(const struct data *d, int64_t s, int64_t l, int64_t classes)
{
	const struct op *x = &d->g->ops[d->teacher];
	int64_t per = shape_elems(&x->out) / x->out.size[0], best = 0;
	int64_t step = (per + TEACH_FEATURES - 1) / TEACH_FEATURES;
	double top = 0;

	if (d->id_range[d->teacher] > 0 && l >= 0 && l < per) {
		float id = value(d, d->teacher, s, l);

		return (int64_t)(rng_key(d->seed ^ KEY_TABLE, (uint64_t)id, 0) % (uint64_t)classes);
	}
	for (int64_t c = 0; c < classes; c++) {
		double score = 0;

		for (int64_t f = 0; f < per; f += step)
			score += (2.0 * rng_unit(rng_key(d->seed ^ KEY_TEACHER, (uint64_t)c,
							 (uint64_t)f)) - 1.0) *
				 value(d, d->teacher, s, f);
		if (c == 0 || score > top) {
			top = score;
			best = c;
		}
	}
	return best;
}

int data_labels(const struct data *d, int i, int64_t step, const struct region *r,
		float *buf)
{
	const struct op *op = &d->g->ops[i];
	const struct shape *in = &d->g->ops[op->in[0]].out;
	int64_t classes = in->size[shape_dim(in, DIM_C)];
	int li = shape_dim(&op->out, DIM_L);

	if (op->kind != OP_LOSS)
		return ap_err(AP_EFAIL, NULL, 0, "'%s' is not a loss", op->name);
	FOR_REGION(&op->out, r, n, f,
		   buf[k_] = (float)teach(d, pool_sample(d, step, n),
					  li >= 0 ? idx_[li] : -1, classes));
	return AP_OK;
}
