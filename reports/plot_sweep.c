/* plot_sweep: the plots of a sweep folder from the records of its result
 * lines (reports/sweep_points.c): the strategies with their colours and
 * markers, and the picture families in order (see plot.h). */
#include "reports/plot_fig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- what the pictures share ------------------------------------------------------- */

const plot_point *plot_shown(const plot_sweepset *ss, const char *label, long long L)
{
    const plot_point *best = NULL;
    for (size_t i = 0; i < ss->n; i++) {
        const plot_point *p = &ss->p[i];
        if (!p->ok || p->prompt != L || strcmp(p->label, label) != 0)
            continue;
        if (!best || (best->oom && !p->oom) || (best->oom == p->oom && p->ttft_s < best->ttft_s))
            best = p;
    }
    return best;
}

void plot_prompt_tics(FILE *b, const long long *L, size_t nl)
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

/* A key entry at font 8 takes ~13 px; 150 px go to the title and margins. */
static int key_rows(int h)
{
    int rows = (h - 150) / 13;
    return rows < 4 ? 4 : rows;
}

void plot_key_right(FILE *b, int h)
{
    fprintf(b, "set key outside right top vertical maxrows %d font \",8\" spacing 1.0 "
               "samplen 2\n", key_rows(h));
}

/* A column of keys is ~320 px wide (labels of ~45 characters); the first
 * fits in PLOT_WIDTH. */
int plot_width_for_key(size_t entries, int h)
{
    size_t cols = (entries + (size_t)key_rows(h) - 1) / (size_t)key_rows(h);
    return PLOT_WIDTH + (cols > 1 ? (int)(cols - 1) * 320 : 0);
}

/* ---- the sweep ------------------------------------------------------------------------- */

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

/* The index of s in v[0..*n), appended when new. */
static size_t intern(const char **v, size_t *n, const char *s)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(v[i], s) == 0)
            return i;
    v[*n] = s;
    return (*n)++;
}

/* Whether two strategies share a colour and a marker. */
static int styles_clash(const plot_sweepset *ss)
{
    for (size_t k = 0; k < ss->ns; k++)
        for (size_t j = 0; j < k; j++)
            if (ss->color[j] == ss->color[k] && ss->marker[j] == ss->marker[k])
                return 1;
    return 0;
}

/* When the sweep compares exchanges (2+ in its labels): the colour of each
 * from the fixed table, an exchange it lacks (and "", the strategies
 * without one) taking the colours no exchange of the table has, in order;
 * the marker the exchange's too when nothing else varies, else the rest of
 * the label's, in order.  0 when the sweep does not compare exchanges or
 * two strategies would look alike. */
static int styles_by_exchange(plot_sweepset *ss, const plot_point *const *first)
{
    const char **xs = malloc((ss->ns + 1) * sizeof *xs);
    const char **ms = malloc((ss->ns + 1) * sizeof *ms);
    int *xcolor = malloc((ss->ns + 1) * sizeof *xcolor);
    if (!xs || !ms || !xcolor)
        abort();
    size_t nx = 0, nm = 0, named = 0;
    for (size_t k = 0; k < ss->ns; k++) {
        intern(ms, &nm, first[k]->mkey);
        size_t before = nx;
        size_t x = intern(xs, &nx, first[k]->xkey);
        if (nx == before)
            continue;
        named += first[k]->xkey[0] != '\0';
        int c, m;
        xcolor[x] = -1;
        if (plot_exchange_style(first[k]->xkey, &c, &m))
            xcolor[x] = c;
    }
    /* the free colours for the exchanges the table lacks */
    int next = 0;
    for (size_t x = 0; x < nx; x++) {
        if (xcolor[x] >= 0)
            continue;
        while (next < PLOT_NCOLORS && plot_color_taken(next))
            next++;
        xcolor[x] = next < PLOT_NCOLORS ? next++ : (int)(x % PLOT_NCOLORS);
    }
    for (size_t k = 0; named >= 2 && k < ss->ns; k++) {
        size_t x = intern(xs, &nx, first[k]->xkey), mi = intern(ms, &nm, first[k]->mkey);
        int c, m;
        int known = plot_exchange_style(first[k]->xkey, &c, &m);
        ss->color[k] = xcolor[x];
        ss->marker[k] = nm == 1 ? plot_markers[known ? m : (int)(x % PLOT_NMARKERS)]
                                : plot_markers[mi % PLOT_NMARKERS];
    }
    free(xs);
    free(ms);
    free(xcolor);
    return named >= 2 && !styles_clash(ss);
}

/* Colour and marker per strategy: by exchange when the sweep compares
 * exchanges (styles_by_exchange).  Else, when the strategies vary both in
 * shape and in the rest (kv_storage; a few of each), the colour says the
 * rest and the marker the shape, so every strategy has a pair of its own
 * that reads; otherwise strategy k takes colour k % 12 and marker k % 13:
 * pairs of their own for the first 156, and neighbours apart in both. */
static void assign_styles(plot_sweepset *ss, const plot_point *const *first)
{
    ss->by_exchange = styles_by_exchange(ss, first);
    if (ss->by_exchange) {
        ss->factored = 1;
        return;
    }
    const char **rests = malloc((ss->ns + 1) * sizeof *rests);
    const char **shapes = malloc((ss->ns + 1) * sizeof *shapes);
    size_t *ri = malloc((ss->ns + 1) * sizeof *ri), *si = malloc((ss->ns + 1) * sizeof *si);
    if (!rests || !shapes || !ri || !si)
        abort();
    size_t nr = 0, nsh = 0;
    for (size_t k = 0; k < ss->ns; k++) {
        ri[k] = intern(rests, &nr, first[k]->rest);
        si[k] = intern(shapes, &nsh, first[k]->shape);
    }
    ss->factored = nr > 1 && nsh > 1 && nr <= PLOT_NCOLORS && nsh <= PLOT_NMARKERS;
    for (size_t k = 0; k < ss->ns; k++) {
        ss->color[k] = (int)((ss->factored ? ri[k] : k) % PLOT_NCOLORS);
        ss->marker[k] = plot_markers[(ss->factored ? si[k] : k) % PLOT_NMARKERS];
    }
    free(rests);
    free(shapes);
    free(ri);
    free(si);
}

