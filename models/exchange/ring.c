/* ring: the two rings of split steps over by-position storage
 * (cp-exchange.md "ring"; exchange.h): pass-Q, the query blocks travel,
 * and pass-KV, the K/V blocks travel. */
#include "models/exchange/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/attn/attn.h"
#include "models/memory.h"

/* ---- ring (by-position storage) ------------------------------------------------- */


/* State of one layer's ring.  Round j: this rank holds the query block of
 * stripe (me - j) mod P ("block j"), attends it over its own slots, and
 * returns the partial output to the block's owner.  Hop j brings block j
 * from the previous rank while sending block j-1 to the next. */
typedef struct ring {
    ex_ctx *x;
    attn_geom g;
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
    return ex_ring_p2p(b, "ring_hop", ST_COMM, send, 1, recv, -1, after);
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
    double pairs = ex_keys_pairs(&blk, &rg->kv) * ex_sparse_share(&rg->g, &blk);
    if (pairs <= 0)
        return EM_NONE;
    plan_attn at = attn_call(&rg->g, blk.n, rg->keys, pairs);
    uint32_t i = rg->g.fam->attend(b, &rg->g, "ring_attention", &at);
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
        *out = em_act_alloc(b, (double)tm * (double)rg->g.out_w * b->ab);
    em_wait_for(b, ret);
    uint32_t i = ex_merge_partial(b, &rg->g, tm, "ring_merge");
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
em_tensor ex_ring_q(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    int P = x->P, overlap = b->s->par.ring_overlap;
    ring rg = {.x = x, .g = attn_geom_of(b, t)};
    (void)t;
    (void)prefix; /* in x, which keys_of and share_of read */
    rg.kv = ex_keys_of(x, x->me);
    rg.keys = rg.kv.n;
    /* a DSA query travels with its top-k indices (int32) */
    rg.q_row = (double)rg.g.q_w * b->ab + (double)rg.g.topk * 4.0;
    rg.p_row = (double)rg.g.out_w * b->ab + (double)rg.g.hq * 4.0; /* + fp32 LSE, 4 B */
    int64_t tm = x->mine.n;
    double mine = (double)tm * rg.p_row;

    b->layout = TL_LOCAL;
    em_tensor qkv = rg.g.fam->front(b, &rg.g, tm);
    em_tensor idx = ex_select_split(x, &rg.g); /* DSA: before the queries leave */
    uint32_t next = overlap ? ring_hop(&rg, 1, b->last_compute) : EM_NONE;
    rg.g.fam->kv_write(b, &rg.g, tm);
    em_tensor kv = rg.g.fam->expand(b, &rg.g, rg.keys); /* the slots every block visits */
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
        ret = ex_ring_p2p(b, "ring_return", ST_COMM2, part.bytes, -j, mine, j, prev);
        if (merged != EM_NONE)
            plan_dep(b->pg, ret, merged); /* the buffer is free again */
        em_free_on(b, &part, ST_COMM2); /* returned */
    }
    em_free(b, &rg.block[(P - 1) % 2]);
    em_free(b, &kv);
    em_free(b, &idx); /* sent with the queries, read by round 0 */
    em_tensor out;
    ring_merge(&rg, ret, &out);
    em_free(b, &returns);
    em_free(b, &acc);
    return rg.g.fam->out(b, &rg.g, tm, &out);
}

/* ---- pass-KV ring (exchange ring_kv) ------------------------------------------------ */

/* A hop of the pass-KV ring after op `after`: send the held block to the
 * next rank, receive the previous rank's into *into (allocated first); both
 * the padded block of `msg` bytes. */
static uint32_t kv_hop(bld *b, em_tensor *into, double msg, uint32_t after)
{
    *into = em_buf_alloc(b, msg);
    return ex_ring_p2p(b, "ring_kv_hop", ST_COMM, msg, 1, msg, -1, after);
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
em_tensor ex_ring_kv(ex_ctx *x)
{
    bld *b = &x->b;
    int P = x->P, overlap = b->s->par.ring_overlap;
    attn_geom g = attn_geom_of(b, x->t);
    /* a position's K/V (DSA: without its index key, gathered apart) */
    int64_t tm = x->mine.n, most = ex_keys_most(x), width = g.kv_w - g.idx_w;
    ex_share own = ex_keys_of(x, x->me);
    /* the hops carry K/V in the activation dtype the kernels read */
    double msg = (double)most * (double)width * b->ab;
    double out_bytes = (double)tm * (double)g.out_w * b->ab;
    double lse = em_lse_bytes(tm, g.hq);

    b->layout = TL_LOCAL;
    em_tensor qkv = g.fam->front(b, &g, tm);
    g.fam->kv_write(b, &g, tm);
    em_tensor idx = ex_select_split(x, &g);
    double keep = ex_sparse_share(&g, &x->mine);
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
        double pairs = ex_keys_pairs(&x->mine, &blk) * keep;
        if (pairs <= 0) /* every key of the block after every query (j > 0) */
            continue;
        em_tensor part = j > 0 ? em_act_alloc(b, out_bytes + lse) : EM_TENSOR_NONE;
        em_wait_for(b, hop);
        em_tensor kv = g.fam->expand(b, &g, blk.n); /* the visiting block */
        plan_attn at = attn_call(&g, tm, blk.n, pairs);
        prev = g.fam->attend(b, &g, "ring_kv_attention", &at);
        b->pg->ops[prev].eager = 1;
        em_free(b, &kv);
        if (j > 0) {
            uint32_t m = ex_merge_partial(b, &g, tm, "ring_kv_merge");
            b->pg->ops[m].eager = 1;
            em_free(b, &part);
        }
    }
    em_free(b, &block[(P - 1) % 2]);
    em_free(b, &idx);
    em_free(b, &qkv); /* the queries were read by every round */
    em_tensor acc_lse = em_split(&acc, lse);
    em_free(b, &acc_lse); /* its output is the result */
    return g.fam->out(b, &g, tm, &acc);
}
