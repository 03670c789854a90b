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
#include "models/scenario.h"

/* The plan of s into *out (plan_free it).  s must come from wl_load, whose
 * validation refuses every layout the schemes cannot build, so building
 * cannot fail (out of host memory aborts).  With s->fold_at_build every
 * build function here folds each program as soon as it is built
 * (plan_fold_prog): 128 unrolled programs of 126 layers would not fit. */
void build_plan(const scenario *s, plan *out);

/* ---- the two rings (parallel.ring_select) ------------------------------------------ */

/* build_plan with every split step of a ring exchange built as `ring`
 * (PR_PASS_Q or PR_PASS_KV; PR_NONE: as build_plan, the exchange as
 * written or the rule).  ring_select: simulate builds the plan twice, once
 * per ring, and keeps the faster (plan.step_ring says what each step ran). */
void build_plan_ring(const scenario *s, plan_ring ring, plan *out);

/* The ring a step of one sequence of `tokens` new tokens after `prefix`
 * cached ones runs: PR_NONE unless it is a split step of a ring exchange
 * (ring, ring_kv on position storage); then `force` when not PR_NONE,
 * else as parallel.ring_select says (fixed: the exchange; rule and, in the
 * builder, simulate: the cost rule of models/exchange/rule.c ex_ring_rule).  A
 * caller of ring_select: simulate builds such a step with
 * build_step_plan_ring once per ring (a whole plan: build_plan_ring). */
plan_ring build_step_ring(const scenario *s, int64_t tokens, int64_t prefix, plan_ring force);

/* ---- one step of a batch (the serving scheduler, sim/serve/) ------------------ */

/* The plan of one step of one model replica (dp = 1), or of every replica
 * when lockstep (expert parallelism across replicas: each runs this step,
 * padded to it): the set-up memory (weights, reserved, workspace, the KV
 * pool), then the step, no KV release.  Step and request index 0. */
void build_step_plan(const scenario *s, const sc_batch *bt, int lockstep, plan *out);
/* build_step_plan with a split step of a ring exchange built as `ring`
 * (PR_PASS_Q or PR_PASS_KV; PR_NONE: as build_step_plan, the ring
 * build_step_ring picks).  plan.step_ring[0] says which ran. */
void build_step_plan_ring(const scenario *s, const sc_batch *bt, int lockstep, plan_ring ring,
                          plan *out);

/* The torch memory peak (activations, buffers, the step's own KV) of the
 * profiling run an engine makes before it sizes its KV pool: one step of
 * engine.max_num_batched_tokens new tokens (vLLM profile_run), the most of
 * any rank. */
double build_profile_peak(const scenario *s);

/* The weight bytes resident on each rank: the model's as the engine
 * materialises them (quant_resident_bytes) and, when a request carries
 * audio, the audio encoder's (models/encoder/encoder.h). */
double build_weight_bytes(const scenario *s);
/* The audio encoder's part of it on each rank (0 when no request carries
 * audio; the activation dtype, its heads over TP). */
double build_encoder_weight_bytes(const scenario *s);

/* The KV bytes of a request of `positions` tokens on the replica's rank
 * that holds the most of it (SP index 0 of an uneven stripe). */
double build_kv_bytes(const scenario *s, int64_t positions);

/* Whether a step of one sequence of `tokens` new tokens runs split over the
 * SP ranks (the exchange scheme's parallel.min_tokens rule): such a step
 * runs alone, never batched. */
int build_step_splits(const scenario *s, int64_t tokens);

#endif
