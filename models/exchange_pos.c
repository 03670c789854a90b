/* exchange_pos: where a split step's tokens and KV positions lie on the SP
 * ranks (striped, contiguous, zigzag), the attended pairs of position
 * sets, a batched step's attention calls and a step's set-up (see
 * exchange.h). */
#include "models/exchange_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- positions ------------------------------------------------------------- */

int64_t ex_stripe_below(int64_t n, int r, int P)
{
    return n > r ? (n - r + P - 1) / P : 0;
}

/* Positions of stripe r in [lo, hi). */
int64_t ex_stripe_count(int64_t lo, int64_t hi, int r, int P)
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

/* floor(a / b) for b > 0 */
static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* ceil(a / b) for b > 0 */
static int64_t ceil_div(int64_t a, int64_t b)
{
    return -floor_div(-a, b);
}

/* Query i of q (position q.lo + i q.stride) sees clamp(c0 + i a, 0, K) keys
 * of k: with k of stride 1, c0 = q.lo - k.lo + 1 and a = q.stride; with
 * both of stride S, c0 = floor((q.lo - k.lo) / S) + 1 and a = 1.  The sum
 * over i: zero below i0 (the first i with a count >= 1), K from i1 (the
 * first with a count >= K), the arithmetic series between. */
double ex_run_pairs(const ex_run *q, const ex_run *k)
{
    if (q->n <= 0 || k->n <= 0)
        return 0;
    int64_t c0, a;
    if (k->stride == 1) {
        c0 = q->lo - k->lo + 1;
        a = q->stride;
    } else if (q->stride == k->stride) {
        c0 = floor_div(q->lo - k->lo, k->stride) + 1;
        a = 1;
    } else {
        abort(); /* builder bug: no split pairs these strides */
    }
    int64_t K = k->n, n = q->n;
    int64_t i0 = c0 >= 1 ? 0 : ceil_div(1 - c0, a);
    int64_t i1 = c0 >= K ? 0 : ceil_div(K - c0, a);
    i0 = i0 < n ? i0 : n;
    i1 = i1 < n ? i1 : n;
    i1 = i1 > i0 ? i1 : i0;
    double d0 = (double)i0, d1 = (double)i1;
    double series = (d1 - d0) * (double)c0 + (double)a * (d1 * (d1 - 1.0) - d0 * (d0 - 1.0)) / 2.0;
    return series + (double)(n - i1) * (double)K;
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
    int64_t cnt[EX_MAX_CALLS] = {0}, kmax[EX_MAX_CALLS] = {0};
    double qs[EX_MAX_CALLS] = {0};
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
        kmax[c] = keys > kmax[c] ? keys : kmax[c];
        out[c].pairs += pairs;
    }
    for (int c = 0; c < n; c++) {
        out[c].batch = cnt[c] > 1 ? cnt[c] : 0; /* 0: one sequence */
        out[c].q_len = (int64_t)ceil(qs[c] / (double)cnt[c]);
        out[c].kv_len = kmax[c];
        /* a batched decode call: FA2 sizes its split of the keys for the
         * longest request and every CTA of the grid waits for it, so the
         * call costs the longest request's keys on every request (issue
         * "Decode steps": a batch of 33 with one 32K request spends 6 ms) */
        if (cnt[c] > 1 && out[c].q_len == 1)
            out[c].pairs = (double)cnt[c] * (double)kmax[c];
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
ex_share ex_share_of(const ex_ctx *x, int r)
{
    ex_share s = {0};
    int P = x->P;
    switch (x->split_kind) {
    case SPLIT_STRIPED: {
        int64_t first = x->prefix + ((r - x->prefix % P) % P + P) % P;
        s.run[s.nrun++] = (ex_run){first, ex_stripe_count(x->prefix, x->prefix + x->t, r, P), P};
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
double ex_share_pairs(const ex_share *s, int stripe, int P)
{
    double p = 0;
    for (int i = 0; i < s->nrun; i++)
        p += ex_pairs(&s->run[i], stripe, P);
    return p;
}

/* The KV positions SP rank r stores of the current split step's sequence
 * [0, prefix + t) under a ring (exchange.h "KV ownership"): one stripe, or
 * the zigzag chunks of the cached prefix and of the step. */
ex_share ex_keys_of(const ex_ctx *x, int r)
{
    ex_share k = {0};
    int P = x->P;
    if (x->split_kind != SPLIT_ZIGZAG) {
        k.run[k.nrun++] = (ex_run){r, ex_stripe_below(x->prefix + x->t, r, P), P};
    } else {
        ex_share step = ex_share_of(x, r);
        ex_run pre[2] = {chunk(x->prefix, 0, 2 * P, r), chunk(x->prefix, 0, 2 * P, 2 * P - 1 - r)};
        for (int i = 0; i < 2; i++)
            if (pre[i].n > 0)
                k.run[k.nrun++] = pre[i];
        for (int i = 0; i < step.nrun; i++)
            k.run[k.nrun++] = step.run[i];
    }
    for (int i = 0; i < k.nrun; i++)
        k.n += k.run[i].n;
    return k;
}

/* Causal pairs of the queries of share q against the keys of key set k. */
double ex_keys_pairs(const ex_share *q, const ex_share *k)
{
    double p = 0;
    for (int i = 0; i < q->nrun; i++)
        for (int j = 0; j < k->nrun; j++)
            p += ex_run_pairs(&q->run[i], &k->run[j]);
    return p;
}

/* The most KV positions an SP rank stores of the current step's sequence. */
int64_t ex_keys_most(const ex_ctx *x)
{
    int64_t most = 0;
    for (int r = 0; r < x->P; r++) {
        int64_t n = ex_keys_of(x, r).n;
        most = n > most ? n : most;
    }
    return most;
}

/* ---- set-up ------------------------------------------------------------------ */

int ex_step_splits(const scenario *s, int64_t t)
{
    const wl_parallel *p = &s->par;
    int ring = sc_exchange_is_ring(p->exchange);
    int splits = p->kv_storage == KV_BY_HEAD || p->exchange == EX_ALL_GATHER || ring;
    if (!(p->sp > 1 && splits && t >= p->min_tokens && t >= p->sp))
        return 0;
    /* "Ring runs eager only (no captured graph)" (cp-exchange.md, "ring"):
     * a step the graph mode launches from a graph runs copied instead
     * (wl_load warns) */
    int64_t padded;
    return !ring || build_step_launch(s, t, 1, &padded) == PL_EAGER;
}

void ex_init(ex_ctx *x, int me)
{
    x->P = x->b.s->par.sp;
    x->me = me;
}

void ex_begin_step(ex_ctx *x, int64_t t, int64_t prefix, int split, plan_ring ring)
{
    x->t = t;
    x->prefix = prefix;
    x->split = split;
    x->split_kind = x->b.s->par.split;
    x->ring = split ? ring : PR_NONE;
    memset(&x->mine, 0, sizeof x->mine);
    x->most = 0;
    if (!split)
        return;
    x->mine = ex_share_of(x, x->me);
    for (int r = 0; r < x->P; r++) {
        int64_t n = ex_share_of(x, r).n;
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

