/* check_reports: figures and files from hand-made event records. */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reports/report.h"
#include "tests/testutil.h"

/* A two-rank plan: compute ops 0..1, a collective 2, memory ops 3..6. */
static void make_plan(plan *p)
{
    plan_layout_cfg lay = {.tp = 2, .sp = 1, .ep = 1, .dp = 1, .devices_per_node = 8};
    plan_init(p, &lay);
    plan_add_prog(p);
    p->nsteps = 1;
    p->nrequests = 1;
    const char *names[] = {"A", "B", "ar", "alloc", "alloc", "free", "alloc", "C"};
    for (int i = 0; i < 8; i++) {
        plan_op o = {0};
        o.name = names[i];
        o.layer = i == 7 ? 3 : -1;
        o.kind = i == 2 ? OPK_COLL : (i >= 3 && i <= 6) ? OPK_MEM : OPK_COMPUTE;
        o.stream = i == 2 ? ST_COMM : ST_COMPUTE;
        plan_push(&p->progs[0], &o);
    }
}

static void make_scenario(scenario *s, double capacity)
{
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "test.yaml");
    snprintf(s->model.name, sizeof s->model.name, "m");
    snprintf(s->plat.name, sizeof s->plat.name, "p");
    s->plat.hbm_bytes = capacity;
    s->plat.devices_per_node = 8;
    s->plat.nodes = 1;
    s->par.tp = 2;
    s->par.sp = s->par.ep = s->par.dp = 1;
    s->nreqs = 1;
    s->reqs = calloc(1, sizeof *s->reqs);
    s->reqs[0].prompt_tokens = 100;
    s->reqs[0].arrival_s = 1.0;
}

static void add_ev(eng_result *r, int rank, int stream, uint32_t op, double t0, double t1)
{
    eng_add_event(r, &(eng_event){.rank = rank, .stream = (uint8_t)stream, .op = op,
                                  .layer = op == 7 ? 3 : -1, .t0 = t0, .t1 = t1});
}

static void add_mem(eng_result *r, int rank, int cat, uint32_t op, double t, double d)
{
    eng_add_mem(r, &(eng_mem){.rank = rank, .cat = (uint8_t)cat, .op = op, .seq = op, .layer = -1,
                              .t = t, .delta = d});
}

static void make_result(eng_result *r)
{
    eng_result_init(r, 2);
    r->nsteps = 1;
    r->step_start = calloc(2, sizeof(double));
    r->step_end = calloc(2, sizeof(double));
    r->step_end[0] = 21.0;
    r->step_end[1] = 23.0;
    /* rank 0: compute [0,10] and [12,20], comm [5,15] */
    add_ev(r, 0, ST_COMPUTE, 0, 0, 10);
    add_ev(r, 0, ST_COMPUTE, 1, 12, 20);
    add_ev(r, 0, ST_COMM, 2, 5, 15);
    /* rank 1: compute [0,4], comm [4,8]: no overlap */
    add_ev(r, 1, ST_COMPUTE, 0, 0, 4);
    add_ev(r, 1, ST_COMM, 2, 4, 8);
    /* rank 0 memory: 5 weights, +3 activations, -3, +4 -> peak 9 at t=3 */
    add_mem(r, 0, MC_WEIGHTS, 3, 0, 5);
    add_mem(r, 0, MC_ACTIVATIONS, 4, 1, 3);
    add_mem(r, 0, MC_ACTIVATIONS, 5, 2, -3);
    add_mem(r, 0, MC_ACTIVATIONS, 6, 3, 4);
    add_mem(r, 1, MC_WEIGHTS, 3, 0, 5);
    r->end_s = 23.0;
}

