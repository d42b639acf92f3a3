/*
 * The cluster: nodes x devices per node, every device of one profiled kind;
 * a link class inside a node (NVLink, PCIe, shared memory) and a per-node
 * NIC across nodes, each with bandwidth and latency.  Presets live in
 * profiles/clusters.csv (data, edited without recompiling); `-c` also takes
 * an inline spec such as "4x4:v100,intra=12GB/s,inter=10Gb/s".
 */
#ifndef AUTOPAR_CLUSTER_H
#define AUTOPAR_CLUSTER_H

#include <stdint.h>

/* Room for an inline spec that sets every link, such as
 * "4x4:v100,intra=450GB/s,inter=400GB/s,intra_lat=2us,inter_lat=2us"; a
 * longer spec is an error that names it, never cut. */
#define CLUSTER_NAME_LEN 128

struct link {
	double bw_bytes_per_s; /* per direction */
	double latency_s;
};

/* How data parallelism synchronises gradients on this cluster
 * (docs/simulator.md, "Gradient synchronisation"): when a replica
 * group's all-reduce of an operator's gradients may start, and by which
 * algorithm.  Spec keys `sync=` and `allreduce=`; the zero values are the
 * defaults, what PyTorch's DDP over NCCL does. */
enum grad_sync {
	SYNC_OVERLAP, /* each operator's, right after its backward: it
		       * overlaps the backward of the operators before it */
	SYNC_AFTER,   /* every operator's, once the device's backward of
		       * the step is done (no bucketing, no overlap) */
	NSYNCS
};
enum grad_allreduce {
	ALLREDUCE_HIER,    /* a ring inside a node; across nodes a reduce-
			    * scatter inside each, a ring of the nodes, an
			    * all-gather inside each (NCCL, Horovod) */
	ALLREDUCE_RING,    /* one flat ring through every member, bound by
			    * its slowest hop */
	ALLREDUCE_PS,      /* sharded parameter servers, per level of the
			    * hierarchy 4 (m - 1) / m x the bytes over the
			    * level's bandwidth (PipeDream's optimizer) */
	ALLREDUCE_CENTRAL, /* one parameter server per parameter: the other
			    * m - 1 members' gradients cross its link one
			    * after another, per level (FlexFlow's simulator) */
	NALLREDUCES
};

struct cluster {
	char name[CLUSTER_NAME_LEN];
	char device[32];               /* device kind, a row of devices.csv */
	char profile[64];              /* default profile dir under profiles/,
					* as long as struct profile's name */
	char description[160];
	int nodes, per_node;
	struct link intra;             /* between two devices of one node */
	struct link inter;             /* each node's NIC, shared by its devices */
	int64_t mem_bytes;             /* per device; 0 = take the device spec's */
	enum grad_sync sync;
	enum grad_allreduce allreduce;
};

enum link_class { LINK_SELF, LINK_INTRA, LINK_INTER };

/* Reads every preset of a clusters.csv. */
int cluster_load_presets(const char *csv_path, struct cluster **out, int *n);

/* Resolves a preset name (from csv_path), a preset on another node count
 * "PRESET:NODES" (selene:384), or an inline spec
 * "NODESxPER_NODE:DEVICE[,intra=BW][,inter=BW][,intra_lat=T][,inter_lat=T][,mem=BYTES]";
 * a preset takes the same options after a ',' (pipedream-a,inter=25Gb/s),
 * and both take sync=overlap|after and
 * allreduce=hierarchical|ring|ps|central:
 * at most 2^20 devices, 1,024 of them on a node.
 * Bandwidths take B/s, KB/s, MB/s, GB/s, TB/s (bytes, powers of 1000) or
 * Kb/s, Mb/s, Gb/s, Tb/s (bits); times take s, ms, us, ns; sizes take
 * B, KB, MB, GB, KiB, MiB, GiB.  Errors name the spec (or file:line). */
int cluster_resolve(const char *spec, const char *csv_path, struct cluster *out);

int cluster_ndevices(const struct cluster *c);
int cluster_node_of(const struct cluster *c, int dev);
enum link_class cluster_link_class(const struct cluster *c, int a, int b);
/* The link a transfer from a to b uses (the NIC when nodes differ). */
const struct link *cluster_link(const struct cluster *c, int a, int b);

/* Unit-suffixed numbers, shared with other parsers: 0 ok, -1 malformed,
 * -2 out of the sane range (docs/formats.md, "Cluster specs"): a
 * bandwidth under 1 kB/s, a time over 1 s, a size over 2^62 bytes. */
int parse_bandwidth(const char *s, double *bytes_per_s);
int parse_duration(const char *s, double *seconds);
int parse_bytes(const char *s, int64_t *bytes);

#endif
