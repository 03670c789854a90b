/* check_whatif: what-if studies move the answer the physical way.
 *
 * Real runs (no mocks) of small workloads on every bundled preset, one and
 * two nodes: doubling a rate (fabric, NIC or HBM bandwidth, a link
 * efficiency, the peak flop rate) never raises TTFT and halving it never
 * lowers it; doubling a latency never lowers TTFT and halving it never
 * raises it.  And on cases bound by a parameter, the part bound by it
 * (communication for the links, GEMM or bandwidth-bound kernel time for
 * the device) shrinks 1.8-2.2x when the parameter doubles, on calibrated
 * presets too (the calibration is the preset's, a what-if changes the
 * links and rescales the tables).
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platforms/platform.h"
#include "sim/driver/driver.h"
#include "tests/testutil.h"

#ifndef CP_SRCDIR
#define CP_SRCDIR "."
#endif

#define MAX_SETS 16

/* A parameter of the platform: its workload key, how to read it from a
 * loaded preset, and whether more of it is faster (a rate) or slower (a
 * latency); efficiencies stay in (0, 1]. */
typedef struct param {
    const char *key;
    int rate;
    int efficiency;
    double (*get)(const platform *p);
} param;

static double fab_bw(const platform *p) { return p->intra.bandwidth; }
static double fab_eff(const platform *p) { return p->intra.efficiency; }
static double fab_lat(const platform *p) { return p->intra.latency; }
static double nic_bw(const platform *p) { return p->nic.bandwidth; }
static double nic_eff(const platform *p) { return p->nic.efficiency; }
static double nic_lat(const platform *p) { return p->nic.latency; }
static double peak(const platform *p) { return p->peak_flops[DT_BF16]; }
static double hbm(const platform *p) { return p->hbm_bw; }

static const param params[] = {
    {"platform.fabric.bandwidth", 1, 0, fab_bw},
    {"platform.fabric.efficiency", 1, 1, fab_eff},
    {"platform.fabric.latency", 0, 0, fab_lat},
    {"platform.network.nic_bandwidth", 1, 0, nic_bw},
    {"platform.network.efficiency", 1, 1, nic_eff},
    {"platform.network.nic_latency", 0, 0, nic_lat},
    {"platform.device.peak_flops.bf16", 1, 0, peak},
    {"platform.device.hbm_bandwidth", 1, 0, hbm},
};
#define NPARAMS (sizeof params / sizeof params[0])

/* A run: a workload of --set assignments. */
typedef struct run {
    const char *sets[MAX_SETS];
    char buf[MAX_SETS][160];
    int n;
} run;

static void add(run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(run *r, const char *fmt, ...)
{
    ck_assert_int_lt(r->n, MAX_SETS);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->buf[r->n], sizeof r->buf[0], fmt, ap);
    va_end(ap);
    r->sets[r->n] = r->buf[r->n];
    r->n++;
}

/* Simulate runs[0..n) two at a time (one child each); summaries into out. */
static void simulate_all(run *runs, int n, json_t **out)
{
    for (int i = 0; i < n; i += 2) {
        drv_child cp[2];
        int k = i + 1 < n ? 2 : 1;
        for (int j = 0; j < k; j++) {
            drv_req rq = {.sets = runs[i + j].sets, .nsets = runs[i + j].n};
            cp_err err = {0};
            ck_assert_msg(drv_spawn(&rq, &cp[j], &err) == 0, "%s", err.msg);
        }
        for (int j = 0; j < k; j++) {
            cp_err err = {0};
            ck_assert_msg(drv_finish(&cp[j], &out[i + j], &err) == 0, "run %d (%s ...): %s",
                          i + j, runs[i + j].sets[0], err.msg);
        }
    }
}

static double num(json_t *j, const char *key)
{
    return json_number_value(json_object_get(j, key));
}

static double ttft(json_t *sm)
{
    return num(sm, "ttft_s");
}

/* compute_s of one kernel class in cost_sources (0 when absent). */
static double class_s(json_t *sm, const char *cls)
{
    json_t *by = json_object_get(json_object_get(sm, "cost_sources"), "by_class");
    return json_number_value(json_object_get(json_object_get(by, cls), "compute_s"));
}

