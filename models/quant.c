/* quant: quantization types of the checkpoint's tensors and the static
 * weight accounting of one rank (see quant.h; the description file is read
 * and checked in quant_desc.c). */
#include "models/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/scenario.h"

static const char *const type_names[QT_COUNT] = {"FLOAT", "W8A8", "W8A8_DYNAMIC", "FP8_BLOCK",
                                                 "PLAIN", "INT_GROUP"};

const char *quant_type_name(quant_type t)
{
    return (unsigned)t < QT_COUNT ? type_names[t] : "?";
}

const char *quant_cat_name(quant_cat c)
{
    static const char *const t[QC_COUNT] = {"quantized", "float", "scales", "fp32_scales",
                                            "derived"};
    return (unsigned)c < QC_COUNT ? t[c] : "?";
}

const char *quant_step_name(quant_step st)
{
    static const char *const t[QS_COUNT] = {
        "plain TP-sharded estimate (precision.weights; MLP linears at mlp_weights)",
        "+ per-tensor types (float exceptions in the params dtype)",
        "+ weight_scale / weight_offset / input scales / quant_bias / zeros",
        "+ fp32 scales (deq_scale, weight_scale_fp32, block scales)",
        "+ derived weights (W_UK_T / W_UV replace kv_b_proj, input-scale repeats)",
        "+ shared experts sharded by TP (sequence-parallel MoE)",
        "+ DSA CP full layout of q_b_proj, kv_b_proj (W_UK_T / W_UV), o_proj",
        "+ layer sharding (weights of the sharded projections: 1 layer in K kept)",
    };
    return (unsigned)st < QS_COUNT ? t[st] : "?";
}

/* ---- accounting ------------------------------------------------------------- */

double quant_params_bytes(const struct scenario *s)
{
    double w = dtype_bytes(s->w_dtype), a = dtype_bytes(s->a_dtype);
    if (w >= 2.0)
        return w;
    return a >= 2.0 ? a : dtype_bytes(DT_BF16);
}

/* What one accounting pass includes (cumulative steps of quant_step). */
typedef struct qpass {
    const struct scenario *s;
    const quant_desc *d;
    quant_step upto;
    mem_shard shard;        /* sharding of this pass */
    uint32_t sharded;       /* layer-sharded projections */
    int shard_k;
    int whole;              /* quant_proj_bytes: the tensor as a whole, held */
    int weight_only;        /* quant_proj_bytes: the weight alone */
    mem_proj only;          /* quant_proj_bytes: this projection only (MP_NONE: all) */
    double pb, wb;          /* bytes per element: params dtype, precision.weights */
    double mlp_wb;          /* bytes per element of the MLP linears (mlp_weights) */
    /* results */
    double bytes[WF_COUNT][QC_COUNT];
    int ntype[QT_COUNT];
    double load_transient;
    int stack_layer;        /* layer of the expert stacks below */
    double stack13, stack2; /* quantized routed-expert gate/up and down stacks */
    int win_layer;          /* layer of win_cur */
    double win_cur, win_max;
} qpass;

/* t is an MLP linear (dense MLP, routed or shared expert: gate, up, down),
 * which precision.mlp_weights types. */
static int quant_is_mlp(const mem_tensor *t)
{
    return t->linear && (t->fam == WF_DENSE_MLP || t->fam == WF_EXPERTS ||
                         t->fam == WF_SHARED_EXPERTS);
}

/* The dtype precision gives t: mlp_weights for an MLP linear, else weights. */
static cp_dtype wdtype_of(const qpass *q, const mem_tensor *t)
{
    return quant_is_mlp(t) ? q->s->mlp_dtype : q->s->w_dtype;
}

/* Weights of dtype w are the checkpoint's integer scheme with group (or
 * channel) scales (quant.h INT_GROUP): config.json says integer weights of
 * w's bits, grouped or per channel, and no description types them. */
static int int_groups(const qpass *q, cp_dtype w)
{
    const arch *a = &q->s->model;
    return !q->d && !strcmp(a->quant_type, "int") && a->quant_bits == (int)(dtype_bytes(w) * 8) &&
           (!strcmp(a->quant_strategy, "group") || !strcmp(a->quant_strategy, "channel"));
}

