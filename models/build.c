/* build: the tensor-parallel baseline plan (see build.h).
 *
 * One decoder layer on one TP rank (Megatron-style column/row parallel
 * linears, as vLLM runs them):
 *   add+rms_norm -> qkv_proj (column) [-> q/k norm] -> rope -> kv_write
 *   -> causal flash attention over heads/tp -> o_proj (row) -> all_reduce
 *   -> add+rms_norm -> MLP (gate_up column, silu*mul, down row) or MoE
 *   (router, top-k, experts sharded by TP in the intermediate dimension, or
 *   by EP with all-to-all dispatch/combine and an all-gather of the local
 *   tokens) -> all_reduce
 * plus the vocabulary-parallel embedding (lookup + all_reduce) before the
 * first layer and final norm + LM head on the last token (+ logits
 * all_gather) after the last.
 *
 * Every tensor the layer creates is allocated and freed with memory ops, so
 * the activation part of the memory timeline follows the real lifetimes.
 */
#include "models/build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/memory.h"

#define MAX_PENDING 16

typedef struct bld {
    const scenario *s;
    const arch *a;
    plan_prog *pg;
    int32_t layer, step, request;
    int tp, ep;
    cp_dtype adt;            /* activation dtype */
    cp_dtype gdt;            /* GEMM compute dtype */
    double ab, wb, kvb;      /* bytes per element: activations, weights, KV */
    uint32_t last_compute;   /* last kernel on the compute stream (or NONE) */
    uint32_t pending[MAX_PENDING]; /* ops the next compute op must wait for */
    int npending;
} bld;

#define NONE UINT32_MAX

/* ---- emitters ------------------------------------------------------------ */

static plan_shape shp(int nd, int64_t d0, int64_t d1, int64_t d2)
{
    plan_shape s = {.nd = (uint8_t)nd, .d = {d0, d1, d2, 0}};
    return s;
}

static void wait_for(bld *b, uint32_t op)
{
    if (op == NONE)
        return;
    if (b->npending == MAX_PENDING)
        abort(); /* builder bug: too many outstanding cross-stream waits */
    b->pending[b->npending++] = op;
}

static uint32_t emit(bld *b, plan_op *o)
{
    o->layer = b->layer;
    o->step = b->step;
    o->request = b->request;
    uint32_t i = plan_push(b->pg, o);
    if (o->stream == ST_COMPUTE) {
        for (int k = 0; k < b->npending; k++)
            plan_dep(b->pg, i, b->pending[k]);
        b->npending = 0;
        if (o->kind == OPK_COMPUTE)
            b->last_compute = i;
    }
    return i;
}

static uint32_t compute(bld *b, const char *name, plan_kclass kc, double flops,
                        double bytes, plan_shape in, plan_shape w, plan_shape out)
{
    plan_op o = {0};
    o.name = name;
    o.kind = OPK_COMPUTE;
    o.stream = ST_COMPUTE;
    o.kclass = (uint8_t)kc;
    o.dtype = (uint8_t)b->adt;
    o.layout = TL_FULL;
    o.flops = flops;
    o.bytes = bytes;
    o.in = in;
    o.w = w;
    o.out = out;
    o.g = 1;
    return emit(b, &o);
}

/* y[m, n] = x[m, k] W[n, k]^T, g groups of m rows (g = 1: plain GEMM). */
static uint32_t gemm(bld *b, const char *name, int64_t m, int64_t k, int64_t n, int64_t g)
{
    plan_op o = {0};
    o.name = name;
    o.kind = OPK_COMPUTE;
    o.stream = ST_COMPUTE;
    o.kclass = g > 1 ? KC_GROUPED_GEMM : KC_GEMM;
    o.dtype = (uint8_t)b->gdt;
    o.layout = TL_FULL;
    o.m = m;
    o.k = k;
    o.n = n;
    o.g = g;
    double gm = (double)g * (double)m;
    o.flops = 2.0 * gm * (double)k * (double)n;
    o.bytes = gm * (double)k * b->ab + (double)g * (double)k * (double)n * b->wb +
              gm * (double)n * b->ab;
    o.in = shp(2, g * m, k, 0);
    o.w = g > 1 ? shp(3, g, k, n) : shp(2, k, n, 0);
    o.out = shp(2, g * m, n, 0);
    return emit(b, &o);
}

