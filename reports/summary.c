/* summary: per-rank and per-request figures of a run, and summary.json. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report.h"
#include "models/build/build.h"
#include "models/encoder/encoder.h"
#include "workloads/workload.h"

/* Events of one rank and stream class sorted by start time. */
typedef rep_span span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return (x->t1 > y->t1) - (x->t1 < y->t1);
}

size_t rep_spans_merge(rep_span *s, size_t n)
{
    if (n == 0)
        return 0;
    qsort(s, n, sizeof *s, cmp_span);
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (s[i].t0 <= s[k].t1) {
            if (s[i].t1 > s[k].t1)
                s[k].t1 = s[i].t1;
        } else {
            s[++k] = s[i];
        }
    }
    return k + 1;
}

double rep_spans_total(const rep_span *s, size_t n)
{
    double t = 0;
    for (size_t i = 0; i < n; i++)
        t += s[i].t1 - s[i].t0;
    return t;
}

double rep_spans_intersect(const rep_span *a, size_t na, const rep_span *b, size_t nb)
{
    double t = 0;
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        double lo = a[i].t0 > b[j].t0 ? a[i].t0 : b[j].t0;
        double hi = a[i].t1 < b[j].t1 ? a[i].t1 : b[j].t1;
        if (hi > lo)
            t += hi - lo;
        if (a[i].t1 < b[j].t1)
            i++;
        else
            j++;
    }
    return t;
}

static int is_busy(const plan_op *o)
{
    return o->kind == OPK_COMPUTE || o->kind == OPK_COLL || o->kind == OPK_P2P;
}

void rep_rank_totals(rep_summary *sm)
{
    double sum_overlap = 0, sum_comm = 0;
    sm->compute_s_max = sm->comm_s_max = sm->overlap_s_max = 0;
    for (int rk = 0; rk < sm->nranks; rk++) {
        const rep_rank *rr = &sm->ranks[rk];
        sum_overlap += rr->overlap_s;
        sum_comm += rr->comm_s;
        if (rr->compute_s > sm->compute_s_max)
            sm->compute_s_max = rr->compute_s;
        if (rr->comm_s > sm->comm_s_max)
            sm->comm_s_max = rr->comm_s;
        if (rr->overlap_s > sm->overlap_s_max)
            sm->overlap_s_max = rr->overlap_s;
    }
    sm->overlap_fraction = sum_comm > 0 ? sum_overlap / sum_comm : 0.0;
}

/* This rank's records (a, its capacity ca) become the previous rank's (b,
 * cb) and the previous buffer the next rank's to fill. */
static void swap_bufs(void **a, size_t *ca, void **b, size_t *cb)
{
    void *t = *a;
    size_t c = *ca;
    *a = *b;
    *ca = *cb;
    *b = t;
    *cb = c;
}

/* Whether rank rk's events (ev, n) are rank rk - 1's (prev, np) to the bit
 * but for the rank, on the same program: its busy times are then the
 * previous rank's (a TP group's ranks run one program in lockstep). */
static int same_events(const plan *p, int rk, const eng_event *ev, size_t n,
                       const eng_event *prev, size_t np)
{
    if (rk == 0 || n != np || p->prog_of_rank[rk] != p->prog_of_rank[rk - 1])
        return 0;
    for (size_t i = 0; i < n; i++)
        if (ev[i].t0 != prev[i].t0 || ev[i].t1 != prev[i].t1 || ev[i].op != prev[i].op ||
            ev[i].stream != prev[i].stream)
            return 0;
    return 1;
}

static void busy_times(const plan *p, const eng_result *r, rep_summary *sm)
{
    eng_event *ev = NULL, *prev = NULL;
    span *cs = NULL, *ms = NULL;
    size_t cap = 0, pcap = 0, scap = 0, np = 0;
    for (int rk = 0; rk < p->nranks; rk++) {
        rep_rank *rr = &sm->ranks[rk];
        int same = rk > 0 && p->prog_of_rank[rk] == p->prog_of_rank[rk - 1] &&
                   eng_rank_same(r, rk - 1, rk, 0);
        size_t n = same ? 0 : eng_rank_events(r, rk, &ev, &cap), nc = 0, nm = 0;
        if (same || same_events(p, rk, ev, n, prev, np)) {
            rr->compute_s = rr[-1].compute_s;
            rr->comm_s = rr[-1].comm_s;
            rr->overlap_s = rr[-1].overlap_s;
            continue;
        }
        if (n + 1 > scap) {
            scap = n + 1;
            free(cs);
            free(ms);
            cs = malloc(scap * sizeof *cs);
            ms = malloc(scap * sizeof *ms);
            if (!cs || !ms)
                abort();
        }
        for (size_t i = 0; i < n; i++) {
            const eng_event *e = &ev[i];
            const plan_op *o = &p->progs[p->prog_of_rank[e->rank]].ops[e->op];
            if (!is_busy(o) || e->t1 <= e->t0)
                continue;
            if (e->stream == ST_COMPUTE)
                cs[nc++] = (span){e->t0, e->t1};
            else
                ms[nm++] = (span){e->t0, e->t1};
        }
        nc = rep_spans_merge(cs, nc);
        nm = rep_spans_merge(ms, nm);
        rr->compute_s = rep_spans_total(cs, nc);
        rr->comm_s = rep_spans_total(ms, nm);
        rr->overlap_s = rep_spans_intersect(cs, nc, ms, nm);
        swap_bufs((void **)&ev, &cap, (void **)&prev, &pcap);
        np = n;
    }
    rep_rank_totals(sm);
    free(ev);
    free(prev);
    free(cs);
    free(ms);
}