static void base_run(run *r, const char *preset, int nodes, int devices)
{
    r->n = 0;
    add(r, "model=\"%s/tests/configs/whatif-moe.json\"", CP_SRCDIR);
    add(r, "platform=%s", preset);
    add(r, "platform.nodes=%d", nodes);
    add(r, "parallel.tp=%d", devices);
    add(r, "requests.0.prompt_tokens=4096");
    add(r, "requests.0.decode_tokens=2");
}

/* Every preset, one and two nodes, every parameter doubled and halved. */
START_TEST(directions_on_every_preset)
{
    enum { PER = 1 + 2 * NPARAMS };
    static const int node_counts[] = {1, 2};
    for (int i = 0; plat_bundled[i]; i++) {
        platform p;
        cp_err err = {0};
        ck_assert_msg(plat_load(plat_bundled[i], NULL, NULL, &p, &err) == 0, "%s", err.msg);
        for (int nc = 0; nc < 2; nc++) {
            int nodes = node_counts[nc], devices = nodes * p.devices_per_node;
            run runs[PER];
            base_run(&runs[0], plat_bundled[i], nodes, devices);
            for (size_t k = 0; k < NPARAMS; k++) {
                double v = params[k].get(&p);
                double up = params[k].efficiency ? fmin(1.0, 2 * v) : 2 * v;
                runs[1 + 2 * k] = runs[0];
                runs[2 + 2 * k] = runs[0];
                for (int j = 0; j < 2; j++) {
                    run *r = &runs[1 + 2 * k + j];
                    for (int s = 0; s < r->n; s++)
                        r->sets[s] = r->buf[s]; /* the copy's own buffers */
                    add(r, "%s=%.17g", params[k].key, j == 0 ? up : v / 2);
                }
            }
            json_t *sm[PER];
            simulate_all(runs, PER, sm);
            double t0 = ttft(sm[0]);
            for (size_t k = 0; k < NPARAMS; k++) {
                double tu = ttft(sm[1 + 2 * k]), td = ttft(sm[2 + 2 * k]);
                const char *what = params[k].key;
                if (params[k].rate) {
                    ck_assert_msg(tu <= t0 * (1 + 1e-6), "%s %d node(s): %s x2 raises TTFT "
                                  "%.6g -> %.6g", plat_bundled[i], nodes, what, t0, tu);
                    ck_assert_msg(td >= t0 * (1 - 1e-6), "%s %d node(s): %s /2 lowers TTFT "
                                  "%.6g -> %.6g", plat_bundled[i], nodes, what, t0, td);
                } else {
                    ck_assert_msg(tu >= t0 * (1 - 1e-6), "%s %d node(s): %s x2 lowers TTFT "
                                  "%.6g -> %.6g", plat_bundled[i], nodes, what, t0, tu);
                    ck_assert_msg(td <= t0 * (1 + 1e-6), "%s %d node(s): %s /2 raises TTFT "
                                  "%.6g -> %.6g", plat_bundled[i], nodes, what, t0, td);
                }
                json_decref(sm[1 + 2 * k]);
                json_decref(sm[2 + 2 * k]);
            }
            json_decref(sm[0]);
        }
    }
}
END_TEST

/* device.collective_latency is the fixed cost of every call: ten times it
 * raises TTFT on every preset, calibrated or not, by no more than the
 * calls' count times the added latency (the engine once left it at 0 on
 * platforms without an interference table: an accepted key that did
 * nothing). */
