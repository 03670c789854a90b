/* testutil: helpers shared by the scenario-level check programs. */
#ifndef CP_TESTUTIL_H
#define CP_TESTUTIL_H

#include <check.h>
#include <jansson.h>

#include "models/plan.h"
#include "workloads/workload.h"

/* Point CPSIM_DATADIR at the source tree (CP_SRCDIR). */
void tu_setup(void);

/* Load a workload from YAML text plus --set assignments; fails the test on
 * error. */
void tu_load(scenario *s, const char *yaml, const char *const *sets, int nsets);

/* Same, returning the error instead (for refusal tests). */
int tu_try_load(scenario *s, const char *yaml, const char *const *sets, int nsets,
                cp_err *err);

/* Load and build the plan (priced); fails the test on error. */
void tu_plan(scenario *s, plan *p, const char *yaml, const char *const *sets, int nsets);

/* Ops of program g whose name is `name` and layer is `layer` (-2: any). */
int tu_count(const plan *p, int g, const char *name, int layer);
/* First such op, or NULL. */
const plan_op *tu_find(const plan *p, int g, const char *name, int layer);

/* Simulate the workload (NULL: the default) with the sets in child
 * processes: expanded, with folded layers simulated, and with folded layers
 * replayed (sim/engine/replay.c).  The first two summaries must be
 * byte-identical but for simulation.iterations_*, the third equal to them
 * to rounding (tu_json_close, 1e-9).  Returns the replayed run's summary
 * (caller decrefs). */
json_t *tu_fold_identical(const char *workload, const char *const *sets, int nsets);

/* NULL when a and b have the same shape, strings and integers and their
 * reals agree within rel * max(|x|, |y|) + abs; else where they differ
 * first (a static buffer). */
const char *tu_json_close(const json_t *a, const json_t *b, double rel, double abs);

/* Run a suite (fork mode) and return the process exit status. */
/* A qsort comparator of eng_event (sim/engine/events.h) by (rank, op,
 * layer): one run's events against another's, whatever order each pushed
 * them in. */
int tu_ev_key_cmp(const void *x, const void *y);

int tu_main(Suite *s);

#endif
