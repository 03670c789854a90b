/* unison: a plan whose ranks run one timeline, evaluated without actors
 * (engine.h, eng_opts.memo).
 *
 * When every rank runs the same program, what SimGrid does for it reduces
 * to the engine's own rules (engine.h) on one rank's sequence, provided
 *   - no two of a rank's streams are busy at once (no compute beside a
 *     collective, no two collectives): then interference never applies
 *     (its factors are 1 unless a kernel and a transfer run together) and
 *     a collective has the network to itself;
 *   - every collective takes the same time on every rank when all of them
 *     enter it together (measured: see below), so the ranks' timelines stay
 *     equal and every collective is entered together;
 *   - no point-to-point hops, the CM02 model, no replay of the records'
 *     order for a trace (the caller asks for this only where it keeps no
 *     trace).
 * Then element i of the sequence starts at the latest of its stream
 * predecessor's end, its dependencies' ends, its step's start (a step op:
 * every stream's ops before it, and its arrival) and its host issue time
 * (step start + issue offset), as stream_main waits for them; a compute op
 * lasts cost_s, a memory op nothing, a collective its measured duration.
 * A collective's duration is measured once per (kind, algorithm, group,
 * bytes, launch mode) by a SimGrid run of that collective alone on the
 * plan's ranks from one instant (the memo), the same transport, platform
 * and settings as a step's run.
 *
 * Exactness.  SimGrid adds the same durations to its clock in its own
 * order (an exec's amount divided by its host's speed, a sleep's span
 * subtracted from and added back to the clock, the collective at another
 * base), so the times agree with a simulated step to rounding (a few ulps
 * of the clock), as replay's do; tests/replay.sh and check_engine compare
 * the two on serving runs and random steps.  Anything else (an overlap, a
 * hop, a collective whose ranks end apart, a dependency on a later op)
 * returns "not eligible" and the step is simulated. */
#include "sim/engine/engine_int.h"

#include <math.h>
#include <simgrid/engine.h>
#include <stdlib.h>
#include <string.h>

/* One collective shape and what its lone run measured. */
typedef struct cm_ent {
    int used;
    uint8_t coll, alg, group, graph, custom;
    double bytes;
    double dur;                 /* its time on every rank (s) */
    long msgs;                  /* messages of all ranks */
    int sym;                    /* 1: every rank entered and left together */
} cm_ent;

/* An open-addressing table of shapes (doubled at half full). */
struct eng_collmemo {
    cm_ent *v;
    size_t cap, used;
};

eng_collmemo *eng_collmemo_new(void)
{
    return cp_xcalloc(1, sizeof(eng_collmemo));
}

void eng_collmemo_free(eng_collmemo *m)
{
    if (!m)
        return;
    free(m->v);
    free(m);
}

static int graph_of(const eng_opts *o, const plan_op *op)
{
    return o->graph && !op->eager;
}

/* SplitMix64's finaliser (Steele, Lea and Flood 2014; its constants):
 * every input bit reaches the low bits the table indexes by (a byte count's
 * double has a mantissa of trailing zeros). */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t cm_hash(const plan_op *op, int graph)
{
    uint64_t bits;
    memcpy(&bits, &op->comm_bytes, sizeof bits);
    return mix64(mix64(bits) ^ ((uint64_t)op->coll | (uint64_t)op->alg << 8 |
                                (uint64_t)op->group << 16 | (uint64_t)graph << 24 |
                                (uint64_t)(op->impl == IMPL_CUSTOM) << 25));
}

static int cm_match(const cm_ent *e, const plan_op *op, int graph)
{
    return e->used && e->coll == op->coll && e->alg == op->alg && e->group == op->group &&
           e->graph == graph && e->custom == (op->impl == IMPL_CUSTOM) &&
           e->bytes == op->comm_bytes;
}

/* The slot of op's shape: its entry, or the free slot it would take. */
static cm_ent *cm_slot(const eng_collmemo *m, const plan_op *op, int graph)
{
    size_t j = (size_t)cm_hash(op, graph) & (m->cap - 1);
    while (m->v[j].used && !cm_match(&m->v[j], op, graph))
        j = (j + 1) & (m->cap - 1);
    return &m->v[j];
}

