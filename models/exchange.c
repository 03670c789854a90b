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
#include "models/exchange.h"

#include <math.h>

#include <string.h>

#include "models/memory.h"

/* The scheme's callbacks get &ctx->b, the first member of an ex_ctx. */
static ex_ctx *ctx_of(bld *b)
{
    return (ex_ctx *)b;
}

/* ---- positions ------------------------------------------------------------- */

int64_t ex_stripe_below(int64_t n, int r, int P)
{
    return n > r ? (n - r + P - 1) / P : 0;
}

/* Positions of stripe r in [lo, hi). */
static int64_t stripe_count(int64_t lo, int64_t hi, int r, int P)
{
    return ex_stripe_below(hi, r, P) - ex_stripe_below(lo, r, P);
}

/* Pairs of the queries at positions 0 .. n-1 against the keys of stripe r:
 * key y = r + jP (y < n) is seen by the n - y queries at or after it, so
 * sum_j (n - r - jP) over the m keys = m (n - r) - P m (m - 1) / 2. */
static double stripe_pairs_below(int64_t n, int r, int P)
{
    double m = (double)ex_stripe_below(n, r, P);
    return m * (double)(n - r) - (double)P * m * (m - 1.0) / 2.0;
}

double ex_pairs(const ex_run *q, int stripe, int P)
{
    double n = (double)q->n;
    if (q->n <= 0)
        return 0;
    if (stripe < 0) /* query x sees x + 1 keys */
        return n * (double)(q->lo + 1) + (double)q->stride * n * (n - 1.0) / 2.0;
    if (q->stride == 1)
        return stripe_pairs_below(q->lo + q->n, stripe, P) - stripe_pairs_below(q->lo, stripe, P);
    /* stride P: each next query sees exactly one more key of every stripe */
    double k0 = (double)ex_stripe_below(q->lo + 1, stripe, P);
    return n * k0 + n * (n - 1.0) / 2.0;
}

/* ---- attention calls of a batched step ---------------------------------------- */

/* Pairs and keys of one sequence (ex_step_calls). */
static void seq_work(int64_t t, int64_t prefix, int64_t cap, int win_kv, int stripe, int P,
                     double *pairs, int64_t *keys)
{
    if (stripe >= 0) {
        ex_run all = {prefix, t, 1};
        *pairs = ex_pairs(&all, stripe, P);
        *keys = ex_stripe_below(prefix + t, stripe, P);
        return;
    }
    *pairs = em_causal_pairs(t, prefix, cap);
    *keys = win_kv && cap > 0 && t <= 16 && prefix + t > cap + t ? cap + t : prefix + t;
}

int ex_step_calls(const bld *b, int64_t t, int64_t prefix, int64_t cap, int win_kv, int stripe,
                  int P, plan_attn *out)
{
    double pairs;
    int64_t keys;
    if (!b->seqs) {
        seq_work(t, prefix, cap, win_kv, stripe, P, &pairs, &keys);
        out[0] = (plan_attn){.q_len = t, .kv_len = keys, .pairs = pairs, .causal = 1};
        return 1;
    }
    int n = 0, dec = -1;
    int64_t cnt[EX_MAX_CALLS] = {0};
    double qs[EX_MAX_CALLS] = {0}, ks[EX_MAX_CALLS] = {0};
    for (int i = 0; i < b->nseqs; i++) {
        const build_seq *q = &b->seqs[i];
        seq_work(q->tokens, q->prefix, cap, win_kv, stripe, P, &pairs, &keys);
        int c = q->tokens == 1 && dec >= 0 ? dec : n < EX_MAX_CALLS ? n++ : EX_MAX_CALLS - 1;
        if (q->tokens == 1 && dec < 0)
            dec = c;
        if (cnt[c] == 0)
            out[c] = (plan_attn){.causal = 1};
        cnt[c]++;
        qs[c] += (double)q->tokens;
        ks[c] += (double)keys;
        out[c].pairs += pairs;
    }
    for (int c = 0; c < n; c++) {
        out[c].batch = cnt[c] > 1 ? cnt[c] : 0; /* 0: one sequence */
        out[c].q_len = (int64_t)ceil(qs[c] / (double)cnt[c]);
        out[c].kv_len = (int64_t)ceil(ks[c] / (double)cnt[c]);
    }
    return n;
}