/* Memory event on a stream: + allocates, - frees. */
static void mem(bld *b, plan_memcat cat, double bytes, int stream)
{
    if (bytes == 0)
        return;
    plan_op o = {0};
    o.name = bytes > 0 ? "alloc" : "free";
    o.kind = OPK_MEM;
    o.stream = (uint8_t)stream;
    o.mem_cat = (uint8_t)cat;
    o.mem_bytes = bytes;
    emit(b, &o);
}

static void act_alloc(bld *b, double bytes) { mem(b, MC_ACTIVATIONS, bytes, ST_COMPUTE); }
static void act_free(bld *b, double bytes) { mem(b, MC_ACTIVATIONS, -bytes, ST_COMPUTE); }
/* Receive buffers of token exchanges (all-to-all), held until consumed. */
static void buf_alloc(bld *b, double bytes) { mem(b, MC_COMM_BUFFER, bytes, ST_COMPUTE); }
static void buf_free(bld *b, double bytes) { mem(b, MC_COMM_BUFFER, -bytes, ST_COMPUTE); }

/* A collective on the comm stream after the last compute op; the next
 * compute op waits for it.  Returns NONE when the group has one member. */
static uint32_t coll(bld *b, const char *name, plan_coll kind, plan_group g,
                     double bytes, plan_shape out)
{
    if (plan_group_size(&(plan_layout_cfg){.tp = b->tp, .sp = b->s->par.sp,
                                           .ep = b->ep, .dp = b->s->par.dp},
                        g) <= 1)
        return NONE;
    plan_op o = {0};
    o.name = name;
    o.kind = OPK_COLL;
    o.stream = ST_COMM;
    o.coll = (uint8_t)kind;
    o.group = (uint8_t)g;
    o.alg = ALG_AUTO;
    o.dtype = (uint8_t)b->adt;
    o.layout = TL_FULL;
    o.comm_bytes = bytes;
    o.out = out;
    uint32_t i = emit(b, &o);
    if (b->last_compute != NONE)
        plan_dep(b->pg, i, b->last_compute);
    wait_for(b, i);
    return i;
}

/* ---- pieces of the layer ------------------------------------------------- */

/* RMSNorm over m rows of width h; fused with the residual add when
 * `with_add` (reads x and the residual, writes both). */
static void rms_norm(bld *b, const char *name, int64_t m, int64_t h, int with_add)
{
    double mh = (double)m * (double)h;
    double bytes = (with_add ? 4.0 : 2.0) * mh * b->ab + (double)h * b->wb;
    compute(b, name, KC_NORM, (with_add ? 5.0 : 4.0) * mh, bytes, shp(2, m, h, 0),
            shp(1, h, 0, 0), shp(2, m, h, 0));
}

static void elementwise(bld *b, const char *name, plan_kclass kc, int64_t m, int64_t n_in,
                        int64_t n_out, double flops_per_out)
{
    double bytes = ((double)m * n_in + (double)m * n_out) * b->ab;
    compute(b, name, kc, flops_per_out * (double)m * n_out, bytes, shp(2, m, n_in, 0),
            shp(0, 0, 0, 0), shp(2, m, n_out, 0));
}

/* Op names of one SwiGLU MLP. */
typedef struct mlp_names {
    const char *gate_up, *act, *down;
} mlp_names;

static const mlp_names MLP_DENSE = {"mlp_gate_up", "mlp_act", "mlp_down"};
static const mlp_names MLP_EXPERTS = {"expert_gate_up", "expert_act", "expert_down"};
static const mlp_names MLP_SHARED = {"shared_gate_up", "shared_act", "shared_down"};

/* SwiGLU MLP on g groups of m tokens with intermediate width `inter` on this
 * rank; the output [g*m, h] is left allocated (caller frees). */
static void mlp(bld *b, const mlp_names *nm, int64_t m, int64_t inter, int64_t g)
{
    const arch *a = b->a;
    double rows = (double)m * (double)g;
    const char *n_gu = nm->gate_up, *n_act = nm->act, *n_dn = nm->down;
    act_alloc(b, rows * 2.0 * inter * b->ab);
    gemm(b, n_gu, m, a->hidden, 2 * inter, g);
    act_alloc(b, rows * inter * b->ab);
    elementwise(b, n_act, KC_ELEMENTWISE, m * g, 2 * inter, inter, 5.0);
    act_free(b, rows * 2.0 * inter * b->ab);
    act_alloc(b, rows * a->hidden * b->ab);
    gemm(b, n_dn, m, inter, a->hidden, g);
    act_free(b, rows * inter * b->ab);
}

/* Attention block on `t` new tokens after `prefix` cached ones; leaves the
 * o_proj output [t, h] allocated and all-reduced. */
