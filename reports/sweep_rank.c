/* sweep_rank: the ranking of a sweep's points per prompt length, with the
 * margin of each place and whether it is a tie (see report.h).
 *
 * Among the points of one prompt length that ran and fit, by the sweep's
 * objective (reports/objective.c; TTFT unless it says otherwise): the
 * first's margin is how much better it is than the second, every other's
 * how much worse it is than the first (relative to the better value).
 * Under a TTFT objective a margin
 * is a tie when it is inside the uncertainty of the kernels that differ
 * between the two points: for each cost source s (summary.cost_sources,
 * compute seconds per source on the critical rank's scale), the
 * difference of the two points' seconds times the source's accuracy
 * (cost_source_errors: the median leave-one-out error of its table, the
 * analytic model's for roofline prices), summed, over the faster one's
 * TTFT.  Communication and what the two share do not count: a ranking the
 * kernel tables cannot tell apart is a tie; one decided by the network is
 * as certain as the network model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/plot.h"
#include "reports/report.h"

/* Compute seconds per cost source of a summary, scaled to the busiest
 * rank (the summary adds every rank's). */
static json_t *sources_of(json_t *summary)
{
    json_t *cs = json_object_get(summary, "cost_sources"), *out = json_object();
    double total = json_number_value(json_object_get(cs, "compute_s"));
    double most = json_number_value(json_object_get(summary, "compute_s_max"));
    double scale = total > 0 ? most / total : 0;
    const char *cls, *src;
    json_t *c, *t;
    json_object_foreach(json_object_get(cs, "by_class"), cls, c)
        json_object_foreach(json_object_get(c, "sources"), src, t) {
            double was = json_number_value(json_object_get(out, src));
            json_object_set_new(out, src, json_real(was + scale * json_number_value(t)));
        }
    return out;
}

/* The accuracy of a source: "table:<file>[impl]" by its file,
 * "roofline:<class>" and "derived:..." by their model; -1 unknown. */
static double source_error(const json_t *errs, const char *src)
{
    if (!errs)
        return -1;
    if (strncmp(src, "roofline:", 9) == 0)
        return json_number_value(json_object_get(errs, "roofline"));
    if (strncmp(src, "derived:", 8) == 0)
        return json_number_value(json_object_get(errs, "derived"));
    char key[160];
    snprintf(key, sizeof key, "%s", src);
    char *impl = strchr(key, '[');
    if (impl)
        *impl = '\0';
    json_t *v = json_object_get(errs, key);
    return v ? json_number_value(v) : -1;
}

/* Seconds of the kernels that differ between a and b, each at its
 * source's accuracy; -1 when a source's accuracy is unknown. */
static double differing_error(json_t *a, json_t *b, const json_t *errs)
{
    double u = 0;
    const char *src;
    json_t *v;
    for (int pass = 0; pass < 2; pass++)
        json_object_foreach(pass ? b : a, src, v) {
            if (pass && json_object_get(a, src))
                continue; /* counted in the first pass */
            double x = json_number_value(json_object_get(a, src));
            double y = json_number_value(json_object_get(b, src));
            double e = source_error(errs, src);
            if (e < 0)
                return -1;
            u += fabs(x - y) * e;
        }
    return u;
}

double rep_pair_uncertainty(json_t *line_a, json_t *line_b, const json_t *errs)
{
    json_t *a = sources_of(json_object_get(line_a, "summary"));
    json_t *b = sources_of(json_object_get(line_b, "summary"));
    double u = differing_error(a, b, errs);
    json_decref(a);
    json_decref(b);
    return u;
}

static int by_objective(const void *x, const void *y)
{
    const plot_point *a = *(const plot_point *const *)x, *b = *(const plot_point *const *)y;
    return plot_better(a, b) ? -1 : plot_better(b, a) ? 1 : 0;
}

/* Whether the line ranks by TTFT (the one objective the kernels'
 * uncertainty is in seconds of). */
static int by_ttft(json_t *line)
{
    json_t *ob = json_object_get(line, "objective");
    const char *m = json_string_value(json_object_get(ob, "metric"));
    return !ob || (m && strcmp(m, "ttft_s") == 0);
}

void rep_sweep_rank(json_t *const *lines, size_t n, const json_t *errs)
{
    plot_point *pts = malloc((n + 1) * sizeof *pts);
    const plot_point **grp = malloc((n + 1) * sizeof *grp);
    json_t **src = calloc(n + 1, sizeof *src);
    if (!pts || !grp || !src)
        abort(); /* out of host memory: nothing sensible to report */
    for (size_t i = 0; i < n; i++) {
        json_object_del(lines[i], "ranking");
        plot_point_of(lines[i], &pts[i]);
        pts[i].index = (int)i; /* position in lines, for the lookups below */
    }
    for (size_t i = 0; i < n; i++) {
        if (!pts[i].ok || pts[i].oom || json_object_get(lines[i], "ranking"))
            continue;
        size_t m = 0;
        for (size_t j = 0; j < n; j++)
            if (pts[j].ok && !pts[j].oom && pts[j].obj_known && pts[j].prompt == pts[i].prompt)
                grp[m++] = &pts[j];
        if (m == 0)
            continue;  /* its summary lacks the objective: not ranked */
        qsort(grp, m, sizeof *grp, by_objective);
        for (size_t k = 0; k < m; k++) {
            size_t me = (size_t)grp[k]->index;
            src[me] = sources_of(json_object_get(lines[me], "summary"));
        }
        for (size_t k = 0; k < m; k++) {
            const plot_point *p = grp[k], *q = m < 2 ? NULL : k == 0 ? grp[1] : grp[0];
            json_t *r = json_object();
            json_object_set_new(r, "prompt_tokens", json_integer(p->prompt));
            json_object_set_new(r, "place", json_integer((json_int_t)k + 1));
            json_object_set_new(r, "of", json_integer((json_int_t)m));
            if (q) {
                const plot_point *fast = k == 0 ? p : q, *slow = k == 0 ? q : p;
                double lo = fmin(fast->obj, slow->obj), hi = fmax(fast->obj, slow->obj);
                double margin = lo > 0 ? hi / lo - 1 : hi > lo ? INFINITY : 0;
                double u = by_ttft(lines[p->index])
                               ? differing_error(src[fast->index], src[slow->index], errs)
                               : -1;
                json_object_set_new(r, "against_index",
                                    json_integer(json_integer_value(json_object_get(
                                        lines[q->index], "index"))));
                json_object_set_new(r, "margin", isfinite(margin) ? json_real(margin)
                                                                  : json_null());
                json_object_set_new(r, "uncertainty",
                                    u >= 0 ? json_real(u / fast->ttft_s) : json_null());
                json_object_set_new(r, "tie",
                                    u >= 0 ? json_boolean(margin <= u / fast->ttft_s)
                                           : json_null());
            }
            json_object_set_new(lines[p->index], "ranking", r);
        }
        for (size_t k = 0; k < m; k++) {
            size_t me = (size_t)grp[k]->index;
            json_decref(src[me]);
            src[me] = NULL;
        }
    }
    free(src);
    free(grp);
    free(pts);
}
