/* check_engine: the SimGrid engine on small hand-made plans (launch rate,
 * cross-stream waits, overlap, steps, deadlock detection) and on the
 * default workload. One simulation per test (check's fork mode). */
#include <check.h>
#include <simgrid/host.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collectives/coll.h"
#include "models/build/build.h"
#include "models/cost.h"
#include "sim/driver/driver.h"
#include "sim/engine/engine.h"
#include "tests/testutil.h"

static platform plat;
static coll_model cm;

/* An h100-sxm-8 node; collectives with efficiency 1 and no fixed latency so
 * that times are easy to predict. */
static void setup(void)
{
    static char arg0[] = "check_engine";
    static char *argv[] = {arg0, NULL};
    int argc = 1;
    cp_err err = {0};
    tu_setup();
    ck_assert_msg(plat_load("h100-sxm-8", NULL, NULL, &plat, &err) == 0, "%s", err.msg);
    memset(&cm, 0, sizeof cm);
    cm.eff_default = 1.0;
    cm.oneshot_max = 0;
    eng_init(&argc, argv);
}

static plan_op compute_op(const char *name, double cost, double launch)
{
    plan_op o = {0};
    o.name = name;
    o.kind = OPK_COMPUTE;
    o.stream = ST_COMPUTE;
    o.kclass = KC_ELEMENTWISE;
    o.cost_s = cost;
    o.launch_s = launch;
    o.layer = -1;
    return o;
}

static plan_op step_op(double arrival)
{
    plan_op o = {0};
    o.name = "step";
    o.kind = OPK_STEP;
    o.stream = ST_COMPUTE;
    o.arrival_s = arrival;
    o.layer = -1;
    return o;
}

static plan_op allreduce_op(double bytes)
{
    plan_op o = {0};
    o.name = "all_reduce";
    o.kind = OPK_COLL;
    o.stream = ST_COMM;
    o.coll = CK_ALL_REDUCE;
    o.group = G_TP;
    o.alg = ALG_RING;
    o.comm_bytes = bytes;
    o.layer = -1;
    return o;
}

static void one_prog_plan(plan *p, int tp)
{
    plan_layout_cfg lay = {.tp = tp, .sp = 1, .ep = 1, .dp = 1, .devices_per_node = 8};
    plan_init(p, &lay);
    plan_add_prog(p);
    p->nsteps = 1;
    p->nrequests = 1;
}

static void run(const plan *p, eng_result *r)
{
    cp_err err = {0};
    eng_opts o = {.plat = &plat, .cm = &cm};
    ck_assert_msg(eng_run(p, &o, r, &err) == 0, "%s", err.msg);
}

/* Short kernels run at the host's launch rate, long ones back to back. */
START_TEST(launch_rate_bounds_short_kernels)
{
    plan p;
    one_prog_plan(&p, 1);
    plan_op st = step_op(0);
    plan_push(&p.progs[0], &st);
    for (int i = 0; i < 100; i++) {
        plan_op o = compute_op("tiny", 1e-6, 13e-6);
        plan_push(&p.progs[0], &o);
    }
    for (int i = 0; i < 10; i++) {
        plan_op o = compute_op("long", 1e-3, 13e-6);
        plan_push(&p.progs[0], &o);
    }
    eng_result r;
    run(&p, &r);
    /* the 100 tiny kernels run as they are issued, every 13 us, the last
     * ending at 100 * 13 us + 1 us; the first long one is issued 13 us later
     * (the GPU idles until then), and the rest, issued meanwhile, follow it
     * back to back */
    double expect = 101 * 13e-6 + 10 * 1e-3;
    ck_assert_double_eq_tol(r.end_s, expect, 1e-9);
    ck_assert_int_eq(r.nev, 111);
    eng_result_free(&r);
    plan_free(&p);
}
END_TEST

/* Two kernels on two streams with nothing between them share the host
 * (each at half speed: both end at 2 ms); kernels that dependencies keep
 * apart run alone, as timed waits (alone.c), at the host's full speed. */
