/* mla: multi-head latent attention (DeepSeek-V3 style) and its DSA
 * variant (lightning indexer + sparse attention over the top-k keys), as a
 * tensor-parallel layer piece, as the DSA CP attention (seqpar.h) and as a
 * family of attn.h for the exchange strategies.
 *
 * Weights as vLLM lays them out under TP: q_a_proj, kv_a_proj_with_mqa and
 * the DSA indexer projections are replicated (every rank computes them on
 * all its tokens); q_b_proj and kv_b_proj are column parallel over heads,
 * o_proj row parallel.  The latent KV cache [kv_lora_rank + rope] is
 * replicated.  Dense MLA prefill runs the un-absorbed form: kv_b_proj
 * expands the cached latents of the whole context into per-head keys and
 * values and a causal multi-head attention follows; decode (one token)
 * runs the absorbed form (q absorbed into the latent space by W_UK_T,
 * attention over latents, W_UV after).  DSA always runs absorbed: the
 * indexer scores the full causal prefix and keeps index_topk keys per
 * query, and the sparse attention (one bf16 op, mla_sparse_attention: RFC
 * 3.6, whatever the weight quantization) attends only those.
 *
 * DSA CP (RFC 3.3-3.5): q_b_proj, kv_b_proj (as W_UK_T / W_UV) and o_proj
 * keep their full layout and MLA sees a singleton TP group, so every rank
 * holds all heads.  Both caches take every token on every rank.  The
 * indexer's cost is split (RFC 3.3): its query side (wq_b, head weights,
 * score and top-k) runs on the rank's local queries over the full causal
 * prefix, its key side and cache update on the full tokens.  With the
 * rfc layout the q and KV projections and the sparse attention run on the
 * full tokens and the attention output is sliced to the rank's rows before
 * the replicated o_proj; with vllm_ascend (sfa_cp.py) the projections run
 * on the local rows, one fused [rope | nope | index-k] all-gather brings
 * every token's keys, posted on the comm stream so that it overlaps the q
 * up-projection, and the sparse attention runs on the local queries.
 * Under a TP group the ranks run one program, and a layer waits for its
 * slowest rank at the next gather: the local-query ops carry the cost of
 * the last rank, whose queries see the longest prefixes.
 */
#include "models/attn/attn.h"


#include "models/memory.h"

/* ---- layer-sharded weights ---------------------------------------------- */

/* The next kernel waits until the broadcast of projection p has arrived. */
static void before_use(bld *b, const attn_dsa_cp *c, mem_proj p)
{
    if (c && c->bcast[p] != EM_NONE)
        em_wait_for(b, c->bcast[p]);
}

/* Projection p's window (taken from the broadcast) is released after its
 * last kernel. */
static void after_use(bld *b, attn_dsa_cp *c, mem_proj p)
{
    if (c)
        em_free(b, &c->window[p]);
}

/* ---- pieces ------------------------------------------------------------------ */

/* q down-projection of m rows: q_a_proj + q_a_norm; returns the q latent
 * [m, q_lora_rank].  Without a q latent, q_proj straight into the queries
 * (returns EM_TENSOR_NONE). */
static em_tensor q_down(bld *b, int64_t m, int64_t H, attn_dsa_cp *c)
{
    const arch *a = b->a;
    int64_t ql = a->q_lora_rank;
    if (ql <= 0) {
        em_gemm(b, "q_proj", m, a->hidden, H * (a->qk_nope_dim + a->qk_rope_dim), 1);
        return EM_TENSOR_NONE;
    }
    em_tensor latent = em_act_alloc(b, (double)m * ql * b->ab);
    before_use(b, c, MP_Q_A);
    em_gemm(b, "q_a_proj", m, a->hidden, ql, 1);
    after_use(b, c, MP_Q_A);
    em_rms_norm(b, "q_a_norm", m, ql, 0);
    return latent;
}

/* q up-projection of m rows into the queries [m, H, nope + rope], RoPE of
 * their rope part. */
