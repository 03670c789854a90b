/* plot_serving: the pictures of a serving run (summary.json "mode":
 * "serving", sim/serve), drawn beside its timeline and memory panels:
 *   ttft-cdf  the empirical CDF of each request's TTFT (arrival to first
 *             token, the requests' ttft_s) per request class (the requests'
 *             name; "(unnamed)" for requests without one when others have
 *             one), and of all requests when there are 2+ classes; log x in
 *             seconds; requests without a first token (ttft_s null) left
 *             out and counted in the key
 *   tpot-cdf  the same of each finished request's mean TPOT (tpot_s) over
 *             the requests with decode tokens; unfinished ones and those
 *             without decode tokens left out and counted in the key
 *   batch     from steps.csv, per replica (replica 0 alone, with a note,
 *             past 4 replicas): the decodes and prefills of each step
 *             stacked over simulated time, the tokens per step on the right
 *             axis
 * The p50 and p99 in the keys are nearest-rank, as summary.json's serving
 * figures (sim/serve/serve_report.c): the value at rank ceil(p n) of the n
 * sorted values; the CDFs cross the dotted p50 and p99 lines at them. */
#include "reports/plot_fig.h"
#include "base/grow.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- steps.csv ------------------------------------------------------------------------ */

int plot_read_steps(const char *dir, plot_steps *st, cp_err *err)
{
    memset(st, 0, sizeof *st);
    char path[4200];
    snprintf(path, sizeof path, "%s/steps.csv", dir);
    FILE *f = fopen(path, "r");
    if (!f && errno == ENOENT)
        return 1;
    if (!f)
        return cp_fail(err, CP_EXIT_INPUT, "%s: cannot read: %s", path, strerror(errno));
    static const char head[] = "step,replica,t0_s,t1_s,decodes,prefills,tokens";
    char line[1024];
    int rc = 0;
    if (!fgets(line, sizeof line, f) || strncmp(line, head, sizeof head - 1) != 0)
        rc = cp_fail(err, CP_EXIT_INPUT, "%s:1: not a cpsim steps.csv header (%s...)", path,
                     head);
    size_t cap = 0;
    for (int ln = 2; rc == 0 && fgets(line, sizeof line, f); ln++) {
        st->v = cp_grow(st->v, &cap, (size_t)st->n + 1, sizeof *st->v);
        plot_step *s = &st->v[st->n];
        if (sscanf(line, "%d,%d,%lf,%lf,%d,%d,%lld", &s->step, &s->replica, &s->t0, &s->t1,
                   &s->decodes, &s->prefills, &s->tokens) != 7 || s->replica < 0 ||
            !(s->t1 >= s->t0))
            rc = cp_fail(err, CP_EXIT_INPUT, "%s:%d: expected step,replica,t0_s,t1_s,decodes,"
                         "prefills,tokens with t1_s >= t0_s", path, ln);
        else
            st->n++;
    }
    fclose(f);
    if (rc != 0) {
        free(st->v);
        memset(st, 0, sizeof *st);
    }
    return rc;
}

/* ---- the CDFs ------------------------------------------------------------------------- */

enum { SV_TTFT, SV_TPOT };

/* Why a request has no value on a CDF. */
enum { SV_OK, SV_NO_FIRST, SV_UNFINISHED, SV_NO_DECODE, SV_ZERO, SV_NWHY };

/* One line of a CDF: a request class, or all requests. */
typedef struct sv_line {
    const char *name;
    int nreq;              /* the class's requests */
    double *v;             /* the values drawn (s), sorted */
    int nv;
    int left[SV_NWHY];     /* requests left out, by why (SV_OK unused) */
} sv_line;

/* The class names of the requests: serving.by_name's order (the workload's),
 * then names not there, then "(unnamed)" when some requests have a name and
 * some not; none has a name: one class.  *cls[i] is request i's class. */