START_TEST(overlap_and_busy_times)
{
    plan p;
    scenario s;
    eng_result r;
    rep_summary sm;
    cp_err err = {0};
    make_plan(&p);
    make_scenario(&s, 100);
    make_result(&r);
    ck_assert_int_eq(rep_summarize(&s, &p, &r, &sm, &err), 0);
    ck_assert_double_eq(sm.ranks[0].compute_s, 18);
    ck_assert_double_eq(sm.ranks[0].comm_s, 10);
    ck_assert_double_eq(sm.ranks[0].overlap_s, 8);
    ck_assert_double_eq(sm.ranks[1].overlap_s, 0);
    ck_assert_double_eq_tol(sm.overlap_fraction, 8.0 / 14.0, 1e-12);
    /* TTFT: the last rank to finish the prefill step, minus the arrival */
    ck_assert_double_eq(sm.ttft_s, 22.0);
    ck_assert_double_eq(sm.ranks[0].peak_tensor_bytes, 9);
    /* the activations' 3 and 4 B in one 2 MiB segment of the small pool,
     * the 3 B block reused (rounded to 512 B) for the 4 */
    ck_assert_double_eq(sm.ranks[0].peak_reserved_bytes, 5 + 2097152);
    ck_assert_double_eq(sm.ranks[0].peak_bytes, 5 + 2097152);
    ck_assert_double_eq(sm.ranks[0].peak_t, 3);
    ck_assert_double_eq(sm.ranks[0].peak_by_cat[MC_ACTIVATIONS], 4);
    ck_assert_int_eq(sm.oom, 0);
    rep_summary_free(&sm);
    eng_result_free(&r);
    free(s.reqs);
    plan_free(&p);
}
END_TEST

START_TEST(oom_verdict_names_rank_and_phase)
{
    plan p;
    scenario s;
    eng_result r;
    rep_summary sm;
    cp_err err = {0};
    make_plan(&p);
    make_scenario(&s, 8.5);
    make_result(&r);
    ck_assert_int_eq(rep_summarize(&s, &p, &r, &sm, &err), 0);
    ck_assert_int_eq(sm.oom, 1);
    ck_assert_int_eq(sm.oom_rank, 0);
    /* the allocation at op 6 happens right before op C of layer 3 */
    ck_assert_str_eq(sm.oom_phase, "step 0 layer 3 C");
    rep_summary_free(&sm);
    eng_result_free(&r);
    free(s.reqs);
    plan_free(&p);
}
END_TEST

static int count_tmp_files(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".tmp-") != NULL;
    if (d)
        closedir(d);
    return n;
}

/* trace.json for viewers: events of a track never overlap in whole
 * nanoseconds (times that round apart: an op ending at 1.0000004 us and
 * the next starting there, 10.0000006 us, ...), names are JSON-escaped,
 * process and thread ids start at 1. */
START_TEST(trace_reads_in_every_viewer)
{
    plan p;
    scenario s;
    eng_result r;
    cp_err err = {0};
    make_plan(&p);
    make_scenario(&s, 100);
    snprintf(s.model.name, sizeof s.model.name, "qw\"en\\x\n\x01");
    eng_result_init(&r, 2);
    double t = 0;
    for (int k = 0; k < 200; k++) {
        double next = t + 0.3e-9 + k * 1.7e-7 + (k % 3) * 4.4e-10;
        add_ev(&r, 0, ST_COMPUTE, (uint32_t)(k % 2), t, next);
        t = next;
    }
    add_ev(&r, 1, ST_COMM, 2, 1.0000004e-6, 10.0000006e-6);
    char dir[] = "/tmp/cpsim-trace-XXXXXX", path[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/trace.json", dir);
    ck_assert_int_eq(rep_write_trace(&s, &p, &r, NULL, path, &err), 0);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "trace: %s at %d:%d", je.text, je.line, je.column);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "otherData"),
                                                       "model")), s.model.name);
    long long prev_end = -1;
    size_t i;
    json_t *e;
    int nx = 0;
    json_array_foreach(json_object_get(j, "traceEvents"), i, e) {
        ck_assert_int_ge(json_integer_value(json_object_get(e, "pid")), 1);
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (strcmp(ph, "M") != 0 && strcmp(ph, "C") != 0)
            ck_assert_int_ge(json_integer_value(json_object_get(e, "tid")), 1);
        if (strcmp(ph, "X") != 0)
            continue;
        /* whole nanoseconds, as Perfetto reads them */
        double ts = json_number_value(json_object_get(e, "ts")) * 1e3;
        double dur = json_number_value(json_object_get(e, "dur")) * 1e3;
        ck_assert_double_eq_tol(ts, round(ts), 1e-6);
        ck_assert_double_eq_tol(dur, round(dur), 1e-6);
        if (json_integer_value(json_object_get(e, "tid")) == 1 + ST_COMPUTE) {
            ck_assert_int_ge(llround(ts), prev_end);
            prev_end = llround(ts) + llround(dur);
            nx++;
        }
    }
    ck_assert_int_eq(nx, 200);
    json_decref(j);
    unlink(path);
    rmdir(dir);
    eng_result_free(&r);
    free(s.reqs);
    plan_free(&p);
}
END_TEST

