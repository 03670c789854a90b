/* cost_profile: the rows of a calibration profile as measured plan ops (see
 * cost_profile.h and platforms/calibration/<profile>/README.md).
 *
 * Conventions shared with the plan builders, so that an op of the plan and
 * the row that measured it have the same size coordinate:
 *   GEMM            bytes = operands read once + output written once
 *   expert GEMM     m = routed rows of the GPU in all, g = local experts
 *   top-k scoring   bytes = T*E*2 (bf16 logits) + T*k*(2 + 8) (weights, ids)
 *   permute         bytes = R*8*4 (id passes) + T*H*2 + R*H*2
 *   unpermute       bytes = R*H*2 + T*H*2
 *   SwiGLU          bytes = R*2I*2 + R*I*2
 *   act quant       bytes = M*K*2 + M*K + M*max(1, K/128)*4
 * (moe.csv and gemm_fp8.csv min_bytes, calib_moe.py / calib_gemm_fp8.py).
 *
 * Kernel counts (op.nkern) are the torch launches of each measured call,
 * read from the scripts in shared/calibration/scripts/: top-k scoring 5
 * (softmax, topk, sum, div, cast) or 10 (cast, sigmoid, add, topk, gather,
 * sum, add, div, mul, cast); permute 10 (a stable sort of 2-3 radix passes,
 * zeros, scatter_add, cumsum, floor-divide, scatter, index_select);
 * unpermute 3 (mul, index_select, sum); SwiGLU 2 (silu, mul); activation
 * quantisation 7 (abs, amax, cast, clamp, two divides, cast); unfused RoPE 4
 * (the row's own description); unfused LSE merge 12 (stack, max, sub, exp,
 * sum, div, two casts and multiplies, add, cast).
 */
#include "models/cost_profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/calib.h"
#include "base/datadir.h"

/* ---- reading cells ---------------------------------------------------------- */

/* The row being read. */
typedef struct rd {
    const calib_table *t;
    int row;
    cp_err *err;
} rd;

/* Every column in cols (NULL-terminated) exists; else an error naming the
 * file and the closest column. */
static int need_cols(const calib_table *t, const char *const *cols, cp_err *err)
{
    for (int i = 0; cols[i]; i++)
        if (calib_col(t, cols[i], err) < 0)
            return -1;
    return 0;
}

static int col(const rd *r, const char *name)
{
    cp_err ignore = {0};
    return calib_col(r->t, name, &ignore); /* checked by need_cols */
}

static const char *str(const rd *r, const char *name)
{
    return calib_str(r->t, r->row, col(r, name));
}

/* A finite number in [lo, hi], or an error at the cell. */
static int num(const rd *r, const char *name, double lo, double hi, double *out)
{
    int c = col(r, name);
    double v = calib_num(r->t, r->row, c);
    if (v >= lo && v <= hi) {
        *out = v;
        return 0;
    }
    return cp_fail_at(r->err, calib_loc(r->t, r->row, c),
                      "column \"%s\": expected a number in [%g, %g], found \"%s\"", name, lo,
                      hi, calib_str(r->t, r->row, c));
}

/* Largest time or byte count a row may hold: far above any kernel of the
 * profiles (the longest measured call takes 0.1 s, the largest moves 15 GB),
 * so that a corrupted cell (1e308) is refused instead of pricing
 * everything at infinity. */
#define MAX_US 1e9    /* 1000 s */
#define MAX_BYTES 1e15
#define MAX_COUNT 1e12

/* A time in microseconds, > 0, into seconds. */
static int time_s(const rd *r, const char *name, double *out)
{
    if (num(r, name, 1e-6, MAX_US, out) < 0)
        return -1;
    *out *= 1e-6;
    return 0;
}

static int count(const rd *r, const char *name, int64_t *out)
{
    double v;
    if (num(r, name, 1, MAX_COUNT, &v) < 0)
        return -1;
    if (v != floor(v))
        return cp_fail_at(r->err, calib_loc(r->t, r->row, col(r, name)),
                          "column \"%s\": expected a whole number, found %g", name, v);
    *out = (int64_t)v;
    return 0;
}

static int flag(const rd *r, const char *name, int *out)
{
    double v;
    if (num(r, name, 0, 1, &v) < 0)
        return -1;
    if (v != 0 && v != 1)
        return cp_fail_at(r->err, calib_loc(r->t, r->row, col(r, name)),
                          "column \"%s\": expected 0 or 1", name);
    *out = (int)v;
    return 0;
}

static cost_row *push(cost_rows *rs, cp_err *err)
{
    if (rs->n == rs->cap) {
        int cap = rs->cap ? 2 * rs->cap : 256;
        cost_row *v = realloc(rs->v, sizeof *v * (size_t)cap);
        if (!v) {
            cp_fail(err, CP_EXIT_INTERNAL, "out of memory reading calibration rows");
            return NULL;
        }
        rs->v = v;
        rs->cap = cap;
    }
    cost_row *r = &rs->v[rs->n++];
    memset(r, 0, sizeof *r);
    r->op.kind = OPK_COMPUTE;
    r->op.layer = -1;
    r->op.g = 1;
    r->op.nkern = 1;
    r->op.dtype = DT_BF16;
    return r;
}

/* Times of a row of the single-GPU tables (moe, gemm_fp8, attention_cp):
 * eager time_us, graph time_us_graph when graph_measured, and their run-2
 * repeats.  Unmeasured graph rows are long calls (README: > 0.2-1 ms): the
 * kernel time is the eager time less the eager gaps. */
static int has_col(const rd *r, const char *name)
{
    cp_err ignore = {0};
    return calib_col(r->t, name, &ignore) >= 0;
}

