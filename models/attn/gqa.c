/* gqa: grouped-query attention (heads/tp query heads, the rank's KV heads
 * of head_dim each, mem_kv_heads_per_rank) as a family of attn.h and as
 * the tensor-parallel layer's attention: qkv_proj (column parallel), q/k
 * norm, RoPE, the paged K/V write, flash attention, o_proj (row parallel)
 * and its all-reduce over TP. */
#include "models/attn/attn.h"

#include "models/memory.h"

/* ---- pieces ------------------------------------------------------------------ */

em_tensor attn_gqa_qkv(bld *b, int64_t t)
{
    const arch *a = b->a;
    int64_t h = a->hidden, d = a->head_dim;
    int64_t hq = a->heads / b->tp;
    int64_t hkv = mem_kv_heads_per_rank(a, b->tp);
    int64_t qkv_w = (hq + 2 * hkv) * d;
    double td = (double)t;

    em_tensor qkv = em_act_alloc(b, td * qkv_w * b->ab);
    em_gemm(b, "qkv_proj", t, h, qkv_w, 1);
    int torch = em_impl(b, KS_NORM) == IMPL_TORCH;
    double qk = td * (double)(hq + hkv) * (double)d;
    /* eager memory (em_tmp, em_local_new: nothing without eager_locals) as
     * engine_checks.py layer() holds it: the contiguous copies live through
     * the norms, the normed q and k until RoPE rebinds them, the cos/sin
     * gathers and the rotated q and k to the layer's end; RoPE's neg, cat
     * and two products (x*cos, rot*sin) beside its input and output at the
     * add: 3 of the larger tensor at once */
    double qb = td * (double)hq * (double)d * b->ab, kb = td * (double)hkv * (double)d * b->ab;
    em_tensor contig[2] = {EM_TENSOR_NONE, EM_TENSOR_NONE};
    em_tensor normed_qk[2] = {EM_TENSOR_NONE, EM_TENSOR_NONE};
    if (a->qk_norm && torch) { /* q and k sliced out of qkv, made contiguous */
        contig[0] = em_tmp(b, qb);
        contig[1] = em_tmp(b, kb);
        em_stamp(b, em_copy(b, "qk_contiguous", qk * b->ab, shp(3, t, hq + hkv, d),
                            shp(3, t, hq + hkv, d)), IMPL_TORCH, 2);
    }
    if (a->qk_norm) { /* per-head RMSNorm of q and of k, as em_rms_norm */
        if (torch) {
            normed_qk[0] = em_tmp(b, qb);
            normed_qk[1] = em_tmp(b, kb);
        }
        em_stamp(b, em_compute(b, "qk_norm", KC_NORM, 4.0 * qk, 2.0 * qk * b->ab,
                               shp(3, t, hq + hkv, d), shp(1, d, 0, 0), shp(3, t, hq + hkv, d)),
                 torch ? IMPL_TORCH : IMPL_FUSED, 2);
        em_tmp_end(b, &contig[1]);
        em_tmp_end(b, &contig[0]);
    }
    int torch_rope = em_impl(b, KS_ROPE) == IMPL_TORCH;
    if (torch_rope) { /* cos and sin gathered at the positions */
        em_local_new(b, td * (double)d * b->ab);
        em_local_new(b, td * (double)d * b->ab);
        em_stamp(b, em_copy(b, "rope_cos_sin", 2.0 * td * (double)d * b->ab, shp(2, t, d, 0),
                            shp(2, t, d, 0)), IMPL_TORCH, 2);
    }
    em_tensor rope_tmp[3] = {EM_TENSOR_NONE, EM_TENSOR_NONE, EM_TENSOR_NONE};
    for (int k = 0; torch_rope && k < 3; k++) /* rot, x cos, rot sin */
        rope_tmp[k] = em_tmp(b, qb);
    if (torch_rope) { /* the rotated q and k */
        em_local_new(b, qb);
        em_local_new(b, kb);
    }
    em_rope(b, "rope", t, hq + hkv, d, 2);
    for (int k = 3; k-- > 0;)
        em_tmp_end(b, &rope_tmp[k]);
    em_tmp_end(b, &normed_qk[1]);
    em_tmp_end(b, &normed_qk[0]);
    if (em_impl(b, KS_ROPE) == IMPL_FUSED_KV_WRITE) { /* the K/V cache write inside */
        plan_op *r = &b->pg->ops[b->last_compute];
        r->bytes += td * 2.0 * (double)hkv * (double)d * (b->ab + b->kvb);
    }
    return qkv;
}

void attn_gqa_kv_write(bld *b, int64_t n, int64_t kv_heads)
{
    if (n <= 0)
        return;
    int64_t d = b->a->head_dim;
    double td = (double)n;
    /* K and V (2) per head into the cache, kv_cache dtype; reads them in the
     * activation dtype */
    double kv_bytes = td * (2.0 * (double)kv_heads * (double)d * b->kvb);
    plan_impl rope = em_impl(b, KS_ROPE);
    /* torch: a copy for K and one for V; the engines' one cache-write kernel
     * (vLLM reshape_and_cache_flash); none where RoPE writes the cache */
    if (rope != IMPL_FUSED_KV_WRITE)
        em_stamp(b, em_compute(b, "kv_write", KC_KV_WRITE, 0,
                               td * 2.0 * kv_heads * d * b->ab + kv_bytes,
                               shp(3, n, 2 * kv_heads, d), shp(0, 0, 0, 0),
                               shp(3, n, 2 * kv_heads, d)),
                 rope == IMPL_TORCH ? IMPL_TORCH : IMPL_FUSED, rope == IMPL_TORCH ? 2 : 1);
    em_mem(b, MC_KV_CACHE, kv_bytes, ST_COMPUTE);
}

