/* direct: one-shot all-reduce, and the mesh algorithms (see coll_alg.h).
 *
 * Every member sends its whole buffer to each of the n-1 others at once and
 * receives n-1 buffers, then reduces locally (no traffic).  Each port carries
 * n-1 concurrent flows per direction, so on a uniform star the call takes
 * (n-1) * S/bw + lat: one latency instead of the ring's 2(n-1), which is why
 * it wins for small buffers.  n(n-1) flows are in flight together: used only
 * at or below coll_model.oneshot_max.
 */
#include <stdlib.h>

#include "collectives/coll_alg.h"

long coll_oneshot_all_reduce(const coll_group *g, double buf_wire)
{
    int n = g->n, peers = n - 1;
    tr_req *local[64]; /* stack room for groups of up to 33 members */
    tr_req **reqs = 2 * peers <= 64 ? local : malloc(2 * (size_t)peers * sizeof *reqs);
    if (!reqs)
        abort(); /* out of host memory: nothing sensible to report */
    const tr_ops *ops = g->tp->ops;
    void *ctx = g->tp->ctx;
    /* Sends then receives, each in increasing distance: both sides of every
     * pair post in the same order. */
    for (int d = 1; d < n; d++)
        reqs[d - 1] = ops->isend(ctx, g->members[(g->me + d) % n], buf_wire);
    for (int d = 1; d < n; d++)
        reqs[peers + d - 1] = ops->irecv(ctx, g->members[(g->me + n - d) % n]);
    ops->waitall(ctx, reqs, 2 * peers);
    if (reqs != local)
        free(reqs);
    return peers;
}

/* On a full mesh each pair has its own link, so exchanging a chunk with
 * every peer at once takes one chunk time and one latency (a ring would
 * use one link of the n-1 per step: n-1 times slower). */
long coll_direct_exchange(const coll_group *g, double chunk_wire)
{
    return coll_oneshot_all_reduce(g, chunk_wire);
}

long coll_direct_broadcast(const coll_group *g, double buf_wire)
{
    int n = g->n, peers = n - 1;
    const tr_ops *ops = g->tp->ops;
    void *ctx = g->tp->ctx;
    if (g->me != 0) {
        tr_req *r = ops->irecv(ctx, g->members[0]);
        ops->waitall(ctx, &r, 1);
        return 0;
    }
    tr_req *local[64];
    tr_req **reqs = peers <= 64 ? local : malloc((size_t)peers * sizeof *reqs);
    if (!reqs)
        abort(); /* out of host memory: nothing sensible to report */
    for (int d = 1; d < n; d++)
        reqs[d - 1] = ops->isend(ctx, g->members[d], buf_wire);
    ops->waitall(ctx, reqs, peers);
    if (reqs != local)
        free(reqs);
    return peers;
}