static void attention_tp(bld *b, int64_t t, int64_t prefix)
{
    const arch *a = b->a;
    int64_t h = a->hidden, d = a->head_dim;
    int64_t hq = a->heads / b->tp;
    int64_t hkv = mem_kv_heads_per_rank(a, b->tp);
    int64_t qkv_w = (hq + 2 * hkv) * d;
    double td = (double)t;

    act_alloc(b, td * qkv_w * b->ab);
    gemm(b, "qkv_proj", t, h, qkv_w, 1);
    if (a->qk_norm)
        compute(b, "qk_norm", KC_NORM, 4.0 * td * (hq + hkv) * d,
                2.0 * td * (hq + hkv) * d * b->ab, shp(3, t, hq + hkv, d),
                shp(1, d, 0, 0), shp(3, t, hq + hkv, d));
    compute(b, "rope", KC_ROPE, 3.0 * td * (hq + hkv) * d,
            2.0 * td * (hq + hkv) * d * b->ab, shp(3, t, hq + hkv, d), shp(0, 0, 0, 0),
            shp(3, t, hq + hkv, d));
    double kv_bytes = td * mem_kv_bytes_per_token_layer(a, b->tp, b->s->kv_dtype);
    compute(b, "kv_write", KC_KV_WRITE, 0, td * 2.0 * hkv * d * b->ab + kv_bytes,
            shp(3, t, 2 * hkv, d), shp(0, 0, 0, 0), shp(3, t, 2 * hkv, d));
    mem(b, MC_KV_CACHE, kv_bytes, ST_COMPUTE);

    plan_op o = {0};
    o.name = "attention";
    o.kind = OPK_COMPUTE;
    o.stream = ST_COMPUTE;
    o.kclass = KC_ATTENTION;
    o.dtype = (uint8_t)b->adt;
    o.layout = TL_FULL;
    o.attn.q_len = t;
    o.attn.kv_len = prefix + t;
    o.attn.heads = hq;
    o.attn.kv_heads = hkv;
    o.attn.d_qk = d;
    o.attn.d_v = d;
    o.attn.causal = 1;
    /* query i (0-based) sees prefix + i + 1 keys */
    o.attn.pairs = td * (double)prefix + td * (td + 1.0) / 2.0;
    o.flops = 2.0 * o.attn.pairs * (double)hq * (double)(d + d);
    o.bytes = (td * hq * d * 2.0 + (double)(prefix + t) * 2.0 * hkv * d) * b->ab;
    o.in = shp(3, t, hq, d);
    o.w = shp(3, prefix + t, 2 * hkv, d);
    o.out = shp(3, t, hq, d);
    act_alloc(b, td * hq * d * b->ab);
    act_alloc(b, td * hq * 4.0); /* softmax log-sum-exp, fp32 per head and row */
    emit(b, &o);
    act_free(b, td * hq * 4.0);
    act_free(b, td * qkv_w * b->ab);

    act_alloc(b, td * h * b->ab);
    gemm(b, "o_proj", t, hq * d, h, 1);
    act_free(b, td * hq * d * b->ab);
    coll(b, "attn_all_reduce", CK_ALL_REDUCE, G_TP, td * h * b->ab, shp(2, t, h, 0));
}

