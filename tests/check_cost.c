/* check_cost: the compute cost model (models/cost.c) and the calibration
 * table reader (base/calib.c), against the H200 profile. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/build/build.h"
#include "base/calib.h"
#include "models/cost.h"
#include "models/quant.h"
#include "workloads/workload.h"

#ifndef CP_SRCDIR
#define CP_SRCDIR "."
#endif

/* Constants of models/cost.c that some checks below compute with. */
#define KERNEL_T0 3.1e-6     /* T0: fixed time of a GEMM or bandwidth-bound kernel */
#define ATTN_T0 11.5e-6      /* ATTN_T0: fixed time of an attention call */
#define EAGER_GAP 1.6e-6     /* EAGER_GAP: device time added per eager kernel */

/* H200 SXM as the calibration profile saw it.  Peaks and HBM bandwidth:
 * models-hardware.md section 3.1; 132 SMs: platforms/calibration/h200/
 * machine.json; launch_eager 13 us: calibration README ("launch rate
 * ~12-14 us per call"); launch_graph 1 us: chosen below the smallest
 * graph-replayed kernel (expert_down M=256, 5.42 us in gemm_graph.csv), as
 * the device-side cost of a graph node is inside the kernel's fixed time;
 * efficiencies: the fit documented in models/cost.c, as the profile's
 * machine.json reference_device gives them. */
static platform h200(void)
{
    platform p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "h200-check");
    snprintf(p.source, sizeof p.source, "tests/check_cost.c");
    p.peak_flops[DT_BF16] = p.peak_flops[DT_FP16] = 989.4e12;
    p.peak_flops[DT_FP8] = p.peak_flops[DT_INT8] = 1978.9e12;
    p.hbm_bw = 4.8e12;
    p.sm_count = 132;
    p.launch_eager = 13e-6;
    p.launch_graph = 1e-6;
    p.eff_gemm = 0.737;
    p.eff_attention = 0.364;
    p.eff_memory = 0.889;
    snprintf(p.calibration, sizeof p.calibration, "h200");
    return p;
}

/* H100 SXM: same die and peaks, 3.35 TB/s HBM3 (models-hardware.md 3.1). */
static platform h100(void)
{
    platform p = h200();
    snprintf(p.name, sizeof p.name, "h100-check");
    p.hbm_bw = 3.35e12;
    return p;
}

static cost_model *model_of(const platform *p)
{
    cp_err err = {0};
    cost_model *c = cost_new(p, &err);
    ck_assert_msg(c != NULL, "cost_new: %s", err.msg);
    return c;
}

static plan_op gemm_op(int64_t m, int64_t k, int64_t n, cp_dtype dt)
{
    plan_op op;
    memset(&op, 0, sizeof op);
    op.name = "gemm";
    op.kind = OPK_COMPUTE;
    op.kclass = KC_GEMM;
    op.dtype = (uint8_t)dt;
    op.m = m;
    op.k = k;
    op.n = n;
    op.g = 1;
    op.flops = 2.0 * (double)m * (double)k * (double)n;
    op.bytes = dtype_bytes(dt) * (double)(m * k + k * n + m * n);
    return op;
}

static plan_op grouped_op(int64_t g, int64_t m, int64_t k, int64_t n)
{
    plan_op op = gemm_op(m, k, n, DT_BF16);
    op.kclass = KC_GROUPED_GEMM;
    op.g = g;
    op.flops *= (double)g;
    op.bytes *= (double)g;
    return op;
}

/* Attention call with q <= kv (bottom-right aligned causal mask). */
static plan_op attn_op(int64_t q, int64_t kv, int causal, int64_t heads, int64_t kvh, int64_t d)
{
    plan_op op;
    memset(&op, 0, sizeof op);
    op.name = "attention";
    op.kind = OPK_COMPUTE;
    op.kclass = KC_ATTENTION;
    op.dtype = DT_BF16;
    op.attn.q_len = q;
    op.attn.kv_len = kv;
    op.attn.causal = (uint8_t)causal;
    op.attn.heads = heads;
    op.attn.kv_heads = kvh;
    op.attn.d_qk = op.attn.d_v = d;
    double off = (double)(kv - q);
    op.attn.pairs = causal ? (double)q * off + (double)q * (double)(q + 1) / 2
                           : (double)q * (double)kv;
    op.flops = 4.0 * op.attn.pairs * (double)heads * (double)d;
    op.bytes = 2.0 * (double)d * (double)(2 * q * heads + 2 * kv * kvh);
    return op;
}

static plan_op bytes_op(plan_kclass kc, double bytes)
{
    plan_op op;
    memset(&op, 0, sizeof op);
    op.name = "bytes";
    op.kind = OPK_COMPUTE;
    op.kclass = (uint8_t)kc;
    op.dtype = DT_BF16;
    op.bytes = bytes;
    return op;
}

/* ---- calibration accuracy ---------------------------------------------- */

/* Leave-one-out error bounds per class of priced kernels: the project's
 * target is a median of at most 5 % and no row beyond 20 % (rows whose own
 * repeat differs by more than COST_NOISE are left out of the worst row);
 * the classes listed with wider bounds do not meet it yet, and the bound
 * is what they reach, so that they cannot get worse unnoticed.  Why they
 * miss: gemm, series of 4x-spaced sizes whose two machine starts differ by
 * up to 18 % (power cap, calibration README); rms_norm, one series for two
 * hidden sizes that run at 3.7 and 3.2 TB/s; 8-bit GEMMs, router, top-k,
 * permute and act_quant rows, the small-M/small-T end of 4x- or 16x-spaced
 * series where the kernels' fixed costs are not the analytic model's;
 * expert GEMMs and decode, the tile-padding and split-KV knees between
 * measured sizes.  Eager rows of the single-GPU tables (host-bound, up to
 * 2x apart between starts, README) and kernels the plans never run (exact
 * accumulation fp8, permute_gather, the index_add unpermute, other calls
 * of FA2) are reported, not bounded. */
