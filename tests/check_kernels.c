/* check_kernels: kernel sets (engine.kernels, models/kset.h) and graph
 * modes.  What each bundled set plans, the sets' file errors, padding to
 * capture sizes, varlen calls, the custom all-reduce, and that a fused
 * implementation is never slower than the chain it replaces on any preset. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/build/build.h"
#include "models/cost.h"
#include "models/kset.h"
#include "platforms/platform.h"
#include "tests/testutil.h"

static const char *THINKER = "model: qwen3-omni-30b-a3b-thinker\n"
                             "platform: h200-sxm-8\n"
                             "parallel: {tp: 8}\n"
                             "requests:\n  - {prompt_tokens: 4096, decode_tokens: 2}\n";

/* Compute ops of program 0 in layer `layer` and step `step`, and the
 * kernels they launch. */
static int layer_kernels(const plan *p, int layer, int step, int *ops)
{
    int n = 0;
    *ops = 0;
    const plan_prog *pg = &p->progs[0];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->kind != OPK_COMPUTE || o->layer != layer || o->step != step)
            continue;
        (*ops)++;
        n += o->shared_launch ? 0 : o->nkern > 1 ? o->nkern : 1;
    }
    return n;
}

/* Device and launch time of the compute ops of program 0, every step. */
static double compute_time(const plan *p)
{
    double t = 0;
    const plan_prog *pg = &p->progs[0];
    for (uint32_t i = 0; i < pg->nops; i++)
        if (pg->ops[i].kind == OPK_COMPUTE)
            t += pg->ops[i].cost_s + pg->ops[i].launch_s;
    return t;
}

/* A kernel set file of the given body in a temporary file; path into buf. */
static void set_file(char *buf, size_t n, const char *body)
{
    snprintf(buf, n, "/tmp/check_kernels_XXXXXX.yaml");
    int fd = mkstemps(buf, 5);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    fputs(body, f);
    fclose(f);
}

/* The bundled sets load, and each plans what its engine runs. */
START_TEST(bundled_sets_plan_their_kernels)
{
    for (int i = 0; ks_bundled[i]; i++) {
        kset k;
        cp_err err = {0};
        ck_assert_msg(ks_load(ks_bundled[i], NULL, &k, &err) == 0, "%s: %s", ks_bundled[i],
                      err.msg);
        ck_assert_str_eq(k.name, ks_bundled[i]);
    }
    scenario s;
    plan py, vl;
    const char *vllm[] = {"engine.kernels=vllm"};
    tu_plan(&s, &py, THINKER, NULL, 0);
    wl_free(&s);
    tu_plan(&s, &vl, THINKER, vllm, 1);
    ck_assert_str_eq(s.kernels.name, "vllm");
    ck_assert_int_eq(s.graph, GRAPH_FULL_AND_PIECEWISE); /* the set's default mode */
    /* the pytorch inventory of a decode layer (step 1), from the traces of
     * engine_checks.py, against vLLM's fused kernels */
    int ops_py, ops_vl;
    int k_py = layer_kernels(&py, 3, 1, &ops_py), k_vl = layer_kernels(&vl, 3, 1, &ops_vl);
    ck_assert_msg(k_py >= 55 && k_py <= 75, "pytorch decode layer: %d kernels", k_py);
    ck_assert_msg(k_vl < k_py / 2, "vllm decode layer: %d kernels, pytorch %d", k_vl, k_py);
    /* stamps: attention FA3, RoPE one kernel, norms fused with the residual add */
    const plan_op *at = tu_find(&vl, 0, "attention", 3);
    ck_assert_int_eq(at->impl, IMPL_FA3);
    ck_assert_int_eq(tu_find(&py, 0, "attention", 3)->impl, IMPL_FA2);
    ck_assert_int_eq(tu_find(&vl, 0, "rope", 3)->nkern, 1);
    ck_assert_int_eq(tu_find(&py, 0, "rope", 3)->nkern, 10);
    ck_assert_int_eq(tu_count(&vl, 0, "residual_add", 3), 0);
    ck_assert_int_gt(tu_count(&py, 0, "residual_add", 3), 0);
    char src[64];
    ck_assert_ptr_nonnull(strstr(plan_cost_src(at, src, sizeof src), "[fa3]"));
    plan_free(&py);
    plan_free(&vl);
    wl_free(&s);
}
END_TEST

