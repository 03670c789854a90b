/* engine: the plan on SimGrid (see engine.h). */
#include "sim/engine/engine.h"

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xbt/config.h>
#include <xbt/dynar.h>
#include <xbt/log.h>

#include "collectives/sg_transport.h"
#include "sim/engine/engine_int.h"


eng_state eng;


/* The platform SimGrid holds (loaded by the first eng_run of the process). */
static struct {
    char *text;                 /* its XML (or raw file name) and network model */
    platform plat;              /* the platform of the last run checked against text */
    int l07, checked;           /* its network model; whether plat holds one */
} loaded;

/* ---- recording -------------------------------------------------------- */

/* Each rank records into its own block of the result (events.h), in the
 * order things happen there: an element makes one event, or one memory
 * event for a memory op (eng_add_mem). */
static void eng_push_event(const eng_event *e)
{
    eng_add_event(eng.res, e);
    if (e->t1 > eng.res->end_s)
        eng.res->end_s = e->t1;
}

/* ---- synchronisation --------------------------------------------------- */

/* Whether element e of the rank's sequence has completed. */
static int eng_dep_done(const rank_st *rs, uint32_t e)
{
    const plan_op *o = &rs->pg->ops[rs->ix->v.real[e]];
    return rs->done[o->stream] > rs->ix->pos[e];
}

int eng_ready(const rank_st *rs, uint32_t i)
{
    const plan_vseq *v = &rs->ix->v;
    const plan_op *o = &rs->pg->ops[v->real[i]];
    if (o->kind != OPK_STEP && o->step > rs->started_step)
        return 0;
    for (uint32_t k = v->dep_first[i]; k < v->dep_first[i + 1]; k++)
        if (!eng_dep_done(rs, v->deps[k]))
            return 0;
    if (o->kind == OPK_STEP)
        for (int s = 0; s < ST_COUNT; s++)
            if (s != o->stream && rs->done[s] < rs->ix->need[(size_t)o->step * ST_COUNT + s])
                return 0;
    return 1;
}

/* Actors are coroutines that switch only inside SimGrid calls, so the
 * rank's counters are read and written without a lock.  A stream whose op
 * is not ready parks on its semaphore, with no SimGrid call between its
 * check and the park, so a completion cannot slip between them; the
 * completion that makes the op ready releases it: one hand-off per wait,
 * no wake-up that finds the op still blocked. */
static void wait_ready(rank_st *rs, int s, uint32_t i)
{
    if (eng_ready(rs, i))
        return;
    rs->want[s] = i;
    rs->parked[s] = 1;
    rs->waiters++;
    sg_sem_acquire(rs->sem[s]);
}

static void mark_done(rank_st *rs, int stream)
{
    rs->done[stream]++;
    if (rp_on())
        rp_done(rs);
    if (rs->waiters == 0)
        return;
    for (int s = 0; s < ST_COUNT; s++)
        if (rs->parked[s] && eng_ready(rs, rs->want[s])) {
            rs->parked[s] = 0;
            rs->waiters--;
            sg_sem_release(rs->sem[s]);
        }
}

/* Sleep until time t; returns 1 when it slept. */
static int sleep_until(double t)
{
    double now = simgrid_get_clock();
    if (t <= now)
        return 0;
    sg_actor_sleep_for(t - now);
    return 1;
}

/* ---- interference ------------------------------------------------------- */

static void relink(const ilink *l)
{
    double fm = 1.0;
    for (int k = 0; k < 2; k++)
        if (l->owner[k] >= 0 && eng.ranks[l->owner[k]].fm > fm)
            fm = eng.ranks[l->owner[k]].fm;
    sg_link_set_bandwidth(l->link, l->bw / fm);
}

/* Make the rank's hog realise rs->fc.  Cancelling and starting an exec are
 * SimGrid calls, inside which another stream of the rank may run and change
 * rs->fc: only one stream applies at a time (hog_busy), and it loops until
 * the hog matches the factor in force, all at one simulated instant.  (Two
 * streams each starting a hog, one of them never cancelled, was the crash
 * of pass-Q rings with ring_overlap on 4+ nodes.) */
static void apply_hog(rank_st *rs)
{
    if (rs->hog_busy)
        return;
    rs->hog_busy = 1;
    while (rs->hog_fc != rs->fc) {
        double want = rs->fc;
        sg_exec_t old = rs->hog;
        rs->hog = NULL;
        if (old)
            sg_exec_cancel(old);
        if (want > 1.0) {
            /* a bounded exec beside the kernel leaves it speed / fc */
            sg_exec_t h = sg_actor_exec_init(rs->speed * 1e9);
            sg_exec_set_bound(h, rs->speed * (1.0 - 1.0 / want));
            sg_exec_start(h);
            rs->hog = h;
        }
        rs->hog_fc = want;
    }
    rs->hog_busy = 0;
}

/* Re-derive the rank's slowdowns after one of its streams started or ended
 * an op, and apply them to its host and links. */
