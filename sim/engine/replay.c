/* replay: copies of repeated regions replayed instead of simulated
 * (engine.h; plan.h for regions).
 *
 * Cuts.  The cut before copy k of a region completes at time tc, when the
 * last element before copy k (in sequence order) has ended on every rank.
 * Some elements of copy k may have started before: ranks that finished
 * early go on.  The cut is valid when those early starts are compute and
 * memory ops of copy k only, each on a rank whose own elements before the
 * cut had all ended when it started (so it shared its rank with nothing of
 * the copy before, and computing alone it slows no link: interference needs
 * both streams busy).  At a valid cut no communication is in flight, the
 * early ops ran undisturbed, and every other element of copy k whose
 * stream predecessor and dependencies lie before the cut became ready at
 * tc: had it been ready earlier it would have started, since only the
 * host's issue holds back a ready op.  So the state at a valid cut is its
 * signature: which elements started early on which rank, and when (and
 * ended) relative to tc.  Starts within rp_eps of tc are left out: they are
 * the same instant.
 *
 * Replay.  Copy k replays copy j, every time shifted to k's entry cut,
 * layers by k - j copies, when
 *   - cuts j, j + p and k are valid with equal signatures (within rp_eps),
 *     copies j .. j + p - 1 were simulated, each between valid cuts (so
 *     they ran from that state back to it and their events depend on
 *     nothing else: a copy's early ops touched no rank of the copy before
 *     still running);
 *   - either no op of copies j .. j + p waited for the host to issue it,
 *     and the host's issue offsets grow from copy j to copy k by no more
 *     than the shift, so they do not hold copy k's ops back either;
 *   - or one did (a host-bound cycle: short kernels, or a ring whose hops
 *     are many and short, as the 1,024-rank zigzag ring at 128K), and the
 *     host's issue times are then part of the state: the issue offsets of
 *     copies j + p and k grow from copy j's by exactly their cuts' distance
 *     (within rp_eps), so every issue time of copy k is copy j's shifted
 *     and holds its op back exactly as long.
 * The cut after a replayed copy is then in copy j + 1's state, so copy
 * k + 1 replays copy j + 1, and so on round the cycle of p copies, until
 * the region ends or the issue check fails (for a host-bound cycle,
 * exactly the shift again; when it fails, the copy before, whose early
 * starts' issue times matched, simulates too: the exit state's early
 * starts may have waited for the host, whose issue then differs).  A cycle
 * of one copy (p = 1) is looked for first; longer ones are the shortest
 * closing at cut k.  At the
 * region's end the ops that follow are not copy j + 1's: none may have been
 * able to start before the replay ends (from its predecessor's and
 * dependencies' end times and its issue time), else the last copy is
 * simulated.  Every stream skips the replayed ops; the copy simulated next
 * starts from copy j + 1's entry state: each early op at its offset, every
 * other op from the replay's end.  The early starts of copy k that preceded
 * the decision give way to the replay (their records are dropped).
 *
 * Records.  A simulated element makes one record in its rank's own block
 * (events.h).  The first replay from copy j copies j's records of every
 * rank into a shared block, times relative to j's entry cut; each replayed
 * copy is then one span of that block per rank, shifted to its own entry
 * cut and layers, so 123 replayed layers of 1,024 ranks cost spans, not
 * records.  The early starts' records that give way to a replay are the
 * tail of their rank's own records, closed up before the spans go in.
 *
 * Exactness.  The replayed times are the reference's plus the shift, where
 * an unrolled run adds up the same durations in another order: they agree
 * to rounding (a few ulps of the clock; at most 8e-13 s on the bundled
 * workloads), and tests/replay.sh compares the outputs of every bundled
 * workload with the unrolled run's.  With eng_opts.replay_tol_s > 0
 * (simulation.replay_tolerance_s) signatures equal within that many seconds
 * count as equal: an approximation, for rings whose cuts never repeat to
 * rounding (replay.sh bounds its TTFT error on one).
 *
 * Which rings repeat, and why some do not (measured: striped splits give
 * each SP rank its own attention cost), is sim/README.md "What replays".
 * The closest two cuts came without replaying is kept
 * (eng_result.replay_near_s) for the run line's hint.
 */
#include "sim/engine/engine_int.h"

#include <math.h>
#include <simgrid/engine.h>
#include <simgrid/semaphore.h>
#include <stdlib.h>
#include <string.h>

/* Tolerance on same-instant times: the clock's rounding after many adds
 * (SimGrid keeps seconds as doubles; 1e-12 relative is ~4,500 ulps, far
 * below the nanosecond the outputs print). */
static double rp_eps(double t)
{
    return 1e-12 * (1.0 + fabs(t));
}

/* A region in one program: where its copies lie in the sequence and on
 * each stream. */
typedef struct rp_preg {
    uint32_t a0, len;           /* sequence index of copy 0's first element;
                                   elements per copy */
    uint32_t base[ST_COUNT];    /* stream positions before copy 0 */
    uint32_t per[ST_COUNT];     /* stream elements per copy */
    uint32_t first, nops;       /* its ops (plan_region) */
    int32_t layer_step;
    uint32_t before;            /* elements of the program's regions before a0 */
} rp_preg;

