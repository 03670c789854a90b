/* plot_fig: the figure set the plots of a run (plot_run.c) and of a sweep
 * (plot_sweep.c) fill, its drawing (plot.c), and what the picture families
 * share (one file each: plot_breakdown.c, plot_timeline.c, plot_memory.c,
 * plot_strategies.c, plot_bars.c, plot_heatmap.c, plot_pareto.c,
 * plot_crossover.c, plot_serving.c), internal to reports/.
 *
 * A figure is one block of the generated gnuplot script plots.gp, drawn
 * twice: on the pngcairo terminal and on the svg terminal.  The data files
 * are written first (atomically), then gnuplot runs once in the plots
 * folder; index.html comes last, every figure with its caption and links to
 * its PNG, SVG and data files. */
#ifndef CP_PLOT_FIG_H
#define CP_PLOT_FIG_H

#include <stdio.h>

#include "reports/plot.h"
#include "reports/report.h"

#define PLOT_FIG_MAX_DATA 4

typedef struct plot_figure {
    char name[64];         /* file stem */
    char title[256];       /* its heading in index.html */
    char desc[512];        /* what it shows, one line, for its caption */
    char data[PLOT_FIG_MAX_DATA][64];   /* the data files it draws (stems) */
    int ndata;
    int w, h;
    char *body;            /* gnuplot commands that draw it */
    size_t body_len;
} plot_figure;

typedef struct plot_figset {
    char dir[4096];        /* where the files are written: a folder beside the
                              plots folder, DIR/plots.tmp-<pid>-XXXXXX, that
                              plot_draw moves into it once all are drawn */
    char final[4096];      /* the plots folder, DIR/plots */
    int done;              /* plot_draw moved the files into place */
    char what[512];        /* the workload and platform, in every caption */
    plot_figure *fig;
    int n;
    size_t cap;
    char **note;           /* lines index.html shows above the figures */
    int nnote;
} plot_figset;

/* The plots of DIR into an empty *fs: drawn in a new folder beside
 * DIR/plots (stale ones of killed processes removed first), so that a
 * failure leaves DIR/plots as it was; plot_figset_free removes it unless
 * plot_draw moved its files into DIR/plots (created when missing). */
int plot_dir_open(const char *dir, plot_figset *fs, cp_err *err);
/* A new figure NAME (file stem) of w x h pixels drawn from the data file
 * DATA.dat (NULL: none yet); its body and description are empty. */
plot_figure *plot_fig_add(plot_figset *fs, const char *name, const char *data,
                          const char *title, int w, int h);
void plot_figset_free(plot_figset *fs);
/* A line index.html shows above the figures, in the order given: a picture
 * not drawn and why. */
