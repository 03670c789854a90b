/* cli: the command line of cpsim (documented in cpsim --help and
 * docs/cpsim.1). */
#ifndef CP_CLI_H
#define CP_CLI_H

#include <stdio.h>
#include "workloads/diag.h"

typedef enum { CMD_RUN, CMD_VALIDATE, CMD_PLAN, CMD_HELP, CMD_VERSION } cli_cmd;

#define CLI_MAX_SETS 256

typedef struct cli_opts {
    cli_cmd cmd;
    const char *workload;              /* NULL: the bundled default */
    const char *platform;              /* --platform NAME|FILE */
    const char *sets[CLI_MAX_SETS];    /* --set key=value, in order */
    int nsets;
    const char *out_dir;               /* --out DIR (default "out") */
    int quiet;                         /* --quiet */
    int json;                          /* --json (plan) */
    int plots;                         /* --plots (run): gnuplot pictures in --out */
    int accuracy;                      /* --accuracy (validate): the calibration rows,
                                          predicted against measured */
} cli_opts;

/* Parse argv.  SimGrid's own --cfg=... and --log=... options are skipped
 * here (SimGrid consumes them).  Errors are usage errors (CP_EXIT_INPUT). */
int cli_parse(int argc, char **argv, cli_opts *o, cp_err *err);
void cli_usage(FILE *out);

/* The commands; each returns a process exit code. */
int cli_run(const cli_opts *o, int *argc, char **argv);
int cli_validate(const cli_opts *o);
int cli_plan(const cli_opts *o);

#endif
