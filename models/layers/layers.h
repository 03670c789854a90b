/* layers: the pieces of a decoder layer as plan builders (emit.h).  Each
 * piece consumes its normalized input and leaves its output [t, h]
 * allocated and reduced over its group: it returns the output's handle
 * (emit.h "tensor memory"), which the caller then owns and frees.
 */
#ifndef CP_LAYERS_H
#define CP_LAYERS_H

#include "models/emit.h"

/* Op names of one SwiGLU MLP. */
typedef struct mlp_names {
    const char *gate_up, *act, *down;
} mlp_names;

extern const mlp_names MLP_DENSE, MLP_SHARED;

/* SwiGLU MLP on m tokens with intermediate width `inter` on this rank;
 * returns the output [m, h] (the caller frees it). */
em_tensor layer_mlp(bld *b, const mlp_names *nm, int64_t m, int64_t inter);

/* ---- the MoE block (models/layers/moe.c) ------------------------------------ */

/* Router GEMM (activation dtype) and top-k scoring of the m rows this rank
 * routes; layer_moe_topk: the scoring alone (logits already computed). */
void layer_moe_route(bld *b, int64_t m);
void layer_moe_topk(bld *b, int64_t m);
/* Routed rows of the most loaded of `ranks` ranks holding experts_local
 * experts each, for mean_rows rows per rank (simulation.moe_routing). */
int64_t moe_rank_rows(const bld *b, double mean_rows, int64_t experts_local, int ranks);
/* Routed experts on this rank for m tokens, every expert local with
 * intermediate width `inter` (its TP slice): permute, grouped gate_up,
 * SwiGLU, grouped down, unpermute; returns the output [m, h]. */
em_tensor layer_moe_routed_local(bld *b, int64_t m, int64_t inter);
/* Routed experts by EP for m tokens: permute, all-to-all dispatch, the
 * rank's E/ep experts on the rows it receives, all-to-all combine,
 * unpermute; returns the output [m, h]. */
em_tensor layer_moe_routed_ep(bld *b, int64_t m);

/* MoE block on t tokens (router, top-k, experts, shared experts); returns
 * the output [t, h]. */
em_tensor layer_moe(bld *b, int64_t t);

/* The FFN of the current layer: dense MLP or MoE, reduced over TP; returns
 * the output [t, h]. */
em_tensor layer_ffn(bld *b, int64_t t);

/* ---- pieces of the tensor-parallel layer (models/layers/tp.c) --------------
 * Shared by the tensor-parallel scheme (build.c) and the exchange scheme
 * (models/exchange/). */

/* Vocabulary-parallel embedding of t tokens (lookup + all-reduce over TP);
 * allocates the residual stream (b->residual) and the embedding [t, h]
 * (b->hidden, the first layer's input). */
void layer_embed(bld *b, int64_t t);
/* Final norm of t rows; frees the last layer's output (b->hidden), returns
 * the normalized rows (the caller frees them). */
em_tensor layer_final_norm(bld *b, int64_t t);
/* LM head on the last token, logits all-gathered over TP, sampling. */
void layer_lm_head(bld *b);
/* layer_final_norm + layer_lm_head, then frees the normalized rows and the
 * residual stream (the tensor-parallel final). */
void layer_final(bld *b, int64_t t);

/* An attention block: consumes the normalized input and returns the
 * attention output [tokens of the rank, h]. */
typedef em_tensor (*layer_attn_fn)(bld *b, int64_t t, int64_t prefix);
/* One decoder layer on tl rows of the rank (input norm, attn(t, prefix),
 * post-attention norm, FFN on tl rows); frees the previous layer's output
 * (b->hidden) and leaves its own [tl, h] there. */
void layer_decoder(bld *b, int64_t tl, int64_t t, int64_t prefix, layer_attn_fn attn);

/* How a forward pass is laid out: the pieces the driver (build.c) calls
 * before the layers, for each layer (b->layer set), and after them.  The
 * tensor-parallel scheme is the baseline; passes (models/seqpar/, models/exchange/)
 * provide others. */
typedef struct layer_scheme {
    const char *name;
    void (*embed)(bld *b, int64_t t);
    void (*layer)(bld *b, int64_t t, int64_t prefix);
    void (*final)(bld *b, int64_t t);
    /* whether the current step's tokens are split over ranks (the SP group
     * of an exchange, the TP group under sequence parallelism / DSA CP);
     * NULL: never */
    int (*splits)(const bld *b);
} layer_scheme;

#endif
