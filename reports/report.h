/* report: figures and files made from a finished run.  Never re-simulates.
 *
 *   rep_summarize      events -> per-rank busy / overlap times, TTFT per
 *                      request, memory peaks and the OOM verdict
 *   summary.json       schema "cpsim.summary/1" (summary.c)
 *   trace.json         Chrome trace event format, opens in Perfetto (trace.c)
 *   memory.csv         per-rank memory timeline by category (memcsv.c)
 *   the console table  (table.c)
 * Every file is written atomically: a temporary file in the same directory,
 * renamed over the target only when complete (atomic.c).
 */
#ifndef CP_REPORT_H
#define CP_REPORT_H

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include "models/plan.h"
#include "sim/engine/events.h"
#include "base/diag.h"
#include "models/scenario.h"

typedef struct rep_rank {
    int rank;
    double compute_s;              /* time the compute stream was busy */
    double comm_s;                 /* time some communication stream was busy */
    double overlap_s;              /* time both were busy */
    double peak_bytes;             /* maximum of the memory timeline: the
                                      allocator's reserved segments and the
                                      engine's memory (peak_reserved_bytes +
                                      engine_bytes) */
    double peak_tensor_bytes;      /* the most the tensors held at once (weights, KV,
                                      activations, buffers: torch.cuda's
                                      max_memory_allocated) */
    double peak_reserved_bytes;    /* the most the tensors and the allocator's cache
                                      held (max_memory_reserved) */
    double engine_bytes;           /* memory outside tensors (reserved, workspace) */
    double peak_t;                 /* when the tensors first reached their peak */
    double peak_by_cat[MC_COUNT];  /* the categories at that moment */
    uint32_t peak_op;              /* first non-memory op after the peak */
    double peak_by_phase[PH_COUNT];/* the most the tensors and the engine held
                                      while in each layer phase (plan_phase: the
                                      phase of the op whose memory event set it) */
    int peak_phase;                /* the phase of the tensors' peak */
} rep_rank;

/* Compute time by where its price came from (plan_op.cost_table), over
 * every rank's compute events. */
typedef struct rep_costsrc {
    double total_s;                          /* all compute */
    double table_s;                          /* priced from a table */
    double class_s[KC_COUNT];                /* by kernel class */
    double class_src_s[KC_COUNT][CS_COUNT];  /* by class and source */
} rep_costsrc;

typedef struct rep_request {
    int id;
    int64_t prompt_tokens;
    int64_t decode_tokens;
    int64_t cached_tokens; /* the prefix cache hit before its prefill */
    double arrival_s;
    double first_token_s;  /* end of the prefill step (all ranks) */
    double ttft_s;         /* first_token_s - arrival_s */
    double end_s;          /* end of the last step of the request */
    double tpot_s;         /* mean time per decode token, 0 without decode */
    int split;             /* every prefill step ran split over ranks
                              (plan.step_split) */
    int split_steps;       /* how many of its steps ran split */
    int ring;              /* the plan_ring its split ring steps ran
                              (plan.step_ring): PR_NONE without any,
                              PR_COUNT when they differ */
    int64_t audio_frames;  /* its audio's mel frames (0: text only) */
    double encoder_compute_s, encoder_comm_s; /* the audio encoder's kernels and
                              collectives on rank 0, summed (s) */
    double encoder_span_s; /* from its first op's start to its last op's end on
                              rank 0 (s): its part of the TTFT */
} rep_request;

typedef struct rep_summary {
    rep_rank *ranks;
    int nranks;
    rep_request *reqs;
    int nreqs;
    double ttft_s;             /* request 0 */
    double makespan_s;         /* end of the last event */
    double compute_s_max, comm_s_max, overlap_s_max;
    double overlap_fraction;   /* sum overlap / sum comm over ranks (0 if no comm) */
    double peak_bytes_max;     /* max over ranks of peak_bytes */
    double peak_tensor_bytes_max, peak_reserved_bytes_max, engine_bytes_max;
    int peak_rank;
    double capacity_bytes;
    int oom;
    int oom_rank;
    char oom_phase[128];       /* "layer 12 expert_gate_up" */
    char oom_budget[32];       /* the budget exceeded: "capacity" (the device),
                                  "gpu_memory_utilization" (a preallocated KV
                                  pool left no room), "kv_pool" (the requests'
                                  KV does not fit the pool) */
    double oom_excess_bytes;   /* by how much */
    double kv_pool_bytes;      /* preallocated KV pool (smallest over ranks), 0
                                  on demand */
    double kv_need_bytes;      /* the most KV the requests hold at once */
    rep_costsrc cost;          /* where the compute prices came from */
    long events, messages, execs;
    int replicas_simulated;    /* DP replicas simulated (1: copied to the rest) */
    int tp_shared;             /* ranks of a TP group one simulated rank stood
                                  for (0 or 1: every rank simulated) */
    long iters_simulated;      /* copies of repeated regions simulated */
    long iters_replayed;       /* and replayed (sim/engine/replay.c) */
    double replay_near_s;      /* eng_result.replay_near_s (0: none, or not known) */
    double wall_s;             /* simulator wall time (not written to files) */
} rep_summary;

