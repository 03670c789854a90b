/* scheme: the exchange layer scheme (exchange.h): which strategy a step's
 * attention runs, the embedding before a split and the gather after it. */
#include "models/exchange/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/attn/attn.h"
#include "models/memory.h"

/* ---- the scheme ------------------------------------------------------------------ */

static em_tensor ex_attention(bld *b, int64_t t, int64_t prefix)
{
    ex_ctx *x = ex_ctx_of(b);
    const wl_parallel *p = &b->s->par;
    em_tensor out;
    if (x->D > 1 && !x->split) /* DCP inside the TP group (dcp_tp.c) */
        out = ex_dcp_group(x, t, prefix);
    else if (p->kv_storage == KV_BY_HEAD && x->split)
        out = ex_ulysses(x, t, prefix);
    else if (p->kv_storage == KV_BY_HEAD)
        out = ex_head_slice(x, t, prefix);
    else if (ex_decodes_on_ring(b, t, x->split))
        out = ex_ring_decode(x, t, prefix);
    else if (!x->split)
        out = ex_dcp_copied(x, t, prefix);
    else if (x->ring == PR_PASS_Q)
        out = ex_ring_q(x, t, prefix);
    else if (x->ring == PR_PASS_KV)
        out = ex_ring_kv(x);
    else if (p->all_gather_tensors == AGT_KV)
        out = ex_all_gather_kv(x, t, prefix);
    else
        out = ex_all_gather_qkv(x, t, prefix);
    b->layout = x->split ? TL_LOCAL : TL_FULL;
    return out;
}

/* The embedding (and, for MoE models, the padding mask of the routed
 * tokens) over the whole step; a split step then keeps the rank's rows. */
static void ex_embed(bld *b, int64_t t)
{
    ex_ctx *x = ex_ctx_of(b);
    /* parallel.embed: share: the step's tokens cut before the model, each
     * rank embedding its own (Meta's CP, arXiv 2411.01783v3 3.1: the input
     * is sharded over the CP ranks); whole, cp-exchange.md: "the MoE padding
     * mask and layer-0 embeddings are computed over the whole step before
     * the split" */
    if (x->split && b->s->par.embed_share) {
        b->layout = TL_LOCAL;
        layer_embed(b, x->mine.n);
        if (b->a->has_moe) /* derived: reads a token id (int32), writes a flag per token */
            em_compute(b, "moe_padding_mask", KC_ELEMENTWISE, (double)x->mine.n,
                       5.0 * (double)x->mine.n, shp(1, x->mine.n, 0, 0), shp(0, 0, 0, 0),
                       shp(1, x->mine.n, 0, 0));
        return;
    }
    b->layout = TL_FULL;
    layer_embed(b, t);
    if (!x->split)
        return;
    if (b->a->has_moe) /* derived: reads a token id (int32), writes a flag per token */
        em_compute(b, "moe_padding_mask", KC_ELEMENTWISE, (double)t, 5.0 * (double)t,
                   shp(1, t, 0, 0), shp(0, 0, 0, 0), shp(1, t, 0, 0));
    int64_t h = b->a->hidden, tm = x->mine.n;
    double mine = (double)tm * h * b->ab;
    b->layout = TL_LOCAL;
    em_tensor residual = em_act_alloc(b, mine);
    em_tensor input = em_act_alloc(b, mine); /* layer input */
    /* a copy of the share's rows: read once, written once */
    em_compute(b, "sp_split", KC_COPY, 0, 2.0 * mine, shp(2, t, h, 0), shp(0, 0, 0, 0),
               shp(2, tm, h, 0));
    em_free(b, &b->residual); /* the whole step's */
    em_free(b, &b->hidden);
    b->residual = residual;
    b->hidden = input;
}

static void ex_layer(bld *b, int64_t t, int64_t prefix)
{
    ex_ctx *x = ex_ctx_of(b);
    b->layout = x->split ? TL_LOCAL : TL_FULL;
    layer_decoder(b, x->split ? x->mine.n : t, t, prefix, ex_attention);
}

/* Split steps: final norm on the share, then the normalized shares are
 * all-gathered over G_SP (padded to the largest share) before the LM head;
 * with parallel.embed: share, no gather (below). */
static void ex_final(bld *b, int64_t t)
{
    ex_ctx *x = ex_ctx_of(b);
    if (!x->split) {
        b->layout = TL_FULL;
        layer_final(b, t);
        return;
    }
    int64_t h = b->a->hidden, tm = x->mine.n;
    double bytes = (double)x->P * (double)x->most * (double)h * b->ab;
    b->layout = TL_LOCAL;
    if (b->s->par.embed_share) {
        /* the step stays sharded to its end: the final norm on the share and
         * the LM head on the rank that holds the sampled (last) token, no
         * gather of the sequence (Meta's CP samples from the last rank's
         * share, arXiv 2411.01783v3 3.1) */
        em_tensor normed = layer_final_norm(b, tm);
        int64_t last = x->prefix + x->t - 1;
        int mine = 0;
        for (int i = 0; i < x->mine.nrun; i++) {
            const attn_run *r = &x->mine.run[i];
            mine |= last >= r->lo && last < r->lo + r->n * r->stride &&
                    (last - r->lo) % r->stride == 0;
        }
        if (mine)
            layer_lm_head(b);
        em_free(b, &normed);
        em_free(b, &b->residual);
        return;
    }
    em_tensor normed = layer_final_norm(b, tm);
    b->layout = TL_FULL;
    em_tensor gathered = em_act_alloc(b, bytes);
    em_coll(b, "sp_out_all_gather", CK_ALL_GATHER, G_SP, bytes, shp(2, x->P * x->most, h, 0));
    em_free(b, &normed); /* normalized share */
    em_free(b, &b->residual);
    layer_lm_head(b);
    em_free(b, &gathered);
}

static int ex_splits(const bld *b)
{
    return ((const ex_ctx *)b)->split;
}

static const layer_scheme EX_SCHEME = {"sp_exchange", ex_embed, ex_layer, ex_final, ex_splits};

const layer_scheme *ex_scheme(void)
{
    return &EX_SCHEME;
}
