/* plot_bars: a sweep of one prompt length as a grouped bar chart: TTFT per
 * strategy, bars grouped by TP x SP shape and coloured as in every sweep
 * picture, with peak memory beside it against the capacity; out-of-memory
 * bars hatched (see plot.h). */
#include "reports/plot_fig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "#4477aa" as the integer gnuplot's `rgb variable` reads */
static long rgb_of(const char *hex)
{
    return strtol(hex + 1, NULL, 16);
}

/* The legend: one entry per colour in use (an exchange when colours say
 * the exchange, else a strategy), then the marks and the capacity line. */
static void bar_keys(FILE *b, const plot_sweepset *ss, int any_oom, int best)
{
    int seen[PLOT_NCOLORS] = {0};
    for (size_t k = 0; k < ss->ns; k++) {
        if (seen[ss->color[k]])
            continue;
        seen[ss->color[k]] = 1;
        const plot_point *first = NULL;
        for (size_t i = 0; i < ss->n && !first; i++)
            if (ss->p[i].ok && strcmp(ss->p[i].label, ss->labels[k]) == 0)
                first = &ss->p[i];
        fprintf(b, "keyentry with boxes fs solid 1.0 lc rgb \"%s\" title ",
                plot_colors[ss->color[k]]);
        char xname[64];
        snprintf(xname, sizeof xname, "exchange=%s", first && first->xkey[0] ? first->xkey
                                                                              : "(not varied)");
        plot_gp_str(b, ss->by_exchange ? xname
                       : ss->factored && first ? first->rest : ss->labels[k]);
        fputs(", \\\n    ", b);
    }
    if (any_oom)
        fputs("keyentry with boxes fs transparent pattern 4 lc rgb \"#cc0000\" "
              "title \"out of memory (hatched)\", \\\n    ", b);
    if (best)
        fputs("keyentry with boxes fs empty lc rgb \"#000000\" lw 2.5 title "
              "\"fastest that fits\", \\\n    ", b);
    fputs("keyentry with lines dt 2 lw 2 lc rgb \"#cc0000\" title \"device capacity\", "
          "\\\n    ", b);
}