static int single_gpu_times(const rd *r, cost_row *row)
{
    int graph;
    /* the tables of one machine start (the decode-size ones) have no run 2 */
    int rep = has_col(r, "time_us_run2");
    if (time_s(r, "time_us", &row->t_eager) < 0 || flag(r, "graph_measured", &graph) < 0 ||
        (rep && time_s(r, "time_us_run2", &row->t_eager2) < 0))
        return -1;
    if (graph) {
        if (time_s(r, "time_us_graph", &row->t_graph) < 0 ||
            (rep && time_s(r, "time_us_graph_run2", &row->t_graph2) < 0))
            return -1;
        row->t_kernel = row->t_graph;
    } else {
        row->t_kernel = fmax(row->t_eager - row->op.nkern * COST_EAGER_GAP, row->t_eager / 2);
    }
    return 0;
}

static const char *const single_gpu_cols[] = {"time_us", "graph_measured", "time_us_graph",
                                              NULL};

/* ---- GEMM tables ---------------------------------------------------------------- */

static void gemm_op(plan_op *op, int64_t m, int64_t k, int64_t n, double bytes)
{
    op->name = "gemm";
    op->kclass = KC_GEMM;
    op->m = m;
    op->k = k;
    op->n = n;
    op->flops = 2.0 * (double)m * (double)k * (double)n; /* 2 flops per multiply-add */
    op->bytes = bytes;
    op->in = (plan_shape){2, {m, k}};
    op->w = (plan_shape){2, {k, n}};
    op->out = (plan_shape){2, {m, n}};
}

static int read_mkn(const rd *r, plan_op *op)
{
    int64_t m, k, n;
    double bytes;
    if (count(r, "M", &m) < 0 || count(r, "K", &k) < 0 || count(r, "N", &n) < 0 ||
        num(r, "min_bytes", 1, MAX_BYTES, &bytes) < 0)
        return -1;
    gemm_op(op, m, k, n, bytes);
    return 0;
}

/* gemm.csv (eager, check only) and gemm_graph.csv (eager repeat, graph). */
static int read_gemm(const calib_table *t, int graph, plan_costsrc src, cost_rows *rs,
                     cp_err *err)
{
    static const char *const cols[] = {"model", "name", "dtype", "M", "K", "N", "min_bytes",
                                       "time_us", NULL};
    static const char *const gcols[] = {"time_us_graph", NULL};
    if (need_cols(t, cols, err) < 0 || (graph && need_cols(t, gcols, err) < 0))
        return -1;
    for (int i = 0; i < calib_rows(t); i++) {
        rd r = {t, i, err};
        cost_row *row = push(rs, err);
        if (!row || read_mkn(&r, &row->op) < 0 || time_s(&r, "time_us", &row->t_eager) < 0 ||
            (graph && time_s(&r, "time_us_graph", &row->t_graph) < 0))
            return -1;
        if (strcmp(str(&r, "dtype"), "bf16") != 0)
            return cp_fail_at(err, calib_loc(t, i, col(&r, "dtype")),
                              "dtype \"%s\": this table holds bf16 GEMMs (8-bit ones are in "
                              "gemm_fp8.csv)", str(&r, "dtype"));
        row->kk = KK_GEMM;
        row->src = src;
        row->t_kernel = graph ? row->t_graph : 0;
        snprintf(row->cls, sizeof row->cls, "gemm");
        snprintf(row->label, sizeof row->label, "%s %s M=%lld K=%lld N=%lld", str(&r, "model"),
                 str(&r, "name"), (long long)row->op.m, (long long)row->op.k,
                 (long long)row->op.n);
    }
    return 0;
}

/* conv.csv: cuDNN's conv2d (3x3, stride 2, bias) of the audio encoder's
 * front, one F.conv2d call per row at a number of images, eager repeat
 * and CUDA-graph replay; each row is the call's implicit GEMM (M = images x
 * output pixels, K = 9 x input channels, N = output channels), impl cudnn,
 * so only convolutions fall in its series. */
static int read_conv(const calib_table *t, cost_rows *rs, cp_err *err)
{
    static const char *const cols[] = {"model", "name", "dtype", "images", "M", "K", "N",
                                       "kernels", "min_bytes", "time_us", "time_us_graph",
                                       NULL};
    if (need_cols(t, cols, err) < 0)
        return -1;
    for (int i = 0; i < calib_rows(t); i++) {
        rd r = {t, i, err};
        cost_row *row = push(rs, err);
        int64_t images, kernels;
        if (!row || read_mkn(&r, &row->op) < 0 || count(&r, "images", &images) < 0 ||
            count(&r, "kernels", &kernels) < 0 || time_s(&r, "time_us", &row->t_eager) < 0 ||
            time_s(&r, "time_us_graph", &row->t_graph) < 0)
            return -1;
        if (strcmp(str(&r, "dtype"), "bf16") != 0)
            return cp_fail_at(err, calib_loc(t, i, col(&r, "dtype")),
                              "dtype \"%s\": this table holds bf16 convolutions",
                              str(&r, "dtype"));
        row->op.name = "conv";
        row->op.impl = IMPL_CUDNN;
        row->op.nkern = (uint8_t)(kernels > 0 && kernels < 255 ? kernels : 1);
        row->kk = KK_GEMM;
        row->src = CS_CONV;
        row->t_kernel = row->t_graph;
        snprintf(row->cls, sizeof row->cls, "conv");
        snprintf(row->label, sizeof row->label, "%s %s images=%lld", str(&r, "model"),
                 str(&r, "name"), (long long)images);
    }
    return 0;
}