START_TEST(files_parse_and_are_atomic)
{
    plan p;
    scenario s;
    eng_result r;
    rep_summary sm;
    cp_err err = {0};
    make_plan(&p);
    make_scenario(&s, 100);
    make_result(&r);
    ck_assert_int_eq(rep_summarize(&s, &p, &r, &sm, &err), 0);
    char dir[] = "/tmp/cpsim-rep-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];

    snprintf(path, sizeof path, "%s/summary.json", dir);
    ck_assert_int_eq(rep_write_summary(&sm, &s, path, &err), 0);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "%s", je.text);
    ck_assert_str_eq(json_string_value(json_object_get(j, "schema")), "cpsim.summary/1");
    ck_assert_double_eq(json_real_value(json_object_get(j, "ttft_s")), 22.0);
    ck_assert_int_eq(json_array_size(json_object_get(j, "ranks")), 2);
    json_t *r0 = json_array_get(json_object_get(j, "ranks"), 0);
    ck_assert_double_eq(json_real_value(json_object_get(r0, "overlap_s")), 8);
    ck_assert_ptr_nonnull(json_object_get(json_object_get(r0, "peak_by_category"), "kv_cache"));
    ck_assert(json_is_false(json_object_get(j, "oom")));
    ck_assert_ptr_nonnull(json_object_get(j, "overlap_fraction"));
    ck_assert_ptr_nonnull(json_object_get(j, "capacity_bytes"));
    json_t *rq = json_array_get(json_object_get(j, "requests"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(rq, "prompt_tokens")), 100);
    json_decref(j);

    snprintf(path, sizeof path, "%s/trace.json", dir);
    ck_assert_int_eq(rep_write_trace(&s, &p, &r, NULL, path, &err), 0);
    j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "trace: %s at %d:%d", je.text, je.line, je.column);
    json_t *evs = json_object_get(j, "traceEvents");
    int nx = 0, nc = 0;
    for (size_t i = 0; i < json_array_size(evs); i++) {
        const char *ph = json_string_value(json_object_get(json_array_get(evs, i), "ph"));
        nx += strcmp(ph, "X") == 0;
        nc += strcmp(ph, "C") == 0;
    }
    ck_assert_int_eq(nx, 5);
    ck_assert_int_eq(nc, 5); /* 4 instants on rank 0, 1 on rank 1 */
    json_decref(j);

    snprintf(path, sizeof path, "%s/memory.csv", dir);
    ck_assert_int_eq(rep_write_memory_csv(&p, &r, 1, path, &err), 0);
    FILE *f = fopen(path, "r");
    char line[512];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_ptr_nonnull(strstr(line, "rank,t_s,weights_bytes"));
    int rows = 0;
    double last_total = 0;
    while (fgets(line, sizeof line, f)) {
        rows++;
        *strrchr(line, ',') = 0; /* the ranks column, then total_bytes */
        last_total = atof(strrchr(line, ',') + 1);
    }
    fclose(f);
    ck_assert_int_eq(rows, 5);
    ck_assert_double_eq(last_total, 5);

    /* a failed write leaves neither the target nor a temporary behind */
    snprintf(path, sizeof path, "%s/missing/summary.json", dir);
    ck_assert_int_ne(rep_write_summary(&sm, &s, path, &err), 0);
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
    ck_assert_int_eq(count_tmp_files(dir), 0);
    rep_file rf;
    snprintf(path, sizeof path, "%s/half.json", dir);
    ck_assert_int_eq(rep_open(&rf, path, &err), 0);
    fputs("{\"half\":", rf.f);
    ck_assert_int_ne(rep_close(&rf, 0, &err), 0);
    ck_assert_int_ne(access(path, F_OK), 0);
    ck_assert_int_eq(count_tmp_files(dir), 0);

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    rep_summary_free(&sm);
    eng_result_free(&r);
    free(s.reqs);
    plan_free(&p);
}
END_TEST

/* rep_fixed writes what printf's %.*f writes: random magnitudes and
 * digits, exact ties, integers, negatives, the 2^53 edge, non-finite. */
