/* engine_int: the engine's state, shared by its files (engine.c runs the
 * actors, replay.c replays repeated regions).  Not for use outside
 * sim/engine/. */
#ifndef CP_ENGINE_INT_H
#define CP_ENGINE_INT_H

#include "base/grow.h"

#include <simgrid/forward.h>
#include <stdint.h>
#include "collectives/sg_transport.h"
#include "sim/engine/engine.h"

/* Derived per-program indices, shared by the ranks that run the program.
 * Indices are positions in the program's expanded sequence (repeated
 * regions unrolled, plan.h); v.real[] gives the op behind each. */
typedef struct prog_index {
    plan_vseq v;
    uint32_t *list[ST_COUNT];   /* sequence indices of each stream, in order */
    uint32_t nlist[ST_COUNT];
    uint32_t *pos;              /* [v.n] position of the element in its stream */
    double *issue_off;          /* [v.n] host issue offset from step start (s) */
    uint32_t *need;             /* [steps * ST_COUNT] by a step op's plan_op.step: the
                                   ops of each stream before it */
    uint32_t nnr;               /* elements outside regions (replay only; an element's
                                   region and slot come from the regions' spans,
                                   replay.c region_of) */
    uint64_t *alone;            /* bit i (of word i / 64): element i is a kernel that
                                   nothing can run beside on its host (alone.c,
                                   eng_alone); NULL: none known */
} prog_index;

/* TP collectives a shared rank's helper may be behind by, at most (tpshare.c
 * helper_st; our own bound: a helper lags at most one call). */
#define ENG_TP_QUEUE 8

typedef struct rank_st {
    int rank;
    const plan_prog *pg;
    const prog_index *ix;
    sg_host_t host;
    double speed;               /* host flop/s: exec amount = cost_s * speed */
    /* a stream that must wait parks on its semaphore with the element it
     * waits for in want[]; a completion releases it once that element is
     * ready (engine.h), never before */
    sg_sem_t sem[ST_COUNT];
    uint32_t want[ST_COUNT];
    uint8_t parked[ST_COUNT];
    uint32_t done[ST_COUNT];    /* ops completed per stream */
    int32_t started_step;       /* last step whose step op completed, -1 before */
    int waiters;                /* streams parked */
    uint32_t at[ST_COUNT];      /* op each stream is working on (deadlock report) */
    int finished[ST_COUNT];
    int nfinished;              /* streams with ops that have finished */
    sg_sem_t leave;             /* finished streams wait here for the rank's last */
    /* interference (engine.h) */
    int kernel_kind;            /* interference kind of the running kernel, -1 idle */
    double comm_bytes[ST_COUNT]; /* size of the collective running per stream, 0 idle */
    int comm_n[ST_COUNT];       /* and its group size */
    double fc, fm;              /* slowdowns in force */
    double hog_fc;              /* the compute slowdown the hog realises */
    int hog_busy;               /* a stream is in apply_hog */
    sg_exec_t hog;              /* takes 1 - 1/fc of the host while fc > 1; started
                                   by whichever stream changed fc, so no stream
                                   of the rank exits before the rank's last
                                   (stream_main): SimGrid cancels an exiting
                                   actor's activities and later dereferences
                                   the dead actor when it ends them */
    /* the rank's groups (engine.c rank_group), built on first use */
    int *grp[G_COUNT];          /* member devices in group order, NULL until used */
    int grp_n[G_COUNT], grp_me[G_COUNT];
    uint8_t grp_cross[G_COUNT]; /* the group spans more than one node */
    /* shared TP ranks (eng.fold): when its part of each TP collective ended
     * (s, the last ENG_TP_QUEUE calls) and how many it finished, per stream */
    double tp_end[ST_COUNT][ENG_TP_QUEUE];
    uint32_t tp_done[ST_COUNT];
    int *links;                 /* indices into eng.links */
    int nlinks;
    /* replay (replay.c) */
    double *end_nr;             /* [ix->nnr] when each element outside regions ended (s) */
    double **end_cp;            /* per region copy (replay.c): when its elements ended,
                                   NULL while none has, unused for replayed copies */
    uint32_t skip[ST_COUNT];    /* stream positions below this were replayed */
    double hold[ST_COUNT];      /* no op of the stream starts before this time */
    uint8_t started[ST_COUNT];  /* the stream's op at[] is running */
    uint8_t past;               /* past the pending cut (replay.c) */
} rank_st;

/* An actor: one stream of a rank. */
typedef struct stream_st {
    rank_st *rs;
    int stream;
    sgt_ctx tctx;
} stream_st;

/* A link whose bandwidth interference lowers, with the ranks at its ends. */
typedef struct ilink {
    sg_link_t link;
    double bw;                  /* nominal bandwidth (bytes/s) */
    int owner[2];               /* ranks (-1: none) */
} ilink;

