/* serve_steps: the distinct steps of a serving run, each simulated once
 * (see serve.h and serve_int.h). */
#include "sim/serve/serve_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "models/build/build.h"
#include "models/exchange/exchange.h"
#include "models/cost.h"
#include "reports/report.h"
#include "sim/engine/engine.h"

/* FNV-1a over 64-bit words: the step's shape (everything but its decode
 * contexts) and, for the exact key, every context too. */
static uint64_t mix(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 1099511628211ULL; /* FNV-1a 64-bit prime */
    }
    return h;
}

static void shape_of(const sc_batch *bt, double reuse, uint64_t *shape, double *ctx)
{
    uint64_t h = 14695981039346656037ULL; /* FNV-1a 64-bit offset basis */
    int64_t ndec = 0;
    double sum = 0;
    h = mix(h, (uint64_t)bt->split);
    for (int i = 0; i < bt->n; i++) {
        const sc_seq *q = &bt->seq[i];
        if (q->tokens == 1) {
            ndec++;
            sum += (double)q->prefix;
            if (reuse <= 0) /* exact: every context */
                h = mix(h, (uint64_t)q->prefix);
            continue;
        }
        h = mix(h, (uint64_t)q->tokens);
        h = mix(h, (uint64_t)q->prefix);
        h = mix(h, (uint64_t)q->sample);
        if (q->audio_frames > 0) /* (text-only steps keep their keys) */
            h = mix(h, (uint64_t)q->audio_frames);
    }
    *shape = mix(h, (uint64_t)ndec);
    *ctx = sum;
}

/* ---- the index ------------------------------------------------------------------- */

/* The slot of `shape`: its group, or the free slot it would take. */
static srv_shape *slot_of(const srv_index *ix, uint64_t shape)
{
    size_t j = (size_t)(shape & (ix->cap - 1));
    while (ix->slot[j].cap && ix->slot[j].shape != shape)
        j = (j + 1) & (ix->cap - 1);
    return &ix->slot[j];
}

int srv_index_find(const srv_index *ix, uint64_t shape, double ctx, double reuse)
{
    if (!ix->cap)
        return -1;
    const srv_shape *g = slot_of(ix, shape);
    if (!g->cap)
        return -1;
    /* the first sum at or above ctx, and the first step of the run of
     * equal sums just below: the nearest sums, the earliest of each */
    int lo = 0, hi = g->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (g->ctx[mid] < ctx)
            lo = mid + 1;
        else
            hi = mid;
    }
    int best = -1;
    double bd = 0;
    if (lo < g->n) {
        best = lo;
        bd = fabs(g->ctx[lo] - ctx);
    }
    if (lo > 0) {
        int k = lo - 1;
        while (k > 0 && g->ctx[k - 1] == g->ctx[lo - 1])
            k--;
        double d = fabs(g->ctx[k] - ctx);
        if (best < 0 || d < bd || (d == bd && g->step[k] < g->step[best])) {
            best = k;
            bd = d;
        }
    }
    return best >= 0 && bd <= reuse * ctx ? g->step[best] : -1;
}

void srv_index_add(srv_index *ix, uint64_t shape, double ctx, int step)
{
    if (2 * (ix->used + 1) > ix->cap) {
        srv_index g = {cp_xcalloc(ix->cap ? 2 * ix->cap : 64, sizeof *g.slot),
                       ix->cap ? 2 * ix->cap : 64, ix->used};
        for (size_t i = 0; i < ix->cap; i++)
            if (ix->slot[i].cap)
                *slot_of(&g, ix->slot[i].shape) = ix->slot[i];
        free(ix->slot);
        *ix = g;
    }
    srv_shape *g = slot_of(ix, shape);
    if (!g->cap) {
        g->shape = shape;
        ix->used++;
    }
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 4;
        g->ctx = realloc(g->ctx, (size_t)g->cap * sizeof *g->ctx);
        g->step = realloc(g->step, (size_t)g->cap * sizeof *g->step);
        if (!g->ctx || !g->step)
            abort();
    }
    /* after every sum at or below ctx: equal sums stay in step order */
    int at = g->n;
    while (at > 0 && g->ctx[at - 1] > ctx)
        at--;
    memmove(g->ctx + at + 1, g->ctx + at, (size_t)(g->n - at) * sizeof *g->ctx);
    memmove(g->step + at + 1, g->step + at, (size_t)(g->n - at) * sizeof *g->step);
    g->ctx[at] = ctx;
    g->step[at] = step;
    g->n++;
}