/* A set file: what it names changes the plan; its errors name the file,
 * line and column. */
START_TEST(set_files_and_their_errors)
{
    char path[256], sets[1][320];
    set_file(path, sizeof path, "name: mine\nnorm: fused_add\nrope: fused_kv_write\n");
    snprintf(sets[0], sizeof sets[0], "engine.kernels=%s", path);
    const char *set[] = {sets[0]};
    scenario s;
    plan p;
    tu_plan(&s, &p, THINKER, set, 1);
    ck_assert_str_eq(s.kernels.name, "mine");
    ck_assert_int_eq(tu_count(&p, 0, "kv_write", 3), 0); /* written by RoPE */
    ck_assert_int_eq(tu_find(&p, 0, "rope", 3)->impl, IMPL_FUSED_KV_WRITE);
    ck_assert_int_eq(tu_find(&p, 0, "attention", 3)->impl, IMPL_FA2); /* unnamed: pytorch's */
    plan_free(&p);
    wl_free(&s);
    unlink(path);

    static const struct {
        const char *body, *want;
    } bad[] = {
        {"name: x\nnorm: fused\n", ":2:7: "},
        {"name: x\nattention: fa4\n", "fa3"},
        {"name: x\nlse_merge: fused\nspeed: 2\n", ":3:1: "},
        {"norm: fused_add\n", "needs a name"},
        {"name: x\ncapture_sizes: [1, 4, 2]\n", "ascend"},
        {"name: x\ncapture_sizes: [0]\n", "capture_sizes.0"},
        {"name: x\ngraph: sometimes\n", ":2:8: "},
        {"name: [x\n", ":1:"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        set_file(path, sizeof path, bad[i].body);
        snprintf(sets[0], sizeof sets[0], "engine.kernels=%s", path);
        cp_err err = {0};
        ck_assert_msg(tu_try_load(&s, THINKER, set, 1, &err) != 0, "accepted: %s", bad[i].body);
        ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, bad[i].want),
                      "%s: message \"%s\" lacks the file or \"%s\"", bad[i].body, err.msg,
                      bad[i].want);
        unlink(path);
    }
    const char *unknown[] = {"engine.kernels=vllmm"};
    cp_err err = {0};
    ck_assert(tu_try_load(&s, THINKER, unknown, 1, &err) != 0);
    ck_assert_msg(strstr(err.msg, "did you mean \"vllm\""), "%s", err.msg);
}
END_TEST

/* Graph modes: a decode batch padded to the set's next capture size, one
 * past the largest run eagerly; the pytorch set captures any size. */
