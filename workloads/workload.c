/* workload: the scenario loader (see workload.h).  YAML plus --set
 * assignments become a scenario whose model and platform are resolved and
 * whose settings are checked against both before anything is simulated.
 * The schema tables below drive parsing, defaults, unknown-key messages and
 * the resolved dump of the parallel, engine and simulation sections.
 */
#include "workloads/workload.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "models/plan.h"
#include "models/quant.h"
#include "platforms/platform_xml.h"
#include "base/datadir.h"

/* Bounds of the workload format (our own sanity limits, far beyond any
 * bundled model or preset, chosen so that sizes never overflow int64):
 * parallel degrees up to 4096 devices; prompts up to 2^24 tokens, about 80x
 * the longest bundled context (202752, glm-5.json max_position_embeddings);
 * arrivals within 1e6 s; decode lengths up to 1e6 tokens. */
#define WL_MAX_DEGREE 4096
#define WL_MAX_PROMPT 16777216LL
#define WL_MAX_ARRIVAL 1e6
#define WL_MAX_DECODE 1000000LL
/* Bounds of the request sources (our own sanity limits as well): at most
 * WL_MAX_REQUESTS open-loop requests once the sources are expanded (40 MB
 * of wl_request; workload.h), and served in all; closed-loop entries of up
 * to 4096 clients (WL_MAX_DEGREE, a client per device of the largest
 * layout); Poisson rates up to 1e6 requests per second; engine.max_num_seqs
 * up to 65536 running requests. */
#define WL_MAX_CLIENTS 4096
#define WL_MAX_RATE 1e6
#define WL_MAX_SEQS 65536

static const char *const kv_storage_names[] = { "by_head", "by_position", NULL };
static const char *const exchange_names[] = { "auto", "ulysses", "all_gather", "ring", "ring_kv",
                                              "none", NULL };
static const char *const ring_select_names[] = { "fixed", "rule", "simulate", NULL };
static const char *const decode_names[] = { "dcp", "pass_q", "auto", NULL };
static const char *const split_names[] = { "striped", "contiguous", "zigzag", NULL };
static const char *const agt_names[] = { "qkv", "kv", NULL };
static const char *const agm_names[] = { "all_rows", "own_rows", NULL };
static const char *const embed_names[] = { "whole", "share", NULL };
static const char *const graph_names[] = { "eager", "captured", "full", "decode_only",
                                            "piecewise", "full_and_piecewise", NULL };
static const int graph_values[] = { GRAPH_EAGER, GRAPH_CAPTURED, GRAPH_CAPTURED, GRAPH_DECODE_ONLY,
                                    GRAPH_PIECEWISE, GRAPH_FULL_AND_PIECEWISE };
static const char *const net_names[] = { "cm02", "l07", NULL };
static const char *const dsa_cp_names[] = { "auto", "on", "off", NULL };
static const int dsa_cp_values[] = { -1, 1, 0 };
static const char *const dsa_layout_names[] = { "rfc", "vllm_ascend", NULL };
static const char *const sharding_names[] = { "q_b_proj", "o_proj", "kv_b_proj", "q_a_proj",
                                              "kv_a_proj", NULL };

static const char *const top_keys[] = { "model", "platform", "precision", "parallel", "engine",
                                        "requests", "simulation", NULL };
static const char *const precision_keys[] = { "weights", "mlp_weights", "activations",
                                              "kv_cache", "activation_quant",
                                              "quant_description", NULL };
static const char *const act_quant_names[] = { "kernel", "unfused", "fused", NULL };
/* precision.weights and precision.mlp_weights: a dtype, or an 8-bit dtype
 * with its scale granularity. */
static const char *const weight_names[] = { "bf16", "fp16", "fp8", "int8", "fp32", "int4",
                                            "fp8_tensor", "fp8_rowwise", "fp8_blockwise", NULL };
static const struct {
    cp_dtype dt;
    plan_qscale qs;
} weight_kinds[] = {
    {DT_BF16, QS_NONE}, {DT_FP16, QS_NONE}, {DT_FP8, QS_TENSOR}, {DT_INT8, QS_ROW},
    {DT_FP32, QS_NONE}, {DT_INT4, QS_NONE}, {DT_FP8, QS_TENSOR}, {DT_FP8, QS_ROW},
    {DT_FP8, QS_BLOCK},
};
static const char *const router_names[] = { "round_robin", "least_loaded", NULL };

/* Enum fields are written through an int (field_set). */
_Static_assert(sizeof(wl_kv_storage) == sizeof(int), "enum size");
_Static_assert(sizeof(wl_exchange) == sizeof(int), "enum size");
_Static_assert(sizeof(wl_split) == sizeof(int), "enum size");
_Static_assert(sizeof(wl_ring_select) == sizeof(int), "enum size");
_Static_assert(sizeof(wl_ag_tensors) == sizeof(int), "enum size");
_Static_assert(sizeof(wl_graph) == sizeof(int), "enum size");
_Static_assert(sizeof(wl_netmodel) == sizeof(int), "enum size");
_Static_assert(sizeof(wl_dsa_layout) == sizeof(int), "enum size");
_Static_assert(sizeof(wl_router) == sizeof(int), "enum size");

/* F_DOUBLE: a number in (lo, hi], lo excluded (a positive duration); its
 * default def is stored as it is, so it may lie outside the range (0:
 * none). */
typedef enum { F_INT, F_I64, F_BOOL, F_ENUM, F_DOUBLE } wl_ftype;

/* One scalar key of a section. */
typedef struct wl_field {
    const char *key;
    wl_ftype type;
    long long lo, hi;           /* F_INT, F_I64: inclusive range */
    long long def;              /* default (F_ENUM: the stored value) */
    const char *const *names;   /* F_ENUM: accepted values */
    const int *values;          /* F_ENUM: value stored per name; NULL: its index */
    size_t off;                 /* offset of the field in scenario */
} wl_field;

#define PAR(f) offsetof(scenario, par.f)

static const wl_field parallel_fields[] = {
    { "tp", F_INT, 1, WL_MAX_DEGREE, 1, NULL, NULL, PAR(tp) },
    { "sp", F_INT, 1, WL_MAX_DEGREE, 1, NULL, NULL, PAR(sp) },
    { "ep", F_INT, 1, WL_MAX_DEGREE, 1, NULL, NULL, PAR(ep) },
    { "dp", F_INT, 1, WL_MAX_DEGREE, 1, NULL, NULL, PAR(dp) },
    { "kv_storage", F_ENUM, 0, 0, KV_BY_HEAD, kv_storage_names, NULL, PAR(kv_storage) },
    { "exchange", F_ENUM, 0, 0, EX_AUTO, exchange_names, NULL, PAR(exchange) },
    { "min_tokens", F_I64, 0, INT64_MAX, 0, NULL, NULL, PAR(min_tokens) },
    { "split", F_ENUM, 0, 0, SPLIT_STRIPED, split_names, NULL, PAR(split) },
    { "all_gather_tensors", F_ENUM, 0, 0, AGT_QKV, agt_names, NULL, PAR(all_gather_tensors) },
    { "all_gather_merge", F_ENUM, 0, 0, AGM_ALL_ROWS, agm_names, NULL, PAR(all_gather_merge) },
    { "ring_overlap", F_BOOL, 0, 1, 0, NULL, NULL, PAR(ring_overlap) },
    /* where a split step's tokens are cut (models/exchange.c ex_embed) */
    { "embed", F_ENUM, 0, 0, 0, embed_names, NULL, PAR(embed_share) },
    /* copied decode steps of a ring exchange (workload.h wl_decode) */
    { "decode", F_ENUM, 0, 0, DEC_DCP, decode_names, NULL, PAR(decode) },
    /* rank numbering (models/plan.h): TP fastest, or SP fastest */
    { "order", F_ENUM, 0, 0, ORDER_TP_SP_DP, plan_order_names, NULL, PAR(order) },
    { "ring_select", F_ENUM, 0, 0, RS_FIXED, ring_select_names, NULL, PAR(ring_select) },
    { "sequence_parallel", F_BOOL, 0, 1, 0, NULL, NULL, PAR(sequence_parallel) },
    { "dsa_cp", F_ENUM, 0, 0, -1, dsa_cp_names, dsa_cp_values, PAR(dsa_cp) },
    { "dsa_cp_layout", F_ENUM, 0, 0, DSA_LAYOUT_RFC, dsa_layout_names, NULL, PAR(dsa_cp_layout) },
};

static const wl_field engine_fields[] = {
    { "graph", F_ENUM, 0, 0, GRAPH_EAGER, graph_names, graph_values, offsetof(scenario, graph) },
    { "chunked_prefill", F_BOOL, 0, 1, 0, NULL, NULL, offsetof(scenario, chunked_prefill) },
    /* vLLM v1 EngineArgs: default_max_num_batched_tokens 8192 for the API
     * server on GPUs of >= 70 GiB (vllm/engine/arg_utils.py) */
    { "max_num_batched_tokens", F_I64, 1, INT64_C(1) << 40, 8192, NULL, NULL,
      offsetof(scenario, max_num_batched_tokens) },
    /* vLLM v1 EngineArgs: default_max_num_seqs 1024 for the API server on
     * GPUs of >= 70 GiB, the branch the 8192 batched tokens above come from
     * (vllm/engine/arg_utils.py; 256 on smaller GPUs and in V0) */
    { "max_num_seqs", F_I64, 1, WL_MAX_SEQS, 1024, NULL, NULL,
      offsetof(scenario, max_num_seqs) },
    { "router", F_ENUM, 0, 0, ROUTE_ROUND_ROBIN, router_names, NULL, offsetof(scenario, router) },
};

static const wl_field simulation_fields[] = {
    { "network_model", F_ENUM, 0, 0, NET_CM02, net_names, NULL, offsetof(scenario, net_model) },
    /* identical consecutive layers as one repeated region (plan.h): the
     * same results, a smaller plan, and what simulation.replay replays */
    { "fold_layers", F_BOOL, 0, 1, 1, NULL, NULL, offsetof(scenario, fold_layers) },
    { "moe_routing", F_ENUM, 0, 0, RT_RANDOM, plan_route_names, NULL,
      offsetof(scenario, moe_routing) },
    /* simulate one DP replica when the replicas are independent (engine.h),
     * false: every rank (the same bytes; for the check) */
    { "share_replicas", F_BOOL, 0, 1, 1, NULL, NULL, offsetof(scenario, share_replicas) },
    /* replay copies of folded layers entered in an earlier copy's state
     * (sim/engine/replay.c), false: simulate every copy (for the check) */
    { "replay", F_BOOL, 0, 1, 1, NULL, NULL, offsetof(scenario, replay) },
    /* 0: no end, the run lasts until every request finished */
    { "duration_s", F_DOUBLE, 0, (long long)WL_MAX_ARRIVAL, 0, NULL, NULL,
      offsetof(scenario, duration_s) },
};

static int read_layer_sharding(const ynode *par, scenario *s, cp_err *err);
static int read_engine_memory(const ynode *eng, scenario *s, cp_err *err);
static int read_simulation_extra(const ynode *sim, scenario *s, cp_err *err);

/* A section of scalar keys; `extra` are keys read by its own function
 * (NULL-terminated). */
typedef struct wl_section {
    const char *key;
    const wl_field *fields;
    size_t n;
    const char *const *extra;
    int (*read_extra)(const ynode *map, scenario *s, cp_err *err);
} wl_section;

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const parallel_extra[] = {"layer_sharding", NULL};
static const char *const engine_extra[] = {"memory", "kernels", NULL};
static const char *const simulation_extra[] = {"decode_reuse", "replay_tolerance_s", NULL};
static const wl_section sections[] = {
    { "parallel", parallel_fields, COUNT(parallel_fields), parallel_extra, read_layer_sharding },
    { "engine", engine_fields, COUNT(engine_fields), engine_extra, read_engine_memory },
    { "simulation", simulation_fields, COUNT(simulation_fields), simulation_extra,
      read_simulation_extra },
};

static void field_set(scenario *s, const wl_field *f, long long v)
{
    char *p = (char *)s + f->off;
    if (f->type == F_DOUBLE) {
        double x = (double)v;
        memcpy(p, &x, sizeof x);
    } else if (f->type == F_I64) {
        int64_t x = v;
        memcpy(p, &x, sizeof x);
    } else {
        int x = (int)v;
        memcpy(p, &x, sizeof x);
    }
}

static long long field_get(const scenario *s, const wl_field *f)
{
    const char *p = (const char *)s + f->off;
    if (f->type == F_I64) {
        int64_t x;
        memcpy(&x, p, sizeof x);
        return x;
    }
    int x;
    memcpy(&x, p, sizeof x);
    return x;
}