/* Collective op of p run alone on every rank of p from one instant. */
static int cm_measure(const plan *p, const eng_opts *o, const plan_op *op, cm_ent *e,
                      double *wall, cp_err *err)
{
    plan q;
    plan_init(&q, &p->lay);
    if (q.nranks != p->nranks) {
        plan_free(&q);
        e->sym = 0;
        return 0;
    }
    int g = plan_add_prog(&q);
    plan_prog *pg = &q.progs[g];
    q.nsteps = 1;
    plan_push(pg, &(plan_op){.name = "step", .layer = -1, .kind = OPK_STEP,
                             .stream = ST_COMPUTE});
    plan_op c = *op;
    c.layer = -1;
    c.step = 0;
    c.launch_s = 0;
    plan_push(pg, &c);
    eng_opts mo = *o;
    mo.memo = NULL;
    mo.replay = 0;
    eng_result r;
    int rc = eng_run(&q, &mo, &r, err);
    if (rc == 0) {
        eng_event *ev = NULL;
        size_t cap = 0;
        e->sym = 1;
        for (int rk = 0; rk < q.nranks && e->sym; rk++) {
            size_t n = eng_rank_events(&r, rk, &ev, &cap);
            const eng_event *x = NULL;
            for (size_t k = 0; k < n; k++)
                if (ev[k].op == 1)
                    x = &ev[k];
            if (!x)
                e->sym = 0;
            else if (rk == 0)
                e->dur = x->t1 - x->t0;
            else if (x->t1 - x->t0 != e->dur)
                e->sym = 0;
        }
        free(ev);
        e->msgs = r.messages;
        *wall += r.wall_s;
        eng_result_free(&r);
    }
    plan_free(&q);
    return rc;
}

/* op's entry in the memo, measured when new; NULL on failure. */
static const cm_ent *cm_get(eng_collmemo *m, const plan *p, const eng_opts *o,
                            const plan_op *op, double *wall, cp_err *err)
{
    int graph = graph_of(o, op);
    if (2 * (m->used + 1) > m->cap) {
        eng_collmemo g = {cp_xcalloc(m->cap ? 2 * m->cap : 64, sizeof *g.v),
                          m->cap ? 2 * m->cap : 64, m->used};
        for (size_t i = 0; i < m->cap; i++)
            if (m->v[i].used) {
                plan_op k = {.coll = m->v[i].coll, .alg = m->v[i].alg, .group = m->v[i].group,
                             .impl = m->v[i].custom ? IMPL_CUSTOM : IMPL_TORCH,
                             .comm_bytes = m->v[i].bytes};
                *cm_slot(&g, &k, m->v[i].graph) = m->v[i];
            }
        free(m->v);
        *m = g;
    }
    cm_ent *e = cm_slot(m, op, graph);
    if (e->used)
        return e;
    cm_ent fresh = {1, op->coll, op->alg, op->group, (uint8_t)graph,
                    op->impl == IMPL_CUSTOM, op->comm_bytes, 0, 0, 0};
    if (cm_measure(p, o, op, &fresh, wall, err) != 0)
        return NULL;
    e = cm_slot(m, op, graph); /* (the table did not move) */
    *e = fresh;
    m->used++;
    return e;
}

/* Whether two streams' busy spans (each sorted, disjoint) overlap. */
static int spans_meet(const double (*a)[2], size_t na, const double (*b)[2], size_t nb)
{
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        if (a[i][0] < b[j][1] && b[j][0] < a[i][1])
            return 1;
        if (a[i][1] <= b[j][1])
            i++;
        else
            j++;
    }
    return 0;
}

/* The evaluation's working arrays. */
typedef struct ls_run {
    plan_vseq v;
    double *issue, *t0, *t1, *sstart, *send;
    double (*busy[ST_COUNT])[2];
    size_t nbusy[ST_COUNT];
    uint32_t *list;             /* [n]: each stream's elements, events then memory ops */
} ls_run;

static void ls_free(ls_run *L)
{
    plan_vseq_free(&L->v);
    free(L->issue);
    free(L->t0);
    free(L->t1);
    free(L->sstart);
    free(L->send);
    for (int s = 0; s < ST_COUNT; s++)
        free(L->busy[s]);
    free(L->list);
}

/* Rank 0's timeline into L, times from the clock T the run starts at (1),
 * or 0 when the plan is not eligible, -1 on failure; messages and execs of
 * every rank counted.  The times add up from 0, not from T, so that each
 * sum rounds at the step's scale and only the final T + t at the clock's
 * (SimGrid's clock rounds every add at its own scale). */
