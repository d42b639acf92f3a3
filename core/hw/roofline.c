/*
 * The roofline model of an operator shard's time (roofline.h): the op's
 * arithmetic and DRAM traffic divided among its shards, each set against
 * the device's achievable FLOP rate and bandwidth, plus kernel launches.
 * It answers profile lookups that find no row, generates the analytic
 * profiles, and is the "work" by which profile.c scales the nearest
 * measured row.  The degree vectors those profiles cover are enumerated
 * here too, in the order profile lookups rely on for deterministic
 * answers.
 */
#include "hw/roofline.h"

#include <math.h>
#include <string.h>

/*
 * Achievable fractions of the datasheet peaks.  Well-tuned cuBLAS/cuDNN
 * float32 GEMMs and convolutions reach 60-80% of peak FMA throughput on
 * large shapes, and streaming kernels 75-90% of peak DRAM bandwidth (STREAM
 * style measurements on V100/A100/H100).  We take 70% and 80%.
 */
#define MATH_EFFICIENCY 0.70
#define BW_EFFICIENCY 0.80

/* ---- precision ----------------------------------------------------------- */

static const char *const precision_names[NPRECISIONS] = {
	[PREC_FP32] = "fp32",
	[PREC_MIXED] = "mixed",
};

const char *precision_name(enum precision p)
{
	return (unsigned)p < NPRECISIONS ? precision_names[p] : "?";
}

int precision_parse(const char *s, enum precision *out)
{
	for (int k = 0; k < NPRECISIONS; k++)
		if (strcmp(s, precision_names[k]) == 0) {
			*out = (enum precision)k;
			return 0;
		}
	return -1;
}

int precision_elem_bytes(enum precision p)
{
	return p == PREC_MIXED ? 2 : BYTES_PER_ELEM;
}

/* ---- roofline ------------------------------------------------------------ */

int64_t shard_count(const int degree[NDIMS])
{
	int64_t n = 1;

	for (int d = 0; d < NDIMS; d++)
		n *= degree[d] > 0 ? degree[d] : 1;
	return n;
}

/* Kernel launches of one op, forward and backward.  Views (flatten,
 * reshape) and the input launch none.  Ops with weights launch two backward
 * kernels (input gradient, weight gradient).  Attention runs the q/k/v and
 * output projections, two batched GEMMs and a softmax; its backward doubles
 * the GEMMs.  A cuDNN LSTM layer runs one input GEMM and one kernel per
 * time step in each direction, which is why recurrent layers are
 * latency-bound at small batch. */
static void kernel_counts(const struct op *op, int *fwd, int *bwd)
{
	int64_t steps;

	switch (op->kind) {
	case OP_INPUT:
	case OP_FLATTEN:
	case OP_RESHAPE:
		*fwd = *bwd = 0;
		break;
	case OP_CONV2D:
	case OP_LINEAR:
	case OP_MATMUL:
	case OP_BATCHNORM:
	case OP_LAYERNORM:
		*fwd = 1;
		*bwd = 2;
		break;
	case OP_ATTENTION:
		*fwd = 6;
		*bwd = 11;
		break;
	case OP_LSTM:
		steps = shape_size(&op->out, DIM_L);
		if (steps > 100000)
			steps = 100000;
		*fwd = (op->a.bidir ? 2 : 1) * (1 + (int)steps);
		*bwd = 2 * *fwd;
		break;
	default:
		*fwd = *bwd = 1;
		break;
	}
}

/* Kinds whose output channels come from a reduction over the whole input:
 * splitting their output c leaves every shard reading the whole input. */
static int reduces_input(enum op_kind k)
{
	return k == OP_CONV2D || k == OP_LINEAR || k == OP_LSTM ||
	       k == OP_ATTENTION || k == OP_EMBEDDING;
}

/*
 * The roofline model (Williams, Waterman, Patterson, CACM 2009): a kernel
 * takes the longer of its arithmetic at the achievable FLOP rate and its
 * DRAM traffic at the achievable bandwidth, plus a fixed launch cost.
 *
 *   fwd = max((2 macs + elems) / (eff_math rate), bytes / (eff_bw bw)) + k_f launch
 *   bwd = max((2 bwd_macs + elems) / (eff_math rate), 2 bytes / (eff_bw bw)) + k_b launch
 *
 * for the shard: MACs and elements are the op's divided by the number of
 * shards; bytes = inputs + output + weights, float32.  The output is split
 * by every degree; inputs too, except that an output-channel split of a
 * reducing kind (conv2d, linear, ...) leaves each shard the whole input;
 * weights are split only by the output-channel degree (an n/h/w/l split
 * replicates them).  Backward reads and writes about twice the forward's
 * bytes (gradients of output, input and weights besides the saved tensors).
 * rate is the float32 FMA rate, not the tensor-core rate: the zoo trains in
 * float32, as the PipeDream- and FlexFlow-era papers did.  In mixed
 * precision (roofline_cost_at()) the rate is the tensor-core rate and an
 * element is 2 bytes, at the same achievable fractions.  conv2d asks for
 * a workspace about the size of its shard's input, a rough stand-in for
 * what cuDNN's implicit-GEMM and FFT algorithms request.
 */
