/* exchange: the sequence-parallel exchange strategies over a sharded KV
 * cache (shared/spec/cp-exchange.md) as a layer scheme of the plan builder.
 *
 * A node is TP x SP ranks; the P = sp ranks of an SP group (G_SP: same
 * tp and dp index) share one prompt.  Each step runs either split (its
 * tokens divided over the SP ranks) or copied (every SP rank runs it
 * whole); build.c decides per step from parallel.min_tokens and calls
 * ex_begin_step() before the step's forward pass.  What a layer's
 * attention does then depends on the KV storage and the exchange:
 *
 *   storage      split step                     copied step
 *   by_head      Ulysses (all-to-all q/k/v to   head slice (every rank runs the
 *                head split and back)           step, attends its heads,
 *                                               all-gathers the outputs)
 *   by_position  all_gather (gather q/k/v or    DCP merge (attention over the
 *                k/v, placed attention) or      rank's own slots, partial
 *                a ring: pass-Q (exchange       outputs + LSE all-gathered in
 *                ring: the queries travel,      fp32 and merged); a decode
 *                K/V stay) or pass-KV           step (decodes only) of a ring
 *                (exchange ring_kv: the K/V     exchange: pass-Q decode (the
 *                travel, the queries stay)      queries sharded and passed,
 *                                               ex_step_ring_decode)
 *
 * Token split of split steps: parallel.split (striped, contiguous, zigzag:
 * 2P chunks, rank r holding chunks r and 2P-1-r); the rings take striped
 * or zigzag only (the workload's validation refuses contiguous), and their
 * share is exactly the positions the rank stores.  Remainders of an uneven
 * split go to the lowest ranks (contiguous) or chunks (zigzag).
 *
 * KV ownership of a ring's split step over a sequence [0, prefix + t):
 * striped, position x on rank x % P (the cached prefix included); zigzag,
 * the zigzag chunks of the cached prefix [0, prefix) (as a zigzag prefill
 * of it left them) and those of the step's new tokens.  Memory accounting
 * (ex_kv_bytes) counts the striped share, which differs from a zigzag one
 * by less than a token per chunk.
 *
 * The embedding (and the MoE padding mask) runs over the whole step before
 * the split; the layers run on the rank's share; after the final norm the
 * shares are all-gathered over G_SP.  Every SP rank has its own program
 * (its share, its KV slots and its ring partners differ).
 */
#ifndef CP_EXCHANGE_H
#define CP_EXCHANGE_H

#include "models/attn/attn.h"
#include "models/layers/layers.h"

/* The positions of one SP rank's tokens in a split step, or of the KV
 * positions it stores (a zigzag ring: two chunks of the cached prefix and
 * two of the step). */
#define EX_MAX_RUNS 4
typedef struct ex_share {
    int nrun;
    attn_run run[EX_MAX_RUNS];
    int64_t n;               /* tokens in all runs */
} ex_share;

/* Builder context of one SP rank's program.  The scheme's callbacks receive
 * &ctx->b and find the context around it, so they must only be called with
 * the bld of an ex_ctx set up by ex_init(). */
typedef struct ex_ctx {
    bld b;                   /* first member (see above) */
    int P, me;               /* SP group size; this program's SP index */
    /* KV by position over the SP group and, with parallel.dcp = D > 1,
     * inside the TP group too: position x on the rank of cp index
     * x % (P D), cp index = SP index x D + DCP index (vllm-ascend's
     * pcp_rank x dcp + dcp_rank).  A program stands for every TP rank of
     * its SP index: it stores the stripe of DCP index 0 (the largest). */
    int D, kvP, kv_me;       /* DCP degree; P D stripes; this program's */
    /* the current step (ex_begin_step) */
    int split;               /* 1: split, 0: copied */
    int64_t t, prefix;       /* new tokens, cached tokens before them */
    wl_split split_kind;     /* token split of a split step */
    ex_share mine;           /* this rank's positions (split steps) */
    int64_t most;            /* largest share over the SP ranks (split steps) */
    plan_ring ring;          /* the ring of a split ring step (ex_step_ring),
                                PR_NONE otherwise */
} ex_ctx;

/* Whether a step of t new tokens runs split (cp-exchange.md "min_tokens"):
 * the node's exchange splits at all (Ulysses on head storage; all_gather
 * and ring on position storage; auto and none on position storage never
 * split), t >= parallel.min_tokens, and every SP rank gets a token
 * (t >= sp). */
