/* interference: compute/communication slowdowns fitted to overlap.csv
 * (see interference.h). */
#include "models/interference.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/calib.h"
#include "base/datadir.h"

int interf_kind(plan_kclass kc)
{
    return kc == KC_ATTENTION || kc == KC_SPARSE_ATTN || kc == KC_INDEXER ? IK_ATTENTION
                                                                           : IK_GEMM;
}

/* The slowdowns of one measured row (see interference.h). */
static void row_factors(double c_alone, double m_alone, double c_conc, double m_conc,
                        double *fc, double *fm)
{
    double d = c_conc < m_conc ? c_conc : m_conc;
    if (m_conc >= c_conc) {
        double done = m_alone - (m_conc - d);
        *fc = d / c_alone;
        *fm = done > 0 ? d / done : d / m_alone;
    } else {
        double done = c_alone - (c_conc - d);
        *fm = d / m_alone;
        *fc = done > 0 ? d / done : d / c_alone;
    }
    if (*fc < 1)
        *fc = 1;
    if (*fm < 1)
        *fm = 1;
}

/* Group size of row i: column nranks or P, 2 without either (the first
 * profile measured pairs). */
static int row_procs(const calib_table *t, int i, int col)
{
    return col < 0 ? 2 : (int)calib_num(t, i, col);
}

