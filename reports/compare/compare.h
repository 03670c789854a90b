/* compare: a cpsim run held against a real profiler trace of the engine it
 * models (cpsim compare RUN_DIR PROFILE.json, README "Holding cpsim against
 * a profiler trace").
 *
 * The measured side is a Chrome-format trace of torch.profiler (Kineto):
 * its device events (cat "kernel", "gpu_memcpy", "gpu_memset"; ts and dur
 * in microseconds, args.stream), and its record_function ranges
 * (gpu_user_annotation on the device timeline, or user_annotation on the
 * host, tied to kernels through args.correlation of the launching
 * cuda_runtime or cuda_driver call).  A range named "layer.N" puts the kernels inside it
 * in decoder layer N, "step.NAME" in a step, and a range named as a cpsim
 * op ("qkv_proj", "attention", ... as trace.json names them) gives its
 * kernels that op's class: the exact path.  Kernels in no op range are
 * classed by their names (cmp_class_of_kernel, a documented table).
 *
 * The simulated side is the run's trace.json (or trace.json.gz), every op
 * of one rank, its class from the op's category and its kernel count from
 * args.kernels.
 *
 * Both are reduced to the same classes: per class the kernel count and the
 * summed device time, over the whole trace ("step") and, when the profile
 * marks layers, per decoder layer on average ("layer"); the busy time,
 * the span from the first kernel's start to the last one's end, the idle
 * time between (host launch gaps), the communication time, its part under
 * compute (overlap) and the rest (exposed). */
#ifndef CP_COMPARE_H
#define CP_COMPARE_H

#include <stddef.h>
#include <stdio.h>

#include "base/diag.h"

/* The classes both sides are reduced to.  Communication classes come last,
 * from CMP_ALL_REDUCE on. */
typedef enum cmp_class {
    CMP_GEMM,           /* dense GEMMs: projections, router, LM head */
    CMP_MOE_GEMM,       /* routed experts' grouped GEMMs (+ their prepare kernel) */
    CMP_ATTENTION,      /* attention kernels (+ split-KV combine), indexer */
    CMP_NORM,           /* RMSNorm / LayerNorm */
    CMP_ROUTING,        /* softmax / top-k / sort / scan / scatter of the router,
                           the permute and the weighted sum; sampling's argmax */
    CMP_ELEMENTWISE,    /* copies, adds, RoPE, activation, KV writes, gathers,
                           fills, memcpy / memset */
    CMP_ALL_REDUCE,
    CMP_ALL_GATHER,
    CMP_REDUCE_SCATTER,
    CMP_SEND_RECV,      /* ring hops and all-to-all: NCCL runs both as SendRecv */
    CMP_BROADCAST,
    CMP_NCLASSES
} cmp_class;

#define CMP_FIRST_COMM CMP_ALL_REDUCE
#define CMP_UNMATCHED (-1)

/* The class's name as compare.csv writes it ("gemm", "moe_gemm", ...). */
const char *cmp_class_name(int c);
/* A kernel's class from its name (Kineto's, mangled or not) by the first
 * rule of the table in classes.c that matches, CMP_UNMATCHED when none. */
int cmp_class_of_kernel(const char *name);
/* An op's class from its category in cpsim's trace.json (a kernel class
 * of models/plan.h, a collective's name, "hop"); CMP_UNMATCHED for "step"
 * and anything else. */
int cmp_class_of_category(const char *cat);

/* One device event of a profile, in microseconds from the trace's first
 * device event. */
typedef struct cmp_kernel {
    double t0, dur;
    int stream;
    int layer;                /* from a "layer.N" range; -1: none */
    int cls;                  /* cmp_class, CMP_UNMATCHED */
    int by_mark;              /* 1: classed by an op range, 0: by its name */
    int name;                 /* index into cmp_trace.names */
} cmp_kernel;

/* What a run's op says of itself in trace.json (its args): where it was
 * priced and its shape; 0 where the op has none. */