static double field_getd(const scenario *s, const wl_field *f)
{
    double x;
    memcpy(&x, (const char *)s + f->off, sizeof x);
    return x;
}

/* Optional key of map: a number in (lo, hi]; *out is left as it is when the
 * key is absent. */
static int opt_above(const ynode *map, const char *prefix, const char *key, double lo, double hi,
                     double *out, cp_err *err)
{
    const ynode *n = yio_key(map, key);
    if (!n)
        return 0;
    char what[256];
    yio_path(what, sizeof what, prefix, key);
    double v = 0;
    cp_err in = { 0 };
    if (yio_double(n, what, lo, hi, &v, &in) == 0 && v > lo) {
        *out = v;
        return 0;
    }
    char got[80];
    if (n->kind == YN_SCALAR)
        snprintf(got, sizeof got, "%s\"%.40s\"", n->quoted ? "the quoted string " : "", n->str);
    else
        snprintf(got, sizeof got, "%s", n->kind == YN_MAP ? "a mapping"
                                         : n->kind == YN_SEQ ? "a list" : "an empty value");
    return cp_fail_at(err, n->loc, "%s: expected a number in (%g, %g], got %s", what, lo, hi,
                      got);
}

/* Name of an enum field's stored value. */
static const char *field_name(const wl_field *f, long long v)
{
    for (int i = 0; f->names[i]; i++)
        if ((f->values ? f->values[i] : i) == v)
            return f->names[i];
    return "?";
}

static int read_field(const ynode *map, const char *prefix, const wl_field *f, scenario *s,
                      cp_err *err)
{
    if (f->type == F_DOUBLE) {
        double d = field_getd(s, f);
        if (opt_above(map, prefix, f->key, (double)f->lo, (double)f->hi, &d, err) < 0)
            return -1;
        memcpy((char *)s + f->off, &d, sizeof d);
        return 0;
    }
    long long v = field_get(s, f);
    int b = (int)v, idx = -1, rc = 0;
    switch (f->type) {
    case F_DOUBLE:
        break;
    case F_INT:
    case F_I64:
        rc = yio_opt_int(map, prefix, f->key, f->lo, f->hi, &v, err);
        break;
    case F_BOOL:
        rc = yio_opt_bool(map, prefix, f->key, &b, err);
        v = b;
        break;
    case F_ENUM:
        rc = yio_opt_enum(map, prefix, f->key, f->names, &idx, err);
        if (idx >= 0)
            v = f->values ? f->values[idx] : idx;
        break;
    }
    if (rc == 0)
        field_set(s, f, v);
    return rc;
}

static int read_section(const ynode *root, const wl_section *sec, scenario *s, cp_err *err)
{
    const ynode *map = yio_key(root, sec->key);
    if (!map)
        return 0;
    if (yio_want_map(map, sec->key, err) < 0)
        return -1;
    const char *known[24];
    size_t nk = 0;
    for (size_t i = 0; i < sec->n; i++) {
        if (read_field(map, sec->key, &sec->fields[i], s, err) < 0)
            return -1;
        known[nk++] = sec->fields[i].key;
    }
    if (sec->read_extra) {
        if (sec->read_extra(map, s, err) < 0)
            return -1;
        for (size_t i = 0; sec->extra[i]; i++)
            known[nk++] = sec->extra[i];
    }
    known[nk] = NULL;
    return yio_no_unknown(map, sec->key, known, err);
}

/* simulation.decode_reuse: the serving scheduler's bound on reusing a
 * decode step's time (sim/serve/serve.h), 0 for the exact run; at most 5 %,
 * our own limit: a study wanting a coarser step is better served by fewer
 * steps than by a looser bound.  simulation.replay_tolerance_s: how far
 * apart two layer cuts' early starts may be and still replay
 * (sim/engine/replay.c), 0 (exact to rounding) by default; at most 1 us,
 * our own limit: a layer's own events are microseconds long. */
static int read_simulation_extra(const ynode *sim, scenario *s, cp_err *err)
{
    s->fold_layers_given = yio_key(sim, "fold_layers") != NULL;
    /* replay acts on folded layers: asked for without them it would do
     * nothing */
    const ynode *rp = yio_key(sim, "replay");
    if (rp && s->replay && !s->fold_layers)
        return cp_fail_at(err, rp->loc, "simulation.replay: replays folded layers, and "
                          "simulation.fold_layers is false");
    if (yio_opt_double(sim, "simulation", "replay_tolerance_s", 0, 1e-6, &s->replay_tol_s,
                       err) < 0)
        return -1;
    const ynode *tol = yio_key(sim, "replay_tolerance_s");
    if (tol && s->replay_tol_s > 0 && (!s->replay || !s->fold_layers))
        return cp_fail_at(err, tol->loc, "simulation.replay_tolerance_s: a tolerance of the "
                          "replay of folded layers, and simulation.%s is false",
                          !s->replay ? "replay" : "fold_layers");
    return yio_opt_double(sim, "simulation", "decode_reuse", 0, 0.05, &s->decode_reuse, err);
}

static void set_defaults(scenario *s)
{
    for (size_t i = 0; i < COUNT(sections); i++)
        for (size_t k = 0; k < sections[i].n; k++)
            field_set(s, &sections[i].fields[k], sections[i].fields[k].def);
    s->w_dtype = s->mlp_dtype = s->a_dtype = s->kv_dtype = DT_BF16;
    s->decode_reuse = 0.005; /* the 0.5 % per step of issue 11 */
    ks_default(&s->kernels);
    /* vLLM EngineArgs gpu_memory_utilization default */
    s->mem.gpu_memory_utilization = 0.9;
}

static const char *const engine_memory_keys[] = { "reserved_bytes", "workspace_bytes",
                                                  "kv_pool", "gpu_memory_utilization", NULL };
static const char *const kv_pool_names[] = { "on_demand", "preallocate", NULL };

/* Largest byte figure of engine.memory: 1 PB, far above any device. */
#define WL_MEM_MAX 1e15

/* engine.memory; the byte figures the workload leaves out come from the
 * platform (resolve_engine_memory). */
/* engine.kernels: a bundled kernel set or a set file (relative to the
 * workload); its graph mode applies when engine.graph is not given. */
static int read_kernels(const ynode *eng, scenario *s, cp_err *err)
{
    const char *ks = NULL;
    if (yio_opt_str(eng, "engine", "kernels", &ks, err) < 0)
        return -1;
    if (!ks) {
        ks_default(&s->kernels);
        return 0;
    }
    char dir[1024];
    cp_err in = { 0 };
    if (ks_load(ks, cp_dirname(dir, sizeof dir, s->path), &s->kernels, &in) < 0)
        return cp_fail_at(err, yio_key(eng, "kernels")->loc, "engine.kernels: %s", in.msg);
    if (!yio_key(eng, "graph") && s->kernels.graph >= 0)
        s->graph = (wl_graph)s->kernels.graph;
    return 0;
}

static int read_engine_memory(const ynode *eng, scenario *s, cp_err *err)
{
    if (read_kernels(eng, s, err) < 0)
        return -1;
    const ynode *n = yio_key(eng, "memory");
    if (!n)
        return 0;
    if (yio_want_map(n, "engine.memory", err) < 0)
        return -1;
    wl_engine_memory *m = &s->mem;
    int pool = m->kv_pool;
    if (yio_opt_double(n, "engine.memory", "reserved_bytes", 0, WL_MEM_MAX, &m->reserved_bytes,
                       err) < 0 ||
        yio_opt_double(n, "engine.memory", "workspace_bytes", 0, WL_MEM_MAX,
                       &m->workspace_bytes, err) < 0 ||
        yio_opt_enum(n, "engine.memory", "kv_pool", kv_pool_names, &pool, err) < 0 ||
        yio_opt_double(n, "engine.memory", "gpu_memory_utilization", 0, 1,
                       &m->gpu_memory_utilization, err) < 0 ||
        yio_no_unknown(n, "engine.memory", engine_memory_keys, err) < 0)
        return -1;
    m->kv_pool = (wl_kv_pool)pool;
    const ynode *u = yio_key(n, "gpu_memory_utilization");
    if (u && m->kv_pool != KVP_PREALLOCATE)
        return cp_fail_at(err, u->loc, "engine.memory.gpu_memory_utilization: sizes the KV "
                          "pool of kv_pool: preallocate; with kv_pool: on_demand it changes "
                          "nothing");
    if (u && !(m->gpu_memory_utilization > 0))
        return cp_fail_at(err, u->loc, "engine.memory.gpu_memory_utilization: expected a "
                          "share in (0, 1]");
    return 0;
}

/* The platform's engine memory for the figures the workload left out. */
static void resolve_engine_memory(scenario *s)
{
    const ynode *m = yio_key(yio_key(yio_root(s->doc), "engine"), "memory");
    if (!yio_key(m, "reserved_bytes"))
        s->mem.reserved_bytes = s->plat.reserved_bytes;
    if (!yio_key(m, "workspace_bytes"))
        s->mem.workspace_bytes = s->plat.workspace_bytes;
}

/* parallel.layer_sharding: distinct names of full-layout projections. */
static int read_layer_sharding(const ynode *par, scenario *s, cp_err *err)
{
    const ynode *n = yio_key(par, "layer_sharding");
    if (!n)
        return 0;
    if (yio_want_seq(n, "parallel.layer_sharding", err) < 0)
        return -1;
    if (n->n > WL_MAX_SHARDED)
        return cp_fail_at(err, n->loc, "parallel.layer_sharding: at most %d names, got %zu",
                          WL_MAX_SHARDED, n->n);
    wl_parallel *p = &s->par;
    for (size_t i = 0; i < n->n; i++) {
        char what[64];
        snprintf(what, sizeof what, "parallel.layer_sharding.%zu", i);
        int k;
        if (yio_enum(n->kids[i], what, sharding_names, &k, err) < 0)
            return -1;
        for (int j = 0; j < p->n_layer_sharding; j++)
            if (strcmp(p->layer_sharding[j], sharding_names[k]) == 0)
                return cp_fail_at(err, n->kids[i]->loc, "%s: \"%s\" is listed twice", what,
                                  sharding_names[k]);
        snprintf(p->layer_sharding[p->n_layer_sharding++], sizeof p->layer_sharding[0], "%s",
                 sharding_names[k]);
    }
    return 0;
}

/* precision: one dtype for everything, or {weights, mlp_weights,
 * activations, kv_cache, activation_quant, quant_description}.
 * mlp_weights defaults to weights (here, and again after the checkpoint's
 * format has been applied: checkpoint_precision).  A quant description
 * types every linear tensor by name, the MLP's among them, so mlp_weights
 * beside one is refused rather than given a precedence. */
static int read_precision(const ynode *root, scenario *s, cp_err *err)
{
    const ynode *n = yio_key(root, "precision");
    if (!n)
        return 0;
    int w = 0, mw = -1, a = s->a_dtype, kv = s->kv_dtype, aq = AQ_KERNEL;
    if (n->kind == YN_MAP) {
        const char *qd = NULL;
        if (yio_opt_enum(n, "precision", "weights", weight_names, &w, err) < 0 ||
            yio_opt_enum(n, "precision", "mlp_weights", weight_names, &mw, err) < 0 ||
            yio_opt_enum(n, "precision", "activations", dtype_names, &a, err) < 0 ||
            yio_opt_enum(n, "precision", "kv_cache", dtype_names, &kv, err) < 0 ||
            yio_opt_enum(n, "precision", "activation_quant", act_quant_names, &aq, err) < 0 ||
            yio_opt_str(n, "precision", "quant_description", &qd, err) < 0 ||
            yio_no_unknown(n, "precision", precision_keys, err) < 0)
            return -1;
        if (qd && mw >= 0)
            return cp_fail_at(err, yio_key(n, "mlp_weights")->loc,
                              "precision.mlp_weights: precision.quant_description already "
                              "types every linear weight, the MLP's among them; give one of "
                              "the two");
        if (qd) {
            char dir[1024];
            cp_resolve(s->quant_path, sizeof s->quant_path,
                       cp_dirname(dir, sizeof dir, s->path), qd);
        }
    } else {
        if (yio_enum(n, "precision", weight_names, &w, err) < 0)
            return -1;
        a = kv = weight_kinds[w].dt;
    }
    s->w_dtype = weight_kinds[w].dt;
    s->w_qscale = (uint8_t)weight_kinds[w].qs;
    int m = mw >= 0 ? mw : w;
    s->mlp_dtype = weight_kinds[m].dt;
    s->mlp_qscale = (uint8_t)weight_kinds[m].qs;
    s->act_quant = (wl_act_quant)aq;
    s->a_dtype = (cp_dtype)a;
    s->kv_dtype = (cp_dtype)kv;
    return 0;
}

/* ---- requests ------------------------------------------------------------ */

/* The kinds of entry of requests:, each made by one key (a single request
 * by none of them), and the keys each takes. */