/* Whole-run state (one run at a time per process). */
typedef struct eng_state {
    const plan *p;
    const eng_opts *o;
    eng_result *res;
    rank_st *ranks;
    prog_index *ix;             /* [p->nprogs] */
    sgt_world *tw;
    const interf_model *im;     /* NULL: no interference */
    ilink *links;
    int nlinks;
    /* shared TP ranks (tpshare.c): each simulated rank r stands for the
     * fold ranks of its TP group, on devices r * fold ...; helpers run the
     * other devices' parts of its TP collectives; lay is the plan's layout
     * before folding (group sizes) */
    int fold;                   /* 1: none */
    const plan_layout_cfg *lay;
    struct helper_st *helpers;  /* [nranks * ST_COUNT * (fold - 1)] */
    const plan_op *asym;        /* a TP collective whose parts ended apart */
    /* the progress line (eng_opts.progress): elements passed (run or
     * covered by a replay) of `total`, wall clock (s) at the start and at
     * the last line */
    uint64_t passed, total;
    double wall0, wall_last;
    double precision;           /* SimGrid's surf/precision (s) */
} eng_state;

extern eng_state eng;

/* The device (and whole-plan rank) of simulated rank r (eng.fold). */
static inline int eng_dev(int r)
{
    return r * eng.fold;
}

/* A transfer starts on stream s of ss's rank (engine.c): the interference
 * it causes and suffers; nic_hop: a hop that crosses the NIC. */
void eng_comm_begins(stream_st *ss, int s, const plan_op *o, int nic_hop);

/* A ring hop's peers as devices in *to and *from (-1: none); returns 1
 * when either is on another node (the hop crosses a NIC). */
int eng_hop_peers(rank_st *rs, const plan_op *o, int *to, int *from);

/* Fill ix[g].alone for every program of p (alone.c), its ranks set up and
 * eng.im in force. */
void eng_alone_setup(const plan *p, rank_st *ranks, prog_index *ix);

static inline int eng_alone(const prog_index *ix, uint32_t i)
{
    return ix->alone && (ix->alone[i / 64] >> (i % 64) & 1);
}

/* Whether element i of the rank's sequence may start (its dependencies
 * done, its step started). */
int eng_ready(const rank_st *rs, uint32_t i);

/* ---- unison evaluation (unison.c) ------------------------------------ */

/* Plan p evaluated in unison into res (o->memo set, the platform
 * loaded): 1 when done (replicas: res->replicas_simulated), 0 when p is not
 * eligible (res untouched: simulate it), -1 with err on failure. */
int eng_unison(const plan *p, const eng_opts *o, int replicas, eng_result *res,
                 cp_err *err);

/* ---- shared TP ranks (tpshare.c) ------------------------------------- */

/* The ranks of a TP group that one simulated rank can stand for in plan p
 * (o->share_tp; tpshare.c says when), 0 when none. */
int eng_tp_fold_of(const plan *p, const eng_opts *o);
/* Whether op o of a shared rank is a collective of its TP group. */
int eng_tp_coll(const plan_op *o);
/* Run TP collective o on stream s of a shared rank, its helpers taking the
 * group's other parts; returns the rank's messages. */
long eng_tp_run(stream_st *ss, int s, const plan_op *o);
/* Start the helper actors of p's shared ranks (before simgrid_run), tell
 * stream s of rs's helpers that it has ended, free them (after). */
void eng_tp_helpers_start(const plan *p, rank_st *ranks);
void eng_tp_helpers_end(rank_st *rs, int s);
void eng_tp_helpers_free(int nranks);
/* ---- replay of repeated regions (replay.c) ------------------------------ */

/* Decide whether this run replays (o->replay, regions of the same repeat
 * counts in every program) and set up its state; after the ranks are set
 * up, before simgrid_run.  rp_on() says whether the hooks below apply. */
void rp_setup(void);
void rp_free(void);
int rp_on(void);
/* Element i of rs is starting at t: returns a token (> 0) when it starts
 * before the pending cut completed (an early start), 0 otherwise. */
int rp_started(rank_st *rs, uint32_t i, double t);
/* Element i waited for the host to issue it. */
void rp_issue_bound(const rank_st *rs, uint32_t i);
/* Element i ended at t after sending msgs messages and running execs
 * execs; early and the record's index (event or memory, by kind) as from
 * rp_started and the push. */
void rp_ended(rank_st *rs, uint32_t i, double t, long msgs, int execs, int early, int mem,
              size_t rec);
/* A stream of rs completed an element (mark_done): cut bookkeeping, which
 * may replay copies of a region for every rank. */
void rp_done(rank_st *rs);
/* After simgrid_run: drop records of early starts that a replay replaced. */
void rp_finish(eng_result *res);

#endif
