/* check_workload: the scenario loader (workloads/workload.c) on real model
 * configs and platform presets: parsed values and defaults, --set and
 * --platform, every validation rule on both sides, the resolved dump, the
 * request sources (single, periodic, Poisson, closed-loop, trace), and the
 * bad-input corpus tests/bad/<case>.yaml. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/plan.h"
#include "workloads/workload.h"

#ifndef CP_SRCDIR
#define CP_SRCDIR "."
#endif

#define CONFIGS CP_SRCDIR "/tests/bad/configs/"

static char tmpdir[64];
static char wpath[128];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_workload_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(wpath, sizeof wpath, "%s/w.yaml", tmpdir);
}

static void remove_tmpdir(void)
{
    unlink(wpath);
    rmdir(tmpdir);
}

/* Write text to <tmpdir>/w.yaml and load it with the given --set list. */
static int load_text(const char *text, const char *const *sets, int nsets, const char *plat,
                     scenario *s, cp_err *err)
{
    FILE *f = fopen(wpath, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return wl_load(wpath, sets, nsets, plat, s, err);
}

static void assert_msg(const cp_err *err, const char *want)
{
    ck_assert_int_eq(err->code, CP_EXIT_INPUT);
    ck_assert_msg(strstr(err->msg, want), "message \"%s\" lacks \"%s\"", err->msg, want);
}

static const char *const base =
    "model: qwen3-omni-30b-a3b-thinker\n"
    "platform: h100-sxm-8\n"
    "requests:\n"
    "  - prompt_tokens: 4096\n";

START_TEST(test_workload_example_sp_ring)
{
    scenario s;
    cp_err err = { 0 };
    int rc = wl_load(CP_SRCDIR "/workloads/examples/sp-ring.yaml", NULL, 0, NULL, &s, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    ck_assert_str_eq(s.path, CP_SRCDIR "/workloads/examples/sp-ring.yaml");
    ck_assert_str_eq(s.model.name, "qwen3-omni-30b-a3b-thinker");
    ck_assert_int_eq(s.model.heads, 32);
    ck_assert_str_eq(s.plat.name, "h100-sxm-8");
    ck_assert_int_eq(plat_devices(&s.plat), 8);
    ck_assert_int_eq(s.w_dtype, DT_BF16);
    ck_assert_int_eq(s.a_dtype, DT_BF16);
    ck_assert_int_eq(s.kv_dtype, DT_FP8);
    ck_assert_int_eq(s.par.tp, 4);
    ck_assert_int_eq(s.par.sp, 2);
    ck_assert_int_eq(s.par.ep, 1);
    ck_assert_int_eq(s.par.dp, 1);
    ck_assert_int_eq(s.par.kv_storage, KV_BY_POSITION);
    ck_assert_int_eq(s.par.exchange, EX_RING);
    ck_assert_int_eq(s.par.min_tokens, 4096);
    ck_assert_int_eq(s.par.split, SPLIT_STRIPED);
    ck_assert_int_eq(s.par.ring_overlap, 1);
    ck_assert_int_eq(s.par.sequence_parallel, 0);
    ck_assert_int_eq(s.par.dsa_cp, -1);
    ck_assert_int_eq(s.par.n_layer_sharding, 0);
    ck_assert_int_eq(s.graph, GRAPH_EAGER);
    ck_assert_int_eq(s.net_model, NET_CM02);
    ck_assert_int_eq(s.nreqs, 2);
    ck_assert_int_eq(s.reqs[0].prompt_tokens, 131072);
    ck_assert(s.reqs[0].arrival_s == 0.0);
    ck_assert_int_eq(s.reqs[1].prompt_tokens, 512);
    ck_assert(s.reqs[1].arrival_s == 0.25);
    ck_assert_int_eq(s.reqs[1].decode_tokens, 128);
    wl_free(&s);
    ck_assert_ptr_null(s.doc);
    ck_assert_ptr_null(s.reqs);
}
END_TEST

START_TEST(test_workload_example_dsa_cp)
{
    scenario s;
    cp_err err = { 0 };
    int rc = wl_load(CP_SRCDIR "/workloads/examples/dsa-cp.yaml", NULL, 0, NULL, &s, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    ck_assert(s.model.has_dsa);
    ck_assert_str_eq(s.plat.name, "h200-sxm-8");
    ck_assert_int_eq(s.plat.nodes, 2);
    ck_assert_int_eq(plat_devices(&s.plat), 16);
    ck_assert_int_eq(s.w_dtype, DT_FP8);
    ck_assert_int_eq(s.kv_dtype, DT_BF16);
    ck_assert_int_eq(s.par.tp, 16);
    ck_assert_int_eq(s.par.ep, 16);
    ck_assert_int_eq(s.par.dsa_cp, 1);
    ck_assert_int_eq(s.par.sequence_parallel, 1);
    ck_assert_int_eq(s.par.n_layer_sharding, 3);
    ck_assert_str_eq(s.par.layer_sharding[0], "q_b_proj");
    ck_assert_str_eq(s.par.layer_sharding[1], "kv_b_proj");
    ck_assert_str_eq(s.par.layer_sharding[2], "o_proj");
    ck_assert_int_eq(s.graph, GRAPH_CAPTURED);
    wl_free(&s);
}
END_TEST

START_TEST(test_workload_defaults)
{
    scenario s;
    cp_err err = { 0 };
    ck_assert_msg(load_text(base, NULL, 0, NULL, &s, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(s.path, wpath);
    ck_assert_int_eq(s.w_dtype, DT_BF16);
    ck_assert_int_eq(s.a_dtype, DT_BF16);
    ck_assert_int_eq(s.kv_dtype, DT_BF16);
    ck_assert_int_eq(s.par.tp, 1);
    ck_assert_int_eq(s.par.sp, 1);
    ck_assert_int_eq(s.par.ep, 1);
    ck_assert_int_eq(s.par.dp, 1);
    ck_assert_int_eq(s.par.kv_storage, KV_BY_HEAD);
    ck_assert_int_eq(s.par.exchange, EX_AUTO);
    ck_assert_int_eq(s.par.min_tokens, 0);
    ck_assert_int_eq(s.par.split, SPLIT_STRIPED);
    ck_assert_int_eq(s.par.all_gather_tensors, AGT_QKV);
    ck_assert_int_eq(s.par.ring_overlap, 0);
    ck_assert_int_eq(s.par.sequence_parallel, 0);
    ck_assert_int_eq(s.par.dsa_cp, -1);
    ck_assert_int_eq(s.par.n_layer_sharding, 0);
    ck_assert_int_eq(s.graph, GRAPH_EAGER);
    ck_assert_int_eq(s.chunked_prefill, 0);
    ck_assert_int_eq(s.net_model, NET_CM02);
    ck_assert_int_eq(s.nreqs, 1);
    ck_assert_int_eq(s.reqs[0].prompt_tokens, 4096);
    ck_assert(s.reqs[0].arrival_s == 0.0);
    ck_assert_int_eq(s.reqs[0].decode_tokens, 0);
    wl_free(&s);
}
END_TEST

START_TEST(test_workload_every_key)
{
    static const char *const text =
        "model: qwen3-omni-30b-a3b-thinker\n"
        "platform: {name: h100-sxm-8}\n"
        "precision: {weights: int8, kv_cache: fp8}\n"
        "parallel:\n"
        "  tp: 2\n  sp: 2\n  ep: 4\n  dp: 2\n"
        "  kv_storage: by_position\n  exchange: all_gather\n  min_tokens: 1_024\n"
        "  split: zigzag\n  all_gather_tensors: kv\n  ring_overlap: no\n"
        "  sequence_parallel: no\n  dsa_cp: off\n  layer_sharding: []\n"
        "engine: {graph: captured, chunked_prefill: false}\n"
        "simulation: {network_model: l07}\n"
        "requests:\n"
        "  - {prompt_tokens: 1e6, arrival_s: 0, decode_tokens: 10}\n"
        "  - {prompt_tokens: 7, arrival_s: 0}\n"
        "  - {prompt_tokens: 8, arrival_s: 1.5e2}\n";
    scenario s;
    cp_err err = { 0 };
    ck_assert_msg(load_text(text, NULL, 0, NULL, &s, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.w_dtype, DT_INT8);
    ck_assert_int_eq(s.a_dtype, DT_BF16);
    ck_assert_int_eq(s.kv_dtype, DT_FP8);
    ck_assert_int_eq(s.par.tp, 2);
    ck_assert_int_eq(s.par.sp, 2);
    ck_assert_int_eq(s.par.ep, 4);
    ck_assert_int_eq(s.par.dp, 2);
    ck_assert_int_eq(s.par.kv_storage, KV_BY_POSITION);
    ck_assert_int_eq(s.par.exchange, EX_ALL_GATHER);
    ck_assert_int_eq(s.par.min_tokens, 1024);
    ck_assert_int_eq(s.par.split, SPLIT_ZIGZAG);
    ck_assert_int_eq(s.par.all_gather_tensors, AGT_KV);
    ck_assert_int_eq(s.par.ring_overlap, 0);
    ck_assert_int_eq(s.par.sequence_parallel, 0);
    ck_assert_int_eq(s.par.dsa_cp, 0);
    ck_assert_int_eq(s.par.n_layer_sharding, 0); /* a list: tests/check_dsa.c */
    ck_assert_int_eq(s.graph, GRAPH_CAPTURED);
    ck_assert_int_eq(s.net_model, NET_L07);
    ck_assert_int_eq(s.nreqs, 3);
    ck_assert_int_eq(s.reqs[0].prompt_tokens, 1000000);
    ck_assert_int_eq(s.reqs[0].decode_tokens, 10);
    ck_assert(s.reqs[2].arrival_s == 150.0);
    wl_free(&s);
}
END_TEST

/* precision.mlp_weights: the names precision.weights takes, for the MLP
 * linears alone; defaults to weights (as written, and as the checkpoint
 * stores them when the workload does not say); listed in the resolved
 * scenario where it differs; refused beside a quant description and when
 * unknown, with its location. */
START_TEST(test_workload_mlp_weights)
{
    static const struct {
        const char *precision;
        cp_dtype w, mlp;
        plan_qscale wq, mq;
    } cases[] = {
        { "bf16", DT_BF16, DT_BF16, QS_NONE, QS_NONE },
        { "fp8", DT_FP8, DT_FP8, QS_TENSOR, QS_TENSOR },
        { "{weights: int8}", DT_INT8, DT_INT8, QS_ROW, QS_ROW },
        { "{weights: bf16, mlp_weights: fp8_rowwise}", DT_BF16, DT_FP8, QS_NONE, QS_ROW },
        { "{weights: bf16, mlp_weights: fp8_blockwise}", DT_BF16, DT_FP8, QS_NONE, QS_BLOCK },
        { "{weights: bf16, mlp_weights: fp8}", DT_BF16, DT_FP8, QS_NONE, QS_TENSOR },
        { "{weights: bf16, mlp_weights: int8}", DT_BF16, DT_INT8, QS_NONE, QS_ROW },
        { "{weights: fp8_rowwise, mlp_weights: bf16}", DT_FP8, DT_BF16, QS_ROW, QS_NONE },
        { "{mlp_weights: fp8_rowwise}", DT_BF16, DT_FP8, QS_NONE, QS_ROW },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%sprecision: %s\n", base, cases[i].precision);
        scenario s;
        cp_err err = { 0 };
        ck_assert_msg(load_text(text, NULL, 0, NULL, &s, &err) == 0, "%s: %s",
                      cases[i].precision, err.msg);
        ck_assert_int_eq(s.w_dtype, cases[i].w);
        ck_assert_int_eq(s.w_qscale, cases[i].wq);
        ck_assert_int_eq(s.mlp_dtype, cases[i].mlp);
        ck_assert_int_eq(s.mlp_qscale, cases[i].mq);
        json_t *j = wl_resolved(&s);
        json_t *m = json_object_get(json_object_get(j, "precision"), "mlp_weights");
        if (cases[i].w == cases[i].mlp && cases[i].wq == cases[i].mq)
            ck_assert_ptr_null(m);
        else
            ck_assert_str_eq(json_string_value(m), wl_mlp_weights_name(&s));
        json_decref(j);
        wl_free(&s);
    }
    /* a checkpoint stored in fp8 (DeepSeek-V3: 128 x 128 blocks): the MLP
     * follows it unless mlp_weights says otherwise, which is simulated with
     * a warning */
    scenario s;
    cp_err err = { 0 };
    static const char *const ds = "model: deepseek-v3\nplatform: h200-sxm-8\n"
                                  "parallel: {tp: 8}\nrequests: [{prompt_tokens: 64}]\n";
    ck_assert_msg(load_text(ds, NULL, 0, NULL, &s, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.mlp_dtype, DT_FP8);
    ck_assert_int_eq(s.mlp_qscale, QS_BLOCK);
    ck_assert_int_eq(s.nwarn, 0);
    wl_free(&s);
    static const char *const bf[] = { "precision.mlp_weights=bf16" };
    ck_assert_msg(load_text(ds, bf, 1, NULL, &s, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.w_dtype, DT_FP8);
    ck_assert_int_eq(s.w_qscale, QS_BLOCK);
    ck_assert_int_eq(s.mlp_dtype, DT_BF16);
    int warned = 0;
    for (int i = 0; i < s.nwarn; i++)
        warned |= strstr(s.warn[i], "precision.mlp_weights bf16") != NULL;
    ck_assert_msg(warned, "no warning about the MLP's checkpoint format");
    wl_free(&s);

    /* refusals, located */
    char text[512], want[512];
    snprintf(text, sizeof text, "%sprecision:\n  weights: bf16\n  mlp_weights: fp8_row\n", base);
    ck_assert_int_eq(load_text(text, NULL, 0, NULL, &s, &err), -1);
    snprintf(want, sizeof want, "%s:7:16: precision.mlp_weights: expected one of bf16, fp16, "
             "fp8, int8, fp32, int4, fp8_tensor, fp8_rowwise, fp8_blockwise, got \"fp8_row\"",
             wpath);
    assert_msg(&err, want);
    snprintf(text, sizeof text, "%sprecision:\n  quant_description: q.json\n"
             "  mlp_weights: int8\n", base);
    cp_err e2 = { 0 };
    ck_assert_int_eq(load_text(text, NULL, 0, NULL, &s, &e2), -1);
    snprintf(want, sizeof want, "%s:7:16: precision.mlp_weights: precision.quant_description "
             "already types every linear weight", wpath);
    assert_msg(&e2, want);
    ck_assert_ptr_null(s.doc);
}
END_TEST

START_TEST(test_workload_default_file)
{
    scenario s;
    cp_err err = { 0 };
    ck_assert_msg(wl_load(NULL, NULL, 0, NULL, &s, &err) == 0, "%s", err.msg);
    const char *tail = "/workloads/default.yaml";
    ck_assert_str_eq(s.path + strlen(s.path) - strlen(tail), tail);
    ck_assert_str_eq(s.model.name, "qwen3-omni-30b-a3b-thinker");
    ck_assert_str_eq(s.plat.name, "h100-sxm-8");
    ck_assert_int_eq(s.par.tp, 8);
    ck_assert_int_eq(s.nreqs, 1);
    ck_assert_int_eq(s.reqs[0].prompt_tokens, 32768);
    wl_free(&s);
}
END_TEST

START_TEST(test_workload_set_and_platform)
{
    static const char *const sets[] = {
        "parallel.tp=2",        "parallel.tp=4",          "parallel.sp=2",
        "precision=fp8",        "requests.1.prompt_tokens=100",
        "requests.1.arrival_s=3", "engine={graph: captured}",
    };
    scenario s;
    cp_err err = { 0 };
    ck_assert_msg(load_text(base, sets, 7, NULL, &s, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.par.tp, 4);
    ck_assert_int_eq(s.par.sp, 2);
    ck_assert_int_eq(s.w_dtype, DT_FP8);
    ck_assert_int_eq(s.kv_dtype, DT_FP8);
    ck_assert_int_eq(s.nreqs, 2);
    ck_assert_int_eq(s.reqs[1].prompt_tokens, 100);
    ck_assert(s.reqs[1].arrival_s == 3.0);
    ck_assert_int_eq(s.graph, GRAPH_CAPTURED);
    wl_free(&s);

    /* a scalar platform grows overrides; --platform replaces the name only */
    static const char *const nodes[] = { "platform.nodes=2", "parallel.tp=16" };
    ck_assert_msg(load_text(base, nodes, 2, NULL, &s, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(s.plat.name, "h100-sxm-8");
    ck_assert_int_eq(plat_devices(&s.plat), 16);
    wl_free(&s);
    ck_assert_msg(load_text(base, nodes, 2, "h200-sxm-8", &s, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(s.plat.name, "h200-sxm-8");
    ck_assert_int_eq(plat_devices(&s.plat), 16);
    wl_free(&s);
    ck_assert_msg(load_text("model: qwen3-32b\nrequests: [{prompt_tokens: 1}]\n", NULL, 0,
                            "b200-8", &s, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(s.plat.name, "b200-8");
    wl_free(&s);

    ck_assert_int_eq(load_text(base, NULL, 0, "h100-sxm-80", &s, &err), -1);
    assert_msg(&err, "--platform h100-sxm-80: platform: unknown platform preset");
    ck_assert_ptr_null(s.doc);
}
END_TEST

/* One validation case: --set assignments on `base`, and the expected
 * outcome (want == NULL: accepted). */
typedef struct vcase {
    const char *sets[5];
    const char *want;
} vcase;

static const vcase vcases[] = {
    /* heads and KV heads (32 heads, 4 KV heads) */
    { { "parallel.tp=8" }, NULL },
    { { "parallel.tp=2" }, NULL },
    { { "parallel.tp=3" }, "--set parallel.tp=3: parallel.tp: tp = 3 does not divide the 32 "
                           "attention heads" },
    { { "model=" CONFIGS "gqa-24h-8kv.json", "parallel.tp=4" }, NULL },
    { { "model=" CONFIGS "gqa-24h-8kv.json", "parallel.tp=6" },
      "parallel.tp: tp = 6 and the 8 KV heads of gqa-24h-8kv: one must divide the other" },
    /* devices */
    { { "parallel.tp=2", "parallel.sp=2", "parallel.dp=2" }, NULL },
    { { "parallel.tp=4", "parallel.dp=4" },
      "parallel: tp*sp*dp = 16 needs 16 devices, platform h100-sxm-8 has 8" },
    { { "parallel.dp=9" }, "--set parallel.dp=9: parallel: tp*sp*dp = 9 needs 9 devices" },
    /* MoE and EP */
    { { "parallel.tp=8", "parallel.ep=8" }, NULL },
    { { "parallel.tp=8", "parallel.ep=3" }, "parallel.ep: ep = 3 does not divide tp*sp*dp = 8" },
    { { "model=" CONFIGS "moe-60e.json", "parallel.tp=4" }, NULL },
    { { "model=" CONFIGS "moe-60e.json", "parallel.tp=8" },
      "parallel.tp: tp = 8 does not divide moe_intermediate_size 1100 of moe-60e" },
    { { "model=" CONFIGS "moe-60e.json", "parallel.tp=8", "parallel.ep=2" }, NULL },
    { { "model=" CONFIGS "moe-60e.json", "parallel.tp=8", "parallel.ep=8" },
      "parallel.ep: ep = 8 does not divide the 60 experts of moe-60e" },
    { { "model=qwen3-32b", "parallel.tp=8" }, NULL },
    { { "model=qwen3-32b", "parallel.tp=8", "parallel.ep=2" },
      "parallel.ep: ep = 2 needs a MoE model; qwen3-32b has no routed experts" },
    /* exchange x kv_storage (cp-exchange.md table), sp = 2 */
    { { "parallel.tp=4", "parallel.sp=2" }, NULL },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.exchange=ulysses" }, NULL },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.exchange=all_gather" },
      "parallel.exchange: \"all_gather\" needs kv_storage by_position; with kv_storage by_head "
      "the accepted values are auto, ulysses (and none when sp = 1)" },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.exchange=ring" },
      "--set parallel.exchange=ring: parallel.exchange: \"ring\" needs kv_storage by_position" },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.exchange=none" },
      "parallel.exchange: \"none\" with kv_storage by_head needs sp = 1 (parallel.sp = 2)" },
    { { "parallel.tp=4", "parallel.exchange=none" }, NULL },
    { { "parallel.tp=4", "parallel.exchange=ring" },
      "\"ring\" needs kv_storage by_position" },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position" }, NULL },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
        "parallel.exchange=all_gather" }, NULL },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
        "parallel.exchange=ring" }, NULL },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
        "parallel.exchange=ring_kv" }, NULL },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_head",
        "parallel.exchange=ring_kv" },
      "parallel.exchange: \"ring_kv\" needs kv_storage by_position; with kv_storage by_head the "
      "accepted values are auto, ulysses" },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
        "parallel.exchange=none" }, NULL },
    /* the rings: striped or zigzag, ring_select only on a ring */
    { { "parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
        "parallel.exchange=ring", "parallel.split=zigzag" }, NULL },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
        "parallel.exchange=ring_kv", "parallel.split=contiguous" },
      "parallel.split: the ring exchanges (ring, ring_kv) split by the KV positions each rank "
      "stores, striped or zigzag, not contiguous" },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
        "parallel.exchange=ring", "parallel.ring_select=simulate" }, NULL },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
        "parallel.exchange=all_gather", "parallel.ring_select=rule" },
      "--set parallel.ring_select=rule: parallel.ring_select: rule picks pass-KV or pass-Q for "
      "the split steps of a ring exchange" },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.ring_select=fixed" }, NULL },
    /* a cached prefix on split steps: all but all_gather of k/v read it */
    { { "parallel.sp=2", "parallel.kv_storage=by_position", "parallel.exchange=ring_kv",
        "requests.0.cached_tokens=1024" }, NULL },
    { { "parallel.sp=2", "parallel.kv_storage=by_position", "parallel.exchange=all_gather",
        "requests.0.cached_tokens=1024" }, NULL },
    { { "parallel.sp=2", "parallel.kv_storage=by_position", "parallel.exchange=all_gather",
        "parallel.all_gather_tensors=kv", "requests.0.cached_tokens=1024" },
      "--set parallel.all_gather_tensors=kv: parallel.all_gather_tensors: kv gathers a split "
      "step's own K/V only, so a split prefill after a cached prefix (request 0: cached_tokens "
      "1024, prompt_tokens 4096) would miss the prefix's keys" },
    { { "parallel.sp=2", "parallel.kv_storage=by_position", "parallel.exchange=all_gather",
        "parallel.all_gather_tensors=kv", "parallel.min_tokens=8192" }, NULL },
    { { "parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
        "parallel.exchange=ulysses" },
      "parallel.exchange: \"ulysses\" needs kv_storage by_head; with kv_storage by_position the "
      "accepted values are auto, all_gather, ring, ring_kv, none" },
    /* Ulysses: heads per TP rank divisible by sp */
    { { "parallel.tp=2", "parallel.sp=4" }, NULL },
    { { "parallel.tp=2", "parallel.sp=3" },
      "--set parallel.sp=3: parallel.sp: Ulysses (exchange auto, kv_storage by_head) spreads the "
      "16 heads of a TP rank (32 heads / tp 2) over sp = 3" },
    { { "parallel.tp=2", "parallel.sp=3", "parallel.kv_storage=by_position" }, NULL },
    /* chunked prefill */
    { { "engine.chunked_prefill=true" }, NULL },
    { { "engine.chunked_prefill=true", "parallel.tp=4", "parallel.sp=2" },
      "engine.chunked_prefill: chunked prefill is off on SP nodes (parallel.sp = 2)" },
    /* DSA CP */
    { { "model=deepseek-v3.2-exp", "parallel.tp=8", "parallel.dsa_cp=on" }, NULL },
    { { "parallel.tp=8", "parallel.dsa_cp=off" }, NULL },
    { { "parallel.tp=8", "parallel.dsa_cp=on" },
      "parallel.dsa_cp: on needs a model with a DSA indexer" },
    /* layer sharding */
    { { "model=deepseek-v3.2-exp", "parallel.tp=8", "parallel.sequence_parallel=true",
        "parallel.layer_sharding=[q_b_proj, kv_b_proj, o_proj, q_a_proj, kv_a_proj]" }, NULL },
    { { "model=deepseek-v3", "parallel.tp=8", "parallel.layer_sharding=[o_proj]" },
      "parallel.layer_sharding: layer sharding distributes full-layout projections, which only "
      "DSA CP gives every rank" },
    { { "parallel.layer_sharding=[o_proj]" }, "which only DSA CP gives every rank" },
    { { "parallel.layer_sharding=[kv_a_proj]" },
      "parallel.layer_sharding.0: kv_a_proj needs an MLA model; qwen3-omni-30b-a3b-thinker uses "
      "GQA attention" },
    { { "model=" CONFIGS "mla-no-qlora.json", "parallel.layer_sharding=[kv_b_proj, kv_a_proj]" },
      "which only DSA CP gives every rank" },
    { { "model=" CONFIGS "mla-no-qlora.json", "parallel.layer_sharding=[o_proj, q_a_proj]" },
      "parallel.layer_sharding.1: q_a_proj needs q_lora_rank > 0" },
    { { "parallel.layer_sharding=[o_proj, o_proj]" }, "\"o_proj\" is listed twice" },
    { { "parallel.layer_sharding=[a, b, c, d, e, f, g, h, i]" },
      "parallel.layer_sharding: at most 8 names, got 9" },
    /* prompts beyond the model's positions are what-if studies */
    { { "requests.0.prompt_tokens=16777216" }, NULL },
    { { "requests.0.prompt_tokens=16777217" }, "expected an integer in [1, 16777216]" },
};

