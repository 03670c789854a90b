/* fuzz_trace: a request trace CSV (requests: [{trace: t.csv}]) through
 * wl_load: its header, decimal numbers, classes and bounds. */
#include "tests/fuzz/fuzz.h"

#include <stdio.h>

#include "workloads/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char workload[] = "model: qwen3-omni-30b-a3b-thinker\n"
                                   "platform: h100-sxm-8\n"
                                   "parallel: {tp: 8}\n"
                                   "requests: [{trace: t.csv, name: fuzz}]\n";
    fuzz_file("t.csv", data, size);
    scenario s;
    cp_err err = {0};
    if (wl_load(fuzz_file("w.yaml", (const uint8_t *)workload, sizeof workload - 1), NULL, 0,
                NULL, &s, &err) == 0)
        wl_free(&s);
    return 0;
}
