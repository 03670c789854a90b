/* sg_transport: the SimGrid implementation of the transport interface.
 *
 * Messages travel between the hosts of the two ranks through a mailbox per
 * (source rank, destination rank, stream), so that streams never steal each
 * other's messages.  Must be used from inside SimGrid actors, after the
 * platform is loaded; messages leave from the host of the calling actor.
 */
#ifndef CP_SG_TRANSPORT_H
#define CP_SG_TRANSPORT_H

#include <simgrid/forward.h>
#include "collectives/transport.h"

typedef struct sgt_world sgt_world;

/* nranks ranks, nstreams streams per rank. */
sgt_world *sgt_new(int nranks, int nstreams);
void sgt_free(sgt_world *w);

/* Per (rank, stream) context; lives as long as the actor that uses it. */
typedef struct sgt_ctx {
    sgt_world *w;
    int rank;
    int stream;
    double sleep_scale; /* fixed costs (sleep) last this many times longer:
                           the engine's interference factor, 1 by default */
    double due;         /* > 0: the caller has not yet slept to this instant
                           (simulated seconds, sgt_defer); 0: none */
    long msgs_sent;     /* statistics */
    double bytes_sent;  /* wire bytes */
} sgt_ctx;

void sgt_ctx_init(sgt_ctx *c, sgt_world *w, int rank, int stream);
tr_port sgt_port(sgt_ctx *c);

/* Defer the caller's sleep_until(a) then sleep_until(b) (simulated
 * seconds) to the port's next call: sets *t to the instant the two would
 * end and returns 1 when that instant is exact (fold_exact in
 * sg_transport.c); returns 0 and defers nothing otherwise.  A fixed cost
 * paid first then takes one SimGrid sleep instead of three, ending at the
 * instant they would end (the engine's host-issue wait before a ring hop's
 * overhead); any other call sleeps to *t first.  The caller guarantees
 * that nothing it does before the call would differ at *t.  sgt_settle
 * sleeps to *t if no call did. */
int sgt_defer(sgt_ctx *c, double a, double b, double *t);
void sgt_settle(sgt_ctx *c);

/* Total messages sent through w so far. */
long sgt_messages(const sgt_world *w);
/* Sleeps saved so far: deferred waits that ended in the next sleep. */
long sgt_folds(const sgt_world *w);

#endif
