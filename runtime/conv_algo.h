/*
 * Choosing cuDNN's convolution algorithms, the host side (plain C, no
 * CUDA; docs/gpu.md, "Convolution algorithms").  cuda_conv.cu searches:
 * cuDNN's Find times every algorithm of a direction (forward, backward
 * data, backward filter) on the device, within a workspace; this file
 * holds what needs no device: the cache of choices keyed by shape and
 * precision, so that each shape is searched once per direction and
 * process (the run's steps and the profiler's repetitions find it
 * there), what the math cuDNN reports for a candidate means in the
 * precision searched, the choice among the timed candidates (or, where
 * the search gives none, among cuDNN's heuristic ranking), the workspace
 * a search may use, and the line `--verbose` prints for a choice.  Its
 * tests feed it synthetic candidates.
 */
#ifndef AUTOPAR_CONV_ALGO_H
#define AUTOPAR_CONV_ALGO_H

#include <stddef.h>

#include "gpu_prec.h"

enum conv_dir {
	CONV_FWD,
	CONV_BWD_DATA,
	CONV_BWD_FILTER,
	CONV_NDIRS,
};

/* How an algorithm computes: float32 FMA, tensor cores on TF32 inputs,
 * or tensor cores after converting float32 data to a narrower type
 * (half), which no precision of ours allows. */
enum conv_math {
	CONV_MATH_FMA,
	CONV_MATH_TF32,
	CONV_MATH_NARROW,
};

/* cuDNN's math types by their numbers (cudnnMathType_t; cuda_conv.cu
 * checks that they agree), so that what a reported math means is decided
 * and tested without cuDNN. */
enum conv_dnn_math {
	CONV_DNN_DEFAULT = 0,
	CONV_DNN_TENSOR_OP = 1,
	CONV_DNN_TENSOR_OP_CONVERT = 2, /* ..._ALLOW_CONVERSION: to half */
	CONV_DNN_FMA = 3,
};

/* One convolution as cuDNN sees it (NCHW float32), and the precision it
 * runs in: a key compared bytewise, every member an int. */
struct conv_key {
	int n, c, h, w;   /* input */
	int k, r, s;      /* output channels, kernel rows, kernel columns */
	int stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
	enum gpu_prec precision;
};

/* One algorithm as the search timed it. */
struct conv_cand {
	int algo;          /* cuDNN's number for it within its direction */
	int ok;            /* it ran (else the rest means nothing) */
	int deterministic; /* the same bits on every run */
	enum conv_math math;
	enum conv_dnn_math run_math; /* the descriptor's math to run it in */
	size_t ws_bytes;   /* the workspace it needs */
	float ms;          /* its time; negative or NaN: not timed */
};

/* The algorithm one direction of a shape runs. */
struct conv_choice {
	int searched;      /* 0 until the search has chosen */
	struct conv_cand c;
};

struct conv_entry {
	struct conv_key key;
	struct conv_choice dir[CONV_NDIRS];
	void *descs;       /* the backend's descriptors of the shape, its to free */
};

/* Entries in the order added; a pointer to one lasts until the next add. */
struct conv_cache {
	struct conv_entry *v;
	int n, cap;
};

void conv_cache_init(struct conv_cache *c);
/* Frees the entries (not what their descs point to). */
void conv_cache_release(struct conv_cache *c);
/* The entry of key k, or NULL. */
struct conv_entry *conv_cache_find(struct conv_cache *c, const struct conv_key *k);
/* A new entry for k, nothing searched, descs NULL; NULL when out of
 * memory (reported).  The caller has found no entry for k. */
struct conv_entry *conv_cache_add(struct conv_cache *c, const struct conv_key *k);

/* The math a search in precision p sets on the descriptor: FMA in fp32
 * (and for a value outside the enum), cuDNN's default in tf32. */
enum conv_dnn_math conv_search_math(enum gpu_prec p);

/* c's math and run_math from the math cuDNN reported for it (a
 * cudnnMathType_t's number) in a search, or heuristic query, in
 * precision p.  In fp32 the descriptor's FMA math restricts cuDNN to FMA
 * kernels, whatever its label says (cuDNN may label an algorithm that
 * has no tensor-core variant with its default math, which read as TF32
 * would reject every one): every candidate is FMA and runs in FMA math.
 * In tf32 the label tells: FMA, TF32 (default or tensor-op math on
 * float32 data) or NARROW (conversion, or a number this build does not
 * know), and the call sets the reported math, as cuDNN chooses kernels
 * by algorithm and math together. */
void conv_cand_math(struct conv_cand *c, int reported, enum gpu_prec p);

/* The candidate to run, of the n timed: among those that ran, need at
 * most ws_limit bytes and compute as precision p allows (fp32: FMA only;
 * tf32: FMA or TF32; never NARROW), the fastest; equal times go to the
 * deterministic one, then the smaller workspace, then the lower number,
 * so the choice does not depend on the order cuDNN lists them.  Its
 * index, or -1 when none qualifies. */
int conv_pick(const struct conv_cand *cand, int n, size_t ws_limit, enum gpu_prec p);

/* The candidate to run of the n that cuDNN's heuristics ranked (best
 * first, not timed), where the search gave none: the first that cuDNN
 * supports, needs at most ws_limit bytes and computes as p allows, the
 * deterministic ones before the rest (the choice before the search was
 * added).  Its index, or -1 when none qualifies. */
int conv_pick_ranked(const struct conv_cand *cand, int n, size_t ws_limit, enum gpu_prec p);

/* The workspace to search with: the largest of the n algorithms' needs
 * that is at most cap (0 when none is), so that every algorithm that
 * fits the cap can run and no byte more is allocated.  Called again with
 * cap one below the last answer, it gives the next smaller size to try
 * when an allocation fails. */
size_t conv_ws_below(const size_t *need, int n, size_t cap);

/* "forward", "backward data", "backward filter" */
const char *conv_dir_name(enum conv_dir d);

/* The --verbose line of a choice (no newline) into buf (len bytes):
 * the shape and precision, the direction, the algorithm's name, its
 * math, time and workspace, and how many of the candidates ran, e.g.
 * "conv n=64 c=256 h=56 w=56 k=128 r=1 s=1 stride=2x2 pad=0x0
 * dilation=1x1 groups=1 fp32, backward data: ALGO_1 (fma,
 * deterministic) 0.412 ms, workspace 1.25 MiB; 5 of 6 ran"; for a
 * heuristic choice (why not NULL: why the search gave none) "not timed"
 * and "; cuDNN's heuristic choice: WHY" instead of the count.  Returns
 * what snprintf returns. */
int conv_line(char *buf, size_t len, const struct conv_key *k, enum conv_dir d,
	      const char *algo, const struct conv_cand *c, int ran, int n, const char *why);

#endif
