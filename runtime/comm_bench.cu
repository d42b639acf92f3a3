/*
 * NCCL bandwidth over message sizes (comm_bench.h).
 */
#include "nccl_check.cuh"

#include <stdlib.h>
#include <string.h>

extern "C" {
#include "util/clock.h"
#include "comm_bench.h"
}

#define MAXDEV 16
#define REPS 11

struct bench {
	int n;
	ncclComm_t comm[MAXDEV];
	cudaStream_t stream[MAXDEV];
	float *buf[MAXDEV], *rbuf[MAXDEV];
};

static int sync_all(struct bench *b)
{
	for (int d = 0; d < b->n; d++) {
		CUDA_CHECK(cudaSetDevice(d));
		CUDA_CHECK(cudaStreamSynchronize(b->stream[d]));
	}
	return AP_OK;
}

/* one all-reduce of count floats over every device, or one send from
 * device 0 to device 1 */
static int run_op(struct bench *b, int sendrecv, size_t count)
{
	NCCL_CHECK(ncclGroupStart());
	if (sendrecv) {
		NCCL_CHECK(ncclSend(b->buf[0], count, ncclFloat, 1, b->comm[0], b->stream[0]));
		NCCL_CHECK(ncclRecv(b->rbuf[1], count, ncclFloat, 0, b->comm[1], b->stream[1]));
	} else {
		for (int d = 0; d < b->n; d++)
			NCCL_CHECK(ncclAllReduce(b->buf[d], b->buf[d], count, ncclFloat, ncclSum,
					      b->comm[d], b->stream[d]));
	}
	NCCL_CHECK(ncclGroupEnd());
	return sync_all(b);
}

/* device d's buffer holds d + 1: the all-reduce must give n(n+1)/2 */
static int verify(struct bench *b, size_t count)
{
	float *h = (float *)malloc(count * sizeof *h), want = (float)(b->n * (b->n + 1) / 2);
	int st = AP_OK;

	if (!h)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	for (int d = 0; d < b->n && !st; d++) {
		for (size_t i = 0; i < count; i++)
			h[i] = (float)(d + 1);
		if (cudaSetDevice(d) != cudaSuccess ||
		    cudaMemcpy(b->buf[d], h, count * sizeof *h, cudaMemcpyHostToDevice) != cudaSuccess)
			st = ap_err(AP_EFAIL, "nccl", 0, "cannot fill device %d", d);
	}
	if (!st)
		st = run_op(b, 0, count);
	for (int d = 0; d < b->n && !st; d++) {
		if (cudaSetDevice(d) != cudaSuccess ||
		    cudaMemcpy(h, b->buf[d], count * sizeof *h, cudaMemcpyDeviceToHost) != cudaSuccess)
			st = ap_err(AP_EFAIL, "nccl", 0, "cannot read device %d", d);
		for (size_t i = 0; i < count && !st; i++)
			if (h[i] != want)
				st = ap_err(AP_EFAIL, "nccl", 0,
					    "all-reduce on device %d element %zu: %g, expected %g", d,
					    i, (double)h[i], (double)want);
	}
	free(h);
	return st;
}

static int median_us(struct bench *b, int sendrecv, size_t count, double *us)
{
	double t[REPS], t0;

	if (run_op(b, sendrecv, count))
		return AP_EFAIL;
	for (int r = 0; r < REPS; r++) {
		t0 = now_s();
		if (run_op(b, sendrecv, count))
			return AP_EFAIL;
		t[r] = (now_s() - t0) * 1e6;
	}
	for (int i = 1; i < REPS; i++) /* insertion sort: REPS is small */
		for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
			double x = t[j];

			t[j] = t[j - 1];
			t[j - 1] = x;
		}
	*us = t[REPS / 2];
	return AP_OK;
}

static int setup(struct bench *b, int64_t max_bytes)
{
	int devs[MAXDEV];

	for (int d = 0; d < b->n; d++) {
		devs[d] = d;
		CUDA_CHECK(cudaSetDevice(d));
		CUDA_CHECK(cudaStreamCreateWithFlags(&b->stream[d], cudaStreamNonBlocking));
		CUDA_CHECK(cudaMalloc((void **)&b->buf[d], (size_t)max_bytes));
		CUDA_CHECK(cudaMalloc((void **)&b->rbuf[d], (size_t)max_bytes));
	}
	NCCL_CHECK(ncclCommInitAll(b->comm, b->n, devs));
	return AP_OK;
}

static void teardown(struct bench *b)
{
	for (int d = 0; d < b->n; d++) {
		if (b->comm[d])
			ncclCommDestroy(b->comm[d]);
		cudaSetDevice(d);
		if (b->stream[d])
			cudaStreamDestroy(b->stream[d]);
		cudaFree(b->buf[d]);
		cudaFree(b->rbuf[d]);
	}
}

static int measure(struct bench *b, int64_t max_bytes, struct comm_row *rows, int *n)
{
	if (setup(b, max_bytes) || verify(b, (size_t)(max_bytes / (int64_t)sizeof(float))))
		return AP_EFAIL;
	for (int64_t bytes = 4096; bytes <= max_bytes; bytes *= 4)
		for (int op = 0; op < 2; op++) {
			struct comm_row *r = &rows[(*n)++];
			double us;

			if (median_us(b, op, (size_t)(bytes / (int64_t)sizeof(float)), &us))
				return AP_EFAIL;
			snprintf(r->op, sizeof r->op, "%s", op ? "sendrecv" : "allreduce");
			r->devices = op ? 2 : b->n;
			r->bytes = bytes;
			r->time_us = us;
			r->algbw_bytes_per_s = (double)bytes / (us * 1e-6);
			r->busbw_bytes_per_s = r->algbw_bytes_per_s *
					       (op ? 1.0 : 2.0 * (b->n - 1) / b->n);
		}
	return AP_OK;
}

extern "C" int comm_bench(int ndev, int64_t max_bytes, struct comm_row **rows, int *n)
{
	struct bench b;
	int have = 0, st, cap = 0;

	*rows = NULL;
	*n = 0;
	if (cudaGetDeviceCount(&have) != cudaSuccess)
		have = 0;
	if (ndev <= 0)
		ndev = have;
	if (have < 2)
		return ap_err(AP_EINPUT, "--comm", 0,
			      "expected at least 2 GPUs to measure NCCL between, %d present", have);
	if (ndev < 2 || ndev > have || ndev > MAXDEV)
		return ap_err(AP_EINPUT, "--gpus", 0, "expected 2 to %d GPUs, got %d",
			      have < MAXDEV ? have : MAXDEV, ndev);
	if (max_bytes < 4096)
		max_bytes = 4096;
	for (int64_t bytes = 4096; bytes <= max_bytes; bytes *= 4)
		cap += 2;
	*rows = (struct comm_row *)calloc((size_t)cap, sizeof **rows);
	if (!*rows)
		return ap_err(AP_EFAIL, NULL, 0, "out of memory");
	memset(&b, 0, sizeof b);
	b.n = ndev;
	st = measure(&b, max_bytes, *rows, n);
	teardown(&b);
	if (st) {
		free(*rows);
		*rows = NULL;
		*n = 0;
	}
	return st;
}