START_TEST(decode_batches_padded_to_capture_sizes)
{
    const char *vllm[] = {"engine.kernels=vllm"};
    scenario s;
    tu_load(&s, THINKER, vllm, 1);
    sc_seq seq[600];
    for (int i = 0; i < 600; i++)
        seq[i] = (sc_seq){1, 1000 + i, 1, 0};
    sc_batch b9 = {seq, 9, 0}, b600 = {seq, 600, 0};
    plan p;
    build_step_plan(&s, &b9, 0, &p);
    ck_assert_int_eq(p.padded_tokens, 16);
    ck_assert_int_eq(p.launch, PL_GRAPH);
    ck_assert_int_eq(tu_find(&p, 0, "qkv_proj", 3)->m, 16);
    const plan_op *at = tu_find(&p, 0, "attention", 3);
    ck_assert_int_eq(at->attn.batch, 9); /* the requests, not the padding */
    ck_assert_int_eq(at->eager, 0);
    plan_free(&p);
    build_step_plan(&s, &b600, 0, &p);
    ck_assert_int_eq(p.padded_tokens, 600);
    ck_assert_int_eq(p.launch, PL_EAGER);
    ck_assert_int_eq(tu_find(&p, 0, "qkv_proj", 3)->eager, 1);
    plan_free(&p);
    /* a mixed step of 8 decodes and a 200-token chunk: piecewise, padded to 208 */
    sc_seq mix[9];
    memcpy(mix, seq, sizeof mix);
    mix[8] = (sc_seq){200, 0, 1, 0};
    sc_batch mixed = {mix, 9, 0};
    build_step_plan(&s, &mixed, 0, &p);
    ck_assert_int_eq(p.padded_tokens, 208);
    ck_assert_int_eq(p.launch, PL_PIECEWISE);
    ck_assert_int_eq(tu_find(&p, 0, "attention", 3)->eager, 1); /* outside the graph */
    ck_assert_int_eq(tu_find(&p, 0, "qkv_proj", 3)->eager, 0);
    plan_free(&p);
    wl_free(&s);
    const char *py[] = {"engine.graph=captured"};
    tu_load(&s, THINKER, py, 1);
    build_step_plan(&s, &b9, 0, &p);
    ck_assert_int_eq(p.padded_tokens, 9);
    ck_assert_int_eq(p.launch, PL_GRAPH);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* varlen: a mixed step's attention is one launch over every request, its
 * decodes not GQA-folded (dearer than the folded decode call). */
START_TEST(varlen_mixed_step_is_one_launch)
{
    const char *sets[2][1] = {{"engine.kernels=vllm"}, {"engine.kernels=sglang"}};
    sc_seq seq[3] = {{1, 4000, 1, 0}, {1, 6000, 1, 0}, {1024, 0, 1, 0}};
    sc_batch bt = {seq, 3, 0};
    double dec_cost[2];
    for (int k = 0; k < 2; k++) {
        scenario s;
        tu_load(&s, THINKER, sets[k], 1);
        ck_assert_int_eq(s.kernels.varlen, k == 0);
        plan p;
        build_step_plan(&s, &bt, 0, &p);
        cp_err err = {0};
        cost_model *cm = cost_new(&s.plat, &err);
        ck_assert_msg(cm != NULL, "%s", err.msg);
        cost_price_plan(cm, &p, 1);
        cost_free(cm);
        int n = 0, shared = 0;
        const plan_prog *pg = &p.progs[0];
        for (uint32_t i = 0; i < pg->nops; i++) {
            const plan_op *o = &pg->ops[i];
            if (o->layer != 3 || strcmp(o->name, "attention") != 0)
                continue;
            n++;
            shared += o->shared_launch;
            if (o->attn.q_len == 1) {
                ck_assert_int_eq(o->attn.unfolded, k == 0);
                dec_cost[k] = o->cost_s;
            }
            if (o->shared_launch)
                ck_assert_double_eq(o->launch_s, 0);
        }
        ck_assert_int_eq(n, 2);
        ck_assert_int_eq(shared, k == 0);
        plan_free(&p);
        wl_free(&s);
    }
    /* same heads and keys, FA3 both: unfolded reads the KV per query head */
    ck_assert_msg(dec_cost[0] > dec_cost[1], "varlen decodes %g s, folded call %g s",
                  dec_cost[0], dec_cost[1]);
}
END_TEST

/* allreduce: custom stamps the TP all-reduces of up to 8 MiB; bigger ones
 * stay NCCL (vLLM's max_size). */
START_TEST(custom_allreduce_up_to_8_mib)
{
    const char *vllm[] = {"engine.kernels=vllm"};
    scenario s;
    plan p;
    tu_plan(&s, &p, THINKER, vllm, 1);
    int custom = 0, nccl = 0;
    const plan_prog *pg = &p.progs[0];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->kind != OPK_COLL || o->coll != CK_ALL_REDUCE || o->group != G_TP)
            continue;
        if (o->impl == IMPL_CUSTOM) {
            ck_assert(o->comm_bytes <= 8.0 * 1024 * 1024);
            custom++;
        } else {
            ck_assert_int_eq(o->impl, IMPL_NCCL);
            ck_assert(o->comm_bytes > 8.0 * 1024 * 1024);
            nccl++;
        }
    }
    /* 4096 tokens x 2048 x 2 B = 16 MiB in the prefill; 4 KiB per decode */
    ck_assert_int_gt(custom, 0);
    ck_assert_int_gt(nccl, 0);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* The activations' peak of program 0's first step, in program order. */
static double act_peak(const plan *p)
{
    double cur = 0, peak = 0;
    const plan_prog *pg = &p->progs[0];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->kind == OPK_MEM && o->step == 0 && o->mem_cat == MC_ACTIVATIONS) {
            cur += o->mem_bytes;
            peak = cur > peak ? cur : peak;
        }
    }
    return peak;
}

