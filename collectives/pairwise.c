/* pairwise: all-to-all as n-1 pairwise exchange steps (see coll_alg.h).
 *
 * Step s (1..n-1): send my chunk for member me+s, receive the chunk of
 * member me-s from it.  Each port carries one flow per direction per step,
 * so on a uniform star the call takes (n-1) * (S/n/bw + lat).  Only n flows
 * are in flight at a time, never the n(n-1) of a fully concurrent
 * all-to-all, whose cost grows ~n^4 in SimGrid's CM02 solver
 * (simgrid-notes.md section 3).
 */
#include "collectives/coll_alg.h"

long coll_pairwise_all_to_all(const coll_group *g, double chunk_wire)
{
    int n = g->n;
    long sent = 0;
    for (int s = 1; s < n; s++) {
        int to = g->members[(g->me + s) % n];
        int from = g->members[(g->me + n - s) % n];
        sent += coll_exchange(g->tp, to, chunk_wire, from);
    }
    return sent;
}
