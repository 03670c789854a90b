/* cli: the option table, the commands, the one parser and the command line
 * (see cli.h).  The help writer is cli_help.c. */
#include "sim/cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "reports/report.h"
#include "sim/sweep/sweep.h"
#include "base/datadir.h"

/* ---- the setters of compound values ------------------------------------------------------ */

static int set_override(cli_opts *o, const char *v, cp_err *err)
{
    if (!strchr(v, '=') || v[0] == '=')
        return cp_fail(err, CP_EXIT_INPUT, "--set %s: expected KEY=VALUE", v);
    if (o->nsets == CLI_MAX_SETS)
        return cp_fail(err, CP_EXIT_INPUT, "too many --set options (at most %d)", CLI_MAX_SETS);
    o->sets[o->nsets++] = v;
    return 0;
}

static int set_shard(cli_opts *o, const char *v, cp_err *err)
{
    return sweep_parse_shard(v, &o->shard_i, &o->shard_n, err);
}

/* "A-B" or "A": a window of decoder layers, for option opt. */
static int layer_range(const char *opt, const char *v, int *lo, int *hi, cp_err *err)
{
    char *end;
    errno = 0;
    long a = strtol(v, &end, 10), b = a;
    if (end != v && *end == '-')
        b = strtol(end + 1, &end, 10);
    /* 1e6: far beyond any model's layer count; bounds the int conversion */
    if (end == v || *end || errno || a < 0 || b < a || b > 1000000)
        return cp_fail(err, CP_EXIT_INPUT, "%s %s: expected A-B with 0 <= A <= B", opt, v);
    *lo = (int)a;
    *hi = (int)b;
    return 0;
}

static int set_layers(cli_opts *o, const char *v, cp_err *err)
{
    return layer_range("--layers", v, &o->layer_lo, &o->layer_hi, err);
}

static int set_trace_layers(cli_opts *o, const char *v, cp_err *err)
{
    return layer_range("--trace-layers", v, &o->trace_layer_lo, &o->trace_layer_hi, err);
}

static int set_trace(cli_opts *o, const char *v, cp_err *err)
{
    static const char *const levels[] = {"full", "steps", "none", NULL}; /* rep_trace_level */
    for (int i = 0; levels[i]; i++)
        if (strcmp(levels[i], v) == 0) {
            o->trace_level = i;
            return 0;
        }
    return cp_fail(err, CP_EXIT_INPUT, "--trace %s: expected full, steps or none", v);
}

static int set_trace_ranks(cli_opts *o, const char *v, cp_err *err)
{
    if (rep_rank_list("--trace-ranks", v, NULL, 0, err) != 0)
        return -1;
    o->trace_ranks = v;
    return 0;
}

/* N: a step of the run (plot --step). */
/* N: a device of a profile (compare --device); 255: the device ids one
 * host numbers (CUDA_VISIBLE_DEVICES indices stay far below). */
static int set_device(cli_opts *o, const char *v, cp_err *err)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end || errno || n < 0 || n > 255)
        return cp_fail(err, CP_EXIT_INPUT, "--device %s: expected a whole number in [0, 255]",
                       v);
    o->device = (int)n;
    o->given_device = 1;
    return 0;
}

static int set_step(cli_opts *o, const char *v, cp_err *err)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    /* 1e6: far beyond any run's step count; bounds the int conversion */
    if (end == v || *end || errno || n < 0 || n > 1000000)
        return cp_fail(err, CP_EXIT_INPUT, "--step %s: expected a whole number in [0, 1000000]",
                       v);
    o->step = (int)n;
    o->has_step = 1;
    return 0;
}

/* "T0:T1": a window of simulated time in ms, 0 <= T0 < T1. */
static int set_window(cli_opts *o, const char *v, cp_err *err)
{
    char *end, *end2 = NULL;
    errno = 0;
    double a = strtod(v, &end), b = -1;
    if (end != v && *end == ':')
        b = strtod(end + 1, &end2);
    if (end == v || *end != ':' || !end2 || end2 == end + 1 || *end2 || errno ||
        !isfinite(a) || !isfinite(b) || a < 0 || b <= a)
        return cp_fail(err, CP_EXIT_INPUT, "--window %s: expected T0:T1 in ms with "
                       "0 <= T0 < T1", v);
    o->window_lo = a;
    o->window_hi = b;
    return 0;
}

static int set_ranks(cli_opts *o, const char *v, cp_err *err)
{
    if (rep_rank_list("--ranks", v, NULL, 0, err) != 0)
        return -1;
    o->ranks = v;
    return 0;
}

/* ---- the tables ------------------------------------------------------------------------ */

