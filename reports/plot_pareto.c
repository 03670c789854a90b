/* plot_pareto: per prompt length, TTFT against peak memory of every point of
 * the sweep, in its strategy's colour and marker, and the Pareto front of
 * the points that fit (no other point that fits is both faster and
 * smaller) as a staircase with each front point named (see plot.h). */
#include "reports/plot_fig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_front(const void *a, const void *b)
{
    const plot_point *x = *(const plot_point *const *)a, *y = *(const plot_point *const *)b;
    if (x->peak_bytes != y->peak_bytes)
        return x->peak_bytes < y->peak_bytes ? -1 : 1;
    if (x->ttft_s != y->ttft_s)
        return x->ttft_s < y->ttft_s ? -1 : 1;
    return x->index - y->index;
}

/* The front at L into f (by peak memory, ascending; TTFT falls along it);
 * returns its length. */
static size_t front_of(const plot_sweepset *ss, long long L, const plot_point **f)
{
    size_t n = 0;
    for (size_t i = 0; i < ss->n; i++)
        if (ss->p[i].ok && !ss->p[i].oom && ss->p[i].prompt == L)
            f[n++] = &ss->p[i];
    qsort(f, n, sizeof *f, cmp_front);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || f[i]->ttft_s < f[k - 1]->ttft_s)
            f[k++] = f[i];
    return k;
}

/* Whether the points at L differ in min_tokens (the front's names then say it). */
static int varies_min_tokens(const plot_sweepset *ss, long long L)
{
    long long seen = -2;
    for (size_t i = 0; i < ss->n; i++) {
        if (!ss->p[i].ok || ss->p[i].prompt != L)
            continue;
        if (seen != -2 && ss->p[i].min_tokens != seen)
            return 1;
        seen = ss->p[i].min_tokens;
    }
    return 0;
}

/* At most this many strategies out of memory are named on a picture; more
 * would cover the points. */
#define PARETO_OOM_NAMES 12

/* Each strategy with points out of memory at L named (in red, tags from
 * `tag` on) at the fastest of them; returns how many were not (past
 * PARETO_OOM_NAMES). */
static size_t oom_names(FILE *b, const plot_sweepset *ss, long long L, size_t tag, double mid)
{
    size_t n = 0, more = 0;
    for (size_t k = 0; k < ss->ns; k++) {
        const plot_point *best = NULL;
        for (size_t i = 0; i < ss->n; i++) {
            const plot_point *p = &ss->p[i];
            if (p->ok && p->oom && p->prompt == L && strcmp(p->label, ss->labels[k]) == 0 &&
                (!best || p->ttft_s < best->ttft_s))
                best = p;
        }
        if (!best)
            continue;
        if (n == PARETO_OOM_NAMES) {
            more++;
            continue;
        }
        char text[300];
        snprintf(text, sizeof text, "%s: out of memory", ss->labels[k]);
        fprintf(b, "set label %zu ", tag + n++);
        plot_gp_str(b, text);
        /* on the side of the point with more room (mid: the x axis' middle, GB) */
        int right = best->peak_bytes / 1e9 > mid;
        fprintf(b, " at %.6f,%.9g %s offset %s1.5,0 font \",8\" tc rgb \"#cc0000\" front\n",
                best->peak_bytes / 1e9, best->ttft_s, right ? "right" : "left", right ? "-" : "");
    }
    return more;
}

