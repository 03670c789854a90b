/* seqpar: the sequence-parallel and DSA CP schemes (see seqpar.h).
 *
 * A prefill step of T tokens is split: rank r of the TP group holds rows
 * [r*n, (r+1)*n), n = ceil(T/tp); the collectives of the split move the
 * padded T' = n*tp rows.  Every other step (decode) runs on the full packed
 * tokens.  Activations: hidden-state rows are allocated and freed where the
 * tensor-parallel layer does it, n rows where the residual chain is local,
 * T' rows for gathered normalized inputs.
 */
#include "models/seqpar/seqpar.h"

#include <math.h>
#include <string.h>

#include "models/attn/attn.h"
#include "models/quant.h"

/* Rows of one rank's token shard: ceil(t / tp). */
static int64_t seqpar_local_tokens(int64_t t, int tp)
{
    return (t + tp - 1) / tp;
}

/* ---- steps ------------------------------------------------------------------- */

/* The current step's tokens are split over G_TP: a prefill (chunk) on more
 * than one rank. */
static int split_step(const bld *b)
{
    return b->tp > 1 && b->prefill;
}

/* Rows of the residual chain on this rank. */
static int64_t rows_of(const bld *b, int64_t t)
{
    return split_step(b) ? seqpar_local_tokens(t, b->tp) : t;
}

/* Bytes of m hidden-state rows. */
static double hid(const bld *b, int64_t m)
{
    return (double)m * (double)b->a->hidden * b->ab;
}

/* ---- the SP rewrite ------------------------------------------------------- */

/* The last all-reduce over TP emitted from op `from` on becomes the
 * reduce-scatter of the SP pass (same payload: each rank's [T, h] input,
 * collectives/coll.h), leaving n local rows. */
static void to_reduce_scatter(bld *b, uint32_t from, const char *name, int64_t n)
{
    for (uint32_t i = b->pg->nops; i-- > from;) {
        plan_op *o = &b->pg->ops[i];
        if (o->kind == OPK_COLL && o->coll == CK_ALL_REDUCE && o->group == G_TP) {
            o->coll = CK_REDUCE_SCATTER;
            o->name = name;
            o->layout = TL_LOCAL;
            o->out = shp(2, n, b->a->hidden, 0);
            return;
        }
    }
}

/* All-gather of a normalized output (output 0 of the fused add+norm) to
 * the padded T' = n*tp rows; returns them, the all-gather into *op (NULL:
 * not wanted). */
static em_tensor gather_normalized(bld *b, const char *name, int64_t n, uint32_t *op)
{
    int64_t full = n * b->tp;
    em_tensor rows = em_act_alloc(b, hid(b, full));
    b->layout = TL_FULL;
    uint32_t i = em_coll(b, name, CK_ALL_GATHER, G_TP, hid(b, full),
                         shp(2, full, b->a->hidden, 0));
    if (op)
        *op = i;
    return rows;
}

/* ---- layer sharding ---------------------------------------------------------- */

static const char *const bcast_names[MP_COUNT] = {
    "", "bcast_q_a_proj", "bcast_q_b_proj", "bcast_kv_a_proj", "bcast_kv_b_proj", "bcast_o_proj",
};

/* Broadcast the weights of layer l's sharded projections over G_TP on the
 * comm2 stream, each into a window allocated when its broadcast starts,
 * after op `after` (EM_NONE: at once).  vLLM-Ascend's layer-sharding series
 * (register_layer_to_shard_weight_series, prefetch_step 1) starts the
 * broadcast of layer l + 1 when the forward reaches layer l and keeps a
 * pool of two windows: the layer in use and the one arriving; the plan
 * posts layer 0's with the embedding of every step (vLLM-Ascend prefetches
 * it during the last layer of the step before).  The engine's broadcast
 * chains from member 0; on the switch fabrics of the presets its time does
 * not depend on the root (layer l's owner, member l % tp). */
static void post_broadcasts(bld *b, int32_t l, uint32_t after)
{
    uint32_t bits = sc_layer_sharded(b->s);
    if (!bits || l >= b->a->layers)
        return;
    em_bcasts *bc = &b->bcasts; /* the previous layer took what was posted before */
    bc->layer = l;
    bc->step = b->step;
    for (int p = 0; p < MP_COUNT; p++)
        bc->window[p] = EM_TENSOR_NONE;
    for (int p = MP_Q_A; p < MP_COUNT; p++) {
        if (!(bits & (1u << p)))
            continue;
        double bytes = quant_proj_bytes(b->s, l, (mem_proj)p);
        bc->window[p] = em_alloc(b, MC_WEIGHTS, bytes, ST_COMM2);
        /* the window's alloc starts after `after` too (an empty window emits no
         * alloc, and then this dependency lands on the op before it) */
        if (after != EM_NONE)
            plan_dep(b->pg, b->pg->nops - 1, after);
        plan_op o = {0};
        o.name = bcast_names[p];
        o.kind = OPK_COLL;
        o.stream = ST_COMM2;
        o.coll = CK_BROADCAST;
        o.group = G_TP;
        o.alg = ALG_AUTO;
        o.dtype = (uint8_t)b->s->w_dtype;
        o.layout = TL_NONE;
        o.comm_bytes = bytes;
        o.out = shp(1, (int64_t)bytes, 0, 0);
        bc->op[p] = em_emit(b, &o);
        if (after != EM_NONE)
            plan_dep(b->pg, bc->op[p], after);
    }
}