void roofline_cost(const struct device_spec *dev, const struct graph *g, int i,
		   const int degree[NDIMS], struct op_cost *out)
{
	roofline_cost_at(dev, g, i, degree, PREC_FP32, out);
}

void roofline_cost_at(const struct device_spec *dev, const struct graph *g, int i,
		      const int degree[NDIMS], enum precision prec, struct op_cost *out)
{
	const struct op *op = &g->ops[i];
	double shards = (double)shard_count(degree);
	double dc = degree[DIM_C] > 0 ? degree[DIM_C] : 1;
	double rate = (prec == PREC_MIXED ? dev->tensor_flops_per_s : dev->fp32_flops_per_s) *
		      MATH_EFFICIENCY;
	/* the element size the graph's byte counts were taken in */
	double esc = (double)precision_elem_bytes(prec) / BYTES_PER_ELEM;
	double bw = dev->mem_bw_bytes_per_s * BW_EFFICIENCY;
	double in_bytes = 0, w_bytes, bytes, fwd_flops, bwd_flops;
	double in_div = reduces_input(op->kind) ? shards / dc : shards;
	int64_t weights = op->params;
	int kf, kb;

	for (int k = 0; k < op->nin; k++)
		in_bytes += (double)g->ops[op->in[k]].out_bytes;
	/* a tied layer owns no parameters but still reads the shared weight */
	if (op->kind == OP_LINEAR && op->a.tie >= 0 && op->a.tie < g->nops)
		weights = g->ops[op->a.tie].params;
	w_bytes = (double)weights * BYTES_PER_ELEM / dc;
	bytes = esc * (in_bytes / in_div + (double)op->out_bytes / shards + w_bytes);
	fwd_flops = (2.0 * (double)op->fwd_macs + (double)op->fwd_elems) / shards;
	bwd_flops = (2.0 * (double)op->bwd_macs + (double)op->fwd_elems) / shards;
	kernel_counts(op, &kf, &kb);

	memset(out, 0, sizeof *out);
	out->source = COST_ROOFLINE;
	if (kf == 0 && kb == 0)
		return; /* a view: no kernel, no traffic */
	out->fwd_us = 1e6 * fmax(rate > 0 ? fwd_flops / rate : 0,
				 bw > 0 ? bytes / bw : 0) + kf * dev->launch_us;
	out->bwd_us = 1e6 * fmax(rate > 0 ? bwd_flops / rate : 0,
				 bw > 0 ? 2 * bytes / bw : 0) + kb * dev->launch_us;
	if (op->kind == OP_CONV2D)
		out->workspace_bytes = (int64_t)(esc * in_bytes / in_div);
	if (op->kind == OP_ATTENTION && bw > 0) {
		/* The score matrices, heads x s^2 a sample, pass through DRAM
		 * between the kernels of an unfused attention: the scores
		 * GEMM writes them, the softmax reads and writes them, the
		 * context GEMM reads them (4 passes); attention dropout reads
		 * and writes them again and writes a 1-byte mask; their
		 * backward twice that.  Memory-bound kernels of their own,
		 * they add to the GEMMs' time rather than overlap it. */
		double s = (double)shape_size(&op->out, DIM_L);
		double elems = (double)op->a.heads * s * s * (double)shape_size(&op->out, DIM_N) /
			       shards;
		double passes = elems * BYTES_PER_ELEM * esc * (op->a.dropout > 0 ? 6 : 4) +
			       (op->a.dropout > 0 ? elems : 0);

		out->fwd_us += 1e6 * passes / bw;
		out->bwd_us += 1e6 * 2 * passes / bw;
	}
}

/* ---- degree vectors ------------------------------------------------------ */

/* Depth-first over the dims in order, so vectors come smaller degrees
 * first (see for_each_degree in roofline.h). */
static int degrees_rec(const struct op *op, int d, int prod, int max_degree,
		       int degree[NDIMS], degree_fn fn, void *ctx)
{
	int64_t size;
	int rc;

	if (d == NDIMS)
		return fn(degree, ctx);
	size = shape_dim(&op->out, (enum dim_kind)d) >= 0 ?
	       shape_size(&op->out, (enum dim_kind)d) : 1;
	if (!(op->split_mask & (1u << d)))
		size = 1;
	for (int f = 1; (int64_t)prod * f <= max_degree && size % f == 0; f *= 2) {
		degree[d] = f;
		rc = degrees_rec(op, d + 1, prod * f, max_degree, degree, fn, ctx);
		if (rc)
			return rc;
	}
	degree[d] = 1;
	return 0;
}

int for_each_degree(const struct op *op, int max_degree, degree_fn fn,
		    void *ctx)
{
	int degree[NDIMS];

	for (int d = 0; d < NDIMS; d++)
		degree[d] = 1;
	return degrees_rec(op, 0, 1, max_degree, degree, fn, ctx);
}