typedef struct cmp_opinfo {
    char src[48];             /* cost_src: "table:gemm_graph.csv", "roofline:gemm", ... */
    long long m, k, n;        /* GEMMs */
    long long q_len, kv_len, heads, kv_heads, head_dim;   /* attention */
    int causal;
} cmp_opinfo;

/* A measured trace or a simulated rank, reduced. */
typedef struct cmp_trace {
    cmp_kernel *k;
    cmp_opinfo *info;         /* a run's ops: one per k; a profile: NULL */
    size_t n;
    char **names;             /* distinct kernel (or op) names */
    size_t nnames;
    int layers;               /* distinct layers marked (0: the trace marks none) */
    int nsteps;               /* "step.*" ranges (profile) or steps (run) */
    int marked_ops;           /* kernels classed by an op range */
    int device, ndevices;     /* a profile: the device read, and how many ran kernels */
} cmp_trace;

void cmp_trace_free(cmp_trace *t);

/* The device events of a Kineto trace, plain or gzip.  The run's op names
 * (ops[i], of class opcls[i]; nops 0: none) are the ranges that class
 * their kernels.  One device's events are read: `device`, or with device
 * < 0 the lowest that ran a kernel (a trace of one process driving several
 * GPUs holds them all).  Errors: the file is missing, not JSON (line and
 * column), has no device events, or none on `device`. */
int cmp_read_profile(const char *path, const char *const *ops, const int *opcls, size_t nops,
                     int device, cmp_trace *t, cp_err *err);
/* The ops of `rank` in a run folder's trace.json (or trace.json.gz), one
 * cmp_kernel per op with the op's kernel count kept in *kernels (a
 * parallel array, caller frees).  Errors: no trace, a trace without ops
 * (run with --trace steps or none: the message says --trace full), no
 * such rank, no op in that step (step >= 0; -1: every step). */
int cmp_read_run(const char *dir, int rank, int step, cmp_trace *t, int **kernels,
                 cp_err *err);

/* One side's figures, microseconds. */
typedef struct cmp_side {
    long long count[CMP_NCLASSES];
    double us[CMP_NCLASSES];
    double layer_us[CMP_NCLASSES];   /* per marked layer, on average (layers > 0) */
    double unmatched_us;
    long long unmatched;
    double busy_us, span_us, idle_us;
    double comm_us, overlap_us, exposed_us;
    int layers;
} cmp_side;

/* Figures of t (kernels: per event the kernel count, NULL: one each). */
void cmp_reduce(const cmp_trace *t, const int *kernels, cmp_side *s);

/* The unmatched kernels of t by name, longest total first: up to max
 * entries into idx (indices into t->names) and us; returns how many. */
size_t cmp_unmatched(const cmp_trace *t, size_t *idx, double *us, long long *count, size_t max);

/* cpsim compare --emit-profile DIR (emit.c): the calibration profile of
 * the run's platform (summary.json scenario.calibration) copied into DIR,
 * with the GEMMs and FA2 prefill attention of the run (sim) as rows of
 * gemm_graph.csv, gemm_graph_decode.csv and attention.csv, timed by the
 * profile's kernels (meas, read from the file `profile`); a line on say
 * (NULL: none) counts the rows and the ops left to the base's rows. */
int cmp_emit_profile(const cmp_trace *meas, const cmp_trace *sim, const char *run_dir,
                     const char *profile, const char *dir, FILE *say, cp_err *err);

typedef struct cmp_opts {
    int rank;                  /* the run's rank to compare (0) */
    int step;                  /* the run's step to compare; -1: every step */
    int device;                /* the profile's device; -1: its lowest */
    const char *out;           /* where compare.csv (and plots/) go; NULL: the run folder */
    int plots;                 /* draw the paired bars (gnuplot) */
    int quiet;
    const char *emit;          /* --emit-profile DIR; NULL: none */
} cmp_opts;

/* cpsim compare: read both, print the table to out (unless quiet), write
 * compare.csv (and, with plots, plots/compare.png); with o->emit, the
 * calibration profile of cmp_emit_profile. */
int cmp_main(const char *run_dir, const char *profile, const cmp_opts *o, FILE *out,
             cp_err *err);

#endif