static const struct {
    const char *cls;
    double med, worst;
} bounds[] = {
    /* the audio encoder's fc2 at M = 256 (K 5120, N 1280), the small end of
     * its series, left out: held at M = 1024's ratio, 33.6 % */
    {"gemm_graph", 0.055, 0.34},
    /* the audio encoder's qkv at TP4 (K 1280, N 960), M = 256, eager: 13 us,
     * launch-bound, its series' small end left out, 31 % */
    {"gemm_eager", 0.05, 0.32},
    /* attention_backends.csv's 8-head FA2 call at 1K, the small end of its
     * series: held at its neighbour's ratio, 22 % */
    {"attention_eager", 0.05, 0.23},
    /* cuDNN's fused kernel (attention_backends.csv), priced from its rows */
    {"attention_cudnn_eager", 0.05, 0.45},
    {"attention_cp_graph", 0.05, 0.20},
    {"attention_cp_eager", 0.05, 0.20},
    /* B=8 at kv 1024, the small end of its series, held at kv 4096's ratio */
    {"decode_attention_graph", 0.05, 0.63},
    {"copy_eager", 0.05, 0.20},
    {"add_eager", 0.05, 0.20},
    {"rms_norm_eager", 0.095, 0.20},
    {"silu_mul_eager", 0.05, 0.20},
    {"rope_unfused_eager", 0.05, 0.20},
    {"lse_merge2_unfused_eager", 0.05, 0.20},
    {"gelu_eager", 0.05, 0.20},
    /* four rows: the 4K-row call (16.8 us) left out is priced between the
     * launch-bound 1K-row call (17.7 us) and the 16K one, 55 % */
    {"layer_norm_eager", 0.17, 0.56},
    /* conv.csv: the graph replay of one image (13 us, launch-bound) left
     * out is priced at four images' ratio, 67 % */
    {"conv_eager", 0.05, 0.20},
    {"conv_graph", 0.05, 0.68},
    {"gemm_fp8_tensor_graph", 0.05, 0.20},
    {"gemm_fp8_row_graph", 0.105, 0.53},
    {"gemm_fp8_block_graph", 0.077, 0.67},
    {"gemm_int8_graph", 0.092, 0.29},
    {"act_quant_row_graph", 0.067, 0.22},
    {"act_quant_block_graph", 0.05, 0.20},
    {"moe_gemm_graph", 0.05, 0.35},
    /* glm5's router at T = 128, left out, interpolated from T = 64, whose
     * analytic time halved with the small-M tile (cost.c GEMM_TILE_M_STEP)
     * while the kernel's stayed flat: 33.9 % -> 36.1 % */
    {"moe_router_graph", 0.055, 0.37},
    {"moe_topk_graph", 0.05, 0.27},
    {"moe_permute_graph", 0.053, 0.26},
    {"activation_graph", 0.05, 0.20},
    {"moe_unpermute_graph", 0.05, 0.20},
    /* the decode-size tables (one machine start): graph replay rows */
    {"gemm_decode_graph", 0.05, 0.20},
    {"gemm_fp8_tensor_decode_graph", 0.05, 0.20},
    {"gemm_fp8_row_decode_graph", 0.05, 0.20},
    {"moe_gemm_decode_graph", 0.06, 0.31},
    {"moe_topk_decode_graph", 0.05, 0.20},
    {"copy_decode_graph", 0.19, 0.39},
    {"rope_unfused_decode_graph", 0.10, 0.20},
    {"lse_merge2_unfused_decode_graph", 0.05, 0.20},
};

START_TEST(test_calibration_accuracy)
{
    platform p = h200();
    cost_check_row *rows;
    cp_err err = {0};
    int n = cost_check_calibration(&p, &rows, &err);
    ck_assert_msg(n > 0, "cost_check_calibration: %s", err.msg);
    cost_accuracy *acc;
    int k = cost_accuracy_by_class(rows, n, &acc);
    printf("\ncalibration h200: relative error of time per call (table model: row left out)\n");
    printf("%-28s %5s %6s  %-19s %-19s\n", "class", "rows", "noisy", "table med / worst",
           "analytic med / worst");
    for (int i = 0; i < k; i++)
        printf("%-28s %5d %6d  %6.1f%% / %6.1f%%   %6.1f%% / %6.1f%%\n",
               acc[i].cls[0] ? acc[i].cls : "all", acc[i].n, acc[i].noisy,
               100 * acc[i].med_table, 100 * acc[i].worst_table, 100 * acc[i].med_analytic,
               100 * acc[i].worst_analytic);
    for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
        const cost_accuracy *a = NULL;
        for (int i = 0; i < k; i++)
            if (!strcmp(acc[i].cls, bounds[b].cls))
                a = &acc[i];
        ck_assert_msg(a && a->n > 0, "no rows of class %s", bounds[b].cls);
        /* figures are quoted to 0.1 %: a median that prints as 5.0 % meets 5 % */
        ck_assert_msg(a->med_table < bounds[b].med + 5e-4, "%s: table median %.4f > %.3f",
                      a->cls, a->med_table, bounds[b].med);
        ck_assert_msg(a->worst_table < bounds[b].worst + 5e-4, "%s: table worst %.4f > %.3f (%s)",
                      a->cls, a->worst_table, bounds[b].worst,
                      rows[a->worst_table_row].label);
    }
    free(acc);
    free(rows);
}
END_TEST

/* ---- table model and cross-device rule ---------------------------------- */

/* At a measured point the table returns the measurement: the graph kernel
 * time of a GEMM (measured on two machine starts, gemm_graph.csv and the
 * bf16 rows of gemm_fp8.csv: their geometric mean), the eager time of an
 * attention call (priced eagerly; attention.csv and the FA2 row of
 * attention_backends.csv: their geometric mean, each less the eager gap). */
START_TEST(test_table_reproduces_rows)
{
    platform p = h200();
    cost_model *c = model_of(&p);
    plan_op q = gemm_op(4096, 2048, 5120, DT_BF16);   /* gemm_graph.csv qkv_proj */
    ck_assert_double_eq_tol(cost_kernel_s(c, &q), sqrt(123.187e-6 * 131.863e-6), 1e-12);

    plan_op a = attn_op(16384, 16384, 1, 32, 4, 128); /* attention.csv causal_square */
    plan_prog prog = {.ops = &a, .nops = 1, .cap = 1};
    int rank0 = 0;
    plan pl = {.nranks = 1, .progs = &prog, .nprogs = 1, .prog_of_rank = &rank0};
    cost_price_plan(c, &pl, 0);
    ck_assert_double_eq_tol(a.cost_s,
                            sqrt((6405.06e-6 - 1.6e-6) * (6560.7042e-6 - 1.6e-6)) + 1.6e-6,
                            1e-11);

    /* Between rows the table differs from the analytic model, and stays
     * between its neighbours. */
    plan_op mid = gemm_op(2048, 2048, 5120, DT_BF16);
    double t = cost_kernel_s(c, &mid);
    ck_assert(t > 31.3899e-6 && t < 123.187e-6);
    ck_assert(fabs(t / cost_kernel_analytic_s(c, &mid) - 1) > 1e-6);
    cost_free(c);
}
END_TEST

