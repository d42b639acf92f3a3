/*
 * Locating the data files.
 */
#include "util/datadir.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/err.h"

#ifndef AUTOPAR_DATADIR
#define AUTOPAR_DATADIR "/usr/local/share/autopar"
#endif

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *datadir(void)
{
	static char dir[PATH_MAX + 32];
	char exe[PATH_MAX], probe[PATH_MAX + 32];
	const char *env;
	ssize_t n;
	char *slash;

	if (dir[0])
		return dir;
	env = getenv("AUTOPAR_DATA");
	if (env && *env) {
		snprintf(dir, sizeof dir, "%s", env);
		return dir;
	}
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = 0;
		/* bin/autopar or build-asan/autopar inside the source tree,
		 * or PREFIX/bin/autopar of an install that was moved */
		for (int up = 0; up < 2; up++) {
			slash = strrchr(exe, '/');
			if (!slash)
				break;
			*slash = 0;
			snprintf(probe, sizeof probe, "%s/models", exe);
			if (is_dir(probe)) {
				snprintf(dir, sizeof dir, "%s", exe);
				return dir;
			}
			snprintf(probe, sizeof probe, "%s/share/autopar/models", exe);
			if (up == 1 && is_dir(probe)) {
				snprintf(dir, sizeof dir, "%s/share/autopar", exe);
				return dir;
			}
		}
	}
	snprintf(dir, sizeof dir, "%s", AUTOPAR_DATADIR);
	return dir;
}

char *datapath(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", datadir(), rel);
	return buf;
}

void path_dir(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, len, ".");
	else if (slash == path)
		snprintf(dir, len, "/");
	else
		snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

char *model_path(char *buf, size_t len, const char *arg)
{
	if (strchr(arg, '/') || access(arg, F_OK) == 0)
		snprintf(buf, len, "%s", arg);
	else
		snprintf(buf, len, "%s/models/%s.model", datadir(), arg);
	return buf;
}

char *profile_dir(char *buf, size_t len, const char *arg)
{
	if (strchr(arg, '/') || is_dir(arg))
		snprintf(buf, len, "%s", arg);
	else
		snprintf(buf, len, "%s/profiles/%s", datadir(), arg);
	return buf;
}

const char *python_path(void)
{
	const char *p = getenv("AUTOPAR_PYTHON");

	if (p && *p)
		return p;
	return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}
