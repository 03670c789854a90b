/* check_encoder: the audio encoder of Qwen3-Omni (models/encoder/): its rows
 * and windows against vLLM's formulas, its parameters against the module
 * list, its ops over TP and the SP group (none, ulysses), the time it adds
 * to a prefill's TTFT in a simulated run and in serving, and the inputs
 * refused. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/build/build.h"
#include "models/encoder/encoder.h"
#include "workloads/workload.h"
#include "sim/driver/driver.h"
#include "tests/testutil.h"

static const char *THINKER =
    "model: qwen3-omni-30b-a3b-thinker\n"
    "platform: h100-sxm-8\n"
    "parallel: {tp: 4}\n"
    "requests:\n  - {prompt_tokens: 16384, audio_s: 600}\n";

/* vLLM's _get_feat_extract_output_lengths (qwen3_omni_moe_thinker.py), as
 * written there for n_window 50: 13 rows per 100 frames, the rest through
 * the three convolutions. */
static long long vllm_rows(long long frames)
{
    long long leave = frames % 100;
    long long feat = (leave - 1) / 2 + 1;
    return ((feat - 1) / 2 + 1 - 1) / 2 + 1 + (frames / 100) * 13;
}

START_TEST(rows_as_vllm_counts_them)
{
    scenario s;
    tu_load(&s, THINKER, NULL, 0);
    const arch_audio *au = &s.model.audio;
    ck_assert_int_eq(au->layers, 32);
    ck_assert_int_eq(au->n_window, 50);
    for (long long f = 1; f <= 20000; f++) {
        enc_shape e = enc_audio_shape(au, f);
        /* vLLM's formula counts a tail of 0 frames as 1 row (its (0 - 1) / 2
         * + 1 in Python's floor division is 0, in C's truncation 1): full
         * chunks only are where the two forms differ by that row */
        long long want = f % 100 ? vllm_rows(f) : f / 100 * 13;
        ck_assert_msg(e.rows == want, "%lld frames: %lld rows, vLLM %lld", f,
                      (long long)e.rows, want);
        ck_assert_int_eq(e.chunks, (f + 99) / 100);
    }
    /* windows: 13 rows x (800 / 100) chunks = 104 rows (8 s of audio) */
    enc_shape e = enc_audio_shape(au, 60000);
    ck_assert_int_eq(e.rows, 7800);
    ck_assert_int_eq(e.window, 104);
    ck_assert_int_eq(e.windows, 75);
    ck_assert_double_eq(e.pairs, 75.0 * 104 * 104);
    /* 5 s: one short window of 65 rows */
    e = enc_audio_shape(au, 500);
    ck_assert_int_eq(e.rows, 65);
    ck_assert_int_eq(e.windows, 1);
    ck_assert_double_eq(e.pairs, 65.0 * 65);
    /* 2.5 s: one chunk of 100 frames and a tail of 50 (7 rows) */
    e = enc_audio_shape(au, 250);
    ck_assert_int_eq(e.rows, 13 + 13 + 7);
    ck_assert_int_eq(enc_conv_len(50), 7);
    wl_free(&s);
}
END_TEST

/* The modules of Qwen3OmniMoeAudioEncoder at the transformers defaults
 * (d_model 1280, 20 heads, ffn 5120, 480 conv channels, 128 mel bins, 32
 * layers, output 2048 for the thinker), counted one by one. */