static int sv_classes(json_t *summary, const char ***names, int **cls)
{
    json_t *reqs = json_object_get(summary, "requests");
    json_t *by = json_object_get(json_object_get(summary, "serving"), "by_name");
    size_t n = json_array_size(reqs);
    /* at most every by_name class, every request's own and "(unnamed)" */
    const char **nm = malloc((json_object_size(by) + n + 1) * sizeof *nm);
    int *c = malloc((n + 1) * sizeof *c);
    if (!nm || !c)
        abort();
    int nc = 0, unnamed = 0;
    const char *key;
    json_t *val;
    json_object_foreach(by, key, val)
        nm[nc++] = key;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_object_get(json_array_get(reqs, i), "name"));
        int k = 0;
        while (s && k < nc && strcmp(nm[k], s) != 0)
            k++;
        if (s && k == nc)
            nm[nc++] = s;
        c[i] = s ? k : -1;
        unnamed += !s;
    }
    /* by_name classes no request has stay: their lines say "none of 0" */
    if (nc == 0) {
        nm[nc++] = "all";
    } else if (unnamed) {
        nm[nc++] = "(unnamed)";
    }
    for (size_t i = 0; i < n; i++)
        if (c[i] < 0)
            c[i] = nc - 1;
    *names = nm;
    *cls = c;
    return nc;
}