int rep_summarize(const scenario *s, const plan *p, const eng_result *r,
                  rep_summary *out, cp_err *err);
/* From sm->ranks[]: compute_s_max, comm_s_max, overlap_s_max and
 * overlap_fraction (sum overlap / sum comm, ranks in order). */
void rep_rank_totals(rep_summary *sm);
void rep_summary_free(rep_summary *sm);

/* The summary as a JSON object (schema cpsim.summary/1; caller decrefs). */
json_t *rep_summary_json(const rep_summary *sm, const scenario *s);
/* The audio encoder's times of request `request` on rank 0 of the run r of
 * plan p (its "audio." kernels and collectives) into rq. */
void rep_encoder_time(const plan *p, const eng_result *r, int request, rep_request *rq);
/* Write a JSON document atomically, indented, keys in insertion order. */
int rep_write_json(json_t *j, const char *path, cp_err *err);
int rep_write_summary(const rep_summary *sm, const scenario *s, const char *path,
                      cp_err *err);
/* The first process and thread id of trace.json (nodes and rank streams
 * are numbered from it: rank r's stream st is thread
 * REP_TRACE_ID_BASE + r * ST_COUNT + st). */
#define REP_TRACE_ID_BASE 1

/* What trace.json holds (cpsim run --trace, --trace-ranks, --trace-layers):
 * every op (full), one span per rank and step (steps), or no file (none);
 * of the ranks of `ranks` ("0,2,4-7"; NULL: all) and, full, of decoder
 * layers layer_lo..layer_hi (layer_lo < 0: all; the steps' markers stay).
 * auto (cpsim run without --trace): full, unless the full trace of the
 * selected ranks would pass auto_bytes (0: REP_TRACE_AUTO_MB), then steps
 * (rep_trace_choose; the writers take full, steps or none). */
typedef enum { REP_TRACE_FULL, REP_TRACE_STEPS, REP_TRACE_NONE, REP_TRACE_AUTO } rep_trace_level;
typedef struct rep_trace_opts {
    rep_trace_level level;
    const char *ranks;
    int layer_lo, layer_hi;
    double auto_bytes;
} rep_trace_opts;

/* The bound of the default trace, in MB (1e6 bytes).  Why 64: Perfetto's UI
 * and chrome://tracing parse a JSON trace inside the browser tab, the whole
 * file as one string (V8 strings end at 2^29 - 24 characters, ~537 MB) and
 * the objects it makes several times that; 64 MB stays well inside a tab's
 * memory and opens in seconds, and a few runs' folders stay small. */
#define REP_TRACE_AUTO_MB 64
/* Bytes a full trace spends per op span and per memory counter (measured:
 * 269 and 226 on the default workload, 275 and 229 on llama405b-cp-meta at
 * SP16, 128 ranks, 128K tokens; the larger taken). */
#define REP_TRACE_SPAN_BYTES 275.0
#define REP_TRACE_COUNTER_BYTES 230.0

/* The level a trace of o's ranks is written at: o->level, or for auto full
 * or steps by the estimate of the full trace of those ranks (*events: its
 * op spans and memory counters, *bytes; set for every level; a layer window
 * is not counted).  -1 with err: a bad rank list. */
int rep_trace_choose(const plan *p, const eng_result *r, const rep_trace_opts *o,
                     rep_trace_level *level, double *events, double *bytes, cp_err *err);

/* o NULL: the full trace of every rank. */
int rep_write_trace(const scenario *s, const plan *p, const eng_result *r,
                    const rep_trace_opts *o, const char *path, cp_err *err);

