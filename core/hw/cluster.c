/*
 * The cluster model: reading the presets of profiles/clusters.csv, parsing
 * inline specs such as "4x4:v100,intra=12GB/s,inter=10Gb/s", and answering
 * which link a transfer between two devices uses.  Devices are numbered
 * node by node (device d lives on node d / per_node), the numbering the
 * planners, the simulator and the runtime's ranks share.
 *
 * Links are two classes only, as in the papers whose clusters the presets
 * reproduce (PipeDream, FlexFlow): one bandwidth/latency between devices of
 * a node and one per-node NIC across nodes.  Every number carries its unit
 * in the file ("12GB/s", "10Gb/s", "5us") because bytes versus bits is the
 * classic factor-of-8 mistake in cluster descriptions.
 */
#include "hw/cluster.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/csvio.h"
#include "util/datadir.h"
#include "hw/device.h"
#include "util/err.h"

static const char *const cl_header[] = {
	"name", "nodes", "devices_per_node", "device", "intra_bw",
	"intra_latency", "inter_bw", "inter_latency", "profile", "description",
};
#define CL_NCOLS ((int)(sizeof cl_header / sizeof cl_header[0]))

/* Far beyond any cluster a planner can search, small enough that device
 * ids and products of counts stay in an int. */
#define MAX_DEVICES (1 << 20)
/* Devices that share one intra-node link class: eight or sixteen in a
 * server, 72 in the largest NVLink domain sold so far; 1,024 leaves room
 * for any rack-scale domain to come.  A node of more is a typo, and the
 * simulator's links are pairs within a node (docs/simulator.md). */
#define MAX_PER_NODE 1024

/* The sane range of the link numbers (docs/formats.md, "Cluster specs"):
 * a bandwidth under 1 kB/s or a latency over a second describes
 * no interconnect, and would make transfer times overflow to inf. */
#define MIN_BW_BYTES_PER_S 1e3
#define MAX_LATENCY_S 1.0

/* Defaults of an inline spec that leaves a link out: PCIe 3 inside a node,
 * 10 Gb/s Ethernet across, the weakest common setup (PipeDream's cluster A). */
#define DEFAULT_INTRA_BW 12e9
#define DEFAULT_INTRA_LAT 5e-6
#define DEFAULT_INTER_BW 1.25e9
#define DEFAULT_INTER_LAT 20e-6

#define BW_HINT "expected e.g. 12GB/s or 10Gb/s"
#define TIME_HINT "expected e.g. 5us or 2ms"
#define BYTES_HINT "expected e.g. 16GiB or 80GB"

/* What is wrong with a value the unit parsers refused with rc. */
static const char *bw_why(int rc)
{
	return rc == -2 ? "is less than 1kB/s, the least a link may have"
			: "is not a positive bandwidth with a unit (" BW_HINT ")";
}

static const char *time_why(int rc)
{
	return rc == -2 ? "is more than 1s, the most a link's latency may be"
			: "is not a positive time with a unit (" TIME_HINT ")";
}

static const char *bytes_why(int rc)
{
	return rc == -2 ? "is more than 2^62 bytes"
			: "is not a positive whole number of bytes with a unit (" BYTES_HINT ")";
}

/* --- unit-suffixed numbers ----------------------------------------------- */

/* Value = number * mul / div: dividing by 1e6 rather than multiplying by
 * 1e-6 keeps "5us" equal to the literal 5e-6. */
struct unit {
	const char *name;
	double mul, div;
};

static const struct unit bw_units[] = {
	{ "B/s", 1, 1 },     { "KB/s", 1e3, 1 },  { "kB/s", 1e3, 1 },
	{ "MB/s", 1e6, 1 },  { "GB/s", 1e9, 1 },  { "TB/s", 1e12, 1 },
	{ "Kb/s", 1e3, 8 },  { "kb/s", 1e3, 8 },  { "Mb/s", 1e6, 8 },
	{ "Gb/s", 1e9, 8 },  { "Tb/s", 1e12, 8 }, { NULL, 0, 0 },
};

static const struct unit time_units[] = {
	{ "s", 1, 1 }, { "ms", 1, 1e3 }, { "us", 1, 1e6 }, { "ns", 1, 1e9 },
	{ NULL, 0, 0 },
};

