/* memory_cmd: `cpsim memory WORKLOAD.yaml [--set k=v]... [--platform P]
 * [--quant FILE] [--json]`: the static weight accounting of rank 0
 * (models/quant.h) by tensor family and category, the plain TP-sharded
 * estimate, and the steps from one to the other. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "models/quant.h"
#include "models/seqpar.h"
#include "sim/cli.h"
#include "sim/commands.h"

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

static const char *scheme_name(const scenario *s)
{
    const layer_scheme *sc = seqpar_scheme(s);
    return sc ? sc->name : "tp";
}

static double gb(double bytes)
{
    return bytes / 1e9;
}

static void print_text(const scenario *s, const quant_desc *d, const quant_report *r)
{
    printf("%s on %s: TP%d", s->model.name, s->plat.name, s->par.tp);
    if (s->par.ep > 1)
        printf(" EP%d", s->par.ep);
    if (s->par.dp > 1)
        printf(" DP%d", s->par.dp);
    printf(", scheme %s, weights %s, params %s\n", scheme_name(s), dtype_name(s->w_dtype),
           dtype_name(s->a_dtype));
    if (d)
        printf("quant description %s: %d W8A8, %d W8A8_DYNAMIC, %d FLOAT linear weights\n",
               quant_desc_path(d), r->ntype[QT_W8A8], r->ntype[QT_W8A8_DYNAMIC],
               r->ntype[QT_FLOAT]);
    printf("static weights of rank 0, GB (1e9 bytes)\n\n%-15s %9s", "family", "plain");
    for (int c = 0; c < QC_COUNT; c++)
        printf(" %11s", quant_cat_name((quant_cat)c));
    printf(" %9s\n", "total");
    double plain = 0;
    for (int f = 0; f < WF_COUNT; f++) {
        plain += r->plain[f];
        printf("%-15s %9.3f", mem_wfamily_name((mem_wfamily)f), gb(r->plain[f]));
        for (int c = 0; c < QC_COUNT; c++)
            printf(" %11.3f", gb(r->bytes[f][c]));
        printf(" %9.3f\n", gb(r->fam_total[f]));
    }
    printf("%-15s %9.3f", "total", gb(plain));
    for (int c = 0; c < QC_COUNT; c++)
        printf(" %11.3f", gb(r->cat_total[c]));
    printf(" %9.3f\n\nfrom the plain estimate to the materialized weights:\n", gb(r->total));
    for (int st = 0; st < QS_COUNT; st++) {
        double delta = st ? r->step_total[st] - r->step_total[st - 1] : r->step_total[st];
        printf("  %-76s %+8.3f  = %8.3f GB\n", quant_step_name((quant_step)st), gb(delta),
               gb(r->step_total[st]));
    }
    printf("materialized (resident on rank 0): %.3f GB; plain estimate: %.3f GB\n",
           gb(r->total), gb(r->step_total[QS_PLAIN]));
    if (r->shard_k > 1) {
        printf("layer sharding over %d ranks:", r->shard_k);
        for (int p = MP_Q_A; p < MP_COUNT; p++)
            if (r->sharded & (1u << p))
                printf(" %s", mem_proj_name((mem_proj)p));
        printf(" (rank 0 keeps %d of %lld layers); window of two layers in flight: %.3f GB\n",
               r->shard_layers, (long long)s->model.layers, gb(r->window));
    }
    printf("not resident: largest tensor transposed while loading %.3f GB\n",
           gb(r->load_transient));
}

static json_t *report_json(const scenario *s, const quant_desc *d, const quant_report *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "schema", json_string("cpsim.memory/1"));
    json_object_set_new(j, "model", json_string(s->model.name));
    json_object_set_new(j, "platform", json_string(s->plat.name));
    json_object_set_new(j, "scheme", json_string(scheme_name(s)));
    json_object_set_new(j, "rank", json_integer(0));
    json_object_set_new(j, "quant_description", d ? json_string(quant_desc_path(d)) : json_null());
    json_t *types = json_object();
    for (int t = 0; t < QT_COUNT; t++)
        json_object_set_new(types, quant_type_name((quant_type)t), json_integer(r->ntype[t]));
    json_object_set_new(j, "linear_weights_by_type", types);
    json_t *fams = json_object();
    for (int f = 0; f < WF_COUNT; f++) {
        json_t *o = json_object();
        json_object_set_new(o, "plain", json_real(r->plain[f]));
        for (int c = 0; c < QC_COUNT; c++)
            json_object_set_new(o, quant_cat_name((quant_cat)c), json_real(r->bytes[f][c]));
        json_object_set_new(o, "total", json_real(r->fam_total[f]));
        json_object_set_new(fams, mem_wfamily_name((mem_wfamily)f), o);
    }
    json_object_set_new(j, "families_bytes", fams);
    json_t *cats = json_object();
    for (int c = 0; c < QC_COUNT; c++)
        json_object_set_new(cats, quant_cat_name((quant_cat)c), json_real(r->cat_total[c]));
    json_object_set_new(j, "categories_bytes", cats);
    json_t *steps = json_array();
    for (int st = 0; st < QS_COUNT; st++) {
        json_t *o = json_object();
        json_object_set_new(o, "step", json_string(quant_step_name((quant_step)st)));
        json_object_set_new(o, "total_bytes", json_real(r->step_total[st]));
        json_array_append_new(steps, o);
    }
    json_object_set_new(j, "steps", steps);
    json_object_set_new(j, "plain_bytes", json_real(r->step_total[QS_PLAIN]));
    json_object_set_new(j, "materialized_bytes", json_real(r->total));
    json_t *ls = json_array();
    for (int p = MP_Q_A; p < MP_COUNT; p++)
        if (r->sharded & (1u << p))
            json_array_append_new(ls, json_string(mem_proj_name((mem_proj)p)));
    json_object_set_new(j, "layer_sharding", ls);
    json_object_set_new(j, "layer_sharding_group", json_integer(r->shard_k));
    json_object_set_new(j, "sharded_layers_on_rank", json_integer(r->shard_layers));
    json_object_set_new(j, "window_bytes", json_real(r->window));
    json_object_set_new(j, "load_transient_bytes", json_real(r->load_transient));
    return j;
}

/* Load the scenario and the description to account (--quant or the
 * workload's own); *own set when the caller must free *d. */
static int prepare(const mem_opts *o, scenario *s, quant_desc **d, int *own, cp_err *err)
{
    *d = NULL;
    *own = 0;
    if (wl_load(o->workload, o->sets, o->nsets, o->platform, s, err) != 0)
        return -1;
    if (seqpar_check(s, err) != 0)
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

int memory_main(int argc, char **argv)
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
        json_t *j = report_json(&s, d, &r);
        if (json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0) {
            fprintf(stderr, "cpsim: cannot write the JSON report\n");
            rc = CP_EXIT_INTERNAL;
        }
        fputc('\n', stdout);
        json_decref(j);
    } else {
        print_text(&s, d, &r);
    }
    if (own)
        quant_desc_free(d);
    wl_free(&s);
    return rc;
}
