/*
 * The measured timeline of one training step: when each rank ran each of
 * its tasks (a shard's forward or backward of one micro-batch, with the
 * transfers it waits for; an optimizer update), written in the
 * simulator's timeline format (`autopar sim --timeline`), so that the two
 * can be compared task by task and drawn by the same script.
 */
#ifndef AUTOPAR_TRACE_H
#define AUTOPAR_TRACE_H

#include <pthread.h>

#include "model/graph.h"
#include "transport.h"

enum trace_kind { TRACE_FWD, TRACE_BWD, TRACE_UPDATE };

struct trace_rec {
	int op, kind, mb;
	double t0, t1; /* seconds, now_s() clock */
};

struct trace {
	pthread_mutex_t lock; /* two threads of a rank may add at once */
	struct trace_rec *rec;
	int n, cap;
	double origin;        /* the step's start */
};

int trace_init(struct trace *tr);
/* Starts recording a step that begins now (drops what was recorded). */
void trace_start(struct trace *tr);
/* Records a task; returns nonzero when out of memory. */
int trace_add(struct trace *tr, int op, enum trace_kind kind, int mb, double t0, double t1);
/* Collective: every rank's records to rank 0, which writes them to path
 * (res, resource, start_ms, end_ms, kind, mb, op; times from the step's
 * start on the earliest rank). */
int trace_write(struct trace *tr, struct transport *t, const struct graph *g, const char *path);
void trace_release(struct trace *tr);

#endif
