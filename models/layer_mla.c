/* layer_mla: multi-head latent attention (DeepSeek-V3 style) and its DSA
 * variant (lightning indexer + sparse attention over the top-k keys) as a
 * tensor-parallel layer piece (see layers.h).
 *
 * Weights as vLLM lays them out under TP: q_a_proj, kv_a_proj_with_mqa and
 * the DSA indexer projections are replicated (every rank computes them on
 * all tokens); q_b_proj and kv_b_proj are column parallel over heads, o_proj
 * row parallel.  The latent KV cache [kv_lora_rank + rope] is replicated.
 * Dense MLA prefill runs the un-absorbed form: kv_b_proj expands the cached
 * latents of the whole context into per-head keys and values and a causal
 * multi-head attention follows; decode (one token) runs the absorbed form
 * (q absorbed into the latent space by W_UK, attention over latents, W_UV
 * after).  DSA always runs absorbed: the indexer scores the full causal
 * prefix and keeps index_topk keys per query, and the sparse attention
 * (one bf16 op, mla_sparse_attention) attends only those.
 */
#include "models/layers.h"

#include "models/memory.h"

/* Lightning indexer on t queries after `prefix` cached keys; leaves the
 * top-k indices [t, topk] (int32) allocated. */
static void indexer(bld *b, int64_t t, int64_t prefix)
{
    const arch *a = b->a;
    int64_t h = a->hidden, nI = a->index_heads, dI = a->index_head_dim;
    int64_t k = a->index_topk, S = prefix + t;
    double td = (double)t;

    em_act_alloc(b, td * (nI * dI + dI + nI) * b->ab);
    em_gemm(b, "indexer_wq_b", t, a->q_lora_rank, nI * dI, 1);
    em_gemm(b, "indexer_wk", t, h, dI, 1);
    em_rms_norm(b, "indexer_k_norm", t, dI, 0);
    em_gemm(b, "indexer_weights_proj", t, h, nI, 1);
    em_compute(b, "indexer_rope", KC_ROPE, 3.0 * td * (nI + 1) * a->qk_rope_dim,
               2.0 * td * (nI + 1) * a->qk_rope_dim * b->ab, shp(3, t, nI + 1, a->qk_rope_dim),
               shp(0, 0, 0, 0), shp(3, t, nI + 1, a->qk_rope_dim));
    em_compute(b, "indexer_cache_write", KC_KV_WRITE, 0, 2.0 * td * dI * b->kvb,
               shp(2, t, dI, 0), shp(0, 0, 0, 0), shp(2, t, dI, 0));
    plan_attn at = {.q_len = t, .kv_len = S, .heads = nI, .kv_heads = 1, .d_qk = dI,
                    .d_v = 0, .causal = 1, .pairs = em_causal_pairs(t, prefix, 0)};
    /* per pair: q.k over index_head_dim for every indexer head, then the
     * head-weighted sum; reads the queries and the key cache, writes the
     * top-k indices */
    double flops = at.pairs * (2.0 * nI * dI + 2.0 * nI);
    double bytes = (td * nI * dI + (double)S * dI) * b->ab + td * (double)k * 4.0;
    em_act_alloc(b, td * (double)k * 4.0);
    em_attention(b, "indexer_topk", KC_INDEXER, &at, flops, bytes);
    em_act_free(b, td * (nI * dI + dI + nI) * b->ab);
}