int plot_bars(plot_figset *fs, const plot_sweepset *ss, cp_err *err)
{
    long long L = ss->L[0];
    /* groups: shapes in the order of their first strategy */
    const char **group = malloc((ss->ns + 1) * sizeof *group);
    double *x = malloc((ss->ns + 1) * sizeof *x), *gx = malloc((ss->ns + 1) * sizeof *gx);
    const plot_point **pt = malloc((ss->ns + 1) * sizeof *pt);
    if (!group || !x || !gx || !pt)
        abort();
    size_t ng = 0;
    for (size_t k = 0; k < ss->ns; k++) {
        pt[k] = plot_shown(ss, ss->labels[k], L);
        size_t g = 0;
        while (g < ng && strcmp(group[g], pt[k]->shape) != 0)
            g++;
        if (g == ng)
            group[ng++] = pt[k]->shape;
    }
    /* bars of a group side by side, a bar's width of space between groups */
    double at = 0, cap = 0, top_t = 0, top_m = 0;
    int any_oom = 0;
    const plot_point *best = NULL;
    size_t best_k = 0;
    for (size_t g = 0; g < ng; g++) {
        double start = at;
        for (size_t k = 0; k < ss->ns; k++)
            if (strcmp(pt[k]->shape, group[g]) == 0)
                x[k] = at++;
        gx[g] = (start + at - 1) / 2;
        at += 1;
    }
    for (size_t k = 0; k < ss->ns; k++) {
        cap = fmax(cap, pt[k]->capacity_bytes / 1e9);
        top_t = fmax(top_t, pt[k]->ttft_s);
        top_m = fmax(top_m, pt[k]->peak_bytes / 1e9);
        any_oom |= pt[k]->oom;
        if (!pt[k]->oom && (!best || pt[k]->ttft_s < best->ttft_s)) {
            best = pt[k];
            best_k = k;
        }
    }
    rep_file rf;
    int rc = plot_data_open(fs, "bars", &rf, err);
    if (rc == 0) {
        fprintf(rf.f, "# prompt of %lld tokens: x ttft_s peak_GB oom rgb index, a bar per "
                      "strategy (its best min_tokens that fits)\n", L);
        for (size_t k = 0; k < ss->ns; k++)
            fprintf(rf.f, "# %s\n%.1f %.9g %.6f %d %ld %d\n", ss->labels[k], x[k],
                    pt[k]->ttft_s, pt[k]->peak_bytes / 1e9, pt[k]->oom,
                    rgb_of(plot_colors[ss->color[k]]), pt[k]->index);
        rc = rep_close(&rf, 1, err);
    }
    if (rc == 0) {
        plot_figure *f = plot_fig_add(fs, "bars", "bars", "TTFT and peak memory per strategy",
                                      PLOT_WIDTH, PLOT_HEIGHT);
        snprintf(f->desc, sizeof f->desc, "At %lld prompt tokens, the TTFT of each strategy "
                 "(left) and its peak memory against the device capacity (right), bars "
                 "grouped by TP x SP shape%s%s%s", L, best ? "; fastest that fits: " : "",
                 best ? best->label : "", any_oom ? "; out-of-memory bars hatched" : "");
        /* the panels on the left three quarters, the legend beside them */
        FILE *b = plot_fig_body(fs, f, "set multiplot layout 1,2 margins 0.06,0.76,0.12,0.86 "
                                "spacing 0.07 title", "prompt of %lld tokens", L);
        fprintf(b, "set style fill solid 1.0 border lc rgb \"#ffffff\"\nset boxwidth 0.8\n"
                   "set grid ytics\nset xrange [-0.8:%.1f]\nset xtics (", at - 1.2);
        for (size_t g = 0; g < ng; g++) {
            fputs(g ? ", " : "", b);
            plot_gp_str(b, group[g]);
            fprintf(b, " %.1f", gx[g]);
        }
        fprintf(b, ")%s\nset key at screen 0.78,0.88 left top vertical reverse Left "
                   "font \",9\"\n", ng > 4 ? " rotate by -25" : "");
        /* left: TTFT, the value over each bar, the fastest that fits marked */
        fprintf(b, "set title \"time to first token\"\nset ylabel \"TTFT (s)\"\n"
                   "set yrange [0:%.6g]\n", top_t * 1.18);
        /* the fastest bar that fits outlined (the legend says so) */
        if (best)
            fprintf(b, "set object 1 rect from %.2f,0 to %.2f,%.9g front fs empty border lc "
                       "rgb \"#000000\" lw 2.5\n", x[best_k] - 0.4, x[best_k] + 0.4,
                    best->ttft_s);
        /* values over more than 8 bars a panel stand upright to stay apart */
        const char *lab = ss->ns > 8 ? "rotate by 90 left offset 0,0.5 font \",8\""
                                     : "offset 0,0.8 font \",9\"";
        fputs("plot ", b);
        bar_keys(b, ss, any_oom, best != NULL);
        fprintf(b, "\"bars.dat\" using 1:2:(0.8):5 with boxes lc rgb variable notitle, \\\n"
                   "    \"\" using 1:($4 > 0 ? $2 : 1/0):(0.8) with boxes fs transparent "
                   "pattern 4 lc rgb \"#cc0000\" notitle, \\\n"
                   "    \"\" using 1:2:(sprintf(\"%%.4g\", $2)) with labels %s notitle\n", lab);
        /* right: peak memory against the capacity */
        fprintf(b, "unset object 1\nset title \"peak memory\"\nset ylabel \"GB\"\n"
                   "set yrange [0:%.6g]\nunset key\n", fmax(cap, top_m) * 1.12);
        fprintf(b, "plot \"bars.dat\" using 1:3:(0.8):5 with boxes lc rgb variable notitle, "
                   "\\\n    \"\" using 1:($4 > 0 ? $3 : 1/0):(0.8) with boxes fs transparent "
                   "pattern 4 lc rgb \"#cc0000\" notitle, \\\n"
                   "    \"\" using 1:3:(sprintf(\"%%.1f\", $3)) with labels %s notitle, \\\n"
                   "    %.6f with lines dt 2 lw 2 lc rgb \"#cc0000\" notitle\n", lab, cap);
        fclose(b);
    }
    free(group);
    free(x);
    free(gx);
    free(pt);
    return rc;
}
