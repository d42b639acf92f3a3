/*
 * Operator cost profiles: a table of measured (or analytic) forward and
 * backward times of operator shards, keyed by graph_op_signature(), with the
 * device's specs; its CSV files (read through csvio); and the lookup every
 * planner and the simulator use, which always says where an answer came
 * from.  The roofline model behind fallback (d) and the analytic rows is
 * roofline.c's.
 *
 * Lookup order for the shard of op i at degree[] (profile_lookup):
 *  (a) the op carries imported times (PipeDream graph.txt, fwd_us=/bwd_us=
 *      in a model file) for the whole batch: those, divided by the number of
 *      shards (COST_IMPORTED);
 *  (b) a row with the shard's exact signature (COST_MEASURED/COST_ANALYTIC);
 *  (c) the nearest measured instance, scaled by work (COST_SCALED).  A row
 *      keeps only its signature, so the work of a row is known only when the
 *      row can be re-derived from the graph at hand: the candidates are the
 *      shards (j, d') of this graph's ops of the same kind, at power-of-two
 *      degree vectors up to SCALE_MAX_DEGREE, whose signature is a measured
 *      row, and then those shards that keep the batch whole in the same
 *      graph at a power-of-two multiple of its batch (up to
 *      SCALE_MAX_DEGREE times: a profile taken at a larger batch).  Shards of op i itself come first (the same kernel configuration
 *      on another slice of the data is the best predictor); only when none
 *      of them is measured are the other ops of the kind searched.  The
 *      nearest candidate is the one whose forward roofline time R_c is
 *      closest to the missing shard's R in |log(R / R_c)|, ties going to
 *      the first in op order then degree order, so the answer is
 *      deterministic.  The answer is measured x R / R_c, forward and
 *      backward separately.  Using the roofline time as "work" scales by
 *      FLOPs for compute-bound kinds and by bytes for memory-bound ones, and
 *      keeps the launch overhead of small kernels from being scaled away;
 *  (d) otherwise the roofline estimate from the device specs (COST_ROOFLINE).
 */
#include "hw/profile.h"

#include <csv.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/csvio.h"
#include "util/output.h"
#include "util/digest.h"
#include "util/err.h"
#include "hw/roofline.h"
#include "util/grow.h"
#include "model/ops.h"

#define OPS_HEADER "signature,fwd_us,bwd_us,workspace_bytes,source"
#define OPS_NCOLS 5
#define SIG_LEN 1024

/* Largest degree product searched for a scaled fallback candidate, and
 * the largest multiple of the graph's batch; no batch past
 * SCALE_MAX_BATCH is formed for it. */
#define SCALE_MAX_DEGREE 64
#define SCALE_MAX_BATCH ((int64_t)1 << 30)

static const char *const source_names[NCOST_SOURCES] = {
	[COST_MEASURED] = "measured",
	[COST_ANALYTIC] = "analytic",
	[COST_IMPORTED] = "imported",
	[COST_SCALED] = "scaled",
	[COST_ROOFLINE] = "roofline",
};

const char *cost_source_name(enum cost_source s)
{
	if ((int)s < 0 || s >= NCOST_SOURCES)
		return "?";
	return source_names[s];
}

/* The candidates of the scaled fallback for one graph: every shard of
 * every operator whose signature has a measured row, with its roofline.
 * Finding them formats a signature per operator and degree vector, so they
 * are found once per graph (its fingerprint) and rows (gen), not per
 * lookup. */
struct scale_cand {
	int j, row;
	struct op_cost roof;
};

struct scale_cache {
	uint64_t key;
	unsigned gen;
	int valid, n, cap;
	struct scale_cand *v;
};

void profile_init(struct profile *p)
{
	memset(p, 0, sizeof *p);
}

void profile_release(struct profile *p)
{
	for (int r = 0; r < p->nrows; r++)
		free(p->rows[r].sig);
	free(p->rows);
	free(p->hash);
	if (p->scale)
		free(p->scale->v);
	free(p->scale);
	profile_init(p);
}

/* ---- hash index ---------------------------------------------------------- */