START_TEST(collective_latency_counts_on_every_preset)
{
    for (int i = 0; plat_bundled[i]; i++) {
        platform p;
        cp_err err = {0};
        ck_assert_msg(plat_load(plat_bundled[i], NULL, NULL, &p, &err) == 0, "%s", err.msg);
        run runs[2];
        base_run(&runs[0], plat_bundled[i], 1, p.devices_per_node);
        runs[1] = runs[0];
        for (int s = 0; s < runs[1].n; s++)
            runs[1].sets[s] = runs[1].buf[s];
        double e = p.coll_latency_eager > 0 ? p.coll_latency_eager : 1e-6;
        double g = p.coll_latency_graph > 0 ? p.coll_latency_graph : 1e-6;
        add(&runs[1], "platform.device.collective_latency={eager: %.17g, graph: %.17g}",
            10 * e, 10 * g);
        json_t *sm[2];
        simulate_all(runs, 2, sm);
        double t0 = ttft(sm[0]), t1 = ttft(sm[1]);
        ck_assert_msg(t1 > t0 * (1 + 1e-6), "%s: collective_latency x10 leaves TTFT at %.9g",
                      plat_bundled[i], t0);
        json_decref(sm[0]);
        json_decref(sm[1]);
    }
}
END_TEST

/* The ratio of the bound part (a function of the summary) between the base
 * run and the run with `key` set to `value`. */
static double bound_ratio(const char *const *base, int nbase, const char *set,
                          double (*part)(json_t *))
{
    run r[2];
    r[0].n = r[1].n = 0;
    for (int i = 0; i < nbase; i++) {
        add(&r[0], "%s", base[i]);
        add(&r[1], "%s", base[i]);
    }
    add(&r[1], "%s", set);
    json_t *sm[2];
    simulate_all(r, 2, sm);
    double a = part(sm[0]), b = part(sm[1]);
    json_decref(sm[0]);
    json_decref(sm[1]);
    ck_assert_double_gt(b, 0);
    return a / b;
}

static double comm(json_t *sm)
{
    return num(sm, "comm_s_max");
}

static double gemm(json_t *sm)
{
    return class_s(sm, "gemm");
}

static double norm(json_t *sm)
{
    return class_s(sm, "norm");
}

static void within(double ratio, const char *what)
{
    printf("bound part %-58s shrinks %.3fx\n", what, ratio);
    ck_assert_msg(ratio >= 1.8 && ratio <= 2.2, "%s: the bound part shrinks %.3fx", what, ratio);
}

/* key=value with value = factor x the preset's figure of the parameter. */
static const char *scaled(char *buf, size_t n, const char *preset, size_t k, double factor)
{
    platform p;
    cp_err err = {0};
    ck_assert_msg(plat_load(preset, NULL, NULL, &p, &err) == 0, "%s", err.msg);
    snprintf(buf, n, "%s=%.17g", params[k].key, factor * params[k].get(&p));
    return buf;
}

/* On cases bound by it, doubling a parameter shrinks the bound part by
 * 1.8-2.2x: a long prompt over NVLink / HCCS (communication), TP2 over two
 * nodes of one device (NIC), large GEMMs (peak), norms (HBM); on the calibrated H200 and
 * the uncalibrated full mesh of the 910B. */
START_TEST(bound_parts_scale)
{
    static const char *presets[] = {"h200-sxm-8", "ascend-910b-8"};
    for (int i = 0; i < 2; i++) {
        char plat[64], set[192], what[128];
        snprintf(plat, sizeof plat, "platform=%s", presets[i]);
        const char *intra[] = {"model=qwen3-32b", plat, "parallel.tp=8",
                               "requests.0.prompt_tokens=65536",
                               "platform.fabric.efficiency=0.45"};
        snprintf(what, sizeof what, "%s fabric.bandwidth x2", presets[i]);
        within(bound_ratio(intra, 4, scaled(set, sizeof set, presets[i], 0, 2), comm), what);
        snprintf(what, sizeof what, "%s fabric.efficiency 0.45 -> 0.9", presets[i]);
        within(bound_ratio(intra, 5, "platform.fabric.efficiency=0.9", comm), what);
        /* one device per node: the TP group's ring runs over the NICs only */
        const char *inter[] = {"model=qwen3-32b", plat, "platform.nodes=2",
                               "platform.devices_per_node=1", "platform.fabric.kind=switch",
                               "parallel.tp=2",
                               "requests.0.prompt_tokens=65536",
                               "platform.network.efficiency=0.45"};
        snprintf(what, sizeof what, "%s 2 nodes network.nic_bandwidth x2", presets[i]);
        within(bound_ratio(inter, 7, scaled(set, sizeof set, presets[i], 3, 2), comm), what);
        snprintf(what, sizeof what, "%s 2 nodes network.efficiency 0.45 -> 0.9", presets[i]);
        within(bound_ratio(inter, 8, "platform.network.efficiency=0.9", comm), what);
        const char *dev[] = {"model=qwen3-32b", plat, "parallel.tp=1",
                             "requests.0.prompt_tokens=32768"};
        snprintf(what, sizeof what, "%s device.peak_flops.bf16 x2 (GEMMs)", presets[i]);
        within(bound_ratio(dev, 4, scaled(set, sizeof set, presets[i], 6, 2), gemm), what);
        snprintf(what, sizeof what, "%s device.hbm_bandwidth x2 (norms)", presets[i]);
        within(bound_ratio(dev, 4, scaled(set, sizeof set, presets[i], 7, 2), norm), what);
    }
}
END_TEST