typedef enum { SRC_SINGLE, SRC_PERIODIC, SRC_POISSON, SRC_STREAMS, SRC_TRACE } wl_src;

static const char *const single_keys[] = { "prompt_tokens", "arrival_s", "decode_tokens",
                                           "cached_tokens", "name", NULL };
static const char *const periodic_keys[] = { "every_s", "count", "start_s", "prompt_tokens",
                                             "decode_tokens", "cached_tokens", "name", NULL };
static const char *const poisson_keys[] = { "rate_per_s", "count", "seed", "start_s",
                                            "prompt_tokens", "decode_tokens", "cached_tokens",
                                            "name", NULL };
static const char *const streams_keys[] = { "streams", "count", "think_s", "start_s",
                                            "prompt_tokens", "decode_tokens", "cached_tokens",
                                            "name", NULL };
static const char *const trace_keys[] = { "trace", "name", NULL };
/* every key of any kind (the suggestions for a misspelt one) */
static const char *const request_keys[] = { "prompt_tokens", "arrival_s", "decode_tokens",
                                            "cached_tokens", "name", "every_s", "count",
                                            "start_s", "rate_per_s", "seed", "streams",
                                            "think_s", "trace", NULL };

static const struct {
    const char *key;            /* the key that makes the kind; NULL: single */
    const char *name;           /* in messages */
    const char *const *keys;
} src_kinds[] = {
    { NULL, "a single request", single_keys },
    { "every_s", "a periodic entry (every_s)", periodic_keys },
    { "rate_per_s", "a Poisson entry (rate_per_s)", poisson_keys },
    { "streams", "a closed-loop entry (streams)", streams_keys },
    { "trace", "a trace entry (trace)", trace_keys },
};

static int in_list(const char *const *list, const char *key)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(list[i], key) == 0)
            return 1;
    return 0;
}

/* Index of key in map, -1 when absent (without marking it seen). */
static long key_index(const ynode *map, const char *key)
{
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->keys[i], key) == 0)
            return (long)i;
    return -1;
}

/* The requests read so far (s->reqs, grown as needed) and what the single
 * entries' order check needs. */
typedef struct req_buf {
    scenario *s;
    size_t cap;
    int singles;                /* single entries so far */
    double last_arrival;        /* arrival_s of the last of them */
    size_t last_index;          /* its index in requests: */
    int sources;                /* periodic, Poisson, closed-loop or trace entries */
} req_buf;

/* Room for `more` requests; beyond WL_MAX_REQUESTS the error names key. */
static int buf_room(req_buf *b, long long more, cp_loc loc, const char *key, cp_err *err)
{
    scenario *s = b->s;
    long long need = (long long)s->nreqs + more;
    if (need > WL_MAX_REQUESTS)
        return cp_fail_at(err, loc, "%s: the requests would number %lld; cpsim takes at most %d "
                          "open-loop requests", key, need, WL_MAX_REQUESTS);
    if ((size_t)need <= b->cap)
        return 0;
    size_t cap = b->cap * 2 > (size_t)need ? b->cap * 2 : (size_t)need;
    wl_request *r = realloc(s->reqs, cap * sizeof *r);
    if (!r)
        return cp_fail(err, CP_EXIT_INTERNAL, "out of memory for %zu requests", cap);
    s->reqs = r;
    b->cap = cap;
    return 0;
}

static void buf_add(req_buf *b, wl_request r)
{
    b->s->reqs[b->s->nreqs++] = r;
}

/* The class of a request named `name` (interned into s->classes in first
 * use order); what and loc say where the name was written. */
static int intern_class(scenario *s, const char *name, const char *what, cp_loc loc, int *cls,
                        cp_err *err)
{
    static const char ok[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-";
    size_t len = strlen(name), good = strspn(name, ok);
    if (len == 0 || len >= WL_CLASS_LEN)
        return cp_fail_at(err, loc, "%s: a class name takes 1 to %d characters, got %zu", what,
                          WL_CLASS_LEN - 1, len);
    if (good < len) {
        unsigned char c = (unsigned char)name[good];
        char shown[8];
        if (c >= 32 && c < 127)
            snprintf(shown, sizeof shown, "'%c'", c);
        else
            snprintf(shown, sizeof shown, "\\x%02x", c);
        return cp_fail_at(err, loc, "%s: \"%.*s\" holds the character %s; a class name takes "
                          "letters, digits, '_', '.' and '-'", what, WL_CLASS_LEN, name, shown);
    }
    for (int i = 0; i < s->nclasses; i++)
        if (strcmp(s->classes[i], name) == 0) {
            *cls = i;
            return 0;
        }
    if (s->nclasses == WL_MAX_CLASSES)
        return cp_fail_at(err, loc, "%s: \"%s\" would be request class %d; cpsim takes at most %d",
                          what, name, WL_MAX_CLASSES + 1, WL_MAX_CLASSES);
    snprintf(s->classes[s->nclasses], sizeof s->classes[0], "%s", name);
    *cls = s->nclasses++;
    return 0;
}

/* A context within WL_MAX_PROMPT: cached + prompt + decode tokens. */
static int check_context(const char *what, cp_loc loc, long long cached, long long prompt,
                         long long decode, cp_err *err)
{
    if (cached + prompt + decode <= WL_MAX_PROMPT)
        return 0;
    return cp_fail_at(err, loc, "%s: cached_tokens + prompt_tokens + decode_tokens = %lld + %lld "
                      "+ %lld = %lld tokens; cpsim takes contexts of at most %lld", what, cached,
                      prompt, decode, cached + prompt + decode, WL_MAX_PROMPT);
}

/* What every request of an entry looks like (prompt_tokens required). */
typedef struct wl_shape {
    long long prompt, decode, cached;
    int cls;
} wl_shape;

static int read_shape(const ynode *item, const char *what, scenario *s, wl_shape *sh,
                      cp_err *err)
{
    *sh = (wl_shape){ 0, 0, 0, -1 };
    const char *name = NULL;
    if (yio_opt_int(item, what, "prompt_tokens", 1, WL_MAX_PROMPT, &sh->prompt, err) < 0 ||
        yio_opt_int(item, what, "decode_tokens", 0, WL_MAX_DECODE, &sh->decode, err) < 0 ||
        yio_opt_int(item, what, "cached_tokens", 0, WL_MAX_PROMPT, &sh->cached, err) < 0 ||
        yio_opt_str(item, what, "name", &name, err) < 0)
        return -1;
    if (!yio_key(item, "prompt_tokens"))
        return cp_fail_at(err, item->loc, "%s: prompt_tokens is required", what);
    if (check_context(what, item->loc, sh->cached, sh->prompt, sh->decode, err) < 0)
        return -1;
    char key[64];
    return name ? intern_class(s, name, yio_path(key, sizeof key, what, "name"),
                               yio_key(item, "name")->loc, &sh->cls, err)
                : 0;
}

static wl_request shape_request(const wl_shape *sh, double arrival)
{
    return (wl_request){ .prompt_tokens = sh->prompt, .arrival_s = arrival,
                         .decode_tokens = sh->decode, .cached_tokens = sh->cached,
                         .cls = sh->cls };
}

/* A required key of an entry of some kind. */
static int need_key(const ynode *item, const char *what, const char *kind_key, const char *key,
                    const char *why, cp_err *err)
{
    if (yio_key(item, key))
        return 0;
    return cp_fail_at(err, item->loc, "%s: %s needs %s (%s)", what, kind_key, key, why);
}

static int read_single(const ynode *item, size_t i, const char *what, req_buf *b, cp_err *err)
{
    double arrival = 0;
    wl_shape sh;
    if (yio_opt_double(item, what, "arrival_s", 0, WL_MAX_ARRIVAL, &arrival, err) < 0 ||
        read_shape(item, what, b->s, &sh, err) < 0)
        return -1;
    if (b->singles > 0 && arrival < b->last_arrival) {
        /* arrival_s may be absent (0): then the request itself is blamed */
        const ynode *at = yio_key(item, "arrival_s");
        return cp_fail_at(err, at ? at->loc : item->loc,
                          "%s.arrival_s: requests must be sorted by arrival_s; %g%s comes after "
                          "%g of requests.%zu", what, arrival, at ? "" : " (the default)",
                          b->last_arrival, b->last_index);
    }
    b->singles++;
    b->last_arrival = arrival;
    b->last_index = i;
    if (buf_room(b, 1, item->loc, what, err) < 0)
        return -1;
    buf_add(b, shape_request(&sh, arrival));
    return 0;
}

/* every_s with count: arrivals start_s + k * every_s, k = 0 .. count - 1
 * (every_s 0: all at start_s). */
static int read_periodic(const ynode *item, const char *what, req_buf *b, cp_err *err)
{
    double every = 0, start = 0;
    long long count = 0;
    wl_shape sh;
    /* every_s: 0 is `count` simultaneous arrivals at start_s (a burst) */
    if (yio_opt_double(item, what, "every_s", 0, WL_MAX_ARRIVAL, &every, err) < 0 ||
        yio_opt_int(item, what, "count", 1, WL_MAX_REQUESTS, &count, err) < 0 ||
        yio_opt_double(item, what, "start_s", 0, WL_MAX_ARRIVAL, &start, err) < 0 ||
        read_shape(item, what, b->s, &sh, err) < 0 ||
        need_key(item, what, "every_s", "count", "how many requests", err) < 0)
        return -1;
    double last = start + (double)(count - 1) * every;
    if (last > WL_MAX_ARRIVAL)
        return cp_fail_at(err, yio_key(item, "every_s")->loc,
                          "%s.every_s: the last of the %lld requests would arrive at %g s "
                          "(start_s + (count - 1) * every_s), beyond the %g s arrivals may take",
                          what, count, last, WL_MAX_ARRIVAL);
    char key[64];
    if (buf_room(b, count, yio_key(item, "count")->loc, yio_path(key, sizeof key, what, "count"),
                 err) < 0)
        return -1;
    for (long long k = 0; k < count; k++)
        buf_add(b, shape_request(&sh, start + (double)k * every));
    return 0;
}

/* The Poisson arrivals' generator: splitmix64 (Steele, Lea and Flood,
 * "Fast splittable pseudorandom number generators", OOPSLA 2014; the
 * constants of Vigna's splitmix64.c) from the state `seed`; the top 53
 * bits of each output give u = (bits + 0.5) / 2^53 in (0, 1), and
 * -log(u) / rate an exponential inter-arrival time of mean 1 / rate.  The
 * first request arrives one such time after start_s.  Only integer
 * arithmetic and one log per request: a seed gives the same arrivals on
 * every run. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static double exp_interval(uint64_t *state, double rate)
{
    double u = ((double)(splitmix64(state) >> 11) + 0.5) * 0x1.0p-53;
    return -log(u) / rate;
}

/* rate_per_s with count and seed: a Poisson process from start_s. */
static int read_poisson(const ynode *item, const char *what, req_buf *b, cp_err *err)
{
    double rate = 0, start = 0;
    long long count = 0, seed = 0;
    wl_shape sh;
    if (opt_above(item, what, "rate_per_s", 0, WL_MAX_RATE, &rate, err) < 0 ||
        yio_opt_int(item, what, "count", 1, WL_MAX_REQUESTS, &count, err) < 0 ||
        yio_opt_int(item, what, "seed", 0, LLONG_MAX, &seed, err) < 0 ||
        yio_opt_double(item, what, "start_s", 0, WL_MAX_ARRIVAL, &start, err) < 0 ||
        read_shape(item, what, b->s, &sh, err) < 0 ||
        need_key(item, what, "rate_per_s", "count", "how many requests", err) < 0 ||
        need_key(item, what, "rate_per_s", "seed", "an integer >= 0; a seed draws the same "
                 "arrivals on every run", err) < 0)
        return -1;
    char key[64];
    if (buf_room(b, count, yio_key(item, "count")->loc, yio_path(key, sizeof key, what, "count"),
                 err) < 0)
        return -1;
    uint64_t state = (uint64_t)seed;
    double t = start;
    for (long long k = 0; k < count; k++) {
        t += exp_interval(&state, rate);
        if (t > WL_MAX_ARRIVAL)
            return cp_fail_at(err, yio_key(item, "rate_per_s")->loc,
                              "%s.rate_per_s: request %lld of %lld would arrive at %g s, beyond "
                              "the %g s arrivals may take (a higher rate or a lower count)",
                              what, k + 1, count, t, WL_MAX_ARRIVAL);
        buf_add(b, shape_request(&sh, t));
    }
    return 0;
}

/* streams: K closed-loop clients (s->streams). */
static int read_streams(const ynode *item, size_t entry, const char *what, req_buf *b,
                        cp_err *err)
{
    scenario *s = b->s;
    long long k = 0, count = 0;
    double think = 0, start = 0;
    wl_shape sh;
    if (yio_opt_int(item, what, "streams", 1, WL_MAX_CLIENTS, &k, err) < 0 ||
        yio_opt_int(item, what, "count", 0, WL_MAX_REQUESTS, &count, err) < 0 ||
        yio_opt_double(item, what, "think_s", 0, WL_MAX_ARRIVAL, &think, err) < 0 ||
        yio_opt_double(item, what, "start_s", 0, WL_MAX_ARRIVAL, &start, err) < 0 ||
        read_shape(item, what, s, &sh, err) < 0)
        return -1;
    if (s->nstreams == WL_MAX_STREAM_SRC)
        return cp_fail_at(err, item->loc, "%s: at most %d closed-loop (streams) entries", what,
                          WL_MAX_STREAM_SRC);
    if (count == 0 && !(s->duration_s > 0)) {
        const ynode *at = yio_key(item, "count");
        return cp_fail_at(err, at ? at->loc : yio_key(item, "streams")->loc,
                          "%s: streams without a count send requests until "
                          "simulation.duration_s, which is not set (give count, requests per "
                          "client, or simulation.duration_s)", what);
    }
    s->streams[s->nstreams++] = (wl_streams){ .streams = (int)k, .prompt_tokens = sh.prompt,
                                              .decode_tokens = sh.decode,
                                              .cached_tokens = sh.cached, .start_s = start,
                                              .think_s = think, .count = count, .cls = sh.cls,
                                              .entry = (int)entry };
    return 0;
}

/* The columns of a trace file, in this order; the last two optional. */
static const char *const trace_cols[] = { "arrival_s", "prompt_tokens", "decode_tokens",
                                          "cached_tokens", "name" };
#define TRACE_HEADER "arrival_s,prompt_tokens,decode_tokens[,cached_tokens[,name]]"
#define TRACE_MAX_COLS 5

/* Where a trace file named in the workload lies: relative to the
 * workload's folder, as the other paths of the workload. */
static char *trace_path(char *buf, size_t len, const scenario *s, const char *file)
{
    char dir[1024];
    return cp_resolve(buf, len, cp_dirname(dir, sizeof dir, s->path), file);
}

/* Split a CSV line in place at the commas, blanks around the fields
 * trimmed; returns the number of fields (at most max + 1: one more says
 * "too many"), with each field's 1-based column. */
static int csv_split(char *line, char **field, int *col, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        char *end = strchr(p, ',');
        if (end)
            *end = '\0';
        char *f = p + strspn(p, " \t");
        size_t len = strlen(f);
        while (len > 0 && (f[len - 1] == ' ' || f[len - 1] == '\t'))
            f[--len] = '\0';
        if (n <= max) {
            field[n] = f;
            col[n] = (int)(f - line) + 1;
        }
        n++;
        if (!end || n > max)
            return n;
        p = end + 1;
    }
}

