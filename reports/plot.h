/* plot: pictures of a run or a sweep, drawn by gnuplot as PNG (pngcairo)
 * and SVG, from the files the run or sweep wrote.  Never re-simulates.
 *
 * Into DIR/plots/:
 *   a run folder (summary.json, trace.json or trace.json.gz, memory.csv):
 *     breakdown  per rank, the makespan as stacked bars: compute alone by
 *                kernel class, communication under compute (overlapped),
 *                communication alone (exposed), idle; every bar sums to
 *                the makespan (plot_breakdown.c)
 *     timeline   one row per rank and stream, ops coloured by class (GEMM,
 *                attention, indexer, MoE GEMM, MoE routing, memory-bound,
 *                collective, hop, other), over the whole run; the window
 *                plot_opts picks beside it, in files named by the options
 *                (timeline-layers2-3, ...: plot_timeline.c)
 *     memory     per rank (ranks with equal timelines share a panel), bytes
 *                held stacked by category over time, the capacity line and,
 *                when the run ran out of memory, the OOM point
 *                (plot_memory.c)
 *     a trace without ops (--trace none or steps): the breakdown's compute
 *     alone one bar per rank, no timeline (plot_run.c)
 *   a serving run folder (summary.json "mode": "serving", steps.csv):
 *     ttft-cdf   the empirical CDF of each request's TTFT per request class
 *                (and of all requests with 2+ classes), log x in seconds;
 *                requests without a first token left out, counted in the key
 *     tpot-cdf   the same of each finished request's mean TPOT, over the
 *                requests with decode tokens (plot_serving.c)
 *     batch      per replica (replica 0 alone past 4), each step's decodes
 *                and prefills stacked over time, tokens per step on the right
 *                axis (plot_serving.c)
 *     then the timeline of what the trace holds (every op of its first
 *     steps, numbered from steps.csv) and the memory panels; the breakdown
 *     is left out with a note in index.html (the serving trace has no
 *     kernel classes, the summary's ttft_s is the first request's), as is a
 *     picture with nothing to draw (plot_run.c)
 *   a sweep folder (the lines of results.jsonl, sim/sweep/sweep.h):
 *     ttft       TTFT against prompt length per strategy (log axes), OOM
 *                points circled; overlap: the overlap fraction likewise
 *                (plot_strategies.c); both only with 2+ prompt lengths
 *     bars       one prompt length: TTFT per strategy as bars grouped by
 *                TP x SP shape, peak memory beside it with the capacity line,
 *                OOM bars hatched (plot_bars.c)
 *     heatmap-L  per prompt length L, a TP x SP map: each cell's winning
 *                exchange, its TTFT and its margin over the runner-up, OOM
 *                cells hatched; heatmap: the same by shape x prompt length
 *                (plot_heatmap.c)
 *     pareto-L   per prompt length L, TTFT against peak memory of every
 *                point, the Pareto front of the points that fit highlighted
 *                (plot_pareto.c)
 *     crossover  per exchange and shape with SP, split and copied TTFT
 *                against prompt length, the crossing split.csv reports
 *                marked (plot_crossover.c)
 *   each as NAME.png and NAME.svg, the data behind it as .dat files, the
 *   gnuplot script (plots.gp, rerunnable by hand: restyle it there),
 *   gnuplot's messages (gnuplot.log) and index.html, which shows them all
 *   with captions naming the workload and platform, after the notes on any
 *   picture left out (plot.c).
 *
 * A strategy is a point's grid parameters other than the prompt length
 * (keys ending in prompt_tokens) and min_tokens; at each prompt length it
 * shows its best point that fits in memory (over min_tokens), or its best
 * point marked OOM when none fits.  Each strategy keeps one colour and one
 * marker in every sweep picture.  When the sweep compares exchanges, the
 * colour says the exchange from a fixed table (plot_exchange_style), the
 * same in every sweep, and so does the marker when nothing else varies
 * (else the marker says the rest of the strategy).  Lines that coincide
 * are dashed over each other and named together at their end; the points
 * out of memory are labelled with their strategy.
 */
#ifndef CP_PLOT_H
#define CP_PLOT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "base/diag.h"

/* Picture sizes in pixels (PNG) and SVG units. */
#define PLOT_WIDTH 1200
#define PLOT_HEIGHT 750
#define PLOT_TIMELINE_WIDTH 1600
#define PLOT_TIMELINE_HEIGHT 900

/* What the timeline of a run shows; the other run pictures cover the whole
 * run.  Zeroed but for layer_lo = step = -1: the whole run. */
typedef struct plot_opts {
    int layer_lo, layer_hi;   /* --layers: the window of these layers' ops (in
                                 the first step that has them unless step is
                                 set); layer_lo < 0: any layer */
    int step;                 /* --step: the window of this step's ops; < 0: any */
    double win_lo, win_hi;    /* --window, simulated ms; win_hi <= win_lo: none */
    const char *ranks;        /* --ranks "0,2,4-7": the rows of these ranks;
                                 NULL: every rank */
} plot_opts;