/* The broadcasts that bring the current layer's projections (posted in
 * the previous layer of this step, or with its embedding) and their
 * windows, which c then owns. */
static void take_broadcasts(bld *b, attn_dsa_cp *c)
{
    em_bcasts *bc = &b->bcasts;
    int posted = bc->layer == b->layer && bc->step == b->step;
    for (int p = 0; p < MP_COUNT; p++) {
        c->bcast[p] = EM_NONE;
        c->window[p] = EM_TENSOR_NONE;
        if (posted && bc->window[p].state == EMT_LIVE) {
            c->bcast[p] = bc->op[p];
            c->window[p] = bc->window[p];
        }
        bc->window[p] = EM_TENSOR_NONE;
    }
}

/* ---- MoE on the local rows --------------------------------------------------- */

/* Routed experts sharded by TP (ep = 1) for the n local rows: the rows and
 * their top-k ids and weights are all-gathered (vLLM's all-gather MoE
 * dispatch), every rank runs its intermediate slice of every expert on the
 * T' rows, and a reduce-scatter returns the n rows.  Returns [n, h]. */
static em_tensor routed_gathered(bld *b, int64_t n)
{
    const arch *a = b->a;
    int64_t h = a->hidden, k = a->top_k, full = n * b->tp;
    double row = (double)h * b->ab, fd = (double)full;
    double bytes = fd * (row + (double)k * 8.0); /* rows + int32 ids, fp32 weights */
    em_tensor gathered = em_act_alloc(b, bytes);
    b->layout = TL_FULL;
    em_coll(b, "moe_dispatch_all_gather", CK_ALL_GATHER, G_TP, bytes, shp(2, full, h, 0));
    em_tensor routed = layer_moe_routed_local(b, full, a->moe_intermediate / b->tp);
    em_free(b, &gathered);
    em_tensor out = em_act_alloc(b, (double)n * row);
    em_coll(b, "moe_reduce_scatter", CK_REDUCE_SCATTER, G_TP, fd * row, shp(2, n, h, 0));
    b->layout = TL_LOCAL;
    em_free(b, &routed);
    return out;
}

/* Shared experts on m rows, sharded by TP in the intermediate dimension;
 * the all-reduce combines the feature shards and keeps the m rows (RFC
 * 3.3.1: a shared-expert all-reduce on local-token input preserves the
 * token layout); added into the routed output. */
static void shared_experts(bld *b, int64_t m)
{
    const arch *a = b->a;
    if (a->shared_intermediate <= 0)
        return;
    em_tensor out = layer_mlp(b, &MLP_SHARED, m, a->shared_intermediate / b->tp);
    em_coll(b, "shared_all_reduce", CK_ALL_REDUCE, G_TP, hid(b, m), shp(2, m, a->hidden, 0));
    /* reads the routed and the shared rows (2 h), one add per output element */
    em_elementwise(b, "shared_add", KC_ELEMENTWISE, m, 2 * a->hidden, a->hidden, 1.0);
    em_free(b, &out); /* added into the routed output */
}

/* MoE of a split step on the n local rows: router, top-k, routed and
 * shared experts all local (RFC 3.3.1); returns the output [n, h]. */
static em_tensor moe_local(bld *b, int64_t n)
{
    b->layout = TL_LOCAL;
    layer_moe_route(b, n);
    em_tensor routed = b->ep > 1 ? layer_moe_routed_ep(b, n) : routed_gathered(b, n);
    shared_experts(b, n);
    return routed;
}

/* A KC_COPY of [m, w] into [m_out, w] (pad or slice), eb bytes per
 * element; the rows both sides hold are read once and written once. */
static void copy_rows(bld *b, const char *name, int64_t m, int64_t m_out, int64_t w, double eb)
{
    double moved = (double)(m < m_out ? m : m_out) * (double)w * eb;
    em_compute(b, name, KC_COPY, 0, 2.0 * moved, shp(2, m, w, 0), shp(0, 0, 0, 0),
               shp(2, m_out, w, 0));
}

