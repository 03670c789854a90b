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
    long msgs_sent;     /* statistics */
    double bytes_sent;  /* wire bytes */
} sgt_ctx;

void sgt_ctx_init(sgt_ctx *c, sgt_world *w, int rank, int stream);
tr_port sgt_port(sgt_ctx *c);

/* Total messages sent through w so far. */
long sgt_messages(const sgt_world *w);

#endif
