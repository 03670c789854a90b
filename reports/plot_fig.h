/* plot_fig: the figure set the plots of a run (plot_run.c) and of a sweep
 * (plot_sweep.c) fill, and its drawing (plot.c), internal to reports/.
 *
 * A figure is one block of the generated gnuplot script plots.gp, drawn
 * twice: on the pngcairo terminal and on the svg terminal.  The data files
 * are written first (atomically), then gnuplot runs once in the plots
 * folder; index.html comes last. */
#ifndef CP_PLOT_FIG_H
#define CP_PLOT_FIG_H

#include <stdio.h>

#include "reports/plot.h"
#include "reports/report.h"

typedef struct plot_figure {
    char name[64];         /* file stem */
    char title[256];       /* for index.html */
    int w, h;
    char *body;            /* gnuplot commands that draw it */
} plot_figure;

typedef struct plot_figset {
    char dir[4096];        /* the plots folder */
    plot_figure *fig;
    int n, cap;
} plot_figset;

/* The plots folder DIR/plots (created) into an empty *fs. */
int plot_dir_open(const char *dir, plot_figset *fs, cp_err *err);
/* A new figure NAME (file stem) of w x h pixels; its body is empty. */
plot_figure *plot_fig_add(plot_figset *fs, const char *name, const char *title, int w, int h);
void plot_figset_free(plot_figset *fs);
/* A memory stream for a figure's gnuplot commands (*buf when closed). */
FILE *plot_body_open(char **buf, size_t *len);
/* s as a gnuplot double-quoted literal. */
void plot_gp_str(FILE *f, const char *s);
/* The data file NAME.dat of the plots folder, opened atomically. */
int plot_data_open(const plot_figset *fs, const char *name, rep_file *rf, cp_err *err);
/* Write plots.gp, run gnuplot, write index.html under `heading`. */
int plot_draw(const plot_figset *fs, const char *heading, cp_err *err);

#endif
