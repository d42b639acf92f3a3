/*
 * Plans to disk: plan_write() (plan.h) builds the JSON of a plan, schema
 * "autopar-plan" version 1 (docs/formats.md), and writes it atomically,
 * pretty-printed, ops in graph order.  What plan_read() would refuse is
 * not written in the first place.
 */
#include "plan/plan_io.h"

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>

#include "util/output.h"
#include "util/err.h"
#include "plan/plan_impl.h"

/* Adds v to obj under key, or to the array obj when key is NULL, unless an
 * earlier step failed (bad) or obj or v could not be made.  v is consumed
 * either way, so a builder threads bad through its puts and frees nothing
 * but what it returns. */
static int put(int bad, json_t *obj, const char *key, json_t *v)
{
	if (bad || !obj || !v) {
		json_decref(v);
		return -1;
	}
	if (key)
		return json_object_set_new(obj, key, v) ? -1 : 0;
	return json_array_append_new(obj, v) ? -1 : 0;
}

/* What a builder returns: v, or NULL when a put into it failed. */
static json_t *built(json_t *v, int bad)
{
	if (bad) {
		json_decref(v);
		return NULL;
	}
	return v;
}

static json_t *id_array(const int *a, int n)
{
	json_t *arr = json_array();
	int bad = !arr;

	for (int i = 0; !bad && i < n; i++)
		bad = put(bad, arr, NULL, json_integer(a[i]));
	return built(arr, bad);
}

static json_t *build_stages(const struct plan *p)
{
	json_t *arr = json_array();
	int bad = !arr;

	for (int s = 0; !bad && s < p->nstages; s++) {
		const struct plan_stage *ps = &p->stages[s];
		json_t *o = json_object();

		bad = put(bad, o, "id", json_integer(ps->id));
		bad = put(bad, o, "devices", id_array(ps->devices, ps->ndev));
		bad = put(bad, o, "next", id_array(ps->next, ps->nnext));
		if (plan_stage_microbatches(p, s) != p->microbatches)
			bad = put(bad, o, "microbatches", json_integer(ps->microbatches));
		if (plan_stage_replicas(p, s) > 1)
			bad = put(bad, o, "replicas", json_integer(ps->replicas));
		bad = put(bad, arr, NULL, o);
	}
	return built(arr, bad);
}

static json_t *build_ops(const struct plan *p, const struct graph *g)
{
	json_t *ops = json_object();
	int bad = !ops;

	for (int i = 0; !bad && i < g->nops; i++) {
		const struct plan_op *po = &p->ops[i];
		const struct op *op = &g->ops[i];
		json_t *o = json_object(), *deg = json_object();

		/* The dims the op has, so a reader sees at a glance what
		 * could have been split; a degree on a missing dim is kept
		 * so that plan_validate() can complain about it later. */
		for (int d = 0; d < NDIMS; d++)
			if (shape_dim(&op->out, (enum dim_kind)d) >= 0 ||
			    po->degree[d] != 1)
				bad = put(bad, deg, dim_name((enum dim_kind)d),
					  json_integer(po->degree[d]));
		bad = put(bad, o, "stage", json_integer(po->stage));
		bad = put(bad, o, "degree", deg);
		bad = put(bad, o, "devices", id_array(po->devices, po->ndev));
		if (po->recompute == RECOMPUTE_SELECTIVE)
			bad = put(bad, o, "recompute", json_string("selective"));
		else if (po->recompute)
			bad = put(bad, o, "recompute", json_true());
		if (po->tensor > 1)
			bad = put(bad, o, "tensor", json_integer(po->tensor));
		bad = put(bad, ops, op->name, o);
	}
	return built(ops, bad);
}

/* Where an input came from (struct plan): its path and digest, when set. */
static int put_source(int bad, json_t *root, const char *key, const char *path,
		      const char *dkey, uint64_t digest)
{
	char d[32];

	if (path[0])
		bad = put(bad, root, key, json_string(path));
	if (digest) {
		snprintf(d, sizeof d, "fnv1a64:%016llx", (unsigned long long)digest);
		bad = put(bad, root, dkey, json_string(d));
	}
	return bad;
}

