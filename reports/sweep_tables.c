/* sweep_tables: results.csv, the best configuration per prompt length
 * under the sweep's objective (best.csv), the Pareto front of its two
 * chosen metrics (pareto.csv) and where a split step starts to beat the
 * copied one (split.csv), from result lines (see sweep.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/plot.h"
#include "reports/report.h"

/* ---- CSV ------------------------------------------------------------------------- */

void rep_csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* A JSON value as CSV text: strings bare, numbers as JSON writes them,
 * null and absent empty. */
static void csv_json(FILE *f, json_t *v)
{
    if (!v || json_is_null(v))
        return;
    if (json_is_string(v)) {
        rep_csv_field(f, json_string_value(v));
        return;
    }
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(10));
    if (t)
        rep_csv_field(f, t);
    free(t);
}

static const char *const summary_cols[] = {"ttft_s", "makespan_s", "compute_s_max",
                                           "comm_s_max", "overlap_fraction", "peak_bytes_max",
                                           "capacity_bytes", "oom", NULL};

json_t *rep_results_csv_keys(const plot_points *s)
{
    json_t *keys = json_object();   /* parameter columns, first-seen order */
    const char *last = NULL;
    for (size_t i = 0; i < s->n; i++) {
        if (s->p[i].keys == last)
            continue;     /* interned: the same names as the line before */
        last = s->p[i].keys;
        char *names = strdup(last);
        if (!names)
            abort();
        for (char *save = NULL, *k = strtok_r(names, "\n", &save); k;
             k = strtok_r(NULL, "\n", &save))
            json_object_set_new(keys, k, json_true());
        free(names);
    }
    return keys;
}

void rep_results_csv_header(FILE *f, const json_t *keys)
{
    fputs("index,id", f);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)keys, k, v) {
        fputc(',', f);
        rep_csv_field(f, k);
    }
    fputs(",status,exit,prompt_tokens", f);
    for (int c = 0; summary_cols[c]; c++)
        fprintf(f, ",%s", summary_cols[c]);
    fputs(",objective,objective_value,scenario_hash,error\n", f);
}

void rep_results_csv_row(FILE *f, const json_t *keys, json_t *j, const plot_point *pt)
{
    json_t *s = json_object_get(j, "summary");
    const char *k;
    json_t *v;
    fprintf(f, "%d,%s", pt->index, json_string_value(json_object_get(j, "id")));
    json_object_foreach((json_t *)keys, k, v) {
        fputc(',', f);
        csv_json(f, json_object_get(json_object_get(j, "params"), k));
    }
    fputc(',', f);
    csv_json(f, json_object_get(j, "status"));
    fputc(',', f);
    csv_json(f, json_object_get(j, "exit"));
    fputc(',', f);
    if (pt->prompt >= 0)
        fprintf(f, "%lld", pt->prompt);
    for (int c = 0; summary_cols[c]; c++) {
        fputc(',', f);
        csv_json(f, json_object_get(s, summary_cols[c]));
    }
    json_t *ob = json_object_get(j, "objective");
    fputc(',', f);
    csv_json(f, json_object_get(ob, "metric"));
    fputc(',', f);
    csv_json(f, json_object_get(ob, "value"));
    fputc(',', f);
    csv_json(f, json_object_get(j, "scenario_hash"));
    fputc(',', f);
    csv_json(f, json_object_get(j, "error"));
    fputc('\n', f);
}

/* ---- best configuration per prompt length ------------------------------------------ */

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Distinct known prompt lengths, ascending; returns how many. */
static size_t prompts_of(const plot_point *pts, size_t n, long long **out)
{
    long long *p = malloc((n + 1) * sizeof *p);
    if (!p)
        abort();
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (pts[i].prompt >= 0)
            p[k++] = pts[i].prompt;
    qsort(p, k, sizeof *p, cmp_ll);
    size_t m = 0;
    for (size_t i = 0; i < k; i++)
        if (m == 0 || p[m - 1] != p[i])
            p[m++] = p[i];
    *out = p;
    return m;
}

/* A double as csv_json writes a JSON real. */
static void csv_real(FILE *f, double v)
{
    json_t *j = json_real(v);
    csv_json(f, j);
    json_decref(j);
}

