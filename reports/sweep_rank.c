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

/* The seconds of source `name` (interned) of a point; NULL when it has none. */
static const plot_src *src_get(const plot_points *s, const plot_point *p, const char *name)
{
    for (uint32_t i = 0; i < p->nsrc; i++)
        if (s->src[p->src_first + i].name == name)
            return &s->src[p->src_first + i];
    return NULL;
}

double rep_pair_uncertainty(const plot_points *s, const plot_point *a, const plot_point *b,
                            const json_t *errs)
{
    /* a's sources in its order, then b's that a lacks: the sum's order */
    double u = 0;
    for (int pass = 0; pass < 2; pass++) {
        const plot_point *p = pass ? b : a;
        for (uint32_t i = 0; i < p->nsrc; i++) {
            const plot_src *e = &s->src[p->src_first + i];
            if (pass && src_get(s, a, e->name))
                continue; /* counted in the first pass */
            const plot_src *x = src_get(s, a, e->name), *y = src_get(s, b, e->name);
            double err = source_error(errs, e->name);
            if (err < 0)
                return -1;
            u += fabs((x ? x->s : 0) - (y ? y->s : 0)) * err;
        }
    }
    return u;
}

static int by_objective(const void *x, const void *y)
{
    const plot_point *a = *(const plot_point *const *)x, *b = *(const plot_point *const *)y;
    return plot_better(a, b) ? -1 : plot_better(b, a) ? 1 : 0;
}

/* Whether the point ranks by TTFT (the one objective the kernels'
 * uncertainty is in seconds of). */
static int by_ttft(const plot_point *p)
{
    return !p->has_obj || (p->obj_metric && strcmp(p->obj_metric, "ttft_s") == 0);
}

static void clear_ranking(plot_point *p)
{
    p->ranked = p->place = p->of = p->margin_kind = 0;
    p->against = -1;
    p->tie = -1;
    p->margin = 0;
    p->unc = NAN;
}

/* Rank the group grp[0..m) (sorted, best first); idx: the points' indices. */
static void rank_group(plot_points *s, const plot_point **grp, size_t m, const int *idx,
                       const json_t *errs)
{
    for (size_t k = 0; k < m; k++) {
        plot_point *p = (plot_point *)grp[k];
        const plot_point *q = m < 2 ? NULL : k == 0 ? grp[1] : grp[0];
        clear_ranking(p);
        p->ranked = 1;
        p->place = (int)k + 1;
        p->of = (int)m;
        if (!q)
            continue;
        const plot_point *fast = k == 0 ? p : q, *slow = k == 0 ? q : p;
        double lo = fmin(fast->obj, slow->obj), hi = fmax(fast->obj, slow->obj);
        double margin = lo > 0 ? hi / lo - 1 : hi > lo ? INFINITY : 0;
        double u = by_ttft(p) ? rep_pair_uncertainty(s, fast, slow, errs) : -1;
        p->against = idx[q->index];
        p->margin_kind = isfinite(margin) ? 2 : 1;
        p->margin = margin;
        p->unc = u >= 0 ? u / fast->ttft_s : NAN;
        p->tie = u >= 0 ? margin <= u / fast->ttft_s : -1;
    }
}

void rep_points_rank(plot_points *s, const json_t *errs)
{
    size_t n = s->n;
    const plot_point **grp = malloc((n + 1) * sizeof *grp);
    int *idx = malloc((n + 1) * sizeof *idx);
    long long *done = malloc((n + 1) * sizeof *done);
    if (!grp || !idx || !done)
        abort(); /* out of host memory: nothing sensible to report */
    /* while ranking, a record's index is its position (the order of the
     * lines breaks ties, as two lines may share an index); idx keeps the
     * indices, restored at the end */
    for (size_t i = 0; i < n; i++) {
        clear_ranking(&s->p[i]);
        idx[i] = s->p[i].index;
        s->p[i].index = (int)i;
    }
    size_t ndone = 0;
    for (size_t i = 0; i < n; i++) {
        const plot_point *pi = &s->p[i];
        if (!pi->ok || pi->oom || pi->ranked)
            continue;
        size_t d = 0;
        while (d < ndone && done[d] != pi->prompt)
            d++;
        if (d < ndone)
            continue;  /* its prompt length is ranked (it is not: no objective) */
        done[ndone++] = pi->prompt;
        size_t m = 0;
        for (size_t j = 0; j < n; j++) {
            const plot_point *q = &s->p[j];
            if (q->ok && !q->oom && q->obj_known && q->prompt == pi->prompt)
                grp[m++] = q;
        }
        if (m == 0)
            continue;  /* its summary lacks the objective: not ranked */
        qsort(grp, m, sizeof *grp, by_objective);
        rank_group(s, grp, m, idx, errs);
    }
    for (size_t i = 0; i < n; i++)
        s->p[i].index = idx[i];
    free(done);
    free(idx);
    free(grp);
}

json_t *rep_point_ranking(const plot_point *p)
{
    if (!p->ranked)
        return NULL;
    json_t *r = json_object();
    json_object_set_new(r, "prompt_tokens", json_integer(p->prompt));
    json_object_set_new(r, "place", json_integer(p->place));
    json_object_set_new(r, "of", json_integer(p->of));
    if (p->margin_kind) {
        json_object_set_new(r, "against_index", json_integer(p->against));
        json_object_set_new(r, "margin", p->margin_kind == 2 ? json_real(p->margin)
                                                             : json_null());
        json_object_set_new(r, "uncertainty", isnan(p->unc) ? json_null() : json_real(p->unc));
        json_object_set_new(r, "tie", p->tie < 0 ? json_null() : json_boolean(p->tie));
    }
    return r;
}

void rep_sweep_rank(json_t *const *lines, size_t n, const json_t *errs)
{
    plot_points s;
    plot_points_init(&s);
    for (size_t i = 0; i < n; i++)
        plot_points_add(&s, lines[i], 1);
    rep_points_rank(&s, errs);
    for (size_t i = 0; i < n; i++) {
        json_object_del(lines[i], "ranking");
        json_t *r = rep_point_ranking(&s.p[i]);
        if (r)
            json_object_set_new(lines[i], "ranking", r);
    }
    plot_points_free(&s);
}
