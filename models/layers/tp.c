/* tp: the tensor-parallel decoder layer pieces (see layers.h): the
 * vocabulary-parallel embedding and LM head, the decoder-layer skeleton
 * (the attention families are models/attn/, the MLP and MoE block
 * moe.c).
 *
 * Token counts are those of the rank: under sequence parallelism a split
 * step's layer runs on the rank's share of the tokens (models/exchange/),
 * which every piece here takes as its t. */
#include "models/layers/layers.h"


/* ---- around the layers ---------------------------------------------------- */

void layer_embed(bld *b, int64_t t)
{
    const arch *a = b->a;
    int64_t h = a->hidden;
    double th = (double)t * h * b->ab;
    b->residual = em_act_alloc(b, th);
    b->hidden = em_act_alloc(b, th); /* the embedding */
    /* a gather: reads each looked-up row of the table, writes it (2 t h) */
    em_compute(b, "embedding", KC_EMBEDDING, 0, 2.0 * th, shp(1, t, 0, 0),
               shp(2, a->vocab / b->tp, h, 0), shp(2, t, h, 0));
    em_coll(b, "embed_all_reduce", CK_ALL_REDUCE, G_TP, th, shp(2, t, h, 0));
}

em_tensor layer_final_norm(bld *b, int64_t t)
{
    em_tensor normed = em_act_alloc(b, (double)t * b->a->hidden * b->ab);
    em_rms_norm(b, "final_norm", t, b->a->hidden, 1);
    em_free(b, &b->hidden); /* last layer output */
    return normed;
}

void layer_lm_head(bld *b)
{
    const arch *a = b->a;
    if (!b->sample) /* a chunk of a prefill: no token is sampled (vLLM
                       computes logits only where it samples) */
        return;
    int64_t v = a->vocab / b->tp, m = b->nsample > 0 ? b->nsample : 1;
    /* logits in fp32, 4 B each (vLLM's v1 Sampler converts them to float32),
     * one row per sampled token */
    double logits = (double)m * (double)a->vocab * 4.0;
    em_tensor slice = em_act_alloc(b, (double)m * (double)v * 4.0);
    em_gemm(b, "lm_head", m, a->hidden, v, 1);
    em_tensor all = em_act_alloc(b, logits);
    em_coll(b, "logits_all_gather", CK_ALL_GATHER, G_TP, logits, shp(2, m, a->vocab, 0));
    /* reads each fp32 logit once; about one flop (a compare) per logit */
    em_compute(b, "sample", KC_TOPK, (double)m * (double)a->vocab, logits,
               shp(2, m, a->vocab, 0), shp(0, 0, 0, 0), shp(1, m, 0, 0));
    em_free(b, &all);
    em_free(b, &slice);
}

void layer_final(bld *b, int64_t t)
{
    em_tensor normed = layer_final_norm(b, t);
    layer_lm_head(b);
    em_free(b, &normed); /* normalized final hidden */
    em_free(b, &b->residual);
}

void layer_decoder(bld *b, int64_t tl, int64_t t, int64_t prefix, layer_attn_fn attn)
{
    int64_t h = b->a->hidden;
    double th = (double)tl * h * b->ab;
    b->phase = PH_ATTN;
    /* an eager engine's layer function (engine_checks.py layer()): its
     * caller holds the residual and the normalized input through the call,
     * and the layer's locals (q, k, v, the attention output, the residual
     * after attention, the FFN input) live until it returns */
    int mark = em_locals_begin(b);
    em_tensor normed = em_act_alloc(b, th);
    em_rms_norm(b, "input_norm", tl, h, b->layer > 0);
    /* the previous layer output (or embedding): the caller's residual
     * (b->residual) is what an eager engine holds of it */
    em_free(b, &b->hidden);
    em_tensor attn_out = attn(b, t, prefix);
    em_local(b, &normed); /* normalized input, consumed by the projections */
    b->phase = PH_FFN;
    if (em_impl(b, KS_NORM) == IMPL_TORCH)
        em_local_new(b, th); /* res + o_proj: a new residual, not added in place */
    em_tensor ffn_in = em_act_alloc(b, th);
    em_rms_norm(b, "post_attn_norm", tl, h, 1);
    em_free(b, &attn_out); /* o_proj's output, added into the residual */
    b->hidden = layer_ffn(b, tl);
    em_local(b, &ffn_in); /* normalized FFN input */
    em_locals_end(b, mark);
    b->phase = PH_OTHER;
}
