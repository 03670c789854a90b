/* plot_run: the plots of a run folder: the timeline from trace.json, the
 * memory panels from memory.csv and summary.json (see plot.h). */
#include "reports/plot_fig.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "models/plan.h"

/* ---- run: timeline ------------------------------------------------------------------ */

/* Op classes of the timeline; colours: Paul Tol's "bright" qualitative
 * scheme (colour-blind safe), grey for the rest. */
enum { CL_GEMM, CL_ATTN, CL_INDEXER, CL_MOE, CL_COLL, CL_HOP, CL_OTHER, CL_COUNT };
static const char *const class_name[CL_COUNT] = {"GEMM", "attention", "indexer", "MoE",
                                                 "collective", "hop", "other"};
static const char *const class_color[CL_COUNT] = {"#4477aa", "#ee6677", "#228833", "#ccbb44",
                                                  "#66ccee", "#aa3377", "#bbbbbb"};

/* A trace category (trace.c: kernel class, collective name, "hop") to a
 * timeline class; -1 for markers that take no time (steps). */
static int class_of(const char *cat)
{
    static const struct {
        const char *cat;
        int cl;
    } map[] = {{"gemm", CL_GEMM},          {"attention", CL_ATTN},
               {"sparse_attention", CL_ATTN}, {"lse_merge", CL_ATTN},
               {"indexer", CL_INDEXER},    {"grouped_gemm", CL_GEMM},
               {"moe_gemm", CL_MOE},       {"moe_permute", CL_MOE},
               {"moe_unpermute", CL_MOE},  {"topk", CL_MOE},
               {"all_reduce", CL_COLL},    {"all_gather", CL_COLL},
               {"reduce_scatter", CL_COLL}, {"all_to_all", CL_COLL},
               {"broadcast", CL_COLL},     {"hop", CL_HOP},
               {"step", -1}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(cat, map[i].cat) == 0)
            return map[i].cl;
    return CL_OTHER;
}

typedef struct tl_event {
    int row;               /* rank * ST_COUNT + stream until rows are numbered */
    int cl, layer;
    double t0, t1;         /* ms */
} tl_event;

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

static int read_trace(const char *path, tl_event **out, size_t *n, cp_err *err)
{
    json_error_t je;
    json_t *t = load_trace(path, &je);
    json_t *evs = json_object_get(t, "traceEvents");
    if (!json_is_array(evs)) {
        json_decref(t);
        return cp_fail(err, CP_EXIT_INPUT, "%s: not a cpsim trace (%s)", path,
                       t ? "no traceEvents" : je.text);
    }
    tl_event *e = malloc((json_array_size(evs) + 1) * sizeof *e);
    if (!e)
        abort();
    size_t k = 0, i;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        if (!ph || strcmp(ph, "X") != 0 || !cat || class_of(cat) < 0)
            continue;
        json_t *layer = json_object_get(json_object_get(ev, "args"), "layer");
        double ts = json_number_value(json_object_get(ev, "ts"));
        int tid = (int)json_integer_value(json_object_get(ev, "tid"));
        e[k++] = (tl_event){.row = tid - REP_TRACE_ID_BASE,
                            .cl = class_of(cat),
                            .layer = layer ? (int)json_integer_value(layer) : -1,
                            .t0 = ts / 1e3,
                            .t1 = (ts + json_number_value(json_object_get(ev, "dur"))) / 1e3};
    }
    json_decref(t);
    *out = e;
    *n = k;
    return 0;
}

/* The window in ms: the whole run, or from the first op of layer lo to the
 * end of the last op of layer hi. */
static int tl_window(const tl_event *e, size_t n, const plot_opts *o, double *lo, double *hi,
                     cp_err *err)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (o && o->layer_lo >= 0 && (e[i].layer < o->layer_lo || e[i].layer > o->layer_hi))
            continue;
        if (e[i].t0 < *lo)
            *lo = e[i].t0;
        if (e[i].t1 > *hi)
            *hi = e[i].t1;
    }
    if (*hi >= *lo)
        return 0;
    if (o && o->layer_lo >= 0)
        return cp_fail(err, CP_EXIT_INPUT, "--layers %d-%d: the trace has no op in these layers",
                       o->layer_lo, o->layer_hi);
    return cp_fail(err, CP_EXIT_INPUT, "the trace holds no op to draw");
}

static void tl_yticks(FILE *b, const int *row_of, int nslots)
{
    fputs("set ytics (", b);
    int first = 1;
    for (int s = 0; s < nslots; s++) {
        if (row_of[s] < 0)
            continue;
        fprintf(b, "%s\"r%d %s\" %d", first ? "" : ", ", s / ST_COUNT,
                plan_stream_name(s % ST_COUNT), row_of[s]);
        first = 0;
    }
    fputs(") font \",8\"\n", b);
}

