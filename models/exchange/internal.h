/* internal: the exchange module's inner seam.  pos.c places a split
 * step's tokens and KV on the SP ranks, rule.c picks a ring, the strategy
 * files build the attention (byhead.c, gather.c, ring.c, dcp.c,
 * decode.c; common.c their shared pieces) and scheme.c picks one per
 * step. */
#ifndef CP_EXCHANGE_INT_H
#define CP_EXCHANGE_INT_H

#include "models/attn/attn.h"
#include "models/exchange/exchange.h"

/* The scheme's callbacks get &ctx->b, the first member of an ex_ctx. */
static inline ex_ctx *ex_ctx_of(bld *b)
{
    return (ex_ctx *)b;
}

/* The positions of SP rank r's tokens in the current (split) step. */
ex_share ex_share_of(const ex_ctx *x, int r);
/* Causal pairs of a share's queries against all keys (stripe < 0) or the
 * keys of one stripe. */
double ex_share_pairs(const ex_share *s, int stripe, int P);
/* Pairs of a share's queries when each sees at most cap keys. */
double ex_share_capped(const ex_share *s, int64_t cap);
/* The part of the share's causal pairs a DSA attention keeps (its top-k
 * over all of them: capped / dense), 1 for dense attention.  A sparse
 * call over a subset of the keys (a ring's block, a rank's slots) is
 * priced as that part of the subset's pairs: the top-k keys spread over
 * the causal prefix as its positions do. */
double ex_sparse_share(const attn_geom *g, const ex_share *s);
/* Positions in [lo, hi) this program's rank stores (its stripe of the
 * P D of position storage over SP and DCP). */
int64_t ex_own_slots(const ex_ctx *x, int64_t lo, int64_t hi);
/* The KV positions rank r holds in the current step (pass-KV's block). */
ex_share ex_keys_of(const ex_ctx *x, int r);
/* Causal pairs of queries q against keys k. */
double ex_keys_pairs(const ex_share *q, const ex_share *k);
/* The most keys a rank's block holds in the current step (pass-KV). */
int64_t ex_keys_most(const ex_ctx *x);

/* ---- shared pieces (common.c) ---------------------------------------------------- */

/* A layout change of tensor *t (pack, unpack, reorder): a copy into a new
 * activation of its size; *t is freed and the copy takes its place. */
void ex_repack(bld *b, const char *name, em_tensor *t, plan_shape in, plan_shape out);
/* The LSE merge of the next partial of rows rows into an accumulator
 * (activation-dtype outputs, fp32 LSE). */
uint32_t ex_merge_partial(bld *b, const attn_geom *g, int64_t rows, const char *name);
/* A point-to-point exchange over G_SP on `stream`: send `send` bytes to the
 * member `so` places ahead, receive `recv` bytes from the member `ro`
 * places ahead, after op `after` (EM_NONE: none); launched eagerly. */
uint32_t ex_ring_p2p(bld *b, const char *name, int stream, double send, int so, double recv,
                     int ro, uint32_t after);

/* DSA (g->topk > 0) before a ring: the index keys of the shares
 * all-gathered over G_SP (padded to the largest share) and the top-k of
 * this rank's queries selected over every key of the sequence (RFC 3.3:
 * each rank selects over the whole sequence's index keys); returns the
 * indices, freed by the caller after the last sparse call.  Dense: nothing
 * (EM_TENSOR_NONE). */
em_tensor ex_select_split(ex_ctx *x, const attn_geom *g);

/* ---- the strategies: each consumes the normalized input of the step's
 * rows on this rank and returns the o_proj output, reduced over TP ---- */

em_tensor ex_ulysses(ex_ctx *x, int64_t t, int64_t prefix);        /* byhead.c */
em_tensor ex_head_slice(ex_ctx *x, int64_t t, int64_t prefix);
em_tensor ex_all_gather_qkv(ex_ctx *x, int64_t t, int64_t prefix); /* gather.c */
em_tensor ex_all_gather_kv(ex_ctx *x, int64_t t, int64_t prefix);
em_tensor ex_ring_q(ex_ctx *x, int64_t t, int64_t prefix);         /* ring.c */
em_tensor ex_ring_kv(ex_ctx *x);
em_tensor ex_dcp_copied(ex_ctx *x, int64_t t, int64_t prefix);     /* dcp.c */
em_tensor ex_ring_decode(ex_ctx *x, int64_t t, int64_t prefix);    /* decode.c */
em_tensor ex_dcp_group(ex_ctx *x, int64_t t, int64_t prefix);      /* dcp_tp.c */
/* Whether a copied step of t tokens runs pass-Q decode (decode.c). */
int ex_decodes_on_ring(const bld *b, int64_t t, int split);

/* The DCP merge's pieces (dcp.c): every query of the step over this
 * rank's slots, returning the fp32 partials [t, hq, d_v + 1]; their
 * exchange and merge into `rows` output rows (split: the share's, by an
 * all-to-all; copied: every row, by an all-gather), freeing *part. */
em_tensor ex_dcp_attention(ex_ctx *x, const attn_geom *g, int64_t t, int64_t prefix);
em_tensor ex_dcp_merge(ex_ctx *x, const attn_geom *g, int64_t t, int64_t rows, int split,
                       em_tensor *part);

#endif
