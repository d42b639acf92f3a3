/*
 * The cost model (docs/simulator.md): what an operator shard, a transfer
 * between two devices, a gradient all-reduce, an optimizer step and the
 * state of a placement cost.  The simulator builds its task graph from
 * these terms, and a planner that ranks candidates without simulating
 * them prices the same things with the same calls, so that its estimate
 * and the simulator's prediction differ only where the planner simplifies
 * the schedule, never in what a piece of work costs
 * (docs/adding-a-planner.md, "Costs").
 */
#ifndef AUTOPAR_COST_H
#define AUTOPAR_COST_H

#include <stdint.h>

#include "hw/cluster.h"
#include "hw/profile.h"
#include "model/graph.h"

/* --- compute ------------------------------------------------------------- */

/* The cost of one shard of op i under plan degrees degree[] when the batch
 * runs as `microbatches` micro-batches: the shard that runs has its n
 * degree multiplied by the micro-batches (profile_lookup() sees its
 * signature), and an input has no backward. */
int cost_op(const struct profile *p, const struct graph *g, int i, const int degree[NDIMS],
	    int microbatches, struct op_cost *out);

/* --- point-to-point transfers -------------------------------------------- */

/* Seconds to move `bytes` over link l: its latency plus bytes over its
 * bandwidth.  The one transfer formula: every transfer the simulator
 * schedules and every transfer a planner prices is this. */
double cost_link_s(const struct link *l, double bytes);
/* The same from device src to device dst of cluster c: the directed link
 * inside a node, or the NICs between nodes. */
double cost_transfer_s(const struct cluster *c, int src, int dst, double bytes);

/* Whether what a shard of op c needs of input k along dim d depends on
 * the shard's place along d (op_input_varies(), for a dim the input has). */
int cost_need_varies(const struct graph *g, int c, int k, int d);
/* The part [*a, *b) along d of input k that consumer shard i of nd along
 * d of op c needs in a micro-batch of mb samples: op_input_need() for the
 * shard's share of c's output; the whole extent where it does not vary
 * (returns 0 then, 1 where it does). */
int cost_need_span(const struct graph *g, int c, int k, int d, int i, int nd, int64_t mb,
		   int64_t *a, int64_t *b);
/* Bytes of input k of op c that one shard of c under degrees dc needs in
 * a micro-batch of mb samples, by op_input_need() (needs.h), the rule the
 * simulator and the runtime follow: its share of the dims that follow the
 * split (with a window's halo), the whole of the others.  Shard 0's, the
 * largest a split along h or w can differ from the others by a halo. */
int64_t cost_need_bytes(const struct graph *g, int c, int k, const int dc[NDIMS], int64_t mb);

/* Seconds the resharding of op p's output into op c's input k takes in a
 * micro-batch of mb samples: p's shards (degrees dp) on devices pb,
 * pb + 1, ..., c's (degrees dc) on cb, cb + 1, ...; every overlap of what
 * a producer shard owns and a consumer shard needs moves between their
 * devices by cost_transfer_s(), transfers on different links run side by
 * side and those on one link one after another, so the edge costs its
 * busiest link; twice that when p has a gradient (it flows back over the
 * reverse links).  busy[] is scratch of cost_link_resources(c) doubles,
 * zero on entry (calloc) and left zero. */
double cost_reshard_s(const struct graph *g, const struct cluster *c, int p, const int dp[NDIMS],
		      int pb, int cons, int k, const int dc[NDIMS], int cb, int64_t mb,
		      double *busy);
/* The producer shards j of dp along a dim of sz whose part
 * [j sz / dp, (j + 1) sz / dp) can meet [a, b): *first .. *last - 1, the
 * rule of the simulator's transfers and of the resharding above. */
void cost_meeting(int64_t a, int64_t b, int dp, int64_t sz, int *first, int *last);
/* The link resources of c that cost_reshard_s() tracks: the directed
 * device pairs and each node's NIC, sending and receiving. */
int cost_link_resources(const struct cluster *c);

/* --- collectives ----------------------------------------------------------- */

