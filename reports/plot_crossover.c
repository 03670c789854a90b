/* plot_crossover: where a split prefill step starts to beat the copied one:
 * per exchange and TP x SP shape with SP (the rows of split.csv), the best
 * split and the best copied TTFT that fit against prompt length, and the
 * crossing the sweep's tables found (split.csv: the suggested min_tokens)
 * marked.  The copied step of an exchange that never copies is that of
 * `none`, as the tables take it (see plot.h). */
#include "reports/plot_fig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Up to 16 panels: a 4 x 4 grid stays legible on the canvas. */
#define CROSS_MAX 16

typedef struct pair {
    char exchange[64], shape[256];
    long long first_win, suggest;    /* from split.csv; -1: none */
    char note[128];
} pair;

/* The next CSV field of *s (quotes undone) into buf; 0 at the end of the line. */
static int csv_next(const char **s, char *buf, size_t len)
{
    const char *p = *s;
    size_t k = 0;
    if (!*p || *p == '\n' || *p == '\r')
        return 0;
    int quoted = *p == '"';
    p += quoted;
    for (; *p; p++) {
        if (quoted && *p == '"' && p[1] == '"')
            p++;
        else if (quoted && *p == '"') {
            quoted = 0;
            continue;
        } else if (!quoted && (*p == ',' || *p == '\n' || *p == '\r'))
            break;
        if (k + 1 < len)
            buf[k++] = *p;
    }
    buf[k] = '\0';
    *s = *p == ',' ? p + 1 : p;
    return 1;
}

/* The rows of split.csv; -1 when the file is missing. */
static int read_split(const char *dir, pair *pr, int most)
{
    char path[4200], line[2048], first[32], suggest[32], compared[32];
    snprintf(path, sizeof path, "%s/split.csv", dir);
    FILE *in = fopen(path, "r");
    if (!in)
        return -1;
    int n = 0;
    for (int ln = 0; fgets(line, sizeof line, in) && n < most; ln++) {
        const char *s = line;
        pair *p = &pr[n];
        int ok = csv_next(&s, p->exchange, sizeof p->exchange) &&
                 csv_next(&s, p->shape, sizeof p->shape) && csv_next(&s, first, sizeof first) &&
                 csv_next(&s, suggest, sizeof suggest) &&
                 csv_next(&s, compared, sizeof compared) && csv_next(&s, p->note, sizeof p->note);
        if (ln == 0 || !ok)
            continue;
        p->first_win = atoll(first);
        p->suggest = atoll(suggest);
        n++;
    }
    fclose(in);
    return n;
}

/* The pairs from the points when split.csv is missing (nothing marked). */
static int pairs_of_points(const plot_sweepset *ss, pair *pr, int most)
{
    int n = 0;
    for (size_t i = 0; i < ss->n && n < most; i++) {
        const plot_point *p = &ss->p[i];
        if (p->split != 1)
            continue;
        int k = 0;
        while (k < n && (strcmp(pr[k].exchange, p->exchange) || strcmp(pr[k].shape, p->shape)))
            k++;
        if (k < n)
            continue;
        pr[n] = (pair){.first_win = -1, .suggest = -1};
        snprintf(pr[n].exchange, sizeof pr[n].exchange, "%s", p->exchange);
        snprintf(pr[n].shape, sizeof pr[n].shape, "%s", p->shape);
        n++;
    }
    return n;
}

/* The best TTFT at L of the pair's split (1) or copied (0) points: of those
 * that fit (*oom 0), else of those out of memory (*oom 1); NAN: none. */
static double best_of(const plot_sweepset *ss, const char *exchange, const char *shape,
                      long long L, int split, int *oom)
{
    double fit = NAN, out = NAN;
    for (size_t i = 0; i < ss->n; i++) {
        const plot_point *p = &ss->p[i];
        if (!p->ok || p->prompt != L || p->split != split || strcmp(p->shape, shape) != 0 ||
            strcmp(p->exchange, exchange) != 0)
            continue;
        if (!p->oom && !(p->ttft_s >= fit))
            fit = p->ttft_s;
        if (p->oom && !(p->ttft_s >= out))
            out = p->ttft_s;
    }
    *oom = isnan(fit) && !isnan(out);
    return isnan(fit) ? out : fit;
}

static void put_num(FILE *f, double v)
{
    if (isnan(v))
        fputs(" NaN", f);
    else
        fprintf(f, " %.9g", v);
}

