/* check_scale: a 1M-token prefill of Llama 3.1 405B (issue 12 part 6): the
 * plan's FLOP and byte counts against closed forms at T = 2^20 (64-bit
 * token and byte arithmetic: T^2 / 2 attended pairs are 5.5e11), and the
 * simulation of it.  One run per test (fork). */
#include <check.h>
#include <math.h>
#include <string.h>

#include "models/build/build.h"
#include "sim/driver/driver.h"
#include "sim/engine/engine.h"
#include "tests/testutil.h"

/* Llama 3.1 405B's public config (models/configs/llama-3.1-405b.json) */
#define H 16384.0
#define HEADS 128
#define KV_HEADS 8
#define D 128.0
#define INTER 53248.0
#define LAYERS 126
#define T (1 << 20)

static const char *YAML = "model: llama-3.1-405b\n"
                          "platform: h200-sxm-8\n"
                          "precision: {weights: fp8_rowwise, activations: bf16, kv_cache: fp8}\n"
                          "parallel: {tp: 8}\n"
                          "requests: [{prompt_tokens: 1048576}]\n";

static void setup(void)
{
    tu_setup();
}

static void rel_eq(double got, double want, const char *what)
{
    ck_assert_msg(fabs(got - want) <= 1e-12 * fabs(want), "%s: %.17g, closed form %.17g", what,
                  got, want);
}

START_TEST(test_scale_1m_counts)
{
    scenario s;
    plan p;
    tu_plan(&s, &p, YAML, NULL, 0);
    const double t = T, tp = 8, hq = HEADS / 8, hkv = KV_HEADS / 8;
    const plan_op *q = tu_find(&p, 0, "qkv_proj", 5);
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(q->m, T);
    rel_eq(q->flops, 2.0 * t * H * (hq + 2 * hkv) * D, "qkv_proj flops");
    /* fp8 weights (1 B), bf16 activations (2 B) */
    rel_eq(q->bytes, t * H * 2 + H * (hq + 2 * hkv) * D + t * (hq + 2 * hkv) * D * 2,
           "qkv_proj bytes");
    const plan_op *o = tu_find(&p, 0, "o_proj", 5);
    rel_eq(o->flops, 2.0 * t * hq * D * H, "o_proj flops");
    const plan_op *gu = tu_find(&p, 0, "mlp_gate_up", 5);
    ck_assert_ptr_nonnull(gu);
    rel_eq(gu->flops, 2.0 * t * H * 2 * INTER / tp, "gate_up flops");
    const plan_op *dn = tu_find(&p, 0, "mlp_down", 5);
    rel_eq(dn->flops, 2.0 * t * INTER / tp * H, "down flops");
    const plan_op *at = tu_find(&p, 0, "attention", 5);
    ck_assert_ptr_nonnull(at);
    ck_assert_int_eq(at->attn.q_len, T);
    ck_assert_int_eq(at->attn.kv_len, T);
    rel_eq(at->attn.pairs, t * (t + 1) / 2, "attended pairs");
    rel_eq(at->flops, 2.0 * (t * (t + 1) / 2) * hq * (2 * D), "attention flops");
    rel_eq(at->bytes, (t * hq * 2 * D + t * hkv * 2 * D) * 2, "attention bytes");
    /* the KV cache the prefill writes: K and V of one head per rank, 1 B */
    double kv = 0;
    for (uint32_t i = 0; i < p.progs[0].nops; i++) {
        const plan_op *m = &p.progs[0].ops[i];
        if (m->kind == OPK_MEM && m->mem_cat == MC_KV_CACHE && m->mem_bytes > 0)
            kv += m->mem_bytes;
    }
    rel_eq(kv, t * LAYERS * 2 * hkv * D * 1.0, "KV bytes");
    ck_assert_int_eq(tu_count(&p, 0, "attention", -2), LAYERS);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* The whole prefill simulates: TTFT above the attention work alone at the
 * device's peak, memory with the KV cache in it. */
START_TEST(test_scale_1m_runs)
{
    static char arg0[] = "check_scale";
    static char *argv[] = {arg0, NULL};
    int argc = 1;
    eng_init(&argc, argv);
    scenario s;
    plan p;
    tu_plan(&s, &p, YAML, NULL, 0);
    drv_req rq = {0};
    json_t *sum = NULL;
    cp_err err = {0};
    ck_assert_msg(drv_simulate(&rq, &s, &p, &sum, NULL, &err) == 0, "%s", err.msg);
    double ttft = json_number_value(json_object_get(sum, "ttft_s"));
    double t = T, attn_flops = LAYERS * 2.0 * (t * (t + 1) / 2) * (HEADS / 8) * 2 * D;
    ck_assert_msg(ttft > attn_flops / s.plat.peak_flops[DT_BF16] && isfinite(ttft),
                  "TTFT %g s", ttft);
    double peak = json_number_value(json_object_get(sum, "peak_bytes_max"));
    ck_assert(peak > t * LAYERS * 2 * D);
    json_decref(sum);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("scale");
    TCase *tc = tcase_create("scale");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_scale_1m_counts);
    tcase_add_test(tc, test_scale_1m_runs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
