/* plan: storage, layout queries and JSON output of op programs (see plan.h). */
#include "models/plan.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"

/* cp_grow for the plan's 32-bit counts */
static void *grow(void *ptr, uint32_t *cap, uint32_t need, size_t elem)
{
    size_t c = *cap;
    ptr = cp_grow(ptr, &c, need, elem);
    *cap = (uint32_t)c;
    return ptr;
}

void plan_init(plan *p, const plan_layout_cfg *lay)
{
    memset(p, 0, sizeof *p);
    p->lay = *lay;
    p->nranks = lay->tp * lay->sp * lay->dp;
    p->prog_of_rank = calloc((size_t)p->nranks, sizeof *p->prog_of_rank);
    if (!p->prog_of_rank)
        abort();
}

void plan_free(plan *p)
{
    for (int i = 0; i < p->nprogs; i++) {
        free(p->progs[i].ops);
        free(p->progs[i].deps);
        free(p->progs[i].regions);
    }
    free(p->progs);
    free(p->prog_of_rank);
    free(p->prefill_steps);
    free(p->step_split);
    free(p->step_ring);
    memset(p, 0, sizeof *p);
}

int plan_add_prog(plan *p)
{
    plan_prog *np = realloc(p->progs, (size_t)(p->nprogs + 1) * sizeof *np);
    if (!np)
        abort();
    p->progs = np;
    memset(&p->progs[p->nprogs], 0, sizeof *np);
    return p->nprogs++;
}

uint32_t plan_push(plan_prog *prog, const plan_op *op)
{
    prog->ops = grow(prog->ops, &prog->cap, prog->nops + 1, sizeof *prog->ops);
    prog->ops[prog->nops] = *op;
    prog->ops[prog->nops].dep_first = prog->ndeps;
    prog->ops[prog->nops].ndeps = 0;
    return prog->nops++;
}

void plan_dep(plan_prog *prog, uint32_t op, uint32_t on)
{
    plan_op *o = &prog->ops[op];
    /* deps of an op are contiguous: only the most recently pushed op may
     * receive new ones, and only on earlier ops */
    if (op + 1 != prog->nops || on >= op || o->dep_first + o->ndeps != prog->ndeps)
        abort();
    for (uint32_t i = 0; i < o->ndeps; i++)
        if (prog->deps[o->dep_first + i] == on)
            return;
    prog->deps = grow(prog->deps, &prog->dcap, prog->ndeps + 1, sizeof *prog->deps);
    prog->deps[prog->ndeps++] = on;
    o->ndeps++;
}

/* Append a dependency of the last pushed op as given (duplicates kept). */
static void plan_dep_raw(plan_prog *prog, uint32_t op, uint32_t on)
{
    plan_op *o = &prog->ops[op];
    if (op + 1 != prog->nops || o->dep_first + o->ndeps != prog->ndeps)
        abort();
    prog->deps = grow(prog->deps, &prog->dcap, prog->ndeps + 1, sizeof *prog->deps);
    prog->deps[prog->ndeps++] = on;
    o->ndeps++;
}

/* ---- layout ------------------------------------------------------------- */

void plan_rank_coords(const plan_layout_cfg *lay, int r, int *tp_i, int *sp_i, int *dp_i)
{
    int sp_fast = lay->order == ORDER_SP_TP_DP;
    if (tp_i)
        *tp_i = sp_fast ? (r / lay->sp) % lay->tp : r % lay->tp;
    if (sp_i)
        *sp_i = sp_fast ? r % lay->sp : (r / lay->tp) % lay->sp;
    if (dp_i)
        *dp_i = r / (lay->tp * lay->sp);
}

int plan_rank_of(const plan_layout_cfg *lay, int tp_i, int sp_i, int dp_i)
{
    if (lay->order == ORDER_SP_TP_DP)
        return (dp_i * lay->tp + tp_i) * lay->sp + sp_i;
    return (dp_i * lay->sp + sp_i) * lay->tp + tp_i;
}

