/* compare: both sides reduced to classes (cmp_reduce), the table, the
 * CSV and the paired bars of cpsim compare (compare.h). */
#include "reports/compare/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/plot_fig.h"
#include "reports/report.h"

/* ---- busy, communication, overlap -------------------------------------------------- */

/* The union of the events that `want` keeps (0: compute, 1: communication,
 * 2: all) as sorted disjoint spans into *out; returns its length. */
static double union_of(const cmp_trace *t, int want, rep_span **out, size_t *nout)
{
    rep_span *v = malloc((t->n + 1) * sizeof *v);
    if (!v)
        abort(); /* out of memory: a span per event */
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        int comm = t->k[i].cls >= CMP_FIRST_COMM;
        if (want == 2 || want == comm)
            v[n++] = (rep_span){t->k[i].t0, t->k[i].t0 + t->k[i].dur};
    }
    *nout = rep_spans_merge(v, n);
    *out = v;
    return rep_spans_total(v, *nout);
}

void cmp_reduce(const cmp_trace *t, const int *kernels, cmp_side *s)
{
    memset(s, 0, sizeof *s);
    s->layers = t->layers;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < t->n; i++) {
        const cmp_kernel *e = &t->k[i];
        int nk = kernels ? kernels[i] : 1;
        lo = fmin(lo, e->t0);
        hi = fmax(hi, e->t0 + e->dur);
        if (e->cls < 0) {
            s->unmatched += nk;
            s->unmatched_us += e->dur;
            continue;
        }
        s->count[e->cls] += nk;
        s->us[e->cls] += e->dur;
        if (e->layer >= 0)
            s->layer_us[e->cls] += e->dur;
    }
    for (int c = 0; c < CMP_NCLASSES && t->layers > 0; c++)
        s->layer_us[c] /= t->layers;
    rep_span *all, *comp, *comm;
    size_t nall, ncomp, ncomm;
    s->busy_us = union_of(t, 2, &all, &nall);
    union_of(t, 0, &comp, &ncomp);
    s->comm_us = union_of(t, 1, &comm, &ncomm);
    s->overlap_us = rep_spans_intersect(comp, ncomp, comm, ncomm);
    s->exposed_us = s->comm_us - s->overlap_us;
    s->span_us = t->n ? hi - lo : 0;
    s->idle_us = fmax(0, s->span_us - s->busy_us);
    free(all);
    free(comp);
    free(comm);
}

/* ---- unmatched kernels ------------------------------------------------------------- */

typedef struct unmatched_total {
    size_t name;
    double us;
    long long n;
} unmatched_total;

static int um_order(const void *x, const void *y)
{
    const unmatched_total *p = x, *q = y;
    if (p->us != q->us)
        return p->us > q->us ? -1 : 1;
    return p->name < q->name ? -1 : p->name > q->name;
}

size_t cmp_unmatched(const cmp_trace *t, size_t *idx, double *us, long long *count, size_t max)
{
    unmatched_total *v = calloc(t->nnames + 1, sizeof *v);
    if (!v)
        abort(); /* out of memory: a total per name */
    for (size_t i = 0; i < t->nnames; i++)
        v[i].name = i;
    for (size_t i = 0; i < t->n; i++)
        if (t->k[i].cls < 0) {
            v[t->k[i].name].us += t->k[i].dur;
            v[t->k[i].name].n++;
        }
    qsort(v, t->nnames, sizeof *v, um_order);
    size_t n = 0;
    for (size_t i = 0; i < t->nnames && n < max && v[i].n; i++, n++) {
        idx[n] = v[i].name;
        us[n] = v[i].us;
        count[n] = v[i].n;
    }
    free(v);
    return n;
}

/* ---- the report -------------------------------------------------------------------- */

typedef struct cmp_report {
    const char *run, *profile;
    int rank;
    cmp_trace meas, sim;
    int *sim_kernels;
    cmp_side m, s;
} cmp_report;

/* Unmatched kernel names the table lists (compare.csv lists them all): a
 * screenful, our choice. */
#define CMP_MAX_UNMATCHED 12

/* (cpsim - measured) / measured in %, NAN without a measurement */
static double err_pct(double meas, double sim)
{
    return meas > 0 ? 100.0 * (sim - meas) / meas : NAN;
}

/* A kernel's name cut to fit a table cell: without "void " and its
 * argument list (the first '(' that does not open "(anonymous namespace)"). */
