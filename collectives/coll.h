/* coll: collective algorithms over a transport, and the NCCL-like cost
 * parameters (fixed latency per call, achieved-bandwidth efficiency by size)
 * that turn payload bytes into wire bytes.
 *
 * Size convention (nccl-tests, also used by plan_op.comm_bytes):
 *   all_reduce      bytes of the buffer on each rank
 *   all_gather      bytes of the gathered output (each rank contributes 1/P)
 *   reduce_scatter  bytes of each rank's input (each rank keeps 1/P)
 *   all_to_all      bytes of each rank's send buffer (1/P to each peer)
 *   broadcast       bytes of the buffer
 *
 * Algorithms (one file per family):
 *   ring.c      ring all-gather, ring reduce-scatter, ring all-reduce
 *               (reduce-scatter + all-gather), ring broadcast (pipelined
 *               chain in P-1 chunks)
 *   direct.c    one-shot all-reduce (every rank sends its whole buffer to
 *               every peer at once), chosen at or below oneshot_max bytes
 *   pairwise.c  all-to-all as P-1 pairwise exchange steps (step s: send to
 *               me+s, receive from me-s), never all P^2 flows at once
 *   direct.c    on a full mesh (HCCS), inside one node: all-gather,
 *               reduce-scatter, all-to-all as one exchange with every peer at
 *               once over its own link, all-reduce as reduce-scatter +
 *               all-gather, broadcast from the root to every peer
 *   p2p.c       send/receive pairs (ring hops)
 *   hier.c      groups spanning nodes: in-node reduce-scatter, cross-node
 *               ring over the NICs, in-node all-gather (and the halves of
 *               it for all-gather and reduce-scatter)
 */
#ifndef CP_COLL_H
#define CP_COLL_H

#include "collectives/transport.h"
#include "models/plan.h"
#include "platforms/platform.h"
#include "base/diag.h"

#define COLL_MAX_POINTS 32

/* The cost of one collective kind in one launch mode, fitted to measured
 * NCCL calls (collectives/fit.c):
 *     t(S) = overhead(S) + R + W(S) / eff
 * R: the route latencies the algorithm pays; W: its wire time at line rate
 * (both from the simulated platform); eff: the best achieved fraction of
 * line rate over the measured sizes (so big transfers occupy links at the
 * measured peak rate); overhead(S): the rest of the measured time, a fixed
 * cost that does not occupy links (launch, protocol, synchronisation),
 * interpolated linearly in log(size) and clamped at the ends. */
typedef struct coll_curve {
    int n;                              /* 0: not measured, platform defaults */
    double size[COLL_MAX_POINTS];       /* bytes, nccl-tests convention, ascending */
    double overhead[COLL_MAX_POINTS];   /* seconds */
    double eff;                         /* (0, 1] */
    int procs;                          /* the group size measured (the table's P;
                                           2 without the column) */
} coll_curve;

/* Group sizes one kind may be measured at, the smallest in coll_model.curve
 * and the others in coll_model.wider (ours: 2, 4, 8, 16 and spares). */
#define COLL_MAX_GROUPS 8

/* Curves beyond the plan_coll kinds: point-to-point (CK_COUNT) and the
 * engines' custom all-reduce kernel (vLLM custom_all_reduce.cu; kernel set
 * slot allreduce: custom), fitted from its own table. */
#define COLL_CUSTOM_AR (CK_COUNT + 1)
#define COLL_CURVES (CK_COUNT + 2)

/* What was measured is kept apart from what a what-if changes: the curves
 * are the protocol efficiency and fixed overheads of the fabric the
 * calibration tables were measured on (platform.cal_intra), so the wire
 * part of a call runs on the simulated links at their own rate (a faster
 * fabric moves it faster), the fixed part scales with the platform's
 * collective latency over the calibrated one, and calls that cross nodes
 * run at the NIC links' rate (efficiency 1 over links that carry
 * network.efficiency), not at the NVLink fit. */
typedef struct coll_model {
    double latency_eager;   /* fixed cost per call of an unmeasured kind, eager */
    double latency_graph;   /* same inside a captured graph */
    double lat_scale[2];    /* [graph]: platform / calibrated collective latency,
                               applied to the fitted overheads */
    double oneshot_max;     /* all-reduce at or below this size: one-shot */
    double eff_default;     /* wire efficiency of an unmeasured kind: 1, the
                               links carry the fabric's efficiency */
    int mesh;               /* the fabric is a full mesh: direct algorithms
                               inside a node */
    int node_size;          /* devices per node: groups spanning nodes run
                               hierarchical all-reduce / all-gather /
                               reduce-scatter (hier.c); 0: flat */
    coll_curve curve[2][COLL_CURVES];   /* [graph][kind]; kind CK_COUNT: point-to-point,
                                           COLL_CUSTOM_AR: the custom all-reduce; at
                                           the smallest group size measured */
    coll_curve wider[2][COLL_CURVES][COLL_MAX_GROUPS - 1]; /* at larger group sizes,
                                                             ascending */
    int nwider[2][COLL_CURVES];
} coll_model;

