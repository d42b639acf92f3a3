/*
 * Re-launching under mpirun (launch.h).
 */
#include "launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"

int launch_mpirun(int ranks, int argc, char **argv)
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
	execvp(av[0], av);
	free(av);
	return ap_err(AP_EFAIL, "autopar run", 0,
		      "cannot start mpirun (expected Open MPI's mpirun on PATH) for %d ranks",
		      ranks);
}
