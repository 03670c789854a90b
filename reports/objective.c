/* objective: what a sweep ranks its points by (see report.h).
 *
 * A metric is a dotted path into a point's summary ("ttft_s",
 * "serving.goodput_per_s", "serving.by_name.short.tpot_p99_s",
 * "requests.0.ttft_s"), with a goal: min or max.  A sweep file names one
 * (objective:) and two for its Pareto table (pareto:); without them a
 * serving sweep ranks by goodput (most requests per second within the
 * workload's slo) and tabulates TTFT p99 against TPOT p99, and any other
 * ranks by TTFT and tabulates it against peak memory. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/plot.h"
#include "reports/report.h"

/* The figures of a serving section (sim/serve/serve_report.c figures()),
 * at serving.NAME and serving.by_name.CLASS.NAME. */
static const char *const serving_figures[] = {
    "requests", "finished", "duration_s", "throughput_tokens_per_s", "prompt_tokens_per_s",
    "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "itl_p50_s", "itl_p99_s",
    "itl_p999_s", "itl_max_s", "stall_max_s", "stall_at_s", "slo_met", "goodput_per_s",
    "queue_p50_s", "queue_p99_s", NULL };
/* The numbers at the top of a summary (reports/summary.c). */
static const char *const summary_numbers[] = {
    "ttft_s", "makespan_s", "compute_s_max", "comm_s_max", "overlap_s_max", "overlap_fraction",
    "peak_bytes_max", "peak_tensor_bytes", "peak_reserved_bytes", "engine_bytes",
    "capacity_bytes", NULL };
/* The numbers of a summary's requests[N] (reports/summary.c, serve_report.c). */
static const char *const request_numbers[] = {
    "prompt_tokens", "arrival_s", "ttft_s", "decode_tokens", "tpot_s", "end_s", "split_steps",
    "queue_s", "tpot_p50_s", "tpot_p99_s", "itl_max_s", NULL };

static int listed(const char *const *names, const char *s, size_t len)
{
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == len && strncmp(names[i], s, len) == 0)
            return 1;
    return 0;
}

static void list_names(const char *const *names, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; names[i] && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", names[i]);
}

int rep_metric_check(const char *path, char *why, size_t len)
{
    char known[640];
    const char *dot = strchr(path, '.');
    size_t head = dot ? (size_t)(dot - path) : strlen(path);
    if (!dot && listed(summary_numbers, path, head))
        return 0;
    if (dot && strncmp(path, "serving", head) == 0 && head == 7) {
        const char *rest = dot + 1;
        if (strncmp(rest, "by_name.", 8) == 0) {
            const char *cls = rest + 8, *d2 = strchr(cls, '.');
            if (d2 && d2 > cls && listed(serving_figures, d2 + 1, strlen(d2 + 1)))
                return 0;
            rest = d2 ? d2 + 1 : "";
        } else if (listed(serving_figures, rest, strlen(rest))) {
            return 0;
        }
        list_names(serving_figures, known, sizeof known);
        snprintf(why, len, "%s: not a serving figure (serving.NAME or serving.by_name.CLASS."
                 "NAME, NAME one of %s)", *rest ? rest : path, known);
        return -1;
    }
    if (dot && head == 8 && strncmp(path, "requests", 8) == 0) {
        char *end;
        strtol(dot + 1, &end, 10);
        if (end > dot + 1 && isdigit((unsigned char)dot[1]) && *end == '.' &&
            listed(request_numbers, end + 1, strlen(end + 1)))
            return 0;
        list_names(request_numbers, known, sizeof known);
        snprintf(why, len, "%s: not a request figure (requests.N.NAME, NAME one of %s)", path,
                 known);
        return -1;
    }
    list_names(summary_numbers, known, sizeof known);
    snprintf(why, len, "%s: not a summary figure (one of %s, serving.NAME, "
             "serving.by_name.CLASS.NAME or requests.N.NAME)", path, known);
    return -1;
}

int rep_metric_goal(const char *path)
{
    static const char *const more_is_better[] = { "goodput_per_s", "slo_met",
                                                  "throughput_tokens_per_s",
                                                  "prompt_tokens_per_s", "finished",
                                                  "overlap_fraction", NULL };
    const char *last = strrchr(path, '.');
    last = last ? last + 1 : path;
    return listed(more_is_better, last, strlen(last)) ? REP_GOAL_MAX : REP_GOAL_MIN;
}

