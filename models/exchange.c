/* exchange: the sequence-parallel exchange strategies (see exchange.h and
 * shared/spec/cp-exchange.md).
 *
 * Per TP rank: hq = heads/tp query heads, hkv = the rank's KV heads
 * (mem_kv_heads_per_rank), head dim d, activations ab bytes per element.
 * Sizes of collectives follow the nccl-tests convention of
 * collectives/coll.h (all-gather: the gathered output; all-to-all: this
 * rank's send buffer); P2P hops carry the bytes sent and received.
 *
 * Memory: every tensor a strategy creates is allocated before the kernel
 * or exchange that writes it and freed after the last op that reads it;
 * receive buffers of exchanges consumed by a later kernel are comm buffers
 * (em_buf_alloc), everything else activations.  The attention phase of a
 * layer is thus what the timeline shows between the input norm and
 * o_proj, the MLP/MoE phase what it shows after the post-attention norm.
 */
#include "models/exchange_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/build.h"
#include "models/cost.h"
#include "models/interference.h"
#include "models/memory.h"


/* ---- helpers ------------------------------------------------------------------ */

/* GQA sizes on one TP rank. */
typedef struct gqa {
    int64_t hq, hkv, d;
    int64_t qkv_w;           /* q, k and v width of one token */
} gqa;

static gqa gqa_of(const bld *b)
{
    gqa g;
    g.hq = b->a->heads / b->tp;
    g.hkv = mem_kv_heads_per_rank(b->a, b->tp);
    g.d = b->a->head_dim;
    g.qkv_w = (g.hq + 2 * g.hkv) * g.d;
    return g;
}

static plan_attn attn_of(const gqa *g, int64_t q, int64_t kv, int64_t heads, int64_t kv_heads,
                         double pairs)
{
    plan_attn at = {.q_len = q, .kv_len = kv, .heads = heads, .kv_heads = kv_heads,
                    .d_qk = g->d, .d_v = g->d, .causal = 1, .pairs = pairs};
    return at;
}

/* A layout change of tensor *t (pack, unpack, reorder): a copy into a new
 * activation of its size, after which *t is freed and the copy takes its
 * place. */
static void repack(bld *b, const char *name, em_tensor *t, plan_shape in, plan_shape out)
{
    em_tensor copy = em_act_alloc(b, t->bytes);
    em_copy(b, name, t->bytes, in, out);
    em_free(b, t);
    *t = copy;
}

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
static em_tensor ulysses(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    gqa g = gqa_of(b);
    int P = x->P, reorder = x->split_kind != SPLIT_CONTIGUOUS;
    int64_t tm = x->mine.n, hu = g.hq / P, ku = mem_kv_heads_per_rank(b->a, b->tp * P);
    double td = (double)t, tmd = (double)tm;

    b->layout = TL_LOCAL;
    em_tensor qkv = layer_gqa_qkv(b, tm);
    /* to every peer: its hu q heads and the ku KV heads they need */
    double send = tmd * (double)((g.hq + 2 * P * ku) * g.d) * b->ab;
    double recv = td * (double)((hu + 2 * ku) * g.d) * b->ab;
    em_tensor packed = em_act_alloc(b, send);
    em_copy(b, "ulysses_qkv_pack", send, shp(3, tm, g.hq + 2 * g.hkv, g.d),
            shp(3, P, tm, (hu + 2 * ku) * g.d));
    em_free(b, &qkv); /* the share's q/k/v, packed */
    b->layout = TL_FULL;
    em_tensor heads = em_buf_alloc(b, recv); /* the step's q/k/v of this rank's heads */
    em_coll(b, "ulysses_qkv_all_to_all", CK_ALL_TO_ALL, G_SP, send,
            shp(3, t, hu + 2 * ku, g.d));
    em_free(b, &packed);
    if (reorder)
        repack(b, "ulysses_qkv_unpack", &heads, shp(3, P, x->most, (hu + 2 * ku) * g.d),
               shp(3, t, hu + 2 * ku, g.d));
    layer_gqa_kv_write(b, t, ku);
    plan_attn at = attn_of(&g, t, prefix + t, hu, ku, em_causal_pairs(t, prefix, 0));
    em_tensor out = layer_gqa_attend_out(b, &at, 1, t); /* split: one sequence */
    em_free(b, &heads);
    if (reorder) /* from position order to the peers' blocks */
        repack(b, "ulysses_out_pack", &out, shp(3, t, hu, g.d), shp(3, P, x->most, hu * g.d));
    b->layout = TL_LOCAL;
    /* [P, rows, hu, d] from the peers, then the share's output, all heads */
    em_tensor share = em_buf_alloc(b, tmd * (double)(g.hq * g.d) * b->ab);
    em_coll(b, "ulysses_out_all_to_all", CK_ALL_TO_ALL, G_SP, td * (double)(hu * g.d) * b->ab,
            shp(3, tm, g.hq, g.d));
    em_free(b, &out);
    repack(b, "ulysses_out_unpack", &share, shp(3, P, tm, hu * g.d), shp(3, tm, g.hq, g.d));
    return layer_gqa_out(b, tm, &share);
}

