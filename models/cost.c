/* cost: device time of compute ops (see cost.h).
 *
 * Analytic models (used outside the tables, and for every other device):
 *
 *  - GEMM.  cuBLAS on Hopper runs persistent stream-K kernels: the work is
 *    cut into output tiles of 128 rows by 128 columns (192, 256 or 64 when
 *    that pads N less), each tile into k-iterations of depth 64, and the
 *    iterations are spread evenly over the SMs; tiles shared by several SMs
 *    are summed by a fix-up.  So
 *        t = T0 + max(ceil(tiles*kiters / sms) * t_iter
 *                     + ceil(tiles / sms) * C_TILE + (splits - 1) * C_FIXUP,
 *                     bytes / (hbm_bw * eff_memory))
 *    with t_iter the time of one iteration at eff_gemm of the per-SM peak.
 *    Quantising whole tiles into waves instead (ceil(tiles / sms) waves, with
 *    split-K for small grids) fits the H200 rows worse, fitted the same way:
 *    worst row 38 % against 22 % (small grids such as kv_a_proj M=4096
 *    N=576 run at 720 TFLOP/s, which whole waves of tiles cannot).
 *    sm_count = 0: no quantisation, t = T0 + roofline.
 *  - Attention.  FlashAttention-2 forward: one CTA per (head, block of BR
 *    queries), launched query block fastest, then head, two CTAs resident per
 *    SM; each CTA costs C0 plus one step per block of 64 keys it sees (causal
 *    CTAs see fewer).  The makespan of that list schedule is what makes short
 *    and causal calls slow (131 TFLOP/s at 1K causal, 345 at 16K).  A step
 *    runs at eff_attention of the slot's share of peak, stretched by the K/V
 *    loads, which weigh (1 - PHI) + PHI * 128 / BR (BR = 64 for head dims
 *    above 128, FA2's choice on H100, so the loads per flop double).
 *  - Bandwidth-bound kernels (norm, elementwise, copies, RoPE, LSE merge):
 *        t = T0 + bytes / (hbm_bw * eff_memory * rel[kind])
 *    with rel[kind] the speed of that kind of kernel relative to a copy.
 *  - Sparse attention and the DSA indexer: T0 + roofline at eff_attention;
 *    a profile may add a sparse_attention.csv table (read_sparse) for the
 *    sparse-attention kernel, which then goes through the table model.
 *
 * Measured tables first.  A profile row gives the ratio measured / analytic
 * (analytic on the device the profile was measured on).  An op that matches
 * a series of rows (GEMM: same K, N and dtype; attention: same heads, kv
 * heads, head dims, mask and q_len/kv_len; bandwidth-bound: same kind) is
 * priced analytic * ratio, the ratio interpolated linearly in log size
 * between the two neighbouring rows (size: M, attended pairs, bytes), and
 * fading to the analytic model beyond the ends (TABLE_FADE).  Interpolating
 * the times themselves log-log instead is worse (leave-one-out on the H200
 * graph GEMM rows: median 6.1 %, worst 49 %, against 5.0 % and 21 %).
 * GEMM and attention rows apply to ops of the dtype they were measured in
 * (bf16 in the H200 profile): other dtypes (fp8, int8) use the analytic model
 * with that dtype's peak.
 *
 * Cross-device rule.  A profile measured on device X priced for a target T:
 *    GEMM, attention: t = max(t_X * peak_X / peak_T, bytes / (hbm_bw_T * eff_memory_T))
 *    bandwidth-bound: t = t_X * analytic_T / analytic_X
 * (for bandwidth-bound kernels the table keeps its measured deviation from
 * the analytic model and the target's bandwidth sets the time).  The numbers
 * of X are in cost_refs[] below.
 *
 * Launch.  Eager launches also cost the device EAGER_GAP per kernel (see its
 * comment), added to cost_s of eagerly launched ops by cost_price_plan().
 */
#include "models/cost.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/calib.h"
#include "workloads/datadir.h"

/* ---- constants (fitted on platforms/calibration/h200) ------------------- */

/* Fixed time of one kernel: 3.1 us.  Fits: GEMM 2.99 us (gemm_graph.csv,
 * time_us_graph, all rows); copy 3.16 us and add 3.25 us (elementwise.csv,
 * t0 of a straight line through the smallest and the largest row). */
#define T0 3.1e-6

/* GEMM: tile, k-iteration depth and the per-tile and per-fix-up times.
 * Fitted with eff_gemm = 0.737 (and T0, eff_memory fixed) on gemm_graph.csv
 * time_us_graph, all 81 rows, minimising worst + 2 * median + mean relative
 * error by a random local search.  With the N tile choice of gemm_tile_n():
 * median 4.0 %, worst 21 % (cost_check_calibration, graph rows). */
#define GEMM_TILE 128.0      /* cuBLAS Hopper bf16 tile 128x128 (rows M, cols N) */
#define GEMM_BK 64.0         /* k depth of one main-loop iteration */
#define GEMM_C_TILE 0.70e-6  /* per tile: prologue and epilogue (fitted) */
#define GEMM_C_FIXUP 0.11e-6 /* per extra SM sharing a tile: one 64 KiB fp32
                                partial tile summed by the owner (fitted) */

/* Attention (FlashAttention-2 forward).  Block shapes and CTAs per SM: FA2
 * flash_fwd_launch_template.h for sm90 (hdim 128: 128x64, 4 warps; hdim 256:
 * 64x64 "since then we can get 2 CTAs per SM").  ATTN_T0, ATTN_C0, ATTN_PHI
 * fitted with eff_attention = 0.364 on attention.csv, impl flash_native_gqa
 * (35 rows), same objective as GEMM: median 1.9 %, worst 8.6 % over the 39
 * FA2 rows of cost_check_calibration. */
