/*
 * Loading a plan file for the commands that take one (`sim`, `run`,
 * `check`): the plan and the instance it names (instance.h resolves the
 * names, as for every command).
 */
#ifndef AUTOPAR_LOAD_H
#define AUTOPAR_LOAD_H

#include <stdint.h>

#include "plan/instance.h"

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