static void short_name(char *buf, size_t len, const char *name)
{
    static const char anon[] = "(anonymous namespace)";
    if (strncmp(name, "void ", 5) == 0)
        name += 5;
    size_t n = 0;
    while (name[n] && (name[n] != '(' || strncmp(name + n, anon, sizeof anon - 1) == 0))
        n += name[n] == '(' ? sizeof anon - 1 : 1;
    int cut = n + 1 > len;
    if (cut)
        n = len - 4;
    snprintf(buf, len, "%.*s%s", (int)n, name, cut ? "..." : "");
}

static void print_row(FILE *out, const char *what, long long cm, long long cs, double um,
                      double us)
{
    fprintf(out, "  %-16s", what);
    if (cm >= 0)
        fprintf(out, " %7lld %7lld", cm, cs);
    else
        fprintf(out, " %15s", "");
    fprintf(out, " %12.1f %12.1f ", um, us);
    double e = err_pct(um, us);
    if (isnan(e))
        fputs("        -\n", out);
    else
        fprintf(out, "%+8.1f%%\n", e);
}

static void print_table(const cmp_report *r, FILE *out)
{
    const cmp_side *m = &r->m, *s = &r->s;
    fprintf(out, "compare: %s (rank %d: %zu ops, %d layers) against %s (%zu device events, "
            "%d layers marked, %d classed by op marks)\n", r->run, r->rank, r->sim.n,
            r->sim.layers, r->profile, r->meas.n, r->meas.layers, r->meas.marked_ops);
    if (r->meas.ndevices > 1)
        fprintf(out, "  note: the profile holds kernels of %d devices; this is device %d "
                "(--device picks another)\n", r->meas.ndevices, r->meas.device);
    if (m->layers > 0 && m->layers != s->layers)
        fprintf(out, "  note: the profile marks %d layers, the run has %d: the per-layer "
                "columns compare like with like, the step totals do not\n", m->layers,
                s->layers);
    fprintf(out, "  %-16s %7s %7s %12s %12s %9s\n", "class", "kernels", "", "measured us",
            "cpsim us", "error");
    fprintf(out, "  %-16s %7s %7s %12s %12s\n", "", "meas", "cpsim", "(step)", "(step)");
    for (int c = 0; c < CMP_NCLASSES; c++)
        if (m->count[c] || s->count[c])
            print_row(out, cmp_class_name(c), m->count[c], s->count[c], m->us[c], s->us[c]);
    if (r->meas.marked_ops == 0 && (m->count[CMP_ROUTING] || s->count[CMP_ROUTING]))
        print_row(out, "routing+elemwise", m->count[CMP_ROUTING] + m->count[CMP_ELEMENTWISE],
                  s->count[CMP_ROUTING] + s->count[CMP_ELEMENTWISE],
                  m->us[CMP_ROUTING] + m->us[CMP_ELEMENTWISE],
                  s->us[CMP_ROUTING] + s->us[CMP_ELEMENTWISE]);
    print_row(out, "busy", -1, -1, m->busy_us, s->busy_us);
    print_row(out, "span", -1, -1, m->span_us, s->span_us);
    print_row(out, "idle (gaps)", -1, -1, m->idle_us, s->idle_us);
    if (m->comm_us > 0 || s->comm_us > 0) {
        print_row(out, "communication", -1, -1, m->comm_us, s->comm_us);
        print_row(out, "  exposed", -1, -1, m->exposed_us, s->exposed_us);
        fprintf(out, "  %-16s %15s %11.1f%% %11.1f%%\n", "  overlap", "",
                m->comm_us > 0 ? 100 * m->overlap_us / m->comm_us : 0,
                s->comm_us > 0 ? 100 * s->overlap_us / s->comm_us : 0);
    }
    if (m->layers > 0 && s->layers > 0) {
        fprintf(out, "  per decoder layer (mean of %d measured, %d simulated):\n", m->layers,
                s->layers);
        for (int c = 0; c < CMP_NCLASSES; c++)
            if (m->layer_us[c] > 0 || s->layer_us[c] > 0)
                print_row(out, cmp_class_name(c), -1, -1, m->layer_us[c], s->layer_us[c]);
    }
    if (r->meas.marked_ops == 0 && (m->count[CMP_ROUTING] || s->count[CMP_ROUTING]))
        fputs("  (no op marks: the routing ops' generic elementwise kernels, a mul or a copy,\n"
              "   count as elementwise by their names; read routing+elemwise together, or\n"
              "   mark ops with record_function as cpsim names them)\n", out);
    size_t idx[CMP_MAX_UNMATCHED];
    double us[CMP_MAX_UNMATCHED];
    long long cnt[CMP_MAX_UNMATCHED];
    size_t nu = cmp_unmatched(&r->meas, idx, us, cnt, CMP_MAX_UNMATCHED);
    fprintf(out, "  unmatched: %lld kernels, %.1f us (%.1f %% of the measured busy time)%s\n",
            m->unmatched, m->unmatched_us,
            m->busy_us > 0 ? 100 * m->unmatched_us / m->busy_us : 0, nu ? ":" : "");
    for (size_t i = 0; i < nu; i++) {
        char nm[96];
        short_name(nm, sizeof nm, r->meas.names[idx[i]]);
        fprintf(out, "    %6lld x %10.1f us  %s\n", cnt[i], us[i], nm);
    }
}