/* gemm_fp8.csv dtype column: the GEMM it measured. */
static const struct {
    const char *name;
    cp_dtype dtype;
    plan_qscale qs;
    int table;        /* 0: another kernel than engines run (check only) */
    const char *cls;
} fp8_kinds[] = {
    {"bf16", DT_BF16, QS_NONE, 1, "gemm"},
    /* use_fast_accum=False: exact fp32 accumulation; serving engines run
     * the fast-accumulation kernels (CUTLASS sm90 FP8 FastAccum), so the
     * per-tensor fp8 GEMM of the plan is the fastacc row */
    {"fp8_tensor", DT_FP8, QS_TENSOR, 0, "gemm_fp8_tensor_exactacc"},
    {"fp8_tensor_fastacc", DT_FP8, QS_TENSOR, 1, "gemm_fp8_tensor"},
    {"fp8_row_fastacc", DT_FP8, QS_ROW, 1, "gemm_fp8_row"},
    {"fp8_block128", DT_FP8, QS_BLOCK, 1, "gemm_fp8_block"},
    /* torch._int_mm: int8 x int8 -> int32, per-row scales applied after */
    {"int8", DT_INT8, QS_ROW, 1, "gemm_int8"},
};

static int read_gemm_fp8(const calib_table *t, plan_costsrc src, cost_rows *rs, cp_err *err)
{
    static const char *const cols[] = {"model", "name", "dtype", "M", "K", "N", "min_bytes",
                                       NULL};
    if (need_cols(t, cols, err) < 0 || need_cols(t, single_gpu_cols, err) < 0)
        return -1;
    for (int i = 0; i < calib_rows(t); i++) {
        rd r = {t, i, err};
        const char *dt = str(&r, "dtype");
        cost_row *row = push(rs, err);
        if (!row)
            return -1;
        if (!strcmp(dt, "quant_fp8_row") || !strcmp(dt, "quant_fp8_block128")) {
            int64_t m, k;
            if (count(&r, "M", &m) < 0 || count(&r, "K", &k) < 0 ||
                num(&r, "min_bytes", 1, MAX_BYTES, &row->op.bytes) < 0)
                return -1;
            row->op.name = "act_quant";
            row->op.kclass = KC_ACT_QUANT;
            row->op.qscale = dt[10] == 'r' ? QS_ROW : QS_BLOCK;
            row->op.nkern = 7;
            row->op.in = (plan_shape){2, {m, k}};
            row->op.out = (plan_shape){2, {m, k}};
            row->kk = KK_QUANT;
            snprintf(row->cls, sizeof row->cls, "act_quant_%s",
                     row->op.qscale == QS_ROW ? "row" : "block");
            snprintf(row->label, sizeof row->label, "%s M=%lld K=%lld", dt, (long long)m,
                     (long long)k);
        } else {
            size_t f = 0, nf = sizeof fp8_kinds / sizeof fp8_kinds[0];
            while (f < nf && strcmp(fp8_kinds[f].name, dt) != 0)
                f++;
            if (f == nf)
                return cp_fail_at(err, calib_loc(t, i, col(&r, "dtype")),
                                  "unknown dtype \"%s\" (known: bf16, fp8_tensor, "
                                  "fp8_tensor_fastacc, fp8_row_fastacc, fp8_block128, int8, "
                                  "quant_fp8_row, quant_fp8_block128)", dt);
            if (read_mkn(&r, &row->op) < 0)
                return -1;
            row->op.dtype = (uint8_t)fp8_kinds[f].dtype;
            row->op.qscale = (uint8_t)fp8_kinds[f].qs;
            row->kk = KK_GEMM;
            snprintf(row->cls, sizeof row->cls, "%s", fp8_kinds[f].cls);
            snprintf(row->label, sizeof row->label, "%s %s %s M=%lld K=%lld N=%lld",
                     str(&r, "model"), str(&r, "name"), dt, (long long)row->op.m,
                     (long long)row->op.k, (long long)row->op.n);
            row->t_kernel = fp8_kinds[f].table; /* marks: set from the times below */
        }
        int table = row->kk == KK_QUANT || row->t_kernel > 0;
        if (single_gpu_times(&r, row) < 0)
            return -1;
        if (!table)
            row->t_kernel = 0;
        row->src = src;
    }
    return 0;
}

/* ---- moe.csv ---------------------------------------------------------------------- */

static int route_of(const rd *r, uint8_t *out)
{
    const char *d = str(r, "dist");
    for (int i = 0; i < RT_COUNT; i++)
        if (!strcmp(d, plan_route_names[i])) {
            *out = (uint8_t)i;
            return 0;
        }
    return cp_fail_at(r->err, calib_loc(r->t, r->row, col(r, "dist")),
                      "dist \"%s\": expected balanced, random or skewed", d);
}

