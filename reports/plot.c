/* plot: gnuplot pictures of a run or a sweep (see plot.h).
 *
 * Every figure is one block of the generated script plots.gp, drawn twice:
 * once on the pngcairo terminal and once on the svg terminal.  The data
 * files are written first (atomically), then gnuplot runs once in the plots
 * folder; index.html comes last. */
#include "reports/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "models/plan.h"
#include "reports/report.h"

/* ---- figures and the script ----------------------------------------------------- */

typedef struct figure {
    char name[64];         /* file stem */
    char title[256];       /* for index.html */
    int w, h;
    char *body;            /* gnuplot commands that draw it */
} figure;

typedef struct figset {
    char dir[4096];        /* the plots folder */
    figure *fig;
    int n, cap;
} figset;

static figure *fig_add(figset *fs, const char *name, const char *title, int w, int h)
{
    if (fs->n == fs->cap) {
        fs->cap = fs->cap ? 2 * fs->cap : 8;
        fs->fig = realloc(fs->fig, (size_t)fs->cap * sizeof *fs->fig);
        if (!fs->fig)
            abort();
    }
    figure *f = &fs->fig[fs->n++];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    snprintf(f->title, sizeof f->title, "%s", title);
    f->w = w;
    f->h = h;
    return f;
}

static void figset_free(figset *fs)
{
    for (int i = 0; i < fs->n; i++)
        free(fs->fig[i].body);
    free(fs->fig);
}

/* A string as a gnuplot double-quoted literal. */
static void gp_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static FILE *body_open(char **buf, size_t *len)
{
    FILE *m = open_memstream(buf, len);
    if (!m)
        abort();
    /* each figure starts from gnuplot's defaults; labels are literal text */
    fputs("reset\nset encoding utf8\n", m);
    return m;
}

/* Fonts: gnuplot's sans at 10 pt reads well at these canvas sizes. */
static void write_script(const figset *fs, FILE *f)
{
    fputs("# cpsim plots: run `gnuplot plots.gp` in this folder to draw them again.\n", f);
    for (int i = 0; i < fs->n; i++) {
        const figure *fg = &fs->fig[i];
        fprintf(f, "\n# ---- %s\n", fg->name);
        fprintf(f, "set terminal pngcairo size %d,%d font \"Sans,10\" noenhanced\n"
                   "set output \"%s.png\"\n%sunset multiplot\nunset output\n",
                fg->w, fg->h, fg->name, fg->body);
        fprintf(f, "set terminal svg size %d,%d font \"Sans,10\" noenhanced\n"
                   "set output \"%s.svg\"\n%sunset multiplot\nunset output\n",
                fg->w, fg->h, fg->name, fg->body);
    }
}

static void write_index(const figset *fs, const char *heading, FILE *f)
{
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>", f);
    fputs(heading, f);
    fputs("</title>\n<style>body{font-family:sans-serif;margin:2em}img{max-width:100%;"
          "border:1px solid #ccc}</style></head>\n<body>\n<h1>", f);
    fputs(heading, f);
    fputs("</h1>\n", f);
    if (fs->n == 0)
        fputs("<p>Nothing to draw: no point of this sweep ran.</p>\n", f);
    for (int i = 0; i < fs->n; i++) {
        const figure *fg = &fs->fig[i];
        fprintf(f, "<h2>%s</h2>\n<p><img src=\"%s.png\" width=\"%d\" height=\"%d\" alt=\"%s\">"
                   "</p>\n<p><a href=\"%s.svg\">SVG</a> &middot; <a href=\"%s.dat\">data</a>"
                   "</p>\n", fg->title, fg->name, fg->w, fg->h, fg->name, fg->name, fg->name);
    }
    fputs("<p>Drawn by gnuplot from <a href=\"plots.gp\">plots.gp</a>.</p>\n</body></html>\n",
          f);
}

