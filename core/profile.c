/*
 * Operator cost profiles: a table of measured (or analytic) forward and
 * backward times of operator shards, keyed by graph_op_signature(), with the
 * device's specs; CSV files read with libcsv; and the lookup every planner
 * and the simulator use, which always says where an answer came from.
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
 *      row.  Shards of op i itself come first (the same kernel configuration
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
#include "profile.h"

#include <csv.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "datadir.h"
#include "err.h"

#define OPS_HEADER "signature,fwd_us,bwd_us,workspace_bytes,source"
#define OPS_NCOLS 5
#define SIG_LEN 1024

/*
 * Achievable fractions of the datasheet peaks.  Well-tuned cuBLAS/cuDNN
 * float32 GEMMs and convolutions reach 60-80% of peak FMA throughput on
 * large shapes, and streaming kernels 75-90% of peak DRAM bandwidth (STREAM
 * style measurements on V100/A100/H100).  We take 70% and 80%.
 */
#define MATH_EFFICIENCY 0.70
#define BW_EFFICIENCY 0.80

/* Largest degree product searched for a scaled fallback candidate. */
#define SCALE_MAX_DEGREE 64

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
	profile_init(p);
}

/* ---- hash index ---------------------------------------------------------- */

/* FNV-1a, 64 bit. */
static uint64_t sig_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
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
		if (p->nrows == p->cap) {
			int cap = p->cap ? 2 * p->cap : 256;
			struct prof_row *rows = realloc(p->rows, sizeof *rows * (size_t)cap);

			if (!rows) {
				rc = ap_err(AP_EFAIL, NULL, 0, "out of memory for profile rows");
				goto out;
			}
			p->rows = rows;
			p->cap = cap;
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

struct ops_reader {
	const char *path;
	struct profile *p;
	int *row_line;     /* line of each row, for duplicate messages */
	int row_line_cap;
	int line;          /* physical line being fed to the parser */
	int rec_line;      /* line where the current record started */
	int nfields;
	char *field[OPS_NCOLS];
	int header_done;
	int rc;
};

static void reader_clear(struct ops_reader *st)
{
	for (int f = 0; f < OPS_NCOLS; f++) {
		free(st->field[f]);
		st->field[f] = NULL;
	}
	st->nfields = 0;
}

static void on_field(void *data, size_t len, void *ctx)
{
	struct ops_reader *st = ctx;

	if (st->rc)
		return;
	if (st->nfields == 0)
		st->rec_line = st->line;
	if (st->nfields < OPS_NCOLS) {
		char *s = malloc(len + 1);

		if (!s) {
			st->rc = ap_err(AP_EFAIL, NULL, 0, "out of memory reading '%s'",
					st->path);
			return;
		}
		if (len)
			memcpy(s, data, len);
		s[len] = 0;
		st->field[st->nfields] = s;
	}
	st->nfields++;
}

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

static int check_row(struct ops_reader *st)
{
	const char *const col[OPS_NCOLS] = {
		"signature", "fwd_us", "bwd_us", "workspace_bytes", "source"
	};
	const struct prof_row *dup;
	double fwd, bwd;
	int64_t ws;
	int analytic, rc;

	if (st->nfields != OPS_NCOLS)
		return ap_err(AP_EINPUT, st->path, st->rec_line,
			      "expected %d columns (%s), found %d", OPS_NCOLS,
			      OPS_HEADER, st->nfields);
	if (!st->header_done) {
		for (int f = 0; f < OPS_NCOLS; f++)
			if (strcmp(st->field[f], col[f]))
				return ap_err(AP_EINPUT, st->path, st->rec_line,
					      "expected the header '%s'", OPS_HEADER);
		st->header_done = 1;
		return AP_OK;
	}
	if (!st->field[0][0])
		return ap_err(AP_EINPUT, st->path, st->rec_line, "empty signature");
	if (parse_time(st->field[1], &fwd))
		return ap_err(AP_EINPUT, st->path, st->rec_line,
			      "fwd_us '%s': expected a time in microseconds >= 0",
			      st->field[1]);
	if (parse_time(st->field[2], &bwd))
		return ap_err(AP_EINPUT, st->path, st->rec_line,
			      "bwd_us '%s': expected a time in microseconds >= 0",
			      st->field[2]);
	if (parse_count(st->field[3], &ws))
		return ap_err(AP_EINPUT, st->path, st->rec_line,
			      "workspace_bytes '%s': expected a byte count >= 0",
			      st->field[3]);
	if (!strcmp(st->field[4], "measured"))
		analytic = 0;
	else if (!strcmp(st->field[4], "analytic"))
		analytic = 1;
	else
		return ap_err(AP_EINPUT, st->path, st->rec_line,
			      "unknown source '%s' (expected 'measured' or 'analytic')",
			      st->field[4]);
	dup = profile_find(st->p, st->field[0]);
	if (dup)
		return ap_err(AP_EINPUT, st->path, st->rec_line,
			      "duplicate signature '%s' (first on line %d)",
			      st->field[0], st->row_line[dup - st->p->rows]);
	if (st->p->nrows == st->row_line_cap) {
		int cap = st->row_line_cap ? 2 * st->row_line_cap : 256;
		int *rl = realloc(st->row_line, sizeof *rl * (size_t)cap);

		if (!rl)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory reading '%s'",
				      st->path);
		st->row_line = rl;
		st->row_line_cap = cap;
	}
	rc = profile_put(st->p, st->field[0], fwd, bwd, ws, analytic);
	if (rc)
		return rc;
	st->row_line[st->p->nrows - 1] = st->rec_line;
	return AP_OK;
}

