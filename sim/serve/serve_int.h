/* serve_int: the serving module's inner seam (serve.c schedules,
 * serve_steps.c simulates each distinct step once, serve_report.c writes
 * the outputs).  Times in seconds, memory in bytes. */
#ifndef CP_SERVE_INT_H
#define CP_SERVE_INT_H

#include <stdint.h>

#include "collectives/coll.h"
#include "models/build/build.h"
#include "models/interference.h"
#include "reports/report.h"
#include "sim/engine/engine.h"
#include "sim/serve/serve.h"

/* A rank's figures over one step. */
typedef struct srv_rank {
    double compute_s, comm_s, overlap_s;
    double peak_bytes;       /* the step's memory peak (weights, reserved,
                                workspace, the step's own KV and activations) */
    double peak_by_cat[MC_COUNT];
} srv_rank;

/* A distinct step, simulated once. */
typedef struct srv_step {
    uint64_t shape;          /* the composition without decode contexts
                                (with them under the exact key) */
    double ctx;              /* the decode contexts' sum */
    int split;
    int ring;                /* plan_ring the step ran (PR_NONE: no ring) */
    double dur;              /* start to the last rank's end */
    int64_t padded;          /* the tokens its kernels ran (plan.padded_tokens) */
    int launch;              /* plan_launch */
    int64_t kernels;         /* kernels one rank launched (program 0) */
    int nranks;              /* ranks of the step's plan (one replica, or all
                                in lockstep) */
    srv_rank *rank;
    rep_costsrc cost;
    long events, messages, execs;
    long iters_simulated, iters_replayed; /* region copies (replay.c) */
    /* the first SRV_FULL_STEPS simulated steps (the only ones the first
     * SRV_FULL_STEPS steps of a run can be): the plan and its events, times
     * from the step's start; NULL and 0 for the others */
    plan *p;
    eng_event *ev;
    size_t nev;
} srv_step;

/* The step cache's index: the simulated steps of each shape (srv_step.shape)
 * sorted by their decode contexts' sum, in an open-addressing table on the
 * shape (doubled at half full). */
typedef struct srv_shape {
    uint64_t shape;
    int n, cap;
    double *ctx;             /* ascending; equal sums by step index */
    int *step;               /* index into srv_steps.v */
} srv_shape;

typedef struct srv_index {
    srv_shape *slot;         /* n == 0 and cap == 0: free */
    size_t cap, used;
} srv_index;

/* The step of shape `shape` whose summed contexts are nearest ctx, within
 * reuse * ctx of it (the earliest such step at a tie), or -1: the linear
 * scan's answer over every step in index order, found in O(log n). */
int srv_index_find(const srv_index *ix, uint64_t shape, double ctx, double reuse);
/* Add step `step` (a larger index than every step added before). */
void srv_index_add(srv_index *ix, uint64_t shape, double ctx, int step);
void srv_index_free(srv_index *ix);

typedef struct srv_steps {
    const scenario *s;
    int lockstep;
    double reuse;
    struct cost_model *cost;
    coll_model cm;
    interf_model im;
    eng_opts eo;
    eng_collmemo *memo;      /* collective durations of the steps evaluated in
                                unison (sim/engine/unison.c) */
    scenario one;            /* s with one request, for the step summaries */
    wl_request one_req;
    srv_step *v;
    int n;
    size_t cap;
    srv_index index;         /* v by shape and summed contexts */
    long reused;             /* lookups answered by a step within the bound */
    double wall_s;           /* inside SimGrid */
} srv_steps;

int srv_steps_init(srv_steps *st, const scenario *s, int lockstep, double reuse, cp_err *err);
void srv_steps_free(srv_steps *st);
/* The index of the simulated step for batch bt (simulating it when no
 * step matches), -1 with err on failure.  Indices stay valid. */
int srv_step_get(srv_steps *st, const sc_batch *bt, cp_err *err);

