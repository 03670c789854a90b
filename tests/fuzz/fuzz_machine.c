/* fuzz_machine: a calibration profile's machine.json (its reference_device)
 * through cost_new: a profile folder whose tables are the bundled h200
 * profile's (links, read once and cached) and whose machine.json is the
 * fuzzer's. */
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/cost.h"
#include "platforms/platform.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char prof[128];
    if (!prof[0]) {
        snprintf(prof, sizeof prof, "%s/prof", fuzz_dir());
        char cmd[512];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s' && ln -sf %s/platforms/calibration/h200/*.csv "
                 "'%s/'", prof, CP_SRCDIR, prof);
        if (system(cmd) != 0)
            abort();
    }
    char name[160];
    snprintf(name, sizeof name, "prof/machine.json");
    fuzz_file(name, data, size);
    platform p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "fuzz");
    p.peak_flops[DT_BF16] = p.peak_flops[DT_FP16] = 989.4e12;
    p.hbm_bw = 4.8e12;
    p.eff_gemm = p.eff_attention = p.eff_memory = 0.5;
    snprintf(p.calibration, sizeof p.calibration, "%s", prof);
    cp_err err = {0};
    cost_model *c = cost_new(&p, &err);
    cost_free(c);
    return 0;
}