#define RUN CLI_CMD(CMD_RUN)
#define VALIDATE CLI_CMD(CMD_VALIDATE)
#define PLAN CLI_CMD(CMD_PLAN)
#define MEMORY CLI_CMD(CMD_MEMORY)
#define SWEEP CLI_CMD(CMD_SWEEP)
#define PLOT CLI_CMD(CMD_PLOT)
#define COMPARE CLI_CMD(CMD_COMPARE)
#define OFF(field) offsetof(cli_opts, field)
#define STR_(x) #x
#define STR(x) STR_(x) /* a number macro as a string literal */

/* Every option of every command, in the order help lists them. */
const cli_option cli_options[] = {
    {.name = "--platform", .cmds = RUN | VALIDATE | PLAN | MEMORY, .type = CLI_STRING,
     .off = OFF(platform), .value = "NAME|FILE",
     .help = "use this platform instead of the workload's: a preset (h100-sxm-8, "
             "h100-sxm-8-500w, h200-sxm-8, h200-sxm-8-tcp100, b200-8, ascend-910b-8, "
             "ascend-a3-16), a preset YAML file or a SimGrid XML platform"},
    {.name = "--set", .cmds = RUN | VALIDATE | PLAN | MEMORY, .type = CLI_CALL,
     .set = set_override, .value = "KEY=VALUE",
     .help = "override a workload key by dotted path, list items by index "
             "(parallel.tp=4, requests.0.prompt_tokens=65536, platform.nodes=2); the value "
             "is YAML; repeatable, applied in order"},
    {.name = "--out", .short_name = 'o', .cmds = RUN | SWEEP | COMPARE, .type = CLI_STRING,
     .off = OFF(out_dir), .value = "DIR",
     .help = "output folder, created if missing (run: default out; sweep: default "
             "out/<sweep name>, or the folder that merged shards join into; compare: default "
             "the run folder)"},
    {.name = "--quiet", .short_name = 'q', .cmds = RUN | SWEEP | COMPARE, .type = CLI_FLAG,
     .off = OFF(quiet), .help = "print nothing on success (sweep: no progress, no tables)"},
    {.name = "--plots", .cmds = RUN | SWEEP | COMPARE, .type = CLI_FLAG, .off = OFF(plots),
     .help = "also draw the plots (gnuplot) into DIR/plots, with an index.html"},
    {.name = "--trace", .cmds = RUN, .type = CLI_CALL, .set = set_trace, .value = "LEVEL",
     .help = "what trace.json holds: full (every op and the memory counters), steps (one "
             "span per rank and step) or none (no trace file); default: full unless the full "
             "trace would pass " STR(REP_TRACE_AUTO_MB) " MB, then steps, and the run says so "
             "(with --plots or --trace-layers: full)"},
    {.name = "--trace-ranks", .cmds = RUN, .type = CLI_CALL, .set = set_trace_ranks,
     .value = "LIST", .help = "the trace of these ranks only (0,2,4-7)"},
    {.name = "--trace-layers", .cmds = RUN, .type = CLI_CALL, .set = set_trace_layers,
     .value = "A-B", .help = "the trace's ops of decoder layers A to B only (the steps' "
                             "markers and the memory counters stay)"},
    {.name = "--trace-gz", .cmds = RUN, .type = CLI_FLAG, .off = OFF(trace_gz),
     .help = "write the trace gzip-compressed, as trace.json.gz (Perfetto opens it as it is; "
             "a thirtieth of the size; compressed on a thread of its own while the trace is "
             "written)"},
    {.name = "--all-ranks", .cmds = RUN, .type = CLI_FLAG, .off = OFF(all_ranks),
     .help = "print a table row for every rank, and write memory.csv rows per rank (by "
             "default ranks in a row whose figures print the same share one table row, 0-7 "
             "... (8 identical), and ranks in a row with the same timeline share "
             "memory.csv's rows, named in its ranks column)"},
    {.name = "--json", .cmds = VALIDATE | PLAN | MEMORY, .type = CLI_FLAG, .off = OFF(json),
     .help = "print JSON: the plan (cpsim.plan/1), the calibration accuracy "
             "(cpsim.accuracy/1), the memory report (cpsim.memory/1)"},
    {.name = "--accuracy", .cmds = VALIDATE, .type = CLI_FLAG, .off = OFF(accuracy),
     .help = "every row of the platform's calibration profile, predicted against measured, "
             "with the median and worst error per kernel class (the workload is optional)"},
    {.name = "--quant", .cmds = MEMORY, .type = CLI_STRING, .off = OFF(quant), .value = "FILE",
     .help = "an msModelSlim quant_model_description.json (replaces "
             "precision.quant_description)"},
    /* 4096: as options.jobs (sweep_spec.c) */
    {.name = "--jobs", .short_name = 'j', .cmds = SWEEP, .type = CLI_INT, .off = OFF(jobs),
     .min = 1, .max = 4096, .value = "N",
     .help = "run up to N simulations at a time (default: the sweep's options.jobs, else the "
             "number of cores)"},
    {.name = "--resume", .cmds = SWEEP, .type = CLI_FLAG, .off = OFF(resume),
     .help = "run only the points that DIR/results.jsonl lacks (a killed sweep continues)"},
    {.name = "--shard", .cmds = SWEEP, .type = CLI_CALL, .set = set_shard, .value = "I/N",
     .help = "run the I-th of N disjoint slices (I from 0; point index % N), e.g. one per "
             "Slurm array task; join their folders with --merge"},
    {.name = "--list", .cmds = SWEEP, .type = CLI_FLAG, .off = OFF(list),
     .help = "print the points (index, id, parameters) and run nothing"},
    {.name = "--no-share", .cmds = SWEEP, .type = CLI_FLAG, .off = OFF(no_share),
     .help = "simulate every point, even those whose plan, platform and settings equal "
             "another's (shared by default)"},
    {.name = "--merge", .cmds = SWEEP, .type = CLI_FLAG, .off = OFF(merge),
     .help = "the arguments are shard folders of one sweep: join them into --out DIR"},
    {.name = "--layers", .cmds = PLOT, .type = CLI_CALL, .set = set_layers, .value = "A-B",
     .help = "the timeline shows layers A to B only (A or A-A: one layer), in the first step "
             "that has them unless --step says which"},
    {.name = "--step", .cmds = PLOT | COMPARE, .type = CLI_CALL, .set = set_step, .value = "N",
     .help = "the timeline shows step N of the run only (0: the first prefill step; the "
             "trace's args.step); compare: the run's ops of step N only"},
    {.name = "--window", .cmds = PLOT, .type = CLI_CALL, .set = set_window, .value = "T0:T1",
     .help = "the timeline shows simulated time T0 to T1 ms only (with --step or --layers: "
             "within their window)"},
    {.name = "--ranks", .cmds = PLOT, .type = CLI_CALL, .set = set_ranks, .value = "LIST",
     .help = "the timeline shows these ranks only: a list of ranks and ranges, 0,2,4-7"},
    /* 1 << 20 ranks: far beyond any run cpsim simulates (README "Examples and speed") */
    {.name = "--rank", .cmds = COMPARE, .type = CLI_INT, .off = OFF(rank), .min = 0,
     .max = 1 << 20, .value = "N",
     .help = "the run's rank to hold against the profile (default 0)"},
    {.name = "--device", .cmds = COMPARE, .type = CLI_CALL, .set = set_device, .value = "N",
     .help = "the profile's device to compare (default: the lowest that ran a kernel; a "
             "trace of one process driving several GPUs holds them all)"},
    {.name = "--emit-profile", .cmds = COMPARE, .type = CLI_STRING, .off = OFF(emit_profile),
     .value = "DIR",
     .help = "also write a calibration profile into DIR: the run platform's profile with "
             "the run's GEMMs and FA2 prefill attention as rows of its tables, timed by the "
             "trace's kernels (a source column names the trace); set the platform's "
             "device.calibration to DIR to price from it"},
    {.name = "--cfg", .cmds = RUN, .type = CLI_SIMGRID, .value = "KEY:VALUE",
     .help = "a SimGrid configuration item (--cfg=maxmin/precision:1e-9), checked and "
             "passed to SimGrid; cpsim sets the network model itself",
     .elsewhere = "SimGrid options reach only the simulation of cpsim run (a sweep's points "
                  "run with cpsim's settings)"},
    {.name = "--log", .cmds = RUN, .type = CLI_SIMGRID, .value = "SETTING",
     .help = "a SimGrid logging threshold (--log=root.thres:critical), passed to SimGrid",
     .elsewhere = "SimGrid options reach only the simulation of cpsim run (a sweep's points "
                  "run with cpsim's settings)"},
    {.name = "--help", .short_name = 'h', .cmds = CLI_ALL, .type = CLI_FLAG, .off = OFF(help),
     .help = "print this help and exit (cpsim COMMAND --help: the options of one command)"},
    {.name = "--version", .cmds = CLI_ALL, .type = CLI_FLAG, .off = OFF(version),
     .help = "print the version and exit"},
};
const int cli_noptions = (int)(sizeof cli_options / sizeof cli_options[0]);
/* cli_opts.given has a bit per row */
_Static_assert(sizeof cli_options / sizeof cli_options[0] <= 64, "too many options for given");

