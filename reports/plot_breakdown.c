/* plot_breakdown: where each rank's time went, as stacked bars that sum to
 * the makespan: compute alone by class, communication under compute
 * (overlapped), communication alone (exposed) and idle (see plot.h).
 *
 * The summary's per-rank compute_s, comm_s and overlap_s are exact (from the
 * engine's double times); the trace's op times are rounded to the
 * nanosecond.  So overlapped, exposed and idle come from the summary, and
 * the trace only splits the compute-alone time (compute_s - overlap_s) by
 * class: the time each class's ops on the compute stream ran while no
 * communication stream of the rank was busy, scaled to that exact total
 * (the scale differs from 1 by the rounding, ~1e-6). */
#include "reports/plot_fig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/plan.h"

/* A start or an end of an op of one rank, for a sweep over time. */
typedef struct edge {
    double t;
    int start;             /* 1: the op starts at t; 0: it ends */
    int cl;                /* compute: its class; communication: -1 */
} edge;

/* By time; at one instant ends before starts. */
static int cmp_edge(const void *a, const void *b)
{
    const edge *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->start - y->start;
}

/* ms of each class's compute while no communication stream of the rank was
 * busy, added to alone[]; returns their sum.  The compute stream runs one op
 * at a time, but an op's end (ts + dur) and the next one's start (ts) may
 * differ by a rounding in ms: ops are counted, and the class is that of the
 * op that started last. */
static double compute_alone(const plot_trace *tr, int rank, edge *ed, double *alone)
{
    size_t n = 0;
    for (size_t i = 0; i < tr->n; i++) {
        const plot_event *e = &tr->e[i];
        if (e->rank != rank || e->t1 <= e->t0)
            continue;
        int cl = e->stream == ST_COMPUTE ? e->cl : -1;
        ed[n++] = (edge){e->t0, 1, cl};
        ed[n++] = (edge){e->t1, 0, cl};
    }
    qsort(ed, n, sizeof *ed, cmp_edge);
    int comm = 0, compute = 0, cl = 0;
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ed[i].cl < 0) {
            comm += ed[i].start ? 1 : -1;
        } else {
            compute += ed[i].start ? 1 : -1;
            cl = ed[i].start ? ed[i].cl : cl;
        }
        if (i + 1 < n && compute > 0 && comm == 0) {
            alone[cl] += ed[i + 1].t - ed[i].t;
            total += ed[i + 1].t - ed[i].t;
        }
    }
    return total;
}

/* Columns of breakdown.dat after the rank: the classes, then these:
 * compute alone not split by class (a rank whose ops the trace lacks:
 * --trace none or steps, a rank --trace-ranks left out), then
 * communication and idle. */
enum { BD_COMPUTE, BD_OVERLAP, BD_EXPOSED, BD_IDLE, BD_COUNT };
static const char *const bd_name[BD_COUNT] = {"compute alone (no ops in the trace to split it)",
                                              "overlapped communication",
                                              "exposed communication", "idle"};
static const char *const bd_col[BD_COUNT] = {"compute", "overlapped_comm", "exposed_comm",
                                             "idle"};

/* Per rank: ms of compute alone by class, then BD_COUNT more (ms). */
static void rank_times(const plot_trace *tr, json_t *rr, double makespan_ms, int rank,
                       edge *ed, double *t)
{
    for (int c = 0; c < PLOT_CL_COUNT + BD_COUNT; c++)
        t[c] = 0;
    double alone = compute_alone(tr, rank, ed, t);
    double compute = 1e3 * json_number_value(json_object_get(rr, "compute_s"));
    double comm_ms = 1e3 * json_number_value(json_object_get(rr, "comm_s"));
    double overlap = 1e3 * json_number_value(json_object_get(rr, "overlap_s"));
    double scale = alone > 0 ? (compute - overlap) / alone : 0;
    for (int c = 0; c < PLOT_CL_COUNT; c++)
        t[c] *= scale;
    if (!(alone > 0))
        t[PLOT_CL_COUNT + BD_COMPUTE] = compute - overlap;
    t[PLOT_CL_COUNT + BD_OVERLAP] = overlap;
    t[PLOT_CL_COUNT + BD_EXPOSED] = comm_ms - overlap;
    t[PLOT_CL_COUNT + BD_IDLE] = fmax(0, makespan_ms - compute - (comm_ms - overlap));
}