static void q_up(bld *b, int64_t m, int64_t H, attn_dsa_cp *c)
{
    const arch *a = b->a;
    int64_t dr = a->qk_rope_dim;
    if (a->q_lora_rank > 0) {
        before_use(b, c, MP_Q_B);
        em_gemm(b, "q_b_proj", m, a->q_lora_rank, H * (a->qk_nope_dim + dr), 1);
        after_use(b, c, MP_Q_B);
    }
    em_rope(b, "q_rope", m, H, dr, 1);
}

/* KV down-projection of m rows: kv_a_proj_with_mqa, the latent norm and
 * the RoPE of the shared rope key (output in a buffer the caller holds). */
static void kv_down(bld *b, int64_t m, attn_dsa_cp *c)
{
    const arch *a = b->a;
    int64_t kl = a->kv_lora_rank, dr = a->qk_rope_dim;
    before_use(b, c, MP_KV_A);
    em_gemm(b, "kv_a_proj", m, a->hidden, kl + dr, 1);
    after_use(b, c, MP_KV_A);
    em_rms_norm(b, "kv_a_norm", m, kl, 0);
    em_rope(b, "kv_rope", m, 1, dr, 1);
}

/* Paged write of m tokens' latents (and, DSA, their index keys: the
 * indexer cache is part of attn_kv_row). */
static void kv_write(bld *b, int64_t m)
{
    const arch *a = b->a;
    int64_t w = a->kv_lora_rank + a->qk_rope_dim;
    double kv_bytes = (double)m * attn_kv_row_bytes(a, b->tp, b->s->kv_dtype);
    em_compute(b, "kv_write", KC_KV_WRITE, 0, (double)m * w * b->ab + kv_bytes,
               shp(2, m, w, 0), shp(0, 0, 0, 0), shp(2, m, w, 0));
    em_mem(b, MC_KV_CACHE, kv_bytes, ST_COMPUTE);
}

/* Indexer key side of m rows: wk, LayerNorm k_norm, RoPE, cache write
 * (output in a buffer the caller holds). */
static void indexer_keys(bld *b, int64_t m)
{
    const arch *a = b->a;
    int64_t dI = a->index_head_dim, dr = a->qk_rope_dim;
    em_gemm(b, "indexer_wk", m, a->hidden, dI, 1);
    em_rms_norm(b, "indexer_k_norm", m, dI, 0);
    em_rope(b, "indexer_k_rope", m, 1, dr, 1);
}

static void indexer_cache_write(bld *b, int64_t m)
{
    int64_t dI = b->a->index_head_dim;
    /* reads the index keys, writes them into the cache: 2 m dI in kv_cache dtype */
    em_compute(b, "indexer_cache_write", KC_KV_WRITE, 0, 2.0 * (double)m * dI * b->kvb,
               shp(2, m, dI, 0), shp(0, 0, 0, 0), shp(2, m, dI, 0));
}

/* Indexer query side of m rows: wq_b on the q latent, head weights from
 * the hidden rows, RoPE; returns the queries [m, nI * dI] and head weights
 * [m, nI] as one tensor (indexer_select frees it). */
static em_tensor indexer_queries(bld *b, int64_t m)
{
    const arch *a = b->a;
    int64_t nI = a->index_heads, dI = a->index_head_dim, dr = a->qk_rope_dim;
    em_tensor q = em_act_alloc(b, (double)m * (double)(nI * dI + nI) * b->ab);
    em_gemm(b, "indexer_wq_b", m, a->q_lora_rank, nI * dI, 1);
    em_gemm(b, "indexer_weights_proj", m, a->hidden, nI, 1);
    em_rope(b, "indexer_q_rope", m, nI, dr, 1);
    return q;
}

/* The top-k indices of m queries: index_topk int32 key positions (4 B)
 * per query. */
static double topk_bytes(const bld *b, int64_t m)
{
    return (double)m * (double)b->a->index_topk * 4.0;
}

