/*
 * Shared loading of clusters and profiles for the commands (load.h).
 */
#include "load.h"

#include <stdio.h>
#include <string.h>

#include "datadir.h"
#include "err.h"
#include "model_io.h"
#include "piper_io.h"

int load_cluster(const char *spec, const char *model, struct cluster *c)
{
	struct graph g;
	char csv[4096];
	int st;

	if (!spec || strcmp(spec, "piper"))
		return cluster_resolve(spec, datapath(csv, sizeof csv, "profiles/clusters.csv"),
				       c);
	/* The machine is the model's, so read it here (a small file, read
	 * twice where a command loads the model after the cluster). */
	if (!model)
		return ap_err(AP_EINPUT, "-c piper", 0, "needs a Piper input as the model (-m)");
	graph_init(&g);
	st = model_load(model, 0, &g);
	if (!st && !g.piper)
		st = ap_err(AP_EINPUT, "-c piper", 0, "model '%s' is not a Piper input (expected "
			    "a Piper .json file or piper/NAME, whose machine -c piper takes)",
			    model);
	if (!st)
		st = piper_cluster(g.piper, model, c);
	graph_release(&g);
	return st;
}

int load_profile(const char *name, const struct cluster *c, struct profile *p,
		 char *used, size_t len)
{
	char dir[4096];

	snprintf(used, len, "%s", name ? name : c->profile);
	return profile_load(profile_dir(dir, sizeof dir, used), p);
}

const char *profile_kind(const struct profile *p)
{
	int measured = 0, analytic = 0;

	for (int i = 0; i < p->nrows; i++) {
		if (p->rows[i].analytic)
			analytic = 1;
		else
			measured = 1;
	}
	return measured && analytic ? "measured+analytic" : measured ? "measured" : "analytic";
}

void plan_inputs_init(struct plan_inputs *in)
{
	memset(in, 0, sizeof *in);
	graph_init(&in->g);
	profile_init(&in->p);
	plan_init(&in->pl);
}

void plan_inputs_release(struct plan_inputs *in)
{
	plan_release(&in->pl);
	profile_release(&in->p);
	graph_release(&in->g);
}

int load_plan_inputs(struct plan_inputs *in, const char *model, const char *cspec,
		     const char *prof, long long microbatches)
{
	char used[PLAN_NAME_LEN];
	int64_t batch;
	int st;

	st = plan_peek(in->path, in->model, sizeof in->model, in->cluster,
		       sizeof in->cluster, in->profile, sizeof in->profile, &batch);
	if (st)
		return st;
	if (!prof && in->profile[0])
		prof = in->profile;
	st = model_load(model ? model : in->model, batch, &in->g);
	if (!st)
		st = load_cluster(cspec ? cspec : in->cluster, model ? model : in->model, &in->c);
	if (!st)
		st = load_profile(prof, &in->c, &in->p, used, sizeof used);
	if (!st)
		snprintf(in->profile, sizeof in->profile, "%s", used);
	if (!st)
		st = plan_read(in->path, &in->g, &in->pl);
	if (!st && microbatches > in->g.batch)
		st = ap_err(AP_EINPUT, "--microbatches", 0,
			    "%lld micro-batches are more than the batch of %lld",
			    microbatches, (long long)in->g.batch);
	if (!st && microbatches)
		in->pl.microbatches = (int)microbatches;
	if (!st)
		st = plan_validate(&in->pl, &in->g, &in->c, in->path);
	return st;
}
