/*
 * Where a plan's model comes from (docs/formats.md, "Plan"): recorded by
 * `autopar plan`, so that `sim`, `run` and `check` load the graph the plan
 * was made for, from any working directory, or refuse with the reason.
 */
#ifndef AUTOPAR_PLAN_SOURCE_H
#define AUTOPAR_PLAN_SOURCE_H

#include <stddef.h>

#include "plan/plan.h"
#include "plan/plan_io.h"

/* Records in p where model_arg (model_load()'s argument) is read from:
 * the digest of its file, and, when it was given as a file rather than a
 * name of the zoo, that file's path relative to the directory of
 * plan_path (the plan about to be written there).  The same for prof_arg
 * (-p; NULL: the cluster's) when it is a directory rather than a name of
 * profiles/. */
int plan_set_source(struct plan *p, const char *model_arg, const char *prof_arg,
		    const char *plan_path);

/* What model_load() must read for the plan file plan_path with head h,
 * into out: its model_file (relative to the plan's directory), else its
 * model by name (a model of the zoo: NAME, pipedream/NAME, piper/NAME; or
 * a file beside the plan).  Where the plan records a digest, the file must
 * match it before anything parses it: a model of the same name but
 * another content is refused, naming the plan and the field (AP_EINPUT). */
int plan_source_resolve(const char *plan_path, const struct plan_head *h, char *out, size_t len);

/* The profile load_profile() must load for that plan, into out ("": the
 * cluster's): its profile_dir (relative to the plan's directory, checked
 * against its digest), else its profile by name, which must be a name of
 * profiles/, never a path (AP_EINPUT naming the plan and the field). */
int plan_profile_resolve(const char *plan_path, const struct plan_head *h, char *out,
			 size_t len);

#endif
