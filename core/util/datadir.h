/*
 * Where autopar finds its data (models/, profiles/): $AUTOPAR_DATA, else the
 * source tree the binary was built in (bin/..), else the installed share
 * directory.  Names given as paths (containing '/' or ending in the file
 * extension) are used as they are.
 */
#ifndef AUTOPAR_DATADIR_H
#define AUTOPAR_DATADIR_H

#include <stddef.h>

const char *datadir(void);
/* Writes datadir()/rel into buf; returns buf. */
char *datapath(char *buf, size_t len, const char *rel);

/* The directory part of path into dir ("." when it has none, "/" for a
 * file of the root). */
void path_dir(const char *path, char *dir, size_t len);

/* Resolves a model argument: a file path, or a zoo name under models/. */
char *model_path(char *buf, size_t len, const char *arg);

/* Resolves a profile argument: a directory path, or a name under profiles/. */
char *profile_dir(char *buf, size_t len, const char *arg);

/* The python3 that runs autopar's Python helpers (scripts/onnx2model, the
 * PyTorch peer): $AUTOPAR_PYTHON, else the system python3 that Debian's
 * python3-onnx and python3-torch install into, else python3 on PATH. */
const char *python_path(void);

#endif