const cli_command cli_commands[CLI_NCMDS] = {
    [CMD_RUN] = {
        "run", "[WORKLOAD.yaml]", NULL,
        "simulate (default workload: workloads/default.yaml) and write summary.json, "
        "trace.json, memory.csv",
        "Simulates the workload (default: the bundled workloads/default.yaml, the "
        "Qwen3-Omni-30B-A3B thinker prefilling 32K tokens on one 8-GPU H100 SXM node at TP8), "
        "prints a table and writes summary.json, trace.json (Chrome trace format; open it in "
        "Perfetto) and memory.csv into the output folder, atomically."},
    [CMD_VALIDATE] = {
        "validate", "WORKLOAD.yaml", "validate [WORKLOAD.yaml] --accuracy [--json]",
        "load and check everything, print the resolved scenario, simulate nothing",
        "Loads and checks the workload, its model config and platform, and prints the "
        "resolved scenario; nothing is simulated.  With --accuracy: every row of the "
        "platform's calibration profile, predicted (the table model with the row's size "
        "left out of its series, and the analytic model alone) against measured, and the "
        "median and worst error per kernel class."},
    [CMD_PLAN] = {
        "plan", "WORKLOAD.yaml", NULL, "print the per-rank op programs (--json: as JSON)",
        "Prints the per-rank op programs: name, layer, step, stream, kernel class, shapes, "
        "dtype, FLOPs, bytes, token layout, layer phase, collectives and dependencies, and "
        "for every kernel its price (cost_s) and where it came from (cost_src)."},
    [CMD_MEMORY] = {
        "memory", "WORKLOAD.yaml", NULL,
        "static weights of one rank by family and category, plain estimate vs materialized",
        "Static weights of rank 0: the plain TP-sharded estimate (every tensor at "
        "precision.weights) and the weights the engine materializes (quantized and float "
        "tensors, scales and offsets, fp32 scales, derived W_UK_T / W_UV, the full "
        "projections of DSA CP, layer sharding), by tensor family and category, with the "
        "steps that lead from one to the other."},
    [CMD_SWEEP] = {
        "sweep", "SWEEP.yaml", "sweep --merge DIR... --out DIR [--plots] [--quiet]",
        "a grid of scenarios, one child process per simulation",
        "Runs every point of the sweep's grid that passes its `where` conditions, each in a "
        "child process, up to N at a time, and appends one JSON line per point to "
        "DIR/results.jsonl; at the end writes results.csv, best.csv and split.csv and prints "
        "the tables."},
    [CMD_PLOT] = {
        "plot", "DIR", NULL, "gnuplot pictures of a run or sweep folder",
        "Draws the plots of a run folder (summary.json, trace.json, memory.csv: the per-rank "
        "breakdown, the timeline, memory by category) or of a sweep folder (results.jsonl: "
        "TTFT and overlap against prompt length per strategy, or bars of TTFT and peak memory "
        "for one prompt length, TP x SP heat maps of the winning exchange, Pareto plots of "
        "TTFT against peak memory, split against copied steps) with gnuplot, as PNG and SVG, "
        "into DIR/plots, with their data, the script plots.gp and an index.html that shows "
        "them all."},
    [CMD_COMPARE] = {
        "compare", "RUN_DIR PROFILE.json", NULL,
        "hold a run against a torch.profiler trace of the real engine, per kernel class",
        "Reads a Chrome-format trace of torch.profiler (Kineto; gzip or plain) and the run "
        "folder's trace.json (written with every op), reduces both to kernel classes (by the "
        "profile's record_function ranges named layer.N, step.* or as cpsim's ops, else by "
        "kernel-name rules) and prints per class the kernel counts, measured and simulated "
        "device time and the error, the busy, idle and exposed communication time, and the "
        "kernels no rule matched; writes compare.csv (and with --plots the paired bars)."},
};