/* Whether t is a decimal number: [+-]digits[.digits][(e|E)[+-]digits], at
 * least one digit before the exponent.  strtod alone also takes hex
 * ("0x400", "0x1p3"), "inf" and "nan", which a trace never means. */
static int csv_decimal(const char *t)
{
    const char *p = t;
    int digits = 0;
    if (*p == '+' || *p == '-')
        p++;
    for (; isdigit((unsigned char)*p); p++)
        digits++;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            digits++;
    if (!digits)
        return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return *p == '\0';
}

/* A CSV integer: decimal, or a decimal number form that is an exact
 * integer ("1e3", "1024.0"). */
static int csv_int(const char *t, long long lo, long long hi, long long *out)
{
    if (!csv_decimal(t))
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    if (*end || errno) {
        double d = strtod(t, &end);
        /* 9.2e18 is just below 2^63 (as yamlio's parse_integer) */
        if (*end || !isfinite(d) || d != floor(d) || fabs(d) > 9.2e18)
            return -1;
        v = (long long)d;
    }
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int csv_double(const char *t, double lo, double hi, double *out)
{
    if (!csv_decimal(t))
        return -1;
    char *end;
    double d = strtod(t, &end);
    if (*end || !isfinite(d) || d < lo || d > hi)
        return -1;
    *out = d;
    return 0;
}

/* The header line: the columns of trace_cols, in order, the last two
 * optional; *ncols gets how many. */
static int trace_header(char *line, const char *path, int *ncols, cp_err *err)
{
    char shown[128];
    snprintf(shown, sizeof shown, "%.100s", line);
    char *field[TRACE_MAX_COLS + 1];
    int col[TRACE_MAX_COLS + 1];
    int n = csv_split(line, field, col, TRACE_MAX_COLS);
    int bad = n < 3 || n > TRACE_MAX_COLS ? 1 : 0;
    for (int c = 0; !bad && c < n; c++)
        if (strcmp(field[c], trace_cols[c]) != 0)
            bad = col[c];
    if (bad)
        return cp_fail_at(err, (cp_loc){ path, 1, bad }, "expected the header line "
                          TRACE_HEADER ", got \"%s\"", shown);
    *ncols = n;
    return 0;
}

/* One data row of a trace file: a request with the bounds of a single
 * entry; a row without a name takes def_cls. */
static int trace_row(scenario *s, char *line, const char *path, int lineno, int ncols,
                     int def_cls, cp_err *err)
{
    char *field[TRACE_MAX_COLS + 1];
    int col[TRACE_MAX_COLS + 1];
    int n = csv_split(line, field, col, TRACE_MAX_COLS);
    cp_loc at = { path, lineno, 1 };
    if (n != ncols)
        return cp_fail_at(err, at, "expected %d columns as the header says, got %s%d", ncols,
                          n > TRACE_MAX_COLS ? "more than " : "",
                          n > TRACE_MAX_COLS ? TRACE_MAX_COLS : n);
    double arrival = 0;
    long long v[3] = { 0, 0, 0 };       /* prompt, decode, cached tokens */
    static const long long lo[3] = { 1, 0, 0 }, hi[3] = { WL_MAX_PROMPT, WL_MAX_DECODE,
                                                          WL_MAX_PROMPT };
    for (int c = 0; c < ncols && c < 4; c++) {
        at.col = col[c];
        int bad = c == 0 ? csv_double(field[c], 0, WL_MAX_ARRIVAL, &arrival)
                         : csv_int(field[c], lo[c - 1], hi[c - 1], &v[c - 1]);
        if (bad < 0 && c == 0)
            return cp_fail_at(err, at, "arrival_s: expected a number in [0, %g], got \"%.40s\"",
                              WL_MAX_ARRIVAL, field[c]);
        if (bad < 0)
            return cp_fail_at(err, at, "%s: expected an integer in [%lld, %lld], got \"%.40s\"",
                              trace_cols[c], lo[c - 1], hi[c - 1], field[c]);
    }
    at.col = 1;
    if (check_context("the request", at, v[2], v[0], v[1], err) < 0)
        return -1;
    int cls = def_cls;
    if (ncols == 5 && field[4][0]) {
        at.col = col[4];
        if (intern_class(s, field[4], "name", at, &cls, err) < 0)
            return -1;
    }
    s->reqs[s->nreqs++] = (wl_request){ .prompt_tokens = v[0], .arrival_s = arrival,
                                        .decode_tokens = v[1], .cached_tokens = v[2],
                                        .cls = cls };
    return 0;
}

/* trace: FILE.csv, a header line then one request a line (any order). */
static int read_trace(const ynode *item, const char *what, req_buf *b, cp_err *err)
{
    scenario *s = b->s;
    const char *file = NULL, *name = NULL;
    char key[64];
    int def_cls = -1;
    if (yio_opt_str(item, what, "trace", &file, err) < 0 ||
        yio_opt_str(item, what, "name", &name, err) < 0)
        return -1;
    if (name && intern_class(s, name, yio_path(key, sizeof key, what, "name"),
                             yio_key(item, "name")->loc, &def_cls, err) < 0)
        return -1;
    cp_loc tloc = yio_key(item, "trace")->loc;
    yio_path(key, sizeof key, what, "trace");
    char path[1024];
    trace_path(path, sizeof path, s, file);
    FILE *f = fopen(path, "r");
    if (!f)
        return cp_fail_at(err, tloc, "%s: cannot read %s: %s", key, path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, ncols = 0, rc = 0;
    long long rows = 0;
    ssize_t got;
    while (rc == 0 && (got = getline(&line, &cap, f)) >= 0) {
        lineno++;
        size_t nul = strlen(line);
        if ((ssize_t)nul < got) {   /* C strings would end the row there */
            rc = cp_fail_at(err, (cp_loc){ path, lineno, (int)nul + 1 },
                            "a NUL byte in the row (a CSV trace is text)");
            break;
        }
        line[strcspn(line, "\r\n")] = '\0';
        char *text = line;
        if (lineno == 1 && strncmp(text, "\xef\xbb\xbf", 3) == 0)
            text += 3;                  /* a UTF-8 byte order mark */
        if (lineno == 1) {
            rc = trace_header(text, path, &ncols, err);
            continue;
        }
        if (text[strspn(text, " \t")] == '\0')
            continue;                   /* blank lines */
        rc = buf_room(b, 1, (cp_loc){ path, lineno, 1 }, key, err);
        if (rc == 0)
            rc = trace_row(s, text, path, lineno, ncols, def_cls, err);
        rows++;
    }
    if (rc == 0 && ferror(f))
        rc = cp_fail_at(err, tloc, "%s: cannot read %s: %s", key, path, strerror(errno));
    else if (rc == 0 && lineno == 0)
        rc = cp_fail_at(err, (cp_loc){ path, 0, 0 }, "empty; a trace starts with the header line "
                        TRACE_HEADER);
    else if (rc == 0 && rows == 0)
        rc = cp_fail_at(err, (cp_loc){ path, 0, 0 }, "no request after the header line");
    free(line);
    fclose(f);
    return rc;
}

/* One entry of requests:, of exactly one kind, with only that kind's keys. */
static int read_entry(const ynode *item, size_t i, req_buf *b, cp_err *err)
{
    char what[48];
    snprintf(what, sizeof what, "requests.%zu", i);
    if (yio_want_map(item, what, err) < 0)
        return -1;
    wl_src kind = SRC_SINGLE;
    for (size_t k = 1; k < COUNT(src_kinds); k++) {
        long at = key_index(item, src_kinds[k].key);
        if (at < 0)
            continue;
        if (kind != SRC_SINGLE)
            return cp_fail_at(err, item->key_locs[at], "%s: %s and %s in one entry; an entry is "
                              "one kind of request source", what, src_kinds[kind].name,
                              src_kinds[k].name);
        kind = (wl_src)k;
    }
    const char *const *keys = src_kinds[kind].keys;
    for (size_t k = 0; k < item->n; k++)
        if (in_list(request_keys, item->keys[k]) && !in_list(keys, item->keys[k])) {
            char list[256] = "";
            for (size_t j = 0; keys[j]; j++) {
                size_t o = strlen(list);
                snprintf(list + o, sizeof list - o, "%s%s", j ? ", " : "", keys[j]);
            }
            return cp_fail_at(err, item->key_locs[k], "%s: %s takes no %s; its keys: %s", what,
                              src_kinds[kind].name, item->keys[k], list);
        }
    for (size_t j = 0; keys[j]; j++)
        yio_key(item, keys[j]);
    if (yio_no_unknown(item, what, request_keys, err) < 0)
        return -1;
    b->sources += kind != SRC_SINGLE;
    switch (kind) {
    case SRC_SINGLE:
        return read_single(item, i, what, b, err);
    case SRC_PERIODIC:
        return read_periodic(item, what, b, err);
    case SRC_POISSON:
        return read_poisson(item, what, b, err);
    case SRC_STREAMS:
        return read_streams(item, i, what, b, err);
    case SRC_TRACE:
        return read_trace(item, what, b, err);
    }
    return 0;
}

/* Stable merge sort of r[0, n) by arrival_s (tmp: room for n). */
static void sort_by_arrival(wl_request *r, wl_request *tmp, size_t n)
{
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, c = mid, k = lo;
            while (a < mid && c < hi)
                tmp[k++] = r[c].arrival_s < r[a].arrival_s ? r[c++] : r[a++];
            while (a < mid)
                tmp[k++] = r[a++];
            while (c < hi)
                tmp[k++] = r[c++];
        }
        memcpy(r, tmp, n * sizeof *r);
    }
}

/* requests: a non-empty list of entries (single requests sorted by arrival
 * time among themselves); every open-loop request they make, merged in
 * arrival order (file order at equal times). */
