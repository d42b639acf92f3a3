/*
 * Piper's own JSON planner input (Tarnawski et al., NeurIPS 2021; the
 * format is docs/piper.md): read into a Piper instance, imported as a
 * model whose operators keep the measured numbers of each layer's
 * configuration without tensor parallelism (the machine it describes is
 * hw/piper_machine.h's).
 */
#ifndef AUTOPAR_PIPER_IO_H
#define AUTOPAR_PIPER_IO_H

#include "model/graph.h"
#include "model/piper_inst.h"

/* Reads and validates path into *out, nodes numbered 0 .. n-1 in file
 * order.  Every problem is reported once, naming its JSON field (such as
 * nodes[3].TMPCs["2"][0].timePerSample), and returns AP_EINPUT with *out
 * released. */
int piper_read(const char *path, struct piper_inst *out);

/* Imports path as a graph of opaque operators, one per node in a
 * topological order, with the numbers of the node's degree-1 "vanilla"
 * configuration (else its first degree-1 one) for a batch of mbs micro-
 * batches; g->piper keeps the instance, its node v being operator v. */
int piper_read_model(const char *path, struct graph *g);

#endif