#define ATTN_BC 64.0         /* keys per step */
#define ATTN_CTAS_PER_SM 2.0
#define ATTN_T0 11.5e-6      /* fixed time of one attention call (fitted) */
#define ATTN_C0 0.445e-6     /* per CTA: load Q, write O and LSE (fitted) */
#define ATTN_PHI 0.092       /* share of K/V loads in a step at BR = 128 (fitted) */
/* List-schedule at most this many CTAs; beyond (>= 248 waves of 264 slots)
 * the schedule's tail is under 1 % and the balanced bound total / slots is
 * used (0.3 % apart at the switch for 128 heads of 64K causal queries). */
#define ATTN_MAX_SIM_CTAS 65536.0

/* Beyond the ends of a series its ratio fades to 1 (the analytic model)
 * over this factor in size, the spacing of the profile's series (M and bytes
 * step by 4x, attended pairs by 4x): continuous at the ends, and analytic
 * one step beyond.  Leave-one-out on the H200 rows prefers that to keeping
 * the end ratio: worst row 24.8 % against 28.8 % (eager GEMMs), 21.0 %
 * against 21.9 % (graph GEMMs), while the medians rise by < 1 point. */
#define TABLE_FADE 4.0

/* Extra device time per eagerly launched kernel: eager minus CUDA-graph
 * replay time of the same GEMM, median over the kernels of 15-100 us
 * (gemm.csv vs gemm_graph.csv: 1.47 us; gemm_graph.csv eager vs graph:
 * 1.81 us; 22 rows each). */
#define EAGER_GAP 1.6e-6

/* Internal kernel kinds: the analytic model and table family of an op. */
typedef enum {
    KK_GEMM, KK_ATTN, KK_ROOFLINE, KK_SPARSE,
    KK_COPY, KK_ADD, KK_NORM, KK_SILU_MUL, KK_ROPE, KK_LSE, KK_COUNT
} kkind;

/* Bandwidth-bound kinds: elementwise.csv `kind` and speed relative to a copy
 * (fitted per kind with T0 fixed, minimising the worst row; worst error in
 * brackets): copy 1.000 (0.4 %), add 1.027 (0.5 %), rms_norm 0.750 (14 %:
 * hidden 2048 runs at 3.7 TB/s, hidden 6144 at 3.2), silu_mul 0.266 (2 %),
 * rope_unfused 0.0863 (1 %), lse_merge2_unfused 0.0861 (2 %). */
static const struct {
    const char *csv_kind;
    const char *name;
    plan_kclass kclass;      /* class of the measured kernel */
    double rel;
} mem_kinds[KK_COUNT] = {
    [KK_COPY] = {"copy", "copy", KC_COPY, 1.000},
    [KK_ADD] = {"add", "add", KC_ELEMENTWISE, 1.027},
    [KK_NORM] = {"rms_norm", "norm", KC_NORM, 0.750},
    [KK_SILU_MUL] = {"silu_mul", "silu_mul", KC_ELEMENTWISE, 0.266},
    [KK_ROPE] = {"rope_unfused", "rope", KC_ROPE, 0.0863},
    [KK_LSE] = {"lse_merge2_unfused", "lse_merge", KC_LSE_MERGE, 0.0861},
};

/* Kernel kind of each plan kernel class.  Top-k / router softmax reads a
 * row and reduces it like a norm; gathers, KV writes and permutations move
 * bytes like a copy; elementwise ops are mostly adds and multiplies.  RoPE
 * in serving engines is one fused kernel over q and k (vLLM's
 * rotary_embedding), priced like a norm; the measured rope_unfused row is
 * four separate torch kernels and stays in the calibration check only. */
static const kkind kk_of_kclass[KC_COUNT] = {
    [KC_GEMM] = KK_GEMM, [KC_GROUPED_GEMM] = KK_GEMM, [KC_ATTENTION] = KK_ATTN,
    [KC_SPARSE_ATTN] = KK_SPARSE, [KC_INDEXER] = KK_ROOFLINE,
    [KC_NORM] = KK_NORM, [KC_ELEMENTWISE] = KK_ADD, [KC_ROPE] = KK_NORM,
    [KC_TOPK] = KK_NORM, [KC_EMBEDDING] = KK_COPY, [KC_KV_WRITE] = KK_COPY,
    [KC_LSE_MERGE] = KK_LSE, [KC_MOE_PERMUTE] = KK_COPY, [KC_COPY] = KK_COPY,
};

/* What the models need to know about a device. */
typedef struct cost_dev {
    double peak[DT_COUNT];   /* dense tensor flop/s per dtype, 0 = none */
    double vector_flops;     /* flop/s of the vector units, 0 = ignore */
    double hbm_bw;           /* bytes/s */
    int sm_count;            /* 0: no wave quantisation */
    double eff_gemm, eff_attention, eff_memory;
} cost_dev;

/* Devices the calibration profiles were measured on.  h200: NVIDIA H200 SXM
 * dense peaks and HBM bandwidth from models-hardware.md section 3.1 (989.4
 * TFLOP/s bf16/fp16, 1978.9 fp8/int8, 4.8 TB/s), 132 SMs from
 * platforms/calibration/h200/machine.json; efficiencies fitted on the
 * profile: eff_gemm and eff_attention as above, eff_memory = copy bandwidth
 * 4.265 TB/s (elementwise.csv copy rows, slope of the line through the
 * smallest and largest) / 4.8 TB/s. */
static const struct cost_ref {
    const char *profile;
    cost_dev dev;
} cost_refs[] = {
    {"h200", {.peak = {[DT_BF16] = 989.4e12, [DT_FP16] = 989.4e12,
                       [DT_FP8] = 1978.9e12, [DT_INT8] = 1978.9e12},
              .hbm_bw = 4.8e12, .sm_count = 132,
              .eff_gemm = 0.737, .eff_attention = 0.364, .eff_memory = 0.889}},
};

/* Where a profile row comes from. */
typedef enum {
    SRC_GEMM_EAGER,     /* gemm.csv: eager time only */
    SRC_GEMM_GRAPH,     /* gemm_graph.csv: eager repeat and graph replay */
    SRC_ATTN,           /* attention.csv, flash_native_gqa: table and check */
    SRC_ATTN_OTHER,     /* attention.csv, same FA2 kernel called another way */
    SRC_MEM,            /* elementwise.csv */
    SRC_SPARSE,         /* sparse_attention.csv (optional table) */
} row_src;

