/*
 * `autopar run --dump FILE`: the first training step of a model on one
 * device, written for another framework to repeat (bench/torch_peer_cpu.py
 * loads it into PyTorch and compares the loss and the gradients).
 *
 * The file is a text header, then raw little-endian float32 data:
 *
 *     autopar-dump 1
 *     model NAME
 *     batch N
 *     seed S
 *     loss L                       the first step's mean loss (%.17g)
 *     tensor input NAME COUNT      the first batch of each input, memory order
 *     tensor labels NAME COUNT     the labels of each loss op (class indices)
 *     tensor param NAME COUNT      each op's initial parameters (params.h layout)
 *     tensor grad NAME COUNT       their gradient of the first step's mean loss
 *     end
 *
 * and the tensors' COUNT floats each, in the header's order, right after
 * the newline of `end`.  The gradients are read as the momentum after the
 * first step, which starts at zero (exec_gather_momentum()).
 */
#ifndef AUTOPAR_DUMP_H
#define AUTOPAR_DUMP_H

#include "backend.h"
#include "exec.h"
#include "model/graph.h"

/* Trains g's first step on one device of be (seed, pool, lr and momentum
 * from o) and writes the dump to path atomically: a failure leaves no
 * file. */
int dump_first_step(const char *path, const struct graph *g, const struct backend *be,
		    const struct exec_opts *o);

#endif