/* eager_locals: an eager engine holds its Python locals to their
 * function's end and its chains' intermediates through them; a compiled
 * one frees each buffer after its last use: the same kernels, a lower
 * activation peak, and every allocation freed either way. */
START_TEST(eager_locals_hold_memory)
{
    char path[256], sets[1][320];
    set_file(path, sizeof path, "name: compiled\neager_locals: false\n");
    snprintf(sets[0], sizeof sets[0], "engine.kernels=%s", path);
    const char *set[] = {sets[0]};
    scenario s;
    plan eager, compiled;
    tu_plan(&s, &eager, THINKER, NULL, 0);
    wl_free(&s);
    tu_plan(&s, &compiled, THINKER, set, 1);
    ck_assert_int_eq(s.kernels.eager_locals, 0);
    int ops_e, ops_c;
    ck_assert_int_eq(layer_kernels(&eager, 3, 0, &ops_e), layer_kernels(&compiled, 3, 0, &ops_c));
    double pe = act_peak(&eager), pc = act_peak(&compiled);
    ck_assert_msg(pe > 1.5 * pc, "eager activation peak %g B, compiled %g B", pe, pc);
    for (int k = 0; k < 2; k++) { /* the step's activations all freed */
        const plan_prog *pg = &(k ? compiled : eager).progs[0];
        double cur = 0;
        for (uint32_t i = 0; i < pg->nops; i++)
            if (pg->ops[i].kind == OPK_MEM && pg->ops[i].mem_cat == MC_ACTIVATIONS)
                cur += pg->ops[i].mem_bytes;
        ck_assert_double_eq_tol(cur, 0, 1e-3);
    }
    plan_free(&eager);
    plan_free(&compiled);
    wl_free(&s);
    unlink(path);
}
END_TEST

/* A fused implementation is never slower than the unfused chain it
 * replaces, on every preset, prefill and decode, eager and graph. */
START_TEST(fused_never_slower_on_every_preset)
{
    static const char *const fused[] = {
        "name: f\nnorm: fused_add\n",   "name: f\nrope: fused\n",
        "name: f\nrope: fused_kv_write\n", "name: f\nactivation: fused\n",
        "name: f\nlse_merge: fused\n", "name: f\nmoe_routing: fused\n",
    };
    for (int i = 0; plat_bundled[i]; i++) {
        for (int graph = 0; graph < 2; graph++) {
            char base[4][320];
            int nb = 0;
            snprintf(base[nb++], sizeof base[0], "platform=%s", plat_bundled[i]);
            snprintf(base[nb++], sizeof base[0], "engine.graph=%s", graph ? "captured" : "eager");
            snprintf(base[nb++], sizeof base[0], "parallel={tp: 4, sp: 2}");
            const char *sets[4] = {base[0], base[1], base[2], base[3]};
            scenario s;
            plan p;
            tu_plan(&s, &p, THINKER, sets, nb);
            double t_torch = compute_time(&p);
            plan_free(&p);
            wl_free(&s);
            for (size_t f = 0; f < sizeof fused / sizeof fused[0]; f++) {
                char path[256];
                set_file(path, sizeof path, fused[f]);
                snprintf(base[nb], sizeof base[0], "engine.kernels=%s", path);
                tu_plan(&s, &p, THINKER, sets, nb + 1);
                double t = compute_time(&p);
                ck_assert_msg(t <= t_torch * (1 + 1e-9), "%s %s, %s: fused %g s > torch %g s",
                              plat_bundled[i], graph ? "graph" : "eager", fused[f] + 8, t,
                              t_torch);
                plan_free(&p);
                wl_free(&s);
                unlink(path);
            }
        }
    }
}
END_TEST

int main(void)
{
    tu_setup();
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("sets");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bundled_sets_plan_their_kernels);
    tcase_add_test(tc, set_files_and_their_errors);
    tcase_add_test(tc, decode_batches_padded_to_capture_sizes);
    tcase_add_test(tc, varlen_mixed_step_is_one_launch);
    tcase_add_test(tc, custom_allreduce_up_to_8_mib);
    tcase_add_test(tc, fused_never_slower_on_every_preset);
    tcase_add_test(tc, eager_locals_hold_memory);
    suite_add_tcase(s, tc);
    return tu_main(s);
}
