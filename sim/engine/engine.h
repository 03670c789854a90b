/* engine: runs a priced plan on SimGrid and records what happened.
 *
 * Each rank gets one actor per stream that has ops (compute, comm, ...), all
 * on the rank's host.  A stream runs its ops in program order; before an op
 * it waits
 *   - for the host to have issued it: the host thread of the rank issues ops
 *     in program order from the start of the step, each costing launch_s, so
 *     op i is issued at step_start + sum(launch_s of the step's ops <= i);
 *   - for its dependencies on other streams (like CUDA events);
 *   - for a step op: for every stream of the rank to drain and for the
 *     clock to reach the request's arrival time.
 * Compute ops run as SimGrid execs of cost_s on the rank's host; collectives
 * and hops run the algorithms of collectives/ over SimGrid mailboxes; memory
 * ops are recorded with the current time.
 *
 * Interference (models/interference.h): while a rank computes and
 * communicates at the same time, its compute runs f_c times slower (a
 * bounded exec takes 1 - 1/f_c of its host) and its links carry f_m times
 * less (their bandwidth is lowered; a link between two ranks takes the
 * larger slowdown of its ends).  The factors follow the kind of the running
 * kernel and the size of the running collective, and change whenever
 * either stream starts or ends an op.
 *
 * A run in which some stream does not finish its program (a deadlock) is an
 * internal failure, reported with the blocked ops.
 */
#ifndef CP_ENGINE_H
#define CP_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "collectives/coll.h"
#include "sim/engine/events.h"
#include "models/interference.h"
#include "models/plan.h"
#include "models/scenario.h"
#include "platforms/platform.h"
#include "base/diag.h"

/* Collective durations measured once per shape, for plans evaluated in
 * unison (sim/engine/unison.c): one per sequence of runs on one
 * platform and settings. */
typedef struct eng_collmemo eng_collmemo;
eng_collmemo *eng_collmemo_new(void);
void eng_collmemo_free(eng_collmemo *m);

typedef struct eng_opts {
    const platform *plat;
    const coll_model *cm;
    int graph;          /* 1: captured-graph collective overheads (ops marked
                           eager keep the eager ones) */
    int l07;            /* 1: host/model ptask_L07 instead of CM02 */
    const interf_model *im; /* compute/communication interference, NULL: none
                               (needs CM02: ignored under ptask_L07) */
    int share_replicas; /* 1: simulate one DP replica when the replicas are
                           independent and copy its figures (see eng_run) */
    int share_tp;       /* 1: simulate one rank of each TP group when its ranks
                           run as one and copy its figures (see eng_run) */
    int replay;         /* 1: replay copies of repeated regions entered in the
                           state of an earlier copy (see eng_run) */
    double replay_tol_s; /* cuts whose early starts differ by up to this (s)
                            still replay: an approximation (replay.c), 0: exact
                            to rounding */
    int exec_each;      /* 1: every kernel an exec, never a timed wait (for
                           the check that the wait changes nothing, alone.c) */
    int sleep_each;     /* 1: a ring hop's host-issue wait its own SimGrid
                           sleep, never deferred to its overhead's (for the
                           check that deferring changes nothing) */
    int reverse_actors; /* 1: start the actors last rank first, so that
                           same-instant steps come in another order (for
                           the check that the results do not depend on it) */
    eng_collmemo *memo; /* non-NULL: a plan whose ranks run one program with
                           no two streams of a rank busy at once is
                           evaluated in unison from its collectives'
                           measured durations instead of simulated (the
                           same times to rounding, unison.c; its records
                           are in another order of same-instant ends, so
                           not for runs that write a trace) */
    FILE *progress;     /* a line "cpsim: simulating: ..." here once the run
                           has taken progress_first_s of wall time, then every
                           progress_every_s (NULL: none; never into outputs) */
    double progress_first_s, progress_every_s;
} eng_opts;

/* A run's first progress line after 2 s of wall time (shorter runs print
 * none), then one every 10 s (as serving, sim/serve/serve.c SRV_PROGRESS_S). */
#define ENG_PROGRESS_FIRST_S 2.0
#define ENG_PROGRESS_EVERY_S 10.0


/* The options a scenario's simulation runs under (engine.graph,
 * simulation.network_model, share_replicas, share_tp, replay, replay_tolerance_s; no
 * progress line, its intervals ENG_PROGRESS_FIRST_S and _EVERY_S),
 * with its collective and interference models: one place for the driver's
 * runs and serving's steps. */
eng_opts eng_opts_of(const scenario *s, const coll_model *cm, const interf_model *im);

/* Initialise SimGrid once per process; consumes --cfg= and --log= options
 * from argv.  Quiet (warnings only) unless the user passed --log=. */
void eng_init(int *argc, char **argv);

/* Run the plan.  The plan must be priced (cost_price_plan).  A process may
 * run several plans, one after another, all on the platform of its first
 * run (SimGrid holds one platform per process): each later run continues
 * the clock where the previous one ended (res->t0), its events and step
 * times are on that clock, its arrival times count from 0 of the process.
 * The serving scheduler (sim/serve/) runs one plan per distinct step.
 *
 * With o->share_replicas, DP replicas that cannot affect each other (the
 * same program, no group wider than a replica, node-aligned on a generated
 * platform, whose layout gives such blocks routes on links of their own:
 * plat_first_devices in platform.h) are simulated once and the other
 * replicas read the first one's records, shifted in rank (events.h;
 * res->replicas_simulated says which way it went).  Either way each rank's
 * events read in the order they happened and its memory events by time
 * and op (eng_rank_events, eng_rank_mems), so the outputs are the same
 * bytes.  SimGrid holds only the nodes of the ranks simulated (the first
 * replica's, or the plan's: plat_first_devices); a later run of the
 * process that needs more of them is an internal failure.
 *
 * With o->share_tp, the ranks of a TP group that cannot tell each other
 * apart (the same program, the group filling a node of a generated
 * platform, no group across groups but SP and an EP group equal to the TP
 * group: tpshare.c) are simulated as one: one rank with every op, the
 * group's other devices as helpers that run only their parts of its TP
 * collectives; the others read its records, shifted in rank
 * (res->tp_shared says how many each stood for).  A TP collective whose
 * parts end apart is an internal failure.
 *
 * With o->replay, a copy of a repeated region (plan.h) entered at a clean
 * cut (every op before it ended, none after it started) replays the
 * events of an earlier copy that ran from a clean cut to a clean cut,
 * shifted in time, instead of being simulated (replay.c says when exactly;
 * res->iters_replayed counts them): its records are a span of the earlier
 * copy's (events.h), not copies.  The times agree with a simulated run
 * to rounding (a few ulps of the clock).
 *
 * With o->memo, a plan whose ranks all run one program is first evaluated
 * in unison (unison.c: no actors, one rank's sequence, each collective's
 * duration measured once per shape by a SimGrid run of it alone); where two
 * of a rank's streams would be busy at once, or a hop or an asymmetric
 * collective appears, it is simulated as above (res->unison says which). */
int eng_run(const plan *p, const eng_opts *o, eng_result *res, cp_err *err);

#endif
