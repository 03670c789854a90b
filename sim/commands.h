/* commands: the subcommands that take options of their own.  Each parses
 * its arguments (argv[0] is the command name, SimGrid's --cfg=/--log= are
 * still in argv) and returns a process exit code (cli.h). */
#ifndef CP_COMMANDS_H
#define CP_COMMANDS_H

/* cpsim sweep SWEEP.yaml [-j N] [--out DIR] [--resume] [--shard I/N]
 *             [--plots] [--quiet] [--list] [--no-share];
 * cpsim sweep --merge DIR... --out DIR [--plots]  (sweep.c) */
int sweep_main(int argc, char **argv);

/* cpsim plot RUN_OR_SWEEP_DIR [--layers A-B] (plot_cmd.c) */
int plot_main(int argc, char **argv);

/* cpsim memory WORKLOAD.yaml [--set k=v]... [--quant FILE] [--json]
 * (memory_cmd.c): static weight accounting of one rank */
int memory_main(int argc, char **argv);

#endif