int plot_crossover(plot_figset *fs, const plot_sweepset *ss, cp_err *err)
{
    pair pr[CROSS_MAX];
    int from_csv = 1, n = read_split(ss->dir, pr, CROSS_MAX);
    if (n < 0) {
        from_csv = 0;
        n = pairs_of_points(ss, pr, CROSS_MAX);
    }
    if (n == 0)
        return 0;
    rep_file rf;
    int rc = plot_data_open(fs, "crossover", &rf, err);
    for (int k = 0; rc == 0 && k < n; k++) {
        fprintf(rf.f, "%s# %s, %s: prompt_tokens split_ttft_s copied_ttft_s split_oom "
                      "copied_oom (suggested min_tokens %lld)\n", k ? "\n\n" : "",
                pr[k].exchange, pr[k].shape, pr[k].suggest);
        for (size_t q = 0; q < ss->nl; q++) {
            int so, co;
            double s = best_of(ss, pr[k].exchange, pr[k].shape, ss->L[q], 1, &so);
            double c = best_of(ss, pr[k].exchange, pr[k].shape, ss->L[q], 0, &co);
            if (isnan(c))
                c = best_of(ss, "none", pr[k].shape, ss->L[q], 0, &co);
            if (isnan(s) && isnan(c))
                continue;
            fprintf(rf.f, "%lld", ss->L[q]);
            put_num(rf.f, s);
            put_num(rf.f, c);
            fprintf(rf.f, " %d %d\n", so, co);
        }
    }
    if (rc == 0)
        rc = rep_close(&rf, 1, err);
    if (rc != 0)
        return rc;
    plot_figure *f = plot_fig_add(fs, "crossover", "crossover",
                                  "split against copied prefill steps", PLOT_WIDTH, PLOT_HEIGHT);
    snprintf(f->desc, sizeof f->desc, "Per exchange and TP x SP shape, the best TTFT of a "
             "prefill step split over the SP group and of one copied to every SP rank, against "
             "prompt length; %s", from_csv ? "the dashed line is the min_tokens split.csv "
             "suggests (split wins from there on)" : "split.csv is missing: no crossing marked");
    char cmd[96];
    int rows = plot_multiplot(cmd, sizeof cmd, n);
    FILE *b = plot_fig_body(fs, f, cmd, "split against copied prefill steps");
    fprintf(b, "set logscale xy 2\nset xrange [%.6g:%.6g]\nset grid\nset format y \"%%g\"\n"
               "set key bottom right font \",8\" samplen 2\nset xtics font \",7\"\n",
            (double)ss->L[0] / 1.19, (double)ss->L[ss->nl - 1] * 1.19);
    plot_prompt_tics(b, ss->L, ss->nl);
    if (rows > 1)
        fputs("set ytics font \",7\"\n", b);
    for (int k = 0; k < n; k++) {
        char pt[600];
        if (snprintf(pt, sizeof pt, "%s, %s", pr[k].exchange, pr[k].shape) < 0)
            pt[0] = '\0';
        fputs("set title ", b);
        plot_gp_str(b, pt);
        fprintf(b, " font \",9\"\nset xlabel \"prompt tokens\" font \",8\"\n"
                   "set ylabel \"TTFT (s)\" font \",8\"\nunset arrow\nunset label\n");
        if (pr[k].suggest >= 0) {
            fprintf(b, "set arrow 1 from %lld, graph 0 to %lld, graph 1 nohead dt 2 lw 2 "
                       "lc rgb \"#cc0000\"\n", pr[k].suggest, pr[k].suggest);
            fprintf(b, "set label 1 \"min_tokens %s%lld\" at %lld, graph 0.9 left offset "
                       "0.5,0 font \",8\" tc rgb \"#cc0000\"\n",
                    strstr(pr[k].note, "every length") ? "<= " : "", pr[k].suggest,
                    pr[k].suggest);
        } else if (from_csv) {
            fputs("set label 1 \"copied wins throughout\" at graph 0.5, graph 0.9 center "
                  "font \",8\" tc rgb \"#cc0000\"\n", b);
        }
        fprintf(b, "plot \"crossover.dat\" index %d using 1:($4 > 0 ? 1/0 : $2) with "
                   "linespoints lw 2 pt 7 ps 0.8 lc rgb \"#4477aa\" title \"split\", \\\n"
                   "    \"\" index %d using 1:($5 > 0 ? 1/0 : $3) with linespoints lw 2 dt 2 "
                   "pt 5 ps 0.8 lc rgb \"#ee7733\" title \"copied\", \\\n"
                   "    \"\" index %d using 1:($4 > 0 ? $2 : ($5 > 0 ? $3 : 1/0)) with points "
                   "pt 2 ps 1.6 lw 2 lc rgb \"#cc0000\" title \"out of memory\"\n", k, k, k);
    }
    fclose(b);
    return 0;
}
