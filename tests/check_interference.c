/* check_interference: the compute/communication interference model against
 * the measurements it was fitted to (calibration overlap.csv): each row's
 * experiment — a compute loop on one stream and an NCCL loop on the other,
 * on 2 x H200 — is simulated, and the concurrent end times are compared
 * with the measured ones.  One simulation per row (check loop tests fork). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collectives/coll.h"
#include "base/calib.h"
#include "models/interference.h"
#include "sim/engine/engine.h"
#include "tests/testutil.h"
#include "base/yamlio.h"

/* Per-row relative errors, written by each forked iteration to a file so
 * that the summary test can see them all. */
#define ERR_FILE "/tmp/cpsim-check-interference.txt"
#define NROWS 20

static const char *const coll_names[] = {"all_reduce", "all_gather", "reduce_scatter",
                                         "all_to_all", "broadcast", NULL};

static void load_h200_pair(platform *p)
{
    cp_err err = {0};
    static const char text[] = "devices_per_node: 2\n";
    ydoc *doc = yio_parse_string(text, sizeof text - 1, "test", &err);
    ck_assert_ptr_nonnull(doc);
    ck_assert_msg(plat_load("h200-sxm-8", NULL, yio_root(doc), p, &err) == 0, "%s", err.msg);
    yio_free(doc);
}

START_TEST(fit_has_both_kinds)
{
    tu_setup();
    platform p;
    interf_model m;
    cp_err err = {0};
    load_h200_pair(&p);
    ck_assert_int_eq(interf_load(&m, &p, &err), 0);
    ck_assert_int_eq(m.ngroups[IK_GEMM], 1);
    ck_assert_int_eq(m.c[IK_GEMM][0].procs, 2);
    ck_assert_int_eq(m.c[IK_GEMM][0].n, 2);
    ck_assert_int_eq(m.c[IK_ATTENTION][0].n, 2);
    double fc, fm;
    /* 16 MiB messages slow a GEMM more than 256 MiB ones (overlap.csv
     * rows: compute_slowdown 1.32-1.50 vs 1.07-1.20) */
    interf_factors(&m, IK_GEMM, 16777216, &fc, &fm);
    double fc_big, fm_big;
    interf_factors(&m, IK_GEMM, 268435456, &fc_big, &fm_big);
    ck_assert_double_gt(fc, fc_big);
    ck_assert_double_gt(fm, fm_big);
    ck_assert_double_gt(fc_big, 1.0);
    /* attention starves NCCL far more than a GEMM does */
    double fc_a, fm_a;
    interf_factors(&m, IK_ATTENTION, 268435456, &fc_a, &fm_a);
    ck_assert_double_gt(fm_a, 2.0 * fm_big);
    /* clamped outside the measured sizes; none without a profile */
    interf_factors(&m, IK_GEMM, 1024, &fc_big, &fm_big);
    ck_assert_double_eq(fc_big, fc);
    p.calibration[0] = '\0';
    ck_assert_int_eq(interf_load(&m, &p, &err), 0);
    interf_factors(&m, IK_GEMM, 16777216, &fc, &fm);
    ck_assert_double_eq(fc, 1.0);
    ck_assert_double_eq(fm, 1.0);
}
END_TEST

/* overlap.csv measured on 2 and on 8 ranks (column nranks): each group size
 * its own factors, a 4-rank collective halfway in log(n), clamped outside.
 * Rows: alone 10 ms each, both ending together at 12 ms (2 ranks: f 1.2)
 * and at 15 ms (8 ranks: f 1.5). */
