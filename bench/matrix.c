/*
 * The matrix reader (matrix.h): a block of lists, closed by `end`, expands
 * to the cross product of its lists in the order models, batches, clusters,
 * seeds, planners, so the rows of one (model, cluster) come together and
 * `dp` can be found for the speedup column.
 */
#include "matrix.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "planner.h"
#include "util/grow.h"

#define MAXW 256

struct block {
	char *models[MAXW], *clusters[MAXW], *planners[MAXW];
	struct batch_spec batches[MAXW];
	uint64_t seeds[MAXW];
	int nm, nc, np, nb, ns;
	double budget;
	int line; /* of the first list, for messages */
};

static char *keep(struct matrix *m, const char *s)
{
	char *d;

	if (grow(&m->strings, m->nstrings, &m->scap, sizeof *m->strings, 64))
		return NULL;
	d = strdup(s);
	if (d)
		m->strings[m->nstrings++] = d;
	return d;
}

static int add_cell(struct matrix *m, const struct bench_cell *c)
{
	if (grow(&m->cells, m->ncells, &m->cap, sizeof *m->cells, 64))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	m->cells[m->ncells++] = *c;
	return AP_OK;
}

static int expand(struct matrix *m, const struct block *b, const char *path)
{
	struct batch_spec one_batch = { 0, 0 };
	uint64_t one_seed = 1;
	const struct batch_spec *batches = b->nb ? b->batches : &one_batch;
	const uint64_t *seeds = b->ns ? b->seeds : &one_seed;
	int nb = b->nb ? b->nb : 1, ns = b->ns ? b->ns : 1;

	if (!b->nm || !b->nc || !b->np)
		return ap_err(AP_EINPUT, path, b->line,
			      "a block needs 'models', 'clusters' and 'planners' before 'end'");
	for (int i = 0; i < b->nm; i++)
		for (int j = 0; j < nb; j++)
			for (int k = 0; k < b->nc; k++)
				for (int s = 0; s < ns; s++)
					for (int p = 0; p < b->np; p++) {
						struct bench_cell c = {
							.model = b->models[i], .batch = batches[j],
							.cluster = b->clusters[k], .seed = seeds[s],
							.planner = b->planners[p], .budget_s = b->budget,
						};
						int rc = add_cell(m, &c);

						if (rc)
							return rc;
					}
	return AP_OK;
}

static int number(const char *w, int allow_zero, int64_t *v)
{
	char *end;
	long long x;

	errno = 0;
	x = strtoll(w, &end, 10);
	if (!isdigit((unsigned char)*w) || *end || errno || x < (allow_zero ? 0 : 1))
		return -1;
	*v = x;
	return 0;
}