static void interfere(rank_st *rs)
{
    if (!eng.im)
        return;
    double bytes = 0, fc = 1.0, fm = 1.0;
    int n = 0;
    for (int s = 0; s < ST_COUNT; s++)
        if (rs->comm_bytes[s] > bytes) {
            bytes = rs->comm_bytes[s];
            n = rs->comm_n[s];
        }
    if (rs->kernel_kind >= 0 && bytes > 0)
        interf_factors_at(eng.im, rs->kernel_kind, n, bytes, &fc, &fm);
    int relinks = fm != rs->fm;
    rs->fc = fc;
    rs->fm = fm;
    /* sg_link_set_bandwidth does not yield; apply_hog may */
    if (relinks)
        for (int k = 0; k < rs->nlinks; k++)
            relink(&eng.links[rs->links[k]]);
    apply_hog(rs);
}

/* The links of every rank, each listed once with its owners (a shared TP
 * rank owns the links of every device of its group: their ranks' factors
 * are its own). */
static void interfere_setup(const platform *pl, int nranks)
{
    char (*names)[48] = cp_xcalloc(64, sizeof *names);
    for (int r = 0; r < nranks; r++) {
        rank_st *rs = &eng.ranks[r];
        rs->links = cp_xcalloc((size_t)64 * eng.fold + 1, sizeof *rs->links);
        for (int d = eng_dev(r); d < eng_dev(r) + eng.fold; d++) {
            int n = plat_device_links(pl, d, names, 64);
            for (int i = 0; i < n; i++) {
                /* the slowdowns were measured on NVLink: a rank's NIC keeps its rate */
                if (strncmp(names[i], "nic_", 4) == 0)
                    continue;
                sg_link_t l = sg_link_by_name(names[i]);
                if (!l)
                    continue;
                int k = 0;
                while (k < eng.nlinks && eng.links[k].link != l)
                    k++;
                if (k == eng.nlinks) {
                    eng.links = realloc(eng.links,
                                        (size_t)(eng.nlinks + 1) * sizeof *eng.links);
                    if (!eng.links)
                        abort();
                    eng.links[k] = (ilink){l, sg_link_get_bandwidth(l), {r, -1}};
                    eng.nlinks++;
                } else if (eng.links[k].owner[0] == r) {
                    continue; /* a link between two devices of its group, listed */
                } else {
                    eng.links[k].owner[1] = r;
                }
                rs->links[rs->nlinks++] = k;
            }
        }
    }
    free(names);
}

/* ---- ops ---------------------------------------------------------------- */

/* A transfer starts on stream s of its rank: the interference it causes
 * and suffers (overlap.csv measured NVLink collectives and send/receive
 * pairs inside one node beside kernels: a hop to another node crosses the
 * NIC, which no row measured, and neither slows nor is slowed). */
void eng_comm_begins(stream_st *ss, int s, const plan_op *o, int nic_hop)
{
    rank_st *rs = ss->rs;
    rs->comm_bytes[s] = nic_hop ? 0 : o->comm_bytes > o->recv_bytes ? o->comm_bytes
                                                                     : o->recv_bytes;
    rs->comm_n[s] = plan_group_size(eng.lay, (plan_group)o->group);
    interfere(rs);
    /* the fixed cost of the call stretches like its transfers */
    ss->tctx.sleep_scale = nic_hop ? 1.0 : rs->fm;
}

/* The rank's group g (g < G_COUNT): its members in group order, as
 * devices (a shared TP rank's members are the devices of the ranks
 * simulated), their number in *n and the rank's index among them in *me.
 * Built on first use and kept for the run (freed by run_plan): a group's
 * members are fixed by the layout, and an SP128 ring's hops rebuilt and
 * allocated 128 of them per hop. */
static const int *rank_group(rank_st *rs, plan_group g, int *n, int *me)
{
    if ((unsigned)g >= G_COUNT)
        abort(); /* not a group of plan.h: a plan bug */
    if (!rs->grp[g]) {
        int k = plan_group_size(&eng.p->lay, g), dpn = eng.o->plat->devices_per_node;
        int *m = cp_xcalloc((size_t)(k > 0 ? k : 1), sizeof *m);
        rs->grp_me[g] = 0;
        plan_group_members(&eng.p->lay, rs->rank, g, m, k, &rs->grp_me[g]);
        for (int i = 0; i < k; i++)
            m[i] = eng_dev(m[i]);
        if (dpn < 1)
            dpn = 1;
        for (int i = 1; i < k && !rs->grp_cross[g]; i++)
            rs->grp_cross[g] = m[i] / dpn != m[0] / dpn;
        rs->grp[g] = m;
        rs->grp_n[g] = k;
    }
    *n = rs->grp_n[g];
    *me = rs->grp_me[g];
    return rs->grp[g];
}

