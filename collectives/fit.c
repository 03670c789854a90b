/* fit: the collective cost model of a platform (coll_model_init, coll.h)
 * and its fit to NCCL measurements (coll_fit_table, coll_alg.h).
 *
 * In each launch mode (eager: nccl.csv, graph: nccl_graph.csv) the
 * simulator runs a call of kind k and S bytes on P ranks of one node as
 *     t = overhead_k(S) + R + W / eff_k
 * with R the route latencies its algorithm pays (latency per lock-step
 * step) and W its wire time at the links' rate (bandwidth * efficiency;
 * coll_analytic_s with lat 0, resp. S 0), both on the fabric the tables
 * were measured on: the preset's own figures (platform.cal_intra), not a
 * what-if's, so that a what-if changes the links and keeps the fit.  For
 * each kind k and group size P measured, from its rows (k, S_i, P, t_i)
 * of the mode's table:
 *     eff_k = min(1, max_i W_i / (t_i - R_i))
 * the best achieved fraction of line rate (links are occupied at the
 * measured peak rate, and the row that sets it has no overhead), and
 *     overhead_k(S_i) = max(0, t_i - R_i - W_i / eff_k)
 * the rest of each row's time, a cost of the stream that occupies no link.
 * Every row is reproduced exactly, except one faster than line rate plus
 * route latencies on this fabric (t_i < R_i + W_i), which runs at line rate
 * with no overhead.  Small messages thus cost overhead, not wire occupancy.
 * A call on n ranks takes eff and overhead linear in log(n) between the
 * group sizes measured, those of the nearest one outside them (model.c):
 * ring and one-shot algorithms, channel counts and protocols change with
 * the group size, and a 2-rank table says nothing of 8.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectives/coll_alg.h"
#include "base/datadir.h"

/* Operation names of the nccl tables, by coll kind (CK_COUNT: sendrecv). */
static const char *const op_names[] = {"all_reduce", "all_gather", "reduce_scatter",
                                       "all_to_all", "broadcast", "sendrecv",
                                       "custom_all_reduce", NULL};

/* One measured call. */
typedef struct fit_row {
    int kind;
    int procs;
    double bytes;
    double time_s;
    double wire_s;     /* W: line-rate wire time on this platform's fabric */
    double route_s;    /* R: route latencies of the algorithm */
    int line;          /* row index in the table, for messages */
} fit_row;

/* The platform's figures, every curve unmeasured. */
static void platform_model(coll_model *m, const platform *p)
{
    memset(m, 0, sizeof *m);
    m->latency_eager = p->coll_latency_eager;
    m->latency_graph = p->coll_latency_graph;
    m->lat_scale[0] = p->cal_coll_latency_eager > 0
                          ? p->coll_latency_eager / p->cal_coll_latency_eager : 1.0;
    m->lat_scale[1] = p->cal_coll_latency_graph > 0
                          ? p->coll_latency_graph / p->cal_coll_latency_graph : 1.0;
    m->oneshot_max = p->allreduce_oneshot_max;
    /* generated links carry the fabric's efficiency; a raw XML file's links
     * run at the file's rates, its link_efficiency applies to the bytes */
    m->eff_default = p->raw_xml ? p->intra.efficiency : 1.0;
    m->mesh = p->fabric == FAB_MESH && !p->raw_xml;
    m->node_size = p->devices_per_node;
}

/* W and R of a row, run as the simulator runs it on the calibrated fabric
 * (same algorithm choice). */
static void row_ideal(const coll_model *m, const platform *p, fit_row *r)
{
    /* the custom all-reduce moves an all-reduce's bytes (coll_run) */
    int kind = r->kind == COLL_CUSTOM_AR ? CK_ALL_REDUCE : r->kind;
    coll_call c = {.kind = kind == CK_COUNT ? CK_ALL_GATHER : (plan_coll)kind,
                   .alg = ALG_AUTO, .n = r->procs, .bytes = r->bytes};
    plan_alg alg = kind == CK_COUNT ? ALG_RING : coll_pick(m, &c);
    double bw = plat_link_rate(p, &p->cal_intra);
    if (m->mesh) /* a full mesh: one link per pair */
        bw /= (double)(p->devices_per_node > 1 ? p->devices_per_node - 1 : 1);
    r->wire_s = coll_analytic_s(kind, alg, r->procs, r->bytes, bw, 0);
    r->route_s = coll_analytic_s(kind, alg, r->procs, 0, bw, p->cal_intra.latency);
}

