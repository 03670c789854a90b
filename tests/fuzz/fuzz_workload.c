/* fuzz_workload: a workload YAML through wl_load, and when it loads and is
 * small (a few steps, a few ranks) through the plan builder and the cost
 * model too (no SimGrid). */
#include "tests/fuzz/fuzz.h"

#include "models/build/build.h"
#include "models/cost.h"
#include "workloads/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    scenario s;
    cp_err err = {0};
    if (wl_load(fuzz_file("w.yaml", data, size), NULL, 0, NULL, &s, &err) != 0)
        return 0;
    long long steps = 0;
    for (int q = 0; q < s.nreqs; q++)
        steps += 1 + s.reqs[q].decode_tokens;
    if (steps <= 4 && s.par.tp * s.par.sp * s.par.dp <= 64 && s.model.layers <= 128) {
        plan p;
        build_plan(&s, &p);
        cost_model *cm = cost_new(&s.plat, &err);
        if (cm) {
            cost_price_plan(cm, &p, s.graph != GRAPH_EAGER);
            cost_free(cm);
        }
        plan_free(&p);
    }
    wl_free(&s);
    return 0;
}