START_TEST(params_are_the_modules)
{
    scenario s;
    tu_load(&s, THINKER, NULL, 0);
    const arch_audio *au = &s.model.audio;
    double conv1 = 480.0 * 1 * 3 * 3 + 480, conv23 = 480.0 * 480 * 3 * 3 + 480;
    double conv_out = 480.0 * 16 * 1280; /* 128 mel bins -> 64 -> 32 -> 16 */
    double ln = 2.0 * 1280, lin = 1280.0 * 1280 + 1280;
    double layer = 2 * ln + 3 * lin + lin + (1280.0 * 5120 + 5120) + (5120.0 * 1280 + 1280);
    double post = ln + lin + (1280.0 * 2048 + 2048);
    double table = 1500.0 * 1280;
    ck_assert_double_eq(enc_audio_params(au),
                        conv1 + 2 * conv23 + conv_out + 32 * layer + post + table);
    ck_assert_double_eq_tol(enc_audio_params(au), 649.8e6, 0.1e6);
    /* TP4: q/k/v, out_proj, fc1, fc2 quartered, the rest whole */
    double split = 3 * lin + 1280.0 * 1280 + (1280.0 * 5120 + 5120) + 5120.0 * 1280;
    ck_assert_double_eq(enc_audio_weight_bytes(au, 4, 2.0),
                        2.0 * (enc_audio_params(au) - 32 * split * 0.75));
    /* loaded only for a workload with audio */
    scenario t;
    tu_load(&t, "model: qwen3-omni-30b-a3b-thinker\nplatform: h100-sxm-8\nparallel: {tp: 4}\n"
                "requests:\n  - {prompt_tokens: 16384}\n", NULL, 0);
    ck_assert_double_eq(build_weight_bytes(&s) - build_weight_bytes(&t),
                        enc_audio_weight_bytes(au, 4, 2.0));
    /* and the run holds them: the plan's weight allocations on a rank */
    plan p;
    build_plan(&s, &p);
    double held = 0;
    for (uint32_t i = 0; i < p.progs[0].nops; i++) {
        const plan_op *o = &p.progs[0].ops[i];
        if (o->kind == OPK_MEM && o->mem_cat == MC_WEIGHTS)
            held += o->mem_bytes;
    }
    ck_assert_double_eq(held, build_weight_bytes(&s));
    plan_free(&p);
    wl_free(&t);
    wl_free(&s);
}
END_TEST

/* Ops of the encoder on program 0 whose name is `name`. */
static int count(const plan *p, const char *name, plan_coll *coll, plan_group *group)
{
    int n = 0;
    const plan_prog *pg = &p->progs[0];
    for (uint32_t i = 0; i < pg->nops; i++)
        if (strcmp(pg->ops[i].name, name) == 0) {
            n++;
            if (coll)
                *coll = (plan_coll)pg->ops[i].coll;
            if (group)
                *group = (plan_group)pg->ops[i].group;
        }
    return n;
}