START_TEST(fixed_point_matches_printf)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL; /* splitmix64 state (any seed) */
    char a[400], b[400];
    const double edge[] = {0, -0.0, 0.5, 1.5, 2.5, -2.5, 0.125, 1e-10, -1e-10, 0.0049999999,
                           123456789.123456789, 9007199254740991.0, 9007199254740993.0, 1e300,
                           -1e300, 4.35, 2.675, 1.0000000005, INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        for (int d = 0; d <= 9; d++) {
            rep_fixed(a, sizeof a, edge[i], d);
            snprintf(b, sizeof b, "%.*f", d, edge[i]);
            ck_assert_msg(strcmp(a, b) == 0, "%.17g at %d: %s, printf %s", edge[i], d, a, b);
        }
    for (int k = 0; k < 200000; k++) {
        x += 0x9e3779b97f4a7c15ULL;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        /* a mantissa over 16 decades, either sign, some exact halves */
        double v = (double)(z >> 11) / 9007199254740992.0 * pow(10.0, (double)(z % 16) - 6.0);
        if (z & 1)
            v = -v;
        if ((z >> 8) % 7 == 0)
            v = floor(v * 1000.0) / 1000.0 + 0.0005;
        int d = (int)((z >> 16) % 10);
        rep_fixed(a, sizeof a, v, d);
        snprintf(b, sizeof b, "%.*f", d, v);
        ck_assert_msg(strcmp(a, b) == 0, "%.17g at %d: %s, printf %s", v, d, a, b);
    }
}
END_TEST

/* Records as spans (sim/engine/events.h): a rank's own records, a shared
 * block read shifted in time and layer (a replayed copy), a tail cut back
 * (early starts a replay replaced) and replicas shifted in rank; memory
 * events come sorted by time and op whatever order they went in. */
/* The run line's replay figures: layers replayed, and when most layers ran
 * though their cuts came within the accepted tolerance (1 us), the
 * tolerance that replays some, rounded up to two digits. */
START_TEST(replay_hint_names_the_tolerance)
{
    rep_summary sm;
    memset(&sm, 0, sizeof sm);
    char buf[512];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    ck_assert_ptr_nonnull(f);
    sm.iters_simulated = 125;
    sm.replay_near_s = 7.78179e-10;
    rep_print_replayed(&sm, f);
    fclose(f);
    ck_assert_msg(strstr(buf, "the closest cuts are 0.000778 us apart") &&
                  strstr(buf, "simulation.replay_tolerance_s: 7.8e-10 replays some") &&
                  strstr(buf, "; no layer repeats exactly"), "%s", buf);
    /* some replayed, most not (the closest miss may be a cycle's) */
    f = fmemopen(buf, sizeof buf, "w");
    sm.iters_replayed = 26;
    sm.iters_simulated = 99;
    sm.replay_near_s = 3.35e-11;
    rep_print_replayed(&sm, f);
    fclose(f);
    ck_assert_msg(strstr(buf, "26 of 125 layer iterations replayed; most layers do not repeat") &&
                  strstr(buf, "3.35e-05 us apart") && strstr(buf, "3.4e-11 replays some"),
                  "%s", buf);
    sm.iters_simulated = 125;
    /* replayed mostly, or too far apart for any tolerance accepted: no hint */
    static const struct { long replayed; double near; } quiet[] = {{100, 7.8e-10}, {0, 6e-6}};
    for (size_t i = 0; i < 2; i++) {
        f = fmemopen(buf, sizeof buf, "w");
        sm.iters_replayed = quiet[i].replayed;
        sm.replay_near_s = quiet[i].near;
        rep_print_replayed(&sm, f);
        fclose(f);
        ck_assert_msg(!strstr(buf, "replays some"), "%s", buf);
    }
}
END_TEST

/* The rank table folds a row of ranks whose figures print the same (at
 * the table's precision, the OOM mark included) into one row, and prints
 * every rank with all_ranks. */
