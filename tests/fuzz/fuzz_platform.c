/* fuzz_platform: a platform preset YAML through plat_load. */
#include "tests/fuzz/fuzz.h"

#include "platforms/platform.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    platform p;
    cp_err err = {0};
    plat_load(fuzz_file("platform.yaml", data, size), NULL, NULL, &p, &err);
    return 0;
}