static int read_requests(const ynode *root, scenario *s, cp_err *err)
{
    const ynode *n = yio_key(root, "requests");
    if (!n)
        return cp_fail_at(err, (cp_loc){ s->path, 0, 0 },
                          "requests: required key is missing (a list of {prompt_tokens, "
                          "arrival_s, decode_tokens})");
    if (yio_want_seq(n, "requests", err) < 0)
        return -1;
    if (n->n == 0)
        return cp_fail_at(err, n->loc, "requests: the list is empty; give at least one request");
    req_buf b = { .s = s, .cap = n->n };
    s->reqs = calloc(n->n, sizeof *s->reqs);
    if (!s->reqs)
        return cp_fail(err, CP_EXIT_INTERNAL, "out of memory for %zu requests", n->n);
    for (size_t i = 0; i < n->n; i++)
        if (read_entry(n->kids[i], i, &b, err) < 0)
            return -1;
    if (s->nreqs == 0 && s->nstreams == 0)
        return cp_fail_at(err, n->loc, "requests: the entries make no request");
    int sorted = 1;
    for (int q = 1; q < s->nreqs && sorted; q++)
        sorted = s->reqs[q].arrival_s >= s->reqs[q - 1].arrival_s;
    if (!sorted) {
        wl_request *tmp = cp_xcalloc((size_t)s->nreqs, sizeof *tmp);
        sort_by_arrival(s->reqs, tmp, (size_t)s->nreqs);
        free(tmp);
    }
    s->serving = s->nreqs > 1 || b.sources > 0 || s->duration_s > 0;
    return 0;
}

/* Every section that needs no file other than the workload. */
static int read_doc(scenario *s, cp_err *err)
{
    const ynode *root = yio_root(s->doc);
    if (yio_want_map(root, "the workload", err) < 0)
        return -1;
    set_defaults(s);
    /* model and platform are read when they are resolved; mark every known
     * key now so that a misspelt top-level key is reported first */
    for (size_t i = 0; top_keys[i]; i++)
        yio_key(root, top_keys[i]);
    if (yio_no_unknown(root, "", top_keys, err) < 0 || read_precision(root, s, err) < 0)
        return -1;
    for (size_t i = 0; i < COUNT(sections); i++)
        if (read_section(root, &sections[i], s, err) < 0)
            return -1;
    return read_requests(root, s, err);
}

/* "origin:line:col: " (or "origin: ") of loc into buf. */
static const char *loc_prefix(char *buf, size_t len, cp_loc loc)
{
    if (loc.line > 0)
        snprintf(buf, len, "%s:%d:%d: ", loc.origin, loc.line, loc.col);
    else
        snprintf(buf, len, "%s: ", loc.origin);
    return buf;
}

/* Report another loader's error `in` as caused by workload key `key` at
 * loc, keeping its message and exit code.  A message that already points
 * into the workload (platform overrides) is passed on as it is. */
static int blame(const scenario *s, cp_err *err, const cp_err *in, cp_loc loc, const char *key)
{
    int code = in->code ? in->code : CP_EXIT_INTERNAL;
    size_t plen = strlen(s->path);
    if ((strncmp(in->msg, s->path, plen) == 0 && in->msg[plen] == ':') ||
        strncmp(in->msg, "--set ", 6) == 0)
        return cp_fail(err, code, "%s", in->msg);
    char where[600];
    return cp_fail(err, code, "%s%s: %s", loc_prefix(where, sizeof where, loc), key, in->msg);
}

static int resolve_model(scenario *s, cp_err *err)
{
    const ynode *n = yio_key(yio_root(s->doc), "model");
    if (!n)
        return cp_fail_at(err, (cp_loc){ s->path, 0, 0 },
                          "model: required key is missing (a bundled model name or a path to "
                          "a config.json)");
    const char *spec = yio_str(n, "model", err);
    if (!spec)
        return -1;
    char dir[1024];
    cp_err in = { 0 };
    if (arch_load(spec, cp_dirname(dir, sizeof dir, s->path), &s->model, &in) < 0)
        return blame(s, err, &in, n->loc, "model");
    return 0;
}

/* precision.quant_description: read it and check it against the model. */
static int load_quant(scenario *s, cp_err *err)
{
    if (!s->quant_path[0])
        return 0;
    const ynode *n = yio_key(yio_key(yio_root(s->doc), "precision"), "quant_description");
    cp_err in = { 0 };
    s->quant = quant_desc_load(s->quant_path, &in);
    if (!s->quant || quant_desc_check(s->quant, &s->model, &in) < 0)
        return blame(s, err, &in, n->loc, "precision.quant_description");
    return 0;
}

/* platform: a name, or {name, overrides...}; --platform replaces the name. */
static int resolve_platform(scenario *s, const char *override, cp_err *err)
{
    const ynode *n = yio_key(yio_root(s->doc), "platform");
    if (n && n->kind != YN_MAP && n->kind != YN_SCALAR)
        return yio_str(n, "platform", err) ? 0 : -1;
    const ynode *over = n && n->kind == YN_MAP ? n : NULL;
    const ynode *name_node = over ? yio_key(over, "name") : n;
    char origin[300];
    cp_loc loc = { s->path, 0, 0 };
    const char *name;
    if (override) {
        snprintf(origin, sizeof origin, "--platform %s", override);
        loc.origin = origin;
        name = override;
    } else if (!n) {
        return cp_fail_at(err, loc, "platform: required key is missing (a preset name, a path, "
                                    "or a mapping with a name and overrides)");
    } else if (!name_node) {
        return cp_fail_at(err, n->loc, "platform: the mapping needs a name (a preset or a path)");
    } else {
        name = yio_str(name_node, over ? "platform.name" : "platform", err);
        if (!name)
            return -1;
        loc = name_node->loc;
    }
    /* a preset path is relative to the workload file; --platform's to the
     * current directory */
    char dir[1024];
    cp_err in = { 0 };
    if (plat_load(name, override ? NULL : cp_dirname(dir, sizeof dir, s->path), over, &s->plat,
                  &in) < 0)
        return blame(s, err, &in, loc, "platform");
    return 0;
}

/* Where a value was written: the node of section.key, else the section,
 * else the workload file. */
static cp_loc loc_of(const scenario *s, const char *section, const char *key)
{
    const ynode *sec = yio_key(yio_root(s->doc), section);
    const ynode *n = yio_key(sec, key);
    if (n)
        return n->loc;
    return sec ? sec->loc : (cp_loc){ s->path, 0, 0 };
}

static int check_devices(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    long long need = (long long)p->tp * p->sp * p->dp;
    int have = plat_devices(&s->plat);
    if (need <= have)
        return 0;
    const char *key = p->tp > 1 ? "tp" : p->sp > 1 ? "sp" : "dp";
    return cp_fail_at(err, loc_of(s, "parallel", key),
                      "parallel: tp*sp*dp = %lld needs %lld devices, platform %s has %d", need,
                      need, s->plat.name, have);
}

static int check_heads(const scenario *s, cp_err *err)
{
    const arch *m = &s->model;
    int tp = s->par.tp;
    cp_loc at = loc_of(s, "parallel", "tp");
    if (m->heads % tp)
        return cp_fail_at(err, at, "parallel.tp: tp = %d does not divide the %lld attention "
                                   "heads of %s", tp, (long long)m->heads, m->name);
    if (m->kv_heads % tp && tp % m->kv_heads)
        return cp_fail_at(err, at, "parallel.tp: tp = %d and the %lld KV heads of %s: one must "
                                   "divide the other", tp, (long long)m->kv_heads, m->name);
    return 0;
}

static int check_experts(const scenario *s, cp_err *err)
{
    const arch *m = &s->model;
    const wl_parallel *p = &s->par;
    cp_loc ep_at = loc_of(s, "parallel", "ep");
    if (!m->has_moe)
        return p->ep > 1 ? cp_fail_at(err, ep_at, "parallel.ep: ep = %d needs a MoE model; %s "
                                                  "has no routed experts", p->ep, m->name)
                         : 0;
    if (p->ep == 1 && m->moe_intermediate % p->tp)
        return cp_fail_at(err, loc_of(s, "parallel", "tp"),
                          "parallel.tp: tp = %d does not divide moe_intermediate_size %lld of "
                          "%s (or shard the experts instead with parallel.ep > 1)",
                          p->tp, (long long)m->moe_intermediate, m->name);
    long long ranks = (long long)p->tp * p->sp * p->dp;
    if (ranks % p->ep)
        return cp_fail_at(err, ep_at, "parallel.ep: ep = %d does not divide tp*sp*dp = %lld",
                          p->ep, ranks);
    if (m->experts % p->ep)
        return cp_fail_at(err, ep_at, "parallel.ep: ep = %d does not divide the %lld experts "
                                      "of %s", p->ep, (long long)m->experts, m->name);
    /* an EP group is ep consecutive ranks (TP fastest): inside a TP group,
     * or whole TP groups (of SP ranks or DP replicas) */
    if (p->ep > 1 && p->tp % p->ep != 0 && p->ep % p->tp != 0)
        return cp_fail_at(err, ep_at,
                          "parallel.ep: an expert-parallel group must lie inside a TP group "
                          "(ep divides tp = %d) or span whole TP groups (tp divides ep); "
                          "got ep = %d", p->tp, p->ep);
    return 0;
}

/* The exchange x kv_storage table of the SP design (cp-exchange.md). */
static int check_exchange(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    wl_exchange ex = p->exchange;
    int by_head = p->kv_storage == KV_BY_HEAD;
    int ok = ex == EX_AUTO || (ex == EX_ULYSSES && by_head) ||
             ((ex == EX_ALL_GATHER || sc_exchange_is_ring(ex)) && !by_head) ||
             (ex == EX_NONE && (!by_head || p->sp == 1));
    if (ok)
        return 0;
    const char *accepted = by_head ? "auto, ulysses (and none when sp = 1)"
                                   : "auto, all_gather, ring, ring_kv, none";
    char needs[96];
    if (ex == EX_NONE)
        snprintf(needs, sizeof needs, "with kv_storage by_head needs sp = 1 (parallel.sp = %d)",
                 p->sp);
    else
        snprintf(needs, sizeof needs, "needs kv_storage %s", by_head ? "by_position" : "by_head");
    return cp_fail_at(err, loc_of(s, "parallel", "exchange"),
                      "parallel.exchange: \"%s\" %s; with kv_storage %s the accepted values are "
                      "%s", exchange_names[ex], needs, kv_storage_names[p->kv_storage], accepted);
}

/* Ulysses turns token-split q/k/v into head-split: the heads of a TP rank
 * must divide by sp. */
static int check_ulysses(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    int ulysses = p->sp > 1 && p->kv_storage == KV_BY_HEAD &&
                  (p->exchange == EX_ULYSSES || p->exchange == EX_AUTO);
    long long per_rank = (long long)s->model.heads / p->tp;
    if (!ulysses || per_rank % p->sp == 0)
        return 0;
    return cp_fail_at(err, loc_of(s, "parallel", "sp"),
                      "parallel.sp: Ulysses (exchange %s, kv_storage by_head) spreads the %lld "
                      "heads of a TP rank (%lld heads / tp %d) over sp = %d, which does not "
                      "divide them", exchange_names[p->exchange], per_rank,
                      (long long)s->model.heads, p->tp, p->sp);
}

static int check_engine(const scenario *s, cp_err *err)
{
    if (s->chunked_prefill && s->par.sp > 1)
        return cp_fail_at(err, loc_of(s, "engine", "chunked_prefill"),
                          "engine.chunked_prefill: chunked prefill is off on SP nodes "
                          "(parallel.sp = %d)", s->par.sp);
    const ynode *eng = yio_key(yio_root(s->doc), "engine");
    /* vLLM refuses it too: SchedulerConfig._verify_args, "max_num_batched_tokens
     * (...) must be greater than or equal to max_num_seqs (...)" (vllm/config.py;
     * vllm/config/scheduler.py since v0.10) */
    if (s->chunked_prefill && s->max_num_batched_tokens < s->max_num_seqs)
        return cp_fail_at(err, loc_of(s, "engine", yio_key(eng, "max_num_batched_tokens")
                                                      ? "max_num_batched_tokens"
                                                      : "max_num_seqs"),
                          "engine.max_num_batched_tokens: %lld is below engine.max_num_seqs "
                          "(%lld); a step could not hold a token of every running request, "
                          "and vLLM refuses it (raise max_num_batched_tokens or lower "
                          "max_num_seqs)", (long long)s->max_num_batched_tokens,
                          (long long)s->max_num_seqs);
    if (yio_key(eng, "router") && (s->par.dp <= 1 || !s->serving))
        return cp_fail_at(err, loc_of(s, "engine", "router"),
                          "engine.router: how the parallel.dp replicas of a serving run share "
                          "its requests; this run has %s (drop the key)",
                          s->par.dp <= 1 ? "one replica" : "a single request");
    if (!s->chunked_prefill && yio_key(eng, "max_num_batched_tokens"))
        return cp_fail_at(err, loc_of(s, "engine", "max_num_batched_tokens"),
                          "engine.max_num_batched_tokens: the chunk size of chunked prefill; "
                          "set engine.chunked_prefill: true, or drop the key");
    return 0;
}