static int plot_timeline(plot_figset *fs, const char *dir, const char *what, const plot_opts *o,
                         cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    tl_event *e = NULL;
    size_t n = 0;
    if (read_trace(path, &e, &n, err) < 0)
        return -1;
    double lo, hi;
    int nslots = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i].row + 1 > nslots)
            nslots = e[i].row + 1;
    int *row_of = malloc(((size_t)nslots + 1) * sizeof *row_of);
    if (!row_of)
        abort();
    for (int s = 0; s < nslots; s++)
        row_of[s] = -1;
    for (size_t i = 0; i < n; i++)
        row_of[e[i].row] = 0;
    int nrows = 0;
    for (int s = 0; s < nslots; s++)
        if (row_of[s] == 0)
            row_of[s] = nrows++;
    rep_file rf;
    int rc = tl_window(e, n, o, &lo, &hi, err);
    if (rc == 0)
        rc = plot_data_open(fs, "timeline", &rf, err);
    int blocks[CL_COUNT], nblocks = 0;
    for (int c = 0; rc == 0 && c < CL_COUNT; c++) {
        blocks[c] = -1;
        for (size_t i = 0; i < n; i++) {
            if (e[i].cl != c || e[i].t1 <= lo || e[i].t0 >= hi)
                continue;
            if (blocks[c] < 0) {
                fprintf(rf.f, "%s# class %s: start_ms end_ms row\n", nblocks ? "\n\n" : "",
                        class_name[c]);
                blocks[c] = nblocks++;
            }
            fprintf(rf.f, "%.6f %.6f %d\n", fmax(e[i].t0, lo), fmin(e[i].t1, hi),
                    row_of[e[i].row]);
        }
    }
    if (rc == 0)
        rc = rep_close(&rf, 1, err);
    if (rc == 0) {
        char title[256];
        if (o && o->layer_lo >= 0)
            snprintf(title, sizeof title, "timeline, layers %d-%d", o->layer_lo, o->layer_hi);
        else
            snprintf(title, sizeof title, "timeline");
        plot_figure *f = plot_fig_add(fs, "timeline", title, PLOT_TIMELINE_WIDTH, PLOT_TIMELINE_HEIGHT);
        size_t len;
        FILE *b = plot_body_open(&f->body, &len);
        fputs("set title ", b);
        char t2[600];
        snprintf(t2, sizeof t2, "%s: %s", title, what);
        plot_gp_str(b, t2);
        fprintf(b, "\nset xlabel \"simulated time (ms)\"\nset xrange [%.6f:%.6f]\n"
                   "set yrange [%d.5:-0.5]\nset key outside top center horizontal\n"
                   "set style fill solid 1.0 noborder\nset grid xtics\n", lo, hi, nrows - 1);
        tl_yticks(b, row_of, nslots);
        fputs("plot", b);
        for (int c = 0, first = 1; c < CL_COUNT; c++) {
            if (blocks[c] < 0)
                continue;
            fprintf(b, "%s \"timeline.dat\" index %d using (($1+$2)/2):3:(($2-$1)/2):(0.4) "
                       "with boxxyerror lc rgb \"%s\" title \"%s\"", first ? "" : ", \\\n",
                    blocks[c], class_color[c], class_name[c]);
            first = 0;
        }
        fputc('\n', b);
        fclose(b);
    }
    free(row_of);
    free(e);
    return rc;
}

/* ---- run: memory ---------------------------------------------------------------------- */

/* memory.csv (memcsv.c): rank,t_s,<category>_bytes...,total_bytes. */
typedef struct memtab {
    int ncat;
    char cat[MC_COUNT + 8][32];
    double *v;             /* rows x (2 + ncat): rank, t_s, categories */
    size_t rows;
} memtab;