static void phase_name(const plan *p, int rank, const eng_mem *at, char *buf, size_t len);

/* The allocator's reserved bytes after each of a rank's events (for the
 * activation and buffer events; 0 else), into res.  The allocator sees
 * only the sequence of categories and sizes: a rank whose sequence equals
 * the previous rank's (a TP group's ranks run one program) takes its
 * figures, the same bits, without replaying it. */
typedef struct alloc_memo {
    uint8_t *cat;
    double *delta, *res;
    size_t n, cap;
    int valid;
} alloc_memo;

static const double *reserved_after(alloc_memo *am, const eng_mem *m, size_t n)
{
    int same = am->valid && am->n == n;
    for (size_t i = 0; same && i < n; i++)
        same = am->cat[i] == m[i].cat && am->delta[i] == m[i].delta;
    if (same)
        return am->res;
    if (n > am->cap) {
        am->cap = n;
        am->cat = realloc(am->cat, n * sizeof *am->cat);
        am->delta = realloc(am->delta, n * sizeof *am->delta);
        am->res = realloc(am->res, n * sizeof *am->res);
        if (!am->cat || !am->delta || !am->res)
            abort(); /* out of memory: per event of one rank */
    }
    rep_alloc al;
    rep_alloc_init(&al);
    for (size_t i = 0; i < n; i++) {
        am->cat[i] = (uint8_t)m[i].cat;
        am->delta[i] = m[i].delta;
        am->res[i] = 0;
        if (m[i].cat == MC_ACTIVATIONS || m[i].cat == MC_COMM_BUFFER) {
            if (m[i].delta > 0)
                rep_alloc_malloc(&al, m[i].delta);
            else
                rep_alloc_release(&al, -m[i].delta);
            am->res[i] = al.reserved;
        }
    }
    rep_alloc_free(&al);
    am->n = n;
    am->valid = 1;
    return am->res;
}

/* Rank `rank`'s memory events m[0, n) (eng_rank_mems) through fn, as
 * rep_mem_walk says, the allocator's figures from am. */
static void walk_rank(int rank, const eng_mem *m, size_t n, alloc_memo *am, int every_event,
                      rep_mem_fn fn, void *ctx)
{
    double cur[MC_COUNT] = {0};
    const eng_mem *top = NULL; /* the instant's event of the highest op */
    const double *res = reserved_after(am, m, n);
    for (size_t i = 0; i < n; i++) {
        cur[m[i].cat] += m[i].delta;
        if (m[i].cat == MC_ACTIVATIONS || m[i].cat == MC_COMM_BUFFER) {
            double slack = res[i] - cur[MC_ACTIVATIONS] - cur[MC_COMM_BUFFER];
            cur[MC_ALLOC_SLACK] = slack > 0 ? slack : 0;
        }
        if (!top || m[i].op > top->op)
            top = &m[i];
        /* report an instant once all of its changes are applied: events
         * within rounding of each other (REP_SAME_INSTANT) are one
         * instant, the clock's adds do not keep equal times equal (a
         * replayed layer, sim/engine/replay.c, adds its offsets to
         * another base) */
        if (!every_event && i + 1 < n && rep_same_instant(m[i].t, m[i + 1].t))
            continue;
        fn(ctx, rank, m[i].t, cur, every_event ? &m[i] : top);
        top = NULL;
    }
}

static void alloc_memo_free(alloc_memo *am)
{
    free(am->cat);
    free(am->delta);
    free(am->res);
}

void rep_mem_walk(const eng_result *r, int every_event, rep_mem_fn fn, void *ctx)
{
    eng_mem *m = NULL;
    size_t cap = 0;
    alloc_memo am = {0};
    for (int rank = 0; rank < r->nranks; rank++) {
        size_t n = eng_rank_mems(r, rank, &m, &cap);
        walk_rank(rank, m, n, &am, every_event, fn, ctx);
    }
    free(m);
    alloc_memo_free(&am);
}