START_TEST(ops_over_tp_and_sp)
{
    scenario s;
    plan p;
    tu_plan(&s, &p, THINKER, NULL, 0);
    ck_assert_int_eq(count(&p, "audio.qkv", NULL, NULL), 32);
    const plan_op *qkv = tu_find(&p, 0, "audio.qkv", -1);
    ck_assert_int_eq(qkv->m, 7800);
    ck_assert_int_eq(qkv->k, 1280);
    ck_assert_int_eq(qkv->n, 3 * 5 * 64); /* 20 heads / TP4 */
    ck_assert_int_eq(qkv->dtype, DT_BF16);
    const plan_op *at = tu_find(&p, 0, "audio.attention", -1);
    ck_assert_int_eq(at->attn.causal, 0);
    ck_assert_int_eq(at->attn.batch, 75);
    ck_assert_int_eq(at->attn.heads, 5);
    ck_assert_int_eq(at->attn.d_qk, 64);
    ck_assert_int_eq(count(&p, "audio.attn_all_reduce", NULL, NULL), 32);
    ck_assert_int_eq(count(&p, "audio.qkv_all_to_all", NULL, NULL), 0);
    plan_free(&p);
    wl_free(&s);

    /* fp8 weights leave the encoder's linears in bf16 (no quant_config) */
    const char *fp8[] = {"precision.weights=fp8"};
    tu_plan(&s, &p, THINKER, fp8, 1);
    ck_assert_int_eq(tu_find(&p, 0, "audio.fc1", -1)->dtype, DT_BF16);
    ck_assert_int_eq(tu_find(&p, 0, "audio.fc1", -1)->qscale, QS_NONE);
    plan_free(&p);
    wl_free(&s);

    /* TP2 x SP2: none runs the whole encoder on every SP rank; ulysses a
     * half of the rows, all-to-alls over SP and the rows all-gathered */
    const char *none[] = {"parallel.tp=2", "parallel.sp=2", "parallel.kv_storage=by_position",
                          "parallel.exchange=ring"};
    tu_plan(&s, &p, THINKER, none, 4);
    ck_assert_int_eq(tu_find(&p, 0, "audio.qkv", -1)->m, 7800);
    ck_assert_int_eq(count(&p, "audio.qkv_all_to_all", NULL, NULL), 0);
    plan_free(&p);
    wl_free(&s);
    const char *uly[] = {"parallel.tp=2", "parallel.sp=2", "parallel.kv_storage=by_position",
                         "parallel.exchange=ring", "parallel.encoder_exchange=ulysses"};
    tu_plan(&s, &p, THINKER, uly, 5);
    ck_assert_int_eq(tu_find(&p, 0, "audio.qkv", -1)->m, 3900);
    ck_assert_int_eq(tu_find(&p, 0, "audio.attention", -1)->attn.heads, 5); /* 20 / 2 / 2 */
    plan_coll c;
    plan_group g;
    ck_assert_int_eq(count(&p, "audio.qkv_all_to_all", &c, &g), 32);
    ck_assert_int_eq(c, CK_ALL_TO_ALL);
    ck_assert_int_eq(g, G_SP);
    ck_assert_int_eq(count(&p, "audio.rows_all_gather", &c, &g), 1);
    ck_assert_int_eq(g, G_SP);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* Memory of the front as vLLM's forward holds it: a call's conv output and
 * its GELU alive together (500 chunks of 480 x 64 x 50 bf16: 1.536 GB
 * each), and every tensor the encoder allocates freed by its end. */
START_TEST(front_memory_as_the_forward_holds_it)
{
    const char *tp1[] = {"parallel.tp=1", "requests.0.audio_s=600"};
    scenario s;
    plan p;
    tu_plan(&s, &p, THINKER, tp1, 2);
    const plan_prog *pg = &p.progs[0];
    double act = 0, peak = 0;
    uint32_t i = 0;
    while (i < pg->nops && pg->ops[i].kind != OPK_STEP)
        i++;
    for (i++; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->kind == OPK_COMPUTE && strncmp(o->name, "audio.", 6) != 0)
            break; /* the thinker's embedding */
        if (o->kind == OPK_MEM && (o->mem_cat == MC_ACTIVATIONS || o->mem_cat == MC_COMM_BUFFER))
            act += o->mem_bytes;
        peak = act > peak ? act : peak;
    }
    double conv1 = 500.0 * 480 * 64 * 50 * 2;
    ck_assert_double_ge(peak, 2 * conv1);
    ck_assert_double_lt(peak, 3 * conv1);
    /* left: the thinker's residual stream and embedding, allocated before
     * its embedding kernel (16384 rows of 2048, bf16, each) */
    ck_assert_double_eq_tol(act, 2.0 * 16384 * 2048 * 2, 1.0);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

static json_t *run(const char *const *sets, int n)
{
    char path[] = "/tmp/check_encoder_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(THINKER, f);
    fclose(f);
    drv_req rq = {.workload = path, .sets = sets, .nsets = n};
    json_t *sm = NULL;
    cp_err err = {0};
    ck_assert_msg(drv_child_run(&rq, &sm, &err) == 0, "%s", err.msg);
    unlink(path);
    return sm;
}

static double req_num(json_t *sm, const char *key)
{
    json_t *rq = json_array_get(json_object_get(sm, "requests"), 0);
    return json_number_value(json_object_get(rq, key));
}

static double audio_num(json_t *sm, const char *key)
{
    json_t *rq = json_array_get(json_object_get(sm, "requests"), 0);
    return json_number_value(json_object_get(json_object_get(rq, "audio"), key));
}

/* The encoder runs before the prefill: TTFT grows by its span (nothing
 * overlaps it), longer audio costs more, and ulysses over two SP ranks
 * shortens it. */
START_TEST(encoder_time_in_ttft)
{
    const char *text[] = {"requests.0={prompt_tokens: 16384}"};
    json_t *a = run(NULL, 0), *t = run(text, 1);
    double span = audio_num(a, "span_s");
    ck_assert_double_gt(span, 1e-3);
    ck_assert_double_eq_tol(req_num(a, "ttft_s") - req_num(t, "ttft_s"), span, 1e-3 * span);
    ck_assert_double_le(audio_num(a, "compute_s") + audio_num(a, "comm_s"), span * 1.0001);
    ck_assert_int_eq((int)audio_num(a, "rows"), 7800);
    ck_assert_ptr_null(json_object_get(json_array_get(json_object_get(t, "requests"), 0),
                                       "audio"));
    const char *longer[] = {"requests.0.audio_s=1200"};
    json_t *l = run(longer, 1);
    ck_assert_double_gt(audio_num(l, "span_s"), 1.8 * span);
    json_decref(a);
    json_decref(t);
    json_decref(l);

    const char *none[] = {"parallel.tp=2", "parallel.sp=2", "parallel.kv_storage=by_position",
                          "parallel.exchange=ring", "requests.0.prompt_tokens=65536",
                          "requests.0.audio_s=1800"};
    const char *uly[] = {"parallel.tp=2", "parallel.sp=2", "parallel.kv_storage=by_position",
                         "parallel.exchange=ring", "requests.0.prompt_tokens=65536",
                         "requests.0.audio_s=1800", "parallel.encoder_exchange=ulysses"};
    json_t *n = run(none, 6), *u = run(uly, 7);
    ck_assert_double_lt(audio_num(u, "span_s"), 0.8 * audio_num(n, "span_s"));
    ck_assert_double_gt(audio_num(u, "comm_s"), 0);
    ck_assert_double_lt(req_num(u, "ttft_s"), req_num(n, "ttft_s"));
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_array_get(json_object_get(u, "requests"), 0),
                                         "audio"), "exchange")), "ulysses");
    json_decref(n);
    json_decref(u);
}
END_TEST

