/* cli: argument parsing and usage text (see cli.h). */
#include "sim/cli/cli.h"

#include <string.h>

void cli_usage(FILE *out)
{
    fputs(
        "Usage: cpsim COMMAND [WORKLOAD.yaml] [OPTIONS]\n"
        "\n"
        "Simulates LLM prefill (and decode) steps on a cluster of accelerators:\n"
        "per-rank compute and communication streams on SimGrid, with TTFT, overlap\n"
        "and per-rank memory timelines.\n"
        "\n"
        "Commands:\n"
        "  run [WORKLOAD.yaml]       simulate (default workload: workloads/default.yaml)\n"
        "                            and write summary.json, trace.json, memory.csv\n"
        "  validate WORKLOAD.yaml    load and check everything, print the resolved\n"
        "                            scenario, simulate nothing\n"
        "  validate [WORKLOAD.yaml] --accuracy\n"
        "                            every row of the platform's calibration profile,\n"
        "                            predicted against measured, with the median and\n"
        "                            worst error per kernel class (--json: as JSON)\n"
        "  plan WORKLOAD.yaml        print the per-rank op programs (--json: as JSON)\n"
        "  memory WORKLOAD.yaml      static weights of one rank by family and category,\n"
        "                            plain estimate vs materialized (--quant, --json)\n"
        "  sweep SWEEP.yaml          a grid of scenarios, one child process each\n"
        "                            (cpsim sweep --help)\n"
        "  plot DIR                  gnuplot pictures of a run or sweep folder\n"
        "\n"
        "Options:\n"
        "  --platform NAME|FILE      use this platform preset or file instead of the\n"
        "                            workload's (presets: h100-sxm-8, h200-sxm-8, b200-8,\n"
        "                            ascend-910b-8, ascend-a3-16)\n"
        "  --set KEY=VALUE           override a workload key by dotted path, e.g.\n"
        "                            --set parallel.tp=4 --set requests.0.prompt_tokens=65536\n"
        "                            --set platform.nodes=2 (repeatable, applied in order)\n"
        "  --out DIR                 output directory for run (default: out)\n"
        "  --quiet                   run: print nothing on success\n"
        "  --plots                   run: also draw timeline and memory plots (gnuplot)\n"
        "                            into DIR/plots with an index.html\n"
        "  --json                    plan, validate --accuracy: JSON output\n"
        "  --help, --version\n"
        "  --cfg=KEY:VALUE, --log=...  passed to SimGrid\n"
        "\n"
        "Exit status: 0 the simulation ran (an out-of-memory verdict is a result, not\n"
        "an error), 1 internal failure, 2 bad input or usage.\n",
        out);
}

static int is_simgrid_opt(const char *a)
{
    return strncmp(a, "--cfg=", 6) == 0 || strncmp(a, "--log=", 6) == 0;
}

/* Value of an option given as "--opt VALUE" or "--opt=VALUE". */
static const char *opt_value(int argc, char **argv, int *i, const char *name, cp_err *err)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (a[n] == '=')
        return a + n + 1;
    if (*i + 1 >= argc) {
        cp_fail(err, CP_EXIT_INPUT, "option %s needs a value", name);
        return NULL;
    }
    return argv[++*i];
}

static int opt_is(const char *a, const char *name)
{
    size_t n = strlen(name);
    return strncmp(a, name, n) == 0 && (a[n] == '\0' || a[n] == '=');
}

int cli_parse(int argc, char **argv, cli_opts *o, cp_err *err)
{
    static const char *const commands[] = {"run", "validate", "plan", "memory", "sweep",
                                           "plot", NULL};
    memset(o, 0, sizeof *o);
    o->cmd = CMD_RUN;
    o->out_dir = "out";
    int have_cmd = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_simgrid_opt(a))
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            o->cmd = CMD_HELP;
            return 0;
        }
        if (strcmp(a, "--version") == 0) {
            o->cmd = CMD_VERSION;
            return 0;
        }
        if (opt_is(a, "--platform")) {
            if (!(o->platform = opt_value(argc, argv, &i, "--platform", err)))
                return -1;
        } else if (opt_is(a, "--set")) {
            const char *v = opt_value(argc, argv, &i, "--set", err);
            if (!v)
                return -1;
            if (!strchr(v, '='))
                return cp_fail(err, CP_EXIT_INPUT, "--set %s: expected KEY=VALUE", v);
            if (o->nsets == CLI_MAX_SETS)
                return cp_fail(err, CP_EXIT_INPUT, "too many --set options (at most %d)",
                               CLI_MAX_SETS);
            o->sets[o->nsets++] = v;
        } else if (opt_is(a, "--out")) {
            if (!(o->out_dir = opt_value(argc, argv, &i, "--out", err)))
                return -1;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o->quiet = 1;
        } else if (strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if (strcmp(a, "--plots") == 0) {
            o->plots = 1;
        } else if (strcmp(a, "--accuracy") == 0) {
            o->accuracy = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            static const char *const opts[] = {"--platform", "--set", "--out", "--quiet",
                                               "--json", "--plots", "--accuracy", "--help",
                                               "--version", NULL};
            char hint[128];
            return cp_fail(err, CP_EXIT_INPUT, "unknown option %s%s", a,
                           cp_suggest(hint, sizeof hint, a, opts));
        } else if (!have_cmd) {
            have_cmd = 1;
            if (strcmp(a, "run") == 0)
                o->cmd = CMD_RUN;
            else if (strcmp(a, "validate") == 0)
                o->cmd = CMD_VALIDATE;
            else if (strcmp(a, "plan") == 0)
                o->cmd = CMD_PLAN;
            else {
                char hint[128];
                return cp_fail(err, CP_EXIT_INPUT,
                               "unknown command \"%s\"%s; commands: run, validate, plan, memory, "
                               "sweep, plot", a,
                               cp_suggest(hint, sizeof hint, a, commands));
            }
        } else if (!o->workload) {
            o->workload = a;
        } else {
            return cp_fail(err, CP_EXIT_INPUT, "unexpected argument \"%s\" (one workload only)",
                           a);
        }
    }
    if (!have_cmd)
        return cp_fail(err, CP_EXIT_INPUT, "missing command (run, validate or plan)");
    if (o->accuracy && o->cmd != CMD_VALIDATE)
        return cp_fail(err, CP_EXIT_INPUT, "--accuracy belongs to validate");
    if ((o->cmd == CMD_VALIDATE || o->cmd == CMD_PLAN) && !o->workload && !o->accuracy)
        return cp_fail(err, CP_EXIT_INPUT, "%s needs a WORKLOAD.yaml",
                       o->cmd == CMD_VALIDATE ? "validate" : "plan");
    return 0;
}