START_TEST(kernels_alone_wait_kernels_beside_share)
{
    plan p;
    one_prog_plan(&p, 1);
    plan_prog *pg = &p.progs[0];
    plan_op st = step_op(0);
    plan_push(pg, &st);
    plan_op a = compute_op("A", 1e-3, 0), b = compute_op("B", 1e-3, 0);
    b.stream = ST_COMM2;
    plan_push(pg, &a);
    uint32_t ib = plan_push(pg, &b);
    plan_op c = compute_op("C", 1e-3, 0), d = compute_op("D", 1e-3, 0);
    d.stream = ST_COMM2;
    uint32_t ic = plan_push(pg, &c);
    plan_dep(pg, ic, ib);
    uint32_t id = plan_push(pg, &d);
    plan_dep(pg, id, ic);
    cp_err err = {0};
    for (int each = 0; each < 2; each++) {
        eng_opts o = {.plat = &plat, .cm = &cm, .exec_each = each};
        eng_result r;
        ck_assert_msg(eng_run(&p, &o, &r, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(r.execs, 4);
        ck_assert_int_eq(r.kernels_timed, each ? 0 : 2);
        size_t n;
        eng_event *ev = eng_all_events(&r, &n);
        for (size_t i = 0; i < n; i++) {
            double end = ev[i].op == ic ? 3e-3 : ev[i].op == id ? 4e-3 : 2e-3;
            if (ev[i].op != 0)
                ck_assert_double_eq_tol(ev[i].t1 - r.t0, end, 1e-12);
        }
        free(ev);
        eng_result_free(&r);
    }
    plan_free(&p);
}
END_TEST

/* TP8, one program: a 5 ms GEMM A beside a 1 GB all-reduce that depends on
 * nothing, then a 1 ms kernel B after the all-reduce; the all-reduce's and
 * B's indices in *ic and *ib when asked. */
static void overlap_plan(plan *p, uint32_t *ic, uint32_t *ib)
{
    one_prog_plan(p, 8);
    plan_prog *pg = &p->progs[0];
    plan_op st = step_op(0);
    plan_push(pg, &st);
    plan_op a = compute_op("A", 5e-3, 0);
    a.kclass = KC_GEMM;
    plan_push(pg, &a);
    plan_op c = allreduce_op(1e9);
    uint32_t i_c = plan_push(pg, &c);
    plan_op b = compute_op("B", 1e-3, 0);
    uint32_t i_b = plan_push(pg, &b);
    plan_dep(pg, i_b, i_c);
    for (int r = 0; r < 8; r++)
        p->prog_of_rank[r] = 0;
    if (ic)
        *ic = i_c;
    if (ib)
        *ib = i_b;
}

/* With interference on, a kernel that an NVLink collective on another
 * stream may overlap stays an exec (the model may slow it); the kernel the
 * collective's end holds back runs alone. */
START_TEST(kernels_beside_collectives_stay_execs)
{
    plan p;
    overlap_plan(&p, NULL, NULL);
    cp_err err = {0};
    interf_model im;
    ck_assert_msg(interf_load(&im, &plat, &err) == 0, "%s", err.msg);
    ck_assert_int_gt(im.ngroups[IK_GEMM], 0);
    double end[2];
    for (int each = 0; each < 2; each++) {
        eng_opts o = {.plat = &plat, .cm = &cm, .im = &im, .exec_each = each};
        eng_result r;
        ck_assert_msg(eng_run(&p, &o, &r, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(r.kernels_timed, each ? 0 : 8);
        end[each] = r.end_s - r.t0;
        eng_result_free(&r);
    }
    ck_assert_double_eq_tol(end[0], end[1], 1e-12);
    plan_free(&p);
}
END_TEST

/* A collective that depends on nothing overlaps the compute before it; the
 * compute after it waits for it. */
START_TEST(cross_stream_waits_and_overlap)
{
    plan p;
    uint32_t ic, ib;
    overlap_plan(&p, &ic, &ib);
    eng_result r;
    run(&p, &r);
    /* ring all-reduce of 1 GB on 8 ranks: 2 * 7/8 GB at the NVLink port
     * rate plus 14 steps of one GPU-to-GPU route latency (h100-sxm-8.yaml) */
    double bw = plat.intra.bandwidth, lat = plat.intra.latency;
    double t_ar = 2.0 * 7.0 / 8.0 * 1e9 / bw + 14 * lat;
    double expect = fmax(5e-3, t_ar) + 1e-3;
    ck_assert_double_eq_tol(r.end_s, expect, 1e-9 * expect);
    double t_b0 = -1;
    size_t n;
    eng_event *ev = eng_all_events(&r, &n);
    ck_assert_uint_eq(n, r.nev);
    for (size_t i = 0; i < n; i++)
        if (ev[i].rank == 0 && ev[i].op == ib)
            t_b0 = ev[i].t0;
    free(ev);
    ck_assert_double_eq_tol(t_b0, fmax(5e-3, t_ar), 1e-12);
    eng_result_free(&r);
    plan_free(&p);
}
END_TEST

/* A later request starts at its arrival time. */
START_TEST(step_waits_for_arrival)
{
    plan p;
    one_prog_plan(&p, 1);
    p.nsteps = 2;
    plan_prog *pg = &p.progs[0];
    plan_op s0 = step_op(0);
    s0.step = 0;
    plan_push(pg, &s0);
    plan_op a = compute_op("A", 1e-3, 0);
    plan_push(pg, &a);
    plan_op s1 = step_op(0.5);
    s1.step = 1;
    plan_push(pg, &s1);
    plan_op b = compute_op("B", 1e-3, 0);
    b.step = 1;
    plan_push(pg, &b);
    eng_result r;
    run(&p, &r);
    ck_assert_double_eq_tol(r.step_start[1], 0.5, 1e-12);
    ck_assert_double_eq_tol(r.step_end[0], 1e-3, 1e-12);
    ck_assert_double_eq_tol(r.end_s, 0.501, 1e-12);
    eng_result_free(&r);
    plan_free(&p);
}
END_TEST

/* Rank 0 waits in an all-reduce that rank 1 never joins: the run must fail
 * as an internal error naming the blocked op, not end quietly. */
START_TEST(deadlock_is_an_internal_failure)
{
    plan p;
    plan_layout_cfg lay = {.tp = 2, .sp = 1, .ep = 1, .dp = 1, .devices_per_node = 8};
    plan_init(&p, &lay);
    plan_add_prog(&p);
    plan_add_prog(&p);
    p.nsteps = 1;
    plan_op st = step_op(0);
    plan_push(&p.progs[0], &st);
    plan_push(&p.progs[1], &st);
    plan_op c = allreduce_op(1e6);
    plan_push(&p.progs[0], &c);
    p.prog_of_rank[0] = 0;
    p.prog_of_rank[1] = 1;
    eng_result r;
    cp_err err = {0};
    eng_opts o = {.plat = &plat, .cm = &cm};
    ck_assert_int_ne(eng_run(&p, &o, &r, &err), 0);
    ck_assert_int_eq(err.code, CP_EXIT_INTERNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "deadlock"));
    ck_assert_ptr_nonnull(strstr(err.msg, "all_reduce"));
    eng_result_free(&r);
    plan_free(&p);
}
END_TEST

/* The default workload end to end: every rank finishes every op. */
/* The default workload with the sets, built and priced (eager). */
static void default_plan(const char *const *sets, int nsets, scenario *s, plan *p)
{
    cp_err err = {0};
    ck_assert_msg(wl_load(NULL, sets, nsets, NULL, s, &err) == 0, "%s", err.msg);
    build_plan(s, p);
    cost_model *cost = cost_new(&s->plat, &err);
    ck_assert_ptr_nonnull(cost);
    cost_price_plan(cost, p, 0);
    cost_free(cost);
}

/* The default workload's plan and its collective model. */
static void default_setup(scenario *s, plan *p, coll_model *m)
{
    cp_err err = {0};
    default_plan(NULL, 0, s, p);
    ck_assert_msg(coll_model_init(m, &s->plat, &err) == 0, "%s", err.msg);
}

START_TEST(default_workload_runs)
{
    scenario s;
    plan p;
    cp_err err = {0};
    coll_model m;
    default_setup(&s, &p, &m);
    eng_opts o = {.plat = &s.plat, .cm = &m};
    eng_result r;
    ck_assert_msg(eng_run(&p, &o, &r, &err) == 0, "%s", err.msg);
    size_t expect = 0;
    for (uint32_t i = 0; i < p.progs[0].nops; i++)
        expect += p.progs[0].ops[i].kind != OPK_MEM;
    ck_assert_uint_eq(r.nev, expect * 8);
    ck_assert_double_gt(r.end_s, 0.05);
    ck_assert_double_lt(r.end_s, 5.0);
    ck_assert_int_gt(r.messages, 48 * 2 * 14 * 8);
    eng_result_free(&r);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* The workload's summary under sets a (na of them) and under sets b (nb)
 * in child processes: summary.simulation.KEY is va and vb, and the rest
 * is the same (what names the comparison). */
static void same_summary_but(const char *const *a, int na, const char *const *b, int nb,
                             const char *key, long va, long vb, const char *what)
{
    json_t *sm[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        cp_err err = {0};
        drv_req rq = {.sets = k == 0 ? a : b, .nsets = k == 0 ? na : nb};
        ck_assert_msg(drv_child_run(&rq, &sm[k], &err) == 0, "%s", err.msg);
        json_t *sim = json_object_get(sm[k], "simulation");
        ck_assert_int_eq(json_integer_value(json_object_get(sim, key)), k == 0 ? va : vb);
        json_object_del(sim, key);
    }
    char *x = json_dumps(sm[0], JSON_SORT_KEYS), *y = json_dumps(sm[1], JSON_SORT_KEYS);
    ck_assert_msg(strcmp(x, y) == 0, "%s: the summaries differ but for %s", what, key);
    free(x);
    free(y);
    json_decref(sm[0]);
    json_decref(sm[1]);
}

/* Shared DP replicas (engine.h): SimGrid holds the nodes of one replica
 * only (plat_first_devices), every replica's records are there, and a later
 * run of the process that needs the other nodes is refused, not run on a
 * platform that lacks them. */
START_TEST(shared_replicas_load_one_replica)
{
    const char *sets[] = {"platform.nodes=4", "parallel.dp=4",
                          "requests.0.prompt_tokens=4096"};
    scenario s;
    plan p;
    coll_model m;
    cp_err err = {0};
    default_plan(sets, 3, &s, &p);
    ck_assert_msg(coll_model_init(&m, &s.plat, &err) == 0, "%s", err.msg);
    eng_opts o = {.plat = &s.plat, .cm = &m, .share_replicas = 1};
    eng_result r;
    ck_assert_msg(eng_run(&p, &o, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.replicas_simulated, 1);
    ck_assert_int_eq((int)sg_host_count(), 8);
    ck_assert_ptr_null(sg_host_by_name("n1g0"));
    ck_assert_int_eq(r.nranks, 32);
    eng_result_free(&r);
    eng_opts all = o;
    all.share_replicas = 0;
    ck_assert_int_ne(eng_run(&p, &all, &r, &err), 0);
    ck_assert_int_eq(err.code, CP_EXIT_INTERNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "1 node(s) of it loaded, this run needs 4"));
    eng_result_free(&r);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* A shared run's summary (one replica's nodes loaded) is the one of every
 * rank simulated on the whole platform, but for replicas_simulated. */
START_TEST(shared_replicas_match_the_whole_platform)
{
    tu_setup();
    const char *sets[] = {"platform.nodes=4", "parallel.dp=4", "requests.0.prompt_tokens=4096",
                          "requests.0.decode_tokens=2", "simulation.share_replicas=false"};
    same_summary_but(sets, 4, sets, 5, "replicas_simulated", 1, 4, "shared replicas");
}
END_TEST

/* The progress line (eng_opts.progress): due at once and at every interval,
 * one per 1024 elements passed, the ops counted those of every rank; none
 * before progress_first_s of wall time. */
START_TEST(progress_lines_when_due)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    scenario s;
    plan p;
    coll_model m;
    default_setup(&s, &p, &m);
    cp_err err = {0};
    eng_opts o = {.plat = &s.plat, .cm = &m, .progress = f};
    eng_result r;
    ck_assert_msg(eng_run(&p, &o, &r, &err) == 0, "%s", err.msg);
    eng_result_free(&r);
    fflush(f);
    unsigned long long total = 0, lines = 0;
    double pct = 0;
    for (const char *l = buf; (l = strstr(l, "cpsim: simulating: ")); l++, lines++)
        ck_assert_int_eq(sscanf(l, "cpsim: simulating: %lf %% of %llu ops", &pct, &total), 2);
    ck_assert_uint_eq(total, 8ull * p.progs[0].nops);
    ck_assert_uint_eq(lines, total / 1024);
    ck_assert_double_le(pct, 100);
    ck_assert_double_ge(pct, 100.0 * (double)(lines * 1024) / (double)total - 1);
    fclose(f);
    free(buf);
    /* not yet due: nothing */
    f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    o.progress = f;
    o.progress_first_s = 1e9;
    ck_assert_msg(eng_run(&p, &o, &r, &err) == 0, "%s", err.msg);
    eng_result_free(&r);
    fclose(f);
    ck_assert_uint_eq(len, 0);
    free(buf);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* The default workload with one --set, its collective and interference
 * models (the default platform's calibration measures interference). */
static void interf_plan(const char *set, scenario *s, plan *p, coll_model *m, interf_model *im)
{
    cp_err err = {0};
    default_plan(&set, 1, s, p);
    ck_assert_msg(coll_model_init(m, &s->plat, &err) == 0, "%s", err.msg);
    ck_assert_msg(interf_load(im, &s->plat, &err) == 0, "%s", err.msg);
}

/* Two runs of one plan record the same ops on the same ranks at the same
 * times (the second run's clock starts where the first ended: rounding). */
static void same_events(const eng_result *a, const eng_result *b)
{
    ck_assert_uint_eq(a->nev, b->nev);
    size_t na, nb;
    eng_event *ea = eng_all_events(a, &na), *eb = eng_all_events(b, &nb);
    ck_assert_uint_eq(na, nb);
    for (size_t i = 0; i < na; i++) {
        double tol = 1e-12 * (1 + ea[i].t1 - a->t0);
        ck_assert_int_eq(ea[i].rank, eb[i].rank);
        ck_assert_uint_eq(ea[i].op, eb[i].op);
        ck_assert_double_eq_tol(ea[i].t0 - a->t0, eb[i].t0 - b->t0, tol);
        ck_assert_double_eq_tol(ea[i].t1 - a->t0, eb[i].t1 - b->t0, tol);
    }
    free(ea);
    free(eb);
}

/* The default workload (TP8, interference on) started last actor first:
 * SimGrid steps same-instant actors in another order, and the events come
 * out the same.  The interference factors are a function of what runs on
 * a rank at an instant, whichever stream changed it last. */
START_TEST(same_instant_order_does_not_matter)
{
    scenario s;
    plan p;
    cp_err err = {0};
    coll_model m;
    interf_model im;
    interf_plan("requests.0.prompt_tokens=8192", &s, &p, &m, &im);
    ck_assert_int_gt(im.ngroups[IK_GEMM], 0);
    eng_opts o = {.plat = &s.plat, .cm = &m, .im = &im};
    eng_result a, b;
    ck_assert_msg(eng_run(&p, &o, &a, &err) == 0, "%s", err.msg);
    o.reverse_actors = 1;
    ck_assert_msg(eng_run(&p, &o, &b, &err) == 0, "%s", err.msg);
    same_events(&a, &b);
    eng_result_free(&a);
    eng_result_free(&b);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* Run p under o in a child process (SimGrid's clock at 0, as in a run of
 * cpsim) and write to path the counts of deferred waits and timed kernels,
 * then every rank's events and memory events field by field: two runs
 * that record the same bits write the same bytes after the counts. */
static void dump_records(const plan *p, const eng_opts *o, const char *path)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        eng_result r;
        cp_err err = {0};
        FILE *f = fopen(path, "wb");
        if (!f || eng_run(p, o, &r, &err) != 0)
            _exit(1);

        fwrite(&r.waits_deferred, sizeof r.waits_deferred, 1, f);
        fwrite(&r.kernels_timed, sizeof r.kernels_timed, 1, f);
        fwrite(&r.messages, sizeof r.messages, 1, f);
        fwrite(&r.execs, sizeof r.execs, 1, f);
        eng_event *ev = NULL;
        eng_mem *mm = NULL;
        size_t cev = 0, cmm = 0;
        for (int k = 0; k < r.nranks; k++) {
            size_t n = eng_rank_events(&r, k, &ev, &cev);
            fwrite(&n, sizeof n, 1, f);
            for (size_t i = 0; i < n; i++) {
                fwrite(&ev[i].op, sizeof ev[i].op, 1, f);
                fwrite(&ev[i].t0, sizeof ev[i].t0, 1, f);
                fwrite(&ev[i].t1, sizeof ev[i].t1, 1, f);
            }
            n = eng_rank_mems(&r, k, &mm, &cmm);
            fwrite(&n, sizeof n, 1, f);
            for (size_t i = 0; i < n; i++) {
                fwrite(&mm[i].op, sizeof mm[i].op, 1, f);
                fwrite(&mm[i].t, sizeof mm[i].t, 1, f);
                fwrite(&mm[i].delta, sizeof mm[i].delta, 1, f);
            }
        }
        _exit(fclose(f) == 0 ? 0 : 1);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the run in the child failed");
}

/* The file's bytes (*n of them; the caller frees). */
static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char *buf = NULL;
    size_t cap = 0;
    *n = 0;
    for (;;) {
        if (*n == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 65536)))
            ck_abort_msg("out of memory");
        size_t k = fread(buf + *n, 1, cap - *n, f);
        if (k == 0)
            break;
        *n += k;
    }
    fclose(f);
    return buf;
}

/* Waits in place of SimGrid activities end every op at the very instant
 * the activities do, bit for bit: a ring hop's host-issue wait deferred to
 * its overhead's sleep (sg_transport.h sgt_defer; eng_opts.sleep_each
 * keeps them apart) and kernels alone on their host as timed waits
 * (alone.c; eng_opts.exec_each keeps execs).  Over NICs with interference
 * on (a NIC hop changes no factor), and inside a node with no interference
 * model. */
START_TEST(timed_waits_change_nothing)
{
    /* short prompts over 4 ranks: hops the host issues late enough to wait */
    const char *const cases[][5] = {
        {"platform.name=h100-sxm-8", "platform.nodes=4", "parallel.sp=4",
         "parallel.exchange=ring_kv", "parallel.ring_overlap=true"},
        {"platform.name=b200-8", "parallel.tp=2", "parallel.sp=4", "parallel.exchange=ring",
         "parallel.split=zigzag"}};
    for (int x = 0; x < 2; x++) {
        const char *sets[] = {cases[x][0], cases[x][1], cases[x][2], cases[x][3], cases[x][4],
                              "parallel.kv_storage=by_position", "requests.0.prompt_tokens=4096",
                              "simulation.replay=false"};
        scenario s;
        plan p;
        cp_err err = {0};
        coll_model m;
        interf_model im;
        drv_req rq = {.sets = sets, .nsets = 8};
        ck_assert_msg(drv_prepare(&rq, &s, &p, &err) == 0, "%s", err.msg);
        ck_assert_msg(coll_model_init(&m, &s.plat, &err) == 0, "%s", err.msg);
        ck_assert_msg(interf_load(&im, &s.plat, &err) == 0, "%s", err.msg);
        unsigned char *rec[3];
        size_t len[3];
        long counts[3][2];
        for (int k = 0; k < 3; k++) {
            eng_opts o = eng_opts_of(&s, &m, x == 0 ? &im : NULL);
            o.sleep_each = k == 1;
            o.exec_each = k == 2;
            char path[] = "/tmp/check_engine_waits_XXXXXX";
            int fd = mkstemp(path);
            ck_assert_int_ge(fd, 0);
            close(fd);
            dump_records(&p, &o, path);
            rec[k] = slurp(path, &len[k]);
            unlink(path);
            ck_assert_uint_gt(len[k], sizeof counts[k]);
            memcpy(counts[k], rec[k], sizeof counts[k]);
        }
        ck_assert_int_gt(counts[0][0], 0);
        ck_assert_int_gt(counts[0][1], 0);
        ck_assert_int_eq(counts[1][0], 0);
        ck_assert_int_eq(counts[2][1], 0);
        for (int k = 1; k < 3; k++) {
            ck_assert_uint_eq(len[k], len[0]);
            ck_assert_msg(memcmp(rec[k] + sizeof counts[k], rec[0] + sizeof counts[0],
                                 len[0] - sizeof counts[0]) == 0,
                          "%s: records differ with %s", cases[x][3],
                          k == 1 ? "sleep_each" : "exec_each");
        }
        for (int k = 0; k < 3; k++)
            free(rec[k]);
        plan_free(&p);
        wl_free(&s);
    }
}
END_TEST

/* A scenario in a child process: the summary comes back through the pipe;
 * bad input comes back as the child's message and exit code. */
START_TEST(child_runs_and_reports)
{
    tu_setup();
    json_t *sm = NULL;
    cp_err err = {0};
    drv_req rq = {0};
    ck_assert_msg(drv_child_run(&rq, &sm, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(json_string_value(json_object_get(sm, "schema")), "cpsim.summary/1");
    ck_assert_double_gt(json_real_value(json_object_get(sm, "ttft_s")), 0.05);
    json_decref(sm);

    const char *sets[] = {"parallel.tp=3"};
    drv_req bad = {.sets = sets, .nsets = 1};
    memset(&err, 0, sizeof err);
    ck_assert_int_ne(drv_child_run(&bad, &sm, &err), 0);
    ck_assert_ptr_null(sm);
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "parallel.tp"));
}
END_TEST

/* nlayers identical layers of [compute, all-reduce of its output, a
 * compute of tail_s after it when tail_s > 0] (the next layer waits for the
 * all-reduce) on program g, after a step op and before a last compute. */
static void layers_prog(plan *p, int g, int nlayers, double cost, double launch, int reduce,
                        double tail_s)
{
    plan_prog *pg = &p->progs[g];
    plan_op st = step_op(0);
    plan_push(pg, &st);
    uint32_t prev = UINT32_MAX;
    for (int l = 0; l < nlayers; l++) {
        plan_op a = compute_op("layer_gemm", cost, launch);
        a.layer = l;
        uint32_t ia = plan_push(pg, &a);
        if (prev != UINT32_MAX)
            plan_dep(pg, ia, prev);
        prev = ia;
        if (reduce) {
            plan_op c = allreduce_op(8e6);
            c.layer = l;
            c.launch_s = launch;
            uint32_t ic = plan_push(pg, &c);
            plan_dep(pg, ic, ia);
            prev = ic;
            if (tail_s > 0) {
                plan_op t = compute_op("layer_tail", tail_s, launch);
                t.layer = l;
                uint32_t it = plan_push(pg, &t);
                plan_dep(pg, it, ic);
            }
        }
    }
    plan_op z = compute_op("head", cost, launch);
    uint32_t iz = plan_push(pg, &z);
    plan_dep(pg, iz, prev);
}

/* Run p replayed and simulated in one process; the events must agree to
 * rounding.  Returns the copies the replayed run replayed. */
static int replay_vs_simulated(const plan *p)
{
    cp_err err = {0};
    eng_result a, b;
    eng_opts o = {.plat = &plat, .cm = &cm, .replay = 1};
    ck_assert_msg(eng_run(p, &o, &a, &err) == 0, "%s", err.msg);
    o.replay = 0;
    ck_assert_msg(eng_run(p, &o, &b, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(b.iters_replayed, 0);
    ck_assert_int_eq(a.iters_simulated + a.iters_replayed, b.iters_simulated);
    ck_assert_uint_eq(a.nev, b.nev);
    ck_assert_uint_eq(a.nmem, b.nmem);
    ck_assert_int_eq(a.execs, b.execs);
    ck_assert_int_eq(a.messages, b.messages);
    size_t na, nb;
    eng_event *ea = eng_all_events(&a, &na), *eb = eng_all_events(&b, &nb);
    ck_assert_uint_eq(na, a.nev);
    ck_assert_uint_eq(nb, b.nev);
    qsort(ea, na, sizeof *ea, tu_ev_key_cmp);
    qsort(eb, nb, sizeof *eb, tu_ev_key_cmp);
    for (size_t i = 0; i < na; i++) {
        ck_assert_int_eq(tu_ev_key_cmp(&ea[i], &eb[i]), 0);
        double tol = 1e-12 * (1 + eb[i].t1 - b.t0);
        ck_assert_double_eq_tol(ea[i].t0 - a.t0, eb[i].t0 - b.t0, tol);
        ck_assert_double_eq_tol(ea[i].t1 - a.t0, eb[i].t1 - b.t0, tol);
    }
    free(ea);
    free(eb);
    ck_assert_double_eq_tol(a.end_s - a.t0, b.end_s - b.t0, 1e-12 * (1 + b.end_s - b.t0));
    int replayed = a.iters_replayed;
    eng_result_free(&a);
    eng_result_free(&b);
    return replayed;
}

/* Layers that end in an all-reduce over every rank start from the same
 * state: all but the first copy of the region replay, to rounding. */
START_TEST(synchronised_layers_replay)
{
    plan p;
    one_prog_plan(&p, 4);
    layers_prog(&p, 0, 12, 1e-3, 5e-6, 1, 0);
    for (int r = 0; r < 4; r++)
        p.prog_of_rank[r] = 0;
    ck_assert_uint_gt(plan_fold_layers(&p), 0);
    ck_assert_uint_eq(p.progs[0].nregions, 1);
    /* layer 0 waits for nothing: layers 1-11 fold */
    ck_assert_uint_eq(p.progs[0].regions[0].repeat, 11);
    ck_assert_int_eq(replay_vs_simulated(&p), 10);
    plan_free(&p);
}
END_TEST

/* Two ranks of their own programs of layers_prog (layers of 1 ms on rank
 * 0; of cost1 and a tail of tail1 on rank 1), folded. */
static void two_rank_plan(plan *p, int nlayers, int reduce, double cost1, double tail1)
{
    plan_layout_cfg lay = {.tp = 2, .sp = 1, .ep = 1, .dp = 1, .devices_per_node = 8};
    plan_init(p, &lay);
    plan_add_prog(p);
    plan_add_prog(p);
    p->nsteps = p->nrequests = 1;
    layers_prog(p, 0, nlayers, 1e-3, 5e-6, reduce, 0);
    layers_prog(p, 1, nlayers, cost1, 5e-6, reduce, tail1);
    p->prog_of_rank[0] = 0;
    p->prog_of_rank[1] = 1;
    ck_assert_uint_gt(plan_fold_layers(p), 0);
}

/* Rank 1 ends each layer 30 us after rank 0, which starts the next one
 * early: the cuts are not clean but in the same state (rank 0's early
 * start as far ahead each time), so the copies replay, to rounding. */
START_TEST(staggered_layers_replay)
{
    plan p;
    two_rank_plan(&p, 12, 1, 1e-3, 3e-5);
    ck_assert_uint_eq(p.progs[0].regions[0].repeat, p.progs[1].regions[0].repeat);
    ck_assert_int_ge(replay_vs_simulated(&p), 8); /* all but the first copies */
    plan_free(&p);
}
END_TEST

/* Ranks that run apart (rank 1 twice as slow, nothing joins them) never
 * reach a clean cut: they do not replay, and simulate as before. */
START_TEST(unjoined_layers_simulate)
{
    plan p;
    two_rank_plan(&p, 8, 0, 2e-3, 0);
    ck_assert_int_eq(replay_vs_simulated(&p), 0);
    plan_free(&p);
}
END_TEST

/* Launch-bound layers wait for the host every layer: the host's issue
 * times are part of a cut's state, and they move by exactly the cuts'
 * distance, so all but the first copy replay, to rounding (the 1,024-rank
 * zigzag pass-KV ring with overlap, host-bound at SP128, replayed none and
 * ran past 150 s when a wait for the host ruled a copy out). */
START_TEST(launch_bound_layers_replay)
{
    plan p;
    one_prog_plan(&p, 2);
    layers_prog(&p, 0, 8, 1e-6, 2e-5, 1, 0);
    p.prog_of_rank[0] = p.prog_of_rank[1] = 0;
    ck_assert_uint_gt(plan_fold_layers(&p), 0);
    ck_assert_uint_eq(p.progs[0].regions[0].repeat, 7);
    ck_assert_int_eq(replay_vs_simulated(&p), 6);
    plan_free(&p);
}
END_TEST

/* The folded plan (repeated regions) simulates to byte-identical results:
 * same summary, TTFT and events. */
START_TEST(folded_plan_simulates_identically)
{
    tu_setup();
    const char *sets[] = {"requests.0.prompt_tokens=8192", "requests.0.decode_tokens=2"};
    json_t *a = tu_fold_identical(NULL, sets, 2);
    ck_assert_double_gt(json_real_value(json_object_get(a, "ttft_s")), 0.01);
    json_decref(a);
}
END_TEST

/* A striped pass-Q ring gives each SP rank its own attention cost (rank g
 * holds g + 1 diagonal blocks), and its ranks settle into a cycle of two
 * layers, never into one (replay.c): Llama 3.1 70B at 64K on 8 nodes
 * replayed no layer when only one-layer cycles were looked for.  With
 * cycles it replays all but the first few, as the unrolled run to
 * rounding. */
START_TEST(two_layer_cycle_replays)
{
    tu_setup();
    char path[] = "/tmp/check_engine_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    fputs("model: llama-3.1-70b\n"
          "platform: {name: h200-sxm-8, nodes: 8}\n"
          "precision: {weights: bf16}\n"
          "parallel: {tp: 8, sp: 8, kv_storage: by_position, exchange: ring, split: striped}\n"
          "requests: [{prompt_tokens: 65536}]\n", f);
    ck_assert_int_eq(fclose(f), 0);
    json_t *c = tu_fold_identical(path, NULL, 0);
    unlink(path);
    json_t *sim = json_object_get(c, "simulation");
    json_int_t rep = json_integer_value(json_object_get(sim, "iterations_replayed"));
    json_int_t all = rep + json_integer_value(json_object_get(sim, "iterations_simulated"));
    ck_assert_int_eq(all, 79);
    ck_assert_int_ge(rep, all - 4);
    json_decref(c);
}
END_TEST

/* Shared TP ranks (engine.h): the default workload's TP8 group simulated
 * as one rank with its TP collectives run by helpers, interference on,
 * gives every rank the records of the run of all eight: the same ops at
 * the same times, the same messages, each rank reading rank 0's records. */
START_TEST(shared_tp_ranks_record_every_rank)
{
    scenario s;
    plan p;
    cp_err err = {0};
    coll_model m;
    interf_model im;
    interf_plan("requests.0.prompt_tokens=4096", &s, &p, &m, &im);
    eng_opts o = {.plat = &s.plat, .cm = &m, .im = &im};
    eng_result a, b;
    ck_assert_msg(eng_run(&p, &o, &a, &err) == 0, "%s", err.msg);
    o.share_tp = 1;
    ck_assert_msg(eng_run(&p, &o, &b, &err) == 0, "%s", err.msg);
    ck_assert_int_le(a.tp_shared, 1);
    ck_assert_int_eq(b.tp_shared, 8);
    ck_assert_int_eq(b.nranks, 8);
    ck_assert_int_eq(b.messages, a.messages);
    ck_assert_int_eq(b.execs, a.execs);
    for (int r = 1; r < 8; r++)
        ck_assert(eng_rank_same(&b, 0, r, 0) && eng_rank_same(&b, 0, r, 1));
    same_events(&a, &b);
    eng_result_free(&a);
    eng_result_free(&b);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* Shared TP ranks over two nodes: the thinker as TP8 x SP2, each exchange
 * with hops or collectives between the groups, gives the summary of every
 * rank simulated but for tp_ranks_simulated; a TP group smaller than a
 * node, and the L07 model, simulate every rank. */
START_TEST(shared_tp_ranks_match_every_rank)
{
    tu_setup();
    const char *const exchanges[][2] = {
        {"parallel.exchange=ring_kv", "parallel.ring_overlap=true"},
        {"parallel.exchange=ring", "parallel.split=zigzag"},
        {"parallel.exchange=all_gather", "parallel.kv_storage=by_position"},
        {"parallel.exchange=ulysses", "parallel.kv_storage=by_head"}};
    for (int x = 0; x < 4; x++) {
        const char *sets[] = {"platform.nodes=2", "parallel.sp=2",
                              "parallel.kv_storage=by_position", "requests.0.prompt_tokens=8192",
                              exchanges[x][0], exchanges[x][1], "simulation.share_tp=false"};
        same_summary_but(sets, 6, sets, 7, "tp_ranks_simulated", 1, 8, exchanges[x][0]);
    }
    const char *const unshared[][2] = {{"parallel.tp=4", "parallel.sp=2"},
                                       {"simulation.network_model=l07", "parallel.tp=8"}};
    for (int x = 0; x < 2; x++) {
        json_t *sm = NULL;
        cp_err err = {0};
        drv_req rq = {.sets = unshared[x], .nsets = 2};
        ck_assert_msg(drv_child_run(&rq, &sm, &err) == 0, "%s", err.msg);
        json_t *sim = json_object_get(sm, "simulation");
        ck_assert_int_eq(json_integer_value(json_object_get(sim, "tp_ranks_simulated")),
                         x == 0 ? 4 : 8);
        json_decref(sm);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine");
    TCase *tc = tcase_create("engine");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, launch_rate_bounds_short_kernels);
    tcase_add_test(tc, progress_lines_when_due);
    tcase_add_test(tc, kernels_alone_wait_kernels_beside_share);
    tcase_add_test(tc, kernels_beside_collectives_stay_execs);
    tcase_add_test(tc, cross_stream_waits_and_overlap);
    tcase_add_test(tc, step_waits_for_arrival);
    tcase_add_test(tc, deadlock_is_an_internal_failure);
    tcase_add_test(tc, default_workload_runs);
    tcase_add_test(tc, shared_replicas_load_one_replica);
    tcase_add_test(tc, same_instant_order_does_not_matter);
    tcase_add_test(tc, timed_waits_change_nothing);
    tcase_add_test(tc, synchronised_layers_replay);
    tcase_add_test(tc, staggered_layers_replay);
    tcase_add_test(tc, unjoined_layers_simulate);
    tcase_add_test(tc, launch_bound_layers_replay);
    tcase_add_test(tc, shared_tp_ranks_record_every_rank);
    suite_add_tcase(s, tc);
    /* no SimGrid in the test process: its children initialise their own */
    TCase *tc_child = tcase_create("child");
    tcase_set_timeout(tc_child, 120);
    tcase_add_test(tc_child, child_runs_and_reports);
    tcase_add_test(tc_child, folded_plan_simulates_identically);
    tcase_add_test(tc_child, shared_replicas_match_the_whole_platform);
    tcase_add_test(tc_child, two_layer_cycle_replays);
    tcase_add_test(tc_child, shared_tp_ranks_match_every_rank);
    suite_add_tcase(s, tc_child);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
