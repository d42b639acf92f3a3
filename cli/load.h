/*
 * Loading what the commands share: a model, a cluster (preset or inline
 * spec) and a profile, with the profile defaulting to the one the cluster
 * names.  One place, so `plan`, `sim`, `check` and `bench` resolve names
 * the same way.
 */
#ifndef AUTOPAR_LOAD_H
#define AUTOPAR_LOAD_H

#include <stdint.h>

#include "cluster.h"
#include "graph.h"
#include "profile.h"

int load_cluster(const char *spec, struct cluster *c);

/* Loads the profile named by name, or c's default when name is NULL;
 * writes the name used to used (len bytes). */
int load_profile(const char *name, const struct cluster *c, struct profile *p,
		 char *used, size_t len);

/* "measured", "analytic" or "measured+analytic": what the rows are. */
const char *profile_kind(const struct profile *p);

#endif
