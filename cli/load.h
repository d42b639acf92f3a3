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
#include "plan.h"
#include "profile.h"

/* A preset, an inline spec, or `piper`: the machine of the Piper input
 * model (which is read for it; an error for any other model). */
int load_cluster(const char *spec, const char *model, struct cluster *c);

/* Loads the profile named by name, or c's default when name is NULL;
 * writes the name used to used (len bytes). */
int load_profile(const char *name, const struct cluster *c, struct profile *p,
		 char *used, size_t len);

/* "measured", "analytic" or "measured+analytic": what the rows are. */
const char *profile_kind(const struct profile *p);

/* A plan file and what it was made for: the model, cluster and profile it
 * names, each of which a command may override. */
struct plan_inputs {
	const char *path;
	char model[PLAN_NAME_LEN], cluster[PLAN_NAME_LEN], profile[PLAN_NAME_LEN];
	struct graph g;
	struct cluster c;
	struct profile p;
	struct plan pl;
};

void plan_inputs_init(struct plan_inputs *in);
void plan_inputs_release(struct plan_inputs *in);
/* Loads in->path with the overrides that are not NULL (microbatches 0:
 * the plan's) and validates the plan.  The file is read once
 * (load_plan_bytes()).  The plan's own model must be a model of the zoo
 * (NAME, pipedream/NAME, piper/NAME) or a file in the plan's directory:
 * else "PLAN: model: ..." (AP_EINPUT). */
int load_plan_inputs(struct plan_inputs *in, const char *model, const char *cspec,
		     const char *prof, long long microbatches);
/* The same from bytes[0..len) read from in->path before (messages name
 * in->path, a model beside the plan is looked for beside it). */
int load_plan_inputs_bytes(struct plan_inputs *in, const char *bytes, long len,
			   const char *model, const char *cspec, const char *prof,
			   long long microbatches);
/* The whole file into *bytes (malloc'd, NUL-terminated, *len bytes). */
int load_plan_bytes(const char *path, char **bytes, long *len);

#endif