int eng_hop_peers(rank_st *rs, const plan_op *o, int *to, int *from)
{
    int n, me;
    const int *members = rank_group(rs, (plan_group)o->group, &n, &me);
    int dpn = eng.o->plat->devices_per_node > 0 ? eng.o->plat->devices_per_node : 1;
    *to = o->comm_bytes > 0 ? members[((me + o->send_off) % n + n) % n] : -1;
    *from = o->recv_bytes > 0 ? members[((me + o->recv_off) % n + n) % n] : -1;
    int me_node = eng_dev(rs->rank) / dpn;
    return (*to >= 0 && *to / dpn != me_node) || (*from >= 0 && *from / dpn != me_node);
}

/* Whether ring hop o, due at the host-issue instant a, leaves its waits
 * for a and the stream's hold to its transport (sgt_defer: one SimGrid
 * sleep instead of two before a hop that pays its overhead first); sets
 * *t0 to the instant it starts.  Only where starting it early changes
 * nothing: no replay (replay.c reads each op's start when it happens), and
 * a hop that moves no bytes the interference model counts (a NIC hop, or
 * no model), so that eng_comm_begins leaves every factor as it is. */
static int hop_defers(stream_st *ss, const plan_op *o, double a, double *t0)
{
    if (o->kind != OPK_P2P || rp_on() || eng_tp_coll(o) || eng.o->sleep_each)
        return 0;
    int to, from;
    if (eng.im && !eng_hop_peers(ss->rs, o, &to, &from))
        return 0;
    return sgt_defer(&ss->tctx, a, ss->rs->hold[ss->stream], t0);
}

/* Run a collective or hop on stream s; returns the messages it sent. */
static long run_coll(stream_st *ss, int s, const plan_op *o)
{
    rank_st *rs = ss->rs;
    if (eng_tp_coll(o))
        return eng_tp_run(ss, s, o);
    int n, me;
    const int *members = rank_group(rs, (plan_group)o->group, &n, &me);
    long msgs = 0;
    tr_port port = sgt_port(&ss->tctx);
    if (o->kind == OPK_COLL) {
        coll_call c = {.kind = (plan_coll)o->coll, .alg = (plan_alg)o->alg,
                       .members = members, .n = n, .me = me,
                       .bytes = o->comm_bytes, .graph = eng.o->graph && !o->eager,
                       .cross_node = rs->grp_cross[o->group],
                       .custom = o->impl == IMPL_CUSTOM};
        /* a group across nodes still runs its in-node phases on NVLink */
        eng_comm_begins(ss, s, o, 0);
        msgs = coll_run(&port, eng.o->cm, &c);
    } else {
        int to, from, cross = eng_hop_peers(rs, o, &to, &from);
        eng_comm_begins(ss, s, o, cross);
        msgs = coll_sendrecv_in(&port, eng.o->cm, n, to, o->comm_bytes, from,
                                eng.o->graph && !o->eager, cross);
    }
    return msgs;
}

/* The streams of a rank that have finished wait for its last one, which
 * lets them all go.  An actor that exits has SimGrid cancel the activities
 * it started, and the engine dereferences the dead actor when it later
 * ends them (SimGrid 3.32 ExecImpl::post); the interference hog is started
 * by whichever stream changed the slowdown and may outlive it, so a stream
 * that exited first would crash the run (pass-Q rings with ring_overlap on
 * 4+ nodes did).  When the last stream finishes no kernel runs, so the hog
 * is gone (interfere() after the last kernel). */
static void leave_together(rank_st *rs)
{
    int active = 0;
    for (int st = 0; st < ST_COUNT; st++)
        active += rs->ix->nlist[st] > 0;
    if (++rs->nfinished < active) {
        sg_sem_acquire(rs->leave);
        return;
    }
    for (int k = 1; k < active; k++)
        sg_sem_release(rs->leave);
}

