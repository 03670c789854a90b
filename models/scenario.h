/* scenario: what one simulation is about, as the plan builders, the cost
 * model and the engine read it: the model, the platform, precision,
 * parallel layout, engine and simulation settings and the requests
 * (workloads/workload.h loads, resolves and checks it from a workload file;
 * nothing here asks the loader anything).  The predicates below are the
 * scenario's own (models/scenario.c). */
#ifndef CP_SCENARIO_H
#define CP_SCENARIO_H

#include <stdint.h>
#include "models/arch.h"
#include "base/dtype.h"
#include "models/kset.h"
#include "models/memory.h"
#include "models/plan.h"
#include "platforms/platform.h"
#include "base/diag.h"
#include "base/yamlio.h"

typedef enum { KV_BY_HEAD, KV_BY_POSITION } wl_kv_storage;
/* ring: pass-Q (the queries travel, K/V stay); ring_kv: pass-KV (the K/V
 * blocks travel, the queries stay); models/exchange.h. */
typedef enum { EX_AUTO, EX_ULYSSES, EX_ALL_GATHER, EX_RING, EX_RING_KV, EX_NONE } wl_exchange;
/* Which ring a split step of a ring exchange runs (parallel.ring_select):
 * the exchange as written, the cost rule of models/exchange.c
 * ex_ring_rule, or both simulated and the faster kept (the simulator's
 * side; the plan builder alone applies the rule). */
typedef enum { RS_FIXED, RS_RULE, RS_SIMULATE } wl_ring_select;
/* How a copied decode step of a ring exchange over position-stored KV
 * attends (parallel.decode): the DCP merge (every rank attends its slots,
 * partials all-gathered: cp-exchange.md's copied step), the pass-Q ring
 * decode (models/exchange/decode.c), or pass-Q when the batch holds at
 * least one sequence per SP rank. */
typedef enum { DEC_DCP, DEC_PASS_Q, DEC_AUTO } wl_decode;
typedef enum { SPLIT_STRIPED, SPLIT_CONTIGUOUS, SPLIT_ZIGZAG } wl_split;
/* How a ragged (cacheless) attention, an encoder's, runs over the SP group
 * (parallel.encoder_exchange; cp-exchange.md "ragged attentions keep a
 * per-model choice of none or ulysses"): none, every SP rank runs the whole
 * encoder with its heads over TP; ulysses, its rows split over the SP
 * ranks, all-to-all to a head split for the attention and back. */
typedef enum { ENCX_NONE, ENCX_ULYSSES } wl_encoder_exchange;
typedef enum { AGT_QKV, AGT_KV } wl_ag_tensors;
/* How all_gather (qkv) merges the partials of a split step: every row on
 * every rank, then its share sliced (the engine's copied path,
 * cp-exchange.md "all_gather"), or only the rank's own rows after an
 * all-to-all (a what-if the engine does not have). */
typedef enum { AGM_ALL_ROWS, AGM_OWN_ROWS } wl_ag_merge;
/* engine.graph (models/kset.h ks_graph, whose values these are): captured
 * is vLLM's FULL (every step in a graph; `full` is its alias). */
typedef enum {
    GRAPH_EAGER, GRAPH_CAPTURED, GRAPH_DECODE_ONLY, GRAPH_PIECEWISE, GRAPH_FULL_AND_PIECEWISE
} wl_graph;
typedef enum { NET_CM02, NET_L07 } wl_netmodel;
/* DSA CP attention: the RFC's token-layout contract (full-token queries,
 * token slice before o_proj) or vLLM-Ascend's sfa_cp.py (local queries,
 * fused KV all-gather overlapping the q up-projection). */
typedef enum { DSA_LAYOUT_RFC, DSA_LAYOUT_VLLM_ASCEND } wl_dsa_layout;
/* How the activations of an 8-bit GEMM are quantised: one quantisation
 * kernel per GEMM input (a single pass, priced by its bytes), the unfused
 * PyTorch ops the profile measured (gemm_fp8.csv act_quant rows), or fused
 * into the producing kernel (no op). */