static void on_record(int term, void *ctx)
{
	struct ops_reader *st = ctx;

	(void)term;
	if (!st->rc)
		st->rc = check_row(st);
	reader_clear(st);
}

static int read_ops(const char *path, struct profile *p)
{
	struct ops_reader st = { .path = path, .p = p };
	struct csv_parser parser;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f = NULL;
	int rc = AP_OK, parser_ok = 0;

	f = fopen(path, "r");
	if (!f) {
		rc = ap_err(AP_EINPUT, path, 0, "cannot read: %s", strerror(errno));
		goto out;
	}
	if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI) != 0) {
		rc = ap_err(AP_EFAIL, NULL, 0, "out of memory for the CSV parser");
		goto out;
	}
	parser_ok = 1;
	/* Fed a line at a time so that messages can name the line. */
	while (!st.rc && (n = getline(&buf, &cap, f)) >= 0) {
		st.line++;
		if (csv_parse(&parser, buf, (size_t)n, on_field, on_record, &st) !=
		    (size_t)n && !st.rc)
			st.rc = ap_err(AP_EINPUT, path, st.line,
				       "malformed CSV (%s)",
				       csv_strerror(csv_error(&parser)));
	}
	if (!st.rc && ferror(f))
		st.rc = ap_err(AP_EFAIL, path, 0, "read failed: %s", strerror(errno));
	if (!st.rc && csv_fini(&parser, on_field, on_record, &st) != 0 && !st.rc)
		st.rc = ap_err(AP_EINPUT, path, st.line,
			       "malformed CSV (unterminated quote)");
	if (!st.rc && !st.header_done)
		st.rc = ap_err(AP_EINPUT, path, 1, "expected the header '%s'",
			       OPS_HEADER);
	rc = st.rc;
out:
	reader_clear(&st);
	free(st.row_line);
	if (parser_ok)
		csv_free(&parser);
	free(buf);
	if (f)
		fclose(f);
	return rc;
}

/* Line of the n-th non-blank line of a file (1-based), or 0.  Points a
 * message at the device row that should not be there. */
