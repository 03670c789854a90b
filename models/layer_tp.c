/* layer_tp: the tensor-parallel decoder layer pieces (see layers.h and the
 * shared pieces declared in exchange.h): the vocabulary-parallel embedding
 * and LM head, the decoder-layer skeleton, GQA attention with column/row
 * parallel projections, the dense SwiGLU MLP and the MoE block (experts
 * sharded by TP in the intermediate dimension, or by EP with all-to-all
 * dispatch/combine).
 *
 * Token counts are those of the rank: under sequence parallelism a split
 * step's layer runs on the rank's share of the tokens (models/exchange.c),
 * which every piece here takes as its t. */
#include "models/layers.h"

#include <math.h>

#include "models/exchange.h"
#include "models/memory.h"

const mlp_names MLP_DENSE = {"mlp_gate_up", "mlp_act", "mlp_down"};
const mlp_names MLP_EXPERTS = {"expert_gate_up", "expert_act", "expert_down"};
const mlp_names MLP_SHARED = {"shared_gate_up", "shared_act", "shared_down"};

/* ---- around the layers ---------------------------------------------------- */

void layer_embed(bld *b, int64_t t)
{
    const arch *a = b->a;
    int64_t h = a->hidden;
    double th = (double)t * h * b->ab;
    em_act_alloc(b, th); /* residual stream */
    em_act_alloc(b, th); /* layer output / embedding */
    em_compute(b, "embedding", KC_EMBEDDING, 0, 2.0 * th, shp(1, t, 0, 0),
               shp(2, a->vocab / b->tp, h, 0), shp(2, t, h, 0));
    em_coll(b, "embed_all_reduce", CK_ALL_REDUCE, G_TP, th, shp(2, t, h, 0));
}

void layer_final_norm(bld *b, int64_t t)
{
    double th = (double)t * b->a->hidden * b->ab;
    em_act_alloc(b, th);
    em_rms_norm(b, "final_norm", t, b->a->hidden, 1);
    em_act_free(b, th); /* last layer output */
}

void layer_lm_head(bld *b)
{
    const arch *a = b->a;
    int64_t v = a->vocab / b->tp;
    em_act_alloc(b, (double)v * 4.0);
    em_gemm(b, "lm_head", 1, a->hidden, v, 1);
    em_act_alloc(b, (double)a->vocab * 4.0);
    em_coll(b, "logits_all_gather", CK_ALL_GATHER, G_TP, (double)a->vocab * 4.0,
            shp(2, 1, a->vocab, 0));
    em_compute(b, "sample", KC_TOPK, (double)a->vocab, (double)a->vocab * 4.0,
               shp(2, 1, a->vocab, 0), shp(0, 0, 0, 0), shp(1, 1, 0, 0));
    em_act_free(b, (double)a->vocab * 4.0);
    em_act_free(b, (double)v * 4.0);
}

void layer_final(bld *b, int64_t t)
{
    double th = (double)t * b->a->hidden * b->ab;
    layer_final_norm(b, t);
    layer_lm_head(b);
    em_act_free(b, th); /* normalized final hidden */
    em_act_free(b, th); /* residual */
}

void layer_decoder(bld *b, int64_t tl, int64_t t, int64_t prefix, layer_attn_fn attn)
{
    int64_t h = b->a->hidden;
    double th = (double)tl * h * b->ab;
    em_act_alloc(b, th);
    em_rms_norm(b, "input_norm", tl, h, b->layer > 0);
    em_act_free(b, th); /* previous layer output (or embedding) */
    attn(b, t, prefix);
    em_act_free(b, th); /* normalized input, consumed by the projections */
    em_act_alloc(b, th);
    em_rms_norm(b, "post_attn_norm", tl, h, 1);
    em_act_free(b, th); /* attention output */
    layer_ffn(b, tl);
    em_act_free(b, th); /* normalized FFN input */
}

/* ---- MLP -------------------------------------------------------------------- */

void layer_mlp(bld *b, const mlp_names *nm, int64_t m, int64_t inter, int64_t g)
{
    const arch *a = b->a;
    double rows = (double)m * (double)g;
    const char *n_gu = nm->gate_up, *n_act = nm->act, *n_dn = nm->down;
    em_act_alloc(b, rows * 2.0 * inter * b->ab);
    em_gemm(b, n_gu, m, a->hidden, 2 * inter, g);
    em_act_alloc(b, rows * inter * b->ab);
    em_elementwise(b, n_act, KC_ELEMENTWISE, m * g, 2 * inter, inter, 5.0);
    em_act_free(b, rows * 2.0 * inter * b->ab);
    em_act_alloc(b, rows * a->hidden * b->ab);
    em_gemm(b, n_dn, m, inter, a->hidden, g);
    em_act_free(b, rows * inter * b->ab);
}

/* ---- GQA attention ------------------------------------------------------------ */

