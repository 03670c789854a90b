/* sg_transport: the transport interface over SimGrid mailboxes (see
 * sg_transport.h).
 *
 * Mailboxes are created on first use of a (source, destination, stream)
 * triple and kept in an open-addressing hash table of the world, so memory
 * grows with the pairs actually used (a ring touches 2 per rank, not
 * nranks^2) and a lookup is O(1) amortised.  The table only caches
 * sg_mailbox_t handles; which mailbox a triple uses is fixed by its name, so
 * nothing depends on table order.
 */
#include "collectives/sg_transport.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/mailbox.h>
#include <xbt/config.h>

#include "base/diag.h"

typedef struct sgt_slot {
    uint64_t key;          /* triple id + 1; 0 = empty */
    sg_mailbox_t mb;
} sgt_slot;

struct sgt_world {
    int nranks, nstreams;
    long msgs;
    sgt_slot *slots;
    size_t cap;            /* power of two */
    size_t used;
    void *sink;            /* where receives drop the payload pointer */
    double precision;      /* SimGrid's surf/precision (seconds), read once */
    long folds;            /* sgt_folds */
};

/* SimGrid refuses NULL payloads; every message carries this address and the
 * receiver ignores it. */
static char sgt_payload;


static size_t slot_of(uint64_t key, size_t cap)
{
    /* Fibonacci hashing; derived: 2^64 / golden ratio. */
    return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (cap - 1);
}

static void table_insert(sgt_slot *slots, size_t cap, uint64_t key, sg_mailbox_t mb)
{
    size_t i = slot_of(key, cap);
    while (slots[i].key)
        i = (i + 1) & (cap - 1);
    slots[i].key = key;
    slots[i].mb = mb;
}

static void table_grow(sgt_world *w)
{
    size_t ncap = w->cap * 2;
    sgt_slot *ns = cp_xcalloc(ncap, sizeof *ns);
    for (size_t i = 0; i < w->cap; i++)
        if (w->slots[i].key)
            table_insert(ns, ncap, w->slots[i].key, w->slots[i].mb);
    free(w->slots);
    w->slots = ns;
    w->cap = ncap;
}

static sg_mailbox_t mailbox(sgt_world *w, int src, int dst, int stream)
{
    if (src < 0 || src >= w->nranks || dst < 0 || dst >= w->nranks) {
        fprintf(stderr, "sg_transport: message between ranks %d and %d of a "
                "%d-rank world\n", src, dst, w->nranks);
        abort(); /* a collective addressed a rank outside the world: a bug */
    }
    uint64_t key = ((uint64_t)src * (uint64_t)w->nranks + (uint64_t)dst) *
                   (uint64_t)w->nstreams + (uint64_t)stream + 1;
    size_t i = slot_of(key, w->cap);
    for (; w->slots[i].key; i = (i + 1) & (w->cap - 1))
        if (w->slots[i].key == key)
            return w->slots[i].mb;
    char name[64];
    snprintf(name, sizeof name, "r%d>r%d.s%d", src, dst, stream);
    sg_mailbox_t mb = sg_mailbox_by_name(name);
    if (2 * (w->used + 1) > w->cap)
        table_grow(w);
    table_insert(w->slots, w->cap, key, mb);
    w->used++;
    return mb;
}

sgt_world *sgt_new(int nranks, int nstreams)
{
    if (nranks < 1 || nstreams < 1)
        return NULL;
    sgt_world *w = cp_xcalloc(1, sizeof *w);
    w->nranks = nranks;
    w->nstreams = nstreams;
    w->cap = 64; /* grows by doubling at half load */
    w->precision = sg_cfg_get_double("surf/precision");
    w->slots = cp_xcalloc(w->cap, sizeof *w->slots);
    return w;
}

void sgt_free(sgt_world *w)
{
    if (!w)
        return;
    free(w->slots);
    free(w);
}

void sgt_ctx_init(sgt_ctx *c, sgt_world *w, int rank, int stream)
{
    c->w = w;
    c->rank = rank;
    c->stream = stream;
    c->sleep_scale = 1.0;
    c->due = 0;
    c->msgs_sent = 0;
    c->bytes_sent = 0;
}

