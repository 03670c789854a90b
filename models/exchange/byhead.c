/* byhead: the strategies over by-head KV storage (cp-exchange.md):
 * Ulysses for split steps, the head slice for copied ones.  They move KV
 * heads, so they take a per-head family (GQA; the workload refuses MLA's
 * one latent head on by-head storage). */
#include "models/exchange/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/attn/attn.h"
#include "models/memory.h"

/* ---- Ulysses and head slice (by-head storage) --------------------------------- */

/* Split step: the share's q/k/v are packed by destination (each peer's hu
 * q heads and the ku KV heads they need), all-to-all to head split over the
 * whole step, unpacked into position order (a copy unless the split is
 * contiguous, whose rank order is the position order), attention on hq/P
 * heads (with the KV heads they need: hkv/P, at least one, replicated to
 * every SP rank that needs it), the output packed back by destination (a
 * view for a contiguous split, else a copy), all-to-all, and unpacked from
 * [P, rows, hu, d] into the share's [rows, hq, d] (DeepSpeed-Ulysses's
 * transposes).  The rank stores its KV heads for every position of the
 * step. */
em_tensor ex_ulysses(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    attn_geom g = attn_geom_of(b, t);
    int P = x->P, reorder = x->split_kind != SPLIT_CONTIGUOUS;
    int64_t tm = x->mine.n, hu = g.hq / P, ku = mem_kv_heads_per_rank(b->a, b->tp * P);
    double td = (double)t, tmd = (double)tm;

    b->layout = TL_LOCAL;
    em_tensor qkv = attn_gqa_qkv(b, tm);
    /* to every peer: its hu q heads and the ku KV heads they need */
    double send = tmd * (double)((g.hq + 2 * P * ku) * g.d_qk) * b->ab;
    double recv = td * (double)((hu + 2 * ku) * g.d_qk) * b->ab;
    em_tensor packed = em_act_alloc(b, send);
    em_copy(b, "ulysses_qkv_pack", send, shp(3, tm, g.hq + 2 * g.hkv, g.d_qk),
            shp(3, P, tm, (hu + 2 * ku) * g.d_qk));
    em_free(b, &qkv); /* the share's q/k/v, packed */
    b->layout = TL_FULL;
    em_tensor heads = em_buf_alloc(b, recv); /* the step's q/k/v of this rank's heads */
    em_coll(b, "ulysses_qkv_all_to_all", CK_ALL_TO_ALL, G_SP, send,
            shp(3, t, hu + 2 * ku, g.d_qk));
    em_free(b, &packed);
    if (reorder)
        ex_repack(b, "ulysses_qkv_unpack", &heads, shp(3, P, x->most, (hu + 2 * ku) * g.d_qk),
               shp(3, t, hu + 2 * ku, g.d_qk));
    attn_gqa_kv_write(b, t, ku);
    plan_attn at = attn_call(&g, t, prefix + t, em_causal_pairs(t, prefix, 0));
    at.heads = hu;
    at.kv_heads = ku;
    em_tensor out = attn_gqa_attend_out(b, &at, 1, t); /* split: one sequence */
    em_free(b, &heads);
    if (reorder) /* from position order to the peers' blocks */
        ex_repack(b, "ulysses_out_pack", &out, shp(3, t, hu, g.d_qk),
                  shp(3, P, x->most, hu * g.d_qk));
    b->layout = TL_LOCAL;
    /* [P, rows, hu, d] from the peers, then the share's output, all heads */
    em_tensor share = em_buf_alloc(b, tmd * (double)(g.hq * g.d_qk) * b->ab);
    em_coll(b, "ulysses_out_all_to_all", CK_ALL_TO_ALL, G_SP, td * (double)(hu * g.d_qk) * b->ab,
            shp(3, tm, g.hq, g.d_qk));
    em_free(b, &out);
    ex_repack(b, "ulysses_out_unpack", &share, shp(3, P, tm, hu * g.d_qk),
              shp(3, tm, g.hq, g.d_qk));
    return attn_gqa_out(b, tm, &share);
}

/* Copied step on by-head storage ("head slice", our reading of the
 * spec's table): every SP rank runs the whole step's projections, writes
 * and attends its slice of hq/P heads (its KV heads) over the whole step,
 * and the slices are all-gathered over G_SP along the head dimension
 * ([P, t, hu, d]) and transposed into [t, hq, d] before o_proj. */
em_tensor ex_head_slice(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    attn_geom g = attn_geom_of(b, t);
    int P = x->P;
    int64_t hu = g.hq / P, ku = mem_kv_heads_per_rank(b->a, b->tp * P);
    double td = (double)t;

    b->layout = TL_FULL;
    em_tensor qkv = attn_gqa_qkv(b, t);
    attn_gqa_kv_write(b, t, ku);
    plan_attn at[ATTN_MAX_CALLS];
    int n = attn_step_calls(b, t, prefix, 0, 0, -1, 1, at);
    for (int c = 0; c < n; c++) {
        at[c].heads = hu;
        at[c].kv_heads = ku;
        at[c].d_qk = at[c].d_v = g.d_qk;
    }
    em_tensor slice = attn_gqa_attend_out(b, at, n, t);
    em_free(b, &qkv);
    double all = td * (double)(g.hq * g.d_qk) * b->ab;
    em_tensor gathered = em_buf_alloc(b, all);
    em_coll(b, "head_all_gather", CK_ALL_GATHER, G_SP, all, shp(3, t, g.hq, g.d_qk));
    em_free(b, &slice); /* gathered */
    ex_repack(b, "head_unpack", &gathered, shp(3, P, t, hu * g.d_qk), shp(3, t, g.hq, g.d_qk));
    return attn_gqa_out(b, t, &gathered);
}