double rep_metric_value(json_t *summary, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *v = summary;
    for (char *save = NULL, *t = strtok_r(buf, ".", &save); t && v;
         t = strtok_r(NULL, ".", &save)) {
        char *end;
        long i = strtol(t, &end, 10);
        v = json_is_array(v) && *end == '\0' ? json_array_get(v, (size_t)i)
                                               : json_object_get(v, t);
    }
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static json_t *metric_json(const char *path, int goal)
{
    return json_pack("{s:s, s:s}", "metric", path, "goal", goal == REP_GOAL_MAX ? "max" : "min");
}

/* The default objective's metric, Pareto x and Pareto y for points of a
 * kind (serving or not). */
static void default_paths(int serving, const char *out[3])
{
    out[0] = serving ? "serving.goodput_per_s" : "ttft_s";
    out[1] = serving ? "serving.ttft_p99_s" : "ttft_s";
    out[2] = serving ? "serving.tpot_p99_s" : "peak_bytes_max";
}

json_t *rep_objective_default(int serving)
{
    const char *d[3];
    default_paths(serving, d);
    json_t *o = metric_json(d[0], rep_metric_goal(d[0]));
    json_t *pareto = json_array();
    json_array_append_new(pareto, metric_json(d[1], rep_metric_goal(d[1])));
    json_array_append_new(pareto, metric_json(d[2], rep_metric_goal(d[2])));
    json_object_set_new(o, "pareto", pareto);
    json_object_set_new(o, "default", json_true());
    return o;
}

json_t *rep_objective_of(int serving, const json_t *objective)
{
    /* the default, with what the sweep file gave in place of its parts */
    json_t *obj = rep_objective_default(serving);
    if (json_object_get(objective, "metric")) {
        json_object_set(obj, "metric", json_object_get(objective, "metric"));
        json_object_set(obj, "goal", json_object_get(objective, "goal"));
        json_object_del(obj, "default");
    }
    if (json_object_get(objective, "pareto"))
        json_object_set(obj, "pareto", json_object_get(objective, "pareto"));
    return obj;
}

/* {metric, goal, value} of one metric m ({metric, goal}) of a line. */
static json_t *valued(const json_t *m, json_t *summary)
{
    const char *path = json_string_value(json_object_get(m, "metric"));
    double v = path && summary ? rep_metric_value(summary, path) : NAN;
    json_t *o = json_pack("{s:s, s:O}", "metric", path ? path : "", "goal",
                          json_object_get(m, "goal"));
    json_object_set_new(o, "value", isnan(v) ? json_null() : json_real(v));
    return o;
}

json_t *rep_line_objective(const json_t *obj, json_t *summary)
{
    json_t *o = valued(obj, summary), *pareto = json_array();
    size_t k;
    json_t *m;
    json_array_foreach(json_object_get(obj, "pareto"), k, m)
        json_array_append_new(pareto, valued(m, summary));
    json_object_set_new(o, "pareto", pareto);
    if (json_is_true(json_object_get(obj, "default")))
        json_object_set_new(o, "default", json_true());
    return o;
}

void rep_sweep_objective(json_t *const *lines, size_t n, const json_t *objective)
{
    int serving = 0;
    for (size_t i = 0; i < n && !serving; i++) {
        const char *m = json_string_value(
            json_object_get(json_object_get(lines[i], "summary"), "mode"));
        serving = m && strcmp(m, "serving") == 0;
    }
    json_t *obj = rep_objective_of(serving, objective);
    for (size_t i = 0; i < n; i++) {
        json_object_del(lines[i], "objective");
        const char *st = json_string_value(json_object_get(lines[i], "status"));
        if (st && strcmp(st, "ok") == 0)
            json_object_set_new(lines[i], "objective",
                                rep_line_objective(obj, json_object_get(lines[i], "summary")));
    }
    json_decref(obj);
}

/* The slot of path in s->paths, added when new. */
static int path_slot(plot_points *s, const char *path)
{
    for (int i = 0; i < s->npaths; i++)
        if (strcmp(s->paths[i], path) == 0)
            return i;
    s->paths[s->npaths] = plot_intern(s, path);
    return s->npaths++;
}

void rep_points_paths(plot_points *s, const json_t *objective)
{
    json_t *given[3] = {json_object_get(objective, "metric"), NULL, NULL};
    for (int k = 0; k < 2; k++)
        given[k + 1] = json_object_get(json_array_get(json_object_get(objective, "pareto"),
                                                      (size_t)k), "metric");
    for (int serving = 0; serving < 2; serving++) {
        const char *d[3];
        default_paths(serving, d);
        for (int k = 0; k < 3; k++) {
            /* a given pair replaces both defaults; a given metric its own */
            const json_t *g = k == 0 ? given[0] : json_object_get(objective, "pareto")
                                                      ? given[k] : NULL;
            const char *path = g ? json_string_value(g) : d[k];
            if (path)
                path_slot(s, path);
        }
    }
}

/* The value a record kept of the metric m ({metric, goal}). */
static double kept(const plot_points *s, const plot_point *p, const json_t *m)
{
    const char *path = json_string_value(json_object_get(m, "metric"));
    for (int i = 0; path && i < s->npaths; i++)
        if (strcmp(s->paths[i], path) == 0)
            return p->mv[i];
    return NAN;
}

void rep_points_objective(plot_points *s, const json_t *obj)
{
    const char *metric = json_string_value(json_object_get(obj, "metric"));
    const char *goal = json_string_value(json_object_get(obj, "goal"));
    for (size_t i = 0; i < s->n; i++) {
        plot_point *p = &s->p[i];
        if (!p->status_ok)
            continue;
        p->has_obj = 1;
        p->obj_metric = plot_intern(s, metric ? metric : "");
        p->obj_goal_name = goal ? plot_intern(s, goal) : NULL;
        double v = kept(s, p, obj);
        for (int k = 0; k < 2; k++) {
            json_t *m = json_array_get(json_object_get(obj, "pareto"), (size_t)k);
            const char *pm = json_string_value(json_object_get(m, "metric"));
            const char *pg = json_string_value(json_object_get(m, "goal"));
            p->pareto_metric[k] = m ? plot_intern(s, pm ? pm : "") : NULL;
            p->pareto_max[k] = pg && strcmp(pg, "max") == 0;
            p->pareto[k] = kept(s, p, m);
        }
        if (!p->ok)
            continue;   /* as the records of lines without a summary: no value */
        p->obj_known = !isnan(v);
        p->obj = isnan(v) ? 0 : v;
        p->obj_goal = goal && strcmp(goal, "max") == 0 ? REP_GOAL_MAX : REP_GOAL_MIN;
    }
}

int plot_better(const plot_point *a, const plot_point *b)
{
    if (a->obj_known != b->obj_known)
        return a->obj_known;
    if (a->obj != b->obj)
        return a->obj_goal == REP_GOAL_MAX ? a->obj > b->obj : a->obj < b->obj;
    return a->index < b->index;
}