static uint64_t sig_hash(const char *s)
{
	return fnv1a64_str(FNV1A64_INIT, s);
}

/* The op kind a signature names: its prefix up to the first ':'. */
static int sig_kind(const char *sig)
{
	size_t len = strcspn(sig, ":");

	for (int k = 0; k < NOP_KINDS; k++) {
		const char *name = op_kind_name((enum op_kind)k);

		if (name && strlen(name) == len && !strncmp(name, sig, len))
			return k;
	}
	return -1;
}

/* Slot holding sig, or the empty slot where it would go. */
static int hash_slot(const struct profile *p, const char *sig)
{
	unsigned mask = (unsigned)p->hcap - 1;
	unsigned h = (unsigned)sig_hash(sig) & mask;

	while (p->hash[h] >= 0 && strcmp(p->rows[p->hash[h]].sig, sig))
		h = (h + 1) & mask;
	return (int)h;
}

/* Rebuilds the index with room for at least `need` rows at load <= 1/2,
 * which keeps linear probing short. */
static int hash_rebuild(struct profile *p, int need)
{
	int cap = 64;
	int *h;

	while (cap < 2 * need)
		cap *= 2;
	h = malloc(sizeof *h * (size_t)cap);
	if (!h)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory for the profile index");
	for (int s = 0; s < cap; s++)
		h[s] = -1;
	free(p->hash);
	p->hash = h;
	p->hcap = cap;
	for (int r = 0; r < p->nrows; r++)
		p->hash[hash_slot(p, p->rows[r].sig)] = r;
	return AP_OK;
}

const struct prof_row *profile_find(const struct profile *p, const char *sig)
{
	int s;

	if (!p->hcap)
		return NULL;
	s = hash_slot(p, sig);
	return p->hash[s] >= 0 ? &p->rows[p->hash[s]] : NULL;
}

static void count_row(struct profile *p, const struct prof_row *r, int delta)
{
	int k;

	if (r->analytic)
		return;
	k = sig_kind(r->sig);
	if (k >= 0)
		p->nmeasured[k] += delta;
}

int profile_put(struct profile *p, const char *sig, double fwd_us,
		double bwd_us, int64_t workspace_bytes, int analytic)
{
	struct prof_row *r;
	int rc = AP_OK;
	int s;

	/* the fallback's cache comes with the first row: lookups get the
	 * profile const */
	if (!p->scale && !(p->scale = calloc(1, sizeof *p->scale))) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory for a profile");
		goto out;
	}
	if (p->hcap == 0 || 2 * (p->nrows + 1) > p->hcap) {
		rc = hash_rebuild(p, p->nrows + 1);
		if (rc)
			goto out;
	}
	s = hash_slot(p, sig);
	if (p->hash[s] >= 0) {
		r = &p->rows[p->hash[s]];
		count_row(p, r, -1);
	} else {
		if (grow(&p->rows, p->nrows, &p->cap, sizeof *p->rows, 256)) {
			rc = ap_err(AP_EFAIL, NULL, 0, "out of memory for profile rows");
			goto out;
		}
		r = &p->rows[p->nrows];
		r->sig = strdup(sig);
		if (!r->sig) {
			rc = ap_err(AP_EFAIL, NULL, 0, "out of memory for a signature");
			goto out;
		}
		p->hash[s] = p->nrows++;
	}
	r->fwd_us = fwd_us;
	r->bwd_us = bwd_us;
	r->workspace_bytes = workspace_bytes;
	r->analytic = analytic ? 1 : 0;
	count_row(p, r, +1);
	p->gen++;
out:
	return rc;
}

int profile_drop_analytic(struct profile *p)
{
	int kept = 0, dropped;

	for (int r = 0; r < p->nrows; r++) {
		if (p->rows[r].analytic)
			free(p->rows[r].sig);
		else
			p->rows[kept++] = p->rows[r];
	}
	dropped = p->nrows - kept;
	p->nrows = kept;
	p->gen++;
	/* Only fails for lack of memory; the old index is then still valid
	 * for no row, so clear it and let the next put rebuild it. */
	if (dropped && hash_rebuild(p, p->nrows)) {
		free(p->hash);
		p->hash = NULL;
		p->hcap = 0;
	}
	return dropped;
}