/* An op of copy k that started before cut k completed (an early start):
 * element a_k + off of the rank, its start and end (INFINITY: running)
 * relative to the cut's completion. */
typedef struct rp_sig {
    int rank;
    uint32_t off;
    double s, e;
    int serial;                 /* of the cut it started early for */
} rp_sig;

/* The last end (relative to the entry cut) of a reference copy's events
 * of one rank and step. */
typedef struct rp_stepend {
    int rank, step;
    double t1;
} rp_stepend;

/* One copy of a region in this run. */
typedef struct rp_copy {
    double tc;                  /* when its entry cut completed */
    uint8_t cut_done, clean, issue_bound, replayed;
    uint8_t shadow;             /* its end times are copy `ref`'s moved to tc_shadow
                                   (replayed, or about to be) */
    uint32_t ref;
    double tc_shadow;
    rp_sig *sig;                /* its entry cut's early starts before tc - eps, by
                                   rank and element: the cut's state */
    size_t nsig;
    size_t *ev_lo, *ev_hi;      /* [nranks]: its events lie in the rank's own
                                   block's ev[ev_lo, ev_hi) (events.h) */
    size_t *mem_lo, *mem_hi;
    long msgs, execs;           /* counted for its ops */
    /* as a reference: its events and memory events in a shared block of
     * the result, times relative to its entry cut, rank r's at
     * [lo, lo + n) and [mlo, mlo + mn); the last end per rank and step */
    int built;
    uint32_t block;
    uint32_t *lo, *n, *mlo, *mn;
    rp_stepend *se;
    size_t nse;
    double t1max;
} rp_copy;

/* A record pushed by an early start of the pending cut. */
typedef struct rp_early {
    int rank;
    int mem;                    /* 1: the rank's mem[rec], 0: its ev[rec] */
    size_t rec;
    int execs;                  /* (an early op computes: it sends no message) */
} rp_early;

static struct {
    int on;
    int nreg;
    uint32_t *repeat;           /* [nreg] copies of each region */
    rp_preg *pr;                /* [nprogs * nreg] */
    rp_copy **cp;               /* [nreg][repeat] */
    int total;                  /* copies of all regions */
    int *cbase;                 /* [nreg]: copies of the regions before (rank_st.end_cp) */
    /* the pending cut: before copy k of region R (R == nreg: none) */
    int R;
    uint32_t k;
    int serial;                 /* counts cuts armed (tokens of early starts) */
    int past;                   /* ranks past it */
    int bad;                    /* something at or after it started that may not */
    rp_early *er;               /* records of early starts */
    size_t ner, cer;
    double *xend;               /* expected ends of early compute still running */
    size_t nx, cx;
    rp_sig *cur;                /* early starts of the pending cut */
    size_t ncur, ccur;
    double hold;                /* end of the last replay */
    double near;                /* eng_result.replay_near_s */
    int replayed;
} rp;

int rp_on(void)
{
    return rp.on;
}

static const rp_preg *preg_of(const rank_st *rs, int R)
{
    return &rp.pr[(size_t)(rs->ix - eng.ix) * (size_t)rp.nreg + (size_t)R];
}

/* The region of element e of rs's program, -1 outside any; outside, *slot
 * is its index among the elements outside regions (rank_st.end_nr).  From
 * the regions' spans (sorted and disjoint, plan.h), not a table per
 * element: the expanded sequence of a 1,024-rank ring holds 15 M of them. */
static int region_of(const rank_st *rs, uint32_t e, uint32_t *slot)
{
    const rp_preg *q = &rp.pr[(size_t)(rs->ix - eng.ix) * (size_t)rp.nreg];
    int lo = 0, hi = rp.nreg; /* the last region whose span starts at or before e */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (q[mid].a0 <= e)
            lo = mid + 1;
        else
            hi = mid;
    }
    int R = lo - 1;
    if (R >= 0 && e < q[R].a0 + q[R].len * rp.repeat[R])
        return R;
    *slot = R < 0 ? e : e - (q[R].before + q[R].len * rp.repeat[R]);
    return -1;
}

/* When element e of rs ended (0 while it has not): stored, or for a copy
 * replayed from copy j, j's end moved to the copy's entry cut. */
static double end_of(const rank_st *rs, uint32_t e)
{
    uint32_t slot = 0;
    int R = region_of(rs, e, &slot);
    if (R < 0)
        return rs->end_nr[slot];
    const rp_preg *q = preg_of(rs, R);
    uint32_t c = rs->ix->v.iter[e], off = (e - q->a0) % q->len;
    const rp_copy *C = &rp.cp[R][c];
    if (C->shadow)
        return C->tc_shadow +
               (end_of(rs, q->a0 + C->ref * q->len + off) - rp.cp[R][C->ref].tc);
    const double *v = rs->end_cp[rp.cbase[R] + (int)c];
    return v ? v[off] : 0;
}

static void arm(int R, uint32_t k);

/* ---- set-up ----------------------------------------------------------- */

