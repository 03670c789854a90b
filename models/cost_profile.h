/* cost_profile: the rows of a calibration profile as measured plan ops
 * (internal to the cost model: models/cost.c prices from them, and the
 * calibration check compares every row with its prediction).
 *
 * A profile is a folder platforms/calibration/<name>/ of CSV tables (its
 * README documents them).  Each reader turns the rows of one table into
 * cost_rows: the call as a plan op (class, shapes, flops, bytes in the
 * conventions the plan builders use), its kernel kind, the measured times
 * and which of them the table model may use.  Columns are found by name
 * from a column list per table (a missing column is an error naming the
 * file and the closest column), every cell read is checked where it is
 * read (an error names file:line:column).  Tables other than gemm, attention
 * and elementwise are optional: a profile without them prices those kernels
 * analytically.
 */
#ifndef CP_COST_PROFILE_H
#define CP_COST_PROFILE_H

#include "models/plan.h"
#include "base/diag.h"

/* Extra device time per eagerly launched kernel: eager minus CUDA-graph
 * replay time of the same GEMM, median over the kernels of 15-100 us
 * (gemm.csv vs gemm_graph.csv: 1.47 us; gemm_graph.csv eager vs graph:
 * 1.81 us; 22 rows each). */
#define COST_EAGER_GAP 1.6e-6

/* Kernel kinds: the analytic model and table family of an op. */
typedef enum {
    KK_GEMM, KK_BMM, KK_MOE, KK_ATTN, KK_DECODE, KK_SPARSE, KK_ROOFLINE,
    KK_COPY, KK_ADD, KK_NORM, KK_SILU_MUL, KK_ROPE, KK_LSE, KK_TOPK, KK_PERMUTE,
    KK_UNPERMUTE, KK_QUANT, KK_GELU, KK_LNORM,
    KK_FUSED,     /* a fused kernel of a kernel set: its bytes at a copy's speed */
    KK_COUNT
} cost_kk;

/* Attention calls with at most this many queries per request are decode
 * calls (decode_attention.csv measures q_len 1-16: one token, or a
 * speculative step); longer ones are prefill calls. */
#define COST_DECODE_MAX_Q 16

/* One measured row of a profile. */
typedef struct cost_row {
    plan_op op;          /* the call; op.nkern kernels, op.dtype, shapes */
    cost_kk kk;
    plan_costsrc src;    /* its table */
    double t_kernel;     /* device time of one call for the table model (s);
                            0: the row serves the check only */
    double t_eager;      /* measured eager time per call (s), 0 if none */
    double t_graph;      /* measured graph replay time per call (s), 0 if none */
    double t_eager2;     /* the same calls on another machine start (s), */
    double t_graph2;     /* 0 if not repeated */
    char cls[32];        /* check class, e.g. "gemm_graph", "moe_gemm" */
    char label[112];     /* leaves room for " eager" / " graph" */
} cost_row;

typedef struct cost_rows {
    cost_row *v;
    int n, cap;
} cost_rows;

/* Every row of the profile's tables into *rs (appended). */
int cost_profile_read(const char *profile, cost_rows *rs, cp_err *err);

#endif