/* Score and top-k of the queries of *at (heads, dims filled here): per
 * pair q.k over index_head_dim for every indexer head and the
 * head-weighted sum; reads the queries and the key cache, writes the
 * top-k indices (int32). */
static void indexer_topk(bld *b, plan_attn at)
{
    const arch *a = b->a;
    int64_t nI = a->index_heads, dI = a->index_head_dim;
    at.heads = nI;
    at.kv_heads = 1;
    at.d_qk = dI;
    at.d_v = 0;
    /* per pair: a dI-long dot product (a multiply-add per element) per head,
     * then the weighted sum over the heads (a multiply-add per head) */
    double flops = at.pairs * (2.0 * nI * dI + 2.0 * nI);
    double bytes = ((double)at.q_len * nI * dI + (double)at.kv_len * dI) * b->ab +
                   topk_bytes(b, at.q_len);
    em_attention(b, "indexer_topk", KC_INDEXER, &at, flops, bytes);
}

/* The top-k of m indexer queries (*iq, freed: consumed) against the keys
 * of *at: allocates the indices (topk_bytes), scores; returns the indices
 * (absorbed() frees them). */
static em_tensor indexer_select(bld *b, int64_t m, plan_attn at, em_tensor *iq)
{
    em_tensor idx = em_act_alloc(b, topk_bytes(b, m));
    indexer_topk(b, at);
    em_free(b, iq);
    return idx;
}

/* Absorbed attention of m queries over the latent cache (*at: pairs, q
 * and kv lengths): q_nope x W_UK_T per head, attention over latents
 * [kl + rope], x W_UV per head; returns the output [m, H, v_head_dim].
 * topk non-NULL: the DSA op (bf16 inputs, each query gathers its own top-k
 * latents; frees the top-k indices *topk [m, index_topk]); NULL: the dense
 * decode form. */
static em_tensor absorbed(bld *b, int64_t m, int64_t H, plan_attn at, em_tensor *topk,
                          attn_dsa_cp *c)
{
    const arch *a = b->a;
    int64_t kl = a->kv_lora_rank, dr = a->qk_rope_dim, dv = a->v_head_dim;
    int sparse = topk != NULL;
    double md = (double)m, eb = sparse ? 2.0 : b->ab; /* SFA: bf16, 2 B (RFC 3.6) */
    at.heads = H;
    at.kv_heads = 1;
    at.d_qk = kl + dr;
    at.d_v = kl;
    at.causal = 1;
    /* per pair and head: q.k over kl + dr, then p.v over kl, a multiply-add
     * (2 flops) per element */
    double flops = 2.0 * at.pairs * H * (double)(kl + dr + kl);
    double cache = sparse ? at.pairs : (double)at.kv_len * (at.batch > 1 ? (double)at.batch : 1);
    double bytes = cache * (kl + dr) * b->kvb + md * H * (kl + dr + kl) * eb;
    em_tensor q = em_act_alloc(b, md * H * (kl + dr) * b->ab); /* absorbed queries */
    before_use(b, c, MP_KV_B);
    em_gemm(b, "q_absorb", m, a->qk_nope_dim, kl, H);
    em_tensor latent_out = em_act_alloc(b, md * H * kl * eb);
    uint32_t i = em_attention(b, sparse ? "mla_sparse_attention" : "mla_attention",
                              sparse ? KC_SPARSE_ATTN : KC_ATTENTION, &at, flops, bytes);
    if (sparse)
        b->pg->ops[i].dtype = DT_BF16; /* SFA inputs are bf16 (RFC 3.6) */
    em_free(b, &q);
    if (sparse)
        em_free(b, topk);
    em_tensor out = em_act_alloc(b, md * H * dv * b->ab);
    uint32_t v = em_gemm(b, "v_absorb", m, kl, dv, H);
    b->pg->ops[v].in = shp(3, m, H, kl);
    b->pg->ops[v].out = shp(3, m, H, dv);
    after_use(b, c, MP_KV_B);
    em_free(b, &latent_out);
    return out;
}