/* Pieces of trace.json for writers of their own (the serving run,
 * sim/serve/): the node and rank track names of the ranks sel[] selects
 * (the first piece of traceEvents: *first says whether a comma is due);
 * an op's span with its name, category and arguments, its step `step`;
 * a step's span on the compute track ("step N: what", what NULL: none).
 * Spans begin with ",\n": they follow the metadata. */
void rep_trace_metadata(FILE *f, const scenario *s, int nranks, const unsigned char *sel,
                        int *first);
void rep_trace_op(FILE *f, int dpn, const plan_op *op, int rank, int stream, int32_t layer,
                  int32_t step, double t0, double t1);
void rep_trace_step(FILE *f, int dpn, int rank, int step, const char *what, double t0,
                    double t1);

/* A rank list "0,2,4-7" (ascending or not, ranges inclusive) given to the
 * option `opt`: sel[r] = 1 for every rank listed, which must be < nranks;
 * sel NULL: the syntax only.  Errors name the option. */
int rep_rank_list(const char *opt, const char *s, unsigned char *sel, int nranks, cp_err *err);
/* memory.csv of a run (memcsv.c): share 1, consecutive ranks with the
 * same rows share them (the `ranks` column says which); 0, every rank its
 * own rows. */
int rep_write_memory_csv(const plan *p, const eng_result *r, int share, const char *path,
                         cp_err *err);
/* v as printf("%.*f", decimals, v) writes it (decimals 0..9), into buf
 * (len >= 48; returns the length): integer arithmetic where the result is
 * certain, printf itself near a rounding tie, past 2^53 and for
 * non-finite values (reports/numfmt.c); rep_put_fixed writes it to f. */
int rep_fixed(char *buf, size_t len, double v, int decimals);
void rep_put_fixed(FILE *f, double v, int decimals);

/* memory.csv's header line, and one row: the first rank, t, the bytes of
 * each category, their total and the ranks first..last it stands for. */
void rep_memcsv_header(FILE *f);
void rep_memcsv_row(FILE *f, int first, int last, double t, const double cur[MC_COUNT]);
/* memory.csv's rows given rank by rank (ranks ascending, each rank's rows
 * in time order): consecutive ranks whose rows are the same to the bit
 * are written once, for all of them (share 0: never). */
typedef struct rep_memrows {
    FILE *f;
    int share;
    int first, last;           /* the ranks of the group held */
    double *grp, *cur;         /* the group's rows and the rank's being read */
    size_t ngrp, capg, ncur, capc;
    int rank;                  /* the rank being read; -1 none */
} rep_memrows;
void rep_memrows_begin(rep_memrows *m, FILE *f, int share);
void rep_memrows_add(rep_memrows *m, int rank, double t, const double cur[MC_COUNT]);
void rep_memrows_end(rep_memrows *m);
/* The console table of a run: the requests' figures, a row per rank (ranks
 * in a row whose figures print the same share one row, "0-7 ... (8
 * identical)", unless all_ranks), overlap and the memory verdict. */
void rep_print_table(const rep_summary *sm, const scenario *s, int all_ranks, FILE *out);
/* "; N of M layer iterations replayed" when the replay ran (the tail of
 * the run's and the serving run's "wrote ..." line), nothing otherwise. */
void rep_print_replayed(const rep_summary *sm, FILE *out);

struct quant_desc;
struct quant_report;
/* cpsim memory: the static weights of rank 0 (models/quant.h accounts
 * them) as a table on out, or as JSON (schema cpsim.memory/1).
 * reports/memory_report.c */
void rep_memory_text(const scenario *s, const struct quant_desc *d,
                     const struct quant_report *r, FILE *out);
json_t *rep_memory_json(const scenario *s, const struct quant_desc *d,
                        const struct quant_report *r);

/* The plan as text: op counts by kind and class per program, and the first
 * layer's ops (cpsim plan).  reports/plan_text.c */
void rep_plan_text(const plan *p, FILE *out);

/* A sweep folder's tables from the records of its lines (sorted by index;
 * sim/sweep/sweep.h describes them): best.csv (the best configuration per
 * prompt length that fits), pareto.csv and split.csv (split against copied
 * steps per exchange and shape), written atomically into dir, and the same
 * as text on out (NULL: none).  results.csv is written a row at a time
 * beside the lines (rep_results_csv_*).  reports/sweep_tables.c */