void rp_setup(void)
{
    const plan *p = eng.p;
    memset(&rp, 0, sizeof rp);
    if (p->nprogs == 0 || p->progs[0].nregions == 0)
        return;
    int nreg = (int)p->progs[0].nregions;
    for (int g = 0; g < p->nprogs; g++) {
        if ((int)p->progs[g].nregions != nreg)
            return;
        for (int R = 0; R < nreg; R++)
            if (p->progs[g].regions[R].repeat != p->progs[0].regions[R].repeat)
                return;
    }
    for (int R = 0; R < nreg; R++)
        rp.total += (int)p->progs[0].regions[R].repeat;
    if (!eng.o->replay)
        return;
    rp.on = 1;
    rp.nreg = nreg;
    rp.repeat = calloc((size_t)nreg, sizeof *rp.repeat);
    rp.pr = calloc((size_t)p->nprogs * (size_t)nreg, sizeof *rp.pr);
    rp.cp = calloc((size_t)nreg, sizeof *rp.cp);
    rp.cbase = calloc((size_t)nreg, sizeof *rp.cbase);
    if (!rp.repeat || !rp.pr || !rp.cp || !rp.cbase)
        abort();
    for (int R = 0; R < nreg; R++) {
        rp.cbase[R] = R > 0 ? rp.cbase[R - 1] + (int)rp.repeat[R - 1] : 0;
        rp.repeat[R] = p->progs[0].regions[R].repeat;
        rp.cp[R] = calloc(rp.repeat[R], sizeof **rp.cp);
        if (!rp.cp[R])
            abort();
    }
    for (int g = 0; g < p->nprogs; g++) {
        const plan_prog *pg = &p->progs[g];
        prog_index *ix = &eng.ix[g];
        ix->nnr = 0;
        uint32_t inside = 0; /* region elements so far */
        for (uint32_t e = 0; e < ix->v.n; e++) {
            uint32_t op = ix->v.real[e];
            int in = 0;
            for (int R = 0; R < nreg && !in; R++) {
                const plan_region *rg = &pg->regions[R];
                if (op < rg->first || op >= rg->first + rg->nops)
                    continue;
                in = 1;
                rp_preg *q = &rp.pr[(size_t)g * (size_t)nreg + (size_t)R];
                if (op == rg->first && ix->v.iter[e] == 0) {
                    q->a0 = e;
                    q->len = rg->nops;
                    q->first = rg->first;
                    q->nops = rg->nops;
                    q->layer_step = rg->layer_step;
                    q->before = inside;
                }
            }
            inside += (uint32_t)in;
            ix->nnr += (uint32_t)!in;
        }
        for (int R = 0; R < nreg; R++) {
            rp_preg *q = &rp.pr[(size_t)g * (size_t)nreg + (size_t)R];
            for (uint32_t e = 0; e < q->a0 + q->len; e++) {
                int s = pg->ops[ix->v.real[e]].stream;
                if (e < q->a0)
                    q->base[s]++;
                else
                    q->per[s]++;
            }
        }
    }
    for (int r = 0; r < p->nranks; r++) {
        rank_st *rs = &eng.ranks[r];
        rs->end_nr = calloc((size_t)rs->ix->nnr + 1, sizeof *rs->end_nr);
        rs->end_cp = calloc((size_t)rp.total + 1, sizeof *rs->end_cp);
        if (!rs->end_nr || !rs->end_cp)
            abort();
    }
    arm(0, 0);
}

void rp_free(void)
{
    for (int r = 0; rp.on && r < eng.p->nranks; r++) {
        rank_st *rs = &eng.ranks[r];
        for (int c = 0; c < rp.total; c++)
            free(rs->end_cp[c]);
        free(rs->end_cp);
        free(rs->end_nr);
        rs->end_cp = NULL;
        rs->end_nr = NULL;
    }
    for (int R = 0; R < rp.nreg; R++) {
        for (uint32_t k = 0; k < rp.repeat[R]; k++) {
            free(rp.cp[R][k].lo);
            free(rp.cp[R][k].n);
            free(rp.cp[R][k].mlo);
            free(rp.cp[R][k].mn);
            free(rp.cp[R][k].se);
            free(rp.cp[R][k].sig);
            free(rp.cp[R][k].ev_lo);
            free(rp.cp[R][k].ev_hi);
            free(rp.cp[R][k].mem_lo);
            free(rp.cp[R][k].mem_hi);
        }
        free(rp.cp[R]);
    }
    free(rp.cp);
    free(rp.repeat);
    free(rp.cbase);
    free(rp.pr);
    free(rp.er);
    free(rp.xend);
    free(rp.cur);
    memset(&rp, 0, sizeof rp);
}

/* ---- cuts --------------------------------------------------------------- */

/* Stream position of the first element at or after cut (R, k). */
static uint32_t cut_pos(const rp_preg *q, int s, uint32_t k)
{
    return q->base[s] + k * q->per[s];
}

/* Whether every element of rs before cut (R, k) has ended. */
static int passed(const rank_st *rs, int R, uint32_t k)
{
    const rp_preg *q = preg_of(rs, R);
    for (int s = 0; s < ST_COUNT; s++)
        if (rs->done[s] < cut_pos(q, s, k))
            return 0;
    return 1;
}

/* Whether some stream of rs has started an element at or after the cut. */
static int beyond(const rank_st *rs, int R, uint32_t k)
{
    const rp_preg *q = preg_of(rs, R);
    for (int s = 0; s < ST_COUNT; s++) {
        uint32_t c = cut_pos(q, s, k);
        if (rs->done[s] > c || (rs->started[s] && rs->ix->pos[rs->at[s]] >= c))
            return 1;
    }
    return 0;
}