void srv_index_free(srv_index *ix)
{
    for (size_t i = 0; i < ix->cap; i++) {
        free(ix->slot[i].ctx);
        free(ix->slot[i].step);
    }
    free(ix->slot);
    memset(ix, 0, sizeof *ix);
}

/* ---- the steps -------------------------------------------------------------------- */

int srv_steps_init(srv_steps *st, const scenario *s, int lockstep, double reuse, cp_err *err)
{
    memset(st, 0, sizeof *st);
    st->s = s;
    st->lockstep = lockstep;
    st->reuse = reuse;
    st->cost = cost_new(&s->plat, err);
    if (!st->cost)
        return -1;
    if (coll_model_init(&st->cm, &s->plat, err) != 0 || interf_load(&st->im, &s->plat, err) != 0)
        return -1;
    st->eo = eng_opts_of(s, &st->cm, &st->im);
    st->memo = eng_collmemo_new();
    /* the scenario the step summaries see: one request */
    st->one = *s;
    st->one.nreqs = 1;
    st->one.reqs = &st->one_req;
    return 0;
}

void srv_steps_free(srv_steps *st)
{
    for (int i = 0; i < st->n; i++) {
        free(st->v[i].rank);
        free(st->v[i].ev);
        if (st->v[i].p) {
            plan_free(st->v[i].p);
            free(st->v[i].p);
        }
    }
    free(st->v);
    srv_index_free(&st->index);
    eng_collmemo_free(st->memo);
    if (st->cost)
        cost_free(st->cost);
    memset(st, 0, sizeof *st);
}

/* The figures of a simulated step: its time, each rank's busy times and
 * memory peak, its events relative to its start. */
static double step_time(const plan *p, const eng_result *r);

static void keep(srv_step *e, const plan *p, const eng_result *r, const rep_summary *sm)
{
    e->dur = step_time(p, r);
    e->nranks = p->nranks;
    e->rank = cp_xcalloc((size_t)p->nranks, sizeof *e->rank);
    for (int rk = 0; rk < p->nranks; rk++) {
        srv_rank *o = &e->rank[rk];
        const rep_rank *rr = &sm->ranks[rk];
        o->compute_s = rr->compute_s;
        o->comm_s = rr->comm_s;
        o->overlap_s = rr->overlap_s;
        o->peak_bytes = rr->peak_bytes;
        memcpy(o->peak_by_cat, rr->peak_by_cat, sizeof o->peak_by_cat);
    }
    e->cost = sm->cost;
    e->events = sm->events;
    e->messages = sm->messages;
    e->execs = sm->execs;
    e->iters_simulated = sm->iters_simulated;
    e->iters_replayed = sm->iters_replayed;
}

/* Keep the plan and events of step e for the trace (p moves into e). */
static void keep_events(srv_step *e, plan *p, const eng_result *r)
{
    e->p = malloc(sizeof *e->p);
    if (!e->p)
        abort();
    *e->p = *p;
    memset(p, 0, sizeof *p);
    e->ev = eng_all_events(r, &e->nev);
    for (size_t i = 0; i < e->nev; i++) {
        e->ev[i].t0 -= r->t0;
        e->ev[i].t1 -= r->t0;
    }
}

/* The step's time in plan p's run r: from its start to the last rank's end. */
static double step_time(const plan *p, const eng_result *r)
{
    double end = r->t0;
    for (int rk = 0; rk < p->nranks; rk++)
        if (r->step_end[rk] > end)
            end = r->step_end[rk];
    return end - r->t0;
}