/* The scenario fields a caption names. */
enum { SC_MODEL, SC_WORKLOAD, SC_PLATFORM };

/* Up to three distinct values of a scenario field, joined: "a, b and 2 more". */
static void distinct_text(const plot_point *p, size_t n, int key, int base_name, char *buf,
                          size_t len)
{
    const char *seen[3];
    size_t ns = 0, more = 0, off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!p[i].ok)
            continue;
        const char *v = key == SC_MODEL ? p[i].model : key == SC_WORKLOAD ? p[i].workload
                                                                 : p[i].platform;
        if (!v)
            continue;
        if (base_name && strrchr(v, '/'))
            v = strrchr(v, '/') + 1;
        size_t k = 0;
        while (k < ns && strcmp(seen[k], v) != 0)
            k++;
        if (k < ns)
            continue;
        if (ns == 3) {
            more++;
            continue;
        }
        seen[ns++] = v;
        if (off < len)
            off += (size_t)snprintf(buf + off, len - off, "%s%s", ns > 1 ? ", " : "", v);
    }
    if (more && off < len)
        snprintf(buf + off, len - off, " and %zu more", more);
    if (!ns)
        snprintf(buf, len, "?");
}

/* "sweep NAME: model (base.yaml) on platform" */
static void sweep_what(const char *dir, const plot_point *p, size_t n, char *buf, size_t len)
{
    char path[4200], model[120], wl[120], plat[120];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    json_t *meta = json_load_file(path, 0, NULL);
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!name)     /* no sweep.json: the folder's name */
        name = strrchr(dir, '/') && strrchr(dir, '/')[1] ? strrchr(dir, '/') + 1 : dir;
    distinct_text(p, n, SC_MODEL, 0, model, sizeof model);
    distinct_text(p, n, SC_WORKLOAD, 1, wl, sizeof wl);
    distinct_text(p, n, SC_PLATFORM, 0, plat, sizeof plat);
    snprintf(buf, len, "sweep %s: %s (%s) on %s", name, model, wl, plat);
    json_decref(meta);
}

int plot_sweep(const char *dir, const plot_points *set, cp_err *err)
{
    size_t n = set->n;
    const plot_point *p = set->p;
    const plot_point **first = malloc((n + 1) * sizeof *first);
    plot_sweepset ss = {.p = p, .n = n, .dir = dir, .set = set};
    char epath[4200];
    snprintf(epath, sizeof epath, "%s/source_errors.json", dir);
    ss.errs = json_load_file(epath, 0, NULL); /* absent: no tie is known */
    ss.L = malloc((n + 1) * sizeof *ss.L);
    ss.tps = malloc((n + 1) * sizeof *ss.tps);
    ss.sps = malloc((n + 1) * sizeof *ss.sps);
    ss.labels = malloc((n + 1) * sizeof *ss.labels);
    ss.color = malloc((n + 1) * sizeof *ss.color);
    ss.marker = malloc((n + 1) * sizeof *ss.marker);
    if (!first || !ss.L || !ss.tps || !ss.sps || !ss.labels || !ss.color || !ss.marker)
        abort();
    for (size_t i = 0; i < n; i++) {
        if (p[i].ok && p[i].prompt >= 0) {
            ss.L[ss.nl++] = p[i].prompt;
            size_t k = ss.ns;
            if (intern(ss.labels, &ss.ns, p[i].label) == k && ss.ns > k)
                first[k] = &p[i];
        }
        if (p[i].tp > 0 && p[i].sp > 0 && p[i].prompt >= 0) {
            ss.tps[ss.ntp++] = p[i].tp;
            ss.sps[ss.nsp++] = p[i].sp;
        }
    }
    ss.nl = distinct_ll(ss.L, ss.nl);
    ss.ntp = distinct_ll(ss.tps, ss.ntp);
    ss.nsp = distinct_ll(ss.sps, ss.nsp);
    assign_styles(&ss, first);
    plot_figset fs;
    int rc = plot_dir_open(dir, &fs, err);
    if (rc == 0)
        sweep_what(dir, p, n, fs.what, sizeof fs.what);
    if (rc == 0 && ss.nl > 1)
        rc = plot_strategies(&fs, &ss, err);
    if (rc == 0 && ss.nl == 1)
        rc = plot_bars(&fs, &ss, err);
    if (rc == 0 && ss.nl > 0 && ss.ntp > 0)
        rc = plot_heatmaps(&fs, &ss, err);
    if (rc == 0 && ss.nl > 1)
        rc = plot_crossover(&fs, &ss, err);
    if (rc == 0 && ss.nl > 0)
        rc = plot_paretos(&fs, &ss, err);
    char heading[700];
    snprintf(heading, sizeof heading, "cpsim %s", fs.what);
    if (rc == 0)
        rc = plot_draw(&fs, heading, err);
    plot_figset_free(&fs);
    json_decref(ss.errs);
    free(first);
    free(ss.L);
    free(ss.tps);
    free(ss.sps);
    free(ss.labels);
    free(ss.color);
    free(ss.marker);
    return rc;
}
