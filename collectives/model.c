/* model: algorithm choice, closed-form times and the coll_run dispatcher
 * (see coll.h).  The curves' lookups live in curve.c, their fit from a
 * platform and its calibration tables in fit.c. */
#include <math.h>

#include "collectives/coll_alg.h"

/* Whether collective `kind` has an implementation of algorithm `alg`. */
static int alg_exists(plan_coll kind, plan_alg alg)
{
    switch (kind) {
    case CK_ALL_REDUCE:
        return alg == ALG_RING || alg == ALG_ONESHOT || alg == ALG_DIRECT;
    case CK_ALL_GATHER:
    case CK_REDUCE_SCATTER:
    case CK_BROADCAST:
        return alg == ALG_RING || alg == ALG_DIRECT;
    case CK_ALL_TO_ALL:
        return alg == ALG_PAIRWISE || alg == ALG_DIRECT;
    default:
        return 0;
    }
}

/* The group size does not change the choice: one-shot and ring move the same
 * bytes per port at n = 2, and one-shot's n(n-1) concurrent flows are bounded
 * by oneshot_max at larger n. */
plan_alg coll_pick_alg(const coll_model *m, plan_coll kind, double bytes, int n)
{
    (void)n;
    switch (kind) {
    case CK_ALL_REDUCE:
        return bytes <= m->oneshot_max ? ALG_ONESHOT : ALG_RING;
    case CK_ALL_TO_ALL:
        return ALG_PAIRWISE;
    default:
        return ALG_RING;
    }
}

plan_alg coll_pick(const coll_model *m, const coll_call *c)
{
    if (c->alg != ALG_AUTO)
        return c->alg;
    plan_alg a = coll_pick_alg(m, c->kind, c->bytes, c->n);
    if (m->mesh && !c->cross_node && a != ALG_ONESHOT)
        return ALG_DIRECT;
    return a;
}

/* kind CK_COUNT is one ring hop (alg ignored).  Returns -1 for an algorithm
 * that does not exist for the kind (ALG_AUTO included: pass the choice of
 * coll_pick_alg) or for bw <= 0, lat < 0, bytes < 0. */
double coll_analytic_s(plan_coll kind, plan_alg alg, int n, double bytes,
                       double bw, double lat)
{
    if (!(bw > 0) || !(lat >= 0) || !(bytes >= 0))
        return -1;
    if (kind != CK_COUNT && !alg_exists(kind, alg))
        return -1;
    if (n <= 1)
        return 0;
    double p = n;
    switch (kind) {
    case CK_COUNT:
        return bytes / bw + lat;
    case CK_ALL_REDUCE:
        if (alg == ALG_ONESHOT)
            return (p - 1) * bytes / bw + lat;
        if (alg == ALG_DIRECT)
            return 2 * (bytes / p / bw + lat);
        return 2 * (p - 1) * (bytes / p / bw + lat);
    case CK_BROADCAST:
        if (alg == ALG_DIRECT)
            return bytes / bw + lat;
        return (2 * p - 3) * (bytes / (p - 1) / bw + lat);
    default: /* all-gather, reduce-scatter, all-to-all */
        if (alg == ALG_DIRECT)
            return bytes / p / bw + lat;
        return (p - 1) * (bytes / p / bw + lat);
    }
}

/* The fixed cost of a hierarchical call (hier.c) from its parts, each a
 * call of its own as NCCL runs them: an all-reduce of S bytes on L members
 * per node and N nodes pays a reduce-scatter of S on L, an all-reduce of
 * S / L on N and an all-gather of S on L; an all-gather of S an all-gather
 * of S / L on N and one of S on L; a reduce-scatter one of S on L and one
 * of S / L on N (the in-node parts only when L > 1).  -1 when the call
 * does not run hierarchically. */