static int read_memory(const char *path, memtab *m, cp_err *err)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "r");
    if (!f)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot read: %s", path, strerror(errno));
    char line[4096];
    int rc = 0;
    if (!fgets(line, sizeof line, f) || strncmp(line, "rank,t_s,", 9) != 0)
        rc = cp_fail(err, CP_EXIT_INPUT, "%s:1: not a cpsim memory.csv header", path);
    for (char *tok = rc == 0 ? strtok(line + 9, ",\n") : NULL; tok; tok = strtok(NULL, ",\n")) {
        if (strcmp(tok, "total_bytes") == 0 || m->ncat == (int)(sizeof m->cat / sizeof m->cat[0]))
            break;
        size_t len = strlen(tok);
        if (len > 6 && strcmp(tok + len - 6, "_bytes") == 0)
            len -= 6;
        snprintf(m->cat[m->ncat++], sizeof m->cat[0], "%.*s", (int)len, tok);
    }
    size_t cap = 0, width = 2 + (size_t)m->ncat;
    for (int ln = 2; rc == 0 && fgets(line, sizeof line, f); ln++) {
        if (m->rows == cap) {
            cap = cap ? 2 * cap : 1024;
            m->v = realloc(m->v, cap * width * sizeof *m->v);
            if (!m->v)
                abort();
        }
        char *p = line;
        for (size_t c = 0; c < width && rc == 0; c++) {
            char *end;
            m->v[m->rows * width + c] = strtod(p, &end);
            if (end == p || (*end != ',' && c + 1 < width))
                rc = cp_fail(err, CP_EXIT_INPUT, "%s:%d: expected %zu numbers", path, ln,
                             width + 1);
            p = end + 1;
        }
        m->rows++;
    }
    fclose(f);
    return rc;
}

/* Ranks whose timelines are equal share a panel. */
typedef struct mem_panel {
    size_t first, n;       /* rows of the first rank of the group */
    int ranks[64];
    int nranks, more;
} mem_panel;

static int same_rows(const memtab *m, size_t a, size_t b, size_t n)
{
    size_t w = 2 + (size_t)m->ncat;
    for (size_t i = 0; i < n; i++)
        for (size_t c = 1; c < w; c++)
            if (m->v[(a + i) * w + c] != m->v[(b + i) * w + c])
                return 0;
    return 1;
}

/* Up to 16 panels: a 4 x 4 grid stays legible on the canvas. */
#define MEM_MAX_PANELS 16

static int mem_panels(const memtab *m, mem_panel *p, int *extra)
{
    size_t w = 2 + (size_t)m->ncat;
    int np = 0;
    *extra = 0;
    for (size_t r = 0; r < m->rows;) {
        size_t n = 1;
        while (r + n < m->rows && m->v[(r + n) * w] == m->v[r * w])
            n++;
        int rank = (int)m->v[r * w], k;
        for (k = 0; k < np; k++)
            if (p[k].n == n && same_rows(m, p[k].first, r, n))
                break;
        if (k == np && np == MEM_MAX_PANELS) {
            ++*extra;
        } else {
            if (k == np)
                p[np++] = (mem_panel){.first = r, .n = n};
            if (p[k].nranks < 64)
                p[k].ranks[p[k].nranks++] = rank;
            else
                p[k].more++;
        }
        r += n;
    }
    return np;
}

static void ranks_text(const mem_panel *p, char *buf, size_t len)
{
    size_t off = (size_t)snprintf(buf, len, "rank%s ", p->nranks + p->more > 1 ? "s" : "");
    for (int i = 0; i < p->nranks && off < len; i++) {
        int j = i;
        while (j + 1 < p->nranks && p->ranks[j + 1] == p->ranks[j] + 1)
            j++;
        off += (size_t)snprintf(buf + off, len - off, "%s%d", i ? "," : "", p->ranks[i]);
        if (j > i && off < len)
            off += (size_t)snprintf(buf + off, len - off, "-%d", p->ranks[j]);
        i = j;
    }
    if (p->more && off < len)
        snprintf(buf + off, len - off, " and %d more", p->more);
}

/* One step-shaped block per panel: every change at t gives a row with the
 * stack before and one after it; categories cumulative, in GB. */
static void mem_block(FILE *f, const memtab *m, const mem_panel *p, double end_s, double peak)
{
    size_t w = 2 + (size_t)m->ncat;
    char who[512];
    ranks_text(p, who, sizeof who);
    fprintf(f, "# %s: peak_bytes %.0f; t_ms then cumulative GB of", who, peak);
    for (int c = 0; c < m->ncat; c++)
        fprintf(f, " %s", m->cat[c]);
    fputc('\n', f);
    double prev[MC_COUNT + 8] = {0};
    for (size_t i = 0; i < p->n; i++) {
        const double *row = &m->v[(p->first + i) * w];
        for (int step = 0; step < 2; step++) {
            double cum = 0;
            fprintf(f, "%.6f", row[1] * 1e3);
            for (int c = 0; c < m->ncat; c++) {
                cum += step ? row[2 + c] : prev[c];
                fprintf(f, " %.6f", cum / 1e9);
            }
            fputc('\n', f);
        }
        memcpy(prev, row + 2, (size_t)m->ncat * sizeof *prev);
    }
    double cum = 0;
    fprintf(f, "%.6f", end_s * 1e3);
    for (int c = 0; c < m->ncat; c++) {
        cum += prev[c];
        fprintf(f, " %.6f", cum / 1e9);
    }
    fputc('\n', f);
}

