/* events: what a simulation recorded, the seam between the engine (sim/)
 * and the reports (reports/): every op a rank's stream ran with its
 * simulated start and end, every memory event with its time, and the step
 * boundaries.  Twin of models/plan.h, which is the seam on the other side
 * of the engine: an event names its op by its index in the rank's program.
 * Times are seconds of simulated time. */
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
    int32_t layer;     /* effective layer of the memory op */
    uint8_t cat;       /* plan_memcat */
} eng_mem;

typedef struct eng_result {
    eng_event *ev;
    size_t nev, cap;
    eng_mem *mem;
    size_t nmem, mcap;
    int nranks;
    double t0;           /* the clock when the run began (0 for a process's
                            first run; later runs continue its clock) */
    double end_s;        /* last event end */
    double *step_start;  /* [nranks * nsteps]: when each rank started each step */
    double *step_end;    /* [nranks * nsteps]: when each rank finished each step */
    int nsteps;
    int replicas_simulated; /* DP replicas simulated (1: the first one, its
                               figures copied to the others, engine.h) */
    int iters_simulated; /* copies of repeated regions simulated (plan.h) */
    int iters_replayed;  /* and replayed (engine.h) */
    long messages;       /* simulated point-to-point messages (copies counted) */
    long execs;          /* simulated compute activities */
    double wall_s;       /* wall-clock seconds inside simgrid_run() */
} eng_result;

/* The order of memory events every report walks them in: by rank, time and
 * op (eng_run hands them sorted so; a qsort comparator). */
static inline int eng_mem_cmp(const void *a, const void *b)
{
    const eng_mem *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank - y->rank;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->op > y->op) - (x->op < y->op);
}

/* Free what a simulation recorded. */
void eng_result_free(eng_result *res);

#endif