/* gnuplot from PATH, or 0 when there is none. */
static int find_gnuplot(char *buf, size_t len)
{
    const char *path = getenv("PATH");
    if (!path)
        return 0;
    char *dirs = strdup(path);
    if (!dirs)
        abort();
    int found = 0;
    for (char *d = strtok(dirs, ":"); d && !found; d = strtok(NULL, ":")) {
        snprintf(buf, len, "%s/gnuplot", *d ? d : ".");
        found = access(buf, X_OK) == 0;
    }
    free(dirs);
    return found;
}

/* The first lines of gnuplot.log, for a message. */
static void log_head(const char *dir, char *buf, size_t len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/gnuplot.log", dir);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (char *c = buf; *c; c++)
        if (*c == '\n')
            *c = ' ';
}

static int run_gnuplot(const char *dir, cp_err *err)
{
    char exe[4096];
    if (!find_gnuplot(exe, sizeof exe))
        return cp_fail(err, CP_EXIT_INPUT, "plots need gnuplot, which is not in PATH: install "
                       "it (Debian: apt-get install gnuplot-nox)");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return cp_fail(err, CP_EXIT_INTERNAL, "cannot fork gnuplot: %s", strerror(errno));
    if (pid == 0) {
        int fd = -1;
        if (chdir(dir) == 0)
            fd = open("gnuplot.log", O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execl(exe, "gnuplot", "plots.gp", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char msg[600];
    log_head(dir, msg, sizeof msg);
    if (strstr(msg, "unknown or ambiguous terminal"))
        return cp_fail(err, CP_EXIT_INPUT, "%s: gnuplot lacks the pngcairo or svg terminal "
                       "(Debian: gnuplot-nox has both): %s", exe, msg);
    return cp_fail(err, CP_EXIT_INTERNAL, "gnuplot failed on %s/plots.gp (see gnuplot.log): %s",
                   dir, msg);
}

/* Script, gnuplot, index.html. */
static int draw(const figset *fs, const char *heading, cp_err *err)
{
    char path[4200];
    rep_file rf;
    snprintf(path, sizeof path, "%s/plots.gp", fs->dir);
    if (rep_open(&rf, path, err) != 0)
        return -1;
    write_script(fs, rf.f);
    if (rep_close(&rf, 1, err) != 0)
        return -1;
    if (fs->n > 0 && run_gnuplot(fs->dir, err) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/index.html", fs->dir);
    if (rep_open(&rf, path, err) != 0)
        return -1;
    write_index(fs, heading, rf.f);
    return rep_close(&rf, 1, err);
}

static int plots_dir(const char *dir, figset *fs, cp_err *err)
{
    memset(fs, 0, sizeof *fs);
    snprintf(fs->dir, sizeof fs->dir, "%s/plots", dir);
    if (mkdir(fs->dir, 0777) != 0 && errno != EEXIST)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot create it: %s", fs->dir,
                       strerror(errno));
    return 0;
}

static int data_open(const figset *fs, const char *name, rep_file *rf, cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.dat", fs->dir, name);
    return rep_open(rf, path, err);
}

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

static int read_trace(const char *path, tl_event **out, size_t *n, cp_err *err)
{
    json_error_t je;
    json_t *t = json_load_file(path, 0, &je);
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
        e[k++] = (tl_event){.row = (int)json_integer_value(json_object_get(ev, "tid")),
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

static int plot_timeline(figset *fs, const char *dir, const char *what, const plot_opts *o,
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
        rc = data_open(fs, "timeline", &rf, err);
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
        figure *f = fig_add(fs, "timeline", title, PLOT_TIMELINE_WIDTH, PLOT_TIMELINE_HEIGHT);
        size_t len;
        FILE *b = body_open(&f->body, &len);
        fputs("set title ", b);
        char t2[600];
        snprintf(t2, sizeof t2, "%s: %s", title, what);
        gp_str(b, t2);
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

static void mem_body(figure *f, const memtab *m, const mem_panel *p, int np, int extra,
                     const char *what, double cap, double ymax, double end_s)
{
    size_t len;
    FILE *b = body_open(&f->body, &len);
    int cols = 1;
    while (cols * cols < np)
        cols++;
    int rows = (np + cols - 1) / cols;
    char t[700];
    snprintf(t, sizeof t, "memory per rank: %s%s", what,
             extra ? " (more distinct ranks not shown)" : "");
    fprintf(b, "set multiplot layout %d,%d title ", rows, cols);
    gp_str(b, t);
    fprintf(b, "\nset xlabel \"simulated time (ms)\"\nset ylabel \"GB\"\nset xrange [0:%.6f]\n"
               "set yrange [0:%.6f]\nset style fill solid 0.85 noborder\n"
               "set key outside right top font \",8\"\n", end_s * 1e3, ymax);
    for (int k = 0; k < np; k++) {
        char who[512];
        ranks_text(&p[k], who, sizeof who);
        fputs("set title ", b);
        gp_str(b, who);
        fputs("\nplot", b);
        for (int c = m->ncat - 1; c >= 0; c--)
            fprintf(b, " \"memory.dat\" index %d using 1:%d with filledcurves x1 lc rgb \"%s\" "
                       "title \"%s\", \\\n    ", k, 2 + c, cat_color[c % 8], m->cat[c]);
        fprintf(b, "%.6f with lines dt 2 lw 2 lc rgb \"#cc0000\" title \"capacity %.1f GB\"\n",
                cap / 1e9, cap / 1e9);
    }
    fclose(b);
}

static int plot_memory(figset *fs, const char *dir, json_t *summary, const char *what,
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
    int rc = data_open(fs, "memory", &rf, err);
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
        figure *f = fig_add(fs, "memory", "memory per rank", PLOT_WIDTH, PLOT_HEIGHT);
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
    figset fs;
    int rc = plots_dir(dir, &fs, err);
    if (rc == 0)
        rc = plot_timeline(&fs, dir, what, opts, err);
    if (rc == 0)
        rc = plot_memory(&fs, dir, summary, what, err);
    char heading[400];
    snprintf(heading, sizeof heading, "cpsim run: %s", what);
    if (rc == 0)
        rc = draw(&fs, heading, err);
    figset_free(&fs);
    json_decref(summary);
    return rc;
}

/* ---- sweep points --------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* A parameter as a label shows it: strings bare, lists as [a,b] (caller
 * frees). */
static char *label_value(json_t *v)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        abort();
    if (json_is_array(v)) {
        size_t i;
        json_t *item;
        fputc('[', m);
        json_array_foreach(v, i, item) {
            char *t = label_value(item);
            fprintf(m, "%s%s", i ? "," : "", t);
            free(t);
        }
        fputc(']', m);
    } else if (json_is_string(v)) {
        fputs(json_string_value(v), m);
    } else {
        char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        fputs(t ? t : "?", m);
        free(t);
    }
    fclose(m);
    return text;
}

/* label and shape from the parameters, keys shortened to their last part */
static void point_labels(json_t *params, plot_point *pt)
{
    size_t ol = 0, os = 0;
    const char *k;
    json_t *v;
    json_object_foreach(params, k, v) {
        if (ends_with(k, "prompt_tokens") || ends_with(k, "min_tokens"))
            continue;
        const char *short_k = strrchr(k, '.') ? strrchr(k, '.') + 1 : k;
        char *text = label_value(v);
        if (ol < sizeof pt->label)
            ol += (size_t)snprintf(pt->label + ol, sizeof pt->label - ol, "%s%s=%s",
                                   ol ? " " : "", short_k, text);
        if (!ends_with(k, "exchange") && !ends_with(k, "kv_storage") && os < sizeof pt->shape)
            os += (size_t)snprintf(pt->shape + os, sizeof pt->shape - os, "%s%s=%s",
                                   os ? " " : "", short_k, text);
        free(text);
    }
    if (!ol)
        snprintf(pt->label, sizeof pt->label, "all");
    if (!os)
        snprintf(pt->shape, sizeof pt->shape, "all");
}

static long long param_int(json_t *params, const char *key, long long dflt)
{
    json_t *v = json_object_get(params, key);
    return json_is_number(v) ? (long long)json_number_value(v) : dflt;
}

static void param_str(json_t *params, const char *key, char *buf, size_t len)
{
    const char *s = json_string_value(json_object_get(params, key));
    snprintf(buf, len, "%s", s ? s : "");
}

void plot_point_of(json_t *line, plot_point *pt)
{
    memset(pt, 0, sizeof *pt);
    json_t *params = json_object_get(line, "params");
    json_t *s = json_object_get(line, "summary");
    pt->index = (int)json_integer_value(json_object_get(line, "index"));
    const char *st = json_string_value(json_object_get(line, "status"));
    pt->ok = st && strcmp(st, "ok") == 0 && json_is_object(s);
    point_labels(params, pt);
    pt->prompt = -1;
    pt->split = -1;
    const char *k;
    json_t *v;
    json_object_foreach(params, k, v)
        if (ends_with(k, "prompt_tokens") && strncmp(k, "requests.0.", 11) == 0)
            pt->prompt = (long long)json_number_value(v);
    pt->tp = (int)param_int(params, "parallel.tp", 0);
    pt->sp = (int)param_int(params, "parallel.sp", 0);
    pt->min_tokens = param_int(params, "parallel.min_tokens", -1);
    param_str(params, "parallel.exchange", pt->exchange, sizeof pt->exchange);
    param_str(params, "parallel.kv_storage", pt->kv_storage, sizeof pt->kv_storage);
    if (!pt->ok)
        return;
    json_t *par = json_object_get(json_object_get(s, "scenario"), "parallel");
    pt->oom = json_is_true(json_object_get(s, "oom"));
    pt->ttft_s = json_number_value(json_object_get(s, "ttft_s"));
    pt->overlap = json_number_value(json_object_get(s, "overlap_fraction"));
    pt->peak_bytes = json_number_value(json_object_get(s, "peak_bytes_max"));
    pt->capacity_bytes = json_number_value(json_object_get(s, "capacity_bytes"));
    json_t *rq = json_array_get(json_object_get(s, "requests"), 0);
    if (rq)
        pt->prompt = (long long)json_integer_value(json_object_get(rq, "prompt_tokens"));
    pt->tp = (int)json_integer_value(json_object_get(par, "tp"));
    pt->sp = (int)json_integer_value(json_object_get(par, "sp"));
    pt->min_tokens = (long long)json_integer_value(json_object_get(par, "min_tokens"));
    param_str(par, "exchange", pt->exchange, sizeof pt->exchange);
    param_str(par, "kv_storage", pt->kv_storage, sizeof pt->kv_storage);
    json_t *split = json_object_get(rq, "split");
    if (pt->sp > 1 && json_is_boolean(split))
        pt->split = json_is_true(split);
}

/* ---- sweep: strategies against prompt length ------------------------------------------------ */

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static size_t distinct_ll(long long *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_ll);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || v[m - 1] != v[i])
            v[m++] = v[i];
    return m;
}

/* The point a strategy shows at a prompt length: its best that fits, else
 * its best out of memory; NULL when none ran. */
static const plot_point *shown(const plot_point *p, size_t n, const char *label, long long L)
{
    const plot_point *best = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!p[i].ok || p[i].prompt != L || strcmp(p[i].label, label) != 0)
            continue;
        if (!best || (best->oom && !p[i].oom) ||
            (best->oom == p[i].oom && p[i].ttft_s < best->ttft_s))
            best = &p[i];
    }
    return best;
}

static void prompt_tics(FILE *b, const long long *L, size_t nl)
{
    fputs("set xtics (", b);
    for (size_t q = 0; q < nl; q++) {
        if (L[q] % 1024 == 0)
            fprintf(b, "%s\"%lldK\" %lld", q ? ", " : "", L[q] / 1024, L[q]);
        else
            fprintf(b, "%s\"%lld\" %lld", q ? ", " : "", L[q], L[q]);
    }
    fputs(")\n", b);
}

/* strategies.dat: one block per strategy (prompt ttft_s overlap_pct oom
 * index); ttft and overlap draw from it. */
static int plot_strategies(figset *fs, const plot_point *p, size_t n, const long long *L,
                           size_t nl, cp_err *err)
{
    const char **labels = malloc((n + 1) * sizeof *labels);
    if (!labels)
        abort();
    size_t ns = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < ns && strcmp(labels[k], p[i].label) != 0)
            k++;
        if (k == ns && p[i].ok && p[i].prompt >= 0)
            labels[ns++] = p[i].label;
    }
    rep_file rf;
    int rc = data_open(fs, "strategies", &rf, err), any_oom = 0;
    for (size_t k = 0; rc == 0 && k < ns; k++) {
        fprintf(rf.f, "%s# %s: prompt_tokens ttft_s overlap_pct oom index\n", k ? "\n\n" : "",
                labels[k]);
        for (size_t q = 0; q < nl; q++) {
            const plot_point *s = shown(p, n, labels[k], L[q]);
            if (s)
                fprintf(rf.f, "%lld %.9g %.6f %d %d\n", L[q], s->ttft_s, 100 * s->overlap,
                        s->oom, s->index);
            any_oom |= s && s->oom;
        }
    }
    if (rc == 0)
        rc = rep_close(&rf, 1, err);
    for (int which = 0; rc == 0 && which < 2; which++) {
        figure *f = which ? fig_add(fs, "overlap", "overlap per strategy", PLOT_WIDTH,
                                    PLOT_HEIGHT)
                          : fig_add(fs, "ttft", "TTFT against prompt length", PLOT_WIDTH,
                                    PLOT_HEIGHT);
        size_t len;
        FILE *b = body_open(&f->body, &len);
        /* a quarter octave of margin keeps the end points off the frame */
        fprintf(b, "set title \"%s per strategy%s\"\nset xlabel \"prompt tokens\"\n"
                   "set ylabel \"%s\"\nset logscale x 2\nset xrange [%.6g:%.6g]\n%sset grid\n"
                   "set key below font \",8\"\n",
                which ? "share of communication time under compute" : "time to first token",
                any_oom ? " (out-of-memory points circled)" : "",
                which ? "overlap (%)" : "TTFT (s)", (double)L[0] / 1.19, (double)L[nl - 1] * 1.19,
                which ? "set yrange [0:100]\n" : "set logscale y\n");
        prompt_tics(b, L, nl);
        fputs("plot", b);
        for (size_t k = 0; k < ns; k++) {
            fprintf(b, "%s \"strategies.dat\" index %zu using 1:%d with linespoints pt 7 ps 0.8 "
                       "title ", k ? ", \\\n    " : "", k, which ? 3 : 2);
            gp_str(b, labels[k]);
        }
        if (any_oom)
            for (size_t k = 0; k < ns; k++)
                fprintf(b, ", \\\n    \"strategies.dat\" index %zu using 1:($4 > 0 ? $%d : 1/0) "
                           "with points pt 6 ps 2.5 lw 2 lc rgb \"#cc0000\" %s", k,
                        which ? 3 : 2, k ? "notitle" : "title \"out of memory\"");
        fputc('\n', b);
        fclose(b);
    }
    free(labels);
    return rc;
}

