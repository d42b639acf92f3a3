/*
 * `autopar models [NAME|FILE] [-b BATCH] [--csv] [--ops]`: the model zoo
 * (and the imported PipeDream profiles) with each model's operators,
 * parameters, forward GMACs and activation bytes; with --ops, one row per
 * operator.  `autopar models import` is cli/cmd_import.c.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "util/datadir.h"
#include "util/err.h"
#include "model/model_io.h"
#include "model/ops.h"

/* A total of the table in `width` columns: v, or v / scale with `prec`
 * decimals; one held at INT64_MAX (graph_totals()) passed 2^63 and says
 * so instead of showing a number it is not. */
static void put_total(int64_t v, double scale, int width, int prec)
{
	if (v == INT64_MAX)
		printf(" %*s", width, ">2^63");
	else if (scale == 1)
		printf(" %*lld", width, (long long)v);
	else
		printf(" %*.*f", width, prec, (double)v / scale);
}

static void summary_row(const struct graph *g, int csv)
{
	struct graph_totals t;

	graph_totals(g, &t);
	if (csv) {
		printf("%s,%lld,%d,%lld,%.6f,%lld\n", g->name, (long long)g->batch, g->nops,
		       (long long)t.params, (double)t.fwd_macs / 1e9, (long long)t.act_bytes);
		return;
	}
	printf("%-24s %6lld %6d", g->name, (long long)g->batch, g->nops);
	put_total(t.params, 1, 14, 0);
	put_total(t.fwd_macs, 1e9, 12, 3);
	put_total(t.act_bytes, 1e9, 14, 3);
	putchar('\n');
}

static void summary_header(int csv)
{
	if (csv)
		printf("model,batch,ops,params,fwd_gmacs,act_bytes\n");
	else
		printf("%-24s %6s %6s %14s %12s %14s\n", "model", "batch", "ops", "params",
		       "fwd_gmacs", "act_gbytes");
}

