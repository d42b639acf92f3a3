/*
 * The machine a Piper input describes (docs/piper.md), as a cluster:
 * `-c piper` with a Piper input as the model.
 */
#include "hw/piper_machine.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/err.h"

int piper_cluster(const struct piper_inst *pi, const char *model, struct cluster *c)
{
	memset(c, 0, sizeof *c);
	if (pi->mem >= 0x1p62)
		return ap_err(AP_EINPUT, model, 0, "maxMemoryPerDevice: %g bytes are too many",
			      pi->mem);
	snprintf(c->name, sizeof c->name, "piper");
	/* the operators keep Piper's measured times; the device only sizes
	 * what the profile does not give (and its memory is replaced) */
	snprintf(c->device, sizeof c->device, "v100");
	snprintf(c->profile, sizeof c->profile, "v100-analytic");
	snprintf(c->description, sizeof c->description,
		 "the machine of Piper input %.60s: %d devices, %.3g GB each, %.3g GB/s links",
		 model, pi->max_devices, pi->mem / 1e9, pi->bw / 1e9);
	c->nodes = 1;
	c->per_node = pi->max_devices;
	c->intra = (struct link){ pi->bw, 0 };
	c->inter = c->intra;
	c->mem_bytes = llround(ceil(pi->mem));
	return AP_OK;
}