/* ---- sweep: TP x SP heat maps ---------------------------------------------------------------- */

enum { CELL_NONE, CELL_FITS, CELL_OOM, CELL_FAILED };

typedef struct cell {
    int state;
    double ttft;
} cell;

static int index_of(const long long *v, size_t n, long long x)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == x)
            return (int)i;
    return -1;
}

static void fill_cells(const plot_point *p, size_t n, long long L, const long long *tps,
                       size_t ntp, const long long *sps, size_t nsp, cell *c)
{
    for (size_t i = 0; i < ntp * nsp; i++)
        c[i] = (cell){CELL_NONE, 0};
    for (size_t i = 0; i < n; i++) {
        int x = index_of(tps, ntp, p[i].tp), y = index_of(sps, nsp, p[i].sp);
        if (p[i].prompt != L || x < 0 || y < 0)
            continue;
        cell *k = &c[(size_t)y * ntp + (size_t)x];
        int st = !p[i].ok ? CELL_FAILED : p[i].oom ? CELL_OOM : CELL_FITS;
        /* fits beats OOM beats failed; a faster point beats one of its kind */
        int better = k->state == CELL_NONE || (st != CELL_FAILED && k->state == CELL_FAILED) ||
                     (st == CELL_FITS && k->state == CELL_OOM) ||
                     (st == k->state && st != CELL_FAILED && p[i].ttft_s < k->ttft);
        if (better)
            *k = (cell){st, p[i].ttft_s};
    }
}

