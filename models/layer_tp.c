/* layer_tp: the tensor-parallel decoder layer pieces (see layers.h and the
 * shared pieces declared in exchange.h): the vocabulary-parallel embedding
 * and LM head, the decoder-layer skeleton, GQA attention with column/row
 * parallel projections (the MLP and MoE block are in layer_moe.c).
 *
 * Token counts are those of the rank: under sequence parallelism a split
 * step's layer runs on the rank's share of the tokens (models/exchange.c),
 * which every piece here takes as its t. */
#include "models/layers.h"

#include "models/exchange.h"
#include "models/memory.h"

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
    if (!b->sample) /* a chunk of a prefill: no token is sampled (vLLM
                       computes logits only where it samples) */
        return;
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
    b->phase = PH_ATTN;
    em_act_alloc(b, th);
    em_rms_norm(b, "input_norm", tl, h, b->layer > 0);
    em_act_free(b, th); /* previous layer output (or embedding) */
    attn(b, t, prefix);
    em_act_free(b, th); /* normalized input, consumed by the projections */
    b->phase = PH_FFN;
    em_act_alloc(b, th);
    em_rms_norm(b, "post_attn_norm", tl, h, 1);
    em_act_free(b, th); /* attention output */
    layer_ffn(b, tl);
    em_act_free(b, th); /* normalized FFN input */
    b->phase = PH_OTHER;
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
    em_rope(b, "rope", t, hq + hkv, d);
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
    /* a sliding-window layer: each query sees at most the window; a decode
     * call reads only the window's keys */
    int64_t win = a->layer_window[b->layer] ? a->sliding_window : 0;
    int64_t kv = win > 0 && t <= 16 && prefix + t > win + t ? win + t : prefix + t;
    plan_attn at = {.q_len = t, .kv_len = kv, .heads = hq, .kv_heads = hkv,
                    .d_qk = d, .d_v = d, .causal = 1,
                    .pairs = em_causal_pairs(t, prefix, win)};
    em_act_alloc(b, td * hq * d * b->ab);
    em_act_alloc(b, td * hq * 4.0); /* softmax log-sum-exp, fp32 per head and row */
    layer_gqa_attend(b, "attention", &at);
    em_act_free(b, td * hq * 4.0);
    em_act_free(b, td * ((hq + 2 * hkv) * d) * b->ab);
    layer_gqa_out(b, t);
}
