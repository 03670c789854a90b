/* workload: the scenario loader (see workload.h).  YAML plus --set
 * assignments become a scenario whose model and platform are resolved and
 * whose settings are checked against both before anything is simulated.
 * The schema tables below drive parsing, defaults, unknown-key messages and
 * the resolved dump of the parallel, engine and simulation wl_sections.
 */
#include "workloads/workload_int.h"

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

const char *const wl_kv_storage_names[] = { "by_head", "by_position", NULL };
const char *const wl_exchange_names[] = { "auto", "ulysses", "all_gather", "ring", "ring_kv",
                                              "none", NULL };
const char *const wl_ring_select_names[] = { "fixed", "rule", "simulate", NULL };
const char *const wl_decode_names[] = { "dcp", "pass_q", "auto", NULL };
static const char *const split_names[] = { "striped", "contiguous", "zigzag", NULL };
const char *const wl_agt_names[] = { "qkv", "kv", NULL };
static const char *const agm_names[] = { "all_rows", "own_rows", NULL };
static const char *const encx_names[] = { "none", "ulysses", NULL };
static const char *const embed_names[] = { "whole", "share", NULL };
const char *const wl_graph_names[] = { "eager", "captured", "full", "decode_only",
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
                                        "requests", "simulation", "slo", NULL };
static const char *const precision_keys[] = { "weights", "mlp_weights", "activations",
                                              "kv_cache", "activation_quant",
                                              "quant_description", NULL };
const char *const wl_act_quant_names[] = { "kernel", "unfused", "fused", NULL };
/* precision.weights and precision.mlp_weights: a dtype, or an 8-bit dtype
 * with its scale granularity. */