/* One routing piece of T tokens, k choices each, hidden H (or E logits). */
static int moe_piece(const rd *r, const char *piece, const char *impl, cost_row *row)
{
    int64_t T, k, K, N, R;
    plan_op *op = &row->op;
    if (count(r, "tokens", &T) < 0 || count(r, "top_k", &k) < 0 || count(r, "K", &K) < 0 ||
        num(r, "min_bytes", 1, MAX_BYTES, &op->bytes) < 0 || count(r, "routed_rows", &R) < 0)
        return -1;
    double n_raw;
    if (num(r, "N", 0, MAX_COUNT, &n_raw) < 0)
        return -1;
    N = (int64_t)n_raw;
    snprintf(row->label, sizeof row->label, "%s %s %s T=%lld", str(r, "model"), piece, impl,
             (long long)T);
    if (!strcmp(piece, "router_gemm")) {
        gemm_op(op, T, K, N, op->bytes);
        row->kk = KK_GEMM;
        snprintf(row->cls, sizeof row->cls, "moe_router");
    } else if (!strcmp(piece, "topk_score")) {
        op->name = "topk";
        op->kclass = KC_TOPK;
        /* the fp32 cast, softmax, top-k's select and sort, sum, divide, cast
         * (7: the trace of engine_checks.py, which runs the same code) */
        op->nkern = !strncmp(impl, "softmax", 7) ? 7 : 10;
        op->in = (plan_shape){2, {T, K}};
        op->out = (plan_shape){2, {T, k}};
        row->kk = KK_TOPK;
        snprintf(row->cls, sizeof row->cls, "moe_topk");
    } else if (!strcmp(piece, "permute") || !strcmp(piece, "permute_gather")) {
        int full = !strcmp(piece, "permute");
        op->name = "moe_permute";
        op->kclass = KC_MOE_PERMUTE;
        /* torch.sort: one in-place kernel and 3 copies up to 4096 ids, cub's
         * radix sort (21 kernels) above; 10 more (layers.h moe_permute) */
        op->nkern = full ? (R <= 4096 ? 4 : 21) + 10 : 1;
        op->in = (plan_shape){2, {T, K}};
        op->out = (plan_shape){2, {R, K}};
        row->kk = full ? KK_PERMUTE : KK_COPY;
        snprintf(row->cls, sizeof row->cls, "%s", full ? "moe_permute" : "moe_permute_gather");
    } else if (!strcmp(piece, "act_silu_mul")) {
        op->name = "act";
        op->kclass = KC_ACTIVATION;
        op->nkern = 2;
        op->in = (plan_shape){2, {R, K}};
        op->out = (plan_shape){2, {R, N}};
        row->kk = KK_SILU_MUL;
        snprintf(row->cls, sizeof row->cls, "activation");
    } else if (!strcmp(piece, "unpermute")) {
        int sum = !strcmp(impl, "mul+index_select+sum_k");
        op->name = "moe_unpermute";
        op->kclass = KC_MOE_UNPERMUTE;
        op->nkern = 3;
        op->in = (plan_shape){2, {R, K}};
        op->out = (plan_shape){2, {T, K}};
        row->kk = KK_UNPERMUTE;
        /* the index_add_ variant is another kernel: check only */
        snprintf(row->cls, sizeof row->cls, "%s", sum ? "moe_unpermute" : "moe_unpermute_add");
        return sum ? 1 : 0;
    } else {
        return cp_fail_at(r->err, calib_loc(r->t, r->row, col(r, "piece")),
                          "unknown piece \"%s\"", piece);
    }
    return 1;
}

static int read_moe(const calib_table *t, plan_costsrc src, cost_rows *rs, cp_err *err)
{
    static const char *const cols[] = {"model", "piece", "impl", "dist", "tokens",
                                       "experts_local", "top_k", "K", "N", "routed_rows",
                                       "min_bytes", NULL};
    if (need_cols(t, cols, err) < 0 || need_cols(t, single_gpu_cols, err) < 0)
        return -1;
    for (int i = 0; i < calib_rows(t); i++) {
        rd r = {t, i, err};
        const char *piece = str(&r, "piece"), *impl = str(&r, "impl");
        cost_row *row = push(rs, err);
        if (!row)
            return -1;
        int table = 1;
        if (!strcmp(piece, "gate_up") || !strcmp(piece, "down")) {
            int64_t R, K, N, g, T;
            plan_op *op = &row->op;
            if (count(&r, "routed_rows", &R) < 0 || count(&r, "K", &K) < 0 ||
                count(&r, "N", &N) < 0 || count(&r, "experts_local", &g) < 0 ||
                count(&r, "tokens", &T) < 0 ||
                num(&r, "min_bytes", 1, MAX_BYTES, &op->bytes) < 0 || route_of(&r, &op->route) < 0)
                return -1;
            op->name = "expert_gemm";
            op->kclass = KC_MOE_GEMM;
            op->m = R;
            op->k = K;
            op->n = N;
            op->g = g;
            op->flops = 2.0 * (double)R * (double)K * (double)N; /* per multiply-add */
            op->in = (plan_shape){2, {R, K}};
            op->w = (plan_shape){3, {g, K, N}};
            op->out = (plan_shape){2, {R, N}};
            row->kk = KK_MOE;
            snprintf(row->cls, sizeof row->cls, "moe_gemm");
            snprintf(row->label, sizeof row->label, "%s %s %s T=%lld R=%lld experts=%lld",
                     str(&r, "model"), piece, plan_route_name(op->route), (long long)T,
                     (long long)R, (long long)g);
        } else if ((table = moe_piece(&r, piece, impl, row)) < 0) {
            return -1;
        }
        if (single_gpu_times(&r, row) < 0)
            return -1;
        if (!table || row->kk == KK_COPY)
            row->t_kernel = 0;
        row->src = src;
    }
    return 0;
}

/* ---- attention tables ---------------------------------------------------------------- */

static int read_attn_fields(const rd *r, cost_row *row)
{
    plan_attn *a = &row->op.attn;
    int causal;
    if (count(r, "q_len", &a->q_len) < 0 || count(r, "kv_len", &a->kv_len) < 0 ||
        count(r, "q_heads", &a->heads) < 0 || count(r, "kv_heads", &a->kv_heads) < 0 ||
        count(r, "head_dim", &a->d_qk) < 0 || flag(r, "causal", &causal) < 0 ||
        num(r, "attended_pairs", 1, 1e20, &a->pairs) < 0 ||
        num(r, "flops", 1, 1e22, &row->op.flops) < 0 ||
        num(r, "min_bytes", 1, MAX_BYTES, &row->op.bytes) < 0)
        return -1;
    a->causal = (uint8_t)causal;
    a->d_v = a->d_qk;
    row->op.name = "attention";
    row->op.kclass = KC_ATTENTION;
    row->op.impl = IMPL_FA2;
    row->kk = KK_ATTN;
    return 0;
}