/* ---- reading ops.csv ----------------------------------------------------- */

static const char *const ops_cols[OPS_NCOLS] = {
	"signature", "fwd_us", "bwd_us", "workspace_bytes", "source"
};

struct ops_reader {
	const char *path;
	struct profile *p;
	int *row_line;     /* line of each row, for duplicate messages */
	int row_line_cap;
	int header_done;
};

/* A time: a finite number >= 0 that fills the whole field. */
static int parse_time(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return !*s || *end || errno || !isfinite(*out) || *out < 0 ? -1 : 0;
}

static int parse_count(const char *s, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < 0)
		return -1;
	*out = v;
	return 0;
}

static int check_row(const struct csvio_rec *r, void *ctx)
{
	struct ops_reader *st = ctx;
	char *const *field = r->field;
	const struct prof_row *dup;
	double fwd, bwd;
	int64_t ws;
	int analytic, rc;

	if (r->nfield != OPS_NCOLS)
		return ap_err(AP_EINPUT, st->path, r->line,
			      "expected %d columns (%s), found %d", OPS_NCOLS,
			      OPS_HEADER, r->nfield);
	if (!st->header_done) {
		if (!csvio_header_is(r, ops_cols, OPS_NCOLS))
			return ap_err(AP_EINPUT, st->path, r->line,
				      "expected the header '%s'", OPS_HEADER);
		st->header_done = 1;
		return AP_OK;
	}
	if (!field[0][0])
		return ap_err(AP_EINPUT, st->path, r->line, "empty signature");
	if (parse_time(field[1], &fwd))
		return ap_err(AP_EINPUT, st->path, r->line,
			      "fwd_us '%s': expected a time in microseconds >= 0",
			      field[1]);
	if (parse_time(field[2], &bwd))
		return ap_err(AP_EINPUT, st->path, r->line,
			      "bwd_us '%s': expected a time in microseconds >= 0",
			      field[2]);
	if (parse_count(field[3], &ws))
		return ap_err(AP_EINPUT, st->path, r->line,
			      "workspace_bytes '%s': expected a byte count >= 0",
			      field[3]);
	if (!strcmp(field[4], "measured"))
		analytic = 0;
	else if (!strcmp(field[4], "analytic"))
		analytic = 1;
	else
		return ap_err(AP_EINPUT, st->path, r->line,
			      "unknown source '%s' (expected 'measured' or 'analytic')",
			      field[4]);
	dup = profile_find(st->p, field[0]);
	if (dup)
		return ap_err(AP_EINPUT, st->path, r->line,
			      "duplicate signature '%s' (first on line %d)",
			      field[0], st->row_line[dup - st->p->rows]);
	if (grow(&st->row_line, st->p->nrows, &st->row_line_cap, sizeof *st->row_line, 256))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory reading '%s'", st->path);
	rc = profile_put(st->p, field[0], fwd, bwd, ws, analytic);
	if (rc)
		return rc;
	st->row_line[st->p->nrows - 1] = r->line;
	return AP_OK;
}

/* Streamed: a profile holds thousands of rows, each put straight into the
 * table. */
static int read_ops(const char *path, struct profile *p)
{
	struct ops_reader st = { .path = path, .p = p };
	int rc = csvio_each(path, check_row, &st);

	if (!rc && !st.header_done)
		rc = ap_err(AP_EINPUT, path, 1, "expected the header '%s'",
			    OPS_HEADER);
	free(st.row_line);
	return rc;
}

static void dir_basename(const char *dir, char *out, size_t len)
{
	size_t end = strlen(dir), start;

	while (end > 1 && dir[end - 1] == '/')
		end--;
	start = end;
	while (start > 0 && dir[start - 1] != '/')
		start--;
	snprintf(out, len, "%.*s", (int)(end - start), dir + start);
}