static double hier_overhead(const coll_model *m, const coll_call *c)
{
    if (!c->cross_node || m->node_size <= 0 || c->alg != ALG_AUTO ||
        (c->kind != CK_ALL_REDUCE && c->kind != CK_ALL_GATHER && c->kind != CK_REDUCE_SCATTER))
        return -1;
    int node = c->members[c->me] / m->node_size, L = 0;
    for (int i = 0; i < c->n; i++)
        L += c->members[i] / m->node_size == node;
    if (L < 1 || c->n % L != 0 || c->n / L < 2)
        return -1;
    int N = c->n / L, g = c->graph;
    double S = c->bytes, local = 0, cross;
    if (c->kind == CK_ALL_REDUCE) {
        if (L > 1)
            local = coll_overhead_at(m, CK_REDUCE_SCATTER, L, S, g) +
                    coll_overhead_at(m, CK_ALL_GATHER, L, S, g);
        cross = coll_overhead_at(m, CK_ALL_REDUCE, N, S / L, g);
    } else {
        if (L > 1)
            local = coll_overhead_at(m, c->kind, L, S, g);
        cross = coll_overhead_at(m, c->kind, N, S / L, g);
    }
    return local + cross;
}

/* Returns -1 (and moves nothing) for a malformed call: no members, me out of
 * range, negative bytes, unknown kind, an algorithm the kind does not have,
 * or a model whose efficiency is not positive or whose overhead is negative. */
long coll_run(const tr_port *tp, const coll_model *m, const coll_call *c)
{
    if (!tp || !m || !c || !c->members || c->n < 1 || c->me < 0 || c->me >= c->n ||
        !(c->bytes >= 0) || c->kind < 0 || c->kind >= CK_COUNT)
        return -1;
    plan_alg alg = coll_pick(m, c);
    if (!alg_exists(c->kind, alg))
        return -1;
    if (c->n == 1)
        return 0;
    /* across nodes the NIC links are the bottleneck and carry
     * network.efficiency themselves; the NVLink fit does not apply */
    /* the custom all-reduce: its own fit, one node only (vLLM disables it
     * for a group that spans nodes) */
    int curve = c->custom && c->kind == CK_ALL_REDUCE && !c->cross_node &&
                        coll_curve_of(m, COLL_CUSTOM_AR, c->graph)
                    ? COLL_CUSTOM_AR : (int)c->kind;
    double eff = c->cross_node ? 1.0 : coll_efficiency_at(m, curve, c->n, c->graph);
    double overhead = hier_overhead(m, c);
    if (overhead < 0)
        overhead = coll_overhead_at(m, curve, c->n, c->bytes, c->graph);
    if (!(eff > 0) || !(overhead >= 0))
        return -1;
    double wire = c->bytes / eff; /* nccl-tests size, on the wire */
    coll_group g = {tp, c->members, c->n, c->me};
    coll_pay_overhead(tp, overhead);
    if (c->cross_node && m->node_size > 0 && c->alg == ALG_AUTO &&
        (c->kind == CK_ALL_REDUCE || c->kind == CK_ALL_GATHER ||
         c->kind == CK_REDUCE_SCATTER)) {
        long sent = coll_hier_run(tp, c, m->node_size,
                                  coll_efficiency_at(m, c->kind, c->n, c->graph),
                                  m->mesh);
        if (sent >= 0)
            return sent;
    }
    if (alg == ALG_DIRECT) {
        if (c->kind == CK_BROADCAST)
            return coll_direct_broadcast(&g, wire);
        long sent = coll_direct_exchange(&g, wire / c->n);
        return c->kind == CK_ALL_REDUCE ? sent + coll_direct_exchange(&g, wire / c->n) : sent;
    }
    switch (c->kind) {
    case CK_ALL_REDUCE:
        if (alg == ALG_ONESHOT)
            return coll_oneshot_all_reduce(&g, wire);
        return coll_ring_all_reduce(&g, wire / c->n);
    case CK_ALL_GATHER:
        return coll_ring_all_gather(&g, wire / c->n);
    case CK_REDUCE_SCATTER:
        return coll_ring_reduce_scatter(&g, wire / c->n);
    case CK_ALL_TO_ALL:
        return coll_pairwise_all_to_all(&g, wire / c->n);
    default: /* CK_BROADCAST: alg_exists() rejected everything else */
        return coll_ring_broadcast(&g, wire / (c->n - 1));
    }
}
