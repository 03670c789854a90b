/* cost: device time of compute ops on a platform.
 *
 * Measured tables first: when the platform names a calibration profile
 * (platforms/calibration/<profile>/, read by cost_profile.c), every kernel
 * the profile measured is priced from the rows of its series, interpolated
 * in size (see cost.c); outside the tables an analytic model of the kernel
 * (roofline with per-class efficiency, GEMM wave quantisation, the
 * FlashAttention-2 launch grid, grouped expert GEMMs with per-expert tiles).
 * A profile measured on another device is rescaled: compute-bound time by
 * the ratio of peak rates, and never faster than bytes / (hbm_bw * eff_mem)
 * of the target (so the H200 tables serve the H100, which has the same
 * compute but 3.35 instead of 4.8 TB/s of HBM).
 *
 * Every priced op records where its price came from (plan_op.cost_table:
 * the table, or CS_ROOFLINE for the analytic model, and cost_dist: the size
 * factor to the nearest measured row of its series).
 *
 * Launch: each op costs the host op->nkern launches of `launch_eager`
 * (eager) or `launch_graph` (captured graph) to issue; the engine overlaps
 * issue with execution, so a stream of short kernels runs at the launch
 * rate (the eager rows of the tables show ~12-14 us per call).
 */
#ifndef CP_COST_H
#define CP_COST_H

#include <jansson.h>
#include <stdio.h>

#include "models/plan.h"
#include "platforms/platform.h"
#include "base/diag.h"

typedef struct cost_model cost_model;

cost_model *cost_new(const platform *p, cp_err *err);
void cost_free(cost_model *c);

/* Kernel time (s) of a compute op, without launch overhead; *src (may be
 * NULL) receives the source (plan_costsrc) and *dist the size factor to the
 * nearest measured row (1 for an exact row; 0 for the analytic model). */
double cost_kernel_s(const cost_model *c, const plan_op *op);
double cost_kernel_src_s(const cost_model *c, const plan_op *op, plan_costsrc *src,
                         double *dist);
/* Analytic-only kernel time (roofline + efficiency model), ignoring tables. */
double cost_kernel_analytic_s(const cost_model *c, const plan_op *op);
/* Host issue time (s) of any op in the given mode (graph: 0 eager, 1 captured).
 * Ops with op->eager set always pay the eager cost. */
double cost_launch_s(const cost_model *c, const plan_op *op, int graph);

/* Fill cost_s, launch_s, cost_table and cost_dist of every op.  An op's
 * price depends on its fields alone, not on its layer or place, so a plan
 * folded before pricing (plan_fold_layers) prices each layer once and is
 * the plan folded after. */
void cost_price_plan(const cost_model *c, plan *p, int graph);

/* ---- calibration accuracy (cpsim validate --accuracy, check_cost) -------- */

/* One row of a calibration table, predicted two ways. */
typedef struct cost_check_row {
    char table[32];        /* file, e.g. "gemm_graph.csv" */
    char cls[40];          /* class for grouping: row class + "_eager"/"_graph" */
    char label[128];       /* e.g. "qwen3-30b-a3b qkv_proj M=4096 K=2048 N=5120 graph" */
    double measured_s;     /* time per call */
    double repeat_s;       /* the same call on another machine start (0: none) */
    double table_s;        /* table model with this row's size left out of its
                              series (from the neighbours; the analytic model
                              beyond the ends) */
    double analytic_s;     /* the analytic model alone */
    int refused;           /* faster than the device's ceilings: no point of the
                              table model, out of the figures */
} cost_check_row;

/* Every row of the profile, predicted on the device the profile was measured
 * on (its peaks, bandwidth and efficiencies; the platform's launch costs).
 * Caller frees *rows.  Returns the row count or -1. */
int cost_check_calibration(const platform *p, cost_check_row **rows, cp_err *err);

/* Error statistics of one class of rows. */
typedef struct cost_accuracy {
    char cls[40];          /* "" for all rows */
    int n;                 /* rows */
    int noisy;             /* rows left out of the worst-row figures: their repeat
                              differs from them by more than COST_NOISE */
    int refused;           /* rows above the device's ceilings, out of every figure */
    double med_table, worst_table, med_analytic, worst_analytic;
    int worst_table_row, worst_analytic_row;   /* indices into the rows, -1 none */
} cost_accuracy;

/* A row whose own repeat differs from it by more than this (20 %, the bound
 * of the calibration test) carries more noise than the model may be blamed
 * for: it counts in the medians, not in the worst-row figures. */
#define COST_NOISE 0.20

/* Per-class statistics of rows[0..n), classes in first-seen order, then
 * "" (all).  Returns the number of entries (caller frees *out). */
int cost_accuracy_by_class(const cost_check_row *rows, int n, cost_accuracy **out);

/* The accuracy of each cost source of the platform's profile, for the
 * margins of a ranking: {"table:<file>": median |error| of the table model
 * on that file's rows (leave-one-out), "roofline": the analytic model's
 * median over every row, "derived": the elementwise.csv rows' (a fused
 * kernel is priced at the copy rate)}.  NULL with *err on failure. */
json_t *cost_source_errors(const platform *p, cp_err *err);

/* The rows and per-class figures as text (validate --accuracy) or JSON. */
void cost_accuracy_print(const cost_check_row *rows, int n, FILE *out);
json_t *cost_accuracy_json(const cost_check_row *rows, int n);

#endif
