/* fuzz_config: a Hugging Face config.json through arch_load. */
#include "tests/fuzz/fuzz.h"

#include "models/arch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    arch a;
    cp_err err = {0};
    arch_load(fuzz_file("config.json", data, size), NULL, &a, &err); /* owns no memory */
    return 0;
}
