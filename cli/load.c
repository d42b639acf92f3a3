/*
 * Loading a plan file and what it was made for, for the commands
 * (load.h).  A plan file is read once, into memory: its bytes are what every later
 * step (and, under `autopar run`, every rank) parses, so a file replaced
 * meanwhile cannot make two readers see two plans.
 */
#include "load.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/datadir.h"
#include "util/err.h"
#include "model/model_io.h"
#include "plan/plan_io.h"
#include "plan/plan_check.h"
#include "plan/plan_source.h"

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

int load_plan_bytes(const char *path, char **bytes, long *len)
{
	FILE *f = fopen(path, "rb");
	char *b = NULL, *nb;
	size_t n = 0, cap = 0, got;

	*bytes = NULL;
	*len = -1;
	if (!f)
		return ap_err(AP_EINPUT, path, 0, "cannot read: %m");
	do {
		if (n + 4096 + 1 > cap) {
			cap = 2 * cap + 4096 + 1;
			nb = realloc(b, cap);
			if (!nb) {
				free(b);
				fclose(f);
				return ap_err(AP_EFAIL, NULL, 0, "out of memory");
			}
			b = nb;
		}
		got = fread(b + n, 1, cap - n - 1, f);
		n += got;
	} while (got > 0);
	if (ferror(f)) {
		free(b);
		fclose(f);
		return ap_err(AP_EINPUT, path, 0, "cannot read: %m");
	}
	fclose(f);
	b[n] = '\0';
	*bytes = b;
	*len = (long)n;
	return AP_OK;
}

/* Loads in from the plan file pf (the bytes in->path had when they were
 * read); messages name in->path. */
static int load_from(struct plan_inputs *in, const char *pf, const char *model,
		     const char *cspec, const char *prof, long long microbatches)
{
	char used[PLAN_NAME_LEN], resolved[PATH_MAX], pdir[PATH_MAX];
	struct plan_head h;
	int st;

	st = plan_peek(pf, &h);
	if (st)
		return st;
	memcpy(in->model, h.model, sizeof in->model);
	memcpy(in->cluster, h.cluster, sizeof in->cluster);
	memcpy(in->profile, h.profile, sizeof in->profile);
	if (!prof) {
		st = plan_profile_resolve(in->path, &h, pdir, sizeof pdir);
		prof = pdir[0] ? pdir : NULL;
	}
	if (!st && !model) {
		st = plan_source_resolve(in->path, &h, resolved, sizeof resolved);
		model = resolved;
	}
	if (!st)
		st = model_load(model, h.batch, &in->g);
	/* a file beside the plan keeps the name the plan gives it */
	if (!st && model == resolved && !strcmp(in->g.name, resolved))
		snprintf(in->g.name, sizeof in->g.name, "%.*s", (int)sizeof in->g.name - 1,
			 in->model);
	if (!st)
		st = load_cluster(cspec ? cspec : in->cluster, model, &in->c);
	if (!st)
		st = load_profile(prof, &in->c, &in->p, used, sizeof used);
	if (!st)
		snprintf(in->profile, sizeof in->profile, "%s", used);
	if (!st)
		st = plan_read(pf, &in->g, &in->pl);
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

/* Writes msg with every `from` replaced by `to`, and a newline. */
static void put_renamed(FILE *f, const char *msg, const char *from, const char *to)
{
	size_t n = strlen(from);
	const char *at;

	while (n && (at = strstr(msg, from))) {
		fwrite(msg, 1, (size_t)(at - msg), f);
		fputs(to, f);
		msg = at + n;
	}
	fprintf(f, "%s\n", msg);
}

int load_plan_inputs_bytes(struct plan_inputs *in, const char *bytes, long len,
			   const char *model, const char *cspec, const char *prof,
			   long long microbatches)
{
	const char *tmp = getenv("TMPDIR");
	char pf[PATH_MAX];
	FILE *f;
	int fd, st;

	/* the parsers read files: the bytes go to a private one */
	snprintf(pf, sizeof pf, "%s/autopar-plan.XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
	fd = mkstemp(pf);
	if (fd < 0)
		return ap_err(AP_EFAIL, pf, 0, "cannot make a private copy of the plan: %m");
	f = fdopen(fd, "wb");
	if (!f || fwrite(bytes, 1, (size_t)len, f) != (size_t)len || fclose(f)) {
		if (!f)
			close(fd);
		unlink(pf);
		return ap_err(AP_EFAIL, pf, 0, "cannot make a private copy of the plan: %m");
	}
	ap_err_quiet(1);
	st = load_from(in, pf, model, cspec, prof, microbatches);
	ap_err_quiet(0);
	unlink(pf);
	if (st)
		put_renamed(stderr, ap_last_error(), pf, in->path);
	return st;
}

int load_plan_inputs(struct plan_inputs *in, const char *model, const char *cspec,
		     const char *prof, long long microbatches)
{
	char *bytes;
	long len;
	int st = load_plan_bytes(in->path, &bytes, &len);

	if (!st)
		st = load_plan_inputs_bytes(in, bytes, len, model, cspec, prof, microbatches);
	free(bytes);
	return st;
}
