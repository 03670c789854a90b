/* commands: the subcommands that take options of their own.  Each parses
 * its arguments (argv[0] is the command name, SimGrid's --cfg=/--log= are
 * still in argv) and returns a process exit code (cli.h). */
#ifndef CP_COMMANDS_H
#define CP_COMMANDS_H

/* cpsim memory WORKLOAD.yaml [--set k=v]... [--platform P] [--quant FILE]
 * [--json] (memory_cmd.c): static weight accounting of one rank */
int memory_main(int argc, char **argv);

#endif