/* The best's margin over the second (its ranking, rep_points_rank) as
 * text: "+6.6 % over 2", with "(tie: the kernels that differ +-7.1 %)" or
 * "(+-1.2 %)". */
static void margin_text(const plot_point *p, char *buf, size_t len)
{
    if (!p->ranked || !p->margin_kind) {
        snprintf(buf, len, "-");
        return;
    }
    int n = snprintf(buf, len, "+%.1f %% over %lld", 100 * (p->margin_kind == 2 ? p->margin : 0),
                     (long long)p->against);
    if (n > 0 && (size_t)n < len && !isnan(p->unc))
        snprintf(buf + n, len - (size_t)n, p->tie == 1 ? " (tie: kernels that differ +-%.1f %%)"
                                                       : " (+-%.1f %%)",
                 100 * p->unc);
}

static int write_best(const plot_point *pts, size_t n, const char *path, FILE *out,
                      cp_err *err)
{
    rep_file rf;
    if (rep_open(&rf, path, err) != 0)
        return -1;
    fputs("prompt_tokens,index,strategy,min_tokens,ttft_s,peak_bytes_max,capacity_bytes,"
          "fitting_points,points,margin,runner_up_index,uncertainty,tie,objective,goal,"
          "objective_value\n", rf.f);
    const char *metric = "ttft_s", *goal = "min";
    for (size_t i = 0; i < n; i++)
        if (pts[i].has_obj) {
            metric = pts[i].obj_metric;
            goal = pts[i].obj_goal_name;
            break;
        }
    int ttft = strcmp(metric, "ttft_s") == 0;
    if (out)
        fprintf(out, "\nbest configuration per prompt length by %s (%s; fits in memory; its "
                     "margin over the next%s):\n%14s %10s %9s%s  %s\n", metric, goal,
                ttft ? ", +- the kernels that differ" : "", "prompt_tokens", "ttft_s", "peak_GB",
                ttft ? "" : "      objective", "configuration");
    long long *prompts;
    size_t np = prompts_of(pts, n, &prompts);
    for (size_t q = 0; q < np; q++) {
        const plot_point *best = NULL;
        int fits = 0, total = 0;
        for (size_t i = 0; i < n; i++) {
            if (pts[i].prompt != prompts[q])
                continue;
            total++;
            if (!pts[i].ok || pts[i].oom)
                continue;
            fits++;
            if (pts[i].obj_known && (!best || plot_better(&pts[i], best)))
                best = &pts[i];
        }
        if (best) {
            fprintf(rf.f, "%lld,%d,", prompts[q], best->index);
            rep_csv_field(rf.f, best->label);
            fprintf(rf.f, ",%lld,%.10g,%.10g,%.10g,%d,%d,", best->min_tokens, best->ttft_s,
                    best->peak_bytes, best->capacity_bytes, fits, total);
            if (best->ranked && best->margin_kind == 2)
                csv_real(rf.f, best->margin);
            fputc(',', rf.f);
            if (best->ranked && best->margin_kind)
                fprintf(rf.f, "%d", best->against);
            fputc(',', rf.f);
            if (best->ranked && best->margin_kind && !isnan(best->unc))
                csv_real(rf.f, best->unc);
            fputc(',', rf.f);
            if (best->ranked && best->tie >= 0)
                fputs(best->tie ? "true" : "false", rf.f);
            fprintf(rf.f, ",%s,%s,%.10g\n", metric, goal, best->obj);
        } else {
            fprintf(rf.f, "%lld,,,,,,,%d,%d,,,,,%s,%s,\n", prompts[q], fits, total, metric, goal);
        }
        char margin[96] = "", ov[32] = "";
        if (best)
            margin_text(best, margin, sizeof margin);
        if (best && !ttft)
            snprintf(ov, sizeof ov, " %14.6g", best->obj);
        if (out && best && best->sp > 1)   /* min_tokens matters on SP nodes only */
            fprintf(out, "%14lld %10.4f %9.2f%s  %s min_tokens=%lld; %s\n", prompts[q],
                    best->ttft_s, best->peak_bytes / 1e9, ov, best->label, best->min_tokens,
                    margin);
        else if (out && best)
            fprintf(out, "%14lld %10.4f %9.2f%s  %s; %s\n", prompts[q], best->ttft_s,
                    best->peak_bytes / 1e9, ov, best->label, margin);
        else if (out)
            fprintf(out, "%14lld %10s %9s%s  none of %d points fits%s\n", prompts[q], "-", "-",
                    ttft ? "" : "               ", total, fits ? " and has the objective" : "");
    }
    free(prompts);
    return rep_close(&rf, 1, err);
}