START_TEST(rank_table_folds_identical_ranks)
{
    scenario s;
    make_scenario(&s, 100e9);
    rep_summary sm;
    memset(&sm, 0, sizeof sm);
    rep_rank ranks[6];
    /* compute_s by rank: 0-1 alike, 2 apart, 3-4 alike to the printed 1e-4
     * s, 5 as 3-4 but over capacity */
    const double compute[6] = {1.0, 1.0, 2.0, 3.00001, 3.00002, 3.00001};
    for (int r = 0; r < 6; r++)
        ranks[r] = (rep_rank){.rank = r, .compute_s = compute[r], .comm_s = 0.5,
                              .peak_bytes = r == 5 ? 200e9 : 10e9};
    sm.ranks = ranks;
    sm.nranks = 6;
    sm.capacity_bytes = 100e9;
    char buf[4096];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    ck_assert_ptr_nonnull(f);
    rep_print_table(&sm, &s, 0, f);
    fclose(f);
    ck_assert_msg(strstr(buf, "\nrank   compute_s") &&
                  strstr(buf, "\n 0-1      1.0000      0.5000      0.0000      10.00    "
                              " 100.00  (2 identical)\n") &&
                  strstr(buf, "\n   2      2.0000 ") &&
                  strstr(buf, "\n 3-4      3.0000 ") &&
                  strstr(buf, "\n   5      3.0000      0.5000      0.0000     200.00    "
                              " 100.00  OOM\n"), "%s", buf);
    f = fmemopen(buf, sizeof buf, "w");
    rep_print_table(&sm, &s, 1, f);
    fclose(f);
    ck_assert_msg(!strstr(buf, "identical"), "%s", buf);
    for (int r = 0; r < 6; r++) {
        char row[16];
        snprintf(row, sizeof row, "\n   %d    ", r);
        ck_assert_msg(strstr(buf, row), "no row of rank %d: %s", r, buf);
    }
    free(s.reqs);
}
END_TEST

/* The default trace's level by its estimated size: full under the bound,
 * steps over it, an explicit level kept; the estimate counts the selected
 * ranks' op spans and a memory counter per instant. */
START_TEST(trace_detail_by_size)
{
    plan p;
    eng_result r;
    cp_err err = {0};
    make_plan(&p);
    make_result(&r);
    /* 5 spans; memory instants: 4 on rank 0, 1 on rank 1 */
    const double all = 5 * REP_TRACE_SPAN_BYTES + 5 * REP_TRACE_COUNTER_BYTES;
    rep_trace_opts o = {REP_TRACE_AUTO, NULL, -1, -1, all};
    rep_trace_level lv;
    double events, bytes;
    ck_assert_int_eq(rep_trace_choose(&p, &r, &o, &lv, &events, &bytes, &err), 0);
    ck_assert_int_eq(lv, REP_TRACE_FULL);
    ck_assert_double_eq(events, 10);
    ck_assert_double_eq(bytes, all);
    o.auto_bytes = all - 1;
    ck_assert_int_eq(rep_trace_choose(&p, &r, &o, &lv, &events, &bytes, &err), 0);
    ck_assert_int_eq(lv, REP_TRACE_STEPS);
    o.level = REP_TRACE_FULL;
    ck_assert_int_eq(rep_trace_choose(&p, &r, &o, &lv, &events, &bytes, &err), 0);
    ck_assert_int_eq(lv, REP_TRACE_FULL);
    /* rank 1 alone: 2 spans, 1 counter */
    o = (rep_trace_opts){REP_TRACE_AUTO, "1", -1, -1, all - 1};
    ck_assert_int_eq(rep_trace_choose(&p, &r, &o, &lv, &events, &bytes, &err), 0);
    ck_assert_double_eq(events, 3);
    ck_assert_int_eq(lv, REP_TRACE_FULL);
    o.ranks = "2";
    ck_assert_int_eq(rep_trace_choose(&p, &r, &o, &lv, &events, &bytes, &err), -1);
    ck_assert_msg(strstr(err.msg, "--trace-ranks 2: the run has 2 ranks"), "%s", err.msg);
    eng_result_free(&r);
    plan_free(&p);
}
END_TEST

/* A result line of a point at prompt L with TTFT t whose critical rank's
 * compute is `a` s priced from gemm.csv and `b` s from attention.csv. */
static json_t *rank_line(int index, double t, double a, double b)
{
    return json_pack("{s:i, s:s, s:{s:i}, s:{s:f, s:f, s:[{s:i}], s:f, s:b, s:f, s:f, "
                     "s:{s:f, s:{s:{s:{s:f}}, s:{s:{s:f}}}}}}",
                     "index", index, "status", "ok", "params", "parallel.tp", 8, "summary",
                     "ttft_s", t, "peak_bytes_max", 1e9, "requests", "prompt_tokens", 65536,
                     "compute_s_max", a + b, "oom", 0, "capacity_bytes", 8e10,
                     "overlap_fraction", 0.0, "cost_sources", "compute_s", 8 * (a + b),
                     "by_class", "gemm", "sources", "table:gemm.csv", 8 * a, "attention",
                     "sources", "table:attention.csv[fa3]", 8 * b);
}

/* Rankings per prompt length: places, margins, and a tie where the margin
 * lies within the kernels that differ at their tables' accuracy. */