static const char *const attn_cols[] = {"mode", "impl", "q_len", "kv_len", "causal", "q_heads",
                                        "kv_heads", "head_dim", "attended_pairs", "flops",
                                        "min_bytes", "time_us", NULL};

static void attn_label(const rd *r, cost_row *row)
{
    const plan_attn *a = &row->op.attn;
    snprintf(row->label, sizeof row->label, "%s %s q=%lld kv=%lld heads=%lld/%lld d=%lld",
             str(r, "mode"), str(r, "impl"), (long long)a->q_len, (long long)a->kv_len,
             (long long)a->heads, (long long)a->kv_heads, (long long)a->d_qk);
}

/* attention.csv: eager calls of long kernels.  The flash_native_gqa rows
 * are the modelled FA2 kernel; flash_expanded_kv and sdpa_flash_enable_gqa
 * call the same kernel another way (check only); cuDNN is another kernel
 * (1.7-1.9x faster) and is skipped. */
static int read_attention(const calib_table *t, cost_rows *rs, cp_err *err)
{
    if (need_cols(t, attn_cols, err) < 0)
        return -1;
    for (int i = 0; i < calib_rows(t); i++) {
        rd r = {t, i, err};
        const char *impl = str(&r, "impl");
        int native = !strcmp(impl, "flash_native_gqa");
        if (!native && strcmp(impl, "flash_expanded_kv") != 0 &&
            strcmp(impl, "sdpa_flash_enable_gqa") != 0)
            continue;
        cost_row *row = push(rs, err);
        if (!row || read_attn_fields(&r, row) < 0 || time_s(&r, "time_us", &row->t_eager) < 0)
            return -1;
        row->src = CS_ATTENTION;
        row->t_kernel = native ? row->t_eager - COST_EAGER_GAP : 0;
        snprintf(row->cls, sizeof row->cls, "%s", native ? "attention" : "attention_other");
        attn_label(&r, row);
    }
    return 0;
}

/* attention_cp.csv: per-rank calls of context-parallel prefill (the same
 * kernel and conventions as attention.csv). */
static int read_attention_cp(const calib_table *t, cost_rows *rs, cp_err *err)
{
    if (need_cols(t, attn_cols, err) < 0 || need_cols(t, single_gpu_cols, err) < 0)
        return -1;
    for (int i = 0; i < calib_rows(t); i++) {
        rd r = {t, i, err};
        cost_row *row = push(rs, err);
        if (!row || read_attn_fields(&r, row) < 0 || single_gpu_times(&r, row) < 0)
            return -1;
        row->src = CS_ATTENTION_CP;
        snprintf(row->cls, sizeof row->cls, "attention_cp");
        attn_label(&r, row);
    }
    return 0;
}

/* decode_attention.csv, impl flash (FA2, the engine's kernel): a batch of
 * `batch` requests, each q_len queries over kv_len cached keys
 * (attended_pairs and flops count the whole batch).  Graph rows
 * give the kernel time; eager rows (host-bound, README) serve the check.
 * The efficient and cuDNN rows are other kernels and are skipped. */
static int read_decode(const calib_table *t, cost_rows *rs, cp_err *err)
{
    static const char *const cols[] = {"impl", "mode", "q_heads", "kv_heads", "head_dim",
                                       "batch", "q_len", "kv_len", "causal", "time_us",
                                       "time_us_run2", "min_bytes", "attended_pairs", NULL};
    if (need_cols(t, cols, err) < 0)
        return -1;
    for (int i = 0; i < calib_rows(t); i++) {
        rd r = {t, i, err};
        if (strcmp(str(&r, "impl"), "flash") != 0)
            continue;
        const char *mode = str(&r, "mode");
        int graph = !strcmp(mode, "graph");
        if (!graph && strcmp(mode, "eager") != 0)
            return cp_fail_at(err, calib_loc(t, i, col(&r, "mode")),
                              "mode \"%s\": expected eager or graph", mode);
        cost_row *row = push(rs, err);
        if (!row)
            return -1;
        plan_attn *a = &row->op.attn;
        int causal;
        double t_us, rep, pairs;
        if (count(&r, "q_len", &a->q_len) < 0 || count(&r, "kv_len", &a->kv_len) < 0 ||
            count(&r, "q_heads", &a->heads) < 0 || count(&r, "kv_heads", &a->kv_heads) < 0 ||
            count(&r, "head_dim", &a->d_qk) < 0 || count(&r, "batch", &a->batch) < 0 ||
            flag(&r, "causal", &causal) < 0 || time_s(&r, "time_us", &t_us) < 0 ||
            time_s(&r, "time_us_run2", &rep) < 0 ||
            num(&r, "attended_pairs", 1, 1e20, &pairs) < 0 ||
            num(&r, "min_bytes", 1, MAX_BYTES, &row->op.bytes) < 0)
            return -1;
        a->d_v = a->d_qk;
        a->causal = (uint8_t)causal;
        a->pairs = pairs; /* over the whole batch (B * q_len * kv_len at q_len 1) */
        row->op.name = "decode_attention";
        row->op.kclass = KC_ATTENTION;
        row->op.impl = IMPL_FA2;
        /* q.k and p.v per pair and head, 2 flops per multiply-add */
        row->op.flops = 2.0 * a->pairs * (double)a->heads * (double)(a->d_qk + a->d_v);
        row->kk = KK_DECODE;
        row->src = CS_DECODE_ATTENTION;
        if (graph) {
            row->t_graph = t_us;
            row->t_graph2 = rep;
            row->t_kernel = t_us;
        } else {
            row->t_eager = t_us;
            row->t_eager2 = rep;
        }
        snprintf(row->cls, sizeof row->cls, "decode_attention");
        snprintf(row->label, sizeof row->label, "B=%lld q=%lld kv=%lld heads=%lld/%lld",
                 (long long)a->batch, (long long)a->q_len, (long long)a->kv_len,
                 (long long)a->heads, (long long)a->kv_heads);
    }
    return 0;
}