static void bd_body(plot_figure *f, const plot_figset *fs, const int *used, int nranks,
                    double makespan_ms, double ttft_ms)
{
    FILE *b = plot_fig_body(fs, f, "set title", "where the time went, per rank (makespan %.3f "
                            "ms, TTFT %.3f ms)", makespan_ms, ttft_ms);
    /* 12 % headroom keeps the bars' tops clear of the title */
    fprintf(b, "set xlabel \"rank\"\nset ylabel \"simulated time (ms)\"\n"
               "set yrange [0:%.6f]\nset style data histograms\n"
               "set style histogram rowstacked\nset boxwidth 0.75 relative\n"
               "set style fill solid 1.0 border lc rgb \"#ffffff\"\nset grid ytics\n"
               "set key outside right top invert font \",9\"\n", makespan_ms * 1.12);
    /* a tic label for every rank up to 32, then every n-th */
    int every = nranks <= 32 ? 1 : (nranks + 31) / 32;
    fputs("plot", b);
    int col = 2, first = 1;
    for (int c = 0; c < PLOT_CL_COUNT + BD_COUNT; c++) {
        if (!used[c])
            continue;
        const char *name = c < PLOT_CL_COUNT ? plot_class_name[c] : bd_name[c - PLOT_CL_COUNT];
        /* communication in the collectives' colour, hatched under compute */
        const char *color = c < PLOT_CL_COUNT                  ? plot_class_color[c]
                            : c == PLOT_CL_COUNT + BD_IDLE    ? "#e0e0e0"
                            : c == PLOT_CL_COUNT + BD_COMPUTE ? "#332288"
                            : c == PLOT_CL_COUNT + BD_OVERLAP ? "#0088aa"
                                                              : plot_class_color[PLOT_CL_COLL];
        if (first)
            fprintf(b, " \"breakdown.dat\" using %d:xtic(int($1) %% %d == 0 ? stringcolumn(1) "
                       ": \"\")", col, every);
        else
            fprintf(b, ", \\\n    \"\" using %d", col);
        if (c < PLOT_CL_COUNT)
            fprintf(b, " title \"%s (alone)\" lc rgb \"%s\"", name, color);
        else if (c == PLOT_CL_COUNT + BD_OVERLAP)
            fprintf(b, " title \"%s\" lc rgb \"%s\" fs pattern 4 border lc rgb \"%s\"", name,
                    color, color);
        else
            fprintf(b, " title \"%s\" lc rgb \"%s\"", name, color);
        col++;
        first = 0;
    }
    fputc('\n', b);
    fclose(b);
}

int plot_breakdown(plot_figset *fs, const plot_run *run, cp_err *err)
{
    json_t *ranks = json_object_get(run->summary, "ranks");
    int nranks = (int)json_array_size(ranks);
    if (nranks == 0)
        return 0;
    double makespan = 1e3 * json_number_value(json_object_get(run->summary, "makespan_s"));
    double ttft = 1e3 * json_number_value(json_object_get(run->summary, "ttft_s"));
    const int ncol = PLOT_CL_COUNT + BD_COUNT;
    double *t = calloc((size_t)nranks * ncol, sizeof *t);
    edge *ed = malloc(2 * (run->tr.n + 1) * sizeof *ed);
    int used[PLOT_CL_COUNT + BD_COUNT] = {0};
    if (!t || !ed)
        abort();
    for (int r = 0; r < nranks; r++) {
        rank_times(&run->tr, json_array_get(ranks, (size_t)r), makespan, r, ed, &t[r * ncol]);
        for (int c = 0; c < ncol; c++)
            used[c] |= t[r * ncol + c] > 0;
    }
    /* the communication and idle columns always, so that readers find them */
    for (int c = PLOT_CL_COUNT + BD_OVERLAP; c < ncol; c++)
        used[c] = 1;
    rep_file rf;
    int rc = plot_data_open(fs, "breakdown", &rf, err);
    if (rc == 0) {
        fprintf(rf.f, "# per rank, ms of simulated time; a row sums to the makespan, %.6f "
                      "ms\n# rank", makespan);
        for (int c = 0; c < ncol; c++) {
            if (!used[c])
                continue;
            /* one word per column: "MoE GEMM" as MoE_GEMM */
            fputc(' ', rf.f);
            for (const char *s = c < PLOT_CL_COUNT ? plot_class_name[c]
                                                   : bd_col[c - PLOT_CL_COUNT]; *s; s++)
                fputc(*s == ' ' ? '_' : *s, rf.f);
        }
        fputc('\n', rf.f);
        for (int r = 0; r < nranks; r++) {
            fprintf(rf.f, "%d", r);
            for (int c = 0; c < ncol; c++)
                if (used[c])
                    fprintf(rf.f, " %.9f", t[r * ncol + c]);
            fputc('\n', rf.f);
        }
        rc = rep_close(&rf, 1, err);
    }
    if (rc == 0) {
        plot_figure *f = plot_fig_add(fs, "breakdown", "breakdown",
                                      "where the time went, per rank", PLOT_WIDTH, PLOT_HEIGHT);
        snprintf(f->desc, sizeof f->desc, "Per rank, the makespan as stacked bars: compute "
                 "running alone by kernel class, communication under compute (overlapped, "
                 "hatched), communication alone (exposed) and idle%s",
                 used[PLOT_CL_COUNT + BD_COMPUTE]
                     ? "; the compute of a rank whose ops the trace lacks is one bar, not split "
                       "by class (cpsim run --trace full writes every op)"
                     : "");
        bd_body(f, fs, used, nranks, makespan, ttft);
    }
    free(t);
    free(ed);
    return rc;
}
