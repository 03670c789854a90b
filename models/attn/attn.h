/* attn: the attention families (GQA; MLA, with DSA's indexer when the
 * model has one) as the layer schemes and the exchange strategies see
 * them: one geometry per step and rank, and the five pieces every
 * strategy is built from.
 *
 * A strategy (models/exchange.c, models/dcp.c) never spells out a
 * family's heads or widths: it asks attn_geom_of() for the step's geometry
 * and moves g.q_w, g.kv_w, g.out_w elements per token, calls g.fam->front
 * for the projections, ->kv_write for the cache, ->expand before an
 * attention over K/V held in the exchanged form, ->attend for each call and
 * ->out for the output projection.  A new family is a file of this folder
 * and a row of attn.c's dispatch; its config keys are models/arch.c's.
 *
 * Forms (attn_form), per family and step:
 *   AF_HEADS     per-head K and V (GQA): what is cached, exchanged and read
 *                is 2 hkv d per position; expand does nothing.
 *   AF_EXPANDED  MLA prefill, un-absorbed: the cache and the exchanges hold
 *                the latent [kv_lora_rank + rope] (576 for DeepSeek-V3);
 *                expand is kv_b_proj over the positions to be attended,
 *                which yields per-head keys [dn + dr] and values [dv]; the
 *                kernel is a multi-head flash attention over them.
 *   AF_LATENT    MLA decode and every DSA step, absorbed: the queries are
 *                absorbed into the latent space in front (W_UK_T), the
 *                kernel reads the latents themselves (one KV head of
 *                kl + dr, values kl), out applies W_UV before o_proj.
 *                With DSA (g.topk > 0) the kernel is the sparse attention
 *                over each query's top-k keys (RFC 3.6, bf16 inputs).
 *
 * Units: widths in elements; bytes are width x the element size of the
 * tensor's dtype (activations b->ab, the cache b->kvb).  Every piece
 * allocates what it writes and frees its own temporaries (emit.h "tensor
 * memory"); the tensors it returns belong to the caller.
 */
#ifndef CP_ATTN_H
#define CP_ATTN_H

#include "models/emit.h"

typedef enum { AF_HEADS = 0, AF_EXPANDED, AF_LATENT } attn_form;

typedef struct attn_family attn_family;

/* One step's attention on one rank. */
typedef struct attn_geom {
    const attn_family *fam;
    attn_form form;
    int64_t hq;              /* query heads on this rank */
    int64_t hkv;             /* KV heads the kernel reads (AF_EXPANDED: hq,
                                the expanded heads; AF_LATENT: 1) */
    int64_t d_qk, d_v;       /* per-head widths of the kernel's q.k and p.v */
    int64_t q_w;             /* one token's queries as the kernel reads them
                                (hq d_qk): what a pass-Q hop carries */
    int64_t kv_w;            /* one position's K/V as cached and exchanged:
                                GQA 2 hkv d; MLA kl + dr (+ the index key) */
    int64_t idx_w;           /* DSA: the index key's part of kv_w (0: none) */
    int64_t front_w;         /* one token's front output: q_w + kv_w (what an
                                all-gather of q, k and v moves per token) */
    int64_t out_w;           /* one row of the kernel's output (hq d_v) */
    int64_t topk;            /* DSA: keys per query (0: dense) */
} attn_geom;