int profile_load(const char *dir, struct profile *p)
{
	char path[PATH_MAX];
	int rc;

	profile_init(p);
	dir_basename(dir, p->name, sizeof p->name);
	snprintf(path, sizeof path, "%s/device.csv", dir);
	rc = device_load_one(path, &p->dev);
	if (rc)
		goto out;
	snprintf(path, sizeof path, "%s/ops.csv", dir);
	rc = read_ops(path, p);
out:
	if (rc)
		profile_release(p);
	return rc;
}

/* ---- writing ------------------------------------------------------------- */

static int mkdir_p(const char *dir)
{
	char buf[PATH_MAX];
	struct stat sb;

	snprintf(buf, sizeof buf, "%s", dir);
	for (char *s = buf + 1; ; s++) {
		int end = *s == 0;

		if (*s != '/' && !end)
			continue;
		*s = 0;
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return ap_err(AP_EINPUT, buf, 0, "cannot create directory: %s",
				      strerror(errno));
		if (end)
			break;
		*s = '/';
	}
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return ap_err(AP_EINPUT, dir, 0, "expected a directory");
	return AP_OK;
}

static int row_cmp(const void *a, const void *b)
{
	const struct prof_row *const *x = a, *const *y = b;

	return strcmp((*x)->sig, (*y)->sig);
}

/* Six significant digits: well below measurement noise, and it keeps the
 * shipped analytic profiles small. */
static int write_ops(FILE *f, void *ctx)
{
	const struct profile *p = ctx;
	const struct prof_row **order;
	int rc = AP_OK;

	order = malloc(sizeof *order * (size_t)(p->nrows ? p->nrows : 1));
	if (!order)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory writing a profile");
	for (int r = 0; r < p->nrows; r++)
		order[r] = &p->rows[r];
	/* Sorted, so a regenerated profile diffs cleanly against the old. */
	qsort(order, (size_t)p->nrows, sizeof *order, row_cmp);
	fprintf(f, "%s\n", OPS_HEADER);
	for (int r = 0; r < p->nrows; r++) {
		const struct prof_row *row = order[r];

		/* csv_fwrite quotes the field: signatures contain commas */
		if (csv_fwrite(f, row->sig, strlen(row->sig)) != 0) {
			rc = ap_err(AP_EFAIL, NULL, 0, "write failed: %s", strerror(errno));
			goto out;
		}
		fprintf(f, ",%.6g,%.6g,%" PRId64 ",%s\n", row->fwd_us, row->bwd_us,
			row->workspace_bytes, row->analytic ? "analytic" : "measured");
	}
	if (ferror(f))
		rc = ap_err(AP_EFAIL, NULL, 0, "write failed: %s", strerror(errno));
out:
	free(order);
	return rc;
}

static int write_device(FILE *f, void *ctx)
{
	const struct profile *p = ctx;

	return devices_write(f, &p->dev, 1);
}

int profile_save(const struct profile *p, const char *dir)
{
	char path[PATH_MAX];
	int rc;

	if (!p->dev.name[0])
		return ap_err(AP_EINPUT, dir, 0, "profile has no device spec to save");
	rc = mkdir_p(dir);
	if (rc)
		return rc;
	snprintf(path, sizeof path, "%s/device.csv", dir);
	rc = write_atomic(path, write_device, (void *)p);
	if (rc)
		return rc;
	snprintf(path, sizeof path, "%s/ops.csv", dir);
	return write_atomic(path, write_ops, (void *)p);
}

/* ---- analytic rows ------------------------------------------------------- */

struct analytic_ctx {
	struct profile *p;
	const struct graph *g;
	int i;
};

static int add_analytic_row(const int degree[NDIMS], void *ctx)
{
	struct analytic_ctx *c = ctx;
	char sig[SIG_LEN];
	struct op_cost cost;
	int rc;

	rc = graph_op_signature(c->g, c->i, degree, sig, sizeof sig);
	if (rc)
		return rc;
	if (profile_find(c->p, sig))
		return AP_OK;
	roofline_cost(&c->p->dev, c->g, c->i, degree, &cost);
	return profile_put(c->p, sig, cost.fwd_us, cost.bwd_us,
			   cost.workspace_bytes, 1);
}

