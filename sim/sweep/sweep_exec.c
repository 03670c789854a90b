/* sweep_exec: running the points of a sweep (see sweep.h, sweep_exec).
 *
 * Each point is loaded and planned here (no simulation: a fraction of a
 * millisecond), so that a workload that does not load or a plan that cannot
 * be built is recorded at once, and so that points that would run the same
 * simulation (equal sweep_sim_key) run it once: the first starts a child,
 * the others wait for it and get its figures under their own scenario.  A
 * point whose plan is one built before, by what its build compared with
 * min_tokens (plan_met), is not planned again.  Up to `jobs` children run at
 * a time; poll() watches their pipes. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "models/build/build.h"
#include "base/grow.h"
#include "models/cost.h"
#include "reports/report.h"
#include "sim/driver/driver.h"
#include "sim/sweep/sweep.h"

/* Seconds between progress lines when stderr is not a terminal, and
 * between redraws of the bar when it is (our choices: a log line every 10 s
 * keeps a batch log short; 5 redraws a second look live). */
#define PROGRESS_LOG_S 10.0
#define PROGRESS_BAR_S 0.2

double sweep_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- progress --------------------------------------------------------------------- */

static void fmt_dur(double s, char *buf, size_t len)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

void sweep_progress_show(sweep_progress *p, int final)
{
    double t = sweep_now();
    if (p->quiet || (!final && t - p->last < (p->tty ? PROGRESS_BAR_S : PROGRESS_LOG_S)))
        return;
    p->last = t;
    double el = t - p->t0;
    int ran = p->done - p->resumed;
    char e[32], eta[32] = "?";
    fmt_dur(el, e, sizeof e);
    if (ran > 0)
        fmt_dur(el / ran * (p->total - p->done), eta, sizeof eta);
    if (p->tty) {
        /* 30 cells: a bar that fits an 80-column terminal with the figures */
        int width = 30, fill = p->total ? (int)((long)width * p->done / p->total) : width;
        fprintf(stderr, "\r[%.*s%*s] %d/%d  %d failed  %s elapsed  ETA %s\033[K",
                fill, "##############################", width - fill, "", p->done, p->total,
                p->failed, e, eta);
        if (final)
            fputc('\n', stderr);
    } else {
        fprintf(stderr, "sweep %s: %d/%d done, %d failed, %s elapsed, ETA %s\n", p->name,
                p->done, p->total, p->failed, e, eta);
    }
    if (final)
        fprintf(stderr, "sweep %s: %d points ran as %d simulations\n", p->name, ran,
                p->children);
    fflush(stderr);
}

/* ---- shared simulations ------------------------------------------------------------ */

/* A point waiting for the simulation it shares. */
typedef struct waiter {
    const sweep_point *pt;
    char hash[17];
    json_t *scenario;      /* its own summary "scenario" block */
} waiter;

enum { SIM_RUNNING, SIM_DONE, SIM_FAILED };

typedef struct sim {
    uint64_t key;
    int state;
    /* SIM_DONE: the result summary as compact JSON text, its reals at 17
     * digits (they read back to the same doubles), split where the
     * scenario goes (a sweep keeps one per simulation, a tenth of the bytes
     * of the tree, and writes the sharing points' lines from it); summary:
     * the whole text where it cannot be split */
    sweep_shared text;
    char *summary;
    cp_err *why;           /* SIM_FAILED */
    waiter *w;
    int nw;
    size_t cap;
} sim;

/* Open addressing on the key; the table doubles at half full. */
typedef struct sim_table {
    sim **slot;
    size_t cap, n;
} sim_table;

static sim *sim_find(sim_table *t, uint64_t key, int add)
{
    if (add && 2 * (t->n + 1) > t->cap) {
        sim_table g = {calloc(t->cap ? 2 * t->cap : 64, sizeof *g.slot),
                       t->cap ? 2 * t->cap : 64, 0};
        if (!g.slot)
            abort();
        for (size_t i = 0; i < t->cap; i++)
            if (t->slot[i]) {
                size_t j = t->slot[i]->key & (g.cap - 1);
                while (g.slot[j])
                    j = (j + 1) & (g.cap - 1);
                g.slot[j] = t->slot[i];
            }
        g.n = t->n;
        free(t->slot);
        *t = g;
    }
    if (!t->cap)
        return NULL;
    size_t j = key & (t->cap - 1);
    while (t->slot[j] && t->slot[j]->key != key)
        j = (j + 1) & (t->cap - 1);
    if (t->slot[j] || !add)
        return t->slot[j];
    sim *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->key = key;
    t->slot[j] = s;
    t->n++;
    return s;
}

