/*
 * The host side of choosing convolution algorithms (conv_algo.h): the
 * cache, the reported maths, the choice, the search's workspace and the
 * --verbose line.
 * Built into the binary, whose tests call it, and into
 * libautopar-cuda.so, whose cuda_conv.cu does (a hidden copy there, as
 * the Makefile says).
 */
#include "conv_algo.h"

#include <stdio.h>
#include <string.h>

#include "util/err.h"
#include "util/grow.h"

/* the bytewise compare of conv_cache_find sees every byte of a key: no
 * padding between its ints */
_Static_assert(sizeof(struct conv_key) == 15 * sizeof(int), "conv_key has padding");

void conv_cache_init(struct conv_cache *c)
{
	memset(c, 0, sizeof *c);
}

void conv_cache_release(struct conv_cache *c)
{
	free(c->v);
	conv_cache_init(c);
}

struct conv_entry *conv_cache_find(struct conv_cache *c, const struct conv_key *k)
{
	/* a run has tens of shapes, looked up once per kernel call: a
	 * scan costs less than the call it precedes */
	for (int q = 0; q < c->n; q++)
		if (!memcmp(&c->v[q].key, k, sizeof *k))
			return &c->v[q];
	return NULL;
}

struct conv_entry *conv_cache_add(struct conv_cache *c, const struct conv_key *k)
{
	struct conv_entry *e;

	if (grow(&c->v, c->n, &c->cap, sizeof *c->v, 16)) {
		ap_err(AP_EFAIL, NULL, 0, "out of memory");
		return NULL;
	}
	e = &c->v[c->n++];
	memset(e, 0, sizeof *e);
	e->key = *k;
	return e;
}

enum conv_dnn_math conv_search_math(enum gpu_prec p)
{
	return gpu_prec_math(p).dnn_tf32 ? CONV_DNN_DEFAULT : CONV_DNN_FMA;
}

void conv_cand_math(struct conv_cand *c, int reported, enum gpu_prec p)
{
	if (conv_search_math(p) == CONV_DNN_FMA) {
		c->math = CONV_MATH_FMA;
		c->run_math = CONV_DNN_FMA;
		return;
	}
	c->run_math = (enum conv_dnn_math)reported;
	c->math = reported == CONV_DNN_FMA ? CONV_MATH_FMA
		  : reported == CONV_DNN_DEFAULT || reported == CONV_DNN_TENSOR_OP ? CONV_MATH_TF32
										 : CONV_MATH_NARROW;
}

static int allowed(enum conv_math m, enum gpu_prec p)
{
	return m == CONV_MATH_FMA || (m == CONV_MATH_TF32 && gpu_prec_math(p).dnn_tf32);
}

/* c may run: cuDNN ran (or supports) it, within the workspace and the
 * precision */
static int usable(const struct conv_cand *c, size_t ws_limit, enum gpu_prec p)
{
	return c->ok && c->ws_bytes <= ws_limit && allowed(c->math, p);
}

/* 1 when a is to be run rather than b (both qualify) */
static int better(const struct conv_cand *a, const struct conv_cand *b)
{
	if (a->ms != b->ms)
		return a->ms < b->ms;
	if (a->deterministic != b->deterministic)
		return a->deterministic;
	if (a->ws_bytes != b->ws_bytes)
		return a->ws_bytes < b->ws_bytes;
	return a->algo < b->algo;
}

int conv_pick(const struct conv_cand *cand, int n, size_t ws_limit, enum gpu_prec p)
{
	int best = -1;

	for (int q = 0; q < n; q++) {
		const struct conv_cand *c = &cand[q];

		/* a time that is not a number or negative is cuDNN's mark of
		 * one that did not run, whatever its status said */
		if (!usable(c, ws_limit, p) || !(c->ms >= 0))
			continue;
		if (best < 0 || better(c, &cand[best]))
			best = q;
	}
	return best;
}

int conv_pick_ranked(const struct conv_cand *cand, int n, size_t ws_limit, enum gpu_prec p)
{
	/* deterministic first: a plan's ranks then sum their gradients in
	 * one order, as they did before the search */
	for (int pass = 0; pass < 2; pass++)
		for (int q = 0; q < n; q++)
			if (usable(&cand[q], ws_limit, p) && (pass || cand[q].deterministic))
				return q;
	return -1;
}

size_t conv_ws_below(const size_t *need, int n, size_t cap)
{
	size_t ws = 0;

	for (int q = 0; q < n; q++)
		if (need[q] <= cap && need[q] > ws)
			ws = need[q];
	return ws;
}

const char *conv_dir_name(enum conv_dir d)
{
	static const char *const names[CONV_NDIRS] = {
		[CONV_FWD] = "forward",
		[CONV_BWD_DATA] = "backward data",
		[CONV_BWD_FILTER] = "backward filter",
	};

	return (unsigned)d < CONV_NDIRS ? names[d] : "?";
}

static const char *math_name(enum conv_math m)
{
	return m == CONV_MATH_FMA ? "fma" : m == CONV_MATH_TF32 ? "tf32" : "narrow";
}

int conv_line(char *buf, size_t len, const struct conv_key *k, enum conv_dir d,
	      const char *algo, const struct conv_cand *c, int ran, int n, const char *why)
{
	char ws[32], ms[32], tail[160];

	if (c->ws_bytes)
		snprintf(ws, sizeof ws, "workspace %.2f MiB", (double)c->ws_bytes / (1 << 20));
	else
		snprintf(ws, sizeof ws, "no workspace");
	if (c->ms >= 0)
		snprintf(ms, sizeof ms, "%.3f ms", (double)c->ms);
	else
		snprintf(ms, sizeof ms, "not timed");
	if (why)
		snprintf(tail, sizeof tail, "cuDNN's heuristic choice: %s", why);
	else
		snprintf(tail, sizeof tail, "%d of %d ran", ran, n);
	return snprintf(buf, len,
			"conv n=%d c=%d h=%d w=%d k=%d r=%d s=%d stride=%dx%d pad=%dx%d "
			"dilation=%dx%d groups=%d %s, %s: %s (%s, %sdeterministic) %s, %s; %s",
			k->n, k->c, k->h, k->w, k->k, k->r, k->s, k->stride_h, k->stride_w,
			k->pad_h, k->pad_w, k->dil_h, k->dil_w, k->groups,
			gpu_prec_name(k->precision), conv_dir_name(d), algo, math_name(c->math),
			c->deterministic ? "" : "not ", ms, ws, tail);
}
