/* plot_strategies: TTFT and overlap against prompt length, a line per
 * strategy in its own colour and marker, out-of-memory points circled
 * (see plot.h). */
#include "reports/plot_fig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Two lines coincide when they show the same prompt lengths, out of memory
 * at the same ones, with values this close at each: TTFT within 1 %, the
 * overlap within 1 point.  At 1.5 px lines on ~600 px of plot, TTFT over
 * one or two decades (log) and overlap over 100 points, either is within
 * ~2 px: one line hides the other. */
#define SAME_TTFT_REL 0.01
#define SAME_OVERLAP_PTS 1.0

static int same_line(const plot_sweepset *ss, size_t a, size_t b, int which)
{
    for (size_t q = 0; q < ss->nl; q++) {
        const plot_point *x = plot_shown(ss, ss->labels[a], ss->L[q]);
        const plot_point *y = plot_shown(ss, ss->labels[b], ss->L[q]);
        if (!x || !y) {
            if (x != y)
                return 0;
            continue;
        }
        if (x->oom != y->oom)
            return 0;
        if (which ? fabs(100 * (x->overlap - y->overlap)) > SAME_OVERLAP_PTS
                  : fabs(x->ttft_s - y->ttft_s) > SAME_TTFT_REL * fmax(x->ttft_s, y->ttft_s))
            return 0;
    }
    return 1;
}

/* The words ("key=value") of label s that not every label of the group
 * has, into buf: what tells this strategy from the others on its line. */
static void own_words(const plot_sweepset *ss, const size_t *grp, size_t n, const char *s,
                      char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    char *copy = strdup(s), *save = NULL;
    if (!copy)
        abort();
    for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        size_t in = 0, wl = strlen(w);
        for (size_t i = 0; i < n; i++) {
            const char *l = ss->labels[grp[i]], *at = l;
            while ((at = strstr(at, w)) && !((at == l || at[-1] == ' ') &&
                                             (at[wl] == ' ' || at[wl] == '\0')))
                at++;
            in += at != NULL;
        }
        if (in < n && off < len)
            off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? " " : "", w);
    }
    free(copy);
    if (!buf[0])
        snprintf(buf, len, "%s", s);
}

/* For picture `which` (0: TTFT, 1: overlap): lead[k] the first strategy
 * whose line k's coincides with (k itself when none), and for each first
 * of a group of 2+, a label at the end of its line naming them all:
 * "exchange=none = exchange=ring" (the words that tell them apart). */
static void same_lines(FILE *b, const plot_sweepset *ss, int which, size_t *lead, size_t *grp)
{
    for (size_t k = 0; k < ss->ns; k++) {
        lead[k] = k;
        for (size_t j = 0; j < k && lead[k] == k; j++)
            if (lead[j] == j && same_line(ss, j, k, which))
                lead[k] = j;
    }
    int tag = 100;   /* label tags past the OOM labels' (1..PLOT_OOM_LABELS) */
    for (size_t k = 0; k < ss->ns; k++) {
        size_t n = 0;
        for (size_t j = k; j < ss->ns; j++)
            if (lead[j] == k)
                grp[n++] = j;
        if (n < 2)
            continue;
        const plot_point *end = NULL;
        for (size_t q = ss->nl; q-- > 0 && !end;)
            end = plot_shown(ss, ss->labels[k], ss->L[q]);
        if (!end)
            continue;
        char *text = NULL;
        size_t tl = 0;
        FILE *m = open_memstream(&text, &tl);
        if (!m)
            abort();
        /* "one line, exchange: none = ring" when one key tells them apart */
        char own[256], key[64] = "";
        int one_key = 1;
        for (size_t i = 0; i < n && one_key; i++) {
            own_words(ss, grp, n, ss->labels[grp[i]], own, sizeof own);
            const char *eq = strchr(own, '=');
            one_key = eq && !strchr(own, ' ') && (size_t)(eq - own) < sizeof key &&
                      (i == 0 || strncmp(own, key, strlen(key)) == 0);
            if (one_key && i == 0)
                snprintf(key, sizeof key, "%.*s", (int)(eq - own + 1), own);
        }
        fputs(one_key ? "one line, " : "one line: ", m);
        if (one_key)
            fprintf(m, "%.*s: ", (int)strlen(key) - 1, key);
        for (size_t i = 0; i < n; i++) {
            own_words(ss, grp, n, ss->labels[grp[i]], own, sizeof own);
            fprintf(m, "%s%s", i ? " = " : "", one_key ? own + strlen(key) : own);
        }
        fclose(m);
        fprintf(b, "set label %d ", tag++);
        plot_gp_str(b, text);
        fprintf(b, " at %lld,%.9g right offset 0,1.2 font \",8\" tc rgb \"%s\" front\n",
                end->prompt, which ? 100 * end->overlap : end->ttft_s,
                plot_colors[ss->color[k]]);
        free(text);
    }
}