/* Type of t under the rules of quant.h. */
static quant_type type_of(const qpass *q, const mem_tensor *t)
{
    if (q->upto < QS_TYPES)
        return QT_PLAIN;
    if (!t->linear || t->keep_float)
        return QT_FLOAT;
    if (q->d)
        return (quant_type)quant_desc_type(q->d, t->name); /* checked: known */
    cp_dtype w = wdtype_of(q, t);
    if (dtype_bytes(w) >= 2.0)
        return QT_FLOAT;
    if (int_groups(q, w))
        return QT_INT_GROUP;
    if (w == DT_INT8)
        return QT_W8A8_DYNAMIC;
    return w == DT_FP8 ? QT_FP8_BLOCK : QT_PLAIN;
}

static void flush_stacks(qpass *q, int layer)
{
    q->load_transient = fmax(q->load_transient, fmax(q->stack13, q->stack2));
    q->stack13 = q->stack2 = 0;
    q->stack_layer = layer;
}

/* Tensors a W8A8 method transposes while loading (w8a8_static.py and
 * w8a8_dynamic.py: weight.transpose(...).contiguous(); the MoE method
 * transposes a layer's w13 and w2 stacks whole). */
static void note_transpose(qpass *q, const mem_tensor *t, double bytes)
{
    if (t->expert < 0) {
        q->load_transient = fmax(q->load_transient, bytes);
        return;
    }
    if (t->layer != q->stack_layer)
        flush_stacks(q, t->layer);
    if (t->split == MS_COLUMN)
        q->stack13 += bytes;
    else
        q->stack2 += bytes;
}

/* Auxiliary tensors of a quantized linear holding out_r x in_r (times
 * frac) on this rank. */
static void add_aux(qpass *q, const mem_tensor *t, quant_type ty, mem_local l,
                    double *cat)
{
    double out = l.rows * l.frac, in = l.cols * l.frac;
    if (ty == QT_FP8_BLOCK) {
        if (q->upto >= QS_FP32) /* an fp32 scale per 128 x 128 block (weight_block_size) */
            cat[QC_FP32] += ceil(l.rows / 128.0) * ceil(l.cols / 128.0) * l.frac * 4.0;
        return;
    }
    if (ty == QT_INT_GROUP) {
        const arch *a = &q->s->model;
        if (q->upto < QS_PARAMS)
            return;
        double groups = strcmp(a->quant_strategy, "group") ? 1.0 /* per channel */
                                                            : ceil(l.cols / (double)a->quant_group);
        int gptq = !strcmp(a->quant_method, "gptq");
        cat[QC_PARAMS] += out * groups * q->pb; /* scales */
        if (a->quant_zeros || gptq) /* zeros: `bits` each, packed in int32 along out */
            cat[QC_PARAMS] += ceil(l.rows * a->quant_bits / 32.0) * 4.0 * groups * l.frac;
        if (gptq)
            cat[QC_PARAMS] += in * 4.0; /* g_idx int32 per input column */
        return;
    }
    if (ty != QT_W8A8 && ty != QT_W8A8_DYNAMIC)
        return;
    if (q->upto >= QS_PARAMS)
        cat[QC_PARAMS] += 2.0 * out * q->pb; /* weight_scale, weight_offset */
    if (ty == QT_W8A8) {
        if (q->upto >= QS_PARAMS) /* quant_bias int32, input_scale, input_offset int8 */
            cat[QC_PARAMS] += out * 4.0 + l.frac * (q->pb + 1.0);
        if (q->upto >= QS_FP32)
            cat[QC_FP32] += out * 4.0; /* deq_scale */
        if (q->upto >= QS_DERIVED) /* aclnn_input_scale, reciprocal, offset */
            cat[QC_DERIVED] += 3.0 * in * q->pb;
        return;
    }
    /* weight_scale_fp32; the MoE method converts the w13 (gate/up) scales only */
    if (q->upto >= QS_FP32 && (t->expert < 0 || t->split == MS_COLUMN))
        cat[QC_FP32] += out * 4.0;
}

/* Rank 0 holds layer l's sharded projections when l % K == 0. */
static int held(const qpass *q, const mem_tensor *t)
{
    if (q->whole || q->upto < QS_LAYER_SHARD || q->shard_k <= 1 || t->layer < 0)
        return 1;
    if (!(q->sharded & (1u << t->proj)))
        return 1;
    return t->layer % q->shard_k == 0;
}

