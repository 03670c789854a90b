/* plot_timeline: the timeline of a run: one row per rank and stream, ops
 * coloured by class, over the whole run or the window that --step,
 * --layers, --window and --ranks pick (see plot.h). */
#include "reports/plot_fig.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/plan.h"

/* Whether an op selects the window: its rank is shown, and it is of the
 * step and layers asked for. */
static int selects(const plot_event *e, const unsigned char *rsel, int step, const plot_opts *o)
{
    return rsel[e->rank] && (step < 0 || e->step == step) &&
           (!o || o->layer_lo < 0 || (e->layer >= o->layer_lo && e->layer <= o->layer_hi));
}

/* The window in ms: the span of the selecting ops (--layers alone: in the
 * first step that has those layers), cut to --window; *step the step that
 * selected (-1: any). */
static int tl_window(const plot_trace *tr, const unsigned char *rsel, const plot_opts *o,
                     double *lo, double *hi, int *step, cp_err *err)
{
    *step = o && o->step >= 0 ? o->step : -1;
    if (o && o->layer_lo >= 0 && *step < 0)
        for (size_t i = 0; i < tr->n; i++)
            if (selects(&tr->e[i], rsel, -1, o) && (*step < 0 || tr->e[i].step < *step))
                *step = tr->e[i].step;
    *lo = INFINITY;
    *hi = -INFINITY;
    double run_lo = INFINITY, run_hi = -INFINITY;
    for (size_t i = 0; i < tr->n; i++) {
        const plot_event *e = &tr->e[i];
        run_lo = fmin(run_lo, e->t0);
        run_hi = fmax(run_hi, e->t1);
        if (!selects(e, rsel, *step, o))
            continue;
        *lo = fmin(*lo, e->t0);
        *hi = fmax(*hi, e->t1);
    }
    if (!(*hi >= *lo)) {
        if (o && o->step >= 0)
            return cp_fail(err, CP_EXIT_INPUT, "--step %d: the trace has no op in this step%s",
                           o->step, o->layer_lo >= 0 ? " and these layers" : "");
        if (o && o->layer_lo >= 0)
            return cp_fail(err, CP_EXIT_INPUT, "--layers %d-%d: the trace has no op in these "
                           "layers", o->layer_lo, o->layer_hi);
        return cp_fail(err, CP_EXIT_INPUT, "the trace holds no op to draw");
    }
    if (o && o->win_hi > o->win_lo) {
        *lo = fmax(*lo, o->win_lo);
        *hi = fmin(*hi, o->win_hi);
        if (!(*hi > *lo))
            return cp_fail(err, CP_EXIT_INPUT, "--window %g:%g: no op of the selection in this "
                           "window (the run's ops span %.3f-%.3f ms)", o->win_lo, o->win_hi,
                           run_lo, run_hi);
    }
    return 0;
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

/* "timeline, step 0, layers 2-3, ranks 0-3, 1.5-2.5 ms" */
static void tl_title(const plot_opts *o, int step, char *buf, size_t len)
{
    size_t off = (size_t)snprintf(buf, len, "timeline");
    if (step >= 0 && off < len)
        off += (size_t)snprintf(buf + off, len - off, ", step %d", step);
    if (o && o->layer_lo >= 0 && off < len)
        off += (size_t)snprintf(buf + off, len - off, ", layers %d-%d", o->layer_lo,
                                o->layer_hi);
    if (o && o->ranks && off < len)
        off += (size_t)snprintf(buf + off, len - off, ", ranks %s", o->ranks);
    if (o && o->win_hi > o->win_lo && off < len)
        snprintf(buf + off, len - off, ", %g-%g ms", o->win_lo, o->win_hi);
}

/* The file stem: "timeline" for the whole run, else the window's own, so
 * that it leaves the whole run's in place: "timeline-step2-layers2-3-
 * ranks0_2-3-ms1.5-2.5" (the options given, in this order; a comma of
 * --ranks as "_"). */
static void tl_stem(const plot_opts *o, char *buf, size_t len)
{
    size_t off = (size_t)snprintf(buf, len, "timeline");
    if (o && o->step >= 0 && off < len)
        off += (size_t)snprintf(buf + off, len - off, "-step%d", o->step);
    if (o && o->layer_lo >= 0 && off < len)
        off += (size_t)snprintf(buf + off, len - off, "-layers%d-%d", o->layer_lo,
                                o->layer_hi);
    if (o && o->ranks && off < len) {
        off += (size_t)snprintf(buf + off, len - off, "-ranks");
        for (const char *c = o->ranks; *c && off + 1 < len; c++)
            buf[off++] = (*c >= '0' && *c <= '9') || *c == '-' ? *c : '_';
        buf[off < len ? off : len - 1] = '\0';
    }
    if (o && o->win_hi > o->win_lo && off < len)
        snprintf(buf + off, len - off, "-ms%g-%g", o->win_lo, o->win_hi);
}

int plot_timeline(plot_figset *fs, const plot_run *run, const plot_opts *o, cp_err *err)
{
    char stem[64];
    tl_stem(o, stem, sizeof stem);
    const plot_trace *tr = &run->tr;
    const plot_event *e = tr->e;
    int nslots = tr->nranks * ST_COUNT;
    unsigned char *rsel = calloc((size_t)tr->nranks + 1, 1);
    int *row_of = malloc(((size_t)nslots + 1) * sizeof *row_of);
    if (!rsel || !row_of)
        abort();
    int rc = 0;
    if (o && o->ranks)
        rc = rep_rank_list("--ranks", o->ranks, rsel, tr->nranks, err);
    else
        memset(rsel, 1, (size_t)tr->nranks);
    for (int s = 0; s < nslots; s++)
        row_of[s] = -1;
    for (size_t i = 0; i < tr->n; i++)
        if (rsel[e[i].rank])
            row_of[e[i].rank * ST_COUNT + e[i].stream] = 0;
    int nrows = 0;
    for (int s = 0; s < nslots; s++)
        if (row_of[s] == 0)
            row_of[s] = nrows++;
    double lo = 0, hi = 0;
    int step = -1;
    if (rc == 0)
        rc = tl_window(tr, rsel, o, &lo, &hi, &step, err);
    rep_file rf;
    if (rc == 0)
        rc = plot_data_open(fs, stem, &rf, err);
    int blocks[PLOT_CL_COUNT], nblocks = 0;
    for (int c = 0; rc == 0 && c < PLOT_CL_COUNT; c++) {
        blocks[c] = -1;
        for (size_t i = 0; i < tr->n; i++) {
            if (e[i].cl != c || !rsel[e[i].rank] || e[i].t1 <= lo || e[i].t0 >= hi)
                continue;
            if (blocks[c] < 0) {
                fprintf(rf.f, "%s# class %s: start_ms end_ms row\n", nblocks ? "\n\n" : "",
                        plot_class_name[c]);
                blocks[c] = nblocks++;
            }
            fprintf(rf.f, "%.6f %.6f %d\n", fmax(e[i].t0, lo), fmin(e[i].t1, hi),
                    row_of[e[i].rank * ST_COUNT + e[i].stream]);
        }
    }
    if (rc == 0)
        rc = rep_close(&rf, 1, err);
    if (rc == 0) {
        char title[256];
        tl_title(o, step, title, sizeof title);
        plot_figure *f = plot_fig_add(fs, stem, stem, title, PLOT_TIMELINE_WIDTH,
                                      PLOT_TIMELINE_HEIGHT);
        snprintf(f->desc, sizeof f->desc, "One row per rank and stream, every op coloured by "
                 "its class, from %.3f to %.3f ms of simulated time (cpsim plot --step, "
                 "--layers, --window and --ranks choose the window)", lo, hi);
        FILE *b = plot_fig_body(fs, f, "set title", "%s", title);
        fprintf(b, "set xlabel \"simulated time (ms)\"\nset xrange [%.6f:%.6f]\n"
                   "set yrange [%d.5:-0.5]\nset key outside top center horizontal\n"
                   "set style fill solid 1.0 noborder\nset grid xtics\n", lo, hi, nrows - 1);
        tl_yticks(b, row_of, nslots);
        fputs("plot", b);
        for (int c = 0, first = 1; c < PLOT_CL_COUNT; c++) {
            if (blocks[c] < 0)
                continue;
            fprintf(b, "%s \"%s.dat\" index %d using (($1+$2)/2):3:(($2-$1)/2):(0.4) "
                       "with boxxyerror lc rgb \"%s\" title \"%s\"", first ? "" : ", \\\n",
                    stem, blocks[c], plot_class_color[c], plot_class_name[c]);
            first = 0;
        }
        if (nblocks == 0)   /* a window between ops: an empty frame */
            fprintf(b, " %.6f notitle with lines lc rgb \"white\"", lo - 1);
        fputc('\n', b);
        fclose(b);
    }
    free(row_of);
    free(rsel);
    return rc;
}
