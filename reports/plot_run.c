/* plot_run: the plots of a run folder: its summary and trace read once, then
 * the breakdown, the timeline and the memory panels (see plot.h). */
#include "reports/plot_fig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "models/plan.h"

/* ---- op classes ------------------------------------------------------------------------ */

const char *const plot_class_name[PLOT_CL_COUNT] = {
    "GEMM",        "attention",  "indexer", "MoE GEMM", "MoE routing",
    "memory-bound", "collective", "hop",     "other"};
const char *const plot_class_color[PLOT_CL_COUNT] = {"#4477aa", "#ee6677", "#228833",
                                                     "#ccbb44", "#ee7733", "#9988dd",
                                                     "#66ccee", "#aa3377", "#bbbbbb"};

/* A trace category to a class; -1 for markers that take no time (steps). */
static int class_of(const char *cat)
{
    static const struct {
        const char *cat;
        int cl;
    } map[] = {{"gemm", PLOT_CL_GEMM},           {"grouped_gemm", PLOT_CL_GEMM},
               {"attention", PLOT_CL_ATTN},      {"sparse_attention", PLOT_CL_ATTN},
               {"lse_merge", PLOT_CL_ATTN},      {"indexer", PLOT_CL_INDEXER},
               {"moe_gemm", PLOT_CL_MOE_GEMM},   {"topk", PLOT_CL_MOE_ROUTE},
               {"moe_permute", PLOT_CL_MOE_ROUTE}, {"moe_unpermute", PLOT_CL_MOE_ROUTE},
               {"norm", PLOT_CL_MEMBOUND},       {"elementwise", PLOT_CL_MEMBOUND},
               {"activation", PLOT_CL_MEMBOUND}, {"rope", PLOT_CL_MEMBOUND},
               {"embedding", PLOT_CL_MEMBOUND},  {"kv_write", PLOT_CL_MEMBOUND},
               {"act_quant", PLOT_CL_MEMBOUND},  {"copy", PLOT_CL_MEMBOUND},
               {"all_reduce", PLOT_CL_COLL},     {"all_gather", PLOT_CL_COLL},
               {"reduce_scatter", PLOT_CL_COLL}, {"all_to_all", PLOT_CL_COLL},
               {"broadcast", PLOT_CL_COLL},      {"hop", PLOT_CL_HOP},
               {"step", -1}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(cat, map[i].cat) == 0)
            return map[i].cl;
    return PLOT_CL_OTHER;
}

/* ---- the trace ------------------------------------------------------------------------- */

/* jansson reads a gzip stream in chunks */
static size_t gz_chunk(void *buf, size_t len, void *gz)
{
    int n = gzread(gz, buf, (unsigned)len);
    return n < 0 ? (size_t)-1 : (size_t)n;
}

/* trace.json, or trace.json.gz (cpsim run --trace-gz) */
static json_t *load_trace(const char *path, json_error_t *je)
{
    if (access(path, F_OK) == 0)
        return json_load_file(path, 0, je);
    char gzpath[4300];
    snprintf(gzpath, sizeof gzpath, "%s.gz", path);
    gzFile gz = gzopen(gzpath, "rb");
    if (!gz)
        return json_load_file(path, 0, je); /* names the missing trace.json */
    json_t *t = json_load_callback(gz_chunk, gz, 0, je);
    gzclose(gz);
    return t;
}

static int read_trace(const char *dir, plot_trace *tr, cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    json_error_t je;
    json_t *t = load_trace(path, &je);
    json_t *evs = json_object_get(t, "traceEvents");
    if (!json_is_array(evs)) {
        json_decref(t);
        return cp_fail(err, CP_EXIT_INPUT, "%s: not a cpsim trace (%s)", path,
                       t ? "no traceEvents" : je.text);
    }
    plot_event *e = malloc((json_array_size(evs) + 1) * sizeof *e);
    if (!e)
        abort();
    size_t k = 0, i;
    json_t *ev;
    tr->nranks = 0;
    json_array_foreach(evs, i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        if (!ph || strcmp(ph, "X") != 0 || !cat || class_of(cat) < 0)
            continue;
        json_t *args = json_object_get(ev, "args");
        json_t *layer = json_object_get(args, "layer"), *step = json_object_get(args, "step");
        double ts = json_number_value(json_object_get(ev, "ts"));
        int row = (int)json_integer_value(json_object_get(ev, "tid")) - REP_TRACE_ID_BASE;
        if (row < 0)
            continue;
        e[k++] = (plot_event){.rank = row / ST_COUNT,
                              .stream = row % ST_COUNT,
                              .cl = class_of(cat),
                              .layer = layer ? (int)json_integer_value(layer) : -1,
                              .step = step ? (int)json_integer_value(step) : -1,
                              .t0 = ts / 1e3,
                              .t1 = (ts + json_number_value(json_object_get(ev, "dur"))) / 1e3};
        if (row / ST_COUNT + 1 > tr->nranks)
            tr->nranks = row / ST_COUNT + 1;
    }
    json_decref(t);
    tr->e = e;
    tr->n = k;
    return 0;
}

/* "model (workload.yaml) on platform, TP8 SP1, 32768 tokens" */
static void run_what(json_t *summary, char *buf, size_t len)
{
    json_t *sc = json_object_get(summary, "scenario");
    json_t *par = json_object_get(sc, "parallel");
    const char *model = json_string_value(json_object_get(sc, "model"));
    const char *plat = json_string_value(json_object_get(sc, "platform"));
    const char *wl = json_string_value(json_object_get(sc, "workload"));
    const char *base = wl && strrchr(wl, '/') ? strrchr(wl, '/') + 1 : wl;
    size_t off = (size_t)snprintf(buf, len, "%s%s%s%s on %s, TP%lld SP%lld", model ? model : "?",
                                  base ? " (" : "", base ? base : "", base ? ")" : "",
                                  plat ? plat : "?",
                                  (long long)json_integer_value(json_object_get(par, "tp")),
                                  (long long)json_integer_value(json_object_get(par, "sp")));
    json_t *rq = json_object_get(summary, "requests");
    size_t nrq = json_array_size(rq);
    if (nrq == 1 && off < len)
        snprintf(buf + off, len - off, ", %lld prompt tokens",
                 (long long)json_integer_value(
                     json_object_get(json_array_get(rq, 0), "prompt_tokens")));
    else if (nrq > 1 && off < len)
        snprintf(buf + off, len - off, ", %zu requests", nrq);
}

int plot_run_dir(const char *dir, const plot_opts *opts, cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_error_t je;
    plot_run run = {.dir = dir};
    run.summary = json_load_file(path, 0, &je);
    if (!run.summary)
        return cp_fail(err, CP_EXIT_INPUT, "%s: not the output folder of a run (%s)", dir,
                       je.text);
    plot_figset fs;
    int rc = plot_dir_open(dir, &fs, err);
    if (rc == 0)
        run_what(run.summary, fs.what, sizeof fs.what);
    if (rc == 0)
        rc = read_trace(dir, &run.tr, err);
    if (rc == 0)
        rc = plot_breakdown(&fs, &run, err);
    if (rc == 0)
        rc = plot_timeline(&fs, &run, opts, err);
    if (rc == 0)
        rc = plot_memory(&fs, &run, err);
    char heading[700];
    snprintf(heading, sizeof heading, "cpsim run: %s", fs.what);
    if (rc == 0)
        rc = plot_draw(&fs, heading, err);
    plot_figset_free(&fs);
    free(run.tr.e);
    json_decref(run.summary);
    return rc;
}