/* Copied step on by-head storage ("head slice", our reading of the
 * spec's table): every SP rank runs the whole step's projections, writes
 * and attends its slice of hq/P heads (its KV heads) over the whole step,
 * and the slices are all-gathered over G_SP along the head dimension
 * ([P, t, hu, d]) and transposed into [t, hq, d] before o_proj. */
static em_tensor head_slice(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    gqa g = gqa_of(b);
    int P = x->P;
    int64_t hu = g.hq / P, ku = mem_kv_heads_per_rank(b->a, b->tp * P);
    double td = (double)t;

    b->layout = TL_FULL;
    em_tensor qkv = layer_gqa_qkv(b, t);
    layer_gqa_kv_write(b, t, ku);
    plan_attn at[EX_MAX_CALLS];
    int n = ex_step_calls(b, t, prefix, 0, 0, -1, 1, at);
    for (int c = 0; c < n; c++) {
        at[c].heads = hu;
        at[c].kv_heads = ku;
        at[c].d_qk = at[c].d_v = g.d;
    }
    em_tensor slice = layer_gqa_attend_out(b, at, n, t);
    em_free(b, &qkv);
    double all = td * (double)(g.hq * g.d) * b->ab;
    em_tensor gathered = em_buf_alloc(b, all);
    em_coll(b, "head_all_gather", CK_ALL_GATHER, G_SP, all, shp(3, t, g.hq, g.d));
    em_free(b, &slice); /* gathered */
    repack(b, "head_unpack", &gathered, shp(3, P, t, hu * g.d), shp(3, t, g.hq, g.d));
    return layer_gqa_out(b, t, &gathered);
}

/* ---- DCP: attention over the rank's own slots, partials merged ------------------- */

/* fp32 partial output and LSE of n rows (cp-exchange.md: exchanged in
 * fp32): d output values and one LSE per row and head, 4 B each. */
static double dcp_part_bytes(const gqa *g, int64_t n)
{
    return (double)n * (double)g->hq * (double)(g->d + 1) * 4.0;
}

/* Every query of the step (t of them, after `prefix`) over this rank's KV
 * slots (positions y % P == me up to the step's end), the exact causal work
 * (query x sees the slots y <= x): one call of the kernel the profile
 * measured for it, a non-causal call over the compacted slots (strided
 * keys: a key block is all visible or all masked but near the diagonal, so
 * the call does the pairs' work; attention_cp.csv dcp_noncausal).  Returns
 * the fp32 partial outputs and LSE [t, hq, d + 1] (dcp_merge frees them). */
static em_tensor dcp_attention(ex_ctx *x, const gqa *g, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    em_tensor part = em_act_alloc(b, dcp_part_bytes(g, t));
    plan_attn at[EX_MAX_CALLS];
    int n = ex_step_calls(b, t, prefix, 0, 0, x->me, x->P, at);
    for (int c = 0; c < n; c++) {
        if (at[c].pairs <= 0)
            continue;
        at[c].heads = g->hq;
        at[c].kv_heads = g->hkv;
        at[c].d_qk = at[c].d_v = g->d;
        at[c].causal = 0;
        layer_gqa_attend(b, "dcp_attention", &at[c]);
    }
    return part;
}

/* The exchange and merge of the partials *part of the step's t queries:
 * `rows` rows of the output on this rank.  Copied steps keep every row: the
 * partials are all-gathered and merged; a split step keeps its share
 * (rows): each rank sends every peer the partials of the peer's rows
 * (all-to-all) and merges the P it receives for its own.  Frees the
 * partials, returns the output [rows, hq, d]. */
