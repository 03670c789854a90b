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
#include "models/cost_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cost_profile.h"
#include "base/datadir.h"

/* ---- series ------------------------------------------------------------------ */

/* A fused implementation of a bandwidth-bound class (or of the routing's
 * top-k, permute and unpermute). */
static int fused_bytes_kernel(const plan_op *op)
{
    if (op->impl != IMPL_FUSED && op->impl != IMPL_FUSED_ADD && op->impl != IMPL_FUSED_KV_WRITE)
        return 0;
    cost_kk kk = cost_kk_of_kclass[op->kclass];
    return kk != KK_GEMM && kk != KK_BMM && kk != KK_MOE && kk != KK_ATTN &&
           kk != KK_SPARSE && kk != KK_ROOFLINE;
}

static cost_kk kind_of(const plan_op *op)
{
    if (fused_bytes_kernel(op))
        return KK_FUSED;
    cost_kk kk = cost_kk_of_kclass[op->kclass];
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
                                   : cost_mask_pairs((double)op->attn.q_len,
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
        k = (series_key){{op->qscale, cost_kernels(op), (double)op->in.d[1]}};
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
double cost_table_time(const cost_model *c, const plan_op *op, cost_kk kk, int leave_out,
                         lookup *lk)
{
    *lk = (lookup){0, CS_ROOFLINE, 0, 0};
    if (!c->calibrated || kk == KK_ROOFLINE || kk == KK_BMM || kk == KK_FUSED)
        return 0;
    *lk = table_ratio(c, op, kk, leave_out);
    if (lk->ratio <= 0)
        return 0;
    double a_ref = cost_analytic(c, &c->ref, op, kk), a_dev = cost_analytic(c, &c->dev, op, kk);
    double t_ref = fmax(lk->ratio * a_ref, lk->floor_ref);
    return a_ref > 0 ? t_ref * a_dev / a_ref : t_ref;
}

static double kernel_time(const cost_model *c, const plan_op *op, cost_kk kk, int leave_out,
                          lookup *lk)
{
    double t = cost_table_time(c, op, kk, leave_out, lk);
    if (t > 0 && kk == KK_DECODE && op->attn.unfolded) {
        /* the decode rows ran GQA-folded (flash_attn_with_kvcache); a varlen
         * call's decodes keep the rows' deviation from the analytic model
         * and take the analytic model's unfolded time */
        plan_op f = *op;
        f.attn.unfolded = 0;
        double folded = cost_analytic(c, &c->dev, &f, kk);
        if (folded > 0)
            t *= cost_analytic(c, &c->dev, op, kk) / folded;
    }
    if (t > 0)
        return t;
    *lk = (lookup){0, kk == KK_FUSED ? CS_DERIVED : CS_ROOFLINE, 0, 0};
    return cost_analytic(c, &c->dev, op, kk);
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

const cost_rows *cost_profile_rows(const char *profile, cp_err *err)
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
int cost_row_impossible(const cost_dev *ref, const cost_row *r)
{
    double t = r->t_kernel > 0 ? r->t_kernel : r->t_graph > 0 ? r->t_graph : r->t_eager;
    if (!(t > 0))
        return 0;
    return r->op.flops / t > cost_dev_peak(ref, r->op.dtype) ||
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
    const cost_rows *rs = cost_profile_rows(profile, err);
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
        if (r->t_kernel <= 0 || cost_row_impossible(&c->ref, r))
            continue;
        double lr = log(r->t_kernel / cost_analytic(c, &c->ref, &r->op, r->kk));
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
    if (c && !(c->memo = cost_memo_new())) {
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
    return is_compute(op) ? cost_analytic(c, &c->dev, op, kind_of(op)) : 0;
}

double cost_launch_s(const cost_model *c, const plan_op *op, int graph)
{
    if (op->kind == OPK_MEM || op->kind == OPK_STEP)
        return 0;
    return cost_launches(op) * (graph && !op->eager ? c->launch_graph : c->launch_eager);
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
                             (eager ? cost_launches(op) * COST_EAGER_GAP : 0);
                op->cost_table = (uint8_t)src;
                op->cost_dist = (float)dist;
                op->eager_gap = (uint8_t)(eager && cost_launches(op) > 0);
            }
            op->launch_s = cost_launch_s(c, op, graph);
        }
    }
}
