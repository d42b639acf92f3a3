/*
 * One stage of Piper's dynamic program (piper_stage.h): its nodes'
 * configurations for a tensor-parallel degree, with the bytes that cross
 * the stage's boundary, and Piper's knapsack heuristic choosing one
 * configuration a node to fit a device's memory (piper_dp.h gives the
 * terms).  piper_dp.c costs every stage it visits through these;
 * piper_stage_tps() costs one stage alone.
 */
#include "algo/piper_stage.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "algo/piper_dp.h"

/* A swap the knapsack may make: node i to its TMPC l, bpb the time it
 * adds per byte of memory it saves. */
struct knap_swap {
	double bpb;
	int i, l;
};

static int cmp_swap(const void *x, const void *y)
{
	const struct knap_swap *a = x, *b = y;

	if (a->bpb != b->bpb)
		return a->bpb < b->bpb ? -1 : 1;
	if (a->i != b->i)
		return a->i < b->i ? -1 : 1;
	return (a->l > b->l) - (a->l < b->l);
}

int piper_knapsack(double mem, int n, struct stage_buf *sb, int maxy, double *out,
		   int ychoice, int *choice)
{
	const int *ofs = sb->ofs, *cnt = sb->cnt;
	const double *c = sb->c, *a = sb->a, *b = sb->b;
	int *fast = sb->fast, *low = sb->low, *h = sb->h, nsw = 0;
	struct knap_swap *sw = sb->sw;

	for (int y = 0; y <= maxy; y++)
		out[y] = INFINITY;
	for (int i = 0; i < n; i++) {
		fast[i] = 0;
		for (int l = 1; l < cnt[i]; l++)
			if (c[ofs[i] + fast[i]] > c[ofs[i] + l])
				fast[i] = l;
	}
	double fa = 0, fb = 0, fc = 0;
	int single = 1;

	for (int i = 0; i < n; i++) {
		fa += a[ofs[i] + fast[i]];
		fb += b[ofs[i] + fast[i]];
		fc += c[ofs[i] + fast[i]];
		single &= cnt[i] == 1;
	}
	for (int y = 1; y <= maxy; y++) {
#define MEM(i, l) (a[ofs[i] + (l)] * y + b[ofs[i] + (l)])
		double mfast = fa * y + fb, mlow = 0, shave, sum = 0;

		/* one configuration per node: the fastest, while it fits */
		if (single) {
			if (mfast > mem)
				break;
			out[y] = fc;
			if (y == ychoice && choice)
				memcpy(choice, fast, (size_t)n * sizeof *fast);
			continue;
		}
		memcpy(h, fast, (size_t)n * sizeof *h);
		if (mfast > mem) {
			for (int i = 0; i < n; i++) {
				low[i] = 0;
				for (int l = 1; l < cnt[i]; l++)
					if (MEM(i, low[i]) > MEM(i, l))
						low[i] = l;
				mlow += MEM(i, low[i]);
			}
			if (mlow > mem)
				break; /* and so for every larger y */
			nsw = 0;
			for (int i = 0; i < n; i++)
				for (int l = 0; l < cnt[i]; l++) {
					double save = MEM(i, h[i]) - MEM(i, l);

					if (save > 1e-9)
						sw[nsw++] = (struct knap_swap){
							(c[ofs[i] + l] - c[ofs[i] + h[i]]) / save, i, l };
				}
			/* few swaps: insertion sort, in cmp_swap()'s order */
			for (int x = 1; x < nsw; x++)
				for (int z = x; z > 0 && cmp_swap(&sw[z], &sw[z - 1]) < 0; z--) {
					struct knap_swap tmp = sw[z];

					sw[z] = sw[z - 1];
					sw[z - 1] = tmp;
				}
			shave = mfast - mem;
			for (int k = 0; k < nsw && shave >= 1e-9; k++) {
				shave -= MEM(sw[k].i, h[sw[k].i]) - MEM(sw[k].i, sw[k].l);
				h[sw[k].i] = sw[k].l;
			}
		}
#undef MEM
		for (int i = 0; i < n; i++)
			sum += c[ofs[i] + h[i]];
		out[y] = sum;
		if (y == ychoice && choice)
			memcpy(choice, h, (size_t)n * sizeof *h);
	}
	return AP_OK;
}