START_TEST(factors_per_group_size)
{
    char dir[] = "/tmp/check_interference_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[512];
    const char *parts[] = {"/platforms", "/platforms/calibration", "/platforms/calibration/toy"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", dir, parts[i]);
        ck_assert_int_eq(mkdir(path, 0700), 0);
    }
    snprintf(path, sizeof path, "%s/platforms/calibration/toy/overlap.csv", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("compute,comm_size_bytes,nranks,compute_ms_alone,comm_ms_alone,"
          "compute_ms_concurrent,comm_ms_concurrent\n"
          "gemm_a,16777216,2,10,10,12,12\n"
          "gemm_a,16777216,8,10,10,15,15\n",
          f);
    fclose(f);
    setenv("CPSIM_DATADIR", dir, 1);
    platform p;
    memset(&p, 0, sizeof p);
    snprintf(p.calibration, sizeof p.calibration, "toy");
    interf_model m;
    cp_err err = {0};
    ck_assert_msg(interf_load(&m, &p, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(m.ngroups[IK_GEMM], 2);
    ck_assert_int_eq(m.ngroups[IK_ATTENTION], 0);
    const int n[] = {0, 2, 4, 8, 16};
    const double want[] = {1.2, 1.2, 1.35, 1.5, 1.5};
    for (int i = 0; i < 5; i++) {
        double fc, fm;
        interf_factors_at(&m, IK_GEMM, n[i], 16777216, &fc, &fm);
        ck_assert_double_eq_tol(fc, want[i], 1e-12);
        ck_assert_double_eq_tol(fm, want[i], 1e-12);
    }
    /* a group size that is no integer is refused at its cell */
    f = fopen(path, "w");
    fputs("compute,comm_size_bytes,nranks,compute_ms_alone,comm_ms_alone,"
          "compute_ms_concurrent,comm_ms_concurrent\n"
          "gemm_a,16777216,2.5,10,10,12,12\n",
          f);
    fclose(f);
    ck_assert_int_eq(interf_load(&m, &p, &err), -1);
    ck_assert_msg(strstr(err.msg, "overlap.csv:2:17: nranks: expected an integer"), "%s",
                  err.msg);
    unlink(path);
    for (int i = 2; i >= 0; i--) {
        snprintf(path, sizeof path, "%s%s", dir, parts[i]);
        rmdir(path);
    }
    rmdir(dir);
    tu_setup();
}
END_TEST

static plan_op op_compute(double cost, int attention)
{
    plan_op o = {0};
    o.name = "compute";
    o.kind = OPK_COMPUTE;
    o.stream = ST_COMPUTE;
    o.kclass = attention ? KC_ATTENTION : KC_GEMM;
    o.cost_s = cost;
    o.layer = -1;
    return o;
}

static plan_op op_comm(const char *name, double bytes)
{
    plan_op o = {0};
    o.name = name;
    o.stream = ST_COMM;
    o.group = G_TP;
    o.layer = -1;
    int k = 0;
    while (coll_names[k] && strcmp(coll_names[k], name) != 0)
        k++;
    if (coll_names[k]) {
        o.kind = OPK_COLL;
        o.coll = (uint8_t)k;
        o.alg = ALG_AUTO;
        o.comm_bytes = bytes;
    } else { /* sendrecv: send to the next rank, receive from the previous */
        o.kind = OPK_P2P;
        o.comm_bytes = o.recv_bytes = bytes;
        o.send_off = 1;
        o.recv_off = -1;
    }
    return o;
}

/* Simulate row i of overlap.csv; writes the two relative errors. */
START_TEST(row_matches_measurement)
{
    tu_setup();
    static char arg0[] = "check_interference";
    static char *argv[] = {arg0, NULL};
    int argc = 1;
    cp_err err = {0};
    platform p;
    load_h200_pair(&p);
    calib_table *t = calib_load("h200", "overlap", &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ck_assert_int_eq(calib_rows(t), NROWS);
    int i = _i;
    const char *compute = calib_str(t, i, calib_col(t, "compute", &err));
    const char *comm = calib_str(t, i, calib_col(t, "comm", &err));
    double size = calib_num(t, i, calib_num_col(t, "comm_size_bytes", &err));
    int c_reps = (int)calib_num(t, i, calib_num_col(t, "compute_reps", &err));
    int m_reps = (int)calib_num(t, i, calib_num_col(t, "comm_reps", &err));
    double c_alone = 1e-3 * calib_num(t, i, calib_num_col(t, "compute_ms_alone", &err));
    double c_conc = 1e-3 * calib_num(t, i, calib_num_col(t, "compute_ms_concurrent", &err));
    double m_conc = 1e-3 * calib_num(t, i, calib_num_col(t, "comm_ms_concurrent", &err));

    plan pl;
    plan_layout_cfg lay = {.tp = 2, .sp = 1, .ep = 1, .dp = 1, .devices_per_node = 2};
    plan_init(&pl, &lay);
    plan_add_prog(&pl);
    pl.nsteps = 1;
    pl.prog_of_rank[0] = pl.prog_of_rank[1] = 0;
    plan_op st = {.name = "step", .kind = OPK_STEP, .stream = ST_COMPUTE, .layer = -1};
    plan_push(&pl.progs[0], &st);
    for (int k = 0; k < m_reps; k++) {
        plan_op o = op_comm(comm, size);
        plan_push(&pl.progs[0], &o);
    }
    int attention = strncmp(compute, "flash", 5) == 0;
    for (int k = 0; k < c_reps; k++) {
        plan_op o = op_compute(c_alone / c_reps, attention);
        plan_push(&pl.progs[0], &o);
    }
    coll_model cm;
    interf_model im;
    ck_assert_int_eq(coll_model_init(&cm, &p, &err), 0);
    ck_assert_int_eq(interf_load(&im, &p, &err), 0);
    eng_init(&argc, argv);
    eng_opts eo = {.plat = &p, .cm = &cm, .graph = 0, .im = &im};
    eng_result r;
    ck_assert_msg(eng_run(&pl, &eo, &r, &err) == 0, "%s", err.msg);
    double c_end = 0, m_end = 0;
    size_t n;
    eng_event *ev = eng_all_events(&r, &n);
    for (size_t e = 0; e < n; e++) {
        if (ev[e].stream == ST_COMPUTE && ev[e].t1 > c_end)
            c_end = ev[e].t1;
        if (ev[e].stream == ST_COMM && ev[e].t1 > m_end)
            m_end = ev[e].t1;
    }
    free(ev);
    double ec = (c_end - c_conc) / c_conc, em = (m_end - m_conc) / m_conc;
    FILE *f = fopen(ERR_FILE, "a");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%d %s %s %.0f %.6f %.6f\n", i, compute, comm, size, ec, em);
    fclose(f);
    printf("overlap row %2d %-28s %-14s %4.0f MiB: compute %7.2f ms (measured %7.2f, %+5.1f %%),"
           " comm %7.2f ms (measured %7.2f, %+5.1f %%)\n", i, compute, comm, size / 1048576,
           c_end * 1e3, c_conc * 1e3, 100 * ec, m_end * 1e3, m_conc * 1e3, 100 * em);
    eng_result_free(&r);
    plan_free(&pl);
    calib_free(t);
}
END_TEST

static int cmp_abs(const void *a, const void *b)
{
    double x = fabs(*(const double *)a), y = fabs(*(const double *)b);
    return (x > y) - (x < y);
}

/* Over all rows: the concurrent end times within 10 % at the median and
 * 30 % for every row (one median factor per kind and size serves five
 * collectives). */
START_TEST(rows_summary)
{
    FILE *f = fopen(ERR_FILE, "r");
    ck_assert_ptr_nonnull(f);
    double err[2 * NROWS];
    int n = 0, row;
    char c[64], m[64];
    double size, ec, em;
    while (n < 2 * NROWS &&
           fscanf(f, "%d %63s %63s %lf %lf %lf", &row, c, m, &size, &ec, &em) == 6) {
        err[n++] = ec;
        err[n++] = em;
    }
    fclose(f);
    remove(ERR_FILE);
    ck_assert_int_eq(n, 2 * NROWS);
    qsort(err, (size_t)n, sizeof *err, cmp_abs);
    double med = 0.5 * (fabs(err[n / 2 - 1]) + fabs(err[n / 2])), worst = fabs(err[n - 1]);
    printf("overlap.csv: median |error| %.1f %%, worst %.1f %% over %d end times\n",
           100 * med, 100 * worst, n);
    ck_assert_double_le(med, 0.10);
    ck_assert_double_le(worst, 0.30);
}
END_TEST

static void clean(void)
{
    remove(ERR_FILE);
}

static Suite *suite(void)
{
    Suite *s = suite_create("interference");
    TCase *fit = tcase_create("fit");
    tcase_add_test(fit, fit_has_both_kinds);
    tcase_add_test(fit, factors_per_group_size);
    suite_add_tcase(s, fit);
    TCase *rows = tcase_create("rows");
    tcase_set_timeout(rows, 120);
    tcase_add_unchecked_fixture(rows, clean, NULL);
    tcase_add_loop_test(rows, row_matches_measurement, 0, NROWS);
    tcase_add_test(rows, rows_summary);
    suite_add_tcase(s, rows);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