static int pareto(plot_figset *fs, const plot_sweepset *ss, long long L, const plot_point **f,
                  cp_err *err)
{
    char name[64];
    snprintf(name, sizeof name, "pareto-%lld", L);
    size_t nf = front_of(ss, L, f);
    double lo_m = INFINITY, hi_m = 0, lo_t = INFINITY, hi_t = 0, cap = 0;
    int any_oom = 0;
    rep_file rf;
    int rc = plot_data_open(fs, name, &rf, err);
    for (size_t k = 0; rc == 0 && k < ss->ns; k++) {
        fprintf(rf.f, "%s# %s: peak_GB ttft_s oom index min_tokens\n", k ? "\n\n" : "",
                ss->labels[k]);
        for (size_t i = 0; i < ss->n; i++) {
            const plot_point *p = &ss->p[i];
            if (!p->ok || p->prompt != L || strcmp(p->label, ss->labels[k]) != 0)
                continue;
            fprintf(rf.f, "%.6f %.9g %d %d %lld\n", p->peak_bytes / 1e9, p->ttft_s, p->oom,
                    p->index, p->min_tokens);
            lo_m = fmin(lo_m, p->peak_bytes / 1e9);
            hi_m = fmax(hi_m, p->peak_bytes / 1e9);
            lo_t = fmin(lo_t, p->ttft_s);
            hi_t = fmax(hi_t, p->ttft_s);
            cap = fmax(cap, p->capacity_bytes / 1e9);
            any_oom |= p->oom;
        }
    }
    if (rc == 0) {
        fprintf(rf.f, "\n\n# Pareto front of the points that fit: peak_GB ttft_s index\n");
        for (size_t i = 0; i < nf; i++)
            fprintf(rf.f, "%.6f %.9g %d\n", f[i]->peak_bytes / 1e9, f[i]->ttft_s, f[i]->index);
        rc = rep_close(&rf, 1, err);
    }
    if (rc != 0 || !(hi_m > 0))
        return rc;
    /* the capacity line when it is near the points or something ran out of it */
    double xmax = hi_m * 1.1;
    int show_cap = any_oom || cap <= xmax * 1.3;
    if (show_cap)
        xmax = fmax(xmax, cap * 1.05);
    size_t entries = ss->ns + 1 + (size_t)any_oom + (size_t)show_cap;
    /* the front's names go under the plot, a line (~14 px) each */
    int h = PLOT_HEIGHT + 14 * (int)(nf + 1);
    int w = plot_width_for_key(entries, h);
    char title[128];
    snprintf(title, sizeof title, "TTFT against peak memory, prompt of %lld tokens", L);
    plot_figure *fg = plot_fig_add(fs, name, name, title, w, h);
    snprintf(fg->desc, sizeof fg->desc, "At %lld prompt tokens, every point's TTFT against its "
             "peak memory in its strategy's colour and marker; the Pareto front of the points "
             "that fit (none faster and smaller) joined and named%s", L,
             any_oom ? "; out-of-memory points crossed, each such strategy named at its "
                       "fastest" : "");
    FILE *b = plot_fig_body(fs, fg, "set title", "TTFT against peak memory, prompt of %lld "
                            "tokens%s", L, show_cap ? "" : " (every point far below the capacity)");
    fprintf(b, "set xlabel \"peak memory per GPU (GB)\"\nset ylabel \"TTFT (s)\"\nset grid\n"
               "set xrange [%.6g:%.6g]\n%s", fmax(0, lo_m - (xmax - lo_m) * 0.08), xmax,
            hi_t > 10 * lo_t ? "set logscale y\n" : "");
    if (hi_t > 10 * lo_t)
        fprintf(b, "set yrange [%.6g:%.6g]\n", lo_t / 1.3, hi_t * 1.3);
    else
        fprintf(b, "set yrange [%.6g:%.6g]\n", fmax(0, lo_t - (hi_t - lo_t) * 0.15 - lo_t * 0.02),
                hi_t + (hi_t - lo_t) * 0.15 + hi_t * 0.02);
    plot_key_right(b, h);
    /* the front's points numbered in the plot, named under it */
    for (size_t i = 0; i < nf; i++)
        fprintf(b, "set label %zu \"%zu\" at %.6f,%.9g left offset 0.9,0.9 font \",9\" "
                   "front\n", i + 1, i + 1, f[i]->peak_bytes / 1e9, f[i]->ttft_s);
    int mt = varies_min_tokens(ss, L);
    char *names = NULL;
    size_t nlen = 0;
    FILE *m = open_memstream(&names, &nlen);
    if (!m)
        abort();
    fputs("Pareto front of the points that fit, from the least memory:", m);
    for (size_t i = 0; i < nf; i++) {
        fprintf(m, "\n%zu: %s", i + 1, f[i]->label);
        if (mt)
            fprintf(m, " min_tokens=%lld", f[i]->min_tokens);
        fprintf(m, ": %.2f GB, %.4g s", f[i]->peak_bytes / 1e9, f[i]->ttft_s);
    }
    fclose(m);
    fprintf(b, "set bmargin %zu\nset label %zu ", nf + 5, nf + 1);
    plot_gp_str(b, names);
    fprintf(b, " at screen 0.01, screen %.4f left font \",8\"\n",
            (14.0 * (double)(nf + 1) + 4) / h);
    free(names);
    if (show_cap)
        fprintf(b, "set arrow 1 from %.6f, graph 0 to %.6f, graph 1 nohead dt 2 lw 2 "
                   "lc rgb \"#cc0000\"\n", cap, cap);
    double xlo = fmax(0, lo_m - (xmax - lo_m) * 0.08);
    size_t unnamed = any_oom ? oom_names(b, ss, L, nf + 2, (xlo + xmax) / 2) : 0;
    if (unnamed) {
        size_t len = strlen(fg->desc);
        snprintf(fg->desc + len, sizeof fg->desc - len, " (%zu more strategies out of memory "
                 "not named: %s.dat has them)", unnamed, name);
    }
    /* the crosses first: the strategy's point stays visible on its cross */
    fputs("plot", b);
    if (any_oom)
        for (size_t k = 0; k < ss->ns; k++)
            fprintf(b, "%s \"%s.dat\" index %zu using 1:($3 > 0 ? $2 : 1/0) with points "
                       "pt 2 ps 2.4 lw 2 lc rgb \"#cc0000\" %s", k ? ", \\\n   " : "", name, k,
                    k ? "notitle" : "title \"out of memory\"");
    for (size_t k = 0; k < ss->ns; k++) {
        fprintf(b, "%s \"%s.dat\" index %zu using 1:2 with points lc rgb \"%s\" pt %d ps 1.4 "
                   "title ", k || any_oom ? ", \\\n    " : "", name, k, plot_colors[ss->color[k]],
                ss->marker[k]);
        plot_gp_str(b, ss->labels[k]);
    }
    fprintf(b, ", \\\n    \"%s.dat\" index %zu using 1:2 with steps lw 2 lc rgb \"#000000\" "
               "title \"Pareto front (fits)\", \\\n    \"%s.dat\" index %zu using 1:2 with "
               "points pt 6 ps 2.4 lw 1.5 lc rgb \"#000000\" notitle", name, ss->ns, name,
            ss->ns);
    if (show_cap)
        fprintf(b, ", \\\n    NaN with lines dt 2 lw 2 lc rgb \"#cc0000\" title \"capacity "
                   "%.1f GB\"", cap);
    fputc('\n', b);
    fclose(b);
    return 0;
}

int plot_paretos(plot_figset *fs, const plot_sweepset *ss, cp_err *err)
{
    const plot_point **f = malloc((ss->n + 1) * sizeof *f);
    if (!f)
        abort();
    int rc = 0;
    for (size_t q = 0; rc == 0 && q < ss->nl; q++)
        rc = pareto(fs, ss, ss->L[q], f, err);
    free(f);
    return rc;
}
