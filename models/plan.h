/* plan: the per-rank op programs, the one seam between "what" and "when".
 *
 * A plan is plain data built by models/ (no SimGrid inside).  For each rank it
 * holds an ordered list of ops; each op runs on one stream of its rank
 * (compute, comm, ...), like a CUDA stream.  Ops of one stream run in order;
 * an op may also wait for earlier ops of other streams of the same rank
 * (deps, like CUDA events).  Collectives name a group kind (TP, SP, EP, ...);
 * the engine resolves the members of that group for each rank from the
 * layout.  Memory ops are zero-time markers that allocate (+) or free (-)
 * bytes of one category when their stream reaches them.
 *
 * Program order is also host issue order: the host thread issues ops one
 * after the other, each costing its launch time, and a stream cannot start an
 * op before it was issued (see sim/engine/engine.h).
 *
 * Ranks with identical programs share one program: plan->prog_of_rank[r].
 */
#ifndef CP_PLAN_H
#define CP_PLAN_H

#include <stdint.h>
#include <stdio.h>
#include "base/dtype.h"
#include "base/diag.h"

enum plan_stream { ST_COMPUTE = 0, ST_COMM = 1, ST_COMM2 = 2, ST_COUNT = 3 };

typedef enum {
    OPK_COMPUTE,  /* a kernel: kclass, shapes, flops, bytes */
    OPK_COLL,     /* a collective over a group: coll, group, comm_bytes */
    OPK_P2P,      /* a ring hop: send comm_bytes to group member (i+send_off)%P,
                     receive recv_bytes from member (i+recv_off)%P */
    OPK_MEM,      /* allocate (+mem_bytes) / free (-mem_bytes) of mem_cat */
    OPK_STEP,     /* start of a step: waits for every stream of the rank to
                     drain and for the clock to reach `arrival_s` */
    OPK_COUNT
} plan_opkind;

typedef enum {
    KC_GEMM,           /* y[M,N] = x[M,K] W[N,K]^T  (m,k,n) */
    KC_GROUPED_GEMM,   /* batched GEMM: g GEMMs of m rows each (bmm) */
    KC_MOE_GEMM,       /* routed experts as one grouped GEMM: m = routed rows
                          of the rank in all, g = local experts, route */
    KC_ATTENTION,      /* flash attention forward (attn fields) */
    KC_SPARSE_ATTN,    /* DSA sparse attention over <= topk keys per query */
    KC_INDEXER,        /* DSA lightning indexer score + top-k */
    KC_NORM,           /* RMSNorm / LayerNorm (bytes-bound) */
    KC_ELEMENTWISE,    /* add, residual, masks, casts (bytes-bound) */
    KC_ACTIVATION,     /* SwiGLU silu(gate) * up (bytes-bound) */
    KC_ROPE,           /* rotary embedding (bytes-bound) */
    KC_TOPK,           /* router scores + top-k [m, E] -> [m, k]; sampling */
    KC_EMBEDDING,      /* embedding gather (bytes-bound) */
    KC_KV_WRITE,       /* paged KV-cache write (bytes-bound) */
    KC_LSE_MERGE,      /* merge of partial attention outputs with LSE */
    KC_MOE_PERMUTE,    /* token rows sorted by expert [m, h] -> [m*k, h] */
    KC_MOE_UNPERMUTE,  /* expert rows weighted and summed back [m*k, h] -> [m, h] */
    KC_ACT_QUANT,      /* activation quantisation for an 8-bit GEMM [m, k] */
    KC_COPY,           /* slice / gather / pad / reorder copies */
    KC_GELU,           /* GELU, one kernel (F.gelu; bytes-bound) */
    KC_LAYER_NORM,     /* LayerNorm with weight and bias, one kernel (F.layer_norm) */
    KC_COUNT
} plan_kclass;

/* Scale granularity of an 8-bit GEMM (precision.weights): per tensor, per
 * row (token and output channel), per 128-block (DeepSeek/GLM fp8). */
typedef enum { QS_NONE = 0, QS_TENSOR, QS_ROW, QS_BLOCK } plan_qscale;