/* ---- the Pareto front of two metrics --------------------------------------------------- */

/* Metric k of the point's Pareto pair: its value (NAN unknown), its path
 * and goal. */
static double pareto_of(const plot_point *p, int k, const char **metric, int *max)
{
    if (metric)
        *metric = p->pareto_metric[k];
    if (max)
        *max = p->pareto_max[k];
    return p->pareto[k];
}

/* Whether a is at least as good as b in both metrics and better in one. */
static int dominates(const plot_point *a, const plot_point *b)
{
    int better = 0;
    for (int k = 0; k < 2; k++) {
        int max;
        double x = pareto_of(a, k, NULL, &max), y = pareto_of(b, k, NULL, NULL);
        if (max ? x < y : x > y)
            return 0;
        better |= x != y;
    }
    return better;
}

/* A point on the table: it ran, fits and has both metrics. */
static int pareto_candidate(const plot_point *p)
{
    return p->ok && !p->oom && !isnan(pareto_of(p, 0, NULL, NULL)) &&
           !isnan(pareto_of(p, 1, NULL, NULL));
}

static int write_pareto(const plot_point *pts, size_t n, const char *path, FILE *out,
                        cp_err *err)
{
    rep_file rf;
    if (rep_open(&rf, path, err) != 0)
        return -1;
    const char *mx = NULL, *my = NULL;
    int gx = 0, gy = 0;
    for (size_t i = 0; i < n && !mx; i++)
        if (pts[i].has_obj) {
            pareto_of(&pts[i], 0, &mx, &gx);
            pareto_of(&pts[i], 1, &my, &gy);
        }
    fputs("prompt_tokens,index,strategy,metric_x,goal_x,x,metric_y,goal_y,y,on_front\n", rf.f);
    if (out && mx && my)
        fprintf(out, "\nPareto front per prompt length: %s (%s) against %s (%s), of the points "
                     "that fit:\n%14s %14s %14s  %s\n", mx, gx ? "max" : "min", my,
                gy ? "max" : "min", "prompt_tokens", "x", "y", "configuration");
    long long *prompts;
    size_t np = prompts_of(pts, n, &prompts);
    for (size_t q = 0; q < np && mx && my; q++)
        for (size_t i = 0; i < n; i++) {
            const plot_point *p = &pts[i];
            if (p->prompt != prompts[q] || !pareto_candidate(p))
                continue;
            int front = 1;
            for (size_t k = 0; k < n && front; k++)
                front = !(pts[k].prompt == prompts[q] && pareto_candidate(&pts[k]) &&
                          dominates(&pts[k], p));
            double x = pareto_of(p, 0, NULL, NULL), y = pareto_of(p, 1, NULL, NULL);
            fprintf(rf.f, "%lld,%d,", p->prompt, p->index);
            rep_csv_field(rf.f, p->label);
            fprintf(rf.f, ",%s,%s,%.10g,%s,%s,%.10g,%d\n", mx, gx ? "max" : "min", x, my,
                    gy ? "max" : "min", y, front);
            if (out && front)
                fprintf(out, "%14lld %14.6g %14.6g  %s\n", p->prompt, x, y, p->label);
        }
    free(prompts);
    return rep_close(&rf, 1, err);
}

/* ---- split against copied ------------------------------------------------------------ */

/* The best TTFT among fitting points that match; INFINITY when none fits,
 * NAN when there is no such point at all. */
static double best_ttft(const plot_point *pts, size_t n, const char *exchange, const char *shape,
                        long long prompt, int split)
{
    double best = NAN;
    for (size_t i = 0; i < n; i++) {
        const plot_point *p = &pts[i];
        if (!p->ok || p->prompt != prompt || strcmp(p->shape, shape) != 0 ||
            strcmp(p->exchange, exchange) != 0 || p->split != split)
            continue;
        double t = p->oom ? INFINITY : p->ttft_s;
        if (isnan(best) || t < best)
            best = t;
    }
    return best;
}

