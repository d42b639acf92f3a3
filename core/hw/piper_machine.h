/*
 * The machine a Piper input describes (piper_machine.c), as a cluster.
 */
#ifndef AUTOPAR_PIPER_MACHINE_H
#define AUTOPAR_PIPER_MACHINE_H

#include "hw/cluster.h"
#include "model/piper_inst.h"

/* The machine of an instance: one node of max_devices devices with its
 * memory, every link at its bandwidth (no latency); model names it in
 * the description. */
int piper_cluster(const struct piper_inst *pi, const char *model, struct cluster *c);

#endif
