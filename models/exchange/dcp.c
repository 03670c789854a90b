/* dcp: attention over a rank's own KV slots and the merge of the
 * partials with their LSE (cp-exchange.md "DCP merge"): the copied steps
 * of by-position storage, and the all_gather split's copied path. */
#include "models/exchange/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/attn/attn.h"
#include "models/memory.h"

/* ---- DCP: attention over the rank's own slots, partials merged ------------------- */

/* Every query of the step (t of them, after `prefix`) over this rank's KV
 * slots (its stripe of the P D, ex_own_slots, up to the step's end), the
 * exact causal work (query x sees the slots y <= x): one call of the kernel the profile
 * measured for it, a non-causal call over the compacted slots (strided
 * keys: a key block is all visible or all masked but near the diagonal, so
 * the call does the pairs' work; attention_cp.csv dcp_noncausal).  Returns
 * the fp32 partial outputs and LSE [t, hq, d + 1] (dcp_merge frees them). */
/* DSA over position storage: each rank holds the index keys of its slots.
 * Every query is scored over them (the indexer over the slots' pairs) and
 * keeps its local top-k as candidates; the candidates (fp32 score and int32
 * index, 8 B each) are all-gathered over G_SP and each query's top-k taken
 * over the P x topk of them (derived: a selection reading the candidates,
 * a compare each, writing the indices); the calls at[] then attend the
 * selected keys among the rank's slots: each call's dense slot pairs scaled
 * by the part of the sequence's causal pairs the top-k keeps (exchange's
 * ex_sparse_share: the selected keys spread as the positions do).  Returns
 * the indices (the caller frees them); dense: nothing. */
static em_tensor dcp_select(ex_ctx *x, const attn_geom *g, int64_t t, int64_t prefix,
                            plan_attn *at, int n, int64_t slots)
{
    bld *b = &x->b;
    if (g->topk <= 0)
        return EM_TENSOR_NONE;
    int P = x->P;
    plan_attn dense[ATTN_MAX_CALLS], capped[ATTN_MAX_CALLS];
    attn_step_calls(b, t, prefix, 0, 0, -1, 1, dense);
    attn_step_calls(b, t, prefix, g->topk, 0, -1, 1, capped);
    double scored = 0;
    for (int c = 0; c < n; c++)
        scored += at[c].pairs;
    plan_attn ix = attn_call(g, t, slots, scored);
    em_tensor idx = g->fam->select(b, g, t, ix);
    double cand = (double)P * (double)t * (double)g->topk * 8.0; /* score + index */
    em_tensor all = em_buf_alloc(b, cand);
    em_coll(b, "dcp_topk_all_gather", CK_ALL_GATHER, G_SP, cand,
            shp(3, (int64_t)P * t, g->topk, 2));
    em_compute(b, "dcp_topk_merge", KC_TOPK, cand / 8.0,
               cand + (double)t * (double)g->topk * 4.0, shp(3, (int64_t)P * t, g->topk, 2),
               shp(0, 0, 0, 0), shp(2, t, g->topk, 0));
    em_free(b, &all);
    for (int c = 0; c < n; c++)
        if (dense[c].pairs > 0)
            at[c].pairs *= capped[c].pairs / dense[c].pairs;
    return idx;
}

em_tensor ex_dcp_attention(ex_ctx *x, const attn_geom *g, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    em_tensor part = em_act_alloc(b, attn_part_bytes(g, t));
    plan_attn at[ATTN_MAX_CALLS];
    int n = attn_step_calls(b, t, prefix, 0, 0, x->kv_me, x->kvP, at);
    int64_t slots = 0;
    for (int c = 0; c < n; c++)
        slots += at[c].kv_len * (at[c].batch > 1 ? at[c].batch : 1);
    em_tensor kv = g->fam->expand(b, g, slots); /* the rank's slots, attention-ready */
    em_tensor idx = dcp_select(x, g, t, prefix, at, n, slots);
    for (int c = 0; c < n; c++) {
        if (at[c].pairs <= 0)
            continue;
        at[c].causal = 0;
        g->fam->attend(b, g, "dcp_attention", &at[c]);
    }
    em_free(b, &idx);
    em_free(b, &kv);
    return part;
}

/* The exchange and merge of the partials *part of the step's t queries:
 * `rows` rows of the output on this rank.  Copied steps keep every row: the
 * partials are all-gathered and merged; a split step keeps its share
 * (rows): each rank sends every peer the partials of the peer's rows
 * (all-to-all) and merges the P it receives for its own.  Frees the
 * partials, returns the output [rows, hq, d]. */
em_tensor ex_dcp_merge(ex_ctx *x, const attn_geom *g, int64_t t, int64_t rows, int split,
                           em_tensor *part)
{
    bld *b = &x->b;
    int P = x->P;
    double recv_bytes = (double)P * attn_part_bytes(g, split ? x->most : t);
    em_tensor recv = em_buf_alloc(b, recv_bytes);
    if (split)
        em_coll(b, "dcp_partial_all_to_all", CK_ALL_TO_ALL, G_SP,
                (double)P * attn_part_bytes(g, x->most),
                shp(3, (int64_t)P * x->most, g->hq, g->d_v + 1));
    else
        em_coll(b, "dcp_all_gather", CK_ALL_GATHER, G_SP, recv_bytes,
                shp(3, (int64_t)P * t, g->hq, g->d_v + 1));
    em_free(b, part);
    em_tensor out = em_act_alloc(b, (double)rows * (double)g->out_w * b->ab);
    em_lse_merge(b, "dcp_merge", rows, g->hq, g->d_v, P, 4.0); /* fp32 partials */
    em_free(b, &recv);
    return out;
}

/* ---- DCP merge (copied steps on by-position storage) ----------------------------- */

/* Every SP rank runs the whole step's projections, writes the new positions
 * it stores, attends all queries over its own slots only (about 1/P of the
 * keys, exact causal count); the partial outputs and LSE, in fp32
 * (cp-exchange.md), are all-gathered over G_SP and merged. */
em_tensor ex_dcp_copied(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    attn_geom g = attn_geom_of(b, t);

    b->layout = TL_FULL;
    em_tensor qkv = g.fam->front(b, &g, t);
    g.fam->kv_write(b, &g, ex_own_slots(x, prefix, prefix + t));
    em_tensor part = ex_dcp_attention(x, &g, t, prefix);
    em_free(b, &qkv);
    em_tensor out = ex_dcp_merge(x, &g, t, t, 0, &part);
    return g.fam->out(b, &g, t, &out);
}