/* A full mesh runs its collectives over all its links at once (direct
 * algorithms): TP8 on the 910B's HCCS mesh communicates as fast as a switch
 * of the same per-device bandwidth, not 7x slower over one pair link; and a
 * TP group spanning two nodes is hierarchical: both the fabric and the NIC
 * move it. */
START_TEST(mesh_and_hierarchy)
{
    const char *mesh[] = {"model=qwen3-32b", "platform=ascend-910b-8", "parallel.tp=8",
                          "requests.0.prompt_tokens=16384"};
    double r = bound_ratio(mesh, 4, "platform.fabric.kind=switch", comm);
    printf("910B TP8 communication, mesh / switch: %.3f\n", 1 / r);
    ck_assert_double_lt(fabs(r - 1), 0.05);
    const char *two[] = {"model=qwen3-32b", "platform=h200-sxm-8", "platform.nodes=2",
                         "parallel.tp=16", "requests.0.prompt_tokens=16384"};
    double fab = bound_ratio(two, 5, "platform.fabric.bandwidth=900e9", comm);
    double nic = bound_ratio(two, 5, "platform.network.nic_bandwidth=100e9", comm);
    printf("H200 TP16 over 2 nodes, communication shrinks %.3fx (NVLink x2), %.3fx (NIC x2)\n",
           fab, nic);
    ck_assert_double_gt(fab, 1.02);
    ck_assert_double_gt(nic, 1.02);
}
END_TEST

/* A batch-1 decode step of a dense model on one device is a read of its
 * weights (Llama 3.1 70B: 141 GB of bf16 weights, against a few ms of
 * kernels whose time is their fixed cost, about 13 % of the step on the
 * B200): doubling device.hbm_bandwidth shortens it by at least 1.6x and
 * 1.5x by at least 1.3x, on every preset, calibrated or not (issue 28 part
 * 3: a one-row GEMM priced at a 128-row tile hit a compute floor, and 1.5x
 * and 2x HBM gave the same TPOT). */
START_TEST(decode_reads_weights_at_hbm_rate)
{
    for (int i = 0; plat_bundled[i]; i++) {
        platform p;
        cp_err err = {0};
        ck_assert_msg(plat_load(plat_bundled[i], NULL, NULL, &p, &err) == 0, "%s", err.msg);
        run r[3];
        for (int k = 0; k < 3; k++) {
            r[k].n = 0;
            add(&r[k], "model=llama-3.1-70b");
            add(&r[k], "platform=%s", plat_bundled[i]);
            add(&r[k], "parallel.tp=1");
            add(&r[k], "engine.graph=captured");
            add(&r[k], "requests.0.prompt_tokens=256");
            add(&r[k], "requests.0.decode_tokens=4");
            if (k > 0)
                add(&r[k], "platform.device.hbm_bandwidth=%.17g", (k == 1 ? 1.5 : 2.0) * p.hbm_bw);
        }
        json_t *sm[3];
        simulate_all(r, 3, sm);
        double t[3];
        for (int k = 0; k < 3; k++)
            t[k] = json_number_value(
                json_object_get(json_array_get(json_object_get(sm[k], "requests"), 0), "tpot_s"));
        printf("%-22s batch-1 decode step %.3f ms; HBM x1.5 %.3fx, x2 %.3fx shorter\n",
               plat_bundled[i], 1e3 * t[0], t[0] / t[1], t[0] / t[2]);
        ck_assert_msg(t[0] / t[2] >= 1.6, "%s: HBM x2 shortens decode %.3fx", plat_bundled[i],
                      t[0] / t[2]);
        ck_assert_msg(t[0] / t[1] >= 1.3, "%s: HBM x1.5 shortens decode %.3fx", plat_bundled[i],
                      t[0] / t[1]);
        for (int k = 0; k < 3; k++)
            json_decref(sm[k]);
    }
}
END_TEST