static void axis_tics(FILE *b, const char *axis, const long long *v, size_t n)
{
    fprintf(b, "set %stics (", axis);
    for (size_t i = 0; i < n; i++)
        fprintf(b, "%s\"%lld\" %zu", i ? ", " : "", v[i], i);
    fputs(")\n", b);
}

static int plot_heatmap(figset *fs, const plot_point *p, size_t n, long long L,
                        const long long *tps, size_t ntp, const long long *sps, size_t nsp,
                        cp_err *err)
{
    cell *c = malloc(ntp * nsp * sizeof *c);
    if (!c)
        abort();
    fill_cells(p, n, L, tps, ntp, sps, nsp, c);
    char name[64];
    snprintf(name, sizeof name, "heatmap-%lld", L);
    rep_file rf;
    int rc = data_open(fs, name, &rf, err), block[4] = {-1, -1, -1, -1}, nb = 0;
    double lo = INFINITY, hi = 0;
    static const char *const state_name[] = {"", "fits", "out of memory", "failed"};
    for (int st = CELL_FITS; rc == 0 && st <= CELL_FAILED; st++) {
        for (size_t i = 0; i < ntp * nsp; i++) {
            if (c[i].state != st)
                continue;
            if (block[st] < 0) {
                fprintf(rf.f, "%s# %s: tp_index sp_index ttft_s tp sp\n", nb ? "\n\n" : "",
                        state_name[st]);
                block[st] = nb++;
            }
            fprintf(rf.f, "%zu %zu %.9g %lld %lld\n", i % ntp, i / ntp,
                    st == CELL_FAILED ? 0.0 : c[i].ttft, tps[i % ntp], sps[i / ntp]);
            if (st == CELL_FITS) {
                lo = fmin(lo, c[i].ttft);
                hi = fmax(hi, c[i].ttft);
            }
        }
    }
    if (rc == 0)
        rc = rep_close(&rf, 1, err);
    if (rc == 0 && nb > 0) {
        char title[128];
        snprintf(title, sizeof title, "TP x SP, prompt %lld tokens", L);
        figure *f = fig_add(fs, name, title, PLOT_WIDTH, PLOT_HEIGHT);
        size_t len;
        FILE *b = body_open(&f->body, &len);
        fprintf(b, "set title \"best TTFT (s) by TP x SP, prompt of %lld tokens\"\n"
                   "set xlabel \"TP\"\nset ylabel \"SP\"\nset xrange [-0.5:%zu.5]\n"
                   "set yrange [-0.5:%zu.5]\nset style fill solid 1.0 border lc rgb \"white\"\n"
                   "unset key\nset cblabel \"TTFT (s)\"\nset format cb \"%%.3g\"\n"
                   "set palette defined (0 \"#1a9850\", 1 \"#fee08b\", 2 \"#d73027\")\n",
                L, ntp - 1, nsp - 1);
        /* a 10 % margin keeps a single value from collapsing the colour
         * range; a log scale once the values span a decade */
        if (block[CELL_FITS] >= 0)
            fprintf(b, "%sset cbrange [%.9g:%.9g]\n", hi > 10 * lo ? "set logscale cb\n" : "",
                    lo * 0.9, hi * 1.1);
        axis_tics(b, "x", tps, ntp);
        axis_tics(b, "y", sps, nsp);
        fputs("plot", b);
        const char *sep = "";
        if (block[CELL_FITS] >= 0) {
            fprintf(b, " \"%s.dat\" index %d using 1:2:(0.5):(0.5):3 with boxxyerror fc palette "
                       "notitle, \\\n    \"%s.dat\" index %d using 1:2:(sprintf(\"%%.4g s\", $3)) "
                       "with labels notitle", name, block[CELL_FITS], name, block[CELL_FITS]);
            sep = ", \\\n   ";
        }
        if (block[CELL_OOM] >= 0) {
            fprintf(b, "%s \"%s.dat\" index %d using 1:2:(0.5):(0.5) with boxxyerror fc rgb "
                       "\"#777777\" notitle, \\\n    \"%s.dat\" index %d using "
                       "1:2:(sprintf(\"OOM\\n%%.4g s\", $3)) with labels tc rgb \"white\" notitle",
                    sep, name, block[CELL_OOM], name, block[CELL_OOM]);
            sep = ", \\\n   ";
        }
        if (block[CELL_FAILED] >= 0)
            fprintf(b, "%s \"%s.dat\" index %d using 1:2:(0.5):(0.5) with boxxyerror fc rgb "
                       "\"#dddddd\" notitle, \\\n    \"%s.dat\" index %d using "
                       "1:2:(\"failed\") with labels notitle", sep, name, block[CELL_FAILED],
                    name, block[CELL_FAILED]);
        fputc('\n', b);
        fclose(b);
    }
    free(c);
    return rc;
}

