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

#include <stddef.h>
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

/* Reads every row; a file with no device row is an error at its header. */
int devices_load(const char *csv_path, struct device_spec **out, int *n);
/* Reads a file that must hold exactly one device row (a profile's
 * device.csv); a second row is reported at its line. */
int device_load_one(const char *csv_path, struct device_spec *out);
int device_find(const char *csv_path, const char *name, struct device_spec *out);
/* Writes the header and one row per spec. */
int devices_write(FILE *f, const struct device_spec *d, int n);

/* 1 when s is a name as devices, clusters and profiles spell theirs: a
 * letter, then letters, digits, '.', '_' or '-', shorter than max.  Names
 * end up inside inline cluster specs and directory names, hence the small
 * alphabet. */
int spec_name_valid(const char *s, size_t max);

#endif