uint32_t attn_gqa_attend(bld *b, const char *name, const plan_attn *at)
{
    double dsum = (double)(at->d_qk + at->d_v);
    /* per (query, key) pair and head: q.k over d_qk and p.v over d_v, a
     * multiply-add (2 flops) per element; bytes: q and the output once,
     * k and v once per KV head (the flash kernel's minimum traffic) */
    double flops = 2.0 * at->pairs * (double)at->heads * dsum;
    double seqs = at->batch > 1 ? (double)at->batch : 1.0;
    double bytes = seqs * ((double)at->q_len * at->heads * dsum +
                           (double)at->kv_len * at->kv_heads * dsum) * b->ab;
    return em_attention(b, name, KC_ATTENTION, at, flops, bytes);
}

em_tensor attn_gqa_attend_out(bld *b, const plan_attn *at, int ncalls, int64_t t)
{
    em_tensor out = em_act_alloc(b, (double)t * (double)(at->heads * at->d_v) * b->ab);
    em_tensor lse = em_lse_alloc(b, t, at->heads);
    /* a kernel set of varlen calls (engine.kernels varlen: vLLM's one
     * flash_attn_varlen_func per step) runs the step's calls as one launch:
     * its decodes unfolded, every part priced as its own rows */
    int varlen = b->s && b->s->kernels.varlen && ncalls > 1;
    for (int c = 0; c < ncalls; c++) {
        plan_attn part = at[c];
        part.unfolded = (uint8_t)(varlen && part.q_len == 1);
        uint32_t i = attn_gqa_attend(b, "attention", &part);
        b->pg->ops[i].shared_launch = (uint8_t)(varlen && c > 0);
    }
    em_free(b, &lse);
    return out;
}

em_tensor attn_gqa_out(bld *b, int64_t t, em_tensor *attn)
{
    const arch *a = b->a;
    int64_t h = a->hidden, hq = a->heads / b->tp;
    double td = (double)t;
    /* the attention's output, a local of an eager layer (o; the flash
     * kernels write it token-major, so its heads-to-rows reshape is a view,
     * no copy) */
    em_tensor out = em_act_alloc(b, td * h * b->ab);
    em_gemm(b, "o_proj", t, hq * a->head_dim, h, 1);
    em_local(b, attn);
    em_coll(b, "attn_all_reduce", CK_ALL_REDUCE, G_TP, td * h * b->ab, shp(2, t, h, 0));
    return out;
}

em_tensor attn_gqa_layer(bld *b, int64_t t, int64_t prefix)
{
    const arch *a = b->a;
    int64_t d = a->head_dim;
    int64_t hq = a->heads / b->tp;
    int64_t hkv = mem_kv_heads_per_rank(a, b->tp);

    em_tensor qkv = attn_gqa_qkv(b, t);
    attn_gqa_kv_write(b, t, hkv);
    /* a sliding-window layer: each query sees at most the window; a decode
     * call reads only the window's keys */
    int64_t win = a->layer_window[b->layer] ? a->sliding_window : 0;
    plan_attn at[ATTN_MAX_CALLS];
    int n = attn_step_calls(b, t, prefix, win, 1, -1, 1, at);
    for (int c = 0; c < n; c++) {
        at[c].heads = hq;
        at[c].kv_heads = hkv;
        at[c].d_qk = at[c].d_v = d;
    }
    em_tensor out = attn_gqa_attend_out(b, at, n, t);
    em_local(b, &qkv);
    return attn_gqa_out(b, t, &out);
}

/* ---- the family ------------------------------------------------------------------- */

static em_tensor gqa_front(bld *b, const attn_geom *g, int64_t m)
{
    (void)g;
    return attn_gqa_qkv(b, m);
}

static void gqa_kv_write(bld *b, const attn_geom *g, int64_t n)
{
    attn_gqa_kv_write(b, n, g->hkv);
}

static em_tensor gqa_expand(bld *b, const attn_geom *g, int64_t n)
{
    (void)b;
    (void)g;
    (void)n; /* per-head K/V are read as cached and exchanged */
    return EM_TENSOR_NONE;
}

static em_tensor gqa_select(bld *b, const attn_geom *g, int64_t m, plan_attn ix)
{
    (void)b;
    (void)g;
    (void)m;
    (void)ix; /* dense: every key */
    return EM_TENSOR_NONE;
}

static uint32_t gqa_attend(bld *b, const attn_geom *g, const char *name, plan_attn *at)
{
    at->heads = g->hq;
    at->kv_heads = g->hkv;
    at->d_qk = g->d_qk;
    at->d_v = g->d_v;
    return attn_gqa_attend(b, name, at);
}

static em_tensor gqa_out(bld *b, const attn_geom *g, int64_t m, em_tensor *attn)
{
    (void)g;
    return attn_gqa_out(b, m, attn);
}

const attn_family attn_gqa_family = {
    "gqa", gqa_front, gqa_kv_write, gqa_expand, gqa_select, gqa_attend, gqa_out,
};

int64_t attn_gqa_kv_row(const arch *a, int tp)
{
    return 2 * mem_kv_heads_per_rank(a, tp) * a->head_dim; /* K and V */
}

attn_geom attn_gqa_geom(const bld *b)
{
    attn_geom g = {.fam = &attn_gqa_family, .form = AF_HEADS};
    int64_t d = b->a->head_dim;
    g.hq = b->a->heads / b->tp;
    g.hkv = mem_kv_heads_per_rank(b->a, b->tp);
    g.d_qk = g.d_v = d;
    g.q_w = g.hq * d;
    g.kv_w = attn_gqa_kv_row(b->a, b->tp);
    g.front_w = g.q_w + g.kv_w;
    g.out_w = g.hq * d;
    return g;
}
