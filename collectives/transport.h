/* transport: the few primitives a collective algorithm needs.
 *
 * Collectives are written once against this interface.  The engine provides
 * the SimGrid implementation (collectives/sg_transport.c: one mailbox per
 * (source rank, destination rank, stream)); tests may provide counting
 * implementations.  Peers are global rank numbers.  Messages between one
 * pair of ranks on one stream are matched in FIFO order, so every algorithm
 * must post sends and receives in the same order on both sides.
 */
#ifndef CP_TRANSPORT_H
#define CP_TRANSPORT_H

typedef struct tr_req tr_req;

typedef struct tr_ops {
    /* Start sending `bytes` simulated bytes to `peer`; never blocks. */
    tr_req *(*isend)(void *ctx, int peer, double bytes);
    /* Start receiving the next message from `peer`; never blocks. */
    tr_req *(*irecv)(void *ctx, int peer);
    /* Block until every request completes; consumes the requests. */
    void (*waitall)(void *ctx, tr_req **reqs, int n);
    /* Occupy the calling stream for `seconds` (fixed latencies). */
    void (*sleep)(void *ctx, double seconds);
    /* Current simulated time (s). */
    double (*now)(void *ctx);
} tr_ops;

typedef struct tr_port {
    const tr_ops *ops;
    void *ctx;
} tr_port;

#endif