static void csv_row(FILE *f, const char *scope, const char *what, long long cm, long long cs,
                    double um, double us)
{
    fprintf(f, "%s,", scope);
    rep_csv_field(f, what);
    if (cm >= 0)
        fprintf(f, ",%lld,%lld", cm, cs);
    else
        fputs(",,", f);
    fprintf(f, ",%.3f,%.3f,", um, us);
    double e = err_pct(um, us);
    if (!isnan(e))
        fprintf(f, "%.2f", e);
    fputc('\n', f);
}

static int write_csv(const cmp_report *r, const char *dir, cp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/compare.csv", dir);
    rep_file rf;
    if (rep_open(&rf, path, err) < 0)
        return -1;
    FILE *f = rf.f;
    const cmp_side *m = &r->m, *s = &r->s;
    fputs("scope,class,count_measured,count_cpsim,measured_us,cpsim_us,error_pct\n", f);
    for (int c = 0; c < CMP_NCLASSES; c++)
        if (m->count[c] || s->count[c])
            csv_row(f, "step", cmp_class_name(c), m->count[c], s->count[c], m->us[c], s->us[c]);
    csv_row(f, "step", "busy", -1, -1, m->busy_us, s->busy_us);
    csv_row(f, "step", "span", -1, -1, m->span_us, s->span_us);
    csv_row(f, "step", "idle", -1, -1, m->idle_us, s->idle_us);
    csv_row(f, "step", "communication", -1, -1, m->comm_us, s->comm_us);
    csv_row(f, "step", "exposed", -1, -1, m->exposed_us, s->exposed_us);
    csv_row(f, "step", "overlap", -1, -1, m->overlap_us, s->overlap_us);
    if (m->layers > 0 && s->layers > 0)
        for (int c = 0; c < CMP_NCLASSES; c++)
            if (m->layer_us[c] > 0 || s->layer_us[c] > 0)
                csv_row(f, "layer", cmp_class_name(c), -1, -1, m->layer_us[c], s->layer_us[c]);
    size_t cap = r->meas.nnames + 1, *idx = malloc(cap * sizeof *idx);
    double *us = malloc(cap * sizeof *us);
    long long *cnt = malloc(cap * sizeof *cnt);
    if (!idx || !us || !cnt)
        abort(); /* out of memory: a row per name */
    size_t nu = cmp_unmatched(&r->meas, idx, us, cnt, cap);
    for (size_t i = 0; i < nu; i++)
        csv_row(f, "unmatched", r->meas.names[idx[i]], cnt[i], 0, us[i], 0);
    free(idx);
    free(us);
    free(cnt);
    return rep_close(&rf, !ferror(f), err);
}

/* The paired bars: per class, measured beside cpsim, per step or, when the
 * two mark different numbers of layers, per decoder layer. */