/* Build, price and simulate batch bt (a split ring step as `ring`, PR_NONE:
 * as the scenario says) into *p, *r and its summary *sm; on failure
 * nothing is left to free. */
static int simulate(srv_steps *st, const sc_batch *bt, plan_ring ring, plan *p,
                    eng_result *r, rep_summary *sm, cp_err *err)
{
    build_step_plan_ring(st->s, bt, st->lockstep, ring, p); /* folded as built */
    cost_price_plan(st->cost, p, st->s->graph != GRAPH_EAGER);
    st->one_req = (wl_request){.prompt_tokens = 1, .cls = -1};
    /* with simulation.replay (shortcuts that keep the times to rounding), a
     * step whose ranks run as one is evaluated in unison (sim/engine/unison.c),
     * but for those the trace shows: their records keep SimGrid's order */
    eng_opts eo = st->eo;
    eo.memo = st->eo.replay && st->n >= SRV_FULL_STEPS ? st->memo : NULL;
    int rc = eng_run(p, &eo, r, err);
    if (rc == 0)
        rc = rep_summarize(&st->one, p, r, sm, err);
    if (rc != 0) {
        eng_result_free(r);
        plan_free(p);
    }
    return rc;
}

int srv_step_get(srv_steps *st, const sc_batch *bt, cp_err *err)
{
    uint64_t shape;
    double ctx;
    shape_of(bt, st->reuse, &shape, &ctx);
    int best = srv_index_find(&st->index, shape, ctx, st->reuse);
    if (best >= 0) {
        st->reused += st->v[best].ctx != ctx;
        return best;
    }

    /* ring_select: simulate: a split ring step is simulated as both rings,
     * the faster kept (ties: pass-KV) */
    int both = 0;
    if (st->s->par.ring_select == RS_SIMULATE && bt->split && bt->n == 1)
        both = build_step_ring(st->s, bt->seq[0].tokens, bt->seq[0].prefix, PR_NONE) != PR_NONE;
    plan p;
    eng_result r;
    rep_summary sm;
    int rc = simulate(st, bt, both ? PR_PASS_KV : PR_NONE, &p, &r, &sm, err);
    if (rc == 0 && both) {
        plan q;
        eng_result rq;
        rep_summary smq;
        rc = simulate(st, bt, PR_PASS_Q, &q, &rq, &smq, err);
        if (rc == 0) {
            double dkv = step_time(&p, &r), dq = step_time(&q, &rq);
            int q_wins = ex_faster_ring(dkv, dq) == PR_PASS_Q;
            st->wall_s += q_wins ? r.wall_s : rq.wall_s; /* the loser's time */
            plan *lose_p = q_wins ? &p : &q;
            eng_result *lose_r = q_wins ? &r : &rq;
            rep_summary *lose_s = q_wins ? &sm : &smq;
            rep_summary_free(lose_s);
            eng_result_free(lose_r);
            plan_free(lose_p);
            if (q_wins) {
                p = q;
                r = rq;
                sm = smq;
            }
        }
    }
    if (rc != 0)
        return -1;
    st->v = cp_grow(st->v, &st->cap, (size_t)st->n + 1, sizeof *st->v);
    srv_step *e = &st->v[st->n++];
    memset(e, 0, sizeof *e);
    e->shape = shape;
    e->ctx = ctx;
    e->split = bt->split;
    e->ring = p.step_ring ? p.step_ring[0] : PR_NONE;
    e->padded = p.padded_tokens;
    e->launch = p.launch;
    e->kernels = plan_kernels(&p, 0);
    keep(e, &p, &r, &sm);
    srv_index_add(&st->index, shape, ctx, st->n - 1);
    if (st->n <= SRV_FULL_STEPS)
        keep_events(e, &p, &r);
    st->wall_s += r.wall_s;
    rep_summary_free(&sm);
    eng_result_free(&r);
    plan_free(&p);
    return st->n - 1;
}
