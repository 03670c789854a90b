/* cost: device time of compute ops (see cost.h).
 *
 * Analytic models (used outside the tables, and for every other device):
 *
 *  - GEMM.  cuBLAS on Hopper runs persistent stream-K kernels: the work is
 *    cut into output tiles of 128 rows by 128 columns (192, 256 or 64 when
 *    that pads N less), each tile into k-iterations of depth 64 (128 for
 *    8-bit operands: the same bytes per stage), and the iterations are
 *    spread evenly over the SMs; tiles shared by several SMs are summed by a
 *    fix-up.  So
 *        t = T0 + max(ceil(tiles*kiters / sms) * t_iter
 *                     + ceil(tiles / sms) * C_TILE + (splits - 1) * C_FIXUP,
 *                     bytes / (hbm_bw * eff_memory))
 *    with t_iter the time of one iteration at eff_gemm of the per-SM peak
 *    (times the scale kernel's speed of gemm_qs_speed[] for 8-bit GEMMs).
 *    Quantising whole tiles into waves instead (ceil(tiles / sms) waves,
 *    with split-K for small grids) fits the H200 rows worse, fitted the same
 *    way: worst row 38 % against 22 % (small grids such as kv_a_proj M=4096
 *    N=576 run at 720 TFLOP/s, which whole waves of tiles cannot).
 *    sm_count = 0: no quantisation, t = T0 + roofline.  A batched GEMM
 *    (KC_GROUPED_GEMM, bmm) has g times the tiles.
 *  - Expert GEMMs (KC_MOE_GEMM): one grouped launch over the local experts
 *    (torch._grouped_mm, CUTLASS sm90), each expert's rows padded to whole
 *    128-row tiles (moe.csv README: inferred from the timings), so the tiles
 *    are the expected sum over experts of ceil(rows_e / 128) under the
 *    routing distribution (moe_tiles), and the bytes read are the weights
 *    of the experts that received a row, streamed at MOE_WEIGHT_REL of the
 *    copy bandwidth.
 *  - Attention.  FlashAttention-2 forward: one CTA per (head, block of BR
 *    queries[, key range]), launched query block fastest, then head, two
 *    CTAs resident per SM; each CTA costs C0 plus one step per block of BC
 *    keys it sees (causal CTAs see fewer).  The makespan of that list
 *    schedule is what makes short and causal calls slow (131 TFLOP/s at 1K
 *    causal, 345 at 16K).  A step runs at eff_attention of the slot's share
 *    of peak, stretched by the K/V loads, which weigh (1 - PHI) + PHI * 128
 *    / BR (BR = 64 for head dims above 128, FA2's choice on H100, so the
 *    loads per flop double).  Decode (one query per request) folds the
 *    query heads of a KV head into the query rows of one CTA, and grids of
 *    under 0.8 waves split the keys (flash-decoding; the heuristic of FA2's
 *    flash_api.cpp): the split kernel tiles 64 queries by 128 keys, a CTA
 *    streams its keys at no more than ATTN_CTA_BW, the partials are combined
 *    by a second kernel, and the whole call never beats the KV bytes over
 *    the HBM bandwidth.
 *  - Bandwidth-bound kernels (norm, elementwise, copies, RoPE, LSE merge,
 *    routing pieces, activation quantisation):
 *        t = nkern * MEM_T0 + bytes / (hbm_bw * eff_memory * rel[kind])
 *    with rel[kind] the speed of that kind of kernel relative to a copy.
 *  - Sparse attention and the DSA indexer: T0 + roofline at eff_attention;
 *    a profile may add a sparse_attention.csv table.
 *
 * Measured tables first.  A profile row gives the ratio measured / analytic
 * (analytic on the device the profile was measured on).  An op that matches
 * a series of rows (same series key: GEMM K, N, dtype and scales; expert
 * GEMM K, N, local experts and routing; attention heads, kv heads, head
 * dims, mask and q_len/kv_len; decode attention heads, kv heads, head dim,
 * batch and q_len; routing pieces their widths; bandwidth-bound kinds the
 * kind) is priced analytic * ratio, the ratio interpolated linearly in log
 * size between the two neighbouring rows (size: rows, attended pairs, keys
 * or bytes), and held at the edge beyond the ends: the edge ratio, and
 * below the smallest size of the top-k series no less than the edge
 * row's time (flat_below).
 * Rows of one series at one size (two machine starts, two tables) are
 * averaged (geometric mean).  Interpolating the times themselves log-log
 * instead is worse (leave-one-out on the H200 graph GEMM rows: median
 * 6.1 %, worst 49 %, against 5.0 % and 21 %).
 *
 * Cross-device rule.  A profile measured on device X priced for a target T:
 *    GEMM, attention: t = max(t_X * peak_X / peak_T, bytes / (hbm_bw_T * eff_memory_T))
 *    bandwidth-bound: t = t_X * analytic_T / analytic_X
 * (for bandwidth-bound kernels the table keeps its measured deviation from
 * the analytic model and the target's bandwidth sets the time).  The numbers
 * of X are its machine.json "reference_device" (read_ref).
 *
 * Launch.  Eager launches also cost the device COST_EAGER_GAP per kernel,
 * added to cost_s of eagerly launched ops by cost_price_plan().
 */
#include "models/cost.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cost_profile.h"
#include "base/datadir.h"

/* ---- constants (fitted on platforms/calibration/h200) ------------------- */

/* Fixed time of one kernel: 3.1 us.  Fits: GEMM 2.99 us (gemm_graph.csv,
 * time_us_graph, all rows); copy 3.16 us and add 3.25 us (elementwise.csv,
 * t0 of a straight line through the smallest and the largest row). */
#define T0 3.1e-6
/* Fixed time of one bandwidth-bound kernel: the copy rows' intercept
 * (3.16 us, eager) less the eager gap (COST_EAGER_GAP 1.6 us); the tiniest
 * graph-replayed kernels agree (moe.csv permute_gather at 64 tokens:
 * 2.21 us for 2.4 MB, of which 0.55 us at the copy bandwidth). */
#define MEM_T0 1.6e-6

/* GEMM: tile, k-iteration depth and the per-tile and per-fix-up times.
 * Fitted with eff_gemm = 0.737 (and T0, eff_memory fixed) on gemm_graph.csv
 * time_us_graph, all 81 rows, minimising worst + 2 * median + mean relative
 * error by a random local search.  With the N tile choice of gemm_tile_n():
 * median 4.0 %, worst 21 % (cost_check_calibration, graph rows). */
#define GEMM_TILE 128.0      /* cuBLAS Hopper bf16 tile 128x128 (rows M, cols N) */
/* Below GEMM_TILE rows the kernels swap the operands, so that the batch
 * rides the N dimension of the tensor-core instruction, whose width steps
 * by 8 (PTX ISA wgmma.mma_async m64nNk16, N = 8..256 in steps of 8; vLLM's
 * cutlass scaled_mm dispatch swaps A and B for M <= 64, cuBLASLt picks
 * small-N tiles alike): a one-row GEMM computes an 8-row tile, not a
 * 128-row one, and reads its weights (gemm_graph_decode.csv: Llama 405B
 * TP8 gate_up at M = 1 runs 111 us, 3.9 TB/s of weights). */
#define GEMM_TILE_M_STEP 8.0
#define GEMM_BK 64.0         /* k depth of one main-loop iteration (16-bit) */
#define GEMM_C_TILE 0.70e-6  /* per tile: prologue and epilogue (fitted) */
#define GEMM_C_FIXUP 0.11e-6 /* per extra SM sharing a tile: one 64 KiB fp32
                                partial tile summed by the owner (fitted) */

