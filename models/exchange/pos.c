/* pos: where a split step's tokens and KV positions lie on the SP
 * ranks (striped, contiguous, zigzag), the pairs of those position sets
 * and a step's set-up (see exchange.h; the position algebra itself is
 * models/attn/calls.c). */
#include "models/exchange/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Chunk c of a step of t tokens after `prefix` cut into `parts` chunks,
 * the first t % parts chunks one token longer. */
static attn_run chunk(int64_t t, int64_t prefix, int parts, int c)
{
    int64_t q = t / parts, rem = t % parts;
    int64_t lo = prefix + (int64_t)c * q + (c < rem ? c : rem);
    return (attn_run){lo, q + (c < rem), 1};
}

/* The positions of SP rank r's tokens in the current (split) step. */
ex_share ex_share_of(const ex_ctx *x, int r)
{
    ex_share s = {0};
    int P = x->P;
    switch (x->split_kind) {
    case SPLIT_STRIPED: {
        int64_t first = x->prefix + ((r - x->prefix % P) % P + P) % P;
        int64_t n = attn_stripe_count(x->prefix, x->prefix + x->t, r, P);
        s.run[s.nrun++] = (attn_run){first, n, P};
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
        p += attn_stripe_pairs(&s->run[i], stripe, P);
    return p;
}

double ex_share_capped(const ex_share *s, int64_t cap)
{
    double p = 0;
    for (int i = 0; i < s->nrun; i++)
        p += attn_run_capped(&s->run[i], cap);
    return p;
}

double ex_sparse_share(const attn_geom *g, const ex_share *s)
{
    double dense = ex_share_pairs(s, -1, 1);
    return g->topk > 0 && dense > 0 ? ex_share_capped(s, g->topk) / dense : 1.0;
}

/* The KV positions SP rank r stores of the current split step's sequence
 * [0, prefix + t) under a ring (exchange.h "KV ownership"): one stripe, or
 * the zigzag chunks of the cached prefix and of the step. */
ex_share ex_keys_of(const ex_ctx *x, int r)
{
    ex_share k = {0};
    int P = x->P;
    if (x->split_kind != SPLIT_ZIGZAG) {
        k.run[k.nrun++] = (attn_run){r, attn_stripe_below(x->prefix + x->t, r, P), P};
    } else {
        ex_share step = ex_share_of(x, r);
        attn_run pre[2] = {chunk(x->prefix, 0, 2 * P, r),
                           chunk(x->prefix, 0, 2 * P, 2 * P - 1 - r)};
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
            p += attn_run_pairs(&q->run[i], &k->run[j]);
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
    if (!(p->sp > 1 && splits))
        return 0;
    sc_split_probe *pr = s->split_probe;
    if (pr && t < p->min_tokens && t > pr->below)
        pr->below = t;
    if (pr && t >= p->min_tokens && t < pr->at)
        pr->at = t;
    if (!(t >= p->min_tokens && t >= p->sp))
        return 0;
    /* "Ring runs eager only (no captured graph)" (cp-exchange.md, "ring"):
     * a step the graph mode launches from a graph runs copied instead
     * (wl_load warns) */
    int64_t padded;
    return !ring || sc_step_launch(s, t, 1, &padded) == PL_EAGER;
}

void ex_init(ex_ctx *x, int me)
{
    x->P = x->b.s->par.sp;
    x->me = me;
    x->D = x->b.s->par.dcp > 1 ? x->b.s->par.dcp : 1;
    x->kvP = x->P * x->D;
    x->kv_me = me * x->D;
}

int64_t ex_own_slots(const ex_ctx *x, int64_t lo, int64_t hi)
{
    return attn_stripe_count(lo, hi, x->kv_me, x->kvP);
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
    if (x->b.s->par.kv_storage == KV_BY_HEAD && x->D == 1)
        return (double)positions * (double)mem_kv_heads_per_rank(a, x->b.tp * x->P) * per_head;
    /* by position: the rank's stripe of every layer's cache rows (GQA its
     * KV heads; MLA the latent, + the index key with DSA) */
    double row = attn_kv_row_bytes(a, x->b.tp, x->b.s->kv_dtype);
    return (double)attn_stripe_below(positions, x->kv_me, x->kvP) * (double)a->layers * row;
}

