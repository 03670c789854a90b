/* cli: the command line of cpsim (documented in cpsim --help and
 * docs/cpsim.1).
 *
 * Every command's options live in ONE table (cli_options[], cli_options.c):
 * a row names the option (long and short form), the commands that take it,
 * the type of its value and where the parser stores it in cli_opts (an
 * offset, or a setter that checks a compound value), its bounds, help text
 * and value placeholder.  One parser (cli_parse) reads argv against the
 * table for every command; --help (global and per command) and the man page
 * test (tests/check_cli.c) read the same rows.
 *
 * Syntax, for every command:
 *   cpsim COMMAND [ARGUMENTS] [OPTIONS]   (the command is the first argument
 *                                          that is neither an option nor an
 *                                          option's value)
 *   cpsim help [COMMAND]                 (as cpsim [COMMAND] --help)
 *   --name VALUE | --name=VALUE | -c VALUE | -cVALUE
 *   --                                   (ends the options: every argument after
 *                                          it is positional, "-x.yaml" too)
 * A value given as the next argument is never an option: `--out --quiet` is
 * a usage error ("option --out needs a value, got the option --quiet").  A
 * value that begins with '-' is given as --name=VALUE (the form after '=' is
 * taken verbatim).  A workload given as "-" is read from standard input
 * (workloads/workload.h wl_load).  SimGrid's --cfg=VALUE and --log=VALUE (run only) stay in
 * argv: cli_run hands argv to SimGrid (eng_init), which consumes them. */
#ifndef CP_CLI_H
#define CP_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "base/diag.h"

/* The commands, in the order cpsim --help lists them. */
typedef enum {
    CMD_NONE = -1,   /* no command given (cpsim --help, cpsim --version) */
    CMD_RUN,
    CMD_VALIDATE,
    CMD_PLAN,
    CMD_MEMORY,
    CMD_SWEEP,
    CMD_PLOT,
    CMD_COMPARE,
    CLI_NCMDS
} cli_cmd;

/* Sets of commands, as cli_option.cmds holds them. */
#define CLI_CMD(c) (1u << (c))
#define CLI_ALL ((1u << CLI_NCMDS) - 1u)

#define CLI_MAX_SETS 256

/* Every option of every command, as parsed.  Options a command does not
 * take keep these defaults: 0 / NULL, shard 0/1, layers -1. */
typedef struct cli_opts {
    cli_cmd cmd;
    const char **args;                 /* positional arguments after the command */
    int nargs;
    const char *workload;              /* run/validate/plan/memory: args[0]; NULL: none
                                          (run: the bundled default) */
    const char *platform;              /* --platform NAME|FILE */
    const char *sets[CLI_MAX_SETS];    /* --set key=value, in order */
    int nsets;
    const char *out_dir;               /* --out DIR (run: default "out"; sweep: NULL
                                          means out/<sweep name>) */
    int quiet;                         /* --quiet, -q */
    int all_ranks;                     /* --all-ranks (run): a table row per rank */
    int json;                          /* --json */
    int plots;                         /* --plots: gnuplot pictures */
    int trace_gz;                      /* --trace-gz: trace.json.gz */
    int trace_level;                   /* --trace full|steps|none (rep_trace_level);
                                          not given: auto */
    const char *trace_ranks;           /* --trace-ranks LIST; NULL: all */
    int trace_layer_lo, trace_layer_hi; /* --trace-layers A-B; -1: all */
    int accuracy;                      /* --accuracy (validate): the calibration rows,
                                          predicted against measured */
    const char *quant;                 /* --quant FILE (memory) */
    int jobs;                          /* -j, --jobs N (sweep); 0: not given */
    int resume;                        /* --resume (sweep) */
    int shard_i, shard_n;              /* --shard I/N (sweep) */
    int list;                          /* --list (sweep) */
    int no_share;                      /* --no-share (sweep) */
    int merge;                         /* --merge (sweep): args are shard folders */
    int layer_lo, layer_hi;            /* --layers A-B (plot); -1: the whole run */
    int step, has_step;                /* --step N (plot); has_step 0: not given */
    double window_lo, window_hi;       /* --window T0:T1 (plot), simulated ms; 0:0: none */
    const char *ranks;                 /* --ranks LIST (plot): "0,2,4-7"; NULL: all */
    int rank;                          /* --rank N (compare): the run's rank; 0 */
    int device, given_device;          /* --device N (compare): the profile's device */
    const char *emit_profile;          /* --emit-profile DIR (compare); NULL: none */
    int help;                          /* --help, -h */
    int version;                       /* --version */
    unsigned long long given;          /* bit i: the option cli_options[i] was given */
    char located[3][4096];             /* paths found in the data directory (cli_locate) */
} cli_opts;

