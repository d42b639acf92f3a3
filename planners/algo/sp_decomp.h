/*
 * The series-parallel decomposition of a model's operator graph (GraphPipe,
 * Jeon et al., ASPLOS 2025, section 5.1): a tree whose leaves are
 * operators, or units of several, and whose inner nodes put their
 * children in series or side by side, numbered depth first so that every
 * node is a contiguous interval of operators.  It is a property of the
 * graph, not of a planner: one that cuts a model into stages along the
 * tree (planners/graphpipe.c) gets stages that are such intervals, keeps
 * a model's branches side by side, and can work on the tree by dynamic
 * programming, node by node.
 *
 * The tree.  A set of operators that falls apart into several weakly
 * connected pieces is a parallel composition of them; a connected set is
 * a series composition at its cut operators, those that no edge jumps
 * over, that everything before them reaches and that reach everything
 * after them.  A connected set without such a cut is not series-parallel
 * and is made so by putting its operators in series in topological order
 * (adding edges only narrows the plans, never breaks one).  Series
 * children are flattened, so a chain is one series of single operators.
 *
 * Units.  While the tree has more than `max_units` leaves, the two
 * adjacent leaves of a series with the least compute together become one
 * leaf, a unit of several operators (a series left with one child becomes
 * that leaf), as PipeDream's planner merges its units; a graph of at most
 * max_units operators keeps one leaf per operator.
 *
 * The order.  The branches of a parallel composition are ordered by their
 * compute, lightest first, so that runs of similar branches are
 * contiguous; a depth-first walk then numbers the operators so that every
 * node, every run of a series' children and every run of a parallel
 * composition's branches is a contiguous interval of positions.
 */
#ifndef AUTOPAR_SP_DECOMP_H
#define AUTOPAR_SP_DECOMP_H

#include <stddef.h>

#include "model/graph.h"

enum { SP_LEAF, SP_SERIES, SP_PAR };

struct sp_node {
	int kind, op, nop; /* SP_LEAF: its first op and how many, linked
			    * through sp_decomp.next_op */
	int kid_ofs, nkid; /* children in sp_decomp.kids, in order: a
			    * series' in sequence, a parallel
			    * composition's lightest first */
	int lo, hi;        /* its operators: positions lo..hi-1 of
			    * sp_decomp.ord */
	double weight;     /* compute, for ordering branches */
};

/* A node is an index into node[]; coarsening leaves some of them out of
 * the tree (only those reachable from root are in it). */
struct sp_decomp {
	struct sp_node *node;
	size_t cap_node;
	int nnode, root;
	int *kids;
	size_t cap_kids;
	int nkids;
	int *next_op; /* [nops]: the next op of its leaf, or -1 */
	int *ord;     /* [nops]: the ops in depth-first order */
	int *at;      /* [nops]: each op's position in ord */
	int nunits;   /* leaves of the tree */
};

/* An empty decomposition, which sp_decomp_release accepts. */
void sp_decomp_init(struct sp_decomp *t);

/* The decomposition of g into t (sp_decomp_init'ed): the tree, its units
 * (at most max_units leaves where adjacent leaves are left to merge) and
 * its numbering.  cons_ofs and cons are g's consumers (graph_consumers());
 * op_w[i] is op i's compute, in any unit, which weighs the nodes.
 * Returns AP_OK or AP_EFAIL (out of memory, reported); release t either
 * way. */
int sp_decomp_build(struct sp_decomp *t, const struct graph *g, const int *cons_ofs,
		    const int *cons, const double *op_w, int max_units);

void sp_decomp_release(struct sp_decomp *t);

#endif