/* Decode MoE with EP, the raw-logits gate branch (RFC 3.8): the router
 * runs on the t packed tokens, hidden states and router logits are padded
 * to a multiple of tp and each TP rank keeps its slice for top-k and the
 * EP dispatch; the routed outputs are all-gathered back and the padding
 * dropped; the shared experts run on the t tokens (TP-sharded,
 * all-reduced).  Returns [t, h]. */
static em_tensor moe_decode(bld *b, int64_t t)
{
    const arch *a = b->a;
    int64_t h = a->hidden, E = a->experts, pad = seqpar_local_tokens(t, b->tp) * b->tp;
    int64_t ts = pad / b->tp;
    double lg = (double)E * 4.0, row = (double)h * b->ab; /* logits: fp32, 4 B each */
    b->layout = TL_FULL;
    em_tensor logits = em_act_alloc(b, (double)t * lg);
    em_gemm_float(b, "router", t, h, E);
    em_tensor logits_pad = em_act_alloc(b, (double)pad * lg);
    copy_rows(b, "router_pad", t, pad, E, 4.0); /* fp32 logits */
    em_free(b, &logits);
    em_tensor rows_pad = em_act_alloc(b, (double)pad * row);
    copy_rows(b, "moe_pad", t, pad, h, b->ab);
    b->layout = TL_LOCAL;
    em_tensor logits_slice = em_act_alloc(b, (double)ts * lg);
    copy_rows(b, "router_slice", pad, ts, E, 4.0); /* fp32 logits */
    em_free(b, &logits_pad);
    em_tensor slice = em_act_alloc(b, (double)ts * row);
    copy_rows(b, "moe_slice", pad, ts, h, b->ab);
    em_free(b, &rows_pad);
    layer_moe_topk(b, ts);
    em_free(b, &logits_slice);
    em_tensor routed = layer_moe_routed_ep(b, ts);
    em_free(b, &slice); /* dispatched */
    b->layout = TL_FULL;
    em_tensor out = em_act_alloc(b, (double)pad * row);
    em_coll(b, "moe_finalize_all_gather", CK_ALL_GATHER, G_TP, (double)pad * row,
            shp(2, pad, h, 0));
    em_free(b, &routed); /* routed output of the slice */
    em_tensor padding = em_split(&out, (double)(pad - t) * row);
    em_free(b, &padding); /* the output is a view of the t first rows */
    shared_experts(b, t);
    return out;
}

/* ---- the schemes ------------------------------------------------------------- */

/* Embedding: vocabulary-parallel lookup of the t tokens; a split step
 * reduce-scatters the partial rows (the SP rewrite of the embedding
 * all-reduce) into the local residual stream.  Posts layer 0's weight
 * broadcasts. */
static void seqpar_embed(bld *b, int64_t t)
{
    if (!split_step(b)) {
        layer_embed(b, t);
    } else {
        const arch *a = b->a;
        int64_t n = seqpar_local_tokens(t, b->tp), full = n * b->tp;
        b->residual = em_act_alloc(b, hid(b, n));
        em_tensor partial = em_act_alloc(b, hid(b, full)); /* rows of the vocabulary slice */
        b->layout = TL_FULL;
        /* reads the looked-up rows, writes them: 2 t h elements */
        em_compute(b, "embedding", KC_EMBEDDING, 0, 2.0 * hid(b, t), shp(1, t, 0, 0),
                   shp(2, a->vocab / b->tp, a->hidden, 0), shp(2, t, a->hidden, 0));
        b->hidden = em_act_alloc(b, hid(b, n)); /* layer input */
        em_coll(b, "embed_reduce_scatter", CK_REDUCE_SCATTER, G_TP, hid(b, full),
                shp(2, n, a->hidden, 0));
        b->layout = TL_LOCAL;
        em_free(b, &partial);
    }
    post_broadcasts(b, 0, b->last_compute);
}

/* Attention of the plain SP pass: the tensor-parallel piece on the full
 * tokens, its all-reduce rewritten into the reduce-scatter; returns [n, h]. */
static em_tensor attention_tp(bld *b, int64_t t, int64_t prefix, int64_t n, int split)
{
    uint32_t from = b->pg->nops;
    b->layout = TL_FULL;
    em_tensor out = attn_layer(b, t, prefix);
    if (!split)
        return out;
    to_reduce_scatter(b, from, "attn_reduce_scatter", n);
    b->layout = TL_LOCAL;
    em_tensor local = em_act_alloc(b, hid(b, n));
    em_free(b, &out); /* o_proj partial sums of the full tokens */
    return local;
}