static double sum_categories(const double cur[MC_COUNT])
{
    double tot = 0;
    for (int c = 0; c < MC_COUNT; c++)
        tot += cur[c];
    return tot;
}

typedef struct peak_ctx {
    rep_summary *sm;
    const plan *p;
    double first_oom_t;
} peak_ctx;

static void peak_fn(void *vctx, int rank, double t, const double cur[MC_COUNT],
                    const eng_mem *last)
{
    peak_ctx *pc = vctx;
    rep_summary *sm = pc->sm;
    double tot = sum_categories(cur), engine = cur[MC_RESERVED] + cur[MC_WORKSPACE];
    double tensors = tot - engine - cur[MC_ALLOC_SLACK];
    rep_rank *rr = &sm->ranks[rank];
    const plan_prog *pg = &pc->p->progs[pc->p->prog_of_rank[rank]];
    int ph = last->op < pg->nops ? pg->ops[last->op].phase : PH_OTHER;
    if (ph < 0 || ph >= PH_COUNT)
        ph = PH_OTHER;
    if (tensors + engine > rr->peak_by_phase[ph])
        rr->peak_by_phase[ph] = tensors + engine;
    if (tot > rr->peak_bytes)
        rr->peak_bytes = tot;
    if (tensors + cur[MC_ALLOC_SLACK] > rr->peak_reserved_bytes)
        rr->peak_reserved_bytes = tensors + cur[MC_ALLOC_SLACK];
    if (engine > rr->engine_bytes)
        rr->engine_bytes = engine;
    if (tensors > rr->peak_tensor_bytes || rr->peak_t < 0) {
        rr->peak_tensor_bytes = tensors;
        rr->peak_t = t;
        memcpy(rr->peak_by_cat, cur, MC_COUNT * sizeof *cur);
        rr->peak_op = last->op;
        rr->peak_phase = ph;
    }
}

/* The first allocation that takes any rank above the capacity. */
static void oom_fn(void *vctx, int rank, double t, const double cur[MC_COUNT],
                   const eng_mem *last)
{
    peak_ctx *pc = vctx;
    rep_summary *sm = pc->sm;
    /* out of memory when the tensors and the engine exceed the device: a
     * cudaMalloc that fails first releases the allocator's unused cached
     * segments and retries (CUDACachingAllocator release_cached_blocks) */
    double tot = sum_categories(cur) - cur[MC_ALLOC_SLACK];
    if (tot > sm->capacity_bytes && (pc->first_oom_t < 0 || t < pc->first_oom_t)) {
        pc->first_oom_t = t;
        sm->oom_rank = rank;
        phase_name(pc->p, rank, last, sm->oom_phase, sizeof sm->oom_phase);
    }
}

/* Whether rank rk's memory events (m, n) are rank rk - 1's (prev, np) to
 * the bit in what peak_fn and oom_fn read (time, size, category, op), on
 * the same program: its peaks are then the previous rank's, and its first
 * allocation past the capacity, if any, comes no earlier (oom_fn keeps the
 * earliest, the lowest rank at a tie). */
static int same_mems(const plan *p, int rk, const eng_mem *m, size_t n, const eng_mem *prev,
                     size_t np)
{
    if (rk == 0 || n != np || p->prog_of_rank[rk] != p->prog_of_rank[rk - 1])
        return 0;
    for (size_t i = 0; i < n; i++)
        if (m[i].t != prev[i].t || m[i].delta != prev[i].delta || m[i].op != prev[i].op ||
            m[i].cat != prev[i].cat)
            return 0;
    return 1;
}

/* The peak figures peak_fn sets, from rank `from` to `to`. */
static void copy_peaks(rep_rank *to, const rep_rank *from)
{
    to->peak_bytes = from->peak_bytes;
    to->peak_tensor_bytes = from->peak_tensor_bytes;
    to->peak_reserved_bytes = from->peak_reserved_bytes;
    to->engine_bytes = from->engine_bytes;
    to->peak_t = from->peak_t;
    memcpy(to->peak_by_cat, from->peak_by_cat, sizeof to->peak_by_cat);
    to->peak_op = from->peak_op;
    memcpy(to->peak_by_phase, from->peak_by_phase, sizeof to->peak_by_phase);
    to->peak_phase = from->peak_phase;
}