/* ---- the parser ------------------------------------------------------------------------ */

/* An argument that is an option: "-x...", "--x..."; "-" alone is a value. */
static int is_option(const char *a)
{
    return a[0] == '-' && a[1] != '\0';
}

const cli_option *cli_find_option(const char *name)
{
    for (int i = 0; i < cli_noptions; i++) {
        const cli_option *r = &cli_options[i];
        if (strcmp(name, r->name) == 0 ||
            (r->short_name && name[0] == '-' && name[1] == r->short_name && !name[2]))
            return r;
    }
    return NULL;
}

/* The row argument `a` names, with the option as spelled (into name) and
 * the value joined to it (--opt=VALUE, -jVALUE; NULL: none).  NULL: no row
 * (name then holds the unknown option). */
static const cli_option *lookup(const char *a, char *name, size_t len, const char **joined)
{
    *joined = NULL;
    if (a[1] == '-') {
        const char *eq = strchr(a, '=');
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        snprintf(name, len, "%.*s", (int)n, a);
        if (eq)
            *joined = eq + 1;
        return cli_find_option(name);
    }
    snprintf(name, len, "-%c", a[1]);
    const cli_option *r = cli_find_option(name);
    if (r && a[2]) {
        if (r->type == CLI_FLAG || r->type == CLI_SIMGRID) {
            snprintf(name, len, "%s", a);   /* -qx: not an option */
            return NULL;
        }
        *joined = a + 2;
    }
    return r;
}

/* ---- SimGrid items: checked here, since SimGrid aborts on a bad one ---------- */

typedef enum { SG_ENUM, SG_BOOL, SG_POSITIVE, SG_NONNEG, SG_KIB } sg_kind;