/* How a router spreads rows over experts (simulation.moe_routing): exact
 * equal counts, top-k of iid logits (multinomial noise), or iid logits plus
 * a fixed per-expert bias (calibration README, moe.csv `dist`). */
typedef enum { RT_BALANCED, RT_RANDOM, RT_SKEWED, RT_COUNT } plan_route;

/* Where a compute op's price came from: the analytic (roofline) model of its
 * class, or a table of the platform's calibration profile. */
typedef enum {
    CS_ROOFLINE = 0, CS_GEMM, CS_GEMM_GRAPH, CS_GEMM_FP8, CS_MOE, CS_ATTENTION,
    CS_ATTENTION_CP, CS_DECODE_ATTENTION, CS_ELEMENTWISE, CS_SPARSE_ATTENTION,
    CS_GEMM_GRAPH_DECODE, CS_GEMM_FP8_DECODE, CS_MOE_DECODE, CS_ELEMENTWISE_DECODE,
    CS_ATTENTION_BACKENDS,
    CS_AIC_CONTEXT_ATTENTION,    /* aiconfigurator's FA3 rows (scripts/aic_import.py) */
    CS_AIC_GENERATION_ATTENTION,
    CS_CONV,      /* cuDNN convolutions, priced as their implicit GEMMs (conv.csv) */
    CS_DERIVED,   /* a fused kernel no table measured: its bytes at the copy rate, one launch */
    CS_COUNT
} plan_costsrc;

/* Which implementation of its class an op runs (the kernel set's choice,
 * models/kset.h): torch is PyTorch eager as the calibration profile
 * measured it (the default of every class but attention and collectives),
 * fa2 / cudnn / fa3 attention kernels, fused kernels (one launch where torch
 * runs several), nccl or an engine's custom all-reduce, the measured
 * torch._scaled_mm for 8-bit GEMMs. */
typedef enum {
    IMPL_TORCH = 0, IMPL_FA2, IMPL_CUDNN, IMPL_FA3, IMPL_FUSED, IMPL_FUSED_ADD,
    IMPL_FUSED_KV_WRITE, IMPL_NCCL, IMPL_CUSTOM, IMPL_SCALED_MM, IMPL_COUNT
} plan_impl;

/* The phase of a decoder layer an op belongs to (cp-exchange.md "peak
 * memory": attention phase vs MLP/MoE phase): attention from the input norm
 * through o_proj and its reduction, ffn from the post-attention norm
 * through the FFN's reduction, other for the embedding, the final norm, the
 * LM head and step set-up. */
typedef enum { PH_OTHER = 0, PH_ATTN, PH_FFN, PH_COUNT } plan_phase;

typedef enum {
    CK_ALL_REDUCE, CK_ALL_GATHER, CK_REDUCE_SCATTER, CK_ALL_TO_ALL,
    CK_BROADCAST, CK_COUNT
} plan_coll;

/* Groups a rank belongs to; see plan_group_members(). */
typedef enum {
    G_TP,      /* tensor parallel: same (dp, sp) index */
    G_SP,      /* sequence parallel: same (dp, tp) index */
    G_EP,      /* expert parallel: ep consecutive ranks */
    G_NODE,    /* the TP x SP ranks of one model replica */
    G_WORLD,   /* every rank */
    G_DCP,     /* decode context parallel: dcp consecutive ranks of a TP group */
    G_COUNT
} plan_group;

/* reserved: what the engine holds outside the tensors of the model (the
 * CUDA/NPU context, communicator buffers); workspace: kernel workspaces and
 * the captured graphs' pool. */
typedef enum {
    MC_WEIGHTS, MC_KV_CACHE, MC_ACTIVATIONS, MC_COMM_BUFFER, MC_WORKSPACE, MC_RESERVED,
    MC_ALLOC_SLACK,   /* no op allocates it: what the caching allocator holds reserved
                         beyond the live activations and buffers (reports/alloc.c) */
    MC_COUNT
} plan_memcat;