void layer_gqa_qkv(bld *b, int64_t t)
{
    const arch *a = b->a;
    int64_t h = a->hidden, d = a->head_dim;
    int64_t hq = a->heads / b->tp;
    int64_t hkv = mem_kv_heads_per_rank(a, b->tp);
    int64_t qkv_w = (hq + 2 * hkv) * d;
    double td = (double)t;

    em_act_alloc(b, td * qkv_w * b->ab);
    em_gemm(b, "qkv_proj", t, h, qkv_w, 1);
    if (a->qk_norm)
        em_compute(b, "qk_norm", KC_NORM, 4.0 * td * (hq + hkv) * d,
                2.0 * td * (hq + hkv) * d * b->ab, shp(3, t, hq + hkv, d),
                shp(1, d, 0, 0), shp(3, t, hq + hkv, d));
    em_compute(b, "rope", KC_ROPE, 3.0 * td * (hq + hkv) * d,
            2.0 * td * (hq + hkv) * d * b->ab, shp(3, t, hq + hkv, d), shp(0, 0, 0, 0),
            shp(3, t, hq + hkv, d));
}

void layer_gqa_kv_write(bld *b, int64_t n, int64_t kv_heads)
{
    if (n <= 0)
        return;
    int64_t d = b->a->head_dim;
    double td = (double)n;
    double kv_bytes = td * (2.0 * (double)kv_heads * (double)d * b->kvb);
    em_compute(b, "kv_write", KC_KV_WRITE, 0, td * 2.0 * kv_heads * d * b->ab + kv_bytes,
            shp(3, n, 2 * kv_heads, d), shp(0, 0, 0, 0), shp(3, n, 2 * kv_heads, d));
    em_mem(b, MC_KV_CACHE, kv_bytes, ST_COMPUTE);
}

uint32_t layer_gqa_attend(bld *b, const char *name, const plan_attn *at)
{
    double dsum = (double)(at->d_qk + at->d_v);
    double flops = 2.0 * at->pairs * (double)at->heads * dsum;
    double bytes = ((double)at->q_len * at->heads * dsum +
                    (double)at->kv_len * at->kv_heads * dsum) * b->ab;
    return em_attention(b, name, KC_ATTENTION, at, flops, bytes);
}

void layer_gqa_out(bld *b, int64_t t)
{
    const arch *a = b->a;
    int64_t h = a->hidden, hq = a->heads / b->tp;
    double td = (double)t;
    em_act_alloc(b, td * h * b->ab);
    em_gemm(b, "o_proj", t, hq * a->head_dim, h, 1);
    em_act_free(b, td * hq * a->head_dim * b->ab);
    em_coll(b, "attn_all_reduce", CK_ALL_REDUCE, G_TP, td * h * b->ab, shp(2, t, h, 0));
}

void layer_attention_gqa(bld *b, int64_t t, int64_t prefix)
{
    const arch *a = b->a;
    int64_t d = a->head_dim;
    int64_t hq = a->heads / b->tp;
    int64_t hkv = mem_kv_heads_per_rank(a, b->tp);
    double td = (double)t;

    layer_gqa_qkv(b, t);
    layer_gqa_kv_write(b, t, hkv);
    plan_attn at = {.q_len = t, .kv_len = prefix + t, .heads = hq, .kv_heads = hkv,
                    .d_qk = d, .d_v = d, .causal = 1,
                    .pairs = em_causal_pairs(t, prefix, 0)};
    em_act_alloc(b, td * hq * d * b->ab);
    em_act_alloc(b, td * hq * 4.0); /* softmax log-sum-exp, fp32 per head and row */
    layer_gqa_attend(b, "attention", &at);
    em_act_free(b, td * hq * 4.0);
    em_act_free(b, td * ((hq + 2 * hkv) * d) * b->ab);
    layer_gqa_out(b, t);
}

/* ---- MoE ------------------------------------------------------------------------ */

/* Weighted sum of each of m tokens' k expert outputs into [m, h]. */
static void moe_sum(bld *b, int64_t m)
{
    const arch *a = b->a;
    double row = (double)a->hidden * b->ab, out = (double)m * (double)a->top_k;
    em_compute(b, "moe_sum", KC_MOE_PERMUTE, 2.0 * out * (double)a->hidden,
               out * row + (double)m * row, shp(3, m, a->top_k, a->hidden), shp(0, 0, 0, 0),
               shp(2, m, a->hidden, 0));
}

void layer_moe_route(bld *b, int64_t m)
{
    const arch *a = b->a;
    double md = (double)m, E = (double)a->experts, k = (double)a->top_k;
    em_act_alloc(b, md * E * 4.0);
    em_gemm(b, "router", m, a->hidden, a->experts, 1);
    em_compute(b, "topk", KC_TOPK, 5.0 * md * E, md * E * 4.0 + md * k * 8.0,
               shp(2, m, a->experts, 0), shp(0, 0, 0, 0), shp(2, m, a->top_k, 0));
    em_act_free(b, md * E * 4.0);
}