/* Keys of one exchange given with another: they would change nothing, so
 * they are refused (the strategy they belong to is named). */
static int check_exchange_keys(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    const ynode *par = yio_key(yio_root(s->doc), "parallel");
    const char *ex = exchange_names[p->exchange], *kv = kv_storage_names[p->kv_storage];
    if (yio_key(par, "all_gather_tensors") && p->all_gather_tensors != AGT_QKV &&
        p->exchange != EX_ALL_GATHER)
        return cp_fail_at(err, loc_of(s, "parallel", "all_gather_tensors"),
                          "parallel.all_gather_tensors: says what the all_gather exchange "
                          "gathers; this node runs exchange %s with kv_storage %s (set "
                          "exchange: all_gather with kv_storage: by_position, or drop the key)",
                          ex, kv);
    if (yio_key(par, "all_gather_merge") && p->all_gather_merge != AGM_ALL_ROWS &&
        (p->exchange != EX_ALL_GATHER || p->all_gather_tensors != AGT_QKV))
        return cp_fail_at(err, loc_of(s, "parallel", "all_gather_merge"),
                          "parallel.all_gather_merge: says how the all_gather exchange of q, k "
                          "and v merges its partials; this node runs exchange %s with "
                          "all_gather_tensors %s", ex, agt_names[p->all_gather_tensors]);
    if (yio_key(par, "embed") && p->embed_share &&
        !(p->kv_storage == KV_BY_HEAD || p->exchange == EX_ALL_GATHER ||
          sc_exchange_is_ring(p->exchange)))
        return cp_fail_at(err, loc_of(s, "parallel", "embed"),
                          "parallel.embed: share cuts a split step's tokens before the "
                          "embedding; exchange %s with kv_storage %s never splits a step", ex,
                          kv);
    int ring = sc_exchange_is_ring(p->exchange);
    if (yio_key(par, "ring_overlap") && p->ring_overlap && !ring)
        return cp_fail_at(err, loc_of(s, "parallel", "ring_overlap"),
                          "parallel.ring_overlap: overlaps the hops of the ring exchanges "
                          "(ring, ring_kv); this node runs exchange %s", ex);
    if (p->decode != DEC_DCP && (!ring || p->kv_storage != KV_BY_POSITION || p->sp <= 1))
        return cp_fail_at(err, loc_of(s, "parallel", "decode"),
                          "parallel.decode: %s is the ring's decode (exchange ring or ring_kv "
                          "over kv_storage by_position, sp > 1); this node runs exchange %s "
                          "with %s storage and sp %d", decode_names[p->decode], ex,
                          wl_kv_storage_name(p->kv_storage), p->sp);
    /* the rings split by KV ownership: a rank's share is the positions it
     * stores, striped (x % P) or zigzag (chunks r and 2P-1-r); a contiguous
     * split would leave the last rank most of the causal work */
    if (yio_key(par, "split") && ring && p->split == SPLIT_CONTIGUOUS)
        return cp_fail_at(err, loc_of(s, "parallel", "split"),
                          "parallel.split: the ring exchanges (ring, ring_kv) split by the KV "
                          "positions each rank stores, striped or zigzag, not contiguous");
    if (yio_key(par, "ring_select") && p->ring_select != RS_FIXED && !ring)
        return cp_fail_at(err, loc_of(s, "parallel", "ring_select"),
                          "parallel.ring_select: %s picks pass-KV or pass-Q for the split steps "
                          "of a ring exchange (exchange: ring or ring_kv with kv_storage: "
                          "by_position); this node runs exchange %s with kv_storage %s",
                          ring_select_names[p->ring_select], ex, kv);
    return 0;
}

/* A split step's attention covers the request's cached prefix (the KV of
 * the cached_tokens, already in each rank's share).  The rings, Ulysses
 * (every position of the rank's heads) and all_gather of q/k/v (every query
 * over the rank's own slots) read it where it is stored; all_gather of k/v
 * gathers the step's K/V alone, so its split steps would miss the prefix:
 * refused, naming the first request that would run such a step. */
static int check_split_prefix(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    if (p->sp <= 1 || p->kv_storage != KV_BY_POSITION || p->exchange != EX_ALL_GATHER ||
        p->all_gather_tensors != AGT_KV)
        return 0;
    long long cached = 0, prompt = 0;
    int q = -1;
    for (int i = 0; i < s->nreqs && q < 0; i++)
        if (s->reqs[i].cached_tokens > 0 && s->reqs[i].prompt_tokens >= p->min_tokens &&
            s->reqs[i].prompt_tokens >= p->sp) {
            q = i;
            cached = s->reqs[i].cached_tokens;
            prompt = s->reqs[i].prompt_tokens;
        }
    for (int i = 0; i < s->nstreams && q < 0; i++)
        if (s->streams[i].cached_tokens > 0 && s->streams[i].prompt_tokens >= p->min_tokens &&
            s->streams[i].prompt_tokens >= p->sp) {
            q = s->nreqs + i;
            cached = s->streams[i].cached_tokens;
            prompt = s->streams[i].prompt_tokens;
        }
    if (q < 0)
        return 0;
    char who[64];
    if (q < s->nreqs)
        snprintf(who, sizeof who, "request %d", q);
    else
        snprintf(who, sizeof who, "closed-loop source %d", q - s->nreqs);
    return cp_fail_at(err, loc_of(s, "parallel", "all_gather_tensors"),
                      "parallel.all_gather_tensors: kv gathers a split step's own K/V only, so "
                      "a split prefill after a cached prefix (%s: cached_tokens %lld, "
                      "prompt_tokens %lld) would miss the prefix's keys; use all_gather_tensors: "
                      "qkv or exchange: ring / ring_kv, or raise parallel.min_tokens above the "
                      "prompt", who, cached, prompt);
}

/* Sequence parallelism over the TP group (and DSA CP) runs with sp = 1;
 * layer sharding needs DSA CP, which alone gives every rank the listed
 * projections' full layout. */
static int check_seqpar(const scenario *s, cp_err *err)
{
    int cp = sc_dsa_cp(s);
    if ((s->par.sequence_parallel || cp) && s->par.sp > 1)
        return cp_fail_at(err, loc_of(s, "parallel", "sp"),
                          "parallel.sp: sequence parallelism over the TP group%s runs with "
                          "sp = 1; with sp = %d the exchange strategies shard the tokens (set "
                          "sequence_parallel: false and dsa_cp: off, or sp: 1)",
                          cp ? " (DSA CP)" : "", s->par.sp);
    if (s->par.n_layer_sharding > 0 && !cp)
        return cp_fail_at(err, loc_of(s, "parallel", "layer_sharding"),
                          "parallel.layer_sharding: layer sharding distributes full-layout "
                          "projections, which only DSA CP gives every rank (sequence_parallel: "
                          "true on a model with a DSA indexer, dsa_cp not off)");
    return 0;
}

/* What the exchange strategies (sp > 1) can describe: GQA attention (MLA
 * models take the DSA CP scheme), a ring of at most 128 ranks (plan_op's
 * send_off / recv_off are int8: peers up to 127 places away). */
static int check_sp_attention(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    if (p->sp <= 1 || s->par.sequence_parallel || sc_dsa_cp(s))
        return 0;
    if (s->model.attn == ATTN_MLA)
        return cp_fail_at(err, loc_of(s, "parallel", "sp"),
                          "parallel.sp = %d: the sequence-parallel exchange strategies "
                          "(cp-exchange.md) split GQA attention; %s uses MLA (use sp: 1)",
                          p->sp, s->model.name);
    if (sc_exchange_is_ring(p->exchange) && p->sp > 128)
        return cp_fail_at(err, loc_of(s, "parallel", "sp"),
                          "parallel.sp = %d: the ring exchanges address at most 128 SP ranks",
                          p->sp);
    return 0;
}

static int check_dsa(const scenario *s, cp_err *err)
{
    if (s->par.dsa_cp == 1 && !s->model.has_dsa)
        return cp_fail_at(err, loc_of(s, "parallel", "dsa_cp"),
                          "parallel.dsa_cp: on needs a model with a DSA indexer (index_topk in "
                          "its config); %s has none", s->model.name);
    return 0;
}

/* Every sharded projection must exist: all but o_proj are MLA's, and the q
 * ones need a q LoRA (q_lora_rank > 0). */
static int check_sharding(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    const arch *m = &s->model;
    for (int i = 0; i < p->n_layer_sharding; i++) {
        const char *t = p->layer_sharding[i];
        char lacks[200] = "";
        if (strcmp(t, "o_proj") != 0 && m->attn != ATTN_MLA)
            snprintf(lacks, sizeof lacks, "an MLA model; %s uses GQA attention", m->name);
        else if ((strcmp(t, "q_b_proj") == 0 || strcmp(t, "q_a_proj") == 0) && m->q_lora_rank <= 0)
            snprintf(lacks, sizeof lacks, "q_lora_rank > 0; %s projects q directly "
                                          "(q_lora_rank = 0)", m->name);
        if (!lacks[0])
            continue;
        const ynode *list = yio_key(yio_key(yio_root(s->doc), "parallel"), "layer_sharding");
        return cp_fail_at(err, list->kids[i]->loc, "parallel.layer_sharding.%d: %s needs %s", i,
                          t, lacks);
    }
    return 0;
}

/* Ops one step puts in a program per decoder layer, at most: the bundled
 * workloads' plans (cpsim validate: ops / steps / programs / layers) hold
 * 42-45 on GQA models and 103-106 on MLA + DSA + MoE ones; 1.5x that. */
#define PLAN_OPS_PER_LAYER_GQA 64
#define PLAN_OPS_PER_LAYER_MLA 160
#define PLAN_OPS_PER_STEP 64              /* embedding, LM head, markers */
/* Host memory one op takes: its plan_op in each program (352 bytes,
 * sweep_spec.c's static assert) and an event of up to 40 bytes per rank
 * (sim/engine/events.h eng_event / eng_mem). */
#define PLAN_OP_BYTES 352.0
#define PLAN_EVENT_BYTES 40.0
/* The most host memory a plan and its events may take: a third of the
 * 24 GiB of the machines cpsim is developed on. */
#define PLAN_BYTES_MAX (8.0 * 1024 * 1024 * 1024)

/* Bound the plan before building it: a million decode tokens would need
 * ~650 KB per step and abort in an allocation or meet the OOM killer.  The
 * message names the key that adds the most steps. */
static int check_plan_size(const scenario *s, cp_err *err)
{
    if (s->serving)
        return 0;               /* the serving scheduler builds one step at a time */
    const wl_parallel *p = &s->par;
    int nprogs = p->sp > 1 && !p->sequence_parallel && !sc_dsa_cp(s) ? p->sp : 1;
    double ranks = (double)p->tp * p->sp * p->dp;
    double per_layer = s->model.attn == ATTN_MLA ? PLAN_OPS_PER_LAYER_MLA : PLAN_OPS_PER_LAYER_GQA;
    double step_ops = (double)s->model.layers * per_layer + PLAN_OPS_PER_STEP;
    double steps = 0, most_decode = 0, most_chunks = 0;
    int decode_req = 0, chunk_req = 0;
    for (int q = 0; q < s->nreqs; q++) {
        double chunks = (double)sc_prefill_steps(s, q);
        double decode = (double)s->reqs[q].decode_tokens;
        steps += chunks + decode;
        if (decode > most_decode) {
            most_decode = decode;
            decode_req = q;
        }
        if (chunks > most_chunks) {
            most_chunks = chunks;
            chunk_req = q;
        }
    }
    double bytes = steps * step_ops * (nprogs * PLAN_OP_BYTES + ranks * PLAN_EVENT_BYTES);
    if (bytes <= PLAN_BYTES_MAX)
        return 0;
    char key[64];
    cp_loc loc;
    if (most_decode >= most_chunks && most_decode >= s->nreqs) {
        snprintf(key, sizeof key, "requests.%d.decode_tokens", decode_req);
        const ynode *rq = yio_key(yio_root(s->doc), "requests");
        const ynode *at = rq && (size_t)decode_req < rq->n
                              ? yio_key(rq->kids[decode_req], "decode_tokens") : NULL;
        loc = at ? at->loc : (cp_loc){ s->path, 0, 0 };
    } else if (most_chunks >= s->nreqs) {
        snprintf(key, sizeof key, "engine.max_num_batched_tokens (requests.%d)", chunk_req);
        loc = loc_of(s, "engine", "max_num_batched_tokens");
    } else {
        snprintf(key, sizeof key, "requests (%d of them)", s->nreqs);
        const ynode *at = yio_key(yio_root(s->doc), "requests");
        loc = at ? at->loc : (cp_loc){ s->path, 0, 0 };
    }
    return cp_fail_at(err, loc,
                      "%s: the plan would hold %.0f steps of ~%.0f ops on %.0f ranks, about "
                      "%.1f GB of host memory; cpsim builds plans of at most %.1f GB (fewer "
                      "decode tokens, requests or prefill chunks)", key, steps, step_ops, ranks,
                      bytes / 1e9, PLAN_BYTES_MAX / 1e9);
}