/* At most this many strategies out of memory are named on a picture (their
 * first such point each); more would cover the lines. */
#define PLOT_OOM_LABELS 12

/* Each strategy out of memory named at its first point out of memory;
 * returns how many were not (past PLOT_OOM_LABELS). */
static size_t oom_labels(FILE *b, const plot_sweepset *ss, int which)
{
    size_t n = 0, more = 0;
    for (size_t k = 0; k < ss->ns; k++) {
        const plot_point *p = NULL;
        size_t q = 0;
        for (; q < ss->nl && !p; q++) {
            p = plot_shown(ss, ss->labels[k], ss->L[q]);
            p = p && p->oom ? p : NULL;
        }
        if (!p)
            continue;
        if (n == PLOT_OOM_LABELS) {
            more++;
            continue;
        }
        fprintf(b, "set label %zu ", ++n);
        char text[300];
        snprintf(text, sizeof text, "%s: out of memory", ss->labels[k]);
        plot_gp_str(b, text);
        /* on the side of the point with more room: q is past its length */
        int right = 2 * q > ss->nl;
        fprintf(b, " at %lld,%.9g %s offset %s1.2,-1 font \",8\" tc rgb \"#cc0000\" front\n",
                p->prompt, which ? 100 * p->overlap : p->ttft_s, right ? "right" : "left",
                right ? "-" : "");
    }
    return more;
}

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
    size_t *lead = malloc((ss->ns + 1) * sizeof *lead), *grp = malloc((ss->ns + 1) * sizeof *grp);
    if (!lead || !grp)
        abort();
    for (int which = 0; rc == 0 && which < 2; which++) {
        plot_figure *f = which ? plot_fig_add(fs, "overlap", "strategies",
                                              "overlap per strategy", w, PLOT_HEIGHT)
                               : plot_fig_add(fs, "ttft", "strategies",
                                              "TTFT against prompt length", w, PLOT_HEIGHT);
        snprintf(f->desc, sizeof f->desc, "%s against prompt length, a line per strategy (its "
                 "best min_tokens that fits), each in a colour and marker of its own%s; lines "
                 "that coincide are dashed and named together at their end%s",
                 which ? "The share of communication time that ran under compute"
                       : "Time to first token",
                 ss->by_exchange ? " (an exchange's colour is the same in every sweep)" : "",
                 any_oom ? "; points out of memory circled in red, each strategy named at its "
                           "first" : "");
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
        same_lines(b, ss, which, lead, grp);
        size_t unnamed = any_oom ? oom_labels(b, ss, which) : 0;
        if (unnamed) {
            size_t len = strlen(f->desc);
            snprintf(f->desc + len, sizeof f->desc - len, " (%zu more out of memory not named: "
                     "strategies.dat has them)", unnamed);
        }
        fputs("plot", b);
        for (size_t k = 0; k < ss->ns; k++) {
            /* a line on another's: dashed, so that the one under it shows */
            fprintf(b, "%s \"strategies.dat\" index %zu using 1:%d with linespoints lw 1.5 "
                       "%slc rgb \"%s\" pt %d ps 1.1 title ", k ? ", \\\n    " : "", k,
                    which ? 3 : 2, lead[k] != k ? "dt 2 " : "", plot_colors[ss->color[k]],
                    ss->marker[k]);
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
    free(lead);
    free(grp);
    return rc;
}