int plot_sweep(const char *dir, json_t *const *lines, size_t n, cp_err *err)
{
    plot_point *p = malloc((n + 1) * sizeof *p);
    long long *L = malloc((n + 1) * sizeof *L), *tps = malloc((n + 1) * sizeof *tps),
              *sps = malloc((n + 1) * sizeof *sps);
    if (!p || !L || !tps || !sps)
        abort();
    size_t nl = 0, ntp = 0, nsp = 0;
    for (size_t i = 0; i < n; i++) {
        plot_point_of(lines[i], &p[i]);
        if (p[i].ok && p[i].prompt >= 0)
            L[nl++] = p[i].prompt;
        if (p[i].tp > 0 && p[i].sp > 0 && p[i].prompt >= 0) {
            tps[ntp++] = p[i].tp;
            sps[nsp++] = p[i].sp;
        }
    }
    nl = distinct_ll(L, nl);
    ntp = distinct_ll(tps, ntp);
    nsp = distinct_ll(sps, nsp);
    figset fs;
    int rc = plots_dir(dir, &fs, err);
    if (rc == 0 && nl > 0)
        rc = plot_strategies(&fs, p, n, L, nl, err);
    for (size_t q = 0; rc == 0 && q < nl && ntp > 0; q++)
        rc = plot_heatmap(&fs, p, n, L[q], tps, ntp, sps, nsp, err);
    if (rc == 0)
        rc = draw(&fs, "cpsim sweep", err);
    figset_free(&fs);
    free(p);
    free(L);
    free(tps);
    free(sps);
    return rc;
}
