/*
 * The simulated timeline as Chrome trace JSON (the "Trace Event Format"
 * read by chrome://tracing and Perfetto): one complete event ("ph": "X")
 * per task with ts and dur in microseconds, pid the resource the task runs
 * on (a device, a directed link inside a node, a node's NIC side) and
 * metadata events naming those resources.  A task that occupies several
 * resources (an inter-node transfer, an all-reduce) is shown once, on its
 * first.  Written with fprintf rather than a JSON library: a trace has one
 * event per task, hundreds of thousands for a large plan, and only the
 * operator names need escaping.
 */
#include <stdio.h>
#include <stdlib.h>

#include "util/output.h"
#include "util/err.h"
#include "sim/sim.h"

/* A JSON string body: quotes, backslashes and control characters escaped. */
static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
}

static void put_name(FILE *f, const struct sim *s, const struct sim_task *t)
{
	fputc('"', f);
	if (t->op >= 0)
		put_escaped(f, s->g->ops[t->op].name);
	else
		fprintf(f, "device %d", t->shard);
	fprintf(f, " %s", sim_task_kind_name(t->kind));
	if (t->mb >= 0)
		fprintf(f, " mb%d", t->mb);
	fputc('"', f);
}

static int write_trace(FILE *f, void *ctx)
{
	const struct sim *s = ctx;
	const struct sim_task *tasks;
	int64_t n;
	int nres = sim_nresources(s), first = 1;
	unsigned char *used = calloc((size_t)nres, 1);
	char name[64];

	if (!used)
		return ap_err(AP_EFAIL, NULL, 0, "trace: out of memory");
	tasks = sim_tasks(s, &n);
	fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", f);
	for (int64_t k = 0; k < n; k++) {
		const struct sim_task *t = &tasks[k];

		used[t->res] = 1;
		fprintf(f, "%s{\"name\": ", first ? "" : ",\n");
		first = 0;
		put_name(f, s, t);
		fprintf(f, ", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.6f, \"dur\": %.6f, \"pid\": %d, \"tid\": 0, \"args\": {\"shard\": %d, \"mb\": %d, \"bytes\": %lld}}",
			sim_task_kind_name(t->kind), t->start_s * 1e6, t->dur_s * 1e6,
			t->res, t->shard, t->mb, (long long)t->bytes);
	}
	/* Names and order of the resources that appear. */
	for (int r = 0; r < nres; r++) {
		if (!used[r])
			continue;
		sim_resource_name(s, r, name, sizeof name);
		fprintf(f, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"%s\"}},\n"
			   "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %d, \"tid\": 0, \"args\": {\"sort_index\": %d}}",
			first ? "" : ",\n", r, name, r, r);
		first = 0;
	}
	fputs("\n]}\n", f);
	free(used);
	return ferror(f) ? ap_err(AP_EFAIL, NULL, 0, "trace: write failed") : AP_OK;
}

/* The same tasks as a table for plotting tools that do not read JSON:
 * resource, its name, start and end in ms, kind, micro-batch, operator. */
static int write_timeline(FILE *f, void *ctx)
{
	const struct sim *s = ctx;
	const struct sim_task *tasks;
	int64_t n;
	char name[64];

	tasks = sim_tasks(s, &n);
	fputs("# res\tresource\tstart_ms\tend_ms\tkind\tmb\top\n", f);
	for (int64_t k = 0; k < n; k++) {
		const struct sim_task *t = &tasks[k];

		sim_resource_name(s, t->res, name, sizeof name);
		fprintf(f, "%d\t%s\t%.6f\t%.6f\t%s\t%d\t%s\n", t->res, name, t->start_s * 1e3,
			(t->start_s + t->dur_s) * 1e3, sim_task_kind_name(t->kind), t->mb,
			t->op >= 0 ? s->g->ops[t->op].name : "-");
	}
	return ferror(f) ? ap_err(AP_EFAIL, NULL, 0, "timeline: write failed") : AP_OK;
}

static int write_recorded(const struct sim *s, const char *path,
			  int (*fn)(FILE *f, void *ctx))
{
	int64_t n;

	if (!sim_tasks(s, &n))
		return ap_err(AP_EINPUT, path, 0,
			      "no tasks to write (run the simulation with sim_opts.record set)");
	return write_atomic(path, fn, (void *)s);
}

int sim_trace_write(const struct sim *s, const char *path)
{
	return write_recorded(s, path, write_trace);
}

int sim_timeline_write(const struct sim *s, const char *path)
{
	return write_recorded(s, path, write_timeline);
}
