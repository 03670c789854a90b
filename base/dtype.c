/* dtype: element sizes and names (see dtype.h). */
#include "base/dtype.h"

#include <stddef.h>

const char *const dtype_names[] = {"bf16", "fp16", "fp8", "int8", "fp32", "int4", NULL};

double dtype_bytes(cp_dtype t)
{
    switch (t) {
    case DT_BF16:
    case DT_FP16:
        return 2.0;
    case DT_FP8:
    case DT_INT8:
        return 1.0;
    case DT_FP32:
        return 4.0;
    case DT_INT4:
        return 0.5;
    default:
        return 2.0;
    }
}

const char *dtype_name(cp_dtype t)
{
    return (t >= 0 && t < DT_COUNT) ? dtype_names[t] : "?";
}
