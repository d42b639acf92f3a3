/*
 * Plans from disk: plan_read() and plan_peek() (plan.h).  A plan is the one
 * thing every planner hands to the simulator and the runtime, so it is
 * read strictly: the JSON schema "autopar-plan" version 1 (docs/formats.md)
 * is checked field by field and every complaint names the field as a path
 * ("ops.fc1.degree.c"), because jansson keeps line numbers only for syntax
 * errors.  Only what the JSON alone can tell is checked here; plan_check.c
 * holds plan_validate(), which checks a plan against the graph and the
 * cluster it is meant for, so planners can validate what they build before
 * anything is written.
 */
#include "plan/plan_io.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "plan/plan_impl.h"

#define FIELD_LEN 256

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a real number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "a value";
}

/* The path of a member for messages: "key" at the top, else "prefix.key". */
static const char *field(char *buf, const char *prefix, const char *key)
{
	size_t n = 0;

	/* Op names are short (NAME_LEN), so FIELD_LEN is never reached in
	 * practice; a path cut there would still say where to look. */
	if (prefix && prefix[0]) {
		n = strnlen(prefix, FIELD_LEN - 2);
		memcpy(buf, prefix, n);
		buf[n++] = '.';
	}
	snprintf(buf + n, FIELD_LEN - n, "%s", key);
	return buf;
}

/* Rejects members not in allowed[], so a misspelt field is an error rather
 * than a silently ignored default. */
static int check_keys(const char *path, const char *prefix, json_t *obj,
		      const char *const *allowed)
{
	char fld[FIELD_LEN], list[256];
	const char *key;
	json_t *v;
	size_t len = 0;

	json_object_foreach(obj, key, v) {
		int ok = 0;

		for (int i = 0; allowed[i]; i++)
			if (strcmp(key, allowed[i]) == 0)
				ok = 1;
		if (ok)
			continue;
		list[0] = 0;
		for (int i = 0; allowed[i] && len < sizeof list; i++)
			len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
						i ? ", " : "", allowed[i]);
		return ap_err(AP_EINPUT, path, 0, "%s: unknown field '%s' (expected %s)",
			      field(fld, prefix, key), key, list);
	}
	return AP_OK;
}

/* An object whose members, when allowed is not NULL, are all in it. */
static int as_object(const char *path, const char *fld, json_t *v,
		     const char *const *allowed)
{
	if (!json_is_object(v))
		return ap_err(AP_EINPUT, path, 0, "%s: expected an object, got %s",
			      fld, json_kind(v));
	return allowed ? check_keys(path, fld, v, allowed) : AP_OK;
}

/* An integer in [min, max]; min is 0 or 1 wherever the schema asks for
 * non-negative or positive numbers, which the message spells out. */
static int as_int(const char *path, const char *fld, json_t *v, int64_t min,
		  int64_t max, int64_t *out)
{
	const char *want = min == 1 ? "a positive integer" :
			   min == 0 ? "a non-negative integer" : "an integer";
	json_int_t x;

	if (!json_is_integer(v))
		return ap_err(AP_EINPUT, path, 0, "%s: expected %s, got %s", fld,
			      want, json_kind(v));
	x = json_integer_value(v);
	if (x < min)
		return ap_err(AP_EINPUT, path, 0, "%s: expected %s, got %lld", fld,
			      want, (long long)x);
	if (x > max)
		return ap_err(AP_EINPUT, path, 0, "%s: %lld is too large (at most %lld)",
			      fld, (long long)x, (long long)max);
	*out = x;
	return AP_OK;
}

static int as_int32(const char *path, const char *fld, json_t *v, int min, int *out)
{
	int64_t x;
	int st = as_int(path, fld, v, min, INT_MAX, &x);

	if (st == AP_OK)
		*out = (int)x;
	return st;
}

/* Member key of obj in *x, NULL when absent and not required, and its path
 * for messages in fld (FIELD_LEN bytes). */
static int member(const char *path, json_t *obj, const char *prefix,
		  const char *key, int required, json_t **x, char *fld)
{
	int top = !prefix || !prefix[0];

	field(fld, prefix, key);
	*x = json_object_get(obj, key);
	if (!*x && required)
		return ap_err(AP_EINPUT, path, 0, "%s%smissing field '%s'",
			      top ? "" : prefix, top ? "" : ": ", key);
	return AP_OK;
}