const char *const plan_order_names[] = {"tp_sp_dp", "sp_tp_dp", NULL};

const char *plan_order_name(plan_order o)
{
    return (unsigned)o <= ORDER_SP_TP_DP ? plan_order_names[o] : "?";
}

int plan_group_size(const plan_layout_cfg *lay, plan_group g)
{
    switch (g) {
    case G_TP:
        return lay->tp;
    case G_SP:
        return lay->sp;
    case G_EP:
        return lay->ep;
    case G_NODE:
        return lay->tp * lay->sp;
    case G_WORLD:
        return lay->tp * lay->sp * lay->dp;
    case G_DCP:
        return lay->dcp > 1 ? lay->dcp : 1;
    default:
        return 1;
    }
}

int plan_group_members(const plan_layout_cfg *lay, int r, plan_group g,
                       int *out, int cap, int *my_index)
{
    int tp_i, sp_i, dp_i;
    plan_rank_coords(lay, r, &tp_i, &sp_i, &dp_i);
    int n = plan_group_size(lay, g);
    int first = 0;
    switch (g) {
    case G_EP:
        first = (r / lay->ep) * lay->ep;
        break;
    case G_NODE:
        first = dp_i * lay->sp * lay->tp;
        break;
    default:
        break;
    }
    int dcp0 = g == G_DCP ? tp_i / n * n : 0; /* the group's first TP index */
    for (int i = 0; i < n; i++) {
        int m = g == G_TP    ? plan_rank_of(lay, i, sp_i, dp_i)
                : g == G_DCP ? plan_rank_of(lay, dcp0 + i, sp_i, dp_i)
                : g == G_SP  ? plan_rank_of(lay, tp_i, i, dp_i)
                             : first + i;
        if (i < cap)
            out[i] = m;
        if (m == r && my_index)
            *my_index = i;
    }
    return n;
}

/* ---- names ------------------------------------------------------------- */

#define NAME_OF(table, v) \
    ((unsigned)(v) < sizeof(table) / sizeof(table[0]) ? table[v] : "?")

const char *plan_kind_name(plan_opkind k)
{
    static const char *const t[] = {"compute", "collective", "p2p", "memory", "step"};
    return NAME_OF(t, k);
}

const char *plan_kclass_name(plan_kclass k)
{
    static const char *const t[] = {
        "gemm", "grouped_gemm", "moe_gemm", "attention", "sparse_attention", "indexer",
        "norm", "elementwise", "activation", "rope", "topk", "embedding", "kv_write",
        "lse_merge", "moe_permute", "moe_unpermute", "act_quant", "copy", "gelu",
        "layer_norm"};
    _Static_assert(sizeof t / sizeof t[0] == KC_COUNT, "a name per kernel class");
    return NAME_OF(t, k);
}

static const char *plan_qscale_name(plan_qscale q)
{
    static const char *const t[] = {"none", "tensor", "row", "block128"};
    return NAME_OF(t, q);
}

const char *const plan_route_names[] = {"balanced", "random", "skewed", NULL};

const char *plan_route_name(plan_route r)
{
    return (unsigned)r < RT_COUNT ? plan_route_names[r] : "?";
}

const char *plan_phase_name(plan_phase p)
{
    static const char *const t[] = {"other", "attention", "ffn"};
    return NAME_OF(t, p);
}

const char *plan_ring_name(plan_ring r)
{
    static const char *const t[] = {"none", "pass_q", "pass_kv"};
    return NAME_OF(t, r);
}

const char *plan_costsrc_file(plan_costsrc c)
{
    static const char *const t[] = {"", "gemm.csv", "gemm_graph.csv", "gemm_fp8.csv",
                                    "moe.csv", "attention.csv", "attention_cp.csv",
                                    "decode_attention.csv", "elementwise.csv",
                                    "sparse_attention.csv", "gemm_graph_decode.csv",
                                    "gemm_fp8_decode.csv", "moe_decode.csv",
                                    "elementwise_decode.csv", "attention_backends.csv",
                                    "aic_context_attention.csv",
                                    "aic_generation_attention.csv", "conv.csv", ""};
    _Static_assert(sizeof t / sizeof t[0] == CS_COUNT, "a file per cost source");
    return NAME_OF(t, c);
}