/* Plots of a run folder (opts NULL: the whole run): what its outputs hold
 * (a run with --trace none or steps: no timeline, the breakdown's compute
 * not split by class), and then one line to say (NULL: none) naming what
 * was not drawn and the flag that draws it. */
int plot_run_dir(const char *dir, const plot_opts *opts, FILE *say, cp_err *err);

/* A sweep result line as the ranking, tables and plots read it: a small
 * record of the fields they use (numbers, and strings interned in the
 * plot_points that holds it), not the line: a sweep's last phase keeps one
 * per point, the lines themselves stay in results.jsonl.  From the summary
 * when the point ran, else from its parameters (unknown fields: -1, 0 or
 * ""). */
typedef struct plot_point {
    int index;
    char id[17];
    int ok;                    /* status "ok" and a summary */
    int status_ok;             /* status "ok" (the objective's lines) */
    int oom;
    double ttft_s;
    double overlap;            /* overlap_fraction */
    double peak_bytes;         /* peak_bytes_max */
    double capacity_bytes;
    long long prompt;          /* requests[0] prompt tokens; -1 unknown */
    int tp, sp;                /* 0 unknown */
    long long min_tokens;      /* -1 unknown */
    const char *exchange;      /* "" unknown */
    const char *kv_storage;
    int split;                 /* requests[0]'s prefill ran split over the SP
                                  group (the summary's requests[0].split): 1,
                                  copied: 0; -1 when sp <= 1 or not known */
    const char *label;         /* strategy: "tp=4 sp=2 exchange=ring" */
    const char *shape;         /* the label without exchange and kv_storage */
    const char *rest;          /* the label's exchange and kv_storage only ("all":
                                  none) */
    const char *xkey;          /* the exchange of the label ("": not a parameter) */
    const char *mkey;          /* the label without its exchange ("all": nothing) */
    const char *keys;          /* the parameters' names, each ending in "\n" */
    const char *model, *workload, *platform;  /* summary.scenario's; NULL unknown */
    const char *error;         /* a failed point's reason; NULL none */
    int serving;               /* summary.mode "serving" */
    /* the sweep's objective (the line's "objective", rep_points_objective;
     * a line without one: TTFT, lower is better) */
    int has_obj;               /* an objective is set */
    const char *obj_metric, *obj_goal_name;
    double obj;                /* 0 when unknown */
    int obj_goal;              /* REP_GOAL_MIN or REP_GOAL_MAX */
    int obj_known;             /* the point's summary has the metric */
    const char *pareto_metric[2];
    double pareto[2];          /* the Pareto pair's values; NAN unknown */
    int pareto_max[2];         /* their goals are max */
    double mv[6];              /* the values of plot_points.paths (NAN unknown) */
    /* compute seconds per cost source on the busiest rank's scale, in the
     * order of the summary (plot_points.src[src_first, +nsrc)) */
    uint32_t src_first, nsrc;
    /* the ranking (rep_points_rank): ranked, then place of `of`, and with a
     * runner-up its index, the margin (margin_kind 2; 1: null, not finite),
     * the uncertainty (NAN: null) and the tie (-1: null) */
    int ranked, place, of, against, margin_kind, tie;
    double margin, unc;
    /* where the line lies: file (an index the reader gives), offset, bytes */
    int file;
    long long off;
    size_t len;
} plot_point;

/* A cost source's seconds of one point (plot_points.src). */
typedef struct plot_src {
    const char *name;          /* interned */
    double s;
} plot_src;

/* The records of a sweep's points and what they share: the interned
 * strings and the cost sources. */
typedef struct plot_points {
    plot_point *p;
    size_t n, cap;
    plot_src *src;
    size_t nsrc, srccap;
    struct plot_strs *strs;    /* the intern table (reports/sweep_points.c) */
    /* the metric paths every record keeps the value of (mv): the sweep's
     * objective, else both defaults' (rep_points_paths) */
    const char *paths[6];
    int npaths;
    int serving;               /* some point ran in serving mode */
} plot_points;

void plot_points_init(plot_points *s);
void plot_points_free(plot_points *s);
/* An interned copy of text (the set owns it; equal texts, one pointer). */
const char *plot_intern(plot_points *s, const char *text);
/* Append the record of a result line.  as_written: its objective and
 * ranking as the line holds them (a concluded folder, for its plots); else
 * the values of s->paths, for rep_points_objective and rep_points_rank. */
plot_point *plot_points_add(plot_points *s, json_t *line, int as_written);

/* Plots of a sweep folder from the records of its lines (sorted by index). */
int plot_sweep(const char *dir, const plot_points *s, cp_err *err);

/* Whether a ranks before b under their objective: a known value before an
 * unknown one, then the better value, then the lower index. */
int plot_better(const plot_point *a, const plot_point *b);

#endif