static double wall_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* n more elements passed; the progress line when it is due (the clock is
 * read every 1024 elements: a few microseconds of a run's work apart). */
static void progress(uint32_t n)
{
    const eng_opts *o = eng.o;
    uint64_t before = eng.passed;
    eng.passed += n;
    if (!o->progress || before >> 10 == eng.passed >> 10)
        return;
    double now = wall_now();
    if (now - eng.wall0 < o->progress_first_s ||
        (eng.wall_last > eng.wall0 && now - eng.wall_last < o->progress_every_s))
        return;
    eng.wall_last = now;
    fprintf(o->progress, "cpsim: simulating: %.0f %% of %llu ops, %.6f s simulated, "
            "%.0f s elapsed\n", eng.total ? 100.0 * (double)eng.passed / (double)eng.total : 0,
            (unsigned long long)eng.total, simgrid_get_clock() - eng.res->t0, now - eng.wall0);
    fflush(o->progress);
}

/* Kernel o, element i of the rank's sequence: an exec of its flops, or,
 * when nothing can run beside it on the host (alone.c), a wait of the
 * time SimGrid gives that exec alone (its flops over the host's speed,
 * from the same instant), unless shorter than SimGrid's precision. */
static void run_kernel(const rank_st *rs, uint32_t i, const plan_op *o)
{
    double flops = o->cost_s * rs->speed;
    if (eng_alone(rs->ix, i)) {
        double d = flops / rs->speed;
        if (d >= eng.precision) {
            eng.res->kernels_timed++;
            sg_actor_sleep_for(d);
            return;
        }
    }
    sg_actor_execute(flops);
}

static void stream_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    stream_st *ss = sg_actor_self_get_data();
    rank_st *rs = ss->rs;
    const prog_index *ix = rs->ix;
    int s = ss->stream;
    int nsteps = eng.res->nsteps;
    double *step_start = eng.res->step_start + (size_t)rs->rank * nsteps;
    double *step_end = eng.res->step_end + (size_t)rs->rank * nsteps;

    /* rs->skip[s] moves past ops a replay (replay.c) covered: checked
     * after every blocking call */
    for (uint32_t k = 0; k < ix->nlist[s];) {
        if (rs->skip[s] > k) {
            progress(rs->skip[s] - k);
            k = rs->skip[s];
            continue;
        }
        uint32_t i = ix->list[s][k];
        uint32_t real = ix->v.real[i];
        const plan_op *o = &rs->pg->ops[real];
        int32_t layer = plan_vseq_layer(rs->pg, &ix->v, i);
        rs->at[s] = i;
        wait_ready(rs, s, i);
        if (rs->skip[s] > k)
            continue;
        double base = o->step >= 0 ? step_start[o->step] : 0.0, t0;
        if (!hop_defers(ss, o, base + ix->issue_off[i], &t0)) {
            if (o->kind != OPK_STEP && sleep_until(base + ix->issue_off[i]) && rp_on())
                rp_issue_bound(rs, i);
            if (rs->skip[s] > k)
                continue;
            sleep_until(rs->hold[s]);
            t0 = simgrid_get_clock();
        }
        rs->started[s] = 1;
        int early = rp_on() ? rp_started(rs, i, t0) : 0;
        long msgs = 0;
        int execs = 0;
        switch (o->kind) {
        case OPK_COMPUTE:
            if (o->cost_s > 0) {
                rs->kernel_kind = interf_kind((plan_kclass)o->kclass);
                interfere(rs);
                run_kernel(rs, i, o);
                rs->kernel_kind = -1;
                interfere(rs);
                execs = 1;
            }
            break;
        case OPK_COLL:
        case OPK_P2P:
            msgs = run_coll(ss, s, o);
            sgt_settle(&ss->tctx);
            rs->comm_bytes[s] = 0;
            interfere(rs);
            break;
        case OPK_MEM:
            eng_add_mem(eng.res, &(eng_mem){.t = t0, .delta = o->mem_bytes, .rank = rs->rank,
                                            .op = real, .seq = i, .layer = layer,
                                            .cat = o->mem_cat});
            break;
        case OPK_STEP:
            sleep_until(o->arrival_s);
            t0 = simgrid_get_clock();
            step_start[o->step] = t0;
            rs->started_step = o->step; /* the waiters hear of it at mark_done */
            break;
        default:
            break;
        }
        rs->started[s] = 0;
        if (rs->skip[s] > k)
            continue; /* an early op a replay covered while it ran */
        double t1 = simgrid_get_clock();
        eng.res->messages += msgs;
        eng.res->execs += execs;
        if (o->kind != OPK_MEM)
            eng_push_event(&(eng_event){.t0 = t0, .t1 = t1, .rank = rs->rank, .op = real,
                                        .layer = layer, .stream = (uint8_t)s});
        if (rp_on())
            rp_ended(rs, i, t1, msgs, execs, early, o->kind == OPK_MEM,
                     o->kind == OPK_MEM ? eng.res->blk[rs->rank].nmem - 1
                                        : eng.res->blk[rs->rank].nev - 1);
        if (o->step >= 0 && t1 > step_end[o->step])
            step_end[o->step] = t1;
        mark_done(rs, s);
        k++;
        progress(1);
    }
    rs->finished[s] = 1;
    eng_tp_helpers_end(rs, s);
    leave_together(rs);
}

/* ---- results ------------------------------------------------------------ */

/* Without replay every element makes one record where it ran: each
 * rank's block sized exactly up front (with replay most are never made). */
static void reserve(rank_st *ranks, int nranks, eng_result *res)
{
    for (int r = 0; r < nranks; r++) {
        const plan_vseq *v = &ranks[r].ix->v;
        eng_block *b = &res->blk[r];
        for (uint32_t e = 0; e < v->n; e++) {
            if (ranks[r].pg->ops[v->real[e]].kind == OPK_MEM)
                b->mcap++;
            else
                b->cap++;
        }
        b->ev = malloc((b->cap + 1) * sizeof *b->ev);
        b->mem = malloc((b->mcap + 1) * sizeof *b->mem);
        if (!b->ev || !b->mem)
            abort();
    }
}

/* ---- set-up --------------------------------------------------------------- */

/* The index of a program.  Sizes: the expanded sequence of a 1,024-rank
 * ring (128 programs of 125 layers of ~770 ops) is 12 M elements, so each
 * array holds what it must and no more: the streams' lists their own
 * elements (counted first), `need` one row per step. */
