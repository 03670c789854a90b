/* plot_strategies: TTFT and overlap against prompt length, a line per
 * strategy in its own colour and marker, out-of-memory points circled
 * (see plot.h). */
#include "reports/plot_fig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* strategies.dat: one block per strategy (prompt ttft_s overlap_pct oom
 * index); ttft and overlap draw from it. */
int plot_strategies(plot_figset *fs, const plot_sweepset *ss, cp_err *err)
{
    const long long *L = ss->L;
    size_t nl = ss->nl;
    rep_file rf;
    int rc = plot_data_open(fs, "strategies", &rf, err), any_oom = 0;
    for (size_t k = 0; rc == 0 && k < ss->ns; k++) {
        fprintf(rf.f, "%s# %s: prompt_tokens ttft_s overlap_pct oom index\n", k ? "\n\n" : "",
                ss->labels[k]);
        for (size_t q = 0; q < nl; q++) {
            const plot_point *s = plot_shown(ss, ss->labels[k], L[q]);
            if (s)
                fprintf(rf.f, "%lld %.9g %.6f %d %d\n", L[q], s->ttft_s, 100 * s->overlap,
                        s->oom, s->index);
            any_oom |= s && s->oom;
        }
    }
    if (rc == 0)
        rc = rep_close(&rf, 1, err);
    int w = plot_width_for_key(ss->ns + (size_t)any_oom, PLOT_HEIGHT);
    for (int which = 0; rc == 0 && which < 2; which++) {
        plot_figure *f = which ? plot_fig_add(fs, "overlap", "strategies",
                                              "overlap per strategy", w, PLOT_HEIGHT)
                               : plot_fig_add(fs, "ttft", "strategies",
                                              "TTFT against prompt length", w, PLOT_HEIGHT);
        snprintf(f->desc, sizeof f->desc, "%s against prompt length, a line per strategy (its "
                 "best min_tokens that fits), each in a colour and marker of its own%s",
                 which ? "The share of communication time that ran under compute"
                       : "Time to first token",
                 any_oom ? "; points out of memory circled in red" : "");
        FILE *b = plot_fig_body(fs, f, "set title", "%s per strategy%s",
                                which ? "share of communication time under compute"
                                      : "time to first token",
                                any_oom ? " (out-of-memory points circled)" : "");
        /* a quarter octave of margin keeps the end points off the frame */
        fprintf(b, "set xlabel \"prompt tokens\"\nset ylabel \"%s\"\nset logscale x 2\n"
                   "set xrange [%.6g:%.6g]\n%sset grid\n", which ? "overlap (%)" : "TTFT (s)",
                (double)L[0] / 1.19, (double)L[nl - 1] * 1.19,
                which ? "set yrange [0:100]\n" : "set logscale y\n");
        plot_key_right(b, PLOT_HEIGHT);
        plot_prompt_tics(b, L, nl);
        fputs("plot", b);
        for (size_t k = 0; k < ss->ns; k++) {
            fprintf(b, "%s \"strategies.dat\" index %zu using 1:%d with linespoints lw 1.5 "
                       "lc rgb \"%s\" pt %d ps 1.1 title ", k ? ", \\\n    " : "", k,
                    which ? 3 : 2, plot_colors[ss->color[k]], ss->marker[k]);
            plot_gp_str(b, ss->labels[k]);
        }
        if (any_oom)
            for (size_t k = 0; k < ss->ns; k++)
                fprintf(b, ", \\\n    \"strategies.dat\" index %zu using 1:($4 > 0 ? $%d : 1/0) "
                           "with points pt 6 ps 2.6 lw 2 lc rgb \"#cc0000\" %s", k,
                        which ? 3 : 2, k ? "notitle" : "title \"out of memory\"");
        fputc('\n', b);
        fclose(b);
    }
    return rc;
}
