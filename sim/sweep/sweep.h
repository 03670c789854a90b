/* sweep: many scenarios from one base workload and a grid of keys.
 *
 * A sweep file (YAML, README "Sweeps"):
 *
 *   name: thinker-h100            # optional; default: the file's stem
 *   base: thinker-h100.yaml       # a workload, relative to this file
 *   set:                          # optional fixed assignments (like --set)
 *     engine.graph: captured
 *   grid:                         # dotted workload keys -> values to try
 *     parallel.tp: [1, 2, 4, 8]
 *     requests.0.prompt_tokens: [4096, 16384]
 *   where:                        # conditions that must all hold (sweep_expr.h)
 *     - parallel.tp * parallel.sp == 8
 *   options: {jobs: 2, timeout_s: 600, plots: false}
 *   objective: {metric: serving.by_name.short.tpot_p99_s, goal: min}
 *   pareto: [serving.by_name.long.ttft_p99_s, serving.by_name.short.tpot_p99_s]
 *
 * The grid expands to the Cartesian product of its axes in file order (the
 * last axis varies fastest); the points whose conditions hold are numbered
 * 0, 1, ... in that order.  A point's identity (`id`) is FNV-1a 64 of its
 * parameters written "key=value\n" in axis order; a point's scenario hash is
 * FNV-1a 64 of its fully resolved scenario (sweep_scenario_hash).
 *
 * Every simulation runs in a child process (sim/driver/driver.h); points whose
 * simulations are the same (sweep_sim_key) share one.  A point's outcome is
 * one JSON line appended to DIR/results.jsonl with a single write():
 *
 *   {"index": 12, "id": "9f2c...", "params": {"parallel.tp": 8, ...},
 *    "scenario_hash": "41d0..." | null, "status": "ok" | "failed",
 *    "summary": {...}            (ok: summary.json without its ranks[], plus
 *                                 "rank_peak_bytes": [...])
 *    "error": "...", "exit": 2   (failed: the reason and the exit code),
 *    "ranking": {...}            (added when the sweep concludes, to the lines
 *                                 that ran and fit: rep_sweep_rank) }
 *
 * DIR/sweep.json describes the sweep (schema cpsim.sweep/1: name, file,
 * keys, total points, shard, and `spec_hash`, FNV-1a 64 of the base file's
 * bytes, the fixed assignments and every point id).  --resume reads
 * results.jsonl, drops a torn last line, and runs only the points whose id
 * is absent; it refuses a DIR whose spec_hash differs.
 */
#ifndef CP_SWEEP_H
#define CP_SWEEP_H

#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "models/plan.h"
#include "reports/plot.h"
#include "sim/sweep/sweep_expr.h"
#include "base/diag.h"
#include "workloads/workload.h"

#define SWEEP_FNV_INIT 0xcbf29ce484222325ULL

typedef struct sweep_axis {
    char *key;              /* dotted workload key */
    char **vals;            /* each value as --set text (a YAML flow node) */
    int nvals;
} sweep_axis;

typedef struct sweep_spec {
    char path[4096];        /* the sweep file */
    char name[128];
    char base[4096];        /* base workload, resolved against the file's folder */
    char **sets;            /* `set:` as "key=value", applied before the grid */
    int nsets;
    sweep_axis *axes;
    int naxes;
    sweep_expr **where;
    int nwhere;
    int jobs;               /* options.jobs; 0: not given */
    double timeout_s;       /* options.timeout_s per point; 0: none */
    int plots;              /* options.plots */
    /* objective: {metric, goal} and pareto: [metric, metric] as
     * {metric, goal, pareto: [{metric, goal} x 2]} (reports/objective.c);
     * NULL when the file gives neither (the default by the points' kind) */
    json_t *objective;
} sweep_spec;

typedef struct sweep_point {
    int index;              /* position among the points that pass `where` */
    char id[17];            /* hex FNV-1a 64 of the parameters */
    int *val;               /* value index per axis (owned by the point list) */
} sweep_point;

typedef struct sweep_points {
    sweep_point *pt;
    int n;
    int candidates;         /* grid size before `where` */
    int *vals;              /* storage of every pt[i].val */
    uint64_t spec_hash;
} sweep_points;

/* Read a sweep file.  Errors name file:line:col (CP_EXIT_INPUT). */
int sweep_load(const char *path, sweep_spec *sp, cp_err *err);
void sweep_free(sweep_spec *sp);

/* Expand the grid and keep the points whose conditions hold.  A condition
 * naming a dotted key outside the grid reads it from the point's workload:
 * as written after its assignments, else its resolved value as `cpsim
 * validate` prints it under `resolved:` (model.heads, platform.devices,
 * parallel.ep...), else, when the point does not load, the base workload's
 * resolved value.  A list value reads as its flow text ("[o_proj]"). */
