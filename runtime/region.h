/*
 * Regions of tensors: a shard of an operator's output, or the part of an
 * input a consumer shard needs, is a hyper-rectangle [lo[d], hi[d]) per dim
 * kind d (core/plan.h's layout; a dim a tensor lacks is [0, 1)), stored
 * densely in the tensor's memory order.  region_copy moves the overlap of
 * two such buffers, which is every transfer, gather and gradient sum the
 * executor does.
 */
#ifndef AUTOPAR_REGION_H
#define AUTOPAR_REGION_H

#include <stdint.h>

#include "model/graph.h"

struct region {
	int64_t lo[NDIMS], hi[NDIMS];
};

int64_t region_elems(const struct region *r);
/* the overlap of a and b into o; 0 when it is empty */
int region_meet(const struct region *a, const struct region *b, struct region *o);
int region_equal(const struct region *a, const struct region *b);
/* The local shape of region r of a tensor of shape s. */
void region_shape(const struct shape *s, const struct region *r, struct shape *out);

/* How region_copy walks the part o of a tensor of shape s between a
 * buffer holding region dr and one holding region sr: ext[i] elements
 * along memory dim i, the strides of both buffers, and where o starts in
 * each.  A device backend walks the same way in its kernels. */
struct region_walk {
	int rank;
	int64_t ext[MAX_RANK], dstr[MAX_RANK], sstr[MAX_RANK];
	int64_t dbase, sbase;
};

void region_walk_init(struct region_walk *w, const struct shape *s, const struct region *o,
		      const struct region *dr, const struct region *sr);

/* Copies (accumulate: adds) the part o of src, a buffer holding region
 * sr of a tensor of shape s, into dst, holding region dr. */
void region_copy(const struct shape *s, const struct region *o, float *dst,
		 const struct region *dr, const float *src, const struct region *sr,
		 int accumulate);

#endif