static const struct unit byte_units[] = {
	{ "B", 1, 1 },     { "KB", 1e3, 1 },           { "MB", 1e6, 1 },
	{ "GB", 1e9, 1 },  { "TB", 1e12, 1 },          { "KiB", 1024.0, 1 },
	{ "MiB", 1048576.0, 1 }, { "GiB", 1073741824.0, 1 },
	{ "TiB", 1099511627776.0, 1 }, { NULL, 0, 0 },
};

/* A plain decimal (digits, optional fraction and exponent; no sign, hex,
 * inf or nan), optional spaces, then exactly one of the units.  The result
 * must be finite and positive: a zero bandwidth or latency is a typo, not
 * a cluster. */
static int parse_unit(const char *s, const struct unit *u, double *out)
{
	const char *p = s;
	char *end;
	double v;

	if (!s || !(isdigit((unsigned char)*p) ||
		    (*p == '.' && isdigit((unsigned char)p[1]))))
		return -1;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			;
	if ((*p == 'e' || *p == 'E') &&
	    (isdigit((unsigned char)p[1]) ||
	     ((p[1] == '+' || p[1] == '-') && isdigit((unsigned char)p[2]))))
		for (p += 2; isdigit((unsigned char)*p); p++)
			;
	errno = 0;
	v = strtod(s, &end);
	/* an overflow is refused; an underflow is the tiny number it is,
	 * which the callers' ranges refuse as such */
	if (end != p || (errno == ERANGE && v > 1))
		return -1;
	while (*p == ' ')
		p++;
	for (; u->name; u++) {
		if (strcmp(p, u->name) != 0)
			continue;
		v = v * u->mul / u->div;
		if (!isfinite(v) || v <= 0)
			return -1;
		*out = v;
		return 0;
	}
	return -1;
}

int parse_bandwidth(const char *s, double *bytes_per_s)
{
	double v;

	if (parse_unit(s, bw_units, &v) != 0)
		return -1;
	if (v < MIN_BW_BYTES_PER_S)
		return -2;
	*bytes_per_s = v;
	return 0;
}

int parse_duration(const char *s, double *seconds)
{
	double v;

	if (parse_unit(s, time_units, &v) != 0)
		return -1;
	if (v > MAX_LATENCY_S)
		return -2;
	*seconds = v;
	return 0;
}

int parse_bytes(const char *s, int64_t *bytes)
{
	double v;

	/* A byte count read from input is at most AP_MAX_BYTES (2^62, exact
	 * in a double), so that sums of a few stay in an int64_t and a
	 * saturated total (util/checked.h) is more than any of them. */
	if (parse_unit(s, byte_units, &v) != 0 || v != floor(v))
		return -1;
	if (v > (double)AP_MAX_BYTES)
		return -2;
	*bytes = (int64_t)v;
	return 0;
}

/* --- topology ------------------------------------------------------------- */

int cluster_ndevices(const struct cluster *c)
{
	return c->nodes * c->per_node;
}

int cluster_node_of(const struct cluster *c, int dev)
{
	if (dev < 0 || dev >= cluster_ndevices(c))
		return -1;
	return dev / c->per_node;
}

enum link_class cluster_link_class(const struct cluster *c, int a, int b)
{
	if (a == b)
		return LINK_SELF;
	return cluster_node_of(c, a) == cluster_node_of(c, b) ? LINK_INTRA
							      : LINK_INTER;
}

/* Data that stays on its device costs nothing: infinite bandwidth makes
 * bytes / bw zero without a special case in every cost formula. */
static const struct link self_link = { INFINITY, 0 };

const struct link *cluster_link(const struct cluster *c, int a, int b)
{
	switch (cluster_link_class(c, a, b)) {
	case LINK_SELF:
		return &self_link;
	case LINK_INTRA:
		return &c->intra;
	case LINK_INTER:
		break;
	}
	return &c->inter;
}

/* --- presets -------------------------------------------------------------- */

static int positive_count(const char *s, int max, int *out)
{
	long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || errno == ERANGE || v <= 0 || v > max)
		return -1;
	*out = (int)v;
	return 0;
}

/* devices.csv beside the clusters csv: the two files travel together. */
static void devices_path_of(const char *csv_path, char *buf, size_t len)
{
	const char *slash = strrchr(csv_path, '/');

	if (slash)
		snprintf(buf, len, "%.*s/devices.csv", (int)(slash - csv_path),
			 csv_path);
	else
		snprintf(buf, len, "devices.csv");
}