/* Check row i and fill *r from it; -1 with an error at the bad cell. */
static int read_row(const calib_table *t, int i, int c_op, int c_p, int c_size, int c_time,
                    fit_row *r, cp_err *err)
{
    const char *op = calib_str(t, i, c_op);
    int k = 0;
    while (op_names[k] && strcmp(op_names[k], op) != 0)
        k++;
    char hint[96];
    if (!op_names[k])
        return cp_fail_at(err, calib_loc(t, i, c_op), "unknown op \"%s\"%s", op,
                          cp_suggest(hint, sizeof hint, op, op_names));
    double procs = c_p < 0 ? 2 : calib_num(t, i, c_p);
    if (!(procs >= 2 && procs <= 65536) || procs != floor(procs)) /* platform.c DEVICES_MAX */
        return cp_fail_at(err, calib_loc(t, i, c_p),
                          "P: expected an integer in [2, 65536], got %g", procs);
    r->kind = k; /* op_names follows plan_coll, then CK_COUNT */
    r->procs = (int)procs;
    r->bytes = calib_num(t, i, c_size);
    r->time_s = calib_num(t, i, c_time) * 1e-6; /* README: microseconds */
    r->line = i;
    /* bounds of our own: a collective of up to 1e15 bytes taking up to
     * 1e9 us (17 minutes); beyond, a cell is a typo, and a time of 1e308
     * would make every cost infinite */
    if (!(r->bytes > 0 && r->bytes <= 1e15))
        return cp_fail_at(err, calib_loc(t, i, c_size), "size_bytes: expected a number in "
                          "(0, 1e15], got %g", r->bytes);
    if (!(r->time_s > 0 && r->time_s <= 1e3))
        return cp_fail_at(err, calib_loc(t, i, c_time), "time_us: expected a number in "
                          "(0, 1e9], got %g", r->time_s * 1e6);
    return 0;
}

/* The group-size column (calib_group_col), -1 when there is none. */
static int group_col(const calib_table *t, cp_err *err)
{
    const char *name;
    return calib_group_col(t, &name, err);
}

/* All rows: op, the group size (column nranks, else P; 2 when neither is
 * there), size_bytes, time_us. */
static int read_rows(const calib_table *t, fit_row **rows, int *nrows, cp_err *err)
{
    int c_op = calib_col(t, "op", err);
    int c_size = c_op < 0 ? -1 : calib_num_col(t, "size_bytes", err);
    int c_time = c_size < 0 ? -1 : calib_num_col(t, "time_us", err);
    if (c_time < 0)
        return -1;
    int c_p = group_col(t, err);
    if (c_p < 0 && err->code)
        return -1;
    int n = calib_rows(t);
    if (n == 0)
        return cp_fail(err, CP_EXIT_INPUT, "calibration table %s has no data rows",
                       calib_path(t));
    fit_row *r = calloc((size_t)n, sizeof *r);
    if (!r)
        abort(); /* out of host memory: nothing sensible to report */
    for (int i = 0; i < n; i++) {
        if (read_row(t, i, c_op, c_p, c_size, c_time, &r[i], err) < 0) {
            free(r);
            return -1;
        }
    }
    *rows = r;
    *nrows = n;
    return 0;
}

/* Insert (size, overhead) into a curve kept in ascending size order. */
static int curve_add(coll_curve *c, double size, double overhead, const calib_table *t,
                     int line, int col, cp_err *err)
{
    if (c->n == COLL_MAX_POINTS)
        return cp_fail_at(err, calib_loc(t, line, col), "more than %d sizes for one op",
                          COLL_MAX_POINTS);
    int i = c->n;
    while (i > 0 && c->size[i - 1] > size) {
        c->size[i] = c->size[i - 1];
        c->overhead[i] = c->overhead[i - 1];
        i--;
    }
    if (i > 0 && c->size[i - 1] == size)
        return cp_fail_at(err, calib_loc(t, line, col), "size %.0f measured twice for one op",
                          size);
    c->size[i] = size;
    c->overhead[i] = overhead;
    c->n++;
    return 0;
}