START_TEST(test_uncalibrated_is_analytic)
{
    platform p = h200();
    p.calibration[0] = '\0';
    cost_model *bare = model_of(&p);
    platform pc = h200();
    cost_model *cal = model_of(&pc);
    plan_op ops[] = {gemm_op(4096, 2048, 5120, DT_BF16), attn_op(4096, 4096, 1, 32, 4, 128),
                     bytes_op(KC_NORM, 134221824)};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        ck_assert_double_eq(cost_kernel_s(bare, &ops[i]), cost_kernel_analytic_s(bare, &ops[i]));
        ck_assert_double_eq(cost_kernel_analytic_s(bare, &ops[i]),
                            cost_kernel_analytic_s(cal, &ops[i]));
        ck_assert(cost_kernel_s(cal, &ops[i]) != cost_kernel_s(bare, &ops[i]));
    }
    cost_free(bare);
    cost_free(cal);
}
END_TEST

/* A calibration profile is data: a folder anywhere (by path) with its
 * tables and a machine.json whose reference_device says what measured
 * them.  The same rows said to come from a device of twice the peaks price
 * a large GEMM at about twice the time on the same target (half the peaks
 * would make the fastest rows impossible: refused, row_impossible); without
 * the description the folder is refused, naming the file.  (Not exactly
 * twice: the analytic model's per-tile times do not scale with the peak.) */
START_TEST(test_profile_folder_is_data)
{
    char dir[] = "/tmp/cpsim-prof-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp -r %s/platforms/calibration/h200 %s/half && "
             "sed -i 's/\"bf16\": 989.4e12/\"bf16\": 1978.8e12/' %s/half/machine.json && "
             "cp -r %s/platforms/calibration/h200 %s/bare && "
             "python3 -c \"import json,sys; p=sys.argv[1]; d=json.load(open(p)); "
             "d.pop('reference_device'); json.dump(d, open(p, 'w'))\" %s/bare/machine.json",
             CP_SRCDIR, dir, dir, CP_SRCDIR, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    platform p = h200(), half = h200(), bare = h200();
    snprintf(half.calibration, sizeof half.calibration, "%s/half", dir);
    snprintf(bare.calibration, sizeof bare.calibration, "%s/bare", dir);
    cost_model *c = model_of(&p), *ch = model_of(&half);
    plan_op op = gemm_op(16384, 8192, 8192, DT_BF16);
    double t = cost_kernel_s(c, &op), th = cost_kernel_s(ch, &op);
    ck_assert_msg(th / t > 1.5 && th / t < 2.2, "double-peak reference: %g s against %g s", th,
                  t);
    cost_free(c);
    cost_free(ch);
    cp_err err = {0};
    ck_assert_ptr_null(cost_new(&bare, &err));
    ck_assert_msg(strstr(err.msg, "/bare/machine.json: no reference_device"), "%s", err.msg);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A profile with a sparse_attention.csv table prices the DSA sparse
 * attention from it: a copy of the h200 profile plus a table whose rows run
 * 1.5x the analytic time of their shape. */
START_TEST(test_sparse_attention_table)
{
    char dir[] = "/tmp/cpsim-cost-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/platforms/calibration && cp -r %s/platforms/calibration/h200 "
             "%s/platforms/calibration/",
             dir, CP_SRCDIR, dir);
    ck_assert_int_eq(system(cmd), 0);
    /* the data directory is chosen, and a profile read, once per process:
     * the analytic times come from an uncalibrated model (the same device) */
    setenv("CPSIM_DATADIR", dir, 1);
    platform p = h200();
    platform un = h200();
    un.calibration[0] = '\0';
    cost_model *bare = model_of(&un);
    /* GLM-5.1 under DSA CP: 64 heads over 512+64 latent dims, top-2048 */
    static const int64_t ctx[] = {4096, 16384, 65536};
    char path[512];
    snprintf(path, sizeof path, "%s/platforms/calibration/h200/sparse_attention.csv", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "q_len,ctx,topk,heads,d_qk,d_v,time_us\n");
    for (int i = 0; i < 3; i++) {
        plan_op op = {.kind = OPK_COMPUTE, .kclass = KC_SPARSE_ATTN, .dtype = DT_BF16};
        op.attn = (plan_attn){.q_len = ctx[i], .kv_len = ctx[i], .heads = 64, .kv_heads = 1,
                              .d_qk = 576, .d_v = 512, .causal = 1};
        double n = 2048;
        op.attn.pairs = n * (n + 1) / 2 + (double)(ctx[i] - 2048) * n;
        op.flops = op.attn.pairs * 2.0 * 64 * (576 + 512);
        op.bytes = op.attn.pairs * 576 * 2.0 + (double)ctx[i] * 64 * (576 + 512) * 2.0;
        /* eager time of a call: 1.5 x the analytic kernel plus the eager gap */
        fprintf(f, "%lld,%lld,2048,64,576,512,%.6f\n", (long long)ctx[i], (long long)ctx[i],
                1e6 * (1.5 * cost_kernel_analytic_s(bare, &op)) + 1.6);
    }
    fclose(f);
    cost_free(bare);
    cost_model *c = model_of(&p);
    plan_op q = {.kind = OPK_COMPUTE, .kclass = KC_SPARSE_ATTN, .dtype = DT_BF16};
    q.attn = (plan_attn){.q_len = 8192, .kv_len = 8192, .heads = 64, .kv_heads = 1,
                         .d_qk = 576, .d_v = 512, .causal = 1};
    q.attn.pairs = 2048.0 * 2049 / 2 + (8192.0 - 2048) * 2048;
    q.flops = q.attn.pairs * 2.0 * 64 * 1088;
    q.bytes = q.attn.pairs * 576 * 2.0 + 8192.0 * 64 * 1088 * 2.0;
    ck_assert_double_eq_tol(cost_kernel_s(c, &q) / cost_kernel_analytic_s(c, &q), 1.5, 1e-9);
    /* another head count is another series: analytic */
    q.attn.heads = 32;
    ck_assert_double_eq(cost_kernel_s(c, &q), cost_kernel_analytic_s(c, &q));
    cost_check_row *rows = NULL;
    cp_err err = {0};
    int n = cost_check_calibration(&p, &rows, &err);
    int sparse = 0;
    for (int i = 0; i < n; i++)
        sparse += strcmp(rows[i].table, "sparse_attention.csv") == 0;
    ck_assert_int_eq(sparse, 3);
    free(rows);
    cost_free(c);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_h100_vs_h200)
{
    platform p2 = h200(), p1 = h100();
    cost_model *c2 = model_of(&p2), *c1 = model_of(&p1);
    plan_op ops[] = {   /* 8 compute ops, then 8 bandwidth-bound ones */
        gemm_op(256, 2048, 128, DT_BF16),       gemm_op(65536, 2048, 128, DT_BF16),
        gemm_op(16384, 6144, 4096, DT_BF16),    gemm_op(3000, 7168, 1536, DT_BF16),
        gemm_op(8192, 8192, 8192, DT_FP8),      grouped_op(8, 300, 2048, 768),
        attn_op(8192, 8192, 1, 32, 4, 128),     attn_op(5000, 20000, 1, 8, 1, 128),
        bytes_op(KC_NORM, 1073745920),          bytes_op(KC_NORM, 4e6),
        bytes_op(KC_ELEMENTWISE, 3221225472.0), bytes_op(KC_COPY, 2e8),
        bytes_op(KC_ROPE, 268435456),           bytes_op(KC_LSE_MERGE, 4e8),
        bytes_op(KC_KV_WRITE, 5e7),             bytes_op(KC_TOPK, 1e6),
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        double t1 = cost_kernel_s(c1, &ops[i]), t2 = cost_kernel_s(c2, &ops[i]);
        ck_assert_msg(t1 >= t2, "op %zu: H100 %g s faster than H200 %g s", i, t1, t2);
        ck_assert_msg(i < 8 || t1 > t2, "op %zu: bandwidth-bound, H100 not slower", i);
    }
    /* Memory-bound: slower by about the bandwidth ratio 4.8 / 3.35 = 1.43. */
    plan_op norm = bytes_op(KC_NORM, 1073745920);
    double r = cost_kernel_s(c1, &norm) / cost_kernel_s(c2, &norm);
    ck_assert_msg(r > 1.35 && r < 1.44, "norm H100/H200 = %g", r);
    plan_op router = gemm_op(65536, 2048, 128, DT_BF16);
    ck_assert(cost_kernel_s(c1, &router) > 1.2 * cost_kernel_s(c2, &router));
    /* Compute-bound: equal. */
    plan_op big = gemm_op(16384, 6144, 4096, DT_BF16);
    ck_assert_double_eq_tol(cost_kernel_s(c1, &big), cost_kernel_s(c2, &big), 1e-15);
    plan_op att = attn_op(32768, 32768, 1, 32, 4, 128);
    ck_assert_double_eq_tol(cost_kernel_s(c1, &att), cost_kernel_s(c2, &att), 1e-15);
    cost_free(c1);
    cost_free(c2);
}
END_TEST

