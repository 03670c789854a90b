/* plot: pictures of a run or a sweep, drawn by gnuplot as PNG (pngcairo)
 * and SVG, from the files the run or sweep wrote.  Never re-simulates.
 *
 * Into DIR/plots/:
 *   a run folder (summary.json, trace.json, memory.csv):
 *     timeline   one row per rank and stream, ops coloured by class (GEMM,
 *                attention, indexer, MoE, collective, hop, other), over the
 *                whole run or a window of layers
 *     memory     per rank (ranks with equal timelines share a panel), bytes
 *                held stacked by category over time, with the capacity line
 *   a sweep folder (the lines of results.jsonl, sim/sweep/sweep.h):
 *     ttft       TTFT against prompt length per strategy (log axes), OOM
 *                points marked
 *     overlap    overlap fraction against prompt length per strategy
 *     heatmap-L  per prompt length L, a TP x SP map of the best TTFT (OOM and
 *                failed cells marked)
 *   each as NAME.png and NAME.svg, the data behind it as NAME.dat, the
 *   gnuplot script (plots.gp, rerunnable by hand), gnuplot's messages
 *   (gnuplot.log) and index.html, which shows them all.
 *
 * A strategy is a point's grid parameters other than the prompt length
 * (keys ending in prompt_tokens) and min_tokens; at each prompt length it
 * shows its best point that fits in memory (over min_tokens), or its best
 * point marked OOM when none fits.
 */
#ifndef CP_PLOT_H
#define CP_PLOT_H

#include <jansson.h>
#include <stdint.h>

#include "workloads/diag.h"

/* Picture sizes in pixels (PNG) and SVG units. */
#define PLOT_WIDTH 1200
#define PLOT_HEIGHT 750
#define PLOT_TIMELINE_WIDTH 1600
#define PLOT_TIMELINE_HEIGHT 900

typedef struct plot_opts {
    int layer_lo, layer_hi;   /* timeline window; layer_lo < 0: the whole run */
} plot_opts;

/* Plots of a run folder (opts NULL: the whole run). */
int plot_run_dir(const char *dir, const plot_opts *opts, cp_err *err);

/* Plots of a sweep folder from its result lines (sorted by index). */
int plot_sweep(const char *dir, json_t *const *lines, size_t n, cp_err *err);

/* A sweep result line as plots and tables read it: from the summary when
 * the point ran, else from its parameters (unknown fields: -1, 0 or ""). */
typedef struct plot_point {
    int index;
    int ok;                    /* status "ok" */
    int oom;
    double ttft_s;
    double overlap;            /* overlap_fraction */
    double peak_bytes;         /* peak_bytes_max */
    double capacity_bytes;
    long long prompt;          /* requests[0] prompt tokens; -1 unknown */
    int tp, sp;                /* 0 unknown */
    long long min_tokens;      /* -1 unknown */
    char exchange[32];
    char kv_storage[32];
    int split;                 /* requests[0]'s prefill ran split over the SP
                                  group (the summary's requests[0].split): 1,
                                  copied: 0; -1 when sp <= 1 or not known */
    char label[256];           /* strategy: "tp=4 sp=2 exchange=ring" */
    char shape[256];           /* the label without exchange and kv_storage */
} plot_point;

void plot_point_of(json_t *line, plot_point *pt);

#endif