static const char *const cat_color[] = {"#4477aa", "#228833", "#ccbb44", "#66ccee", "#aa3377",
                                        "#ee6677", "#bbbbbb", "#000000"};

static void mem_body(plot_figure *f, const memtab *m, const mem_panel *p, int np, int extra,
                     const char *what, double cap, double ymax, double end_s)
{
    size_t len;
    FILE *b = plot_body_open(&f->body, &len);
    int cols = 1;
    while (cols * cols < np)
        cols++;
    int rows = (np + cols - 1) / cols;
    char t[700];
    snprintf(t, sizeof t, "memory per rank: %s%s", what,
             extra ? " (more distinct ranks not shown)" : "");
    fprintf(b, "set multiplot layout %d,%d title ", rows, cols);
    plot_gp_str(b, t);
    fprintf(b, "\nset xlabel \"simulated time (ms)\"\nset ylabel \"GB\"\nset xrange [0:%.6f]\n"
               "set yrange [0:%.6f]\nset style fill solid 0.85 noborder\n"
               "set key outside right top font \",8\"\n", end_s * 1e3, ymax);
    for (int k = 0; k < np; k++) {
        char who[512];
        ranks_text(&p[k], who, sizeof who);
        fputs("set title ", b);
        plot_gp_str(b, who);
        fputs("\nplot", b);
        for (int c = m->ncat - 1; c >= 0; c--)
            fprintf(b, " \"memory.dat\" index %d using 1:%d with filledcurves x1 lc rgb \"%s\" "
                       "title \"%s\", \\\n    ", k, 2 + c, cat_color[c % 8], m->cat[c]);
        fprintf(b, "%.6f with lines dt 2 lw 2 lc rgb \"#cc0000\" title \"capacity %.1f GB\"\n",
                cap / 1e9, cap / 1e9);
    }
    fclose(b);
}

static int plot_memory(plot_figset *fs, const char *dir, json_t *summary, const char *what,
                       cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/memory.csv", dir);
    memtab m;
    if (read_memory(path, &m, err) < 0) {
        free(m.v);
        return -1;
    }
    double cap = json_number_value(json_object_get(summary, "capacity_bytes"));
    double end = json_number_value(json_object_get(summary, "makespan_s"));
    json_t *ranks = json_object_get(summary, "ranks");
    mem_panel *p = calloc(MEM_MAX_PANELS, sizeof *p);
    if (!p)
        abort();
    int extra, np = mem_panels(&m, p, &extra);
    double ymax = cap;
    rep_file rf;
    int rc = plot_data_open(fs, "memory", &rf, err);
    for (int k = 0; rc == 0 && k < np; k++) {
        double peak = json_number_value(json_object_get(
            json_array_get(ranks, (size_t)p[k].ranks[0]), "peak_bytes"));
        if (peak > ymax)
            ymax = peak;
        if (k)
            fputs("\n\n", rf.f);
        mem_block(rf.f, &m, &p[k], end, peak);
    }
    if (rc == 0)
        rc = rep_close(&rf, 1, err);
    if (rc == 0 && np > 0) {
        plot_figure *f = plot_fig_add(fs, "memory", "memory per rank", PLOT_WIDTH, PLOT_HEIGHT);
        /* 8 % headroom above the highest line keeps the capacity label clear */
        mem_body(f, &m, p, np, extra, what, cap, ymax * 1.08 / 1e9, end);
    }
    free(p);
    free(m.v);
    return rc;
}

int plot_run_dir(const char *dir, const plot_opts *opts, cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_error_t je;
    json_t *summary = json_load_file(path, 0, &je);
    if (!summary)
        return cp_fail(err, CP_EXIT_INPUT, "%s: not the output folder of a run (%s)", dir,
                       je.text);
    json_t *sc = json_object_get(summary, "scenario");
    char what[300];
    const char *model = json_string_value(json_object_get(sc, "model"));
    const char *plat = json_string_value(json_object_get(sc, "platform"));
    snprintf(what, sizeof what, "%s on %s", model ? model : "?", plat ? plat : "?");
    plot_figset fs;
    int rc = plot_dir_open(dir, &fs, err);
    if (rc == 0)
        rc = plot_timeline(&fs, dir, what, opts, err);
    if (rc == 0)
        rc = plot_memory(&fs, dir, summary, what, err);
    char heading[400];
    snprintf(heading, sizeof heading, "cpsim run: %s", what);
    if (rc == 0)
        rc = plot_draw(&fs, heading, err);
    plot_figset_free(&fs);
    json_decref(summary);
    return rc;
}