/* The get_*() read member key of obj (as member() finds it) into *out,
 * which keeps its value when the member is absent and not required. */
static int get_int(const char *path, json_t *obj, const char *prefix,
		   const char *key, int required, int64_t min, int64_t *out)
{
	char fld[FIELD_LEN];
	json_t *x;
	int st = member(path, obj, prefix, key, required, &x, fld);

	return st || !x ? st : as_int(path, fld, x, min, INT64_MAX, out);
}

static int get_int32(const char *path, json_t *obj, const char *prefix,
		     const char *key, int required, int min, int *out)
{
	char fld[FIELD_LEN];
	json_t *x;
	int st = member(path, obj, prefix, key, required, &x, fld);

	return st || !x ? st : as_int32(path, fld, x, min, out);
}

/* A finite number >= 0; JSON integers count as numbers. */
static int get_number(const char *path, json_t *obj, const char *prefix,
		      const char *key, int required, double *out)
{
	char fld[FIELD_LEN];
	json_t *x;
	double d;
	int st = member(path, obj, prefix, key, required, &x, fld);

	if (st || !x)
		return st;
	if (!json_is_number(x))
		return ap_err(AP_EINPUT, path, 0, "%s: expected a number, got %s", fld,
			      json_kind(x));
	d = json_number_value(x);
	if (!(d >= 0) || !isfinite(d))
		return ap_err(AP_EINPUT, path, 0,
			      "%s: expected a non-negative number, got %g", fld, d);
	*out = d;
	return AP_OK;
}

/* A string that fits buf: a longer one is an error, never cut short. */
/* An optional true or false member; absent is false. */
static int get_bool(const char *path, json_t *obj, const char *prefix, const char *key, int *out)
{
	char fld[FIELD_LEN];
	json_t *x;
	int st = member(path, obj, prefix, key, 0, &x, fld);

	if (st || !x)
		return st;
	if (!json_is_boolean(x))
		return ap_err(AP_EINPUT, path, 0, "%s: expected true or false, got %s", fld,
			      json_kind(x));
	*out = json_is_true(x);
	return AP_OK;
}

static int get_string(const char *path, json_t *obj, const char *prefix,
		      const char *key, int required, char *buf, size_t len)
{
	char fld[FIELD_LEN];
	json_t *x;
	const char *s;
	int st = member(path, obj, prefix, key, required, &x, fld);

	if (st || !x)
		return st;
	if (!json_is_string(x))
		return ap_err(AP_EINPUT, path, 0, "%s: expected a string, got %s", fld,
			      json_kind(x));
	s = json_string_value(x);
	if (strlen(s) >= len)
		return ap_err(AP_EINPUT, path, 0,
			      "%s: '%s' is too long (at most %zu characters)", fld, s,
			      len - 1);
	snprintf(buf, len, "%s", s);
	return AP_OK;
}

/* Where an input came from (struct plan_source): key, any path (the command
 * that loads it checks the file against the digest), and dkey, "fnv1a64:"
 * and 16 hex digits. */
static int get_source(const char *path, json_t *root, const char *key, char *file, size_t len,
		      const char *dkey, uint64_t *digest)
{
	static const char hex[] = "0123456789abcdef";
	char d[32];
	int st;

	*digest = 0;
	d[0] = 0;
	st = get_string(path, root, NULL, key, 0, file, len);
	if (!st)
		st = get_string(path, root, NULL, dkey, 0, d, sizeof d);
	if (st || !d[0])
		return st;
	if (strncmp(d, "fnv1a64:", 8) || strlen(d) != 24 || strspn(d + 8, hex) != 16 ||
	    !(*digest = strtoull(d + 8, NULL, 16)))
		return ap_err(AP_EINPUT, path, 0, "%s: expected 'fnv1a64:' and 16 lower-case "
			      "hex digits, not all zero, got '%s'", dkey, d);
	return AP_OK;
}

static int get_sources(const char *path, json_t *root, struct plan_source *src)
{
	int st = get_source(path, root, "model_file", src->model_file, sizeof src->model_file,
			    "model_digest", &src->model_digest);

	return st ? st : get_source(path, root, "profile_dir", src->profile_dir,
				    sizeof src->profile_dir, "profile_digest",
				    &src->profile_digest);
}

