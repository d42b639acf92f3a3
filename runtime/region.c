/*
 * Overlaps and strided copies of tensor regions (region.h).
 */
#include "region.h"

#include <string.h>

int64_t region_elems(const struct region *r)
{
	int64_t n = 1;

	for (int d = 0; d < NDIMS; d++)
		n *= r->hi[d] - r->lo[d];
	return n;
}

int region_meet(const struct region *a, const struct region *b, struct region *o)
{
	for (int d = 0; d < NDIMS; d++) {
		o->lo[d] = a->lo[d] > b->lo[d] ? a->lo[d] : b->lo[d];
		o->hi[d] = a->hi[d] < b->hi[d] ? a->hi[d] : b->hi[d];
		if (o->hi[d] <= o->lo[d])
			return 0;
	}
	return 1;
}

int region_equal(const struct region *a, const struct region *b)
{
	return !memcmp(a->lo, b->lo, sizeof a->lo) && !memcmp(a->hi, b->hi, sizeof a->hi);
}

void region_shape(const struct shape *s, const struct region *r, struct shape *out)
{
	*out = *s;
	for (int i = 0; i < s->rank; i++)
		out->size[i] = r->hi[s->kind[i]] - r->lo[s->kind[i]];
}

void region_walk_init(struct region_walk *w, const struct shape *s, const struct region *o,
		      const struct region *dr, const struct region *sr)
{
	int last = s->rank - 1;

	w->rank = s->rank;
	w->dbase = w->sbase = 0;
	/* strides of both buffers, and where the overlap starts in each */
	for (int i = last; i >= 0; i--) {
		enum dim_kind d = s->kind[i];

		w->ext[i] = o->hi[d] - o->lo[d];
		w->dstr[i] = i == last ? 1 : w->dstr[i + 1] * (dr->hi[s->kind[i + 1]] - dr->lo[s->kind[i + 1]]);
		w->sstr[i] = i == last ? 1 : w->sstr[i + 1] * (sr->hi[s->kind[i + 1]] - sr->lo[s->kind[i + 1]]);
		w->dbase += (o->lo[d] - dr->lo[d]) * w->dstr[i];
		w->sbase += (o->lo[d] - sr->lo[d]) * w->sstr[i];
	}
}

void region_copy(const struct shape *s, const struct region *o, float *dst,
		 const struct region *dr, const float *src, const struct region *sr,
		 int accumulate)
{
	struct region_walk w;
	int last = s->rank - 1;
	const int64_t *ext = w.ext, *dstr = w.dstr, *sstr = w.sstr;
	int64_t idx[MAX_RANK] = { 0 }, dbase, sbase, run;

	region_walk_init(&w, s, o, dr, sr);
	dbase = w.dbase;
	sbase = w.sbase;
	run = ext[last];
	for (;;) {
		int64_t od = dbase, os = sbase;
		int i;

		for (i = 0; i < last; i++) {
			od += idx[i] * dstr[i];
			os += idx[i] * sstr[i];
		}
		if (accumulate)
			for (int64_t e = 0; e < run; e++)
				dst[od + e] += src[os + e];
		else
			memcpy(dst + od, src + os, (size_t)run * sizeof(float));
		for (i = last - 1; i >= 0; i--) {
			if (++idx[i] < ext[i])
				break;
			idx[i] = 0;
		}
		if (i < 0)
			return;
	}
}