/* Chunked prefill prefills a long prompt in passes of N tokens: the first
 * token comes after the last chunk, later with smaller chunks (every pass
 * reads the weights again and launches every kernel again), and the
 * activations of a pass are smaller, so the peak is lower. */
START_TEST(chunked_prefill_runs)
{
    run r[3];
    const char *chunks[] = {NULL, "engine.max_num_batched_tokens=8192",
                            "engine.max_num_batched_tokens=2048"};
    for (int i = 0; i < 3; i++) {
        r[i].n = 0;
        add(&r[i], "requests.0.prompt_tokens=65536");
        if (chunks[i]) {
            add(&r[i], "engine.chunked_prefill=true");
            add(&r[i], "%s", chunks[i]);
        }
    }
    json_t *sm[3];
    simulate_all(r, 3, sm);
    ck_assert_double_gt(ttft(sm[1]), ttft(sm[0]));
    ck_assert_double_gt(ttft(sm[2]), ttft(sm[1]));
    ck_assert_double_lt(num(sm[1], "peak_bytes_max"), num(sm[0], "peak_bytes_max"));
    ck_assert_double_lt(num(sm[2], "peak_bytes_max"), num(sm[1], "peak_bytes_max"));
    for (int i = 0; i < 3; i++)
        json_decref(sm[i]);
}
END_TEST

static json_t *rank0(json_t *sm)
{
    return json_array_get(json_object_get(sm, "ranks"), 0);
}

static double cat_at_peak(json_t *sm, const char *cat)
{
    return json_number_value(json_object_get(json_object_get(rank0(sm), "peak_by_category"), cat));
}

/* The engine's memory (engine.memory): reserved and workspace bytes are
 * their own categories, from the platform unless the workload says; a
 * preallocated KV pool takes what gpu_memory_utilization leaves after the
 * weights, the reserved memory, the workspace and the activation peak, and
 * the verdict names the budget a scenario exceeds and by how much. */
