/* fuzz_xml: a raw SimGrid XML platform through plat_load (SimGrid parses it
 * in a forked child, so this target runs slowly: tens of inputs a second). */
#include "tests/fuzz/fuzz.h"

#include "platforms/platform.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    platform p;
    cp_err err = {0};
    plat_load(fuzz_file("platform.xml", data, size), NULL, NULL, &p, &err);
    return 0;
}
