/* gather: the all_gather strategy of split steps over by-position storage
 * (cp-exchange.md): the shares' q, k and v (or k and v alone) gathered over
 * the SP group, the attention run locally. */
#include "models/exchange/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/attn/attn.h"
#include "models/memory.h"

/* ---- all_gather (by-position storage) ------------------------------------------ */

/* Split step, all_gather_tensors = qkv (cp-exchange.md "all_gather": "one
 * all-gather of q, k and v over the SP group gives every rank the whole
 * step; each rank runs the ordinary (copied-path) attention and keeps only
 * its share of the output"): the all-gather of the shares' q, k and v
 * (padded to the largest share: an all-gather moves equal blocks), then the
 * copied path over position storage as a copied step runs it: the rank
 * writes the positions it stores (x % P == me), attends every query of the
 * step over its own slots (DCP), all-gathers the fp32 partials of every row
 * and merges every row; then it keeps its share (a slice copy).  The whole
 * step's q/k/v stay resident through the attention.  all_gather_merge:
 * own_rows, a what-if the engine does not have: the partials of each rank's
 * rows go to it (all-to-all) and it merges those alone. */
em_tensor ex_all_gather_qkv(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    attn_geom g = attn_geom_of(b, t);
    int P = x->P;
    int64_t tm = x->mine.n;
    double bytes = (double)P * (double)x->most * (double)g.front_w * b->ab;

    b->layout = TL_LOCAL;
    em_tensor qkv = g.fam->front(b, &g, tm);
    b->layout = TL_FULL;
    em_tensor gathered = em_buf_alloc(b, bytes);
    em_coll(b, "sp_qkv_all_gather", CK_ALL_GATHER, G_SP, bytes,
            shp(2, P * x->most, g.front_w, 0));
    em_free(b, &qkv); /* all of it is in the gathered buffer */
    g.fam->kv_write(b, &g, ex_own_slots(x, prefix, prefix + t));
    em_tensor part = ex_dcp_attention(x, &g, t, prefix);
    em_free(b, &gathered);
    em_tensor out;
    if (b->s->par.all_gather_merge == AGM_OWN_ROWS) {
        b->layout = TL_LOCAL;
        out = ex_dcp_merge(x, &g, t, tm, 1, &part);
    } else {
        em_tensor full = ex_dcp_merge(x, &g, t, t, 0, &part);
        b->layout = TL_LOCAL;
        double mine = (double)tm * (double)g.out_w * b->ab;
        out = em_act_alloc(b, mine);
        /* the share's rows of the merged output: read once, written once */
        em_compute(b, "sp_slice", KC_COPY, 0, 2.0 * mine, shp(3, t, g.hq, g.d_v),
                   shp(0, 0, 0, 0), shp(3, tm, g.hq, g.d_v));
        em_free(b, &full);
    }
    return g.fam->out(b, &g, tm, &out);
}


/* The share's attention over the gathered keys (ex_all_gather_kv): the
 * calls its split and its family need; returns the output [tm, out_w]. */
static em_tensor attend_gathered(ex_ctx *x, const attn_geom *gp, int64_t seen)
{
    bld *b = &x->b;
    attn_geom g = *gp;
    int P = x->P;
    int64_t tm = x->mine.n, t = x->t, prefix = x->prefix;
    double out_bytes = (double)tm * (double)g.out_w * b->ab;
    double lse = em_lse_bytes(tm, g.hq);
    em_tensor out;
    if (g.topk > 0) { /* DSA: top-k over every key, one sparse call */
        plan_attn ix = attn_call(&g, tm, seen, ex_share_pairs(&x->mine, -1, P));
        em_tensor idx = g.fam->select(b, &g, tm, ix);
        out = em_act_alloc(b, out_bytes);
        em_tensor sparse_lse = em_lse_alloc(b, tm, g.hq);
        plan_attn at = attn_call(&g, tm, seen, ex_share_capped(&x->mine, g.topk));
        g.fam->attend(b, &g, "mla_sparse_attention", &at);
        em_free(b, &sparse_lse);
        em_free(b, &idx);
    } else if (x->split_kind != SPLIT_STRIPED) {
        /* one call per run of consecutive positions, each writing its rows */
        out = em_act_alloc(b, out_bytes);
        em_tensor run_lse = em_lse_alloc(b, tm, g.hq);
        for (int i = 0; i < x->mine.nrun; i++) {
            const attn_run *r = &x->mine.run[i];
            if (r->n <= 0)
                continue;
            plan_attn at = attn_call(&g, r->n, r->lo + r->n, attn_stripe_pairs(r, -1, P));
            g.fam->attend(b, &g, "attention", &at);
        }
        em_free(b, &run_lse);
    } else {
        out = em_act_alloc(b, out_bytes + lse); /* accumulator */
        int first = 1;
        for (int s = 0; s < P; s++) {
            double pairs = ex_share_pairs(&x->mine, s, P);
            if (pairs <= 0)
                continue;
            int64_t keys = attn_stripe_count(prefix, prefix + t, s, P);
            plan_attn at = attn_call(&g, tm, keys, pairs);
            em_tensor part = first ? EM_TENSOR_NONE : em_act_alloc(b, out_bytes + lse);
            g.fam->attend(b, &g, "stripe_attention", &at);
            if (!first) {
                ex_merge_partial(b, &g, tm, "stripe_merge");
                em_free(b, &part);
            }
            first = 0;
        }
        em_tensor acc_lse = em_split(&out, lse);
        em_free(b, &acc_lse); /* its output is the result */
    }
    return out;
}