static int draw(const cmp_report *r, const char *dir, cp_err *err)
{
    const cmp_side *m = &r->m, *s = &r->s;
    int per_layer = m->layers > 0 && s->layers > 0 && m->layers != s->layers;
    const double *mu = per_layer ? m->layer_us : m->us, *su = per_layer ? s->layer_us : s->us;
    plot_figset fs;
    if (plot_dir_open(dir, &fs, err) < 0)
        return -1;
    snprintf(fs.what, sizeof fs.what, "%s against %s, rank %d", r->run, r->profile, r->rank);
    rep_file rf;
    int rc = plot_data_open(&fs, "compare", &rf, err);
    if (rc == 0) {
        fprintf(rf.f, "# class measured_us cpsim_us (%s)\n", per_layer ? "per decoder layer"
                                                                          : "per step");
        for (int c = 0; c < CMP_NCLASSES; c++)
            if (mu[c] > 0 || su[c] > 0)
                fprintf(rf.f, "%s %.3f %.3f\n", cmp_class_name(c), mu[c], su[c]);
        rc = rep_close(&rf, 1, err);
    }
    if (rc == 0) {
        plot_figure *f = plot_fig_add(&fs, "compare", "compare", "measured against cpsim, "
                                      "per class", PLOT_WIDTH, PLOT_HEIGHT);
        snprintf(f->desc, sizeof f->desc, "Device time %s per class: the profile's kernels "
                 "(measured) beside the run's ops (cpsim); compare.csv has the counts, the "
                 "errors and the unmatched kernels", per_layer ? "per decoder layer" : "per step");
        FILE *b = plot_fig_body(&fs, f, "set title", "device time %s by class, measured and "
                                "cpsim", per_layer ? "per decoder layer" : "per step");
        fputs("set style data histograms\nset style histogram clustered gap 1\n"
              "set style fill solid 0.9 border -1\nset boxwidth 0.9 relative\n"
              "set ylabel \"device time (us)\"\nset yrange [0:*]\nset grid ytics\n"
              "set xtics rotate by -30 nomirror\nset key top right\n"
              "plot \"compare.dat\" using 2:xtic(1) title \"measured\" lc rgb \"#4477aa\", \\\n"
              "    \"\" using 3 title \"cpsim\" lc rgb \"#ee6677\"\n", b);
        fclose(b);
        char heading[600];
        snprintf(heading, sizeof heading, "cpsim compare: %s", fs.what);
        rc = plot_draw(&fs, heading, err);
    }
    plot_figset_free(&fs);
    return rc;
}

/* The run's distinct op names with their classes: the ranges that class a
 * profile's kernels exactly. */
static void op_names(const cmp_trace *sim, const char ***names, int **cls)
{
    *names = malloc((sim->nnames + 1) * sizeof **names);
    *cls = malloc((sim->nnames + 1) * sizeof **cls);
    if (!*names || !*cls)
        abort(); /* out of memory: a name list */
    for (size_t i = 0; i < sim->nnames; i++)
        (*names)[i] = sim->names[i];
    for (size_t i = 0; i < sim->n; i++)
        (*cls)[sim->k[i].name] = sim->k[i].cls;
}

int cmp_main(const char *run_dir, const char *profile, const cmp_opts *o, FILE *out, cp_err *err)
{
    cmp_report r = {.run = run_dir, .profile = profile, .rank = o->rank};
    if (cmp_read_run(run_dir, o->rank, o->step, &r.sim, &r.sim_kernels, err) < 0)
        return -1;
    const char **names;
    int *cls;
    op_names(&r.sim, &names, &cls);
    int rc = cmp_read_profile(profile, names, cls, r.sim.nnames, o->device, &r.meas, err);
    free(names);
    free(cls);
    if (rc == 0) {
        cmp_reduce(&r.meas, NULL, &r.m);
        cmp_reduce(&r.sim, r.sim_kernels, &r.s);
        if (!o->quiet)
            print_table(&r, out);
        const char *dir = o->out ? o->out : run_dir;
        /* the profile first: a run it cannot start from writes nothing */
        if (o->emit)
            rc = cmp_emit_profile(&r.meas, &r.sim, run_dir, profile, o->emit,
                                  o->quiet ? NULL : out, err);
        if (rc == 0)
            rc = rep_mkdir_p(dir, err);
        if (rc == 0)
            rc = write_csv(&r, dir, err);
        if (rc == 0 && o->plots)
            rc = draw(&r, dir, err);
        if (rc == 0 && !o->quiet)
            fprintf(out, "wrote %s/compare.csv%s\n", dir, o->plots ? " and plots/compare.png" : "");
    }
    cmp_trace_free(&r.sim);
    cmp_trace_free(&r.meas);
    free(r.sim_kernels);
    return rc;
}