START_TEST(test_workload_validation)
{
    const vcase *c = &vcases[_i];
    int n = 0;
    while (n < 5 && c->sets[n])
        n++;
    scenario s;
    cp_err err = { 0 };
    int rc = load_text(base, c->sets, n, NULL, &s, &err);
    if (!c->want) {
        ck_assert_msg(rc == 0, "case %d (%s): %s", _i, c->sets[0], err.msg);
        wl_free(&s);
        return;
    }
    ck_assert_msg(rc == -1, "case %d (%s): accepted", _i, c->sets[0]);
    assert_msg(&err, c->want);
}
END_TEST

START_TEST(test_workload_silent_beyond_max_position)
{
    static const char *const sets[] = { "requests.0.prompt_tokens=1000000" };
    fflush(stderr);
    int saved = dup(2);
    char errpath[128];
    snprintf(errpath, sizeof errpath, "%s/stderr", tmpdir);
    int fd = open(errpath, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    dup2(fd, 2);
    close(fd);
    scenario s;
    cp_err err = { 0 };
    int rc = load_text(base, sets, 1, NULL, &s, &err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ck_assert_msg(rc == 0, "%s", err.msg);
    ck_assert_int_gt(s.reqs[0].prompt_tokens, s.model.max_position);
    wl_free(&s);
    FILE *f = fopen(errpath, "r");
    fseek(f, 0, SEEK_END);
    ck_assert_int_eq(ftell(f), 0);
    fclose(f);
    unlink(errpath);
}
END_TEST

START_TEST(test_workload_locations)
{
    scenario s;
    cp_err err = { 0 };
    static const char *const text =
        "model: qwen3-omni-30b-a3b-thinker\n"
        "platform: h100-sxm-8\n"
        "parallel:\n"
        "  sp: 1\n"
        "  tp: 3\n"
        "requests:\n"
        "  - prompt_tokens: 4096\n";
    ck_assert_int_eq(load_text(text, NULL, 0, NULL, &s, &err), -1);
    char want[256];
    snprintf(want, sizeof want, "%s:5:7: parallel.tp: tp = 3", wpath);
    assert_msg(&err, want);

    cp_err e2 = { 0 };
    ck_assert_int_eq(load_text("model: no-such-model\nplatform: h100-sxm-8\n"
                               "requests: [{prompt_tokens: 1}]\n", NULL, 0, NULL, &s, &e2), -1);
    snprintf(want, sizeof want, "%s:1:8: model: unknown model \"no-such-model\"", wpath);
    assert_msg(&e2, want);

    /* a message that already points into the workload is not prefixed twice */
    cp_err e3 = { 0 };
    ck_assert_int_eq(load_text("model: qwen3-32b\nplatform:\n  name: h100-sxm-8\n  nodez: 2\n"
                               "requests: [{prompt_tokens: 1}]\n", NULL, 0, NULL, &s, &e3), -1);
    snprintf(want, sizeof want, "%s:4:3: unknown key \"nodez\"", wpath);
    ck_assert_msg(strncmp(e3.msg, want, strlen(want)) == 0, "%s", e3.msg);

    cp_err e4 = { 0 };
    static const char *const sets[] = { "model=qwen3-3b" };
    ck_assert_int_eq(load_text(base, sets, 1, NULL, &s, &e4), -1);
    assert_msg(&e4, "--set model=qwen3-3b: model: unknown model \"qwen3-3b\"");

    cp_err e5 = { 0 };
    ck_assert_int_eq(load_text("model: qwen3-32b\nplatform: {nodes: 2}\n"
                               "requests: [{prompt_tokens: 1}]\n", NULL, 0, NULL, &s, &e5), -1);
    snprintf(want, sizeof want, "%s:2:11: platform: the mapping needs a name", wpath);
    assert_msg(&e5, want);
    ck_assert_ptr_null(s.doc);
}
END_TEST

START_TEST(test_workload_dump)
{
    scenario s;
    cp_err err = { 0 };
    int rc = wl_load(CP_SRCDIR "/workloads/examples/sp-ring.yaml", NULL, 0, NULL, &s, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    wl_dump(&s, f);
    fclose(f);
    wl_free(&s);

    ydoc *doc = yio_parse_string(text, len, "dump", &err);
    ck_assert_msg(doc != NULL, "%s\n%s", err.msg, text);
    const ynode *root = yio_root(doc);
    ck_assert_str_eq(yio_key(yio_key(root, "parallel"), "exchange")->str, "ring");
    const ynode *res = yio_key(root, "resolved");
    ck_assert_ptr_nonnull(res);
    const ynode *model = yio_key(res, "model");
    ck_assert_str_eq(yio_key(model, "name")->str, "qwen3-omni-30b-a3b-thinker");
    ck_assert_str_eq(yio_key(model, "heads")->str, "32");
    ck_assert_str_eq(yio_key(model, "kv_heads")->str, "4");
    ck_assert_str_eq(yio_key(model, "moe")->str, "true");
    ck_assert_str_eq(yio_key(model, "dsa")->str, "false");
    const ynode *plat = yio_key(res, "platform");
    ck_assert_str_eq(yio_key(plat, "devices")->str, "8");
    ck_assert_str_eq(yio_key(yio_key(plat, "device"), "model")->str, "H100 SXM5");
    const ynode *par = yio_key(res, "parallel");
    ck_assert_str_eq(yio_key(par, "sp")->str, "2");
    ck_assert_str_eq(yio_key(par, "dp")->str, "1");
    ck_assert_str_eq(yio_key(par, "kv_storage")->str, "by_position");
    ck_assert_str_eq(yio_key(par, "all_gather_tensors")->str, "qkv");
    ck_assert_str_eq(yio_key(par, "dsa_cp")->str, "auto");
    ck_assert_int_eq(yio_key(par, "layer_sharding")->kind, YN_SEQ);
    ck_assert_str_eq(yio_key(yio_key(res, "precision"), "kv_cache")->str, "fp8");
    ck_assert_str_eq(yio_key(yio_key(res, "engine"), "chunked_prefill")->str, "false");
    ck_assert_str_eq(yio_key(yio_key(res, "simulation"), "network_model")->str, "cm02");
    const ynode *reqs = yio_key(res, "requests");
    ck_assert_int_eq(reqs->n, 2);
    ck_assert_str_eq(yio_key(reqs->kids[1], "arrival_s")->str, "0.25");
    yio_free(doc);
    free(text);
}
END_TEST

START_TEST(test_workload_names)
{
    ck_assert_str_eq(wl_exchange_name(EX_AUTO), "auto");
    ck_assert_str_eq(wl_exchange_name(EX_ULYSSES), "ulysses");
    ck_assert_str_eq(wl_exchange_name(EX_ALL_GATHER), "all_gather");
    ck_assert_str_eq(wl_exchange_name(EX_RING), "ring");
    ck_assert_str_eq(wl_exchange_name(EX_RING_KV), "ring_kv");
    ck_assert_str_eq(wl_exchange_name(EX_NONE), "none");
    ck_assert_str_eq(wl_exchange_name((wl_exchange)6), "?");
    ck_assert_str_eq(wl_ring_select_name(RS_FIXED), "fixed");
    ck_assert_str_eq(wl_ring_select_name(RS_RULE), "rule");
    ck_assert_str_eq(wl_ring_select_name(RS_SIMULATE), "simulate");
    ck_assert_str_eq(wl_ring_select_name((wl_ring_select)3), "?");
    ck_assert(sc_exchange_is_ring(EX_RING) && sc_exchange_is_ring(EX_RING_KV));
    ck_assert(!sc_exchange_is_ring(EX_ALL_GATHER) && !sc_exchange_is_ring(EX_NONE));
    ck_assert_str_eq(wl_kv_storage_name(KV_BY_HEAD), "by_head");
    ck_assert_str_eq(wl_kv_storage_name(KV_BY_POSITION), "by_position");
    ck_assert_str_eq(wl_kv_storage_name((wl_kv_storage)2), "?");
    ck_assert_str_eq(wl_split_name(SPLIT_STRIPED), "striped");
    ck_assert_str_eq(wl_split_name(SPLIT_CONTIGUOUS), "contiguous");
    ck_assert_str_eq(wl_split_name(SPLIT_ZIGZAG), "zigzag");
    ck_assert_str_eq(wl_split_name((wl_split)3), "?");
}
END_TEST

/* ---- request sources ------------------------------------------------------ */

static const char *const head =
    "model: qwen3-omni-30b-a3b-thinker\n"
    "platform: h100-sxm-8\n";

/* head + text loaded into s; asserts it loads. */
static void load_ok(const char *text, scenario *s)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s%s", head, text);
    cp_err err = { 0 };
    ck_assert_msg(load_text(buf, NULL, 0, NULL, s, &err) == 0, "%s", err.msg);
}

START_TEST(test_workload_request_defaults)
{
    scenario s;
    load_ok("requests: [{prompt_tokens: 4096}]\n", &s);
    ck_assert_int_eq(s.nreqs, 1);
    ck_assert_int_eq(s.reqs[0].cached_tokens, 0);
    ck_assert_int_eq(s.reqs[0].cls, -1);
    ck_assert_int_eq(s.nstreams, 0);
    ck_assert_int_eq(s.nclasses, 0);
    ck_assert(s.duration_s == 0.0);
    ck_assert_int_eq(s.max_num_seqs, 1024);
    ck_assert_int_eq(s.router, ROUTE_ROUND_ROBIN);
    ck_assert_int_eq(s.serving, 0);
    wl_free(&s);
    load_ok("engine: {max_num_seqs: 64, router: least_loaded}\n"
            "parallel: {tp: 4, dp: 2}\n"
            "requests: [{prompt_tokens: 4096, cached_tokens: 1024, name: chat},\n"
            "           {prompt_tokens: 64}]\n", &s);
    ck_assert_int_eq(s.max_num_seqs, 64);
    ck_assert_int_eq(s.router, ROUTE_LEAST_LOADED);
    ck_assert_int_eq(s.reqs[0].cached_tokens, 1024);
    ck_assert_int_eq(s.reqs[0].cls, 0);
    ck_assert_int_eq(s.nclasses, 1);
    ck_assert_str_eq(s.classes[0], "chat");
    wl_free(&s);
}
END_TEST

START_TEST(test_workload_periodic)
{
    scenario s;
    load_ok("requests:\n"
            "  - {every_s: 0.25, count: 5, start_s: 1, prompt_tokens: 512, decode_tokens: 8,\n"
            "     cached_tokens: 64, name: tick}\n", &s);
    ck_assert_int_eq(s.nreqs, 5);
    for (int k = 0; k < 5; k++) {
        ck_assert(s.reqs[k].arrival_s == 1.0 + 0.25 * k);
        ck_assert_int_eq(s.reqs[k].prompt_tokens, 512);
        ck_assert_int_eq(s.reqs[k].decode_tokens, 8);
        ck_assert_int_eq(s.reqs[k].cached_tokens, 64);
        ck_assert_int_eq(s.reqs[k].cls, 0);
    }
    ck_assert_str_eq(s.classes[0], "tick");
    ck_assert_int_eq(s.serving, 1);
    wl_free(&s);
    /* start_s defaults to 0; one request is still a source */
    load_ok("requests: [{every_s: 3, count: 1, prompt_tokens: 7}]\n", &s);
    ck_assert_int_eq(s.nreqs, 1);
    ck_assert(s.reqs[0].arrival_s == 0.0);
    ck_assert_int_eq(s.serving, 1);
    wl_free(&s);
}
END_TEST

/* The arrivals of a Poisson entry as loaded (count of them into t). */
static void poisson_arrivals(const char *seed, double *t, int count)
{
    char text[512];
    snprintf(text, sizeof text, "requests: [{rate_per_s: 10, count: %d, seed: %s, start_s: 5, "
             "prompt_tokens: 128}]\n", count, seed);
    scenario s;
    load_ok(text, &s);
    ck_assert_int_eq(s.nreqs, count);
    for (int k = 0; k < count; k++)
        t[k] = s.reqs[k].arrival_s;
    ck_assert_int_eq(s.serving, 1);
    wl_free(&s);
}

START_TEST(test_workload_poisson)
{
    enum { N = 2000 };
    static double a[N], b[N], c[N];
    poisson_arrivals("42", a, N);
    poisson_arrivals("42", b, N);
    poisson_arrivals("43", c, N);
    ck_assert(memcmp(a, b, sizeof a) == 0);     /* a seed gives the same arrivals */
    ck_assert(memcmp(a, c, sizeof a) != 0);
    ck_assert(a[0] != c[0]);
    /* after start_s, increasing; mean inter-arrival 1 / rate = 0.1 s within
     * 10 % (the mean of 2000 has a standard deviation of 2.2 %), and about
     * 1 - 1/e of the intervals shorter than the mean (exponential) */
    ck_assert(a[0] > 5.0);
    int shorter = 0;
    for (int k = 1; k < N; k++) {
        ck_assert(a[k] >= a[k - 1]);
        shorter += a[k] - a[k - 1] < 0.1;
    }
    double mean = (a[N - 1] - 5.0) / N;
    ck_assert_msg(mean > 0.09 && mean < 0.11, "mean inter-arrival %g s", mean);
    double frac = (double)shorter / (N - 1);
    ck_assert_msg(frac > 0.58 && frac < 0.68, "%g of the intervals below the mean", frac);
}
END_TEST

/* Keys that would change nothing are refused, or the way they are priced
 * is said (issue 30 parts 6 and 7). */
START_TEST(test_workload_keys_that_change_nothing)
{
    char text[512];
    scenario s;
    cp_err err = { 0 };
    /* a router with one replica, or for a single request */
    snprintf(text, sizeof text, "%sparallel: {tp: 8}\nengine: {router: least_loaded}\n", base);
    ck_assert_int_eq(load_text(text, NULL, 0, NULL, &s, &err), -1);
    assert_msg(&err, "engine.router: how the parallel.dp replicas of a serving run share its "
                     "requests; this run has one replica");
    static const char *const dp2[] = { "parallel.tp=4", "parallel.dp=2" };
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(load_text(text, dp2, 2, NULL, &s, &err), -1);
    assert_msg(&err, "this run has a single request");
    /* a replay tolerance where nothing replays */
    static const char *const unfolded[] = { "simulation.fold_layers=false",
                                            "simulation.replay_tolerance_s=1e-7" };
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(load_text(base, unfolded, 2, NULL, &s, &err), -1);
    assert_msg(&err, "simulation.replay_tolerance_s: a tolerance of the replay of folded "
                     "layers, and simulation.fold_layers is false");
    /* precision given as a scalar, then one of its keys by --set */
    snprintf(text, sizeof text, "%sprecision: bf16\n", base);
    static const char *const mlp[] = { "precision.mlp_weights=fp8_rowwise" };
    ck_assert_int_eq(load_text(text, mlp, 1, NULL, &s, &err), 0);
    ck_assert_int_eq(s.w_dtype, DT_BF16);
    ck_assert_int_eq(s.mlp_dtype, DT_FP8);
    ck_assert_int_eq(s.a_dtype, DT_BF16);
    wl_free(&s);
    /* 8-bit weights on a device without that compute: priced at bf16, said */
    static const char *const fp8[] = { "precision.weights=fp8" };
    ck_assert_int_eq(load_text(text, fp8, 1, "ascend-910b-8", &s, &err), 0);
    int said = 0;
    for (int i = 0; i < s.nwarn; i++)
        said |= strstr(s.warn[i], "precision.weights fp8: platform ascend-910b-8 has no fp8 "
                                  "compute") != NULL;
    ck_assert_msg(said, "no warning for fp8 weights on ascend-910b-8");
    wl_free(&s);
    ck_assert_int_eq(load_text(text, fp8, 1, "h200-sxm-8", &s, &err), 0);
    for (int i = 0; i < s.nwarn; i++)
        ck_assert_ptr_null(strstr(s.warn[i], "has no fp8 compute"));
    wl_free(&s);
}
END_TEST

/* Requests past the model's positions (max_position_embeddings, extended
 * by rope_scaling): simulated as given, with one warning counting the long
 * prompts and the decodes that run past, in run and serving workloads. */
START_TEST(test_workload_context)
{
    static const struct {
        const char *yaml;
        const char *want; /* NULL: no warning */
    } cases[] = {
        {"model: qwen3-32b\nplatform: h200-sxm-8\nparallel: {tp: 8}\n"
         "requests: [{prompt_tokens: 40000, cached_tokens: 960}]\n", NULL},
        {"model: qwen3-32b\nplatform: h200-sxm-8\nparallel: {tp: 8}\n"
         "requests: [{prompt_tokens: 40000, cached_tokens: 961}]\n",
         "qwen3-32b.json: the model is built for 40960 positions (max_position_embeddings); "
         "requests past them are simulated as given: 1 with a longer prompt (cached + prompt "
         "tokens), 0 more by decoding, up to position 40961"},
        {"model: qwen3-32b\nplatform: h200-sxm-8\nparallel: {tp: 8}\n"
         "requests: [{prompt_tokens: 40000, decode_tokens: 1000}, {prompt_tokens: 50000, "
         "arrival_s: 1}, {streams: 2, prompt_tokens: 60000, decode_tokens: 4, count: 1}]\n",
         "qwen3-32b.json: the model is built for 40960 positions (max_position_embeddings); "
         "requests past them are simulated as given: 2 with a longer prompt (cached + prompt "
         "tokens), 1 more by decoding, up to position 60004"},
        /* DeepSeek-R1: YaRN factor 40 x 4096 = its max_position_embeddings */
        {"model: deepseek-r1\nplatform: h200-sxm-8\nparallel: {tp: 8}\n"
         "requests: [{prompt_tokens: 163841}]\n",
         "deepseek-r1.json: the model is built for 163840 positions (max_position_embeddings); "
         "requests past them are simulated as given: 1 with a longer prompt (cached + prompt "
         "tokens), 0 more by decoding, up to position 163841"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        scenario s;
        cp_err err = { 0 };
        ck_assert_msg(load_text(cases[c].yaml, NULL, 0, NULL, &s, &err) == 0, "%s", err.msg);
        const char *got = NULL;
        for (int i = 0; i < s.nwarn; i++)
            if (strstr(s.warn[i], "positions (max_position_embeddings"))
                got = s.warn[i];
        if (cases[c].want)
            ck_assert_msg(got && !strcmp(got, cases[c].want), "case %zu: %s", c,
                          got ? got : "no warning");
        else
            ck_assert_msg(!got, "case %zu: %s", c, got);
        wl_free(&s);
    }
}
END_TEST

START_TEST(test_workload_trace)
{
    char csv[160];
    snprintf(csv, sizeof csv, "%s/t.csv", tmpdir);
    FILE *f = fopen(csv, "w");
    ck_assert_ptr_nonnull(f);
    fputs("arrival_s,prompt_tokens,decode_tokens,cached_tokens,name\r\n"
          "2.5,100,10,5,long\r\n"
          "0.5,200,20,0,\r\n"
          " 1.0 , 300 ,30,0,short\r\n"
          "\r\n"
          "1e0,400,40,7,long\r\n", f);
    fclose(f);
    scenario s;
    load_ok("requests:\n"
            "  - {prompt_tokens: 9, arrival_s: 1}\n"
            "  - {trace: t.csv, name: dflt}\n", &s);
    /* sorted by arrival, file order at equal times (the single entry first) */
    static const long long prompt[] = { 200, 9, 300, 400, 100 };
    static const double at[] = { 0.5, 1.0, 1.0, 1.0, 2.5 };
    static const int cls[] = { 0, -1, 2, 1, 1 };
    ck_assert_int_eq(s.nreqs, 5);
    for (int q = 0; q < 5; q++) {
        ck_assert_int_eq(s.reqs[q].prompt_tokens, prompt[q]);
        ck_assert(s.reqs[q].arrival_s == at[q]);
        ck_assert_int_eq(s.reqs[q].cls, cls[q]);
    }
    ck_assert_int_eq(s.reqs[3].decode_tokens, 40);
    ck_assert_int_eq(s.reqs[3].cached_tokens, 7);
    ck_assert_int_eq(s.nclasses, 3);
    ck_assert_str_eq(s.classes[0], "dflt");
    ck_assert_str_eq(s.classes[1], "long");
    ck_assert_str_eq(s.classes[2], "short");
    ck_assert_int_eq(s.serving, 1);
    /* the trace is one of the files the scenario read (its hash) */
    char paths[64][1024];
    int n = wl_files(&s, paths, 64), found = 0;
    for (int i = 0; i < n; i++)
        found += strcmp(paths[i], csv) == 0;
    ck_assert_int_eq(found, 1);
    wl_free(&s);

    /* three columns: no cached tokens, no class without the entry's name */
    f = fopen(csv, "w");
    fputs("arrival_s,prompt_tokens,decode_tokens\n3,1024,1\n", f);
    fclose(f);
    load_ok("requests: [{trace: t.csv}]\n", &s);
    ck_assert_int_eq(s.nreqs, 1);
    ck_assert_int_eq(s.reqs[0].cached_tokens, 0);
    ck_assert_int_eq(s.reqs[0].cls, -1);
    ck_assert(s.reqs[0].arrival_s == 3.0);
    ck_assert_int_eq(s.serving, 1);
    wl_free(&s);

    /* errors name the CSV file and line */
    f = fopen(csv, "w");
    fputs("arrival_s,prompt_tokens,decode_tokens,cached_tokens\n0,1,1,0\n1,2,x,0\n", f);
    fclose(f);
    char text[256], want[256];
    snprintf(text, sizeof text, "%srequests: [{trace: t.csv}]\n", head);
    cp_err err = { 0 };
    ck_assert_int_eq(load_text(text, NULL, 0, NULL, &s, &err), -1);
    snprintf(want, sizeof want, "%s:3:5: decode_tokens: expected an integer in [0, 1000000], "
             "got \"x\"", csv);
    assert_msg(&err, want);

    /* decimal only: hex integers and hex floats are refused, not read as
     * 1024 tokens or 8 s */
    static const char *const rows[][2] = {
        { "0,0x400,1\n",
          "2:3: prompt_tokens: expected an integer in [1, 16777216], got \"0x400\"" },
        { "0x1p3,4,1\n", "2:1: arrival_s: expected a number in [0, 1e+06], got \"0x1p3\"" },
        { "inf,4,1\n", "2:1: arrival_s: expected a number in [0, 1e+06], got \"inf\"" },
        { "1,4.,1e\n", "2:6: decode_tokens: expected an integer in [0, 1000000], got \"1e\"" },
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        f = fopen(csv, "w");
        fprintf(f, "arrival_s,prompt_tokens,decode_tokens\n%s", rows[k][0]);
        fclose(f);
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(load_text(text, NULL, 0, NULL, &s, &err), -1);
        snprintf(want, sizeof want, "%s:%s", csv, rows[k][1]);
        assert_msg(&err, want);
    }
    /* a NUL byte would end the row early: refused at its column */
    f = fopen(csv, "w");
    fputs("arrival_s,prompt_tokens,decode_tokens\n1,4", f);
    fputc('\0', f);
    fputs("096,1\n", f);
    fclose(f);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(load_text(text, NULL, 0, NULL, &s, &err), -1);
    snprintf(want, sizeof want, "%s:2:4: a NUL byte in the row (a CSV trace is text)", csv);
    assert_msg(&err, want);
    unlink(csv);
}
END_TEST

/* The mix: closed-loop clients beside a periodic long prompt. */
static const char *const mix =
    "simulation: {duration_s: 30}\n"
    "requests:\n"
    "  - {streams: 8, prompt_tokens: 1024, decode_tokens: 256, think_s: 0.5, start_s: 1,\n"
    "     name: short}\n"
    "  - {every_s: 10, count: 3, prompt_tokens: 32768, cached_tokens: 0, name: long}\n"
    "  - {prompt_tokens: 16, arrival_s: 4}\n";

START_TEST(test_workload_streams)
{
    scenario s;
    load_ok(mix, &s);
    ck_assert(s.duration_s == 30.0);
    ck_assert_int_eq(s.nstreams, 1);
    const wl_streams *c = &s.streams[0];
    ck_assert_int_eq(c->streams, 8);
    ck_assert_int_eq(c->prompt_tokens, 1024);
    ck_assert_int_eq(c->decode_tokens, 256);
    ck_assert_int_eq(c->cached_tokens, 0);
    ck_assert(c->think_s == 0.5);
    ck_assert(c->start_s == 1.0);
    ck_assert_int_eq(c->count, 0);
    ck_assert_int_eq(c->cls, 0);
    ck_assert_str_eq(s.classes[0], "short");
    ck_assert_str_eq(s.classes[1], "long");
    ck_assert_int_eq(s.nreqs, 4);
    ck_assert(s.reqs[0].arrival_s == 0.0 && s.reqs[0].cls == 1);
    ck_assert(s.reqs[1].arrival_s == 4.0 && s.reqs[1].cls == -1);
    ck_assert(s.reqs[3].arrival_s == 20.0 && s.reqs[3].prompt_tokens == 32768);
    ck_assert_int_eq(s.serving, 1);
    wl_free(&s);

    /* closed loop alone, with a count: no open-loop request, no duration */
    load_ok("requests: [{streams: 2, count: 4, prompt_tokens: 64}]\n", &s);
    ck_assert_int_eq(s.nreqs, 0);
    ck_assert_int_eq(s.nstreams, 1);
    ck_assert_int_eq(s.streams[0].count, 4);
    ck_assert_int_eq(s.streams[0].cls, -1);
    ck_assert(s.streams[0].think_s == 0.0);
    ck_assert_int_eq(s.serving, 1);
    wl_free(&s);
}
END_TEST

START_TEST(test_workload_merge_stable)
{
    scenario s;
    load_ok("requests:\n"
            "  - {prompt_tokens: 1, arrival_s: 0}\n"
            "  - {every_s: 1, count: 3, prompt_tokens: 2}\n"
            "  - {prompt_tokens: 3, arrival_s: 1}\n"
            "  - {every_s: 0.5, count: 3, start_s: 0.5, prompt_tokens: 4}\n"
            "  - {prompt_tokens: 5, arrival_s: 1}\n", &s);
    /* by arrival, entries in file order at equal times */
    static const long long want[] = { 1, 2, 4, 2, 3, 4, 5, 4, 2 };
    static const double at[] = { 0, 0, 0.5, 1, 1, 1, 1, 1.5, 2 };
    ck_assert_int_eq(s.nreqs, 9);
    for (int q = 0; q < 9; q++) {
        ck_assert_msg(s.reqs[q].prompt_tokens == want[q], "request %d: %lld", q,
                      (long long)s.reqs[q].prompt_tokens);
        ck_assert(s.reqs[q].arrival_s == at[q]);
    }
    wl_free(&s);

    /* single entries stay sorted among themselves, whatever lies between */
    cp_err err = { 0 };
    char text[512];
    snprintf(text, sizeof text, "%srequests:\n  - {prompt_tokens: 1, arrival_s: 2}\n"
             "  - {every_s: 1, count: 3, prompt_tokens: 2}\n"
             "  - {prompt_tokens: 3, arrival_s: 1}\n", head);
    ck_assert_int_eq(load_text(text, NULL, 0, NULL, &s, &err), -1);
    assert_msg(&err, "w.yaml:6:35: requests.2.arrival_s: requests must be sorted by arrival_s; "
               "1 comes after 2 of requests.0");
}
END_TEST

START_TEST(test_workload_serving_flag)
{
    scenario s;
    load_ok("requests: [{prompt_tokens: 4096, decode_tokens: 16}]\n", &s);
    ck_assert_int_eq(s.serving, 0);
    wl_free(&s);
    load_ok("simulation: {duration_s: 2.5}\nrequests: [{prompt_tokens: 4096}]\n", &s);
    ck_assert(s.duration_s == 2.5);
    ck_assert_int_eq(s.serving, 1);
    wl_free(&s);
    load_ok("requests: [{prompt_tokens: 4096}, {prompt_tokens: 1}]\n", &s);
    ck_assert_int_eq(s.serving, 1);
    wl_free(&s);
    load_ok("requests: [{rate_per_s: 1, count: 1, seed: 0, prompt_tokens: 1}]\n", &s);
    ck_assert_int_eq(s.nreqs, 1);
    ck_assert_int_eq(s.serving, 1);
    wl_free(&s);

    /* the plan-size bound is the one-plan run's: a serving run builds its
     * steps one at a time */
    static const char *const big = "requests: [{prompt_tokens: 4096, decode_tokens: 1000000}]\n";
    char text[512];
    snprintf(text, sizeof text, "%s%s", head, big);
    cp_err err = { 0 };
    ck_assert_int_eq(load_text(text, NULL, 0, NULL, &s, &err), -1);
    assert_msg(&err, "requests.0.decode_tokens: the plan would hold");
    static const char *const dur[] = { "simulation.duration_s=60" };
    ck_assert_msg(load_text(text, dur, 1, NULL, &s, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.serving, 1);
    wl_free(&s);
}
END_TEST

START_TEST(test_workload_request_resolved)
{
    scenario s;
    load_ok(mix, &s);
    json_t *j = wl_resolved(&s);
    json_t *eng = json_object_get(j, "engine"), *sim = json_object_get(j, "simulation");
    ck_assert_int_eq(json_integer_value(json_object_get(eng, "max_num_seqs")), 1024);
    ck_assert_str_eq(json_string_value(json_object_get(eng, "router")), "round_robin");
    ck_assert(json_real_value(json_object_get(sim, "duration_s")) == 30.0);
    ck_assert(json_is_true(json_object_get(j, "serving")));
    json_t *rq = json_object_get(j, "requests");
    ck_assert_int_eq(json_array_size(rq), 4);
    json_t *r0 = json_array_get(rq, 0), *r1 = json_array_get(rq, 1);
    ck_assert_str_eq(json_string_value(json_object_get(r0, "name")), "long");
    ck_assert_int_eq(json_integer_value(json_object_get(r0, "cached_tokens")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(r0, "prompt_tokens")), 32768);
    ck_assert_ptr_null(json_object_get(r1, "name"));
    ck_assert_int_eq(json_integer_value(json_object_get(r1, "prompt_tokens")), 16);
    json_t *st = json_array_get(json_object_get(j, "streams"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(st, "streams")), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(st, "decode_tokens")), 256);
    ck_assert(json_real_value(json_object_get(st, "think_s")) == 0.5);
    ck_assert_int_eq(json_integer_value(json_object_get(st, "count")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(st, "name")), "short");
    json_decref(j);

    /* the dump reads back as YAML (sweeps look keys up in it) */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    wl_dump(&s, f);
    fclose(f);
    wl_free(&s);
    cp_err err = { 0 };
    ydoc *doc = yio_parse_string(text, len, "dump", &err);
    ck_assert_msg(doc != NULL, "%s\n%s", err.msg, text);
    const ynode *res = yio_key(yio_root(doc), "resolved");
    ck_assert(strtod(yio_key(yio_key(res, "simulation"), "duration_s")->str, NULL) == 30.0);
    ck_assert_str_eq(yio_key(yio_key(res, "engine"), "router")->str, "round_robin");
    ck_assert_str_eq(yio_key(res, "serving")->str, "true");
    const ynode *st0 = yio_key(res, "streams")->kids[0];
    ck_assert_str_eq(yio_key(st0, "name")->str, "short");
    ck_assert_str_eq(yio_key(yio_key(res, "requests")->kids[0], "name")->str, "long");
    yio_free(doc);
    free(text);
}
END_TEST

/* Entries refused, each with (part of) its message; texts follow `head`. */
static const struct {
    const char *text;
    const char *want;
} rcases[] = {
    { "requests: [{prompt_tokens: 1, count: 3}]",
      "w.yaml:3:31: requests.0: a single request takes no count; its keys: prompt_tokens, "
      "arrival_s, decode_tokens, cached_tokens, audio_s, name" },
    { "requests: [{every_s: 1, count: 2, arrival_s: 1, prompt_tokens: 1}]",
      "requests.0: a periodic entry (every_s) takes no arrival_s" },
    { "requests: [{trace: t.csv, prompt_tokens: 3}]",
      "requests.0: a trace entry (trace) takes no prompt_tokens; its keys: trace, name" },
    { "requests: [{streams: 2, count: 1, trace: t.csv}]",
      "w.yaml:3:35: requests.0: a closed-loop entry (streams) and a trace entry (trace) in one "
      "entry" },
    { "requests: [{prompt_tokens: 1, evry_s: 1}]",
      "unknown key \"evry_s\" in requests.0 (did you mean \"every_s\"?)" },
    { "requests: [{every_s: 1, prompt_tokens: 1}]", "requests.0: every_s needs count" },
    { "requests: [{every_s: -1, count: 2, prompt_tokens: 1}]",
      "requests.0.every_s: expected a number in [0, 1e+06], got \"-1\"" },
    { "requests: [{every_s: [1], count: 2, prompt_tokens: 1}]",
      "requests.0.every_s: expected a number in [0, 1e+06], got a list" },
    { "requests: [{every_s: 2, count: 1000000, prompt_tokens: 1}]",
      "requests.0.every_s: the last of the 1000000 requests would arrive at 2e+06 s" },
    { "requests: [{every_s: 1, count: 1000001, prompt_tokens: 1}]",
      "requests.0.count: expected an integer in [1, 1000000]" },
    { "requests: [{every_s: 0.5, count: 1000000, prompt_tokens: 1}, {prompt_tokens: 2}]",
      "requests.1: the requests would number 1000001; cpsim takes at most 1000000" },
    { "requests: [{every_s: 0.5, count: 600000, prompt_tokens: 1},\n"
      "           {rate_per_s: 1, count: 400001, seed: 1, prompt_tokens: 1}]",
      "w.yaml:4:35: requests.1.count: the requests would number 1000001" },
    { "requests: [{every_s: 1, count: 2}]", "requests.0: prompt_tokens is required" },
    { "requests: [{rate_per_s: 1, seed: 1, prompt_tokens: 1}]",
      "requests.0: rate_per_s needs count" },
    { "requests: [{rate_per_s: 1, count: 1, seed: -1, prompt_tokens: 1}]",
      "requests.0.seed: expected an integer >= 0, got \"-1\"" },
    { "requests: [{rate_per_s: 0, count: 1, seed: 1, prompt_tokens: 1}]",
      "requests.0.rate_per_s: expected a number in (0, 1e+06], got \"0\"" },
    { "requests: [{rate_per_s: 1e-3, count: 2000, seed: 1, prompt_tokens: 1}]",
      "beyond the 1e+06 s arrivals may take (a higher rate or a lower count)" },
    { "requests: [{streams: 0, count: 1, prompt_tokens: 1}]",
      "requests.0.streams: expected an integer in [1, 4096], got \"0\"" },
    { "requests: [{streams: 2, count: 1, think_s: -1, prompt_tokens: 1}]",
      "requests.0.think_s: expected a number in [0, 1e+06]" },
    { "requests: [{streams: 2, count: 0, prompt_tokens: 1}]",
      "w.yaml:3:32: requests.0: streams without a count send requests until "
      "simulation.duration_s, which is not set" },
    { "requests: [{prompt_tokens: 16777000, cached_tokens: 200, decode_tokens: 17}]",
      "requests.0: cached_tokens + prompt_tokens + decode_tokens = 200 + 16777000 + 17 = "
      "16777217 tokens; cpsim takes contexts of at most 16777216" },
    { "requests: [{prompt_tokens: 1, name: ''}]",
      "requests.0.name: a class name takes 1 to 47 characters, got 0" },
    { "requests: [{prompt_tokens: 1, name: a23456789012345678901234567890123456789012345678}]",
      "requests.0.name: a class name takes 1 to 47 characters, got 48" },
    { "requests: [{prompt_tokens: 1, name: a/b}]",
      "requests.0.name: \"a/b\" holds the character '/'" },
    { "requests: [{trace: nope.csv}]", "w.yaml:3:20: requests.0.trace: cannot read " },
    { "simulation: {duration_s: 0}\nrequests: [{prompt_tokens: 1}]",
      "simulation.duration_s: expected a number in (0, 1e+06], got \"0\"" },
    { "simulation: {duration_s: 2e6}\nrequests: [{prompt_tokens: 1}]",
      "simulation.duration_s: expected a number in (0, 1e+06], got \"2e6\"" },
    { "engine: {max_num_seqs: 65537}\nrequests: [{prompt_tokens: 1}]",
      "engine.max_num_seqs: expected an integer in [1, 65536], got \"65537\"" },
};

START_TEST(test_workload_request_errors)
{
    char text[1024];
    snprintf(text, sizeof text, "%s%s\n", head, rcases[_i].text);
    scenario s;
    cp_err err = { 0 };
    ck_assert_msg(load_text(text, NULL, 0, NULL, &s, &err) == -1, "case %d: accepted", _i);
    assert_msg(&err, rcases[_i].want);
    ck_assert_ptr_null(s.doc);
}
END_TEST

/* At most WL_MAX_CLASSES names and WL_MAX_STREAM_SRC closed-loop entries. */
START_TEST(test_workload_request_limits)
{
    char text[8192];
    size_t o = (size_t)snprintf(text, sizeof text, "%srequests:\n", head);
    for (int i = 0; i <= WL_MAX_CLASSES; i++)
        o += (size_t)snprintf(text + o, sizeof text - o, "  - {prompt_tokens: 1, name: c%d}\n", i);
    scenario s;
    cp_err err = { 0 };
    ck_assert_int_eq(load_text(text, NULL, 0, NULL, &s, &err), -1);
    assert_msg(&err, "requests.16.name: \"c16\" would be request class 17; cpsim takes at most 16");

    o = (size_t)snprintf(text, sizeof text, "%srequests:\n", head);
    for (int i = 0; i <= WL_MAX_STREAM_SRC; i++)
        o += (size_t)snprintf(text + o, sizeof text - o,
                              "  - {streams: 1, count: 1, prompt_tokens: 1, name: same}\n");
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(load_text(text, NULL, 0, NULL, &s, &err), -1);
    assert_msg(&err, "requests.16: at most 16 closed-loop (streams) entries");
    /* one fewer loads, every entry of the one class */
    text[strlen(text) - strlen("  - {streams: 1, count: 1, prompt_tokens: 1, name: same}\n")] = 0;
    ck_assert_msg(load_text(text, NULL, 0, NULL, &s, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.nstreams, WL_MAX_STREAM_SRC);
    ck_assert_int_eq(s.nclasses, 1);
    ck_assert_int_eq(s.nreqs, 0);
    wl_free(&s);
}
END_TEST

/* ---- the bad-input corpus ------------------------------------------------ */

#define MAX_CORPUS 256
static char corpus[MAX_CORPUS][256];
static int ncorpus;

static int is_yaml(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 5 && strcmp(d->d_name + n - 5, ".yaml") == 0;
}

/* Sorted names of tests/bad/<case>.yaml (read by main, before forking). */
static void find_corpus(void)
{
    struct dirent **list;
    int n = scandir(CP_SRCDIR "/tests/bad", &list, is_yaml, alphasort);
    for (int i = 0; i < n; i++) {
        if (ncorpus < MAX_CORPUS)
            snprintf(corpus[ncorpus++], sizeof corpus[0], "%s", list[i]->d_name);
        free(list[i]);
    }
    if (n >= 0)
        free(list);
}

/* Header lines of a corpus file: "# expect-exit: N", "# expect: text" (one
 * or more) and "# set: key=value" (any). */
typedef struct corpus_case {
    int exit_code;
    int nexpect, nset;
    char expect[8][512];
    char set[8][512];
} corpus_case;

static void read_header(const char *path, corpus_case *c)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char line[512];
    memset(c, 0, sizeof *c);
    c->exit_code = -1;
    while (fgets(line, sizeof line, f) && line[0] == '#') {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "# expect-exit: ", 15) == 0)
            c->exit_code = atoi(line + 15);
        else if (strncmp(line, "# expect: ", 10) == 0 && c->nexpect < 8)
            snprintf(c->expect[c->nexpect++], sizeof c->expect[0], "%s", line + 10);
        else if (strncmp(line, "# set: ", 7) == 0 && c->nset < 8)
            snprintf(c->set[c->nset++], sizeof c->set[0], "%s", line + 7);
    }
    fclose(f);
    ck_assert_msg(c->exit_code > 0 && c->nexpect > 0,
                  "%s: the header needs \"# expect-exit: N\" and \"# expect: ...\"", path);
}

START_TEST(test_workload_corpus)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/bad/%s", CP_SRCDIR, corpus[_i]);
    corpus_case c;
    read_header(path, &c);
    const char *sets[8];
    for (int i = 0; i < c.nset; i++)
        sets[i] = c.set[i];
    scenario s;
    cp_err err = { 0 };
    int rc = wl_load(path, sets, c.nset, NULL, &s, &err);
    ck_assert_msg(rc == -1, "%s: loaded without error", corpus[_i]);
    ck_assert_msg(err.code == c.exit_code, "%s: exit code %d, expected %d (%s)", corpus[_i],
                  err.code, c.exit_code, err.msg);
    for (int i = 0; i < c.nexpect; i++)
        ck_assert_msg(strstr(err.msg, c.expect[i]), "%s: message \"%s\" lacks \"%s\"",
                      corpus[_i], err.msg, c.expect[i]);
    ck_assert_ptr_null(s.doc);
}
END_TEST

