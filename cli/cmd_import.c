/*
 * `autopar models import FILE.onnx -o OUT.model`: brings a model exported
 * to ONNX (from PyTorch, say) in as one of autopar's model files.  The ONNX
 * side is the onnx Python package (Debian's python3-onnx) behind
 * scripts/onnx2model, found under the data dir; this file runs it, reads
 * back the model text it prints, parses that with the model reader so only
 * a valid model is written, and writes it atomically.  Without the onnx
 * package the command says what to install (docs/conventions.md, rule 3)
 * and fails with status 1; an ONNX node with no autopar operator is bad
 * input (status 2), named with its op_type.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "util/datadir.h"
#include "util/output.h"
#include "util/err.h"
#include "model/model_io.h"

extern char **environ;

/* The converter's output is text of a few hundred bytes per operator; more
 * than this is not a model. */
#define MAX_OUT_BYTES (64u << 20)

struct buf {
	char *p;
	size_t n, cap;
};

static int buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 4096;
		char *np;

		while (cap < b->n + n + 1)
			cap *= 2;
		if (cap > MAX_OUT_BYTES)
			return -1;
		np = realloc(b->p, cap);
		if (!np)
			return -1;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
	return 0;
}

/* Runs `PYTHON script onnx name batch`, collecting its stdout into out and
 * its stderr into err; *status is its exit status (-1 when it did not run
 * to an exit). */
static int run_converter(const char *script, const char *onnx, const char *name,
			 const char *batch, struct buf *out, struct buf *err, int *status)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, rc = AP_OK, ws;
	const char *py = python_path();
	char *argv[] = { (char *)py, (char *)script, (char *)onnx, (char *)name, (char *)batch,
			 NULL };
	posix_spawn_file_actions_t fa;
	pid_t pid;

	*status = -1;
	if (pipe(po) || pipe(pe)) {
		rc = ap_err(AP_EFAIL, "models import", 0, "cannot make a pipe: %m");
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	posix_spawn_file_actions_addclose(&fa, po[0]);
	posix_spawn_file_actions_addclose(&fa, pe[0]);
	errno = posix_spawnp(&pid, py, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	if (errno) {
		rc = ap_err(AP_EFAIL, "models import", 0,
			    "cannot run '%s': %m (expected python3 with the onnx package: "
			    "apt-get install python3-onnx)", py);
		goto out;
	}
	for (int open_fds = 2; open_fds > 0;) {
		struct pollfd p[2] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 } };
		char chunk[65536];

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int k = 0; k < 2; k++) {
			ssize_t n;

			if (p[k].fd < 0 || !(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(p[k].fd, chunk, sizeof chunk);
			if (n > 0 && buf_add(k ? err : out, chunk, (size_t)n) == 0)
				continue;
			if (n < 0 && errno == EINTR)
				continue;
			if (n > 0) /* too much output: stop reading, the child is ended */
				kill(pid, SIGTERM);
			close(p[k].fd);
			*(k ? &pe[0] : &po[0]) = -1;
			open_fds--;
		}
	}
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(ws))
		*status = WEXITSTATUS(ws);
out:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return rc;
}

/* The converter's last line of stderr, which is its message. */
static const char *last_line(struct buf *err)
{
	char *s;

	if (!err->p)
		return "no message";
	while (err->n && (err->p[err->n - 1] == '\n' || err->p[err->n - 1] == '\r'))
		err->p[--err->n] = 0;
	s = strrchr(err->p, '\n');
	return s ? s + 1 : err->p;
}

static int put_text(FILE *f, void *ctx)
{
	const char *text = ctx;

	return fputs(text, f) < 0 ? ap_err(AP_EFAIL, NULL, 0, "write failed: %m") : 0;
}

/* NAME of OUT: its file name without the directory and `.model`. */
static void name_of(const char *out, char *name, size_t len)
{
	const char *b = strrchr(out, '/');
	size_t n;

	b = b ? b + 1 : out;
	n = strlen(b);
	if (n > 6 && strcmp(b + n - 6, ".model") == 0)
		n -= 6;
	snprintf(name, len, "%.*s", (int)n, b);
}

int models_import(int argc, char **argv)
{
	long long batch = 64;
	const char *pos[1], *outf = NULL, *name = NULL;
	char script[4096], nbuf[256], bstr[32];
	struct buf out = { 0 }, err = { 0 };
	struct graph g;
	int npos, rc, status, parsed = 0;
	const struct opt opts[] = {
		{ "-o", "--output", OPT_STR, &outf },
		{ "-b", "--batch", OPT_POS_INT, &batch },
		{ NULL, "--name", OPT_STR, &name },
		{ 0 },
	};

	rc = args_parse("models import", argc, argv, opts, pos, 1, &npos);
	if (rc)
		return rc;
	if (npos != 1 || !outf)
		return ap_err(AP_EINPUT, "models import", 0,
			      "expected FILE.onnx and -o OUT.model (see autopar models --help)");
	if (access(pos[0], R_OK) != 0)
		return ap_err(AP_EINPUT, pos[0], 0, "cannot read: %m");
	datapath(script, sizeof script, "scripts/onnx2model");
	if (access(script, R_OK) != 0)
		return ap_err(AP_EFAIL, script, 0, "cannot read the ONNX converter: %m");
	if (!name) {
		name_of(outf, nbuf, sizeof nbuf);
		name = nbuf;
	}
	snprintf(bstr, sizeof bstr, "%lld", batch);
	rc = run_converter(script, pos[0], name, bstr, &out, &err, &status);
	if (rc)
		goto out;
	if (status == 2) {
		rc = ap_err(AP_EINPUT, pos[0], 0, "%s", last_line(&err));
	} else if (status == 3) {
		rc = ap_err(AP_EFAIL, "models import", 0, "%s", last_line(&err));
	} else if (status != 0 || !out.p) {
		rc = ap_err(AP_EFAIL, pos[0], 0, "the ONNX converter '%s' failed (status %d): %s",
			    script, status, last_line(&err));
	} else {
		rc = model_parse(out.p, pos[0], 0, &g);
		parsed = rc == AP_OK;
		if (!rc)
			rc = write_atomic(outf, put_text, out.p);
	}
out:
	if (parsed)
		graph_release(&g);
	free(out.p);
	free(err.p);
	return rc;
}