typedef enum { AQ_KERNEL, AQ_UNFUSED, AQ_FUSED } wl_act_quant;
/* The KV cache as the engine holds it: grown and shrunk with the requests
 * (on_demand), or one pool sized at start-up from gpu_memory_utilization as
 * vLLM does (preallocate). */
typedef enum { KVP_ON_DEMAND, KVP_PREALLOCATE } wl_kv_pool;

/* engine.memory: what the engine holds beyond the model's tensors; the
 * byte figures default to the platform's (device.reserved_bytes,
 * device.workspace_bytes). */
typedef struct wl_engine_memory {
    double reserved_bytes;         /* context + communicator buffers */
    double workspace_bytes;        /* kernel workspaces */
    wl_kv_pool kv_pool;            /* default on_demand */
    double gpu_memory_utilization; /* preallocate: the share of the device the
                                      engine may use, vLLM's default 0.9 */
} wl_engine_memory;

#define WL_MAX_SHARDED 8
#define WL_MAX_WARN 24
#define WL_WARN_LEN 256

typedef struct wl_parallel {
    int tp, sp, ep, dp;
    int dcp;                        /* decode context parallel degree inside the TP
                                       group (vLLM's decode_context_parallel_size),
                                       default 1; sp is vLLM's prefill_context_
                                       parallel_size (parallel.pcp, an alias) */
    wl_kv_storage kv_storage;       /* default by_head */
    wl_exchange exchange;           /* default auto */
    int64_t min_tokens;             /* default 0: every multi-token step splits */
    wl_split split;                 /* default striped */
    wl_ag_tensors all_gather_tensors; /* default qkv */
    wl_ag_merge all_gather_merge;   /* default all_rows */
    int ring_overlap;               /* default 0 */
    int embed_share;                /* embed: share (1) | whole (0, default) */
    wl_ring_select ring_select;     /* default fixed */
    wl_decode decode;               /* default dcp */
    wl_encoder_exchange encoder_exchange; /* default none */
    int sequence_parallel;          /* RFC SP over the TP group, default 0 */
    int dsa_cp;                     /* -1 auto (default), 0 off, 1 on */
    wl_dsa_layout dsa_cp_layout;    /* default rfc */
    int order;                      /* plan_order: rank numbering, default tp_sp_dp */
    int n_layer_sharding;
    char layer_sharding[WL_MAX_SHARDED][32];
} wl_parallel;

typedef struct wl_request {
    int64_t prompt_tokens;  /* new tokens the prefill computes */
    double arrival_s;
    int64_t decode_tokens;
    int64_t cached_tokens;  /* prefix already in the KV cache: the prefill's
                               attention covers cached + prompt (default 0) */
    int cls;                /* request class: index into scenario.classes,
                               -1 when the entry has no name */
    int64_t audio_frames;   /* mel frames of the request's audio (audio_s x 100),
                               which the model's audio encoder turns into rows
                               at the start of the prompt; 0: text only */
} wl_request;

/* A closed-loop source (requests: - streams: K): K clients, each sending
 * its next request think_s after its previous one finished, the first at
 * start_s; `count` requests per client (0: until simulation.duration_s). */
typedef struct wl_streams {
    int streams;
    int64_t prompt_tokens, decode_tokens, cached_tokens;
    int64_t audio_frames;   /* as wl_request.audio_frames */
    double start_s, think_s;
    int64_t count;
    int cls;                /* as wl_request.cls */
    int entry;              /* its index in the workload's requests: */
} wl_streams;

/* How parallel.dp replicas share the requests (engine.router): in arrival
 * order over the replicas, or to the replica with the fewest requests
 * waiting or running (ties: the lowest index). */
typedef enum { ROUTE_ROUND_ROBIN, ROUTE_LEAST_LOADED } wl_router;

/* The most requests a workload holds (open loop, expanded) and a serving
 * run serves in all (closed-loop clients included): our own bound, 40 MB
 * of wl_request. */
#define WL_MAX_REQUESTS 1000000

