/*
 * Device specs from vendor datasheets: peak float32 and tensor-core rates,
 * memory bandwidth and capacity.  profiles/devices.csv has one row per
 * device kind with the header
 *   name,fp32_tflops,tensor_tflops,mem_bw_gbytes_per_s,mem_bytes,launch_us,description
 * (TFLOPS and GB/s in powers of 1000; mem_bytes in bytes).  A profile
 * directory keeps the row of its own device in device.csv.
 */
#ifndef AUTOPAR_DEVICE_H
#define AUTOPAR_DEVICE_H

#include <stdint.h>
#include <stdio.h>

struct device_spec {
	char name[32];
	double fp32_flops_per_s;
	double tensor_flops_per_s; /* = fp32 rate where there are no tensor cores */
	double mem_bw_bytes_per_s;
	int64_t mem_bytes;
	double launch_us;          /* fixed cost of one kernel */
	char description[160];
};

int devices_load(const char *csv_path, struct device_spec **out, int *n);
int device_find(const char *csv_path, const char *name, struct device_spec *out);
/* Writes the header and one row per spec. */
int devices_write(FILE *f, const struct device_spec *d, int n);

#endif