static const struct device_spec *find_device(const struct device_spec *d,
					     int nd, const char *name)
{
	for (int i = 0; i < nd; i++)
		if (strcmp(d[i].name, name) == 0)
			return &d[i];
	return NULL;
}

static void device_names(const struct device_spec *d, int nd, char *buf,
			 size_t len)
{
	size_t k = 0;

	buf[0] = 0;
	for (int i = 0; i < nd && k < len; i++)
		k += snprintf(buf + k, len - k, "%s%s", i ? ", " : "", d[i].name);
}

static int parse_preset(const char *path, const struct csvio_rec *r,
			const struct device_spec *devs, int ndevs,
			const char *devpath, struct cluster *c)
{
	const char *const *f = (const char *const *)r->field;
	const struct device_spec *dev;
	char names[256];
	int line = r->line, rc;

	memset(c, 0, sizeof *c);
	if (r->nfield != CL_NCOLS)
		return ap_err(AP_EINPUT, path, line,
			      "row has %d fields, expected %d (%s,...,%s)",
			      r->nfield, CL_NCOLS, cl_header[0],
			      cl_header[CL_NCOLS - 1]);
	/* Starting with a letter and holding no ',' or ':', a preset name
	 * never looks like an inline spec. */
	if (!spec_name_valid(f[0], sizeof c->name))
		return ap_err(AP_EINPUT, path, line,
			      "cluster name '%s' is not a name (expected a letter, then letters, digits, '.', '_' or '-', at most %zu characters)",
			      f[0], sizeof c->name - 1);
	if (positive_count(f[1], MAX_DEVICES, &c->nodes) != 0)
		return ap_err(AP_EINPUT, path, line,
			      "nodes '%s' is not a positive whole number (at most %d)",
			      f[1], MAX_DEVICES);
	if (positive_count(f[2], MAX_PER_NODE, &c->per_node) != 0)
		return ap_err(AP_EINPUT, path, line,
			      "devices_per_node '%s' is not a positive whole number (at most %d)",
			      f[2], MAX_PER_NODE);
	if ((long)c->nodes * c->per_node > MAX_DEVICES)
		return ap_err(AP_EINPUT, path, line,
			      "%d nodes x %d devices is more than %d devices",
			      c->nodes, c->per_node, MAX_DEVICES);
	dev = find_device(devs, ndevs, f[3]);
	if (!dev) {
		device_names(devs, ndevs, names, sizeof names);
		return ap_err(AP_EINPUT, path, line,
			      "device '%s' is not in '%s' (expected one of %s)",
			      f[3], devpath, names);
	}
	if ((rc = parse_bandwidth(f[4], &c->intra.bw_bytes_per_s)) != 0)
		return ap_err(AP_EINPUT, path, line, "intra bandwidth '%s' %s", f[4], bw_why(rc));
	if ((rc = parse_duration(f[5], &c->intra.latency_s)) != 0)
		return ap_err(AP_EINPUT, path, line, "intra latency '%s' %s", f[5], time_why(rc));
	if ((rc = parse_bandwidth(f[6], &c->inter.bw_bytes_per_s)) != 0)
		return ap_err(AP_EINPUT, path, line, "inter bandwidth '%s' %s", f[6], bw_why(rc));
	if ((rc = parse_duration(f[7], &c->inter.latency_s)) != 0)
		return ap_err(AP_EINPUT, path, line, "inter latency '%s' %s", f[7], time_why(rc));
	if (!spec_name_valid(f[8], sizeof c->profile))
		return ap_err(AP_EINPUT, path, line,
			      "profile '%s' is not a directory name under profiles/ (expected e.g. v100-analytic)",
			      f[8]);
	if (strlen(f[9]) >= sizeof c->description)
		return ap_err(AP_EINPUT, path, line,
			      "description of cluster '%s' is longer than %zu characters",
			      f[0], sizeof c->description - 1);
	strcpy(c->name, f[0]);
	strcpy(c->device, dev->name);
	strcpy(c->profile, f[8]);
	strcpy(c->description, f[9]);
	c->mem_bytes = dev->mem_bytes;
	return AP_OK;
}