typedef enum { TL_NONE = 0, TL_FULL, TL_LOCAL } plan_layout;

/* The ring a split step of a ring exchange ran (models/exchange.h):
 * pass-Q (the query blocks travel, K/V stay: exchange ring) or pass-KV
 * (the K/V blocks travel, the queries stay: exchange ring_kv); PR_NONE for
 * a step that is not a split ring step. */
typedef enum { PR_NONE = 0, PR_PASS_Q, PR_PASS_KV, PR_COUNT } plan_ring;

/* Collective algorithm; AUTO lets collectives/ choose by size and fabric
 * (DIRECT: every member exchanges with every peer at once, over the links
 * of a full mesh). */
typedef enum { ALG_AUTO, ALG_RING, ALG_ONESHOT, ALG_PAIRWISE, ALG_DIRECT, ALG_COUNT } plan_alg;

#define PLAN_MAX_DIMS 4

typedef struct plan_shape {
    uint8_t nd;
    int64_t d[PLAN_MAX_DIMS];
} plan_shape;

typedef struct plan_attn {
    int64_t q_len, kv_len;   /* queries and keys of this call */
    int64_t heads, kv_heads; /* on this rank */
    int64_t d_qk, d_v;       /* per head */
    double pairs;            /* attended (q,k) pairs, exact for the mask, over
                                the whole batch */
    uint8_t causal;          /* 0 none, 1 causal bottom-right aligned */
    int64_t batch;           /* requests in the call, each q_len queries over
                                kv_len keys (0: one) */
    uint8_t unfolded;        /* 1: decodes of a varlen call, whose query heads
                                of a KV head do not share a CTA (FA's varlen
                                forward packs no GQA group) */
} plan_attn;

typedef struct plan_op {
    const char *name;        /* static string, e.g. "q_proj" */
    int32_t layer;           /* decoder layer, -1 outside */
    int32_t step;            /* step index (request prefill/decode), from 0 */
    uint8_t kind;            /* plan_opkind */
    uint8_t stream;          /* plan_stream */
    uint8_t kclass;          /* OPK_COMPUTE: plan_kclass */
    uint8_t coll;            /* OPK_COLL: plan_coll */
    uint8_t group;           /* OPK_COLL / OPK_P2P: plan_group */
    uint8_t alg;             /* OPK_COLL: plan_alg */
    uint8_t dtype;           /* cp_dtype of the activation / message */
    uint8_t layout;          /* plan_layout of the token dimension */
    uint8_t mem_cat;         /* OPK_MEM: plan_memcat */
    uint8_t eager;           /* 1: launched eagerly even in captured mode */
    uint8_t qscale;          /* 8-bit GEMMs: plan_qscale (QS_NONE otherwise) */
    uint8_t route;           /* KC_MOE_GEMM: plan_route */
    uint8_t nkern;           /* kernels the op launches (0: one) */
    uint8_t phase;           /* plan_phase */
    uint8_t impl;            /* plan_impl (IMPL_TORCH: the profile's own) */
    uint8_t shared_launch;   /* 1: a part of the launch of the op before it
                                (the sequences of one varlen call): no launch
                                of its own */

    /* compute */
    int64_t m, k, n, g;      /* GEMM dims; g groups for grouped GEMM (else 1) */
    plan_attn attn;          /* attention kinds */
    plan_shape in, w, out;   /* shapes for reports and contract tests */
    double flops;            /* floating-point operations */
    double bytes;            /* minimum HBM bytes moved (read + write) */

    /* communication */
    double comm_bytes;       /* COLL: nccl-tests size convention (see
                                collectives/coll.h); P2P: bytes sent */
    double recv_bytes;       /* P2P: bytes received */
    int8_t send_off, recv_off; /* P2P: peers relative to own group index */

    /* memory */
    double mem_bytes;        /* OPK_MEM: + alloc, - free */

    /* step */
    double arrival_s;        /* OPK_STEP: request arrival time */
    int32_t request;         /* OPK_STEP and all ops of a step: request index */

    /* dependencies on other ops of the same program (indices into ops) */
    uint32_t dep_first, ndeps;

    /* filled by cost_price_plan() */
    double cost_s;           /* device time of the op on this platform */
    double launch_s;         /* host time to issue it */
    float cost_dist;         /* compute ops priced from a table: size factor
                                (>= 1) to the nearest measured row */
    uint8_t cost_table;      /* where cost_s came from: plan_costsrc */
    uint8_t eager_gap;       /* 1: cost_s holds the device's gap after each of its
                                eager launches (COST_EAGER_GAP each) */
} plan_op;