START_TEST(test_workload_corpus_size)
{
    ck_assert_int_ge(ncorpus, 30);
    ck_assert_int_lt(ncorpus, MAX_CORPUS);
}
END_TEST

/* precision.quant_description: resolved against the workload's folder, read
 * and checked against the model, shown by the dump; parallel.dsa_cp_layout
 * defaults to rfc.  Both refuse bad values with the key's location. */
START_TEST(test_workload_dsa_keys)
{
    static const char *const glm =
        "model: glm-5.1\n"
        "platform: ascend-a3-16\n"
        "precision: {weights: int8, quant_description: d.json}\n"
        "parallel: {tp: 16, ep: 16, sequence_parallel: true, dsa_cp_layout: vllm_ascend}\n"
        "requests: [{prompt_tokens: 4096}]\n";
    char desc[160], cmd[512];
    snprintf(desc, sizeof desc, "%s/d.json", tmpdir);
    snprintf(cmd, sizeof cmd, "sh %s/tests/quant/dsa-w8a8-description.sh > %s", CP_SRCDIR, desc);
    ck_assert_int_eq(system(cmd), 0);
    scenario s;
    cp_err err = { 0 };
    ck_assert_msg(load_text(glm, NULL, 0, NULL, &s, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(s.quant_path, desc);
    ck_assert_ptr_nonnull(s.quant);
    ck_assert_int_eq(s.par.dsa_cp_layout, DSA_LAYOUT_VLLM_ASCEND);
    ck_assert_str_eq(wl_dsa_layout_name(s.par.dsa_cp_layout), "vllm_ascend");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    wl_dump(&s, f);
    fclose(f);
    ydoc *doc = yio_parse_string(text, len, "dump", &err);
    ck_assert_msg(doc != NULL, "%s\n%s", err.msg, text);
    const ynode *res = yio_key(yio_root(doc), "resolved");
    ck_assert_str_eq(yio_key(yio_key(res, "precision"), "quant_description")->str, desc);
    ck_assert_str_eq(yio_key(yio_key(res, "parallel"), "dsa_cp_layout")->str, "vllm_ascend");
    yio_free(doc);
    free(text);
    wl_free(&s);
    ck_assert_ptr_null(s.quant);

    ck_assert_msg(load_text(base, NULL, 0, NULL, &s, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.par.dsa_cp_layout, DSA_LAYOUT_RFC);
    ck_assert_ptr_null(s.quant);
    ck_assert_str_eq(s.quant_path, "");
    wl_free(&s);

    /* the thinker is not what the description describes */
    static const char *const wrong[] = { "model=qwen3-omni-30b-a3b-thinker", "parallel.tp=8",
                                         "parallel.ep=1", "platform=h100-sxm-8" };
    ck_assert_int_eq(load_text(glm, wrong, 4, NULL, &s, &err), -1);
    assert_msg(&err, "w.yaml:3:47: precision.quant_description: ");
    assert_msg(&err, "no entry for model.layers.0.self_attn.q_proj.weight");
    memset(&err, 0, sizeof err);
    static const char *const missing[] = { "precision.quant_description=nope.json" };
    ck_assert_int_eq(load_text(glm, missing, 1, NULL, &s, &err), -1);
    assert_msg(&err, "precision.quant_description: ");
    assert_msg(&err, "nope.json");
    memset(&err, 0, sizeof err);
    static const char *const layout[] = { "parallel.dsa_cp_layout=vllm" };
    ck_assert_int_eq(load_text(glm, layout, 1, NULL, &s, &err), -1);
    assert_msg(&err, "parallel.dsa_cp_layout: expected one of rfc, vllm_ascend");
    memset(&err, 0, sizeof err);
    static const char *const number[] = { "precision.quant_description=[1]" };
    ck_assert_int_eq(load_text(glm, number, 1, NULL, &s, &err), -1);
    assert_msg(&err, "precision.quant_description");
    unlink(desc);
}
END_TEST

static Suite *workload_suite(void)
{
    Suite *s = suite_create("workload");
    TCase *core = tcase_create("Core");
    tcase_add_checked_fixture(core, make_tmpdir, remove_tmpdir);
    tcase_set_timeout(core, 60);
    tcase_add_test(core, test_workload_example_sp_ring);
    tcase_add_test(core, test_workload_example_dsa_cp);
    tcase_add_test(core, test_workload_defaults);
    tcase_add_test(core, test_workload_keys_that_change_nothing);
    tcase_add_test(core, test_workload_every_key);
    tcase_add_test(core, test_workload_mlp_weights);
    tcase_add_test(core, test_workload_default_file);
    tcase_add_test(core, test_workload_set_and_platform);
    tcase_add_test(core, test_workload_dump);
    tcase_add_test(core, test_workload_names);
    tcase_add_test(core, test_workload_dsa_keys);
    tcase_add_test(core, test_workload_request_defaults);
    tcase_add_test(core, test_workload_periodic);
    tcase_add_test(core, test_workload_poisson);
    tcase_add_test(core, test_workload_trace);
    tcase_add_test(core, test_workload_context);
    tcase_add_test(core, test_workload_streams);
    tcase_add_test(core, test_workload_merge_stable);
    tcase_add_test(core, test_workload_serving_flag);
    tcase_add_test(core, test_workload_request_resolved);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("Limits");
    tcase_add_checked_fixture(limits, make_tmpdir, remove_tmpdir);
    tcase_set_timeout(limits, 120);
    tcase_add_loop_test(limits, test_workload_validation, 0,
                        (int)(sizeof vcases / sizeof vcases[0]));
    tcase_add_test(limits, test_workload_silent_beyond_max_position);
    tcase_add_test(limits, test_workload_request_limits);
    tcase_add_loop_test(limits, test_workload_request_errors, 0,
                        (int)(sizeof rcases / sizeof rcases[0]));
    suite_add_tcase(s, limits);
    TCase *errs = tcase_create("Errors");
    tcase_add_checked_fixture(errs, make_tmpdir, remove_tmpdir);
    tcase_set_timeout(errs, 120);
    tcase_add_test(errs, test_workload_locations);
    tcase_add_test(errs, test_workload_corpus_size);
    tcase_add_loop_test(errs, test_workload_corpus, 0, ncorpus);
    suite_add_tcase(s, errs);
    return s;
}

int main(void)
{
    find_corpus();
    SRunner *sr = srunner_create(workload_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