static void cut_complete(double t);

/* Every rank's count of events (or memory events) now, into *at. */
static void snap(size_t **at, int mem)
{
    int n = eng.p->nranks;
    if (!*at && !(*at = malloc((size_t)n * sizeof **at)))
        abort();
    for (int r = 0; r < n; r++)
        (*at)[r] = mem ? eng.res->blk[r].nmem : eng.res->blk[r].nev;
}

static void arm(int R, uint32_t k)
{
    rp.R = R;
    rp.k = k;
    rp.serial++;
    rp.past = 0;
    rp.bad = 0;
    rp.ner = rp.nx = rp.ncur = 0;
    if (R >= rp.nreg)
        return;
    rp_copy *c = &rp.cp[R][k];
    snap(&c->ev_lo, 0);
    snap(&c->mem_lo, 1);
    for (int r = 0; r < eng.p->nranks; r++) {
        rank_st *rs = &eng.ranks[r];
        rs->past = (uint8_t)passed(rs, R, k);
        rp.past += rs->past;
        if (beyond(rs, R, k))
            rp.bad = 1;
    }
    if (rp.past == eng.p->nranks) {
        double now = simgrid_get_clock();
        cut_complete(now > rp.hold ? now : rp.hold);
    }
}

/* Arm the cut after the pending one. */
static void next_cut(void)
{
    if (rp.k + 1 < rp.repeat[rp.R])
        arm(rp.R, rp.k + 1);
    else
        arm(rp.R + 1, 0);
}

int rp_started(rank_st *rs, uint32_t i, double t)
{
    if (rp.R >= rp.nreg)
        return 0;
    const rp_preg *q = preg_of(rs, rp.R);
    uint32_t a = q->a0 + rp.k * q->len;
    if (i < a)
        return 0;
    const plan_op *o = &rs->pg->ops[rs->ix->v.real[i]];
    if (i >= a + q->len || (o->kind != OPK_COMPUTE && o->kind != OPK_MEM))
        rp.bad = 1;
    if (o->kind == OPK_COMPUTE && o->cost_s > 0) {
        rp.xend = cp_grow(rp.xend, &rp.cx, rp.nx + 1, sizeof *rp.xend);
        rp.xend[rp.nx++] = t + o->cost_s;
    }
    rp.cur = cp_grow(rp.cur, &rp.ccur, rp.ncur + 1, sizeof *rp.cur);
    rp.cur[rp.ncur++] = (rp_sig){rs->rank, i - a, t, INFINITY, rp.serial};
    return (int)rp.ncur;
}

void rp_issue_bound(const rank_st *rs, uint32_t i)
{
    uint32_t slot;
    int R = region_of(rs, i, &slot);
    if (R >= 0)
        rp.cp[R][rs->ix->v.iter[i]].issue_bound = 1;
}

void rp_ended(rank_st *rs, uint32_t i, double t, long msgs, int execs, int early, int mem,
              size_t rec)
{
    uint32_t slot = 0;
    int R = region_of(rs, i, &slot);
    if (R < 0) {
        rs->end_nr[slot] = t;
    } else {
        const rp_preg *q = preg_of(rs, R);
        double **v = &rs->end_cp[rp.cbase[R] + (int)rs->ix->v.iter[i]];
        if (!*v && !(*v = calloc(q->len, sizeof **v)))
            abort();
        (*v)[(i - q->a0) % q->len] = t;
    }
    if (R >= 0) {
        rp_copy *c = &rp.cp[R][rs->ix->v.iter[i]];
        c->msgs += msgs;
        c->execs += execs;
    }
    if (early && (size_t)early <= rp.ncur && rp.cur[early - 1].serial == rp.serial) {
        rp.cur[early - 1].e = t;
        rp.er = cp_grow(rp.er, &rp.cer, rp.ner + 1, sizeof *rp.er);
        rp.er[rp.ner++] = (rp_early){rs->rank, mem, rec, execs};
    }
}

void rp_done(rank_st *rs)
{
    if (rp.R >= rp.nreg || rs->past || !passed(rs, rp.R, rp.k))
        return;
    rs->past = 1;
    if (++rp.past == eng.p->nranks)
        cut_complete(simgrid_get_clock());
}

/* ---- replay ------------------------------------------------------------- */

/* Whether a record of rank's op `op` at effective layer `layer` belongs to
 * copy j of region R. */
static int in_copy(int rank, uint32_t op, int32_t layer, int R, uint32_t j)
{
    const rank_st *rs = &eng.ranks[rank];
    const rp_preg *q = preg_of(rs, R);
    return op >= q->first && op < q->first + q->nops &&
           layer == rs->pg->ops[op].layer + (int32_t)j * q->layer_step;
}

/* A zeroed count per rank. */
static uint32_t *counts(void)
{
    uint32_t *v = calloc((size_t)eng.p->nranks + 1, sizeof *v);
    if (!v)
        abort();
    return v;
}

/* The events and memory events of copy j of region R, from the ranks' own
 * records, into a shared block of the result, their times relative to its
 * entry cut. */