static void sim_table_free(sim_table *t)
{
    for (size_t i = 0; i < t->cap; i++) {
        sim *s = t->slot[i];
        if (!s)
            continue;
        for (int k = 0; k < s->nw; k++)
            json_decref(s->w[k].scenario);
        free(s->w);
        sweep_shared_free(&s->text);
        free(s->summary);
        free(s->why);
        free(s);
    }
    free(t->slot);
    memset(t, 0, sizeof *t);
}

/* ---- plans met --------------------------------------------------------------------- */

/* A plan built for a point: its scenario less min_tokens (sweep_scenario_hashes),
 * the min_tokens comparisons its build made (scenario.h sc_split_probe) and
 * the simulation it keys.  The same scenario with any min_tokens in
 * (below, at] builds the same plan, so its points join that simulation
 * without building theirs (a sweep over min_tokens builds a plan per class
 * of equal decisions, not per point). */
typedef struct planned {
    uint64_t sans_min;
    sc_split_probe probe;
    uint64_t key;
    int used;
} planned;

/* Open addressing on sans_min; entries of one scenario sit in one cluster. */
typedef struct plan_table {
    planned *v;
    size_t n, cap;           /* cap a power of two, n <= cap / 2 */
} plan_table;

static const planned *plan_met(const plan_table *t, const planned *p, int64_t min_tokens)
{
    for (size_t j = t->cap ? p->sans_min & (t->cap - 1) : 0; t->cap && t->v[j].used;
         j = (j + 1) & (t->cap - 1)) {
        const planned *e = &t->v[j];
        if (e->sans_min == p->sans_min && e->probe.below < min_tokens &&
            min_tokens <= e->probe.at)
            return e;
    }
    return NULL;
}

static void plan_put(planned *v, size_t cap, const planned *p)
{
    size_t j = p->sans_min & (cap - 1);
    while (v[j].used)
        j = (j + 1) & (cap - 1);
    v[j] = *p;
    v[j].used = 1;
}