void plot_note(plot_figset *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The stream of f's gnuplot commands (its body once the caller closes it),
 * begun with `cmd` (set title, or a multiplot's set multiplot ... title)
 * and a title of two lines: fmt's text, then the workload and platform. */
FILE *plot_fig_body(const plot_figset *fs, plot_figure *f, const char *cmd, const char *fmt,
                    ...) __attribute__((format(printf, 4, 5)));
/* "set multiplot layout R,C title" for n panels in a grid as square as
 * they fill (C columns, R rows); returns R. */
int plot_multiplot(char *buf, size_t len, int n);
/* s as a gnuplot double-quoted literal (a newline becomes \n). */
void plot_gp_str(FILE *f, const char *s);
/* The data file NAME.dat of the plots folder, opened atomically. */
int plot_data_open(const plot_figset *fs, const char *name, rep_file *rf, cp_err *err);
/* Write plots.gp, run gnuplot, write index.html under `heading`, then move
 * every file into the plots folder, each whole (index.html last). */
int plot_draw(plot_figset *fs, const char *heading, cp_err *err);

/* ---- shared by the sweep pictures ------------------------------------------------ */

/* The points of a sweep and what the pictures key them by. */
typedef struct plot_sweepset {
    const plot_point *p;
    size_t n;
    json_t *errs;          /* the sweep's source_errors.json (NULL: none): ties */
    long long *L;          /* prompt lengths that ran, ascending */
    size_t nl;
    long long *tps, *sps;  /* TP and SP degrees, ascending */
    size_t ntp, nsp;
    const char **labels;   /* the strategies, in the order of their first point */
    size_t ns;
    int *color, *marker;   /* per strategy: an index into plot_colors and a
                              gnuplot point type */
    int factored;          /* colours say the exchange (the rest of the label),
                              markers the shape; else both the strategy */
    int by_exchange;       /* colours say the exchange from the fixed table
                              (plot_exchange_style); factored is set too */
    const char *dir;       /* the sweep folder */
    const plot_points *set; /* the records p lies in (their cost sources) */
} plot_sweepset;

/* Twelve colours that stay apart on white, from Paul Tol's qualitative
 * schemes (bright, vibrant, muted); no red, which marks out of memory. */
#define PLOT_NCOLORS 12
extern const char *const plot_colors[PLOT_NCOLORS];
/* Thirteen gnuplot point types, filled shapes first. */
#define PLOT_NMARKERS 13
extern const int plot_markers[PLOT_NMARKERS];

/* The colour (an index into plot_colors) and marker (an index into
 * plot_markers) of an exchange in every sweep picture, from a fixed table
 * of the values of parallel.exchange; 0 for a name the table lacks. */
int plot_exchange_style(const char *exchange, int *color, int *marker);
/* Whether an exchange of the table has colour c. */
int plot_color_taken(int c);

/* The point a strategy shows at a prompt length: its best that fits, else
 * its best out of memory; NULL when none ran. */
const plot_point *plot_shown(const plot_sweepset *ss, const char *label, long long L);
/* The x tics of prompt lengths: 1K, 2K, ... */
void plot_prompt_tics(FILE *b, const long long *L, size_t nl);
/* A legend that fits many entries: outside on the right, in columns of at
 * most as many rows as the canvas height h holds. */
void plot_key_right(FILE *b, int h);
/* The width a figure of height h needs for a legend of that many entries
 * beside a plot of PLOT_WIDTH: ~320 px more per further column. */
int plot_width_for_key(size_t entries, int h);

int plot_strategies(plot_figset *fs, const plot_sweepset *ss, cp_err *err);
int plot_bars(plot_figset *fs, const plot_sweepset *ss, cp_err *err);
int plot_heatmaps(plot_figset *fs, const plot_sweepset *ss, cp_err *err);
int plot_paretos(plot_figset *fs, const plot_sweepset *ss, cp_err *err);
int plot_crossover(plot_figset *fs, const plot_sweepset *ss, cp_err *err);

/* ---- shared by the run pictures -------------------------------------------------- */

/* Op classes of the run pictures, from a trace category (trace.c: the
 * kernel class, the collective's name, "hop"); colours: Paul Tol's. */
enum {
    PLOT_CL_GEMM,
    PLOT_CL_ATTN,
    PLOT_CL_INDEXER,
    PLOT_CL_MOE_GEMM,
    PLOT_CL_MOE_ROUTE,
    PLOT_CL_MEMBOUND,
    PLOT_CL_COLL,
    PLOT_CL_HOP,
    PLOT_CL_OTHER,
    PLOT_CL_COUNT
};
extern const char *const plot_class_name[PLOT_CL_COUNT];
extern const char *const plot_class_color[PLOT_CL_COUNT];

/* An op of trace.json ("X" events; step markers left out), times in ms as
 * the trace gives them (whole nanoseconds). */
typedef struct plot_event {
    int rank, stream;      /* stream: ST_COMPUTE, ST_COMM, ST_COMM2 */
    int cl, layer, step;
    double t0, t1;
} plot_event;

typedef struct plot_trace {
    plot_event *e;
    size_t n;
    int nranks;            /* 1 + the highest rank */
} plot_trace;

/* A row of a serving run's steps.csv (sim/serve): one step as it ran on its
 * replica, times in simulated seconds. */
typedef struct plot_step {
    int step, replica;
    double t0, t1;
    int decodes, prefills; /* requests in the step: decoding, prefilling (a
                              prefill chunk counts as one) */
    long long tokens;      /* tokens the step computed */
} plot_step;

typedef struct plot_steps {
    plot_step *v;          /* in the file's order */
    size_t n;
} plot_steps;

/* DIR/steps.csv into an empty *st: 0 read, 1 when the folder has none (*st
 * stays empty), -1 on an error (err says where). */
int plot_read_steps(const char *dir, plot_steps *st, cp_err *err);

/* A run folder as its pictures read it: summary.json and the trace's ops;
 * of a serving run (summary "mode": "serving") its steps.csv too. */
typedef struct plot_run {
    const char *dir;
    json_t *summary;
    plot_trace tr;
    int serving;           /* summary.json's mode is "serving" */
    plot_steps steps;      /* serving: steps.csv (empty when the folder has none) */
} plot_run;

int plot_timeline(plot_figset *fs, const plot_run *run, const plot_opts *o, cp_err *err);
int plot_memory(plot_figset *fs, const plot_run *run, cp_err *err);
int plot_breakdown(plot_figset *fs, const plot_run *run, cp_err *err);
/* A serving run's pictures: ttft-cdf and tpot-cdf from summary.json's
 * requests, batch from steps.csv (plot_serving.c); a picture with nothing
 * to draw is left out with a note. */
int plot_serving(plot_figset *fs, const plot_run *run, cp_err *err);

#endif