/* One measured row of a profile, as an op. */
typedef struct cost_row {
    plan_op op;
    kkind kk;
    row_src src;
    double t_eager;     /* eager time per call (s), 0 if not measured */
    double t_graph;     /* graph replay time per call (s), 0 if not measured */
    char label[112];    /* leaves room for " eager" in cost_check_row */
} cost_row;

typedef struct row_set {
    cost_row *v;
    int n, cap;
} row_set;

/* A table point: a row that gives a kernel time. */
typedef struct cost_point {
    plan_op op;
    kkind kk;
    double x;           /* size: M, attended pairs or bytes */
    double ratio;       /* measured kernel time / analytic on the reference */
} cost_point;

typedef struct attn_memo attn_memo;

struct cost_model {
    cost_dev dev;
    double launch_eager, launch_graph;
    int calibrated;           /* a profile is loaded: ref and points valid */
    cost_dev ref;
    cost_point *pts;
    int npts;
    attn_memo *memo;          /* written by const functions: a cache only */
};

/* ---- analytic models ---------------------------------------------------- */

/* Peak of a dtype; dtypes without a tensor rate of their own (weight-only
 * int4, fp32 accumulation) compute in bf16. */
static double dev_peak(const cost_dev *d, int dtype)
{
    if (dtype >= 0 && dtype < DT_COUNT && d->peak[dtype] > 0)
        return d->peak[dtype];
    return d->peak[DT_BF16];
}

static double mem_floor(const cost_dev *d, const plan_op *op)
{
    return op->bytes / (d->hbm_bw * d->eff_memory);
}

static double roofline_time(const cost_dev *d, const plan_op *op, double eff)
{
    return T0 + fmax(op->flops / (dev_peak(d, op->dtype) * eff), mem_floor(d, op));
}

/* Tile width along N: 128, unless 192, 256 or 64 pads N less (the tile
 * widths of CUTLASS sm90 GEMMs; gemm_graph.csv kv_a_proj N=576 runs at
 * 690-720 TFLOP/s, which 5 tiles of 128 with one padded could not). */
static double gemm_tile_n(double n)
{
    static const double widths[] = {128, 192, 256, 64};
    double best = widths[0];
    for (int i = 1; i < 4; i++)
        if (ceil(n / widths[i]) * widths[i] < ceil(n / best) * best)
            best = widths[i];
    return best;
}

static double gemm_time(const cost_dev *d, const plan_op *op)
{
    double g = op->kclass == KC_GROUPED_GEMM && op->g > 1 ? (double)op->g : 1.0;
    double m = (double)op->m, k = (double)op->k, n = (double)op->n;
    if (m <= 0 || k <= 0 || n <= 0)
        return roofline_time(d, op, d->eff_gemm);
    double rate = dev_peak(d, op->dtype) * d->eff_gemm;
    double tc;
    if (d->sm_count <= 0) {
        tc = 2.0 * g * m * k * n / rate;
    } else {
        double sms = d->sm_count, tn = gemm_tile_n(n);
        double tiles = g * ceil(m / GEMM_TILE) * ceil(n / tn);
        double kiters = ceil(k / GEMM_BK);
        double t_iter = 2.0 * GEMM_TILE * tn * GEMM_BK / (rate / sms);
        double splits = tiles < sms ? fmin(ceil(sms / tiles), kiters) : 1.0;
        tc = ceil(tiles * kiters / sms) * t_iter + ceil(tiles / sms) * GEMM_C_TILE +
             (splits - 1.0) * GEMM_C_FIXUP * tn / GEMM_TILE;
    }
    return T0 + fmax(tc, mem_floor(d, op));
}

/* Attended (query, key) pairs of the FA2 mask: causal is bottom-right
 * aligned (query i sees kv - q + i + 1 keys). */
static double mask_pairs(double q, double kv, int causal)
{
    if (!causal)
        return q * kv;
    double off = kv - q;
    return off >= 0 ? q * off + q * (q + 1) / 2 : kv * (kv + 1) / 2;
}

/* An FA2 launch grid on one device: heads x ceil(q / br) CTAs. */
typedef struct attn_grid {
    double q, kv;        /* queries and keys of the call */
    double causal;       /* 1: bottom-right aligned causal mask */
    double heads;
    double br;           /* queries per CTA */
    double slots;        /* CTAs resident at once */
    double step;         /* time of one step over ATTN_BC keys (s) */
    double splits;       /* split-KV: each (head, query block) over this many
                            key ranges (1: no split) */
} attn_grid;

/* Makespans of recent grids: a plan repeats its attention shapes layer
 * after layer, and a large causal grid takes milliseconds to schedule. */
#define ATTN_MEMO 32
struct attn_memo {
    struct {
        attn_grid grid;
        double span;
    } e[ATTN_MEMO];
    int n, next;         /* entries filled; the one to replace next */
};

/* Duration of the CTA of query block i. */
static double cta_time(const attn_grid *g, double i)
{
    double seen = g->kv;
    if (g->causal)
        seen = fmin(g->kv, fmax(0.0, g->kv - g->q + fmin(g->q, (i + 1) * g->br)));
    return ATTN_C0 + ceil(ceil(seen / ATTN_BC) / g->splits) * g->step;
}

/* FlashAttention-2's split-KV choice (flash-attention csrc flash_api.cpp,
 * num_splits_heuristic): a grid of fewer than 0.8 waves of CTAs splits the
 * keys into s ranges, s <= min(128, SMs, key blocks), the smallest s whose
 * wave efficiency (waves / ceil(waves)) is within 85 % of the best.  This
 * is what keeps decode (one query per head) from running on a handful of
 * SMs; the calibration tables have no such rows, so it is the kernel's own
 * rule, not a fit. */