/* FFN of a split step on the n local rows; returns [n, h]. */
static em_tensor ffn_split(bld *b, int64_t n)
{
    const arch *a = b->a;
    if (a->layer_moe[b->layer])
        return moe_local(b, n);
    /* dense MLP sharded by TP: its consumer needs the full tokens */
    int64_t full = n * b->tp;
    em_tensor in = gather_normalized(b, "mlp_input_all_gather", n, NULL);
    em_tensor mlp = layer_mlp(b, &MLP_DENSE, full, a->intermediate / b->tp);
    em_tensor out = em_act_alloc(b, hid(b, n));
    em_coll(b, "mlp_reduce_scatter", CK_REDUCE_SCATTER, G_TP, hid(b, full),
            shp(2, n, a->hidden, 0));
    b->layout = TL_LOCAL;
    em_free(b, &mlp); /* partial sums */
    em_free(b, &in);
    return out;
}

/* FFN of a decode step on the t packed tokens; returns [t, h]. */
static em_tensor ffn_decode(bld *b, int64_t t)
{
    if (b->a->layer_moe[b->layer] && b->ep > 1)
        return moe_decode(b, t);
    return layer_ffn(b, t);
}

/* One decoder layer of either scheme; frees the previous layer's output
 * (b->hidden) and leaves its own [n, h] there. */
static void seqpar_layer(bld *b, int64_t t, int64_t prefix)
{
    const arch *a = b->a;
    int split = split_step(b), cp = sc_dsa_cp(b->s);
    int64_t n = rows_of(b, t), h = a->hidden;
    uint8_t local = split ? TL_LOCAL : TL_FULL;
    attn_dsa_cp c = {.t = t, .prefix = prefix, .tl = n, .split = split,
                .layout = b->s->par.dsa_cp_layout};
    if (cp)
        take_broadcasts(b, &c);
    b->layout = local;
    b->phase = PH_ATTN;
    em_tensor normed = em_act_alloc(b, hid(b, n));
    em_rms_norm(b, "input_norm", n, h, b->layer > 0);
    em_free(b, &b->hidden); /* previous layer output (or embedding) */
    /* vLLM-Ascend's layout projects the local rows and gathers only the
     * fused [nope | rope | index-k] rows (models/attn/mla.c): no input gather */
    int gather = split && !(cp && c.layout == DSA_LAYOUT_VLLM_ASCEND);
    uint32_t input = EM_NONE;
    em_tensor gathered = gather ? gather_normalized(b, "attn_input_all_gather", n, &input)
                                : EM_TENSOR_NONE;
    em_tensor attn_out;
    if (cp) {
        /* the attention starts once its input is gathered */
        post_broadcasts(b, b->layer + 1, input != EM_NONE ? input : b->last_compute);
        attn_out = attn_mla_cp(b, &c);
    } else {
        attn_out = attention_tp(b, t, prefix, n, split);
    }
    em_free(b, &gathered); /* gathered attention input */
    b->layout = local;
    em_free(b, &normed); /* normalized input */
    b->phase = PH_FFN;
    em_tensor ffn_in = em_act_alloc(b, hid(b, n));
    em_rms_norm(b, "post_attn_norm", n, h, 1);
    em_free(b, &attn_out);
    b->hidden = split ? ffn_split(b, n) : ffn_decode(b, t);
    b->layout = local;
    em_free(b, &ffn_in); /* normalized FFN input */
    b->phase = PH_OTHER;
}

/* Final norm on the rank's rows; a split step gathers the last row of
 * every rank (the LM head needs the prompt's last token, held by the last
 * rank), then the LM head. */
static void seqpar_final(bld *b, int64_t t)
{
    int64_t h = b->a->hidden;
    em_tensor normed = layer_final_norm(b, rows_of(b, t));
    em_tensor last = EM_TENSOR_NONE; /* the last row of every rank */
    if (split_step(b)) {
        last = em_act_alloc(b, hid(b, b->tp));
        em_coll(b, "final_token_all_gather", CK_ALL_GATHER, G_TP, hid(b, b->tp),
                shp(2, b->tp, h, 0));
        b->layout = TL_FULL;
    }
    layer_lm_head(b);
    em_free(b, &last);
    em_free(b, &normed); /* normalized final rows */
    em_free(b, &b->residual);
}

static const layer_scheme SEQPAR_SCHEME = {"sequence_parallel", seqpar_embed, seqpar_layer,
                                           seqpar_final, split_step};
static const layer_scheme SEQPAR_DSA_CP_SCHEME = {"dsa_cp", seqpar_embed, seqpar_layer,
                                                  seqpar_final, split_step};

const layer_scheme *seqpar_scheme(const scenario *s)
{
    if (s->par.sp > 1 || !sc_seqpar(s))
        return NULL;
    return sc_dsa_cp(s) ? &SEQPAR_DSA_CP_SCHEME : &SEQPAR_SCHEME;
}