/* eff of `kind` at group size procs: min(1, max over its rows of
 * W / (t - R)); 0 without rows.  A row with t <= R + W ran at line rate or
 * faster: 1. */
static double kind_eff(const fit_row *rows, int n, int kind, int procs)
{
    double eff = 0;
    for (int i = 0; i < n; i++) {
        if (rows[i].kind != kind || rows[i].procs != procs)
            continue;
        double left = rows[i].time_s - rows[i].route_s;
        double e = left > rows[i].wire_s ? rows[i].wire_s / left : 1;
        if (e > eff)
            eff = e;
    }
    return eff;
}

/* The curve of (kind, procs) in mode g of out, made when new (the group
 * sizes of a kind kept ascending); NULL with an error past COLL_MAX_GROUPS. */
static coll_curve *curve_for(coll_model *out, int g, int kind, int procs,
                             const calib_table *t, const fit_row *r, int c_p, cp_err *err)
{
    coll_curve *first = &out->curve[g][kind], *w = out->wider[g][kind];
    int *nw = &out->nwider[g][kind];
    if (first->procs == procs)
        return first;
    for (int i = 0; i < *nw; i++)
        if (w[i].procs == procs)
            return &w[i];
    if (*nw == COLL_MAX_GROUPS - 1) {
        cp_fail_at(err, calib_loc(t, r->line, c_p < 0 ? 0 : c_p),
                   "more than %d group sizes for one op", COLL_MAX_GROUPS);
        return NULL;
    }
    coll_curve fresh = {.procs = procs};
    if (first->procs == 0) {
        *first = fresh;
        return first;
    }
    /* keep ascending: the smallest in curve, the others in wider */
    coll_curve all[COLL_MAX_GROUPS];
    int n = 0;
    all[n++] = *first;
    for (int i = 0; i < *nw; i++)
        all[n++] = w[i];
    int at = n;
    while (at > 0 && all[at - 1].procs > procs) {
        all[at] = all[at - 1];
        at--;
    }
    all[at] = fresh;
    n++;
    *first = all[0];
    for (int i = 1; i < n; i++)
        w[i - 1] = all[i];
    *nw = n - 1;
    return at == 0 ? first : &w[at - 1];
}

/* Whether out already has a measured curve of (kind, procs) in mode g. */
static int has_curve(const coll_model *out, int g, int kind, int procs)
{
    if (out->curve[g][kind].procs == procs && out->curve[g][kind].n > 0)
        return 1;
    for (int i = 0; i < out->nwider[g][kind]; i++)
        if (out->wider[g][kind][i].procs == procs && out->wider[g][kind][i].n > 0)
            return 1;
    return 0;
}

/* Fit the rows of t into out's curves of mode g; with `add`, only the
 * (kind, group size) pairs out has not measured yet (the others' rows are
 * skipped: a profile's own table wins over an imported one). */
static int fit_rows(const coll_model *m, const platform *p, const calib_table *t,
                    coll_model *out, int g, int add, cp_err *err)
{
    fit_row *rows = NULL;
    int n = 0;
    if (read_rows(t, &rows, &n, err) < 0)
        return -1;
    int c_p = group_col(t, err);
    int c_size = calib_col(t, "size_bytes", err); /* found by read_rows */
    int rc = 0, kept = 0;
    for (int i = 0; i < n; i++)
        if (!add || !has_curve(out, g, rows[i].kind, rows[i].procs))
            rows[kept++] = rows[i];
    n = kept;
    for (int i = 0; i < n && rc == 0; i++) {
        row_ideal(m, p, &rows[i]);
        coll_curve *c = curve_for(out, g, rows[i].kind, rows[i].procs, t, &rows[i], c_p, err);
        if (!c)
            rc = -1;
        else if (c->eff == 0)
            c->eff = -1; /* fitted below, once the rows are all in */
    }
    for (int i = 0; i < n && rc == 0; i++) {
        const fit_row *r = &rows[i];
        coll_curve *c = curve_for(out, g, r->kind, r->procs, t, r, c_p, err);
        if (c->eff < 0)
            c->eff = kind_eff(rows, n, r->kind, r->procs);
        double over = r->time_s - r->route_s - r->wire_s / c->eff;
        rc = curve_add(c, r->bytes, over > 0 ? over : 0, t, r->line, c_size, err);
    }
    free(rows);
    return rc;
}

