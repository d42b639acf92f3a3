/*
 * `autopar version`: the version and what this build has, so a user knows
 * which backends and solvers a result could have used.
 */
#include <glpk.h>
#include <jansson.h>
#include <stdio.h>

#include "commands.h"
#include "backend.h"
#include "util/datadir.h"
#include "gpu.h"
#include "transport_mpi.h"

#define AUTOPAR_VERSION "0.1.0"

static int run(int argc, char **argv)
{
	char why[160] = "";
	int ngpu;

	(void)argv;
	if (argc > 1) {
		fprintf(stderr, "autopar version: takes no arguments\n");
		return 2;
	}
	ngpu = gpu_count(why, sizeof why);
	printf("autopar %s\n", AUTOPAR_VERSION);
	printf("backends: cpu%s\n", gpu_built() ? ", cuda" : "");
	printf("cpu: %s\n", backend_cpu.describe());
	printf("mpi: %s\n", transport_mpi_version());
	printf("cuda: %s\n", gpu_versions());
	if (ngpu > 0)
		printf("gpus: %d\n", ngpu);
	else
		printf("gpus: none (%s)\n", why);
	printf("glpk: %s\n", glp_version());
	printf("jansson: %s\n", JANSSON_VERSION);
	printf("data: %s\n", datadir());
	return 0;
}

const struct command cmd_version = {
	.name = "version",
	.summary = "version and what this build has (backends, libraries)",
	.usage = "usage: autopar version\n\n"
		 "Prints the version, the backends compiled in (cpu, cuda), the BLAS of\n"
		 "the CPU backend, the MPI library, the CUDA, cuDNN and NCCL versions\n"
		 "built against, the GPUs present, the GLPK and\n"
		 "jansson versions, and where the models and profiles are read from.\n",
	.run = run,
};