static json_t *build_root(const struct plan *p, const struct graph *g)
{
	json_t *root = json_object(), *search = json_object();
	json_t *sched = json_object(), *pred;
	int bad = 0;

	bad = put(bad, root, "format", json_string(PLAN_FORMAT));
	bad = put(bad, root, "version", json_integer(PLAN_VERSION));
	bad = put(bad, root, "model", json_string(p->model));
	bad = put_source(bad, root, "model_file", p->src.model_file, "model_digest",
			 p->src.model_digest);
	bad = put(bad, root, "batch", json_integer(p->batch));
	if (p->per_device_batch > 0)
		bad = put(bad, root, "per_device_batch", json_integer(p->per_device_batch));
	bad = put(bad, root, "cluster", json_string(p->cluster));
	bad = put(bad, root, "profile", json_string(p->profile));
	bad = put_source(bad, root, "profile_dir", p->src.profile_dir, "profile_digest",
			 p->src.profile_digest);
	bad = put(bad, root, "planner", json_string(p->planner));

	bad = put(bad, search, "seconds", json_real(p->search_s));
	bad = put(bad, search, "seed", json_integer((json_int_t)p->seed));
	for (int k = 0; k < PLAN_NCOMMON; k++)
		if (!isnan(PLAN_COMMON(p, k)))
			bad = put(bad, search, plan_common_names[k], json_real(PLAN_COMMON(p, k)));
	for (int i = 0; i < p->nstats; i++)
		bad = put(bad, search, p->stat_name[i], json_real(p->stat_value[i]));
	if (p->ncurve > 0) {
		json_t *curve = json_array();

		for (int k = 0; k < p->ncurve; k++) {
			json_t *pt = json_array();
			int pbad = put(0, pt, NULL, json_real(p->curve[k][0]));

			pbad = put(pbad, pt, NULL, json_real(p->curve[k][1]));
			bad = put(bad, curve, NULL, built(pt, pbad));
		}
		bad = put(bad, search, "curve", curve);
	}
	bad = put(bad, root, "search", search);

	bad = put(bad, sched, "kind", json_string(sched_name(p->sched)));
	bad = put(bad, sched, "microbatches", json_integer(p->microbatches));
	bad = put(bad, root, "schedule", sched);
	if (p->precision != PREC_FP32 || p->zero || p->seq_parallel || p->has_optimizer) {
		json_t *tr = json_object();
		int tbad = put(0, tr, "precision", json_string(precision_name(p->precision)));

		tbad = put(tbad, tr, "zero", json_integer(p->zero));
		tbad = put(tbad, tr, "sequence_parallel", json_boolean(p->seq_parallel));
		if (p->has_optimizer)
			tbad = put(tbad, tr, "optimizer", json_string(optimizer_name(p->optimizer)));
		bad = put(bad, root, "training", built(tr, tbad));
	}
	bad = put(bad, root, "stages", build_stages(p));
	bad = put(bad, root, "ops", build_ops(p, g));

	/* Only what the simulator filled in; a fresh plan has no
	 * "predicted" at all. */
	if (p->pred_iter_ms >= 0 || p->pred_samples_per_s >= 0 ||
	    p->pred_peak_mem_bytes >= 0 || p->pred_bubble >= 0) {
		pred = json_object();
		if (p->pred_iter_ms >= 0)
			bad = put(bad, pred, "iter_ms", json_real(p->pred_iter_ms));
		if (p->pred_samples_per_s >= 0)
			bad = put(bad, pred, "samples_per_s",
				  json_real(p->pred_samples_per_s));
		if (p->pred_peak_mem_bytes >= 0)
			bad = put(bad, pred, "peak_mem_bytes",
				  json_integer(p->pred_peak_mem_bytes));
		if (p->pred_bubble >= 0)
			bad = put(bad, pred, "bubble", json_real(p->pred_bubble));
		if (p->pred_fits >= 0)
			bad = put(bad, pred, "fits_memory", json_boolean(p->pred_fits));
		bad = put(bad, root, "predicted", pred);
	}
	return built(root, bad);
}

struct write_ctx {
	const char *path;
	json_t *root;
};

static int write_json(FILE *f, void *arg)
{
	struct write_ctx *w = arg;

	/* One member a line, in the order built (graph order for ops), so
	 * two plans of one model diff line by line.  Reals get DBL_DIG (15)
	 * significant digits: every decimal of up to 15 digits reads back
	 * as the same double, and 0.1 is not written 0.10000000000000001. */
	if (json_dumpf(w->root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
				   JSON_REAL_PRECISION(DBL_DIG)) ||
	    fputc('\n', f) == EOF)
		return ap_err(AP_EFAIL, w->path, 0, "write failed: %m");
	return AP_OK;
}

int plan_write(const struct plan *p, const struct graph *g, const char *path)
{
	struct write_ctx w = { .path = path, .root = NULL };
	int st;

	if (p->nops != g->nops) {
		st = ap_err(AP_EINPUT, path, 0,
			    "plan has %d operators but model '%s' has %d", p->nops,
			    g->name, g->nops);
		goto out;
	}
	/* What plan_read() would refuse is not written in the first place. */
	if (p->seed > INT64_MAX) {
		st = ap_err(AP_EINPUT, path, 0,
			    "search.seed: %llu is too large (at most %lld)",
			    (unsigned long long)p->seed, (long long)INT64_MAX);
		goto out;
	}
	for (int k = 0; k < PLAN_NCOMMON; k++) {
		if (isinf(PLAN_COMMON(p, k))) {
			st = ap_err(AP_EINPUT, path, 0, "search.%s: expected a finite number",
				    plan_common_names[k]);
			goto out;
		}
	}
	for (int i = 0; i < p->nstats; i++) {
		if (!isfinite(p->stat_value[i]) || plan_stat_reserved(p->stat_name[i])) {
			st = ap_err(AP_EINPUT, path, 0,
				    "search.%s: expected a finite number under a name other than seconds or seed",
				    p->stat_name[i]);
			goto out;
		}
	}
	if (!isfinite(p->search_s) || !isfinite(p->pred_iter_ms) ||
	    !isfinite(p->pred_samples_per_s) || !isfinite(p->pred_bubble)) {
		st = ap_err(AP_EINPUT, path, 0,
			    "search.seconds or predicted: expected finite numbers");
		goto out;
	}
	w.root = build_root(p, g);
	if (!w.root) {
		st = ap_err(AP_EFAIL, path, 0, "out of memory building the plan");
		goto out;
	}
	st = write_atomic(path, write_json, &w);
out:
	json_decref(w.root);
	return st;
}
