/* cli_commands: the subcommands that take options of their own.  Each parses
 * its arguments (argv[0] is the command name, SimGrid's --cfg=/--log= are
 * still in argv) and returns a process exit code (cli.h). */
#ifndef CP_COMMANDS_H
#define CP_COMMANDS_H

/* cpsim sweep SWEEP.yaml [-j N] [--out DIR] [--resume] [--shard I/N]
 *             [--plots] [--quiet] [--list] [--no-share];
 * cpsim sweep --merge DIR... --out DIR [--plots]  (cli_sweep.c) */
int cli_sweep(int argc, char **argv);

/* cpsim plot RUN_OR_SWEEP_DIR [--layers A-B] (cli_plot.c) */
int cli_plot(int argc, char **argv);

/* cpsim memory WORKLOAD.yaml [--set k=v]... [--quant FILE] [--json]
 * (cli_memory.c): static weight accounting of one rank */
int cli_memory(int argc, char **argv);

#endif