/* ---- elementwise.csv ----------------------------------------------------------------- */

static const struct {
    const char *csv_kind;
    cost_kk kk;
    plan_kclass kclass;
    int nkern;
} mem_rows[] = {
    {"copy", KK_COPY, KC_COPY, 1},
    {"add", KK_ADD, KC_ELEMENTWISE, 1},
    {"rms_norm", KK_NORM, KC_NORM, 1},
    {"silu_mul", KK_SILU_MUL, KC_ACTIVATION, 2},
    /* neg, cat, two multiplies, an add (the trace of engine_checks.py) */
    {"rope_unfused", KK_ROPE, KC_ROPE, 5},
    {"lse_merge2_unfused", KK_LSE, KC_LSE_MERGE, 12},
    {"gelu", KK_GELU, KC_GELU, 1},
    {"layer_norm", KK_LNORM, KC_LAYER_NORM, 1},
};

/* The mem_rows entry of a table's kind, -1 for a kind no plan op runs. */
static int mem_kind(const char *kind)
{
    for (size_t k = 0; k < sizeof mem_rows / sizeof mem_rows[0]; k++)
        if (strcmp(mem_rows[k].csv_kind, kind) == 0)
            return (int)k;
    return -1;
}

/* The op, kind and labels of an elementwise row of mem_rows[k]. */
static void mem_row_fill(const rd *r, cost_row *row, int k, const char *kind, plan_costsrc src)
{
    row->op.name = kind;
    row->op.kclass = (uint8_t)mem_rows[k].kclass;
    row->op.nkern = (uint8_t)mem_rows[k].nkern;
    row->kk = mem_rows[k].kk;
    row->src = src;
    snprintf(row->cls, sizeof row->cls, "%s", kind);
    snprintf(row->label, sizeof row->label, "%s %s", kind, str(r, "desc"));
}

/* elementwise.csv (decode 0): eager calls over sizes read from HBM; the
 * kernel time is the eager time less its gaps.
 * elementwise_decode.csv (decode 1): the same kinds over 1-4096 rows, eager
 * (launch-bound) and CUDA-graph replay, which gives the kernel time.  Its
 * operands were not rotated: from 16 MB moved up (the 4096-row copy runs at
 * 5.6 TB/s, above the HBM's 4.8) they sat in the 60 MB L2, and
 * elementwise.csv's rows, read from HBM, price those sizes. */
#define DECODE_L2_BYTES (16.0 * 1024 * 1024)
static int read_elementwise(const calib_table *t, int decode, cost_rows *rs, cp_err *err)
{
    static const char *const cols[] = {"kind", "desc", "min_bytes_moved", "time_us", NULL};
    static const char *const graph_cols[] = {"time_us_graph", NULL};
    if (need_cols(t, cols, err) < 0 || (decode && need_cols(t, graph_cols, err) < 0))
        return -1;
    for (int i = 0; i < calib_rows(t); i++) {
        rd r = {t, i, err};
        const char *kind = str(&r, "kind");
        int k = mem_kind(kind);
        if (k < 0)
            continue; /* a kind no plan op runs */
        cost_row *row = push(rs, err);
        if (!row || num(&r, "min_bytes_moved", 1, MAX_BYTES, &row->op.bytes) < 0 ||
            time_s(&r, "time_us", &row->t_eager) < 0 ||
            (decode && time_s(&r, "time_us_graph", &row->t_graph) < 0))
            return -1;
        if (decode && row->op.bytes >= DECODE_L2_BYTES) {
            rs->n--; /* served by elementwise.csv */
            continue;
        }
        mem_row_fill(&r, row, k, kind, decode ? CS_ELEMENTWISE_DECODE : CS_ELEMENTWISE);
        row->t_kernel = decode ? row->t_graph : row->t_eager - row->op.nkern * COST_EAGER_GAP;
    }
    return 0;
}

/* attention_backends.csv: one call's forward per implementation on the
 * same tensors (README "Attention by backend"): fa2_native_gqa is the FA2
 * kernel of attention.csv, cudnn is cuDNN's fused Hopper kernel (its own
 * series, impl cudnn); eager back-to-back calls of long kernels.  Bytes as
 * the plan builders count them: q, o once, k and v once per KV head. */
