/*
 * Re-launching under mpirun (launch.h).
 */
#include "launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "util/err.h"
#include "watch.h"

int launch_mpirun(int ranks, int argc, char **argv, int *pid)
{
	char np[16], self[4096];
	char **av = calloc((size_t)argc + 16, sizeof *av);
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	int k = 0;

	if (!av)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	if (n <= 0) {
		free(av);
		return ap_err(AP_EFAIL, "autopar run", 0, "cannot find its own executable");
	}
	self[n] = '\0';
	snprintf(np, sizeof np, "%d", ranks);
	av[k++] = "mpirun";
	av[k++] = "-np";
	av[k++] = np;
	av[k++] = "--oversubscribe";
	/* ranks must not be pinned to the same cores as their neighbours */
	av[k++] = "--bind-to";
	av[k++] = "none";
	/* the job's directory, where the ranks keep their records (watch.h) */
	if (getenv(WATCH_ENV)) {
		av[k++] = "-x";
		av[k++] = WATCH_ENV;
	}
	if (geteuid() == 0) {
		setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
		setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	}
	/* waiting ranks give their core to the others */
	setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
	av[k++] = self;
	for (int i = 0; i < argc; i++)
		av[k++] = argv[i];
	av[k] = NULL;
	fflush(stdout);
	fflush(stderr);
	*pid = (int)fork();
	if (*pid == 0) {
		execvp(av[0], av);
		ap_err(AP_EFAIL, "autopar run", 0,
		       "cannot start mpirun (expected Open MPI's mpirun on PATH) for %d ranks",
		       ranks);
		_exit(127);
	}
	free(av);
	if (*pid < 0)
		return ap_err(AP_EFAIL, "autopar run", 0, "cannot start mpirun: out of processes");
	return AP_OK;
}