/* The --cfg items cpsim passes on (SimGrid 3.32's names).  Left out: the
 * items eng_run sets itself so that collectives match their closed forms
 * (network/model, network/crosstraffic, network/TCP-gamma, host/model:
 * simgrid-notes.md section 0; the workload's simulation.network_model
 * chooses), and tracing, SMPI, model checking, plugins and debugging,
 * which do not apply to cpsim's simulation. */
static const struct sg_item {
    const char *key;
    sg_kind kind;
    const char *values; /* SG_ENUM: separated by '|' */
} sg_items[] = {
    {"network/weight-S", SG_NONNEG, NULL},
    {"network/latency-factor", SG_POSITIVE, NULL},
    {"network/bandwidth-factor", SG_POSITIVE, NULL},
    {"network/maxmin-selective-update", SG_BOOL, NULL},
    {"network/optim", SG_ENUM, "Full|Lazy"},
    {"network/solver", SG_ENUM, "maxmin|bmf|fairbottleneck"},
    {"cpu/optim", SG_ENUM, "Full|Lazy|TI"},
    {"cpu/maxmin-selective-update", SG_BOOL, NULL},
    {"maxmin/precision", SG_POSITIVE, NULL},
    {"surf/precision", SG_POSITIVE, NULL},
    {"bmf/precision", SG_POSITIVE, NULL},
    {"contexts/factory", SG_ENUM, "thread|raw|ucontext|boost"},
    {"contexts/stack-size", SG_KIB, NULL},
    {"contexts/guard-size", SG_KIB, NULL},
};

static int in_list(const char *v, const char *list)
{
    size_t n = strlen(v);
    for (const char *p = list; p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL)
        if (strncmp(p, v, n) == 0 && (p[n] == '|' || p[n] == '\0'))
            return 1;
    return 0;
}

static int check_cfg(const char *item, cp_err *err)
{
    const char *colon = strchr(item, ':');
    char key[64];
    snprintf(key, sizeof key, "%.*s", colon ? (int)(colon - item) : (int)strlen(item), item);
    const char *v = colon ? colon + 1 : "";
    for (size_t i = 0; i < sizeof sg_items / sizeof *sg_items; i++) {
        const struct sg_item *it = &sg_items[i];
        if (strcmp(it->key, key) != 0)
            continue;
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        int number = end != v && !*end && !errno && isfinite(x);
        int ok = it->kind == SG_ENUM   ? in_list(v, it->values)
               : it->kind == SG_BOOL   ? in_list(v, "yes|no|on|off|true|false|1|0")
               : it->kind == SG_NONNEG ? number && x >= 0
               /* a stack or guard of up to 1 GiB (our bound; SimGrid's default 8 MiB) */
               : it->kind == SG_KIB    ? number && x >= 1 && x <= 1048576 && x == floor(x)
                                       : number && x > 0;
        if (ok)
            return 0;
        const char *want = it->kind == SG_ENUM   ? it->values
                         : it->kind == SG_BOOL   ? "yes or no"
                         : it->kind == SG_NONNEG ? "a number >= 0"
                         : it->kind == SG_KIB    ? "a whole number of KiB in [1, 1048576]"
                                                 : "a number > 0";
        return cp_fail(err, CP_EXIT_INPUT, "--cfg=%s: %s takes %s, got \"%s\"", item, key, want,
                       v);
    }
    static const char *const set_by_cpsim[] = {"network/model", "network/crosstraffic",
                                               "network/TCP-gamma", "host/model", NULL};
    for (const char *const *k = set_by_cpsim; *k; k++)
        if (strcmp(*k, key) == 0)
            return cp_fail(err, CP_EXIT_INPUT, "--cfg=%s: cpsim sets %s itself so that "
                           "transfers match their closed forms (the workload's "
                           "simulation.network_model chooses cm02 or l07)", item, key);
    char known[1024] = "";
    for (size_t i = 0; i < sizeof sg_items / sizeof *sg_items; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                 sg_items[i].key);
    return cp_fail(err, CP_EXIT_INPUT, "--cfg=%s: %s is not among the SimGrid items cpsim "
                   "passes on (%s)", item, colon ? key : item, known);
}

/* --log=CATEGORY.thres:LEVEL (SimGrid's threshold setting; the other forms
 * of its log control are not passed on). */
static int check_log(const char *v, cp_err *err)
{
    const char *dot = strstr(v, ".thres:"), *level = dot ? dot + 7 : NULL;
    if (!dot && (dot = strstr(v, ".threshold:")))
        level = dot + 11;
    int cat_ok = dot && dot > v;
    for (const char *c = v; cat_ok && c < dot; c++)
        cat_ok = isalnum((unsigned char)*c) || *c == '_' || *c == '.';
    if (cat_ok && in_list(level, "trace|debug|verbose|info|warning|error|critical"))
        return 0;
    return cp_fail(err, CP_EXIT_INPUT, "--log=%s: cpsim passes on SimGrid thresholds, "
                   "CATEGORY.thres:LEVEL with LEVEL one of trace, debug, verbose, info, "
                   "warning, error, critical (--log=root.thres:critical)", v);
}

