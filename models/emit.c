/* emit: the plan builder's emitters (see emit.h). */
#include "models/emit.h"

#include <stdlib.h>

void em_wait_for(bld *b, uint32_t op)
{
    if (op == EM_NONE)
        return;
    if (b->npending == EM_MAX_PENDING)
        abort(); /* builder bug: too many outstanding cross-stream waits */
    b->pending[b->npending++] = op;
}

/* Whether op o runs outside the graph under the scenario's graph mode
 * (models/kset.h ks_graph): decode_only captures the steps of decodes
 * alone; piecewise leaves attention out of every graph (vLLM's splitting
 * ops), full_and_piecewise out of the graphs of steps with a prefill. */
static int outside_graph(const bld *b, const plan_op *o)
{
    if (!b->s || (o->kind != OPK_COMPUTE && o->kind != OPK_COLL && o->kind != OPK_P2P))
        return 0;
    if (b->eager_step)
        return 1;
    int attention = o->kind == OPK_COMPUTE &&
                    (o->kclass == KC_ATTENTION || o->kclass == KC_SPARSE_ATTN ||
                     o->kclass == KC_INDEXER);
    switch (b->s->graph) {
    case GRAPH_DECODE_ONLY:
        return b->prefill;
    case GRAPH_PIECEWISE:
        return attention;
    case GRAPH_FULL_AND_PIECEWISE:
        return b->prefill && attention;
    default:
        return 0;
    }
}