struct attn_family {
    const char *name;
    /* The queries and the new K/V of m rows (projections, norms, RoPE, the
     * DSA indexer's key side): returns [m, front_w] (the caller frees it). */
    em_tensor (*front)(bld *b, const attn_geom *g, int64_t m);
    /* The paged cache write of n positions this rank stores (nothing for
     * n <= 0), with its KV-cache bytes (MC_KV_CACHE). */
    void (*kv_write)(bld *b, const attn_geom *g, int64_t n);
    /* The K/V of n positions held in the exchanged form made ready for the
     * kernel: AF_EXPANDED runs kv_b_proj and returns the per-head K/V
     * (the caller frees them after the last call that reads them); other
     * forms return EM_TENSOR_NONE. */
    em_tensor (*expand)(bld *b, const attn_geom *g, int64_t n);
    /* DSA (g->topk > 0): the indexer's query side for m queries and their
     * top-k over the index keys *ix describes (q_len, kv_len, pairs: the
     * scored pairs); returns the top-k indices [m, topk] (int32), freed by
     * the caller after the sparse attention.  Dense families and forms:
     * EM_TENSOR_NONE, nothing emitted. */
    em_tensor (*select)(bld *b, const attn_geom *g, int64_t m, plan_attn ix);
    /* One attention call: *at gives q_len, kv_len, pairs, batch and causal;
     * heads and widths come from g (AF_LATENT with topk: the sparse kernel
     * over at->pairs gathered keys).  Returns the op. */
    uint32_t (*attend)(bld *b, const attn_geom *g, const char *name, plan_attn *at);
    /* The output projection of m rows: frees the attention output *attn
     * [m, out_w] (AF_LATENT: W_UV first), returns [m, h] all-reduced over
     * TP. */
    em_tensor (*out)(bld *b, const attn_geom *g, int64_t m, em_tensor *attn);
};

/* The cache row of one position and layer on a TP rank of tp, in elements:
 * the family's kv_w (GQA 2 x the rank's KV heads x d; MLA kv_lora_rank +
 * rope, + the index key with DSA); attn_kv_row_bytes in the cache dtype. */
int64_t attn_kv_row(const arch *a, int tp);
double attn_kv_row_bytes(const arch *a, int tp, cp_dtype kvdt);

/* The geometry of the current step of b (t new tokens of the rank's
 * sequences, b->seqs when batched) on a TP rank of b->tp. */
attn_geom attn_geom_of(const bld *b, int64_t t);

/* A call of q queries over kv keys with `pairs` attended pairs, causal,
 * one sequence, in g's heads and widths. */
plan_attn attn_call(const attn_geom *g, int64_t q, int64_t kv, double pairs);

/* Bytes of the fp32 partials of n rows (cp-exchange.md: exchanged in fp32):
 * out_w values and one LSE per head, 4 B each. */
double attn_part_bytes(const attn_geom *g, int64_t n);

extern const attn_family attn_gqa_family, attn_mla_family;

/* ---- positions and calls (calls.c) -------------------------------------------- */

/* Positions lo, lo + stride, ... (n of them). */
typedef struct attn_run {
    int64_t lo, n, stride;
} attn_run;

/* Positions in [lo, hi) of stripe r of P (x % P == r: the slots of a rank
 * of striped, by-position KV storage). */
int64_t attn_stripe_count(int64_t lo, int64_t hi, int r, int P);
/* Positions y in [0, n) with y % P == r (the slots of stripe r). */
int64_t attn_stripe_below(int64_t n, int r, int P);
/* Causal (query, key) pairs of the queries at the positions of run q
 * (stride 1 or P): against every earlier-or-equal key (stripe < 0), or
 * against the keys of that stripe only (positions y % P == stripe, y <= the
 * query). */
double attn_stripe_pairs(const attn_run *q, int stripe, int P);
/* Pairs of the queries at run q's positions when each sees at most cap
 * keys (min(p + 1, cap) for the query at p: DSA's top-k, a window). */
double attn_run_capped(const attn_run *q, int64_t cap);
/* Causal pairs of the queries of run q against the keys of run k (y <= the
 * query): k of stride 1 with any q, or q and k of one stride (the
 * combinations the splits produce; another aborts). */
double attn_run_pairs(const attn_run *q, const attn_run *k);

/* ---- attention calls of a batched step -------------------------------------- */

/* our bound on separate attention calls per layer (a batch's prefills past
 * it share the last call, averaged) */
#define ATTN_MAX_CALLS 32

/* The attention calls of one layer of the current step: the one sequence
 * (t new tokens after prefix) when b->seqs is NULL; else one call for every
 * decode of the batch together (batch = their count, q_len 1, kv_len their
 * mean context rounded up, pairs exact: FA2's batched decode,
 * decode_attention.csv) and one per multi-token sequence (the first
 * ATTN_MAX_CALLS - 2 of them; the rest share the last call, averaged).
 * Keys per sequence: every earlier-or-equal key (stripe < 0), at most cap
 * of them per query (cap > 0: a sliding window or DSA's top-k; with
 * win_kv a short call reads only the window's keys), or the keys of KV
 * stripe `stripe` of P (DCP slots).  Fills q_len, kv_len, pairs, batch and
 * causal (1); the caller sets heads and dims.  Returns the call count. */