START_TEST(engine_memory_budgets)
{
    run r[4];
    for (int i = 0; i < 4; i++) {
        r[i].n = 0;
        add(&r[i], "requests.0.prompt_tokens=32768");
    }
    add(&r[1], "engine.memory.reserved_bytes=3e9");
    /* the pool sized after a profiling step of max_num_batched_tokens: the
     * prompt's own, in one chunk */
    add(&r[2], "engine.chunked_prefill=true");
    add(&r[2], "engine.max_num_batched_tokens=32768");
    add(&r[2], "engine.memory.kv_pool=preallocate");
    add(&r[3], "engine.memory.kv_pool=preallocate");
    add(&r[3], "engine.memory.gpu_memory_utilization=0.14");
    json_t *sm[4];
    simulate_all(r, 4, sm);
    /* h100-sxm-8 preset: 1e9 reserved, 0.25e9 workspace */
    ck_assert_double_eq(cat_at_peak(sm[0], "reserved"), 1e9);
    ck_assert_double_eq(cat_at_peak(sm[0], "workspace"), 0.25e9);
    ck_assert_double_eq(cat_at_peak(sm[1], "reserved"), 3e9);
    ck_assert_double_eq_tol(num(sm[1], "peak_bytes_max") - num(sm[0], "peak_bytes_max"), 2e9, 1);
    ck_assert(!json_is_true(json_object_get(sm[0], "oom")));
    /* preallocate: weights + reserved + workspace + activations + pool =
     * 0.9 of 80 GB at the peak */
    json_t *em = json_object_get(sm[2], "engine_memory");
    double pool = json_number_value(json_object_get(em, "kv_pool_bytes"));
    double need = json_number_value(json_object_get(em, "kv_need_bytes"));
    ck_assert_double_gt(pool, need);
    ck_assert_double_eq(cat_at_peak(sm[2], "kv_cache"), pool);
    /* the tensors and the engine (the allocator's cache aside: vLLM budgets
     * the profile's allocated peak) */
    ck_assert_double_le(num(sm[2], "peak_tensor_bytes") + num(sm[2], "engine_bytes"),
                        0.9 * 80e9 * (1 + 1e-12));
    ck_assert(!json_is_true(json_object_get(sm[2], "oom")));
    /* at 14 % the pool is smaller than the request's KV */
    ck_assert(json_is_true(json_object_get(sm[3], "oom")));
    ck_assert_str_eq(json_string_value(json_object_get(sm[3], "oom_budget")), "kv_pool");
    em = json_object_get(sm[3], "engine_memory");
    ck_assert_double_eq_tol(num(sm[3], "oom_excess_bytes"),
                            json_number_value(json_object_get(em, "kv_need_bytes")) -
                                json_number_value(json_object_get(em, "kv_pool_bytes")),
                            1);
    for (int i = 0; i < 4; i++)
        json_decref(sm[i]);
    /* a share so small that the pool has no room: the start-up budget */
    run u;
    u.n = 0;
    add(&u, "engine.memory.kv_pool=preallocate");
    add(&u, "engine.memory.gpu_memory_utilization=0.1");
    json_t *su;
    simulate_all(&u, 1, &su);
    ck_assert_str_eq(json_string_value(json_object_get(su, "oom_budget")),
                     "gpu_memory_utilization");
    ck_assert_double_gt(num(su, "oom_excess_bytes"), 0);
    json_decref(su);
}
END_TEST

/* ---- Llama 3.1 405B: device and network variants -------------------------- */

/* Llama 3.1 405B with Meta's FP8 recipe, row-wise fp8 MLP weights and the
 * rest bf16 (precision.mlp_weights), TP8 on one H200 node. */
static void llama_run(run *r, long long prompt, long long decode)
{
    r->n = 0;
    add(r, "model=llama-3.1-405b");
    add(r, "platform=h200-sxm-8");
    add(r, "precision={weights: bf16, mlp_weights: fp8_rowwise}");
    add(r, "parallel.tp=8");
    add(r, "requests.0.prompt_tokens=%lld", prompt);
    add(r, "requests.0.decode_tokens=%lld", decode);
}

static json_t *request0(json_t *sm)
{
    return json_array_get(json_object_get(sm, "requests"), 0);
}

static double tpot(json_t *sm)
{
    return num(request0(sm), "tpot_s");
}

/* H200 peaks of the preset (models-hardware.md 3.1): bf16 = fp16, fp8 = int8 */
#define H200_BF16 989.4e12
#define H200_FP8 1978.9e12
/* A power limit, as a what-if: the tensor cores run at this share of their
 * peak (a lower sustained clock); the factor is the study's choice, not a
 * measured cap. */
#define POWER_CAP 0.7

/* Lower peaks (a power limit: every dtype, or fp8 or bf16 alone) raise
 * the TTFT of a Llama 405B prefill whose MLP GEMMs are fp8 and whose
 * attention projections are bf16; with bf16 MLP weights the fp8 peak moves
 * nothing (no fp8 GEMM is left), and the bf16 MLP is slower than the fp8
 * one. */