/* Speed of the 8-bit GEMM kernels relative to the analytic model at the
 * 8-bit peak and eff_gemm, and the extra fixed time of the scaled fp8
 * kernels: fitted on the gemm_fp8.csv graph rows of each kind (objective
 * 2 * median + worst relative error of the analytic model; the README's
 * medians at M >= 4096 are fp8_tensor_fastacc 1170, fp8_row_fastacc 1277,
 * fp8_block128 1005, int8 672 TFLOP/s, against 1458 at 0.737 of 1978.9). */
static const double gemm_qs_speed[2][4] = {
    /* [fp8 or int8][plan_qscale]: none (as tensor), tensor, row, block */
    {0.967, 0.967, 1.0, 0.738},
    {0.46, 0.46, 0.46, 0.46},
};
static const double gemm_qs_t0[4] = {0, 0, 1.3e-6, 1.8e-6};

/* Expert GEMMs: the weights of the experts that received rows stream at
 * this share of the copy bandwidth (moe.csv, weight-bound rows of the wide
 * shapes: 2.6-3.4 TB/s against 4.265; README "Headline numbers"). */
#define MOE_WEIGHT_REL 0.72
/* Routing skew: relative spread of the per-expert mean rows under
 * `skewed` routing (logit bias sigma 0.2: moe.csv skew_cv of the skewed rows
 * at >= 64K tokens, 0.55-0.6 for 128 and 256 experts, less the multinomial
 * part). */
#define MOE_SKEW_CV 0.55
/* Expert GEMMs: the shortest time of one wave of output tiles, a tile's
 * weight-load latency (moe.csv: the narrowest shards, e.g. Qwen down at tp8,
 * K = 96, take 75 us for 2048 tiles, 16 waves of 132 SMs, whatever the
 * rows; fitted on the graph rows with MOE_WEIGHT_REL, same objective). */
#define MOE_TILE_S 2.7e-6

/* Attention (FlashAttention-2 forward).  Block shapes and CTAs per SM: FA2
 * flash_fwd_launch_template.h for sm90 (hdim 128: 128x64, 4 warps; hdim 256:
 * 64x64 "since then we can get 2 CTAs per SM"; the split-KV kernel: 64 x
 * 128 for hdim 128, flash_api.cpp run_mha_fwd_splitkv_dispatch).  ATTN_T0,
 * ATTN_C0, ATTN_PHI fitted with eff_attention = 0.364 on attention.csv,
 * impl flash_native_gqa (35 rows), same objective as GEMM: median 1.9 %,
 * worst 8.6 % over the 39 FA2 rows of cost_check_calibration. */
#define ATTN_BC 64.0         /* keys per step */
#define ATTN_CTAS_PER_SM 2.0
#define ATTN_T0 11.5e-6      /* fixed time of one attention call (fitted) */
#define ATTN_C0 0.445e-6     /* per CTA: load Q, write O and LSE (fitted) */
#define ATTN_PHI 0.092       /* share of K/V loads in a step at BR = 128 (fitted) */
/* Fixed time of a decode call (at most COST_DECODE_MAX_Q queries per
 * request) and the key stream of one split-KV CTA: fitted with the
 * ATTN_CTA_BW below on the decode_attention.csv flash graph rows (same
 * objective as the 8-bit GEMMs); the graph floor of 10-15 us per call at
 * small batches (README) is this plus one step and the combine kernel. */
#define ATTN_T0_DECODE 6.2e-6
/* (fitted with ATTN_T0_DECODE; the best read rate of the split kernel is
 * 4.4 TB/s over 264 resident CTAs, 16.7 GB/s each, README table) */
#define ATTN_CTA_BW 22.8e9
/* List-schedule at most this many CTAs; beyond (>= 248 waves of 264 slots)
 * the schedule's tail is under 1 % and the balanced bound total / slots is
 * used (0.3 % apart at the switch for 128 heads of 64K causal queries). */
#define ATTN_MAX_SIM_CTAS 65536.0


/* Bandwidth-bound kinds: speed relative to a copy, fitted per kind with the
 * fixed time nkern * T0 on its largest rows (bandwidth-bound), worst error
 * in brackets where measured in elementwise.csv: copy 1.000 (0.4 %), add
 * 1.027 (0.5 %), rms_norm 0.750 (14 %: hidden 2048 runs at 3.7 TB/s, hidden
 * 6144 at 3.2), silu_mul 0.27 (1.15 TB/s in elementwise.csv and moe.csv),
 * rope_unfused 0.0863 (1 %), lse_merge2_unfused 0.0861 (2 %); moe.csv at
 * >= 16K tokens: top-k scoring 0.0085 (32-40 GB/s of min_bytes), permute
 * 0.43 (1.6-2.0 TB/s), unpermute 0.125 (0.53 TB/s); gemm_fp8.csv act_quant
 * 0.085 (0.3-0.43 TB/s); elementwise.csv gelu 0.74 (3.14 TB/s at 1 GB, the
 * copy's 4.24), layer_norm 0.45 (d 1280: 1.91 TB/s at 64K rows). */
static const double mem_rel[KK_COUNT] = {
    [KK_COPY] = 1.000, [KK_ADD] = 1.027, [KK_NORM] = 0.750, [KK_SILU_MUL] = 0.27,
    [KK_ROPE] = 0.0863, [KK_LSE] = 0.0861, [KK_TOPK] = 0.0085, [KK_PERMUTE] = 0.43,
    [KK_UNPERMUTE] = 0.125, [KK_QUANT] = 0.085, [KK_GELU] = 0.74, [KK_LNORM] = 0.45,
    /* a kernel set's fused kernel no table measured: one pass over its bytes
     * at a copy's speed (elementwise.csv copy rows), one launch */
    [KK_FUSED] = 1.000,
};

/* Kernel kind of each plan kernel class (attention: prefill or decode by
 * its queries per request, kind_of).  Gathers, KV writes and embeddings
 * move bytes like a copy. */
static const cost_kk kk_of_kclass[KC_COUNT] = {
    [KC_GEMM] = KK_GEMM, [KC_GROUPED_GEMM] = KK_BMM, [KC_MOE_GEMM] = KK_MOE,
    [KC_ATTENTION] = KK_ATTN, [KC_SPARSE_ATTN] = KK_SPARSE, [KC_INDEXER] = KK_ROOFLINE,
    [KC_NORM] = KK_NORM, [KC_ELEMENTWISE] = KK_ADD, [KC_ACTIVATION] = KK_SILU_MUL,
    [KC_ROPE] = KK_ROPE, [KC_TOPK] = KK_TOPK, [KC_EMBEDDING] = KK_COPY,
    [KC_KV_WRITE] = KK_COPY, [KC_LSE_MERGE] = KK_LSE, [KC_MOE_PERMUTE] = KK_PERMUTE,
    [KC_MOE_UNPERMUTE] = KK_UNPERMUTE, [KC_ACT_QUANT] = KK_QUANT, [KC_COPY] = KK_COPY,
    [KC_GELU] = KK_GELU, [KC_LAYER_NORM] = KK_LNORM,
};

/* What the models need to know about a device. */
typedef struct cost_dev {
    double peak[DT_COUNT];   /* dense tensor flop/s per dtype, 0 = none */
    double vector_flops;     /* flop/s of the vector units, 0 = ignore */
    double hbm_bw;           /* bytes/s */
    int sm_count;            /* 0: no wave quantisation */
    double eff_gemm, eff_attention, eff_memory;
} cost_dev;

/* The device a calibration profile was measured on is data: the
 * "reference_device" of the profile's machine.json (read_ref): dense peaks
 * per dtype, HBM bandwidth, SM count and the efficiencies the analytic
 * model was fitted with on that profile (h200: 0.737 GEMM, 0.364
 * attention, 0.889 memory, fitted as the constants above say). */

