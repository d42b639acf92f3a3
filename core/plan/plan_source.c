/*
 * Where a plan's model comes from (plan_source.h).  A plan is data that
 * travels: a file it names is parsed only when its bytes are the ones the
 * plan was made from, so a plan cannot make a command open and echo a line
 * of another file of the machine, and a model of the zoo that shares a
 * name with the plan's cannot stand in for it.
 */
#include "plan/plan_source.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/model_io.h"
#include "util/datadir.h"
#include "util/digest.h"
#include "util/err.h"

/* Hashes a regular file's bytes into *d (an FNV-1a state); -1 with
 * errno set otherwise. */
static int digest_file(const char *path, uint64_t *d)
{
	unsigned char buf[1 << 16];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL; /* a directory, device or FIFO is no model */
		return -1;
	}
	while ((n = read(fd, buf, sizeof buf)) > 0)
		*d = fnv1a64(*d, buf, (size_t)n);
	close(fd);
	return n < 0 ? -1 : 0;
}

/* The digest of a model file, or of a profile directory (its device.csv,
 * then ops.csv: what profile_load() reads). */
static int digest_of(const char *path, int profile, uint64_t *d)
{
	char f[PATH_MAX + 16];

	*d = FNV1A64_INIT;
	if (!profile)
		return digest_file(path, d);
	snprintf(f, sizeof f, "%s/device.csv", path);
	if (digest_file(f, d))
		return -1;
	snprintf(f, sizeof f, "%s/ops.csv", path);
	return digest_file(f, d);
}

/* The path of absolute, canonical `to` relative to directory `from`. */
static int relative(const char *from, const char *to, char *out, size_t len)
{
	size_t common = 0, n = 0;

	if (!strcmp(from, "/"))
		return snprintf(out, len, "%s", to + 1) >= (int)len ? -1 : 0;
	/* the longest common directory, as a prefix of both ("" for /) */
	for (size_t i = 0; from[i] && from[i] == to[i]; i++)
		if ((from[i + 1] == '/' || !from[i + 1]) && to[i + 1] == '/')
			common = i + 1;
	for (const char *s = from + common; *s; s++)
		if (*s == '/') {
			if (n + 4 > len)
				return -1;
			memcpy(out + n, "../", 3);
			n += 3;
		}
	return snprintf(out + n, len - n, "%s", to + common + 1) >= (int)(len - n) ? -1 : 0;
}

/* The path of src from the directory of plan_path into rel. */
static int locate(const char *plan_path, const char *src, char *rel, size_t len)
{
	char real[PATH_MAX], dir[PATH_MAX], real_dir[PATH_MAX];

	path_dir(plan_path, dir, sizeof dir);
	if (!realpath(src, real) || !realpath(dir, real_dir))
		return ap_err(AP_EINPUT, plan_path, 0, "cannot locate %s from the plan's "
			      "directory: %m", src);
	if (relative(real_dir, real, rel, len))
		return ap_err(AP_EINPUT, plan_path, 0, "the path of %s from the plan's directory "
			      "is longer than %zu characters", src, len - 1);
	return AP_OK;
}

int plan_set_source(struct plan *p, const char *model_arg, const char *prof_arg,
		    const char *plan_path)
{
	char src[PATH_MAX];
	int st = AP_OK;

	p->src.model_file[0] = p->src.profile_dir[0] = 0;
	p->src.profile_digest = 0;
	model_source(model_arg, src, sizeof src);
	if (digest_of(src, 0, &p->src.model_digest))
		return ap_err(AP_EINPUT, src, 0, "cannot read the model: %m");
	/* a name: the plan's "model" says it */
	if (strcmp(src, model_arg) == 0)
		st = locate(plan_path, src, p->src.model_file, sizeof p->src.model_file);
	if (st || !prof_arg || strcmp(profile_dir(src, sizeof src, prof_arg), prof_arg))
		return st;
	if (digest_of(prof_arg, 1, &p->src.profile_digest))
		return ap_err(AP_EINPUT, prof_arg, 0, "cannot read the profile: %m");
	return locate(plan_path, prof_arg, p->src.profile_dir, sizeof p->src.profile_dir);
}

/* Whether name is one path component that names nothing above it. */
static int plain_name(const char *name)
{
	return *name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}

/* The plan's model by name, into out: a model of the zoo (NAME,
 * pipedream/NAME, piper/NAME) or a file in the plan's own directory. */