static void build_ref(int R, uint32_t j)
{
    rp_copy *c = &rp.cp[R][j];
    if (c->built)
        return;
    c->built = 1;
    eng_result *res = eng.res;
    c->block = eng_new_block(res);
    c->lo = counts();
    c->n = counts();
    c->mlo = counts();
    c->mn = counts();
    c->t1max = -INFINITY;
    size_t cse = 0;
    for (int r = 0; r < eng.p->nranks; r++) {
        const rank_st *rs = &eng.ranks[r];
        /* (closing up early starts may have shortened the rank's records
         * since ev_hi was taken) */
        size_t hi = c->ev_hi[r] < res->blk[r].nev ? c->ev_hi[r] : res->blk[r].nev;
        size_t mhi = c->mem_hi[r] < res->blk[r].nmem ? c->mem_hi[r] : res->blk[r].nmem;
        c->lo[r] = (uint32_t)res->blk[c->block].nev;
        for (size_t x = c->ev_lo[r]; x < hi; x++) {
            eng_event e = res->blk[r].ev[x];
            if (e.rank < 0 || !in_copy(e.rank, e.op, e.layer, R, j))
                continue;
            e.t0 -= c->tc;
            e.t1 -= c->tc;
            eng_block_event(res, c->block, &e);
            if (e.t1 > c->t1max)
                c->t1max = e.t1;
            int step = rs->pg->ops[e.op].step;
            if (step < 0)
                continue;
            rp_stepend *last = c->nse ? &c->se[c->nse - 1] : NULL;
            if (last && last->rank == r && last->step == step) {
                if (e.t1 > last->t1)
                    last->t1 = e.t1;
            } else {
                c->se = cp_grow(c->se, &cse, c->nse + 1, sizeof *c->se);
                c->se[c->nse++] = (rp_stepend){r, step, e.t1};
            }
        }
        c->n[r] = (uint32_t)res->blk[c->block].nev - c->lo[r];
        c->mlo[r] = (uint32_t)res->blk[c->block].nmem;
        for (size_t x = c->mem_lo[r]; x < mhi; x++) {
            eng_mem m = res->blk[r].mem[x];
            if (m.rank < 0 || !in_copy(m.rank, m.op, m.layer, R, j))
                continue;
            m.t -= c->tc;
            eng_block_mem(res, c->block, &m);
        }
        c->mn[r] = (uint32_t)res->blk[c->block].nmem - c->mlo[r];
    }
}

/* Whether the host issues every op of copy m at most d later than its twin
 * in copy j (in every program); with `same`, exactly d later (within
 * rp_eps, or the tolerance): the host's issue times are then copy j's
 * shifted as every other time is. */
static int issue_ok(int R, uint32_t m, uint32_t j, double d, int same)
{
    double tol = same ? fmax(rp_eps(d), eng.o->replay_tol_s) : rp_eps(d);
    for (int g = 0; g < eng.p->nprogs; g++) {
        const rp_preg *q = &rp.pr[(size_t)g * (size_t)rp.nreg + (size_t)R];
        const double *off = eng.ix[g].issue_off;
        for (uint32_t x = 0; x < q->len; x++) {
            double grow_s = off[q->a0 + m * q->len + x] - off[q->a0 + j * q->len + x];
            if (grow_s > d + tol || (same && grow_s < d - tol))
                return 0;
        }
    }
    return 1;
}

/* Copy m's end times on every rank are copy j's moved to tc (end_of). */
static void shadow(int R, uint32_t m, uint32_t j, double tc)
{
    rp_copy *c = &rp.cp[R][m];
    c->shadow = 1;
    c->ref = j;
    c->tc_shadow = tc;
}

/* Whether, with copies before m_end of region R replayed to end at T, no
 * stream's first op from copy m_end on could have started before T. */
static int exit_ok(int R, uint32_t m_end, double T)
{
    for (int r = 0; r < eng.p->nranks; r++) {
        const rank_st *rs = &eng.ranks[r];
        const prog_index *ix = rs->ix;
        const rp_preg *q = preg_of(rs, R);
        uint32_t a = q->a0 + m_end * q->len;
        const double *step_start = eng.res->step_start + (size_t)r * eng.res->nsteps;
        for (int s = 0; s < ST_COUNT; s++) {
            uint32_t pos = cut_pos(q, s, m_end);
            if (pos >= ix->nlist[s])
                continue;
            uint32_t x = ix->list[s][pos];
            const plan_op *o = &rs->pg->ops[ix->v.real[x]];
            if (o->kind == OPK_STEP || o->step > rs->started_step)
                continue; /* waits for every stream, or for its step */
            double lb = pos > 0 ? end_of(rs, ix->list[s][pos - 1]) : -INFINITY;
            int later = 0;
            for (uint32_t d = ix->v.dep_first[x]; d < ix->v.dep_first[x + 1]; d++) {
                uint32_t e = ix->v.deps[d];
                if (e >= a)
                    later = 1; /* waits for an op that starts after T */
                else if (end_of(rs, e) > lb)
                    lb = end_of(rs, e);
            }
            if (later)
                continue;
            double issue = (o->step >= 0 ? step_start[o->step] : 0.0) + ix->issue_off[x];
            if (issue > lb)
                lb = issue;
            if (lb < T - rp_eps(T))
                return 0;
        }
    }
    return 1;
}

