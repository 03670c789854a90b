/* curve: the fitted curves of a coll_model read back: efficiency and fixed
 * overhead of a kind at a group size and message size, interpolated
 * between the group sizes and sizes measured (see coll.h). */
#include <math.h>

#include "collectives/coll_alg.h"

/* The measured curve of `kind` in a mode; NULL for an unmeasured or
 * unknown kind (platform defaults). */
const coll_curve *coll_curve_of(const coll_model *m, int kind, int graph)
{
    if (kind < 0 || kind >= COLL_CURVES)
        return NULL;
    const coll_curve *c = &m->curve[graph != 0][kind];
    return c->n > 0 ? c : NULL;
}

/* The measured curves of `kind` bracketing group size n: *a and *b (equal
 * outside the sizes measured) and the weight f of *b, linear in log(n). */
static void bracket(const coll_model *m, const coll_curve *first, int kind, int n, int graph,
                    const coll_curve **a, const coll_curve **b, double *f)
{
    *a = *b = first;
    *f = 0;
    int nw = m->nwider[graph != 0][kind];
    const coll_curve *w = m->wider[graph != 0][kind];
    if (n <= first->procs || nw == 0)
        return;
    for (int i = 0; i < nw; i++) {
        *b = &w[i];
        if (n <= w[i].procs) {
            if (n < w[i].procs)
                *f = (log(n) - log((*a)->procs)) / (log(w[i].procs) - log((*a)->procs));
            else
                *a = *b;
            return;
        }
        *a = *b;
    }
}

double coll_efficiency_at(const coll_model *m, int kind, int n, int graph)
{
    const coll_curve *c = coll_curve_of(m, kind, graph), *a, *b;
    if (!c)
        return m->eff_default;
    double f;
    bracket(m, c, kind, n, graph, &a, &b, &f);
    return a->eff + f * (b->eff - a->eff);
}

double coll_efficiency(const coll_model *m, int kind, int graph)
{
    return coll_efficiency_at(m, kind, 0, graph);
}

/* Linear in log(bytes) between measured sizes, clamped at both ends (NaN
 * bytes: the first point). */
static double curve_overhead(const coll_curve *c, double bytes)
{
    if (!(bytes > c->size[0]))
        return c->overhead[0];
    if (bytes >= c->size[c->n - 1])
        return c->overhead[c->n - 1];
    int i = 0;
    while (bytes >= c->size[i + 1])
        i++;
    double f = (log(bytes) - log(c->size[i])) / (log(c->size[i + 1]) - log(c->size[i]));
    return c->overhead[i] + f * (c->overhead[i + 1] - c->overhead[i]);
}

/* Scaled by the platform's collective latency over the calibrated one. */
double coll_overhead_at(const coll_model *m, int kind, int n, double bytes, int graph)
{
    const coll_curve *c = coll_curve_of(m, kind, graph), *a, *b;
    if (!c)
        return graph ? m->latency_graph : m->latency_eager;
    double scale = m->lat_scale[graph != 0] > 0 ? m->lat_scale[graph != 0] : 1.0, f;
    bracket(m, c, kind, n, graph, &a, &b, &f);
    double oa = curve_overhead(a, bytes);
    return scale * (b == a ? oa : oa + f * (curve_overhead(b, bytes) - oa));
}

double coll_overhead(const coll_model *m, int kind, double bytes, int graph)
{
    return coll_overhead_at(m, kind, 0, bytes, graph);
}