static void index_build(const plan_prog *pg, prog_index *ix)
{
    memset(ix, 0, sizeof *ix);
    plan_vseq_build(pg, &ix->v);
    uint32_t n = ix->v.n, count[ST_COUNT] = {0};
    int32_t steps = 0;
    for (uint32_t i = 0; i < n; i++) {
        const plan_op *o = &pg->ops[ix->v.real[i]];
        count[o->stream]++;
        if (o->kind == OPK_STEP && o->step + 1 > steps)
            steps = o->step + 1;
    }
    ix->pos = malloc((n + 1) * sizeof *ix->pos);
    ix->issue_off = malloc((n + 1) * sizeof *ix->issue_off);
    ix->need = calloc((size_t)(steps + 1) * ST_COUNT, sizeof *ix->need);
    for (int s = 0; s < ST_COUNT; s++)
        ix->list[s] = malloc((count[s] + 1) * sizeof *ix->list[s]);
    if (!ix->pos || !ix->issue_off || !ix->need || !ix->list[0] || !ix->list[1] ||
        !ix->list[2])
        abort();
    double off = 0;
    for (uint32_t i = 0; i < n; i++) {
        const plan_op *o = &pg->ops[ix->v.real[i]];
        if (o->kind == OPK_STEP) {
            off = 0;
            for (int s = 0; s < ST_COUNT; s++)
                ix->need[(size_t)o->step * ST_COUNT + s] = ix->nlist[s];
        }
        off += o->launch_s;
        ix->issue_off[i] = off;
        ix->pos[i] = ix->nlist[o->stream];
        ix->list[o->stream][ix->nlist[o->stream]++] = i;
    }
}

static void index_free(prog_index *ix)
{
    plan_vseq_free(&ix->v);
    free(ix->pos);
    free(ix->alone);
    free(ix->issue_off);
    free(ix->need);
    for (int s = 0; s < ST_COUNT; s++)
        free(ix->list[s]);
}

void eng_init(int *argc, char **argv)
{
    int user_log = 0;
    for (int i = 1; i < *argc; i++)
        if (strncmp(argv[i], "--log=", 6) == 0)
            user_log = 1;
    if (!user_log)
        xbt_log_control_set("root.thres:warning");
    simgrid_init(argc, argv);
#if defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer cannot follow the stack switches of SimGrid's raw and
     * ucontext actors (make check-asan): actors run on threads there */
    sg_cfg_set_string("contexts/factory", "thread");
#endif
}

static int write_platform(const platform *pl, char *path, size_t len, cp_err *err)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, len, "%s/cpsim-platform-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return cp_fail(err, CP_EXIT_INTERNAL, "cannot create a temporary platform file in %s",
                       tmp && *tmp ? tmp : "/tmp");
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(path);
        return cp_fail(err, CP_EXIT_INTERNAL, "cannot write the temporary platform file");
    }
    int rc = plat_write_xml(pl, f, err);
    if (fclose(f) != 0 && rc == 0)
        rc = cp_fail(err, CP_EXIT_INTERNAL, "cannot write the temporary platform file");
    if (rc != 0)
        unlink(path);
    return rc;
}

static int report_unfinished(rank_st *ranks, int nranks, cp_err *err)
{
    char buf[512];
    size_t off = 0;
    int bad = 0;
    buf[0] = '\0';
    for (int r = 0; r < nranks; r++) {
        for (int s = 0; s < ST_COUNT; s++) {
            if (ranks[r].ix->nlist[s] == 0 || ranks[r].finished[s])
                continue;
            if (bad++ < 4 && off < sizeof buf) {
                const prog_index *ix = ranks[r].ix;
                uint32_t e = ranks[r].at[s];
                const plan_op *o = &ranks[r].pg->ops[ix->v.real[e]];
                off += (size_t)snprintf(buf + off, sizeof buf - off,
                                        "%s rank %d %s stream at op %u (%s, layer %d)",
                                        bad > 1 ? ";" : "", eng_dev(r), plan_stream_name(s),
                                        ix->v.real[e], o->name,
                                        plan_vseq_layer(ranks[r].pg, &ix->v, e));
            }
        }
    }
    if (!bad)
        return 0;
    return cp_fail(err, CP_EXIT_INTERNAL,
                   "simulation deadlocked: %d stream(s) did not finish:%s", bad, buf);
}

/* Load into SimGrid the platform of o's first `devices` devices (the first
 * run of the process; plat_first_devices: the nodes that hold them, routed
 * as in the whole platform), or check that a later run is on the same
 * platform and needs no node beyond those loaded. */