struct plot_points;
struct plot_point;
int rep_sweep_tables(const struct plot_points *s, const char *dir, FILE *out, cp_err *err);
/* results.csv: its header from the parameter names of the records (their
 * union in order), then one row per result line (as results.jsonl holds
 * it, with its objective), in index order.  The names (a JSON object,
 * caller frees) are what the rows take. */
json_t *rep_results_csv_keys(const struct plot_points *s);
void rep_results_csv_header(FILE *f, const json_t *keys);
void rep_results_csv_row(FILE *f, const json_t *keys, json_t *line, const struct plot_point *pt);

/* Rank the points per prompt length (reports/sweep_rank.c): each point that
 * ran and fits gets a ranking: {prompt_tokens, place, of, against_index,
 * margin, uncertainty, tie}; margin: the relative gap to the first (to the
 * second for the first) under the objective; uncertainty: the kernels that
 * differ between the two at their sources' accuracy (errs:
 * cost_source_errors; NULL: unknown, uncertainty and tie null); tie: margin
 * <= uncertainty. */
void rep_points_rank(struct plot_points *s, const json_t *errs);
/* The ranking of a point as results.jsonl holds it; NULL when unranked. */
json_t *rep_point_ranking(const struct plot_point *p);
/* The same on result lines (each line's "ranking" set or removed), from
 * their objectives as they hold them. */
void rep_sweep_rank(json_t *const *lines, size_t nlines, const json_t *errs);

/* ---- a sweep's objective (reports/objective.c) ---- */
enum { REP_GOAL_MIN, REP_GOAL_MAX };
/* 0 when path names a figure a summary can hold (a top-level number,
 * serving.NAME, serving.by_name.CLASS.NAME, requests.N.NAME), else -1 with
 * the reason and the names it takes in why. */
int rep_metric_check(const char *path, char *why, size_t len);
/* The natural goal of a metric: REP_GOAL_MAX for rates and counts of good
 * outcomes (goodput_per_s, throughputs, slo_met, finished, overlap),
 * REP_GOAL_MIN for times and bytes. */
int rep_metric_goal(const char *path);
/* The number at a metric's path in a summary; NAN when absent or null. */
double rep_metric_value(json_t *summary, const char *path);
/* The objective a sweep without one ranks by ({metric, goal, pareto:
 * [{metric, goal} x 2], default: true}): goodput for serving points,
 * else TTFT. */
json_t *rep_objective_default(int serving);
/* The objective the points rank by: the default by their kind with what
 * objective ({metric, goal} and pareto, each part optional; NULL: none)
 * gives in place of its parts. */
json_t *rep_objective_of(int serving, const json_t *objective);
/* A line's "objective": {metric, goal, value (null: the summary lacks it),
 * pareto: [{metric, goal, value} x 2], default: true when the metric is the
 * default's} for the objective obj (rep_objective_of) and its summary. */
json_t *rep_line_objective(const json_t *obj, json_t *summary);
/* The metric paths a record keeps the value of, for the objective the
 * sweep file gives (NULL: none): its metric and pair, else both defaults'. */
void rep_points_paths(struct plot_points *s, const json_t *objective);
/* Each ok point's objective from obj (rep_objective_of) and the values its
 * record kept (s->paths), as rep_line_objective would set it. */
void rep_points_objective(struct plot_points *s, const json_t *obj);
/* Set each ok line's "objective" (rep_line_objective), the default by the
 * lines' kind with objective's parts in place. */
void rep_sweep_objective(json_t *const *lines, size_t nlines, const json_t *objective);
/* The uncertainty (s) of the kernels that differ between two points at
 * their sources' accuracy; -1 when a source's is unknown. */
double rep_pair_uncertainty(const struct plot_points *s, const struct plot_point *a,
                            const struct plot_point *b, const json_t *errs);

/* Walk every rank's memory timeline in time order: `fn` is called once per
 * rank and instant at which the allocation changed, with the bytes held per
 * category after all changes of that instant and its memory event of the
 * highest op (every_event: once per memory event, with it). */
/* Relative gap under which two memory events are one instant (1e-12: a
 * few thousand ulps of the clock, far below the nanosecond printed). */
#define REP_SAME_INSTANT 1e-12
/* Whether memory events at t and at next (>= t) are one instant. */
static inline int rep_same_instant(double t, double next)
{
    return next - t <= REP_SAME_INSTANT * (1.0 + fabs(t));
}
typedef void (*rep_mem_fn)(void *ctx, int rank, double t, const double cur[MC_COUNT],
                           const eng_mem *last);
