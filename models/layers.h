/* layers: the pieces of a decoder layer as plan builders (emit.h).  Each
 * piece consumes its normalized input and leaves its output [t, h]
 * allocated and reduced over its group; the driver (build.c) frees it.
 */
#ifndef CP_LAYERS_H
#define CP_LAYERS_H

#include "models/emit.h"

/* Op names of one SwiGLU MLP. */
typedef struct mlp_names {
    const char *gate_up, *act, *down;
} mlp_names;

extern const mlp_names MLP_DENSE, MLP_EXPERTS, MLP_SHARED;

/* SwiGLU MLP on g groups of m tokens with intermediate width `inter` on this
 * rank; the output [g*m, h] is left allocated (caller frees). */
void layer_mlp(bld *b, const mlp_names *nm, int64_t m, int64_t inter, int64_t g);

/* GQA attention over heads/tp on `t` new tokens after `prefix` cached ones:
 * qkv_proj (column), q/k norm, rope, KV write, causal flash attention,
 * o_proj (row), all-reduce over TP. */
void layer_attention_gqa(bld *b, int64_t t, int64_t prefix);

/* MLA attention over heads/tp (layer_mla.c). */
void layer_attention_mla(bld *b, int64_t t, int64_t prefix);

/* MoE block on t tokens (router, top-k, experts, shared experts). */
void layer_moe(bld *b, int64_t t);

/* The FFN of the current layer: dense MLP or MoE, reduced over TP. */
void layer_ffn(bld *b, int64_t t);

/* How a forward pass is laid out: the pieces the driver (build.c) calls
 * before the layers, for each layer (b->layer set), and after them.  The
 * tensor-parallel scheme is the baseline; passes (models/seqpar.c, ...)
 * provide others. */
typedef struct layer_scheme {
    const char *name;
    void (*embed)(bld *b, int64_t t);
    void (*layer)(bld *b, int64_t t, int64_t prefix);
    void (*final)(bld *b, int64_t t);
} layer_scheme;

#endif
