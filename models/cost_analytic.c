/* cost_analytic: the analytic models of the cost model (models/cost.c says
 * what each one is and how it was fitted) and their constants. */
#include "models/cost_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
const cost_kk cost_kk_of_kclass[KC_COUNT] = {
    [KC_GEMM] = KK_GEMM, [KC_GROUPED_GEMM] = KK_BMM, [KC_MOE_GEMM] = KK_MOE,
    [KC_ATTENTION] = KK_ATTN, [KC_SPARSE_ATTN] = KK_SPARSE, [KC_INDEXER] = KK_ROOFLINE,
    [KC_NORM] = KK_NORM, [KC_ELEMENTWISE] = KK_ADD, [KC_ACTIVATION] = KK_SILU_MUL,
    [KC_ROPE] = KK_ROPE, [KC_TOPK] = KK_TOPK, [KC_EMBEDDING] = KK_COPY,
    [KC_KV_WRITE] = KK_COPY, [KC_LSE_MERGE] = KK_LSE, [KC_MOE_PERMUTE] = KK_PERMUTE,
    [KC_MOE_UNPERMUTE] = KK_UNPERMUTE, [KC_ACT_QUANT] = KK_QUANT, [KC_COPY] = KK_COPY,
    [KC_GELU] = KK_GELU, [KC_LAYER_NORM] = KK_LNORM,
};

/* ---- analytic models ---------------------------------------------------- */

/* Peak of a dtype; dtypes without a tensor rate of their own (weight-only
 * int4, fp32 accumulation) compute in bf16. */
double cost_dev_peak(const cost_dev *d, int dtype)
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
    return T0 + fmax(op->flops / (cost_dev_peak(d, op->dtype) * eff), mem_floor(d, op));
}

int cost_kernels(const plan_op *op)
{
    return op->nkern > 1 ? op->nkern : 1;
}

/* Kernels the op launches itself: none for a part of another's launch. */
int cost_launches(const plan_op *op)
{
    return op->shared_launch ? 0 : cost_kernels(op);
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
    double rate = cost_dev_peak(d, op->dtype) * d->eff_gemm;
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
double cost_mask_pairs(double q, double kv, int causal)
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
            head = nq * ATTN_C0 + cost_mask_pairs(g->q, g->kv, 1) / (g->br * g->bc) * g->step;
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
    double rate = cost_dev_peak(d, op->dtype) * d->eff_attention;
    double q = (double)a->q_len, kv = (double)a->kv_len;
    double geom = B * cost_mask_pairs(q, kv, a->causal);
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
    if (kk == KK_QUANT && cost_kernels(op) == 1)
        rel = mem_rel[KK_COPY]; /* a single-pass quantisation kernel: a copy's speed
                                   (not measured; the table's rows are the
                                   unfused ops) */
    double t = op->bytes / (d->hbm_bw * d->eff_memory * rel);
    if (d->vector_flops > 0)
        t = fmax(t, op->flops / d->vector_flops);
    return cost_kernels(op) * MEM_T0 + t;
}

/* Analytic time of op of kind kk on device d (c: the model, for its memo). */
double cost_analytic(const cost_model *c, const cost_dev *d, const plan_op *op, cost_kk kk)
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

attn_memo *cost_memo_new(void)
{
    return calloc(1, sizeof(attn_memo));
}
