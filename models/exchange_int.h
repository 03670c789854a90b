/* exchange_int: the exchange module's inner seam: exchange_pos.c places a
 * split step's tokens and KV on the SP ranks, exchange_rule.c picks a
 * ring, exchange.c builds the strategies. */
#ifndef CP_EXCHANGE_INT_H
#define CP_EXCHANGE_INT_H

#include "models/build.h"
#include "models/exchange.h"

/* The scheme's callbacks get &ctx->b, the first member of an ex_ctx. */
static inline ex_ctx *ex_ctx_of(bld *b)
{
    return (ex_ctx *)b;
}

/* Positions in [lo, hi) that SP rank r of P stores (x % P == r). */
int64_t ex_stripe_count(int64_t lo, int64_t hi, int r, int P);
/* The positions of SP rank r's tokens in the current (split) step. */
ex_share ex_share_of(const ex_ctx *x, int r);
/* Causal pairs of a share's queries against all keys (stripe < 0) or the
 * keys of one stripe. */
double ex_share_pairs(const ex_share *s, int stripe, int P);
/* The KV positions rank r holds in the current step (pass-KV's block). */
ex_share ex_keys_of(const ex_ctx *x, int r);
/* Causal pairs of queries q against keys k. */
double ex_keys_pairs(const ex_share *q, const ex_share *k);
/* The most keys a rank's block holds in the current step (pass-KV). */
int64_t ex_keys_most(const ex_ctx *x);

#endif