/* A repeated region: ops [first, first + nops) stand for `repeat`
 * consecutive copies of themselves (copy k of an op is in layer
 * op.layer + k * layer_step).  Dependencies keep their meaning in every
 * copy: a region op depending on an op of the same region waits for that op
 * of its own copy; one depending on an op before the region waits, in copy
 * k > 0, for the op as far back in the expanded sequence as in copy 0 (the
 * previous copy's twin); an op depending on a region op waits for its last
 * copy.  plan_fold_layers() only builds regions whose expansion gives back
 * the original program exactly. */
typedef struct plan_region {
    uint32_t first, nops, repeat;
    int32_t layer_step;
} plan_region;

typedef struct plan_prog {
    plan_op *ops;
    uint32_t nops, cap;
    uint32_t *deps;          /* op indices */
    uint32_t ndeps, dcap;
    /* the KV pool (engine.memory.kv_pool: preallocate): its bytes, allocated
     * at set-up, and the most KV the program's requests hold at once; 0
     * when the pool is on demand */
    double kv_pool, kv_need;
    plan_region *regions;    /* sorted, disjoint; NULL when none */
    uint32_t nregions;
} plan_prog;

/* The expanded sequence of a program: element i is real op real[i] in copy
 * iter[i] of its region (0 outside regions), with its dependencies as
 * indices into the sequence: deps[dep_first[i] .. dep_first[i + 1]). */
typedef struct plan_vseq {
    uint32_t n;
    uint32_t *real, *iter;
    uint32_t *dep_first;     /* [n + 1] */
    uint32_t *deps;
} plan_vseq;

/* How ranks are numbered (parallel.order): TP fastest (a TP group on
 * consecutive devices, one node's; the SP group of TP index i spans the
 * nodes), or SP fastest (an SP group on consecutive devices, TP across);
 * DP outermost either way. */
typedef enum { ORDER_TP_SP_DP = 0, ORDER_SP_TP_DP } plan_order;

typedef struct plan_layout_cfg {
    int tp, sp, ep, dp;      /* ranks = tp * sp * dp; ep divides ranks */
    int dcp;                 /* DCP degree inside a TP group (0 or 1: none) */
    int devices_per_node;    /* for node-locality queries */
    int order;               /* plan_order (0: TP fastest) */
} plan_layout_cfg;

typedef struct plan {
    plan_layout_cfg lay;
    int nranks;
    plan_prog *progs;
    int nprogs;
    int *prog_of_rank;       /* [nranks] */
    int nsteps;              /* number of OPK_STEP per program */
    int nrequests;
    int *prefill_steps;      /* [nrequests]: steps of each request's prefill (its
                                chunks under chunked prefill; 1 otherwise), its
                                decode steps after them, requests in order */
    uint8_t *step_split;     /* [nsteps]: 1 when the step's tokens ran split
                                over ranks (layer_scheme.splits), 0 copied */
    uint8_t *step_ring;      /* [nsteps]: the plan_ring of each step (PR_NONE
                                unless a split step of a ring exchange) */
    /* a serving step's plan (build_step_plan): the tokens its GEMMs and
     * kernels run (the batch padded to a capture size under a graph mode),
     * and how it is launched (plan_launch) */
    int64_t padded_tokens;
    uint8_t launch;
} plan;

/* How a serving step is launched: every kernel eagerly, replayed from one
 * graph, or piecewise (graphs with some ops, attention, outside). */
typedef enum { PL_EAGER, PL_GRAPH, PL_PIECEWISE } plan_launch;
extern const char *const plan_launch_names[];

