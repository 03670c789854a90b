/* ring: ring all-gather, reduce-scatter and all-reduce, and the pipelined
 * chain broadcast (see coll_alg.h).
 *
 * On a network where every transfer crosses one bottleneck of bandwidth bw
 * with route latency lat, each lock-step step costs chunk/bw + lat, so
 *   all-gather, reduce-scatter  (n-1) * (S/n/bw + lat)
 *   all-reduce                  2(n-1) * (S/n/bw + lat)
 *   broadcast                   (2n-3) * (S/(n-1)/bw + lat)
 * (coll_analytic_s in model.c; the SimGrid tests check these to 1e-9).
 */
#include "collectives/coll_alg.h"

/* `steps` ring steps: chunk_wire to the next member, one from the previous. */
static long ring_steps(const coll_group *g, double chunk_wire, int steps)
{
    int next = g->members[(g->me + 1) % g->n];
    int prev = g->members[(g->me + g->n - 1) % g->n];
    long sent = 0;
    for (int s = 0; s < steps; s++)
        sent += coll_exchange(g->tp, next, chunk_wire, prev);
    return sent;
}

long coll_ring_all_gather(const coll_group *g, double chunk_wire)
{
    return ring_steps(g, chunk_wire, g->n - 1);
}

/* Only the reduction differs from the all-gather, and it costs no traffic. */
long coll_ring_reduce_scatter(const coll_group *g, double chunk_wire)
{
    return ring_steps(g, chunk_wire, g->n - 1);
}

long coll_ring_all_reduce(const coll_group *g, double chunk_wire)
{
    long sent = coll_ring_reduce_scatter(g, chunk_wire);
    return sent + coll_ring_all_gather(g, chunk_wire);
}

/* Chain 0 -> 1 -> ... -> n-1 carrying k = n-1 chunks.  Member i receives
 * chunk c from member i-1 in step c+i-1 and forwards it to member i+1 in
 * step c+i, sending and receiving together in each step; the last chunk
 * reaches member n-1 in step k+n-3, so the call takes k+n-2 = 2n-3 steps.
 * Steps where a member has nothing to do cost it nothing: its neighbours'
 * transfers start when both ends have posted, which keeps the lock-step. */
long coll_ring_broadcast(const coll_group *g, double chunk_wire)
{
    int n = g->n, i = g->me, k = n - 1;
    int to = i + 1 < n ? g->members[i + 1] : -1;
    int from = i > 0 ? g->members[i - 1] : -1;
    long sent = 0;
    for (int t = 0; t < k + n - 2; t++) {
        int cs = t - i;       /* chunk forwarded in step t */
        int cr = t - i + 1;   /* chunk received in step t */
        int send = to >= 0 && cs >= 0 && cs < k;
        int recv = from >= 0 && cr >= 0 && cr < k;
        if (send || recv)
            sent += coll_exchange(g->tp, send ? to : -1, chunk_wire, recv ? from : -1);
    }
    return sent;
}