static void memory_peaks(const plan *p, const eng_result *r, rep_summary *sm)
{
    peak_ctx pc = {sm, p, -1.0};
    sm->oom_rank = -1;
    for (int rk = 0; rk < p->nranks; rk++)
        sm->ranks[rk].peak_t = -1;
    /* as rep_mem_walk with peak_fn, then with oom_fn: each rank's events
     * read once for both (neither reads what the other sets) */
    eng_mem *m = NULL, *prev = NULL;
    size_t cap = 0, pcap = 0, np = 0;
    alloc_memo am = {0};
    for (int rk = 0; rk < r->nranks; rk++) {
        int same = rk > 0 && p->prog_of_rank[rk] == p->prog_of_rank[rk - 1] &&
                   eng_rank_same(r, rk - 1, rk, 1);
        size_t n = same ? 0 : eng_rank_mems(r, rk, &m, &cap);
        if (same || same_mems(p, rk, m, n, prev, np)) {
            copy_peaks(&sm->ranks[rk], &sm->ranks[rk - 1]);
            continue;
        }
        walk_rank(rk, m, n, &am, 0, peak_fn, &pc);
        walk_rank(rk, m, n, &am, 1, oom_fn, &pc);
        swap_bufs((void **)&m, &cap, (void **)&prev, &pcap);
        np = n;
    }
    free(m);
    free(prev);
    alloc_memo_free(&am);
    sm->peak_bytes_max = sm->peak_tensor_bytes_max = sm->peak_reserved_bytes_max = 0;
    sm->engine_bytes_max = 0;
    sm->peak_rank = 0;
    for (int rk = 0; rk < p->nranks; rk++) {
        const rep_rank *rr = &sm->ranks[rk];
        if (rr->peak_t < 0)
            sm->ranks[rk].peak_t = 0;
        if (rr->peak_bytes > sm->peak_bytes_max) {
            sm->peak_bytes_max = rr->peak_bytes;
            sm->peak_rank = rk;
        }
        sm->peak_tensor_bytes_max = fmax(sm->peak_tensor_bytes_max, rr->peak_tensor_bytes);
        sm->peak_reserved_bytes_max = fmax(sm->peak_reserved_bytes_max, rr->peak_reserved_bytes);
        sm->engine_bytes_max = fmax(sm->engine_bytes_max, rr->engine_bytes);
    }
}

/* "step 0 layer 12 expert_gate_up": the first non-memory op after the
 * memory event `at`, in at's layer. */
static void phase_name(const plan *p, int rank, const eng_mem *at, char *buf, size_t len)
{
    const plan_prog *pg = &p->progs[p->prog_of_rank[rank]];
    uint32_t i = at->op;
    if (i < pg->nops && pg->ops[i].step < 0) {
        snprintf(buf, len, "set-up (resident %s)", plan_memcat_name(pg->ops[i].mem_cat));
        return;
    }
    uint32_t j = i;
    while (j < pg->nops && pg->ops[j].kind == OPK_MEM)
        j++;
    if (j >= pg->nops) {
        snprintf(buf, len, "end of run");
        return;
    }
    const plan_op *o = &pg->ops[j];
    int32_t layer = o->layer >= 0 ? at->layer + (o->layer - pg->ops[i].layer) : -1;
    if (layer >= 0)
        snprintf(buf, len, "step %d layer %d %s", o->step, layer, o->name);
    else
        snprintf(buf, len, "step %d %s", o->step, o->name);
}

/* Compute time by price source: every compute event's duration. */
static void cost_sources(const plan *p, const eng_result *r, rep_summary *sm)
{
    rep_costsrc *c = &sm->cost;
    eng_event *ev = NULL;
    size_t cap = 0;
    for (int rk = 0; rk < r->nranks; rk++) {
        size_t n = eng_rank_events(r, rk, &ev, &cap);
        for (size_t i = 0; i < n; i++) {
            const eng_event *e = &ev[i];
            const plan_op *o = &p->progs[p->prog_of_rank[e->rank]].ops[e->op];
            if (o->kind != OPK_COMPUTE || o->kclass >= KC_COUNT || o->cost_table >= CS_COUNT)
                continue;
            double d = e->t1 - e->t0;
            c->total_s += d;
            c->class_s[o->kclass] += d;
            c->class_src_s[o->kclass][o->cost_table] += d;
            if (o->cost_table != CS_ROOFLINE)
                c->table_s += d;
        }
    }
    free(ev);
}

void rep_encoder_time(const plan *p, const eng_result *r, int request, rep_request *rq)
{
    rq->encoder_compute_s = rq->encoder_comm_s = rq->encoder_span_s = 0;
    const plan_prog *pg = &p->progs[p->prog_of_rank[0]];
    eng_event *ev = NULL;
    size_t cap = 0, n = eng_rank_events(r, 0, &ev, &cap);
    double lo = 0, hi = 0;
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        const plan_op *o = &pg->ops[ev[i].op];
        if (o->request != request || strncmp(o->name, "audio.", 6) != 0)
            continue;
        double d = ev[i].t1 - ev[i].t0;
        if (o->kind == OPK_COMPUTE)
            rq->encoder_compute_s += d;
        else if (o->kind == OPK_COLL)
            rq->encoder_comm_s += d;
        lo = any && lo < ev[i].t0 ? lo : ev[i].t0;
        hi = any && hi > ev[i].t1 ? hi : ev[i].t1;
        any = 1;
    }
    rq->encoder_span_s = hi - lo;
    free(ev);
}