static int ls_eval(const plan *p, const eng_opts *o, ls_run *L, double T, long *msgs,
                   long *execs, double *wall, cp_err *err)
{
    const plan_prog *pg = &p->progs[0];
    plan_vseq_build(pg, &L->v);
    uint32_t n = L->v.n;
    int nst = p->nsteps > 0 ? p->nsteps : 1;
    L->issue = cp_xcalloc((size_t)n + 1, sizeof *L->issue);
    L->t0 = cp_xcalloc((size_t)n + 1, sizeof *L->t0);
    L->t1 = cp_xcalloc((size_t)n + 1, sizeof *L->t1);
    L->sstart = cp_xcalloc((size_t)nst, sizeof *L->sstart);
    L->send = cp_xcalloc((size_t)nst, sizeof *L->send);
    for (int s = 0; s < ST_COUNT; s++)
        L->busy[s] = cp_xcalloc((size_t)n + 1, sizeof *L->busy[s]);
    double off = 0, last[ST_COUNT] = {0, 0, 0};
    int32_t started = -1;
    for (uint32_t i = 0; i < n; i++) {
        const plan_op *op = &pg->ops[L->v.real[i]];
        int s = op->stream;
        if (op->kind == OPK_STEP) /* as index_build: offsets from each step */
            off = 0;
        off += op->launch_s;
        double ready = last[s], t0, t1;
        for (uint32_t k = L->v.dep_first[i]; k < L->v.dep_first[i + 1]; k++) {
            uint32_t e = L->v.deps[k];
            if (e >= i)
                return 0;
            ready = fmax(ready, L->t1[e]);
        }
        if (op->kind == OPK_STEP) {
            if (op->step != started + 1 || op->step >= nst)
                return 0;
            for (int u = 0; u < ST_COUNT; u++)
                ready = fmax(ready, last[u]);
            t0 = t1 = fmax(ready, op->arrival_s - T);
            L->sstart[op->step] = t0;
            started = op->step;
        } else {
            if (op->step > started || op->step >= nst)
                return 0;
            double base = op->step >= 0 ? L->sstart[op->step] : -T; /* clock 0 */
            if (op->step >= 0)
                ready = fmax(ready, base);
            t0 = fmax(ready, base + off);
            t1 = t0;
            if (op->kind == OPK_COMPUTE && op->cost_s > 0) {
                t1 = t0 + op->cost_s;
                *execs += p->nranks;
            } else if (op->kind == OPK_COLL) {
                const cm_ent *e = cm_get(o->memo, p, o, op, wall, err);
                if (!e)
                    return -1;
                if (!e->sym)
                    return 0;
                t1 = t0 + e->dur;
                *msgs += e->msgs;
            } else if (op->kind == OPK_P2P) {
                return 0;
            }
        }
        if (t1 > t0)
            memcpy(L->busy[s][L->nbusy[s]++], (double[2]){t0, t1}, sizeof(double[2]));
        if (op->step >= 0 && t1 > L->send[op->step])
            L->send[op->step] = t1;
        last[s] = t1;
        L->t0[i] = t0;
        L->t1[i] = t1;
    }
    for (int a = 0; a < ST_COUNT; a++)
        for (int b = a + 1; b < ST_COUNT; b++)
            if (spans_meet(L->busy[a], L->nbusy[a], L->busy[b], L->nbusy[b]))
                return 0;
    return 1;
}

/* The elements of lists lo[k] .. hi[k] (k < ST_COUNT; each sorted by
 * key, then by position, as a stream's elements are) merged by (key,
 * position) into fn.  key: L->t1 for events (each stream pushes an op when
 * it ends, same-instant ends in program order), L->t0 for memory events
 * (eng_rank_mems's order, so its insertion sort moves none). */
static void ls_merge(const ls_run *L, const double *key, uint32_t *lo, const uint32_t *hi,
                     void (*fn)(const plan_prog *, const ls_run *, uint32_t, double,
                                eng_result *),
                     const plan_prog *pg, double T, eng_result *res)
{
    for (;;) {
        int best = -1;
        for (int k = 0; k < ST_COUNT; k++) {
            if (lo[k] == hi[k])
                continue;
            uint32_t i = L->list[lo[k]], b = best < 0 ? 0 : L->list[lo[best]];
            if (best < 0 || key[i] < key[b] || (key[i] == key[b] && i < b))
                best = k;
        }
        if (best < 0)
            return;
        fn(pg, L, L->list[lo[best]++], T, res);
    }
}