/* Serving: the same arrivals with audio wait longer for their first token. */
START_TEST(serving_runs_the_encoder)
{
    const char *voice[] = {"requests.0={rate_per_s: 4, count: 12, seed: 5, "
                           "prompt_tokens: 8192, decode_tokens: 4, audio_s: 300}"};
    const char *text[] = {"requests.0={rate_per_s: 4, count: 12, seed: 5, "
                          "prompt_tokens: 8192, decode_tokens: 4}"};
    json_t *v = run(voice, 1), *t = run(text, 1);
    json_t *vs = json_object_get(v, "serving"), *ts = json_object_get(t, "serving");
    ck_assert_ptr_nonnull(vs);
    double vt = json_number_value(json_object_get(vs, "ttft_p50_s"));
    double tt = json_number_value(json_object_get(ts, "ttft_p50_s"));
    ck_assert_msg(vt > tt * 1.01, "median TTFT with audio %g, without %g", vt, tt);
    json_decref(v);
    json_decref(t);
}
END_TEST

/* A trace's optional sixth column: audio seconds per request (empty: none);
 * a bad value is named by file, line and column. */
START_TEST(trace_rows_carry_audio)
{
    char dir[] = "/tmp/check_encoder_trace_XXXXXX", csv[96], yaml[96], doc[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(csv, sizeof csv, "%s/t.csv", dir);
    snprintf(yaml, sizeof yaml, "%s/w.yaml", dir);
    const char *rows[] = {"0.0,8192,4,0,voice,120\n0.5,4096,4,0,text,\n",
                          "0.0,8192,4,0,voice,2m\n"};
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(csv, "w");
        fprintf(f, "arrival_s,prompt_tokens,decode_tokens,cached_tokens,name,audio_s\n%s",
                rows[k]);
        fclose(f);
        snprintf(doc, sizeof doc, "model: qwen3-omni-30b-a3b-thinker\nplatform: h100-sxm-8\n"
                 "parallel: {tp: 4}\nrequests: [{trace: t.csv}]\n");
        f = fopen(yaml, "w");
        fputs(doc, f);
        fclose(f);
        scenario s;
        cp_err e = {0};
        int rc = wl_load(yaml, NULL, 0, NULL, &s, &e);
        if (k == 0) {
            ck_assert_msg(rc == 0, "%s", e.msg);
            ck_assert_int_eq(s.nreqs, 2);
            ck_assert_int_eq(s.reqs[0].audio_frames, 12000);
            ck_assert_int_eq(s.reqs[1].audio_frames, 0);
            ck_assert_int_eq(s.audio_loaded, 1);
            wl_free(&s);
        } else {
            ck_assert_int_ne(rc, 0);
            ck_assert_msg(strstr(e.msg, "t.csv:2:20: audio_s: expected a number of seconds"),
                          "%s", e.msg);
        }
    }
    unlink(csv);
    unlink(yaml);
    rmdir(dir);
}
END_TEST