int attn_step_calls(const bld *b, int64_t t, int64_t prefix, int64_t cap, int win_kv, int stripe,
                  int P, plan_attn *out);
/* Every call of attn_step_calls merged into one (batch = sequences): for
 * kernels that take the whole batch as one varlen call (MLA). */
plan_attn attn_step_merged(const bld *b, int64_t t, int64_t prefix, int64_t cap);
/* Whether every sequence of the step is a decode (one token). */
int attn_step_all_decode(const bld *b, int64_t t);


/* The tensor-parallel attention of b's model (its family's layer piece):
 * consumes the normalized input of t new tokens after `prefix` cached
 * ones, returns the output [t, h] reduced over TP. */
em_tensor attn_layer(bld *b, int64_t t, int64_t prefix);

/* ---- GQA (gqa.c) --------------------------------------------------------------
 * The pieces by-head strategies (Ulysses, head slice) use directly: they
 * move KV heads, which only a per-head family has. */

attn_geom attn_gqa_geom(const bld *b);
int64_t attn_gqa_kv_row(const arch *a, int tp);
/* qkv_proj, q/k norm, RoPE, K/V write and flash attention over heads/tp
 * heads, o_proj and its all-reduce over TP; returns [t, h]. */
em_tensor attn_gqa_layer(bld *b, int64_t t, int64_t prefix);
/* GQA front on t rows: qkv_proj (column parallel, heads/tp q heads and the
 * rank's KV heads), q/k norm, RoPE; returns qkv [t, (hq + 2 hkv) d]. */
em_tensor attn_gqa_qkv(bld *b, int64_t t);
/* Paged KV write of n tokens of kv_heads heads and its KV-cache bytes
 * (nothing when n is 0). */
void attn_gqa_kv_write(bld *b, int64_t n, int64_t kv_heads);
/* A flash-attention call described by *at (flops from at->pairs, bytes:
 * q and output rows plus the keys and values read). */
uint32_t attn_gqa_attend(bld *b, const char *name, const plan_attn *at);
/* The ncalls plain calls ("attention", models/exchange.h attn_step_calls) of
 * t query rows with their buffers: allocates the output [t, heads, d_v]
 * (returned, consumed by o_proj or an exchange) and the fp32 LSE (freed
 * after the calls). */
em_tensor attn_gqa_attend_out(bld *b, const plan_attn *at, int ncalls, int64_t t);
/* o_proj (row parallel) on t rows: frees the attention output *attn
 * [t, heads/tp * d], returns [t, h] all-reduced over TP. */
em_tensor attn_gqa_out(bld *b, int64_t t, em_tensor *attn);


/* ---- MLA (mla.c) ------------------------------------------------------------- */

attn_geom attn_mla_geom(const bld *b, int64_t t);
int64_t attn_mla_kv_row(const arch *a);
/* MLA attention over heads/tp (the latent cache replicated over TP);
 * returns [t, h]. */
em_tensor attn_mla_layer(bld *b, int64_t t, int64_t prefix);
/* DSA CP attention of one layer (models/seqpar/, RFC 3.3-3.5): from the
 * normalized input (full tokens: gathered when the step is split) to the
 * o_proj output [tl, h], returned; frees the windows of c (after each
 * projection's last kernel). */
typedef struct attn_dsa_cp {
    int64_t t, prefix;          /* the step's new tokens, cached tokens before them */
    int64_t tl;                 /* rows of this rank's shard (t when not split) */
    int split;                  /* the step's tokens are sharded over G_TP */
    wl_dsa_layout layout;       /* parallel.dsa_cp_layout */
    uint32_t bcast[MP_COUNT];   /* layer sharding: the broadcast delivering this
                                   layer's projection (EM_NONE: resident) */
    em_tensor window[MP_COUNT]; /* the window it fills, freed after the last use
                                   (EM_TENSOR_NONE: resident) */
} attn_dsa_cp;

em_tensor attn_mla_cp(bld *b, attn_dsa_cp *c);

#endif