/* A serving objective (workload key slo): a request meets it when it
 * finished with TTFT <= ttft_s and TPOT <= tpot_s (vLLM's benchmark
 * --goodput rule, benchmarks/benchmark_serving.py); 0: no bound. */
typedef struct wl_slo {
    double ttft_s, tpot_s;
} wl_slo;

/* Where a plan's build compared step tokens with parallel.min_tokens (the
 * one place that reads it: models/exchange ex_step_splits): `below` the most
 * tokens of a step compared that fell short of min_tokens (-1: none), `at`
 * the fewest that reached it (INT64_MAX: none).  Any min_tokens m with
 * below < m <= at takes every decision the same way, so the same scenario
 * with such an m builds the same plan (sim/sweep/ keys its plans on it). */
typedef struct sc_split_probe {
    int64_t below, at;
} sc_split_probe;

#define WL_MAX_CLASSES 16
#define WL_CLASS_LEN 48
#define WL_MAX_STREAM_SRC 16

typedef struct scenario {
    char path[1024];        /* workload file (the bundled default.yaml when none given) */
    ydoc *doc;              /* resolved YAML (after --set), owned */

    arch model;
    platform plat;

    cp_dtype w_dtype;       /* weights */
    uint8_t w_qscale;       /* 8-bit weights: plan_qscale of their GEMMs
                               (fp8 / fp8_tensor: tensor, fp8_rowwise and
                               int8: row, fp8_blockwise: block) */
    /* precision.mlp_weights (default: as weights): the dtype and scales of
     * the MLP linears, which are the dense MLP's gate_up / down and every
     * expert's (routed and shared) of a MoE layer; the attention
     * projections (GQA q/k/v/o, MLA's, the DSA indexer's), the router,
     * the embedding and the LM head keep w_dtype / w_qscale */
    cp_dtype mlp_dtype;
    uint8_t mlp_qscale;
    wl_act_quant act_quant; /* precision.activation_quant */
    cp_dtype a_dtype;       /* activations */
    cp_dtype kv_dtype;      /* KV cache */
    char quant_path[1024];  /* precision.quant_description resolved, "" when none */
    struct quant_desc *quant; /* that description, read and checked against the
                                 model (models/quant.h); NULL when none */

    wl_parallel par;
    wl_graph graph;         /* engine.graph, else the kernel set's, else eager */
    kset kernels;           /* engine.kernels: the kernel set (models/kset.h) */
    int chunked_prefill;
    int prefill_node;       /* engine.role: prefill, the prefill node of a
                               PD-disaggregated deployment (its requests end
                               with their first token; the summary says the
                               KV each rank hands over); 0: both phases */
    int64_t max_num_batched_tokens; /* engine.max_num_batched_tokens: chunk size */
    wl_engine_memory mem;           /* engine.memory */
    wl_netmodel net_model;
    int fold_layers;        /* simulation.fold_layers: repeated regions (plan.h) */
    int fold_layers_given;  /* the workload set it (cpsim plan shows the fold then) */
    int fold_at_build;      /* not a workload key: the pipeline (sim/driver/) sets it
                               from fold_layers, and models/build.h folds each
                               program as soon as it is built (0 from wl_load: an
                               unrolled plan) */
    sc_split_probe *split_probe; /* not a workload key: when set (the sweep, while
                               it builds a point's plan), ex_step_splits records
                               its min_tokens comparisons there; NULL from wl_load */
    int share_replicas;     /* simulation.share_replicas: sim/engine/engine.h */
    int share_tp;           /* simulation.share_tp: sim/engine/engine.h */
    int replay;             /* simulation.replay: sim/engine/replay.c */
    double replay_tol_s;    /* simulation.replay_tolerance_s (s), 0: exact */
    int moe_routing;        /* simulation.moe_routing: plan_route, default random */

    /* requests: every open-loop request (single entries, periodic, Poisson
     * and trace sources expanded), sorted by arrival_s (stable: entries in
     * file order at equal times); the closed-loop sources apart */
    wl_request *reqs;
    int nreqs;
    wl_streams streams[WL_MAX_STREAM_SRC];
    int nstreams;
    char classes[WL_MAX_CLASSES][WL_CLASS_LEN]; /* request class names, first use order */
    int nclasses;
    int slo_given;          /* the workload has slo: (0: every finished request counts) */
    wl_slo slo;             /* slo: ttft_s, tpot_s */
    wl_slo slo_cls[WL_MAX_CLASSES]; /* slo.by_name.<class>, the rest from slo */
    double duration_s;      /* simulation.duration_s: the run ends there (0: when
                               every request finished) */
    int64_t max_num_seqs;   /* engine.max_num_seqs: requests running at once */
    double decode_reuse;    /* simulation.decode_reuse: sim/serve/serve.h */
    wl_router router;       /* engine.router */
    /* the run goes through the serving scheduler (sim/serve/): more than one
     * request, a periodic, Poisson, closed-loop or trace source, or
     * simulation.duration_s; one plain request runs as one plan */
    int serving;

    /* some request carries audio (audio_s): the engine loads the model's
     * audio encoder (its weights are resident) and runs it on that audio;
     * none: the encoder is not loaded (as vLLM with limit_mm_per_prompt
     * audio: 0, which skips building the tower) */
    int audio_loaded;

    /* inputs that change the work but are not modelled (the model config's
     * among them), one line each: printed on stderr by the commands and
     * listed in summary.json warnings[] */
    int nwarn;
    char warn[WL_MAX_WARN][WL_WARN_LEN];
} scenario;