static double kv_splits(double ctas, double sms, double kv_blocks)
{
    if (ctas >= 0.8 * sms)
        return 1;
    double max_s = fmin(128.0, fmin(sms, kv_blocks)), best = 0;
    double eff[129];
    for (int s = 1; s <= (int)max_s; s++) {
        double waves = ctas * s / sms;
        eff[s] = waves / ceil(waves);
        best = fmax(best, eff[s]);
    }
    for (int s = 1; s <= (int)max_s; s++)
        if (eff[s] >= 0.85 * best)
            return s;
    return 1;
}

static void heap_sift_down(double *h, long n, long i)
{
    for (;;) {
        long l = 2 * i + 1, r = l + 1, s = i;
        if (l < n && h[l] < h[s])
            s = l;
        if (r < n && h[r] < h[s])
            s = r;
        if (s == i)
            return;
        double tmp = h[i];
        h[i] = h[s];
        h[s] = tmp;
        i = s;
    }
}

/* Makespan of the grid, CTAs launched query block fastest, then head, each
 * to the first slot that frees (how the block scheduler fills the SMs).
 * Equal CTAs (no mask) run in ceil(n / slots) rounds.  -1: out of memory. */
static double grid_makespan(const attn_grid *g)
{
    double nq = ceil(g->q / g->br), n = nq * g->heads * g->splits;
    if (!g->causal || g->splits > 1)
        return ceil(n / g->slots) * cta_time(g, 0);
    if (n > ATTN_MAX_SIM_CTAS) {
        double head = 0;   /* work of one head */
        if (nq <= ATTN_MAX_SIM_CTAS) {
            for (double i = 0; i < nq; i++)
                head += cta_time(g, i);
        } else {
            /* this many query blocks: the rounding to whole steps is negligible */
            head = nq * ATTN_C0 + mask_pairs(g->q, g->kv, 1) / (g->br * ATTN_BC) * g->step;
        }
        return head * g->heads / g->slots;
    }
    long ns = (long)g->slots;
    double *free_at = calloc((size_t)ns, sizeof *free_at);
    if (!free_at)
        return -1;
    for (double h = 0; h < g->heads; h++) {
        for (double i = 0; i < nq; i++) {
            free_at[0] += cta_time(g, i);
            heap_sift_down(free_at, ns, 0);
        }
    }
    double end = 0;
    for (long s = 0; s < ns; s++)
        end = fmax(end, free_at[s]);
    free(free_at);
    return end;
}

static double grid_span(attn_memo *memo, const attn_grid *g)
{
    for (int i = 0; i < memo->n; i++)
        if (!memcmp(&memo->e[i].grid, g, sizeof *g))
            return memo->e[i].span;
    double span = grid_makespan(g);
    if (span >= 0) {
        memo->e[memo->next].grid = *g;
        memo->e[memo->next].span = span;
        memo->next = (memo->next + 1) % ATTN_MEMO;
        memo->n += memo->n < ATTN_MEMO;
    }
    return span;
}

static double attn_time(attn_memo *memo, const cost_dev *d, const plan_op *op)
{
    const plan_attn *a = &op->attn;
    double dsum = (double)(a->d_qk + a->d_v);
    double dmax = (double)(a->d_qk > a->d_v ? a->d_qk : a->d_v);
    double br = dmax <= 128 ? 128.0 : 64.0;
    double load = (1.0 - ATTN_PHI) + ATTN_PHI * 128.0 / br;
    double rate = dev_peak(d, op->dtype) * d->eff_attention;
    double geom = mask_pairs((double)a->q_len, (double)a->kv_len, a->causal);
    double pairs = a->pairs > 0 ? a->pairs : geom;
    double flops = 2.0 * pairs * (double)a->heads * dsum;
    double balanced = (flops > 0 ? flops : op->flops) * load / rate;
    if (d->sm_count <= 0 || a->heads <= 0 || geom <= 0 || dsum <= 0)
        return ATTN_T0 + fmax(balanced, mem_floor(d, op));
    attn_grid g = {(double)a->q_len, (double)a->kv_len, a->causal, (double)a->heads, br,
                   ATTN_CTAS_PER_SM * d->sm_count, 0, 1};
    g.splits = kv_splits(ceil(g.q / br) * g.heads, d->sm_count, ceil(g.kv / ATTN_BC));
    /* One step of a full block, scaled when the op's mask attends a share
     * of pairs other than the plain FA2 mask of its shape. */
    g.step = 2.0 * br * ATTN_BC * dsum / (rate / g.slots) * load * (pairs / geom);
    double span = grid_span(memo, &g);
    return ATTN_T0 + fmax(span >= 0 ? span : balanced, mem_floor(d, op));
}

static double mem_time(const cost_dev *d, const plan_op *op, kkind kk)
{
    double t = op->bytes / (d->hbm_bw * d->eff_memory * mem_kinds[kk].rel);
    if (d->vector_flops > 0)
        t = fmax(t, op->flops / d->vector_flops);
    return T0 + t;
}

/* Analytic time of op on device d (c: the model, for its memo). */
static double analytic(const cost_model *c, const cost_dev *d, const plan_op *op, kkind kk)
{
    switch (kk) {
    case KK_GEMM:
        return gemm_time(d, op);
    case KK_ATTN:
        return attn_time(c->memo, d, op);
    case KK_ROOFLINE:
    case KK_SPARSE:
        return roofline_time(d, op, d->eff_attention);
    default:
        return mem_time(d, op, kk);
    }
}

/* ---- table model -------------------------------------------------------- */

/* Size coordinate of an op within its series. */
static double size_of(const plan_op *op, kkind kk)
{
    if (kk == KK_GEMM)
        return (double)op->m * (op->kclass == KC_GROUPED_GEMM && op->g > 1 ? (double)op->g : 1.0);
    if (kk == KK_SPARSE)
        return op->attn.pairs;
    if (kk == KK_ATTN)
        return op->attn.pairs > 0 ? op->attn.pairs
                                  : mask_pairs((double)op->attn.q_len,
                                               (double)op->attn.kv_len, op->attn.causal);
    return op->bytes;
}

