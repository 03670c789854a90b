/* plot_memory: the memory of a run from memory.csv and summary.json: per
 * rank (ranks with equal timelines share a panel) the bytes held stacked by
 * category over time, the capacity line and the point where the run ran
 * out of memory (see plot.h). */
#include "reports/plot_fig.h"
#include "base/grow.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* memory.csv (memcsv.c): rank,t_s,<category>_bytes...,total_bytes[,ranks]
 * (ranks "a-b": the row stands for ranks a..b; files without the column:
 * its rank alone). */
typedef struct memtab {
    int ncat;
    char cat[MC_COUNT + 8][32];
    double *v;             /* rows x (2 + ncat): rank, t_s, categories */
    int *last;             /* per row: the last rank it stands for */
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
    size_t cap = 0, lcap = 0, width = 2 + (size_t)m->ncat;
    for (int ln = 2; rc == 0 && fgets(line, sizeof line, f); ln++) {
        m->v = cp_grow(m->v, &cap, (m->rows + 1), width * sizeof *m->v);
        m->last = cp_grow(m->last, &lcap, (m->rows + 1), sizeof *m->last);
        char *p = line;
        for (size_t c = 0; c < width && rc == 0; c++) {
            char *end;
            m->v[m->rows * width + c] = strtod(p, &end);
            if (end == p || (*end != ',' && c + 1 < width))
                rc = cp_fail(err, CP_EXIT_INPUT, "%s:%d: expected %zu numbers", path, ln,
                             width + 1);
            p = end + 1;
        }
        /* after total_bytes: the ranks "a-b" the row stands for, if written */
        int last = (int)m->v[m->rows * width];
        char *col = rc == 0 ? strchr(p, ',') : NULL;
        if (col && strchr(col + 1, '-'))
            last = (int)strtol(strchr(col + 1, '-') + 1, NULL, 10);
        m->last[m->rows] = last;
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
            for (int q = rank; q <= m->last[r] && q < rank + (1 << 20); q++) {
                if (p[k].nranks < 64)
                    p[k].ranks[p[k].nranks++] = q;
                else
                    p[k].more++;
            }
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

/* Where the run ran out of memory: the first instant the OOM rank held more
 * than the capacity, else (a budget below the capacity: KV pool, memory
 * utilisation) its peak; in ms and GB. */
typedef struct mem_oom {
    int panel;             /* -1: the run fits */
    double t_ms, gb;
    char text[256];
} mem_oom;

static void find_oom(const memtab *m, const mem_panel *p, int np, json_t *summary, mem_oom *o)
{
    o->panel = -1;
    if (!json_is_true(json_object_get(summary, "oom")))
        return;
    int rank = (int)json_integer_value(json_object_get(summary, "oom_rank"));
    for (int k = 0; k < np && o->panel < 0; k++)
        for (int i = 0; i < p[k].nranks; i++)
            if (p[k].ranks[i] == rank)
                o->panel = k;
    if (o->panel < 0)
        return;
    double cap = json_number_value(json_object_get(summary, "capacity_bytes"));
    json_t *rr = json_array_get(json_object_get(summary, "ranks"), (size_t)rank);
    o->t_ms = 1e3 * json_number_value(json_object_get(rr, "peak_t_s"));
    o->gb = json_number_value(json_object_get(rr, "peak_bytes")) / 1e9;
    size_t w = 2 + (size_t)m->ncat;
    const mem_panel *q = &p[o->panel];
    for (size_t i = 0; i < q->n; i++) {
        const double *row = &m->v[(q->first + i) * w];
        double tot = 0;
        for (int c = 0; c < m->ncat; c++)
            tot += row[2 + c];
        if (tot > cap) {
            o->t_ms = row[1] * 1e3;
            o->gb = tot / 1e9;
            break;
        }
    }
    const char *phase = json_string_value(json_object_get(summary, "oom_phase"));
    const char *budget = json_string_value(json_object_get(summary, "oom_budget"));
    double excess = json_number_value(json_object_get(summary, "oom_excess_bytes"));
    snprintf(o->text, sizeof o->text, "out of memory: rank %d, %s, %.2f GB over %s", rank,
             phase ? phase : "?", excess / 1e9, budget ? budget : "capacity");
}

static void mem_body(const plot_figset *fs, plot_figure *f, const memtab *m, const mem_panel *p,
                     int np, int extra, double cap, double ymax, double end_s,
                     const mem_oom *oom)
{
    char cmd[96];
    plot_multiplot(cmd, sizeof cmd, np);
    FILE *b = plot_fig_body(fs, f, cmd, "memory per rank%s%s",
                            extra ? " (more distinct ranks not shown)" : "",
                            oom->panel >= 0 ? " - OUT OF MEMORY" : "");
    fprintf(b, "set xlabel \"simulated time (ms)\"\nset ylabel \"GB\"\nset xrange [0:%.6f]\n"
               "set yrange [0:%.6f]\nset style fill solid 0.85 noborder\n"
               "set key outside right top font \",8\"\n", end_s * 1e3, ymax);
    for (int k = 0; k < np; k++) {
        char who[512];
        ranks_text(&p[k], who, sizeof who);
        fputs("set title ", b);
        plot_gp_str(b, who);
        if (k == oom->panel) {
            /* the text on the side of the point with more room */
            int right = oom->t_ms > end_s * 1e3 / 2;
            fputs("\nset label 1 ", b);
            plot_gp_str(b, oom->text);
            fprintf(b, " at %.6f,%.6f %s offset %d,1 font \",8\" tc rgb \"#cc0000\" front",
                    oom->t_ms, oom->gb, right ? "right" : "left", right ? -1 : 1);
        }
        fputs("\nplot", b);
        for (int c = m->ncat - 1; c >= 0; c--)
            fprintf(b, " \"memory.dat\" index %d using 1:%d with filledcurves x1 lc rgb \"%s\" "
                       "title \"%s\", \\\n    ", k, 2 + c, cat_color[c % 8], m->cat[c]);
        fprintf(b, "%.6f with lines dt 2 lw 2 lc rgb \"#cc0000\" title \"capacity %.1f GB\"",
                cap / 1e9, cap / 1e9);
        if (k == oom->panel)
            fprintf(b, ", \\\n    \"memory.dat\" index %d using 1:2 with points pt 7 ps 2 "
                       "lc rgb \"#cc0000\" title \"out of memory\"", np);
        fputc('\n', b);
        if (k == oom->panel)
            fputs("unset label 1\n", b);
    }
    fclose(b);
}

int plot_memory(plot_figset *fs, const plot_run *run, cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/memory.csv", run->dir);
    memtab m;
    if (read_memory(path, &m, err) < 0) {
        free(m.v);
        free(m.last);
        return -1;
    }
    json_t *summary = run->summary;
    double cap = json_number_value(json_object_get(summary, "capacity_bytes"));
    double end = json_number_value(json_object_get(summary, "makespan_s"));
    json_t *ranks = json_object_get(summary, "ranks");
    mem_panel *p = calloc(MEM_MAX_PANELS, sizeof *p);
    if (!p)
        abort();
    int extra, np = mem_panels(&m, p, &extra);
    mem_oom oom;
    find_oom(&m, p, np, summary, &oom);
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
    if (rc == 0 && oom.panel >= 0)
        fprintf(rf.f, "\n\n# %s: t_ms GB\n%.6f %.6f\n", oom.text, oom.t_ms, oom.gb);
    if (rc == 0)
        rc = rep_close(&rf, 1, err);
    if (rc == 0 && np > 0) {
        plot_figure *f = plot_fig_add(fs, "memory", "memory", "memory per rank", PLOT_WIDTH,
                                      PLOT_HEIGHT);
        snprintf(f->desc, sizeof f->desc, "Per rank (ranks with equal timelines share a "
                 "panel), the bytes held stacked by category over simulated time, the device "
                 "capacity (%.1f GB) dashed%s", cap / 1e9,
                 oom.panel >= 0 ? " and the point where the run ran out of memory" : "");
        /* 8 % headroom above the highest line keeps the capacity label clear */
        mem_body(fs, f, &m, p, np, extra, cap, ymax * 1.08 / 1e9, end, &oom);
    }
    free(p);
    free(m.v);
    free(m.last);
    return rc;
}