/* The activations and communication buffers go through a model of the
 * caching allocator (rep_alloc): cur[MC_ALLOC_SLACK] is what it holds
 * reserved beyond them. */
void rep_mem_walk(const eng_result *r, int every_event, rep_mem_fn fn, void *ctx);

/* PyTorch's CUDA caching allocator over one rank's tensors (reports/alloc.c
 * has the rules): reserved bytes (its segments) against allocated ones
 * (its blocks in use, rounded to 512 B). */
typedef struct rep_alloc {
    struct rep_block *b;
    int n, cap;
    int *free_ix, nfree_ix;  /* unused slots of b */
    int *seg_small;          /* per segment: of the small pool */
    int nseg, segcap;
    long clock;
    double reserved, allocated;
    /* the index: free blocks per pool (0 large, 1 small) sorted by size,
     * segment and offset, the best fit a binary search; held blocks in
     * allocation order, a release searching back from the youngest */
    struct rep_free *pool[2];
    int npool[2], cappool[2];
    int *held, nheld, capheld;
} rep_alloc;
void rep_alloc_init(rep_alloc *a);
void rep_alloc_malloc(rep_alloc *a, double bytes);
void rep_alloc_release(rep_alloc *a, double bytes);
void rep_alloc_free(rep_alloc *a);

/* Atomic output: rep_open writes to a temporary sibling of path
 * (PATH.tmp-<pid>-XXXXXX); rep_close renames it over path (ok = 1) or
 * removes it (ok = 0).  A failed write names the file and errno.  A path
 * ending in .gz is written gzip-compressed (the stream compresses). */
typedef struct rep_file {
    FILE *f;
    int gz;
    char tmp[4096];
    char path[4096];
} rep_file;
int rep_open(rep_file *rf, const char *path, cp_err *err);
/* Time spans [t0, t1] (s, or any unit both sides share). */
typedef struct rep_span {
    double t0, t1;
} rep_span;
/* Sort s and merge overlapping spans in place: the union as sorted
 * disjoint spans; returns their count. */
size_t rep_spans_merge(rep_span *s, size_t n);
/* The length of sorted disjoint spans, and of the intersection of two
 * such lists. */
double rep_spans_total(const rep_span *s, size_t n);
double rep_spans_intersect(const rep_span *a, size_t na, const rep_span *b, size_t nb);
/* s as one CSV field: bare, or quoted (quotes doubled) when it holds a comma,
 * a quote or a line break. */
void rep_csv_field(FILE *f, const char *s);
int rep_close(rep_file *rf, int ok, cp_err *err);

/* A group of outputs that appear together (a run's trace, memory and
 * summary): after rep_group_begin, rep_close keeps each finished file
 * under its temporary name; rep_group_end(1) first removes the file the
 * group's last one replaces (the marker that the group is complete), then
 * renames them all into place in order; rep_group_end(0) removes them.
 * Returns 0, or -1 with err (ok = 1) or always -1 (ok = 0). */
void rep_group_begin(void);
int rep_group_end(int ok, cp_err *err);

/* Create the output folder dir and its parents ("--out DIR: ..." on
 * failure, or when dir is not a directory). */
int rep_mkdir_p(const char *dir, cp_err *err);

/* Remove the temporary files open now; async-signal-safe (for a handler
 * of SIGINT / SIGTERM / SIGHUP). */
void rep_tmp_cleanup(void);

/* Before a run simulates into dir: remove the outputs a run writes there
 * (summary.json first, the marker that the files beside it are complete;
 * then the traces, memory.csv, steps.csv, requests.csv), so that a run that
 * cannot finish (a crash, a kill, an internal failure) leaves no other
 * scenario's results that read as its own.  Missing files are fine. */
void rep_clear_outputs(const char *dir);

/* Remove the temporary files in dir left by processes that no longer
 * exist (killed runs and sweeps: PATH.tmp-<pid>-XXXXXX), and such folders
 * (a plots folder being drawn: plots.tmp-<pid>-XXXXXX) with their files. */
void rep_remove_stale(const char *dir);

/* Remove the folder dir and the files in it (a folder of files only, such
 * as a plots folder being drawn); what cannot be removed stays. */
void rep_remove_dir(const char *dir);

#endif
