/* cost_check: the calibration check (every profile row predicted on the
 * device that measured it, with the row left out of its own series) and
 * the accuracy figures by class (cost.h). */
#include "models/cost_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- calibration check -------------------------------------------------- */

/* Predicted time per call of back-to-back calls of one kernel: the host
 * issues op->nkern launches per call, the device runs the kernel. */
static double per_call(const cost_model *c, const plan_op *op, double kernel, int graph)
{
    int n = cost_kernels(op);
    return graph ? fmax(kernel, n * c->launch_graph)
                 : fmax(kernel + n * COST_EAGER_GAP, n * c->launch_eager);
}

static void check_row(const cost_model *c, const cost_row *r, int graph, cost_check_row *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->table, sizeof out->table, "%s", plan_costsrc_file(r->src));
    snprintf(out->label, sizeof out->label, "%s %s", r->label, graph ? "graph" : "eager");
    snprintf(out->cls, sizeof out->cls, "%s_%s", r->cls, graph ? "graph" : "eager");
    out->measured_s = graph ? r->t_graph : r->t_eager;
    out->repeat_s = graph ? r->t_graph2 : r->t_eager2;
    lookup lk;
    double table = cost_table_time(c, &r->op, r->kk, 1, &lk);
    double model = cost_analytic(c, &c->dev, &r->op, r->kk);
    out->table_s = per_call(c, &r->op, table > 0 ? table : model, graph);
    out->analytic_s = per_call(c, &r->op, model, graph);
    out->refused = cost_row_impossible(&c->ref, r);
}

int cost_check_calibration(const platform *p, cost_check_row **rows, cp_err *err)
{
    *rows = NULL;
    if (!p->calibration[0])
        return cp_fail(err, CP_EXIT_INPUT, "platform %s has no calibration profile", p->name);
    cost_model *c = cost_new(p, err);
    const cost_rows *rs = c ? cost_profile_rows(p->calibration, err) : NULL;
    if (!rs) {
        cost_free(c);
        return -1;
    }
    c->dev = c->ref; /* rows are predicted on the device that measured them */
    cost_check_row *out = calloc((size_t)rs->n * 2 + 1, sizeof *out);
    int n = 0;
    for (int i = 0; out && i < rs->n; i++) {
        const cost_row *r = &rs->v[i];
        if (r->t_eager > 0)
            check_row(c, r, 0, &out[n++]);
        if (r->t_graph > 0)
            check_row(c, r, 1, &out[n++]);
    }
    cost_free(c);
    if (!out)
        return cp_fail(err, CP_EXIT_INTERNAL, "out of memory");
    *rows = out;
    return n;
}

/* ---- accuracy figures ------------------------------------------------------------- */

static double rel_err(double pred, double meas)
{
    return fabs(pred / meas - 1.0);
}

static int noisy(const cost_check_row *r)
{
    return r->repeat_s > 0 && rel_err(r->repeat_s, r->measured_s) > COST_NOISE;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static cost_accuracy class_stats(const cost_check_row *rows, int n, const char *cls,
                                 double *et, double *ea)
{
    cost_accuracy s = {.worst_table_row = -1, .worst_analytic_row = -1};
    snprintf(s.cls, sizeof s.cls, "%s", cls);
    for (int i = 0; i < n; i++) {
        if (*cls && strcmp(rows[i].cls, cls) != 0)
            continue;
        if (rows[i].refused) {
            s.refused++;
            continue;
        }
        double t = rel_err(rows[i].table_s, rows[i].measured_s);
        double a = rel_err(rows[i].analytic_s, rows[i].measured_s);
        et[s.n] = t;
        ea[s.n++] = a;
        if (noisy(&rows[i])) {
            s.noisy++;
            continue;
        }
        if (s.worst_table_row < 0 || t > s.worst_table) {
            s.worst_table = t;
            s.worst_table_row = i;
        }
        if (s.worst_analytic_row < 0 || a > s.worst_analytic) {
            s.worst_analytic = a;
            s.worst_analytic_row = i;
        }
    }
    s.med_table = median(et, s.n);
    s.med_analytic = median(ea, s.n);
    return s;
}

int cost_accuracy_by_class(const cost_check_row *rows, int n, cost_accuracy **out)
{
    cost_accuracy *acc = calloc((size_t)n + 1, sizeof *acc);
    double *et = calloc((size_t)n + 1, sizeof *et), *ea = calloc((size_t)n + 1, sizeof *ea);
    if (!acc || !et || !ea)
        abort(); /* out of host memory: nothing sensible to report */
    int k = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(rows[j].cls, rows[i].cls);
        if (!seen)
            acc[k++] = class_stats(rows, n, rows[i].cls, et, ea);
    }
    acc[k++] = class_stats(rows, n, "", et, ea);
    free(et);
    free(ea);
    *out = acc;
    return k;
}