START_TEST(llama405b_peaks)
{
    enum { N = 6 };
    run r[N];
    for (int i = 0; i < N; i++)
        llama_run(&r[i], 8192, 0);
    char fp8[64], bf16[64];
    snprintf(fp8, sizeof fp8, "%.17g", POWER_CAP * H200_FP8);
    snprintf(bf16, sizeof bf16, "%.17g", POWER_CAP * H200_BF16);
    /* 1: every dtype capped; 2: fp8 / int8 alone; 3: bf16 / fp16 alone */
    for (int i = 1; i <= 2; i++) {
        add(&r[i], "platform.device.peak_flops.fp8=%s", fp8);
        add(&r[i], "platform.device.peak_flops.int8=%s", fp8);
    }
    for (int i = 1; i <= 3; i += 2) {
        add(&r[i], "platform.device.peak_flops.bf16=%s", bf16);
        add(&r[i], "platform.device.peak_flops.fp16=%s", bf16);
    }
    /* 4, 5: bf16 MLP weights, with and without the fp8 cap */
    for (int i = 4; i <= 5; i++)
        add(&r[i], "precision.mlp_weights=bf16");
    add(&r[4], "platform.device.peak_flops.fp8=%s", fp8);
    json_t *sm[N];
    simulate_all(r, N, sm);
    double t[N];
    for (int i = 0; i < N; i++)
        t[i] = ttft(sm[i]);
    printf("llama-3.1-405b TP8 8K prefill TTFT: fp8 MLP %.4f s; peaks x%.1f: all %.4f s, "
           "fp8 %.4f s, bf16 %.4f s; bf16 MLP %.4f s (fp8 x%.1f: %.4f s)\n", t[0], POWER_CAP,
           t[1], t[2], t[3], t[5], POWER_CAP, t[4]);
    ck_assert_double_gt(t[2], t[0] * 1.02);
    ck_assert_double_gt(t[3], t[0] * 1.02);
    ck_assert_double_gt(t[1], t[2]);
    ck_assert_double_gt(t[1], t[3]);
    ck_assert_double_eq_tol(t[4], t[5], 1e-9 * t[5]);
    ck_assert_double_gt(t[5], t[0] * 1.1);
    for (int i = 0; i < N; i++)
        json_decref(sm[i]);
}
END_TEST

/* Another HBM: lower bandwidth raises decode TPOT (H100's 3.35 TB/s, half
 * of H200's 4.8: models-hardware.md 3.1); a smaller device (80 GB, H100's)
 * runs out of memory with bf16 MLP weights (103 GB per rank) where the fp8
 * MLP fits (62 GB) and where H200's 141 GB holds both; a preallocated KV
 * pool shrinks by gpu_memory_utilization x the HBM taken away. */
START_TEST(llama405b_hbm)
{
    enum { N = 9 };
    run r[N];
    for (int i = 0; i < 3; i++)
        llama_run(&r[i], 1024, 4);
    add(&r[1], "platform.device.hbm_bandwidth=3.35e12");
    add(&r[2], "platform.device.hbm_bandwidth=2.4e12");
    for (int i = 3; i < N; i++)
        llama_run(&r[i], 8192, 0);
    add(&r[3], "platform.device.hbm_bytes=80e9");
    add(&r[4], "platform.device.hbm_bytes=80e9");
    add(&r[4], "precision.mlp_weights=bf16");
    add(&r[5], "precision.mlp_weights=bf16");
    for (int i = 6; i < N; i++)
        add(&r[i], "engine.memory.kv_pool=preallocate");
    add(&r[7], "platform.device.hbm_bytes=96e9");
    add(&r[8], "platform.device.hbm_bytes=80e9");
    json_t *sm[N];
    simulate_all(r, N, sm);
    printf("llama-3.1-405b TP8 decode TPOT at 1K: HBM 4.8 TB/s %.2f ms, 3.35 TB/s %.2f ms, "
           "2.4 TB/s %.2f ms\n", 1e3 * tpot(sm[0]), 1e3 * tpot(sm[1]), 1e3 * tpot(sm[2]));
    ck_assert_double_gt(tpot(sm[1]), tpot(sm[0]) * 1.05);
    ck_assert_double_gt(tpot(sm[2]), tpot(sm[1]) * 1.05);
    ck_assert(!json_is_true(json_object_get(sm[3], "oom")));
    ck_assert(json_is_true(json_object_get(sm[4], "oom")));
    ck_assert_str_eq(json_string_value(json_object_get(sm[4], "oom_budget")), "capacity");
    ck_assert(!json_is_true(json_object_get(sm[5], "oom")));
    printf("llama-3.1-405b TP8 peak per rank: fp8 MLP %.1f GB, bf16 MLP %.1f GB (80 GB: %s)\n",
           num(sm[3], "peak_bytes_max") / 1e9, num(sm[5], "peak_bytes_max") / 1e9,
           json_is_true(json_object_get(sm[4], "oom")) ? "out of memory" : "fits");
    double pool[3];
    static const double hbm[3] = {150109880320.0, 96e9, 80e9}; /* the preset's, then 96, 80 */
    for (int i = 0; i < 3; i++) {
        json_t *em = json_object_get(sm[6 + i], "engine_memory");
        pool[i] = json_number_value(json_object_get(em, "kv_pool_bytes"));
        ck_assert(!json_is_true(json_object_get(sm[6 + i], "oom")));
    }
    printf("llama-3.1-405b TP8 KV pool: %.2f GB (141 GB HBM), %.2f GB (96 GB), %.2f GB "
           "(80 GB)\n", pool[0] / 1e9, pool[1] / 1e9, pool[2] / 1e9);
    for (int i = 1; i < 3; i++) /* gpu_memory_utilization 0.9, vLLM's default */
        ck_assert_double_eq_tol(pool[0] - pool[i], 0.9 * (hbm[0] - hbm[i]), 1e3);
    for (int i = 0; i < N; i++)
        json_decref(sm[i]);
}
END_TEST