/* Checks that need the model and the platform.  A prompt longer than the
 * model's max_position is accepted on purpose (what-if studies). */
static int validate(const scenario *s, cp_err *err)
{
    if (check_devices(s, err) < 0 || check_heads(s, err) < 0 || check_experts(s, err) < 0 ||
        check_exchange(s, err) < 0 || check_exchange_keys(s, err) < 0 ||
        check_split_prefix(s, err) < 0 ||
        check_ulysses(s, err) < 0 || check_engine(s, err) < 0 ||
        check_dsa(s, err) < 0 || check_sharding(s, err) < 0 || check_seqpar(s, err) < 0 ||
        check_sp_attention(s, err) < 0 || check_plan_size(s, err) < 0)
        return -1;
    return 0;
}

/* Order: parse, apply --set, read every section (so that a typo in the
 * workload is reported before any other file is opened), resolve the model
 * and the platform, then the cross-checks.  On error *out is freed and
 * zeroed, so wl_free on it stays harmless. */
void wl_warn(scenario *s, const char *fmt, ...)
{
    char line[WL_WARN_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    for (int i = 0; i < s->nwarn; i++)
        if (!strcmp(s->warn[i], line))
            return;
    if (s->nwarn == WL_MAX_WARN)
        return;
    if (s->nwarn == WL_MAX_WARN - 1)
        snprintf(line, sizeof line, "further warnings omitted (more than %d)", WL_MAX_WARN - 1);
    snprintf(s->warn[s->nwarn++], sizeof s->warn[0], "%s", line);
}

void wl_print_warnings(const scenario *s, FILE *out)
{
    for (int i = 0; i < s->nwarn; i++)
        fprintf(out, "cpsim: warning: %s\n", s->warn[i]);
}

/* precision.weights as the checkpoint stores them (config.json
 * quantization_config), or -1 when the config says nothing we model. */
static int checkpoint_weights(const arch *a)
{
    const char *m = a->quant_method;
    if (!m[0])
        return -1;
    int is_float = !strcmp(a->quant_type, "float") || !strcmp(m, "fp8");
    if (!strcmp(m, "fp8") || !strcmp(m, "compressed-tensors")) {
        if (a->quant_bits == 8 && is_float) {
            if (a->quant_block[0] > 0 || !strcmp(a->quant_strategy, "block"))
                return 8;                                  /* fp8_blockwise */
            return !strcmp(a->quant_strategy, "channel") ? 7 : 2; /* fp8_rowwise, fp8 */
        }
        if (a->quant_bits == 8)
            return 3;                                      /* int8 */
        if (a->quant_bits == 4)
            return 5;                                      /* int4 */
        return -1;
    }
    if ((!strcmp(m, "gptq") || !strcmp(m, "awq")) && a->quant_bits == 4)
        return 5;
    if ((!strcmp(m, "gptq") || !strcmp(m, "awq")) && a->quant_bits == 8)
        return 3;
    return -1;
}

/* Weights as the checkpoint stores them when the workload does not say
 * (a model that loads as bf16 while its checkpoint is fp8 is a wrong
 * answer); a workload that says otherwise is simulated as it says, with a
 * warning. */
static void checkpoint_precision(scenario *s)
{
    int k = checkpoint_weights(&s->model);
    if (k < 0)
        return;
    const ynode *pr = yio_key(yio_root(s->doc), "precision");
    int given = pr && (pr->kind != YN_MAP || yio_key(pr, "weights"));
    int mlp_given = pr && pr->kind == YN_MAP && yio_key(pr, "mlp_weights");
    if (!given) {
        s->w_dtype = weight_kinds[k].dt;
        s->w_qscale = (uint8_t)weight_kinds[k].qs;
        if (!mlp_given) {
            s->mlp_dtype = s->w_dtype;
            s->mlp_qscale = s->w_qscale;
        }
    } else if (weight_kinds[k].dt != s->w_dtype || weight_kinds[k].qs != s->w_qscale) {
        wl_warn(s, "%s: the checkpoint's quantization_config stores %s weights; the workload's "
                "precision.weights %s is simulated instead", s->model.path, weight_names[k],
                wl_weights_name(s));
    }
    if (mlp_given && (weight_kinds[k].dt != s->mlp_dtype || weight_kinds[k].qs != s->mlp_qscale))
        wl_warn(s, "%s: the checkpoint's quantization_config stores %s weights; the workload's "
                "precision.mlp_weights %s is simulated for the MLP linears instead",
                s->model.path, weight_names[k], wl_mlp_weights_name(s));
}

/* Workload and model combinations that change the work and are not
 * modelled. */
static void unmodelled_warnings(scenario *s)
{
    /* 8-bit weights on a device without that compute (peak 0, "unsupported"
     * in the preset): the cost model prices their GEMMs at the bf16 peak
     * (models/cost.c peak_of), i.e. weight-only dequantisation */
    const cp_dtype used[2] = { s->w_dtype, s->mlp_dtype };
    const char *key[2] = { "precision.weights", "precision.mlp_weights" };
    for (int k = 0; k < 2; k++) {
        if ((k == 1 && used[1] == used[0]) || dtype_bytes(used[k]) != 1 ||
            s->plat.peak_flops[used[k]] > 0)
            continue;
        wl_warn(s, "%s %s: platform %s has no %s compute (device.peak_flops.%s = 0); those "
                "GEMMs are priced at the bf16 peak (weights dequantised, as weight-only "
                "kernels run them), the resident weights at 1 byte", key[k],
                k ? wl_mlp_weights_name(s) : wl_weights_name(s), s->plat.name,
                dtype_name(used[k]), dtype_name(used[k]));
    }
    if (s->model.sliding_window > 0 && s->par.sp > 1)
        wl_warn(s, "%s: %lld layers attend within a sliding window of %lld tokens; the "
                "sequence-parallel exchanges (parallel.sp = %d) simulate full causal attention",
                s->model.path, (long long)s->model.window_layers,
                (long long)s->model.sliding_window, s->par.sp);
}

/* `precision: X` is shorthand for weights X with activations and KV cache
 * at X's dtype (read_precision).  A --set of a key inside precision would
 * otherwise turn the scalar into {name: X} (yio_set's promotion, right for
 * model and platform) and be refused for a key "name": the shorthand is
 * written out as the map it means first (a valid X only; a bad one keeps
 * its own message at its place). */
static int precision_as_map(ydoc *doc, const char *const *sets, int nsets, cp_err *err)
{
    const ynode *pr = yio_key(yio_root(doc), "precision");
    int touched = 0;
    for (int i = 0; i < nsets; i++)
        touched |= strncmp(sets[i], "precision.", 10) == 0;
    if (!touched || !pr || pr->kind != YN_SCALAR)
        return 0;
    int w = -1;
    for (int k = 0; weight_names[k]; k++)
        if (strcmp(weight_names[k], pr->str) == 0)
            w = k;
    if (w < 0)
        return 0;
    const char *dt = dtype_name(weight_kinds[w].dt);
    char set[160];
    snprintf(set, sizeof set, "precision={weights: %s, activations: %s, kv_cache: %s}",
             weight_names[w], dt, dt);
    return yio_set(doc, set, err);
}

int wl_load(const char *path, const char *const *sets, int nsets, const char *platform_override,
            scenario *out, cp_err *err)
{
    memset(out, 0, sizeof *out);
    if (path)
        snprintf(out->path, sizeof out->path, "%s", path);
    else
        cp_data_path(out->path, sizeof out->path, "workloads/default.yaml");
    out->doc = yio_parse_file(out->path, err);
    int rc = out->doc ? precision_as_map(out->doc, sets, nsets, err) : -1;
    for (int i = 0; rc == 0 && i < nsets; i++)
        rc = yio_set(out->doc, sets[i], err);
    if (rc == 0)
        rc = read_doc(out, err);
    if (rc == 0)
        rc = resolve_model(out, err);
    if (rc == 0) {
        for (int i = 0; i < out->model.nwarn; i++)
            wl_warn(out, "%s", out->model.warn[i]);
        checkpoint_precision(out);
        rc = load_quant(out, err);
    }
    if (rc == 0)
        rc = resolve_platform(out, platform_override, err);
    if (rc == 0) {
        resolve_engine_memory(out);
        unmodelled_warnings(out);
    }
    if (rc == 0)
        rc = validate(out, err);
    long long used = (long long)out->par.tp * out->par.sp * out->par.dp;
    if (rc == 0 && used < plat_devices(&out->plat))
        wl_warn(out, "parallel: tp*sp*dp = %lld uses %lld of the %d devices of platform %s; "
                "the others stay idle (their memory and links are not simulated)", used, used,
                plat_devices(&out->plat), out->plat.name);
    /* cp-exchange.md "ring": "Ring runs eager only (no captured graph)":
     * a prefill the graph mode captures runs copied (models/exchange.c
     * ex_step_splits) */
    const wl_parallel *pp = &out->par;
    if (rc == 0 && pp->embed_share && pp->sp <= 1)
        wl_warn(out, "parallel.embed: share: with sp 1 no step is split, so nothing is shared "
                "(set parallel.sp and platform.nodes for context parallelism)");
    int captures_prefill = out->graph == GRAPH_CAPTURED || out->graph == GRAPH_PIECEWISE ||
                           out->graph == GRAPH_FULL_AND_PIECEWISE;
    if (rc == 0 && pp->sp > 1 && sc_exchange_is_ring(pp->exchange) && captures_prefill) {
        if (out->kernels.ncapture > 0)
            wl_warn(out, "parallel.exchange %s: the ring runs eager only (cp-exchange.md, "
                    "\"ring\"); under engine.graph %s, steps of up to %d tokens (the largest "
                    "capture size) run copied, longer ones split", exchange_names[pp->exchange],
                    wl_graph_name(out->graph), out->kernels.capture[out->kernels.ncapture - 1]);
        else
            wl_warn(out, "parallel.exchange %s: the ring runs eager only (cp-exchange.md, "
                    "\"ring\"); under engine.graph %s every step is captured, so every step "
                    "runs copied (engine.graph: eager or decode_only lets prefills split)",
                    exchange_names[pp->exchange], wl_graph_name(out->graph));
    }
    if (rc < 0)
        wl_free(out);
    return rc;
}

void wl_free(scenario *s)
{
    if (!s)
        return;
    yio_free(s->doc);
    free(s->reqs);
    quant_desc_free(s->quant);
    memset(s, 0, sizeof *s);
}

static const char *weight_kind_name(cp_dtype dt, uint8_t qs)
{
    for (size_t i = 0; i < COUNT(weight_kinds); i++)
        if (weight_kinds[i].dt == dt && weight_kinds[i].qs == qs &&
            strcmp(weight_names[i], "fp8_tensor") != 0)
            return weight_names[i];
    return dtype_name(dt);
}

const char *wl_weights_name(const scenario *s)
{
    return weight_kind_name(s->w_dtype, s->w_qscale);
}

const char *wl_mlp_weights_name(const scenario *s)
{
    return weight_kind_name(s->mlp_dtype, s->mlp_qscale);
}

const char *wl_exchange_name(wl_exchange e)
{
    return (unsigned)e < COUNT(exchange_names) - 1 ? exchange_names[e] : "?";
}

const char *wl_ring_select_name(wl_ring_select r)
{
    return (unsigned)r < COUNT(ring_select_names) - 1 ? ring_select_names[r] : "?";
}

const char *wl_graph_name(wl_graph g)
{
    static const char *const t[] = { "eager", "captured", "decode_only", "piecewise",
                                     "full_and_piecewise" };
    return (unsigned)g < COUNT(t) ? t[g] : "?";
}

const char *const *wl_enum_names(const char *key)
{
    static const struct {
        const char *key;
        const char *const *names;
    } other[] = {
        { "precision.weights", weight_names }, { "precision.mlp_weights", weight_names },
        { "precision.activations", dtype_names }, { "precision.kv_cache", dtype_names },
        { "precision.activation_quant", act_quant_names },
    };
    for (size_t i = 0; i < COUNT(other); i++)
        if (strcmp(key, other[i].key) == 0)
            return other[i].names;
    const char *dot = strchr(key, '.');
    for (size_t k = 0; dot && k < COUNT(sections); k++) {
        const wl_section *sec = &sections[k];
        if (strlen(sec->key) != (size_t)(dot - key) || strncmp(key, sec->key, (size_t)(dot - key)))
            continue;
        for (size_t i = 0; i < sec->n; i++)
            if (sec->fields[i].type == F_ENUM && strcmp(sec->fields[i].key, dot + 1) == 0)
                return sec->fields[i].names;
    }
    return NULL;
}

const char *wl_kv_storage_name(wl_kv_storage k)
{
    return (unsigned)k < COUNT(kv_storage_names) - 1 ? kv_storage_names[k] : "?";
}

const char *wl_split_name(wl_split sp)
{
    return (unsigned)sp < COUNT(split_names) - 1 ? split_names[sp] : "?";
}

const char *wl_dsa_layout_name(wl_dsa_layout l)
{
    return (unsigned)l < COUNT(dsa_layout_names) - 1 ? dsa_layout_names[l] : "?";
}

static json_t *model_json(const arch *m)
{
    json_t *j = json_object();
    json_object_set_new(j, "name", json_string(m->name));
    json_object_set_new(j, "config", json_string(m->path));
    json_object_set_new(j, "hidden", json_integer(m->hidden));
    json_object_set_new(j, "layers", json_integer(m->layers));
    json_object_set_new(j, "attention", json_string(m->attn == ATTN_MLA ? "mla" : "gqa"));
    json_object_set_new(j, "heads", json_integer(m->heads));
    json_object_set_new(j, "kv_heads", json_integer(m->kv_heads));
    json_object_set_new(j, "head_dim", json_integer(m->head_dim));
    json_object_set_new(j, "qk_norm", json_boolean(m->qk_norm));
    json_object_set_new(j, "moe", json_boolean(m->has_moe));
    if (m->has_moe) {
        json_object_set_new(j, "experts", json_integer(m->experts));
        json_object_set_new(j, "top_k", json_integer(m->top_k));
        json_object_set_new(j, "moe_intermediate", json_integer(m->moe_intermediate));
        json_object_set_new(j, "router", json_string(m->router_sigmoid ? "sigmoid" : "softmax"));
    }
    json_object_set_new(j, "mla", json_boolean(m->attn == ATTN_MLA));
    json_object_set_new(j, "dsa", json_boolean(m->has_dsa));
    if (m->sliding_window > 0) {
        json_object_set_new(j, "sliding_window", json_integer(m->sliding_window));
        json_object_set_new(j, "window_layers", json_integer(m->window_layers));
    }
    json_object_set_new(j, "max_position", json_integer(m->max_position));
    return j;
}

static json_t *section_json(const scenario *s, const wl_section *sec)
{
    json_t *j = json_object();
    for (size_t i = 0; i < sec->n; i++) {
        const wl_field *f = &sec->fields[i];
        long long v = field_get(s, f);
        if (f->type == F_DOUBLE)
            json_object_set_new(j, f->key, json_real(field_getd(s, f)));
        else if (f->type == F_ENUM)
            json_object_set_new(j, f->key, json_string(field_name(f, v)));
        else if (f->type == F_BOOL)
            json_object_set_new(j, f->key, json_boolean(v));
        else
            json_object_set_new(j, f->key, json_integer(v));
    }
    if (sec->read_extra == read_layer_sharding) {
        json_t *a = json_array();
        for (int i = 0; i < s->par.n_layer_sharding; i++)
            json_array_append_new(a, json_string(s->par.layer_sharding[i]));
        json_object_set_new(j, "layer_sharding", a);
    }
    if (sec->read_extra == read_engine_memory) {
        json_t *m = json_object();
        json_object_set_new(m, "reserved_bytes", json_real(s->mem.reserved_bytes));
        json_object_set_new(m, "workspace_bytes", json_real(s->mem.workspace_bytes));
        json_object_set_new(m, "kv_pool", json_string(kv_pool_names[s->mem.kv_pool]));
        if (s->mem.kv_pool == KVP_PREALLOCATE)
            json_object_set_new(m, "gpu_memory_utilization",
                                json_real(s->mem.gpu_memory_utilization));
        json_object_set_new(j, "memory", m);
    }
    if (sec->read_extra == read_simulation_extra) {
        json_object_set_new(j, "decode_reuse", json_real(s->decode_reuse));
        json_object_set_new(j, "replay_tolerance_s", json_real(s->replay_tol_s));
    }
    return j;
}

json_t *wl_resolved(const scenario *s)
{
    json_t *j = json_object();
    json_object_set_new(j, "workload", json_string(s->path));
    json_object_set_new(j, "model", model_json(&s->model));
    json_object_set_new(j, "platform", plat_json(&s->plat));
    json_t *pr = json_object();
    json_object_set_new(pr, "weights", json_string(wl_weights_name(s)));
    /* only where it differs: the same scenario as one that does not write it
     * (and the same sweep hash) */
    if (s->mlp_dtype != s->w_dtype || s->mlp_qscale != s->w_qscale)
        json_object_set_new(pr, "mlp_weights", json_string(wl_mlp_weights_name(s)));
    json_object_set_new(pr, "activations", json_string(dtype_name(s->a_dtype)));
    json_object_set_new(pr, "kv_cache", json_string(dtype_name(s->kv_dtype)));
    if (s->w_dtype == DT_FP8 || s->w_dtype == DT_INT8 || s->mlp_dtype == DT_FP8 ||
        s->mlp_dtype == DT_INT8)
        json_object_set_new(pr, "activation_quant", json_string(act_quant_names[s->act_quant]));
    if (s->quant)
        json_object_set_new(pr, "quant_description", json_string(s->quant_path));
    json_object_set_new(j, "precision", pr);
    for (size_t i = 0; i < COUNT(sections); i++)
        json_object_set_new(j, sections[i].key, section_json(s, &sections[i]));
    json_t *ks = json_object();
    json_object_set_new(ks, "name", json_string(s->kernels.name));
    for (int k = 0; k < KS_COUNT; k++)
        json_object_set_new(ks, ks_slot_key((ks_slot)k),
                            json_string(plan_impl_name((plan_impl)s->kernels.impl[k])));
    json_object_set_new(ks, "varlen", json_boolean(s->kernels.varlen));
    json_object_set_new(ks, "eager_locals", json_boolean(s->kernels.eager_locals));
    json_object_set_new(json_object_get(j, "engine"), "kernels", ks);
    json_t *rq = json_array();
    for (int i = 0; i < s->nreqs; i++) {
        const wl_request *r = &s->reqs[i];
        json_t *o = json_pack("{s:I, s:f, s:I, s:I}", "prompt_tokens",
                              (json_int_t)r->prompt_tokens, "arrival_s", r->arrival_s,
                              "decode_tokens", (json_int_t)r->decode_tokens, "cached_tokens",
                              (json_int_t)r->cached_tokens);
        if (r->cls >= 0)
            json_object_set_new(o, "name", json_string(s->classes[r->cls]));
        json_array_append_new(rq, o);
    }
    json_object_set_new(j, "requests", rq);
    json_t *st = json_array();
    for (int i = 0; i < s->nstreams; i++) {
        const wl_streams *c = &s->streams[i];
        json_t *o = json_pack("{s:i, s:I, s:I, s:I, s:f, s:f, s:I}", "streams", c->streams,
                              "prompt_tokens", (json_int_t)c->prompt_tokens, "decode_tokens",
                              (json_int_t)c->decode_tokens, "cached_tokens",
                              (json_int_t)c->cached_tokens, "start_s", c->start_s, "think_s",
                              c->think_s, "count", (json_int_t)c->count);
        if (c->cls >= 0)
            json_object_set_new(o, "name", json_string(s->classes[c->cls]));
        json_array_append_new(st, o);
    }
    json_object_set_new(j, "streams", st);
    json_object_set_new(j, "serving", json_boolean(s->serving));
    return j;
}

int wl_files(const scenario *s, char (*paths)[1024], int cap)
{
    int n = 0;
    if (n < cap)
        snprintf(paths[n++], sizeof paths[0], "%s", s->model.path);
    if (n < cap)
        snprintf(paths[n++], sizeof paths[0], "%s", s->plat.source);
    if (s->quant && n < cap)
        snprintf(paths[n++], sizeof paths[0], "%s", s->quant_path);
    if (s->kernels.path[0] && n < cap)
        snprintf(paths[n++], sizeof paths[0], "%s", s->kernels.path);
    /* the trace files of requests: (entries with a trace key) */
    const ynode *rq = yio_key(yio_root(s->doc), "requests");
    for (size_t i = 0; rq && rq->kind == YN_SEQ && i < rq->n; i++) {
        const ynode *t = yio_key(rq->kids[i], "trace");
        if (t && t->kind == YN_SCALAR && n < cap)
            trace_path(paths[n++], sizeof paths[0], s, t->str);
    }
    if (!s->plat.calibration[0])
        return n;
    /* the profile's tables (its .csv and .json files, in name order) */
    char dir[1024];
    cp_calib_dir(dir, sizeof dir, s->plat.calibration);
    struct dirent **names = NULL;
    int k = scandir(dir, &names, NULL, alphasort);
    for (int i = 0; i < k; i++) {
        const char *dot = strrchr(names[i]->d_name, '.');
        int table = dot && (strcmp(dot, ".csv") == 0 || strcmp(dot, ".json") == 0);
        if (table && names[i]->d_name[0] != '.' && n < cap) {
            int w = snprintf(paths[n], sizeof paths[0], "%s/%s", dir, names[i]->d_name);
            if (w > 0 && (size_t)w < sizeof paths[0])
                n++; /* a longer path than a buffer holds is not hashed */
        }
        free(names[i]);
    }
    free(names);
    return n;
}

/* A scalar as YAML, no newline: strings double-quoted as JSON writes them
 * (a JSON string is a YAML double-quoted scalar), numbers in their
 * shortest exact text. */
static void put_scalar(const json_t *v, FILE *out)
{
    char num[32];
    if (json_is_string(v)) {
        json_dumpf(v, out, JSON_ENCODE_ANY);
    } else if (json_is_integer(v)) {
        fprintf(out, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        fputs(plat_num(num, sizeof num, json_real_value(v)), out);
    } else if (json_is_boolean(v)) {
        fputs(json_is_true(v) ? "true" : "false", out);
    } else {
        fputs("null", out);
    }
}

static int flat(const json_t *v)
{
    if (!json_is_object(v) && !json_is_array(v))
        return 1;
    const char *k;
    const json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x)
            if (json_is_object(x) || json_is_array(x))
                return 0;
    } else {
        json_array_foreach(v, i, x)
            if (json_is_object(x) || json_is_array(x))
                return 0;
    }
    return 1;
}

