/*
 * A Piper instance (Tarnawski et al., NeurIPS 2021): the layer DAG the
 * `piper` planner partitions, each node with its tensor-parallel
 * configurations (TMPCs) per degree, each edge with the bytes it carries
 * per micro-batch, and the machine: devices, memory per device, the
 * bandwidth from each device to the outside and the micro-batches in a
 * batch.  Built from Piper's own JSON input (piper_io.c, format in
 * docs/piper.md) or from one of our models, profiles and clusters
 * (planners/piper.c).  Node ids are 0 .. nnodes - 1 in the order read.
 */
#ifndef AUTOPAR_PIPER_INST_H
#define AUTOPAR_PIPER_INST_H

#include <stdint.h>

struct piper_tmpc {
	char *id;             /* "vanilla", "activation recomp", ... */
	double time;          /* p: forward + backward seconds per micro-batch */
	double params;        /* w: parameter bytes, for the data-parallel resync */
	double mem_a, mem_b;  /* bytes on a device: mem_a * y + mem_b, y the
			       * micro-batches in flight (Piper's ceil(s / d)) */
	/* Tensor-parallel communication, bytes, per edge of the node:
	 * sync_fw[k] for its k-th incoming edge (node.in[k]), sync_bw[k]
	 * for its k-th outgoing edge (node.out[k]). */
	double *sync_fw, *sync_bw;
};

/* The TMPCs of one tensor-parallel degree. */
struct piper_degree {
	int t;
	int ntmpc;
	struct piper_tmpc *tmpc;
};

struct piper_node {
	char *name;           /* may be NULL */
	int ndeg;
	struct piper_degree *deg; /* sorted by t, each t once */
	int nin, nout;
	int *in, *out;        /* edge indices */
};

struct piper_edge {
	int src, dst;         /* node ids */
	double bytes;         /* c(u, v) */
};

struct piper_inst {
	int nnodes, nedges;
	struct piper_node *nodes;
	struct piper_edge *edges;
	int max_devices;      /* k */
	int mbs;              /* micro-batches in a batch, N */
	double mem;           /* bytes per device */
	double bw;            /* bytes/s from a device to the outside */
};

void piper_inst_release(struct piper_inst *pi);

/* Fills each node's in and out (nin, nout zero, the lists unallocated)
 * with the indices of its incoming and outgoing edges in pi->edges, in
 * their order there.  AP_EFAIL when out of memory. */
int piper_edge_lists(struct piper_inst *pi);

/* The TMPCs of node v for degree t, or NULL when it has none. */
const struct piper_degree *piper_degree_of(const struct piper_node *v, int t);

#endif
