/* emit: the plan builder's context and the emitters every layer builder
 * uses (models/build/ drives them; models/layers/, models/attn/, models/seqpar/ and
 * models/exchange/ describe the layers with them).
 *
 * The context stamps each new op with the current layer, step, request and
 * token layout, keeps cross-stream waits (a collective waits for the kernel
 * before it; the next op of the compute stream waits for the collective)
 * and writes memory ops around the tensors the builders allocate.
 */
#ifndef CP_EMIT_H
#define CP_EMIT_H

#include <stdint.h>

#include "models/memory.h"
#include "models/plan.h"
#include "models/scenario.h"

#define EM_MAX_PENDING 16
#define EM_MAX_HELD 48
#define EM_NONE UINT32_MAX

/* ---- tensor memory --------------------------------------------------------
 * Every tensor a builder creates is allocated with a memory op before the
 * first op that writes it and freed after the last op that reads it.  The
 * alloc returns a handle and the free takes it, so the two cannot disagree:
 * the free releases the handle's bytes, in the handle's category, and marks
 * the handle freed.  Units: bytes (plan_op.mem_bytes).
 *
 * A handle has one owner at a time, the code that is to free it: the
 * function that allocated it, or the one it was returned or handed to (the
 * comments of layers.h say which piece frees what); the tensors that live
 * across the pieces of a forward pass are held by the context (bld.residual,
 * bld.hidden).  A handle no alloc filled (EM_TENSOR_NONE, or a zeroed
 * struct) frees nothing, so the free of a tensor that exists only in some
 * configurations needs no test; freeing a handle twice aborts (a builder
 * bug). */
typedef enum { EMT_NONE, EMT_LIVE, EMT_FREED } em_tensor_state;

typedef struct em_tensor {
    double bytes;            /* bytes allocated (0: an empty tensor, no memory op) */
    uint8_t cat;             /* plan_memcat of the allocation */
    uint8_t state;           /* em_tensor_state */
} em_tensor;

#define EM_TENSOR_NONE ((em_tensor){0, 0, EMT_NONE})

/* Weight broadcasts of layer sharding (models/seqpar/) posted one layer ahead of
 * the layer whose projections they deliver. */
typedef struct em_bcasts {
    int32_t layer, step;     /* the layer they deliver; the step they were posted in */
    uint32_t op[MP_COUNT];   /* by mem_proj: the broadcast op (read when window[p] is live) */
    em_tensor window[MP_COUNT]; /* the weight window it fills (EM_TENSOR_NONE: none posted) */
} em_bcasts;

/* The weights a linear computes with: the GEMM's dtype (plan_op.dtype: an
 * 8-bit weight dtype, else the activation dtype), the scales of an 8-bit
 * GEMM (plan_qscale) and the bytes per weight element. */
typedef struct em_wprec {
    cp_dtype gdt;
    uint8_t gqs;
    double wb;
} em_wprec;

typedef struct bld {
    const scenario *s;
    const arch *a;
    plan_prog *pg;
    plan_layout_cfg lay;     /* the plan's layout (group sizes) */
    int32_t layer, step, request;
    /* a batched step's sequences (scenario.h sc_seq), NULL: the one sequence the
     * scheme is given; nsample: tokens the step samples (1 unless batched) */
    const sc_seq *seqs;
    int nseqs;
    int64_t nsample;
    int tp, ep;              /* = lay.tp, lay.ep */
    uint8_t layout;          /* token layout stamped on new ops (plan_layout) */
    uint8_t phase;           /* layer phase stamped on new ops (plan_phase) */
    uint8_t prefill;         /* the current step is (a chunk of) a prefill */
    uint8_t eager_step;      /* the step runs outside any graph (its tokens
                                exceed the largest capture size) */
    uint8_t sample;          /* the current step samples a token (LM head);
                                0 for the chunks of a prefill but its last */
    uint8_t gqs;             /* scales of 8-bit GEMMs (plan_qscale) */
    cp_dtype adt;            /* activation dtype */
    cp_dtype gdt;            /* GEMM compute dtype */
    double ab, wb, kvb;      /* bytes per element: activations, weights, KV */
    /* the MLP linears' (dense gate_up / down, routed and shared experts):
     * precision.mlp_weights; the layer builders swap them in around an MLP
     * (em_use_weights) and gdt, gqs, wb back out after it; wb 0: unset (a
     * context not made by the plan driver), the MLP keeps gdt, gqs, wb */
    em_wprec mlp;
    uint32_t last_compute;   /* last kernel on the compute stream (or EM_NONE) */
    uint32_t pending[EM_MAX_PENDING]; /* ops the next compute-stream op waits for */
    int npending;
    /* hidden-state rows between the pieces of a forward pass: the scheme's
     * embed allocates both, its final frees both */
    em_tensor residual;      /* the residual stream */
    em_tensor hidden;        /* the embedding, then each layer's output: the next
                                layer's input norm (or the final norm) frees it */
    /* layer sharding: posted by seqpar/seqpar.c post_broadcasts, taken (with the
     * windows, which the layer's attention then frees) by take_broadcasts */
    em_bcasts bcasts;
    /* Python locals (kernel set eager_locals): tensors whose last use came
     * but whose function has not returned, freed at its end (em_locals_end) */
    em_tensor held[EM_MAX_HELD];
    int nheld;
    int scopes;              /* open scopes: a local outside any is freed at once */
} bld;