/* A flat mapping or sequence on one line: {a: 1, b: "x"} or ["x", "y"]. */
static void put_flow(const json_t *v, FILE *out)
{
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_object(v)) {
        const char *sep = "";
        fputc('{', out);
        json_object_foreach((json_t *)v, k, x) {
            fprintf(out, "%s%s: ", sep, k);
            put_scalar(x, out);
            sep = ", ";
        }
        fputs("}\n", out);
        return;
    }
    fputc('[', out);
    json_array_foreach(v, i, x) {
        fputs(i ? ", " : "", out);
        put_scalar(x, out);
    }
    fputs("]\n", out);
}

static void put_yaml(const json_t *v, int indent, FILE *out);

/* The value after "key:" or "-": a nested block on the lines below, a flat
 * sequence (or, in a sequence, a flat mapping) in flow style, or a scalar. */
static void put_value(const json_t *x, int in_seq, int indent, FILE *out)
{
    int nested = json_is_object(x) || json_is_array(x);
    int block = nested && (!flat(x) || (!in_seq && json_is_object(x) && json_object_size(x) > 0));
    if (block) {
        fputc('\n', out);
        put_yaml(x, indent + 2, out);
        return;
    }
    fputc(' ', out);
    if (nested) {
        put_flow(x, out);
    } else {
        put_scalar(x, out);
        fputc('\n', out);
    }
}

/* v as YAML under `indent` spaces: block mappings and sequences; flow
 * style for a sequence of scalars and for a flat mapping in a sequence. */
static void put_yaml(const json_t *v, int indent, FILE *out)
{
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x) {
            fprintf(out, "%*s%s:", indent, "", k);
            put_value(x, 0, indent, out);
        }
        return;
    }
    json_array_foreach(v, i, x) {
        fprintf(out, "%*s-", indent, "");
        put_value(x, 1, indent, out);
    }
}

/* The workload as written (after --set), then a `resolved:` section with
 * what the loaders made of it, every default filled in (wl_resolved). */
void wl_dump(const scenario *s, FILE *out)
{
    yio_dump(yio_root(s->doc), out, 0);
    fputs("resolved:\n", out);
    json_t *r = wl_resolved(s);
    put_yaml(r, 2, out);
    json_decref(r);
}