/* o_proj of m rows [m, H * v_head_dim] -> [m, h]: frees the attention
 * output *attn, returns the projection. */
static em_tensor out_proj(bld *b, int64_t m, int64_t H, em_tensor *attn, attn_dsa_cp *c)
{
    const arch *a = b->a;
    em_tensor out = em_act_alloc(b, (double)m * a->hidden * b->ab);
    before_use(b, c, MP_O);
    em_gemm(b, "o_proj", m, H * a->v_head_dim, a->hidden, 1);
    after_use(b, c, MP_O);
    em_free(b, attn);
    return out;
}

/* Un-absorbed dense prefill: kv_b_proj expands the context's latents per
 * head, causal multi-head attention; returns the output [t, H, dv]. */
static em_tensor unabsorbed(bld *b, int64_t t, int64_t prefix, int64_t H)
{
    const arch *a = b->a;
    int64_t dn = a->qk_nope_dim, dr = a->qk_rope_dim, dv = a->v_head_dim;
    /* a batch (attn_step_merged): one varlen call over every sequence, each
     * expanding its own context */
    plan_attn at = attn_step_merged(b, t, prefix, 0);
    int64_t S = at.kv_len * (at.batch > 1 ? at.batch : 1);
    double td = (double)t, Sd = (double)S;
    em_tensor out = em_act_alloc(b, td * H * dv * b->ab);
    em_tensor kv = em_act_alloc(b, Sd * H * (dn + dv) * b->ab); /* per-head keys and values */
    em_gemm(b, "kv_b_proj", S, a->kv_lora_rank, H * (dn + dv), 1);
    at.heads = at.kv_heads = H;
    at.d_qk = dn + dr;
    at.d_v = dv;
    /* per pair and head: q.k over dn + dr, p.v over dv, 2 flops each */
    double flops = 2.0 * at.pairs * H * (double)(dn + dr + dv);
    double bytes = (td * H * (dn + dr + dv) + Sd * H * (dn + dr + dv)) * b->ab;
    em_tensor lse = em_lse_alloc(b, t, H);
    em_attention(b, "mla_attention", KC_ATTENTION, &at, flops, bytes);
    em_free(b, &lse);
    em_free(b, &kv);
    return out;
}

/* The key side of m rows of DSA CP: returns their latent KV and index keys
 * [m, attn_mla_kv_row] (allocated here), written by kv_down and indexer_keys. */
static em_tensor key_side(bld *b, int64_t m, attn_dsa_cp *c)
{
    em_tensor kv = em_act_alloc(b, (double)m * (double)attn_mla_kv_row(b->a) * b->ab);
    kv_down(b, m, c);
    indexer_keys(b, m);
    return kv;
}

/* ---- tensor-parallel MLA -------------------------------------------------------- */

em_tensor attn_mla_layer(bld *b, int64_t t, int64_t prefix)
{
    const arch *a = b->a;
    int64_t H = a->heads / b->tp, dn = a->qk_nope_dim, dr = a->qk_rope_dim;
    double td = (double)t;
    em_tensor q = em_act_alloc(b, td * H * (dn + dr) * b->ab); /* queries */
    em_tensor latent = q_down(b, t, H, NULL);
    q_up(b, t, H, NULL);
    /* latent KV (+ index keys) of the new tokens */
    em_tensor kv = em_act_alloc(b, td * (double)attn_mla_kv_row(a) * b->ab);
    kv_down(b, t, NULL);
    kv_write(b, t);
    em_tensor topk = EM_TENSOR_NONE;
    if (a->has_dsa) {
        indexer_keys(b, t);
        indexer_cache_write(b, t);
        em_tensor iq = indexer_queries(b, t);
        plan_attn ix = attn_step_merged(b, t, prefix, 0);
        topk = indexer_select(b, t, ix, &iq);
    }
    em_free(b, &latent);
    em_tensor out;
    /* decodes absorbed, prefills expanded (a batch mixing both runs
     * expanded: one varlen call, attn_step_merged) */
    if (a->has_dsa || attn_step_all_decode(b, t)) {
        int64_t cap = a->has_dsa ? a->index_topk : 0;
        plan_attn at = attn_step_merged(b, t, prefix, cap);
        out = absorbed(b, t, H, at, a->has_dsa ? &topk : NULL, NULL);
    } else {
        out = unabsorbed(b, t, prefix, H);
    }
    em_free(b, &kv);
    em_free(b, &q);
    em_tensor proj = out_proj(b, t, H, &out, NULL);
    em_coll(b, "attn_all_reduce", CK_ALL_REDUCE, G_TP, td * a->hidden * b->ab,
            shp(2, t, a->hidden, 0));
    return proj;
}

