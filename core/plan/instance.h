/*
 * An instance: a model on a cluster with a profile, what every planner,
 * the simulator and the benchmark take.  Loaded by name the way every
 * command resolves names (a zoo model or file, a cluster preset or inline
 * spec or `piper`, a profile directory or the cluster's own), so the
 * commands, the benchmark and the tests load alike.
 */
#ifndef AUTOPAR_INSTANCE_H
#define AUTOPAR_INSTANCE_H

#include <stddef.h>
#include <stdint.h>

#include "model/batch.h"
#include "hw/cluster.h"
#include "model/graph.h"
#include "plan/plan.h"
#include "hw/profile.h"

struct instance {
	struct graph g;
	struct cluster c;
	struct profile p;
	char profile[PLAN_NAME_LEN]; /* the profile's name as used */
	/* Weak scaling: samples per device (g's batch is this times the
	 * cluster's devices); 0 for a global batch. */
	int64_t per_device_batch;
};

void instance_init(struct instance *x);
void instance_release(struct instance *x);
/* Loads model (model_load()'s names) at batch b (NULL: the model's own)
 * on cluster (load_cluster()) with the profile named profile (NULL: the
 * one the cluster names).  On failure x is left released. */
int instance_load(struct instance *x, const char *model, const struct batch_spec *b,
		  const char *cluster, const char *profile);

/* A preset, an inline spec, or `piper`: the machine of the Piper input
 * model (which is read for it; an error for any other model). */
int load_cluster(const char *spec, const char *model, struct cluster *c);
/* Loads the profile named by name, or c's default when name is NULL;
 * writes the name used to used (len bytes). */
int load_profile(const char *name, const struct cluster *c, struct profile *p,
		 char *used, size_t len);
/* "measured", "analytic" or "measured+analytic": what the rows are. */
const char *profile_kind(const struct profile *p);

#endif
