/* seqpar: sequence parallelism over the TP group (the RFC's SP pass) and
 * DeepSeek-style DSA context parallelism layered on it
 * (shared/spec/rfc-dsa-context-parallel.md, RFC below).
 *
 * Sequence parallelism (parallel.sequence_parallel: true) shards the tokens
 * of a prefill step over the TP group itself, no group of its own (RFC
 * 3.2): rank r owns the contiguous rows [r*n, (r+1)*n) with n = ceil(T/tp)
 * (T padded to a multiple of tp, as vLLM-Ascend's sfa_cp.py does).  The pass
 * rewrites each all_reduce -> (add_)rms_norm into reduce_scatter -> norm ->
 * all_gather: the residual chain stays on the local rows, and only a
 * normalized output (output 0 of the fused add+norm) is gathered, and only
 * when its consumer needs full tokens (attention, a TP-sharded dense MLP).
 * The MoE runs on the local rows: router and top-k local, routed experts by
 * EP all-to-all (with ep = 1: TP-sharded experts fed by an all-gather and
 * reduced by a reduce-scatter), shared experts TP-sharded with an
 * all-reduce that keeps the local token dimension (RFC 3.3.1).
 *
 * DSA CP (parallel.dsa_cp: on, or auto with sequence_parallel on a model
 * with a DSA indexer, detected from its structure) replaces the attention:
 * q_b_proj, kv_b_proj (W_UK_T / W_UV) and o_proj keep their full layout,
 * MLA runs with a singleton TP view (all heads on every rank), the token
 * slice before the replicated o_proj replaces the feature all-reduce, and
 * parallel.layer_sharding distributes the listed full-layout projections
 * layer by layer with a broadcast of the next layer's weights on the comm2
 * stream (layer i kept by TP member i % tp).
 *
 * Decode steps (every step of a request after its prefill) run on the full
 * packed tokens: TP attention (DSA CP: the replicated singleton view, no
 * reduction) and, for a MoE with ep > 1, the raw-logits router path of RFC
 * 3.8 (router on all tokens, pad to a multiple of tp, top-k and dispatch on
 * this rank's slice, all-gather back).
 */
#ifndef CP_SEQPAR_H
#define CP_SEQPAR_H

#include <stdint.h>

#include "models/layers/layers.h"
#include "models/memory.h"

/* The scheme to build s with, or NULL when neither sequence parallelism
 * nor DSA CP (sc_dsa_cp) applies (the plain tensor-parallel scheme is used)
 * or when parallel.sp > 1 (the exchange strategies; workload validation
 * refuses the combination of the two). */
const layer_scheme *seqpar_scheme(const scenario *s);

#endif