static int load_platform(const eng_opts *o, int devices, cp_err *err)
{
    platform cut = plat_first_devices(o->plat, devices);
    /* the platform of a run before, byte for byte, or the same with fewer
     * nodes (its nodes route as in the loaded one): its XML is the one
     * checked then (plat_write_xml reads nothing but the struct), so a
     * serving run's steps render it once, not once a step */
    if (loaded.checked && loaded.l07 == o->l07) {
        platform have = cut;
        have.nodes = loaded.plat.nodes;
        if (cut.nodes <= loaded.plat.nodes && memcmp(&loaded.plat, &have, sizeof have) == 0)
            return 0;
    }
    /* the platform as SimGrid would read it: a later run must be on the
     * same one (the same XML, or the same raw XML file) */
    char *text = NULL;
    size_t tlen = 0;
    FILE *mf = open_memstream(&text, &tlen);
    if (!mf)
        abort();
    int wrc = cut.raw_xml ? (fputs(cut.source, mf) < 0 ? -1 : 0) : plat_write_xml(&cut, mf, err);
    fputc(o->l07 ? '7' : '2', mf);
    if (fclose(mf) != 0 || wrc != 0) {
        free(text);
        return wrc != 0 ? -1 : cp_fail(err, CP_EXIT_INTERNAL, "out of memory");
    }
    if (loaded.text && strcmp(loaded.text, text) != 0) {
        free(text);
        return cp_fail(err, CP_EXIT_INTERNAL,
                       "eng_run: a process simulates on one platform and network model "
                       "(%d node(s) of it loaded, this run needs %d)", loaded.plat.nodes,
                       cut.nodes);
    }
    if (loaded.text)
        free(text);
    if (!loaded.text) {
        loaded.text = text; /* kept for the process's life */
        /* SimGrid settings that make collectives match their closed forms
         * (simgrid-notes.md section 0): CM02 without cross-traffic, no
         * TCP-gamma bound; or the ptask_L07 host model for fair sharing. */
        if (o->l07)
            sg_cfg_set_string("host/model", "ptask_L07");
        else {
            sg_cfg_set_string("network/model", "CM02");
            sg_cfg_set_boolean("network/crosstraffic", "no");
        }
        sg_cfg_set_double("network/TCP-gamma", 0.0);

        char xml[4096];
        if (cut.raw_xml)
            snprintf(xml, sizeof xml, "%s", cut.source);
        else if (write_platform(&cut, xml, sizeof xml, err) != 0)
            return -1;
        simgrid_load_platform(xml);
        if (!cut.raw_xml)
            unlink(xml);
    }
    loaded.plat = cut;
    loaded.l07 = o->l07;
    loaded.checked = 1;
    return 0;
}

/* Simulate plan p (platform loaded) into res (its arrays allocated): each
 * rank for `fold` ranks of the layout lay (1: p as it is, &p->lay). */
