/*
 * Shared loading of clusters and profiles for the commands (load.h).
 */
#include "load.h"

#include <stdio.h>
#include <string.h>

#include "datadir.h"

int load_cluster(const char *spec, struct cluster *c)
{
	char csv[4096];

	return cluster_resolve(spec, datapath(csv, sizeof csv, "profiles/clusters.csv"), c);
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
