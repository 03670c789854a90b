/* cost_int: what the cost model's files share (models/cost.c: the tables
 * and the public interface; cost_analytic.c: the analytic models and their
 * constants; cost_check.c: the calibration check and its accuracy figures).
 * Not for use outside models/cost*.c. */
#ifndef CP_COST_INT_H
#define CP_COST_INT_H

#include "models/cost.h"
#include "models/cost_profile.h"

/* What the models need to know about a device. */
typedef struct cost_dev {
    double peak[DT_COUNT];   /* dense tensor flop/s per dtype, 0 = none */
    double vector_flops;     /* flop/s of the vector units, 0 = ignore */
    double hbm_bw;           /* bytes/s */
    int sm_count;            /* 0: no wave quantisation */
    double eff_gemm, eff_attention, eff_memory;
} cost_dev;

/* The device a calibration profile was measured on is data: the
 * "reference_device" of the profile's machine.json (read_ref): dense peaks
 * per dtype, HBM bandwidth, SM count and the efficiencies the analytic
 * model was fitted with on that profile (h200: 0.737 GEMM, 0.364
 * attention, 0.889 memory, fitted as the constants above say). */

/* Series key of an op: the coordinates a row must share with it. */
#define KEY_N 7
typedef struct series_key {
    double v[KEY_N];
} series_key;

/* A table point: rows of one series and size, averaged. */
typedef struct cost_point {
    cost_kk kk;
    series_key key;
    double x;           /* size */
    double lratio;      /* mean log(measured kernel time / analytic on the reference) */
    double ltime;       /* mean log(measured kernel time) (s) */
    int nrows;
    plan_costsrc src;   /* table of the first row */
} cost_point;

/* The points of one series: pts[first .. first + n), ascending in size. */
typedef struct cost_series {
    cost_kk kk;
    series_key key;
    int first, n;
} cost_series;

typedef struct attn_memo attn_memo;

struct cost_model {
    cost_dev dev;
    double launch_eager, launch_graph;
    int calibrated;           /* a profile is loaded: ref and points valid */
    cost_dev ref;
    cost_point *pts;          /* by kind, series key, then size */
    int npts;
    cost_series *series;      /* runs of pts of one kind and key */
    int nseries;
    attn_memo *memo;          /* written by const functions: a cache only */
};

/* A table lookup: the ratio, its source and the distance to the nearest
 * point; ratio 0 when no series applies.  floor_ref: below the smallest
 * point of a compute kind's series, that point's time on the reference
 * device (the op is not faster than the smallest shape measured). */
typedef struct lookup {
    double ratio;
    plan_costsrc src;
    double dist;
    double floor_ref;
} lookup;

/* ---- cost_analytic.c ----------------------------------------------------- */

/* Kernel kind of each plan kernel class (attention: prefill or decode by its
 * queries per request). */
extern const cost_kk cost_kk_of_kclass[KC_COUNT];
/* Peak of a dtype (bf16 for dtypes without a tensor rate of their own). */
double cost_dev_peak(const cost_dev *d, int dtype);
/* Kernels op runs (nkern, at least one) and host launches (0 for a part of
 * another op's launch). */
int cost_kernels(const plan_op *op);
int cost_launches(const plan_op *op);
/* Attended (query, key) pairs of the FA2 mask of q queries over kv keys. */
double cost_mask_pairs(double q, double kv, int causal);
/* The analytic time of op of kind kk on device d (s). */
double cost_analytic(const cost_model *c, const cost_dev *d, const plan_op *op, cost_kk kk);
/* The memo of attention grid makespans a model keeps (free() it). */
attn_memo *cost_memo_new(void);

/* ---- cost.c ---------------------------------------------------------------- */

/* The measured-table time of op (0: no table applies), the lookup in *lk. */
double cost_table_time(const cost_model *c, const plan_op *op, cost_kk kk, int leave_out,
                       lookup *lk);
/* A row the reference device could not have run (faster than its peak or
 * its bandwidth allow). */
int cost_row_impossible(const cost_dev *ref, const cost_row *r);
/* The rows of a profile (cached; NULL after cp_fail). */
const cost_rows *cost_profile_rows(const char *profile, cp_err *err);

#endif