static int same_series(const cost_point *pt, const plan_op *op, kkind kk)
{
    if (pt->kk != kk)
        return 0;
    const plan_op *a = &pt->op;
    if (kk == KK_GEMM)
        return a->k == op->k && a->n == op->n && a->dtype == op->dtype;
    if (kk == KK_ATTN)
        return a->attn.heads == op->attn.heads && a->attn.kv_heads == op->attn.kv_heads &&
               a->attn.d_qk == op->attn.d_qk && a->attn.d_v == op->attn.d_v &&
               a->attn.causal == op->attn.causal && a->dtype == op->dtype &&
               a->attn.q_len * op->attn.kv_len == op->attn.q_len * a->attn.kv_len;
    if (kk == KK_SPARSE)
        return a->attn.heads == op->attn.heads && a->attn.d_qk == op->attn.d_qk &&
               a->attn.d_v == op->attn.d_v && a->dtype == op->dtype;
    return 1;
}

/* Ratio measured / analytic for op from its series, leaving out points of
 * the op's own size when leave_out is set.  0 when no series matches. */
static double table_ratio(const cost_model *c, const plan_op *op, kkind kk, int leave_out)
{
    double x = size_of(op, kk);
    const cost_point *lo = NULL, *hi = NULL;
    for (int i = 0; i < c->npts; i++) {
        const cost_point *pt = &c->pts[i];
        if (!same_series(pt, op, kk) || (leave_out && pt->x == x))
            continue;
        if (pt->x == x)
            return pt->ratio;
        if (pt->x < x && (!lo || pt->x > lo->x))
            lo = pt;
        if (pt->x > x && (!hi || pt->x < hi->x))
            hi = pt;
    }
    if (!lo && !hi)
        return 0;
    if (!lo || !hi) {
        const cost_point *end = lo ? lo : hi;
        double w = fmax(0.0, 1.0 - fabs(log(x / end->x)) / log(TABLE_FADE));
        return exp(w * log(end->ratio));
    }
    double f = log(x / lo->x) / log(hi->x / lo->x);
    return exp(log(lo->ratio) + f * (log(hi->ratio) - log(lo->ratio)));
}

/* Measured-table time of op on the target device; 0 when no table applies. */
static double table_time(const cost_model *c, const plan_op *op, kkind kk, int leave_out)
{
    if (!c->calibrated || kk == KK_ROOFLINE)
        return 0;
    double ratio = table_ratio(c, op, kk, leave_out);
    if (ratio <= 0)
        return 0;
    if (kk == KK_GEMM || kk == KK_ATTN || kk == KK_SPARSE) {
        double t_ref = ratio * analytic(c, &c->ref, op, kk);
        double peaks = dev_peak(&c->ref, op->dtype) / dev_peak(&c->dev, op->dtype);
        return fmax(t_ref * peaks, mem_floor(&c->dev, op));
    }
    /* t_ref * analytic_T / analytic_X, with t_ref = ratio * analytic_X */
    return ratio * analytic(c, &c->dev, op, kk);
}

static double kernel_time(const cost_model *c, const plan_op *op, kkind kk, int leave_out)
{
    double t = table_time(c, op, kk, leave_out);
    return t > 0 ? t : analytic(c, &c->dev, op, kk);
}

/* ---- profile rows ------------------------------------------------------- */