void layer_moe_routed_ep(bld *b, int64_t m)
{
    const arch *a = b->a;
    int64_t h = a->hidden, k = a->top_k, e_local = a->experts / b->ep;
    double row = (double)h * b->ab, out = (double)m * (double)k;
    /* uniform routing: the rank's E/ep experts receive, from all ep ranks,
     * as many rows as it sends */
    int64_t m_exp = (int64_t)ceil(out / (double)e_local);
    double in = (double)m_exp * (double)e_local;
    /* pack each token's k copies by destination rank, then exchange */
    em_act_alloc(b, out * row);
    em_compute(b, "moe_permute", KC_MOE_PERMUTE, 0, 2.0 * out * row, shp(2, m, h, 0),
               shp(0, 0, 0, 0), shp(2, m * k, h, 0));
    em_buf_alloc(b, in * row);
    em_coll(b, "moe_dispatch", CK_ALL_TO_ALL, G_EP, out * row, shp(2, m * k, h, 0));
    em_act_free(b, out * row);
    layer_mlp(b, &MLP_EXPERTS, m_exp, a->moe_intermediate, e_local);
    em_buf_free(b, in * row); /* received rows */
    em_buf_alloc(b, out * row);
    em_coll(b, "moe_combine", CK_ALL_TO_ALL, G_EP, out * row, shp(2, m * k, h, 0));
    em_act_free(b, in * row); /* expert outputs, sent back */
    em_act_alloc(b, (double)m * row);
    moe_sum(b, m);
    em_buf_free(b, out * row); /* combined rows */
}

/* MoE block on the rank's t tokens; leaves the output [t, h] allocated and
 * reduced.  With EP the tokens a rank holds are also held by the other
 * members of its TP group; the members of the EP group that hold the same
 * tokens ("sharers") each route a 1/sharers slice of them.  An EP group
 * inside a TP group (ep divides tp) shares all its tokens; one that spans
 * whole TP groups of several SP ranks (cp-exchange.md "MoE under SP")
 * shares them only within each TP group, whose token sets differ.  The
 * dispatch/combine all-to-alls are sized from the tokens this rank routes;
 * an all-gather over the sharers restores the TP-replicated layout. */
void layer_moe(bld *b, int64_t t)
{
    const arch *a = b->a;
    int64_t h = a->hidden;
    int ep = b->ep;
    int inside_tp = ep <= b->tp;
    int sharers = inside_tp ? ep : b->tp;
    plan_group gather = inside_tp ? G_EP : G_TP;
    int64_t tl = ep > 1 ? (t + sharers - 1) / sharers : t;
    double tld = (double)tl, row = (double)h * b->ab;

    layer_moe_route(b, tl);
    if (ep > 1) {
        layer_moe_routed_ep(b, tl);
    } else {
        /* every expert, sharded by TP in its intermediate dimension, gets
         * tl * k / E rows under uniform routing; the fused MoE kernel reads
         * them by index straight from the hidden states (vLLM fused_moe):
         * no packed copy */
        int64_t m_exp = (int64_t)ceil(tld * (double)a->top_k / (double)a->experts);
        layer_mlp(b, &MLP_EXPERTS, m_exp, a->moe_intermediate / b->tp, a->experts);
        em_act_alloc(b, tld * row);
        moe_sum(b, tl);
        em_act_free(b, (double)m_exp * (double)a->experts * row); /* expert outputs */
    }
    if (a->shared_intermediate > 0) {
        int64_t sh_inter = ep > 1 ? a->shared_intermediate : a->shared_intermediate / b->tp;
        layer_mlp(b, &MLP_SHARED, tl, sh_inter, 1);
        em_elementwise(b, "shared_add", KC_ELEMENTWISE, tl, 2 * h, h, 1.0);
        em_act_free(b, tld * row);
    }
    if (ep > 1) {
        em_act_alloc(b, (double)t * row);
        em_coll(b, "moe_all_gather", CK_ALL_GATHER, gather, (double)t * row, shp(2, t, h, 0));
        em_act_free(b, tld * row);
    } else {
        em_coll(b, "moe_all_reduce", CK_ALL_REDUCE, G_TP, (double)t * row, shp(2, t, h, 0));
    }
}

void layer_ffn(bld *b, int64_t t)
{
    const arch *a = b->a;
    if (a->layer_moe[b->layer]) {
        layer_moe(b, t);
        return;
    }
    layer_mlp(b, &MLP_DENSE, t, a->intermediate / b->tp, 1);
    em_coll(b, "mlp_all_reduce", CK_ALL_REDUCE, G_TP, (double)t * a->hidden * b->ab,
         shp(2, t, a->hidden, 0));
}
