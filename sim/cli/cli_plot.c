/* cli_plot: `cpsim plot DIR [--layers A-B] [--step N] [--window T0:T1]
 * [--ranks LIST]`: the plots of a run folder or of a sweep folder
 * (reports/plot.h), whichever DIR holds; the options pick a window of a
 * run's timeline, drawn in files of its own beside the whole run's. */
#include <stdio.h>
#include <sys/stat.h>

#include "reports/plot.h"
#include "sim/cli/cli.h"
#include "sim/sweep/sweep.h"

static int exists(const char *dir, const char *file)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return stat(path, &st) == 0;
}

/* The first timeline option given, NULL when none. */
static const char *timeline_option(const cli_opts *o)
{
    return o->layer_lo >= 0                  ? "--layers"
           : o->has_step                     ? "--step"
           : o->window_hi > o->window_lo     ? "--window"
           : o->ranks                        ? "--ranks"
                                             : NULL;
}

int cli_plot(const cli_opts *o)
{
    const char *dir = o->args[0];
    plot_opts po = {.layer_lo = o->layer_lo,
                    .layer_hi = o->layer_hi,
                    .step = o->has_step ? o->step : -1,
                    .win_lo = o->window_lo,
                    .win_hi = o->window_hi,
                    .ranks = o->ranks};
    cp_err err = {0};
    int rc;
    const char *tl = timeline_option(o);
    if (exists(dir, "results.jsonl"))
        rc = tl ? cp_fail(&err, CP_EXIT_INPUT, "%s: %s is a sweep folder; %s picks the window "
                          "of a run's timeline", tl, dir, tl)
                : sweep_plot_dir(dir, &err);
    else if (exists(dir, "summary.json"))
        rc = plot_run_dir(dir, &po, stdout, &err);
    else
        rc = cp_fail(&err, CP_EXIT_INPUT, "%s: neither a run folder (summary.json) nor a sweep "
                     "folder (results.jsonl)", dir);
    if (rc < 0) {
        fprintf(stderr, "cpsim: %s\n", err.msg);
        return err.code ? err.code : CP_EXIT_INTERNAL;
    }
    printf("wrote %s/plots/index.html\n", dir);
    return CP_EXIT_OK;
}