/* An array of device or stage ids.  Ranges are checked by plan_validate(),
 * which knows the cluster; here only the type and the sign. */
static int get_ids(const char *path, json_t *obj, const char *prefix,
		   const char *key, int required, int **out, int *n)
{
	char fld[FIELD_LEN], efld[FIELD_LEN + 24];
	size_t len, i;
	json_t *v;
	int *a = NULL;
	int st = member(path, obj, prefix, key, required, &v, fld);

	if (st || !v)
		return st;
	if (!json_is_array(v))
		return ap_err(AP_EINPUT, path, 0, "%s: expected an array, got %s", fld,
			      json_kind(v));
	len = json_array_size(v);
	if (len > INT_MAX)
		return ap_err(AP_EINPUT, path, 0, "%s: too many entries", fld);
	if (len) {
		a = malloc(len * sizeof *a);
		if (!a)
			return ap_err(AP_EFAIL, path, 0, "out of memory");
	}
	for (i = 0; i < len && !st; i++) {
		snprintf(efld, sizeof efld, "%s[%zu]", fld, i);
		st = as_int32(path, efld, json_array_get(v, i), 0, &a[i]);
	}
	if (st) {
		free(a);
		return st;
	}
	free(*out);
	*out = a;
	*n = (int)len;
	return AP_OK;
}

/* search.curve: [[seconds, ms], ...] in time order. */
static int read_curve(const char *path, const char *fld, json_t *v, struct plan *p)
{
	size_t k;
	json_t *pt;

	if (!json_is_array(v))
		return ap_err(AP_EINPUT, path, 0, "%s: expected an array of [seconds, ms], got %s",
			      fld, json_kind(v));
	json_array_foreach(v, k, pt) {
		json_t *t = json_array_get(pt, 0), *ms = json_array_get(pt, 1);

		if (!json_is_array(pt) || json_array_size(pt) != 2 || !json_is_number(t) ||
		    !json_is_number(ms))
			return ap_err(AP_EINPUT, path, 0, "%s[%zu]: expected [seconds, ms]", fld, k);
		if (plan_add_curve(p, json_number_value(t), json_number_value(ms)))
			return ap_err(AP_EINPUT, path, 0,
				      "%s[%zu]: expected finite numbers, seconds in order", fld, k);
	}
	return AP_OK;
}

static int read_search(const char *path, json_t *v, struct plan *p)
{
	char fld[FIELD_LEN];
	const char *key;
	json_t *x;
	int64_t seed;
	int st;

	st = as_object(path, "search", v, NULL);
	if (st)
		return st;
	json_object_foreach(v, key, x) {
		int k = 0;

		while (k < PLAN_NCOMMON && strcmp(key, plan_common_names[k]))
			k++;
		field(fld, "search", key);
		if (k < PLAN_NCOMMON) {
			/* a bound or a gap may be zero; none is negative */
			st = get_number(path, v, "search", key, 0, &PLAN_COMMON(p, k));
		} else if (strcmp(key, "seconds") == 0) {
			st = get_number(path, v, "search", key, 1, &p->search_s);
		} else if (strcmp(key, "seed") == 0) {
			st = get_int(path, v, "search", key, 1, 0, &seed);
			if (!st)
				p->seed = (uint64_t)seed;
		} else if (strcmp(key, "curve") == 0) {
			st = read_curve(path, fld, x, p);
		} else if (!json_is_number(x)) {
			st = ap_err(AP_EINPUT, path, 0,
				    "%s: expected a number (a planner statistic), got %s",
				    fld, json_kind(x));
		} else if (strlen(key) >= sizeof p->stat_name[0]) {
			st = ap_err(AP_EINPUT, path, 0,
				    "%s: statistic name too long (at most %zu characters)",
				    fld, sizeof p->stat_name[0] - 1);
		} else {
			/* Statistics may be negative (a log-likelihood, a
			 * difference), so no get_number() here. */
			st = plan_set_stat(p, key, json_number_value(x));
		}
		if (st)
			return st;
	}
	return AP_OK;
}