/* Split step, all_gather_tensors = kv: one all-gather of the shares' k and
 * v (padded to the largest share); the rank attends its own queries over
 * the gathered keys with the kernels its token split needs:
 *   contiguous  one causal bottom-right call over the keys up to the share's
 *               end (the last rank does the most work);
 *   zigzag      a reorder copy of the gathered K/V into position order
 *               (the ranks' blocks hold chunks r and 2P-1-r), then one
 *               causal bottom-right call per chunk over its prefix;
 *   striped     one call per KV stripe s (the gathered blocks are the
 *               stripes): the share's queries over stripe s, causal for
 *               s <= me (each query sees its own diagonal key), strictly
 *               causal for s > me; the P partials merged with their fp32
 *               LSE into an accumulator, one merge per further call.
 * The rank writes the positions it stores.  Split steps carry no cached
 * prefix (chunked prefill is off on SP nodes, cp-exchange.md), so the
 * gathered keys are all the keys.  MLA gathers its latents (576 wide for
 * DeepSeek-V3 where GQA gathers 2 hkv d) and expands only the keys its
 * queries see (kv_b_proj up to the share's last position: vllm-ascend's
 * PCP prefill, which gathers [kv_c | k_pe] over the PCP group and runs
 * the head and tail chunks' calls locally, no merge across ranks).  DSA
 * gathers the index keys with the latents (vllm-ascend sfa_cp.py), scores
 * its queries over every key, and runs one sparse call over their top-k. */
em_tensor ex_all_gather_kv(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    attn_geom g = attn_geom_of(b, t);
    int P = x->P;
    int64_t tm = x->mine.n, width = g.kv_w; /* the K/V of a position */
    double bytes = (double)P * (double)x->most * (double)width * b->ab;

    b->layout = TL_LOCAL;
    em_tensor local = g.fam->front(b, &g, tm);
    b->layout = TL_FULL;
    em_tensor gathered = em_buf_alloc(b, bytes);
    em_coll(b, "sp_kv_all_gather", CK_ALL_GATHER, G_SP, bytes, shp(2, P * x->most, width, 0));
    g.fam->kv_write(b, &g, ex_own_slots(x, prefix, prefix + t));
    if (x->split_kind == SPLIT_ZIGZAG)
        ex_repack(b, "sp_kv_reorder", &gathered, shp(2, P * x->most, width, 0),
               shp(2, prefix + t, width, 0));
    int64_t seen = 0; /* keys the share's queries see: up to its last position */
    for (int i = 0; i < x->mine.nrun; i++) {
        const attn_run *r = &x->mine.run[i];
        int64_t end = r->n > 0 ? r->lo + (r->n - 1) * r->stride + 1 : 0;
        seen = end > seen ? end : seen;
    }
    em_tensor kv = g.fam->expand(b, &g, seen); /* attention-ready */
    b->layout = TL_LOCAL;
    em_tensor out = attend_gathered(x, &g, seen);
    em_free(b, &kv);
    em_free(b, &local); /* the local q was read by the attention */
    em_free(b, &gathered);
    return g.fam->out(b, &g, tm, &out);
}