static void account(void *ctx, const mem_tensor *t)
{
    qpass *q = ctx;
    if (q->only != MP_NONE && t->proj != q->only)
        return;
    quant_type ty = type_of(q, t);
    if (t->linear)
        q->ntype[ty]++;
    mem_shard sh = {.tp = q->shard.tp, .ep = q->shard.ep,
                    .shared_tp = q->upto >= QS_SHARED_TP && q->shard.shared_tp,
                    .full_attn = q->upto >= QS_FULL_ATTN && q->shard.full_attn};
    mem_local l = q->whole ? (mem_local){(double)t->rows, (double)t->cols, 1.0}
                           : mem_tensor_local(&q->s->model, t, sh);
    double cat[QC_COUNT] = {0};
    double elems = l.rows * l.cols * l.frac;
    int wcat; /* the category of the weight itself (what layer sharding moves) */
    if (t->proj == MP_KV_B && q->upto >= QS_DERIVED) {
        wcat = QC_DERIVED; /* W_UK_T + W_UV; kv_b_proj disposed */
        cat[wcat] += elems * q->pb;
    } else if (ty == QT_PLAIN) {
        double wb = quant_is_mlp(t) ? q->mlp_wb : q->wb;
        wcat = wb < 2.0 ? QC_QUANTIZED : QC_FLOAT;
        cat[wcat] += l.rows * l.cols * l.frac * wb;
    } else if (ty == QT_FLOAT) {
        /* an MLP linear kept float by a float mlp_weights is held in that
         * dtype; every other float tensor in the params dtype */
        double fb = quant_is_mlp(t) && q->mlp_wb >= 2.0 && !q->d ? q->mlp_wb : q->pb;
        wcat = QC_FLOAT;
        cat[wcat] += l.rows * l.cols * l.frac * fb;
    } else {
        wcat = QC_QUANTIZED;
        /* int8 / fp8: 1 byte; an integer checkpoint's weights packed at its bits */
        cat[wcat] += elems * (ty == QT_INT_GROUP ? dtype_bytes(wdtype_of(q, t)) : 1.0);
        add_aux(q, t, ty, l, cat);
        if (ty != QT_FP8_BLOCK && ty != QT_INT_GROUP)
            note_transpose(q, t, elems);
    }
    if (t->layer >= 0 && (q->sharded & (1u << t->proj))) {
        if (t->layer != q->win_layer) {
            q->win_max = fmax(q->win_max, q->win_cur);
            q->win_cur = 0;
            q->win_layer = t->layer;
        }
        q->win_cur += cat[wcat];
    }
    /* the series moves the weight; scales and offsets stay on every rank */
    if (q->weight_only) {
        double w = cat[wcat];
        memset(cat, 0, sizeof cat);
        cat[wcat] = w;
    } else if (!held(q, t)) {
        cat[wcat] = 0;
    }
    for (int c = 0; c < QC_COUNT; c++)
        q->bytes[t->fam][c] += cat[c];
}

static void pass_init(qpass *q, const struct scenario *s, const quant_desc *d, quant_step upto)
{
    memset(q, 0, sizeof *q);
    q->s = s;
    q->d = d;
    q->upto = upto;
    q->shard = sc_mem_shard(s);
    q->sharded = sc_layer_sharded(s);
    q->shard_k = q->sharded ? s->par.tp : 1;
    q->wb = dtype_bytes(s->w_dtype);
    q->mlp_wb = dtype_bytes(s->mlp_dtype);
    q->pb = quant_params_bytes(s);
    q->stack_layer = -1;
    q->win_layer = -1;
}

static double pass_total(qpass *q)
{
    double total = 0;
    for (int f = 0; f < WF_COUNT; f++) {
        double ft = 0;
        for (int c = 0; c < QC_COUNT; c++)
            ft += q->bytes[f][c];
        total += ft;
    }
    return total;
}