static void list_ops(const struct graph *g, int csv)
{
	char shape[96], split[8];

	if (csv)
		printf("op,kind,shape,params,fwd_macs,out_bytes,split,fwd_us,bwd_us\n");
	else
		printf("%-28s %-16s %-26s %12s %14s %6s\n", "op", "kind", "shape", "params",
		       "fwd_macs", "split");
	for (int i = 0; i < g->nops; i++) {
		const struct op *op = &g->ops[i];
		int n = 0;

		shape_format(&op->out, shape, sizeof shape);
		for (int d = 0; d < NDIMS; d++)
			if (op->split_mask & (1u << d))
				split[n++] = dim_name((enum dim_kind)d)[0];
		split[n] = 0;
		if (csv) {
			printf("%s,%s,%s,%lld,%lld,%lld,%s", op->name, op_kind_name(op->kind),
			       shape, (long long)op->params, (long long)op->fwd_macs,
			       (long long)op->out_bytes, split);
			if (op->m.valid)
				printf(",%.3f,%.3f\n", op->m.fwd_us, op->m.bwd_us);
			else
				printf(",,\n");
		} else {
			printf("%-28s %-16s %-26s %12lld %14lld %6s\n", op->name,
			       op_kind_name(op->kind), shape, (long long)op->params,
			       (long long)op->fwd_macs, split);
		}
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names of the zoo (models/NAME.model) and the imported profiles
 * (pipedream/NAME, piper/NAME), sorted within each. */
static int list_names(char ***out, int *n)
{
	static const struct {
		const char *dir, *ext, *prefix;
	} src[] = { { "models", ".model", "" }, { "profiles/pipedream", ".txt", "pipedream/" },
		    { "profiles/piper", ".json", "piper/" } };
	char path[4096], **v = NULL;
	int cnt = 0, cap = 0;

	for (size_t s = 0; s < sizeof src / sizeof src[0]; s++) {
		DIR *d = opendir(datapath(path, sizeof path, src[s].dir));
		struct dirent *e;
		int first = cnt;

		if (!d)
			continue;
		while ((e = readdir(d))) {
			size_t len = strlen(e->d_name), el = strlen(src[s].ext);

			if (len <= el || strcmp(e->d_name + len - el, src[s].ext))
				continue;
			if (cnt == cap) {
				char **nv = realloc(v, (size_t)(cap = cap ? 2 * cap : 32) * sizeof *v);

				if (!nv)
					break;
				v = nv;
			}
			v[cnt] = malloc(len + 16);
			if (!v[cnt])
				break;
			snprintf(v[cnt], len + 16, "%s%.*s", src[s].prefix, (int)(len - el),
				 e->d_name);
			cnt++;
		}
		closedir(d);
		qsort(v + first, (size_t)(cnt - first), sizeof *v, cmp_str);
	}
	*out = v;
	*n = cnt;
	return cnt ? 0 : ap_err(AP_EINPUT, datadir(), 0, "no models found under models/");
}

static int run(int argc, char **argv)
{
	long long batch = 0;
	int csv = 0, ops = 0, rc = 0, n = 0, npos;
	const char *pos[1];
	char **names = NULL;
	const struct opt opts[] = {
		{ "-b", "--batch", OPT_POS_INT, &batch },
		{ NULL, "--csv", OPT_FLAG, &csv },
		{ NULL, "--ops", OPT_FLAG, &ops },
		{ 0 },
	};

	if (argc > 1 && strcmp(argv[1], "import") == 0)
		return models_import(argc - 1, argv + 1);
	rc = args_parse("models", argc, argv, opts, pos, 1, &npos);
	if (rc)
		return rc;
	if (ops && !npos)
		return ap_err(AP_EINPUT, "models", 0, "--ops needs a model");
	if (!npos) {
		rc = list_names(&names, &n);
	} else {
		names = malloc(sizeof *names);
		if (!names)
			return ap_err(AP_EFAIL, NULL, 0, "out of memory");
		names[0] = strdup(pos[0]);
		n = names[0] ? 1 : 0;
	}
	if (!rc && !ops)
		summary_header(csv);
	for (int i = 0; i < n && !rc; i++) {
		struct graph g;

		rc = model_load(names[i], batch, &g);
		if (rc)
			break;
		if (ops)
			list_ops(&g, csv);
		else
			summary_row(&g, csv);
		graph_release(&g);
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

const struct command cmd_models = {
	.name = "models",
	.summary = "list the model zoo: operators, parameters, forward GMACs",
	.usage = "usage: autopar models [NAME|FILE] [-b BATCH] [--csv] [--ops]\n"
		 "       autopar models import FILE.onnx -o OUT.model [-b BATCH] [--name NAME]\n\n"
		 "Without a model, lists the zoo (models/*.model), the imported\n"
		 "PipeDream profiles (pipedream/NAME) and the Piper inputs\n"
		 "(piper/NAME). NAME is a zoo name, FILE a .model file, a PipeDream\n"
		 "graph .txt file or a Piper .json input (also piper/NAME for\n"
		 "profiles/piper/NAME.json).\n\n"
		 "  -b, --batch N  batch size (default: the model's own)\n"
		 "  --csv          machine-readable: model,batch,ops,params,fwd_gmacs,act_bytes\n"
		 "  --ops          one row per operator: kind, shape, parameters, MACs,\n"
		 "                 splittable dims (and measured times of imported ops)\n\n"
		 "import translates an ONNX graph (e.g. exported from PyTorch with\n"
		 "torch.onnx.export, opset 17) into a model file, with a loss after its\n"
		 "output; models/FORMAT.md lists the operators it maps. It needs the\n"
		 "onnx Python package (apt-get install python3-onnx; AUTOPAR_PYTHON\n"
		 "names another python3 that has it). A node with no autopar operator\n"
		 "is refused by name and nothing is written.\n"
		 "  -o, --output F  the model file to write\n"
		 "  -b, --batch N   its default batch (default 64)\n"
		 "  --name NAME     its model name (default: F's name without .model)\n",
	.run = run,
};