static void requests(const scenario *s, const plan *p, const eng_result *r, rep_summary *sm)
{
    int step = 0;
    for (int q = 0; q < s->nreqs; q++) {
        rep_request *rq = &sm->reqs[q];
        rq->id = q;
        rq->prompt_tokens = s->reqs[q].prompt_tokens;
        rq->cached_tokens = s->reqs[q].cached_tokens;
        rq->decode_tokens = s->reqs[q].decode_tokens;
        rq->arrival_s = s->reqs[q].arrival_s;
        rq->audio_frames = s->reqs[q].audio_frames;
        if (rq->audio_frames > 0)
            rep_encoder_time(p, r, q, rq);
        int prefill = p->prefill_steps ? p->prefill_steps[q] : 1;
        int nsteps = prefill + (int)s->reqs[q].decode_tokens;
        rq->split = 1;
        for (int k = 0; k < nsteps; k++, step++) {
            int split = p->step_split && p->step_split[step];
            int ring = p->step_ring ? p->step_ring[step] : PR_NONE;
            rq->split_steps += split;
            if (ring != PR_NONE)
                rq->ring = rq->ring == PR_NONE || rq->ring == ring ? ring : PR_COUNT;
            if (k < prefill && !split)
                rq->split = 0;
            double end = 0;
            for (int rk = 0; rk < p->nranks; rk++) {
                double e = r->step_end[(size_t)rk * r->nsteps + step];
                if (e > end)
                    end = e;
            }
            if (k == prefill - 1)
                rq->first_token_s = end;
            rq->end_s = end;
        }
        rq->ttft_s = rq->first_token_s - rq->arrival_s;
        rq->tpot_s = rq->decode_tokens > 0
                         ? (rq->end_s - rq->first_token_s) / (double)rq->decode_tokens
                         : 0.0;
    }
    sm->ttft_s = s->nreqs > 0 ? sm->reqs[0].ttft_s : 0.0;
}

/* The OOM verdict by budget: a preallocated KV pool must leave room for
 * itself (gpu_memory_utilization) and hold the requests' KV (kv_pool); the
 * timeline must stay within the device (capacity). */
static void budgets(const scenario *s, const plan *p, rep_summary *sm)
{
    const char *budget = NULL;
    double excess = 0;
    if (s->mem.kv_pool == KVP_PREALLOCATE && p->nprogs > 0) {
        double pool = p->progs[0].kv_pool, need = p->progs[0].kv_need;
        for (int g = 1; g < p->nprogs; g++) {
            pool = pool < p->progs[g].kv_pool ? pool : p->progs[g].kv_pool;
            need = need > p->progs[g].kv_need ? need : p->progs[g].kv_need;
        }
        sm->kv_pool_bytes = pool > 0 ? pool : 0;
        sm->kv_need_bytes = need;
        if (pool < 0) {
            budget = "gpu_memory_utilization";
            excess = -pool;
        } else if (need > pool) {
            budget = "kv_pool";
            excess = need - pool;
        }
    }
    /* the tensors and the engine at once, the allocator's cache released
     * (oom_fn) */
    double held = 0;
    for (int rk = 0; rk < sm->nranks; rk++)
        for (int k = 0; k < PH_COUNT; k++)
            held = fmax(held, sm->ranks[rk].peak_by_phase[k]);
    if (!budget && held > sm->capacity_bytes) {
        budget = "capacity";
        excess = held - sm->capacity_bytes;
    }
    sm->oom = budget != NULL;
    if (budget) {
        snprintf(sm->oom_budget, sizeof sm->oom_budget, "%s", budget);
        sm->oom_excess_bytes = excess;
        if (sm->oom_rank < 0) { /* a budget exceeded before any instant: set-up */
            sm->oom_rank = 0;
            snprintf(sm->oom_phase, sizeof sm->oom_phase, "set-up (KV pool)");
        }
    }
}