void quant_account(const struct scenario *s, const quant_desc *d, quant_report *out)
{
    memset(out, 0, sizeof *out);
    const arch *a = &s->model;
    mem_weights plain, plain_mlp;
    mem_shard tp_ep = {.tp = s->par.tp, .ep = s->par.ep};
    mem_weights_per_rank(a, tp_ep, s->w_dtype, &plain);
    mem_weights_per_rank(a, tp_ep, s->mlp_dtype, &plain_mlp);
    for (int f = 0; f < WF_COUNT; f++) /* the MLP families hold only the MLP linears */
        out->plain[f] = f == WF_DENSE_MLP || f == WF_EXPERTS || f == WF_SHARED_EXPERTS
                            ? plain_mlp.bytes[f]
                            : plain.bytes[f];
    qpass *q = malloc(sizeof *q);
    if (!q)
        abort(); /* a few kilobytes: out of memory before any work */
    for (int st = QS_PLAIN; st < QS_COUNT; st++) {
        pass_init(q, s, d, (quant_step)st);
        mem_each_tensor(a, MEM_ALL_LAYERS, d != NULL, account, q);
        out->step_total[st] = pass_total(q);
    }
    /* the last pass is the materialized accounting */
    flush_stacks(q, -1);
    out->shard = q->shard;
    out->sharded = q->sharded;
    out->shard_k = q->shard_k;
    out->window = 2.0 * fmax(q->win_max, q->win_cur); /* the layer in use, the one arriving */
    out->load_transient = q->load_transient;
    for (int l = 0; q->shard_k > 1 && l < a->layers; l++)
        out->shard_layers += l % q->shard_k == 0;
    memcpy(out->ntype, q->ntype, sizeof out->ntype);
    for (int f = 0; f < WF_COUNT; f++)
        for (int c = 0; c < QC_COUNT; c++) {
            out->bytes[f][c] = q->bytes[f][c];
            out->fam_total[f] += q->bytes[f][c];
            out->cat_total[c] += q->bytes[f][c];
        }
    out->total = out->step_total[QS_LAYER_SHARD];
    free(q);
}

/* The last resident-weight totals of a process, by everything the walk
 * reads: the architecture (its bytes) and the pass's inputs; only without a
 * quant description (whose content the key would have to hold).  A sweep's
 * points differ in what they sweep, and most sweep no weight: the walk over
 * every tensor (18K for the thinker's experts) ran once per point. */
enum { RESIDENT_MEMO = 8 }; /* our own choice: more than the layouts a sweep
                                mixes (thinker-sweep.yaml has 4 TP x SP) */
static struct resident_memo {
    int used;
    arch a;
    int tp, ep, full_attn, shared_tp;
    uint32_t sharded;
    int shard_k;
    double wb, mlp_wb, pb;
    cp_dtype w_dtype, mlp_dtype;
    double total;
} resident_memo[RESIDENT_MEMO];
static int resident_next;

static int memo_is(const struct resident_memo *m, const qpass *q)
{
    return m->used && m->tp == q->shard.tp && m->ep == q->shard.ep &&
           m->full_attn == q->shard.full_attn && m->shared_tp == q->shard.shared_tp &&
           m->sharded == q->sharded && m->shard_k == q->shard_k && m->wb == q->wb &&
           m->mlp_wb == q->mlp_wb && m->pb == q->pb && m->w_dtype == q->s->w_dtype &&
           m->mlp_dtype == q->s->mlp_dtype && memcmp(&m->a, &q->s->model, sizeof m->a) == 0;
}

double quant_resident_bytes(const struct scenario *s)
{
    qpass *q = malloc(sizeof *q);
    if (!q)
        abort(); /* a few kilobytes: out of memory before any work */
    pass_init(q, s, s->quant, QS_LAYER_SHARD);
    for (int i = 0; !s->quant && i < RESIDENT_MEMO; i++)
        if (memo_is(&resident_memo[i], q)) {
            free(q);
            return resident_memo[i].total;
        }
    mem_each_tensor(&s->model, MEM_ALL_LAYERS, s->quant != NULL, account, q);
    double total = pass_total(q);
    if (!s->quant) {
        struct resident_memo *m = &resident_memo[resident_next];
        resident_next = (resident_next + 1) % RESIDENT_MEMO;
        *m = (struct resident_memo){1, s->model, q->shard.tp, q->shard.ep, q->shard.full_attn,
                                    q->shard.shared_tp, q->sharded, q->shard_k, q->wb,
                                    q->mlp_wb, q->pb, s->w_dtype, s->mlp_dtype, total};
    }
    free(q);
    return total;
}

double quant_proj_bytes(const struct scenario *s, int layer, mem_proj p)
{
    qpass *q = malloc(sizeof *q);
    if (!q)
        abort(); /* a few kilobytes: out of memory before any work */
    pass_init(q, s, s->quant, QS_LAYER_SHARD);
    q->whole = 1;
    q->weight_only = 1;
    q->only = p;
    mem_each_tensor(&s->model, layer, s->quant != NULL, account, q);
    double total = pass_total(q);
    free(q);
    return total;
}