int profile_add_analytic(struct profile *p, const struct graph *g, int max_degree)
{
	struct analytic_ctx c = { .p = p, .g = g };
	int rc = AP_OK;

	if (max_degree < 1)
		return ap_err(AP_EINPUT, NULL, 0,
			      "max degree %d: expected a positive number", max_degree);
	for (c.i = 0; c.i < g->nops; c.i++) {
		if (g->ops[c.i].m.valid)
			continue;
		rc = for_each_degree(&g->ops[c.i], max_degree, add_analytic_row, &c);
		if (rc)
			goto out;
	}
out:
	return rc;
}

/* ---- lookup -------------------------------------------------------------- */

/* FNV-1a over what a candidate's signature and roofline depend on. */
static uint64_t graph_key(const struct graph *g)
{
	uint64_t h = 1469598103934665603ull;

	for (int i = 0; i < g->nops; i++) {
		const struct op *op = &g->ops[i];
		int64_t v[4 + NDIMS] = { op->kind, op->m.valid, (int64_t)op->fwd_macs,
					 op->out_bytes };

		for (int d = 0; d < NDIMS; d++)
			v[4 + d] = shape_dim(&op->out, (enum dim_kind)d);
		for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
			h ^= (uint64_t)v[k];
			h *= 1099511628211ull;
		}
		for (const char *c = op->name; *c; c++) {
			h ^= (unsigned char)*c;
			h *= 1099511628211ull;
		}
	}
	return h;
}

struct collect_ctx {
	const struct profile *p;
	const struct graph *g;
	int j;
	int whole_n; /* only shards that do not split the batch */
};

static int collect(const int degree[NDIMS], void *ctx)
{
	struct collect_ctx *c = ctx;
	struct scale_cache *sc = c->p->scale;
	const struct prof_row *row;
	struct op_cost roof;
	char sig[SIG_LEN];
	int rc;

	if (c->whole_n && degree[DIM_N] > 1)
		return AP_OK;
	rc = graph_op_signature(c->g, c->j, degree, sig, sizeof sig);
	if (rc)
		return rc;
	row = profile_find(c->p, sig);
	if (!row || row->analytic)
		return AP_OK;
	roofline_cost(&c->p->dev, c->g, c->j, degree, &roof);
	if (roof.fwd_us <= 0 || roof.bwd_us <= 0)
		return AP_OK; /* nothing to scale by */
	if (grow(&sc->v, sc->n, &sc->cap, sizeof *sc->v, 64))
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	sc->v[sc->n++] = (struct scale_cand){ c->j, (int)(row - c->p->rows), roof };
	return AP_OK;
}

static int collect_graph(struct collect_ctx *c)
{
	int rc = AP_OK;

	for (c->j = 0; c->j < c->g->nops && !rc; c->j++)
		if (!c->g->ops[c->j].m.valid && c->p->nmeasured[c->g->ops[c->j].kind] > 0)
			rc = for_each_degree(&c->g->ops[c->j], SCALE_MAX_DEGREE, collect, c);
	return rc;
}

/* Whether g's shards at a larger batch are candidates too: not for a graph
 * with imported times, which never reads the profile for those ops and
 * whose scaled byte counts could overflow. */
static int rebatchable(const struct graph *g)
{
	for (int i = 0; i < g->nops; i++)
		if (g->ops[i].m.valid || g->ops[i].imported)
			return 0;
	return g->batch > 0;
}

/* Makes p->scale hold g's candidates: its own shards in operator then
 * degree order, then its unsplit-batch shards at the batch times 2, 4, ..
 * SCALE_MAX_DEGREE, in that order (a profile measured at a larger batch
 * than the step's, such as gpt2's rows at 8 for a step at 4: op i's own
 * kernels on more samples are a better predictor than another op's). */