int coll_fit_table(const coll_model *m, const platform *p, const calib_table *t,
                   coll_model *out, int graph, cp_err *err)
{
    int g = graph != 0;
    memset(out->curve[g], 0, sizeof out->curve[g]);
    memset(out->wider[g], 0, sizeof out->wider[g]);
    memset(out->nwider[g], 0, sizeof out->nwider[g]);
    return fit_rows(m, p, t, out, g, 0, err);
}

/* The same, keeping out's curves of the mode and fitting only the rows of
 * (kind, group size) pairs out has not measured (an imported table beside
 * the profile's own; op custom_all_reduce: the COLL_CUSTOM_AR curve). */
static int coll_fit_add(const coll_model *m, const platform *p, const calib_table *t,
                 coll_model *out, int graph, cp_err *err)
{
    return fit_rows(m, p, t, out, graph != 0, 1, err);
}

/* Whether the profile has <table>.csv. */
static int has_table(const char *profile, const char *table)
{
    char path[1024];
    return access(cp_calib_table(path, sizeof path, profile, table), R_OK) == 0;
}

/* Fit the curves of one mode from table `table` of the platform's profile
 * (add: only what the curves lack). */
static int fit_mode(coll_model *m, const platform *p, const char *table, int graph, int add,
                    cp_err *err)
{
    calib_table *t = calib_load(p->calibration, table, err);
    int rc = !t ? -1 : add ? coll_fit_add(m, p, t, m, graph, err)
                           : coll_fit_table(m, p, t, m, graph, err);
    calib_free(t);
    return rc;
}

/* The imported tables of a profile, each fitted where the profile's own
 * nccl tables leave a (kind, group size) unmeasured: aiconfigurator's NCCL
 * rows on 4 and 8 GPUs with our launch path added (aic_nccl*.csv), and the
 * engines' custom all-reduce (aic_custom_allreduce*.csv, vLLM 0.14);
 * scripts/aic_import.py writes them.  [mode] = eager, graph. */
static const char *const imported[][2] = {
    {"aic_nccl", "aic_nccl_graph"},
    {"aic_custom_allreduce", "aic_custom_allreduce_graph"},
};

int coll_model_init(coll_model *m, const platform *p, cp_err *err)
{
    platform_model(m, p);
    if (!(p->intra.bandwidth > 0) || !(p->intra.latency >= 0) ||
        !(p->intra.efficiency > 0 && p->intra.efficiency <= 1) ||
        !(p->coll_latency_eager >= 0) || !(p->coll_latency_graph >= 0))
        return cp_fail(err, CP_EXIT_INPUT, "platform %s: the fabric needs bandwidth > 0, "
                       "latency >= 0 and efficiency in (0, 1], collective latencies >= 0",
                       p->name);
    if (!p->calibration[0] || !has_table(p->calibration, "nccl") ||
        !has_table(p->calibration, "nccl_graph"))
        return 0;
    int rc = fit_mode(m, p, "nccl", 0, 0, err) < 0 || fit_mode(m, p, "nccl_graph", 1, 0, err) < 0;
    for (size_t i = 0; !rc && i < sizeof imported / sizeof imported[0]; i++)
        for (int g = 0; g < 2 && !rc; g++)
            if (has_table(p->calibration, imported[i][g]))
                rc = fit_mode(m, p, imported[i][g], g, 1, err) < 0;
    if (rc) {
        platform_model(m, p);
        return -1;
    }
    return 0;
}