const char *plan_cost_src(const plan_op *o, char *buf, size_t n)
{
    /* the implementation, where it is not the profile's own torch / fa2 / nccl */
    char impl[24] = "";
    if (o->impl != IMPL_TORCH && o->impl != IMPL_FA2 && o->impl != IMPL_NCCL)
        snprintf(impl, sizeof impl, "[%s]", plan_impl_name((plan_impl)o->impl));
    if (o->cost_table == CS_ROOFLINE)
        snprintf(buf, n, "roofline:%s%s", plan_kclass_name(o->kclass), impl);
    else if (o->cost_table == CS_DERIVED)
        snprintf(buf, n, "derived:fused:%s%s", plan_kclass_name(o->kclass), impl);
    else
        snprintf(buf, n, "table:%s%s", plan_costsrc_file(o->cost_table), impl);
    return buf;
}

const char *const plan_launch_names[] = {"eager", "graph", "piecewise", NULL};

const char *const plan_impl_names[] = {"torch",  "fa2",            "cudnn", "fa3",
                                        "fused",  "fused_add",      "fused_kv_write",
                                        "nccl",   "custom",         "scaled_mm", NULL};

const char *plan_impl_name(plan_impl i)
{
    return (unsigned)i < IMPL_COUNT ? plan_impl_names[i] : "?";
}

const char *plan_coll_name(plan_coll c)
{
    static const char *const t[] = {"all_reduce", "all_gather", "reduce_scatter",
                                    "all_to_all", "broadcast"};
    return NAME_OF(t, c);
}

const char *plan_group_name(plan_group g)
{
    static const char *const t[] = {"tp", "sp", "ep", "node", "world", "dcp"};
    return NAME_OF(t, g);
}

const char *plan_memcat_name(plan_memcat c)
{
    static const char *const t[] = {"weights", "kv_cache", "activations",
                                    "comm_buffer", "workspace", "reserved", "allocator_slack"};
    return NAME_OF(t, c);
}

const char *plan_stream_name(int s)
{
    static const char *const t[] = {"compute", "comm", "comm2"};
    return NAME_OF(t, s);
}

const char *plan_layout_name(plan_layout l)
{
    static const char *const t[] = {"none", "full", "local"};
    return NAME_OF(t, l);
}

static const char *plan_alg_name(plan_alg a)
{
    static const char *const t[] = {"auto", "ring", "oneshot", "pairwise", "direct"};
    return NAME_OF(t, a);
}

/* ---- JSON -------------------------------------------------------------- */

static json_t *shape_json(const plan_shape *s)
{
    json_t *a = json_array();
    for (int i = 0; i < s->nd; i++)
        json_array_append_new(a, json_integer(s->d[i]));
    return a;
}

