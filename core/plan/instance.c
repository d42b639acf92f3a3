/*
 * Loading an instance (instance.h): the model at its batch, the cluster
 * and the profile, resolved as every command resolves their names.
 */
#include "plan/instance.h"

#include <stdio.h>
#include <string.h>

#include "util/datadir.h"
#include "util/err.h"
#include "model/model_io.h"
#include "model/piper_io.h"
#include "hw/piper_machine.h"

void instance_init(struct instance *x)
{
	memset(x, 0, sizeof *x);
	graph_init(&x->g);
	profile_init(&x->p);
}

void instance_release(struct instance *x)
{
	graph_release(&x->g);
	profile_release(&x->p);
	instance_init(x);
}

int instance_load(struct instance *x, const char *model, const struct batch_spec *b,
		  const char *cluster, const char *profile)
{
	static const struct batch_spec own = { 0, 0 };
	int st;

	instance_init(x);
	st = load_cluster(cluster, model, &x->c);
	if (!st)
		st = batch_model_load(model, b ? b : &own, cluster_ndevices(&x->c), &x->g);
	if (!st)
		st = load_profile(profile, &x->c, &x->p, x->profile, sizeof x->profile);
	if (st) {
		instance_release(x);
		return st;
	}
	if (b && b->per_device)
		x->per_device_batch = x->g.batch / cluster_ndevices(&x->c);
	return AP_OK;
}

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

	if (name && !*name)
		return ap_err(AP_EINPUT, "-p", 0,
			      "expected a profile: a name under profiles/ or a directory, got an empty string");
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
