/*
 * Writing output files (output.h): a regular file is replaced whole, by
 * rename, and only once complete; a device or FIFO is written in place.
 */
#include "util/output.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/datadir.h"
#include "util/err.h"

/* The temporary a write_atomic() has open, removed by a signal that ends
 * the process meanwhile. */
static char pending[PATH_MAX + 32];
static volatile sig_atomic_t armed;
static const int caught[] = { SIGINT, SIGTERM, SIGHUP };
static struct sigaction saved[sizeof caught / sizeof *caught];

static void on_signal(int sig)
{
	if (armed)
		unlink(pending);
	for (size_t i = 0; i < sizeof caught / sizeof *caught; i++)
		sigaction(caught[i], &saved[i], NULL);
	raise(sig); /* delivered, as the command had it, when this returns */
}

static void arm(const char *tmp)
{
	struct sigaction sa = { .sa_handler = on_signal };

	snprintf(pending, sizeof pending, "%s", tmp);
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof caught / sizeof *caught; i++)
		sigaddset(&sa.sa_mask, caught[i]);
	for (size_t i = 0; i < sizeof caught / sizeof *caught; i++)
		sigaction(caught[i], &sa, &saved[i]);
	armed = 1;
}

static void disarm(void)
{
	for (size_t i = 0; i < sizeof caught / sizeof *caught; i++)
		sigaction(caught[i], &saved[i], NULL);
	armed = 0;
}

/* A device, a FIFO or a dangling link: written through, never replaced. */
static int write_in_place(const char *path, int (*write_cb)(FILE *f, void *ctx), void *ctx)
{
	FILE *f = fopen(path, "w");
	int rc;

	if (!f)
		return ap_err(AP_EINPUT, path, 0, "cannot write: %m");
	rc = write_cb(f, ctx);
	if (fclose(f) != 0 && rc == 0)
		rc = ap_err(AP_EFAIL, path, 0, "write failed: %m");
	return rc;
}

int write_atomic(const char *path, int (*write_cb)(FILE *f, void *ctx), void *ctx)
{
	char target[PATH_MAX], tmp[PATH_MAX + 32];
	struct stat st, lst;
	int exists, rc;
	FILE *f;

	if (!*path)
		return ap_err(AP_EINPUT, NULL, 0, "an output path is empty (expected the path of a file)");
	exists = stat(path, &st) == 0;
	/* a directory is a usage error, as a missing one is (exit 2) */
	if (exists && S_ISDIR(st.st_mode))
		return ap_err(AP_EINPUT, path, 0, "is a directory (expected the path of a file)");
	if (exists && !S_ISREG(st.st_mode))
		return write_in_place(path, write_cb, ctx);
	if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
		if (!exists || !realpath(path, target))
			return write_in_place(path, write_cb, ctx);
	} else if (strlen(path) < sizeof target) {
		memcpy(target, path, strlen(path) + 1);
	} else {
		return ap_err(AP_EINPUT, path, 0, "path too long");
	}
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid());
	arm(tmp);
	f = fopen(tmp, "w");
	if (!f) {
		disarm();
		return ap_err(AP_EINPUT, path, 0, "cannot write: %m");
	}
	if (exists) /* the file keeps its permissions */
		(void)fchmod(fileno(f), st.st_mode & 07777);
	rc = write_cb(f, ctx);
	if (fclose(f) != 0 && rc == 0)
		rc = ap_err(AP_EFAIL, path, 0, "write failed: %m");
	if (rc == 0 && rename(tmp, target) != 0)
		rc = ap_err(AP_EFAIL, path, 0, "cannot rename into place: %m");
	if (rc != 0)
		remove(tmp);
	disarm();
	return rc;
}

/* Whether a and b are one file: the same inode when both exist (devices
 * and FIFOs never count), else the same canonical directory and name. */
static int same_file(const char *a, const char *b)
{
	char da[PATH_MAX], db[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX];
	struct stat sa, sb;
	int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
	const char *na, *nb;

	if (ea && eb)
		return S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	if (ea != eb)
		return 0;
	path_dir(a, da, sizeof da);
	path_dir(b, db, sizeof db);
	na = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
	nb = strrchr(b, '/') ? strrchr(b, '/') + 1 : b;
	return realpath(da, ra) && realpath(db, rb) && !strcmp(ra, rb) && !strcmp(na, nb);
}

static int output_ok(const struct io_path *o)
{
	char dir[PATH_MAX];
	struct stat st;

	if (!*o->path)
		return ap_err(AP_EINPUT, o->opt, 0, "an empty path (expected the path of a file)");
	if (stat(o->path, &st) == 0 && S_ISDIR(st.st_mode))
		return ap_err(AP_EINPUT, o->path, 0, "is a directory (expected the path of a "
			      "file for %s)", o->opt);
	path_dir(o->path, dir, sizeof dir);
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return ap_err(AP_EINPUT, o->path, 0, "cannot write %s: no directory '%s'", o->opt,
			      dir);
	return AP_OK;
}

int io_paths_check(const struct io_path *io, int n)
{
	for (int i = 0; i < n; i++)
		if (io[i].path && io[i].output && output_ok(&io[i]))
			return AP_EINPUT;
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			const struct io_path *a = &io[i], *b = &io[j];

			/* an input that is not a file here (a zoo name) is safe */
			if (!a->path || !b->path || !(a->output || b->output) ||
			    (!a->output && access(a->path, F_OK) != 0) ||
			    (!b->output && access(b->path, F_OK) != 0) ||
			    !same_file(a->path, b->path))
				continue;
			if (a->output && b->output)
				return ap_err(AP_EINPUT, b->path, 0, "the output of %s is also the "
					      "output of %s (one would overwrite the other)", b->opt,
					      a->opt);
			if (!a->output) /* the output second */
				a = &io[j], b = &io[i];
			return ap_err(AP_EINPUT, a->path, 0, "the output of %s is the input %s: "
				      "writing it would destroy it", a->opt, b->opt);
		}
	return AP_OK;
}