static json_t *op_json(const plan_prog *prog, uint32_t i)
{
    const plan_op *o = &prog->ops[i];
    json_t *j = json_object();
    json_object_set_new(j, "id", json_integer(i));
    json_object_set_new(j, "name", json_string(o->name));
    json_object_set_new(j, "kind", json_string(plan_kind_name(o->kind)));
    json_object_set_new(j, "layer", json_integer(o->layer));
    json_object_set_new(j, "step", json_integer(o->step));
    json_object_set_new(j, "stream", json_string(plan_stream_name(o->stream)));
    json_object_set_new(j, "phase", json_string(plan_phase_name(o->phase)));
    switch (o->kind) {
    case OPK_COMPUTE:
        json_object_set_new(j, "class", json_string(plan_kclass_name(o->kclass)));
        json_object_set_new(j, "dtype", json_string(dtype_name(o->dtype)));
        if (o->in.nd)
            json_object_set_new(j, "in", shape_json(&o->in));
        if (o->w.nd)
            json_object_set_new(j, "w", shape_json(&o->w));
        if (o->out.nd)
            json_object_set_new(j, "out", shape_json(&o->out));
        if (o->kclass == KC_GEMM || o->kclass == KC_GROUPED_GEMM ||
            o->kclass == KC_MOE_GEMM) {
            json_object_set_new(j, "m", json_integer(o->m));
            json_object_set_new(j, "k", json_integer(o->k));
            json_object_set_new(j, "n", json_integer(o->n));
            if (o->g > 1)
                json_object_set_new(j, "groups", json_integer(o->g));
            if (o->qscale != QS_NONE)
                json_object_set_new(j, "scales", json_string(plan_qscale_name(o->qscale)));
            if (o->kclass == KC_MOE_GEMM)
                json_object_set_new(j, "routing", json_string(plan_route_name(o->route)));
        }
        if (o->kclass == KC_ATTENTION || o->kclass == KC_SPARSE_ATTN ||
            o->kclass == KC_INDEXER) {
            json_t *a = json_object();
            json_object_set_new(a, "q_len", json_integer(o->attn.q_len));
            json_object_set_new(a, "kv_len", json_integer(o->attn.kv_len));
            json_object_set_new(a, "heads", json_integer(o->attn.heads));
            json_object_set_new(a, "kv_heads", json_integer(o->attn.kv_heads));
            json_object_set_new(a, "d_qk", json_integer(o->attn.d_qk));
            json_object_set_new(a, "d_v", json_integer(o->attn.d_v));
            json_object_set_new(a, "pairs", json_real(o->attn.pairs));
            json_object_set_new(a, "causal", json_boolean(o->attn.causal));
            if (o->attn.batch > 1)
                json_object_set_new(a, "batch", json_integer(o->attn.batch));
            json_object_set_new(j, "attention", a);
        }
        json_object_set_new(j, "flops", json_real(o->flops));
        json_object_set_new(j, "bytes", json_real(o->bytes));
        if (o->nkern > 1)
            json_object_set_new(j, "kernels", json_integer(o->nkern));
        json_object_set_new(j, "impl", json_string(plan_impl_name((plan_impl)o->impl)));
        if (o->shared_launch)
            json_object_set_new(j, "shared_launch", json_true());
        {
            char src[64];
            json_object_set_new(j, "cost_s", json_real(o->cost_s));
            json_object_set_new(j, "cost_src", json_string(plan_cost_src(o, src, sizeof src)));
            if (o->cost_table != CS_ROOFLINE)
                json_object_set_new(j, "cost_dist", json_real(o->cost_dist));
        }
        break;
    case OPK_COLL:
        json_object_set_new(j, "collective", json_string(plan_coll_name(o->coll)));
        json_object_set_new(j, "group", json_string(plan_group_name(o->group)));
        json_object_set_new(j, "algorithm", json_string(plan_alg_name(o->alg)));
        json_object_set_new(j, "dtype", json_string(dtype_name(o->dtype)));
        json_object_set_new(j, "comm_bytes", json_real(o->comm_bytes));
        if (o->out.nd)
            json_object_set_new(j, "out", shape_json(&o->out));
        break;
    case OPK_P2P:
        json_object_set_new(j, "group", json_string(plan_group_name(o->group)));
        json_object_set_new(j, "send_bytes", json_real(o->comm_bytes));
        json_object_set_new(j, "recv_bytes", json_real(o->recv_bytes));
        json_object_set_new(j, "send_offset", json_integer(o->send_off));
        json_object_set_new(j, "recv_offset", json_integer(o->recv_off));
        break;
    case OPK_MEM:
        json_object_set_new(j, "category", json_string(plan_memcat_name(o->mem_cat)));
        json_object_set_new(j, "bytes", json_real(o->mem_bytes));
        break;
    case OPK_STEP:
        json_object_set_new(j, "request", json_integer(o->request));
        json_object_set_new(j, "arrival_s", json_real(o->arrival_s));
        break;
    default:
        break;
    }
    if (o->layout != TL_NONE)
        json_object_set_new(j, "tokens", json_string(plan_layout_name(o->layout)));
    if (o->ndeps) {
        json_t *d = json_array();
        for (uint32_t k = 0; k < o->ndeps; k++)
            json_array_append_new(d, json_integer(prog->deps[o->dep_first + k]));
        json_object_set_new(j, "deps", d);
    }
    if (o->cost_s > 0)
        json_object_set_new(j, "cost_s", json_real(o->cost_s));
    return j;
}

