/* arch_params: a model's parameters counted from its structure (arch.h). */
#include "models/arch_int.h"

/* q/k/v/o projections, optional per-head q/k RMSNorm, optional biases
 * (transformers LlamaAttention / Qwen3Attention: bias=attention_bias on all
 * four projections). */
static double gqa_params(const arch *a)
{
    double h = (double)a->hidden;
    double q = (double)a->heads * (double)a->head_dim;
    double kv = (double)a->kv_heads * (double)a->head_dim;
    double w = h * q + 2 * h * kv + q * h; /* q, k and v, o */
    if (a->qk_norm)
        w += 2 * (double)a->head_dim; /* q_norm, k_norm */
    if (a->attention_bias)
        w += q + 2 * kv + h;
    return w;
}

/* MLA projections as stored by transformers DeepseekV3Attention: q_a_proj,
 * q_a_layernorm, q_b_proj (or q_proj without a q latent), kv_a_proj_with_mqa,
 * kv_a_layernorm, kv_b_proj, o_proj; attention_bias adds biases to q_a_proj,
 * kv_a_proj_with_mqa and o_proj. */
static double mla_params(const arch *a)
{
    double h = (double)a->hidden, heads = (double)a->heads;
    double ql = (double)a->q_lora_rank, kl = (double)a->kv_lora_rank;
    double qk = (double)(a->qk_nope_dim + a->qk_rope_dim);
    double rope = (double)a->qk_rope_dim;
    double w = ql > 0 ? ql * h + ql + heads * qk * ql : heads * qk * h;
    w += (kl + rope) * h + kl;
    w += heads * (double)(a->qk_nope_dim + a->v_head_dim) * kl;
    w += heads * (double)a->v_head_dim * h;
    if (a->attention_bias)
        w += ql + kl + rope + h;
    return w;
}

/* Lightning indexer (deepseek-ai/DeepSeek-V3.2-Exp inference/model.py):
 * wq_b [n*d, q_lora], wk [d, hidden], k_norm LayerNorm(d) weight + bias,
 * weights_proj [n, hidden]. */
static double indexer_params(const arch *a)
{
    double h = (double)a->hidden, n = (double)a->index_heads, d = (double)a->index_head_dim;
    return n * d * (double)a->q_lora_rank + d * h + 2 * d + n * h;
}

/* Attention of one layer, with the layer's two RMSNorm weights
 * (input_layernorm, post_attention_layernorm). */
static double attn_params(const arch *a)
{
    double w = 2 * (double)a->hidden;
    w += a->attn == ATTN_MLA ? mla_params(a) : gqa_params(a);
    return a->has_dsa ? w + indexer_params(a) : w;
}

/* Dense: gate, up, down projections.  MoE: router weight, routed experts
 * (gate, up, down each), shared-expert MLP. */
static double ffn_params(const arch *a, int64_t layer)
{
    double h = (double)a->hidden, e = (double)a->experts;
    if (layer < 0 || layer >= a->layers)
        return 0;
    if (!a->layer_moe[layer])
        return 3 * h * (double)a->intermediate;
    return e * h + e * 3 * h * (double)a->moe_intermediate + 3 * h * (double)a->shared_intermediate;
}

/* Layers, token embedding, LM head unless tied, final norm. */
double arch_params_exact(const arch *a)
{
    double h = (double)a->hidden, sum = h;
    for (int64_t i = 0; i < a->layers; i++)
        sum += attn_params(a) + ffn_params(a, i);
    return sum + (a->tie_embeddings ? 1 : 2) * (double)a->vocab * h;
}

int64_t arch_attn_params_per_layer(const arch *a)
{
    return (int64_t)attn_params(a);
}

/* 0 for a layer index outside [0, layers). */
int64_t arch_ffn_params(const arch *a, int layer)
{
    return (int64_t)ffn_params(a, layer);
}

int64_t arch_total_params(const arch *a)
{
    return (int64_t)arch_params_exact(a);
}

int64_t arch_kv_elems_per_token_layer(const arch *a)
{
    if (a->attn == ATTN_MLA)
        return a->kv_lora_rank + a->qk_rope_dim;
    return 2 * a->kv_heads * a->head_dim; /* K and V */
}

/* --- other towers and aliases ------------------------------------------ */
