/* hier: collectives of a group that spans nodes, as NCCL and HCCL run them
 * on a multi-node cluster (see coll_alg.h).
 *
 * The group's members are split by node: L members on each of N nodes
 * (TP-fastest layouts give every node the same count).  An all-reduce of S
 * bytes is a reduce-scatter inside each node (chunks of S/L), an
 * all-reduce of the S/L chunk among the N members of the same local index
 * (one per node, over the NICs), and an all-gather inside each node; an
 * all-gather and a reduce-scatter take the cross-node and the in-node half
 * in the order that moves the smaller blocks over the NICs.  The in-node
 * parts run as inside a node (ring, or direct on a full mesh) at the
 * fabric's fitted efficiency, the cross-node part as a ring over the NIC
 * links at their own rate.  So the NIC carries (N-1)/N of S/L per rank
 * and direction, not a flat ring's 2(P-1)/P of S through its slowest hop.
 */
#include <stdlib.h>

#include "collectives/coll_alg.h"

/* The in-node part with the in-node algorithm. */
static long local_part(const coll_group *g, plan_coll kind, double chunk_wire, int direct)
{
    if (g->n < 2)
        return 0;
    if (direct)
        return coll_direct_exchange(g, chunk_wire);
    return kind == CK_REDUCE_SCATTER ? coll_ring_reduce_scatter(g, chunk_wire)
                                     : coll_ring_all_gather(g, chunk_wire);
}

/* The members of my node (local, in group order) and the members at my
 * local position on every node (cross, in node order); 0 when the group
 * does not split into equal contiguous node blocks of two or more nodes. */
static int coll_hier_split(const coll_call *c, int node_size, int *local, int *nl, int *cross,
                           int *nc, int *my_local, int *my_cross)
{
    if (node_size <= 0)
        return 0;
    int my_node = c->members[c->me] / node_size;
    *nl = *nc = 0;
    /* members of my node, in group order; my position among them */
    for (int i = 0; i < c->n; i++) {
        if (c->members[i] / node_size != my_node)
            continue;
        if (i == c->me)
            *my_local = *nl;
        local[(*nl)++] = c->members[i];
    }
    int L = *nl;
    if (L < 1 || c->n % L != 0 || c->n / L < 2)
        return 0;
    /* every node holds L members, contiguous in group order; the member of
     * each node at my local position, in node order */
    for (int i = 0; i < c->n; i += L) {
        int node = c->members[i] / node_size;
        for (int j = 0; j < L; j++)
            if (c->members[i + j] / node_size != node)
                return 0;
        if (i / L == (c->me / L))
            *my_cross = *nc;
        cross[(*nc)++] = c->members[i + *my_local];
    }
    return c->me / L * L + *my_local == c->me;
}

long coll_hier_run(const tr_port *tp, const coll_call *c, int node_size, double eff_local,
                   int direct)
{
    int stack[2][64];
    int *local = c->n <= 64 ? stack[0] : malloc((size_t)c->n * sizeof *local);
    int *cross = c->n <= 64 ? stack[1] : malloc((size_t)c->n * sizeof *cross);
    if (!local || !cross)
        abort(); /* out of host memory: nothing sensible to report */
    int nl = 0, nc = 0, ml = 0, mc = 0;
    long sent = -1;
    if (coll_hier_split(c, node_size, local, &nl, cross, &nc, &ml, &mc)) {
        coll_group gl = {tp, local, nl, ml}, gc = {tp, cross, nc, mc};
        double S = c->bytes, L = nl, P = c->n;
        double lw = 1.0 / eff_local; /* in-node wire bytes per payload byte */
        sent = 0;
        switch (c->kind) {
        case CK_ALL_REDUCE:
            sent += local_part(&gl, CK_REDUCE_SCATTER, S / L * lw, direct);
            sent += coll_ring_all_reduce(&gc, S / L / nc);
            sent += local_part(&gl, CK_ALL_GATHER, S / L * lw, direct);
            break;
        case CK_ALL_GATHER: /* output S: blocks of S/P across, then S/L inside */
            sent += coll_ring_all_gather(&gc, S / P);
            sent += local_part(&gl, CK_ALL_GATHER, S / L * lw, direct);
            break;
        default: /* CK_REDUCE_SCATTER, input S: S/L chunks inside, then S/P across */
            sent += local_part(&gl, CK_REDUCE_SCATTER, S / L * lw, direct);
            sent += coll_ring_reduce_scatter(&gc, S / P);
            break;
        }
    }
    if (local != stack[0])
        free(local);
    if (cross != stack[1])
        free(cross);
    return sent;
}