static int read_attention_backends(const calib_table *t, cost_rows *rs, cp_err *err)
{
    static const char *const cols[] = {"mode", "impl", "q_len", "kv_len", "causal", "q_heads",
                                       "kv_heads", "head_dim", "attended_pairs", "flops",
                                       "time_us", NULL};
    if (need_cols(t, cols, err) < 0)
        return -1;
    for (int i = 0; i < calib_rows(t); i++) {
        rd r = {t, i, err};
        const char *impl = str(&r, "impl");
        int cudnn = !strcmp(impl, "cudnn");
        if (!cudnn && strcmp(impl, "fa2_native_gqa") != 0)
            continue;
        cost_row *row = push(rs, err);
        if (!row)
            return -1;
        plan_attn *a = &row->op.attn;
        int causal;
        if (count(&r, "q_len", &a->q_len) < 0 || count(&r, "kv_len", &a->kv_len) < 0 ||
            count(&r, "q_heads", &a->heads) < 0 || count(&r, "kv_heads", &a->kv_heads) < 0 ||
            count(&r, "head_dim", &a->d_qk) < 0 || flag(&r, "causal", &causal) < 0 ||
            num(&r, "attended_pairs", 1, 1e20, &a->pairs) < 0 ||
            num(&r, "flops", 1, 1e22, &row->op.flops) < 0 ||
            time_s(&r, "time_us", &row->t_eager) < 0)
            return -1;
        /* this table counts the pairs over every query head (flops = 4 pairs
         * d); the plan's pairs are per head, as attention.csv's */
        a->pairs /= (double)a->heads;
        a->causal = (uint8_t)causal;
        a->d_v = a->d_qk;
        double dsum = (double)(a->d_qk + a->d_v);
        row->op.bytes = ((double)a->q_len * (double)a->heads +
                         (double)a->kv_len * (double)a->kv_heads) * dsum * 2.0; /* bf16 */
        row->op.name = "attention";
        row->op.kclass = KC_ATTENTION;
        row->op.impl = (uint8_t)(cudnn ? IMPL_CUDNN : IMPL_FA2);
        row->kk = KK_ATTN;
        row->src = CS_ATTENTION_BACKENDS;
        row->t_kernel = row->t_eager - COST_EAGER_GAP;
        snprintf(row->cls, sizeof row->cls, "%s", cudnn ? "attention_cudnn" : "attention");
        attn_label(&r, row);
    }
    return 0;
}

/* aic_context_attention.csv and aic_generation_attention.csv: FA3 as vLLM
 * 0.14 and SGLang 0.5.9 run it on H200, measured by NVIDIA aiconfigurator
 * (Apache-2.0; scripts/aic_import.py, README "Imported tables").  Device
 * times of one call (no launch path): the graph time.  Context rows: one
 * causal square call of isl queries; generation rows: a batch of one-query
 * calls over kv_len keys.  Rows of both frameworks are the one FA3 kernel
 * (two rows of a size average, as two machine starts do). */
static int read_aic_attention(const calib_table *t, int generation, cost_rows *rs, cp_err *err)
{
    static const char *const ctx_cols[] = {"framework", "batch", "isl", "heads", "kv_heads",
                                           "head_dim", "time_us", NULL};
    static const char *const gen_cols[] = {"framework", "batch", "kv_len", "heads", "kv_heads",
                                           "head_dim", "time_us", NULL};
    if (need_cols(t, generation ? gen_cols : ctx_cols, err) < 0)
        return -1;
    for (int i = 0; i < calib_rows(t); i++) {
        rd r = {t, i, err};
        cost_row *row = push(rs, err);
        if (!row)
            return -1;
        plan_attn *a = &row->op.attn;
        int64_t b, len;
        if (count(&r, "batch", &b) < 0 || count(&r, generation ? "kv_len" : "isl", &len) < 0 ||
            count(&r, "heads", &a->heads) < 0 || count(&r, "kv_heads", &a->kv_heads) < 0 ||
            count(&r, "head_dim", &a->d_qk) < 0 || time_s(&r, "time_us", &row->t_graph) < 0)
            return -1;
        a->d_v = a->d_qk;
        a->batch = b > 1 ? b : 0;
        a->causal = 1;
        a->kv_len = len;
        a->q_len = generation ? 1 : len;
        /* pairs per head over the batch: a causal square, or every key */
        a->pairs = (double)b * (generation ? (double)len : (double)len * (double)(len + 1) / 2);
        double dsum = (double)(a->d_qk + a->d_v);
        row->op.flops = 2.0 * a->pairs * (double)a->heads * dsum; /* 2 flops per multiply-add */
        row->op.bytes = (double)b * ((double)a->q_len * (double)a->heads +
                                     (double)len * (double)a->kv_heads) * dsum * 2.0; /* bf16 */
        row->op.name = generation ? "decode_attention" : "attention";
        row->op.kclass = KC_ATTENTION;
        row->op.impl = IMPL_FA3;
        row->kk = generation ? KK_DECODE : KK_ATTN;
        row->src = generation ? CS_AIC_GENERATION_ATTENTION : CS_AIC_CONTEXT_ATTENTION;
        row->t_kernel = row->t_graph;
        snprintf(row->cls, sizeof row->cls, "%s", generation ? "decode_attention_fa3"
                                                             : "attention_fa3");
        snprintf(row->label, sizeof row->label, "%s B=%lld %s=%lld heads=%lld/%lld",
                 str(&r, "framework"), (long long)b, generation ? "kv" : "isl", (long long)len,
                 (long long)a->heads, (long long)a->kv_heads);
    }
    return 0;
}

/* sparse_attention.csv (optional): the DSA sparse-attention kernel
 * (SparseFlashAttention) of a profile, bf16, absorbed MLA over at most topk
 * selected latent keys per query: columns q_len (queries), ctx (keys before
 * the call's first query plus its queries, causal), topk, heads, d_qk, d_v,
 * time_us (eager time per call).  A series is (heads, d_qk, d_v); its size is
 * the attended pairs. */