int cluster_load_presets(const char *csv_path, struct cluster **out, int *n)
{
	struct device_spec *devs = NULL;
	struct cluster *c = NULL;
	struct csvio_table t;
	char devpath[4096];
	int rc, ndevs = 0, nc = 0;

	*out = NULL;
	*n = 0;
	rc = csvio_table_read(csv_path, cl_header, CL_NCOLS, &t);
	if (rc)
		return rc;
	devices_path_of(csv_path, devpath, sizeof devpath);
	rc = devices_load(devpath, &devs, &ndevs);
	if (rc)
		goto out;
	c = calloc(t.nrec > 1 ? t.nrec - 1 : 1, sizeof *c);
	if (!c) {
		rc = ap_err(AP_EFAIL, csv_path, 0, "out of memory");
		goto out;
	}
	for (int i = 1; i < t.nrec; i++) {
		rc = parse_preset(csv_path, &t.rec[i], devs, ndevs, devpath, &c[nc]);
		if (rc)
			goto out;
		for (int j = 0; j < nc; j++)
			if (strcmp(c[j].name, c[nc].name) == 0) {
				rc = ap_err(AP_EINPUT, csv_path, t.rec[i].line,
					    "cluster '%s' is listed twice", c[nc].name);
				goto out;
			}
		nc++;
	}
	*out = c;
	*n = nc;
	c = NULL;
out:
	free(c);
	free(devs);
	csvio_table_release(&t);
	return rc;
}

/* --- inline specs ---------------------------------------------------------- */

enum { OPT_INTRA, OPT_INTER, OPT_INTRA_LAT, OPT_INTER_LAT, OPT_MEM, OPT_SYNC, OPT_ALLREDUCE,
       NOPTS };
static const char *const opt_names[NOPTS] = {
	"intra", "inter", "intra_lat", "inter_lat", "mem", "sync", "allreduce",
};

static const char *const sync_names[NSYNCS] = {
	[SYNC_OVERLAP] = "overlap",
	[SYNC_AFTER] = "after",
};

static const char *const allreduce_names[NALLREDUCES] = {
	[ALLREDUCE_HIER] = "hierarchical",
	[ALLREDUCE_RING] = "ring",
	[ALLREDUCE_PS] = "ps",
	[ALLREDUCE_CENTRAL] = "central",
};

/* The index of s in names[0..n), or -1. */
static int name_index(const char *const *names, int n, const char *s)
{
	for (int k = 0; k < n; k++)
		if (strcmp(names[k], s) == 0)
			return k;
	return -1;
}

/* Option opt's value val, one of names[0..n): its index, or -1 reported
 * with the words expected. */
static int word_option(const char *spec, const char *opt, const char *val,
		       const char *const *names, int n, const char *expected)
{
	int k = name_index(names, n, val);

	if (k < 0)
		ap_err(AP_EINPUT, NULL, 0, "cluster spec '%s': %s '%s' is not one of %s", spec,
		       opt, val, expected);
	return k;
}

static int spec_option(const char *spec, char *opt, struct cluster *c,
		       unsigned *seen)
{
	char *eq = strchr(opt, '=');
	const char *val;
	int k, rc;

	if (!*opt)
		return ap_err(AP_EINPUT, NULL, 0,
			      "cluster spec '%s': empty option (expected KEY=VALUE after each ',')",
			      spec);
	if (!eq)
		return ap_err(AP_EINPUT, NULL, 0,
			      "cluster spec '%s': option '%s' has no value (expected e.g. intra=12GB/s)",
			      spec, opt);
	*eq = 0;
	val = eq + 1;
	k = name_index(opt_names, NOPTS, opt);
	if (k < 0)
		return ap_err(AP_EINPUT, NULL, 0,
			      "cluster spec '%s': unknown option '%s' (expected intra, inter, intra_lat, inter_lat, mem, sync or allreduce)",
			      spec, opt);
	if (*seen & (1u << k))
		return ap_err(AP_EINPUT, NULL, 0,
			      "cluster spec '%s': option '%s' is given twice", spec, opt);
	*seen |= 1u << k;
	switch (k) {
	case OPT_INTRA:
	case OPT_INTER:
		rc = parse_bandwidth(val, k == OPT_INTRA ? &c->intra.bw_bytes_per_s
						       : &c->inter.bw_bytes_per_s);
		if (rc)
			return ap_err(AP_EINPUT, NULL, 0, "cluster spec '%s': %s bandwidth '%s' %s",
				      spec, opt, val, bw_why(rc));
		break;
	case OPT_INTRA_LAT:
	case OPT_INTER_LAT:
		rc = parse_duration(val, k == OPT_INTRA_LAT ? &c->intra.latency_s
							  : &c->inter.latency_s);
		if (rc)
			return ap_err(AP_EINPUT, NULL, 0, "cluster spec '%s': %s '%s' %s", spec, opt,
				      val, time_why(rc));
		break;
	case OPT_MEM:
		rc = parse_bytes(val, &c->mem_bytes);
		if (rc)
			return ap_err(AP_EINPUT, NULL, 0, "cluster spec '%s': mem '%s' %s", spec, val,
				      bytes_why(rc));
		break;
	case OPT_SYNC:
		rc = word_option(spec, opt, val, sync_names, NSYNCS, "overlap, after");
		if (rc < 0)
			return AP_EINPUT;
		c->sync = (enum grad_sync)rc;
		break;
	case OPT_ALLREDUCE:
		rc = word_option(spec, opt, val, allreduce_names, NALLREDUCES,
				 "hierarchical, ring, ps, central");
		if (rc < 0)
			return AP_EINPUT;
		c->allreduce = (enum grad_allreduce)rc;
		break;
	}
	return AP_OK;
}

