/* cli_plot: `cpsim plot DIR [--layers A-B]`: the plots of a run folder or
 * of a sweep folder (reports/plot.h), whichever DIR holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reports/plot.h"
#include "sim/cli/cli_commands.h"
#include "sim/sweep/sweep.h"

static void usage(FILE *f)
{
    fputs("Usage: cpsim plot DIR [--layers A-B]\n"
          "\n"
          "Draws the plots of a run folder (summary.json, trace.json, memory.csv: timeline\n"
          "and memory) or of a sweep folder (results.jsonl: TTFT and overlap against prompt\n"
          "length per strategy, TP x SP heat maps) with gnuplot, as PNG and SVG, into\n"
          "DIR/plots, with an index.html that shows them all.\n"
          "  --layers A-B  the timeline shows layers A to B only (A-A: one layer)\n",
          f);
}

/* "A-B" or "A": a window of decoder layers. */
static int parse_layers(const char *v, plot_opts *o, cp_err *err)
{
    char *end;
    long a = strtol(v, &end, 10), b = a;
    if (end != v && *end == '-')
        b = strtol(end + 1, &end, 10);
    /* 1e6: far beyond any model's layer count; bounds the int conversion */
    if (end == v || *end || a < 0 || b < a || b > 1000000)
        return cp_fail(err, CP_EXIT_INPUT, "--layers %s: expected A-B with 0 <= A <= B", v);
    o->layer_lo = (int)a;
    o->layer_hi = (int)b;
    return 0;
}

static int parse(int argc, char **argv, const char **dir, plot_opts *o, cp_err *err)
{
    *dir = NULL;
    o->layer_lo = o->layer_hi = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--layers=", 9) == 0) {
            if (parse_layers(a + 9, o, err) < 0)
                return -1;
        } else if (strcmp(a, "--layers") == 0) {
            if (i + 1 >= argc)
                return cp_fail(err, CP_EXIT_INPUT, "option --layers needs a value");
            if (parse_layers(argv[++i], o, err) < 0)
                return -1;
        } else if (a[0] == '-' && a[1]) {
            return cp_fail(err, CP_EXIT_INPUT, "plot: unknown option %s", a);
        } else if (!*dir) {
            *dir = a;
        } else {
            return cp_fail(err, CP_EXIT_INPUT, "plot: unexpected argument \"%s\" (one folder)",
                           a);
        }
    }
    if (!*dir)
        return cp_fail(err, CP_EXIT_INPUT, "plot needs a run or sweep folder");
    return 0;
}

static int exists(const char *dir, const char *file)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return stat(path, &st) == 0;
}

int cli_plot(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return CP_EXIT_OK;
        }
    const char *dir;
    plot_opts o;
    cp_err err = {0};
    if (parse(argc, argv, &dir, &o, &err) < 0) {
        fprintf(stderr, "cpsim: %s\nTry 'cpsim plot --help'.\n", err.msg);
        return CP_EXIT_INPUT;
    }
    int rc;
    if (exists(dir, "results.jsonl"))
        rc = sweep_plot_dir(dir, &err);
    else if (exists(dir, "summary.json"))
        rc = plot_run_dir(dir, &o, &err);
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