static em_tensor dcp_merge(ex_ctx *x, const gqa *g, int64_t t, int64_t rows, int split,
                           em_tensor *part)
{
    bld *b = &x->b;
    int P = x->P;
    double recv_bytes = (double)P * dcp_part_bytes(g, split ? x->most : t);
    em_tensor recv = em_buf_alloc(b, recv_bytes);
    if (split)
        em_coll(b, "dcp_partial_all_to_all", CK_ALL_TO_ALL, G_SP,
                (double)P * dcp_part_bytes(g, x->most),
                shp(3, (int64_t)P * x->most, g->hq, g->d + 1));
    else
        em_coll(b, "dcp_all_gather", CK_ALL_GATHER, G_SP, recv_bytes,
                shp(3, (int64_t)P * t, g->hq, g->d + 1));
    em_free(b, part);
    em_tensor out = em_act_alloc(b, (double)rows * (double)(g->hq * g->d) * b->ab);
    em_lse_merge(b, "dcp_merge", rows, g->hq, g->d, P, 4.0); /* fp32 partials */
    em_free(b, &recv);
    return out;
}

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
static em_tensor all_gather_qkv(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    gqa g = gqa_of(b);
    int P = x->P;
    int64_t tm = x->mine.n;
    double bytes = (double)P * (double)x->most * (double)g.qkv_w * b->ab;

    b->layout = TL_LOCAL;
    em_tensor qkv = layer_gqa_qkv(b, tm);
    b->layout = TL_FULL;
    em_tensor gathered = em_buf_alloc(b, bytes);
    em_coll(b, "sp_qkv_all_gather", CK_ALL_GATHER, G_SP, bytes,
            shp(2, P * x->most, g.qkv_w, 0));
    em_free(b, &qkv); /* all of it is in the gathered buffer */
    layer_gqa_kv_write(b, ex_stripe_count(prefix, prefix + t, x->me, P), g.hkv);
    em_tensor part = dcp_attention(x, &g, t, prefix);
    em_free(b, &gathered);
    em_tensor out;
    if (b->s->par.all_gather_merge == AGM_OWN_ROWS) {
        b->layout = TL_LOCAL;
        out = dcp_merge(x, &g, t, tm, 1, &part);
    } else {
        em_tensor full = dcp_merge(x, &g, t, t, 0, &part);
        b->layout = TL_LOCAL;
        double mine = (double)tm * (double)(g.hq * g.d) * b->ab;
        out = em_act_alloc(b, mine);
        /* the share's rows of the merged output: read once, written once */
        em_compute(b, "sp_slice", KC_COPY, 0, 2.0 * mine, shp(3, t, g.hq, g.d), shp(0, 0, 0, 0),
                   shp(3, tm, g.hq, g.d));
        em_free(b, &full);
    }
    return layer_gqa_out(b, tm, &out);
}

/* The merge of the next partial of a striped call sequence into the
 * accumulator (activation-dtype outputs, fp32 LSE). */
