/* dtype: element types of weights, activations and caches. */
#ifndef CP_DTYPE_H
#define CP_DTYPE_H

typedef enum {
    DT_BF16, DT_FP16, DT_FP8, DT_INT8, DT_FP32, DT_INT4, DT_COUNT
} cp_dtype;

/* Bytes per element (DT_INT4: 0.5). */
double dtype_bytes(cp_dtype t);
/* Lower-case name as written in workloads ("bf16", "fp8", ...). */
const char *dtype_name(cp_dtype t);
/* NULL-terminated list of names in enum order, for yio_enum(). */
extern const char *const dtype_names[];

#endif