static int by_name(const char *plan, const char *model, char *out, size_t len)
{
	char dir[PATH_MAX], real_dir[PATH_MAX], real[PATH_MAX], mdir[PATH_MAX];
	char path[2 * PATH_MAX + 2];
	struct stat sb;

	path_dir(plan, dir, sizeof dir);
	if (model_data_name(model)) {
		snprintf(out, len, "%s", model);
		return AP_OK;
	}
	if (plain_name(model)) {
		/* the file beside the plan: the name, or the name a model file
		 * has (a plan made with -m DIR/NAME.model names the model NAME) */
		snprintf(path, sizeof path, "%s/%s", dir, model);
		if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
			snprintf(path, sizeof path, "%s/%s.model", dir, model);
		if (strlen(path) < len && stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
			memcpy(out, path, strlen(path) + 1);
		else if (access(model, F_OK) == 0) { /* not a file here: the zoo's */
			snprintf(path, sizeof path, "models/%s.model", model);
			datapath(out, len, path);
		}
		else
			snprintf(out, len, "%s", model);
		return AP_OK;
	}
	path_dir(model, mdir, sizeof mdir);
	if (strchr(model, '/') && realpath(dir, real_dir) && realpath(mdir, real) &&
	    !strcmp(real, real_dir) && plain_name(strrchr(model, '/') + 1)) {
		snprintf(out, len, "%s", model);
		return AP_OK;
	}
	return ap_err(AP_EINPUT, plan, 0, "model: expected a model of the zoo (NAME, "
		      "pipedream/NAME or piper/NAME) or a file beside the plan, got '%s'", model);
}

/* A path the plan recorded (key: model_file or profile_dir), relative to
 * its directory, into out, once its digest matches. */
static int recorded(const char *plan_path, const char *key, const char *rel, uint64_t digest,
		    int profile, char *out, size_t len)
{
	char dir[PATH_MAX];
	uint64_t d;

	if (!digest)
		return ap_err(AP_EINPUT, plan_path, 0, "%s: expected its digest beside it (the "
			      "file is checked before it is read)", key);
	path_dir(plan_path, dir, sizeof dir);
	if (rel[0] == '/')
		snprintf(out, len, "%s", rel);
	else if (snprintf(out, len, "%s/%s", dir, rel) >= (int)len)
		return ap_err(AP_EINPUT, plan_path, 0, "%s: path too long", key);
	if (digest_of(out, profile, &d))
		return ap_err(AP_EINPUT, plan_path, 0, "%s: cannot read %s: %m (give the %s "
			      "with %s)", key, out, profile ? "profile" : "model",
			      profile ? "-p" : "-m");
	if (d != digest)
		return ap_err(AP_EINPUT, plan_path, 0, "%s: %s is not the %s this plan was made "
			      "from (its digest differs; give the %s with %s)", key, out,
			      profile ? "profile" : "model", profile ? "profile" : "model",
			      profile ? "-p" : "-m");
	return AP_OK;
}

int plan_source_resolve(const char *plan_path, const struct plan_head *h, char *out, size_t len)
{
	char src[PATH_MAX];
	uint64_t d;
	int st;

	if (h->src.model_file[0])
		return recorded(plan_path, "model_file", h->src.model_file, h->src.model_digest, 0, out,
				len);
	st = by_name(plan_path, h->model, out, len);
	if (st || !h->src.model_digest)
		return st;
	model_source(out, src, sizeof src);
	if (digest_of(src, 0, &d))
		return ap_err(AP_EINPUT, plan_path, 0, "model: '%s': cannot read %s: %m",
			      h->model, src);
	if (d != h->src.model_digest)
		return ap_err(AP_EINPUT, plan_path, 0, "model: '%s' is %s, which is not the model "
			      "this plan was made from (its digest differs; give the model "
			      "with -m)", h->model, src);
	return AP_OK;
}

int plan_profile_resolve(const char *plan_path, const struct plan_head *h, char *out,
			 size_t len)
{
	if (h->src.profile_dir[0])
		return recorded(plan_path, "profile_dir", h->src.profile_dir, h->src.profile_digest, 1,
				out, len);
	if (h->profile[0] && !plain_name(h->profile))
		return ap_err(AP_EINPUT, plan_path, 0, "profile: expected a profile of profiles/ "
			      "by name, got '%s' (give the profile with -p)", h->profile);
	snprintf(out, len, "%s", h->profile);
	return AP_OK;
}
