/* cpsim: discrete-event simulation of LLM prefill on accelerator clusters.
 * See README.md and `cpsim --help`; the command line is sim/cli/cli.h. */
#include "sim/cli/cli.h"

int main(int argc, char **argv)
{
    return cli_main(argc, argv);
}