uint32_t em_emit(bld *b, plan_op *o)
{
    if (outside_graph(b, o))
        o->eager = 1;
    o->layer = b->layer;
    o->step = b->step;
    o->request = b->request;
    o->phase = b->phase;
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

plan_impl em_impl(const bld *b, int slot)
{
    return b->s ? (plan_impl)b->s->kernels.impl[slot] : IMPL_TORCH;
}

void em_stamp(bld *b, uint32_t i, plan_impl impl, int nkern)
{
    b->pg->ops[i].impl = (uint8_t)impl;
    b->pg->ops[i].nkern = (uint8_t)(nkern > 1 ? nkern : 1);
}

/* A kernel op of class kc on the compute stream, stamped with the
 * context's activation dtype and token layout. */
static plan_op kernel_op(const bld *b, const char *name, plan_kclass kc)
{
    plan_op o = {0};
    o.name = name;
    o.kind = OPK_COMPUTE;
    o.stream = ST_COMPUTE;
    o.kclass = (uint8_t)kc;
    o.dtype = (uint8_t)b->adt;
    o.layout = b->layout;
    o.g = 1;
    return o;
}

uint32_t em_compute(bld *b, const char *name, plan_kclass kc, double flops, double bytes,
                    plan_shape in, plan_shape w, plan_shape out)
{
    plan_op o = kernel_op(b, name, kc);
    o.flops = flops;
    o.bytes = bytes;
    o.in = in;
    o.w = w;
    o.out = out;
    return em_emit(b, &o);
}

/* Set the kernel count of op i (its launches, plan_op.nkern). */
static void em_kernels(bld *b, uint32_t i, int nkern)
{
    b->pg->ops[i].nkern = (uint8_t)nkern;
}

em_wprec em_use_weights(bld *b, em_wprec w)
{
    em_wprec prev = {b->gdt, b->gqs, b->wb};
    b->gdt = w.gdt;
    b->gqs = w.gqs;
    b->wb = w.wb;
    return prev;
}

static int eight_bit(cp_dtype t)
{
    return t == DT_FP8 || t == DT_INT8;
}

/* Bytes of an activation quantisation of [m, k]: read the bf16 rows, write
 * one byte per element and an fp32 scale per row (and per 128-block of a
 * row for block scales): gemm_fp8.csv min_bytes. */
void em_act_quant(bld *b, int64_t m, int64_t k)
{
    if (b->s->act_quant == AQ_FUSED || m <= 0 || k <= 0)
        return;
    double md = (double)m, kd = (double)k;
    double scales = b->gqs == QS_BLOCK ? (double)(k / 128 > 0 ? k / 128 : 1) : 1.0;
    /* derived: abs, max and a divide per element, a cast */
    uint32_t i = em_compute(b, "act_quant", KC_ACT_QUANT, 3.0 * md * kd,
                            md * kd * b->ab + md * kd + md * scales * 4.0, shp(2, m, k, 0),
                            shp(0, 0, 0, 0), shp(2, m, k, 0));
    b->pg->ops[i].qscale = b->gqs;
    b->pg->ops[i].dtype = (uint8_t)b->gdt;
    /* calib_gemm_fp8.py quant_fns: abs, amax, cast, clamp, two divides, cast */
    em_kernels(b, i, b->s->act_quant == AQ_UNFUSED ? 7 : 1);
}

uint32_t em_gemm_float(bld *b, const char *name, int64_t m, int64_t k, int64_t n)
{
    plan_op o = kernel_op(b, name, KC_GEMM);
    o.m = m;
    o.k = k;
    o.n = n;
    o.g = 1;
    double md = (double)m;
    /* a multiply-add (2 flops) per output element and k; reads x and W,
     * writes y once, all in the activation dtype */
    o.flops = 2.0 * md * (double)k * (double)n;
    o.bytes = (md * (double)k + (double)k * (double)n + md * (double)n) * b->ab;
    o.in = shp(2, m, k, 0);
    o.w = shp(2, k, n, 0);
    o.out = shp(2, m, n, 0);
    return em_emit(b, &o);
}

uint32_t em_moe_gemm(bld *b, const char *name, int64_t rows, int64_t k, int64_t n, int64_t g)
{
    if (eight_bit(b->gdt))
        em_act_quant(b, rows, k);
    plan_op o = kernel_op(b, name, KC_MOE_GEMM);
    o.dtype = (uint8_t)b->gdt;
    o.qscale = eight_bit(b->gdt) ? b->gqs : QS_NONE;
    o.route = (uint8_t)b->s->moe_routing;
    o.m = rows;
    o.k = k;
    o.n = n;
    o.g = g;
    double rd = (double)rows;
    /* weights: every local expert that gets a row at least once (at most
     * rows of them) */
    double active = (double)(rows < g ? rows : g);
    /* a multiply-add (2 flops) per output element and k */
    o.flops = 2.0 * rd * (double)k * (double)n;
    o.bytes = rd * (double)k * b->ab + active * (double)k * (double)n * b->wb +
              rd * (double)n * b->ab;
    o.in = shp(2, rows, k, 0);
    o.w = shp(3, g, k, n);
    o.out = shp(2, rows, n, 0);
    /* torch._grouped_mm launches a prepare kernel before the GEMM; a fused
     * set's fused_moe_kernel is one launch */
    o.impl = (uint8_t)em_impl(b, KS_MOE_ROUTING);
    o.nkern = o.impl == IMPL_TORCH ? 2 : 1;
    return em_emit(b, &o);
}

/* y[m, n] = x[m, k] W[n, k]^T, g groups of m rows (g = 1: plain GEMM). */
uint32_t em_gemm(bld *b, const char *name, int64_t m, int64_t k, int64_t n, int64_t g)
{
    int quant = g <= 1 && eight_bit(b->gdt);
    if (quant)
        em_act_quant(b, m, k);
    plan_op o = kernel_op(b, name, g > 1 ? KC_GROUPED_GEMM : KC_GEMM);
    o.dtype = (uint8_t)b->gdt;
    o.qscale = quant ? b->gqs : QS_NONE;
    o.m = m;
    o.k = k;
    o.n = n;
    o.g = g;
    double gm = (double)g * (double)m;
    /* a multiply-add (2 flops) per output element and k; bytes: x, W (wb per
     * element) and y once each */
    o.flops = 2.0 * gm * (double)k * (double)n;
    o.bytes = gm * (double)k * b->ab + (double)g * (double)k * (double)n * b->wb +
              gm * (double)n * b->ab;
    o.in = shp(2, g * m, k, 0);
    o.w = g > 1 ? shp(3, g, k, n) : shp(2, k, n, 0);
    o.out = shp(2, g * m, n, 0);
    return em_emit(b, &o);
}

/* Memory event on a stream: + allocates, - frees. */
void em_mem(bld *b, plan_memcat cat, double bytes, int stream)
{
    if (bytes == 0)
        return;
    plan_op o = {0};
    o.name = bytes > 0 ? "alloc" : "free";
    o.kind = OPK_MEM;
    o.stream = (uint8_t)stream;
    o.mem_cat = (uint8_t)cat;
    o.mem_bytes = bytes;
    em_emit(b, &o);
}

em_tensor em_alloc(bld *b, plan_memcat cat, double bytes, int stream)
{
    em_mem(b, cat, bytes, stream);
    em_tensor t = {.bytes = bytes, .cat = (uint8_t)cat, .state = EMT_LIVE};
    return t;
}

em_tensor em_act_alloc(bld *b, double bytes)
{
    return em_alloc(b, MC_ACTIVATIONS, bytes, ST_COMPUTE);
}

em_tensor em_buf_alloc(bld *b, double bytes)
{
    return em_alloc(b, MC_COMM_BUFFER, bytes, ST_COMPUTE);
}

void em_free_on(bld *b, em_tensor *t, int stream)
{
    if (t->state == EMT_FREED)
        abort(); /* builder bug: a tensor freed twice */
    if (t->state == EMT_LIVE)
        em_mem(b, (plan_memcat)t->cat, -t->bytes, stream);
    t->state = EMT_FREED;
}

void em_free(bld *b, em_tensor *t)
{
    em_free_on(b, t, ST_COMPUTE);
}

/* Python's lifetimes (kernel set eager_locals: an eager engine of Python
 * modules, models/kset.h).  A tensor bound to a local of a Python function
 * lives until the function returns, not until its last kernel: the
 * builders mark a function's scope (em_locals_begin / em_locals_end, the
 * returned mark) and a local's last use with em_local, which frees it
 * at once without eager_locals and at the scope's end with them. */
static int em_eager_locals(const bld *b)
{
    return b->s && b->s->kernels.eager_locals;
}

int em_locals_begin(bld *b)
{
    b->scopes++;
    return b->nheld;
}

void em_local(bld *b, em_tensor *t)
{
    if (!em_eager_locals(b) || t->state != EMT_LIVE || b->scopes == 0) {
        em_free(b, t);
        return;
    }
    if (b->nheld == EM_MAX_HELD)
        abort(); /* builder bug: more locals than a scope holds */
    b->held[b->nheld++] = *t;
    t->state = EMT_FREED; /* the caller's handle is spent; the scope frees it */
}

void em_locals_end(bld *b, int mark)
{
    while (b->nheld > mark)
        em_free(b, &b->held[--b->nheld]);
    b->scopes--;
}

em_tensor em_tmp(bld *b, double bytes)
{
    return em_eager_locals(b) && b->scopes > 0 ? em_act_alloc(b, bytes) : EM_TENSOR_NONE;
}

void em_tmp_end(bld *b, em_tensor *t)
{
    if (t->state == EMT_LIVE)
        em_free(b, t);
}

void em_local_new(bld *b, double bytes)
{
    if (!em_eager_locals(b) || b->scopes == 0)
        return;
    em_tensor t = em_act_alloc(b, bytes);
    em_local(b, &t);
}

em_tensor em_split(em_tensor *t, double bytes)
{
    if (t->state != EMT_LIVE || bytes > t->bytes)
        abort(); /* builder bug: a part of no live allocation */
    em_tensor part = *t;
    part.bytes = bytes;
    t->bytes -= bytes;
    return part;
}

/* A collective on the comm stream after the last compute op; the next
 * compute op waits for it.  Returns EM_NONE when the group has one member. */
uint32_t em_coll(bld *b, const char *name, plan_coll kind, plan_group g,
                     double bytes, plan_shape out)
{
    if (plan_group_size(&b->lay, g) <= 1)
        return EM_NONE;
    plan_op o = {0};
    o.name = name;
    o.kind = OPK_COLL;
    o.stream = ST_COMM;
    o.coll = (uint8_t)kind;
    o.group = (uint8_t)g;
    o.alg = ALG_AUTO;
    o.dtype = (uint8_t)b->adt;
    o.layout = b->layout;
    o.comm_bytes = bytes;
    o.out = out;
    /* the engines' custom all-reduce: TP groups of 2, 4, 6 or 8 and
     * messages up to 8 MiB (vLLM custom_all_reduce.py _SUPPORTED_WORLD_SIZES,
     * max_size 8192 * 1024); others and groups across nodes (coll_run) NCCL */
    int n = plan_group_size(&b->lay, g);
    if (kind == CK_ALL_REDUCE && g == G_TP && em_impl(b, KS_ALLREDUCE) == IMPL_CUSTOM &&
        n <= 8 && n % 2 == 0 && bytes <= 8.0 * 1024 * 1024)
        o.impl = IMPL_CUSTOM;
    else if (o.kind == OPK_COLL)
        o.impl = IMPL_NCCL;
    uint32_t i = em_emit(b, &o);
    if (b->last_compute != EM_NONE)
        plan_dep(b->pg, i, b->last_compute);
    em_wait_for(b, i);
    return i;
}

void em_rms_norm(bld *b, const char *name, int64_t m, int64_t h, int with_add)
{
    double mh = (double)m * (double)h;
    plan_impl impl = em_impl(b, KS_NORM);
    if (with_add && impl == IMPL_TORCH) {
        /* the residual add on its own (reads both, writes the sum), then the
         * norm of the sum: PyTorch's two kernels (engine_checks.py trace) */
        em_elementwise(b, "residual_add", KC_ELEMENTWISE, m, 2 * h, h, 1.0);
        with_add = 0;
    }
    /* reads x (and the residual), writes the output (and the new residual):
     * 2 (4) element accesses, plus the weight once; derived: square and
     * accumulate, scale by the rsqrt, multiply by the weight (4 flops per
     * element), one more for the add */
    double bytes = (with_add ? 4.0 : 2.0) * mh * b->ab + (double)h * b->wb;
    uint32_t i = em_compute(b, name, KC_NORM, (with_add ? 5.0 : 4.0) * mh, bytes,
                            shp(2, m, h, 0), shp(1, h, 0, 0), shp(2, m, h, 0));
    em_stamp(b, i, impl == IMPL_TORCH ? IMPL_TORCH : with_add ? IMPL_FUSED_ADD : IMPL_FUSED, 1);
}

uint32_t em_elementwise(bld *b, const char *name, plan_kclass kc, int64_t m, int64_t n_in,
                        int64_t n_out, double flops_per_out)
{
    double bytes = ((double)m * n_in + (double)m * n_out) * b->ab;
    return em_compute(b, name, kc, flops_per_out * (double)m * n_out, bytes,
                      shp(2, m, n_in, 0), shp(0, 0, 0, 0), shp(2, m, n_out, 0));
}

void em_swiglu(bld *b, const char *name, int64_t m, int64_t inter)
{
    /* derived: silu x * sigmoid(x) about 4 flops, the multiply 1; torch runs
     * F.silu then the multiply, a fused set silu_and_mul */
    uint32_t i = em_elementwise(b, name, KC_ACTIVATION, m, 2 * inter, inter, 5.0);
    plan_impl impl = em_impl(b, KS_ACTIVATION);
    em_stamp(b, i, impl, impl == IMPL_TORCH ? 2 : 1);
}

void em_rope(bld *b, const char *name, int64_t m, int64_t heads, int64_t d, int tensors)
{
    double e = (double)m * (double)heads * (double)d;
    /* derived: two multiplies and an add per element; reads x, writes it
     * (elementwise.csv rope_unfused min_bytes) */
    uint32_t i = em_compute(b, name, KC_ROPE, 3.0 * e, 2.0 * e * b->ab, shp(3, m, heads, d),
                            shp(0, 0, 0, 0), shp(3, m, heads, d));
    /* torch: neg, cat, two multiplies and an add per tensor (the trace of
     * engine_checks.py); a fused set rotates every tensor in one kernel */
    plan_impl impl = em_impl(b, KS_ROPE);
    em_stamp(b, i, impl, impl == IMPL_TORCH ? 5 * tensors : 1);
}

uint32_t em_copy(bld *b, const char *name, double bytes, plan_shape in, plan_shape out)
{
    return em_compute(b, name, KC_COPY, 0, 2.0 * bytes, in, shp(0, 0, 0, 0), out);
}

double em_lse_bytes(int64_t rows, int64_t heads)
{
    return (double)rows * (double)heads * 4.0; /* fp32: 4 B per row and head */
}

em_tensor em_lse_alloc(bld *b, int64_t rows, int64_t heads)
{
    return em_act_alloc(b, em_lse_bytes(rows, heads));
}

uint32_t em_lse_merge(bld *b, const char *name, int64_t rows, int64_t heads, int64_t d,
                      int parts, double pb)
{
    double e = (double)rows * (double)heads * (double)d;
    double lse = em_lse_bytes(rows, heads);
    /* reads each partial (activation dtype) and its fp32 LSE, writes the
     * merged output (elementwise.csv lse_merge2_unfused min_bytes: 3 n h d
     * x 2 B + 2 n h x 4 B for two partials); derived: a scaling and an add
     * per partial element */
    uint32_t i = em_compute(b, name, KC_LSE_MERGE, 2.0 * parts * e,
                            parts * (e * pb + lse) + e * b->ab, shp(3, rows, heads, d),
                            shp(0, 0, 0, 0), shp(3, rows, heads, d));
    plan_impl impl = em_impl(b, KS_LSE_MERGE);
    em_stamp(b, i, impl, impl == IMPL_TORCH ? 12 : 1);
    return i;
}

uint32_t em_attention(bld *b, const char *name, plan_kclass kc, const plan_attn *at,
                      double flops, double bytes)
{
    plan_op o = kernel_op(b, name, kc);
    o.attn = *at;
    o.flops = flops;
    o.bytes = bytes;
    if (kc == KC_ATTENTION)
        o.impl = (uint8_t)em_impl(b, KS_ATTENTION);
    o.in = shp(3, at->q_len, at->heads, at->d_qk);
    o.w = shp(3, at->kv_len, at->kv_heads, at->d_qk);
    o.out = shp(3, at->q_len, at->heads, at->d_v);
    return em_emit(b, &o);
}

double em_causal_pairs(int64_t t, int64_t prefix, int64_t cap)
{
    double td = (double)t, p = (double)prefix;
    if (cap <= 0 || prefix + t <= cap)
        return td * p + td * (td + 1.0) / 2.0;
    /* queries 0..n-1 see prefix + i + 1 <= cap keys, the rest see cap */
    int64_t n = cap - prefix > 0 ? cap - prefix : 0;
    double nd = (double)n;
    return nd * p + nd * (nd + 1.0) / 2.0 + (td - nd) * (double)cap;
}
