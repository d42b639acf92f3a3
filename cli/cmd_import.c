/*
 * `autopar models import FILE.onnx -o OUT.model`: brings a model exported
 * to ONNX (from PyTorch, say) in as one of autopar's model files.  The ONNX
 * side is the onnx Python package (Debian's python3-onnx) behind
 * scripts/onnx2model, found under the data dir; this file runs it, reads
 * back the model text it prints, parses that with the model reader so only
 * a valid model is written, and writes it atomically.  Without the onnx
 * package the command says what to install (docs/conventions.md, rule 3)
 * and fails with status 1; bad input (a file that is not ONNX, an invalid
 * graph, a node with no autopar operator) is status 2, named by its node
 * (models/FORMAT.md, "Importing from ONNX").  The converter runs in a
 * process group of its own, which an interrupt of this command (SIGINT,
 * SIGTERM, SIGHUP) ends and waits for before the command returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "util/datadir.h"
#include "util/err.h"
#include "util/output.h"
#include "model/model_io.h"

extern char **environ;

/* The converter's output is text of a few hundred bytes per operator; more
 * than this is not a model. */
#define MAX_OUT_BYTES (64u << 20)
/* The most a protobuf message, so an ONNX file, holds: larger weights go
 * to external data files. */
#define MAX_ONNX_BYTES INT32_MAX
/* How long the converter has to end after SIGTERM before SIGKILL. */
#define STOP_GRACE_MS 5000
/* What the converted text is called while the model reader parses it; its
 * messages are then told again naming the ONNX node (converted_refused). */
#define CONVERTED "the converted model"

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

/* --- interrupts ------------------------------------------------------------ */

/* The signals that end an import; each is passed on to the converter as
 * SIGTERM (a Python program takes SIGINT as an exception it may catch). */
static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define NSTOP ((int)(sizeof stop_signals / sizeof stop_signals[0]))

static volatile sig_atomic_t stopped;    /* the signal that came, 0 before */
static int stop_pipe[2] = { -1, -1 };   /* wakes the wait for the converter */

static void on_stop(int sig)
{
	int saved = errno;
	char c = 1;
	ssize_t n;

	stopped = sig;
	n = write(stop_pipe[1], &c, 1);
	(void)n; /* a full pipe has woken the wait already */
	errno = saved;
}

/* Catches the stop signals, but those ignored (nohup, a background job),
 * which stay so; old keeps what was there. */
static int stop_catch(struct sigaction old[NSTOP])
{
	struct sigaction sa = { .sa_handler = on_stop };

	stopped = 0;
	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK))
		return ap_err(AP_EFAIL, "models import", 0, "cannot make a pipe: %m");
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < NSTOP; i++) {
		sigaction(stop_signals[i], NULL, &old[i]);
		if (old[i].sa_handler != SIG_IGN)
			sigaction(stop_signals[i], &sa, NULL);
	}
	return AP_OK;
}

static void stop_release(const struct sigaction old[NSTOP])
{
	for (int i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &old[i], NULL);
	for (int i = 0; i < 2; i++) {
		if (stop_pipe[i] >= 0)
			close(stop_pipe[i]);
		stop_pipe[i] = -1;
	}
}

/* --- the converter ----------------------------------------------------------- */

static int spawn_converter(char **argv, int out_fd, int err_fd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t dfl;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	posix_spawnattr_init(&at);
	/* its own group, so that stopping it reaches the children it forks;
	 * SIGTERM at its default, which ends it, whatever this one inherited */
	posix_spawnattr_setpgroup(&at, 0);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawnp(pid, argv[0], &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

/* Runs `PYTHON script onnx name batch`, collecting its stdout into out and
 * its stderr into err, until it ends or a stop signal comes (then it is
 * ended and waited for); *ws is its wait status. */
static int run_converter(const char *script, const char *onnx, const char *name,
			 const char *batch, struct buf *out, struct buf *err, int *ws)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, rc = AP_OK, term_ms = -1;
	const char *py = python_path();
	char *argv[] = { (char *)py, (char *)script, (char *)onnx, (char *)name, (char *)batch,
			 NULL };
	pid_t pid;

	if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
		rc = ap_err(AP_EFAIL, "models import", 0, "cannot make a pipe: %m");
		goto out;
	}
	errno = spawn_converter(argv, po[1], pe[1], &pid);
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
		struct pollfd p[3] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 },
				       { stop_pipe[0], POLLIN, 0 } };
		char chunk[65536];
		int n_ready;

		if (stopped && term_ms < 0) {
			kill(-pid, SIGTERM);
			term_ms = STOP_GRACE_MS;
		}
		n_ready = poll(p, 3, term_ms);
		if (n_ready < 0 && errno != EINTR) { /* it could block on a pipe not read */
			kill(-pid, SIGKILL);
			break;
		}
		if (n_ready == 0) { /* SIGTERM has not ended it */
			kill(-pid, SIGKILL);
			term_ms = -1;
			continue;
		}
		if (n_ready < 0)
			continue;
		if (p[2].revents & POLLIN)
			while (read(stop_pipe[0], chunk, sizeof chunk) > 0)
				;
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
				kill(-pid, SIGTERM);
			close(p[k].fd);
			*(k ? &pe[0] : &po[0]) = -1;
			open_fds--;
		}
	}
	while (waitpid(pid, ws, 0) < 0 && errno == EINTR)
		;
	if (stopped) /* whatever of its group is left */
		kill(-pid, SIGKILL);
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

/* The status of a converter that did not convert: its refusal (exit 2) or
 * its failure, said as it ended. */