/* Copy m of region R as copy j, its entry cut at tc: every rank reads
 * copy j's records shifted (events.h). */
static void replay_copy(int R, uint32_t m, uint32_t j, double tc)
{
    eng_result *res = eng.res;
    const rp_copy *J = &rp.cp[R][j];
    for (int r = 0; r < eng.p->nranks; r++) {
        const rp_preg *q = preg_of(&eng.ranks[r], R);
        int32_t dl = (int32_t)(m - j) * q->layer_step;
        int32_t ds = (int32_t)(m - j) * (int32_t)q->len; /* copy m's positions */
        eng_add_span(res, r, 0, (eng_span){tc, J->block, J->lo[r], J->n[r], dl, 0, 0});
        eng_add_span(res, r, 1, (eng_span){tc, J->block, J->mlo[r], J->mn[r], dl, 0, ds});
    }
    /* (a + tc rounds monotonically in a: the largest shifted end is the
     * largest end shifted) */
    for (size_t x = 0; x < J->nse; x++) {
        double *se = &res->step_end[(size_t)J->se[x].rank * res->nsteps + J->se[x].step];
        if (J->se[x].t1 + tc > *se)
            *se = J->se[x].t1 + tc;
    }
    if (J->t1max + tc > res->end_s)
        res->end_s = J->t1max + tc;
    res->messages += J->msgs;
    res->execs += J->execs;
    rp_copy *c = &rp.cp[R][m];
    c->replayed = c->cut_done = c->clean = 1;
    rp.replayed++;
}

/* Rank r's own records from ev_lo and mem_lo on without those marked rank
 * -1 (the tail of its sequence: nothing replayed since). */
static void close_up(int r, size_t ev_lo, size_t mem_lo)
{
    eng_block *b = &eng.res->blk[r];
    size_t n = ev_lo, mn = mem_lo;
    for (size_t x = ev_lo; x < b->nev; x++)
        if (b->ev[x].rank >= 0)
            b->ev[n++] = b->ev[x];
    for (size_t x = mem_lo; x < b->nmem; x++)
        if (b->mem[x].rank >= 0)
            b->mem[mn++] = b->mem[x];
    eng_cut_own(eng.res, r, n, mn);
}

static int sig_cmp(const void *x, const void *y)
{
    const rp_sig *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank - b->rank;
    return (a->off > b->off) - (a->off < b->off);
}

/* Whether two cuts are in the same state: the same early starts at the
 * same offsets from their completion. */
static int sig_eq(const rp_copy *a, const rp_copy *b)
{
    if (a->nsig != b->nsig)
        return 0;
    for (size_t x = 0; x < a->nsig; x++) {
        const rp_sig *u = &a->sig[x], *v = &b->sig[x];
        double tol = eng.o->replay_tol_s;
        if (u->rank != v->rank || u->off != v->off ||
            fabs(u->s - v->s) > fmax(rp_eps(u->s), tol) || (isinf(u->e) != isinf(v->e)) ||
            (!isinf(u->e) && fabs(u->e - v->e) > fmax(rp_eps(u->e), tol)))
            return 0;
    }
    return 1;
}

/* How far apart two cuts' early starts are (s): the largest difference of
 * their starts and ends, INFINITY unless they are the same ops. */
static double sig_dist(const rp_copy *a, const rp_copy *b)
{
    if (a->nsig != b->nsig)
        return INFINITY;
    double d = 0;
    for (size_t x = 0; x < a->nsig; x++) {
        const rp_sig *u = &a->sig[x], *v = &b->sig[x];
        if (u->rank != v->rank || u->off != v->off || isinf(u->e) != isinf(v->e))
            return INFINITY;
        d = fmax(d, fabs(u->s - v->s));
        if (!isinf(u->e))
            d = fmax(d, fabs(u->e - v->e));
    }
    return d;
}

/* Whether copy c of region R was simulated from a valid entry cut to a
 * valid exit cut: a reference. */
static int simulated_clean(int R, int64_t c)
{
    const rp_copy *J = &rp.cp[R][c], *X = &rp.cp[R][c + 1];
    return !J->replayed && J->cut_done && J->clean && X->cut_done && X->clean;
}

/* Whether an op of copies j .. j + p (the cycle and the copy after it,
 * whose early starts are the exit state) waited for the host to issue it. */
static int host_bound(int R, int64_t j, uint32_t p)
{
    for (int64_t c = j; c <= j + (int64_t)p; c++)
        if (rp.cp[R][c].issue_bound)
            return 1;
    return 0;
}

/* Whether copies j .. j + p - 1 can be the cycle copy k replays: cut k in
 * cut j's state and cut j + p too.  The state is the early starts
 * (signatures) and, when the host's issue held an op of the cycle back,
 * the host's issue times relative to the cut as well: copy j + p's and
 * copy k's issue offsets then grow from copy j's by exactly their cuts'
 * distance (issue_ok's `same`). */