const char *const wl_weight_names[] = { "bf16", "fp16", "fp8", "int8", "fp32", "int4",
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
static const char *const role_names[] = { "both", "prefill", NULL };

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
_Static_assert(sizeof(wl_encoder_exchange) == sizeof(int), "enum size");

#define PAR(f) offsetof(scenario, par.f)

static const wl_field parallel_fields[] = {
    { "tp", F_INT, 1, WL_MAX_DEGREE, 1, NULL, NULL, PAR(tp) },
    { "sp", F_INT, 1, WL_MAX_DEGREE, 1, NULL, NULL, PAR(sp) },
    { "ep", F_INT, 1, WL_MAX_DEGREE, 1, NULL, NULL, PAR(ep) },
    { "dp", F_INT, 1, WL_MAX_DEGREE, 1, NULL, NULL, PAR(dp) },
    /* KV by position inside the TP group (models/exchange/dcp_tp.c) */
    { "dcp", F_INT, 1, WL_MAX_DEGREE, 1, NULL, NULL, PAR(dcp) },
    { "kv_storage", F_ENUM, 0, 0, KV_BY_HEAD, wl_kv_storage_names, NULL, PAR(kv_storage) },
    { "exchange", F_ENUM, 0, 0, EX_AUTO, wl_exchange_names, NULL, PAR(exchange) },
    { "min_tokens", F_I64, 0, INT64_MAX, 0, NULL, NULL, PAR(min_tokens) },
    { "split", F_ENUM, 0, 0, SPLIT_STRIPED, split_names, NULL, PAR(split) },
    { "all_gather_tensors", F_ENUM, 0, 0, AGT_QKV, wl_agt_names, NULL, PAR(all_gather_tensors) },
    { "all_gather_merge", F_ENUM, 0, 0, AGM_ALL_ROWS, agm_names, NULL, PAR(all_gather_merge) },
    { "ring_overlap", F_BOOL, 0, 1, 0, NULL, NULL, PAR(ring_overlap) },
    /* the audio encoder's ragged attention over the SP group (models/encoder/) */
    { "encoder_exchange", F_ENUM, 0, 0, ENCX_NONE, encx_names, NULL, PAR(encoder_exchange) },
    /* where a split step's tokens are cut (models/exchange/scheme.c ex_embed) */
    { "embed", F_ENUM, 0, 0, 0, embed_names, NULL, PAR(embed_share) },
    /* copied decode steps of a ring exchange (workload.h wl_decode) */
    { "decode", F_ENUM, 0, 0, DEC_DCP, wl_decode_names, NULL, PAR(decode) },
    /* rank numbering (models/plan.h): TP fastest, or SP fastest */
    { "order", F_ENUM, 0, 0, ORDER_TP_SP_DP, plan_order_names, NULL, PAR(order) },
    { "ring_select", F_ENUM, 0, 0, RS_FIXED, wl_ring_select_names, NULL, PAR(ring_select) },
    { "sequence_parallel", F_BOOL, 0, 1, 0, NULL, NULL, PAR(sequence_parallel) },
    { "dsa_cp", F_ENUM, 0, 0, -1, dsa_cp_names, dsa_cp_values, PAR(dsa_cp) },
    { "dsa_cp_layout", F_ENUM, 0, 0, DSA_LAYOUT_RFC, dsa_layout_names, NULL, PAR(dsa_cp_layout) },
};

static const wl_field engine_fields[] = {
    { "graph", F_ENUM, 0, 0, GRAPH_EAGER, wl_graph_names, graph_values, offsetof(scenario, graph) },
    { "chunked_prefill", F_BOOL, 0, 1, 0, NULL, NULL, offsetof(scenario, chunked_prefill) },
    /* PD disaggregation: a prefill node alone (models/scenario.h) */
    { "role", F_ENUM, 0, 0, 0, role_names, NULL, offsetof(scenario, prefill_node) },
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
    /* simulate one rank of each TP group when its ranks run as one
     * (engine.h), false: every rank (the same times to rounding; the check) */
    { "share_tp", F_BOOL, 0, 1, 1, NULL, NULL, offsetof(scenario, share_tp) },
    /* replay copies of folded layers entered in an earlier copy's state
     * (sim/engine/replay.c), false: simulate every copy (for the check) */
    { "replay", F_BOOL, 0, 1, 1, NULL, NULL, offsetof(scenario, replay) },
    /* 0: no end, the run lasts until every request finished */
    { "duration_s", F_DOUBLE, 0, (long long)WL_MAX_ARRIVAL, 0, NULL, NULL,
      offsetof(scenario, duration_s) },
};

static int read_parallel_extra(const ynode *par, scenario *s, cp_err *err);
static int read_engine_memory(const ynode *eng, scenario *s, cp_err *err);
static int read_layer_sharding(const ynode *par, scenario *s, cp_err *err);
static int read_simulation_extra(const ynode *sim, scenario *s, cp_err *err);
static void wl_warn(scenario *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static const char *const parallel_extra[] = {"layer_sharding", "pcp", NULL};
static const char *const engine_extra[] = {"memory", "kernels", NULL};
static const char *const simulation_extra[] = {"decode_reuse", "replay_tolerance_s", NULL};
const wl_section wl_sections[] = {
    { "parallel", parallel_fields, COUNT(parallel_fields), parallel_extra, read_parallel_extra },
    { "engine", engine_fields, COUNT(engine_fields), engine_extra, read_engine_memory },
    { "simulation", simulation_fields, COUNT(simulation_fields), simulation_extra,
      read_simulation_extra },
};
const size_t wl_nsections = COUNT(wl_sections);

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

long long wl_field_get(const scenario *s, const wl_field *f)
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

double wl_field_getd(const scenario *s, const wl_field *f)
{
    double x;
    memcpy(&x, (const char *)s + f->off, sizeof x);
    return x;
}

/* Optional key of map: a number in (lo, hi]; *out is left as it is when the
 * key is absent. */
int wl_opt_above(const ynode *map, const char *prefix, const char *key, double lo, double hi,
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
const char *wl_field_name(const wl_field *f, long long v)
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
        double d = wl_field_getd(s, f);
        if (wl_opt_above(map, prefix, f->key, (double)f->lo, (double)f->hi, &d, err) < 0)
            return -1;
        memcpy((char *)s + f->off, &d, sizeof d);
        return 0;
    }
    long long v = wl_field_get(s, f);
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
    for (size_t i = 0; i < COUNT(wl_sections); i++)
        for (size_t k = 0; k < wl_sections[i].n; k++)
            field_set(s, &wl_sections[i].fields[k], wl_sections[i].fields[k].def);
    s->w_dtype = s->mlp_dtype = s->a_dtype = s->kv_dtype = DT_BF16;
    s->decode_reuse = 0.005; /* the 0.5 % per step of issue 11 */
    ks_default(&s->kernels);
    /* vLLM EngineArgs gpu_memory_utilization default */
    s->mem.gpu_memory_utilization = 0.9;
}

static const char *const engine_memory_keys[] = { "reserved_bytes", "workspace_bytes",
                                                  "kv_pool", "gpu_memory_utilization", NULL };
const char *const wl_kv_pool_names[] = { "on_demand", "preallocate", NULL };

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
        yio_opt_enum(n, "engine.memory", "kv_pool", wl_kv_pool_names, &pool, err) < 0 ||
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
/* parallel.pcp: vLLM's name (prefill_context_parallel_size) for parallel.sp,
 * the SP group a long prompt's tokens split over; both given must agree. */
static int read_pcp(const ynode *par, scenario *s, cp_err *err)
{
    const ynode *n = yio_key(par, "pcp");
    if (!n)
        return 0;
    long long v = 1;
    if (yio_opt_int(par, "parallel", "pcp", 1, WL_MAX_DEGREE, &v, err) < 0)
        return -1;
    if (yio_key(par, "sp") && v != s->par.sp)
        return cp_fail_at(err, n->loc,
                          "parallel.pcp = %lld: pcp is parallel.sp by vLLM's name "
                          "(prefill_context_parallel_size), and parallel.sp = %d disagrees "
                          "(give one of them)", v, s->par.sp);
    s->par.sp = (int)v;
    return 0;
}

static int read_parallel_extra(const ynode *par, scenario *s, cp_err *err)
{
    return read_pcp(par, s, err) < 0 ? -1 : read_layer_sharding(par, s, err);
}

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

/* precision.quant_description: a path (relative to the workload file), or
 * the bare name of a description bundled in models/configs/quant/ (no '/',
 * no .json: deepseek-r1-w8a8). */
static int quant_path(scenario *s, const char *qd, cp_loc at, cp_err *err)
{
    size_t n = strlen(qd);
    if (strchr(qd, '/') || (n > 5 && strcmp(qd + n - 5, ".json") == 0)) {
        char dir[1024];
        cp_resolve(s->quant_path, sizeof s->quant_path, cp_dirname(dir, sizeof dir, s->path), qd);
        return 0;
    }
    char rel[300];
    snprintf(rel, sizeof rel, "models/configs/quant/%s.json", qd);
    cp_data_path(s->quant_path, sizeof s->quant_path, rel);
    FILE *f = fopen(s->quant_path, "r");
    if (!f)
        return cp_fail_at(err, at,
                          "precision.quant_description: \"%s\" is neither a file (a path ends in "
                          ".json or holds a '/') nor a bundled description of "
                          "models/configs/quant/ (deepseek-r1-w8a8, qwen3-235b-a22b-w8a8)", qd);
    fclose(f);
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
        if (yio_opt_enum(n, "precision", "weights", wl_weight_names, &w, err) < 0 ||
            yio_opt_enum(n, "precision", "mlp_weights", wl_weight_names, &mw, err) < 0 ||
            yio_opt_enum(n, "precision", "activations", dtype_names, &a, err) < 0 ||
            yio_opt_enum(n, "precision", "kv_cache", dtype_names, &kv, err) < 0 ||
            yio_opt_enum(n, "precision", "activation_quant", wl_act_quant_names, &aq, err) < 0 ||
            yio_opt_str(n, "precision", "quant_description", &qd, err) < 0 ||
            yio_no_unknown(n, "precision", precision_keys, err) < 0)
            return -1;
        if (qd && mw >= 0)
            return cp_fail_at(err, yio_key(n, "mlp_weights")->loc,
                              "precision.mlp_weights: precision.quant_description already "
                              "types every linear weight, the MLP's among them; give one of "
                              "the two");
        if (qd && quant_path(s, qd, yio_key(n, "quant_description")->loc, err) < 0)
            return -1;
        /* the description's quantized types (W8A8, W8A8_DYNAMIC) are int8
         * GEMMs: its weights unless precision.weights says otherwise */
        for (int i = 0; qd && !yio_key(n, "weights") && wl_weight_names[i]; i++)
            w = strcmp(wl_weight_names[i], "int8") == 0 ? i : w;
    } else {
        if (yio_enum(n, "precision", wl_weight_names, &w, err) < 0)
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

/* A platform file or a sweep given where a workload goes (their own
 * top-level keys: platforms/README.md, sim/sweep/sweep.h): the message says
 * how to give it. */
static void not_a_workload_hint(const ynode *root, cp_err *err)
{
    const char *hint = NULL;
    for (size_t i = 0; i < root->n && !hint; i++)
        if (strcmp(root->keys[i], "devices_per_node") == 0)
            hint = "; this looks like a platform file: give it as --platform FILE, or as "
                   "platform: FILE in a workload";
        else if (strcmp(root->keys[i], "grid") == 0)
            hint = "; this looks like a sweep: run it with cpsim sweep FILE";
    if (hint)
        cp_err_append(err, hint);
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
    if (yio_no_unknown(root, "", top_keys, err) < 0) {
        not_a_workload_hint(root, err);
        return -1;
    }
    if (read_precision(root, s, err) < 0)
        return -1;
    for (size_t i = 0; i < COUNT(wl_sections); i++)
        if (read_section(root, &wl_sections[i], s, err) < 0)
            return -1;
    return wl_read_requests(root, s, err);
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
    char keys[160];
    int unread = quant_desc_unread(s->quant, &s->model, keys, sizeof keys);
    const char *slash = strrchr(s->quant_path, '/');
    if (unread > 0)
        wl_warn(s, "precision.quant_description %s: %d entr%s change nothing on %s (no such "
                "tensor, or one cpsim keeps FLOAT): %s%s", slash ? slash + 1 : s->quant_path,
                unread, unread > 1 ? "ies" : "y", s->model.name, keys,
                (int)strlen(keys) + 40 > (int)sizeof keys ? ", ..." : "");
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

static void wl_warn(scenario *s, const char *fmt, ...)
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
    int given = pr && (pr->kind != YN_MAP || yio_key(pr, "weights") ||
                       yio_key(pr, "quant_description"));
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
                "precision.weights %s is simulated instead", s->model.path, wl_weight_names[k],
                wl_weights_name(s));
    }
    if (mlp_given && (weight_kinds[k].dt != s->mlp_dtype || weight_kinds[k].qs != s->mlp_qscale))
        wl_warn(s, "%s: the checkpoint's quantization_config stores %s weights; the workload's "
                "precision.mlp_weights %s is simulated for the MLP linears instead",
                s->model.path, wl_weight_names[k], wl_mlp_weights_name(s));
}