/* The options of spec from `next` on (NULL: none), each KEY=VALUE, ','
 * between them (cut in place). */
static int spec_options(const char *spec, char *next, struct cluster *c, unsigned *seen)
{
	while (next) {
		char *opt = next;
		int rc;

		next = strchr(opt, ',');
		if (next)
			*next++ = 0;
		rc = spec_option(spec, opt, c, seen);
		if (rc)
			return rc;
	}
	return AP_OK;
}

static int parse_inline(const char *spec, const char *csv_path, struct cluster *c)
{
	struct device_spec *devs = NULL;
	const struct device_spec *dev;
	char buf[512], devpath[4096], names[256];
	char *colon, *x, *next;
	unsigned seen = 0;
	int rc, ndevs = 0;

	memset(c, 0, sizeof *c);
	if (strlen(spec) >= sizeof c->name)
		return ap_err(AP_EINPUT, NULL, 0,
			      "cluster spec '%s' is longer than %zu characters (plans record it by name; add a preset to clusters.csv instead)",
			      spec, sizeof c->name - 1);
	strcpy(buf, spec);
	colon = strchr(buf, ':');
	x = strchr(buf, 'x');
	if (!colon || !x || x > colon)
		return ap_err(AP_EINPUT, NULL, 0,
			      "cluster spec '%s' is not NODESxPER_NODE:DEVICE[,KEY=VALUE...] (expected e.g. 4x4:v100,intra=12GB/s,inter=10Gb/s)",
			      spec);
	*colon = 0;
	*x = 0;
	if (positive_count(buf, MAX_DEVICES, &c->nodes) != 0)
		return ap_err(AP_EINPUT, NULL, 0,
			      "cluster spec '%s': node count '%s' is not a positive whole number (at most %d)",
			      spec, buf, MAX_DEVICES);
	if (positive_count(x + 1, MAX_PER_NODE, &c->per_node) != 0)
		return ap_err(AP_EINPUT, NULL, 0,
			      "cluster spec '%s': devices per node '%s' is not a positive whole number (at most %d)",
			      spec, x + 1, MAX_PER_NODE);
	if ((long)c->nodes * c->per_node > MAX_DEVICES)
		return ap_err(AP_EINPUT, NULL, 0,
			      "cluster spec '%s': %d x %d is more than %d devices",
			      spec, c->nodes, c->per_node, MAX_DEVICES);
	c->intra = (struct link){ DEFAULT_INTRA_BW, DEFAULT_INTRA_LAT };
	c->inter = (struct link){ DEFAULT_INTER_BW, DEFAULT_INTER_LAT };

	next = strchr(colon + 1, ',');
	if (next)
		*next++ = 0;
	if (!spec_name_valid(colon + 1, sizeof c->device))
		return ap_err(AP_EINPUT, NULL, 0,
			      "cluster spec '%s': device '%s' is not a device name (expected e.g. v100)",
			      spec, colon + 1);
	snprintf(c->device, sizeof c->device, "%s", colon + 1);
	rc = spec_options(spec, next, c, &seen);
	if (rc)
		return rc;

	/* The syntax is checked before any file is read, so a typo is reported
	 * as such even where devices.csv is missing. */
	devices_path_of(csv_path, devpath, sizeof devpath);
	rc = devices_load(devpath, &devs, &ndevs);
	if (rc)
		return rc;
	dev = find_device(devs, ndevs, c->device);
	if (!dev) {
		device_names(devs, ndevs, names, sizeof names);
		rc = ap_err(AP_EINPUT, NULL, 0,
			    "cluster spec '%s': unknown device '%s' (expected one of %s, from '%s')",
			    spec, c->device, names, devpath);
		goto out;
	}
	if (!(seen & (1u << OPT_MEM)))
		c->mem_bytes = dev->mem_bytes;
	strcpy(c->name, spec);
	/* CPU clusters run on the measured cpu profile; GPU kinds start from
	 * the roofline-generated one until someone profiles the real device. */
	if (strncmp(c->device, "cpu", 3) == 0)
		snprintf(c->profile, sizeof c->profile, "%s", c->device);
	else
		snprintf(c->profile, sizeof c->profile, "%s-analytic", c->device);
	snprintf(c->description, sizeof c->description,
		 "inline spec: %d node%s x %d %s", c->nodes,
		 c->nodes == 1 ? "" : "s", c->per_node, c->device);
out:
	free(devs);
	return rc;
}

