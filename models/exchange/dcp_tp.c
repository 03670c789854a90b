/* dcp_tp: decode context parallelism inside the TP group (parallel.dcp,
 * vLLM's decode_context_parallel_size): the copied steps of a node whose
 * KV cache is stored by position over the D ranks of a DCP group (D
 * consecutive TP ranks, vLLM's all_ranks.reshape(-1, dcp)) and, with
 * sp > 1, over the SP group as well (internal.h ex_own_slots).
 *
 * MLA keeps one latent per position, which plain TP replicates on every
 * rank: DCP D stores each position on one rank of D, so a TP8 DCP8 node
 * holds each latent once.  GQA under TP > kv_heads replicates each KV head
 * on tp / kv_heads ranks; DCP splits the positions of a head over the
 * ranks that share it (the workload checks vLLM's conditions: tp divides by
 * D, D <= tp / kv_heads, D divides the query heads of a KV head).
 *
 * Every rank runs the step's projections (its hq query heads, the new K/V
 * or latents of every token) and writes the positions it stores.  Then,
 * per step:
 *   prefill, no cached tokens, sp = 1: every key is the step's own and on
 *     every rank: the attention of the TP layer, no exchange;
 *   MLA prefill after cached tokens, sp = 1: the cached latents of the
 *     other DCP ranks all-gathered over G_DCP (vllm-ascend's chunked
 *     context, gathered over DCP), expanded, attended with the step's;
 *   otherwise (decodes, GQA with cached tokens, every copied step of an SP
 *     node as cp-exchange.md runs them): the DCP merge inside the group:
 *     the queries all-gathered over G_DCP on the head dimension (D hq
 *     heads: the group's), every query over the rank's own slots, the fp32
 *     partials (d_v values + LSE per head) exchanged by an all-to-all over
 *     G_DCP split by head (vllm-ascend's all_to_all_single; each rank gets
 *     the D partials of its own hq heads), with sp > 1 all-gathered over
 *     G_SP too, and the P D partials merged with their LSE (vllm-ascend
 *     npu_attention_update; vLLM's cp_lse_ag_out_rs does the same with an
 *     all-gather of the LSE and a reduce-scatter), then the output
 *     projection (MLA: W_UV after the merge, on the latent output).
 */
#include "models/exchange/internal.h"

#include "models/attn/attn.h"

/* g with the D hq query heads of the DCP group (the KV heads unchanged:
 * the group's ranks share them). */
static attn_geom group_heads(const attn_geom *g, int D)
{
    attn_geom w = *g;
    w.hq = g->hq * D;
    w.q_w = g->q_w * D;
    w.out_w = g->out_w * D;
    if (g->form == AF_EXPANDED)
        w.hkv = w.hq; /* per-head keys expanded for every query head */
    return w;
}

/* The attention over every key of the step on the rank itself (a prefill
 * of the step's own keys, or after the cached latents were gathered): the
 * calls of the TP layer (a sliding-window layer's window as cap). */
static em_tensor local_attention(bld *b, const attn_geom *g, int64_t t, int64_t prefix)
{
    const arch *a = b->a;
    int64_t win = a->attn != ATTN_MLA && a->layer_window[b->layer] ? a->sliding_window : 0;
    plan_attn at[ATTN_MAX_CALLS];
    int n = attn_step_calls(b, t, prefix, win, 1, -1, 1, at);
    int64_t keys = 0;
    for (int c = 0; c < n; c++)
        keys += at[c].kv_len * (at[c].batch > 1 ? at[c].batch : 1);
    em_tensor kv = g->fam->expand(b, g, keys);
    em_tensor out = em_act_alloc(b, (double)t * (double)g->out_w * b->ab);
    em_tensor lse = em_lse_alloc(b, t, g->hq);
    for (int c = 0; c < n; c++)
        if (at[c].pairs > 0)
            g->fam->attend(b, g, "attention", &at[c]);
    em_free(b, &lse);
    em_free(b, &kv);
    return out;
}

/* The DCP merge inside the group (see the file's comment); returns the
 * merged output [t, hq, d_v]. */
static em_tensor group_merge(ex_ctx *x, const attn_geom *g, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    int D = x->D, P = x->P;
    attn_geom w = group_heads(g, D);
    /* the group's queries: D blocks of [t, hq, d_qk] */
    double qbytes = (double)t * (double)w.q_w * b->ab;
    em_tensor q = em_buf_alloc(b, qbytes);
    em_coll(b, "dcp_q_all_gather", CK_ALL_GATHER, G_DCP, qbytes, shp(3, t, w.hq, w.d_qk));
    em_tensor part = ex_dcp_attention(x, &w, t, prefix); /* the group's heads */
    em_free(b, &q);
    /* by head to the heads' owners: the send buffer is every partial */
    double mine = attn_part_bytes(g, t); /* one partial of this rank's heads */
    em_tensor recv = em_buf_alloc(b, (double)D * mine);
    em_coll(b, "dcp_partial_all_to_all", CK_ALL_TO_ALL, G_DCP, (double)D * mine,
            shp(3, (int64_t)D * t, g->hq, g->d_v + 1));
    em_free(b, &part);
    if (P > 1) { /* the SP ranks' partials of the same heads */
        em_tensor all = em_buf_alloc(b, (double)P * D * mine);
        em_coll(b, "dcp_all_gather", CK_ALL_GATHER, G_SP, (double)P * D * mine,
                shp(3, (int64_t)P * D * t, g->hq, g->d_v + 1));
        em_free(b, &recv);
        recv = all;
    }
    em_tensor out = em_act_alloc(b, (double)t * (double)g->out_w * b->ab);
    em_lse_merge(b, "dcp_merge", t, g->hq, g->d_v, P * D, 4.0); /* fp32 partials */
    em_free(b, &recv);
    return out;
}

em_tensor ex_dcp_group(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    attn_geom g = attn_geom_of(b, t);
    b->layout = TL_FULL;
    em_tensor qkv = g.fam->front(b, &g, t);
    g.fam->kv_write(b, &g, ex_own_slots(x, prefix, prefix + t));
    int decode = attn_step_all_decode(b, t);
    em_tensor out;
    if (x->P == 1 && !decode && prefix == 0 && !b->seqs) {
        out = local_attention(b, &g, t, prefix);
    } else if (x->P == 1 && !decode && g.form == AF_EXPANDED && !b->seqs) {
        /* the cached latents [0, prefix): the other ranks' slots */
        double bytes = (double)prefix * (double)g.kv_w * b->ab;
        em_tensor ctx = em_buf_alloc(b, bytes);
        em_coll(b, "dcp_kv_all_gather", CK_ALL_GATHER, G_DCP, bytes, shp(2, prefix, g.kv_w, 0));
        out = local_attention(b, &g, t, prefix);
        em_free(b, &ctx);
    } else {
        out = group_merge(x, &g, t, prefix);
    }
    em_free(b, &qkv);
    return g.fam->out(b, &g, t, &out);
}