/* Requests that reach past the positions the model is built for
 * (arch.max_context: max_position_embeddings, extended by rope_scaling): a
 * prompt (cached_tokens + prompt_tokens) longer than it, or a decode that
 * runs past it.  Simulated as given (a what-if the model's RoPE was not
 * trained for): one warning for all of them, run and serving alike (a
 * closed-loop source counts as one entry). */
static void context_warning(scenario *s)
{
    int64_t ctx = s->model.max_context, longest = 0;
    long long prompts = 0, decodes = 0;
    for (int i = 0; ctx > 0 && i < s->nreqs + s->nstreams; i++) {
        int64_t cached, prompt, decode;
        if (i < s->nreqs) {
            cached = s->reqs[i].cached_tokens, prompt = s->reqs[i].prompt_tokens;
            decode = s->reqs[i].decode_tokens;
        } else {
            const wl_streams *st = &s->streams[i - s->nreqs];
            cached = st->cached_tokens, prompt = st->prompt_tokens, decode = st->decode_tokens;
        }
        prompts += cached + prompt > ctx;
        decodes += cached + prompt <= ctx && cached + prompt + decode > ctx;
        if (cached + prompt + decode > longest)
            longest = cached + prompt + decode;
    }
    if (prompts + decodes == 0)
        return;
    const char *slash = strrchr(s->model.path, '/');
    wl_warn(s, "%s: the model is built for %lld positions (max_position_embeddings%s); "
            "requests past them are simulated as given: %lld with a longer prompt (cached + "
            "prompt tokens), %lld more by decoding, up to position %lld",
            slash ? slash + 1 : s->model.path, (long long)ctx,
            ctx > s->model.max_position ? " extended by rope_scaling" : "", prompts, decodes,
            (long long)longest);
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
    context_warning(s);
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
    for (int k = 0; wl_weight_names[k]; k++)
        if (strcmp(wl_weight_names[k], pr->str) == 0)
            w = k;
    if (w < 0)
        return 0;
    const char *dt = dtype_name(weight_kinds[w].dt);
    char set[160];
    snprintf(set, sizeof set, "precision={weights: %s, activations: %s, kv_cache: %s}",
             wl_weight_names[w], dt, dt);
    return yio_set(doc, set, err);
}