static inline plan_shape shp(int nd, int64_t d0, int64_t d1, int64_t d2)
{
    plan_shape s = {.nd = (uint8_t)nd, .d = {d0, d1, d2, 0}};
    return s;
}

/* Push an op stamped with the context; compute-stream ops take the pending
 * waits.  Returns its index. */
uint32_t em_emit(bld *b, plan_op *o);
/* The next compute-stream op waits for op (EM_NONE: nothing). */
void em_wait_for(bld *b, uint32_t op);

/* Make w the weights of the linears emitted next (gdt, gqs, wb); returns
 * the ones it replaces, for the caller to put back. */
em_wprec em_use_weights(bld *b, em_wprec w);

/* A kernel of class kc on the compute stream. */
uint32_t em_compute(bld *b, const char *name, plan_kclass kc, double flops, double bytes,
                    plan_shape in, plan_shape w, plan_shape out);
/* y[m, n] = x[m, k] W[n, k]^T; g groups of m rows each (g = 1: one GEMM,
 * else a batched GEMM).  Weights as b says (gdt, gqs, wb: precision.weights,
 * or precision.mlp_weights inside an MLP); a linear (g = 1) with 8-bit
 * weights first quantises its input (em_act_quant). */
uint32_t em_gemm(bld *b, const char *name, int64_t m, int64_t k, int64_t n, int64_t g);
/* A linear kept in the activation dtype whatever the checkpoint (the MoE
 * router: vLLM builds the gate with quant_config=None). */
uint32_t em_gemm_float(bld *b, const char *name, int64_t m, int64_t k, int64_t n);
/* Routed experts as one grouped GEMM (KC_MOE_GEMM): `rows` routed rows of
 * width k in all over g local experts, [rows, n] out; routing from
 * simulation.moe_routing.  8-bit weights quantise the rows first. */
uint32_t em_moe_gemm(bld *b, const char *name, int64_t rows, int64_t k, int64_t n, int64_t g);
/* The activation quantisation of an 8-bit GEMM's input [m, k] as
 * precision.activation_quant says (nothing when fused). */
void em_act_quant(bld *b, int64_t m, int64_t k);
/* The kernel set's implementation of slot ks_slot (models/kset.h). */
plan_impl em_impl(const bld *b, int slot);
/* Stamp op i with its implementation and kernel count (launches). */
void em_stamp(bld *b, uint32_t i, plan_impl impl, int nkern);
/* RMSNorm over m rows of width h, fused with the residual add when with_add
 * (reads x and the residual, writes both). */
void em_rms_norm(bld *b, const char *name, int64_t m, int64_t h, int with_add);
/* An elementwise kernel reading [m, n_in] and writing [m, n_out]. */
uint32_t em_elementwise(bld *b, const char *name, plan_kclass kc, int64_t m, int64_t n_in,
                        int64_t n_out, double flops_per_out);
/* SwiGLU of m rows: silu(gate) * up, [m, 2 inter] -> [m, inter], as the
 * profile measured it (F.silu(g) * u: two kernels). */
void em_swiglu(bld *b, const char *name, int64_t m, int64_t inter);
/* RoPE over [m, heads, d] of `tensors` tensors (q and k: 2) as the kernel
 * set runs it (torch: five kernels a tensor; fused: one kernel). */