static int read_schedule(const char *path, json_t *v, struct plan *p)
{
	static const char *const keys[] = { "kind", "microbatches", NULL };
	char kind[32];
	int st;

	st = as_object(path, "schedule", v, keys);
	if (!st)
		st = get_string(path, v, "schedule", "kind", 1, kind, sizeof kind);
	if (st)
		return st;
	if (sched_parse(kind, &p->sched))
		return ap_err(AP_EINPUT, path, 0,
			      "schedule.kind: unknown schedule '%s' (expected gpipe, 1f1b, 1f1b-async, async-predict, interleaved-1f1b or zb-h1)",
			      kind);
	return get_int32(path, v, "schedule", "microbatches", 1, 1, &p->microbatches);
}

static int read_stages(const char *path, json_t *v, struct plan *p)
{
	static const char *const keys[] = { "id", "devices", "next", "microbatches", "replicas",
					    NULL };
	char pre[FIELD_LEN];
	size_t n;
	int st = AP_OK;

	if (!json_is_array(v))
		return ap_err(AP_EINPUT, path, 0, "stages: expected an array, got %s",
			      json_kind(v));
	n = json_array_size(v);
	if (n == 0)
		return ap_err(AP_EINPUT, path, 0, "stages: expected at least one stage");
	if (n > INT_MAX)
		return ap_err(AP_EINPUT, path, 0, "stages: too many stages");
	p->stages = calloc(n, sizeof *p->stages);
	if (!p->stages)
		return ap_err(AP_EFAIL, path, 0, "out of memory");
	p->nstages = (int)n;
	for (size_t i = 0; i < n && !st; i++) {
		struct plan_stage *ps = &p->stages[i];
		json_t *s = json_array_get(v, i);

		snprintf(pre, sizeof pre, "stages[%zu]", i);
		st = as_object(path, pre, s, keys);
		if (!st)
			st = get_int32(path, s, pre, "id", 1, 0, &ps->id);
		if (!st)
			st = get_ids(path, s, pre, "devices", 1, &ps->devices, &ps->ndev);
		/* The last stage of a pipeline has nowhere to go: `next`
		 * may be left out. */
		if (!st)
			st = get_ids(path, s, pre, "next", 0, &ps->next, &ps->nnext);
		if (!st)
			st = get_int32(path, s, pre, "microbatches", 0, 1, &ps->microbatches);
		if (!st)
			st = get_int32(path, s, pre, "replicas", 0, 1, &ps->replicas);
	}
	return st;
}

static int read_degree(const char *path, const char *pre, json_t *v,
		       struct plan_op *o)
{
	char fld[FIELD_LEN];
	const char *key;
	json_t *x;
	enum dim_kind d;
	int st;

	st = as_object(path, pre, v, NULL);
	if (st)
		return st;
	json_object_foreach(v, key, x) {
		field(fld, pre, key);
		if (dim_parse(key, &d))
			return ap_err(AP_EINPUT, path, 0,
				      "%s: unknown dim '%s' (expected n, c, h, w or l)",
				      fld, key);
		st = as_int32(path, fld, x, 1, &o->degree[d]);
		if (st)
			return st;
	}
	return AP_OK;
}

/* "recompute": true (full), "selective" or absent/false (none). */
static int read_recompute(const char *path, json_t *o, const char *pre, int *out)
{
	json_t *x = json_object_get(o, "recompute");

	if (json_is_string(x)) {
		if (strcmp(json_string_value(x), "selective"))
			return ap_err(AP_EINPUT, path, 0,
				      "%s.recompute: expected true, false or \"selective\", got \"%s\"",
				      pre, json_string_value(x));
		*out = RECOMPUTE_SELECTIVE;
		return AP_OK;
	}
	return get_bool(path, o, pre, "recompute", out);
}

/* "training": {"precision": "fp32" | "mixed", "zero": 0 | 1 | 3,
 * "sequence_parallel": bool}, every member optional. */