int rep_summarize(const scenario *s, const plan *p, const eng_result *r,
                  rep_summary *out, cp_err *err)
{
    (void)err;
    memset(out, 0, sizeof *out);
    out->nranks = p->nranks;
    out->ranks = calloc((size_t)p->nranks, sizeof *out->ranks);
    out->nreqs = s->nreqs;
    out->reqs = calloc((size_t)s->nreqs + 1, sizeof *out->reqs);
    if (!out->ranks || !out->reqs)
        abort();
    for (int rk = 0; rk < p->nranks; rk++)
        out->ranks[rk].rank = rk;
    out->capacity_bytes = s->plat.hbm_bytes;
    busy_times(p, r, out);
    memory_peaks(p, r, out);
    cost_sources(p, r, out);
    requests(s, p, r, out);
    out->makespan_s = r->end_s;
    budgets(s, p, out);
    out->events = (long)r->nev;
    out->messages = r->messages;
    out->execs = r->execs;
    out->replicas_simulated = r->replicas_simulated;
    out->tp_shared = r->tp_shared;
    out->iters_simulated = r->iters_simulated;
    out->iters_replayed = r->iters_replayed;
    out->replay_near_s = r->replay_near_s;
    out->wall_s = r->wall_s;
    return 0;
}

void rep_summary_free(rep_summary *sm)
{
    free(sm->ranks);
    free(sm->reqs);
    memset(sm, 0, sizeof *sm);
}

static json_t *scenario_json(const scenario *s)
{
    json_t *j = json_object();
    json_object_set_new(j, "workload", json_string(s->path));
    json_object_set_new(j, "model", json_string(s->model.name));
    json_object_set_new(j, "platform", json_string(s->plat.name));
    if (s->plat.calibration[0])
        json_object_set_new(j, "calibration", json_string(s->plat.calibration));
    json_object_set_new(j, "nodes", json_integer(s->plat.nodes));
    json_object_set_new(j, "devices_per_node", json_integer(s->plat.devices_per_node));
    json_t *par = json_object();
    json_object_set_new(par, "tp", json_integer(s->par.tp));
    json_object_set_new(par, "sp", json_integer(s->par.sp));
    json_object_set_new(par, "ep", json_integer(s->par.ep));
    json_object_set_new(par, "dp", json_integer(s->par.dp));
    if (s->par.dcp > 1)
        json_object_set_new(par, "dcp", json_integer(s->par.dcp));
    json_object_set_new(par, "kv_storage", json_string(wl_kv_storage_name(s->par.kv_storage)));
    json_object_set_new(par, "exchange", json_string(wl_exchange_name(s->par.exchange)));
    json_object_set_new(par, "min_tokens", json_integer(s->par.min_tokens));
    json_object_set_new(j, "parallel", par);
    json_object_set_new(j, "weights_dtype", json_string(wl_weights_name(s)));
    json_object_set_new(j, "activations_dtype", json_string(dtype_name(s->a_dtype)));
    json_object_set_new(j, "graph", json_string(wl_graph_name(s->graph)));
    json_object_set_new(j, "kernels", json_string(s->kernels.name));
    if (s->prefill_node)
        json_object_set_new(j, "role", json_string("prefill"));
    return j;
}

/* {"table_share": f, "compute_s": s, "by_class": {class: {"compute_s",
 * "table_share", "sources": {"table:<file>" | "roofline:<class>": s}}}} */
static json_t *cost_sources_json(const rep_costsrc *c)
{
    json_t *j = json_object(), *by = json_object();
    json_object_set_new(j, "compute_s", json_real(c->total_s));
    json_object_set_new(j, "table_share", json_real(c->total_s > 0 ? c->table_s / c->total_s : 0));
    for (int k = 0; k < KC_COUNT; k++) {
        if (c->class_s[k] <= 0)
            continue;
        json_t *o = json_object(), *src = json_object();
        json_object_set_new(o, "compute_s", json_real(c->class_s[k]));
        json_object_set_new(o, "table_share",
                            json_real(1.0 - c->class_src_s[k][CS_ROOFLINE] / c->class_s[k]));
        for (int t = 0; t < CS_COUNT; t++) {
            if (c->class_src_s[k][t] <= 0)
                continue;
            char name[64];
            plan_op probe = {.kclass = (uint8_t)k, .cost_table = (uint8_t)t};
            json_object_set_new(src, plan_cost_src(&probe, name, sizeof name),
                                json_real(c->class_src_s[k][t]));
        }
        json_object_set_new(o, "sources", src);
        json_object_set_new(by, plan_kclass_name(k), o);
    }
    json_object_set_new(j, "by_class", by);
    return j;
}

/* engine.role: prefill: the KV a request's prefill leaves for the decode
 * node, by position.  The cache holds cached + prompt positions; position
 * x lies on the rank of cp index x % stripes (stripes = sp x dcp by
 * position, vllm-ascend's cp_rank = pcp_rank x dcp + dcp_rank; 1 when each
 * TP group holds every position of its heads or latent); bytes_per_rank
 * is the largest shard (models/build/build.h build_kv_bytes), and
 * transfer_s the shard over the rank's own NIC at its rate (platform
 * network: bandwidth x efficiency) with every rank sending at once: a
 * lower bound, no contention, latency or the decode side's layout. */
