/* fuzz_quant: an msModelSlim quant_model_description.json through
 * quant_desc_load, and checked against GLM-5.1 when it loads. */
#include "tests/fuzz/fuzz.h"

#include "models/arch.h"
#include "models/quant.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static arch glm;
    static int have;
    cp_err err = {0};
    if (!have)
        have = arch_load("glm-5.1", NULL, &glm, &err) == 0 ? 1 : -1;
    quant_desc *q = quant_desc_load(fuzz_file("desc.json", data, size), &err);
    if (q && have > 0)
        quant_desc_check(q, &glm, &err);
    quant_desc_free(q);
    return 0;
}
