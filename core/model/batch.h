/*
 * The batch of an instance, as a user or a bench matrix gives it: a
 * global batch that every plan splits however many devices it has
 * (strong scaling), or a batch per device, the global batch growing with
 * the cluster (weak scaling), as the papers' data-parallel baselines
 * keep each GPU's minibatch fixed (docs/scaling.md).  Written "N" or
 * "N/dev"; 0 stands for the model's own batch ("0/dev": the model's own
 * batch on every device).
 */
#ifndef AUTOPAR_BATCH_H
#define AUTOPAR_BATCH_H

#include <stdint.h>

struct batch_spec {
	int64_t n;      /* 0: the model's own */
	int per_device; /* weak scaling */
};

/* Parses s; on failure reports "where:line: ..." (line 0: none) and
 * returns AP_EINPUT. */
int batch_spec_parse(const char *s, const char *where, int line, struct batch_spec *b);
/* The global batch on ndev devices for a model whose own batch is own;
 * -1 when it does not fit in 63 bits. */
int64_t batch_spec_global(const struct batch_spec *b, int64_t own, int ndev);

struct graph;
/* Loads model arg (model_load()) at the global batch of b on ndev
 * devices. */
int batch_model_load(const char *arg, const struct batch_spec *b, int ndev, struct graph *g);

#endif