static int read_sparse(const calib_table *t, cost_rows *rs, cp_err *err)
{
    static const char *const cols[] = {"q_len", "ctx", "topk", "heads", "d_qk", "d_v",
                                       "time_us", NULL};
    if (need_cols(t, cols, err) < 0)
        return -1;
    for (int i = 0; i < calib_rows(t); i++) {
        rd r = {t, i, err};
        cost_row *row = push(rs, err);
        if (!row)
            return -1;
        plan_attn *a = &row->op.attn;
        int64_t topk = 0;
        if (count(&r, "q_len", &a->q_len) < 0 || count(&r, "ctx", &a->kv_len) < 0 ||
            count(&r, "topk", &topk) < 0 || count(&r, "heads", &a->heads) < 0 ||
            count(&r, "d_qk", &a->d_qk) < 0 || count(&r, "d_v", &a->d_v) < 0 ||
            time_s(&r, "time_us", &row->t_eager) < 0)
            return -1;
        if (a->q_len > a->kv_len)
            return cp_fail_at(err, calib_loc(t, i, col(&r, "q_len")), "q_len above ctx");
        a->kv_heads = 1;
        a->causal = 1;
        /* query i of the call sees min(topk, ctx - q_len + i + 1) keys */
        double q = (double)a->q_len, pre = (double)(a->kv_len - a->q_len), k = (double)topk;
        double n = fmin(q, fmax(0.0, k - pre));
        a->pairs = n * pre + n * (n + 1) / 2 + (q - n) * k;
        /* flops: q.k and p.v per pair and head (2 per multiply-add); bytes, bf16
         * (2 B): each query's gathered latent rows, the queries and outputs */
        row->op.flops = a->pairs * 2.0 * (double)a->heads * (double)(a->d_qk + a->d_v);
        row->op.bytes = a->pairs * (double)a->d_qk * 2.0 +
                        q * (double)a->heads * (double)(a->d_qk + a->d_v) * 2.0;
        row->op.name = "mla_sparse_attention";
        row->op.kclass = KC_SPARSE_ATTN;
        row->kk = KK_SPARSE;
        row->src = CS_SPARSE_ATTENTION;
        row->t_kernel = row->t_eager - COST_EAGER_GAP;
        snprintf(row->cls, sizeof row->cls, "sparse_attention");
        snprintf(row->label, sizeof row->label, "sparse q=%lld ctx=%lld topk=%lld heads=%lld",
                 (long long)a->q_len, (long long)a->kv_len, (long long)topk,
                 (long long)a->heads);
    }
    return 0;
}

/* ---- the profile -------------------------------------------------------------------- */

/* gemm.csv and gemm_graph.csv are one set of shapes measured on two machine
 * starts: each eager time is the other's repeat. */
static void join_gemm_repeats(cost_rows *rs)
{
    for (int i = 0; i < rs->n; i++) {
        cost_row *a = &rs->v[i];
        if (a->src != CS_GEMM)
            continue;
        for (int j = 0; j < rs->n; j++) {
            cost_row *b = &rs->v[j];
            if (b->src == CS_GEMM_GRAPH && b->op.m == a->op.m && b->op.k == a->op.k &&
                b->op.n == a->op.n) {
                a->t_eager2 = b->t_eager;
                b->t_eager2 = a->t_eager;
                break;
            }
        }
    }
}

/* Rows of the decode-size tables check in classes of their own
 * (<class>_decode): their eager times are launch-bound, their graph times
 * the small-shape end of the series. */
static void decode_classes(cost_rows *rs, int from)
{
    for (int i = from; i < rs->n; i++) {
        size_t n = strlen(rs->v[i].cls);
        if (n + 7 < sizeof rs->v[i].cls && (n < 7 || strcmp(rs->v[i].cls + n - 7, "_decode")))
            strcat(rs->v[i].cls, "_decode");
    }
}

int cost_profile_read(const char *profile, cost_rows *rs, cp_err *err)
{
    static const struct {
        const char *table;
        int required;
    } tables[] = {{"gemm", 1},          {"gemm_graph", 1},       {"attention", 1},
                  {"elementwise", 1},   {"gemm_fp8", 0},         {"moe", 0},
                  {"attention_cp", 0},  {"decode_attention", 0}, {"sparse_attention", 0},
                  {"gemm_graph_decode", 0}, {"gemm_fp8_decode", 0}, {"moe_decode", 0},
                  {"elementwise_decode", 0}, {"attention_backends", 0},
                  {"aic_context_attention", 0}, {"aic_generation_attention", 0},
                  {"conv", 0}};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        char path[1024];
        if (!tables[i].required &&
            access(cp_calib_table(path, sizeof path, profile, tables[i].table), R_OK) != 0)
            continue;
        calib_table *t = calib_load(profile, tables[i].table, err);
        if (!t)
            return -1;
        int rc, first = rs->n;
        switch (i) {
        case 0: rc = read_gemm(t, 0, CS_GEMM, rs, err); break;
        case 1: rc = read_gemm(t, 1, CS_GEMM_GRAPH, rs, err); break;
        case 2: rc = read_attention(t, rs, err); break;
        case 3: rc = read_elementwise(t, 0, rs, err); break;
        case 4: rc = read_gemm_fp8(t, CS_GEMM_FP8, rs, err); break;
        case 5: rc = read_moe(t, CS_MOE, rs, err); break;
        case 6: rc = read_attention_cp(t, rs, err); break;
        case 7: rc = read_decode(t, rs, err); break;
        case 8: rc = read_sparse(t, rs, err); break;
        case 9: rc = read_gemm(t, 1, CS_GEMM_GRAPH_DECODE, rs, err); break;
        case 10: rc = read_gemm_fp8(t, CS_GEMM_FP8_DECODE, rs, err); break;
        case 11: rc = read_moe(t, CS_MOE_DECODE, rs, err); break;
        case 12: rc = read_elementwise(t, 1, rs, err); decode_classes(rs, first); break;
        case 13: rc = read_attention_backends(t, rs, err); break;
        case 16: rc = read_conv(t, rs, err); break;
        default: rc = read_aic_attention(t, i == 15, rs, err); break;
        }
        if (rc == 0 && (i == 9 || i == 10 || i == 11))
            decode_classes(rs, first);
        if (rc == 0 && calib_rows(t) == 0)
            rc = cp_fail(err, CP_EXIT_INPUT, "calibration table %s has no data rows",
                         calib_path(t));
        calib_free(t);
        if (rc < 0)
            return -1;
    }
    join_gemm_repeats(rs);
    return 0;
}
