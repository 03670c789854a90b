/* attn: the family of a model and the geometry of a step (attn.h). */
#include "models/attn/attn.h"

attn_geom attn_geom_of(const bld *b, int64_t t)
{
    if (b->a->attn == ATTN_MLA)
        return attn_mla_geom(b, t);
    return attn_gqa_geom(b);
}

int64_t attn_kv_row(const arch *a, int tp)
{
    if (a->attn == ATTN_MLA)
        return attn_mla_kv_row(a);
    return attn_gqa_kv_row(a, tp);
}

double attn_kv_row_bytes(const arch *a, int tp, cp_dtype kvdt)
{
    return (double)attn_kv_row(a, tp) * dtype_bytes(kvdt);
}

em_tensor attn_layer(bld *b, int64_t t, int64_t prefix)
{
    if (b->a->attn == ATTN_MLA)
        return attn_mla_layer(b, t, prefix);
    return attn_gqa_layer(b, t, prefix);
}

plan_attn attn_call(const attn_geom *g, int64_t q, int64_t kv, double pairs)
{
    plan_attn at = {.q_len = q, .kv_len = kv, .heads = g->hq, .kv_heads = g->hkv,
                    .d_qk = g->d_qk, .d_v = g->d_v, .causal = 1, .pairs = pairs};
    return at;
}

double attn_part_bytes(const attn_geom *g, int64_t n)
{
    /* out_w values and hq LSEs per row, fp32 (4 B) */
    return (double)n * (double)(g->out_w + g->hq) * 4.0;
}