static int run_plan(const plan *p, const eng_opts *o, int fold, const plan_layout_cfg *lay,
                    eng_result *res, cp_err *err)
{
    res->t0 = simgrid_get_clock();

    prog_index *ix = calloc((size_t)p->nprogs, sizeof *ix);
    rank_st *ranks = calloc((size_t)p->nranks, sizeof *ranks);
    stream_st *streams = calloc((size_t)p->nranks * ST_COUNT, sizeof *streams);
    if (!ix || !ranks || !streams)
        abort();
    for (int g = 0; g < p->nprogs; g++)
        index_build(&p->progs[g], &ix[g]);

    eng.p = p;
    eng.o = o;
    eng.res = res;
    eng.ranks = ranks;
    eng.ix = ix;
    eng.fold = fold;
    eng.lay = lay;
    eng.tw = sgt_new(p->nranks * eng.fold, ST_COUNT);
    eng.wall0 = eng.wall_last = wall_now();
    for (int r = 0; r < p->nranks; r++)
        for (int st = 0; st < ST_COUNT; st++)
            eng.total += ix[p->prog_of_rank[r]].nlist[st];

    int rc = 0;
    for (int r = 0; r < p->nranks && rc == 0; r++) {
        rank_st *rs = &ranks[r];
        char host[128];
        plat_host_name(o->plat, eng_dev(r), host, sizeof host);
        rs->rank = r;
        rs->pg = &p->progs[p->prog_of_rank[r]];
        rs->ix = &ix[p->prog_of_rank[r]];
        rs->host = sg_host_by_name(host);
        if (!rs->host) {
            rc = cp_fail(err, CP_EXIT_INPUT, "%s: platform has no host \"%s\" for rank %d",
                         o->plat->source, host, eng_dev(r));
            break;
        }
        rs->speed = sg_host_get_speed(rs->host);
        for (int st = 0; st < ST_COUNT; st++)
            rs->sem[st] = sg_sem_init(0);
        rs->leave = sg_sem_init(0);
        rs->started_step = -1;
        /* no slowdown until interference says otherwise; with no
         * interference model these stay (fm scales the fixed cost of
         * every collective: left at 0 it erased the collective latency of
         * every uncalibrated platform) */
        rs->kernel_kind = -1;
        rs->fc = rs->fm = rs->hog_fc = 1.0;
    }
    /* one actor per stream with ops; SimGrid steps actors ready at one
     * instant in the order they started */
    size_t nact = (size_t)p->nranks * ST_COUNT;
    for (size_t q = 0; q < nact && rc == 0; q++) {
        size_t at = o->reverse_actors ? nact - 1 - q : q;
        int r = (int)(at / ST_COUNT), s = (int)(at % ST_COUNT);
        rank_st *rs = &ranks[r];
        if (rs->ix->nlist[s] == 0)
            continue;
        stream_st *ss = &streams[at];
        ss->rs = rs;
        ss->stream = s;
        sgt_ctx_init(&ss->tctx, eng.tw, eng_dev(r), s);
        char name[64];
        snprintf(name, sizeof name, "r%d.%s", r, plan_stream_name(s));
        sg_actor_t a = sg_actor_init(name, rs->host);
        sg_actor_set_data(a, ss);
        sg_actor_start(a, stream_main, 0, NULL);
    }

    int measured = o->im && (o->im->ngroups[IK_GEMM] > 0 || o->im->ngroups[IK_ATTENTION] > 0);
    eng.im = !o->l07 && measured ? o->im : NULL;
    if (rc == 0 && eng.fold > 1)
        eng_tp_helpers_start(p, ranks);
    if (rc == 0 && eng.im)
        interfere_setup(o->plat, p->nranks);
    eng.precision = sg_cfg_get_double("surf/precision");
    /* timed kernels need a host whose speed is its speed: a platform file
     * of the user's may give its hosts speed profiles or pstates */
    if (rc == 0 && !o->l07 && !o->exec_each && !o->plat->raw_xml)
        eng_alone_setup(p, ranks, ix);
    if (rc == 0) {
        rp_setup();
        if (!rp_on())
            reserve(ranks, p->nranks, res);
    }
    if (rc == 0) {
        struct timespec w0, w1;
        clock_gettime(CLOCK_MONOTONIC, &w0);
        simgrid_run();
        clock_gettime(CLOCK_MONOTONIC, &w1);
        res->wall_s = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
        rc = report_unfinished(ranks, p->nranks, err);
        if (rc == 0 && eng.asym)
            rc = cp_fail(err, CP_EXIT_INTERNAL,
                         "shared TP ranks: the TP collective %s did not end at one instant on "
                         "its group's devices, so they do not run as one "
                         "(simulation.share_tp: false simulates every rank)", eng.asym->name);
        rp_finish(res);
    }
    rp_free();

    for (int r = 0; r < p->nranks; r++) {
        for (int st = 0; st < ST_COUNT; st++)
            if (ranks[r].sem[st])
                sg_sem_destroy(ranks[r].sem[st]);
        if (ranks[r].leave)
            sg_sem_destroy(ranks[r].leave);
        free(ranks[r].links);
        for (int g = 0; g < G_COUNT; g++)
            free(ranks[r].grp[g]);
    }
    free(eng.links);
    for (int g = 0; g < p->nprogs; g++)
        index_free(&ix[g]);
    res->waits_deferred = eng.tw ? sgt_folds(eng.tw) : 0;
    sgt_free(eng.tw);
    free(ix);
    free(ranks);
    free(streams);
    eng_tp_helpers_free(p->nranks);
    memset(&eng, 0, sizeof eng);
    return rc;
}

/* ---- independent replicas ---------------------------------------------------------- */

/* The ranks of one model replica when p's dp replicas can be simulated as
 * one and copied: the same program on every replica's rank i, no group
 * wider than a replica (EP groups inside it, no G_WORLD op), replicas
 * aligned with nodes (a replica fills whole nodes or a node holds whole
 * replicas) on a generated, homogeneous platform.  Then each replica is a
 * block of devices whose routes cross links of its own (the generated
 * layout's guarantee, plat_first_devices in platform.h, tested by
 * check_platform), so nothing of one replica can slow another, and the
 * first one runs alone on the nodes that hold it as it would beside the
 * rest.  Otherwise 0: the run simulates every rank, on the whole platform
 * (a raw XML file's routes are its author's, and a group or an EP all-to-all
 * across replicas couples them). */
static int replica_ranks(const plan *p, const eng_opts *o)
{
    const plan_layout_cfg *l = &p->lay;
    int rpr = l->tp * l->sp, dpn = o->plat->devices_per_node;
    if (l->dp <= 1 || o->plat->raw_xml || l->ep > rpr || rpr % l->ep != 0 || dpn <= 0 ||
        (rpr % dpn != 0 && dpn % rpr != 0))
        return 0;
    for (int r = rpr; r < p->nranks; r++)
        if (p->prog_of_rank[r] != p->prog_of_rank[r % rpr])
            return 0;
    for (int g = 0; g < p->nprogs; g++)
        for (uint32_t i = 0; i < p->progs[g].nops; i++) {
            const plan_op *op = &p->progs[g].ops[i];
            if ((op->kind == OPK_COLL || op->kind == OPK_P2P) && op->group == G_WORLD)
                return 0;
        }
    return rpr;
}

/* res of the first replica (rpr ranks) copied to every replica of p: the
 * others read its records (events.h), their step times are its. */