/* Two H200 nodes on 100 Gb/s TCP per GPU (h200-sxm-8-tcp100) against
 * 400 Gb/s RDMA (h200-sxm-8): TP16 over the two nodes and CP2 (pass-KV,
 * TP8 inside each node) take longer, their communication more so. */
START_TEST(tcp_network_slower)
{
    enum { N = 4 };
    run r[N];
    static const char *const presets[2] = {"h200-sxm-8", "h200-sxm-8-tcp100"};
    for (int i = 0; i < N; i++) {
        llama_run(&r[i], 16384, 0);
        add(&r[i], "platform={name: %s, nodes: 2}", presets[i % 2]);
        if (i < 2) {
            add(&r[i], "parallel.tp=16");
            continue;
        }
        add(&r[i], "parallel.sp=2");
        add(&r[i], "parallel.kv_storage=by_position");
        add(&r[i], "parallel.exchange=ring_kv");
        add(&r[i], "parallel.ring_overlap=true");
    }
    json_t *sm[N];
    simulate_all(r, N, sm);
    static const char *const what[2] = {"TP16", "CP2 x TP8 pass-KV"};
    for (int k = 0; k < 2; k++) {
        json_t *rdma = sm[2 * k], *tcp = sm[2 * k + 1];
        printf("llama-3.1-405b 16K prefill, 2 nodes, %s: TTFT RDMA %.4f s, TCP %.4f s; "
               "communication %.4f s, %.4f s\n", what[k], ttft(rdma), ttft(tcp), comm(rdma),
               comm(tcp));
        ck_assert_double_gt(ttft(tcp), ttft(rdma) * 1.02);
        /* CP2's communication holds its TP8 all-reduces inside each node,
         * the same on both networks: the hops alone run 4x slower */
        ck_assert_double_gt(comm(tcp), comm(rdma) * (k == 0 ? 1.5 : 1.25));
    }
    for (int i = 0; i < N; i++)
        json_decref(sm[i]);
}
END_TEST

static Suite *whatif_suite(void)
{
    Suite *s = suite_create("whatif");
    TCase *tc = tcase_create("properties");
    tcase_add_checked_fixture(tc, tu_setup, NULL);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, directions_on_every_preset);
    tcase_add_test(tc, collective_latency_counts_on_every_preset);
    tcase_add_test(tc, bound_parts_scale);
    tcase_add_test(tc, mesh_and_hierarchy);
    tcase_add_test(tc, chunked_prefill_runs);
    tcase_add_test(tc, engine_memory_budgets);
    tcase_add_test(tc, llama405b_peaks);
    tcase_add_test(tc, llama405b_hbm);
    tcase_add_test(tc, decode_reads_weights_at_hbm_rate);
    tcase_add_test(tc, tcp_network_slower);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(whatif_suite());
}