static json_t *handover_json(const scenario *s, const rep_request *rq)
{
    const wl_parallel *p = &s->par;
    int64_t positions = rq->cached_tokens + rq->prompt_tokens;
    int by_position = (p->sp > 1 && p->kv_storage == KV_BY_POSITION) || p->dcp > 1;
    int stripes = by_position ? p->sp * (p->dcp > 1 ? p->dcp : 1) : 1;
    double per_rank = build_kv_bytes(s, positions);
    double rate = plat_link_rate(&s->plat, &s->plat.nic);
    json_t *o = json_object();
    json_object_set_new(o, "positions", json_integer(positions));
    json_object_set_new(o, "layout", json_string(by_position ? "by_position" : "by_head"));
    json_object_set_new(o, "stripes", json_integer(stripes));
    json_object_set_new(o, "bytes_per_rank", json_real(per_rank));
    json_object_set_new(o, "transfer_s", json_real(rate > 0 ? per_rank / rate : 0.0));
    return o;
}

/* One entry of summary.json requests[]. */
static json_t *request_json(const rep_request *rq, const scenario *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(rq->id));
    json_object_set_new(o, "prompt_tokens", json_integer(rq->prompt_tokens));
    json_object_set_new(o, "arrival_s", json_real(rq->arrival_s));
    json_object_set_new(o, "ttft_s", json_real(rq->ttft_s));
    json_object_set_new(o, "decode_tokens", json_integer(rq->decode_tokens));
    json_object_set_new(o, "tpot_s", json_real(rq->tpot_s));
    json_object_set_new(o, "end_s", json_real(rq->end_s));
    json_object_set_new(o, "split", json_boolean(rq->split));
    json_object_set_new(o, "split_steps", json_integer(rq->split_steps));
    if (s->prefill_node)
        json_object_set_new(o, "kv_handover", handover_json(s, rq));
    if (rq->audio_frames > 0) { /* the audio encoder's part of its prefill */
        enc_shape e = enc_audio_shape(&s->model.audio, rq->audio_frames);
        json_t *a = json_object();
        json_object_set_new(a, "seconds", json_real((double)rq->audio_frames / ENC_FRAMES_PER_S));
        json_object_set_new(a, "mel_frames", json_integer(rq->audio_frames));
        json_object_set_new(a, "rows", json_integer(e.rows));
        json_object_set_new(a, "windows", json_integer(e.windows));
        json_object_set_new(a, "exchange", json_string(s->par.encoder_exchange == ENCX_ULYSSES
                                                           ? "ulysses" : "none"));
        json_object_set_new(a, "span_s", json_real(rq->encoder_span_s));
        json_object_set_new(a, "compute_s", json_real(rq->encoder_compute_s));
        json_object_set_new(a, "comm_s", json_real(rq->encoder_comm_s));
        json_object_set_new(o, "audio", a);
    }
    if (rq->ring != PR_NONE) /* which ring its split steps ran */
        json_object_set_new(o, "ring", json_string(rq->ring == PR_COUNT
                                                       ? "mixed"
                                                       : plan_ring_name(rq->ring)));
    return o;
}

