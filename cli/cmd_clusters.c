/*
 * `autopar clusters`: lists the cluster presets of profiles/clusters.csv, or
 * the clusters named on the command line (presets or inline specs, so a user
 * can check how a spec resolves before planning with it).  The table is for
 * people, with bandwidths and latencies in human units; --csv is for scripts,
 * in plain SI numbers (bytes/s, seconds, bytes) that need no unit parsing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "args.h"
#include "hw/cluster.h"
#include "commands.h"
#include "util/csvio.h"
#include "util/datadir.h"
#include "util/err.h"

static const char usage[] =
	"usage: autopar clusters [--csv] [NAME|SPEC...]\n"
	"\n"
	"Lists the cluster presets of profiles/clusters.csv: nodes x devices per\n"
	"node, the device kind, and the bandwidth and latency of the links inside\n"
	"a node and across nodes.  With NAME or SPEC arguments, shows just those\n"
	"clusters; a SPEC is NODESxPER_NODE:DEVICE[,intra=BW][,inter=BW]\n"
	"[,intra_lat=T][,inter_lat=T][,mem=BYTES], e.g. 4x4:v100,inter=10Gb/s.\n"
	"\n"
	"  --csv       a header row, then one row per cluster in bytes/s, seconds\n"
	"              and bytes\n"
	"  -h, --help  show this text\n";

/* "12 GB/s", "1.25 GB/s": powers of 1000 as datasheets write them. */
static void fmt_scaled(char *buf, size_t len, double v, const char *const *units,
		       double step, int nunits)
{
	int u = 0;

	while (u + 1 < nunits && v >= step) {
		v /= step;
		u++;
	}
	snprintf(buf, len, "%.4g %s", v, units[u]);
}

static void fmt_link(char *buf, size_t len, const struct link *l)
{
	static const char *const bw[] = { "B/s", "KB/s", "MB/s", "GB/s", "TB/s" };
	char b[32], t[32];
	double s = l->latency_s;

	fmt_scaled(b, sizeof b, l->bw_bytes_per_s, bw, 1000, 5);
	if (s >= 1)
		snprintf(t, sizeof t, "%.4g s", s);
	else if (s >= 1e-3)
		snprintf(t, sizeof t, "%.4g ms", s * 1e3);
	else if (s >= 1e-6)
		snprintf(t, sizeof t, "%.4g us", s * 1e6);
	else
		snprintf(t, sizeof t, "%.4g ns", s * 1e9);
	snprintf(buf, len, "%s, %s", b, t);
}

static void print_csv(FILE *f, const struct cluster *c, int n)
{
	fputs("name,nodes,devices_per_node,devices,device,intra_bw_bytes_per_s,"
	      "intra_latency_s,inter_bw_bytes_per_s,inter_latency_s,mem_bytes,"
	      "profile,description\n", f);
	for (int i = 0; i < n; i++) {
		csvio_put_text(f, c[i].name);
		fprintf(f, ",%d,%d,%d,", c[i].nodes, c[i].per_node,
			cluster_ndevices(&c[i]));
		csvio_put_text(f, c[i].device);
		fputc(',', f);
		csvio_put_number(f, c[i].intra.bw_bytes_per_s, 1);
		fputc(',', f);
		csvio_put_number(f, c[i].intra.latency_s, 1);
		fputc(',', f);
		csvio_put_number(f, c[i].inter.bw_bytes_per_s, 1);
		fputc(',', f);
		csvio_put_number(f, c[i].inter.latency_s, 1);
		fprintf(f, ",%lld,", (long long)c[i].mem_bytes);
		csvio_put_text(f, c[i].profile);
		fputc(',', f);
		csvio_put_text(f, c[i].description);
		fputc('\n', f);
	}
}

static void print_table(FILE *f, const struct cluster *c, int n)
{
	int wname = 4, wdevs = 7, wdev = 6, wintra = 5, winter = 5;
	char devs[32], intra[80], inter[80];

	for (int i = 0; i < n; i++) {
		int l;

		l = (int)strlen(c[i].name);
		wname = l > wname ? l : wname;
		l = snprintf(devs, sizeof devs, "%dx%d", c[i].nodes, c[i].per_node);
		wdevs = l > wdevs ? l : wdevs;
		l = (int)strlen(c[i].device);
		wdev = l > wdev ? l : wdev;
		fmt_link(intra, sizeof intra, &c[i].intra);
		l = (int)strlen(intra);
		wintra = l > wintra ? l : wintra;
		fmt_link(inter, sizeof inter, &c[i].inter);
		l = (int)strlen(inter);
		winter = l > winter ? l : winter;
	}
	fprintf(f, "%-*s  %-*s  %-*s  %-*s  %-*s  %s\n", wname, "NAME", wdevs,
		"DEVICES", wdev, "DEVICE", wintra, "INTRA", winter, "INTER",
		"DESCRIPTION");
	for (int i = 0; i < n; i++) {
		snprintf(devs, sizeof devs, "%dx%d", c[i].nodes, c[i].per_node);
		fmt_link(intra, sizeof intra, &c[i].intra);
		fmt_link(inter, sizeof inter, &c[i].inter);
		fprintf(f, "%-*s  %-*s  %-*s  %-*s  %-*s  %s\n", wname,
			c[i].name, wdevs, devs, wdev, c[i].device, wintra,
			intra, winter, inter, c[i].description);
	}
}

static int run(int argc, char **argv)
{
	struct cluster *c = NULL;
	const char **pos = calloc((size_t)argc, sizeof *pos);
	char path[4096];
	int csv = 0, n = 0, npos, rc;
	const struct opt opts[] = {
		{ NULL, "--csv", OPT_FLAG, &csv },
		{ 0 },
	};

	if (!pos)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	rc = args_parse("clusters", argc, argv, opts, pos, argc, &npos);
	if (rc)
		goto out;
	datapath(path, sizeof path, "profiles/clusters.csv");
	if (npos == 0) {
		rc = cluster_load_presets(path, &c, &n);
		if (rc)
			goto out;
	} else {
		c = calloc((size_t)npos, sizeof *c);
		if (!c) {
			rc = ap_err(AP_EFAIL, NULL, 0, "out of memory");
			goto out;
		}
		for (; n < npos; n++) {
			rc = cluster_resolve(pos[n], path, &c[n]);
			if (rc)
				goto out;
		}
	}
	if (csv)
		print_csv(stdout, c, n);
	else
		print_table(stdout, c, n);
	if (fflush(stdout) != 0 || ferror(stdout))
		rc = ap_err(AP_EFAIL, "autopar clusters", 0, "cannot write the listing");
out:
	free(c);
	free(pos);
	return rc;
}

const struct command cmd_clusters = {
	.name = "clusters",
	.summary = "list the cluster presets (nodes, devices, links)",
	.usage = usage,
	.run = run,
};