int sweep_expand(const sweep_spec *sp, sweep_points *out, cp_err *err);
void sweep_points_free(sweep_points *p);

/* The point's assignments: the fixed ones then one per axis
 * ("key=value"); free with sweep_sets_free. */
char **sweep_point_sets(const sweep_spec *sp, const sweep_point *pt, int *n);
void sweep_sets_free(char **sets, int n);

/* The point's parameters as a JSON object {key: value} in axis order, each
 * value typed as YAML reads it (integer, real, boolean, string, list). */
json_t *sweep_point_params(const sweep_spec *sp, const sweep_point *pt);

/* FNV-1a 64 (start from SWEEP_FNV_INIT). */
uint64_t sweep_fnv1a64(uint64_t h, const void *data, size_t len);
void sweep_hex(uint64_t h, char out[17]);

/* Hash of what a scenario simulates: its resolved dump (wl_dump) without
 * file paths, the platform dump (plat_dump) without comments, and the bytes
 * of the model config (and of a raw XML platform), so that the same scenario
 * hashes alike wherever its files lie. */
int sweep_scenario_hash(const scenario *s, uint64_t *out, cp_err *err);
/* The hashes a sweep keys a point by, from one resolved dump: the whole
 * scenario (sweep_scenario_hash), the scenario with parallel.min_tokens
 * left out (the plans are keyed by it and the min_tokens comparisons the
 * build made: scenario.h sc_split_probe), and with the whole `parallel`
 * section left out (sweep_plan_key's scenario part). */
typedef struct sweep_hashes {
    uint64_t whole, sans_min, sans_parallel;
} sweep_hashes;
int sweep_scenario_hashes(const scenario *s, sweep_hashes *out, cp_err *err);
/* sweep_fnv1a64 from state h over the bytes of the file at path (its
 * content, not where it lies; a file that cannot be opened: over the path),
 * the file read once per process while its size, modification time and
 * inode stay. */
uint64_t sweep_file_hash(uint64_t h, const char *path);
/* Files this process has read for sweep_file_hash (a test hook). */
long sweep_file_reads(void);

/* What a point simulates: its plan as build_plan makes it (every field of
 * every op, the dependencies and regions), and the resolved workload and
 * platform but the resolved `parallel:` section, whose effect is the plan.  Points with equal
 * keys run the same simulation: the runner simulates one and gives the
 * others its figures under their own scenario (sim/cli/cli_sweep.c). */
int sweep_sim_key(const scenario *s, const plan *p, uint64_t *out, cp_err *err);
/* The same key from the scenario's hashes taken already. */
uint64_t sweep_plan_key(const scenario *s, const sweep_hashes *hs, const plan *p);

/* --shard I/N: 0 <= I < N. */
int sweep_parse_shard(const char *text, int *i, int *n, cp_err *err);
/* Whether point `index` belongs to shard i of n (round robin, so that the
 * costly long prompts spread over the shards). */
int sweep_in_shard(int index, int i, int n);

/* ---- running (sweep_exec.c) ---------------------------------------------------- */

/* Progress on stderr: a bar on a terminal, else a line every 10 s. */
typedef struct sweep_progress {
    int total;          /* points of this shard */
    int done;           /* finished, before and during this run */
    int resumed;        /* finished before this run */
    int failed;         /* failed, before and during this run */
    int children;       /* simulations run in this run (shared ones once) */
    double t0, last;    /* sweep_now() at the start, at the last display */
    int tty, quiet;
    const char *name;
} sweep_progress;

void sweep_progress_show(sweep_progress *p, int final);

/* Monotonic seconds. */
double sweep_now(void);

typedef struct sweep_exec_opts {
    int jobs;           /* children at a time */
    double timeout_s;   /* per child, 0: none */
    int share;          /* points with equal sweep_sim_key share one simulation */
    int fd;             /* results.jsonl, open O_APPEND */
    sweep_progress *pg;
} sweep_exec_opts;

/* Run the points, each outcome appended to o->fd as it arrives: a point
 * whose workload does not load or whose plan cannot be built is recorded
 * without a child; the others run in child processes, up to o->jobs at a
 * time.  0 when all ran; 1 when *stop became non-zero (running children are
 * killed, they and the points sharing them go unrecorded); -1 with err. */
int sweep_exec(const sweep_spec *sp, const sweep_point *const *pending_pts, int npending,
               const sweep_exec_opts *o, const volatile sig_atomic_t *stop, cp_err *err);