/* Request q's value on the CDF of metric m (s), or why it has none. */
static int sv_value(json_t *q, int m, double *v)
{
    json_t *x;
    if (m == SV_TTFT) {
        x = json_object_get(q, "ttft_s");
        if (!json_is_number(x))
            return SV_NO_FIRST;
    } else {
        if (!json_is_true(json_object_get(q, "finished")))
            return SV_UNFINISHED;
        if (json_integer_value(json_object_get(q, "decode_tokens")) <= 0)
            return SV_NO_DECODE;
        x = json_object_get(q, "tpot_s");
    }
    *v = json_number_value(x);
    /* a log axis has no 0 */
    return *v > 0 ? SV_OK : SV_ZERO;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The nearest-rank p-quantile of the sorted v[0..n), n > 0. */
static double sv_pct(const double *v, int n, double p)
{
    int k = (int)ceil(p * (double)n) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

/* A duration for a key: "618 ms", "1.23 s", "950 us". */
static void sv_dur(double s, char *buf, size_t len)
{
    if (s >= 1)
        snprintf(buf, len, "%.3g s", s);
    else if (s >= 1e-3)
        snprintf(buf, len, "%.3g ms", s * 1e3);
    else
        snprintf(buf, len, "%.3g us", s * 1e6);
}

static const char *const sv_why[SV_NWHY] = {"", "without a first token", "unfinished",
                                            "without decode tokens", "at 0 s"};

/* "short: 85 of 88 requests, p50 159 ms, p99 618 ms (3 without a first token)" */
static void sv_key(const sv_line *l, char *buf, size_t len)
{
    size_t off;
    if (l->nv > 0) {
        char p50[32], p99[32];
        sv_dur(sv_pct(l->v, l->nv, 0.50), p50, sizeof p50);
        sv_dur(sv_pct(l->v, l->nv, 0.99), p99, sizeof p99);
        off = (size_t)snprintf(buf, len, "%s: %d of %d requests, p50 %s, p99 %s", l->name,
                               l->nv, l->nreq, p50, p99);
    } else {
        off = (size_t)snprintf(buf, len, "%s: none of %d requests", l->name, l->nreq);
    }
    int first = 1;
    for (int w = SV_OK + 1; w < SV_NWHY && off < len; w++) {
        if (!l->left[w])
            continue;
        off += (size_t)snprintf(buf + off, len - off, "%s%d %s", first ? " (" : ", ",
                                l->left[w], sv_why[w]);
        first = 0;
    }
    if (!first && off < len)
        snprintf(buf + off, len - off, ")");
}

/* What a CDF picture draws: its lines, the requests left out by why, and
 * the span of the values drawn (s). */
typedef struct sv_cdfset {
    int m;                 /* SV_TTFT, SV_TPOT */
    const char *stem;
    sv_line *l;
    int nl, nc;            /* lines; classes (nl > nc: the last line is all) */
    size_t nreq;
    int left[SV_NWHY];
    double lo, hi;
} sv_cdfset;

/* A step of about x from 1, 2, 5 times a power of ten. */
static double sv_nice(double x)
{
    double p = pow(10, floor(log10(x)));
    return x / p <= 1 ? p : x / p <= 2 ? 2 * p : x / p <= 5 ? 5 * p : 10 * p;
}

/* x tics of a log axis over [lo, hi] (0 < lo <= hi, s) that gnuplot's own,
 * at powers of ten, leave bare when the span is under a decade or two: a
 * span of less than 3x gets linear 1-2-5 steps (~6 tics); a wider one powers
 * of ten times 1, or 1, 2, 5, or 1..9, the first with 4 tics or more. */
static void sv_log_tics(FILE *b, double lo, double hi)
{
    double t[64];
    int n = 0;
    if (hi < 3 * lo) {
        double step = sv_nice(hi > lo ? (hi - lo) / 6 : lo / 10);
        for (double k = ceil(lo / step); k * step <= hi * (1 + 1e-9) && n < 64; k++)
            t[n++] = k * step;
    } else {
        static const double mant[3][9] = {{1}, {1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
        static const int nm[3] = {1, 3, 9};
        for (int set = 0; set < 3 && n < 4; set++) {
            n = 0;
            for (int e = (int)floor(log10(lo)); e <= (int)ceil(log10(hi)); e++)
                for (int i = 0; i < nm[set] && n < 64; i++) {
                    double v = mant[set][i] * pow(10, e);
                    if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9))
                        t[n++] = v;
                }
        }
    }
    if (n == 0)
        return;   /* gnuplot's */
    fputs("set xtics (", b);
    for (int i = 0; i < n; i++)
        fprintf(b, "%s\"%.6g\" %.9g", i ? ", " : "", t[i], t[i]);
    fputs(")\n", b);
}

/* The line's colour: the class's in both CDFs, skipping the palette's
 * black, which is all's. */
static const char *sv_color(const sv_cdfset *c, int k)
{
    return k == c->nc ? "#000000" : plot_colors[(k + (k >= 6)) % PLOT_NCOLORS];
}

/* The data file and the figure of a CDF with at least one value. */
static int sv_cdf_draw(plot_figset *fs, const sv_cdfset *c, cp_err *err)
{
    const char *what = c->m == SV_TTFT ? "TTFT" : "TPOT";
    rep_file rf;
    if (plot_data_open(fs, c->stem, &rf, err) != 0)
        return -1;
    fprintf(rf.f, "# %s CDF per request class, one block (gnuplot index) per line drawn: "
                  "seconds, then the fraction of the line's values at or below it; a first row "
                  "at 0 starts the steps\n", what);
    int *block = malloc((size_t)c->nl * sizeof *block), nb = 0;
    if (!block)
        abort();
    for (int k = 0; k < c->nl; k++) {
        const sv_line *l = &c->l[k];
        block[k] = -1;
        if (l->nv == 0)
            continue;
        char key[512];
        sv_key(l, key, sizeof key);
        fprintf(rf.f, "%s# %s\n%.9g 0\n", nb ? "\n\n" : "", key, l->v[0]);
        for (int i = 0; i < l->nv; i++)
            fprintf(rf.f, "%.9g %.9g\n", l->v[i], (double)(i + 1) / l->nv);
        block[k] = nb++;
    }
    int rc = rep_close(&rf, 1, err);
    if (rc == 0) {
        plot_figure *f = plot_fig_add(fs, c->stem, c->stem, c->m == SV_TTFT
                                      ? "TTFT per request class (CDF)"
                                      : "TPOT per request class (CDF)", PLOT_WIDTH, PLOT_HEIGHT);
        const char *all = c->nl > c->nc ? " and of all requests" : "";
        if (c->m == SV_TTFT)
            snprintf(f->desc, sizeof f->desc, "The empirical CDF of each request's time to "
                     "first token (from its arrival) per request class%s; log x axis in "
                     "seconds; requests without a first token (%d) are left out and counted in "
                     "the key; dotted lines at p50 and p99 (nearest rank, as summary.json's "
                     "serving figures)", all, c->left[SV_NO_FIRST]);
        else
            snprintf(f->desc, sizeof f->desc, "The empirical CDF of each finished request's "
                     "mean time per output token after the first (tpot_s) per request class%s; "
                     "log x axis in seconds; unfinished requests (%d) and those without decode "
                     "tokens (%d) are left out and counted in the key; dotted lines at p50 and "
                     "p99 (nearest rank, as summary.json's serving figures)", all,
                     c->left[SV_UNFINISHED], c->left[SV_NO_DECODE]);
        FILE *b = plot_fig_body(fs, f, "set title", "%s per request class: empirical CDF of "
                                "%zu requests", what, c->nreq);
        /* 5 % of the span (in decades) either side; one value: 20 % */
        double pad = c->hi > c->lo ? pow(c->hi / c->lo, 0.05) : 1.2;
        fprintf(b, "set logscale x 10\nset xrange [%.9g:%.9g]\nset format x \"%%g\"\n"
                   "set xlabel \"%s (s, log scale)\"\n"
                   "set ylabel \"fraction of the line's requests\"\nset yrange [0:1.04]\n"
                   "set ytics 0,0.1,1\nset grid xtics ytics lc rgb \"#dddddd\"\n"
                   "set key outside below left Left reverse vertical font \",9\" height 1\n",
                c->lo / pad, c->hi * pad,
                c->m == SV_TTFT ? "time to first token" : "mean time per output token");
        sv_log_tics(b, c->lo / pad, c->hi * pad);
        for (int q = 0; q < 2; q++) {
            const char *y = q ? "0.99" : "0.5";
            fprintf(b, "set arrow %d from graph 0, first %s to graph 1, first %s nohead dt 3 "
                       "lc rgb \"#888888\"\nset label %d \"%s\" at graph 0.005, first %s "
                       "offset 0,0.6 font \",8\" tc rgb \"#666666\"\n", q + 1, y, y, q + 1,
                    q ? "p99" : "p50", y);
        }
        fputs("plot", b);
        for (int k = 0; k < c->nl; k++) {
            char key[512];
            sv_key(&c->l[k], key, sizeof key);
            fputs(k ? ", \\\n    " : " ", b);
            if (block[k] < 0)   /* nothing to draw: named in the key only */
                fputs("keyentry with lines lc rgb \"#ffffff\" title ", b);
            else
                fprintf(b, "\"%s.dat\" index %d using 1:2 with steps lw %s lc rgb \"%s\"%s "
                           "title ", c->stem, block[k], k == c->nc ? "2.5" : "2",
                        sv_color(c, k), k == c->nc ? " dt 2" : "");
            plot_gp_str(b, key);
        }
        fputc('\n', b);
        fclose(b);
    }
    free(block);
    return rc;
}

/* The picture of metric m: one line per class and, with 2+ classes, all;
 * left out with a note when no request has a value. */
static int sv_cdf(plot_figset *fs, json_t *summary, int m, cp_err *err)
{
    sv_cdfset c = {.m = m, .stem = m == SV_TTFT ? "ttft-cdf" : "tpot-cdf", .lo = INFINITY,
                   .hi = -INFINITY};
    json_t *reqs = json_object_get(summary, "requests");
    c.nreq = json_array_size(reqs);
    const char **names;
    int *cls;
    c.nc = sv_classes(summary, &names, &cls);
    c.nl = c.nc >= 2 ? c.nc + 1 : c.nc;
    c.l = calloc((size_t)c.nl, sizeof *c.l);
    if (!c.l)
        abort();
    for (int k = 0; k < c.nl; k++) {
        c.l[k].name = k < c.nc ? names[k] : "all";
        c.l[k].v = malloc((c.nreq + 1) * sizeof *c.l[k].v);
        if (!c.l[k].v)
            abort();
    }
    int drawn = 0;
    for (size_t i = 0; i < c.nreq; i++) {
        double v = 0;
        int why = sv_value(json_array_get(reqs, i), m, &v);
        c.left[why]++;
        for (int k = 0; k < c.nl; k++) {
            if (k < c.nc && k != cls[i])
                continue;
            sv_line *l = &c.l[k];
            l->nreq++;
            if (why == SV_OK)
                l->v[l->nv++] = v;
            else
                l->left[why]++;
        }
        if (why == SV_OK) {
            c.lo = fmin(c.lo, v);
            c.hi = fmax(c.hi, v);
            drawn++;
        }
    }
    for (int k = 0; k < c.nl; k++)
        qsort(c.l[k].v, (size_t)c.l[k].nv, sizeof *c.l[k].v, cmp_double);
    int rc = 0;
    if (drawn > 0)
        rc = sv_cdf_draw(fs, &c, err);
    else
        plot_note(fs, "%s: not drawn: %s", c.stem, m == SV_TTFT
                  ? "no request got a first token"
                  : "no finished request has decode tokens");
    for (int k = 0; k < c.nl; k++)
        free(c.l[k].v);
    free(c.l);
    free(names);
    free(cls);
    return rc;
}

/* ---- batch composition ------------------------------------------------------------- */

/* Panels past this many replicas: replica 0 alone. */
#define SV_MAX_REPLICAS 4

static int cmp_step(const void *a, const void *b)
{
    const plot_step *x = a, *y = b;
    return (x->t0 > y->t0) - (x->t0 < y->t0);
}

/* A row of batch.dat: t_s, decodes, decodes + prefills, tokens (NaN:
 * idle, a gap in the tokens line). */
static void sv_row(FILE *f, double t, const plot_step *s)
{
    if (s)
        fprintf(f, "%.9f %d %d %lld\n", t, s->decodes, s->decodes + s->prefills, s->tokens);
    else
        fprintf(f, "%.9f 0 0 NaN\n", t);
}

static int sv_batch(plot_figset *fs, const plot_run *run, cp_err *err)
{
    const plot_steps *st = &run->steps;
    if (st->n == 0) {
        plot_note(fs, "batch: not drawn: the folder has no steps.csv, or it holds no step");
        return 0;
    }
    int nrep = 0;
    for (size_t i = 0; i < st->n; i++)
        if (st->v[i].replica + 1 > nrep)
            nrep = st->v[i].replica + 1;
    int shown = nrep <= SV_MAX_REPLICAS ? nrep : 1;
    double end = json_number_value(json_object_get(run->summary, "makespan_s"));
    plot_step *v = malloc(st->n * sizeof *v);
    int *nsteps = calloc((size_t)shown, sizeof *nsteps);
    if (!v || !nsteps)
        abort();
    rep_file rf;
    int rc = plot_data_open(fs, "batch", &rf, err);
    int ymax = 1;
    long long tmin = 0, tmax = 0, tsum = 0, rsum = 0;
    size_t nshown = 0;
    for (int r = 0; rc == 0 && r < shown; r++) {
        size_t n = 0;
        for (size_t i = 0; i < st->n; i++)
            if (st->v[i].replica == r)
                v[n++] = st->v[i];
        qsort(v, n, sizeof *v, cmp_step);
        nsteps[r] = (int)n;
        fprintf(rf.f, "%s# replica %d: %zu steps; t_s, decodes, decodes + prefills, tokens "
                      "(NaN: idle); a row at each step's start and end, zeros where the "
                      "replica was idle\n", r ? "\n\n" : "", r, n);
        double t = 0;
        for (size_t i = 0; i < n; i++) {
            /* idle before the step: zeros from the last end to its start */
            if (v[i].t0 > t + 1e-9) {
                sv_row(rf.f, t, NULL);
                sv_row(rf.f, v[i].t0, NULL);
            }
            sv_row(rf.f, v[i].t0, &v[i]);
            sv_row(rf.f, v[i].t1, &v[i]);
            t = v[i].t1;
            int req = v[i].decodes + v[i].prefills;
            ymax = req > ymax ? req : ymax;
            if (v[i].tokens > 0 && (tmin == 0 || v[i].tokens < tmin))
                tmin = v[i].tokens;
            tmax = v[i].tokens > tmax ? v[i].tokens : tmax;
            tsum += v[i].tokens;
            rsum += req;
        }
        if (end > t + 1e-9) {
            sv_row(rf.f, t, NULL);
            sv_row(rf.f, end, NULL);
        }
        end = fmax(end, t);
        nshown += n;
    }
    if (rc == 0)
        rc = rep_close(&rf, 1, err);
    if (rc == 0) {
        int h = shown <= 2 ? PLOT_HEIGHT : 320 * shown;
        plot_figure *f = plot_fig_add(fs, "batch", "batch", "batch composition over time",
                                      PLOT_WIDTH, h);
        char more[128] = "", title[64] = "";
        if (shown < nrep)
            snprintf(more, sizeof more, ", replica 0 of %d shown (steps.csv holds every "
                     "replica's)", nrep);
        /* tokens span decades when prefills and decodes mix: a log axis */
        int logy2 = tmin > 0 && tmax > 50 * tmin;
        snprintf(f->desc, sizeof f->desc, "Per replica, the requests each step carried over "
                 "simulated time, stacked: decodes (blue) and prefills (orange, a prefill chunk "
                 "counting as one), and the tokens the step computed (black, right axis%s); "
                 "zero where the replica was idle; from steps.csv: %zu steps on %d "
                 "replica%s%s; %.1f requests and %.0f tokens per step on average, the largest "
                 "step %lld tokens", logy2 ? ", log scale" : "", st->n, nrep,
                 nrep > 1 ? "s" : "", more, nshown ? (double)rsum / (double)nshown : 0,
                 nshown ? (double)tsum / (double)nshown : 0, tmax);
        char cmd[96];
        if (shown > 1)
            snprintf(cmd, sizeof cmd, "set multiplot layout %d,1 title", shown);
        else
            snprintf(cmd, sizeof cmd, "set title");
        if (shown == 1 && nrep > 1)   /* one panel: its replica in the figure's title */
            snprintf(title, sizeof title, " - replica 0 of %d: %d steps", nrep, nsteps[0]);
        FILE *b = plot_fig_body(fs, f, cmd, "batch composition over time%s", title);
        /* 15 % headroom keeps the tallest step clear of the key */
        fprintf(b, "set xlabel \"simulated time (s)\"\nset xrange [0:%.9f]\n"
                   "set ylabel \"requests in the step\"\nset yrange [0:%.3f]\n"
                   "set ytics 0,%g nomirror\nset format y \"%%g\"\n"
                   "set y2label \"tokens per step\"\nset y2tics\nset format y2 \"%%g\"\n",
                end, ymax * 1.15 + 0.5, ymax <= 10 ? 1 : sv_nice(ymax / 8.0));
        if (logy2)
            fprintf(b, "set logscale y2 10\nset y2range [%.3f:%.3f]\n", tmin / 2.0,
                    tmax * 4.0);
        else
            fprintf(b, "set y2range [0:%.3f]\n", tmax * 1.15 + 1);
        fputs("set style fill solid 1.0 noborder\nset grid xtics ytics lc rgb \"#dddddd\"\n"
              "set key outside below center horizontal font \",9\" height 1\n", b);
        for (int r = 0; r < shown; r++) {
            if (shown > 1) {
                char t[96];
                snprintf(t, sizeof t, "replica %d: %d steps", r, nsteps[r]);
                fputs("set title ", b);
                plot_gp_str(b, t);
                fputc('\n', b);
            }
            fprintf(b, "plot \"batch.dat\" index %d using 1:3 with filledcurves x1 "
                       "lc rgb \"#ee7733\" title \"prefills\", \\\n"
                       "    \"\" index %d using 1:2 with filledcurves x1 lc rgb \"#4477aa\" "
                       "title \"decodes\", \\\n"
                       "    \"\" index %d using 1:4 axes x1y2 with lines lw 1 "
                       "lc rgb \"#000000\" title \"tokens per step (right axis)\"\n", r, r, r);
        }
        fclose(b);
    }
    free(nsteps);
    free(v);
    return rc;
}

int plot_serving(plot_figset *fs, const plot_run *run, cp_err *err)
{
    if (sv_cdf(fs, run->summary, SV_TTFT, err) != 0)
        return -1;
    if (sv_cdf(fs, run->summary, SV_TPOT, err) != 0)
        return -1;
    return sv_batch(fs, run, err);
}