START_TEST(ranking_margins_and_ties)
{
    json_t *errs = json_pack("{s:f, s:f, s:f, s:f}", "table:gemm.csv", 0.05,
                             "table:attention.csv", 0.02, "roofline", 0.15, "derived", 0.1);
    /* 0: 1.00 s; 1: 1.01 s, its attention 0.5 s longer (+-1 % of 1.00 s),
     * its GEMMs 0.2 s shorter (+-1 %): a tie; 2: 1.20 s, no tie */
    json_t *l[3] = {rank_line(0, 1.00, 0.5, 0.3), rank_line(1, 1.01, 0.3, 0.8),
                    rank_line(2, 1.20, 0.5, 0.3)};
    rep_sweep_rank(l, 3, errs);
    json_t *r0 = json_object_get(l[0], "ranking"), *r1 = json_object_get(l[1], "ranking"),
           *r2 = json_object_get(l[2], "ranking");
    ck_assert_int_eq(json_integer_value(json_object_get(r0, "place")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(r2, "place")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(r0, "against_index")), 1);
    ck_assert_double_eq_tol(json_number_value(json_object_get(r0, "margin")), 0.01, 1e-12);
    ck_assert_double_eq_tol(json_number_value(json_object_get(r0, "uncertainty")),
                            0.2 * 0.05 + 0.5 * 0.02, 1e-12);
    ck_assert(json_is_true(json_object_get(r0, "tie")));
    ck_assert(json_is_true(json_object_get(r1, "tie")));
    ck_assert_double_eq_tol(json_number_value(json_object_get(r2, "margin")), 0.2, 1e-12);
    ck_assert(json_is_false(json_object_get(r2, "tie")));
    /* no accuracies: margins, no verdict */
    rep_sweep_rank(l, 3, NULL);
    ck_assert(json_is_null(json_object_get(json_object_get(l[0], "ranking"), "tie")));
    ck_assert(json_is_number(json_object_get(json_object_get(l[0], "ranking"), "margin")));
    for (int i = 0; i < 3; i++)
        json_decref(l[i]);
    json_decref(errs);
}
END_TEST

/* memory.csv's rows: consecutive ranks with the same rows to the bit share
 * them (ranks "a-b"), others keep their own; unshared, every rank its own. */
START_TEST(memory_rows_shared_by_equal_ranks)
{
    for (int share = 0; share < 2; share++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        ck_assert_ptr_nonnull(f);
        rep_memrows m;
        rep_memrows_begin(&m, f, share);
        /* ranks 0, 1 alike; 2, 3 alike (another timeline); 4 as 0, after them */
        static const int kind[] = {0, 0, 1, 1, 0};
        for (int r = 0; r < 5; r++)
            for (int i = 0; i < 2; i++) {
                double cur[MC_COUNT] = {0};
                cur[MC_WEIGHTS] = 100 + kind[r];
                cur[MC_ACTIVATIONS] = 10.0 * i;
                rep_memrows_add(&m, r, 0.5 * i + kind[r], cur);
            }
        rep_memrows_end(&m);
        fclose(f);
        const char *want = share ? ",0-1\n" : ",0\n";
        ck_assert_msg(strstr(buf, want), "%s", buf);
        int rows = 0;
        for (char *c = buf; (c = strchr(c, '\n')); c++)
            rows++;
        ck_assert_int_eq(rows, share ? 6 : 10);
        if (share) {
            ck_assert_ptr_nonnull(strstr(buf, "\n2,1.000000000,101,"));
            ck_assert_ptr_nonnull(strstr(buf, ",2-3\n"));
            ck_assert_ptr_nonnull(strstr(buf, "\n4,0.000000000,100,"));
            ck_assert_ptr_null(strstr(buf, ",4-"));
        }
        free(buf);
    }
}
END_TEST

/* ---- the caching allocator against a plain model of its rules -------------------- */

/* The rules of reports/alloc.c written as directly as they read: every
 * block in one array, each decision a scan over all of them. */
typedef struct ref_block {
    int seg, small, live;
    double off, size, used;
    int free;
    long age;
} ref_block;

typedef struct ref_alloc {
    ref_block b[4096];
    int n, nseg;
    long clock;
    double reserved, allocated;
} ref_alloc;

