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
 * slots (positions y % P == me up to the step's end), the exact causal work
 * (query x sees the slots y <= x): one call of the kernel the profile
 * measured for it, a non-causal call over the compacted slots (strided
 * keys: a key block is all visible or all masked but near the diagonal, so
 * the call does the pairs' work; attention_cp.csv dcp_noncausal).  Returns
 * the fp32 partial outputs and LSE [t, hq, d + 1] (dcp_merge frees them). */
em_tensor ex_dcp_attention(ex_ctx *x, const attn_geom *g, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    em_tensor part = em_act_alloc(b, attn_part_bytes(g, t));
    plan_attn at[ATTN_MAX_CALLS];
    int n = attn_step_calls(b, t, prefix, 0, 0, x->me, x->P, at);
    int64_t slots = 0;
    for (int c = 0; c < n; c++)
        slots += at[c].kv_len * (at[c].batch > 1 ? at[c].batch : 1);
    em_tensor kv = g->fam->expand(b, g, slots); /* the rank's slots, attention-ready */
    for (int c = 0; c < n; c++) {
        if (at[c].pairs <= 0)
            continue;
        at[c].causal = 0;
        g->fam->attend(b, g, "dcp_attention", &at[c]);
    }
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
    g.fam->kv_write(b, &g, attn_stripe_count(prefix, prefix + t, x->me, x->P));
    em_tensor part = ex_dcp_attention(x, &g, t, prefix);
    em_free(b, &qkv);
    em_tensor out = ex_dcp_merge(x, &g, t, t, 0, &part);
    return g.fam->out(b, &g, t, &out);
}