/* ---- DSA CP ------------------------------------------------------------------------ */

/* The local queries of the rank that costs most: rank r holds the step's
 * rows [r*n, min((r+1)*n, t)), its queries see the keys up to their own
 * position (at most cap of them; 0: all). */
static plan_attn slowest_rank(const attn_dsa_cp *c, int tp, int64_t cap)
{
    plan_attn best = {.causal = 1, .pairs = -1.0};
    int ranks = c->split ? tp : 1;
    for (int r = 0; r < ranks; r++) {
        int64_t lo = (int64_t)r * c->tl, q = c->t - lo;
        if (q <= 0)
            break;
        if (q > c->tl)
            q = c->tl;
        double pairs = em_causal_pairs(q, c->prefix + lo, cap);
        if (pairs >= best.pairs) {
            best.q_len = q;
            best.kv_len = c->prefix + lo + q;
            best.pairs = pairs;
        }
    }
    return best;
}

/* A collective the next kernels do not wait for (the caller waits where
 * its output is consumed). */
static uint32_t async_gather(bld *b, const char *name, double bytes, plan_shape out)
{
    uint32_t i = em_coll(b, name, CK_ALL_GATHER, G_TP, bytes, out);
    if (i != EM_NONE && b->npending > 0 && b->pending[b->npending - 1] == i)
        b->npending--;
    return i;
}

em_tensor attn_mla_cp(bld *b, attn_dsa_cp *c)
{
    const arch *a = b->a;
    int64_t H = a->heads; /* singleton TP view: every head on every rank */
    int64_t dn = a->qk_nope_dim, dr = a->qk_rope_dim, dv = a->v_head_dim;
    int64_t t = c->t, n = c->tl, full = c->split ? n * b->tp : t;
    int local_q = c->split && c->layout == DSA_LAYOUT_VLLM_ASCEND;
    int64_t m = local_q ? n : t; /* rows of the projections and queries of the attention */
    uint8_t part = c->split ? TL_LOCAL : TL_FULL;

    b->layout = local_q ? part : TL_FULL;
    em_tensor q = em_act_alloc(b, (double)m * H * (dn + dr) * b->ab); /* queries */
    em_tensor latent = q_down(b, m, H, c);
    uint32_t fused = EM_NONE;
    /* latent KV + index keys: of every token; of the local rows (local_q) */
    em_tensor kv = EM_TENSOR_NONE, mine = EM_TENSOR_NONE;
    if (local_q) {
        mine = key_side(b, n, c);
        double kv_bytes = (double)full * ((double)attn_mla_kv_row(a) * b->ab);
        kv = em_act_alloc(b, kv_bytes);
        b->layout = TL_FULL;
        fused = async_gather(b, "kv_fused_all_gather", kv_bytes,
                             shp(2, full, attn_mla_kv_row(a), 0));
        b->layout = part;
    }
    q_up(b, m, H, c);
    b->layout = part;
    em_tensor iq = indexer_queries(b, n);
    b->layout = TL_FULL;
    if (local_q) {
        em_wait_for(b, fused);
        em_free(b, &mine); /* gathered */
    } else {
        kv = key_side(b, t, c);
    }
    kv_write(b, t);
    indexer_cache_write(b, t);

    b->layout = part;
    em_tensor topk = indexer_select(b, m, slowest_rank(c, b->tp, 0), &iq);
    em_free(b, &latent);

    plan_attn at = attn_step_merged(b, t, c->prefix, a->index_topk);
    b->layout = local_q ? part : TL_FULL;
    em_tensor out = absorbed(b, m, H, local_q ? slowest_rank(c, b->tp, a->index_topk) : at,
                             &topk, c);
    em_free(b, &kv);
    em_free(b, &q);

    int64_t rows = c->split ? n : t;
    if (c->split && !local_q) {
        /* the token slice before o_proj (RFC 3.3.1): a layout change of the
         * full-token output to this rank's rows, not a reduction */
        b->layout = part;
        double bytes = (double)n * H * dv * b->ab;
        em_tensor slice = em_act_alloc(b, bytes);
        /* a copy: reads the rank's rows, writes them (2 x bytes) */
        em_compute(b, "attn_token_slice", KC_COPY, 0, 2.0 * bytes, shp(3, t, H, dv),
                   shp(0, 0, 0, 0), shp(3, n, H, dv));
        em_free(b, &out);
        out = slice;
    }
    b->layout = part;
    return out_proj(b, rows, H, &out, c); /* replicated o_proj: no feature all-reduce */
}

