/*
 * A Piper instance's lifetime and lookups (piper_inst.h).
 */
#include "model/piper_inst.h"

#include <stdlib.h>

#include "util/err.h"

void piper_inst_release(struct piper_inst *pi)
{
	for (int v = 0; v < pi->nnodes; v++) {
		struct piper_node *n = &pi->nodes[v];

		for (int k = 0; k < n->ndeg; k++) {
			for (int l = 0; l < n->deg[k].ntmpc; l++) {
				free(n->deg[k].tmpc[l].id);
				free(n->deg[k].tmpc[l].sync_fw);
				free(n->deg[k].tmpc[l].sync_bw);
			}
			free(n->deg[k].tmpc);
		}
		free(n->deg);
		free(n->name);
		free(n->in);
		free(n->out);
	}
	free(pi->nodes);
	free(pi->edges);
	pi->nodes = NULL;
	pi->edges = NULL;
	pi->nnodes = pi->nedges = 0;
}

const struct piper_degree *piper_degree_of(const struct piper_node *v, int t)
{
	for (int k = 0; k < v->ndeg; k++)
		if (v->deg[k].t == t)
			return v->deg[k].ntmpc > 0 ? &v->deg[k] : NULL;
	return NULL;
}

int piper_edge_lists(struct piper_inst *pi)
{
	for (int e = 0; e < pi->nedges; e++) {
		pi->nodes[pi->edges[e].src].nout++;
		pi->nodes[pi->edges[e].dst].nin++;
	}
	for (int v = 0; v < pi->nnodes; v++) {
		struct piper_node *x = &pi->nodes[v];

		x->in = malloc((size_t)(x->nin ? x->nin : 1) * sizeof *x->in);
		x->out = malloc((size_t)(x->nout ? x->nout : 1) * sizeof *x->out);
		if (!x->in || !x->out)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		x->nin = x->nout = 0;
	}
	for (int e = 0; e < pi->nedges; e++) {
		struct piper_node *u = &pi->nodes[pi->edges[e].src];
		struct piper_node *v = &pi->nodes[pi->edges[e].dst];

		u->out[u->nout++] = e;
		v->in[v->nin++] = e;
	}
	return AP_OK;
}
