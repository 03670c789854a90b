/* pipeline: one scenario through every stage, as `cpsim run` does it:
 *   workloads/ (load, validate) -> models/ (plan, cost) -> sim/ (SimGrid)
 *   -> reports/ (summary, files, table).
 * Used by the run command and by child processes (sim/child.h) that run
 * scenarios for comparisons and sweeps. */
#ifndef CP_PIPELINE_H
#define CP_PIPELINE_H

#include <jansson.h>
#include <stdio.h>

#include "models/plan.h"
#include "workloads/diag.h"
#include "workloads/workload.h"

typedef struct pipe_req {
    const char *workload;          /* NULL: the bundled default */
    const char *const *sets;       /* --set assignments, in order */
    int nsets;
    const char *platform;          /* --platform, or NULL */
    const char *out_dir;           /* write summary/trace/memory here; NULL: no files */
    int fold_layers;               /* 1: fold identical layers into repeated regions
                                      (also simulation.fold_layers) */
    FILE *warn;                    /* the scenario's warnings go here (NULL: nowhere) */
} pipe_req;

/* Load, plan and price a scenario (no SimGrid).  On error returns -1 with
 * nothing left to free. */
int pipeline_prepare(const pipe_req *rq, scenario *s, plan *p, cp_err *err);

/* The whole run.  eng_init() must have been called in this process, and a
 * process runs at most one simulation (SimGrid).  On success *summary holds
 * the summary JSON object (caller decrefs) and, when table is not NULL, the
 * console table and a line of simulator figures are printed to it. */
int pipeline_run(const pipe_req *rq, json_t **summary, FILE *table, cp_err *err);

/* The simulation and reports of a prepared scenario and plan (the second
 * half of pipeline_run; rq gives out_dir).  Frees neither. */
int pipeline_simulate(const pipe_req *rq, const scenario *s, const plan *p, json_t **summary,
                      FILE *table, cp_err *err);

#endif