/* ---- the family (attn.h), for the exchange strategies -------------------------------
 * Heads are the TP rank's (heads / tp); the latent cache holds every head's
 * keys, so it is what the strategies store, gather and pass (g.kv_w =
 * kl + dr, + the index key with DSA: one position of the cache). */

int64_t attn_mla_kv_row(const arch *a)
{
    /* the latent and its rope key, + the indexer's key cache with DSA */
    return a->kv_lora_rank + a->qk_rope_dim + (a->has_dsa ? a->index_head_dim : 0);
}

attn_geom attn_mla_geom(const bld *b, int64_t t)
{
    const arch *a = b->a;
    int64_t kl = a->kv_lora_rank, dr = a->qk_rope_dim;
    attn_geom g = {.fam = &attn_mla_family};
    g.hq = a->heads / b->tp;
    g.idx_w = a->has_dsa ? a->index_head_dim : 0;
    g.kv_w = attn_mla_kv_row(a);
    g.topk = a->has_dsa ? a->index_topk : 0;
    /* as the tensor-parallel layer: decodes and DSA absorbed, prefills
     * expanded (attn_mla_layer) */
    if (a->has_dsa || attn_step_all_decode(b, t)) {
        g.form = AF_LATENT;
        g.hkv = 1;
        g.d_qk = kl + dr;
        g.d_v = kl;
    } else {
        g.form = AF_EXPANDED;
        g.hkv = g.hq;
        g.d_qk = a->qk_nope_dim + dr;
        g.d_v = a->v_head_dim;
    }
    g.q_w = g.hq * g.d_qk;
    g.front_w = g.q_w + g.kv_w;
    g.out_w = g.hq * g.d_v;
    return g;
}

/* q_a / q_b projections and RoPE (AF_LATENT: the queries absorbed by
 * W_UK_T, a batched GEMM per head), kv_a_proj with its norm and RoPE, and
 * with DSA the indexer's key side. */
static em_tensor mla_front(bld *b, const attn_geom *g, int64_t m)
{
    em_tensor f = em_act_alloc(b, (double)m * (double)g->front_w * b->ab);
    em_tensor latent = q_down(b, m, g->hq, NULL);
    q_up(b, m, g->hq, NULL);
    if (g->form == AF_LATENT)
        em_gemm(b, "q_absorb", m, b->a->qk_nope_dim, b->a->kv_lora_rank, g->hq);
    kv_down(b, m, NULL);
    if (b->a->has_dsa)
        indexer_keys(b, m);
    em_free(b, &latent);
    return f;
}

