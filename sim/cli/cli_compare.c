/* cli_compare: `cpsim compare RUN_DIR PROFILE.json [--rank N] [--out DIR]
 * [--step N] [--device N] [--plots] [--emit-profile DIR] [--quiet]`: a run held against a
 * torch.profiler trace of the engine it models (reports/compare/compare.h). */
#include <stdio.h>

#include "reports/compare/compare.h"
#include "sim/cli/cli.h"

int cli_compare(const cli_opts *o)
{
    cmp_opts co = {.rank = o->rank,
                   .step = o->has_step ? o->step : -1,
                   .device = o->given_device ? o->device : -1,
                   .out = o->out_dir,
                   .plots = o->plots,
                   .quiet = o->quiet,
                   .emit = o->emit_profile};
    cp_err err = {0};
    if (cmp_main(o->args[0], o->args[1], &co, stdout, &err) < 0) {
        fprintf(stderr, "cpsim: %s\n", err.msg);
        return err.code ? err.code : CP_EXIT_INTERNAL;
    }
    return CP_EXIT_OK;
}