static void ref_malloc(ref_alloc *a, double bytes)
{
    double size = ceil(bytes / 512) * 512;
    int small = size <= 1048576, best = -1;
    for (int pass = 0; pass < 2 && best < 0; pass++) {
        for (int i = 0; i < a->n; i++) {
            ref_block *x = &a->b[i];
            if (!x->live || !x->free || x->size < size || x->small != small)
                continue;
            if (best < 0 || x->size < a->b[best].size ||
                (x->size == a->b[best].size &&
                 (x->seg < a->b[best].seg ||
                  (x->seg == a->b[best].seg && x->off < a->b[best].off))))
                best = i;
        }
        if (best < 0) {
            double seg = small ? 2097152 : size < 10485760 ? 20971520
                                                          : ceil(size / 2097152) * 2097152;
            a->b[a->n++] = (ref_block){a->nseg++, small, 1, 0, seg, 0, 1, 0};
            a->reserved += seg;
        }
    }
    ref_block *x = &a->b[best];
    double rest = x->size - size;
    if (small ? rest >= 512 : rest > 1048576) {
        a->b[a->n++] = (ref_block){x->seg, small, 1, x->off + size, rest, 0, 1, 0};
        x = &a->b[best];
        x->size = size;
    }
    x->free = 0;
    x->used = size;
    x->age = ++a->clock;
    a->allocated += size;
}

/* The free block of segment seg that ends at off (dir -1) or starts at it (+1). */
static int ref_neighbour(ref_alloc *a, int seg, double off, int dir)
{
    for (int i = 0; i < a->n; i++) {
        ref_block *y = &a->b[i];
        if (y->live && y->seg == seg && (dir < 0 ? y->off + y->size == off : y->off == off))
            return i;
    }
    return -1;
}

static void ref_release(ref_alloc *a, double bytes)
{
    double size = ceil(bytes / 512) * 512;
    int exact = -1, larger = -1;
    for (int i = 0; i < a->n; i++) {
        ref_block *x = &a->b[i];
        if (!x->live || x->free)
            continue;
        if (x->used == size && (exact < 0 || x->age > a->b[exact].age))
            exact = i;
        if (x->used > size && (larger < 0 || x->age > a->b[larger].age))
            larger = i;
    }
    if (exact < 0 && larger >= 0)
        a->b[larger].used -= size;
    if (exact < 0) {
        a->allocated -= larger >= 0 ? size : 0;
        return;
    }
    a->allocated -= size;
    ref_block *x = &a->b[exact];
    x->free = 1;
    x->used = 0;
    int nx = ref_neighbour(a, x->seg, x->off + x->size, 1);
    if (nx >= 0 && a->b[nx].free) {
        x->size += a->b[nx].size;
        a->b[nx].live = 0;
    }
    int pv = ref_neighbour(a, x->seg, x->off, -1);
    if (pv >= 0 && a->b[pv].free) {
        a->b[pv].size += x->size;
        x->live = 0;
    }
}

/* Random requests of both pools, frees of sizes held, not held and parts
 * of larger blocks: after every step the same reserved and allocated bytes
 * as the plain model. */
START_TEST(allocator_matches_its_rules)
{
    static ref_alloc ref;
    memset(&ref, 0, sizeof ref);
    rep_alloc al;
    rep_alloc_init(&al);
    double held[512];
    int nheld = 0;
    uint64_t x = 88172645463325252ULL; /* xorshift64 (Marsaglia 2003) */
    for (int step = 0; step < 3000 && ref.n < 4000; step++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int kind = (int)(x % 8);
        /* sizes from 1 B to 64 MiB, log-spread, on both sides of 1 MiB */
        double bytes = floor(exp((double)(x >> 20 & 0xffff) / 65536.0 * log(67108864.0)));
        if (kind < 4 || nheld == 0) {
            rep_alloc_malloc(&al, bytes);
            ref_malloc(&ref, bytes);
            if (nheld < 512)
                held[nheld++] = bytes;
        } else if (kind < 7) {
            int k = (int)((x >> 40) % (uint64_t)nheld);
            double b = kind == 6 ? held[k] / 3 : held[k]; /* a part of one, freed first */
            rep_alloc_release(&al, b);
            ref_release(&ref, b);
            if (kind != 6)
                held[k] = held[--nheld];
        } else {
            rep_alloc_release(&al, bytes); /* maybe held, maybe not */
            ref_release(&ref, bytes);
        }
        ck_assert_msg(al.reserved == ref.reserved && al.allocated == ref.allocated,
                      "step %d: reserved %.0f / %.0f, allocated %.0f / %.0f", step, al.reserved,
                      ref.reserved, al.allocated, ref.allocated);
    }
    ck_assert(ref.nseg > 10);
    rep_alloc_free(&al);
}
END_TEST