/* Tokens per prefill step of s (engine.max_num_batched_tokens under
 * chunked prefill, else the whole prompt of request q) and the number of
 * prefill steps of request q. */
int64_t sc_prefill_chunk(const scenario *s, int q);
/* Whether a request of class cls (-1: unnamed) that finished with ttft and
 * tpot (s; tpot 0 without decode) meets s's slo (always without one). */
int sc_slo_met(const scenario *s, int cls, double ttft, double tpot);
int64_t sc_prefill_steps(const scenario *s, int q);

/* DSA CP applies to s: parallel.dsa_cp on, or auto with sequence_parallel
 * on a model with a DSA indexer. */
int sc_dsa_cp(const scenario *s);

/* Whether the exchange is one of the two rings (ring, ring_kv). */
int sc_exchange_is_ring(wl_exchange e);

/* Either of the RFC's schemes over the TP group applies (parallel.
 * sequence_parallel, or DSA CP: models/seqpar/), parallel.sp aside. */
int sc_seqpar(const scenario *s);
/* The weight sharding of the scheme s runs (memory.h): DSA CP's full-layout
 * attention and TP-sharded shared experts under the RFC's schemes. */
mem_shard sc_mem_shard(const scenario *s);
/* parallel.layer_sharding as bits 1 << mem_proj; 0 when no sharding
 * applies (no DSA CP, or a TP group of one). */
uint32_t sc_layer_sharded(const scenario *s);

/* How a step of t tokens (prefill: it holds prefill tokens) is launched
 * under the scenario's graph mode (engine.graph) and kernel set's capture
 * sizes, and the batch its kernels run (*padded: t, or the capture size it
 * is padded to). */
plan_launch sc_step_launch(const scenario *s, int64_t t, int prefill, int64_t *padded);

/* ---- the steps the plan builders take --------------------------------------- */

/* A sequence of a batched step: `tokens` new tokens after `prefix` tokens
 * already in the KV cache (a decode: 1 token after its context); `sample`:
 * the step samples a token of it (the last chunk of a prefill, a decode). */
typedef struct sc_seq {
    int64_t tokens, prefix;
    uint8_t sample;
    int64_t audio_frames;   /* the first chunk of a request with audio: its mel
                               frames, which the step's audio encoder runs on
                               first (wl_request.audio_frames); else 0 */
} sc_seq;

/* The step: its sequences (GEMMs run on their tokens together, attention
 * per sequence, models/exchange.h attn_step_calls) and whether it runs split
 * over the SP ranks (then it holds one sequence: a split step is one
 * prompt, cp-exchange.md). */
typedef struct sc_batch {
    const sc_seq *seq;
    int n;
    int split;
} sc_batch;


#endif