/* How an option takes its value. */
typedef enum {
    CLI_FLAG,      /* no value; sets the int at `off` to 1 */
    CLI_STRING,    /* a value; the const char * at `off` points at it (the last wins) */
    CLI_INT,       /* a whole number in [min, max] into the int at `off` */
    CLI_CALL,      /* a value handed to set(), which checks and stores it */
    CLI_SIMGRID,   /* SimGrid's own, only as --name=VALUE; left in argv for SimGrid */
} cli_type;

typedef struct cli_option {
    const char *name;          /* the long form with its dashes: "--out" */
    char short_name;           /* 'j' for -j; 0: none */
    unsigned cmds;             /* the commands that take it: CLI_CMD(CMD_RUN) | ... */
    cli_type type;
    size_t off;                /* offsetof(cli_opts, ...): CLI_FLAG, CLI_STRING, CLI_INT */
    int (*set)(cli_opts *o, const char *value, cp_err *err);   /* CLI_CALL */
    long min, max;             /* CLI_INT: inclusive bounds */
    const char *value;         /* the value's placeholder in help ("DIR"); NULL: no value */
    const char *help;          /* what it does (the help writer wraps it) */
    const char *elsewhere;     /* optional: why the other commands refuse it */
} cli_option;

extern const cli_option cli_options[];
extern const int cli_noptions;

/* The commands' texts, indexed by cli_cmd. */
typedef struct cli_command {
    const char *name;
    const char *args;          /* its positional arguments: "[WORKLOAD.yaml]" */
    const char *usage2;        /* a second synopsis line, NULL: none */
    const char *summary;       /* one line in the list of commands */
    const char *about;         /* a paragraph for `cpsim COMMAND --help` */
} cli_command;

extern const cli_command cli_commands[CLI_NCMDS];

/* Parse argv (argv[0]: the program).  On success o holds the command and
 * its options (o->help / o->version: print that and stop; o->cmd may then
 * be CMD_NONE); on a usage error err says what (CP_EXIT_INPUT) and o->cmd
 * is the command when one was recognised.  Release with cli_opts_free (in
 * both cases). */
int cli_parse(int argc, char **argv, cli_opts *o, cp_err *err);
void cli_opts_free(cli_opts *o);

/* The row of an option by its long name ("--out") or short form ("-j");
 * NULL: none. */
const cli_option *cli_find_option(const char *name);

/* Help, generated from the tables (cli_help.c): cmd CMD_NONE is the global
 * help (every command and every option with the commands that take it). */
void cli_help(FILE *out, cli_cmd cmd);
/* The list of commands with their summaries (cpsim without a command). */
void cli_list_commands(FILE *out);

/* The whole command line: parse, print help or errors, run the command;
 * returns the process exit code (main.c). */
int cli_main(int argc, char **argv);

/* The commands; each returns a process exit code.  cli_run hands argc/argv
 * to SimGrid (its --cfg= and --log= are still there). */
int cli_run(const cli_opts *o, int *argc, char **argv);
int cli_validate(const cli_opts *o);
int cli_plan(const cli_opts *o);
int cli_memory_cmd(const cli_opts *o);    /* cli_memory.c */
int cli_sweep(const cli_opts *o);         /* cli_sweep.c */
int cli_plot(const cli_opts *o);          /* cli_plot.c */
int cli_compare(const cli_opts *o);       /* cli_compare.c */

#endif