/* Whether row r takes its value from the next argument. */
static int takes_next(const cli_option *r, const char *joined)
{
    return r && r->type != CLI_FLAG && r->type != CLI_SIMGRID && !joined;
}

/* Whether argument a ends the options ("--": every argument after it is
 * positional). */
static int ends_options(const char *a)
{
    return strcmp(a, "--") == 0;
}

/* The index in argv of the command (the first argument that is neither an
 * option nor an option's value; after "--", the next argument), 0 when
 * there is none. */
static int find_command(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (ends_options(argv[i]))
            return i + 1 < argc ? i + 1 : 0;
        if (!is_option(argv[i]))
            return i;
        char name[64];
        const char *joined;
        const cli_option *r = lookup(argv[i], name, sizeof name, &joined);
        if (takes_next(r, joined) && i + 1 < argc && !is_option(argv[i + 1]))
            i++;
    }
    return 0;
}

/* "run", "run and sweep", "run, validate and plan", "every command". */
static char *takers(char *buf, size_t len, unsigned cmds)
{
    if (cmds == CLI_ALL) {
        snprintf(buf, len, "every command");
        return buf;
    }
    int n = 0, k = 0;
    for (int c = 0; c < CLI_NCMDS; c++)
        n += (cmds & CLI_CMD(c)) != 0;
    size_t used = 0;
    buf[0] = '\0';
    for (int c = 0; c < CLI_NCMDS && used < len; c++) {
        if (!(cmds & CLI_CMD(c)))
            continue;
        k++;
        const char *sep = k == 1 ? "" : k == n ? " and " : ", ";
        int w = snprintf(buf + used, len - used, "%s%s", sep, cli_commands[c].name);
        used += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

static int unknown_option(const cli_opts *o, const char *name, cp_err *err)
{
    const char *mine[sizeof cli_options / sizeof cli_options[0] + 1];
    const char *all[sizeof cli_options / sizeof cli_options[0] + 1];
    int n = 0;
    for (int i = 0; i < cli_noptions; i++) {
        all[i] = cli_options[i].name;
        if (o->cmd == CMD_NONE || (cli_options[i].cmds & CLI_CMD(o->cmd)))
            mine[n++] = cli_options[i].name;
    }
    mine[n] = NULL;
    all[cli_noptions] = NULL;
    char hint[192];
    cp_suggest(hint, sizeof hint, name, mine);
    /* the start of exactly one of the command's options: that one */
    const char *prefix_of = NULL;
    for (int i = 0; i < n; i++)
        if (strlen(name) > 2 && strncmp(mine[i], name, strlen(name)) == 0)
            prefix_of = prefix_of ? "" : mine[i];
    if (prefix_of && *prefix_of)
        snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", prefix_of);
    const char *other = hint[0] ? NULL : cp_did_you_mean(name, all);
    if (other) {
        char who[96];
        snprintf(hint, sizeof hint, " (did you mean \"%s\", an option of %s?)", other,
                 takers(who, sizeof who, cli_find_option(other)->cmds));
    }
    return cp_fail(err, CP_EXIT_INPUT, "unknown option %s%s", name, hint);
}

/* One option at argv[*i] (its value may be argv[*i + 1]). */
static int option(int argc, char **argv, int *i, cli_opts *o, cp_err *err)
{
    char name[64], who[96];
    const char *v;
    const cli_option *r = lookup(argv[*i], name, sizeof name, &v);
    if (!r)
        return unknown_option(o, name, err);
    if (o->cmd != CMD_NONE && !(r->cmds & CLI_CMD(o->cmd)))
        return cp_fail(err, CP_EXIT_INPUT, "%s does not take %s; it is an option of %s%s%s",
                       cli_commands[o->cmd].name, name, takers(who, sizeof who, r->cmds),
                       r->elsewhere ? ": " : "", r->elsewhere ? r->elsewhere : "");
    o->given |= 1ull << (r - cli_options);
    if (r->type == CLI_FLAG) {
        if (v)
            return cp_fail(err, CP_EXIT_INPUT, "option %s takes no value (got %s)", name,
                           argv[*i]);
        *(int *)((char *)o + r->off) = 1;
        return 0;
    }
    if (r->type == CLI_SIMGRID && !(v && *v))
        return cp_fail(err, CP_EXIT_INPUT, "option %s takes its value as %s=%s (SimGrid's "
                       "form)", name, name, r->value);
    if (r->type == CLI_SIMGRID)
        return strcmp(r->name, "--cfg") == 0 ? check_cfg(v, err) : check_log(v, err);
    if (!v) {
        if (*i + 1 >= argc)
            return cp_fail(err, CP_EXIT_INPUT, "option %s needs a value (%s)", name, r->value);
        if (is_option(argv[*i + 1]))
            return cp_fail(err, CP_EXIT_INPUT, "option %s needs a value, got the option %s "
                           "(a value that begins with '-' is written %s=VALUE)", name,
                           argv[*i + 1], r->name);
        v = argv[++*i];
    }
    if (!*v)
        return cp_fail(err, CP_EXIT_INPUT, "option %s needs a value (%s), got an empty one",
                       name, r->value);
    switch (r->type) {
    case CLI_STRING:
        *(const char **)((char *)o + r->off) = v;
        return 0;
    case CLI_INT: {
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (end == v || *end || errno || n < r->min || n > r->max)
            return cp_fail(err, CP_EXIT_INPUT, "%s %s: expected a whole number in [%ld, %ld]",
                           name, v, r->min, r->max);
        *(int *)((char *)o + r->off) = (int)n;
        return 0;
    }
    case CLI_CALL:
        return r->set(o, v, err);
    case CLI_FLAG:
    case CLI_SIMGRID:
        break;
    }
    return 0;
}

static int given(const cli_opts *o, const char *name)
{
    const cli_option *r = cli_find_option(name);
    return r && (o->given >> (r - cli_options) & 1);
}

/* The command's arguments and the options that go only together. */
static int check_command(cli_opts *o, cp_err *err)
{
    const char *cmd = o->cmd == CMD_NONE ? "" : cli_commands[o->cmd].name;
    const char *extra = o->nargs > 1 ? o->args[1] : NULL;
    switch (o->cmd) {
    case CMD_RUN:
    case CMD_VALIDATE:
    case CMD_PLAN:
    case CMD_MEMORY:
        if (extra)
            return cp_fail(err, CP_EXIT_INPUT, "unexpected argument \"%s\" (one workload only)",
                           extra);
        o->workload = o->nargs ? o->args[0] : NULL;
        if (!o->workload && o->cmd != CMD_RUN && !o->accuracy)
            return cp_fail(err, CP_EXIT_INPUT, "%s needs a WORKLOAD.yaml", cmd);
        if (o->cmd == CMD_VALIDATE && o->json && !o->accuracy)
            return cp_fail(err, CP_EXIT_INPUT, "validate --json goes with --accuracy (the "
                           "resolved scenario prints as YAML)");
        if (o->cmd == CMD_RUN && !o->out_dir)
            o->out_dir = "out";
        return 0;
    case CMD_SWEEP:
        if (o->merge) {
            if (o->nargs == 0 || !o->out_dir)
                return cp_fail(err, CP_EXIT_INPUT, "sweep --merge needs the shard folders and "
                               "--out DIR");
            static const char *const no_merge[] = {"--resume", "--shard", "--jobs", "--list",
                                                   "--no-share"};
            for (size_t k = 0; k < sizeof no_merge / sizeof no_merge[0]; k++)
                if (given(o, no_merge[k]))
                    return cp_fail(err, CP_EXIT_INPUT, "sweep --merge joins finished shard "
                                   "folders: %s does not apply", no_merge[k]);
            return 0;
        }
        if (o->nargs == 0)
            return cp_fail(err, CP_EXIT_INPUT, "sweep needs a SWEEP.yaml (or --merge DIR...)");
        if (extra)
            return cp_fail(err, CP_EXIT_INPUT, "unexpected argument \"%s\" (one sweep file; "
                           "--merge takes folders)", extra);
        return 0;
    case CMD_COMPARE:
        if (o->nargs != 2)
            return cp_fail(err, CP_EXIT_INPUT, "compare needs a run folder and a profile "
                           "(cpsim compare RUN_DIR PROFILE.json)%s", o->nargs > 2 ? ": one "
                           "of each" : "");
        return 0;
    case CMD_PLOT:
        if (o->nargs == 0)
            return cp_fail(err, CP_EXIT_INPUT, "plot needs a run or sweep folder");
        if (extra)
            return cp_fail(err, CP_EXIT_INPUT, "unexpected argument \"%s\" (one folder)", extra);
        return 0;
    case CMD_NONE:
    case CLI_NCMDS:
        break;
    }
    return cp_fail(err, CP_EXIT_INPUT, "missing command");
}

/* o->cmd from the command's name; unknown: -1 with err (and a suggestion). */
static int command_of(const char *name, cli_opts *o, cp_err *err)
{
    for (int c = 0; c < CLI_NCMDS; c++)
        if (strcmp(name, cli_commands[c].name) == 0) {
            o->cmd = (cli_cmd)c;
            return 0;
        }
    const char *names[CLI_NCMDS + 2];
    for (int c = 0; c < CLI_NCMDS; c++)
        names[c] = cli_commands[c].name;
    names[CLI_NCMDS] = "help";
    names[CLI_NCMDS + 1] = NULL;
    char hint[128];
    return cp_fail(err, CP_EXIT_INPUT, "unknown command \"%s\"%s", name,
                   cp_suggest(hint, sizeof hint, name, names));
}

int cli_parse(int argc, char **argv, cli_opts *o, cp_err *err)
{
    memset(o, 0, sizeof *o);
    o->cmd = CMD_NONE;
    o->shard_n = 1;
    o->layer_lo = o->layer_hi = -1;
    o->trace_layer_lo = o->trace_layer_hi = -1;
    o->trace_level = REP_TRACE_AUTO;
    o->args = calloc((size_t)argc + 1, sizeof *o->args);
    if (!o->args)
        abort();
    /* --help wins over everything else on the line (before "--"), even an
     * error */
    for (int i = 1; i < argc && !ends_options(argv[i]); i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            o->help = 1;
    int at = find_command(argc, argv);
    /* cpsim help [COMMAND]: cpsim [COMMAND] --help */
    if (at && strcmp(argv[at], "help") == 0) {
        o->help = 1;
        int of = find_command(argc - at, argv + at);
        if (!of || strcmp(argv[at + of], "help") == 0)
            return 0;
        return command_of(argv[at + of], o, err);
    }
    if (at && command_of(argv[at], o, err) != 0 && !o->help)
        return -1;
    if (o->help)
        return 0;
    for (int i = 1, rest = 0; i < argc; i++) {
        if (i == at)
            continue;
        if (rest || !is_option(argv[i]))
            o->args[o->nargs++] = argv[i];
        else if (ends_options(argv[i]))
            rest = 1;
        else if (option(argc, argv, &i, o, err) != 0)
            return -1;
    }
    if (o->version)
        return 0;
    return check_command(o, err);
}

void cli_opts_free(cli_opts *o)
{
    free(o->args);
    o->args = NULL;
    o->nargs = 0;
}

/* ---- the command line ------------------------------------------------------------------ */

/* *path from the data directory when only there; buf holds the new path. */
static void locate(const char **path, char *buf, size_t len)
{
    struct stat st;
    /* "-": standard input */
    if (!*path || (*path)[0] == '/' || strcmp(*path, "-") == 0 || stat(*path, &st) == 0)
        return;
    int n = snprintf(buf, len, "%s/%s", cp_datadir(), *path);
    if (n > 0 && (size_t)n < len && stat(buf, &st) == 0 && S_ISREG(st.st_mode))
        *path = buf;
}

/* Paths the README documents relative to the source tree
 * (workloads/examples/sp-ring.yaml, workloads/sweeps/..., --platform
 * workloads/examples/platform-mi300x.yaml) work from an installed copy too:
 * a relative workload, sweep file or --platform path that does not exist
 * from the current directory but does in the data directory
 * (base/datadir.h) is taken from there.  cli_main calls it. */
static void cli_locate(cli_opts *o)
{
    if (o->cmd == CMD_SWEEP && !o->merge && o->nargs > 0)
        locate(&o->args[0], o->located[0], sizeof o->located[0]);
    locate(&o->workload, o->located[1], sizeof o->located[1]);
    /* a path, not a preset name */
    if (o->platform && strchr(o->platform, '/'))
        locate(&o->platform, o->located[2], sizeof o->located[2]);
}

int cli_main(int argc, char **argv)
{
    cli_opts o;
    cp_err err = {0};
    int rc;
    if (cli_parse(argc, argv, &o, &err) != 0) {
        fprintf(stderr, "cpsim: %s\n", err.msg);
        if (o.cmd == CMD_NONE) {
            cli_list_commands(stderr);
            fputs("Try 'cpsim --help'.\n", stderr);
        } else {
            fprintf(stderr, "Try 'cpsim %s --help'.\n", cli_commands[o.cmd].name);
        }
        rc = CP_EXIT_INPUT;
    } else if (o.help) {
        cli_help(stdout, o.cmd);
        rc = CP_EXIT_OK;
    } else if (o.version) {
        printf("cpsim %s\n", PACKAGE_VERSION);
        rc = CP_EXIT_OK;
    } else {
        cli_locate(&o);
        switch (o.cmd) {
        case CMD_VALIDATE:
            rc = cli_validate(&o);
            break;
        case CMD_PLAN:
            rc = cli_plan(&o);
            break;
        case CMD_MEMORY:
            rc = cli_memory_cmd(&o);
            break;
        case CMD_SWEEP:
            rc = cli_sweep(&o);
            break;
        case CMD_PLOT:
            rc = cli_plot(&o);
            break;
        case CMD_COMPARE:
            rc = cli_compare(&o);
            break;
        case CMD_RUN:
            rc = cli_run(&o, &argc, argv);
            break;
        case CMD_NONE:
        case CLI_NCMDS:
        default:
            rc = CP_EXIT_INTERNAL;
            break;
        }
    }
    cli_opts_free(&o);
    return rc;
}