START_TEST(test_fp8_twice_bf16)
{
    platform p = h100();
    cost_model *c = model_of(&p);
    plan_op b = gemm_op(16384, 6144, 4096, DT_BF16), f = gemm_op(16384, 6144, 4096, DT_FP8);
    double r = cost_kernel_s(c, &b) / cost_kernel_s(c, &f);
    ck_assert_msg(r > 1.8 && r < 2.2, "bf16 / fp8 = %g", r);
    /* fp8 never uses the bf16 tables: analytic. */
    ck_assert_double_eq(cost_kernel_s(c, &f), cost_kernel_analytic_s(c, &f));
    cost_free(c);
}
END_TEST

/* ---- analytic model ------------------------------------------------------ */

START_TEST(test_grouped_gemm)
{
    platform p = h200();
    cost_model *c = model_of(&p);
    /* 8 experts of 100 rows (qwen3-30b-a3b expert gate_up, K 2048, N 1536). */
    plan_op grp = grouped_op(8, 100, 2048, 1536), one = gemm_op(100, 2048, 1536, DT_BF16);
    plan_op all = gemm_op(800, 2048, 1536, DT_BF16);
    double tg = cost_kernel_s(c, &grp);
    ck_assert(tg + p.launch_eager < 8 * (cost_kernel_s(c, &one) + p.launch_eager));
    ck_assert(tg < 8 * cost_kernel_s(c, &one));
    /* Each group pads its rows to whole tiles: more than one GEMM of 800 rows. */
    ck_assert(tg > cost_kernel_s(c, &all));
    ck_assert(cost_kernel_analytic_s(c, &grp) > cost_kernel_analytic_s(c, &all));
    /* Whole tiles per group, compute-bound: the same as one GEMM. */
    plan_op grp2 = grouped_op(4, 4096, 4096, 4096), all2 = gemm_op(16384, 4096, 4096, DT_BF16);
    ck_assert_double_eq_tol(cost_kernel_analytic_s(c, &grp2), cost_kernel_analytic_s(c, &all2),
                            1e-15);
    cost_free(c);
}
END_TEST

START_TEST(test_gemm_small_shapes)
{
    platform p = h200();
    p.calibration[0] = '\0';
    cost_model *c = model_of(&p);
    /* 1/16 of the work on 8 instead of 128 tiles: the fixed costs and the
     * split-k fix-ups keep it well above 1/16 of the time. */
    plan_op small = gemm_op(128, 4096, 1024, DT_BF16), full = gemm_op(2048, 4096, 1024, DT_BF16);
    double ts = cost_kernel_s(c, &small), tf = cost_kernel_s(c, &full);
    ck_assert_msg(tf / ts < 8.0, "full / small = %g", tf / ts);
    /* Without an SM count, compute-bound time is proportional to work. */
    p.sm_count = 0;
    cost_model *flat = model_of(&p);
    plan_op a = gemm_op(1024, 8192, 1024, DT_BF16), b = gemm_op(16384, 8192, 1024, DT_BF16);
    double r = (cost_kernel_s(flat, &b) - KERNEL_T0) / (cost_kernel_s(flat, &a) - KERNEL_T0);
    ck_assert_double_eq_tol(r, 16.0, 1e-9);
    ck_assert(cost_kernel_s(flat, &small) < ts);
    /* N = 576 is tiled 3 x 192, not 5 x 128: no padded tile. */
    plan_op n576 = gemm_op(4096, 6144, 576, DT_BF16), n640 = gemm_op(4096, 6144, 640, DT_BF16);
    ck_assert(cost_kernel_s(c, &n576) < 0.95 * cost_kernel_s(c, &n640));
    cost_free(c);
    cost_free(flat);
}
END_TEST