static void plan_add(plan_table *t, const planned *p)
{
    if (2 * (t->n + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        planned *v = cp_xcalloc(cap, sizeof *v);
        for (size_t i = 0; i < t->cap; i++)
            if (t->v[i].used)
                plan_put(v, cap, &t->v[i]);
        free(t->v);
        t->v = v;
        t->cap = cap;
    }
    plan_put(t->v, t->cap, p);
    t->n++;
}

/* ---- the runner ------------------------------------------------------------------- */

typedef struct slot {
    drv_child cp;
    const sweep_point *pt;
    char hash[17];
    sim *sim;              /* NULL when not sharing */
    double t0;
    int busy;
} slot;

/* A point planned and due to start a child of its own. */
typedef struct queued {
    const sweep_point *pt;
    char hash[17];
    sim *sim;
    char **sets;
    int nsets;
    scenario scen;           /* loaded and planned here: the child inherits */
    plan plan;
} queued;

typedef struct runner {
    const sweep_spec *sp;
    const sweep_exec_opts *o;
    sim_table sims;
    plan_table plans;      /* sharing on: the plans built so far */
    queued *queue;         /* at most `jobs`, oldest first */
    int nready;
    const volatile sig_atomic_t *stop; /* an interrupt arrived: record nothing more */
    /* the calibrated cost models of the platforms met so far: a point on a
     * platform identical byte for byte reuses its model (building one fits
     * the calibration tables); the oldest of RUNNER_COSTS is replaced */
    platform *cost_plat;
    cost_model **cost;
    int ncost, next_cost;
} runner;

/* our choice: a sweep's what-if axes rarely span more platforms at once */
#define RUNNER_COSTS 8

/* The cost model of platform p: from the runner's cache, or built; NULL
 * with why when it cannot be built.  The runner owns it. */
static const cost_model *cost_of(runner *r, const platform *p, cp_err *why)
{
    for (int i = 0; i < r->ncost; i++)
        if (memcmp(&r->cost_plat[i], p, sizeof *p) == 0)
            return r->cost[i];
    cost_model *cm = cost_new(p, why);
    if (!cm)
        return NULL;
    if (!r->cost) {
        r->cost_plat = cp_xcalloc(RUNNER_COSTS, sizeof *r->cost_plat);
        r->cost = cp_xcalloc(RUNNER_COSTS, sizeof *r->cost);
    }
    int k = r->ncost < RUNNER_COSTS ? r->ncost++ : r->next_cost++ % RUNNER_COSTS;
    if (r->cost[k])
        cost_free(r->cost[k]);
    r->cost[k] = cm;
    r->cost_plat[k] = *p;
    return cm;
}

/* A point recorded: the progress. */
static void count(runner *r, int failed)
{
    r->o->pg->done++;
    r->o->pg->failed += failed;
    sweep_progress_show(r->o->pg, 0);
}

static int record(runner *r, const sweep_point *pt, const char *hash, json_t *summary,
                  const cp_err *why, cp_err *err)
{
    json_t *line = sweep_result_line(r->sp, pt, hash, summary, why);
    int rc = sweep_append(r->o->fd, line, err);
    json_decref(line);
    count(r, summary == NULL);
    return rc;
}

/* A point that shares a finished simulation: its figures, its scenario. */
static int record_shared(runner *r, const sim *s, const waiter *w, cp_err *err)
{
    if (s->state == SIM_FAILED)
        return record(r, w->pt, w->hash, NULL, s->why, err);
    if (s->text.pre) {
        int rc = sweep_append_shared(r->o->fd, r->sp, w->pt, w->hash, &s->text, w->scenario,
                                     err);
        count(r, 0);
        return rc;
    }
    json_t *summary = json_loads(s->summary, 0, NULL);
    if (!summary)
        return cp_fail(err, CP_EXIT_INTERNAL, "sweep: cannot read back a shared summary");
    json_object_set(summary, "scenario", w->scenario);
    int rc = record(r, w->pt, w->hash, summary, NULL, err);
    json_decref(summary);
    return rc;
}

/* The summary "scenario" block of a scenario, as summary.json writes it. */
static json_t *scenario_block(const scenario *s)
{
    rep_summary none = {0};
    json_t *j = rep_summary_json(&none, s);
    json_t *b = json_incref(json_object_get(j, "scenario"));
    json_decref(j);
    return b;
}

/* The simulation the point runs: *e NULL when it runs alone (sharing off),
 * else its entry, new (*fresh) or started by an earlier point. */
static void share_of(runner *r, const scenario *s, const sweep_hashes *hs, const plan *p,
                     sim **e, int *fresh)
{
    *e = NULL;
    *fresh = 1;
    if (!r->o->share)
        return;
    uint64_t key = sweep_plan_key(s, hs, p);
    *e = sim_find(&r->sims, key, 0);
    *fresh = *e == NULL;
    if (!*e)
        *e = sim_find(&r->sims, key, 1);
}

/* Wait for (or take at once) the figures of a simulation already started. */
static int join(runner *r, sim *e, const sweep_point *pt, const char *hash, const scenario *s,
                cp_err *err)
{
    waiter w = {pt, "", scenario_block(s)};
    memcpy(w.hash, hash, sizeof w.hash);
    if (e->state != SIM_RUNNING) {
        int rc = record_shared(r, e, &w, err);
        json_decref(w.scenario);
        return rc;
    }
    e->w = cp_grow(e->w, &e->cap, (size_t)e->nw + 1, sizeof *e->w);
    e->w[e->nw++] = w;
    return 0;
}

/* Load and plan the point here: one that does not load or plan is
 * recorded at once, one that shares a simulation joins it, others queue for
 * a child of their own.  A point whose plan is one met before (plan_met)
 * joins that plan's simulation unplanned. */
static int plan_point(runner *r, const sweep_point *pt, cp_err *err)
{
    queued q = {.pt = pt};
    q.sets = sweep_point_sets(r->sp, pt, &q.nsets);
    drv_req rq = {.workload = r->sp->base, .sets = (const char *const *)q.sets,
                   .nsets = q.nsets};
    cp_err why = {0};
    if (wl_load(rq.workload, rq.sets, rq.nsets, NULL, &q.scen, &why) < 0) {
        sweep_sets_free(q.sets, q.nsets);
        return record(r, pt, NULL, NULL, &why, err);
    }
    sweep_hashes hs = {0};
    planned met = {0};
    int rc = sweep_scenario_hashes(&q.scen, &hs, err), fresh = 1, queue = 0;
    int memo = r->o->share && !q.scen.serving; /* serving keys on the whole scenario */
    met.sans_min = hs.sans_min;
    sweep_hex(hs.whole, q.hash);
    const planned *was = rc == 0 && memo ? plan_met(&r->plans, &met, q.scen.par.min_tokens)
                                         : NULL;
    q.scen.fold_at_build = q.scen.fold_layers; /* as drv_prepare */
    met.probe = (sc_split_probe){-1, INT64_MAX};
    if (rc == 0 && !was) {
        q.scen.split_probe = memo ? &met.probe : NULL;
        drv_plan(&q.scen, &q.plan);
        q.scen.split_probe = NULL;
        share_of(r, &q.scen, &hs, &q.plan, &q.sim, &fresh);
        if (memo) {
            met.key = q.sim->key;
            plan_add(&r->plans, &met);
        }
    } else if (rc == 0) {
        q.sim = sim_find(&r->sims, was->key, 0);
        fresh = 0;
    }
    if (rc == 0 && !fresh) {
        rc = join(r, q.sim, pt, q.hash, &q.scen, err);
    } else if (rc == 0) {
        /* priced as the child's own pipeline would (drv_prepare) */
        const cost_model *cm = cost_of(r, &q.scen.plat, &why);
        if (cm) {
            cost_price_plan(cm, &q.plan, q.scen.graph != GRAPH_EAGER);
            r->queue[r->nready++] = q;
            queue = 1;         /* the queue owns sets, scenario and plan */
        } else {
            if (q.sim) {       /* the points that share it fail as this one */
                q.sim->state = SIM_FAILED;
                q.sim->why = cp_xcalloc(1, sizeof *q.sim->why);
                *q.sim->why = why;
            }
            rc = record(r, pt, q.hash, NULL, &why, err);
        }
    }
    if (!queue) {
        plan_free(&q.plan);
        wl_free(&q.scen);
        sweep_sets_free(q.sets, q.nsets);
    }
    return rc;
}

/* Start the oldest queued point in the free slot s. */
static int spawn(runner *r, slot *s, cp_err *err)
{
    queued q = r->queue[0];
    memmove(r->queue, r->queue + 1, (size_t)--r->nready * sizeof *r->queue);
    drv_req rq = {.workload = r->sp->base, .sets = (const char *const *)q.sets,
                   .nsets = q.nsets};
    int rc = drv_spawn_prepared(&rq, &q.scen, &q.plan, &s->cp, err);
    plan_free(&q.plan);
    wl_free(&q.scen);
    r->o->pg->children += rc == 0;
    s->pt = q.pt;
    memcpy(s->hash, q.hash, sizeof q.hash);
    s->sim = q.sim;
    s->t0 = sweep_now();
    s->busy = rc == 0;
    sweep_sets_free(q.sets, q.nsets);
    return rc;
}

/* The child's outcome: the point's line, then those of the points that
 * share its simulation. */
static int finish_slot(runner *r, slot *s, int timed_out, cp_err *err)
{
    json_t *summary = NULL;
    cp_err why = {0};
    s->busy = 0;
    if (drv_finish(&s->cp, &summary, &why) < 0 && timed_out) {
        memset(&why, 0, sizeof why);
        cp_fail(&why, CP_EXIT_INTERNAL, "timed out after %g s (options.timeout_s)",
                r->o->timeout_s);
    }
    int rc = record(r, s->pt, s->hash, summary, &why, err);
    sim *e = s->sim;
    if (e) {
        e->state = summary ? SIM_DONE : SIM_FAILED;
        if (summary && sweep_shared_text(summary, &e->text) != 0) {
            e->summary = json_dumps(summary, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                    JSON_REAL_PRECISION(17));
            if (!e->summary)
                abort();
        } else if (!summary) {
            e->why = cp_xcalloc(1, sizeof *e->why);
            *e->why = why;
        }
        for (int k = 0; k < e->nw; k++) {
            if (rc == 0)
                rc = record_shared(r, e, &e->w[k], err);
            json_decref(e->w[k].scenario);
        }
        e->nw = 0;
    }
    json_decref(summary);
    return rc;
}

/* Children are disposable: on an interrupt they are killed unrecorded (with
 * the points waiting for them), and --resume runs them again. */
static void kill_all(slot *slots, int jobs)
{
    for (int k = 0; k < jobs; k++) {
        if (!slots[k].busy)
            continue;
        kill(slots[k].cp.pid, SIGKILL);
        json_t *summary = NULL;
        cp_err why = {0};
        drv_finish(&slots[k].cp, &summary, &why);
        json_decref(summary);
        slots[k].busy = 0;
    }
}

/* Record the children that finished (or ran out of time), waiting for one
 * (or a timeout, or a signal) when `block`. */
static int wait_some(runner *r, slot *slots, int jobs, int block, cp_err *err)
{
    struct pollfd *pf = calloc((size_t)jobs, sizeof *pf);
    int *who = calloc((size_t)jobs, sizeof *who);
    if (!pf || !who)
        abort();
    int n = 0, rc = 0;
    double t = sweep_now(), wait = r->o->pg->tty ? PROGRESS_BAR_S : PROGRESS_LOG_S;
    double limit = r->o->timeout_s;
    for (int k = 0; k < jobs; k++) {
        if (!slots[k].busy)
            continue;
        if (limit > 0 && slots[k].t0 + limit - t < wait)
            wait = slots[k].t0 + limit - t;
        pf[n] = (struct pollfd){.fd = slots[k].cp.fd, .events = POLLIN};
        who[n++] = k;
    }
    int nready = poll(pf, (nfds_t)n, block && wait > 0 ? (int)(wait * 1000) + 1 : 0);
    t = sweep_now();
    /* after an interrupt the children are killed unrecorded (kill_all): a
     * child the signal reached too must not be recorded as failed */
    for (int i = 0; nready >= 0 && i < n && rc == 0 && !*r->stop; i++) {
        slot *s = &slots[who[i]];
        if (pf[i].revents) {
            rc = finish_slot(r, s, 0, err);
        } else if (limit > 0 && t - s->t0 > limit) {
            kill(s->cp.pid, SIGKILL);
            rc = finish_slot(r, s, 1, err);
        }
    }
    free(pf);
    free(who);
    sweep_progress_show(r->o->pg, 0);
    return rc;
}

int sweep_exec(const sweep_spec *sp, const sweep_point *const *pending_pts, int npending,
               const sweep_exec_opts *o, const volatile sig_atomic_t *stop, cp_err *err)
{
    int jobs = o->jobs < 1 ? 1 : o->jobs;
    slot *slots = calloc((size_t)jobs, sizeof *slots);
    runner r = {sp, o, {0}, {0}, calloc((size_t)jobs, sizeof *r.queue), 0, stop, NULL, NULL, 0,
                0};
    if (!slots || !r.queue)
        abort();
    int next = 0, busy = 0, rc = 0;
    while (rc == 0 && !*stop && (next < npending || r.nready > 0 || busy > 0)) {
        busy = 0;
        for (int k = 0; k < jobs && rc == 0; k++) {
            if (!slots[k].busy && r.nready > 0)
                rc = spawn(&r, &slots[k], err);
            busy += slots[k].busy;
        }
        /* plan ahead while the children run, up to one queued point per
         * slot; wait only when there is nothing to plan */
        if (rc == 0 && next < npending && r.nready < jobs) {
            rc = plan_point(&r, pending_pts[next++], err);
            if (rc == 0 && busy > 0)
                rc = wait_some(&r, slots, jobs, 0, err);
        } else if (rc == 0 && busy > 0) {
            rc = wait_some(&r, slots, jobs, 1, err);
        }
    }
    kill_all(slots, jobs);
    for (int i = 0; i < r.nready; i++) {
        plan_free(&r.queue[i].plan);
        wl_free(&r.queue[i].scen);
        sweep_sets_free(r.queue[i].sets, r.queue[i].nsets);
    }
    free(r.queue);
    free(slots);
    sim_table_free(&r.sims);
    free(r.plans.v);
    for (int i = 0; i < r.ncost; i++)
        cost_free(r.cost[i]);
    free(r.cost);
    free(r.cost_plat);
    return rc < 0 ? -1 : *stop ? 1 : 0;
}