/* From the platform: fallback latencies, one-shot threshold, fabric
 * efficiency; when the platform names a calibration profile with nccl.csv
 * (eager) and nccl_graph.csv (captured), the curves of both modes are fitted
 * from them.  Table errors name file:line:column. */
int coll_model_init(coll_model *m, const platform *p, cp_err *err);

/* Wire efficiency of `kind` (CK_COUNT: point-to-point) in a mode, for a
 * group of n ranks: the curve of that group size, linear in log(n) between
 * the sizes measured, the nearest one outside them (n <= 0: the smallest). */
double coll_efficiency_at(const coll_model *m, int kind, int n, int graph);
/* Fixed cost (s) of a call of `kind` and `bytes` on n ranks in a mode
 * (interpolated in n as coll_efficiency_at). */
double coll_overhead_at(const coll_model *m, int kind, int n, double bytes, int graph);
/* The same at the smallest group size measured. */
double coll_efficiency(const coll_model *m, int kind, int graph);
double coll_overhead(const coll_model *m, int kind, double bytes, int graph);

/* One collective call as seen by one member. */
typedef struct coll_call {
    plan_coll kind;
    plan_alg alg;           /* ALG_AUTO: choose by size */
    const int *members;     /* global ranks in group order */
    int n;                  /* group size */
    int me;                 /* my index in members */
    double bytes;           /* payload, size convention above */
    int graph;              /* 1: captured graph latency */
    int cross_node;         /* the group spans nodes: NIC rates, ring algorithms */
    int custom;             /* an all-reduce by the engine's custom kernel: its
                               curve (COLL_CUSTOM_AR) when measured and the
                               group is inside one node, else NCCL's */
} coll_call;

/* Run the call on the calling stream (blocks in simulated time): first the
 * fixed overhead, then the algorithm's messages of payload / eff wire bytes.
 * Returns the number of point-to-point messages this member sent, or -1 for
 * a malformed call (no members, me out of range, negative bytes, unknown
 * kind, an algorithm the kind does not have). */
long coll_run(const tr_port *tp, const coll_model *m, const coll_call *c);

/* One ring hop in a group of n ranks that all hop at once: send
 * `send_bytes` to `to` and receive from `from` concurrently (either may be
 * -1 for none), after the point-to-point overhead of that group size
 * (coll_overhead_at); cross_node: the hop crosses nodes (NIC rate, no
 * NVLink fit).  Returns messages sent, -1 for a malformed call. */
long coll_sendrecv_in(const tr_port *tp, const coll_model *m, int n, int to,
                      double send_bytes, int from, int graph, int cross_node);
/* The same at the smallest group size measured. */
long coll_sendrecv(const tr_port *tp, const coll_model *m, int to,
                   double send_bytes, int from, int graph, int cross_node);

/* Algorithm chosen for AUTO on a switch fabric or across nodes (ring,
 * one-shot, pairwise by size); coll_pick: the choice for a call (direct
 * algorithms inside a node of a mesh fabric). */
plan_alg coll_pick_alg(const coll_model *m, plan_coll kind, double bytes, int n);
plan_alg coll_pick(const coll_model *m, const coll_call *c);

/* Closed-form time of a call on a uniform network where every transfer
 * crosses one bottleneck of bandwidth bw (bytes/s, after efficiency) with
 * per-message route latency lat (s): ring all-gather (P-1)*(S/P/bw + lat),
 * broadcast (chain from member 0 in P-1 chunks) (2P-3)*(S/(P-1)/bw + lat),
 * etc.; ALG_DIRECT on a mesh of links of bw each: all-gather,
 * reduce-scatter, all-to-all S/P/bw + lat, all-reduce twice that,
 * broadcast S/bw + lat.  Used by tests; excludes the fixed overhead.  -1 for ALG_AUTO or an
 * invalid kind/algorithm pair. */
double coll_analytic_s(plan_coll kind, plan_alg alg, int n, double bytes,
                       double bw, double lat);

#endif