static int read_training(const char *path, json_t *v, struct plan *p)
{
	static const char *const keys[] = { "precision", "zero", "sequence_parallel", "optimizer",
					    NULL };
	char prec[16] = "fp32", opt[16];
	int st;

	st = as_object(path, "training", v, keys);
	if (!st && json_object_get(v, "precision"))
		st = get_string(path, v, "training", "precision", 1, prec, sizeof prec);
	if (st)
		return st;
	if (precision_parse(prec, &p->precision))
		return ap_err(AP_EINPUT, path, 0,
			      "training.precision: unknown precision '%s' (expected fp32 or mixed)",
			      prec);
	st = get_int32(path, v, "training", "zero", 0, 0, &p->zero);
	if (!st && p->zero != 0 && p->zero != 1 && p->zero != 3)
		st = ap_err(AP_EINPUT, path, 0,
			    "training.zero: expected 0, 1 or 3 (ZeRO's stages), got %d", p->zero);
	if (!st)
		st = get_bool(path, v, "training", "sequence_parallel", &p->seq_parallel);
	if (!st && json_object_get(v, "optimizer")) {
		st = get_string(path, v, "training", "optimizer", 1, opt, sizeof opt);
		if (!st && optimizer_parse(opt, &p->optimizer))
			st = ap_err(AP_EINPUT, path, 0,
				    "training.optimizer: unknown optimizer '%s' (expected sgd or adam)",
				    opt);
		p->has_optimizer = !st;
	}
	return st;
}

static int read_ops(const char *path, json_t *v, const struct graph *g,
		    struct plan *p)
{
	static const char *const keys[] = { "stage", "degree", "devices", "recompute", "tensor",
					    NULL };
	char pre[FIELD_LEN], fld[FIELD_LEN];
	const char *name;
	json_t *o, *x;
	char *seen = NULL;
	int st;

	st = as_object(path, "ops", v, NULL);
	if (st)
		goto out;
	p->ops = plan_ops_new(g);
	seen = calloc(g->nops > 0 ? (size_t)g->nops : 1, 1);
	if (!p->ops || !seen) {
		st = ap_err(AP_EFAIL, path, 0, "out of memory");
		goto out;
	}
	p->nops = g->nops;
	json_object_foreach(v, name, o) {
		int i = graph_find(g, name);
		struct plan_op *po;

		snprintf(pre, sizeof pre, "ops.%s", name);
		if (i < 0) {
			st = ap_err(AP_EINPUT, path, 0,
				    "%s: unknown operator '%s' (model '%s' has no such operator)",
				    pre, name, g->name);
			goto out;
		}
		po = &p->ops[i];
		seen[i] = 1;
		st = as_object(path, pre, o, keys);
		if (!st)
			st = get_int32(path, o, pre, "stage", 1, 0, &po->stage);
		if (!st)
			st = member(path, o, pre, "degree", 0, &x, fld);
		if (!st && x)
			st = read_degree(path, fld, x, po);
		if (!st)
			st = get_ids(path, o, pre, "devices", 1, &po->devices, &po->ndev);
		if (!st)
			st = read_recompute(path, o, pre, &po->recompute);
		if (!st)
			st = get_int32(path, o, pre, "tensor", 0, 1, &po->tensor);
		if (st)
			goto out;
	}
	for (int i = 0; i < g->nops; i++) {
		if (!seen[i]) {
			st = ap_err(AP_EINPUT, path, 0,
				    "ops: operator '%s' of model '%s' is missing from the plan",
				    g->ops[i].name, g->name);
			goto out;
		}
	}
out:
	free(seen);
	return st;
}

static int read_predicted(const char *path, json_t *v, struct plan *p)
{
	static const char *const keys[] = { "iter_ms", "samples_per_s",
					    "peak_mem_bytes", "bubble", "fits_memory", NULL };
	const char *pre = "predicted";
	int st;

	st = as_object(path, pre, v, keys);
	if (!st)
		st = get_number(path, v, pre, "iter_ms", 0, &p->pred_iter_ms);
	if (!st)
		st = get_number(path, v, pre, "samples_per_s", 0, &p->pred_samples_per_s);
	if (!st)
		st = get_int(path, v, pre, "peak_mem_bytes", 0, 0, &p->pred_peak_mem_bytes);
	if (!st)
		st = get_number(path, v, pre, "bubble", 0, &p->pred_bubble);
	if (!st)
		st = get_bool(path, v, pre, "fits_memory", &p->pred_fits);
	return st;
}

/* format and version first: anything else in a file that is not a
 * version-1 plan would only give a misleading message. */