void cost_accuracy_print(const cost_check_row *rows, int n, FILE *out)
{
    fprintf(out, "%-22s %-32s %-44s %11s %11s %7s %11s %7s\n", "table", "class", "row",
            "measured_us", "table_us", "err", "analytic_us", "err");
    for (int i = 0; i < n; i++) {
        const cost_check_row *r = &rows[i];
        fprintf(out, "%-22s %-32s %-44.44s %11.2f %11.2f %6.1f%% %11.2f %6.1f%%%s\n", r->table,
                r->cls, r->label, r->measured_s * 1e6, r->table_s * 1e6,
                100 * (r->table_s / r->measured_s - 1), r->analytic_s * 1e6,
                100 * (r->analytic_s / r->measured_s - 1),
                r->refused ? "  (refused: above the device's ceilings)"
                           : noisy(r) ? "  (noisy)" : "");
    }
    cost_accuracy *acc;
    int k = cost_accuracy_by_class(rows, n, &acc);
    fprintf(out, "\nrelative error of time per call; table model with the row's size left "
                 "out of its series\n");
    fprintf(out, "%-32s %5s %6s %7s  %-19s %-19s\n", "class", "rows", "noisy", "refused",
            "table med / worst", "analytic med / worst");
    for (int i = 0; i < k; i++)
        fprintf(out, "%-32s %5d %6d %7d  %6.1f%% / %6.1f%%   %6.1f%% / %6.1f%%\n",
                acc[i].cls[0] ? acc[i].cls : "all", acc[i].n, acc[i].noisy, acc[i].refused,
                100 * acc[i].med_table, 100 * acc[i].worst_table, 100 * acc[i].med_analytic,
                100 * acc[i].worst_analytic);
    fprintf(out, "(noisy: the row's repeat on another machine start differs by more than "
                 "%.0f %%; in the medians, not in the worst)\n", 100 * COST_NOISE);
    free(acc);
}

/* The median of the |errors| of the rows that pick(row) accepts (-1: none). */
static double median_where(const cost_check_row *rows, int n, int analytic, const char *table)
{
    double *v = calloc((size_t)n + 1, sizeof *v);
    if (!v)
        abort(); /* out of host memory: nothing sensible to report */
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!rows[i].refused && (!table || strcmp(rows[i].table, table) == 0))
            v[m++] = rel_err(analytic ? rows[i].analytic_s : rows[i].table_s, rows[i].measured_s);
    double med = m > 0 ? median(v, m) : -1;
    free(v);
    return med;
}

json_t *cost_source_errors(const platform *p, cp_err *err)
{
    cost_check_row *rows;
    int n = cost_check_calibration(p, &rows, err);
    if (n < 0)
        return NULL;
    json_t *j = json_object();
    for (int i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "table:%s", rows[i].table);
        if (!json_object_get(j, key))
            json_object_set_new(j, key, json_real(median_where(rows, n, 0, rows[i].table)));
    }
    json_object_set_new(j, "roofline", json_real(median_where(rows, n, 1, NULL)));
    json_object_set_new(j, "derived", json_real(median_where(rows, n, 0, "elementwise.csv")));
    free(rows);
    return j;
}

json_t *cost_accuracy_json(const cost_check_row *rows, int n)
{
    json_t *j = json_object(), *jr = json_array(), *jc = json_array();
    for (int i = 0; i < n; i++) {
        const cost_check_row *r = &rows[i];
        json_t *o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f}", "table", r->table, "class",
                              r->cls, "row", r->label, "measured_s", r->measured_s, "table_s",
                              r->table_s, "analytic_s", r->analytic_s);
        if (r->repeat_s > 0)
            json_object_set_new(o, "repeat_s", json_real(r->repeat_s));
        json_object_set_new(o, "noisy", json_boolean(noisy(r)));
        json_object_set_new(o, "refused", json_boolean(r->refused));
        json_array_append_new(jr, o);
    }
    cost_accuracy *acc;
    int k = cost_accuracy_by_class(rows, n, &acc);
    for (int i = 0; i < k; i++)
        json_array_append_new(
            jc, json_pack("{s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f}", "class",
                          acc[i].cls[0] ? acc[i].cls : "all", "rows", acc[i].n, "noisy",
                          acc[i].noisy, "refused", acc[i].refused, "table_median",
                          acc[i].med_table, "table_worst",
                          acc[i].worst_table, "analytic_median", acc[i].med_analytic,
                          "analytic_worst", acc[i].worst_analytic));
    free(acc);
    json_object_set_new(j, "schema", json_string("cpsim.accuracy/1"));
    json_object_set_new(j, "classes", jc);
    json_object_set_new(j, "rows", jr);
    return j;
}