/* A request during and after the run. */
typedef struct srv_req {
    int id, cls, replica, stream;   /* stream: closed-loop client, -1 open loop */
    int64_t prompt, decode, cached;
    int64_t audio;                  /* mel frames of its audio (0: text only) */
    double arrival, admit, first_token, end;
    int64_t prefilled, decoded;
    int state;                      /* SRQ_* */
    double kv;                      /* KV it reserves (bytes, the replica's most
                                       loaded rank) */
    double last_token;
    double *gaps;                   /* inter-token times of its decodes */
    int ngaps;
    double gap_max, gap_max_at;     /* its longest inter-token time and when that
                                       gap began (its previous token) */
    int gap_max_inst;               /* the step (index into srv_run_st.inst) that
                                       ended that gap */
    int split_steps, steps;
    int ring;                       /* as rep_request.ring */
} srv_req;

enum { SRQ_FUTURE, SRQ_WAITING, SRQ_RUNNING, SRQ_DONE };

/* Inter-token gaps within this relative share are one length when the
 * longest is chosen (the earliest wins): replay agrees with simulation to
 * 1e-9 relative (tests/replay.sh), so rounding never picks the stall. */
#define SRV_GAP_TIE 1e-9

/* A step as it ran. */
typedef struct srv_inst {
    int replica, step;              /* step: index into srv_steps.v */
    double t0, t1;
    int ndecode, nprefill;
    int64_t tokens;
    double kv_before;               /* KV the replica held when it began */
} srv_inst;

/* The run, for the reports. */
typedef struct srv_run_st {
    const scenario *s;
    srv_steps steps;
    srv_req *req;
    int nreq;
    size_t rcap;
    srv_inst *inst;
    int ninst;
    size_t icap;
    double gaps;                    /* inter-token times held, all requests */
    FILE *progress;                 /* a line every SRV_PROGRESS_S of wall time (NULL: none) */
    double wall0, wall_last;
    int rpr;                        /* ranks per replica */
    int lockstep;
    double kv_budget;               /* per rank, bytes */
    double resident[MC_COUNT];      /* a rank's memory outside any step, by category */
    double end_s;
} srv_run_st;

/* The KV budget of a replica's rank (bytes): the device (or the
 * preallocated pool's share of it) less the weights, the engine's reserved
 * memory and workspace, and the activation peak of the largest step the
 * workload can run (vLLM's profiling pass); a rank's resident memory by
 * category into resident[] (NULL: not wanted). */
double srv_kv_budget(const scenario *s, double resident[MC_COUNT]);

/* The warning of a run in which no step ran (every arrival after
 * simulation.duration_s); a static buffer. */
const char *srv_idle_warning(const srv_run_st *R);

/* summary.json of the run (serve_report.c). */
json_t *srv_summary(const srv_run_st *R, rep_summary *sm);
/* trace.json under the --trace options o (NULL: every op of the first
 * SRV_FULL_STEPS steps, every rank). */
int srv_write_trace(const srv_run_st *R, const rep_trace_opts *o, const char *path,
                    cp_err *err);
/* steps.csv: one row per step as it ran (step, replica, t0_s, t1_s,
 * decodes, prefills, tokens, kv_bytes held at its start, simulated_as: the
 * index of the simulated step whose time it took). */
int srv_write_steps(const srv_run_st *R, const char *path, cp_err *err);
/* requests.csv: one row per request (id, name, replica, prompt, cached and
 * decode tokens, arrival_s, queue_s, ttft_s, tpot_s, itl_max_s, end_s,
 * finished, slo_met); empty fields for what it did not reach. */
int srv_write_requests(const srv_run_st *R, const char *path, cp_err *err);
int srv_write_memory(const srv_run_st *R, int share, const char *path, cp_err *err);
void srv_print_table(const srv_run_st *R, const rep_summary *sm, FILE *out);

#endif