/* Series key of an op: the coordinates a row must share with it. */
#define KEY_N 7
typedef struct series_key {
    double v[KEY_N];
} series_key;

/* A table point: rows of one series and size, averaged. */
typedef struct cost_point {
    cost_kk kk;
    series_key key;
    double x;           /* size */
    double lratio;      /* mean log(measured kernel time / analytic on the reference) */
    double ltime;       /* mean log(measured kernel time) (s) */
    int nrows;
    plan_costsrc src;   /* table of the first row */
} cost_point;

/* The points of one series: pts[first .. first + n), ascending in size. */
typedef struct cost_series {
    cost_kk kk;
    series_key key;
    int first, n;
} cost_series;

typedef struct attn_memo attn_memo;

struct cost_model {
    cost_dev dev;
    double launch_eager, launch_graph;
    int calibrated;           /* a profile is loaded: ref and points valid */
    cost_dev ref;
    cost_point *pts;          /* by kind, series key, then size */
    int npts;
    cost_series *series;      /* runs of pts of one kind and key */
    int nseries;
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

static int kernels(const plan_op *op)
{
    return op->nkern > 1 ? op->nkern : 1;
}

/* Kernels the op launches itself: none for a part of another's launch. */
static int launches(const plan_op *op)
{
    return op->shared_launch ? 0 : kernels(op);
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

/* Compute rate of a GEMM's tensor cores on d (8-bit: the scale kernel's
 * measured speed). */
static double gemm_rate(const cost_dev *d, const plan_op *op)
{
    double rate = dev_peak(d, op->dtype) * d->eff_gemm;
    if (op->dtype == DT_FP8 || op->dtype == DT_INT8)
        rate *= gemm_qs_speed[op->dtype == DT_INT8][op->qscale < 4 ? op->qscale : 0];
    return rate;
}

/* Tile height along M: GEMM_TILE, or the rows rounded up to the
 * instruction's step below it (GEMM_TILE_M_STEP). */
static double gemm_tile_m(double m)
{
    return m >= GEMM_TILE ? GEMM_TILE : ceil(m / GEMM_TILE_M_STEP) * GEMM_TILE_M_STEP;
}

/* Stream-K compute time of `tiles` output tiles of tm rows by tn columns
 * over K. */
static double gemm_tiles_time(const cost_dev *d, const plan_op *op, double tiles, double tm,
                              double tn)
{
    double k = (double)op->k, rate = gemm_rate(d, op);
    /* 8-bit operands: twice the k depth in the same shared-memory stage */
    double bk = GEMM_BK * (op->dtype == DT_FP8 || op->dtype == DT_INT8 ? 2.0 : 1.0);
    double sms = d->sm_count;
    double kiters = ceil(k / bk);
    /* one iteration of a tile: a multiply-add (2 flops) per output element
     * and k, at the SM's share of the rate */
    double t_iter = 2.0 * tm * tn * bk / (rate / sms);
    double splits = tiles < sms ? fmin(ceil(sms / tiles), kiters) : 1.0;
    return ceil(tiles * kiters / sms) * t_iter + ceil(tiles / sms) * GEMM_C_TILE +
           (splits - 1.0) * GEMM_C_FIXUP * tn / GEMM_TILE;
}

static double gemm_time(const cost_dev *d, const plan_op *op)
{
    double g = op->kclass == KC_GROUPED_GEMM && op->g > 1 ? (double)op->g : 1.0;
    double m = (double)op->m, k = (double)op->k, n = (double)op->n;
    if (m <= 0 || k <= 0 || n <= 0)
        return roofline_time(d, op, d->eff_gemm);
    double tc;
    if (d->sm_count <= 0) {
        tc = 2.0 * g * m * k * n / gemm_rate(d, op); /* 2 flops per multiply-add */
    } else {
        double tn = gemm_tile_n(n), tm = gemm_tile_m(m);
        tc = gemm_tiles_time(d, op, g * ceil(m / tm) * ceil(n / tn), tm, tn);
    }
    double extra = op->dtype == DT_FP8 ? gemm_qs_t0[op->qscale < 4 ? op->qscale : 0] : 0;
    return T0 + extra + fmax(tc, mem_floor(d, op));
}

/* Standard normal upper tail. */
static double upper_tail(double z)
{
    return 0.5 * erfc(z / sqrt(2.0));
}

/* Expected 128-row tiles of g experts sharing R rows, and the expected
 * experts with at least one row (*active).  Balanced: R/g rows each.
 * Random: each expert's count is binomial, about Poisson(mu = R/g), so
 * P(empty) = exp(-mu) and the count's variance is mu; skewed adds the
 * spread of the experts' means (MOE_SKEW_CV * mu).  E[ceil(X/128)] is the
 * sum over j >= 0 of P(X > 128 j), from a normal approximation beyond the
 * first tile. */
static double moe_tiles(double R, double g, int route, double *active)
{
    double mu = R / g;
    if (route == RT_BALANCED) {
        *active = g * fmin(1.0, mu);
        return g * ceil(mu / GEMM_TILE - 1e-9) * fmin(1.0, mu);
    }
    double p0 = 1.0 - exp(-mu);
    double var = mu + (route == RT_SKEWED ? (MOE_SKEW_CV * mu) * (MOE_SKEW_CV * mu) : 0.0);
    double sd = sqrt(var), tiles = p0;
    for (double j = 1;; j++) {
        double p = upper_tail((GEMM_TILE * j - mu) / sd);
        tiles += fmin(p, p0);
        if (GEMM_TILE * j > mu + 8.0 * sd) /* the normal tail beyond 8 sd: < 1e-15 */
            break;
    }
    *active = g * p0;
    return g * tiles;
}

static double moe_time(const cost_dev *d, const plan_op *op)
{
    double R = (double)op->m, K = (double)op->k, N = (double)op->n;
    double g = op->g > 0 ? (double)op->g : 1.0;
    if (R <= 0 || K <= 0 || N <= 0)
        return roofline_time(d, op, d->eff_gemm);
    double active;
    double row_tiles = moe_tiles(R, g, op->route, &active);
    double wb = op->dtype == DT_FP8 || op->dtype == DT_INT8 ? 1.0 : 2.0; /* weight bytes */
    /* activations in bf16 (moe.csv min_bytes), weights of the active experts */
    double bytes = R * K * 2.0 + active * K * N * wb + R * N * 2.0;
    double tmem = bytes / (d->hbm_bw * d->eff_memory * MOE_WEIGHT_REL);
    double tc;
    if (d->sm_count <= 0) {
        tc = 2.0 * R * K * N / gemm_rate(d, op); /* 2 flops per multiply-add */
    } else {
        double tn = gemm_tile_n(N), tiles = row_tiles * ceil(N / tn);
        tc = fmax(gemm_tiles_time(d, op, tiles, GEMM_TILE, tn),
                  ceil(tiles / d->sm_count) * MOE_TILE_S);
    }
    return T0 + fmax(tc, tmem);
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

/* An FA2 launch grid on one device: heads x ceil(q / br) x splits CTAs. */
typedef struct attn_grid {
    double q, kv;        /* query rows per CTA row and keys of the call */
    double causal;       /* 1: bottom-right aligned causal mask */
    double heads;        /* CTA rows: (request, head) pairs */
    double br, bc;       /* queries per CTA, keys per step */
    double slots;        /* CTAs resident at once */
    double step;         /* time of one step over bc keys (s) */
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
    return ATTN_C0 + ceil(ceil(seen / g->bc) / g->splits) * g->step;
}

/* FlashAttention-2's split-KV choice (flash-attention csrc flash_api.cpp,
 * num_splits_heuristic, called with twice the SM count): a grid of fewer
 * than 0.8 waves of CTAs splits the keys into s ranges, s <= min(128,
 * slots, key blocks), the smallest s whose wave efficiency (waves /
 * ceil(waves)) is within 85 % of the best.  This is what keeps decode (one
 * query per head) from running on a handful of SMs; decode_attention.csv
 * fa2_num_splits_pred lists it for the measured shapes. */
static double kv_splits(double ctas, double slots, double kv_blocks)
{
    if (ctas >= 0.8 * slots)
        return 1;
    double max_s = fmin(128.0, fmin(slots, kv_blocks)), best = 0;
    double eff[129];
    for (int s = 1; s <= (int)max_s; s++) {
        double waves = ctas * s / slots;
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

/* Makespan of the grid, CTAs launched query block fastest (its key ranges
 * first), then head, each to the first slot that frees (how the block
 * scheduler fills the SMs).  Equal CTAs (no mask) run in ceil(n / slots)
 * rounds.  -1: out of memory. */
static double grid_makespan(const attn_grid *g)
{
    double nq = ceil(g->q / g->br), n = nq * g->heads * g->splits;
    if (!g->causal || nq <= 1)
        return ceil(n / g->slots) * cta_time(g, 0);
    if (n > ATTN_MAX_SIM_CTAS) {
        double head = 0;   /* work of one head */
        if (nq <= ATTN_MAX_SIM_CTAS) {
            for (double i = 0; i < nq; i++)
                head += cta_time(g, i) * g->splits;
        } else {
            /* this many query blocks: the rounding to whole steps is negligible */
            head = nq * ATTN_C0 + mask_pairs(g->q, g->kv, 1) / (g->br * g->bc) * g->step;
        }
        return head * g->heads / g->slots;
    }
    long ns = (long)g->slots;
    double *free_at = calloc((size_t)ns, sizeof *free_at);
    if (!free_at)
        return -1;
    for (double h = 0; h < g->heads; h++) {
        for (double i = 0; i < nq; i++) {
            double t = cta_time(g, i);
            for (double s = 0; s < g->splits; s++) {
                free_at[0] += t;
                heap_sift_down(free_at, ns, 0);
            }
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
    double B = a->batch > 1 ? (double)a->batch : 1.0;
    double dsum = (double)(a->d_qk + a->d_v);
    double dmax = (double)(a->d_qk > a->d_v ? a->d_qk : a->d_v);
    double rate = dev_peak(d, op->dtype) * d->eff_attention;
    double q = (double)a->q_len, kv = (double)a->kv_len;
    double geom = B * mask_pairs(q, kv, a->causal);
    double pairs = a->pairs > 0 ? a->pairs : geom;
    /* per pair and head: q.k over d_qk, p.v over d_v, 2 flops per multiply-add */
    double flops = 2.0 * pairs * (double)a->heads * dsum;
    double balanced = (flops > 0 ? flops : op->flops) / rate;
    if (d->sm_count <= 0 || a->heads <= 0 || geom <= 0 || dsum <= 0)
        return ATTN_T0 + fmax(balanced, mem_floor(d, op));
    /* one query per request: the query heads of a KV head share a CTA
     * (FA2 seqlenq_ngroups_swapped) */
    int fold = a->q_len == 1 && a->kv_heads > 0 && a->heads > a->kv_heads &&
               a->heads % a->kv_heads == 0 && !a->unfolded;
    double rows = fold ? (double)(a->heads / a->kv_heads) : q;
    double hrows = B * (double)(fold ? a->kv_heads : a->heads);
    attn_grid g = {rows, kv, a->causal, hrows, 0, 0, ATTN_CTAS_PER_SM * d->sm_count, 0, 1};
    /* the split-KV kernel's key block by head dim and its 64-row query blocks
     * (flash_api.cpp set_params_splitkv, which calls num_splits_heuristic) */
    double bc_split = dmax <= 64 ? 256.0 : dmax <= 128 ? 128.0 : 64.0;
    g.splits = kv_splits(hrows * ceil(rows / 64.0), g.slots, ceil(kv / bc_split));
    g.br = g.splits > 1 ? 64.0 : (dmax <= 128 ? 128.0 : 64.0);
    g.bc = g.splits > 1 ? bc_split : ATTN_BC;
    double load = (1.0 - ATTN_PHI) + ATTN_PHI * 128.0 / g.br;
    /* A grid that fits one CTA per SM runs each on a whole SM (attention_cp.csv:
     * 8 heads of 2048 queries, 128 CTAs, take 61 us where two CTAs per SM
     * would take 110). */
    double ctas = ceil(rows / g.br) * hrows * g.splits;
    if (ctas <= d->sm_count)
        g.slots = d->sm_count;
    /* One step of a full block, scaled when the op's mask attends a share
     * of pairs other than the plain FA2 mask of its shape; a split CTA's
     * keys stream at no more than ATTN_CTA_BW. */
    g.step = 2.0 * g.br * g.bc * dsum / (rate / g.slots) * load * (pairs / geom);
    /* K and V of every KV head in bf16 (2 B), read once per query head that
     * uses them unless the heads share a CTA (fold) */
    double kv_read = (fold ? 1.0 : (double)a->heads / (double)(a->kv_heads > 0 ? a->kv_heads : 1));
    double kv_bytes = B * kv * (double)(a->kv_heads > 0 ? a->kv_heads : a->heads) * dsum * 2.0 *
                      kv_read;
    double combine = 0;
    if (g.splits > 1) {
        /* a step's bc keys, K and V in bf16 (2 B per element) */
        g.step = fmax(g.step, g.bc * dsum * 2.0 / ATTN_CTA_BW);
        /* the combine kernel reads the fp32 partials and LSE of every split */
        double part = B * (double)a->heads * q * g.splits * ((double)a->d_v + 1.0) * 4.0;
        combine = T0 + part / (d->hbm_bw * d->eff_memory);
    }
    double span = grid_span(memo, &g);
    double floor_b = fmax(mem_floor(d, op), kv_bytes / (d->hbm_bw * d->eff_memory));
    double t0 = a->q_len <= COST_DECODE_MAX_Q ? ATTN_T0_DECODE : ATTN_T0;
    return t0 + fmax(span >= 0 ? span : balanced, floor_b) + combine;
}

static double mem_time(const cost_dev *d, const plan_op *op, cost_kk kk)
{
    double rel = mem_rel[kk] > 0 ? mem_rel[kk] : 1.0;
    if (kk == KK_QUANT && kernels(op) == 1)
        rel = mem_rel[KK_COPY]; /* a single-pass quantisation kernel: a copy's speed
                                   (not measured; the table's rows are the
                                   unfused ops) */
    double t = op->bytes / (d->hbm_bw * d->eff_memory * rel);
    if (d->vector_flops > 0)
        t = fmax(t, op->flops / d->vector_flops);
    return kernels(op) * MEM_T0 + t;
}

/* Analytic time of op of kind kk on device d (c: the model, for its memo). */
static double analytic(const cost_model *c, const cost_dev *d, const plan_op *op, cost_kk kk)
{
    switch (kk) {
    case KK_GEMM:
    case KK_BMM:
        return gemm_time(d, op);
    case KK_MOE:
        return moe_time(d, op);
    case KK_ATTN:
    case KK_DECODE:
        return attn_time(c->memo, d, op);
    case KK_ROOFLINE:
    case KK_SPARSE:
        return roofline_time(d, op, d->eff_attention);
    default:
        return mem_time(d, op, kk);
    }
}

/* ---- series ------------------------------------------------------------------ */

/* A fused implementation of a bandwidth-bound class (or of the routing's
 * top-k, permute and unpermute). */
static int fused_bytes_kernel(const plan_op *op)
{
    if (op->impl != IMPL_FUSED && op->impl != IMPL_FUSED_ADD && op->impl != IMPL_FUSED_KV_WRITE)
        return 0;
    cost_kk kk = kk_of_kclass[op->kclass];
    return kk != KK_GEMM && kk != KK_BMM && kk != KK_MOE && kk != KK_ATTN &&
           kk != KK_SPARSE && kk != KK_ROOFLINE;
}

static cost_kk kind_of(const plan_op *op)
{
    if (fused_bytes_kernel(op))
        return KK_FUSED;
    cost_kk kk = kk_of_kclass[op->kclass];
    if (kk == KK_ATTN && op->attn.q_len <= COST_DECODE_MAX_Q)
        return KK_DECODE;
    return kk;
}

/* Size coordinate of an op within its series. */
static double size_of(const plan_op *op, cost_kk kk)
{
    switch (kk) {
    case KK_GEMM:
    case KK_MOE:
        return (double)op->m;
    case KK_ATTN: /* the call's work: pairs over all its heads */
        return (op->attn.pairs > 0 ? op->attn.pairs
                                   : mask_pairs((double)op->attn.q_len,
                                                (double)op->attn.kv_len, op->attn.causal)) *
               (double)op->attn.heads;
    case KK_SPARSE:
        return op->attn.pairs;
    case KK_DECODE:
        return (double)op->attn.kv_len;
    default:
        return op->bytes;
    }
}

/* The coordinates a row must share with an op to be in its series. */
static series_key key_of(const plan_op *op, cost_kk kk)
{
    series_key k = {{0}};
    const plan_attn *a = &op->attn;
    /* an attention call of no set in particular is the profile's FA2 */
    double impl = op->impl == IMPL_TORCH ? IMPL_FA2 : op->impl;
    switch (kk) {
    case KK_GEMM:
        /* a cuDNN convolution (impl cudnn: its implicit GEMM's K and N)
         * has series of its own, conv.csv's */
        k = (series_key){{(double)op->k, (double)op->n, op->dtype, op->qscale,
                          op->impl == IMPL_CUDNN}};
        break;
    case KK_MOE:
        k = (series_key){{(double)op->k, (double)op->n, (double)op->g, op->route, op->dtype}};
        break;
    case KK_ATTN:
        /* any head count: the grid's occupancy is the analytic model's; a
         * causal mask's shape is its q/kv ratio, a non-causal call's is
         * the analytic model's too (its CTAs all see every key) */
        k = (series_key){{(double)a->d_qk, (double)a->d_v, a->causal,
                          a->causal && a->kv_len > 0 ? (double)a->q_len / (double)a->kv_len
                                                     : 0, impl}};
        /* cuDNN's rows are square (its causal mask is top-left aligned below
         * the diagonal, README "Attention by backend"): its series is its
         * speed at the mask, whatever the q/kv ratio */
        if (op->impl == IMPL_CUDNN)
            k.v[3] = 0;
        break;
    case KK_DECODE:
        k = (series_key){{(double)a->heads, (double)a->kv_heads, (double)a->d_qk,
                          (double)a->d_v, a->batch > 1 ? (double)a->batch : 1,
                          (double)a->q_len, impl}};
        break;
    case KK_SPARSE:
        k = (series_key){{(double)a->heads, (double)a->d_qk, (double)a->d_v, op->dtype}};
        break;
    case KK_TOPK: /* [T, E] -> [T, k] */
        k = (series_key){{(double)op->in.d[1], (double)op->out.d[1]}};
        break;
    case KK_PERMUTE: /* [T, H] -> [R, H] */
    case KK_UNPERMUTE: /* [R, H] -> [T, H] */
        k = (series_key){{(double)op->in.d[1],
                          op->in.d[0] > 0 && op->out.d[0] > 0
                              ? (kk == KK_PERMUTE ? (double)op->out.d[0] / (double)op->in.d[0]
                                                  : (double)op->in.d[0] / (double)op->out.d[0])
                              : 0}};
        break;
    case KK_QUANT: /* the unfused ops of the profile, or one kernel; per row width K
                      (a series over M: the small-M rows of one width do not
                      price another's) */
        k = (series_key){{op->qscale, kernels(op), (double)op->in.d[1]}};
        break;
    default: /* bandwidth-bound kinds: one series per kind */
        break;
    }
    return k;
}

static int key_eq(const series_key *a, const series_key *b)
{
    for (int i = 0; i < KEY_N; i++)
        if (fabs(a->v[i] - b->v[i]) > 1e-9 * fmax(1.0, fabs(a->v[i])))
            return 0;
    return 1;
}

/* A table lookup: the ratio, its source and the distance to the nearest
 * point; ratio 0 when no series applies.  floor_ref: below the smallest
 * point of a compute kind's series, that point's time on the reference
 * device (the op is not faster than the smallest shape measured). */
typedef struct lookup {
    double ratio;
    plan_costsrc src;
    double dist;
    double floor_ref;
} lookup;

/* Top-k scoring (seven small launches over a few KB of logits) is bound by
 * its launches at small sizes, so its series is flat below its smallest
 * size: no less than the edge row's time (moe.csv at 64 tokens: 24.8 us;
 * moe_decode.csv at 1-32 tokens: 17-20 us).  Every other series keeps the
 * edge row's speed beyond its ends (its ratio to the analytic model, which
 * scales the work: weights read by a small-M GEMM, keys by a decode call,
 * rows gathered by a permute: flat, glm5's unpermute at 64 tokens would be
 * priced at its 256-token time, 1.8x the measured one). */
static int flat_below(cost_kk kk)
{
    return kk == KK_TOPK;
}

static lookup series_ratio(const cost_model *c, const series_key *key, double x, cost_kk kk,
                           int leave_out)
{
    lookup out = {0, CS_ROOFLINE, 0, 0};
    const cost_point *lo = NULL, *hi = NULL;
    const cost_series *sr = NULL;
    for (int i = 0; i < c->nseries && !sr; i++)
        if (c->series[i].kk == kk && key_eq(&c->series[i].key, key))
            sr = &c->series[i];
    for (int i = sr ? sr->first : 0; sr && i < sr->first + sr->n; i++) {
        const cost_point *pt = &c->pts[i];
        if (leave_out && pt->x == x)
            continue;
        if (pt->x == x)
            return (lookup){exp(pt->lratio), pt->src, 1.0, 0};
        if (pt->x < x && (!lo || pt->x > lo->x))
            lo = pt;
        if (pt->x > x && (!hi || pt->x < hi->x))
            hi = pt;
    }
    if (!lo && !hi)
        return out;
    if (!lo || !hi) {
        /* beyond an end the edge row holds (issue "Decode steps": a series
         * never fades toward the analytic model below its measured times) */
        const cost_point *end = lo ? lo : hi;
        double floor_ref = !lo && flat_below(kk) ? exp(end->ltime) : 0;
        return (lookup){exp(end->lratio), end->src, fmax(x / end->x, end->x / x), floor_ref};
    }
    double f = log(x / lo->x) / log(hi->x / lo->x);
    const cost_point *near = f < 0.5 ? lo : hi;
    return (lookup){exp(lo->lratio + f * (hi->lratio - lo->lratio)), near->src,
                    fmax(x / near->x, near->x / x), 0};
}

/* Index of the batch in a decode series key (key_of). */
#define DECODE_KEY_BATCH 4

/* A decode call of a batch no series measured: the ratios of the series of
 * the nearest batches below and above (same heads, dims, queries and
 * kernel) at the call's size, linear in log(batch) between them, the
 * nearest one's beyond them (decode_attention.csv measures batches 1, 8,
 * 32, 64, 256; a serving step runs any). */
static lookup decode_between_batches(const cost_model *c, const series_key *key, double x,
                                     int leave_out)
{
    double b = key->v[DECODE_KEY_BATCH], lo = 0, hi = 0;
    for (int i = 0; i < c->nseries; i++) {
        const cost_series *sr = &c->series[i];
        if (sr->kk != KK_DECODE)
            continue;
        series_key k = sr->key;
        double sb = k.v[DECODE_KEY_BATCH];
        k.v[DECODE_KEY_BATCH] = b;
        if (!key_eq(&k, key))
            continue;
        if (sb < b && sb > lo)
            lo = sb;
        if (sb > b && (hi == 0 || sb < hi))
            hi = sb;
    }
    lookup none = {0, CS_ROOFLINE, 0, 0};
    if (lo == 0 && hi == 0)
        return none;
    series_key kl = *key, kh = *key;
    kl.v[DECODE_KEY_BATCH] = lo;
    kh.v[DECODE_KEY_BATCH] = hi;
    lookup a = lo > 0 ? series_ratio(c, &kl, x, KK_DECODE, leave_out) : none;
    lookup h = hi > 0 ? series_ratio(c, &kh, x, KK_DECODE, leave_out) : none;
    if (!(a.ratio > 0))
        return h;
    if (!(h.ratio > 0))
        return a;
    double f = log(b / lo) / log(hi / lo);
    lookup out = f < 0.5 ? a : h;
    out.ratio = exp(log(a.ratio) + f * (log(h.ratio) - log(a.ratio)));
    out.floor_ref = 0;
    return out;
}

/* Ratio measured / analytic for op from its series, leaving out points of
 * the op's own size when leave_out is set.  An implementation without a
 * series of its own takes the nearest class measured: FA3 prefill the
 * cuDNN rows (the same Hopper wgmma + TMA class, README "Attention by
 * backend"), a decode call of another kernel the FA2 split-KV rows. */
static lookup table_ratio(const cost_model *c, const plan_op *op, cost_kk kk, int leave_out)
{
    lookup out = {0, CS_ROOFLINE, 0, 0};
    double x = size_of(op, kk);
    if (!(x > 0))
        return out;
    series_key key = key_of(op, kk);
    out = series_ratio(c, &key, x, kk, leave_out);
    if (out.ratio > 0)
        return out;
    if (kk == KK_DECODE) {
        out = decode_between_batches(c, &key, x, leave_out);
        if (out.ratio > 0)
            return out;
    }
    plan_op alt = *op;
    if (kk == KK_ATTN && op->impl == IMPL_FA3)
        alt.impl = IMPL_CUDNN;
    else if (kk == KK_DECODE && op->impl != IMPL_FA2)
        alt.impl = IMPL_FA2;
    else
        return out;
    key = key_of(&alt, kk);
    return series_ratio(c, &key, x, kk, leave_out);
}

/* Measured-table time of op on the target device; 0 when no table applies.
 * The time measured on the reference device X moves to the target T by the
 * analytic model: t_T = t_X * A_T / A_X, so that a compute-bound kernel
 * scales with the peak and a bandwidth-bound one (a small-M GEMM's weight
 * read, a norm) with the HBM bandwidth (issue "Answers": HBM what-ifs). */
static double table_time(const cost_model *c, const plan_op *op, cost_kk kk, int leave_out,
                         lookup *lk)
{
    *lk = (lookup){0, CS_ROOFLINE, 0, 0};
    if (!c->calibrated || kk == KK_ROOFLINE || kk == KK_BMM || kk == KK_FUSED)
        return 0;
    *lk = table_ratio(c, op, kk, leave_out);
    if (lk->ratio <= 0)
        return 0;
    double a_ref = analytic(c, &c->ref, op, kk), a_dev = analytic(c, &c->dev, op, kk);
    double t_ref = fmax(lk->ratio * a_ref, lk->floor_ref);
    return a_ref > 0 ? t_ref * a_dev / a_ref : t_ref;
}

static double kernel_time(const cost_model *c, const plan_op *op, cost_kk kk, int leave_out,
                          lookup *lk)
{
    double t = table_time(c, op, kk, leave_out, lk);
    if (t > 0 && kk == KK_DECODE && op->attn.unfolded) {
        /* the decode rows ran GQA-folded (flash_attn_with_kvcache); a varlen
         * call's decodes keep the rows' deviation from the analytic model
         * and take the analytic model's unfolded time */
        plan_op f = *op;
        f.attn.unfolded = 0;
        double folded = analytic(c, &c->dev, &f, kk);
        if (folded > 0)
            t *= analytic(c, &c->dev, op, kk) / folded;
    }
    if (t > 0)
        return t;
    *lk = (lookup){0, kk == KK_FUSED ? CS_DERIVED : CS_ROOFLINE, 0, 0};
    return analytic(c, &c->dev, op, kk);
}

/* ---- the profile's points ----------------------------------------------------------- */

/* The rows of a profile, read once per process (cost_new runs once per
 * simulation, and a sweep forks its simulations from a parent that has
 * already read them).  Entries live until the process exits. */
#define PROFILE_CACHE 4
static struct {
    char dir[1024];          /* the profile's directory: data dir and name */
    cost_rows rows;
} profile_cache[PROFILE_CACHE];

static const cost_rows *profile_rows(const char *profile, cp_err *err)
{
    char dir[1024];
    cp_calib_dir(dir, sizeof dir, profile);
    int i = 0;
    for (; i < PROFILE_CACHE && profile_cache[i].dir[0]; i++)
        if (!strcmp(profile_cache[i].dir, dir))
            return &profile_cache[i].rows;
    cost_rows rs = {0};
    if (cost_profile_read(profile, &rs, err) < 0) {
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

/* A number of the reference device in (0, hi]; -1 with the key named. */
static int ref_num(const json_t *o, const char *path, const char *key, double hi, int required,
                   double *out, cp_err *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v && !required)
        return 0;
    if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > hi)
        return cp_fail(err, CP_EXIT_INPUT, "%s: reference_device: %s: expected a number in "
                       "(0, %g]", path, key, hi);
    *out = json_number_value(v);
    return 0;
}

/* The profile's reference device from its machine.json: which device the
 * rows were measured on, so that they can be rescaled to another. */
static int read_ref(const char *profile, cost_dev *d, cp_err *err)
{
    char dir[1024], path[1100];
    snprintf(path, sizeof path, "%s/machine.json", cp_calib_dir(dir, sizeof dir, profile));
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        return cp_fail(err, CP_EXIT_INPUT, "calibration profile \"%s\": %s: %s (a profile "
                       "describes the device it was measured on in machine.json)", profile,
                       path, je.text);
    const json_t *r = json_object_get(j, "reference_device");
    const json_t *pk = json_object_get(r, "peak_flops"), *ef = json_object_get(r, "efficiency");
    memset(d, 0, sizeof *d);
    int rc = 0;
    if (!json_is_object(r) || !json_is_object(pk) || !json_is_object(ef))
        rc = cp_fail(err, CP_EXIT_INPUT, "%s: no reference_device {peak_flops: {bf16, ...}, "
                     "hbm_bandwidth, sm_count, efficiency: {gemm, attention, memory}}: the "
                     "device the profile was measured on, which cpsim rescales its rows from",
                     path);
    /* bounds: platforms/platform.h (flop/s and B/s below 1e18 and 1e15) */
    double sm = 0;
    for (int t = 0; t < DT_COUNT && rc == 0; t++)
        rc = ref_num(pk, path, dtype_name((cp_dtype)t), 1e18, t == DT_BF16, &d->peak[t], err);
    if (rc == 0)
        rc = ref_num(r, path, "hbm_bandwidth", 1e15, 1, &d->hbm_bw, err);
    if (rc == 0)
        rc = ref_num(r, path, "sm_count", 1e5, 0, &sm, err);
    d->sm_count = (int)sm;
    if (rc == 0)
        rc = ref_num(ef, path, "gemm", 1, 1, &d->eff_gemm, err);
    if (rc == 0)
        rc = ref_num(ef, path, "attention", 1, 1, &d->eff_attention, err);
    if (rc == 0)
        rc = ref_num(ef, path, "memory", 1, 1, &d->eff_memory, err);
    json_decref(j);
    return rc;
}

/* Read the profile's tables into table points (ratios against the
 * reference device of the profile); rows of one series and size become one
 * point. */
/* Bytes past which a row cannot be served from the L2 cache: the 50 MB L2
 * of the H100 / H200 (NVIDIA H100 Tensor Core GPU Architecture whitepaper);
 * a repeated call on smaller data may read at L2 speed, above HBM's. */
#define COST_L2_BYTES 50e6

/* A row faster than the reference device can run it: more flop/s than its
 * dense peak for the row's dtype, or more bytes/s than its HBM past the L2
 * (models-hardware.md 3.1; the aiconfigurator README warns of such rows).
 * Such rows are refused: no point of the table model, flagged in the
 * check. */
static int row_impossible(const cost_dev *ref, const cost_row *r)
{
    double t = r->t_kernel > 0 ? r->t_kernel : r->t_graph > 0 ? r->t_graph : r->t_eager;
    if (!(t > 0))
        return 0;
    return r->op.flops / t > dev_peak(ref, r->op.dtype) ||
           (r->op.bytes > COST_L2_BYTES && r->op.bytes / t > ref->hbm_bw);
}

/* Points by kind, key (exact, in order), size, then row: a total order, so
 * the means of a point's rows add in one order on every run. */
static int point_cmp(const void *pa, const void *pb)
{
    const cost_point *a = pa, *b = pb;
    if (a->kk != b->kk)
        return a->kk < b->kk ? -1 : 1;
    for (int i = 0; i < KEY_N; i++)
        if (a->key.v[i] != b->key.v[i])
            return a->key.v[i] < b->key.v[i] ? -1 : 1;
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    return (a->nrows > b->nrows) - (a->nrows < b->nrows);
}

static int load_points(cost_model *c, const char *profile, cp_err *err)
{
    const cost_rows *rs = profile_rows(profile, err);
    if (!rs || read_ref(profile, &c->ref, err) < 0)
        return -1;
    cost_point *raw = calloc((size_t)rs->n + 1, sizeof *raw);
    c->pts = calloc((size_t)rs->n + 1, sizeof *c->pts);
    c->series = calloc((size_t)rs->n + 1, sizeof *c->series);
    if (!raw || !c->pts || !c->series) {
        free(raw);
        return cp_fail(err, CP_EXIT_INTERNAL, "out of memory");
    }
    c->calibrated = 1;
    int n = 0;
    for (int i = 0; i < rs->n; i++) {
        const cost_row *r = &rs->v[i];
        if (r->t_kernel <= 0 || row_impossible(&c->ref, r))
            continue;
        double lr = log(r->t_kernel / analytic(c, &c->ref, &r->op, r->kk));
        /* nrows holds the row index until the sort (a total order) */
        raw[n++] = (cost_point){r->kk, key_of(&r->op, r->kk), size_of(&r->op, r->kk), lr,
                                log(r->t_kernel), i, r->src};
    }
    qsort(raw, (size_t)n, sizeof *raw, point_cmp);
    /* rows of one series at one size: one point, their mean logs */
    for (int i = 0; i < n;) {
        int j = i + 1;
        cost_point *pt = &c->pts[c->npts++];
        *pt = raw[i];
        pt->nrows = 1;
        for (; j < n && raw[j].kk == pt->kk && raw[j].x == pt->x && key_eq(&raw[j].key, &pt->key);
             j++) {
            pt->lratio = (pt->lratio * pt->nrows + raw[j].lratio) / (pt->nrows + 1);
            pt->ltime = (pt->ltime * pt->nrows + raw[j].ltime) / (pt->nrows + 1);
            pt->nrows++;
        }
        i = j;
    }
    free(raw);
    for (int i = 0; i < c->npts; i++) {
        cost_series *last = c->nseries ? &c->series[c->nseries - 1] : NULL;
        if (last && last->kk == c->pts[i].kk && key_eq(&last->key, &c->pts[i].key))
            last->n++;
        else
            c->series[c->nseries++] = (cost_series){c->pts[i].kk, c->pts[i].key, i, 1};
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
    free(c->series);
    free(c->memo);
    free(c);
}

static int is_compute(const plan_op *op)
{
    return op->kind == OPK_COMPUTE && op->kclass < KC_COUNT;
}

double cost_kernel_src_s(const cost_model *c, const plan_op *op, plan_costsrc *src,
                         double *dist)
{
    lookup lk = {0, CS_ROOFLINE, 0, 0};
    double t = is_compute(op) ? kernel_time(c, op, kind_of(op), 0, &lk) : 0;
    if (src)
        *src = lk.src;
    if (dist)
        *dist = lk.dist;
    return t;
}

double cost_kernel_s(const cost_model *c, const plan_op *op)
{
    return cost_kernel_src_s(c, op, NULL, NULL);
}

double cost_kernel_analytic_s(const cost_model *c, const plan_op *op)
{
    return is_compute(op) ? analytic(c, &c->dev, op, kind_of(op)) : 0;
}

double cost_launch_s(const cost_model *c, const plan_op *op, int graph)
{
    if (op->kind == OPK_MEM || op->kind == OPK_STEP)
        return 0;
    return launches(op) * (graph && !op->eager ? c->launch_graph : c->launch_eager);
}

void cost_price_plan(const cost_model *c, plan *p, int graph)
{
    for (int i = 0; i < p->nprogs; i++) {
        plan_prog *prog = &p->progs[i];
        for (uint32_t j = 0; j < prog->nops; j++) {
            plan_op *op = &prog->ops[j];
            int eager = !graph || op->eager;
            op->cost_s = 0;
            op->cost_table = CS_ROOFLINE;
            op->cost_dist = 0;
            if (is_compute(op)) {
                plan_costsrc src;
                double dist;
                op->cost_s = cost_kernel_src_s(c, op, &src, &dist) +
                             (eager ? launches(op) * COST_EAGER_GAP : 0);
                op->cost_table = (uint8_t)src;
                op->cost_dist = (float)dist;
                op->eager_gap = (uint8_t)(eager && launches(op) > 0);
            }
            op->launch_s = cost_launch_s(c, op, graph);
        }
    }
}

/* ---- calibration check -------------------------------------------------- */

/* Predicted time per call of back-to-back calls of one kernel: the host
 * issues op->nkern launches per call, the device runs the kernel. */
static double per_call(const cost_model *c, const plan_op *op, double kernel, int graph)
{
    int n = kernels(op);
    return graph ? fmax(kernel, n * c->launch_graph)
                 : fmax(kernel + n * COST_EAGER_GAP, n * c->launch_eager);
}

static void check_row(const cost_model *c, const cost_row *r, int graph, cost_check_row *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->table, sizeof out->table, "%s", plan_costsrc_file(r->src));
    snprintf(out->label, sizeof out->label, "%s %s", r->label, graph ? "graph" : "eager");
    snprintf(out->cls, sizeof out->cls, "%s_%s", r->cls, graph ? "graph" : "eager");
    out->measured_s = graph ? r->t_graph : r->t_eager;
    out->repeat_s = graph ? r->t_graph2 : r->t_eager2;
    lookup lk;
    double table = table_time(c, &r->op, r->kk, 1, &lk);
    double model = analytic(c, &c->dev, &r->op, r->kk);
    out->table_s = per_call(c, &r->op, table > 0 ? table : model, graph);
    out->analytic_s = per_call(c, &r->op, model, graph);
    out->refused = row_impossible(&c->ref, r);
}

int cost_check_calibration(const platform *p, cost_check_row **rows, cp_err *err)
{
    *rows = NULL;
    if (!p->calibration[0])
        return cp_fail(err, CP_EXIT_INPUT, "platform %s has no calibration profile", p->name);
    cost_model *c = cost_new(p, err);
    const cost_rows *rs = c ? profile_rows(p->calibration, err) : NULL;
    if (!rs) {
        cost_free(c);
        return -1;
    }
    c->dev = c->ref; /* rows are predicted on the device that measured them */
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

/* ---- accuracy figures ------------------------------------------------------------- */

static double rel_err(double pred, double meas)
{
    return fabs(pred / meas - 1.0);
}

static int noisy(const cost_check_row *r)
{
    return r->repeat_s > 0 && rel_err(r->repeat_s, r->measured_s) > COST_NOISE;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static cost_accuracy class_stats(const cost_check_row *rows, int n, const char *cls,
                                 double *et, double *ea)
{
    cost_accuracy s = {.worst_table_row = -1, .worst_analytic_row = -1};
    snprintf(s.cls, sizeof s.cls, "%s", cls);
    for (int i = 0; i < n; i++) {
        if (*cls && strcmp(rows[i].cls, cls) != 0)
            continue;
        if (rows[i].refused) {
            s.refused++;
            continue;
        }
        double t = rel_err(rows[i].table_s, rows[i].measured_s);
        double a = rel_err(rows[i].analytic_s, rows[i].measured_s);
        et[s.n] = t;
        ea[s.n++] = a;
        if (noisy(&rows[i])) {
            s.noisy++;
            continue;
        }
        if (s.worst_table_row < 0 || t > s.worst_table) {
            s.worst_table = t;
            s.worst_table_row = i;
        }
        if (s.worst_analytic_row < 0 || a > s.worst_analytic) {
            s.worst_analytic = a;
            s.worst_analytic_row = i;
        }
    }
    s.med_table = median(et, s.n);
    s.med_analytic = median(ea, s.n);
    return s;
}

int cost_accuracy_by_class(const cost_check_row *rows, int n, cost_accuracy **out)
{
    cost_accuracy *acc = calloc((size_t)n + 1, sizeof *acc);
    double *et = calloc((size_t)n + 1, sizeof *et), *ea = calloc((size_t)n + 1, sizeof *ea);
    if (!acc || !et || !ea)
        abort(); /* out of host memory: nothing sensible to report */
    int k = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(rows[j].cls, rows[i].cls);
        if (!seen)
            acc[k++] = class_stats(rows, n, rows[i].cls, et, ea);
    }
    acc[k++] = class_stats(rows, n, "", et, ea);
    free(et);
    free(ea);
    *out = acc;
    return k;
}

void cost_accuracy_print(const cost_check_row *rows, int n, FILE *out)
{
    fprintf(out, "%-22s %-32s %-44s %11s %11s %7s %11s %7s\n", "table", "class", "row",
            "measured_us", "table_us", "err", "analytic_us", "err");
    for (int i = 0; i < n; i++) {
        const cost_check_row *r = &rows[i];
        fprintf(out, "%-22s %-32s %-44.44s %11.2f %11.2f %6.1f%% %11.2f %6.1f%%%s\n", r->table,
                r->cls, r->label, r->measured_s * 1e6, r->table_s * 1e6,
                100 * (r->table_s / r->measured_s - 1), r->analytic_s * 1e6,
                100 * (r->analytic_s / r->measured_s - 1),
                r->refused ? "  (refused: above the device's ceilings)"
                           : noisy(r) ? "  (noisy)" : "");
    }
    cost_accuracy *acc;
    int k = cost_accuracy_by_class(rows, n, &acc);
    fprintf(out, "\nrelative error of time per call; table model with the row's size left "
                 "out of its series\n");
    fprintf(out, "%-32s %5s %6s %7s  %-19s %-19s\n", "class", "rows", "noisy", "refused",
            "table med / worst", "analytic med / worst");
    for (int i = 0; i < k; i++)
        fprintf(out, "%-32s %5d %6d %7d  %6.1f%% / %6.1f%%   %6.1f%% / %6.1f%%\n",
                acc[i].cls[0] ? acc[i].cls : "all", acc[i].n, acc[i].noisy, acc[i].refused,
                100 * acc[i].med_table, 100 * acc[i].worst_table, 100 * acc[i].med_analytic,
                100 * acc[i].worst_analytic);
    fprintf(out, "(noisy: the row's repeat on another machine start differs by more than "
                 "%.0f %%; in the medians, not in the worst)\n", 100 * COST_NOISE);
    free(acc);
}

/* The median of the |errors| of the rows that pick(row) accepts (-1: none). */
static double median_where(const cost_check_row *rows, int n, int analytic, const char *table)
{
    double *v = calloc((size_t)n + 1, sizeof *v);
    if (!v)
        abort(); /* out of host memory: nothing sensible to report */
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!rows[i].refused && (!table || strcmp(rows[i].table, table) == 0))
            v[m++] = rel_err(analytic ? rows[i].analytic_s : rows[i].table_s, rows[i].measured_s);
    double med = m > 0 ? median(v, m) : -1;
    free(v);
    return med;
}

json_t *cost_source_errors(const platform *p, cp_err *err)
{
    cost_check_row *rows;
    int n = cost_check_calibration(p, &rows, err);
    if (n < 0)
        return NULL;
    json_t *j = json_object();
    for (int i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "table:%s", rows[i].table);
        if (!json_object_get(j, key))
            json_object_set_new(j, key, json_real(median_where(rows, n, 0, rows[i].table)));
    }
    json_object_set_new(j, "roofline", json_real(median_where(rows, n, 1, NULL)));
    json_object_set_new(j, "derived", json_real(median_where(rows, n, 0, "elementwise.csv")));
    free(rows);
    return j;
}

json_t *cost_accuracy_json(const cost_check_row *rows, int n)
{
    json_t *j = json_object(), *jr = json_array(), *jc = json_array();
    for (int i = 0; i < n; i++) {
        const cost_check_row *r = &rows[i];
        json_t *o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f}", "table", r->table, "class",
                              r->cls, "row", r->label, "measured_s", r->measured_s, "table_s",
                              r->table_s, "analytic_s", r->analytic_s);
        if (r->repeat_s > 0)
            json_object_set_new(o, "repeat_s", json_real(r->repeat_s));
        json_object_set_new(o, "noisy", json_boolean(noisy(r)));
        json_object_set_new(o, "refused", json_boolean(r->refused));
        json_array_append_new(jr, o);
    }
    cost_accuracy *acc;
    int k = cost_accuracy_by_class(rows, n, &acc);
    for (int i = 0; i < k; i++)
        json_array_append_new(
            jc, json_pack("{s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f}", "class",
                          acc[i].cls[0] ? acc[i].cls : "all", "rows", acc[i].n, "noisy",
                          acc[i].noisy, "refused", acc[i].refused, "table_median",
                          acc[i].med_table, "table_worst",
                          acc[i].worst_table, "analytic_median", acc[i].med_analytic,
                          "analytic_worst", acc[i].worst_analytic));
    free(acc);
    json_object_set_new(j, "schema", json_string("cpsim.accuracy/1"));
    json_object_set_new(j, "classes", jc);
    json_object_set_new(j, "rows", jr);
    return j;
}
