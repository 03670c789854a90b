/* memory: the checkpoint's tensors, their per-rank layout, the plain weight
 * estimate and KV-cache sizes per rank (see memory.h). */
#include "models/memory.h"

#include <stdio.h>

const char *mem_wfamily_name(mem_wfamily f)
{
    static const char *const t[] = {"embedding", "lm_head", "norms", "attention",
                                    "indexer", "dense_mlp", "router", "experts",
                                    "shared_experts"};
    return (unsigned)f < WF_COUNT ? t[f] : "?";
}

const char *mem_proj_name(mem_proj p)
{
    static const char *const t[] = {"", "q_a_proj", "q_b_proj", "kv_a_proj", "kv_b_proj",
                                    "o_proj"};
    return (unsigned)p < MP_COUNT ? t[p] : "?";
}

int64_t mem_kv_heads_per_rank(const arch *a, int tp)
{
    if (a->attn == ATTN_MLA)
        return 1;
    return a->kv_heads >= tp ? a->kv_heads / tp : 1;
}


/* ---- the tensor list ------------------------------------------------------ */

/* Enumeration state: the name buffer and the callback. */
typedef struct walk {
    const arch *a;
    mem_tensor_fn fn;
    void *ctx;
    int names;               /* build the names (0: t.name is NULL) */
    char name[192];
} walk;

/* Emit one tensor named <prefix>.<leaf>.<what> (an empty prefix or leaf is
 * left out with its dot). */
static void put_named(walk *w, const char *prefix, const char *leaf, const char *what,
                      mem_tensor t)
{
    t.name = NULL;
    if (w->names) {
        snprintf(w->name, sizeof w->name, "%s%s%s%s%s", prefix, *prefix && *leaf ? "." : "",
                 leaf, *prefix || *leaf ? "." : "", what);
        t.name = w->name;
    }
    w->fn(w->ctx, &t);
}

static void put(walk *w, const char *prefix, const char *leaf, mem_tensor t)
{
    put_named(w, prefix, leaf, "weight", t);
}

static mem_tensor vec(mem_wfamily fam, int32_t layer, int64_t n)
{
    return (mem_tensor){.fam = fam, .layer = layer, .expert = -1, .rows = n, .cols = 1,
                        .split = MS_REPLICATED};
}

static mem_tensor lin(mem_wfamily fam, int32_t layer, int64_t rows, int64_t cols,
                      mem_split split)
{
    return (mem_tensor){.fam = fam, .layer = layer, .expert = -1, .rows = rows, .cols = cols,
                        .split = split, .linear = 1};
}

static mem_tensor keep_float(mem_tensor t)
{
    t.keep_float = 1;
    return t;
}

static mem_tensor as_proj(mem_tensor t, mem_proj p)
{
    t.proj = p;
    return t;
}

static void mla_tensors(walk *w, const char *at, int32_t l)
{
    const arch *a = w->a;
    int64_t h = a->hidden, H = a->heads, ql = a->q_lora_rank, kl = a->kv_lora_rank;
    int64_t qk = a->qk_nope_dim + a->qk_rope_dim;
    if (ql > 0) {
        put(w, at, "q_a_proj", as_proj(lin(WF_ATTENTION, l, ql, h, MS_REPLICATED), MP_Q_A));
        put(w, at, "q_a_layernorm", vec(WF_ATTENTION, l, ql));
        put(w, at, "q_b_proj", as_proj(lin(WF_ATTENTION, l, H * qk, ql, MS_COLUMN), MP_Q_B));
    } else {
        put(w, at, "q_proj", lin(WF_ATTENTION, l, H * qk, h, MS_COLUMN));
    }
    put(w, at, "kv_a_proj_with_mqa",
        as_proj(lin(WF_ATTENTION, l, kl + a->qk_rope_dim, h, MS_REPLICATED), MP_KV_A));
    put(w, at, "kv_a_layernorm", vec(WF_ATTENTION, l, kl));
    put(w, at, "kv_b_proj",
        as_proj(keep_float(lin(WF_ATTENTION, l, H * (a->qk_nope_dim + a->v_head_dim), kl,
                               MS_COLUMN)), MP_KV_B));
    put(w, at, "o_proj", as_proj(lin(WF_ATTENTION, l, h, H * a->v_head_dim, MS_ROW), MP_O));
    if (!a->has_dsa)
        return;
    /* DSA lightning indexer, replicated (models-hardware.md 2.2) */
    char ix[112];
    snprintf(ix, sizeof ix, "%s.indexer", at);
    int64_t nI = a->index_heads, dI = a->index_head_dim;
    put(w, ix, "wq_b", lin(WF_INDEXER, l, nI * dI, ql, MS_REPLICATED));
    put(w, ix, "wk", keep_float(lin(WF_INDEXER, l, dI, h, MS_REPLICATED)));
    /* k_norm is a LayerNorm: weight and bias */
    put(w, ix, "k_norm", vec(WF_INDEXER, l, dI));
    put_named(w, ix, "k_norm", "bias", vec(WF_INDEXER, l, dI));
    put(w, ix, "weights_proj", keep_float(lin(WF_INDEXER, l, nI, h, MS_REPLICATED)));
}

static void gqa_tensors(walk *w, const char *at, int32_t l)
{
    const arch *a = w->a;
    int64_t h = a->hidden, d = a->head_dim;
    put(w, at, "q_proj", lin(WF_ATTENTION, l, a->heads * d, h, MS_COLUMN));
    put(w, at, "k_proj", lin(WF_ATTENTION, l, a->kv_heads * d, h, MS_KV_HEADS));
    put(w, at, "v_proj", lin(WF_ATTENTION, l, a->kv_heads * d, h, MS_KV_HEADS));
    put(w, at, "o_proj", lin(WF_ATTENTION, l, h, a->heads * d, MS_ROW));
    if (a->qk_norm) {
        put(w, at, "q_norm", vec(WF_ATTENTION, l, d));
        put(w, at, "k_norm", vec(WF_ATTENTION, l, d));
    }
}