/* Kernels program g launches over its whole sequence (the sum of nkern of
 * its compute ops, region repeats counted). */
int64_t plan_kernels(const plan *p, int g);

/* ---- building ---------------------------------------------------------- */

void plan_init(plan *p, const plan_layout_cfg *lay);
void plan_free(plan *p);
/* Add an empty program; returns its index. */
int plan_add_prog(plan *p);

/* Append an op (copied) to program prog; returns its index. */
uint32_t plan_push(plan_prog *prog, const plan_op *op);
/* Make op `op` wait for op `on` (must be earlier in program order). */
void plan_dep(plan_prog *prog, uint32_t op, uint32_t on);
/* Dependencies of op i: prog->deps[ops[i].dep_first .. + ndeps).  Deps must
 * be added right after the op is pushed (before the next push). */

/* ---- repeated regions ----------------------------------------------------- */

/* Expand a program's regions into its sequence (no copies of the ops). */
void plan_vseq_build(const plan_prog *pg, plan_vseq *out);
void plan_vseq_free(plan_vseq *v);
/* Effective layer of element i of a sequence. */
int32_t plan_vseq_layer(const plan_prog *pg, const plan_vseq *v, uint32_t i);

/* Replace every run of identical consecutive decoder layers of each program
 * by one representative layer repeated (RFC 3.3.2 "repetition graph").  A
 * run is folded only when expanding it gives back the original ops and
 * dependencies exactly.  Returns the number of ops removed. */
size_t plan_fold_layers(plan *p);
/* The same for one program (left as it is when it has regions already). */
size_t plan_fold_prog(plan_prog *pg);

/* out = p with every region unrolled (an ordinary plan). */
void plan_expand(const plan *p, plan *out);

/* ---- layout ------------------------------------------------------------- */

/* Members of rank r's group g, in group order, into out[] (capacity cap);
 * returns the member count and sets *my_index.  Rank numbering (order TP
 * fastest, the default): r = (dp_i * sp + sp_i) * tp + tp_i, so a TP group
 * sits on consecutive devices of one node; SP fastest:
 * r = (dp_i * tp + tp_i) * sp + sp_i.  EP groups are ep consecutive ranks. */
int plan_group_members(const plan_layout_cfg *lay, int r, plan_group g,
                       int *out, int cap, int *my_index);
int plan_group_size(const plan_layout_cfg *lay, plan_group g);
void plan_rank_coords(const plan_layout_cfg *lay, int r, int *tp_i, int *sp_i, int *dp_i);
/* The rank of coordinates (tp_i, sp_i, dp_i). */
int plan_rank_of(const plan_layout_cfg *lay, int tp_i, int sp_i, int dp_i);
const char *plan_order_name(plan_order o);
extern const char *const plan_order_names[];

/* ---- names ------------------------------------------------------------- */

const char *plan_kind_name(plan_opkind k);
const char *plan_kclass_name(plan_kclass k);
const char *plan_coll_name(plan_coll c);
const char *plan_group_name(plan_group g);
const char *plan_memcat_name(plan_memcat c);
const char *plan_stream_name(int s);
const char *plan_layout_name(plan_layout l);
const char *plan_route_name(plan_route r);
const char *plan_phase_name(plan_phase p);
const char *plan_impl_name(plan_impl i);
extern const char *const plan_impl_names[];
/* "pass_q", "pass_kv" ("none" for PR_NONE). */
const char *plan_ring_name(plan_ring r);
/* File name of a table source ("gemm_graph.csv"), "" for CS_ROOFLINE. */
const char *plan_costsrc_file(plan_costsrc c);
/* "table:<file>" or "roofline:<class>" of a priced compute op, into buf. */
const char *plan_cost_src(const plan_op *o, char *buf, size_t n);
/* NULL-terminated names in enum order (for yio_enum). */
extern const char *const plan_route_names[];

/* Write the plan as JSON (cpsim plan --json).  One entry per program with
 * the ranks that run it and its ops. */
int plan_write_json(const plan *p, FILE *out, cp_err *err);

#endif