plan_attn ex_step_merged(const bld *b, int64_t t, int64_t prefix, int64_t cap)
{
    plan_attn calls[EX_MAX_CALLS], m = {0};
    int n = ex_step_calls(b, t, prefix, cap, 0, -1, 1, calls);
    double qs = 0, ks = 0, pairs = 0;
    int64_t seqs = 0;
    for (int c = 0; c < n; c++) {
        int64_t bt = calls[c].batch > 0 ? calls[c].batch : 1;
        seqs += bt;
        qs += (double)(calls[c].q_len * bt);
        ks += (double)(calls[c].kv_len * bt);
        pairs += calls[c].pairs;
    }
    m.batch = seqs > 1 ? seqs : 0;
    m.q_len = (int64_t)ceil(qs / (double)seqs);
    m.kv_len = (int64_t)ceil(ks / (double)seqs);
    m.pairs = pairs;
    m.causal = 1;
    return m;
}

int ex_step_all_decode(const bld *b, int64_t t)
{
    if (!b->seqs)
        return t == 1;
    for (int i = 0; i < b->nseqs; i++)
        if (b->seqs[i].tokens != 1)
            return 0;
    return 1;
}

/* Chunk c of a step of t tokens after `prefix` cut into `parts` chunks,
 * the first t % parts chunks one token longer. */
static ex_run chunk(int64_t t, int64_t prefix, int parts, int c)
{
    int64_t q = t / parts, rem = t % parts;
    int64_t lo = prefix + (int64_t)c * q + (c < rem ? c : rem);
    return (ex_run){lo, q + (c < rem), 1};
}

/* The positions of SP rank r's tokens in the current (split) step. */
static ex_share share_of(const ex_ctx *x, int r)
{
    ex_share s = {0};
    int P = x->P;
    switch (x->split_kind) {
    case SPLIT_STRIPED: {
        int64_t first = x->prefix + ((r - x->prefix % P) % P + P) % P;
        s.run[s.nrun++] = (ex_run){first, stripe_count(x->prefix, x->prefix + x->t, r, P), P};
        break;
    }
    case SPLIT_CONTIGUOUS:
        s.run[s.nrun++] = chunk(x->t, x->prefix, P, r);
        break;
    case SPLIT_ZIGZAG:
        s.run[s.nrun++] = chunk(x->t, x->prefix, 2 * P, r);
        s.run[s.nrun++] = chunk(x->t, x->prefix, 2 * P, 2 * P - 1 - r);
        break;
    }
    for (int i = 0; i < s.nrun; i++)
        s.n += s.run[i].n;
    return s;
}

/* Causal pairs of a share's queries against all keys (stripe < 0) or the
 * keys of one stripe. */
static double share_pairs(const ex_share *s, int stripe, int P)
{
    double p = 0;
    for (int i = 0; i < s->nrun; i++)
        p += ex_pairs(&s->run[i], stripe, P);
    return p;
}

/* ---- set-up ------------------------------------------------------------------ */

int ex_step_splits(const scenario *s, int64_t t)
{
    const wl_parallel *p = &s->par;
    int splits = p->kv_storage == KV_BY_HEAD || p->exchange == EX_ALL_GATHER ||
                 p->exchange == EX_RING;
    return p->sp > 1 && splits && t >= p->min_tokens && t >= p->sp;
}

void ex_init(ex_ctx *x, int me)
{
    x->P = x->b.s->par.sp;
    x->me = me;
}

void ex_begin_step(ex_ctx *x, int64_t t, int64_t prefix, int split)
{
    x->t = t;
    x->prefix = prefix;
    x->split = split;
    x->split_kind = x->b.s->par.exchange == EX_RING ? SPLIT_STRIPED : x->b.s->par.split;
    memset(&x->mine, 0, sizeof x->mine);
    x->most = 0;
    if (!split)
        return;
    x->mine = share_of(x, x->me);
    for (int r = 0; r < x->P; r++) {
        int64_t n = share_of(x, r).n;
        if (n > x->most)
            x->most = n;
    }
}