static int converter_failed(const char *onnx, const char *script, int ws, struct buf *err)
{
	if (WIFSIGNALED(ws))
		return ap_err(AP_EFAIL, onnx, 0, "the ONNX converter '%s' was killed by signal %d (%s)",
			      script, WTERMSIG(ws), strsignal(WTERMSIG(ws)));
	if (WEXITSTATUS(ws) == 2 && err->p)
		return ap_err(AP_EINPUT, onnx, 0, "%s", last_line(err));
	if (WEXITSTATUS(ws) == 3)
		return ap_err(AP_EFAIL, "models import", 0, "%s", last_line(err));
	if (WEXITSTATUS(ws) == 0)
		return ap_err(AP_EFAIL, onnx, 0, "the ONNX converter '%s' printed no model", script);
	return ap_err(AP_EFAIL, onnx, 0, "the ONNX converter '%s' failed (exit status %d): %s",
		      script, WEXITSTATUS(ws), last_line(err));
}

/* The model reader refused the converted text (its message quietly kept,
 * "CONVERTED:LINE: what"): says it again naming the ONNX node the line
 * came from, which the converter gives in a comment at the line's end. */
static int converted_refused(int rc, const char *onnx, const char *text)
{
	static const char prefix[] = CONVERTED ":";
	const char *msg = ap_last_error(), *line = text, *end, *from;
	char *rest;
	long no;

	if (strncmp(msg, prefix, sizeof prefix - 1) != 0)
		return ap_err(rc, onnx, 0, "%s", strncmp(msg, "autopar: ", 9) ? msg : msg + 9);
	no = strtol(msg + sizeof prefix - 1, &rest, 10);
	if (strncmp(rest, ": ", 2) != 0)
		return ap_err(rc, onnx, 0, "%s", msg);
	for (long i = 1; i < no && line; i++) {
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	end = line ? strchrnul(line, '\n') : NULL;
	from = line ? strstr(line, "  # ") : NULL;
	if (from && from < end)
		return ap_err(rc, onnx, 0, "%.*s: %s", (int)(end - from - 4), from + 4, rest + 2);
	return ap_err(rc, onnx, 0, "%s (line %ld of the model converted from it)", rest + 2, no);
}

static int put_text(FILE *f, void *ctx)
{
	const char *text = ctx;

	return fputs(text, f) < 0 ? ap_err(AP_EFAIL, NULL, 0, "write failed: %m") : 0;
}

/* --- names and the input ------------------------------------------------------- */

/* A name the model format's `model NAME` line holds as it is. */
static int plain_name(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < NAME_LEN &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

#define PLAIN "at most 63 letters, digits, '_', '.' and '-'"

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

/* The ONNX file: a regular file of at most MAX_ONNX_BYTES (a device or a
 * pipe would be read until memory ran out). */
static int check_input(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0 || access(path, R_OK) != 0)
		return ap_err(AP_EINPUT, path, 0, "cannot read: %m");
	if (S_ISDIR(st.st_mode))
		return ap_err(AP_EINPUT, path, 0, "is a directory (expected an ONNX file)");
	if (!S_ISREG(st.st_mode))
		return ap_err(AP_EINPUT, path, 0, "not a regular file (expected an ONNX file)");
	if (st.st_size == 0)
		return ap_err(AP_EINPUT, path, 0, "is empty (expected an ONNX file)");
	if (st.st_size > MAX_ONNX_BYTES)
		return ap_err(AP_EINPUT, path, 0,
			      "%lld bytes, more than the 2 GiB an ONNX file holds (protobuf's limit; "
			      "larger weights go to external data)", (long long)st.st_size);
	return AP_OK;
}

int models_import(int argc, char **argv)
{
	long long batch = 64;
	const char *pos[1], *outf = NULL, *name = NULL;
	char script[4096], nbuf[256], bstr[32];
	struct buf out = { 0 }, err = { 0 };
	struct sigaction old[NSTOP];
	struct graph g;
	int npos, rc, ws = 0, parsed = 0;
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
	if (name && !plain_name(name))
		return ap_err(AP_EINPUT, "models import", 0,
			      "--name: expected a model name of " PLAIN);
	if (!name) {
		name_of(outf, nbuf, sizeof nbuf);
		if (!plain_name(nbuf))
			return ap_err(AP_EINPUT, outf, 0,
				      "the file's name before .model is the model's name, expected "
				      PLAIN " (or give one with --name)");
		name = nbuf;
	}
	rc = io_paths_check((const struct io_path[]){ { "FILE.onnx", pos[0], 0 }, { "-o", outf, 1 } },
			    2);
	if (!rc)
		rc = check_input(pos[0]);
	if (rc)
		return rc;
	datapath(script, sizeof script, "scripts/onnx2model");
	if (access(script, R_OK) != 0)
		return ap_err(AP_EFAIL, script, 0, "cannot read the ONNX converter: %m");
	snprintf(bstr, sizeof bstr, "%lld", batch);
	rc = stop_catch(old);
	if (rc)
		return rc;
	rc = run_converter(script, pos[0], name, bstr, &out, &err, &ws);
	/* from here a signal ends the command as it would any other, and
	 * write_atomic() removes what it was writing */
	stop_release(old);
	if (!rc && stopped) {
		rc = 128 + stopped;
		ap_err(rc, "models import", 0, "interrupted (%s); ended the ONNX converter",
		       strsignal(stopped));
	} else if (!rc && (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0 || !out.p)) {
		rc = converter_failed(pos[0], script, ws, &err);
	} else if (!rc) {
		ap_err_quiet(1);
		rc = model_parse(out.p, CONVERTED, 0, &g);
		ap_err_quiet(0);
		parsed = rc == AP_OK;
		if (rc)
			rc = converted_refused(rc, pos[0], out.p);
		else
			rc = write_atomic(outf, put_text, out.p);
	}
	if (parsed)
		graph_release(&g);
	free(out.p);
	free(err.p);
	return rc;
}
