/* decode: pass-Q decode, the copied decode steps of a ring exchange
 * (exchange.h "pass-Q decode"). */
#include "models/exchange/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/attn/attn.h"
#include "models/memory.h"

/* ---- pass-Q decode (copied decode steps of a ring exchange) ------------------------ */

int ex_decodes_on_ring(const bld *b, int64_t t, int split)
{
    const wl_parallel *p = &b->s->par;
    if (split || p->sp <= 1 || p->kv_storage != KV_BY_POSITION ||
        !sc_exchange_is_ring(p->exchange) || !attn_step_all_decode(b, t) ||
        p->decode == DEC_DCP || b->a->has_dsa) /* DSA: the DCP merge selects (dcp.c) */
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
static void decode_kv_write(ex_ctx *x, const attn_geom *g, int64_t nseq, int64_t bq, int blk,
                            int64_t prefix)
{
    int64_t lo, n = block_seqs(nseq, bq, blk, &lo), mine = 0;
    for (int64_t i = lo; i < lo + n; i++)
        mine += decode_pos(&x->b, prefix, i) % x->P == x->me;
    g->fam->kv_write(&x->b, g, mine);
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
static uint32_t decode_round(ex_ctx *x, const attn_geom *g, int64_t nseq, int64_t bq, int blk,
                             int64_t prefix)
{
    int64_t lo, n = block_seqs(nseq, bq, blk, &lo);
    double pairs = 0;
    for (int64_t i = lo; i < lo + n; i++) /* the query at p sees the slots y <= p */
        pairs += (double)attn_stripe_below(decode_pos(&x->b, prefix, i) + 1, x->me, x->P);
    pairs += (double)(bq - n); /* the padding rows */
    if (pairs < (double)bq)
        pairs = (double)bq; /* a real row with no slot here reads one key too */
    plan_attn at = attn_call(g, 1, (int64_t)ceil(pairs / (double)bq), pairs);
    at.batch = bq > 1 ? bq : 0; /* 0: one sequence */
    at.causal = 0;
    return g->fam->attend(&x->b, g, "ring_decode_attention", &at);
}

/* A hop of the decode ring after op `after`: the held query block to the
 * next rank, the previous rank's into *into (allocated first); launched as
 * the step's other ops are (ring_decode). */
static uint32_t decode_hop(bld *b, em_tensor *into, double msg, uint32_t after)
{
    *into = em_buf_alloc(b, msg);
    uint32_t i = ex_ring_p2p(b, "ring_decode_hop", ST_COMM, msg, 1, msg, -1, after);
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
em_tensor ex_ring_decode(ex_ctx *x, int64_t t, int64_t prefix)
{
    bld *b = &x->b;
    int P = x->P, overlap = b->s->par.ring_overlap;
    attn_geom g = attn_geom_of(b, t);
    int64_t nseq = b->seqs ? b->nseqs : 1, bq = ex_decode_block(nseq, P);
    double msg = (double)bq * (double)g.front_w * b->ab;  /* q, k and v of bq rows */
    double part = attn_part_bytes(&g, bq);                 /* one block's fp32 partial */
    double mine = (double)bq * (double)g.out_w * b->ab;   /* the merged block */

    b->layout = TL_LOCAL;
    em_tensor qkv = g.fam->front(b, &g, bq); /* the own block: hop 1 sends it */
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
            shp(3, (int64_t)P * bq, g.hq, g.d_v + 1));
    em_free(b, &parts);
    em_tensor out = em_act_alloc(b, mine);
    em_lse_merge(b, "ring_decode_merge", bq, g.hq, g.d_v, P, 4.0); /* fp32 partials */
    em_free(b, &recv);
    /* the merged blocks back to every rank: the copied step's o_proj input */
    b->layout = TL_FULL;
    em_tensor all = em_buf_alloc(b, (double)P * mine);
    em_coll(b, "ring_decode_all_gather", CK_ALL_GATHER, G_SP, (double)P * mine,
            shp(3, (int64_t)P * bq, g.hq, g.d_v));
    em_free(b, &out);
    return g.fam->out(b, &g, t, &all);
}