/* The gradient all-reduce of `bytes` on each of r members spread over
 * `nodes` nodes with at most qmax on one, as the cluster's algorithm
 * (c->allreduce, hw/cluster.h) runs it, in phases that the simulator
 * turns into tasks (docs/simulator.md, "Gradient synchronisation"):
 *  - one node: one phase on the node's links, the level's formula;
 *  - a flat ring across nodes: one phase through every member, at the
 *    slowest link's bandwidth and latency;
 *  - one member a node: one phase across the nodes' NICs;
 *  - else hierarchical: half the intra-node level's time inside every
 *    node (a reduce-scatter, or the push to the servers), the level of
 *    the nodes across their NICs (each NIC moving the whole bytes), and
 *    the other half inside every node again,
 * each level 2 (m - 1) / m x bytes / bw for a ring, 4 (m - 1) / m for
 * PipeDream's parameter servers and (m - 1) for FlexFlow's central one,
 * with its latencies, the node with the most members bounding the
 * intra-node phases. */
enum sync_shape { SHAPE_INTRA, SHAPE_FLAT, SHAPE_INTER, SHAPE_HIER };
struct sync_phases {
	enum sync_shape shape;
	double whole_s;         /* the one phase of the first three shapes */
	double half_s, inter_s; /* SHAPE_HIER: each intra-node phase, the inter */
};
void cost_sync_phases(const struct cluster *c, int r, int nodes, int qmax, double bytes, int msgs,
		      struct sync_phases *ph);
/* Their sum; 0 for r < 2. */
double cost_allreduce_spread_s(const struct cluster *c, int r, int nodes, int qmax, double bytes,
			       int msgs);
/* What a level's m members move over links in all by algorithm a, per
 * byte each holds: m x the factor of the formulas above, but for the
 * central server's m - 1 (the others' gradients reach it; FlexFlow's
 * simulator charges nothing back). */
double cost_level_bytes(enum grad_allreduce a, int m);
/* How the r sorted devices dev[] spread over c's nodes: the node count,
 * the most members on one node, and the bytes the intra-node phases move
 * when each member holds `bytes`. */
void cost_spread(const struct cluster *c, const int *dev, int r, int64_t bytes, int *nodes,
		 int *qmax, int64_t *intra_bytes);
/* The gradient all-reduce of `bytes` over the r sorted devices dev[] by
 * the cluster's algorithm; 0 for r < 2. */
double cost_grad_sync_s(const struct cluster *c, const int *dev, int r, int64_t bytes);
/* An all-reduce of activations (tensor parallelism's) over them: the
 * collective library's, hierarchical whatever the gradients use. */
double cost_allreduce_s(const struct cluster *c, const int *dev, int r, int64_t bytes);

/* --- memory and the optimizer ---------------------------------------------- */

enum optimizer {
	OPTIMIZER_SGD,  /* SGD with momentum: one extra copy of the weights */
	OPTIMIZER_ADAM, /* Adam: two (first and second moments) */
	NOPTIMIZERS
};

const char *optimizer_name(enum optimizer o);
int optimizer_parse(const char *s, enum optimizer *out);
/* Copies of the weights the optimizer keeps as state. */
int optimizer_state_copies(enum optimizer o);

/* Parameter bytes of one shard of op split c_degree ways along c:
 * parameters are indexed by the output channel (SOAP's parameter dim), so
 * the c degree shards them and every other degree replicates them;
 * measured bytes win. */
int64_t cost_param_bytes(const struct op *op, int c_degree);
/* What a device keeps of every parameter byte it holds, for the whole
 * iteration: the weight, its gradient and the optimizer's state (3 for
 * SGD with momentum, 4 for Adam). */
int cost_state_factor(enum optimizer o);
/* Seconds of the optimizer step over `param_bytes` on one device: it
 * reads weights, gradients and state and writes weights and state,
 * (3 + 2 x copies) x the bytes at the device's memory bandwidth (a
 * streaming kernel). */
double cost_update_s(const struct device_spec *dev, double param_bytes, enum optimizer o);

#endif
