/* calls: the position algebra of striped KV storage (runs of positions,
 * the causal pairs they attend) and the attention calls of a batched step
 * (attn.h). */
#include "models/attn/attn.h"

#include <math.h>
#include <stdlib.h>

/* ---- positions ------------------------------------------------------------- */

int64_t attn_stripe_below(int64_t n, int r, int P)
{
    return n > r ? (n - r + P - 1) / P : 0;
}

/* Positions of stripe r in [lo, hi). */
int64_t attn_stripe_count(int64_t lo, int64_t hi, int r, int P)
{
    return attn_stripe_below(hi, r, P) - attn_stripe_below(lo, r, P);
}

/* Pairs of the queries at positions 0 .. n-1 against the keys of stripe r:
 * key y = r + jP (y < n) is seen by the n - y queries at or after it, so
 * sum_j (n - r - jP) over the m keys = m (n - r) - P m (m - 1) / 2. */
static double stripe_pairs_below(int64_t n, int r, int P)
{
    double m = (double)attn_stripe_below(n, r, P);
    return m * (double)(n - r) - (double)P * m * (m - 1.0) / 2.0;
}

double attn_stripe_pairs(const attn_run *q, int stripe, int P)
{
    double n = (double)q->n;
    if (q->n <= 0)
        return 0;
    if (stripe < 0) /* query x sees x + 1 keys */
        return n * (double)(q->lo + 1) + (double)q->stride * n * (n - 1.0) / 2.0;
    if (q->stride == 1)
        return stripe_pairs_below(q->lo + q->n, stripe, P) - stripe_pairs_below(q->lo, stripe, P);
    /* stride P: each next query sees exactly one more key of every stripe */
    double k0 = (double)attn_stripe_below(q->lo + 1, stripe, P);
    return n * k0 + n * (n - 1.0) / 2.0;
}

double attn_run_capped(const attn_run *q, int64_t cap)
{
    if (q->n <= 0)
        return 0;
    /* the first m queries (p + 1 <= cap) see p + 1 keys, the rest cap */
    int64_t room = cap - 1 - q->lo;
    int64_t m = room < 0 ? 0 : room / q->stride + 1;
    m = m < q->n ? m : q->n;
    double md = (double)m;
    double below = md * (double)(q->lo + 1) + (double)q->stride * md * (md - 1.0) / 2.0;
    return below + (double)(q->n - m) * (double)cap;
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
double attn_run_pairs(const attn_run *q, const attn_run *k)
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

/* Pairs and keys of one sequence (attn_step_calls). */
static void seq_work(int64_t t, int64_t prefix, int64_t cap, int win_kv, int stripe, int P,
                     double *pairs, int64_t *keys)
{
    if (stripe >= 0) {
        attn_run all = {prefix, t, 1};
        *pairs = attn_stripe_pairs(&all, stripe, P);
        *keys = attn_stripe_below(prefix + t, stripe, P);
        return;
    }
    *pairs = em_causal_pairs(t, prefix, cap);
    *keys = win_kv && cap > 0 && t <= 16 && prefix + t > cap + t ? cap + t : prefix + t;
}

int attn_step_calls(const bld *b, int64_t t, int64_t prefix, int64_t cap, int win_kv, int stripe,
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
    int64_t cnt[ATTN_MAX_CALLS] = {0}, kmax[ATTN_MAX_CALLS] = {0};
    double qs[ATTN_MAX_CALLS] = {0};
    for (int i = 0; i < b->nseqs; i++) {
        const sc_seq *q = &b->seqs[i];
        seq_work(q->tokens, q->prefix, cap, win_kv, stripe, P, &pairs, &keys);
        int c = q->tokens == 1 && dec >= 0 ? dec : n < ATTN_MAX_CALLS ? n++ : ATTN_MAX_CALLS - 1;
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

plan_attn attn_step_merged(const bld *b, int64_t t, int64_t prefix, int64_t cap)
{
    plan_attn calls[ATTN_MAX_CALLS], m = {0};
    int n = attn_step_calls(b, t, prefix, cap, 0, -1, 1, calls);
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

int attn_step_all_decode(const bld *b, int64_t t)
{
    if (!b->seqs)
        return t == 1;
    for (int i = 0; i < b->nseqs; i++)
        if (b->seqs[i].tokens != 1)
            return 0;
    return 1;
}