/* Kind of the compute kernel of row i (flash attention rows start "flash"). */
static int row_kind(const calib_table *t, int i, int col)
{
    return strncmp(calib_str(t, i, col), "flash", 5) == 0 ? IK_ATTENTION : IK_GEMM;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The columns of overlap.csv a fit reads (calib_group_col: P or nranks,
 * -1 without one). */
typedef struct ov_cols {
    int kind, size, ca, ma, cc, mc, p;
} ov_cols;

static int find_cols(const calib_table *t, ov_cols *c, cp_err *err)
{
    c->kind = calib_col(t, "compute", err);
    c->size = c->kind < 0 ? -1 : calib_num_col(t, "comm_size_bytes", err);
    c->ca = c->size < 0 ? -1 : calib_num_col(t, "compute_ms_alone", err);
    c->ma = c->ca < 0 ? -1 : calib_num_col(t, "comm_ms_alone", err);
    c->cc = c->ma < 0 ? -1 : calib_num_col(t, "compute_ms_concurrent", err);
    c->mc = c->cc < 0 ? -1 : calib_num_col(t, "comm_ms_concurrent", err);
    if (c->mc < 0)
        return -1;
    const char *pname;
    c->p = calib_group_col(t, &pname, err);
    return pname && c->p < 0 ? -1 : 0;
}

/* Every used cell in bounds: a group size in [2, 65536] (platform.c
 * DEVICES_MAX), a size of up to 1e15 bytes, times of up to 1e6 ms (bounds
 * of our own; beyond, a cell is a typo); at least one row. */
static int check_rows(const calib_table *t, const ov_cols *c, cp_err *err)
{
    const int cols[] = {c->size, c->ca, c->ma, c->cc, c->mc};
    const char *pname = NULL;
    cp_err ignore = {0};
    calib_group_col(t, &pname, &ignore);
    for (int i = 0; i < calib_rows(t); i++) {
        double q = c->p < 0 ? 2 : calib_num(t, i, c->p);
        if (!(q >= 2 && q <= 65536) || q != floor(q))
            return cp_fail_at(err, calib_loc(t, i, c->p), "%s: expected an integer in [2, "
                              "65536], got %g", pname, q);
        for (size_t k = 0; k < sizeof cols / sizeof *cols; k++) {
            double v = calib_num(t, i, cols[k]), hi = k == 0 ? 1e15 : 1e6;
            if (!(v > 0 && v <= hi))
                return cp_fail_at(err, calib_loc(t, i, cols[k]), "expected a number in (0, "
                                  "%g], got %g", hi, v);
        }
    }
    if (calib_rows(t) == 0)
        return cp_fail(err, CP_EXIT_INPUT, "calibration table %s has no data rows",
                       calib_path(t));
    return 0;
}

/* The curve of compute kind k at group size `procs`: its message sizes
 * ascending, each the median of its rows' factors (fc, fm: scratch of a
 * row each). */
static int fit_curve(const calib_table *t, const ov_cols *c, int k, int procs,
                     interf_curve *cv, double *fc, double *fm, cp_err *err)
{
    int rows = calib_rows(t);
    cv->procs = procs;
    for (;;) {
        double next = INFINITY, last = cv->n ? cv->size[cv->n - 1] : 0;
        for (int i = 0; i < rows; i++) {
            double s = calib_num(t, i, c->size);
            if (row_kind(t, i, c->kind) == k && row_procs(t, i, c->p) == procs && s > last &&
                s < next)
                next = s;
        }
        if (isinf(next))
            return 0;
        if (cv->n == INTERF_MAX_SIZES)
            return cp_fail(err, CP_EXIT_INPUT, "%s: more than %d message sizes for one "
                           "compute kind", calib_path(t), INTERF_MAX_SIZES);
        int n = 0;
        for (int i = 0; i < rows; i++) {
            if (row_kind(t, i, c->kind) != k || row_procs(t, i, c->p) != procs ||
                calib_num(t, i, c->size) != next)
                continue;
            row_factors(calib_num(t, i, c->ca), calib_num(t, i, c->ma), calib_num(t, i, c->cc),
                        calib_num(t, i, c->mc), &fc[n], &fm[n]);
            n++;
        }
        int j = cv->n++;
        cv->size[j] = next;
        cv->fc[j] = median(fc, n);
        cv->fm[j] = median(fm, n);
    }
}

/* The curves of compute kind k, one per group size, ascending. */
static int fit_kind(const calib_table *t, const ov_cols *c, int k, interf_model *m,
                    double *fc, double *fm, cp_err *err)
{
    for (int last_p = 0;;) {
        int procs = INT_MAX;
        for (int i = 0; i < calib_rows(t); i++) {
            int q = row_procs(t, i, c->p);
            if (row_kind(t, i, c->kind) == k && q > last_p && q < procs)
                procs = q;
        }
        if (procs == INT_MAX)
            return 0;
        if (m->ngroups[k] == INTERF_MAX_GROUPS)
            return cp_fail(err, CP_EXIT_INPUT, "%s: more than %d group sizes for one compute "
                           "kind", calib_path(t), INTERF_MAX_GROUPS);
        if (fit_curve(t, c, k, procs, &m->c[k][m->ngroups[k]++], fc, fm, err) < 0)
            return -1;
        last_p = procs;
    }
}

int interf_load(interf_model *m, const platform *p, cp_err *err)
{
    memset(m, 0, sizeof *m);
    char path[1024];
    if (!p->calibration[0] ||
        access(cp_calib_table(path, sizeof path, p->calibration, "overlap"), R_OK) != 0)
        return 0;
    calib_table *t = calib_load(p->calibration, "overlap", err);
    if (!t)
        return -1;
    ov_cols c;
    int rc = find_cols(t, &c, err) < 0 || check_rows(t, &c, err) < 0 ? -1 : 0;
    int rows = calib_rows(t);
    double *fc = calloc((size_t)rows + 1, sizeof *fc), *fm = calloc((size_t)rows + 1, sizeof *fm);
    if (!fc || !fm)
        abort();
    for (int k = 0; k < IK_COUNT && rc == 0; k++)
        rc = fit_kind(t, &c, k, m, fc, fm, err);
    free(fc);
    free(fm);
    calib_free(t);
    return rc;
}

/* Linear in log(size) between measured sizes, clamped at the ends. */
static double interp(const double *size, const double *f, int n, double bytes)
{
    if (bytes <= size[0])
        return f[0];
    if (bytes >= size[n - 1])
        return f[n - 1];
    int i = 0;
    while (bytes >= size[i + 1])
        i++;
    double x = (log(bytes) - log(size[i])) / (log(size[i + 1]) - log(size[i]));
    return f[i] + x * (f[i + 1] - f[i]);
}

void interf_factors_at(const interf_model *m, int kind, int n, double bytes, double *fc,
                       double *fm)
{
    *fc = *fm = 1.0;
    if (kind < 0 || kind >= IK_COUNT || m->ngroups[kind] == 0)
        return;
    /* the group sizes bracketing n, linear in log(n), clamped */
    const interf_curve *a = &m->c[kind][0], *b = a;
    double f = 0;
    for (int i = 1; i < m->ngroups[kind] && n > a->procs; i++) {
        b = &m->c[kind][i];
        if (n < b->procs) {
            f = (log(n) - log(a->procs)) / (log(b->procs) - log(a->procs));
            break;
        }
        a = b;
    }
    double ca = interp(a->size, a->fc, a->n, bytes), ma = interp(a->size, a->fm, a->n, bytes);
    if (f == 0) {
        *fc = ca;
        *fm = ma;
        return;
    }
    *fc = ca + f * (interp(b->size, b->fc, b->n, bytes) - ca);
    *fm = ma + f * (interp(b->size, b->fm, b->n, bytes) - ma);
}

void interf_factors(const interf_model *m, int kind, double bytes, double *fc, double *fm)
{
    interf_factors_at(m, kind, 0, bytes, fc, fm);
}
