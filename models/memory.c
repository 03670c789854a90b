/* memory: static weights and KV-cache sizes per rank (see memory.h). */
#include "models/memory.h"

const char *mem_wfamily_name(mem_wfamily f)
{
    static const char *const t[] = {"embedding", "lm_head", "norms", "attention",
                                    "indexer", "dense_mlp", "router", "experts",
                                    "shared_experts"};
    return (unsigned)f < WF_COUNT ? t[f] : "?";
}

int64_t mem_kv_heads_per_rank(const arch *a, int tp)
{
    if (a->attn == ATTN_MLA)
        return 1;
    return a->kv_heads >= tp ? a->kv_heads / tp : 1;
}

double mem_kv_bytes_per_token_layer(const arch *a, int tp, cp_dtype kvdt)
{
    double e = dtype_bytes(kvdt);
    if (a->attn == ATTN_MLA) {
        double b = (double)(a->kv_lora_rank + a->qk_rope_dim) * e;
        if (a->has_dsa)
            b += (double)a->index_head_dim * e; /* indexer key cache */
        return b;
    }
    return 2.0 * (double)mem_kv_heads_per_rank(a, tp) * (double)a->head_dim * e;
}

/* Attention projection elements of one layer on one rank. */
static double attn_elems(const arch *a, int tp)
{
    double h = (double)a->hidden;
    if (a->attn == ATTN_MLA) {
        double H = (double)a->heads / tp;
        double qk = (double)(a->qk_nope_dim + a->qk_rope_dim);
        double q = a->q_lora_rank > 0
                       ? h * a->q_lora_rank + a->q_lora_rank + (double)a->q_lora_rank * H * qk
                       : h * H * qk;
        double kv_a = h * (double)(a->kv_lora_rank + a->qk_rope_dim) + a->kv_lora_rank;
        double kv_b = (double)a->kv_lora_rank * H * (double)(a->qk_nope_dim + a->v_head_dim);
        double o = H * (double)a->v_head_dim * h;
        return q + kv_a + kv_b + o;
    }
    double d = (double)a->head_dim;
    double q = h * ((double)a->heads / tp) * d;
    double kv = 2.0 * h * (double)mem_kv_heads_per_rank(a, tp) * d;
    double o = ((double)a->heads / tp) * d * h;
    double extra = a->qk_norm ? 2.0 * d : 0.0;
    return q + kv + o + extra;
}

static double indexer_elems(const arch *a)
{
    if (!a->has_dsa)
        return 0;
    double ih = (double)a->index_heads * a->index_head_dim;
    return ih * (double)a->q_lora_rank + (double)a->index_head_dim * a->hidden +
           2.0 * a->index_head_dim + (double)a->index_heads * a->hidden;
}

void mem_weights_per_rank(const arch *a, mem_shard sh, cp_dtype wdt, mem_weights *out)
{
    double e = dtype_bytes(wdt);
    double h = (double)a->hidden;
    int tp = sh.tp < 1 ? 1 : sh.tp;
    int ep = sh.ep < 1 ? 1 : sh.ep;
    for (int f = 0; f < WF_COUNT; f++)
        out->bytes[f] = 0;
    double vocab_r = (double)a->vocab / tp;
    out->bytes[WF_EMBEDDING] = vocab_r * h * e;
    out->bytes[WF_LM_HEAD] = a->tie_embeddings ? 0 : vocab_r * h * e;
    for (int64_t l = 0; l < a->layers; l++) {
        out->bytes[WF_NORMS] += 2.0 * h * e;
        out->bytes[WF_ATTENTION] += attn_elems(a, tp) * e;
        out->bytes[WF_INDEXER] += indexer_elems(a) * e;
        if (!a->layer_moe[l]) {
            out->bytes[WF_DENSE_MLP] += 3.0 * h * (double)a->intermediate / tp * e;
            continue;
        }
        out->bytes[WF_ROUTER] += (double)a->experts * h * e;
        double expert = 3.0 * h * (double)a->moe_intermediate * e;
        if (ep > 1)
            out->bytes[WF_EXPERTS] += (double)a->experts / ep * expert;
        else
            out->bytes[WF_EXPERTS] += (double)a->experts * expert / tp;
        /* with EP the shared experts run replicated on each rank's local tokens */
        out->bytes[WF_SHARED_EXPERTS] +=
            3.0 * h * (double)a->shared_intermediate / (ep > 1 ? 1 : tp) * e;
    }
    out->bytes[WF_NORMS] += h * e; /* final norm */
    out->total = 0;
    for (int f = 0; f < WF_COUNT; f++)
        out->total += out->bytes[f];
}
