/* cli_memory: `cpsim memory WORKLOAD.yaml [--set k=v]... [--platform P]
 * [--quant FILE] [--json]`: the static weight accounting of rank 0
 * (models/quant.h) by tensor family and category, the plain TP-sharded
 * estimate, and the steps from one to the other. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "models/quant.h"
#include "reports/report.h"
#include "sim/cli/cli.h"
#include "sim/cli/cli_commands.h"

typedef struct mem_opts {
    const char *workload;
    const char *platform;
    const char *quant;
    const char *sets[CLI_MAX_SETS];
    int nsets;
    int json;
} mem_opts;

static void usage(FILE *f)
{
    fputs("Usage: cpsim memory WORKLOAD.yaml [--set key=value]... [--platform NAME|FILE]\n"
          "                    [--quant FILE] [--json]\n"
          "\n"
          "Static weights of rank 0: the plain TP-sharded estimate (every tensor at\n"
          "precision.weights) and the weights the engine materializes (quantized and\n"
          "float tensors, scales and offsets, fp32 scales, derived W_UK_T / W_UV, the\n"
          "full projections of DSA CP, layer sharding), by tensor family and category,\n"
          "with the steps that lead from one to the other.\n"
          "  --quant FILE  an msModelSlim quant_model_description.json (replaces\n"
          "                precision.quant_description)\n"
          "  --json        the same as JSON (schema cpsim.memory/1)\n",
          f);
}

/* The value of option argv[*i] (--opt=value or --opt value). */
static const char *value_of(int argc, char **argv, int *i, const char *opt, cp_err *err)
{
    size_t n = strlen(opt);
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (*i + 1 >= argc) {
        cp_fail(err, CP_EXIT_INPUT, "option %s needs a value", opt);
        return NULL;
    }
    return argv[++*i];
}

static int is_opt(const char *a, const char *opt)
{
    size_t n = strlen(opt);
    return strncmp(a, opt, n) == 0 && (a[n] == '\0' || a[n] == '=');
}

static int parse(int argc, char **argv, mem_opts *o, cp_err *err)
{
    static const char *const with_value[] = {"--set", "--platform", "--quant"};
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--cfg=", 6) == 0 || strncmp(a, "--log=", 6) == 0)
            continue;
        if (strcmp(a, "--json") == 0) {
            o->json = 1;
            continue;
        }
        int k = -1;
        for (int j = 0; j < 3; j++)
            if (is_opt(a, with_value[j]))
                k = j;
        if (k < 0 && a[0] == '-' && a[1])
            return cp_fail(err, CP_EXIT_INPUT, "memory: unknown option %s", a);
        if (k < 0 && o->workload)
            return cp_fail(err, CP_EXIT_INPUT,
                           "memory: unexpected argument \"%s\" (one workload)", a);
        if (k < 0) {
            o->workload = a;
            continue;
        }
        const char *v = value_of(argc, argv, &i, with_value[k], err);
        if (!v)
            return -1;
        if (k == 1)
            o->platform = v;
        else if (k == 2)
            o->quant = v;
        else if (o->nsets == CLI_MAX_SETS)
            return cp_fail(err, CP_EXIT_INPUT, "at most %d --set options", CLI_MAX_SETS);
        else
            o->sets[o->nsets++] = v;
    }
    if (!o->workload)
        return cp_fail(err, CP_EXIT_INPUT, "memory needs a workload file");
    return 0;
}

/* Load the scenario and the description to account (--quant or the
 * workload's own); *own set when the caller must free *d. */
static int prepare(const mem_opts *o, scenario *s, quant_desc **d, int *own, cp_err *err)
{
    *d = NULL;
    *own = 0;
    if (wl_load(o->workload, o->sets, o->nsets, o->platform, s, err) != 0)
        return -1;
    if (!o->quant) {
        *d = s->quant;
        return 0;
    }
    cp_err in = {0};
    *d = quant_desc_load(o->quant, &in);
    if (*d && quant_desc_check(*d, &s->model, &in) != 0) {
        quant_desc_free(*d);
        *d = NULL;
    }
    if (!*d)
        return cp_fail(err, in.code, "--quant %s", in.msg);
    *own = 1;
    return 0;
}

int cli_memory(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return CP_EXIT_OK;
        }
    mem_opts o;
    cp_err err = {0};
    if (parse(argc, argv, &o, &err) < 0) {
        fprintf(stderr, "cpsim: %s\nTry 'cpsim memory --help'.\n", err.msg);
        return CP_EXIT_INPUT;
    }
    scenario s;
    quant_desc *d;
    int own;
    if (prepare(&o, &s, &d, &own, &err) != 0) {
        fprintf(stderr, "cpsim: %s\n", err.msg);
        wl_free(&s);
        return err.code ? err.code : CP_EXIT_INTERNAL;
    }
    quant_report r;
    quant_account(&s, d, &r);
    int rc = CP_EXIT_OK;
    if (o.json) {
        json_t *j = rep_memory_json(&s, d, &r);
        if (json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0) {
            fprintf(stderr, "cpsim: cannot write the JSON report\n");
            rc = CP_EXIT_INTERNAL;
        }
        fputc('\n', stdout);
        json_decref(j);
    } else {
        rep_memory_text(&s, d, &r, stdout);
    }
    if (own)
        quant_desc_free(d);
    wl_free(&s);
    return rc;
}