START_TEST(test_attention_ramp)
{
    platform p = h200();
    p.calibration[0] = '\0';
    cost_model *c = model_of(&p);
    /* Achieved flop/s grows with length and is lower for causal masks. */
    double prev = 0;
    for (int64_t l = 1024; l <= 65536; l *= 4) {
        plan_op a = attn_op(l, l, 1, 32, 4, 128);
        double fps = a.flops / cost_kernel_s(c, &a);
        ck_assert_msg(fps > prev, "L=%lld: %g flop/s", (long long)l, fps);
        prev = fps;
    }
    plan_op cz = attn_op(2048, 2048, 1, 32, 4, 128), nc = attn_op(2048, 2048, 0, 32, 4, 128);
    ck_assert(cz.flops / cost_kernel_s(c, &cz) < 0.8 * nc.flops / cost_kernel_s(c, &nc));
    /* 33 heads x 8 query blocks fill the 264 CTA slots once; 34 heads need a
     * second round. */
    plan_op w1 = attn_op(1024, 1024, 0, 33, 1, 128), w2 = attn_op(1024, 1024, 0, 34, 1, 128);
    double r2 = (cost_kernel_s(c, &w2) - ATTN_T0) / (cost_kernel_s(c, &w1) - ATTN_T0);
    ck_assert_double_eq_tol(r2, 2.0, 1e-9);
    /* A mask attending half the pairs of its shape costs about half. */
    plan_op half = nc;
    half.attn.pairs /= 2;
    half.flops /= 2;
    double r = (cost_kernel_s(c, &half) - ATTN_T0) / (cost_kernel_s(c, &nc) - ATTN_T0);
    ck_assert_msg(r > 0.45 && r < 0.6, "half mask ratio %g", r);
    /* Very large grids take the balanced bound: continuous at the switch. */
    plan_op below = attn_op(65536, 65536, 1, 128, 8, 128);
    plan_op above = attn_op(65536 + 128, 65536 + 128, 1, 128, 8, 128);
    double ta = cost_kernel_s(c, &above), tb = cost_kernel_s(c, &below);
    ck_assert_msg(fabs(ta / tb - 1) < 0.01, "%g vs %g", ta, tb);
    cost_free(c);
}
END_TEST

START_TEST(test_roofline_kinds)
{
    platform p = h200();
    cost_model *c = model_of(&p);
    plan_op ix = bytes_op(KC_INDEXER, 1e8);
    ix.flops = 1e14;
    ix.dtype = DT_FP8;
    double t8 = cost_kernel_s(c, &ix);
    ck_assert_double_eq_tol(t8, KERNEL_T0 + 1e14 / (1978.9e12 * 0.364), 1e-12);
    ix.dtype = DT_BF16;
    ck_assert_double_eq_tol(cost_kernel_s(c, &ix), KERNEL_T0 + 1e14 / (989.4e12 * 0.364), 1e-12);
    plan_op sp = bytes_op(KC_SPARSE_ATTN, 4e10);   /* bytes-bound */
    sp.flops = 1e9;
    ck_assert_double_eq_tol(cost_kernel_s(c, &sp), KERNEL_T0 + 4e10 / (4.8e12 * 0.889), 1e-12);
    /* int4 has no tensor rate: computes at bf16. */
    plan_op w4 = gemm_op(8192, 8192, 8192, DT_INT4), w16 = gemm_op(8192, 8192, 8192, DT_BF16);
    ck_assert_double_eq(cost_kernel_analytic_s(c, &w4), cost_kernel_analytic_s(c, &w16));
    cost_free(c);
}
END_TEST

/* ---- launch and plan pricing --------------------------------------------- */

