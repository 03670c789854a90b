/* plot_sweep: the plots of a sweep folder from its result lines: TTFT and
 * overlap against prompt length per strategy, TP x SP heat maps (see
 * plot.h). */
#include "reports/plot_fig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static int plot_strategies(plot_figset *fs, const plot_point *p, size_t n, const long long *L,
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
    int rc = plot_data_open(fs, "strategies", &rf, err), any_oom = 0;
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
        plot_figure *f = which ? plot_fig_add(fs, "overlap", "overlap per strategy", PLOT_WIDTH,
                                    PLOT_HEIGHT)
                          : plot_fig_add(fs, "ttft", "TTFT against prompt length", PLOT_WIDTH,
                                    PLOT_HEIGHT);
        size_t len;
        FILE *b = plot_body_open(&f->body, &len);
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
            plot_gp_str(b, labels[k]);
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

static int plot_heatmap(plot_figset *fs, const plot_point *p, size_t n, long long L,
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
    int rc = plot_data_open(fs, name, &rf, err), block[4] = {-1, -1, -1, -1}, nb = 0;
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
        plot_figure *f = plot_fig_add(fs, name, title, PLOT_WIDTH, PLOT_HEIGHT);
        size_t len;
        FILE *b = plot_body_open(&f->body, &len);
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
    plot_figset fs;
    int rc = plot_dir_open(dir, &fs, err);
    if (rc == 0 && nl > 0)
        rc = plot_strategies(&fs, p, n, L, nl, err);
    for (size_t q = 0; rc == 0 && q < nl && ntp > 0; q++)
        rc = plot_heatmap(&fs, p, n, L[q], tps, ntp, sps, nsp, err);
    if (rc == 0)
        rc = plot_draw(&fs, "cpsim sweep", err);
    plot_figset_free(&fs);
    free(p);
    free(L);
    free(tps);
    free(sps);
    return rc;
}