void em_rope(bld *b, const char *name, int64_t m, int64_t heads, int64_t d, int tensors);
/* A copy of `bytes` (read once, written once) with the given shapes. */
uint32_t em_copy(bld *b, const char *name, double bytes, plan_shape in, plan_shape out);
/* Bytes of the fp32 log-sum-exp of an attention's `rows` query rows over
 * `heads` heads: the softmax statistics a flash kernel writes besides its
 * output (one fp32 per row and head), which a partial keeps for its merge. */
double em_lse_bytes(int64_t rows, int64_t heads);
/* The LSE of one attention call (em_lse_bytes, an activation), allocated
 * before the call; the caller frees it after the call. */
em_tensor em_lse_alloc(bld *b, int64_t rows, int64_t heads);
/* Merge of `parts` partial attention outputs [rows, heads, d] (pb bytes per
 * element) with their fp32 LSE (the unfused torch merge of the profile:
 * twelve kernels): reads the partials, writes the output (activation
 * dtype). */
uint32_t em_lse_merge(bld *b, const char *name, int64_t rows, int64_t heads, int64_t d,
                      int parts, double pb);

/* An attention-class kernel (KC_ATTENTION, KC_SPARSE_ATTN, KC_INDEXER)
 * described by *at; shapes in [q_len, heads, d_qk], w [kv_len, kv_heads,
 * d_qk], out [q_len, heads, d_v]. */
uint32_t em_attention(bld *b, const char *name, plan_kclass kc, const plan_attn *at,
                      double flops, double bytes);
/* (query, key) pairs of t causal queries after `prefix` cached keys: query
 * i (0-based) sees prefix + i + 1 keys; with cap > 0 each query sees at
 * most cap of them (sparse attention over top-k keys). */
double em_causal_pairs(int64_t t, int64_t prefix, int64_t cap);

/* Memory event on a stream: + allocates, - frees (0: nothing).  For memory
 * no one free returns (the weights, engine reserves, the KV cache that a
 * request's steps grow and its end releases); tensors take em_alloc. */
void em_mem(bld *b, plan_memcat cat, double bytes, int stream);
/* `bytes` of category cat allocated by a memory op on `stream` (none for 0
 * bytes); returns the handle its free takes (see "tensor memory" above). */
em_tensor em_alloc(bld *b, plan_memcat cat, double bytes, int stream);
/* An activation (MC_ACTIVATIONS) on the compute stream. */
em_tensor em_act_alloc(bld *b, double bytes);
/* A receive buffer of a token exchange (MC_COMM_BUFFER, on the compute
 * stream), held until the kernel that consumes it has run. */
em_tensor em_buf_alloc(bld *b, double bytes);
/* Free *t by a memory op on the compute stream and mark it freed; nothing
 * for a handle no alloc filled; aborts when *t was already freed. */
void em_free(bld *b, em_tensor *t);
/* em_free with the memory op on `stream` (a tensor whose last reader is an
 * op of that stream). */
void em_free_on(bld *b, em_tensor *t, int stream);
int em_locals_begin(bld *b);
void em_local(bld *b, em_tensor *t);
void em_locals_end(bld *b, int mark);
/* A temporary of an eager chain (an intermediate of its kernels, an fp32
 * upcast, a layout copy): allocated before the chain's op, freed by
 * em_tmp_end right after it; both no-ops (EM_TENSOR_NONE) without
 * eager_locals. */
em_tensor em_tmp(bld *b, double bytes);
void em_tmp_end(bld *b, em_tensor *t);
/* A Python local of an eager engine (an output its function keeps bound):
 * allocated now and held to the scope's end; nothing without eager_locals. */
void em_local_new(bld *b, double bytes);

/* Take `bytes` of the live allocation *t into a handle of their own, no
 * memory op (the part of one allocation freed before the rest: an
 * accumulator's LSE, the padding rows of a gathered tensor); *t keeps the
 * rest. */
em_tensor em_split(em_tensor *t, double bytes);

/* A collective over group g on the comm stream, after the last kernel; the
 * next compute-stream op waits for it.  EM_NONE when g has one member. */
uint32_t em_coll(bld *b, const char *name, plan_coll kind, plan_group g, double bytes,
                 plan_shape out);

#endif