json_t *rep_summary_json(const rep_summary *sm, const scenario *s)
{
    json_t *j = json_object();
    json_object_set_new(j, "schema", json_string("cpsim.summary/1"));
    json_object_set_new(j, "scenario", scenario_json(s));
    json_object_set_new(j, "ttft_s", json_real(sm->ttft_s));
    json_object_set_new(j, "makespan_s", json_real(sm->makespan_s));
    json_t *reqs = json_array();
    for (int q = 0; q < sm->nreqs; q++)
        json_array_append_new(reqs, request_json(&sm->reqs[q], s));
    json_object_set_new(j, "requests", reqs);
    json_t *ranks = json_array();
    for (int rk = 0; rk < sm->nranks; rk++) {
        const rep_rank *rr = &sm->ranks[rk];
        json_t *o = json_object();
        json_object_set_new(o, "rank", json_integer(rr->rank));
        json_object_set_new(o, "compute_s", json_real(rr->compute_s));
        json_object_set_new(o, "comm_s", json_real(rr->comm_s));
        json_object_set_new(o, "overlap_s", json_real(rr->overlap_s));
        json_object_set_new(o, "peak_bytes", json_real(rr->peak_bytes));
        json_object_set_new(o, "peak_tensor_bytes", json_real(rr->peak_tensor_bytes));
        json_object_set_new(o, "peak_reserved_bytes", json_real(rr->peak_reserved_bytes));
        json_object_set_new(o, "engine_bytes", json_real(rr->engine_bytes));
        json_object_set_new(o, "peak_t_s", json_real(rr->peak_t));
        json_t *cat = json_object();
        for (int c = 0; c < MC_COUNT; c++)
            json_object_set_new(cat, plan_memcat_name(c), json_real(rr->peak_by_cat[c]));
        json_object_set_new(o, "peak_by_category", cat);
        json_t *ph = json_object();
        for (int k = 0; k < PH_COUNT; k++)
            json_object_set_new(ph, plan_phase_name(k), json_real(rr->peak_by_phase[k]));
        json_object_set_new(o, "peak_by_phase", ph);
        json_object_set_new(o, "peak_phase", json_string(plan_phase_name(rr->peak_phase)));
        json_array_append_new(ranks, o);
    }
    json_object_set_new(j, "ranks", ranks);
    json_object_set_new(j, "compute_s_max", json_real(sm->compute_s_max));
    json_object_set_new(j, "comm_s_max", json_real(sm->comm_s_max));
    json_object_set_new(j, "overlap_s_max", json_real(sm->overlap_s_max));
    json_object_set_new(j, "overlap_fraction", json_real(sm->overlap_fraction));
    json_object_set_new(j, "peak_bytes_max", json_real(sm->peak_bytes_max));
    json_object_set_new(j, "peak_tensor_bytes", json_real(sm->peak_tensor_bytes_max));
    json_object_set_new(j, "peak_reserved_bytes", json_real(sm->peak_reserved_bytes_max));
    json_object_set_new(j, "engine_bytes", json_real(sm->engine_bytes_max));
    json_object_set_new(j, "peak_rank", json_integer(sm->peak_rank));
    json_object_set_new(j, "capacity_bytes", json_real(sm->capacity_bytes));
    json_object_set_new(j, "oom", json_boolean(sm->oom));
    if (sm->oom) {
        json_object_set_new(j, "oom_rank", json_integer(sm->oom_rank));
        json_object_set_new(j, "oom_phase", json_string(sm->oom_phase));
        json_object_set_new(j, "oom_budget", json_string(sm->oom_budget));
        json_object_set_new(j, "oom_excess_bytes", json_real(sm->oom_excess_bytes));
    }
    json_t *em = json_object();
    json_object_set_new(em, "reserved_bytes", json_real(s->mem.reserved_bytes));
    json_object_set_new(em, "workspace_bytes", json_real(s->mem.workspace_bytes));
    json_object_set_new(em, "kv_pool", json_string(s->mem.kv_pool == KVP_PREALLOCATE
                                                       ? "preallocate" : "on_demand"));
    if (s->mem.kv_pool == KVP_PREALLOCATE) {
        json_object_set_new(em, "gpu_memory_utilization",
                            json_real(s->mem.gpu_memory_utilization));
        json_object_set_new(em, "kv_pool_bytes", json_real(sm->kv_pool_bytes));
        json_object_set_new(em, "kv_need_bytes", json_real(sm->kv_need_bytes));
    }
    json_object_set_new(j, "engine_memory", em);
    json_object_set_new(j, "cost_sources", cost_sources_json(&sm->cost));
    json_t *warn = json_array();
    for (int i = 0; i < s->nwarn; i++)
        json_array_append_new(warn, json_string(s->warn[i]));
    json_object_set_new(j, "warnings", warn);
    json_t *sim = json_object();
    json_object_set_new(sim, "events", json_integer(sm->events));
    json_object_set_new(sim, "messages", json_integer(sm->messages));
    json_object_set_new(sim, "execs", json_integer(sm->execs));
    if (sm->replicas_simulated > 0)
        json_object_set_new(sim, "replicas_simulated", json_integer(sm->replicas_simulated));
    /* ranks of each TP group simulated (1: one, its figures copied to the rest) */
    if (s->par.tp > 1)
        json_object_set_new(sim, "tp_ranks_simulated",
                            json_integer(sm->tp_shared > 1 ? s->par.tp / sm->tp_shared
                                                           : s->par.tp));
    /* layer iterations (copies of folded regions) simulated and replayed */
    json_object_set_new(sim, "iterations_simulated", json_integer(sm->iters_simulated));
    json_object_set_new(sim, "iterations_replayed", json_integer(sm->iters_replayed));
    json_object_set_new(j, "simulation", sim);
    return j;
}

int rep_write_json(json_t *j, const char *path, cp_err *err)
{
    rep_file rf;
    if (rep_open(&rf, path, err) != 0)
        return -1;
    int ok =
        json_dumpf(j, rf.f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) == 0;
    fputc('\n', rf.f);
    return rep_close(&rf, ok, err);
}

int rep_write_summary(const rep_summary *sm, const scenario *s, const char *path, cp_err *err)
{
    json_t *j = rep_summary_json(sm, s);
    int rc = rep_write_json(j, path, err);
    json_decref(j);
    return rc;
}
