/* fuzz_sweep: a sweep file through sweep_load and, when its grid is small,
 * sweep_expand (which evaluates `where`, loading candidates); its base is
 * base.yaml beside it, a small valid workload. */
#include "tests/fuzz/fuzz.h"

#include <string.h>

#include "sim/sweep/sweep.h"

static const char base[] = "model: qwen3-omni-30b-a3b-thinker\nplatform: h100-sxm-8\n"
                           "parallel: {tp: 8}\nrequests: [{prompt_tokens: 1024}]\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    if (!once++)
        fuzz_file("base.yaml", (const uint8_t *)base, strlen(base));
    sweep_spec sp;
    cp_err err = {0};
    if (sweep_load(fuzz_file("s.yaml", data, size), &sp, &err) != 0)
        return 0;
    long long n = 1;
    for (int a = 0; a < sp.naxes && n <= 64; a++)
        n *= sp.axes[a].nvals;
    sweep_points pts;
    if (n <= 64 && sweep_expand(&sp, &pts, &err) == 0)
        sweep_points_free(&pts);
    sweep_free(&sp);
    return 0;
}
