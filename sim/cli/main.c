/* cpsim: discrete-event simulation of LLM prefill on accelerator clusters.
 * See README.md and `cpsim --help`. */
#include <stdio.h>
#include <string.h>

#include "sim/cli/cli.h"
#include "sim/cli/cli_commands.h"

/* Subcommands with options of their own, by name. */
static const struct {
    const char *name;
    int (*main)(int argc, char **argv);
} subcommands[] = {
    {"sweep", cli_sweep},
    {"plot", cli_plot},
    {"memory", cli_memory},
};

int main(int argc, char **argv)
{
    for (size_t i = 0; argc > 1 && i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].main(argc - 1, argv + 1);
    cli_opts o;
    cp_err err = {0};
    if (cli_parse(argc, argv, &o, &err) != 0) {
        fprintf(stderr, "cpsim: %s\nTry 'cpsim --help'.\n", err.msg);
        return CP_EXIT_INPUT;
    }
    switch (o.cmd) {
    case CMD_HELP:
        cli_usage(stdout);
        return CP_EXIT_OK;
    case CMD_VERSION:
        printf("cpsim %s\n", PACKAGE_VERSION);
        return CP_EXIT_OK;
    case CMD_VALIDATE:
        return cli_validate(&o);
    case CMD_PLAN:
        return cli_plan(&o);
    case CMD_RUN:
    default:
        return cli_run(&o, &argc, argv);
    }
}