START_TEST(records_read_through_spans)
{
    eng_result r;
    eng_result_init(&r, 2);
    add_ev(&r, 0, ST_COMPUTE, 0, 0, 1);
    uint32_t b = eng_new_block(&r);
    eng_block_event(&r, b, &(eng_event){.t0 = 0.5, .t1 = 0.75, .rank = 0, .op = 7, .layer = 3});
    eng_block_mem(&r, b,
                  &(eng_mem){.t = 0.25, .delta = 2, .rank = 0, .op = 4, .seq = 4, .layer = 3});
    eng_block_mem(&r, b,
                  &(eng_mem){.t = 0.125, .delta = 1, .rank = 0, .op = 3, .seq = 3, .layer = 3});
    eng_add_span(&r, 0, 0, (eng_span){.dt = 10, .block = b, .lo = 0, .n = 1, .dlayer = 2});
    eng_add_span(&r, 0, 0, (eng_span){.dt = 20, .block = b, .lo = 0, .n = 1, .dlayer = 4});
    eng_add_span(&r, 0, 1, (eng_span){.dt = 10, .block = b, .lo = 0, .n = 2, .dlayer = 2});
    add_mem(&r, 0, MC_ACTIVATIONS, 5, 10.125, -1); /* the same instant as the span's first */
    add_ev(&r, 0, ST_COMPUTE, 1, 21, 22);
    add_ev(&r, 0, ST_COMPUTE, 1, 22, 23);
    eng_cut_own(&r, 0, 2, 1); /* the last event goes */
    add_ev(&r, 1, ST_COMM, 2, 0, 3);
    ck_assert_uint_eq(r.nev, 5);
    ck_assert_uint_eq(r.nmem, 3);

    eng_event *ev = NULL;
    size_t cap = 0;
    ck_assert_uint_eq(eng_rank_events(&r, 0, &ev, &cap), 4);
    ck_assert_double_eq(ev[0].t1, 1);
    ck_assert_double_eq(ev[1].t0, 10.5);
    ck_assert_int_eq(ev[1].layer, 5);
    ck_assert_double_eq(ev[2].t1, 20.75);
    ck_assert_int_eq(ev[2].layer, 7);
    ck_assert_double_eq(ev[3].t0, 21);
    eng_mem *m = NULL;
    size_t mcap = 0;
    ck_assert_uint_eq(eng_rank_mems(&r, 0, &m, &mcap), 3);
    ck_assert_double_eq(m[0].t, 10.125);
    ck_assert_uint_eq(m[0].op, 3);
    ck_assert_uint_eq(m[1].op, 5); /* same time: by op */
    ck_assert_double_eq(m[2].t, 10.25);
    ck_assert_int_eq(m[2].layer, 5);

    eng_replicate(&r, 6);
    ck_assert_uint_eq(r.nev, 15);
    ck_assert_uint_eq(r.nmem, 9);
    ck_assert_uint_eq(eng_rank_events(&r, 4, &ev, &cap), 4);
    ck_assert_int_eq(ev[2].rank, 4);
    ck_assert_double_eq(ev[2].t0, 20.5);
    ck_assert_uint_eq(eng_rank_mems(&r, 5, &m, &mcap), 0);
    size_t n;
    eng_event *all = eng_all_events(&r, &n);
    ck_assert_uint_eq(n, 15);
    for (size_t i = 1; i < n; i++)
        ck_assert_int_le(all[i - 1].rank, all[i].rank);
    free(all);
    free(ev);
    free(m);
    eng_result_free(&r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("reports");
    TCase *tc = tcase_create("reports");
    tcase_add_checked_fixture(tc, tu_setup, NULL);
    tcase_add_test(tc, overlap_and_busy_times);
    tcase_add_test(tc, records_read_through_spans);
    tcase_add_test(tc, allocator_matches_its_rules);
    tcase_add_test(tc, memory_rows_shared_by_equal_ranks);
    tcase_add_test(tc, replay_hint_names_the_tolerance);
    tcase_add_test(tc, ranking_margins_and_ties);
    tcase_add_test(tc, fixed_point_matches_printf);
    tcase_add_test(tc, oom_verdict_names_rank_and_phase);
    tcase_add_test(tc, files_parse_and_are_atomic);
    tcase_add_test(tc, rank_table_folds_identical_ranks);
    tcase_add_test(tc, trace_detail_by_size);
    tcase_add_test(tc, trace_reads_in_every_viewer);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