/* gate_proj, up_proj (column) and down_proj (row) of one SwiGLU MLP. */
static void mlp_tensors(walk *w, const char *at, mem_tensor proto, int64_t inter)
{
    mem_tensor t = proto;
    t.linear = 1;
    t.rows = inter;
    t.cols = w->a->hidden;
    t.split = MS_COLUMN;
    put(w, at, "gate_proj", t);
    put(w, at, "up_proj", t);
    t.rows = w->a->hidden;
    t.cols = inter;
    t.split = MS_ROW;
    put(w, at, "down_proj", t);
}

static void ffn_tensors(walk *w, const char *mlp, int32_t l)
{
    const arch *a = w->a;
    char at[128];
    if (!a->layer_moe[l]) {
        mlp_tensors(w, mlp, (mem_tensor){.fam = WF_DENSE_MLP, .layer = l, .expert = -1},
                    a->intermediate);
        return;
    }
    put(w, mlp, "gate", keep_float(lin(WF_ROUTER, l, a->experts, a->hidden, MS_REPLICATED)));
    for (int32_t e = 0; e < a->experts; e++) {
        if (w->names) /* formatting 3 names per expert dominates otherwise */
            snprintf(at, sizeof at, "%s.experts.%d", mlp, e);
        mlp_tensors(w, at, (mem_tensor){.fam = WF_EXPERTS, .layer = l, .expert = e},
                    a->moe_intermediate);
    }
    if (a->shared_intermediate > 0) {
        snprintf(at, sizeof at, "%s.shared_experts", mlp);
        mlp_tensors(w, at,
                    (mem_tensor){.fam = WF_SHARED_EXPERTS, .layer = l, .expert = -1, .shared = 1},
                    a->shared_intermediate);
    }
}

static void layer_tensors(walk *w, int32_t l)
{
    char base[32], at[80];
    snprintf(base, sizeof base, "model.layers.%d", l);
    snprintf(at, sizeof at, "%s.input_layernorm", base);
    put(w, at, "", vec(WF_NORMS, l, w->a->hidden));
    snprintf(at, sizeof at, "%s.self_attn", base);
    if (w->a->attn == ATTN_MLA)
        mla_tensors(w, at, l);
    else
        gqa_tensors(w, at, l);
    snprintf(at, sizeof at, "%s.post_attention_layernorm", base);
    put(w, at, "", vec(WF_NORMS, l, w->a->hidden));
    snprintf(at, sizeof at, "%s.mlp", base);
    ffn_tensors(w, at, l);
}

void mem_each_tensor(const arch *a, int layer, int names, mem_tensor_fn fn, void *ctx)
{
    walk w = {.a = a, .fn = fn, .ctx = ctx, .names = names};
    int64_t h = a->hidden;
    if (layer == -1 || layer == MEM_ALL_LAYERS)
        put(&w, "model", "embed_tokens",
            keep_float(lin(WF_EMBEDDING, -1, a->vocab, h, MS_VOCAB)));
    for (int32_t l = 0; l < a->layers; l++)
        if (layer == l || layer == MEM_ALL_LAYERS)
            layer_tensors(&w, l);
    if (layer != -1 && layer != MEM_ALL_LAYERS)
        return;
    put(&w, "model", "norm", vec(WF_NORMS, -1, h));
    if (!a->tie_embeddings)
        put(&w, "", "lm_head", keep_float(lin(WF_LM_HEAD, -1, a->vocab, h, MS_VOCAB)));
}

/* ---- per-rank layout ------------------------------------------------------- */

mem_local mem_tensor_local(const arch *a, const mem_tensor *t, mem_shard sh)
{
    double tp = sh.tp < 1 ? 1 : sh.tp;
    int ep = sh.ep < 1 ? 1 : sh.ep;
    mem_local l = {(double)t->rows, (double)t->cols, 1.0};
    if (t->expert >= 0 && ep > 1) {
        l.frac = 1.0 / ep;
        return l;
    }
    if (sh.full_attn && (t->proj == MP_Q_B || t->proj == MP_KV_B || t->proj == MP_O))
        return l;
    if (t->shared && ep > 1 && !sh.shared_tp)
        return l;
    switch (t->split) {
    case MS_COLUMN:
    case MS_VOCAB:
        l.rows /= tp;
        break;
    case MS_ROW:
        l.cols /= tp;
        break;
    case MS_KV_HEADS:
        l.rows = (double)mem_kv_heads_per_rank(a, (int)tp) * (double)a->head_dim;
        break;
    case MS_REPLICATED:
        break;
    }
    return l;
}

/* ---- the plain estimate ---------------------------------------------------- */

typedef struct plain_acc {
    const arch *a;
    mem_shard sh;
    double e;
    mem_weights *out;
} plain_acc;

static void plain_add(void *ctx, const mem_tensor *t)
{
    plain_acc *p = ctx;
    mem_local l = mem_tensor_local(p->a, t, p->sh);
    p->out->bytes[t->fam] += l.rows * l.cols * l.frac * p->e;
}

void mem_weights_per_rank(const arch *a, mem_shard sh, cp_dtype wdt, mem_weights *out)
{
    for (int f = 0; f < WF_COUNT; f++)
        out->bytes[f] = 0;
    plain_acc p = {a, sh, dtype_bytes(wdt), out};
    mem_each_tensor(a, MEM_ALL_LAYERS, 0, plain_add, &p);
    out->total = 0;
    for (int f = 0; f < WF_COUNT; f++)
        out->total += out->bytes[f];
}
