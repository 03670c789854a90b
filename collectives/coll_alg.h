/* coll_alg: the algorithm families behind coll_run and the fit of the cost
 * model to one NCCL table (internal to collectives/, used by its tests).
 *
 * Each algorithm function runs one member's part of a call on the calling
 * stream and returns the number of messages that member sent.  Byte
 * arguments are wire bytes per message (payload already divided by the
 * achieved efficiency, see model.c); the fixed overhead is paid by the
 * caller.  Peers are group indices, mapped to global ranks through
 * members[].  Every member of a group posts its sends and receives in the
 * same order, so FIFO matching per (source, destination, stream) pairs them
 * correctly.
 */
#ifndef CP_COLL_ALG_H
#define CP_COLL_ALG_H

#include "collectives/coll.h"
#include "base/calib.h"

/* One member's view of its group. */
typedef struct coll_group {
    const tr_port *tp;
    const int *members;   /* global ranks in group order */
    int n;                /* group size, >= 2 */
    int me;               /* my index in members */
} coll_group;

/* p2p.c: send send_wire bytes to global rank `to` and receive the next
 * message from global rank `from` concurrently, then wait for both (either
 * peer may be -1 for none).  Returns messages sent (0 or 1). */
long coll_exchange(const tr_port *tp, int to, double send_wire, int from);

/* p2p.c: occupy the stream for a call's fixed overhead (s; nothing when 0). */
void coll_pay_overhead(const tr_port *tp, double seconds);

/* ring.c: n-1 steps; step: chunk_wire to me+1, receive from me-1. */
long coll_ring_all_gather(const coll_group *g, double chunk_wire);
/* ring.c: same traffic as the all-gather (n-1 steps of one chunk). */
long coll_ring_reduce_scatter(const coll_group *g, double chunk_wire);
/* ring.c: reduce-scatter then all-gather, 2(n-1) steps. */
long coll_ring_all_reduce(const coll_group *g, double chunk_wire);
/* ring.c: pipelined chain from member 0 through members 1..n-1 in n-1
 * chunks: 2n-3 lock-step steps (see ring.c). */
long coll_ring_broadcast(const coll_group *g, double chunk_wire);

/* direct.c: every member sends buf_wire to each of the n-1 others at once. */
long coll_oneshot_all_reduce(const coll_group *g, double buf_wire);
/* direct.c: one exchange of chunk_wire with every peer at once (all-gather,
 * reduce-scatter, all-to-all on a mesh); all-reduce: two of them. */
long coll_direct_exchange(const coll_group *g, double chunk_wire);
/* direct.c: member 0 sends buf_wire to every peer at once. */
long coll_direct_broadcast(const coll_group *g, double buf_wire);

/* hier.c: an all-reduce, all-gather or reduce-scatter of a group spanning
 * nodes of node_size devices: in-node parts at efficiency eff_local (ring,
 * or direct when `direct`), the cross-node part as a ring at the links'
 * rate.  -1 when the group does not split into equal node blocks (the
 * caller runs the flat algorithm). */
long coll_hier_run(const tr_port *tp, const coll_call *c, int node_size, double eff_local,
                   int direct);

/* pairwise.c: n-1 steps; step s: chunk_wire to me+s, receive from me-s. */
long coll_pairwise_all_to_all(const coll_group *g, double chunk_wire);

/* curve.c: the measured curve of `kind` in a mode at the smallest group
 * size; NULL for an unmeasured or unknown kind (platform defaults). */
const coll_curve *coll_curve_of(const coll_model *m, int kind, int graph);

/* fit.c: the curves of launch mode `graph` of out (cleared first), fitted
 * from an NCCL table (columns op, size_bytes, time_us and optionally P, the
 * group size, default 2) on the fabric p->intra with m's algorithm choice
 * (see fit.c): one curve per kind and group size, the smallest group in
 * out->curve, larger ones in out->wider.  Kinds without rows keep n = 0.
 * Table errors name file:line:column. */
int coll_fit_table(const coll_model *m, const platform *p, const calib_table *t,
                   coll_model *out, int graph, cp_err *err);

#endif