int plan_write_json(const plan *p, FILE *out, cp_err *err)
{
    json_t *root = json_object();
    json_object_set_new(root, "schema", json_string("cpsim.plan/1"));
    json_t *lay = json_object();
    json_object_set_new(lay, "tp", json_integer(p->lay.tp));
    json_object_set_new(lay, "sp", json_integer(p->lay.sp));
    json_object_set_new(lay, "ep", json_integer(p->lay.ep));
    json_object_set_new(lay, "dp", json_integer(p->lay.dp));
    json_object_set_new(root, "layout", lay);
    json_object_set_new(root, "ranks", json_integer(p->nranks));
    json_t *progs = json_array();
    for (int g = 0; g < p->nprogs; g++) {
        json_t *pj = json_object();
        json_t *ranks = json_array();
        for (int r = 0; r < p->nranks; r++)
            if (p->prog_of_rank[r] == g)
                json_array_append_new(ranks, json_integer(r));
        json_object_set_new(pj, "ranks", ranks);
        json_t *ops = json_array();
        for (uint32_t i = 0; i < p->progs[g].nops; i++)
            json_array_append_new(ops, op_json(&p->progs[g], i));
        json_object_set_new(pj, "ops", ops);
        if (p->progs[g].nregions) {
            json_t *rs = json_array();
            for (uint32_t r = 0; r < p->progs[g].nregions; r++) {
                const plan_region *R = &p->progs[g].regions[r];
                json_array_append_new(rs, json_pack("{s:I, s:I, s:I, s:i}", "first",
                                                    (json_int_t)R->first, "ops",
                                                    (json_int_t)R->nops, "repeat",
                                                    (json_int_t)R->repeat, "layer_step",
                                                    R->layer_step));
            }
            json_object_set_new(pj, "regions", rs);
        }
        json_array_append_new(progs, pj);
    }
    json_object_set_new(root, "programs", progs);
    int rc = json_dumpf(root, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    fputc('\n', out);
    json_decref(root);
    if (rc != 0)
        return cp_fail(err, CP_EXIT_INTERNAL, "cannot write the plan as JSON");
    return 0;
}

/* ---- repeated regions ----------------------------------------------------- */


/* Region of each op (-1 outside) and the sequence index of its first copy. */
static int32_t *region_map(const plan_prog *pg)
{
    int32_t *rg = cp_xcalloc(pg->nops, sizeof *rg);
    for (uint32_t i = 0; i < pg->nops; i++)
        rg[i] = -1;
    for (uint32_t r = 0; r < pg->nregions; r++)
        for (uint32_t i = 0; i < pg->regions[r].nops; i++)
            rg[pg->regions[r].first + i] = (int32_t)r;
    return rg;
}

int64_t plan_kernels(const plan *p, int g)
{
    const plan_prog *pg = &p->progs[g];
    int32_t *rg = region_map(pg);
    int64_t n = 0;
    for (uint32_t i = 0; i < pg->nops; i++)
        if (pg->ops[i].kind == OPK_COMPUTE)
            n += (int64_t)(pg->ops[i].nkern ? pg->ops[i].nkern : 1) *
                 (rg[i] < 0 ? 1 : pg->regions[rg[i]].repeat);
    free(rg);
    return n;
}

void plan_vseq_build(const plan_prog *pg, plan_vseq *v)
{
    int32_t *rg = region_map(pg);
    uint32_t *base = cp_xcalloc(pg->nops, sizeof *base);
    uint64_t n = 0;
    for (uint32_t i = 0; i < pg->nops;) {
        if (rg[i] < 0) {
            base[i++] = (uint32_t)n++;
            continue;
        }
        const plan_region *R = &pg->regions[rg[i]];
        for (uint32_t j = 0; j < R->nops; j++)
            base[R->first + j] = (uint32_t)(n + j);
        n += (uint64_t)R->nops * R->repeat;
        i = R->first + R->nops;
    }
    if (n > UINT32_MAX)
        abort(); /* more ops than an index holds: the builder would not get here */
    v->n = (uint32_t)n;
    v->real = cp_xcalloc(n, sizeof *v->real);
    v->iter = cp_xcalloc(n, sizeof *v->iter);
    v->dep_first = cp_xcalloc(n + 1, sizeof *v->dep_first);
    /* copies of every op, in sequence order */
    uint64_t ndeps = 0;
    for (uint32_t i = 0; i < pg->nops; i++) {
        uint32_t copies = rg[i] < 0 ? 1 : pg->regions[rg[i]].repeat;
        uint32_t step = rg[i] < 0 ? 0 : pg->regions[rg[i]].nops;
        for (uint32_t k = 0; k < copies; k++) {
            v->real[base[i] + k * step] = i;
            v->iter[base[i] + k * step] = k;
        }
        ndeps += (uint64_t)pg->ops[i].ndeps * copies;
    }
    v->deps = cp_xcalloc(ndeps, sizeof *v->deps);
    /* the last copy of op t: what ops outside its region wait for */
#define LAST(t)                                                                                    \
    (rg[t] < 0 ? base[t] : base[t] + (pg->regions[rg[t]].repeat - 1) * pg->regions[rg[t]].nops)
    uint32_t nd = 0;
    for (uint32_t e = 0; e < v->n; e++) {
        v->dep_first[e] = nd;
        uint32_t s = v->real[e], k = v->iter[e];
        const plan_op *o = &pg->ops[s];
        for (uint32_t q = 0; q < o->ndeps; q++) {
            uint32_t t = pg->deps[o->dep_first + q], target;
            if (rg[s] >= 0 && rg[t] == rg[s])
                target = base[t] + k * pg->regions[rg[s]].nops;
            else if (rg[s] >= 0 && k > 0)
                target = e - (base[s] - LAST(t)); /* as far back as in copy 0 */
            else
                target = LAST(t);
            v->deps[nd++] = target;
        }
    }
#undef LAST
    v->dep_first[v->n] = nd;
    free(rg);
    free(base);
}

void plan_vseq_free(plan_vseq *v)
{
    free(v->real);
    free(v->iter);
    free(v->dep_first);
    free(v->deps);
    memset(v, 0, sizeof *v);
}

int32_t plan_vseq_layer(const plan_prog *pg, const plan_vseq *v, uint32_t i)
{
    const plan_op *o = &pg->ops[v->real[i]];
    if (v->iter[i] == 0 || o->layer < 0)
        return o->layer;
    for (uint32_t r = 0; r < pg->nregions; r++) {
        const plan_region *R = &pg->regions[r];
        if (v->real[i] >= R->first && v->real[i] < R->first + R->nops)
            return o->layer + (int32_t)v->iter[i] * R->layer_step;
    }
    return o->layer;
}

static int shape_eq(const plan_shape *a, const plan_shape *b)
{
    if (a->nd != b->nd)
        return 0;
    for (int i = 0; i < a->nd; i++)
        if (a->d[i] != b->d[i])
            return 0;
    return 1;
}

/* Same op apart from its layer and the place of its dependencies: every
 * other field of plan_op (a field left out would let two layers that
 * differ in it fold into one).  Names are static strings: one literal is
 * one pointer, so the pointers are compared before the text (a fold
 * compares every op of every layer). */
static int op_eq(const plan_op *a, const plan_op *b)
{
    return (a->name == b->name || strcmp(a->name, b->name) == 0) && a->step == b->step &&
           a->kind == b->kind && a->stream == b->stream && a->kclass == b->kclass &&
           a->coll == b->coll && a->group == b->group && a->alg == b->alg && a->dtype == b->dtype &&
           a->layout == b->layout && a->mem_cat == b->mem_cat && a->eager == b->eager &&
           a->m == b->m && a->k == b->k && a->n == b->n && a->g == b->g &&
           a->attn.q_len == b->attn.q_len && a->attn.kv_len == b->attn.kv_len &&
           a->attn.heads == b->attn.heads && a->attn.kv_heads == b->attn.kv_heads &&
           a->attn.d_qk == b->attn.d_qk && a->attn.d_v == b->attn.d_v &&
           a->attn.pairs == b->attn.pairs && a->attn.causal == b->attn.causal &&
           shape_eq(&a->in, &b->in) && shape_eq(&a->w, &b->w) && shape_eq(&a->out, &b->out) &&
           a->flops == b->flops && a->bytes == b->bytes && a->comm_bytes == b->comm_bytes &&
           a->recv_bytes == b->recv_bytes && a->send_off == b->send_off &&
           a->recv_off == b->recv_off && a->mem_bytes == b->mem_bytes &&
           a->arrival_s == b->arrival_s && a->request == b->request && a->ndeps == b->ndeps &&
           a->cost_s == b->cost_s && a->launch_s == b->launch_s && a->qscale == b->qscale &&
           a->route == b->route && a->nkern == b->nkern && a->phase == b->phase &&
           a->impl == b->impl && a->shared_launch == b->shared_launch &&
           a->attn.batch == b->attn.batch && a->attn.unfolded == b->attn.unfolded &&
           a->cost_dist == b->cost_dist && a->cost_table == b->cost_table &&
           a->eager_gap == b->eager_gap;
}

/* Ops a and b (of one program) equal with dependencies at equal distances. */
static int op_twin(const plan_prog *pg, uint32_t a, uint32_t b)
{
    const plan_op *x = &pg->ops[a], *y = &pg->ops[b];
    if (!op_eq(x, y))
        return 0;
    for (uint32_t q = 0; q < x->ndeps; q++)
        if (a - pg->deps[x->dep_first + q] != b - pg->deps[y->dep_first + q])
            return 0;
    return 1;
}

/* The expansion of `folded` equals `orig` op for op, dependencies included. */
static int expands_to(const plan_prog *folded, const plan_prog *orig)
{
    plan_vseq v;
    plan_vseq_build(folded, &v);
    int ok = v.n == orig->nops;
    for (uint32_t e = 0; ok && e < v.n; e++) {
        const plan_op *a = &folded->ops[v.real[e]], *b = &orig->ops[e];
        ok = op_eq(a, b) && plan_vseq_layer(folded, &v, e) == b->layer &&
             v.dep_first[e + 1] - v.dep_first[e] == b->ndeps;
        for (uint32_t q = 0; ok && q < b->ndeps; q++)
            ok = v.deps[v.dep_first[e] + q] == orig->deps[b->dep_first + q];
    }
    plan_vseq_free(&v);
    return ok;
}

/* Fold one expanded program into out (empty); returns ops removed. */
static size_t fold_prog(const plan_prog *pg, plan_prog *out)
{
    uint32_t *map = cp_xcalloc(pg->nops, sizeof *map); /* old index -> new index */
    uint32_t i = 0;
    size_t saved = 0;
    while (i < pg->nops) {
        const plan_op *o = &pg->ops[i];
        uint32_t len = 0;
        while (o->layer >= 0 && i + len < pg->nops && pg->ops[i + len].layer == o->layer &&
               pg->ops[i + len].step == o->step)
            len++;
        uint32_t copies = 1;
        while (len > 0 && i + (copies + 1) * len <= pg->nops) {
            uint32_t b = i + copies * len, q = 0;
            while (q < len && op_twin(pg, i + q, b + q) &&
                   pg->ops[b + q].layer == o->layer + (int32_t)copies)
                q++;
            if (q < len || (b + len < pg->nops && pg->ops[b + len].layer == pg->ops[b].layer &&
                            pg->ops[b + len].step == pg->ops[b].step))
                break;
            copies++;
        }
        uint32_t keep = copies > 1 ? len : (len ? len : 1);
        uint32_t first = out->nops;
        for (uint32_t c = 0; c < copies; c++)
            for (uint32_t q = 0; q < keep; q++)
                map[i + c * keep + q] = first + q;
        for (uint32_t q = 0; q < keep; q++) {
            uint32_t j = plan_push(out, &pg->ops[i + q]);
            for (uint32_t d = 0; d < pg->ops[i + q].ndeps; d++)
                plan_dep_raw(out, j, map[pg->deps[pg->ops[i + q].dep_first + d]]);
        }
        if (copies > 1) {
            out->regions = realloc(out->regions, (out->nregions + 1) * sizeof *out->regions);
            if (!out->regions)
                abort();
            out->regions[out->nregions++] = (plan_region){first, len, copies, 1};
            saved += (size_t)(copies - 1) * len;
        }
        i += copies * keep;
    }
    free(map);
    return saved;
}

size_t plan_fold_prog(plan_prog *pg)
{
    if (pg->nregions)
        return 0;
    plan_prog f = {0};
    size_t s = fold_prog(pg, &f);
    if (s > 0 && expands_to(&f, pg)) {
        free(pg->ops);
        free(pg->deps);
        f.kv_pool = pg->kv_pool; /* the program's, not its ops' */
        f.kv_need = pg->kv_need;
        *pg = f;
        return s;
    }
    free(f.ops);
    free(f.deps);
    free(f.regions);
    return 0;
}

size_t plan_fold_layers(plan *p)
{
    size_t saved = 0;
    for (int g = 0; g < p->nprogs; g++)
        saved += plan_fold_prog(&p->progs[g]);
    return saved;
}

void plan_expand(const plan *p, plan *out)
{
    plan_init(out, &p->lay);
    memcpy(out->prog_of_rank, p->prog_of_rank, (size_t)p->nranks * sizeof *out->prog_of_rank);
    out->nsteps = p->nsteps;
    out->nrequests = p->nrequests;
    if (p->prefill_steps) {
        out->prefill_steps = cp_xcalloc((size_t)p->nrequests, sizeof *out->prefill_steps);
        memcpy(out->prefill_steps, p->prefill_steps,
               (size_t)p->nrequests * sizeof *out->prefill_steps);
    }
    if (p->step_split) {
        out->step_split = cp_xcalloc((size_t)p->nsteps + 1, sizeof *out->step_split);
        memcpy(out->step_split, p->step_split, (size_t)p->nsteps * sizeof *out->step_split);
    }
    if (p->step_ring) {
        out->step_ring = cp_xcalloc((size_t)p->nsteps + 1, sizeof *out->step_ring);
        memcpy(out->step_ring, p->step_ring, (size_t)p->nsteps * sizeof *out->step_ring);
    }
    for (int g = 0; g < p->nprogs; g++) {
        const plan_prog *pg = &p->progs[g];
        int gi = plan_add_prog(out);
        plan_prog *o = &out->progs[gi];
        o->kv_pool = pg->kv_pool;
        o->kv_need = pg->kv_need;
        plan_vseq v;
        plan_vseq_build(pg, &v);
        for (uint32_t e = 0; e < v.n; e++) {
            plan_op op = pg->ops[v.real[e]];
            op.layer = plan_vseq_layer(pg, &v, e);
            uint32_t j = plan_push(o, &op);
            for (uint32_t q = v.dep_first[e]; q < v.dep_first[e + 1]; q++)
                plan_dep_raw(o, j, v.deps[q]);
        }
        plan_vseq_free(&v);
    }
}
