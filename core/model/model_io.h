/*
 * Reading and writing models: the zoo's line-oriented text format
 * (models/FORMAT.md) and PipeDream's profiled graph.txt, whose nodes keep
 * their measured times, activation and parameter bytes.
 */
#ifndef AUTOPAR_MODEL_IO_H
#define AUTOPAR_MODEL_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/graph.h"

/* Parses model text; path names it in messages.  batch > 0 overrides the
 * file's `batch` line. */
int model_parse(const char *text, const char *path, int64_t batch, struct graph *g);
int model_read(const char *path, int64_t batch, struct graph *g);
/* Writes g in the text format (repeat blocks expanded). */
int model_write(const struct graph *g, FILE *f);

/* Imports a PipeDream graph.txt (format: its README).  The batch is the
 * one the file was profiled at (found from an image input, else 64);
 * batch > 0 rescales the measured numbers to that batch. */
int pipedream_read(const char *path, int64_t batch, struct graph *g);

/* A model argument: a zoo name, a .model file, pipedream/NAME, a PipeDream
 * .txt file, or a Piper .json input (piper_io.h; batch > 0 rescales its
 * batch of micro-batches). */
int model_load(const char *arg, int64_t batch, struct graph *g);
/* Whether arg names a profiled model of the data dir: pipedream/NAME or
 * piper/NAME (NAME one path component, without .txt or .json). */
int model_data_name(const char *arg);
/* The file model_load(arg) reads, into path[0..len). */
void model_source(const char *arg, char *path, size_t len);

#endif