static int scale_candidates(const struct profile *p, const struct graph *g)
{
	struct scale_cache *sc = p->scale;
	struct collect_ctx c = { .p = p, .g = g };
	uint64_t key = graph_key(g);
	int rc;

	if (sc->valid && sc->key == key && sc->gen == p->gen)
		return AP_OK;
	sc->valid = 0;
	sc->n = 0;
	rc = collect_graph(&c);
	for (int64_t m = 2; !rc && m <= SCALE_MAX_DEGREE && rebatchable(g) &&
			    g->batch <= SCALE_MAX_BATCH / m;
	     m *= 2) {
		struct graph big;

		if ((rc = graph_copy(&big, g)))
			break;
		rc = graph_set_batch(&big, g->batch * m);
		c.g = &big;
		c.whole_n = 1;
		if (!rc)
			rc = collect_graph(&c);
		graph_release(&big);
	}
	if (rc)
		return rc;
	sc->key = key;
	sc->gen = p->gen;
	sc->valid = 1;
	return AP_OK;
}

/* Fallback (c) of the file comment: the measured instance nearest in
 * roofline time, among op i's own shards first, then those of the other
 * operators of its kind.  Returns 1 with *out filled when a measured
 * instance was found, else 0; a failure comes back through *rc. */
static int scaled_cost(const struct profile *p, const struct graph *g, int i,
		       const struct op_cost *roof, struct op_cost *out, int *rc)
{
	enum op_kind kind = g->ops[i].kind;
	const struct scale_cand *best = NULL;
	double best_dist = 0;

	*rc = AP_OK;
	if (p->nmeasured[kind] <= 0 || roof->fwd_us <= 0)
		return 0;
	*rc = scale_candidates(p, g);
	for (int own = 1; !*rc && !best && own >= 0; own--)
		for (int k = 0; k < p->scale->n; k++) {
			const struct scale_cand *x = &p->scale->v[k];
			double dist;

			if ((x->j == i) != own || g->ops[x->j].kind != kind)
				continue;
			dist = fabs(log(roof->fwd_us / x->roof.fwd_us));
			if (!best || dist < best_dist) {
				best = x;
				best_dist = dist;
			}
		}
	if (*rc || !best)
		return 0;
	out->fwd_us = p->rows[best->row].fwd_us * roof->fwd_us / best->roof.fwd_us;
	out->bwd_us = p->rows[best->row].bwd_us * roof->bwd_us / best->roof.bwd_us;
	out->workspace_bytes = roof->workspace_bytes;
	out->source = COST_SCALED;
	return 1;
}

int profile_lookup(const struct profile *p, const struct graph *g, int i,
		   const int degree[NDIMS], struct op_cost *out)
{
	const struct op *op = &g->ops[i];
	const struct prof_row *row;
	struct op_cost roof;
	char sig[SIG_LEN];
	int rc;

	memset(out, 0, sizeof *out);
	if (op->m.valid) {
		double shards = (double)shard_count(degree);

		out->fwd_us = op->m.fwd_us / shards;
		out->bwd_us = op->m.bwd_us / shards;
		out->source = COST_IMPORTED;
		return AP_OK;
	}
	rc = graph_op_signature(g, i, degree, sig, sizeof sig);
	if (rc)
		return rc;
	row = profile_find(p, sig);
	if (row) {
		out->fwd_us = row->fwd_us;
		out->bwd_us = row->bwd_us;
		out->workspace_bytes = row->workspace_bytes;
		out->source = row->analytic ? COST_ANALYTIC : COST_MEASURED;
		return AP_OK;
	}
	roofline_cost(&p->dev, g, i, degree, &roof);
	if (scaled_cost(p, g, i, &roof, out, &rc) || rc)
		return rc;
	*out = roof;
	return AP_OK;
}

/* ---- tallies ------------------------------------------------------------- */

void cost_tally_add(struct cost_tally *t, enum cost_source s)
{
	if ((int)s >= 0 && s < NCOST_SOURCES)
		t->n[s]++;
}

void cost_tally_print(const struct cost_tally *t, FILE *f)
{
	int any = 0;

	fputs("costs:", f);
	for (int s = 0; s < NCOST_SOURCES; s++) {
		if (!t->n[s])
			continue;
		fprintf(f, "%s %" PRId64 " %s", any ? "," : "", t->n[s],
			source_names[s]);
		any = 1;
	}
	fputs(any ? "\n" : " none\n", f);
}
