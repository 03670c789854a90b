/* serve: the serving scheduler (`srv_`): many requests, continuous
 * batching, decode while a long prompt prefills.
 *
 * Each model replica (parallel.dp of them) runs vLLM's iteration-level
 * loop: a waiting queue in arrival order and a running batch; at each step
 * the scheduler picks the step's sequences (models/scenario.h sc_batch), the step
 * is simulated on SimGrid as one plan (build_step_plan, sim/engine/), and
 * its end is the clock of the next step.  Policies:
 *   - a prompt that runs split over the SP ranks (parallel.min_tokens,
 *     build_step_splits) runs as a step of its own (cp-exchange.md:
 *     chunked prefill off); shorter prompts and decodes run copied;
 *   - engine.chunked_prefill off: a waiting prompt is served first, as a
 *     prefill step of whole prompts from the queue's head (up to
 *     engine.max_num_batched_tokens, at least one), else one decode step
 *     of every running request (vLLM V0's prefill-first policy);
 *   - chunked prefill on: every running decode, then the running partial
 *     prefills, then new prompts from the queue, chunked to fit
 *     max_num_batched_tokens (vLLM V1);
 *   - at most engine.max_num_seqs requests run at once; a request is
 *     admitted when the KV it will hold (cached + prompt + decode tokens)
 *     fits the replica's KV budget beside the running ones, or the replica
 *     is empty (then the summary's OOM verdict says when it does not fit):
 *     no request is lost, none is preempted;
 *   - engine.router: round_robin or least_loaded over the replicas at
 *     arrival; expert parallelism across replicas steps them together,
 *     each padded to the largest replica's step (vLLM's DP padding).
 *
 * Steps of one composition simulate once (exact); decode steps whose
 * shape matches an earlier one and whose decode contexts sum to within
 * simulation.decode_reuse (default 0.5 %) of it reuse its time: a step's time is at most linear
 * in that sum (attention reads each context's KV once), so the reused time
 * is within that share of the exact one (tests/check_serve.c).
 *
 * Outputs: summary.json (schema cpsim.summary/1 plus `serving`, per
 * request ttft_s, tpot_s, tpot_p50_s, tpot_p99_s, queue_s, end_s),
 * trace.json (every op of the first SRV_FULL_STEPS steps, one span per
 * rank and step after them; --trace steps: spans only), memory.csv (each
 * rank at every step's start and peak), steps.csv (each step as it ran:
 * the batch composition over time).
 */
#ifndef CP_SERVE_H
#define CP_SERVE_H

#include <jansson.h>
#include <stdio.h>

#include "workloads/workload.h"

/* Where a serving run's outputs go (the driver's request passes its own). */
typedef struct srv_out {
    const char *out_dir;           /* summary.json, trace, memory.csv, steps.csv; NULL: none */
    FILE *warn;                    /* warnings (NULL: nowhere) */
    int trace_gz;                  /* 1: trace.json.gz */
    const struct rep_trace_opts *trace; /* what the trace holds (NULL: every op) */
    int all_ranks;                 /* 1: memory.csv rows per rank, none shared */
} srv_out;

/* Steps whose every op trace.json holds (the rest: one span per rank): our
 * choice, enough for the first prefill and decodes of a run at a trace of
 * megabytes (issue 11's 50 MB bound for a 30 s mix). */
#define SRV_FULL_STEPS 8

/* Run the serving scenario s (s->serving) and write its outputs as
 * drv_simulate does.  reuse: the decode-reuse bound (s->decode_reuse; 0:
 * the exact run). */
int srv_run(const srv_out *rq, const scenario *s, double reuse, json_t **summary,
            FILE *table, cp_err *err);

#endif