static uint32_t merge_partial(bld *b, const gqa *g, int64_t rows, const char *name)
{
    return em_lse_merge(b, name, rows, g->hq, g->d, 2, b->ab);
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
 * gathered keys are all the keys. */
static em_tensor all_gather_kv(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    gqa g = gqa_of(b);
    int P = x->P;
    int64_t tm = x->mine.n, width = 2 * g.hkv * g.d; /* k and v of a token */
    double bytes = (double)P * (double)x->most * (double)width * b->ab;
    double out_bytes = (double)tm * (double)(g.hq * g.d) * b->ab;
    double lse = em_lse_bytes(tm, g.hq);

    b->layout = TL_LOCAL;
    em_tensor local = layer_gqa_qkv(b, tm);
    b->layout = TL_FULL;
    em_tensor gathered = em_buf_alloc(b, bytes);
    em_coll(b, "sp_kv_all_gather", CK_ALL_GATHER, G_SP, bytes, shp(2, P * x->most, width, 0));
    layer_gqa_kv_write(b, ex_stripe_count(prefix, prefix + t, x->me, P), g.hkv);
    if (x->split_kind == SPLIT_ZIGZAG)
        repack(b, "sp_kv_reorder", &gathered, shp(2, P * x->most, width, 0),
               shp(2, prefix + t, width, 0));
    b->layout = TL_LOCAL;
    em_tensor out;
    if (x->split_kind != SPLIT_STRIPED) {
        /* one call per run of consecutive positions, each writing its rows */
        out = em_act_alloc(b, out_bytes);
        em_tensor run_lse = em_lse_alloc(b, tm, g.hq);
        for (int i = 0; i < x->mine.nrun; i++) {
            const ex_run *r = &x->mine.run[i];
            if (r->n <= 0)
                continue;
            plan_attn at = attn_of(&g, r->n, r->lo + r->n, g.hq, g.hkv, ex_pairs(r, -1, P));
            layer_gqa_attend(b, "attention", &at);
        }
        em_free(b, &run_lse);
    } else {
        out = em_act_alloc(b, out_bytes + lse); /* accumulator */
        int first = 1;
        for (int s = 0; s < P; s++) {
            double pairs = ex_share_pairs(&x->mine, s, P);
            if (pairs <= 0)
                continue;
            int64_t keys = ex_stripe_count(prefix, prefix + t, s, P);
            plan_attn at = attn_of(&g, tm, keys, g.hq, g.hkv, pairs);
            em_tensor part = first ? EM_TENSOR_NONE : em_act_alloc(b, out_bytes + lse);
            layer_gqa_attend(b, "stripe_attention", &at);
            if (!first) {
                merge_partial(b, &g, tm, "stripe_merge");
                em_free(b, &part);
            }
            first = 0;
        }
        em_tensor acc_lse = em_split(&out, lse);
        em_free(b, &acc_lse); /* its output is the result */
    }
    em_free(b, &local); /* the local q was read by the attention */
    em_free(b, &gathered);
    return layer_gqa_out(b, tm, &out);
}

/* ---- ring (by-position storage) ------------------------------------------------- */

/* A point-to-point exchange of the ring over G_SP on `stream`: send `send`
 * bytes to the member `so` places ahead, receive `recv` bytes from the
 * member `ro` places ahead, after op `after` of another stream (EM_NONE:
 * none).  Ring ops always launch eagerly (cp-exchange.md "ring"). */
static uint32_t ring_p2p(bld *b, const char *name, int stream, double send, int so,
                         double recv, int ro, uint32_t after)
{
    plan_op o = {0};
    o.name = name;
    o.kind = OPK_P2P;
    o.stream = (uint8_t)stream;
    o.group = G_SP;
    o.dtype = (uint8_t)b->adt;
    o.layout = b->layout;
    o.eager = 1;
    o.comm_bytes = send;
    o.recv_bytes = recv;
    o.send_off = (int8_t)so;
    o.recv_off = (int8_t)ro;
    uint32_t i = em_emit(b, &o);
    if (after != EM_NONE)
        plan_dep(b->pg, i, after);
    return i;
}

/* State of one layer's ring.  Round j: this rank holds the query block of
 * stripe (me - j) mod P ("block j"), attends it over its own slots, and
 * returns the partial output to the block's owner.  Hop j brings block j
 * from the previous rank while sending block j-1 to the next. */
typedef struct ring {
    ex_ctx *x;
    gqa g;
    ex_share kv;             /* this rank's slots (keys_of) */
    int64_t keys;            /* their count */
    double q_row;            /* bytes of one row of a travelling query block */
    double p_row;            /* one row of a partial: output (activation
                                dtype, as the attention kernel writes it)
                                + fp32 LSE; merged in fp32 arithmetic */
    em_tensor block[2];      /* receive buffers of the travelling blocks: hop j
                                fills block[j % 2], freed once block j is sent on */
} ring;

static int stripe_of_round(const ring *rg, int j)
{
    int P = rg->x->P;
    return ((rg->x->me - j) % P + P) % P;
}

/* Rows of block j. */
static int64_t block_rows(const ring *rg, int j)
{
    return ex_share_of(rg->x, stripe_of_round(rg, j)).n;
}

/* Post hop j after op `after` (the attention that last read the buffer it
 * receives into); its receive buffer rg->block[j % 2] is allocated first. */
static uint32_t ring_hop(ring *rg, int j, uint32_t after)
{
    bld *b = &rg->x->b;
    double send = (double)block_rows(rg, j - 1) * rg->q_row;
    double recv = (double)block_rows(rg, j) * rg->q_row;
    rg->block[j % 2] = em_buf_alloc(b, recv);
    return ring_p2p(b, "ring_hop", ST_COMM, send, 1, recv, -1, after);
}

/* The attention of round j: block j over this rank's slots (the cached
 * prefix's and the step's), with the exact causal work of the pair of
 * position sets (striped: a stripe before or at this rank's sees its
 * diagonal key, one after it does not).  EM_NONE when no pair is visible (a
 * step of fewer than 2P tokens). */
static uint32_t ring_round(ring *rg, int j)
{
    bld *b = &rg->x->b;
    ex_share blk = ex_share_of(rg->x, stripe_of_round(rg, j));
    double pairs = ex_keys_pairs(&blk, &rg->kv);
    if (pairs <= 0)
        return EM_NONE;
    plan_attn at = attn_of(&rg->g, blk.n, rg->keys, rg->g.hq, rg->g.hkv, pairs);
    uint32_t i = layer_gqa_attend(b, "ring_attention", &at);
    b->pg->ops[i].eager = 1;
    return i;
}

/* Merge the partial that return `ret` brought into the accumulator; the
 * last merge (out non-NULL) writes the attention output instead, allocated
 * into *out.  Returns the merge. */
static uint32_t ring_merge(ring *rg, uint32_t ret, em_tensor *out)
{
    bld *b = &rg->x->b;
    int64_t tm = rg->x->mine.n;
    if (out)
        *out = em_act_alloc(b, (double)tm * (double)(rg->g.hq * rg->g.d) * b->ab);
    em_wait_for(b, ret);
    uint32_t i = merge_partial(b, &rg->g, tm, "ring_merge");
    b->pg->ops[i].eager = 1;
    return i;
}

/* Split step, pass-Q (exchange ring), striped or zigzag: the share is
 * exactly the positions this rank stores, so the K/V write is local and
 * K/V never move; a cached prefix is already in every rank's slots, so
 * only the step's new queries travel.  P rounds; the query blocks
 * travel the ring (P-1 hops on the comm stream), partial outputs go back to
 * their owners on the second comm stream into one receive buffer, each
 * merged after the next round's attention, before the buffer takes the next
 * partial.  Synchronous hops (default) start after the previous round's
 * attention; with parallel.ring_overlap each next hop is posted before the
 * current round's attention and only waits for the attention that freed its
 * receive buffer (double buffering).  Resident during the attention: the
 * local q/k/v until hop 1 sent the queries, one travelling block (two when
 * overlapped), the accumulator, the partial being returned and the receive
 * buffer; never the whole step's K/V. */
static em_tensor ring_attention(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    int P = x->P, overlap = b->s->par.ring_overlap;
    ring rg = {.x = x, .g = gqa_of(b)};
    (void)t;
    (void)prefix; /* in x, which keys_of and share_of read */
    rg.kv = ex_keys_of(x, x->me);
    rg.keys = rg.kv.n;
    rg.q_row = (double)(rg.g.hq * rg.g.d) * b->ab;
    rg.p_row = (double)rg.g.hq * ((double)rg.g.d * b->ab + 4.0); /* + fp32 LSE, 4 B */
    int64_t tm = x->mine.n;
    double mine = (double)tm * rg.p_row;

    b->layout = TL_LOCAL;
    em_tensor qkv = layer_gqa_qkv(b, tm);
    uint32_t next = overlap ? ring_hop(&rg, 1, b->last_compute) : EM_NONE;
    layer_gqa_kv_write(b, tm, rg.g.hkv);
    em_tensor acc = em_act_alloc(b, mine); /* accumulator: round 0's partial */
    em_tensor returns = EM_TENSOR_NONE; /* receive buffer of the returns */
    uint32_t prev = ring_round(&rg, 0), ret = EM_NONE;
    for (int j = 1; j < P; j++) {
        uint32_t hop = overlap ? next : ring_hop(&rg, j, prev);
        /* block j-1 was attended and sent on */
        em_wait_for(b, hop);
        em_free(b, j == 1 ? &qkv : &rg.block[(j - 1) % 2]);
        if (overlap && j + 1 < P)
            next = ring_hop(&rg, j + 1, prev);
        em_tensor part = em_act_alloc(b, (double)block_rows(&rg, j) * rg.p_row);
        em_wait_for(b, hop);
        prev = ring_round(&rg, j);
        uint32_t merged = EM_NONE;
        if (j == 1)
            returns = em_buf_alloc(b, mine);
        else
            merged = ring_merge(&rg, ret, NULL);
        ret = ring_p2p(b, "ring_return", ST_COMM2, part.bytes, -j, mine, j, prev);
        if (merged != EM_NONE)
            plan_dep(b->pg, ret, merged); /* the buffer is free again */
        em_free_on(b, &part, ST_COMM2); /* returned */
    }
    em_free(b, &rg.block[(P - 1) % 2]);
    em_tensor out;
    ring_merge(&rg, ret, &out);
    em_free(b, &returns);
    em_free(b, &acc);
    return layer_gqa_out(b, tm, &out);
}

/* ---- pass-KV ring (exchange ring_kv) ------------------------------------------------ */

/* Bytes of the K and V of one position on a TP rank, in the activation
 * dtype the attention kernels read them in (layer_gqa_attend). */
static double kv_row_bytes(const gqa *g, double ab)
{
    return 2.0 * (double)(g->hkv * g->d) * ab;
}

/* A hop of the pass-KV ring after op `after`: send the held block to the
 * next rank, receive the previous rank's into *into (allocated first); both
 * the padded block of `msg` bytes. */
static uint32_t kv_hop(bld *b, em_tensor *into, double msg, uint32_t after)
{
    *into = em_buf_alloc(b, msg);
    return ring_p2p(b, "ring_kv_hop", ST_COMM, msg, 1, msg, -1, after);
}

/* Split step, pass-KV (exchange ring_kv), striped or zigzag: the rank keeps
 * its queries; its K/V block (the positions it stores: its share of the
 * cached prefix and of the step, keys_of) travels the ring.  The new K/V
 * are written locally; the local block is packed from the paged cache
 * (kv_cache dtype) into a send buffer of the largest block (activation
 * dtype; the hops move equal-sized messages, padded to the largest
 * block).  Then P rounds: round j attends the rank's queries over the block
 * of rank (me - j) mod P with the exact causal work of the two position
 * sets; hop j (ST_COMM, to the next rank, from the previous one) brought
 * that block while sending block j - 1 on, so P - 1 hops of the padded
 * block.  Round 0 writes the accumulator (output + fp32 LSE); each further
 * round writes a partial, merged into it with the LSE.  Synchronous
 * (default): hop j starts after round j - 1's attention, then round j runs;
 * with parallel.ring_overlap hop j + 1 is posted before round j's attention
 * and waits only for round j - 1's, which freed the receive buffer it fills
 * (double buffering): each hop runs under the previous block's attention.
 * Resident during the attention: the rank's q/k/v, the send buffer until
 * hop 1 sent it, one received block (two when overlapped), the accumulator
 * and one partial; never the whole sequence's K/V. */
static em_tensor ring_kv_attention(ex_ctx *x)
{
    bld *b = &x->b;
    int P = x->P, overlap = b->s->par.ring_overlap;
    gqa g = gqa_of(b);
    int64_t tm = x->mine.n, most = ex_keys_most(x), width = 2 * g.hkv * g.d; /* k and v */
    ex_share own = ex_keys_of(x, x->me);
    double msg = (double)most * kv_row_bytes(&g, b->ab);
    double out_bytes = (double)tm * (double)(g.hq * g.d) * b->ab;
    double lse = em_lse_bytes(tm, g.hq);

    b->layout = TL_LOCAL;
    em_tensor qkv = layer_gqa_qkv(b, tm);
    layer_gqa_kv_write(b, tm, g.hkv);
    em_tensor send = em_buf_alloc(b, msg), block[2] = {EM_TENSOR_NONE, EM_TENSOR_NONE};
    /* reads the rank's positions from the paged cache, writes the send buffer */
    uint32_t pack = em_compute(b, "ring_kv_pack", KC_COPY, 0,
                               (double)own.n * (double)width * (b->kvb + b->ab),
                               shp(2, own.n, width, 0), shp(0, 0, 0, 0), shp(2, most, width, 0));
    b->pg->ops[pack].eager = 1;
    uint32_t next = overlap ? kv_hop(b, &block[1], msg, pack) : EM_NONE;
    em_tensor acc = em_act_alloc(b, out_bytes + lse); /* round 0's output and LSE */
    uint32_t prev = EM_NONE;
    for (int j = 0; j < P; j++) {
        uint32_t hop = EM_NONE;
        if (j > 0) {
            hop = overlap ? next : kv_hop(b, &block[j % 2], msg, prev);
            em_wait_for(b, hop);
            /* block j - 1 was attended and sent on */
            em_free(b, j == 1 ? &send : &block[(j - 1) % 2]);
            if (overlap && j + 1 < P)
                next = kv_hop(b, &block[(j + 1) % 2], msg, prev);
        }
        int src = ((x->me - j) % P + P) % P;
        ex_share blk = ex_keys_of(x, src);
        double pairs = ex_keys_pairs(&x->mine, &blk);
        if (pairs <= 0) /* every key of the block after every query (j > 0) */
            continue;
        em_tensor part = j > 0 ? em_act_alloc(b, out_bytes + lse) : EM_TENSOR_NONE;
        em_wait_for(b, hop);
        plan_attn at = attn_of(&g, tm, blk.n, g.hq, g.hkv, pairs);
        prev = layer_gqa_attend(b, "ring_kv_attention", &at);
        b->pg->ops[prev].eager = 1;
        if (j > 0) {
            uint32_t m = merge_partial(b, &g, tm, "ring_kv_merge");
            b->pg->ops[m].eager = 1;
            em_free(b, &part);
        }
    }
    em_free(b, &block[(P - 1) % 2]);
    em_free(b, &qkv); /* the queries were read by every round */
    em_tensor acc_lse = em_split(&acc, lse);
    em_free(b, &acc_lse); /* its output is the result */
    return layer_gqa_out(b, tm, &acc);
}

/* ---- DCP merge (copied steps on by-position storage) ----------------------------- */

/* Every SP rank runs the whole step's projections, writes the new positions
 * it stores, attends all queries over its own slots only (about 1/P of the
 * keys, exact causal count); the partial outputs and LSE, in fp32
 * (cp-exchange.md), are all-gathered over G_SP and merged. */
static em_tensor dcp(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    gqa g = gqa_of(b);

    b->layout = TL_FULL;
    em_tensor qkv = layer_gqa_qkv(b, t);
    layer_gqa_kv_write(b, ex_stripe_count(prefix, prefix + t, x->me, x->P), g.hkv);
    em_tensor part = dcp_attention(x, &g, t, prefix);
    em_free(b, &qkv);
    em_tensor out = dcp_merge(x, &g, t, t, 0, &part);
    return layer_gqa_out(b, t, &out);
}

/* ---- pass-Q decode (copied decode steps of a ring exchange) ------------------------ */

static int ex_step_ring_decode(const bld *b, int64_t t, int split)
{
    const wl_parallel *p = &b->s->par;
    if (split || p->sp <= 1 || p->kv_storage != KV_BY_POSITION ||
        !sc_exchange_is_ring(p->exchange) || !ex_step_all_decode(b, t) ||
        p->decode == DEC_DCP)
        return 0;
    /* auto: when every rank's block holds a real query (B >= N); with fewer
     * the one query block visits the ranks in turn, N rounds in series,
     * where the DCP merge attends on every rank at once */
    int64_t nseq = b->seqs ? b->nseqs : 1;
    return p->decode == DEC_PASS_Q || nseq >= p->sp;
}

int64_t ex_decode_block(int64_t nseq, int P)
{
    return (nseq + P - 1) / P;
}

/* The KV position of decode sequence i of the step: the token after its
 * context (the one sequence of a plan's step when b->seqs is NULL). */
static int64_t decode_pos(const bld *b, int64_t prefix, int64_t i)
{
    return b->seqs ? b->seqs[i].prefix : prefix;
}

/* Real sequences of query block `blk` (of bq rows, sequences blk bq ..
 * blk bq + bq - 1 of the nseq, the rest padding) into [*lo, *lo + n). */
static int64_t block_seqs(int64_t nseq, int64_t bq, int blk, int64_t *lo)
{
    *lo = (int64_t)blk * bq;
    int64_t hi = *lo + bq < nseq ? *lo + bq : nseq;
    return hi > *lo ? hi - *lo : 0;
}

/* The new K/V rows of block blk that this rank stores (position p on rank
 * p % P, as the DCP merge and ex_kv_bytes place them), written into its
 * paged cache from the block's travelling k/v. */
static void decode_kv_write(ex_ctx *x, const gqa *g, int64_t nseq, int64_t bq, int blk,
                            int64_t prefix)
{
    int64_t lo, n = block_seqs(nseq, bq, blk, &lo), mine = 0;
    for (int64_t i = lo; i < lo + n; i++)
        mine += decode_pos(&x->b, prefix, i) % x->P == x->me;
    layer_gqa_kv_write(&x->b, mine, g->hkv);
}

/* Round j's attention: the visiting block over this rank's slots, a decode
 * call as dcp_attention makes it (one query per sequence, batch = the
 * block's bq rows, kv_len their mean slot count rounded up, the exact pairs
 * of its real queries, non-causal over the compacted slots; the cost model
 * prices it from decode_attention.csv).  Every block runs its call, padding
 * rows and padding-only blocks included: Meta's pass-Q decode attends each
 * of the N query blocks on every rank (arXiv 2411.01783v3 3.4, fixed shapes
 * under CUDA graphs); a padding row reads one key (a row of no keys still
 * runs its CTA). */
static uint32_t decode_round(ex_ctx *x, const gqa *g, int64_t nseq, int64_t bq, int blk,
                             int64_t prefix)
{
    int64_t lo, n = block_seqs(nseq, bq, blk, &lo);
    double pairs = 0;
    for (int64_t i = lo; i < lo + n; i++) /* the query at p sees the slots y <= p */
        pairs += (double)ex_stripe_below(decode_pos(&x->b, prefix, i) + 1, x->me, x->P);
    pairs += (double)(bq - n); /* the padding rows */
    if (pairs < (double)bq)
        pairs = (double)bq; /* a real row with no slot here reads one key too */
    plan_attn at = attn_of(g, 1, (int64_t)ceil(pairs / (double)bq), g->hq, g->hkv, pairs);
    at.batch = bq > 1 ? bq : 0; /* 0: one sequence */
    at.causal = 0;
    return layer_gqa_attend(&x->b, "ring_decode_attention", &at);
}

/* A hop of the decode ring after op `after`: the held query block to the
 * next rank, the previous rank's into *into (allocated first); launched as
 * the step's other ops are (ring_decode). */
static uint32_t decode_hop(bld *b, em_tensor *into, double msg, uint32_t after)
{
    *into = em_buf_alloc(b, msg);
    uint32_t i = ring_p2p(b, "ring_decode_hop", ST_COMM, msg, 1, msg, -1, after);
    b->pg->ops[i].eager = 0;
    return i;
}

/* Copied decode step of a ring exchange (ring or ring_kv) over position
 * storage, as Meta's pass-Q decode (models-hardware.md 4.6): the step's
 * nseq decode queries (one token per sequence) are sharded over the P SP
 * ranks in blocks of bq = ceil(nseq / P) rows, padded to P bq (sequences
 * r bq .. r bq + bq - 1 on rank r; a single decode: its query on rank 0,
 * padding on the others).  Per layer on every rank:
 *   qkv_proj (+ q/k norm, RoPE) on the rank's bq rows (padding rows
 *     computed: the kernels run on the padded block);
 *   P rounds: round j attends block (me - j) mod P over this rank's KV
 *     slots (decode_round); hop j (ST_COMM, P - 1 of them) brings block j
 *     from the previous rank while sending block j - 1 on: a message of
 *     bq rows x (hq + 2 hkv) d x activation bytes, the queries and the new
 *     K/V rows, so that the rank storing a new position (p % P, the striped
 *     layout of by-position storage, ex_kv_bytes) writes it when its block
 *     visits, before attending it (the token sees its own key); KV thus
 *     grows by one position per P decode steps on every rank;
 *   the P fp32 partials (output + LSE, [bq, hq, d + 1] each, the
 *     all-to-all's send buffer) go back to their blocks' owners: one
 *     all-to-all over G_SP of P bq hq (d + 1) 4 bytes, the last exchange of
 *     the attention, on the critical path; each owner merges its P with the
 *     LSE (fp32);
 *   the merged outputs are all-gathered over G_SP (P bq rows x hq d x
 *     activation bytes) so that o_proj and the MLP/MoE run on the whole
 *     step on every rank.
 * Copied, not sharded: cp-exchange.md defines a copied step as one every
 * SP rank runs whole and runs decode steps copied (fewer tokens than
 * min_tokens), and a split step holds one prompt (build.h), so the decode
 * batch stays whole outside the attention: only the queries are sharded
 * and passed.  Meta's design shards the decode batch for the whole layer
 * (no final all-gather, o_proj and MLP on bq rows); below the GEMMs'
 * compute ridge a decode batch's GEMMs cost their weight reads whatever
 * their rows, so the copied MLP costs little more there (the duplicated
 * work the spec's copied steps accept).
 * Synchronous hops by default; with parallel.ring_overlap hop j + 1 is
 * posted before round j's attention (double buffering, as ring_attention).
 * Launches: the decode ring's ops launch as the step's other ops (in a
 * captured graph under engine.graph: captured), unlike the split ring's
 * (cp-exchange.md: eager only, a prefill's shapes change every step): the
 * padded decode batch has the fixed shapes graph capture needs, and the
 * DCP merge this replaces is captured too, so the two compare on their
 * exchanges alone.  Pricing of the padding: qkv_proj, the hops, the
 * all-to-all, the merge, the all-gather and the attention calls carry the
 * padded rows (decode_round: every block, as Meta's). */
static em_tensor ring_decode(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    int P = x->P, overlap = b->s->par.ring_overlap;
    gqa g = gqa_of(b);
    int64_t nseq = b->seqs ? b->nseqs : 1, bq = ex_decode_block(nseq, P);
    double msg = (double)bq * (double)g.qkv_w * b->ab;    /* q, k and v of bq rows */
    double part = dcp_part_bytes(&g, bq);                 /* one block's fp32 partial */
    double mine = (double)bq * (double)(g.hq * g.d) * b->ab; /* the merged block */

    b->layout = TL_LOCAL;
    em_tensor qkv = layer_gqa_qkv(b, bq); /* the own block: hop 1 sends it */
    em_tensor blk[2] = {EM_TENSOR_NONE, EM_TENSOR_NONE};
    uint32_t next = overlap ? decode_hop(b, &blk[1], msg, b->last_compute) : EM_NONE;
    decode_kv_write(x, &g, nseq, bq, x->me, prefix);
    em_tensor parts = em_act_alloc(b, (double)P * part); /* the rounds' partials */
    uint32_t prev = b->last_compute, r = decode_round(x, &g, nseq, bq, x->me, prefix);
    prev = r != EM_NONE ? r : prev;
    for (int j = 1; j < P; j++) {
        uint32_t hop = overlap ? next : decode_hop(b, &blk[j % 2], msg, prev);
        /* block j - 1 was attended and sent on */
        em_wait_for(b, hop);
        em_free(b, j == 1 ? &qkv : &blk[(j - 1) % 2]);
        if (overlap && j + 1 < P)
            next = decode_hop(b, &blk[(j + 1) % 2], msg, prev);
        em_wait_for(b, hop);
        int src = ((x->me - j) % P + P) % P;
        decode_kv_write(x, &g, nseq, bq, src, prefix);
        r = decode_round(x, &g, nseq, bq, src, prefix);
        prev = r != EM_NONE ? r : prev;
    }
    em_free(b, &blk[(P - 1) % 2]);
    /* every block's partial to its owner; this rank receives its own P */
    em_tensor recv = em_buf_alloc(b, (double)P * part);
    em_coll(b, "ring_decode_all_to_all", CK_ALL_TO_ALL, G_SP, (double)P * part,
            shp(3, (int64_t)P * bq, g.hq, g.d + 1));
    em_free(b, &parts);
    em_tensor out = em_act_alloc(b, mine);
    em_lse_merge(b, "ring_decode_merge", bq, g.hq, g.d, P, 4.0); /* fp32 partials */
    em_free(b, &recv);
    /* the merged blocks back to every rank: the copied step's o_proj input */
    b->layout = TL_FULL;
    em_tensor all = em_buf_alloc(b, (double)P * mine);
    em_coll(b, "ring_decode_all_gather", CK_ALL_GATHER, G_SP, (double)P * mine,
            shp(3, (int64_t)P * bq, g.hq, g.d));
    em_free(b, &out);
    return layer_gqa_out(b, t, &all);
}

/* ---- the scheme ------------------------------------------------------------------ */

static em_tensor ex_attention(bld *b, int64_t t, int64_t prefix)
{
    ex_ctx *x = ex_ctx_of(b);
    const wl_parallel *p = &b->s->par;
    em_tensor out;
    if (p->kv_storage == KV_BY_HEAD && x->split)
        out = ulysses(x, t, prefix);
    else if (p->kv_storage == KV_BY_HEAD)
        out = head_slice(x, t, prefix);
    else if (ex_step_ring_decode(b, t, x->split))
        out = ring_decode(x, t, prefix);
    else if (!x->split)
        out = dcp(x, t, prefix);
    else if (x->ring == PR_PASS_Q)
        out = ring_attention(x, t, prefix);
    else if (x->ring == PR_PASS_KV)
        out = ring_kv_attention(x);
    else if (p->all_gather_tensors == AGT_KV)
        out = all_gather_kv(x, t, prefix);
    else
        out = all_gather_qkv(x, t, prefix);
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
            const ex_run *r = &x->mine.run[i];
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