typedef struct crossing {
    long long first_win;     /* -1: the split step never wins for good */
    long long suggest;       /* min_tokens to use; -1 none */
    long long last_len;      /* longest length compared */
    int compared;            /* lengths with both a split and a copied step */
    int wins_everywhere;
} crossing;

/* Walk the compared lengths: the crossing is the first length from which
 * split wins at every longer one. */
static crossing find_crossing(const plot_point *pts, size_t n, const char *exchange,
                              const char *shape, const long long *prompts, size_t np)
{
    crossing c = {-1, -1, -1, 0, 0};
    long long prev_len = -1;
    double prev_ratio = NAN;
    for (size_t q = 0; q < np; q++) {
        double s = best_ttft(pts, n, exchange, shape, prompts[q], 1);
        double cp = best_ttft(pts, n, exchange, shape, prompts[q], 0);
        if (isnan(cp))   /* the copied step of an exchange that never splits */
            cp = best_ttft(pts, n, "none", shape, prompts[q], 0);
        if (isnan(s) || isnan(cp) || (isinf(s) && isinf(cp)))
            continue;
        c.compared++;
        c.last_len = prompts[q];
        int win = s < cp;
        double ratio = isinf(s) ? INFINITY : isinf(cp) ? 0.0 : s / cp;
        if (win && c.first_win < 0) {
            c.first_win = prompts[q];
            c.wins_everywhere = c.compared == 1;
            c.suggest = prompts[q];
            /* derived: log-linear interpolation of the split/copied TTFT
             * ratio between the last losing and the first winning length,
             * where both ratios are finite and positive */
            if (prev_len > 0 && isfinite(prev_ratio) && ratio > 0) {
                double t = log(prev_ratio) / (log(prev_ratio) - log(ratio));
                c.suggest = llround(exp(log((double)prev_len) +
                                        t * (log((double)prompts[q]) - log((double)prev_len))));
            }
        } else if (!win) {
            c.first_win = c.suggest = -1;
            c.wins_everywhere = 0;
        }
        prev_len = prompts[q];
        prev_ratio = ratio;
    }
    return c;
}

static void crossing_note(const crossing *c, char *buf, size_t len)
{
    if (c->first_win < 0)
        snprintf(buf, len, "copied wins at %lld tokens: none (never split)", c->last_len);
    else if (c->wins_everywhere)
        snprintf(buf, len, "split wins at every length compared");
    else
        snprintf(buf, len, "interpolated between the last losing and first winning length");
}

static int write_split(const plot_point *pts, size_t n, const char *path, FILE *out,
                       cp_err *err)
{
    rep_file rf;
    if (rep_open(&rf, path, err) != 0)
        return -1;
    fputs("exchange,shape,first_win_tokens,suggested_min_tokens,lengths_compared,note\n", rf.f);
    long long *prompts;
    size_t np = prompts_of(pts, n, &prompts);
    int with_sp = 0;
    for (size_t i = 0; i < n; i++)
        with_sp |= pts[i].sp > 1;
    if (!with_sp)
        out = NULL;      /* a sweep without SP nodes has nothing to show here */
    if (out)
        fprintf(out, "\nsplit against copied prefill steps (sequence parallelism):\n"
                     "%-12s %-24s %16s %21s  %s\n", "exchange", "shape", "split wins from",
                "suggested min_tokens", "note");
    int rows = 0;
    for (size_t i = 0; i < n; i++) {
        const plot_point *p = &pts[i];
        if (p->split != 1)
            continue;
        int seen = 0;     /* first split point of its (exchange, shape) */
        for (size_t k = 0; k < i && !seen; k++)
            seen = pts[k].split == 1 && strcmp(pts[k].exchange, p->exchange) == 0 &&
                   strcmp(pts[k].shape, p->shape) == 0;
        if (seen)
            continue;
        crossing c = find_crossing(pts, n, p->exchange, p->shape, prompts, np);
        if (c.compared == 0)
            continue;
        char note[128];
        crossing_note(&c, note, sizeof note);
        rep_csv_field(rf.f, p->exchange);
        fputc(',', rf.f);
        rep_csv_field(rf.f, p->shape);
        fprintf(rf.f, ",%lld,%lld,%d,", c.first_win, c.suggest, c.compared);
        rep_csv_field(rf.f, note);
        fputc('\n', rf.f);
        if (out) {
            char a[32] = "-", b[32] = "none";
            if (c.first_win >= 0) {
                /* winning from the shortest length compared only bounds
                 * the crossing from above */
                const char *le = c.wins_everywhere ? "<= " : "";
                snprintf(a, sizeof a, "%s%lld", le, c.first_win);
                snprintf(b, sizeof b, "%s%lld", le, c.suggest);
            }
            fprintf(out, "%-12s %-24s %16s %21s  %s\n", p->exchange, p->shape, a, b, note);
        }
        rows++;
    }
    if (out && rows == 0)
        fprintf(out, "  nothing to compare: no prompt length has both a split and a copied "
                     "step that ran (points with sp > 1)\n");
    free(prompts);
    return rep_close(&rf, 1, err);
}

