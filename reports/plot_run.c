/* plot_run: the plots of a run folder: its summary and trace read once, then
 * the breakdown, the timeline and the memory panels (see plot.h); of a
 * serving run the serving pictures (plot_serving.c), the timeline of what
 * its trace holds and the memory panels, the breakdown left out with a note. */
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
               {"gelu", PLOT_CL_MEMBOUND},       {"layer_norm", PLOT_CL_MEMBOUND},
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

/* The trace's ops into *tr; *full_steps (when not NULL) its otherData's
 * full_steps, how many steps a serving trace holds every op of (-1: none
 * said). */
static int read_trace(const char *dir, plot_trace *tr, int *full_steps, cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    json_error_t je;
    json_t *t = load_trace(path, &je);
    json_t *fsteps = json_object_get(json_object_get(t, "otherData"), "full_steps");
    if (full_steps)
        *full_steps = json_is_integer(fsteps) ? (int)json_integer_value(fsteps) : -1;
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

/* "model (workload.yaml) on platform, TP8 SP1, 32768 tokens"; of a serving
 * run "..., TP4 SP2 DP2, 91 requests, 30 s simulated" (DP when above 1) */
static void run_what(json_t *summary, char *buf, size_t len)
{
    json_t *sc = json_object_get(summary, "scenario");
    json_t *par = json_object_get(sc, "parallel");
    const char *model = json_string_value(json_object_get(sc, "model"));
    const char *plat = json_string_value(json_object_get(sc, "platform"));
    const char *wl = json_string_value(json_object_get(sc, "workload"));
    const char *base = wl && strrchr(wl, '/') ? strrchr(wl, '/') + 1 : wl;
    const char *mode = json_string_value(json_object_get(summary, "mode"));
    int serving = mode && strcmp(mode, "serving") == 0;
    size_t off = (size_t)snprintf(buf, len, "%s%s%s%s on %s, TP%lld SP%lld", model ? model : "?",
                                  base ? " (" : "", base ? base : "", base ? ")" : "",
                                  plat ? plat : "?",
                                  (long long)json_integer_value(json_object_get(par, "tp")),
                                  (long long)json_integer_value(json_object_get(par, "sp")));
    long long dp = json_integer_value(json_object_get(par, "dp"));
    if (serving && dp > 1 && off < len)
        off += (size_t)snprintf(buf + off, len - off, " DP%lld", dp);
    json_t *rq = json_object_get(summary, "requests");
    size_t nrq = json_array_size(rq);
    if (nrq == 1 && off < len)
        off += (size_t)snprintf(buf + off, len - off, ", %lld prompt tokens",
                                (long long)json_integer_value(
                                    json_object_get(json_array_get(rq, 0), "prompt_tokens")));
    else if (nrq > 1 && off < len)
        off += (size_t)snprintf(buf + off, len - off, ", %zu requests", nrq);
    if (serving && off < len)
        snprintf(buf + off, len - off, ", %.3g s simulated",
                 json_number_value(json_object_get(summary, "makespan_s")));
}

/* ---- a serving run ---------------------------------------------------------------------- */

static int trace_exists(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    if (access(path, F_OK) == 0)
        return 1;
    snprintf(path, sizeof path, "%s/trace.json.gz", dir);
    return access(path, F_OK) == 0;
}

/* A step's span on one replica, in ms (the trace's unit). */
typedef struct step_span {
    double t0, t1;
    int step;
} step_span;

static int cmp_span(const void *a, const void *b)
{
    double x = ((const step_span *)a)->t0, y = ((const step_span *)b)->t0;
    return (x > y) - (x < y);
}

/* A serving trace's ops carry no step number (sim/serve writes name, stream,
 * times): each op gets the step of steps.csv that ran on its rank's replica
 * (any replica when dp is 1 or the replicas run in lockstep over all ranks)
 * and whose span holds the op's midpoint, to a nanosecond (the trace's
 * rounding); -1 when none does. */
static void serving_step_numbers(plot_trace *tr, const plot_steps *st, json_t *summary)
{
    json_t *sv = json_object_get(summary, "serving");
    json_t *par = json_object_get(json_object_get(summary, "scenario"), "parallel");
    long long dp = json_integer_value(json_object_get(par, "dp"));
    int nranks = (int)json_array_size(json_object_get(summary, "ranks"));
    int per_replica = dp > 1 && nranks >= dp && !json_is_true(json_object_get(sv, "lockstep"));
    int nrep = per_replica ? (int)dp : 1;
    int rpr = per_replica ? nranks / nrep : nranks;   /* ranks per replica */
    step_span *sp = malloc((st->n + 1) * sizeof *sp);
    size_t *first = calloc((size_t)nrep + 1, sizeof *first);
    if (!sp || !first)
        abort();
    /* the steps grouped by replica (one group when not per replica), each
     * group by start */
    size_t k = 0;
    for (int r = 0; r < nrep; r++) {
        first[r] = k;
        for (size_t i = 0; i < st->n; i++)
            if (nrep == 1 || st->v[i].replica == r)
                sp[k++] = (step_span){st->v[i].t0 * 1e3, st->v[i].t1 * 1e3, st->v[i].step};
        qsort(sp + first[r], k - first[r], sizeof *sp, cmp_span);
    }
    first[nrep] = k;
    const double tol = 1e-6;   /* ms: the trace's nanosecond */
    for (size_t i = 0; i < tr->n; i++) {
        plot_event *e = &tr->e[i];
        int r = nrep == 1 || rpr <= 0 ? 0 : e->rank / rpr;
        if (r >= nrep)
            continue;
        double mid = 0.5 * (e->t0 + e->t1);
        /* past the last step of the group that starts at or before mid */
        size_t lo = first[r], hi = first[r + 1];
        while (lo < hi) {
            size_t m = lo + (hi - lo) / 2;
            if (sp[m].t0 <= mid + tol)
                lo = m + 1;
            else
                hi = m;
        }
        if (lo > first[r] && mid <= sp[lo - 1].t1 + tol)
            e->step = sp[lo - 1].step;
    }
    free(first);
    free(sp);
}

/* The timeline option given, NULL when none (the whole run). */
static const char *tl_option(const plot_opts *o)
{
    return !o                            ? NULL
           : o->layer_lo >= 0            ? "--layers"
           : o->step >= 0                ? "--step"
           : o->win_hi > o->win_lo       ? "--window"
           : o->ranks                    ? "--ranks"
                                         : NULL;
}

/* The timeline of the whole run, then that of the window opts picks (its
 * own files: plot_timeline.c) when they pick one. */
static int run_timelines(plot_figset *fs, const plot_run *run, const plot_opts *opts,
                         cp_err *err)
{
    if (plot_timeline(fs, run, NULL, err) != 0)
        return -1;
    return tl_option(opts) ? plot_timeline(fs, run, opts, err) : 0;
}

/* Why a run's trace holds no op to draw (traced: it has a trace). */
static const char *no_ops_why(int traced)
{
    return traced ? "the run's trace holds one span per rank and step, no op (--trace steps)"
                  : "the run wrote no trace (--trace none)";
}

/* The timeline of a run whose trace holds no op: a timeline option is
 * refused, else index.html says why there is none (`ops`: what --trace
 * full writes, for the message). */
static int no_timeline(plot_figset *fs, const plot_run *run, const plot_opts *opts, int traced,
                       const char *ops, cp_err *err)
{
    const char *opt = tl_option(opts);
    if (opt)
        return cp_fail(err, CP_EXIT_INPUT, "%s: %s has no op to draw a timeline of: "
                       "%s; cpsim run --trace full writes %s", opt, run->dir,
                       no_ops_why(traced), ops);
    plot_note(fs, "timeline: not drawn: %s; cpsim run --trace full writes %s",
              no_ops_why(traced), ops);
    return 0;
}

/* The pictures of a serving run (see the top of this file); *no_ops set
 * when its trace holds no op. */
static int plot_serving_run(plot_figset *fs, plot_run *run, const plot_opts *opts, int *no_ops,
                            cp_err *err)
{
    int rc = plot_read_steps(run->dir, &run->steps, err);
    if (rc < 0)
        return -1;
    int full = -1;
    int traced = trace_exists(run->dir);
    if (traced && read_trace(run->dir, &run->tr, &full, err) != 0)
        return -1;
    if (run->steps.n > 0)
        serving_step_numbers(&run->tr, &run->steps, run->summary);
    if (plot_serving(fs, run, err) != 0)
        return -1;
    plot_note(fs, "breakdown: not drawn for a serving run: its trace holds the ops of the "
              "first steps only, and summary.json's ttft_s is the first request's; every "
              "rank's compute_s, comm_s and overlap_s over the whole run are in "
              "summary.json's ranks");
    *no_ops = run->tr.n == 0;
    if (run->tr.n == 0) {
        if (no_timeline(fs, run, opts, traced, "the ops of the first steps", err) != 0)
            return -1;
    } else {
        /* what plot_timeline would refuse, said of a serving trace */
        int has_step = 0, lo_step = -1, hi_step = -1;
        for (size_t i = 0; i < run->tr.n; i++) {
            int st = run->tr.e[i].step;
            has_step |= opts && st == opts->step;
            if (st >= 0 && (lo_step < 0 || st < lo_step))
                lo_step = st;
            hi_step = st > hi_step ? st : hi_step;
        }
        if (opts && opts->step >= 0 && !has_step && lo_step < 0)
            return cp_fail(err, CP_EXIT_INPUT, "--step %d: the ops of this serving run's trace "
                           "have no step numbers (they come from steps.csv)", opts->step);
        if (opts && opts->step >= 0 && !has_step)
            return cp_fail(err, CP_EXIT_INPUT, "--step %d: the trace of this serving run holds "
                           "the ops of steps %d-%d only (steps.csv lists every step)",
                           opts->step, lo_step, hi_step);
        if (run_timelines(fs, run, opts, err) != 0)
            return -1;
        char nsteps[32] = "the first";
        if (full >= 0)
            snprintf(nsteps, sizeof nsteps, "the first %d", full);
        for (int k = fs->n - (tl_option(opts) ? 2 : 1); k < fs->n; k++) {
            plot_figure *f = &fs->fig[k];
            size_t len = strlen(f->desc);
            snprintf(f->desc + len, sizeof f->desc - len, ". A serving trace holds every op of "
                     "%s steps (--step picks one of them), then one span per rank and step, not "
                     "drawn here: the batch picture covers every step", nsteps);
        }
    }
    return plot_memory(fs, run, err);
}

int plot_run_dir(const char *dir, const plot_opts *opts, FILE *say, cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_error_t je;
    plot_run run = {.dir = dir};
    run.summary = json_load_file(path, 0, &je);
    if (!run.summary)
        return cp_fail(err, CP_EXIT_INPUT, "%s: not the output folder of a run (%s)", dir,
                       je.text);
    const char *mode = json_string_value(json_object_get(run.summary, "mode"));
    run.serving = mode && strcmp(mode, "serving") == 0;
    plot_figset fs;
    int rc = plot_dir_open(dir, &fs, err);
    if (rc == 0)
        run_what(run.summary, fs.what, sizeof fs.what);
    int traced = trace_exists(dir), no_ops = 0;
    if (rc == 0 && run.serving) {
        rc = plot_serving_run(&fs, &run, opts, &no_ops, err);
    } else {
        if (rc == 0 && traced)
            rc = read_trace(dir, &run.tr, NULL, err);
        no_ops = run.tr.n == 0;
        if (rc == 0)
            rc = plot_breakdown(&fs, &run, err);
        if (rc == 0 && no_ops)
            rc = no_timeline(&fs, &run, opts, traced, "every op", err);
        else if (rc == 0)
            rc = run_timelines(&fs, &run, opts, err);
        if (rc == 0)
            rc = plot_memory(&fs, &run, err);
    }
    char heading[700];
    snprintf(heading, sizeof heading, "cpsim %srun: %s", run.serving ? "serving " : "",
             fs.what);
    if (rc == 0)
        rc = plot_draw(&fs, heading, err);
    /* the one line on what the outputs could not draw, and the flag that would */
    if (rc == 0 && no_ops && say)
        fprintf(say, "plots: no timeline%s: %s; cpsim run --trace full draws %s\n",
                run.serving ? "" : ", and the breakdown's compute is not split by kernel class",
                no_ops_why(traced), run.serving ? "it" : "them");
    plot_figset_free(&fs);
    free(run.tr.e);
    free(run.steps.v);
    json_decref(run.summary);
    return rc;
}
