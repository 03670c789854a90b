/* cli_commands: a command run from its own arguments, argv[0] being the
 * command's name, as `cpsim memory ...` runs it (the tests call it so).
 * Parsing, messages and exit codes are cli_main's (cli.h). */
#ifndef CP_COMMANDS_H
#define CP_COMMANDS_H

/* cpsim memory WORKLOAD.yaml [--set k=v]... [--platform P] [--quant FILE]
 * [--json] (cli_memory.c): static weight accounting of one rank */
int cli_memory(int argc, char **argv);

#endif