/* ---- failures ------------------------------------------------------------------------- */

/* The most frequent failure reasons, most frequent first. */
static void print_failures(const plot_point *pts, size_t n, FILE *out)
{
    json_t *count = json_object();
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = pts[i].error;
        if (!e)
            continue;
        failed++;
        json_int_t c = json_integer_value(json_object_get(count, e));
        json_object_set_new(count, e, json_integer(c + 1));
    }
    if (failed)
        fprintf(out, "\n%zu of %zu points failed; reasons:\n", failed, n);
    for (int shown = 0; shown < 5 && json_object_size(count) > 0; shown++) {
        const char *k, *top = NULL;
        json_t *v;
        json_int_t best = 0;
        json_object_foreach(count, k, v)
            if (json_integer_value(v) > best) {
                best = json_integer_value(v);
                top = k;
            }
        fprintf(out, "%8lld x %s\n", (long long)best, top);
        json_object_del(count, top);
    }
    json_decref(count);
}

/* Small sweeps (comparisons) print every point side by side. */
#define POINTS_TABLE_MAX 40

static void print_points(const plot_point *pts, size_t n, FILE *out)
{
    const char *metric = NULL;
    for (size_t i = 0; i < n && !metric; i++)
        metric = pts[i].has_obj ? pts[i].obj_metric : NULL;
    if (metric && strcmp(metric, "ttft_s") == 0)
        metric = NULL;   /* the TTFT column shows it */
    fprintf(out, "\n%5s %-44s %8s %10s %9s %9s  %s%s%s\n", "point", "configuration", "prompt",
            "ttft_s", "overlap", "peak_GB", "verdict", metric ? "  " : "", metric ? metric : "");
    for (size_t i = 0; i < n; i++) {
        const plot_point *p = &pts[i];
        if (!p->ok) {
            fprintf(out, "%5d %-44s %8lld %10s %9s %9s  failed\n", p->index, p->label,
                    p->prompt, "-", "-", "-");
            continue;
        }
        fprintf(out, "%5d %-44s %8lld %10.4f %8.1f%% %9.2f  %-*s", p->index, p->label,
                p->prompt, p->ttft_s, 100.0 * p->overlap, p->peak_bytes / 1e9, metric ? 7 : 0,
                p->oom ? "OOM" : "fits");
        if (metric && p->obj_known)
            fprintf(out, "  %.6g", p->obj);
        else if (metric)
            fputs("  -", out);
        fputc('\n', out);
    }
}

int rep_sweep_tables(const plot_points *s, const char *dir, FILE *out, cp_err *err)
{
    const plot_point *pts = s->p;
    size_t n = s->n;
    if (out && n <= POINTS_TABLE_MAX)
        print_points(pts, n, out);
    char path[4200];
    snprintf(path, sizeof path, "%s/best.csv", dir);
    int rc = write_best(pts, n, path, out, err);
    snprintf(path, sizeof path, "%s/pareto.csv", dir);
    if (rc == 0)
        rc = write_pareto(pts, n, path, out, err);
    snprintf(path, sizeof path, "%s/split.csv", dir);
    if (rc == 0)
        rc = write_split(pts, n, path, out, err);
    if (rc == 0 && out)
        print_failures(pts, n, out);
    return rc;
}