static int list_line(struct matrix *m, struct block *b, char **w, int nw,
		     const char *path, int line)
{
	const char *key = w[0];
	/* the values of this key so far in the block: lines add up */
	int *count = !strcmp(key, "models")   ? &b->nm
		     : !strcmp(key, "clusters") ? &b->nc
		     : !strcmp(key, "planners") ? &b->np
		     : !strcmp(key, "batch")    ? &b->nb
		     : !strcmp(key, "seeds")    ? &b->ns
						: NULL;

	if (nw < 2)
		return ap_err(AP_EINPUT, path, line, "'%s' needs at least one value", key);
	if (nw - 1 > MAXW)
		return ap_err(AP_EINPUT, path, line, "more than %d values for '%s'", MAXW, key);
	if (!b->line)
		b->line = line;
	for (int i = 1; i < nw; i++) {
		int64_t v;
		char *end;

		/* results rows and plans hold names of PLAN_NAME_LEN - 1 */
		if (strlen(w[i]) >= PLAN_NAME_LEN)
			return ap_err(AP_EINPUT, path, line, "a value of '%s' of %zu characters "
				      "(expected at most %d)", key, strlen(w[i]), PLAN_NAME_LEN - 1);

		if (count && *count + (count == &b->np && !strcmp(w[i], "all") ? nplanners : 1) >
				     MAXW)
			return ap_err(AP_EINPUT, path, line,
				      "more than %d values for '%s' in one block", MAXW, key);
		if (!strcmp(key, "models") || !strcmp(key, "clusters")) {
			char *s = keep(m, w[i]);

			if (!s)
				return ap_err(AP_EFAIL, NULL, 0, "out of memory");
			if (key[0] == 'm')
				b->models[b->nm++] = s;
			else
				b->clusters[b->nc++] = s;
		} else if (!strcmp(key, "planners")) {
			if (!strcmp(w[i], "all")) {
				/* each on the footing of the others */
				for (int k = 0; k < nplanners; k++) {
					char *s = (char *)planners[k]->name;

					if (planners[k]->same_footing) {
						char spec[PLAN_NAME_LEN];

						snprintf(spec, sizeof spec, "%s:%s", s,
							 planners[k]->same_footing);
						s = keep(m, spec);
						if (!s)
							return ap_err(AP_EFAIL, NULL, 0, "out of memory");
					}
					b->planners[b->np++] = s;
				}
				continue;
			}
			const struct planner *pl;
			struct planner_opts o;
			char where[512], spec[PLAN_NAME_LEN], *s;

			snprintf(where, sizeof where, "%s:%d", path, line);
			if (planner_parse(w[i], where, &pl, &o))
				return AP_EINPUT;
			planner_spec(pl, &o, spec, sizeof spec);
			s = keep(m, spec);
			if (!s)
				return ap_err(AP_EFAIL, NULL, 0, "out of memory");
			b->planners[b->np++] = s;
		} else if (!strcmp(key, "batch")) {
			if (batch_spec_parse(w[i], path, line, &b->batches[b->nb]))
				return AP_EINPUT;
			b->nb++;
		} else if (!strcmp(key, "seeds")) {
			if (number(w[i], 1, &v))
				return ap_err(AP_EINPUT, path, line,
					      "seed '%s' is not a non-negative integer", w[i]);
			b->seeds[b->ns++] = (uint64_t)v;
		} else if (!strcmp(key, "budget")) {
			errno = 0;
			b->budget = strtod(w[i], &end);
			if (nw != 2 || *end || errno || !(b->budget >= 0))
				return ap_err(AP_EINPUT, path, line, "expected 'budget SECONDS'");
		} else {
			return ap_err(AP_EINPUT, path, line, "unknown key '%s' (expected models, "
				      "batch, clusters, planners, seeds, budget or end)", key);
		}
	}
	return AP_OK;
}

int matrix_read(const char *path, struct matrix *m)
{
	FILE *f = fopen(path, "r");
	struct block *b = calloc(1, sizeof *b);
	char *line = NULL;
	size_t cap = 0;
	int rc = AP_OK, lineno = 0, open = 0;

	memset(m, 0, sizeof *m);
	if (!b) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
		goto out;
	}
	if (!f) {
		rc = ap_err(AP_EINPUT, path, 0, "cannot read matrix: %s", strerror(errno));
		goto out;
	}
	b->budget = 10;
	while (!rc && getline(&line, &cap, f) >= 0) {
		char *w[MAXW + 2], *save = NULL, *hash = strchr(line, '#');
		int nw = 0;

		lineno++;
		if (hash)
			*hash = 0;
		for (char *t = strtok_r(line, " \t\r\n", &save); t && nw < MAXW + 2;
		     t = strtok_r(NULL, " \t\r\n", &save))
			w[nw++] = t;
		if (!nw)
			continue;
		if (!strcmp(w[0], "end")) {
			if (nw != 1)
				rc = ap_err(AP_EINPUT, path, lineno, "'end' takes nothing");
			else if (!open)
				rc = ap_err(AP_EINPUT, path, lineno, "'end' without a block");
			else
				rc = expand(m, b, path);
			memset(b, 0, sizeof *b);
			b->budget = 10;
			open = 0;
			continue;
		}
		open = 1;
		rc = list_line(m, b, w, nw, path, lineno);
	}
	if (!rc && ferror(f)) /* a directory reads as an error */
		rc = ap_err(AP_EINPUT, path, 0, "cannot read matrix: %s", strerror(errno));
	if (!rc && open)
		rc = ap_err(AP_EINPUT, path, lineno, "last block has no 'end'");
	if (!rc && !m->ncells)
		rc = ap_err(AP_EINPUT, path, 0, "no cells (expected blocks ending in 'end')");
out:
	if (f)
		fclose(f);
	free(line);
	free(b);
	if (rc)
		matrix_release(m);
	return rc;
}

void matrix_release(struct matrix *m)
{
	for (int i = 0; i < m->nstrings; i++)
		free(m->strings[i]);
	free(m->strings);
	free(m->cells);
	memset(m, 0, sizeof *m);
}