double ex_kv_bytes(const ex_ctx *x, int64_t positions)
{
    const arch *a = x->b.a;
    /* K and V (2) of one head per position and layer, kv_cache dtype */
    double per_head = (double)a->layers * 2.0 * (double)a->head_dim * x->b.kvb;
    if (x->b.s->par.kv_storage == KV_BY_HEAD)
        return (double)positions * (double)mem_kv_heads_per_rank(a, x->b.tp * x->P) * per_head;
    return (double)ex_stripe_below(positions, x->me, x->P) *
           (double)mem_kv_heads_per_rank(a, x->b.tp) * per_head;
}

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

/* Split step, all_gather_tensors = qkv (cp-exchange.md "all_gather"): one
 * all-gather over G_SP of the shares' q, k and v (padded to the largest
 * share: an all-gather moves equal blocks) gives every rank the whole step;
 * then the copied path over position storage: the rank writes the
 * positions it stores (x % P == me), attends every query of the step over
 * its own slots (DCP), and the fp32 partials of each rank's rows go to it
 * (all-to-all) to be merged; it keeps its share of the rows.  The whole
 * step's q/k/v stay resident through the attention. */
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
    layer_gqa_kv_write(b, stripe_count(prefix, prefix + t, x->me, P), g.hkv);
    em_tensor part = dcp_attention(x, &g, t, prefix);
    em_free(b, &gathered);
    b->layout = TL_LOCAL;
    em_tensor out = dcp_merge(x, &g, t, tm, 1, &part);
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
    layer_gqa_kv_write(b, stripe_count(prefix, prefix + t, x->me, P), g.hkv);
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
            double pairs = share_pairs(&x->mine, s, P);
            if (pairs <= 0)
                continue;
            int64_t keys = stripe_count(prefix, prefix + t, s, P);
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
    int64_t keys;            /* this rank's slots: positions x % P == me */
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
    return share_of(rg->x, stripe_of_round(rg, j)).n;
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

/* The attention of round j: block j over this rank's slots, with the exact
 * causal work of the stripe pair (a stripe before or at this rank's sees
 * its diagonal key, one after it does not).  EM_NONE when no pair is
 * visible (a step of fewer than 2P tokens). */
static uint32_t ring_round(ring *rg, int j)
{
    bld *b = &rg->x->b;
    ex_share blk = share_of(rg->x, stripe_of_round(rg, j));
    double pairs = share_pairs(&blk, rg->x->me, rg->x->P);
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

/* Split step, striped: the share is exactly the positions this rank stores,
 * so the K/V write is local and K/V never move.  P rounds; the query blocks
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
    rg.keys = ex_stripe_below(prefix + t, x->me, P);
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
    layer_gqa_kv_write(b, stripe_count(prefix, prefix + t, x->me, x->P), g.hkv);
    em_tensor part = dcp_attention(x, &g, t, prefix);
    em_free(b, &qkv);
    em_tensor out = dcp_merge(x, &g, t, t, 0, &part);
    return layer_gqa_out(b, t, &out);
}

/* ---- the scheme ------------------------------------------------------------------ */

static em_tensor ex_attention(bld *b, int64_t t, int64_t prefix)
{
    ex_ctx *x = ctx_of(b);
    const wl_parallel *p = &b->s->par;
    em_tensor out;
    if (p->kv_storage == KV_BY_HEAD && x->split)
        out = ulysses(x, t, prefix);
    else if (p->kv_storage == KV_BY_HEAD)
        out = head_slice(x, t, prefix);
    else if (!x->split)
        out = dcp(x, t, prefix);
    else if (p->exchange == EX_RING)
        out = ring_attention(x, t, prefix);
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
    ex_ctx *x = ctx_of(b);
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
    ex_ctx *x = ctx_of(b);
    b->layout = x->split ? TL_LOCAL : TL_FULL;
    layer_decoder(b, x->split ? x->mine.n : t, t, prefix, ex_attention);
}

/* Split steps: final norm on the share, then the normalized shares are
 * all-gathered over G_SP (padded to the largest share) before the LM head. */
static void ex_final(bld *b, int64_t t)
{
    ex_ctx *x = ctx_of(b);
    if (!x->split) {
        b->layout = TL_FULL;
        layer_final(b, t);
        return;
    }
    int64_t h = b->a->hidden, tm = x->mine.n;
    double bytes = (double)x->P * (double)x->most * (double)h * b->ab;
    b->layout = TL_LOCAL;
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
