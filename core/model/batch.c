/*
 * Batch specs (batch.h): "N" for a global batch, "N/dev" for a batch
 * per device.
 */
#include "model/batch.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/err.h"
#include "model/graph.h"
#include "model/model_io.h"

int batch_spec_parse(const char *s, const char *where, int line, struct batch_spec *b)
{
	char *end;
	long long x;

	errno = 0;
	x = strtoll(s, &end, 10);
	if (!isdigit((unsigned char)*s) || errno || x < 0 ||
	    (*end && strcmp(end, "/dev") != 0))
		return ap_err(AP_EINPUT, where, line,
			      "batch '%s': expected N (a global batch, 0 = the model's own) "
			      "or N/dev (a batch per device, weak scaling)", s);
	if (x > AP_MAX_COUNT)
		return ap_err(AP_EINPUT, where, line,
			      "batch '%s': expected at most 2^40 (models/FORMAT.md)", s);
	b->n = x;
	b->per_device = *end != 0;
	return AP_OK;
}

int64_t batch_spec_global(const struct batch_spec *b, int64_t own, int ndev)
{
	int64_t n = b->n ? b->n : own, v;

	if (!b->per_device)
		return n;
	if (ndev < 1 || __builtin_mul_overflow(n, (int64_t)ndev, &v))
		return -1;
	return v;
}

int batch_model_load(const char *arg, const struct batch_spec *b, int ndev, struct graph *g)
{
	int64_t n, per = b->n;
	int st;

	if (!b->per_device || b->n)
		n = batch_spec_global(b, 0, ndev);
	else {
		/* the model's own batch on every device */
		st = model_load(arg, 0, g);
		if (st)
			return st;
		per = g->batch;
		n = batch_spec_global(b, g->batch, ndev);
		graph_release(g);
	}
	/* a batch per device makes a global batch, at most 2^40 as well */
	if (n < 0 || n > AP_MAX_COUNT)
		return ap_err(AP_EINPUT, arg, 0, "a batch of %lld per device on %d devices "
			      "is more than 2^40 (models/FORMAT.md)", (long long)per, ndev);
	return model_load(arg, n, g);
}
