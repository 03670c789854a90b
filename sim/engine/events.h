/* events: what a simulation recorded, the seam between the engine (sim/)
 * and the reports (reports/): every op a rank's stream ran with its
 * simulated start and end, every memory event with its time, and the step
 * boundaries.  Twin of models/plan.h, which is the seam on the other side
 * of the engine: an event names its op by its index in the rank's program.
 * Times are seconds of simulated time.
 *
 * Records live in blocks; each rank's records are a sequence of spans of
 * blocks.  A simulated rank owns a block of the records it simulated; a
 * replayed copy of a repeated region (sim/engine/replay.c) is a span of
 * the records of the copy it replays, shifted in time and layer, and a
 * copied DP replica a span of the first replica's, shifted in rank.  So a
 * run of 1,024 ranks x 126 layers keeps what it simulated, not every
 * record.  Readers ask for one rank's records at a time (eng_rank_events,
 * eng_rank_mems), which applies the shifts. */
#ifndef CP_EVENTS_H
#define CP_EVENTS_H

#include <stddef.h>
#include <stdint.h>

/* (fields widest first: 32 bytes, not 40; a run keeps millions) */
typedef struct eng_event {
    double t0, t1;     /* simulated start and end (s) */
    int32_t rank;
    uint32_t op;       /* index in the rank's program */
    int32_t layer;     /* effective layer (repeated regions unrolled) */
    uint8_t stream;
} eng_event;

typedef struct eng_mem {
    double t;          /* simulated time (s) */
    double delta;      /* bytes, + allocated / - freed */
    int32_t rank;
    uint32_t op;
    uint32_t seq;      /* position in the program's expanded sequence (plan.h
                          plan_vseq): program order, the same folded or not */
    int32_t layer;     /* effective layer of the memory op */
    uint8_t cat;       /* plan_memcat */
} eng_mem;

/* An array of records: a rank's own, or a shared one (a replay's
 * reference copy). */
typedef struct eng_block {
    eng_event *ev;
    size_t nev, cap;
    eng_mem *mem;
    size_t nmem, mcap;
} eng_block;

/* n records of block `block` from index lo, each read with dt added to
 * its times, dlayer to its layer, drank to its rank and dseq to a memory
 * record's seq. */
typedef struct eng_span {
    double dt;         /* s */
    uint32_t block;
    uint32_t lo, n;
    int32_t dlayer, drank;
    int32_t dseq;
} eng_span;

/* One rank's records in the order they happened: spans of events and of
 * memory events. */
typedef struct eng_seq {
    eng_span *es, *ms;
    size_t nes, ces, nms, cms;
} eng_seq;

typedef struct eng_result {
    eng_block *blk;      /* [nblk]: [0, nown) the simulated ranks' own, then shared */
    uint32_t nblk, cblk, nown;
    eng_seq *seq;        /* [nranks] */
    size_t nev, nmem;    /* records in all ranks' sequences */
    int nranks;
    double t0;           /* the clock when the run began (0 for a process's
                            first run; later runs continue its clock) */
    double end_s;        /* last event end */
    double *step_start;  /* [nranks * nsteps]: when each rank started each step */
    double *step_end;    /* [nranks * nsteps]: when each rank finished each step */
    int nsteps;
    int replicas_simulated; /* DP replicas simulated (1: the first one, its
                               figures copied to the others, engine.h) */
    int tp_shared;       /* ranks of a TP group each simulated rank stood for
                            (engine.h eng_run; 0 or 1: every rank simulated) */
    int iters_simulated; /* copies of repeated regions simulated (plan.h) */
    int iters_replayed;  /* and replayed (engine.h) */
    double replay_near_s; /* the closest two cuts came without replaying: their
                             early starts as the same ops at most this far
                             apart (s; 0: none came close) */
    long messages;       /* simulated point-to-point messages (copies counted) */
    long execs;          /* simulated compute activities */
    long kernels_timed;  /* kernels run as timed waits, alone on their host
                            (alone.c), of execs */
    long waits_deferred; /* ring hops whose host-issue wait and overhead
                            took one SimGrid sleep (sg_transport.h sgt_defer) */
    double wall_s;       /* wall-clock seconds inside simgrid_run() */
    int unison;          /* 1: evaluated in unison, not simulated (engine.h
                            eng_opts.memo) */
} eng_result;

/* The order of memory events every report walks them in: by rank, time and
 * op (eng_rank_mems hands them so; a qsort comparator). */
static inline int eng_mem_cmp(const void *a, const void *b)
{
    const eng_mem *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank - y->rank;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* ---- writing (the engine; tests build results by hand with these) ------ */

/* An empty result of nranks ranks, each owning an empty block. */
void eng_result_init(eng_result *r, int nranks);
/* Append a record to the own block of its rank and to its sequence. */
void eng_add_event(eng_result *r, const eng_event *e);
void eng_add_mem(eng_result *r, const eng_mem *m);
/* A new shared block (its index); records go in with eng_block_event and
 * eng_block_mem, into sequences only through spans. */
uint32_t eng_new_block(eng_result *r);
void eng_block_event(eng_result *r, uint32_t b, const eng_event *e);
void eng_block_mem(eng_result *r, uint32_t b, const eng_mem *m);
/* Append a span to rank's sequence of events (mem 0) or memory events. */
void eng_add_span(eng_result *r, int rank, int mem, eng_span s);
/* Cut rank's own block back to nev events and nmem memory events; the
 * records cut must be the tail of its sequence. */
void eng_cut_own(eng_result *r, int rank, size_t nev, size_t nmem);
/* Widen a result of rpr ranks to nranks: rank i + d * rpr reads rank i's
 * spans, its ranks shifted by d * rpr (nranks a multiple of rpr). */
void eng_replicate(eng_result *r, int nranks);
/* Widen a result of n ranks to nranks = n * fold: rank q reads rank
 * q / fold's spans, its ranks shifted by q - q / fold (the ranks of a TP
 * group simulated as one, engine.h). */
void eng_widen(eng_result *r, int nranks, int fold);

/* ---- reading ----------------------------------------------------------- */

/* rank's events in the order they happened, into *buf (grown as needed,
 * *cap long): returns how many. */
size_t eng_rank_events(const eng_result *r, int rank, eng_event **buf, size_t *cap);
/* rank's memory events by time and op (eng_mem_cmp; same-time ones in the
 * order they happened), into *buf: returns how many. */
size_t eng_rank_mems(const eng_result *r, int rank, eng_mem **buf, size_t *cap);
/* Whether rank b reads the very records rank a does (the same spans of
 * the same blocks, ranks shifted by b - a: a copied replica's, or a rank
 * of a plan evaluated in unison), events (mem 0) or memory events: then
 * whatever is derived from a's records but the rank is b's too.  0 says
 * nothing (their records may still be equal). */
int eng_rank_same(const eng_result *r, int a, int b, int mem);
/* Every event, in rank order (a new array the caller frees; *n of them). */
eng_event *eng_all_events(const eng_result *r, size_t *n);

/* Free what a simulation recorded. */
void eng_result_free(eng_result *res);

#endif