int ex_step_splits(const scenario *s, int64_t t);

/* Set up x for SP index me; x->b must already hold the builder fields. */
void ex_init(ex_ctx *x, int me);
/* Start a step of t new tokens after `prefix` cached ones; a split step of
 * a ring exchange runs `ring` (ex_step_ring; PR_NONE otherwise). */
void ex_begin_step(ex_ctx *x, int64_t t, int64_t prefix, int split, plan_ring ring);

/* ---- the two rings --------------------------------------------------------------
 * pass-Q (exchange ring): the query blocks travel the ring, K/V stay; the
 * partial outputs and LSE return to each block's owner and merge there.
 * pass-KV (exchange ring_kv): the queries stay, the K/V blocks (each rank's
 * cached and new share) travel the ring N-1 hops, padded to the largest;
 * every block's partial merges locally.  parallel.ring_select says which a
 * split step runs: fixed (the exchange as written), rule (ex_ring_rule),
 * simulate (the simulator builds both and keeps the faster; the plan
 * builder alone applies the rule). */

/* The ring a step runs: PR_NONE unless it is split (split) on a ring
 * exchange over position storage; then `force` when not PR_NONE (a caller
 * building every split step as one ring), else the exchange as written
 * (ring_select fixed) or the rule (rule, simulate). */
/* ring_select: simulate's verdict, for whole runs (the driver) and serving
 * steps alike: the ring whose simulated time is shorter, pass-KV at a tie. */
plan_ring ex_faster_ring(double pass_kv_s, double pass_q_s);

plan_ring ex_step_ring(const scenario *s, int64_t t, int64_t prefix, int split, plan_ring force);

/* The terms of the rule for a split step of t new tokens after `prefix`
 * cached ones, per layer and SP rank (see ex_ring_rule in rule.c). */
typedef struct ex_ring_est {
    double kv_bytes;         /* pass-KV: one hop's K/V block (padded) */
    double q_bytes;          /* pass-Q: one hop's query block */
    double ret_bytes;        /* pass-Q: one return of partial outputs + LSE */
    double rate, latency;    /* the SP ring's link: bytes/s, s per transfer */
    double attn_s;           /* one block's attention (the cost model) */
    double expand_s;         /* MLA: one block's kv_b_proj (0 for GQA) */
    double exposed_kv_s;     /* communication pass-KV leaves exposed, with
                                its extra expansions (N - 1) expand_s */
    double exposed_q_s;      /* the same for pass-Q */
} ex_ring_est;

/* Fill *e for the step and return the ring the rule picks: pass-KV when
 * its exposed communication is at most pass-Q's. */
plan_ring ex_ring_rule(const scenario *s, int64_t t, int64_t prefix, ex_ring_est *e);

/* ---- pass-Q decode ---------------------------------------------------------------
 * A copied step whose sequences are all decodes, on a ring exchange (ring
 * or ring_kv: Meta's pass-Q decode for either, models-hardware.md 4.6)
 * over position storage: the decode queries are sharded over the SP ranks
 * in blocks of ex_decode_block rows, padded to a multiple of P; the blocks
 * travel the ring P - 1 hops with their new K/V rows (written by the rank
 * storing the position, x % P), each rank attends every block over its own
 * slots, the fp32 partials return to their owners in one all-to-all and
 * merge with their LSE, and the merged blocks are all-gathered: the rest of
 * the layer (o_proj, MLP/MoE) stays copied (decode.c ex_ring_decode says
 * why).  all_gather, none and auto decodes, and copied steps with a
 * multi-token sequence, keep the DCP merge. */

/* Query rows per SP rank of a pass-Q decode of nseq sequences over P
 * ranks: ceil(nseq / P) (the padded batch is P of them). */
int64_t ex_decode_block(int64_t nseq, int P);

/* The exchange layer scheme (callbacks take &ex_ctx.b). */
const layer_scheme *ex_scheme(void);

/* KV-cache bytes this rank stores, over all layers, for a sequence of
 * `positions` tokens: by head, every position for kv_heads/(tp*sp) heads
 * (at least one: replicated); by position, the positions x % sp == me for
 * the rank's kv_heads/tp heads. */
double ex_kv_bytes(const ex_ctx *x, int64_t positions);

#endif