static int cycle_ok(int R, uint32_t k, int64_t j, uint32_t p)
{
    const rp_copy *J = &rp.cp[R][j], *X = &rp.cp[R][j + p], *K = &rp.cp[R][k];
    if (!sig_eq(J, X) || !sig_eq(J, K))
        return 0;
    return !host_bound(R, j, p) ||
           (issue_ok(R, (uint32_t)j + p, (uint32_t)j, X->tc - J->tc, 1) &&
            issue_ok(R, k, (uint32_t)j, K->tc - J->tc, 1));
}

/* Keep d (seconds) when it is the closest two cuts came so far. */
static void near_miss(double d)
{
    if (d < INFINITY && (rp.near == 0 || d < rp.near))
        rp.near = d;
}

/* The reference cycle for copy k: copies j .. j + *period - 1, simulated,
 * whose entry cut j and exit cut j + *period are in copy k's entry state
 * (-1: none).  From a state the run goes on as it went from there before,
 * so copy k + i is copy j + i % period.  Period 1 (a copy leading from a
 * state back into it) is looked for first, at every j; then the shortest
 * cycle closing at k (cut k in cut j's state, copies j .. k - 1 all
 * references): rings whose ranks do unequal work settle into cycles of
 * more than one layer (the 16-node striped pass-Q ring at 128K: two).
 * The closest miss is kept for the run line's hint. */
static int64_t reference_copy(int R, uint32_t k, uint32_t *period)
{
    const rp_copy *K = &rp.cp[R][k];
    *period = 1;
    for (int64_t j = (int64_t)k - 1; j >= 0; j--) {
        const rp_copy *J = &rp.cp[R][j], *X = &rp.cp[R][j + 1];
        if (!simulated_clean(R, j))
            continue;
        if (cycle_ok(R, k, j, 1))
            return j;
        near_miss(fmax(sig_dist(J, X), sig_dist(J, K)));
    }
    for (int64_t j = (int64_t)k - 2; j >= 0 && simulated_clean(R, j + 1); j--) {
        if (!simulated_clean(R, j))
            continue;
        if (cycle_ok(R, k, j, (uint32_t)(k - j))) {
            *period = (uint32_t)(k - j);
            return j;
        }
        near_miss(sig_dist(&rp.cp[R][j], K));
    }
    return -1;
}

/* Copy k's early starts give way to the replay: each rank's records since
 * the cut was armed, closed up. */
static void drop_early_records(const rp_copy *K)
{
    for (size_t x = 0; x < rp.ner; x++) {
        eng_block *b = &eng.res->blk[rp.er[x].rank];
        if (rp.er[x].mem)
            b->mem[rp.er[x].rec].rank = -1;
        else
            b->ev[rp.er[x].rec].rank = -1;
        eng.res->execs -= rp.er[x].execs;
    }
    if (rp.ner)
        for (int r = 0; r < eng.p->nranks; r++)
            close_up(r, K->ev_lo[r], K->mem_lo[r]);
}

/* Every rank's streams hold until tc and skip what was replayed (up to
 * cut m_end). */
static void skip_replayed(int R, uint32_t m_end, double tc)
{
    for (int r = 0; r < eng.p->nranks; r++) {
        rank_st *rs = &eng.ranks[r];
        const rp_preg *q = preg_of(rs, R);
        for (int s = 0; s < ST_COUNT; s++) {
            uint32_t c = cut_pos(q, s, m_end);
            rs->hold[s] = tc;
            if (rs->done[s] < c)
                rs->done[s] = c;
            if (rs->skip[s] < c)
                rs->skip[s] = c;
        }
    }
}

/* Copy m_end simulates from its entry cut at tc, in the state of copy j's
 * exit: its early starts start as early. */
static void resume_after(int R, uint32_t m_end, uint32_t j, double tc)
{
    const rp_copy *X = &rp.cp[R][j + 1];
    rp_copy *c = &rp.cp[R][m_end];
    for (size_t x = 0; x < X->nsig; x++) {
        rank_st *rs = &eng.ranks[X->sig[x].rank];
        const rp_preg *q = preg_of(rs, R);
        uint32_t e = q->a0 + m_end * q->len + X->sig[x].off;
        int st = rs->pg->ops[rs->ix->v.real[e]].stream;
        if (rs->ix->pos[e] == cut_pos(q, st, m_end))
            rs->hold[st] = tc + X->sig[x].s;
    }
    c->tc = tc;
    c->cut_done = c->clean = 1;
    c->sig = malloc((X->nsig + 1) * sizeof *c->sig);
    if (!c->sig)
        abort();
    memcpy(c->sig, X->sig, X->nsig * sizeof *c->sig);
    c->nsig = X->nsig;
    snap(&c->ev_lo, 0);
    snap(&c->mem_lo, 1);
}

/* Wake the streams parked on ops the replay completed or made ready. */
static void wake_parked(void)
{
    for (int r = 0; r < eng.p->nranks; r++) {
        rank_st *rs = &eng.ranks[r];
        for (int s = 0; s < ST_COUNT; s++)
            if (rs->parked[s] &&
                (rs->ix->pos[rs->want[s]] < rs->skip[s] || eng_ready(rs, rs->want[s]))) {
                rs->parked[s] = 0;
                rs->waiters--;
                sg_sem_release(rs->sem[s]);
            }
    }
}

/* Cut k (a valid cut) of the pending region completed at t: replay from
 * copy k on if a reference cycle allows.  Returns 1 when it replayed (and
 * armed the next cut). */