START_TEST(test_price_plan)
{
    platform p = h200();
    cost_model *c = model_of(&p);
    plan_op ops[6];
    memset(ops, 0, sizeof ops);
    ops[0].kind = OPK_STEP;
    ops[1].kind = OPK_MEM;
    ops[1].mem_bytes = 1e9;
    ops[2] = gemm_op(4096, 4096, 4096, DT_BF16);
    ops[3].kind = OPK_COLL;
    ops[3].comm_bytes = 1e6;
    ops[4].kind = OPK_P2P;
    ops[4].comm_bytes = 1e6;
    ops[5] = bytes_op(KC_NORM, 1e8);
    ops[5].eager = 1;
    plan_op ops2[2] = {ops[0], attn_op(4096, 4096, 1, 32, 4, 128)};
    plan_prog progs[2] = {{.ops = ops, .nops = 6, .cap = 6}, {.ops = ops2, .nops = 2, .cap = 2}};
    int por[2] = {0, 1};
    plan pl = {.nranks = 2, .progs = progs, .nprogs = 2, .prog_of_rank = por};
    for (int graph = 1; graph >= 0; graph--) {
        for (int i = 0; i < 6; i++)
            ops[i].cost_s = ops[i].launch_s = -1;
        ops2[1].cost_s = ops2[1].launch_s = -1;
        cost_price_plan(c, &pl, graph);
        double l = graph ? p.launch_graph : p.launch_eager;
        ck_assert(ops[0].cost_s == 0 && ops[0].launch_s == 0);
        ck_assert(ops[1].cost_s == 0 && ops[1].launch_s == 0);
        ck_assert(ops[2].cost_s > 0 && ops[2].launch_s == l);
        ck_assert(ops[3].cost_s == 0 && ops[3].launch_s == l);
        ck_assert(ops[4].cost_s == 0 && ops[4].launch_s == l);
        ck_assert(ops[5].cost_s > 0 && ops[5].launch_s == p.launch_eager);
        ck_assert(ops2[0].cost_s == 0 && ops2[1].cost_s > 0 && ops2[1].launch_s == l);
        /* Eager kernels pay the eager gap; kernels flagged eager always do. */
        double gap = graph ? 0 : EAGER_GAP;
        ck_assert_double_eq_tol(ops[2].cost_s, cost_kernel_s(c, &ops[2]) + gap, 1e-15);
        ck_assert_double_eq_tol(ops[5].cost_s, cost_kernel_s(c, &ops[5]) + EAGER_GAP, 1e-15);
        ck_assert_double_eq(cost_launch_s(c, &ops[5], graph), p.launch_eager);
    }
    cost_free(c);
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

START_TEST(test_bad_profile)
{
    platform p = h200();
    snprintf(p.calibration, sizeof p.calibration, "h2000");
    cp_err err = {0};
    ck_assert_ptr_null(cost_new(&p, &err));
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
    ck_assert_msg(strstr(err.msg, CP_SRCDIR "/platforms/calibration/h2000"), "%s", err.msg);

    cost_check_row *rows;
    cp_err err2 = {0};
    ck_assert_int_eq(cost_check_calibration(&p, &rows, &err2), -1);
    ck_assert_ptr_null(rows);
    ck_assert_ptr_nonnull(strstr(err2.msg, "h2000"));

    platform q = h200();
    snprintf(q.calibration, sizeof q.calibration, "../h200");
    cp_err err3 = {0};
    ck_assert_ptr_null(cost_new(&q, &err3));
    ck_assert_ptr_nonnull(strstr(err3.msg, "\"../h200\""));

    platform z = h200();
    z.hbm_bw = 0;
    cp_err err4 = {0};
    ck_assert_ptr_null(cost_new(&z, &err4));
    ck_assert_ptr_nonnull(strstr(err4.msg, "hbm_bw"));
}
END_TEST

/* ---- calib reader -------------------------------------------------------- */

START_TEST(test_calib_profile_tables)
{
    cp_err err = {0};
    calib_table *t = calib_load("h200", "gemm_graph", &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ck_assert_int_eq(calib_rows(t), 141);
    int m = calib_num_col(t, "M", &err), tg = calib_num_col(t, "time_us_graph", &err);
    int name = calib_col(t, "name", &err);
    ck_assert(m >= 0 && tg >= 0 && name >= 0);
    ck_assert_double_eq(calib_num(t, 0, m), 256);
    ck_assert_double_eq(calib_num(t, 80, tg), 1722.91);
    ck_assert_str_eq(calib_str(t, 80, name), "square_8192");
    ck_assert_str_eq(calib_str(t, 81, name), "qkv"); /* calib_audio.py's rows */
    ck_assert_int_lt(calib_num_col(t, "name", &err), 0);     /* text column */
    ck_assert_ptr_nonnull(strstr(err.msg, "gemm_graph.csv:2:15: column \"name\""));
    cp_err e2 = {0};
    ck_assert_int_lt(calib_col(t, "time_us_grph", &e2), 0);
    ck_assert_ptr_nonnull(strstr(e2.msg, "did you mean \"time_us_graph\""));
    calib_free(t);

    /* Quoted notes hold commas. */
    cp_err e3 = {0};
    calib_table *a = calib_load("h200", "attention", &e3);
    ck_assert_msg(a != NULL, "%s", e3.msg);
    int note = calib_col(a, "note", &e3), impl = calib_col(a, "impl", &e3);
    int found = 0;
    for (int r = 0; r < calib_rows(a); r++)
        if (!strcmp(calib_str(a, r, impl), "cudnn_sdpa")) {
            ck_assert_str_eq(calib_str(a, r, note),
                             "public SDPA API, cuDNN backend forced, K/V expanded (not timed)");
            found++;
        }
    ck_assert_int_eq(found, 2);
    calib_free(a);

    cp_err e4 = {0};
    ck_assert_ptr_null(calib_load("h200", "nope", &e4));
    ck_assert_ptr_nonnull(strstr(e4.msg, "platforms/calibration/h200/nope.csv"));
}
END_TEST

/* Write `text` to dir/t.csv; returns that path (static buffer). */
static const char *write_tmp(const char *dir, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/t.csv", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* `text` is rejected, by the reader or by calib_num_col(.., "b", ..), with an
 * input error that starts "<path><where>" and mentions `what`. */
static void expect_bad(const char *dir, const char *text, const char *where, const char *what)
{
    const char *path = write_tmp(dir, text);
    cp_err err = {0};
    calib_table *t = calib_load_file(path, &err);
    int bad = !t;
    if (t) {
        bad = calib_num_col(t, "b", &err) < 0;
        calib_free(t);
    }
    ck_assert_msg(bad, "accepted: %s", text);
    char loc[300];
    snprintf(loc, sizeof loc, "%s%s", path, where);
    ck_assert_msg(strstr(err.msg, loc) && strstr(err.msg, what), "%s", err.msg);
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
}

START_TEST(test_calib_bad_files)
{
    char dir[] = "/tmp/check_cost_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    expect_bad(dir, "a,b\n1,2\n3,1x\n", ":3:3:", "column \"b\": expected a number, found \"1x\"");
    expect_bad(dir, "a,b\n1, 2\n", ":2:3:", "expected a number");
    expect_bad(dir, "a,b\n1,inf\n", ":2:3:", "expected a number");
    expect_bad(dir, "a,b\n1,\n", ":2:3:", "expected a number, found \"\"");
    expect_bad(dir, "a,b\n1,2,3\n", ":2:1:", "3 fields, the header has 2");
    expect_bad(dir, "a,b\n1\n", ":2:1:", "1 fields, the header has 2");
    expect_bad(dir, "a,b\n\"x,1\n", ":2:1:", "unterminated quoted field");
    expect_bad(dir, "a,b\n\"x\"y,1\n", ":2:4:", "expected ',' or end of line");
    expect_bad(dir, "a,b\nx\"y,1\n", ":2:2:", "quote inside an unquoted field");
    expect_bad(dir, "a,a\n1,2\n", ":1:3:", "column \"a\" appears twice");
    expect_bad(dir, "a,,b\n1,2,3\n", ":1:3:", "empty column name");
    expect_bad(dir, "", ":", "empty table");
    expect_bad(dir, "a,c\n1,2\n", ":1:1:", "no column \"b\"");

    /* Good: CRLF, quotes with "" escapes and commas, blank lines, no final
     * newline. */
    const char *path =
        write_tmp(dir, "a,b,note\r\n1,-2.5e3,\"say \"\"hi\"\", x\"\r\n\r\n3,4,\n5,6e-1,z");
    cp_err err = {0};
    calib_table *t = calib_load_file(path, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ck_assert_int_eq(calib_rows(t), 3);
    int b = calib_num_col(t, "b", &err), note = calib_col(t, "note", &err);
    ck_assert(b == 1 && note == 2);
    ck_assert_double_eq(calib_num(t, 0, b), -2500);
    ck_assert_double_eq(calib_num(t, 2, b), 0.6);
    ck_assert_str_eq(calib_str(t, 0, note), "say \"hi\", x");
    ck_assert_str_eq(calib_str(t, 1, note), "");
    ck_assert(isnan(calib_num(t, 2, note)));
    cp_loc loc = calib_loc(t, 2, b);
    ck_assert_int_eq(loc.line, 5);
    ck_assert_int_eq(loc.col, 3);
    calib_free(t);

    cp_err e2 = {0};
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.csv", dir);
    ck_assert_ptr_null(calib_load_file(missing, &e2));
    ck_assert_ptr_nonnull(strstr(e2.msg, missing));
    cp_err e3 = {0};
    ck_assert_ptr_null(calib_load("no-such-profile", "gemm", &e3));
    ck_assert_ptr_nonnull(strstr(e3.msg, "platforms/calibration/no-such-profile"));
    unlink(path);
    rmdir(dir);
}
END_TEST

/* ---- precision.mlp_weights in the plan ------------------------------------ */

/* Load `yaml` (written to dir/w.yaml) and build its plan priced as the
 * engine prices it (eager). */
/* Write `yaml` to dir/w.yaml; its path into path. */
static void write_yaml(const char *dir, const char *yaml, char *path, size_t n)
{
    snprintf(path, n, "%s/w.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(yaml, f);
    fclose(f);
}

static void priced_plan(const char *dir, const char *yaml, scenario *s, plan *p)
{
    char path[300];
    write_yaml(dir, yaml, path, sizeof path);
    cp_err err = {0};
    ck_assert_msg(wl_load(path, NULL, 0, NULL, s, &err) == 0, "%s", err.msg);
    build_plan(s, p);
    cost_model *c = cost_new(&s->plat, &err);
    ck_assert_msg(c != NULL, "%s", err.msg);
    cost_price_plan(c, p, 0);
    cost_free(c);
    unlink(path);
}

/* First op of program 0 named `name` (any layer when layer < 0). */
static const plan_op *op_named(const plan *p, const char *name, int layer)
{
    const plan_prog *g = &p->progs[0];
    for (uint32_t i = 0; i < g->nops; i++)
        if (!strcmp(g->ops[i].name, name) && (layer < 0 || g->ops[i].layer == layer))
            return &g->ops[i];
    ck_abort_msg("no op %s in layer %d", name, layer);
    return NULL;
}

static int count_named(const plan *p, const char *name, int layer)
{
    int n = 0;
    const plan_prog *g = &p->progs[0];
    for (uint32_t i = 0; i < g->nops; i++)
        n += !strcmp(g->ops[i].name, name) && g->ops[i].layer == layer;
    return n;
}

/* weights bf16 + mlp_weights fp8_rowwise: the attention projections stay
 * bf16 GEMMs, the MLP's gate_up and down are fp8 GEMMs with row-wise
 * scales, each after a row-wise activation quantisation, priced from the
 * gemm_fp8.csv rows of that kind.  The model has the shapes the profile
 * measured at M = 4096 (hidden 2048, 32 heads and 4 KV heads of 128:
 * qwen3-30b-a3b qkv_proj 2048 -> 5120; intermediate 6144: the
 * dense-mlp-6144 rows 2048 -> 12288 and 6144 -> 2048), at TP1. */
START_TEST(test_mlp_weights_plan)
{
    char dir[] = "/tmp/cpsim-mlp-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cfg[300];
    snprintf(cfg, sizeof cfg, "%s/dense-2048.json", dir);
    FILE *f = fopen(cfg, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"hidden_size\": 2048, \"num_hidden_layers\": 2, \"num_attention_heads\": 32,\n"
          " \"num_key_value_heads\": 4, \"head_dim\": 128, \"intermediate_size\": 6144,\n"
          " \"vocab_size\": 151936}\n", f);
    fclose(f);
    static const char *const fmt = "model: \"%s\"\nplatform: h200-sxm-8\n"
                                   "precision: {weights: bf16, mlp_weights: %s}\n"
                                   "parallel: {tp: 1}\nrequests: [{prompt_tokens: 4096}]\n";
    char yaml[600];
    scenario s8, s16;
    plan p8, p16;
    snprintf(yaml, sizeof yaml, fmt, cfg, "fp8_rowwise");
    priced_plan(dir, yaml, &s8, &p8);
    snprintf(yaml, sizeof yaml, fmt, cfg, "bf16");
    priced_plan(dir, yaml, &s16, &p16);

    const plan_op *qkv = op_named(&p8, "qkv_proj", 0);
    ck_assert_int_eq(qkv->dtype, DT_BF16);
    ck_assert_int_eq(qkv->qscale, QS_NONE);
    ck_assert_int_eq(op_named(&p8, "o_proj", 0)->dtype, DT_BF16);
    static const char *const mlp[] = {"mlp_gate_up", "mlp_down"};
    for (int i = 0; i < 2; i++) {
        const plan_op *o = op_named(&p8, mlp[i], 0), *b = op_named(&p16, mlp[i], 0);
        ck_assert_int_eq(o->dtype, DT_FP8);
        ck_assert_int_eq(o->qscale, QS_ROW);
        ck_assert_msg(o->cost_table == CS_GEMM_FP8, "%s priced from %d", mlp[i],
                      o->cost_table);
        ck_assert_int_eq(b->dtype, DT_BF16);
        /* the weight [k, n] at 1 byte instead of 2 */
        ck_assert_double_eq_tol(b->bytes - o->bytes, (double)o->k * (double)o->n, 1);
        /* the profile: fp8_row_fastacc 1.65-1.8x bf16 (calibration README) */
        printf("%s M=%lld K=%lld N=%lld: fp8 rowwise %.1f us, bf16 %.1f us\n", mlp[i],
               (long long)o->m, (long long)o->k, (long long)o->n, o->cost_s * 1e6,
               b->cost_s * 1e6);
        ck_assert_double_lt(o->cost_s, 0.8 * b->cost_s);
    }
    /* one row-wise activation quantisation per MLP linear, none elsewhere */
    ck_assert_int_eq(count_named(&p8, "act_quant", 0), 2);
    ck_assert_int_eq(count_named(&p16, "act_quant", 0), 0);
    const plan_op *aq = op_named(&p8, "act_quant", 0);
    ck_assert_int_eq(aq->qscale, QS_ROW);
    ck_assert_int_eq(aq->dtype, DT_FP8);
    plan_free(&p8);
    plan_free(&p16);
    wl_free(&s8);
    wl_free(&s16);

    /* a MoE model: routed and shared experts take mlp_weights, the router
     * and the attention (MLA) stay at weights */
    scenario sm;
    plan pm;
    snprintf(yaml, sizeof yaml,
             "model: \"%s/tests/configs/tiny-ds-moe.json\"\nplatform: h200-sxm-8\n"
             "precision: {weights: bf16, mlp_weights: fp8_blockwise}\n"
             "parallel: {tp: 1}\nrequests: [{prompt_tokens: 256}]\n", CP_SRCDIR);
    priced_plan(dir, yaml, &sm, &pm);
    static const char *const moe8[] = {"expert_gate_up", "expert_down", "shared_gate_up",
                                       "shared_down", "mlp_gate_up", "mlp_down"};
    for (int i = 0; i < 6; i++) {
        const plan_op *o = op_named(&pm, moe8[i], -1);
        ck_assert_msg(o->dtype == DT_FP8 && o->qscale == QS_BLOCK, "%s: dtype %d qscale %d",
                      moe8[i], o->dtype, o->qscale);
    }
    static const char *const moe16[] = {"router", "q_proj", "kv_a_proj", "kv_b_proj",
                                        "o_proj"};
    for (int i = 0; i < 5; i++)
        ck_assert_msg(op_named(&pm, moe16[i], -1)->dtype == DT_BF16, "%s", moe16[i]);
    plan_free(&pm);
    wl_free(&sm);
    unlink(cfg);
    rmdir(dir);
}
END_TEST

/* Resident weights per rank (quant_resident_bytes): Llama 3.1 405B at TP8
 * with bf16 weights and fp8_rowwise MLP weights holds each MLP weight in 1
 * byte instead of 2, plus its fp32 scales (128 x 128 blocks, quant.h):
 * about half the MLP's bf16 bytes less. */
START_TEST(test_mlp_weights_resident)
{
    static const char *const yaml =
        "model: llama-3.1-405b\nplatform: h200-sxm-8\nprecision: {weights: bf16}\n"
        "parallel: {tp: 8}\nrequests: [{prompt_tokens: 1024}]\n";
    char dir[] = "/tmp/cpsim-mlp-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[300];
    write_yaml(dir, yaml, path, sizeof path);
    static const char *const sets[] = {"precision.mlp_weights=fp8_rowwise"};
    scenario s16, s8;
    cp_err err = {0};
    ck_assert_msg(wl_load(path, NULL, 0, NULL, &s16, &err) == 0, "%s", err.msg);
    ck_assert_msg(wl_load(path, sets, 1, NULL, &s8, &err) == 0, "%s", err.msg);
    unlink(path);
    rmdir(dir);
    double r16 = quant_resident_bytes(&s16), r8 = quant_resident_bytes(&s8);
    /* MLP elements per rank: 126 layers x (gate + up + down) of 16384 x
     * 53248, TP-sharded over 8 (llama-3.1-405b.json) */
    double elems = 126.0 * 3.0 * 16384.0 * 53248.0 / 8.0;
    double scales = 126.0 * 3.0 * (16384.0 / 128.0) * (53248.0 / 8.0 / 128.0) * 4.0;
    printf("llama-3.1-405b TP8 resident per rank: bf16 %.3f GB, MLP fp8_rowwise %.3f GB\n",
           r16 / 1e9, r8 / 1e9);
    ck_assert_double_eq_tol(r16 - r8, elems - scales, 1e-6 * elems);
    ck_assert_double_gt(r16 - r8, 0.499 * 2.0 * elems);
    quant_report rep;
    quant_account(&s8, NULL, &rep);
    ck_assert_double_eq_tol(rep.plain[WF_DENSE_MLP], elems, 1);
    ck_assert_double_eq_tol(rep.total, r8, 1);
    wl_free(&s16);
    wl_free(&s8);
}
END_TEST

/* FA3 prefill is priced from aiconfigurator's rows (vLLM and SGLang, to
 * 16K) and cuDNN's fused kernel from attention_backends.csv (to 128K): the
 * two FA3-class sources agree where they overlap, 8K-16K causal, on the
 * shards of Llama 405B at TP8 (16/1 heads) and the thinker (32/4, 8/1);
 * past 16K the FA3 series holds its edge (printed beside cuDNN's). */
START_TEST(test_fa3_and_cudnn_agree)
{
    platform p = h200();
    cost_model *c = model_of(&p);
    static const int64_t heads[][2] = {{16, 1}, {32, 4}, {8, 1}};
    for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++)
        for (int64_t q = 8192; q <= 131072; q *= 2) {
            plan_op fa3 = attn_op(q, q, 1, heads[h][0], heads[h][1], 128), cud = fa3;
            fa3.impl = IMPL_FA3;
            cud.impl = IMPL_CUDNN;
            plan_costsrc sf, sc;
            double tf = cost_kernel_src_s(c, &fa3, &sf, NULL);
            double tc = cost_kernel_src_s(c, &cud, &sc, NULL);
            printf("fa3 vs cudnn heads %lld/%lld q=%lld: %.1f us (%s) vs %.1f us (%s) %+.1f %%\n",
                   (long long)heads[h][0], (long long)heads[h][1], (long long)q, tf * 1e6,
                   plan_costsrc_file(sf), tc * 1e6, plan_costsrc_file(sc),
                   100 * (tf / tc - 1));
            ck_assert_int_eq(sf, CS_AIC_CONTEXT_ATTENTION);
            ck_assert_int_eq(sc, CS_ATTENTION_BACKENDS);
            if (q <= 16384)
                ck_assert_msg(fabs(tf / tc - 1) < 0.15, "heads %lld q=%lld: fa3 %g cudnn %g",
                              (long long)heads[h][0], (long long)q, tf, tc);
        }
    cost_free(c);
}
END_TEST

static Suite *cost_suite(void)
{
    Suite *s = suite_create("cost");
    TCase *tc = tcase_create("cost");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_calibration_accuracy);
    tcase_add_test(tc, test_table_reproduces_rows);
    tcase_add_test(tc, test_uncalibrated_is_analytic);
    tcase_add_test(tc, test_h100_vs_h200);
    tcase_add_test(tc, test_fp8_twice_bf16);
    tcase_add_test(tc, test_grouped_gemm);
    tcase_add_test(tc, test_gemm_small_shapes);
    tcase_add_test(tc, test_attention_ramp);
    tcase_add_test(tc, test_roofline_kinds);
    tcase_add_test(tc, test_price_plan);
    tcase_add_test(tc, test_bad_profile);
    tcase_add_test(tc, test_calib_profile_tables);
    tcase_add_test(tc, test_calib_bad_files);
    tcase_add_test(tc, test_sparse_attention_table);
    tcase_add_test(tc, test_profile_folder_is_data);
    tcase_add_test(tc, test_fa3_and_cudnn_agree);
    tcase_add_test(tc, test_mlp_weights_plan);
    tcase_add_test(tc, test_mlp_weights_resident);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    setenv("CPSIM_DATADIR", CP_SRCDIR, 1);
    SRunner *sr = srunner_create(cost_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
