/* alone: the kernels of a program that nothing else on their rank's host
 * can run beside, found from the program's order and dependencies alone.
 *
 * A kernel is an exec on its rank's host; SimGrid shares the host between
 * the execs on it, and the interference model slows a kernel (a bounded
 * exec beside it, engine.c apply_hog) while a collective that moves bytes
 * over NVLink runs on another stream of the rank.  A kernel that no other
 * kernel and no such collective can overlap runs at the host's speed from
 * start to end, so it lasts exactly its flops over that speed, and the
 * engine waits that long instead of running an exec (half the SimGrid calls,
 * and no CPU sharing to solve).  "Cannot overlap" is proved, never assumed:
 * two elements of a program's sequence on different streams overlap unless
 * one happens before the other through stream order, dependencies and step
 * starts (engine.c eng_ready), for every rank and every timing. */
#include "sim/engine/engine_int.h"

#include <stdlib.h>

/* Into frontier f: what is done once element e has ended (e's frontier and
 * e itself). */
static void after(uint32_t *f, const uint32_t *vc, const plan_prog *pg, const prog_index *ix,
                  uint32_t e)
{
    const uint32_t *g = vc + (size_t)e * ST_COUNT;
    for (int t = 0; t < ST_COUNT; t++)
        if (g[t] > f[t])
            f[t] = g[t];
    int se = pg->ops[ix->v.real[e]].stream;
    if (ix->pos[e] + 1 > f[se])
        f[se] = ix->pos[e] + 1;
}

/* The elements of each stream done before element i starts, as counts of
 * each stream's prefix (a vector clock; i's own stream holds its position):
 * vc[i * ST_COUNT + s].  Returns NULL when the sequence is not in an order
 * one pass can follow (a dependency or a step op after its user). */
static uint32_t *frontiers(const plan_prog *pg, const prog_index *ix)
{
    const plan_vseq *v = &ix->v;
    uint32_t n = v->n;
    int32_t nsteps = 0;
    for (uint32_t i = 0; i < n; i++) {
        const plan_op *o = &pg->ops[v->real[i]];
        if (o->kind == OPK_STEP && o->step + 1 > nsteps)
            nsteps = o->step + 1;
    }
    uint32_t *vc = calloc((size_t)n * ST_COUNT + 1, sizeof *vc);
    int64_t *step_el = malloc(((size_t)nsteps + 1) * sizeof *step_el);
    if (!vc || !step_el)
        abort();
    for (int32_t k = 0; k < nsteps; k++)
        step_el[k] = -1;
    int ok = 1;
    for (uint32_t i = 0; i < n && ok; i++) {
        const plan_op *o = &pg->ops[v->real[i]];
        uint32_t *f = vc + (size_t)i * ST_COUNT;
        int s = o->stream;
        if (ix->pos[i] > 0)
            after(f, vc, pg, ix, ix->list[s][ix->pos[i] - 1]);
        for (uint32_t k = v->dep_first[i]; k < v->dep_first[i + 1] && ok; k++)
            if ((ok = v->deps[k] < i))
                after(f, vc, pg, ix, v->deps[k]);
        if (o->kind == OPK_STEP) {
            for (int t = 0; t < ST_COUNT; t++) {
                uint32_t need = ix->need[(size_t)o->step * ST_COUNT + t];
                if (t != s && need > 0)
                    after(f, vc, pg, ix, ix->list[t][need - 1]);
            }
            step_el[o->step] = i;
        } else if (o->step >= 0 && (ok = o->step < nsteps && step_el[o->step] >= 0)) {
            after(f, vc, pg, ix, (uint32_t)step_el[o->step]);
        }
    }
    free(step_el);
    if (!ok) {
        free(vc);
        return NULL;
    }
    return vc;
}

/* Whether element o keeps another activity on the host beside a kernel:
 * a kernel, or (interference on) a collective that moves bytes it counts
 * (engine.c eng_comm_begins: a hop over NICs counts none; hops says
 * whether the program's hops may stay inside a node). */
static int hazard(const plan_op *o, int interference, int hops)
{
    if (o->kind == OPK_COMPUTE)
        return o->cost_s > 0;
    if (!interference || (o->comm_bytes <= 0 && o->recv_bytes <= 0))
        return 0;
    return o->kind == OPK_COLL || (o->kind == OPK_P2P && hops);
}

/* ix->alone for program pg: the bit of each kernel nothing can overlap. */
static void mark(const plan_prog *pg, prog_index *ix, int interference, int hops)
{
    uint32_t *vc = frontiers(pg, ix);
    if (!vc)
        return;
    const plan_vseq *v = &ix->v;
    int32_t *cover[ST_COUNT];
    for (int k = 0; k < ST_COUNT; k++)
        if (!(cover[k] = calloc((size_t)ix->nlist[k] + 1, sizeof *cover[k])))
            abort();
    for (uint32_t x = 0; x < v->n; x++) {
        const plan_op *o = &pg->ops[v->real[x]];
        if (!hazard(o, interference, hops))
            continue;
        int s = o->stream;
        for (int k = 0; k < ST_COUNT; k++) {
            if (k == s)
                continue;
            /* stream k's elements before position a end before x starts;
             * those from lo on start after x ends (their frontiers pass x,
             * monotone in stream order: a binary search finds lo); the ones
             * between may overlap x */
            uint32_t a = vc[(size_t)x * ST_COUNT + k], lo = a, hi = ix->nlist[k];
            while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (vc[(size_t)ix->list[k][mid] * ST_COUNT + s] > ix->pos[x])
                    hi = mid;
                else
                    lo = mid + 1;
            }
            if (a < lo) {
                cover[k][a]++;
                cover[k][lo]--;
            }
        }
    }
    free(vc);
    ix->alone = calloc((size_t)v->n / 64 + 1, sizeof *ix->alone);
    if (!ix->alone)
        abort();
    for (int k = 0; k < ST_COUNT; k++) {
        int32_t c = 0;
        for (uint32_t m = 0; m < ix->nlist[k]; m++) {
            c += cover[k][m];
            uint32_t i = ix->list[k][m];
            const plan_op *o = &pg->ops[v->real[i]];
            if (c == 0 && o->kind == OPK_COMPUTE && o->cost_s > 0)
                ix->alone[i / 64] |= (uint64_t)1 << (i % 64);
        }
        free(cover[k]);
    }
}

/* Whether some rank of each program has a hop with bytes that stays inside
 * its node (one that eng_comm_begins counts): in_node[g]. */
static void hops_in_node(const plan *p, rank_st *ranks, uint8_t *in_node)
{
    for (int r = 0; r < p->nranks; r++) {
        int g = p->prog_of_rank[r];
        const plan_prog *pg = &p->progs[g];
        for (uint32_t j = 0; j < pg->nops && !in_node[g]; j++) {
            const plan_op *o = &pg->ops[j];
            int to, from;
            if (o->kind == OPK_P2P && (o->comm_bytes > 0 || o->recv_bytes > 0) &&
                !eng_hop_peers(&ranks[r], o, &to, &from))
                in_node[g] = 1;
        }
    }
}

void eng_alone_setup(const plan *p, rank_st *ranks, prog_index *ix)
{
    int interference = eng.im != NULL;
    uint8_t *in_node = calloc((size_t)p->nprogs + 1, 1);
    if (!in_node)
        abort();
    if (interference)
        hops_in_node(p, ranks, in_node);
    for (int g = 0; g < p->nprogs; g++)
        mark(&p->progs[g], &ix[g], interference, in_node[g]);
    free(in_node);
}