/* MoE block on t tokens; leaves the output [t, h] allocated and reduced. */
static void moe(bld *b, int64_t t)
{
    const arch *a = b->a;
    int64_t h = a->hidden, E = a->experts, k = a->top_k;
    int ep = b->ep;
    /* with EP, each rank routes its 1/ep slice of the (replicated) tokens */
    int64_t tl = ep > 1 ? (t + ep - 1) / ep : t;
    double tld = (double)tl, row = (double)h * b->ab;
    int64_t e_local = ep > 1 ? E / ep : E;
    int64_t inter = ep > 1 ? a->moe_intermediate : a->moe_intermediate / b->tp;
    /* rows leaving this rank: every token goes to k experts */
    double rows_out = tld * (double)k;
    /* uniform routing: with EP the rank's E/ep experts receive, from all ep
     * ranks, ep * rows_out / ep = rows_out rows; without EP every expert
     * receives rows_out / E rows */
    int64_t m_exp = (int64_t)ceil(rows_out / (double)e_local);
    double rows_in = (double)m_exp * (double)e_local;

    act_alloc(b, tld * E * 4.0);
    gemm(b, "router", tl, h, E, 1);
    compute(b, "topk", KC_TOPK, 5.0 * tld * E, tld * E * 4.0 + tld * k * 8.0,
            shp(2, tl, E, 0), shp(0, 0, 0, 0), shp(2, tl, k, 0));
    act_free(b, tld * E * 4.0);

    if (ep > 1) {
        /* pack each token's k copies by destination rank, then exchange */
        act_alloc(b, rows_out * row);
        compute(b, "moe_permute", KC_MOE_PERMUTE, 0, 2.0 * rows_out * row, shp(2, tl, h, 0),
                shp(0, 0, 0, 0), shp(2, tl * k, h, 0));
        buf_alloc(b, rows_in * row);
        coll(b, "moe_dispatch", CK_ALL_TO_ALL, G_EP, rows_out * row, shp(2, tl * k, h, 0));
        act_free(b, rows_out * row);
    }
    /* without EP the fused MoE kernel reads its rows by index straight from
     * the hidden states (vLLM fused_moe): no packed copy */
    mlp(b, &MLP_EXPERTS, m_exp, inter, e_local);
    if (ep > 1) {
        buf_free(b, rows_in * row); /* received rows */
        buf_alloc(b, rows_out * row);
        coll(b, "moe_combine", CK_ALL_TO_ALL, G_EP, rows_out * row, shp(2, tl * k, h, 0));
        act_free(b, rows_in * row); /* expert outputs, sent back */
    }
    /* weighted sum of each token's k expert outputs */
    act_alloc(b, tld * row);
    compute(b, "moe_sum", KC_MOE_PERMUTE, 2.0 * rows_out * h, rows_out * row + tld * row,
            shp(3, tl, k, h), shp(0, 0, 0, 0), shp(2, tl, h, 0));
    if (ep > 1)
        buf_free(b, rows_out * row); /* combined rows */
    else
        act_free(b, rows_in * row); /* expert outputs */
    if (a->shared_intermediate > 0) {
        int64_t sh_inter = ep > 1 ? a->shared_intermediate : a->shared_intermediate / b->tp;
        mlp(b, &MLP_SHARED, tl, sh_inter, 1);
        elementwise(b, "shared_add", KC_ELEMENTWISE, tl, 2 * h, h, 1.0);
        act_free(b, tld * row);
    }
    if (ep > 1) {
        act_alloc(b, (double)t * row);
        coll(b, "moe_all_gather", CK_ALL_GATHER, G_EP, (double)t * row, shp(2, t, h, 0));
        act_free(b, tld * row);
    } else {
        coll(b, "moe_all_reduce", CK_ALL_REDUCE, G_TP, (double)t * row, shp(2, t, h, 0));
    }
}

static void ffn(bld *b, int64_t t)
{
    const arch *a = b->a;
    if (a->layer_moe[b->layer]) {
        moe(b, t);
        return;
    }
    mlp(b, &MLP_DENSE, t, a->intermediate / b->tp, 1);
    coll(b, "mlp_all_reduce", CK_ALL_REDUCE, G_TP, (double)t * a->hidden * b->ab,
         shp(2, t, a->hidden, 0));
}

/* One forward pass over t new tokens after `prefix` cached tokens. */
static void forward(bld *b, int64_t t, int64_t prefix)
{
    const arch *a = b->a;
    int64_t h = a->hidden;
    double th = (double)t * h * b->ab;

    b->layer = -1;
    act_alloc(b, th); /* residual stream */
    act_alloc(b, th); /* layer output / embedding */
    compute(b, "embedding", KC_EMBEDDING, 0, 2.0 * th, shp(1, t, 0, 0),
            shp(2, a->vocab / b->tp, h, 0), shp(2, t, h, 0));
    coll(b, "embed_all_reduce", CK_ALL_REDUCE, G_TP, th, shp(2, t, h, 0));

    for (int32_t l = 0; l < a->layers; l++) {
        b->layer = l;
        act_alloc(b, th);
        rms_norm(b, "input_norm", t, h, l > 0);
        act_free(b, th); /* previous layer output (or embedding) */
        attention_tp(b, t, prefix);
        /* normalized input is consumed by qkv_proj */
        act_free(b, th);
        act_alloc(b, th);
        rms_norm(b, "post_attn_norm", t, h, 1);
        act_free(b, th); /* attention output */
        ffn(b, t);
        act_free(b, th); /* normalized FFN input */
    }
    b->layer = -1;
    act_alloc(b, th);
    rms_norm(b, "final_norm", t, h, 1);
    act_free(b, th);
    /* LM head on the last token only (prefill samples one token) */
    int64_t v = a->vocab / b->tp;
    act_alloc(b, (double)v * 4.0);
    gemm(b, "lm_head", 1, h, v, 1);
    act_alloc(b, (double)a->vocab * 4.0);
    coll(b, "logits_all_gather", CK_ALL_GATHER, G_TP, (double)a->vocab * 4.0,
         shp(2, 1, a->vocab, 0));
    compute(b, "sample", KC_TOPK, (double)a->vocab, (double)a->vocab * 4.0,
            shp(2, 1, a->vocab, 0), shp(0, 0, 0, 0), shp(1, 1, 0, 0));
    act_free(b, (double)a->vocab * 4.0);
    act_free(b, (double)v * 4.0);
    act_free(b, th); /* normalized final hidden */
    act_free(b, th); /* residual */
}