static void ls_event(const plan_prog *pg, const ls_run *L, uint32_t i, double T,
                     eng_result *res)
{
    eng_add_event(res, &(eng_event){.t0 = T + L->t0[i], .t1 = T + L->t1[i], .rank = 0,
                                    .op = L->v.real[i], .layer = plan_vseq_layer(pg, &L->v, i),
                                    .stream = pg->ops[L->v.real[i]].stream});
    if (T + L->t1[i] > res->end_s)
        res->end_s = T + L->t1[i];
}

static void ls_mem(const plan_prog *pg, const ls_run *L, uint32_t i, double T, eng_result *res)
{
    const plan_op *op = &pg->ops[L->v.real[i]];
    eng_add_mem(res, &(eng_mem){.t = T + L->t0[i], .delta = op->mem_bytes, .rank = 0,
                                .op = L->v.real[i], .seq = i,
                                .layer = plan_vseq_layer(pg, &L->v, i), .cat = op->mem_cat});
}

/* Rank 0's records of L into res at clock T, read by every rank
 * (eng_replicate). */
static void ls_record(const plan *p, ls_run *L, double T, eng_result *res)
{
    const plan_prog *pg = &p->progs[0];
    uint32_t n = L->v.n, cnt[2][ST_COUNT] = {{0}}, lo[2][ST_COUNT], hi[2][ST_COUNT], at = 0;
    for (uint32_t i = 0; i < n; i++) {
        const plan_op *op = &pg->ops[L->v.real[i]];
        cnt[op->kind == OPK_MEM][op->stream]++;
    }
    for (int m = 0; m < 2; m++)
        for (int s = 0; s < ST_COUNT; s++) {
            lo[m][s] = hi[m][s] = at;
            at += cnt[m][s];
        }
    L->list = cp_xcalloc((size_t)n + 1, sizeof *L->list);
    for (uint32_t i = 0; i < n; i++) {
        const plan_op *op = &pg->ops[L->v.real[i]];
        L->list[hi[op->kind == OPK_MEM][op->stream]++] = i;
    }
    ls_merge(L, L->t1, lo[0], hi[0], ls_event, pg, T, res);
    ls_merge(L, L->t0, lo[1], hi[1], ls_mem, pg, T, res);
}

int eng_unison(const plan *p, const eng_opts *o, int replicas, eng_result *res,
                 cp_err *err)
{
    if (!o->memo || p->nprogs != 1 || o->l07 || o->reverse_actors || o->plat->raw_xml)
        return 0;
    for (int r = 0; r < p->nranks; r++)
        if (p->prog_of_rank[r] != 0)
            return 0;
    ls_run L;
    memset(&L, 0, sizeof L);
    double T = simgrid_get_clock(), wall = 0;
    long msgs = 0, execs = 0;
    int rc = ls_eval(p, o, &L, T, &msgs, &execs, &wall, err);
    if (rc != 1) {
        ls_free(&L);
        return rc;
    }
    eng_result_init(res, 1);
    ls_record(p, &L, T, res);
    if (p->nranks > 1)
        eng_replicate(res, p->nranks);
    res->t0 = T;
    res->nsteps = p->nsteps > 0 ? p->nsteps : 1;
    res->step_start = cp_xcalloc((size_t)p->nranks * res->nsteps, sizeof *res->step_start);
    res->step_end = cp_xcalloc((size_t)p->nranks * res->nsteps, sizeof *res->step_end);
    for (int r = 0; r < p->nranks; r++)
        for (int k = 0; k < res->nsteps; k++) {
            res->step_start[(size_t)r * res->nsteps + k] = T + L.sstart[k];
            res->step_end[(size_t)r * res->nsteps + k] = T + L.send[k];
        }
    res->messages = msgs;
    res->execs = execs;
    res->replicas_simulated = replicas;
    for (uint32_t g = 0; g < p->progs[0].nregions; g++)
        res->iters_simulated += (int)p->progs[0].regions[g].repeat;
    res->wall_s = wall;
    res->unison = 1;
    ls_free(&L);
    return 1;
}