static int chain(double t)
{
    int R = rp.R;
    uint32_t k = rp.k, n = rp.repeat[R], p;
    int64_t j = reference_copy(R, k, &p);
    if (j < 0)
        return 0;
    int bound = host_bound(R, j, p);
    const rp_copy *J = &rp.cp[R][j];
    double span = rp.cp[R][j + 1].tc - J->tc; /* copy j's entry to its exit */
    double lead = 0; /* how early the first op of the next copy starts */
    for (size_t x = 0; x < J->nsig; x++)
        if (J->sig[x].s < lead)
            lead = J->sig[x].s;
    for (size_t x = 0; x < rp.nx; x++)
        if (rp.xend[x] > t + span + lead)
            return 0; /* an early op would outlast the replayed copy */
    /* copies k .. m_end - 1 replay, copy m as copy ref(m) = j + (m - k) % p
     * with its entry cut at tcs[m - k]: every time is an entry cut plus its
     * offset in the reference, and a copy's exit is the next one's entry,
     * so that times equal in the reference and at its ends stay equal */
    double *tcs = malloc(((size_t)(n - k) + 1) * sizeof *tcs);
    if (!tcs)
        abort();
    uint32_t m_end = k;
    tcs[0] = t;
    for (;;) {
        uint32_t ref = (uint32_t)j + (m_end - k) % p;
        if (m_end == n || !issue_ok(R, m_end, ref, tcs[m_end - k] - rp.cp[R][ref].tc, bound))
            break;
        shadow(R, m_end, ref, tcs[m_end - k]);
        tcs[m_end - k + 1] = tcs[m_end - k] + (rp.cp[R][ref + 1].tc - rp.cp[R][ref].tc);
        m_end++;
    }
    /* after the region's last copy come other ops, which the reference's
     * exit says nothing about: they must not have been able to start
     * before the replay's end (else the last copy simulates) */
    if (m_end == n && !exit_ok(R, m_end, tcs[m_end - k]))
        rp.cp[R][--m_end].shadow = 0; /* it simulates after all */
    /* a host-bound cycle's exit state holds early starts of copy m_end
     * where the host's issue may have held them: copy m_end's issue
     * differs, so they need not start as early; the last copy replayed,
     * whose own early starts' issue matched, simulates instead */
    else if (m_end < n && m_end > k && bound)
        rp.cp[R][--m_end].shadow = 0;
    double tc = tcs[m_end - k];
    if (m_end == k) {
        free(tcs);
        return 0;
    }
    drop_early_records(&rp.cp[R][k]);
    for (uint32_t m = k; m < m_end; m++) {
        uint32_t ref = (uint32_t)j + (m - k) % p;
        build_ref(R, ref);
        replay_copy(R, m, ref, tcs[m - k]);
    }
    free(tcs);
    rp.hold = tc;
    skip_replayed(R, m_end, tc);
    if (m_end < n) {
        resume_after(R, m_end, (uint32_t)j + (m_end - 1 - k) % p, tc);
        rp.k = m_end;
    } else {
        rp.k = n - 1;
    }
    wake_parked();
    next_cut();
    return 1;
}

/* The last end of rs's elements before cut (R, k). */
static double last_end(const rank_st *rs, int R, uint32_t k)
{
    const rp_preg *q = preg_of(rs, R);
    double t = -INFINITY;
    for (int s = 0; s < ST_COUNT; s++) {
        uint32_t c = cut_pos(q, s, k);
        if (c > 0 && end_of(rs, rs->ix->list[s][c - 1]) > t)
            t = end_of(rs, rs->ix->list[s][c - 1]);
    }
    return t;
}

/* The pending cut completed at t.  It is valid when only compute and
 * memory ops of its copy started early, each on a rank whose ops before
 * the cut had all ended by then (so nothing of the copy before shared a
 * rank with them); its state is then those early starts, kept as the
 * copy's signature (same-instant ones left out). */
static void cut_complete(double t)
{
    int R = rp.R;
    uint32_t k = rp.k;
    rp_copy *c = &rp.cp[R][k];
    c->tc = t;
    c->cut_done = 1;
    c->clean = !rp.bad;
    c->nsig = 0;
    c->sig = malloc((rp.ncur + 1) * sizeof *c->sig);
    if (!c->sig)
        abort();
    for (size_t x = 0; x < rp.ncur && c->clean; x++) {
        rp_sig g = rp.cur[x];
        g.s -= t;
        g.e -= t;
        if (g.s >= -rp_eps(t))
            continue;
        if (last_end(&eng.ranks[g.rank], R, k) > t + g.s + rp_eps(t))
            c->clean = 0;
        c->sig[c->nsig++] = g;
    }
    qsort(c->sig, c->nsig, sizeof *c->sig, sig_cmp);
    if (k > 0) {
        snap(&rp.cp[R][k - 1].ev_hi, 0);
        snap(&rp.cp[R][k - 1].mem_hi, 1);
    }
    if (k > 0 && c->clean && chain(t))
        return;
    next_cut();
}

void rp_finish(eng_result *res)
{
    res->iters_replayed = rp.replayed;
    res->replay_near_s = rp.near;
    res->iters_simulated = rp.total - rp.replayed;
}