long sgt_messages(const sgt_world *w)
{
    return w->msgs;
}

long sgt_folds(const sgt_world *w)
{
    return w->folds;
}

void sgt_settle(sgt_ctx *c)
{
    if (c->due == 0)
        return; /* nothing deferred: every call but a hop's first */
    double t = c->due, now = simgrid_get_clock();
    c->due = 0;
    if (t > now)
        sg_actor_sleep_for(t - now);
}

/* SimGrid sizes are whole bytes: bytes is rounded to the nearest integer.  A
 * 0-byte message is legal and still synchronises sender and receiver. */
static tr_req *sgt_isend(void *ctx, int peer, double bytes)
{
    sgt_ctx *c = ctx;
    sgt_settle(c);
    sg_mailbox_t mb = mailbox(c->w, c->rank, peer, c->stream);
    sg_comm_t comm = sg_mailbox_put_async(mb, &sgt_payload, (long)llround(bytes));
    c->msgs_sent++;
    c->bytes_sent += bytes;
    c->w->msgs++;
    return (tr_req *)(void *)comm;
}

static tr_req *sgt_irecv(void *ctx, int peer)
{
    sgt_ctx *c = ctx;
    sgt_settle(c);
    sg_mailbox_t mb = mailbox(c->w, peer, c->rank, c->stream);
    return (tr_req *)(void *)sg_mailbox_get_async(mb, &c->w->sink);
}

/* The one call of sg_comm_wait_all, deprecated in SimGrid 3.35 in favour of
 * activity sets: only this helper changes then.  Releases the handles. */
static void wait_all(sg_comm_t *comms, size_t n)
{
    sg_comm_wait_all(comms, n);
}

static void sgt_waitall(void *ctx, tr_req **reqs, int n)
{
    sgt_settle(ctx);
    sg_comm_t local[64]; /* stack room for typical batches; larger allocate */
    sg_comm_t *comms = n <= 64 ? local : cp_xcalloc((size_t)n, sizeof *comms);
    for (int i = 0; i < n; i++)
        comms[i] = (sg_comm_t)(void *)reqs[i];
    wait_all(comms, (size_t)n);
    if (comms != local)
        free(comms);
}

/* A sleep of d seconds from instant t ends at t + d (SimGrid: the sleep's
 * start plus its duration); one sleep from now ends at now + (t + d - now).
 * The two agree when that subtraction and addition are exact, which holds
 * when now >= (t + d) / 2 (Sterbenz's lemma), and d must be at least
 * SimGrid's precision (surf/precision: a shorter sleep is its own case
 * there).  Every instant of SimGrid's clock between now and t + d is then
 * an exact difference away too. */
static int fold_exact(const sgt_world *w, double now, double t, double d)
{
    return now > 0 && d >= w->precision && t + d <= 2 * now;
}

static void sgt_sleep(void *ctx, double seconds)
{
    sgt_ctx *c = ctx;
    double d = seconds * c->sleep_scale;
    if (c->due == 0) {
        sg_actor_sleep_for(d);
        return;
    }
    double t = c->due, now = simgrid_get_clock();
    if (t > now && fold_exact(c->w, now, t, d)) {
        c->due = 0;
        c->w->folds++;
        sg_actor_sleep_for(t + d - now);
        return;
    }
    sgt_settle(c);
    sg_actor_sleep_for(d);
}

int sgt_defer(sgt_ctx *c, double a, double b, double *t)
{
    double now = simgrid_get_clock(), at = now;
    if (a > now) {
        if (!fold_exact(c->w, now, now, a - now))
            return 0;
        at = now + (a - now);
    }
    if (b > at) {
        if (!fold_exact(c->w, now, at, b - at))
            return 0;
        at += b - at;
    }
    c->due = at > now ? at : 0;
    *t = at;
    return 1;
}

static double sgt_now(void *ctx)
{
    sgt_settle(ctx);
    return simgrid_get_clock();
}

static const tr_ops sgt_ops = {sgt_isend, sgt_irecv, sgt_waitall, sgt_sleep, sgt_now};

tr_port sgt_port(sgt_ctx *c)
{
    tr_port p = {&sgt_ops, c};
    return p;
}