static cost_row *row_push(row_set *rs, cp_err *err)
{
    if (rs->n == rs->cap) {
        int cap = rs->cap ? 2 * rs->cap : 128;
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
    r->op.dtype = DT_BF16;
    return r;
}

/* Resolve numeric columns names[] of t into cols[]. */
static int num_cols(const calib_table *t, const char *const *names, int *cols, cp_err *err)
{
    for (int i = 0; names[i]; i++)
        if ((cols[i] = calib_num_col(t, names[i], err)) < 0)
            return -1;
    return 0;
}

/* A positive number, or an input error at the cell. */
static int positive(const calib_table *t, int r, int col, double *out, cp_err *err)
{
    *out = calib_num(t, r, col);
    if (*out > 0)
        return 0;
    return cp_fail_at(err, calib_loc(t, r, col), "expected a positive number");
}

/* A positive whole number (a size or count), or an input error. */
static int count(const calib_table *t, int r, int col, int64_t *out, cp_err *err)
{
    double v = calib_num(t, r, col);
    if (v >= 1 && v <= 1e15 && v == floor(v)) {
        *out = (int64_t)v;
        return 0;
    }
    return cp_fail_at(err, calib_loc(t, r, col), "expected a positive whole number");
}

static int parse_dtype(const calib_table *t, int r, int col, uint8_t *out, cp_err *err)
{
    const char *s = calib_str(t, r, col);
    for (int i = 0; dtype_names[i]; i++) {
        if (!strcmp(s, dtype_names[i])) {
            *out = (uint8_t)i;
            return 0;
        }
    }
    char hint[96];
    return cp_fail_at(err, calib_loc(t, r, col), "unknown dtype \"%s\"%s", s,
                      cp_suggest(hint, sizeof hint, s, dtype_names));
}

static int read_gemm(const calib_table *t, int graph, row_set *rs, cp_err *err)
{
    static const char *const names[] = {"M", "K", "N", "min_bytes", "time_us", NULL};
    static const char *const gnames[] = {"time_us_graph", NULL};
    int c[5], g[1], cmodel, cname, cdt;
    if (num_cols(t, names, c, err) < 0 || (graph && num_cols(t, gnames, g, err) < 0) ||
        (cmodel = calib_col(t, "model", err)) < 0 || (cname = calib_col(t, "name", err)) < 0 ||
        (cdt = calib_col(t, "dtype", err)) < 0)
        return -1;
    for (int r = 0; r < calib_rows(t); r++) {
        cost_row *row = row_push(rs, err);
        plan_op *op = row ? &row->op : NULL;
        if (!row || count(t, r, c[0], &op->m, err) < 0 || count(t, r, c[1], &op->k, err) < 0 ||
            count(t, r, c[2], &op->n, err) < 0 || positive(t, r, c[3], &op->bytes, err) < 0 ||
            positive(t, r, c[4], &row->t_eager, err) < 0 ||
            (graph && positive(t, r, g[0], &row->t_graph, err) < 0) ||
            parse_dtype(t, r, cdt, &op->dtype, err) < 0)
            return -1;
        op->name = "gemm";
        op->kclass = KC_GEMM;
        op->flops = 2.0 * (double)op->m * (double)op->k * (double)op->n;
        row->t_eager *= 1e-6;
        row->t_graph *= 1e-6;
        row->kk = KK_GEMM;
        row->src = graph ? SRC_GEMM_GRAPH : SRC_GEMM_EAGER;
        snprintf(row->label, sizeof row->label, "%s %s M=%lld K=%lld N=%lld",
                 calib_str(t, r, cmodel), calib_str(t, r, cname), (long long)op->m,
                 (long long)op->k, (long long)op->n);
    }
    return 0;
}

/* attention.csv impl column: which rows are the modelled FA2 kernel.  The
 * cuDNN SDPA rows are another kernel (1.7-1.9x faster) and are skipped. */
static int attn_src(const char *impl)
{
    if (!strcmp(impl, "flash_native_gqa"))
        return SRC_ATTN;
    if (!strcmp(impl, "flash_expanded_kv") || !strcmp(impl, "sdpa_flash_enable_gqa"))
        return SRC_ATTN_OTHER;
    return -1;
}

static int read_attention(const calib_table *t, row_set *rs, cp_err *err)
{
    static const char *const names[] = {"q_len", "kv_len", "causal", "q_heads", "kv_heads",
                                        "head_dim", "time_us", "attended_pairs", "flops",
                                        "min_bytes", NULL};
    int c[10], cmode, cimpl;
    if (num_cols(t, names, c, err) < 0 || (cmode = calib_col(t, "mode", err)) < 0 ||
        (cimpl = calib_col(t, "impl", err)) < 0)
        return -1;
    for (int r = 0; r < calib_rows(t); r++) {
        int src = attn_src(calib_str(t, r, cimpl));
        if (src < 0)
            continue;
        cost_row *row = row_push(rs, err);
        if (!row)
            return -1;
        plan_attn *a = &row->op.attn;
        double causal = calib_num(t, r, c[2]);
        if (count(t, r, c[0], &a->q_len, err) < 0 || count(t, r, c[1], &a->kv_len, err) < 0 ||
            count(t, r, c[3], &a->heads, err) < 0 || count(t, r, c[4], &a->kv_heads, err) < 0 ||
            count(t, r, c[5], &a->d_qk, err) < 0 ||
            positive(t, r, c[6], &row->t_eager, err) < 0 ||
            positive(t, r, c[7], &a->pairs, err) < 0 ||
            positive(t, r, c[8], &row->op.flops, err) < 0 ||
            positive(t, r, c[9], &row->op.bytes, err) < 0)
            return -1;
        if (causal != 0 && causal != 1)
            return cp_fail_at(err, calib_loc(t, r, c[2]), "expected 0 or 1");
        a->causal = (uint8_t)causal;
        a->d_v = a->d_qk;
        row->op.name = "attention";
        row->op.kclass = KC_ATTENTION;
        row->t_eager *= 1e-6;
        row->kk = KK_ATTN;
        row->src = (row_src)src;
        snprintf(row->label, sizeof row->label, "%s %s q=%lld kv=%lld heads=%lld/%lld d=%lld",
                 calib_str(t, r, cmode), calib_str(t, r, cimpl), (long long)a->q_len,
                 (long long)a->kv_len, (long long)a->heads, (long long)a->kv_heads,
                 (long long)a->d_qk);
    }
    return 0;
}

/* elementwise.csv kind column: the kernel kind, -1 for kinds not modelled. */
static int mem_kind(const char *csv_kind)
{
    for (int k = 0; k < KK_COUNT; k++)
        if (mem_kinds[k].csv_kind && !strcmp(csv_kind, mem_kinds[k].csv_kind))
            return k;
    return -1;
}

static int read_elementwise(const calib_table *t, row_set *rs, cp_err *err)
{
    static const char *const names[] = {"min_bytes_moved", "time_us", NULL};
    int c[2], ckind, cdesc;
    if (num_cols(t, names, c, err) < 0 || (ckind = calib_col(t, "kind", err)) < 0 ||
        (cdesc = calib_col(t, "desc", err)) < 0)
        return -1;
    for (int r = 0; r < calib_rows(t); r++) {
        int kk = mem_kind(calib_str(t, r, ckind));
        if (kk < 0)
            continue;
        cost_row *row = row_push(rs, err);
        if (!row || positive(t, r, c[0], &row->op.bytes, err) < 0 ||
            positive(t, r, c[1], &row->t_eager, err) < 0)
            return -1;
        row->op.name = mem_kinds[kk].name;
        row->op.kclass = (uint8_t)mem_kinds[kk].kclass;
        row->t_eager *= 1e-6;
        row->kk = (kkind)kk;
        row->src = SRC_MEM;
        snprintf(row->label, sizeof row->label, "%s %s", calib_str(t, r, ckind),
                 calib_str(t, r, cdesc));
    }
    return 0;
}

/* sparse_attention.csv (optional): the DSA sparse-attention kernel
 * (SparseFlashAttention) of a profile, bf16, absorbed MLA over at most topk
 * selected latent keys per query: columns q_len (queries), ctx (keys before
 * the call's first query plus its queries, causal), topk, heads, d_qk, d_v,
 * time_us (eager time per call).  A series is (heads, d_qk, d_v); its size is
 * the attended pairs. */
static int read_sparse(const calib_table *t, row_set *rs, cp_err *err)
{
    static const char *const names[] = {"q_len", "ctx", "topk", "heads", "d_qk", "d_v",
                                        "time_us", NULL};
    int c[7];
    if (num_cols(t, names, c, err) < 0)
        return -1;
    for (int r = 0; r < calib_rows(t); r++) {
        cost_row *row = row_push(rs, err);
        if (!row)
            return -1;
        plan_attn *a = &row->op.attn;
        int64_t topk = 0;
        if (count(t, r, c[0], &a->q_len, err) < 0 || count(t, r, c[1], &a->kv_len, err) < 0 ||
            count(t, r, c[2], &topk, err) < 0 || count(t, r, c[3], &a->heads, err) < 0 ||
            count(t, r, c[4], &a->d_qk, err) < 0 || count(t, r, c[5], &a->d_v, err) < 0 ||
            positive(t, r, c[6], &row->t_eager, err) < 0)
            return -1;
        if (a->q_len > a->kv_len)
            return cp_fail_at(err, calib_loc(t, r, c[0]), "q_len above ctx");
        a->kv_heads = 1;
        a->causal = 1;
        /* query i of the call sees min(topk, ctx - q_len + i + 1) keys */
        double q = (double)a->q_len, pre = (double)(a->kv_len - a->q_len), k = (double)topk;
        double n = fmin(q, fmax(0.0, k - pre));
        a->pairs = n * pre + n * (n + 1) / 2 + (q - n) * k;
        row->op.flops = a->pairs * 2.0 * (double)a->heads * (double)(a->d_qk + a->d_v);
        row->op.bytes = a->pairs * (double)a->d_qk * 2.0 +
                        q * (double)a->heads * (double)(a->d_qk + a->d_v) * 2.0;
        row->op.dtype = DT_BF16;
        row->op.name = "mla_sparse_attention";
        row->op.kclass = KC_SPARSE_ATTN;
        row->t_eager *= 1e-6;
        row->kk = KK_SPARSE;
        row->src = SRC_SPARSE;
        snprintf(row->label, sizeof row->label, "sparse q=%lld ctx=%lld topk=%lld heads=%lld",
                 (long long)a->q_len, (long long)a->kv_len, (long long)topk,
                 (long long)a->heads);
    }
    return 0;
}

/* Every modelled row of a profile's kernel tables (sparse_attention.csv only
 * when the profile has it). */
static int read_profile(const char *profile, row_set *rs, cp_err *err)
{
    static const char *const tables[] = {"gemm", "gemm_graph", "attention", "elementwise",
                                         "sparse_attention"};
    for (int i = 0; i < 5; i++) {
        char rel[256], path[1024];
        snprintf(rel, sizeof rel, "platforms/calibration/%s/%s.csv", profile, tables[i]);
        if (i == 4 && access(cp_data_path(path, sizeof path, rel), R_OK) != 0)
            break;
        calib_table *t = calib_load(profile, tables[i], err);
        if (!t)
            return -1;
        int rc = i < 2 ? read_gemm(t, i == 1, rs, err)
                 : i == 2 ? read_attention(t, rs, err)
                 : i == 3 ? read_elementwise(t, rs, err) : read_sparse(t, rs, err);
        calib_free(t);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* The rows of a profile, read once per process (cost_new runs once per
 * simulation, and a sweep forks its simulations from a parent that has
 * already read them).  Entries live until the process exits. */
#define PROFILE_CACHE 4
static struct {
    char dir[1024];          /* the profile's directory: data dir and name */
    row_set rows;
} profile_cache[PROFILE_CACHE];

static const row_set *profile_rows(const char *profile, cp_err *err)
{
    char rel[256], dir[1024];
    snprintf(rel, sizeof rel, "platforms/calibration/%s", profile);
    cp_data_path(dir, sizeof dir, rel);
    int i = 0;
    for (; i < PROFILE_CACHE && profile_cache[i].dir[0]; i++)
        if (!strcmp(profile_cache[i].dir, dir))
            return &profile_cache[i].rows;
    row_set rs = {0};
    if (read_profile(profile, &rs, err) < 0) {
        free(rs.v);
        return NULL;
    }
    if (i == PROFILE_CACHE) { /* full: the oldest entry goes */
        free(profile_cache[0].rows.v);
        memmove(&profile_cache[0], &profile_cache[1],
                (PROFILE_CACHE - 1) * sizeof profile_cache[0]);
        i = PROFILE_CACHE - 1;
    }
    snprintf(profile_cache[i].dir, sizeof profile_cache[i].dir, "%s", dir);
    profile_cache[i].rows = rs;
    return &profile_cache[i].rows;
}

/* Kernel time a row measures for the table: graph replay for GEMMs; eager
 * calls of long kernels (attention, bandwidth-bound) less the eager gap.
 * 0 when the row only serves the check. */
static double row_kernel_time(const cost_row *r)
{
    if (r->src == SRC_GEMM_GRAPH)
        return r->t_graph;
    if (r->src == SRC_ATTN || r->src == SRC_MEM || r->src == SRC_SPARSE)
        return r->t_eager - EAGER_GAP;
    return 0;
}

static const cost_dev *find_ref(const char *profile, cp_err *err)
{
    size_t n = sizeof cost_refs / sizeof cost_refs[0];
    char known[256] = "";
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(cost_refs[i].profile, profile))
            return &cost_refs[i].dev;
        size_t len = strlen(known);
        snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", cost_refs[i].profile);
    }
    cp_fail(err, CP_EXIT_INPUT,
            "calibration profile \"%s\": the device it was measured on is not in "
            "models/cost.c cost_refs[] (known: %s)", profile, known);
    return NULL;
}

/* Read the profile's tables into table points (ratios against the
 * reference device of the profile). */
static int load_points(cost_model *c, const char *profile, cp_err *err)
{
    const row_set *rs = profile_rows(profile, err);
    const cost_dev *ref = rs ? find_ref(profile, err) : NULL;
    if (!ref)
        return -1;
    c->pts = calloc((size_t)rs->n + 1, sizeof *c->pts);
    if (!c->pts)
        return cp_fail(err, CP_EXIT_INTERNAL, "out of memory");
    c->ref = *ref;
    c->calibrated = 1;
    for (int i = 0; i < rs->n; i++) {
        double t = row_kernel_time(&rs->v[i]);
        if (t <= 0)
            continue;
        cost_point *pt = &c->pts[c->npts++];
        pt->op = rs->v[i].op;
        pt->kk = rs->v[i].kk;
        pt->x = size_of(&pt->op, pt->kk);
        pt->ratio = t / analytic(c, &c->ref, &pt->op, pt->kk);
    }
    return 0;
}

/* ---- public interface --------------------------------------------------- */

static int check_platform(const platform *p, cp_err *err)
{
    const char *what = NULL;
    if (!(p->peak_flops[DT_BF16] > 0))
        what = "peak_flops[bf16] must be positive";
    else if (!(p->hbm_bw > 0))
        what = "hbm_bw must be positive";
    else if (!(p->eff_gemm > 0 && p->eff_gemm <= 1) ||
             !(p->eff_attention > 0 && p->eff_attention <= 1) ||
             !(p->eff_memory > 0 && p->eff_memory <= 1))
        what = "eff_gemm, eff_attention and eff_memory must lie in (0, 1]";
    else if (!(p->launch_eager >= 0 && p->launch_graph >= 0))
        what = "launch_eager and launch_graph must not be negative";
    if (what)
        return cp_fail(err, CP_EXIT_INPUT, "platform %s (%s): %s", p->name, p->source, what);
    return 0;
}

cost_model *cost_new(const platform *p, cp_err *err)
{
    if (check_platform(p, err) < 0)
        return NULL;
    cost_model *c = calloc(1, sizeof *c);
    if (c && !(c->memo = calloc(1, sizeof *c->memo))) {
        free(c);
        c = NULL;
    }
    if (!c) {
        cp_fail(err, CP_EXIT_INTERNAL, "out of memory");
        return NULL;
    }
    memcpy(c->dev.peak, p->peak_flops, sizeof c->dev.peak);
    c->dev.vector_flops = p->vector_flops;
    c->dev.hbm_bw = p->hbm_bw;
    c->dev.sm_count = p->sm_count;
    c->dev.eff_gemm = p->eff_gemm;
    c->dev.eff_attention = p->eff_attention;
    c->dev.eff_memory = p->eff_memory;
    c->launch_eager = p->launch_eager;
    c->launch_graph = p->launch_graph;
    if (p->calibration[0] && load_points(c, p->calibration, err) < 0) {
        cost_free(c);
        return NULL;
    }
    return c;
}

void cost_free(cost_model *c)
{
    if (!c)
        return;
    free(c->pts);
    free(c->memo);
    free(c);
}

static int is_compute(const plan_op *op)
{
    return op->kind == OPK_COMPUTE && op->kclass < KC_COUNT;
}

double cost_kernel_s(const cost_model *c, const plan_op *op)
{
    return is_compute(op) ? kernel_time(c, op, kk_of_kclass[op->kclass], 0) : 0;
}

double cost_kernel_analytic_s(const cost_model *c, const plan_op *op)
{
    return is_compute(op) ? analytic(c, &c->dev, op, kk_of_kclass[op->kclass]) : 0;
}

double cost_launch_s(const cost_model *c, const plan_op *op, int graph)
{
    if (op->kind == OPK_MEM || op->kind == OPK_STEP)
        return 0;
    return graph && !op->eager ? c->launch_graph : c->launch_eager;
}

void cost_price_plan(const cost_model *c, plan *p, int graph)
{
    for (int i = 0; i < p->nprogs; i++) {
        plan_prog *prog = &p->progs[i];
        for (uint32_t j = 0; j < prog->nops; j++) {
            plan_op *op = &prog->ops[j];
            int eager = !graph || op->eager;
            op->cost_s = is_compute(op) ? cost_kernel_s(c, op) + (eager ? EAGER_GAP : 0) : 0;
            op->launch_s = cost_launch_s(c, op, graph);
        }
    }
}

/* ---- calibration check -------------------------------------------------- */

static const char *const src_table[] = {
    [SRC_GEMM_EAGER] = "gemm", [SRC_GEMM_GRAPH] = "gemm_graph",
    [SRC_ATTN] = "attention", [SRC_ATTN_OTHER] = "attention", [SRC_MEM] = "elementwise",
    [SRC_SPARSE] = "sparse_attention",
};

/* Predicted time per call of back-to-back calls of one kernel. */
static double per_call(const cost_model *c, double kernel, int graph)
{
    return graph ? fmax(kernel, c->launch_graph) : fmax(kernel + EAGER_GAP, c->launch_eager);
}

static void check_row(const cost_model *c, const cost_row *r, int graph, cost_check_row *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->table, sizeof out->table, "%s", src_table[r->src]);
    snprintf(out->label, sizeof out->label, "%s%s", r->label,
             r->kk == KK_GEMM ? (graph ? " graph" : " eager") : "");
    snprintf(out->kclass, sizeof out->kclass, "%s",
             r->kk == KK_GEMM ? (graph ? "gemm_graph" : "gemm_eager")
             : r->kk == KK_ATTN ? "attention"
             : r->kk == KK_SPARSE ? "sparse_attention" : mem_kinds[r->kk].name);
    out->measured_s = graph ? r->t_graph : r->t_eager;
    double table = table_time(c, &r->op, r->kk, 1);
    double model = analytic(c, &c->dev, &r->op, r->kk);
    out->table_s = per_call(c, table > 0 ? table : model, graph);
    out->analytic_s = per_call(c, model, graph);
}

int cost_check_calibration(const platform *p, cost_check_row **rows, cp_err *err)
{
    *rows = NULL;
    if (!p->calibration[0])
        return cp_fail(err, CP_EXIT_INPUT, "platform %s has no calibration profile", p->name);
    cost_model *c = cost_new(p, err);
    const row_set *rs = c ? profile_rows(p->calibration, err) : NULL;
    if (!rs) {
        cost_free(c);
        return -1;
    }
    cost_check_row *out = calloc((size_t)rs->n * 2 + 1, sizeof *out);
    int n = 0;
    for (int i = 0; out && i < rs->n; i++) {
        const cost_row *r = &rs->v[i];
        if (r->t_eager > 0)
            check_row(c, r, 0, &out[n++]);
        if (r->t_graph > 0)
            check_row(c, r, 1, &out[n++]);
    }
    cost_free(c);
    if (!out)
        return cp_fail(err, CP_EXIT_INTERNAL, "out of memory");
    *rows = out;
    return n;
}