static int check_format(const char *path, json_t *root)
{
	char format[64];
	int64_t version;
	int st;

	if (!json_is_object(root))
		return ap_err(AP_EINPUT, path, 0,
			      "expected a JSON object at the top, got %s",
			      json_kind(root));
	st = get_string(path, root, NULL, "format", 1, format, sizeof format);
	if (st)
		return st;
	if (strcmp(format, PLAN_FORMAT) != 0)
		return ap_err(AP_EINPUT, path, 0,
			      "format: '%s' is not an autopar plan (expected '" PLAN_FORMAT "')",
			      format);
	st = get_int(path, root, NULL, "version", 1, 1, &version);
	if (st)
		return st;
	if (version != PLAN_VERSION)
		return ap_err(AP_EINPUT, path, 0,
			      "version: unsupported plan version %lld (this build reads version %d)",
			      (long long)version, PLAN_VERSION);
	return AP_OK;
}

static int read_root(const char *path, json_t *root, const struct graph *g,
		     struct plan *p)
{
	static const char *const keys[] = {
		"format", "version", "model", "model_file", "model_digest", "batch",
		"per_device_batch", "cluster", "profile_dir", "profile_digest",
		"profile", "planner", "search", "schedule", "training", "stages", "ops",
		"predicted", NULL
	};
	char fld[FIELD_LEN];
	json_t *x;
	int st;

	st = check_format(path, root);
	if (!st)
		st = check_keys(path, NULL, root, keys);
	if (!st)
		st = get_string(path, root, NULL, "model", 1, p->model, sizeof p->model);
	if (!st)
		st = get_sources(path, root, &p->src);
	if (!st)
		st = get_int(path, root, NULL, "batch", 1, 1, &p->batch);
	if (!st)
		st = get_int(path, root, NULL, "per_device_batch", 0, 1, &p->per_device_batch);
	if (!st)
		st = get_string(path, root, NULL, "cluster", 1, p->cluster,
				sizeof p->cluster);
	/* A hand-written plan need not say who made it or how. */
	if (!st)
		st = get_string(path, root, NULL, "profile", 0, p->profile,
				sizeof p->profile);
	if (!st)
		st = get_string(path, root, NULL, "planner", 0, p->planner,
				sizeof p->planner);
	if (!st && (x = json_object_get(root, "search")))
		st = read_search(path, x, p);
	if (!st)
		st = member(path, root, NULL, "schedule", 1, &x, fld);
	if (!st)
		st = read_schedule(path, x, p);
	if (!st && (x = json_object_get(root, "training")))
		st = read_training(path, x, p);
	if (!st)
		st = member(path, root, NULL, "stages", 1, &x, fld);
	if (!st)
		st = read_stages(path, x, p);
	if (!st)
		st = member(path, root, NULL, "ops", 1, &x, fld);
	if (!st)
		st = read_ops(path, x, g, p);
	if (!st && (x = json_object_get(root, "predicted")))
		st = read_predicted(path, x, p);
	return st;
}

/* The JSON of a plan file.  Opened here so a missing file reads "cannot
 * read" with errno, not jansson's message that repeats the path. */
static int load_json(const char *path, json_t **root)
{
	json_error_t jerr;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return ap_err(AP_EINPUT, path, 0, "cannot read: %m");
	*root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
	fclose(f);
	if (!*root)
		return ap_err(AP_EINPUT, path, jerr.line, "%s", jerr.text);
	return AP_OK;
}

int plan_read(const char *path, const struct graph *g, struct plan *p)
{
	json_t *root = NULL;
	int st;

	plan_release(p);
	st = load_json(path, &root);
	if (!st)
		st = read_root(path, root, g, p);
	json_decref(root);
	if (st)
		plan_release(p);
	return st;
}

int plan_peek(const char *path, struct plan_head *h)
{
	json_t *root = NULL;
	int st;

	memset(h, 0, sizeof *h);
	st = load_json(path, &root);
	if (!st)
		st = check_format(path, root);
	if (!st)
		st = get_string(path, root, NULL, "model", 1, h->model, sizeof h->model);
	if (!st)
		st = get_sources(path, root, &h->src);
	if (!st)
		st = get_string(path, root, NULL, "cluster", 1, h->cluster, sizeof h->cluster);
	if (!st)
		st = get_string(path, root, NULL, "profile", 0, h->profile, sizeof h->profile);
	if (!st)
		st = get_int(path, root, NULL, "batch", 1, 1, &h->batch);
	json_decref(root);
	return st;
}