int cluster_resolve(const char *spec, const char *csv_path, struct cluster *out)
{
	struct cluster *c = NULL;
	char def[4096], head[CLUSTER_NAME_LEN], opts[CLUSTER_NAME_LEN];
	const char *colon, *comma;
	size_t len;
	unsigned seen = 0;
	int rc, n = 0, nodes = 0;

	if (!csv_path)
		csv_path = datapath(def, sizeof def, "profiles/clusters.csv");
	if (!spec || !*spec)
		return ap_err(AP_EINPUT, NULL, 0,
			      "empty cluster name (expected a preset such as pipedream-a or a spec such as 4x4:v100)");
	/* NODESxPER_NODE:DEVICE starts with a number; a preset's name with a
	 * letter (spec_name_valid()) */
	if (isdigit((unsigned char)spec[0]) || spec[0] == '-' || spec[0] == '+')
		return parse_inline(spec, csv_path, out);
	if (strlen(spec) >= sizeof out->name)
		return ap_err(AP_EINPUT, NULL, 0,
			      "cluster '%s' is longer than %zu characters", spec,
			      sizeof out->name - 1);
	/* PRESET[:NODES][,KEY=VALUE...] */
	comma = strchr(spec, ',');
	len = comma ? (size_t)(comma - spec) : strlen(spec);
	memcpy(head, spec, len);
	head[len] = 0;
	snprintf(opts, sizeof opts, "%s", comma ? comma + 1 : "");
	colon = strchr(head, ':');
	/* PRESET:NODES: the preset's nodes, links and devices, NODES of them */
	if (colon && positive_count(colon + 1, MAX_DEVICES, &nodes) != 0)
		return ap_err(AP_EINPUT, NULL, 0,
			      "cluster '%s': node count '%s' is not a positive whole number (expected PRESET:NODES such as selene:384, or NODESxPER_NODE:DEVICE such as 4x4:v100)",
			      spec, colon + 1);
	rc = cluster_load_presets(csv_path, &c, &n);
	if (rc)
		return rc;
	for (int i = 0; i < n; i++)
		if (strncmp(c[i].name, head, colon ? (size_t)(colon - head) : len + 1) == 0 &&
		    (!colon || c[i].name[colon - head] == 0)) {
			*out = c[i];
			if (colon && (long)nodes * out->per_node > MAX_DEVICES) {
				rc = ap_err(AP_EINPUT, NULL, 0,
					    "cluster '%s': %d nodes x %d is more than %d devices",
					    spec, nodes, out->per_node, MAX_DEVICES);
				goto out;
			}
			if (colon) {
				out->nodes = nodes;
				snprintf(out->description, sizeof out->description,
					 "%d nodes of %s", nodes, c[i].name);
			}
			if (comma) {
				rc = spec_options(spec, opts, out, &seen);
				if (rc)
					goto out;
				snprintf(out->description, sizeof out->description, "%s, %s",
					 c[i].name, comma + 1);
			}
			snprintf(out->name, sizeof out->name, "%s", spec);
			goto out;
		}
	rc = ap_err(AP_EINPUT, NULL, 0,
		    "unknown cluster '%s': not a preset of '%s' (`autopar clusters` shows the presets; PRESET:NODES sets their node count) nor an inline spec such as 4x4:v100",
		    head, csv_path);
out:
	free(c);
	return rc;
}
