/* cost: device time of compute ops on a platform.
 *
 * Measured tables first: when the platform names a calibration profile
 * (platforms/calibration/<profile>/), GEMMs, attention and elementwise kernels
 * with a matching measured series are interpolated from it (log-log in the
 * size dimension).  Outside the tables: roofline
 *     t = max(flops / (peak[dtype] * eff_class), bytes / (hbm_bw * eff_mem))
 * with per-class efficiency (GEMM also pays wave quantisation over sm_count).
 * A profile measured on another device is rescaled: compute-bound time by the
 * ratio of peak rates, and never faster than bytes / (hbm_bw * eff_mem) of the
 * target (so the H200 tables serve the H100, which has the same compute but
 * 3.35 instead of 4.8 TB/s of HBM).
 *
 * Launch: each op costs the host `launch_eager` (eager) or `launch_graph`
 * (captured graph) to issue; the engine overlaps issue with execution, so a
 * stream of short kernels runs at the launch rate (the eager rows of the
 * tables show ~12-14 us per call).
 */
#ifndef CP_COST_H
#define CP_COST_H

#include "models/plan.h"
#include "platforms/platform.h"
#include "workloads/diag.h"

typedef struct cost_model cost_model;

cost_model *cost_new(const platform *p, cp_err *err);
void cost_free(cost_model *c);

/* Kernel time (s) of a compute op, without launch overhead. */
double cost_kernel_s(const cost_model *c, const plan_op *op);
/* Analytic-only kernel time (roofline + efficiency model), ignoring tables. */
double cost_kernel_analytic_s(const cost_model *c, const plan_op *op);
/* Host issue time (s) of any op in the given mode (graph: 0 eager, 1 captured).
 * Ops with op->eager set always pay the eager cost. */
double cost_launch_s(const cost_model *c, const plan_op *op, int graph);

/* Fill cost_s and launch_s of every op of every program. */
void cost_price_plan(const cost_model *c, plan *p, int graph);

/* One row of a calibration table, predicted three ways. */
typedef struct cost_check_row {
    char table[32];        /* "gemm", "gemm_graph", "attention", "elementwise" */
    char label[128];       /* e.g. "qwen3-30b-a3b qkv_proj M=4096 K=2048 N=5120" */
    char kclass[24];       /* kernel class name for grouping */
    double measured_s;
    double table_s;        /* table model with this row left out (interpolation
                              from neighbours; equals analytic at the edges) */
    double analytic_s;     /* roofline/efficiency model alone */
} cost_check_row;

/* Every row of the profile, for the calibration-accuracy test and report.
 * Caller frees *rows. Returns the row count or -1. */
int cost_check_calibration(const platform *p, cost_check_row **rows, cp_err *err);

#endif