START_TEST(refused)
{
    static const struct {
        const char *set, *msg;
    } bad[] = {
        {"model=qwen3-30b-a3b", "qwen3-30b-a3b has no audio encoder cpsim models"},
        {"requests.0.audio_s=2000", "are 26000 prompt rows (200000 mel frames), more than the "
                                    "request's prompt_tokens 16384"},
        {"parallel.tp=8", "tp = 8 does not divide the 20 heads of "
                          "qwen3-omni-30b-a3b-thinker's audio encoder"},
        {"requests.0.audio_s=0.004", "less than one mel frame"},
        {"requests.0.audio_s=-1", "audio_s"},
        {"parallel.encoder_exchange=ulysses", "ulysses splits the audio encoder over the SP "
                                              "group; this node has sp = 1"},
        {"parallel.encoder_exchange=sideways", "encoder_exchange"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        scenario s;
        cp_err e = {0};
        const char *sets[] = {bad[i].set};
        ck_assert_int_ne(tu_try_load(&s, THINKER, sets, 1, &e), 0);
        ck_assert_msg(strstr(e.msg, bad[i].msg), "%s: %s", bad[i].set, e.msg);
        wl_free(&s);
    }
    /* ulysses needs the heads of a TP rank to split over SP: 20 / 4 = 5 */
    const char *odd[] = {"parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
                         "parallel.exchange=ring", "parallel.encoder_exchange=ulysses"};
    scenario s;
    cp_err e = {0};
    ck_assert_int_ne(tu_try_load(&s, THINKER, odd, 5, &e), 0);
    ck_assert_msg(strstr(e.msg, "5 audio-encoder heads of a TP rank"), "%s", e.msg);
    wl_free(&s);
    /* the key without audio changes nothing */
    const char *noaudio[] = {"requests.0={prompt_tokens: 4096}", "parallel.encoder_exchange=none"};
    e = (cp_err){0};
    ck_assert_int_ne(tu_try_load(&s, THINKER, noaudio, 2, &e), 0);
    ck_assert_msg(strstr(e.msg, "no request carries audio_s"), "%s", e.msg);
    wl_free(&s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("encoder");
    TCase *t = tcase_create("audio");
    tcase_set_timeout(t, 300);
    tcase_add_checked_fixture(t, tu_setup, NULL);
    tcase_add_test(t, rows_as_vllm_counts_them);
    tcase_add_test(t, params_are_the_modules);
    tcase_add_test(t, ops_over_tp_and_sp);
    tcase_add_test(t, front_memory_as_the_forward_holds_it);
    tcase_add_test(t, encoder_time_in_ttft);
    tcase_add_test(t, serving_runs_the_encoder);
    tcase_add_test(t, trace_rows_carry_audio);
    tcase_add_test(t, refused);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