static int nth_record_line(const char *path, int nth)
{
	char *buf = NULL;
	size_t cap = 0;
	int line = 0, seen = 0, found = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	while (getline(&buf, &cap, f) >= 0) {
		line++;
		if (buf[strspn(buf, " \t\r\n")] && ++seen == nth) {
			found = line;
			break;
		}
	}
	free(buf);
	fclose(f);
	return found;
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
	struct device_spec *devs = NULL;
	int ndev = 0, rc;

	profile_init(p);
	dir_basename(dir, p->name, sizeof p->name);
	snprintf(path, sizeof path, "%s/device.csv", dir);
	rc = devices_load(path, &devs, &ndev);
	if (rc)
		goto out;
	if (ndev != 1) {
		int line = ndev ? nth_record_line(path, 3) : 1;

		rc = ap_err(AP_EINPUT, path, line > 0 ? line : 1,
			    "expected exactly one device row after the header, found %d",
			    ndev);
		goto out;
	}
	p->dev = devs[0];
	snprintf(path, sizeof path, "%s/ops.csv", dir);
	rc = read_ops(path, p);
out:
	free(devs);
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

/* ---- roofline ------------------------------------------------------------ */

static int64_t shard_count(const int degree[NDIMS])
{
	int64_t n = 1;

	for (int d = 0; d < NDIMS; d++)
		n *= degree[d] > 0 ? degree[d] : 1;
	return n;
}

/* Kernel launches of one op, forward and backward.  Views (flatten,
 * reshape) and the input launch none.  Ops with weights launch two backward
 * kernels (input gradient, weight gradient).  Attention runs the q/k/v and
 * output projections, two batched GEMMs and a softmax; its backward doubles
 * the GEMMs.  A cuDNN LSTM layer runs one input GEMM and one kernel per
 * time step in each direction, which is why recurrent layers are
 * latency-bound at small batch. */
static void kernel_counts(const struct op *op, int *fwd, int *bwd)
{
	int64_t steps;

	switch (op->kind) {
	case OP_INPUT:
	case OP_FLATTEN:
	case OP_RESHAPE:
		*fwd = *bwd = 0;
		break;
	case OP_CONV2D:
	case OP_LINEAR:
	case OP_MATMUL:
	case OP_BATCHNORM:
	case OP_LAYERNORM:
		*fwd = 1;
		*bwd = 2;
		break;
	case OP_ATTENTION:
		*fwd = 6;
		*bwd = 11;
		break;
	case OP_LSTM:
		steps = shape_size(&op->out, DIM_L);
		if (steps > 100000)
			steps = 100000;
		*fwd = (op->a.bidir ? 2 : 1) * (1 + (int)steps);
		*bwd = 2 * *fwd;
		break;
	default:
		*fwd = *bwd = 1;
		break;
	}
}

/* Kinds whose output channels come from a reduction over the whole input:
 * splitting their output c leaves every shard reading the whole input. */
static int reduces_input(enum op_kind k)
{
	return k == OP_CONV2D || k == OP_LINEAR || k == OP_LSTM ||
	       k == OP_ATTENTION || k == OP_EMBEDDING;
}

/*
 * The roofline model (Williams, Waterman, Patterson, CACM 2009): a kernel
 * takes the longer of its arithmetic at the achievable FLOP rate and its
 * DRAM traffic at the achievable bandwidth, plus a fixed launch cost.
 *
 *   fwd = max((2 macs + elems) / (eff_math rate), bytes / (eff_bw bw)) + k_f launch
 *   bwd = max((2 bwd_macs + elems) / (eff_math rate), 2 bytes / (eff_bw bw)) + k_b launch
 *
 * for the shard: MACs and elements are the op's divided by the number of
 * shards; bytes = inputs + output + weights, float32.  The output is split
 * by every degree; inputs too, except that an output-channel split of a
 * reducing kind (conv2d, linear, ...) leaves each shard the whole input;
 * weights are split only by the output-channel degree (an n/h/w/l split
 * replicates them).  Backward reads and writes about twice the forward's
 * bytes (gradients of output, input and weights besides the saved tensors).
 * rate is the float32 FMA rate, not the tensor-core rate: the zoo trains in
 * float32, as the PipeDream- and FlexFlow-era papers did.  conv2d asks for
 * a workspace about the size of its shard's input, a rough stand-in for
 * what cuDNN's implicit-GEMM and FFT algorithms request.
 */
void roofline_cost(const struct device_spec *dev, const struct graph *g, int i,
		   const int degree[NDIMS], struct op_cost *out)
{
	const struct op *op = &g->ops[i];
	double shards = (double)shard_count(degree);
	double dc = degree[DIM_C] > 0 ? degree[DIM_C] : 1;
	double rate = dev->fp32_flops_per_s * MATH_EFFICIENCY;
	double bw = dev->mem_bw_bytes_per_s * BW_EFFICIENCY;
	double in_bytes = 0, w_bytes, bytes, fwd_flops, bwd_flops;
	double in_div = reduces_input(op->kind) ? shards / dc : shards;
	int64_t weights = op->params;
	int kf, kb;

	for (int k = 0; k < op->nin; k++)
		in_bytes += (double)g->ops[op->in[k]].out_bytes;
	/* a tied layer owns no parameters but still reads the shared weight */
	if (op->kind == OP_LINEAR && op->a.tie >= 0 && op->a.tie < g->nops)
		weights = g->ops[op->a.tie].params;
	w_bytes = (double)weights * BYTES_PER_ELEM / dc;
	bytes = in_bytes / in_div + (double)op->out_bytes / shards + w_bytes;
	fwd_flops = (2.0 * (double)op->fwd_macs + (double)op->fwd_elems) / shards;
	bwd_flops = (2.0 * (double)op->bwd_macs + (double)op->fwd_elems) / shards;
	kernel_counts(op, &kf, &kb);

	memset(out, 0, sizeof *out);
	out->source = COST_ROOFLINE;
	if (kf == 0 && kb == 0)
		return; /* a view: no kernel, no traffic */
	out->fwd_us = 1e6 * fmax(rate > 0 ? fwd_flops / rate : 0,
				 bw > 0 ? bytes / bw : 0) + kf * dev->launch_us;
	out->bwd_us = 1e6 * fmax(rate > 0 ? bwd_flops / rate : 0,
				 bw > 0 ? 2 * bytes / bw : 0) + kb * dev->launch_us;
	if (op->kind == OP_CONV2D)
		out->workspace_bytes = (int64_t)(in_bytes / in_div);
}

/* ---- degree vectors ------------------------------------------------------ */

typedef int (*degree_fn)(const int degree[NDIMS], void *ctx);

/* Calls fn for every degree vector of op whose entries are powers of two
 * over its splittable dims, each dividing the dim, product <= max_degree;
 * in a fixed order (dims n, c, h, w, l; smaller degrees first).  Stops at
 * the first non-zero return of fn and returns it. */
static int degrees_rec(const struct op *op, int d, int prod, int max_degree,
		       int degree[NDIMS], degree_fn fn, void *ctx)
{
	int64_t size;
	int rc;

	if (d == NDIMS)
		return fn(degree, ctx);
	size = shape_dim(&op->out, (enum dim_kind)d) >= 0 ?
	       shape_size(&op->out, (enum dim_kind)d) : 1;
	if (!(op->split_mask & (1u << d)))
		size = 1;
	for (int f = 1; (int64_t)prod * f <= max_degree && size % f == 0; f *= 2) {
		degree[d] = f;
		rc = degrees_rec(op, d + 1, prod * f, max_degree, degree, fn, ctx);
		if (rc)
			return rc;
	}
	degree[d] = 1;
	return 0;
}

static int for_each_degree(const struct op *op, int max_degree, degree_fn fn,
			   void *ctx)
{
	int degree[NDIMS];

	for (int d = 0; d < NDIMS; d++)
		degree[d] = 1;
	return degrees_rec(op, 0, 1, max_degree, degree, fn, ctx);
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

struct nearest_ctx {
	const struct profile *p;
	const struct graph *g;
	int j;                /* op whose shards are being tried */
	double want_fwd;      /* roofline of the missing shard */
	double best_dist;     /* |log ratio| of the best candidate so far */
	const struct prof_row *best;
	struct op_cost best_roof;
	int rc;
};

static int try_candidate(const int degree[NDIMS], void *ctx)
{
	struct nearest_ctx *c = ctx;
	const struct prof_row *row;
	struct op_cost roof;
	char sig[SIG_LEN];
	double dist;
	int rc;

	rc = graph_op_signature(c->g, c->j, degree, sig, sizeof sig);
	if (rc)
		return rc;
	row = profile_find(c->p, sig);
	if (!row || row->analytic)
		return 0;
	roofline_cost(&c->p->dev, c->g, c->j, degree, &roof);
	if (roof.fwd_us <= 0 || roof.bwd_us <= 0)
		return 0; /* nothing to scale by */
	dist = fabs(log(c->want_fwd / roof.fwd_us));
	if (!c->best || dist < c->best_dist) {
		c->best = row;
		c->best_dist = dist;
		c->best_roof = roof;
	}
	return 0;
}

/* Fallback (c) of the file comment.  Returns 1 with *out filled when a
 * measured instance was found, else 0; a failure (from the signature
 * writer) comes back through *rc. */
static int scaled_cost(const struct profile *p, const struct graph *g, int i,
		       const struct op_cost *roof, struct op_cost *out, int *rc)
{
	struct nearest_ctx c = { .p = p, .g = g, .want_fwd = roof->fwd_us };
	enum op_kind kind = g->ops[i].kind;

	*rc = AP_OK;
	if (p->nmeasured[kind] <= 0 || roof->fwd_us <= 0)
		return 0;
	c.j = i;
	*rc = for_each_degree(&g->ops[i], SCALE_MAX_DEGREE, try_candidate, &c);
	for (c.j = 0; !*rc && !c.best && c.j < g->nops; c.j++) {
		if (c.j == i || g->ops[c.j].kind != kind || g->ops[c.j].m.valid)
			continue;
		*rc = for_each_degree(&g->ops[c.j], SCALE_MAX_DEGREE,
				      try_candidate, &c);
	}
	if (*rc || !c.best)
		return 0;
	out->fwd_us = c.best->fwd_us * roof->fwd_us / c.best_roof.fwd_us;
	out->bwd_us = c.best->bwd_us * roof->bwd_us / c.best_roof.bwd_us;
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