/* Order: parse, apply --set, read every section (so that a typo in the
 * workload is reported before any other file is opened), resolve the model
 * and the platform, then the cross-checks.  On error *out is freed and
 * zeroed, so wl_free on it stays harmless. */
int wl_load(const char *path, const char *const *sets, int nsets, const char *platform_override,
            scenario *out, cp_err *err)
{
    memset(out, 0, sizeof *out);
    int from_stdin = path && strcmp(path, "-") == 0;
    if (from_stdin)
        snprintf(out->path, sizeof out->path, "<stdin>");
    else if (path)
        snprintf(out->path, sizeof out->path, "%s", path);
    else
        cp_data_path(out->path, sizeof out->path, "workloads/default.yaml");
    out->doc = from_stdin ? yio_parse_stream(stdin, out->path, err)
                          : yio_parse_file(out->path, err);
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
        rc = wl_validate(out, err);
    long long used = (long long)out->par.tp * out->par.sp * out->par.dp;
    if (rc == 0 && used < plat_devices(&out->plat))
        wl_warn(out, "parallel: tp*sp*dp = %lld uses %lld of the %d devices of platform %s; "
                "the others stay idle (their memory and links are not simulated)", used, used,
                plat_devices(&out->plat), out->plat.name);
    /* cp-exchange.md "ring": "Ring runs eager only (no captured graph)":
     * a prefill the graph mode captures runs copied (models/exchange/pos.c
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
                    "capture size) run copied, longer ones split", wl_exchange_names[pp->exchange],
                    wl_graph_name(out->graph), out->kernels.capture[out->kernels.ncapture - 1]);
        else
            wl_warn(out, "parallel.exchange %s: the ring runs eager only (cp-exchange.md, "
                    "\"ring\"); under engine.graph %s every step is captured, so every step "
                    "runs copied (engine.graph: eager or decode_only lets prefills split)",
                    wl_exchange_names[pp->exchange], wl_graph_name(out->graph));
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
            strcmp(wl_weight_names[i], "fp8_tensor") != 0)
            return wl_weight_names[i];
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
    return (unsigned)e < COUNT(wl_exchange_names) - 1 ? wl_exchange_names[e] : "?";
}

const char *wl_ring_select_name(wl_ring_select r)
{
    return (unsigned)r < COUNT(wl_ring_select_names) - 1 ? wl_ring_select_names[r] : "?";
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
        { "precision.weights", wl_weight_names }, { "precision.mlp_weights", wl_weight_names },
        { "precision.activations", dtype_names }, { "precision.kv_cache", dtype_names },
        { "precision.activation_quant", wl_act_quant_names },
    };
    for (size_t i = 0; i < COUNT(other); i++)
        if (strcmp(key, other[i].key) == 0)
            return other[i].names;
    const char *dot = strchr(key, '.');
    for (size_t k = 0; dot && k < COUNT(wl_sections); k++) {
        const wl_section *sec = &wl_sections[k];
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
    return (unsigned)k < COUNT(wl_kv_storage_names) - 1 ? wl_kv_storage_names[k] : "?";
}

const char *wl_split_name(wl_split sp)
{
    return (unsigned)sp < COUNT(split_names) - 1 ? split_names[sp] : "?";
}

const char *wl_dsa_layout_name(wl_dsa_layout l)
{
    return (unsigned)l < COUNT(dsa_layout_names) - 1 ? dsa_layout_names[l] : "?";
}
