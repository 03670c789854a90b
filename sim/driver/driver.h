/* driver: one scenario through every stage, as `cpsim run` does it
 * (driver_pipeline.c), and in a child process of its own (driver_child.c):
 *   workloads/ (load, validate) -> models/ (plan, cost) -> sim/ (SimGrid)
 *   -> reports/ (summary, files, table).
 * Used by the commands, and by the child processes that run scenarios for
 * comparisons and sweeps. */
#ifndef CP_DRIVER_H
#define CP_DRIVER_H

#include <jansson.h>
#include <stdio.h>
#include <sys/types.h>

#include "models/plan.h"
#include "base/diag.h"
#include "workloads/workload.h"

typedef struct drv_req {
    const char *workload;          /* NULL: the bundled default */
    const char *const *sets;       /* --set assignments, in order */
    int nsets;
    const char *platform;          /* --platform, or NULL */
    const char *out_dir;           /* write summary/trace/memory here; NULL: no files */
    int fold_layers;               /* 1: fold identical layers into repeated regions
                                      (also simulation.fold_layers) */
    FILE *warn;                    /* the scenario's warnings go here (NULL: nowhere) */
    int trace_gz;                  /* 1: trace.json.gz (gzip) instead of trace.json */
    const struct rep_trace_opts *trace; /* what trace.json holds (reports/report.h);
                                           NULL: every op of every rank; auto: the
                                           run says what it chose (table, summary
                                           warnings and trace_detail) */
    int all_ranks;                 /* 1: the table has a row per rank (else identical
                                      ranks in a row share one) */
    const double *picked;          /* set by drv_simulate under ring_select: simulate:
                                      the makespans of pass-KV and pass-Q (NULL) */
} drv_req;

/* The plan of s: every request's steps (build_plan), or for a serving
 * scenario (s->serving) the first request's prefill step alone, the
 * scheduler building the rest as it runs (sim/serve/serve.h). */
void drv_plan(const scenario *s, plan *p);

/* Load, plan and price a scenario (no SimGrid).  On error returns -1 with
 * nothing left to free. */
int drv_prepare(const drv_req *rq, scenario *s, plan *p, cp_err *err);

/* The whole run.  eng_init() must have been called in this process, and a
 * process runs at most one simulation (SimGrid).  On success *summary holds
 * the summary JSON object (caller decrefs) and, when table is not NULL, the
 * console table and a line of simulator figures are printed to it. */
int drv_run(const drv_req *rq, json_t **summary, FILE *table, cp_err *err);

/* The simulation and reports of a prepared scenario and plan (the second
 * half of drv_run; rq gives out_dir).  Frees neither.  A serving scenario
 * runs the scheduler (sim/serve/); under parallel.ring_select: simulate a
 * plan with split ring steps is simulated with every such step as pass-KV
 * and as pass-Q (in child processes) and the faster one's outputs written,
 * the summary's ring_select saying what each took. */
int drv_simulate(const drv_req *rq, const scenario *s, const plan *p, json_t **summary,
                 FILE *table, cp_err *err);

/* ---- children (driver_child.c): one scenario in a child process ---------------
 *
 * SimGrid runs one simulation per process, so every scenario of a
 * comparison or a sweep runs in a fork of its own.  The child runs the
 * pipeline (above) and writes one line to a pipe: the summary JSON, or
 * {"error": "<message>", "exit": <code>}.  A child that dies (a crash, an
 * abort inside SimGrid, a signal) is reported by the parent; nothing the
 * child does can take the parent down.
 */

typedef struct drv_child {
    pid_t pid;
    int fd;          /* read end of the child's pipe */
} drv_child;

/* Start a child for rq.  -1 with err when fork or pipe fail. */
int drv_spawn(const drv_req *rq, drv_child *cp, cp_err *err);

/* Same for a scenario and plan already prepared in this process: the child
 * inherits them and only simulates (drv_simulate).  The caller keeps
 * and frees s and p. */
int drv_spawn_prepared(const drv_req *rq, const scenario *s, const plan *p, drv_child *cp,
                       cp_err *err);

/* Read the child's line (blocking), reap it and return its outcome: 0 when it
 * produced a summary (*summary set, caller decrefs), else -1 with err naming
 * the failure (the child's own message, or how it died) and its exit code. */
int drv_finish(drv_child *cp, json_t **summary, cp_err *err);

/* spawn + finish. */
int drv_child_run(const drv_req *rq, json_t **summary, cp_err *err);

#endif