static void copy_replicas(const plan *p, int rpr, eng_result *res)
{
    int dp = p->nranks / rpr, ns = res->nsteps;
    double *ss = res->step_start, *se = res->step_end;
    for (int d = 1; d < dp; d++) {
        memcpy(ss + (size_t)d * rpr * ns, ss, (size_t)rpr * ns * sizeof *ss);
        memcpy(se + (size_t)d * rpr * ns, se, (size_t)rpr * ns * sizeof *se);
    }
    eng_replicate(res, p->nranks);
    res->messages *= dp;
    res->execs *= dp;
}

/* ---- shared TP ranks (tpshare.c decides) ------------------------------------ */

/* res, its records, step times and counters for nall ranks of which the
 * first n are simulated. */
static void result_init(eng_result *res, const plan *p, int n, int nall)
{
    eng_result_init(res, n);
    res->nsteps = p->nsteps > 0 ? p->nsteps : 1;
    res->step_start = cp_xcalloc((size_t)nall * res->nsteps, sizeof *res->step_start);
    res->step_end = cp_xcalloc((size_t)nall * res->nsteps, sizeof *res->step_end);
}

/* A result of n simulated ranks read as n * fold: rank q's records and step
 * times are rank q / fold's (from the last rank down, each row read before
 * any row below it is written). */
static void widen(eng_result *res, int n, int fold)
{
    int ns = res->nsteps;
    for (int i = n - 1; i >= 0; i--)
        for (int t = fold - 1; t >= 0; t--) {
            size_t to = (size_t)(i * fold + t) * ns, from = (size_t)i * ns;
            memmove(res->step_start + to, res->step_start + from, ns * sizeof(double));
            memmove(res->step_end + to, res->step_end + from, ns * sizeof(double));
        }
    eng_widen(res, n * fold, fold);
    res->messages *= fold;
    res->execs *= fold;
}

/* Simulate p (a replica's plan, or the whole plan of nall ranks) into res:
 * one rank per TP group where the groups run as one (eng_tp_fold_of), else
 * every rank; the step time arrays are sized for nall ranks. */
static int run_ranks(const plan *p, const eng_opts *o, int nall, eng_result *res, cp_err *err)
{
    int f = eng_tp_fold_of(p, o);
    if (f <= 1) {
        result_init(res, p, p->nranks, nall);
        return run_plan(p, o, 1, &p->lay, res, err);
    }
    plan fp = *p;
    fp.nranks = p->nranks / f;
    fp.lay.tp = 1;
    fp.lay.ep = 1;
    fp.lay.devices_per_node = p->lay.devices_per_node / f;
    fp.prog_of_rank = cp_xcalloc((size_t)fp.nranks, sizeof *fp.prog_of_rank);
    for (int r = 0; r < fp.nranks; r++)
        fp.prog_of_rank[r] = p->prog_of_rank[r * f];
    result_init(res, p, fp.nranks, nall);
    int rc = run_plan(&fp, o, f, &p->lay, res, err);
    free(fp.prog_of_rank);
    if (rc == 0) {
        widen(res, fp.nranks, f);
        res->tp_shared = f;
    }
    return rc;
}

int eng_run(const plan *p, const eng_opts *o, eng_result *res, cp_err *err)
{
    memset(res, 0, sizeof *res);
    if (p->nranks > plat_devices(o->plat))
        return cp_fail(err, CP_EXIT_INPUT, "the plan needs %d devices, platform %s has %d",
                       p->nranks, o->plat->name, plat_devices(o->plat));
    /* SimGrid holds only the nodes of the ranks simulated: one replica's
     * when they are shared, else the plan's (a platform larger than the
     * plan leaves the rest idle: they cannot change its times) */
    int rpr = o->share_replicas ? replica_ranks(p, o) : 0;
    if (load_platform(o, rpr > 0 ? rpr : p->nranks, err) != 0)
        return -1;
    if (o->memo) {
        int got = eng_unison(p, o, rpr > 0 ? 1 : p->lay.dp, res, err);
        if (got != 0)
            return got < 0 ? -1 : 0;
    }
    int rc;
    if (rpr > 0) {
        plan one = *p;
        one.nranks = rpr;
        one.lay.dp = 1;
        rc = run_ranks(&one, o, p->nranks, res, err);
        if (rc == 0) {
            copy_replicas(p, rpr, res);
            res->replicas_simulated = 1;
        }
    } else {
        rc = run_ranks(p, o, p->nranks, res, err);
        if (rc == 0)
            res->replicas_simulated = p->lay.dp;
    }
    return rc;
}

eng_opts eng_opts_of(const scenario *s, const coll_model *cm, const interf_model *im)
{
    return (eng_opts){.plat = &s->plat, .cm = cm, .graph = s->graph != GRAPH_EAGER,
                      .l07 = s->net_model == NET_L07, .im = im,
                      .share_replicas = s->share_replicas, .share_tp = s->share_tp,
                      .replay = s->replay,
                      .replay_tol_s = s->replay_tol_s,
                      .progress_first_s = ENG_PROGRESS_FIRST_S,
                      .progress_every_s = ENG_PROGRESS_EVERY_S};
}
