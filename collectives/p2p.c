/* p2p: point-to-point exchanges (ring hops) and the building block that
 * every algorithm family uses for one step (see coll_alg.h, coll.h). */
#include "collectives/coll_alg.h"

long coll_exchange(const tr_port *tp, int to, double send_wire, int from)
{
    tr_req *reqs[2];
    int n = 0;
    long sent = 0;
    if (to >= 0) {
        reqs[n++] = tp->ops->isend(tp->ctx, to, send_wire);
        sent = 1;
    }
    if (from >= 0)
        reqs[n++] = tp->ops->irecv(tp->ctx, from);
    if (n > 0)
        tp->ops->waitall(tp->ctx, reqs, n);
    return sent;
}

void coll_pay_overhead(const tr_port *tp, double seconds)
{
    if (seconds > 0)
        tp->ops->sleep(tp->ctx, seconds);
}

/* A hop that sends pays the point-to-point overhead of its send size
 * (nccl-tests sendrecv convention) and moves send_bytes / eff wire bytes.  A
 * receive-only hop pays none of its own: it ends when the message arrives,
 * which the sender's overhead already delays, as in the measured calls
 * (both ranks start together).  It would otherwise pay the overhead of a
 * 0-byte send, the largest of the curve in eager mode (nccl.csv sendrecv
 * 4096 B: ~114 us). */
long coll_sendrecv_in(const tr_port *tp, const coll_model *m, int n, int to,
                      double send_bytes, int from, int graph, int cross_node)
{
    if (!tp || !m || (to >= 0 && !(send_bytes >= 0)))
        return -1;
    if (to < 0)
        return coll_exchange(tp, -1, 0, from);
    double eff = cross_node ? 1.0 : coll_efficiency_at(m, CK_COUNT, n, graph);
    double overhead = coll_overhead_at(m, CK_COUNT, n, send_bytes, graph);
    if (!(eff > 0) || !(overhead >= 0))
        return -1;
    coll_pay_overhead(tp, overhead);
    return coll_exchange(tp, to, send_bytes / eff, from);
}

long coll_sendrecv(const tr_port *tp, const coll_model *m, int to, double send_bytes, int from,
                   int graph, int cross_node)
{
    return coll_sendrecv_in(tp, m, 0, to, send_bytes, from, graph, cross_node);
}