static void step_marker(bld *b, double arrival)
{
    plan_op o = {0};
    o.name = "step";
    o.kind = OPK_STEP;
    o.stream = ST_COMPUTE;
    o.arrival_s = arrival;
    b->layer = -1;
    emit(b, &o);
}

int build_ranks(const scenario *s)
{
    return s->par.tp * s->par.sp * s->par.dp;
}

static cp_dtype gemm_dtype(const scenario *s)
{
    int w8 = dtype_bytes(s->w_dtype) <= 1.0, a8 = dtype_bytes(s->a_dtype) <= 1.0;
    return (w8 && a8) ? s->w_dtype : s->a_dtype;
}

int build_plan(const scenario *s, plan *out, cp_err *err)
{
    const arch *a = &s->model;
    if (s->par.sp > 1)
        return cp_fail(err, CP_EXIT_INPUT,
                       "parallel.sp = %d: sequence-parallel exchange strategies are "
                       "not available in this build of cpsim (use sp: 1)",
                       s->par.sp);
    if (a->attn == ATTN_MLA)
        return cp_fail(err, CP_EXIT_INPUT,
                       "model %s: MLA attention is not available in this build of "
                       "cpsim's plan builder",
                       a->name);
    if (s->par.ep > 1 && s->par.tp % s->par.ep != 0)
        return cp_fail(err, CP_EXIT_INPUT,
                       "parallel.ep = %d must divide parallel.tp = %d (experts are "
                       "spread over the ranks that share the tokens)",
                       s->par.ep, s->par.tp);

    plan_layout_cfg lay = {.tp = s->par.tp, .sp = s->par.sp, .ep = s->par.ep,
                           .dp = s->par.dp, .devices_per_node = s->plat.devices_per_node};
    plan_init(out, &lay);
    int g = plan_add_prog(out);
    for (int r = 0; r < out->nranks; r++)
        out->prog_of_rank[r] = g;

    bld b = {0};
    b.s = s;
    b.a = a;
    b.pg = &out->progs[g];
    b.tp = s->par.tp;
    b.ep = s->par.ep;
    b.adt = s->a_dtype;
    b.gdt = gemm_dtype(s);
    b.ab = dtype_bytes(s->a_dtype);
    b.wb = dtype_bytes(s->w_dtype);
    b.kvb = dtype_bytes(s->kv_dtype);
    b.last_compute = NONE;
    b.layer = -1;
    b.step = -1; /* set-up before the first step: the weights are resident */

    mem_weights w;
    mem_weights_per_rank(a, (mem_shard){.tp = s->par.tp, .ep = s->par.ep}, s->w_dtype, &w);
    mem(&b, MC_WEIGHTS, w.total, ST_COMPUTE);

    int32_t step = 0;
    for (int q = 0; q < s->nreqs; q++) {
        const wl_request *rq = &s->reqs[q];
        double kv_per_token = (double)a->layers *
                              mem_kv_bytes_per_token_layer(a, s->par.tp, s->kv_dtype);
        b.request = q;
        b.step = step++;
        step_marker(&b, rq->arrival_s);
        forward(&b, rq->prompt_tokens, 0);
        for (int64_t i = 0; i < rq->decode_tokens; i++) {
            b.step = step++;
            step_marker(&b, rq->arrival_s);
            forward(&b, 1, rq->prompt_tokens + i);
        }
        /* the request leaves: its KV cache is released */
        b.layer = -1;
        mem(&b, MC_KV_CACHE,
            -kv_per_token * (double)(rq->prompt_tokens + rq->decode_tokens), ST_COMPUTE);
    }
    out->nsteps = step;
    out->nrequests = s->nreqs;
    return 0;
}