static void mla_kv_write(bld *b, const attn_geom *g, int64_t n)
{
    (void)g;
    if (n <= 0)
        return;
    kv_write(b, n);
    if (b->a->has_dsa)
        indexer_cache_write(b, n);
}

/* kv_b_proj over n latents: per-head keys [dn] and values [dv] (the rope
 * key is shared, read from the latent). */
static em_tensor mla_expand(bld *b, const attn_geom *g, int64_t n)
{
    const arch *a = b->a;
    if (g->form != AF_EXPANDED || n <= 0)
        return EM_TENSOR_NONE;
    int64_t w = g->hq * (a->qk_nope_dim + a->v_head_dim);
    em_tensor kv = em_act_alloc(b, (double)n * (double)w * b->ab);
    em_gemm(b, "kv_b_proj", n, a->kv_lora_rank, w, 1);
    return kv;
}

static em_tensor mla_select(bld *b, const attn_geom *g, int64_t m, plan_attn ix)
{
    if (g->topk <= 0)
        return EM_TENSOR_NONE;
    em_tensor iq = indexer_queries(b, m);
    return indexer_select(b, m, ix, &iq);
}

static uint32_t mla_attend(bld *b, const attn_geom *g, const char *name, plan_attn *at)
{
    at->heads = g->hq;
    at->kv_heads = g->hkv;
    at->d_qk = g->d_qk;
    at->d_v = g->d_v;
    if (g->form == AF_EXPANDED) /* a multi-head flash attention */
        return attn_gqa_attend(b, name, at);
    int sparse = g->topk > 0;
    double rows = (double)at->q_len * (at->batch > 1 ? (double)at->batch : 1.0);
    double eb = sparse ? 2.0 : b->ab; /* SFA: bf16, 2 B (RFC 3.6) */
    /* per pair and head: q.k over kl + dr, then p.v over kl, a multiply-add
     * (2 flops) per element; bytes: the latents read (each query's own
     * top-k gathered when sparse), the queries and the output once */
    double flops = 2.0 * at->pairs * (double)g->hq * (double)(g->d_qk + g->d_v);
    double cache = sparse ? at->pairs
                          : (double)at->kv_len * (at->batch > 1 ? (double)at->batch : 1.0);
    double bytes = cache * (double)g->d_qk * b->kvb +
                   rows * (double)g->hq * (double)(g->d_qk + g->d_v) * eb;
    uint32_t i = em_attention(b, name, sparse ? KC_SPARSE_ATTN : KC_ATTENTION, at, flops, bytes);
    if (sparse)
        b->pg->ops[i].dtype = DT_BF16; /* SFA inputs are bf16 (RFC 3.6) */
    return i;
}

static em_tensor mla_out(bld *b, const attn_geom *g, int64_t m, em_tensor *attn)
{
    const arch *a = b->a;
    if (g->form == AF_LATENT) { /* W_UV per head: latent output [m, H, kl] -> [m, H, dv] */
        em_tensor v = em_act_alloc(b, (double)m * (double)(g->hq * a->v_head_dim) * b->ab);
        uint32_t i = em_gemm(b, "v_absorb", m, a->kv_lora_rank, a->v_head_dim, g->hq);
        b->pg->ops[i].in = shp(3, m, g->hq, a->kv_lora_rank);
        b->pg->ops[i].out = shp(3, m, g->hq, a->v_head_dim);
        em_free(b, attn);
        *attn = v;
    }
    em_tensor proj = out_proj(b, m, g->hq, attn, NULL);
    em_coll(b, "attn_all_reduce", CK_ALL_REDUCE, G_TP, (double)m * a->hidden * b->ab,
            shp(2, m, a->hidden, 0));
    return proj;
}

const attn_family attn_mla_family = {
    "mla", mla_front, mla_kv_write, mla_expand, mla_select, mla_attend, mla_out,
};