void layer_attention_mla(bld *b, int64_t t, int64_t prefix)
{
    const arch *a = b->a;
    int64_t h = a->hidden, H = a->heads / b->tp;
    int64_t dn = a->qk_nope_dim, dr = a->qk_rope_dim, dv = a->v_head_dim;
    int64_t ql = a->q_lora_rank, kl = a->kv_lora_rank;
    int64_t S = prefix + t;
    double td = (double)t, Sd = (double)S;

    /* queries: [t, H, dn + dr] */
    em_act_alloc(b, td * H * (dn + dr) * b->ab);
    if (ql > 0) {
        em_act_alloc(b, td * ql * b->ab);
        em_gemm(b, "q_a_proj", t, h, ql, 1);
        em_rms_norm(b, "q_a_norm", t, ql, 0);
        em_gemm(b, "q_b_proj", t, ql, H * (dn + dr), 1);
    } else {
        em_gemm(b, "q_proj", t, h, H * (dn + dr), 1);
    }
    /* latent KV of the new tokens: [t, kl + dr] */
    em_act_alloc(b, td * (kl + dr) * b->ab);
    em_gemm(b, "kv_a_proj", t, h, kl + dr, 1);
    em_rms_norm(b, "kv_a_norm", t, kl, 0);
    em_compute(b, "rope", KC_ROPE, 3.0 * td * (H + 1) * dr, 2.0 * td * (H + 1) * dr * b->ab,
               shp(3, t, H + 1, dr), shp(0, 0, 0, 0), shp(3, t, H + 1, dr));
    double kv_bytes = td * mem_kv_bytes_per_token_layer(a, b->tp, b->s->kv_dtype);
    em_compute(b, "kv_write", KC_KV_WRITE, 0, td * (kl + dr) * b->ab + kv_bytes,
               shp(2, t, kl + dr, 0), shp(0, 0, 0, 0), shp(2, t, kl + dr, 0));
    em_mem(b, MC_KV_CACHE, kv_bytes, ST_COMPUTE);

    em_act_alloc(b, td * H * dv * b->ab); /* attention output */
    if (a->has_dsa) {
        indexer(b, t, prefix);
        if (ql > 0)
            em_act_free(b, td * ql * b->ab); /* q latent, read by the indexer */
        /* absorbed: q_nope x W_UK per head, sparse attention over latents,
         * x W_UV per head */
        em_act_alloc(b, td * H * (kl + dr) * b->ab);
        em_gemm(b, "q_absorb", t, dn, kl, H);
        plan_attn at = {.q_len = t, .kv_len = S, .heads = H, .kv_heads = 1,
                        .d_qk = kl + dr, .d_v = kl, .causal = 1,
                        .pairs = em_causal_pairs(t, prefix, a->index_topk)};
        double flops = at.pairs * 2.0 * H * (double)(kl + dr + kl);
        /* each query gathers its own selected latents */
        double bytes = at.pairs * (kl + dr) * b->kvb + td * H * (kl + dr + kl) * 2.0;
        em_act_alloc(b, td * H * kl * 2.0);
        uint32_t i = em_attention(b, "mla_sparse_attention", KC_SPARSE_ATTN, &at, flops, bytes);
        b->pg->ops[i].dtype = DT_BF16; /* SFA inputs are bf16 (RFC 3.6) */
        em_act_free(b, td * H * (kl + dr) * b->ab);
        em_act_free(b, td * (double)a->index_topk * 4.0); /* top-k indices */
        em_gemm(b, "v_absorb", t, kl, dv, H);
        em_act_free(b, td * H * kl * 2.0);
    } else if (t > 1) {
        if (ql > 0)
            em_act_free(b, td * ql * b->ab);
        /* un-absorbed prefill: expand the context's latents per head */
        em_act_alloc(b, Sd * H * (dn + dv) * b->ab);
        em_gemm(b, "kv_b_proj", S, kl, H * (dn + dv), 1);
        plan_attn at = {.q_len = t, .kv_len = S, .heads = H, .kv_heads = H,
                        .d_qk = dn + dr, .d_v = dv, .causal = 1,
                        .pairs = em_causal_pairs(t, prefix, 0)};
        double flops = 2.0 * at.pairs * H * (double)(dn + dr + dv);
        double bytes = (td * H * (dn + dr + dv) + Sd * H * (dn + dr + dv)) * b->ab;
        em_act_alloc(b, td * H * 4.0);
        em_attention(b, "mla_attention", KC_ATTENTION, &at, flops, bytes);
        em_act_free(b, td * H * 4.0);
        em_act_free(b, Sd * H * (dn + dv) * b->ab);
    } else {
        if (ql > 0)
            em_act_free(b, td * ql * b->ab);
        em_act_alloc(b, td * H * (kl + dr) * b->ab);
        em_gemm(b, "q_absorb", t, dn, kl, H);
        plan_attn at = {.q_len = t, .kv_len = S, .heads = H, .kv_heads = 1,
                        .d_qk = kl + dr, .d_v = kl, .causal = 1,
                        .pairs = em_causal_pairs(t, prefix, 0)};
        double flops = 2.0 * at.pairs * H * (double)(kl + dr + kl);
        double bytes = Sd * (kl + dr) * b->kvb + td * H * (kl + dr + kl) * b->ab;
        em_act_alloc(b, td * H * kl * b->ab);
        em_attention(b, "mla_attention", KC_ATTENTION, &at, flops, bytes);
        em_act_free(b, td * H * (kl + dr) * b->ab);
        em_gemm(b, "v_absorb", t, kl, dv, H);
        em_act_free(b, td * H * kl * b->ab);
    }
    em_act_free(b, td * (kl + dr) * b->ab);
    em_act_free(b, td * H * (dn + dr) * b->ab);

    em_act_alloc(b, td * h * b->ab);
    em_gemm(b, "o_proj", t, H * dv, h, 1);
    em_act_free(b, td * H * dv * b->ab);
    em_coll(b, "attn_all_reduce", CK_ALL_REDUCE, G_TP, td * h * b->ab, shp(2, t, h, 0));
}
