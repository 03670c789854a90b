/* build: turn a validated scenario into a plan (per-rank op programs).
 *
 * The plan holds, for each request in arrival order, one prefill step and
 * then its decode steps (batch of one).  Each step starts with an OPK_STEP
 * op.  This file builds the tensor-parallel baseline layer; later passes
 * (sequence parallelism, exchange strategies, DSA CP) rewrite parts of it.
 */
#ifndef CP_BUILD_H
#define CP_BUILD_H

#include "models/plan.h"
#include "workloads/diag.h"
#include "workloads/workload.h"

int build_plan(const scenario *s, plan *out, cp_err *err);

/* Number of ranks the scenario uses (tp * sp * dp). */
int build_ranks(const scenario *s);

#endif
