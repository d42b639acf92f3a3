/*
 * Profiles: measured forward/backward time of operator shards on a device,
 * keyed by the canonical signature of graph_op_signature(), plus the
 * device's specs.  profiles/<name>/ops.csv has the columns
 *   signature,fwd_us,bwd_us,workspace_bytes,source
 * (source = measured | analytic) and profiles/<name>/device.csv one row of
 * device specs in the format of profiles/devices.csv (device.h).
 *
 * A lookup that misses falls back to the nearest measured instance of the
 * same kind scaled by work, or to a roofline estimate from the device specs;
 * every answer says where it came from, and callers tally the sources so a
 * fallback is never silent.  Operators imported from a PipeDream graph.txt
 * carry their own measured times, which are used as they are.
 */
#ifndef AUTOPAR_PROFILE_H
#define AUTOPAR_PROFILE_H

#include <stdint.h>
#include <stdio.h>

#include "hw/device.h"
#include "model/graph.h"

enum cost_source {
	COST_MEASURED,  /* exact signature, measured row */
	COST_ANALYTIC,  /* exact signature, row written by the roofline generator */
	COST_IMPORTED,  /* the op's own measured numbers (PipeDream import) */
	COST_SCALED,    /* nearest measured instance of the kind, scaled by work */
	COST_ROOFLINE,  /* no row at all: roofline from the device specs */
	NCOST_SOURCES
};

struct op_cost {
	double fwd_us, bwd_us;
	int64_t workspace_bytes;
	enum cost_source source;
};

struct prof_row {
	char *sig;
	double fwd_us, bwd_us;
	int64_t workspace_bytes;
	int analytic; /* source column: 0 measured, 1 analytic */
};

struct profile {
	char name[64];
	struct device_spec dev;
	int nrows, cap;
	struct prof_row *rows;
	int *hash;    /* open addressing over rows, -1 empty */
	int hcap;
	int nmeasured[NOP_KINDS]; /* measured rows per op kind (signature
				   * prefix), so a miss knows at once whether
				   * a scaled fallback can exist */
	unsigned gen;             /* bumped by every change of the rows */
	struct scale_cache *scale; /* the measured instances of the last
				    * graph a fallback searched (profile.c);
				    * allocated with the first row */
};

const char *cost_source_name(enum cost_source s);

void profile_init(struct profile *p);
void profile_release(struct profile *p);

/* Reads dir/ops.csv and dir/device.csv (exactly one device row).  p needs
 * no profile_init(); on failure it is left empty.  Every malformed row is
 * reported as "file:line: message" with AP_EINPUT. */
int profile_load(const char *dir, struct profile *p);
/* Writes dir/ops.csv (rows sorted by signature) and dir/device.csv, each to
 * a temporary name then renamed; creates dir if missing. */
int profile_save(const struct profile *p, const char *dir);
/* Adds or replaces a row. */
int profile_put(struct profile *p, const char *sig, double fwd_us,
		double bwd_us, int64_t workspace_bytes, int analytic);
const struct prof_row *profile_find(const struct profile *p, const char *sig);
/* Removes every analytic row (they are derived from the device specs, so
 * they go stale when the specs change); returns how many were removed. */
int profile_drop_analytic(struct profile *p);

/* Cost of op i's shard at degree[] (see graph_op_signature); the roofline
 * estimate itself is roofline_cost() of roofline.h. */
int profile_lookup(const struct profile *p, const struct graph *g, int i,
		   const int degree[NDIMS], struct op_cost *out);

/* Adds analytic rows for every op of g at every degree vector whose entries
 * are powers of two over the op's splittable dims, each dividing its dim,
 * with product <= max_degree.  Existing rows (measured or analytic) are kept
 * as they are; ops with imported times are skipped (lookup never reads the
 * profile for them). */
int profile_add_analytic(struct profile *p, const struct graph *g, int max_degree);

struct cost_tally {
	int64_t n[NCOST_SOURCES];
};
void cost_tally_add(struct cost_tally *t, enum cost_source s);
/* One line: "costs: 120 measured, 3 scaled, 1 roofline". */
void cost_tally_print(const struct cost_tally *t, FILE *f);

#endif
