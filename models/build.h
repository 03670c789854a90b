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
#include "workloads/workload.h"

/* The plan of s into *out (plan_free it).  s must come from wl_load, whose
 * validation refuses every layout the schemes cannot build, so building
 * cannot fail (out of host memory aborts). */
void build_plan(const scenario *s, plan *out);

#endif