int piper_crossing(const struct piper_inst *pi, const char *in, const int *nodes, int n,
		   int t, struct stage_buf *sb)
{
	double resync = 4.0 / pi->mbs / pi->bw;
	int k = 0;

	for (int i = 0; i < n; i++) {
		const struct piper_node *v = &pi->nodes[nodes[i]];
		const struct piper_degree *g = piper_degree_of(v, t);

		if (!g)
			return 0;
		int nfw = 0, nbw = 0;
		double bytes = 0;

		/* the crossing edges once, for every TMPC */
		for (int e = 0; e < v->nin; e++)
			if (!in[pi->edges[v->in[e]].src]) {
				sb->efw[nfw++] = e;
				bytes += pi->edges[v->in[e]].bytes;
			}
		for (int e = 0; e < v->nout; e++)
			if (!in[pi->edges[v->out[e]].dst]) {
				sb->ebw[nbw++] = e;
				bytes += pi->edges[v->out[e]].bytes;
			}
		sb->ofs[i] = k;
		sb->cnt[i] = g->ntmpc;
		for (int l = 0; l < g->ntmpc; l++, k++) {
			const struct piper_tmpc *x = &g->tmpc[l];
			double eb = bytes;

			for (int q = 0; q < nfw; q++)
				eb += x->sync_fw[sb->efw[q]];
			for (int q = 0; q < nbw; q++)
				eb += x->sync_bw[sb->ebw[q]];
			sb->x[k] = 2 * eb / pi->bw + x->time;
			sb->y[k] = resync * x->params;
			sb->a[k] = x->mem_a;
			sb->b[k] = x->mem_b;
		}
	}
	return 1;
}

void piper_contributions(struct stage_buf *sb, int total, int d)
{
	double inv = 1.0 / d;

	for (int k = 0; k < total; k++)
		sb->c[k] = sb->x[k] * inv + (1 - inv) * sb->y[k];
}

int piper_stage_buf_alloc(struct stage_buf *sb, const struct piper_inst *pi)
{
	size_t total = 0;

	for (int v = 0; v < pi->nnodes; v++) {
		size_t most = 0;

		for (int k = 0; k < pi->nodes[v].ndeg; k++)
			if ((size_t)pi->nodes[v].deg[k].ntmpc > most)
				most = (size_t)pi->nodes[v].deg[k].ntmpc;
		total += most;
	}
	sb->ofs = malloc(((size_t)pi->nnodes + 1) * sizeof *sb->ofs);
	sb->cnt = malloc(((size_t)pi->nnodes + 1) * sizeof *sb->cnt);
	sb->fast = malloc(((size_t)pi->nnodes + 1) * sizeof *sb->fast);
	sb->low = malloc(((size_t)pi->nnodes + 1) * sizeof *sb->low);
	sb->h = malloc(((size_t)pi->nnodes + 1) * sizeof *sb->h);
	sb->efw = malloc(((size_t)pi->nedges + 1) * sizeof *sb->efw);
	sb->ebw = malloc(((size_t)pi->nedges + 1) * sizeof *sb->ebw);
	sb->x = malloc((total + 1) * sizeof *sb->x);
	sb->y = malloc((total + 1) * sizeof *sb->y);
	sb->c = malloc((total + 1) * sizeof *sb->c);
	sb->a = malloc((total + 1) * sizeof *sb->a);
	sb->b = malloc((total + 1) * sizeof *sb->b);
	sb->sw = malloc((total + 1) * sizeof *sb->sw);
	return sb->ofs && sb->cnt && sb->fast && sb->low && sb->h && sb->efw && sb->ebw &&
			       sb->x && sb->y && sb->c &&
			       sb->a && sb->b && sb->sw
		       ? AP_OK
		       : ap_err(AP_EFAIL, NULL, 0, "out of memory");
}

void piper_stage_buf_release(struct stage_buf *sb)
{
	free(sb->ofs);
	free(sb->cnt);
	free(sb->fast);
	free(sb->low);
	free(sb->h);
	free(sb->efw);
	free(sb->ebw);
	free(sb->x);
	free(sb->y);
	free(sb->c);
	free(sb->a);
	free(sb->b);
	free(sb->sw);
}

double piper_stage_tps(const struct piper_inst *pi, const int *nodes, int n, int t, int d,
		       int y, int *tmpc)
{
	struct stage_buf sb = { 0 };
	char *in = calloc((size_t)pi->nnodes, 1);
	double *out = malloc(((size_t)y + 1) * sizeof *out), r = INFINITY;

	if (in && out && !piper_stage_buf_alloc(&sb, pi) && y >= 1) {
		for (int i = 0; i < n; i++)
			in[nodes[i]] = 1;
		if (piper_crossing(pi, in, nodes, n, t, &sb)) {
			piper_contributions(&sb, n ? sb.ofs[n - 1] + sb.cnt[n - 1] : 0, d);
			if (!piper_knapsack(pi->mem, n, &sb, y, out, y, tmpc))
				r = out[y];
		}
	}
	piper_stage_buf_release(&sb);
	free(in);
	free(out);
	return r;
}