/* ---- results (sweep_results.c) --------------------------------------------- */

typedef struct sweep_lines {
    json_t **line;          /* parsed result lines */
    size_t n, cap;
} sweep_lines;

/* Read DIR's results.jsonl (absent: no lines).  A last line without its
 * newline (a write cut by a kill) is dropped, and with repair the file is
 * truncated before it.  Other malformed lines are errors naming the line. */
int sweep_read_results(const char *path, int repair, sweep_lines *out, cp_err *err);
void sweep_lines_free(sweep_lines *l);
void sweep_lines_add(sweep_lines *l, json_t *line);   /* takes the reference */

/* Append one line (compact JSON and "\n") to fd (O_APPEND) in one write. */
int sweep_append(int fd, json_t *line, cp_err *err);

/* The result line of a point (sweep.h top comment).  `summary` (borrowed)
 * when it ran, else `why` with its code. */
json_t *sweep_result_line(const sweep_spec *sp, const sweep_point *pt, const char *scen_hash,
                          json_t *summary, const cp_err *why);

/* summary.json as a result line holds it: without its per-rank list, the
 * rank peaks kept ("rank_peak_bytes"). */
json_t *sweep_result_summary(json_t *summary);

/* A simulation's result summary as text, split where its "scenario" goes:
 * the points that share it write their lines from it with their own
 * scenario, without reading the summary back. */
typedef struct sweep_shared {
    char *pre, *post;
} sweep_shared;
/* 0, or -1 when the summary's text cannot be split (keep it whole). */
int sweep_shared_text(json_t *summary, sweep_shared *out);
void sweep_shared_free(sweep_shared *t);
/* Append the line sweep_result_line makes of the point with the shared
 * summary t and its own scenario block, byte for byte, in one write. */
int sweep_append_shared(int fd, const sweep_spec *sp, const sweep_point *pt,
                        const char *scen_hash, const sweep_shared *t, json_t *scen,
                        cp_err *err);

/* Sort lines by index, keeping one line per id; -1 with err when two lines
 * of one id disagree. */
int sweep_lines_normalize(sweep_lines *l, cp_err *err);

/* ---- the last phase: records of the lines (sweep_results.c) ------------------ */

/* A sweep's result lines as the ranking, tables and plots read them: one
 * small record each (reports/plot.h, plot_point) and where its line lies,
 * so that the parent's memory does not grow with the lines' summaries:
 * results.jsonl is rewritten one line at a time, each read back by its
 * offset. */
typedef struct sweep_recs {
    plot_points pts;
    char **files;           /* the files read, by plot_point.file */
    int nfiles;
} sweep_recs;

/* Empty records that keep the values of the metrics of the sweep's
 * objective (sweep.json's "objective"; NULL: the defaults'). */
void sweep_recs_init(sweep_recs *r, const json_t *objective);
void sweep_recs_free(sweep_recs *r);
/* Add the records of the lines of a results.jsonl (absent: none; a torn
 * last line left out; a malformed line an error naming it).  as_written:
 * their objectives and rankings as the lines hold them (plots); else for
 * sweep_recs_conclude. */
int sweep_recs_read(sweep_recs *r, const char *path, int as_written, cp_err *err);
/* Sort by index (then id), one record per id; -1 with err when two lines
 * of one id disagree (read back and compared). */
int sweep_recs_normalize(sweep_recs *r, cp_err *err);
/* DIR's sweep.json and results.jsonl read and normalized. */
int sweep_recs_load_dir(const char *dir, int as_written, sweep_recs *r, cp_err *err);
/* Rank the records (rep_points_objective, rep_points_rank, with the
 * accuracies of the cost sources of their platform's profile, written to
 * DIR/source_errors.json, removed when unknown), then write
 * DIR/results.jsonl in index order with each line's objective and ranking
 * and DIR/results.csv a line at a time, and the tables (rep_sweep_tables,
 * their text on out, NULL: none).  The lines may lie in DIR/results.jsonl
 * itself: it is replaced atomically. */
int sweep_recs_conclude(sweep_recs *r, const char *dir, FILE *out, cp_err *err);

/* cpsim sweep --merge: the results of several output folders (all of the
 * same sweep: equal spec_hash) into out_dir: sweep.json, results.jsonl
 * sorted by index, tables.  Prints how many points each folder gave and
 * which are missing; with points missing the folder is still written and
 * -1 returned (exit 2), naming how many. */
int sweep_merge(char *const *dirs, int ndirs, const char *out_dir, FILE *log, cp_err *err);

/* The plots of a sweep folder (reports/plot.h) from its results.jsonl. */
int sweep_plot_dir(const char *dir, cp_err *err);

#endif
