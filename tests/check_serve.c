/* check_serve: the serving scheduler (sim/serve/) on real workloads: it
 * agrees with the one-plan path where they meet, batches are priced as
 * batches, the decode-reuse bound holds against the exact run, admission
 * waits for KV, replicas share the requests, the RFC 3.8 router path runs
 * at a batch, and results are deterministic.  One run per test (fork). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/sortd.h"
#include "models/build/build.h"
#include "models/cost.h"
#include "sim/driver/driver.h"
#include "sim/engine/engine.h"
#include "sim/serve/serve.h"
#include "sim/serve/serve_int.h"
#include "tests/testutil.h"

static void setup(void)
{
    static char arg0[] = "check_serve";
    static char *argv[] = {arg0, NULL};
    int argc = 1;
    tu_setup();
    eng_init(&argc, argv);
}

/* The thinker on one H100 node as TP8, eager: the default workload's. */
static const char *THINKER = "model: qwen3-omni-30b-a3b-thinker\n"
                             "platform: h100-sxm-8\n"
                             "precision: bf16\n"
                             "parallel: {tp: 8}\n"
                             "engine: {graph: eager}\n";

static json_t *serve(const char *yaml, const char *const *sets, int nsets, double reuse)
{
    scenario s;
    tu_load(&s, yaml, sets, nsets);
    ck_assert(s.serving);
    srv_out rq = {0};
    json_t *sum = NULL;
    cp_err err = {0};
    ck_assert_msg(srv_run(&rq, &s, reuse, &sum, NULL, &err) == 0, "%s", err.msg);
    wl_free(&s);
    return sum;
}

static double req_num(json_t *sum, int i, const char *key)
{
    json_t *q = json_array_get(json_object_get(sum, "requests"), (size_t)i);
    ck_assert_ptr_nonnull(q);
    return json_number_value(json_object_get(q, key));
}

static char *cat(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%s%s", a, b);
    return s;
}

/* A request alone in a serving run takes exactly the times of the plan of
 * that one request (same steps, same engine). */
START_TEST(test_serve_matches_one_plan)
{
    char *one = cat(THINKER, "requests:\n  - {prompt_tokens: 8192, decode_tokens: 6}\n");
    char *two = cat(THINKER, "requests:\n  - {prompt_tokens: 8192, decode_tokens: 6}\n"
                             "  - {prompt_tokens: 512, arrival_s: 50}\n");
    scenario s;
    plan p;
    tu_plan(&s, &p, one, NULL, 0);
    ck_assert(!s.serving);
    drv_req rq = {0};
    json_t *a = NULL;
    cp_err err = {0};
    ck_assert_msg(drv_simulate(&rq, &s, &p, &a, NULL, &err) == 0, "%s", err.msg);
    json_t *b = serve(two, NULL, 0, 0.0);
    ck_assert_double_eq_tol(req_num(a, 0, "ttft_s"), req_num(b, 0, "ttft_s"), 1e-9);
    ck_assert_double_eq_tol(req_num(a, 0, "tpot_s"), req_num(b, 0, "tpot_s"), 1e-9);
    ck_assert_double_eq_tol(req_num(a, 0, "end_s"), req_num(b, 0, "end_s"), 1e-9);
    /* the second waits for its arrival, not for the clock */
    ck_assert(req_num(b, 1, "end_s") > 50.0);
    ck_assert_double_eq_tol(req_num(b, 1, "queue_s"), 0, 1e-12);
    json_decref(a);
    json_decref(b);
    plan_free(&p);
    wl_free(&s);
    free(one);
    free(two);
}
END_TEST

/* One decode step of 8 requests costs more than one of a single request
 * and much less than 8 of them (the GEMMs read their weights once). */
START_TEST(test_serve_batch_priced_as_batch)
{
    char *y = cat(THINKER, "requests:\n  - {prompt_tokens: 512}\n  - {prompt_tokens: 512}\n");
    scenario s;
    tu_load(&s, y, NULL, 0);
    srv_steps st;
    cp_err err = {0};
    ck_assert_msg(srv_steps_init(&st, &s, 0, 0.0, &err) == 0, "%s", err.msg);
    sc_seq one = {1, 4096, 1, 0}, eight[8];
    for (int i = 0; i < 8; i++)
        eight[i] = (sc_seq){1, 4096 + 100 * i, 1, 0};
    sc_batch b1 = {&one, 1, 0}, b8 = {eight, 8, 0};
    int i1 = srv_step_get(&st, &b1, &err), i8 = srv_step_get(&st, &b8, &err);
    ck_assert(i1 >= 0 && i8 >= 0 && i1 != i8);
    double d1 = st.v[i1].dur, d8 = st.v[i8].dur;
    ck_assert_msg(d8 > d1 && d8 < 2.0 * d1, "decode step: 1 request %g s, 8 requests %g s", d1,
                  d8);
    /* the same composition again is the same simulated step */
    ck_assert_int_eq(srv_step_get(&st, &b8, &err), i8);
    ck_assert_int_eq(st.n, 2);
    /* the batch's attention: one call over the 8 decodes; the longest
     * request sets the split, so every request costs its keys */
    plan p;
    build_step_plan(&s, &b8, 0, &p);
    const plan_op *at = tu_find(&p, 0, "attention", 0);
    ck_assert_ptr_nonnull(at);
    ck_assert_int_eq(at->attn.batch, 8);
    ck_assert_int_eq(at->attn.q_len, 1);
    ck_assert_int_eq(at->attn.kv_len, eight[7].prefix + 1);
    ck_assert_double_eq_tol(at->attn.pairs, 8.0 * (double)(eight[7].prefix + 1), 1e-6);
    ck_assert_int_eq(tu_count(&p, 0, "attention", 0), 1);
    const plan_op *q = tu_find(&p, 0, "qkv_proj", 0);
    ck_assert_int_eq(q->m, 8);
    const plan_op *lm = tu_find(&p, 0, "lm_head", -1);
    ck_assert_int_eq(lm->m, 8);
    plan_free(&p);
    srv_steps_free(&st);
    wl_free(&s);
    free(y);
}
END_TEST

/* A mixed step: a prefill chunk's own causal call beside the decodes'. */
START_TEST(test_serve_mixed_step_calls)
{
    char *y = cat(THINKER, "requests:\n  - {prompt_tokens: 512}\n  - {prompt_tokens: 512}\n");
    scenario s;
    tu_load(&s, y, NULL, 0);
    sc_seq seq[3] = {{1, 1000, 1, 0}, {2048, 0, 1, 0}, {1, 3000, 1, 0}};
    sc_batch bt = {seq, 3, 0};
    plan p;
    build_step_plan(&s, &bt, 0, &p);
    ck_assert_int_eq(tu_count(&p, 0, "attention", 0), 2);
    const plan_op *q = tu_find(&p, 0, "qkv_proj", 0);
    ck_assert_int_eq(q->m, 2050);
    double pairs = 0;
    for (uint32_t i = 0; i < p.progs[0].nops; i++) {
        const plan_op *o = &p.progs[0].ops[i];
        if (o->layer == 0 && o->name && strcmp(o->name, "attention") == 0)
            pairs += o->attn.pairs;
    }
    /* the two decodes: one call priced at the longer one's keys */
    ck_assert_double_eq_tol(pairs, 2.0 * 3001.0 + 2048.0 * 2049.0 / 2.0, 1e-6);
    plan_free(&p);
    wl_free(&s);
    free(y);
}
END_TEST

/* The long/short mix with the default reuse bound against the exact run:
 * every request's TTFT and TPOT within the bound, fewer simulated steps. */
START_TEST(test_serve_reuse_bound)
{
    const char *sets[] = {"simulation.duration_s=10"};
    char path[4096];
    snprintf(path, sizeof path, "%s/workloads/examples/long-short-mix.yaml", CP_SRCDIR);
    json_t *sum[2];
    for (int k = 0; k < 2; k++) {
        scenario m;
        cp_err err = {0};
        ck_assert_msg(wl_load(path, sets, 1, NULL, &m, &err) == 0, "%s", err.msg);
        srv_out rq = {0};
        ck_assert_msg(srv_run(&rq, &m, k == 0 ? 0.0 : m.decode_reuse, &sum[k], NULL, &err) == 0,
                      "%s", err.msg);
        wl_free(&m);
    }
    json_t *ra = json_object_get(sum[0], "requests"), *rb = json_object_get(sum[1], "requests");
    ck_assert_int_eq(json_array_size(ra), json_array_size(rb));
    int compared = 0;
    for (size_t i = 0; i < json_array_size(ra); i++) {
        if (!json_is_true(json_object_get(json_array_get(ra, i), "finished")))
            continue;
        for (int f = 0; f < 2; f++) {
            const char *key = f ? "tpot_s" : "ttft_s";
            double x = req_num(sum[0], (int)i, key), y = req_num(sum[1], (int)i, key);
            if (x > 0)
                ck_assert_msg(fabs(y - x) <= 0.005 * x, "request %zu %s: exact %g reused %g",
                              i, key, x, y);
            compared++;
        }
    }
    ck_assert_msg(compared >= 20, "%d figures compared", compared);
    json_t *se = json_object_get(sum[0], "simulation"), *sr = json_object_get(sum[1], "simulation");
    ck_assert(json_integer_value(json_object_get(sr, "simulated_steps")) <
              json_integer_value(json_object_get(se, "simulated_steps")));
    ck_assert(json_integer_value(json_object_get(sr, "reused_steps")) > 0);
    ck_assert_int_eq(json_integer_value(json_object_get(se, "reused_steps")), 0);
    json_decref(sum[0]);
    json_decref(sum[1]);
}
END_TEST

/* A KV budget for two requests: the third waits until one leaves; none is
 * lost; the peak stays on the device. */
START_TEST(test_serve_admission_waits_for_kv)
{
    const char *reqs = "requests:\n"
                       "  - {prompt_tokens: 4096, decode_tokens: 8, cached_tokens: 56000}\n"
                       "  - {prompt_tokens: 4096, decode_tokens: 8, cached_tokens: 56000}\n"
                       "  - {prompt_tokens: 4096, decode_tokens: 8, cached_tokens: 56000}\n";
    char *y = cat(THINKER, reqs);
    scenario s;
    tu_load(&s, y, NULL, 0);
    double kv = build_kv_bytes(&s, 56000 + 4096 + 8), hbm = s.plat.hbm_bytes;
    wl_free(&s);
    scenario s0;
    tu_load(&s0, y, NULL, 0);
    double b0 = srv_kv_budget(&s0, NULL);
    wl_free(&s0);
    ck_assert(b0 > 3 * kv);
    /* a device with room for the rest and two requests' KV and a half */
    char yaml[2048];
    snprintf(yaml, sizeof yaml,
             "model: qwen3-omni-30b-a3b-thinker\n"
             "platform: {name: h100-sxm-8, device: {hbm_bytes: %.0f}}\n"
             "precision: bf16\nparallel: {tp: 8}\nengine: {graph: eager}\n%s",
             hbm - b0 + 2.5 * kv, reqs);
    json_t *sum = serve(yaml, NULL, 0, 0.0);
    double budget = json_number_value(
        json_object_get(json_object_get(sum, "serving"), "kv_budget_bytes"));
    ck_assert_msg(budget >= 2 * kv && budget < 3 * kv, "budget %g, request %g", budget, kv);
    ck_assert_double_eq_tol(req_num(sum, 0, "queue_s"), 0, 1e-12);
    ck_assert_double_eq_tol(req_num(sum, 1, "queue_s"), 0, 1e-12);
    ck_assert(req_num(sum, 2, "queue_s") > 0);
    ck_assert(req_num(sum, 2, "arrival_s") + req_num(sum, 2, "queue_s") >=
              fmin(req_num(sum, 0, "end_s"), req_num(sum, 1, "end_s")) - 1e-12);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(sum, "serving"),
                                                        "finished")), 3);
    ck_assert(!json_is_true(json_object_get(sum, "oom")));
    json_decref(sum);
    free(y);
}
END_TEST

/* Two replicas: round robin alternates, least_loaded fills the idle one. */
START_TEST(test_serve_router)
{
    const char *yaml = "model: qwen3-omni-30b-a3b-thinker\n"
                       "platform: h100-sxm-8\n"
                       "precision: bf16\n"
                       "parallel: {tp: 4, dp: 2}\n"
                       "requests:\n"
                       "  - {prompt_tokens: 16384, decode_tokens: 4}\n"
                       "  - {prompt_tokens: 512, arrival_s: 0.001}\n"
                       "  - {prompt_tokens: 512, arrival_s: 0.002}\n"
                       "  - {prompt_tokens: 512, arrival_s: 0.003}\n";
    json_t *rr = serve(yaml, NULL, 0, 0.0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq((int)req_num(rr, i, "replica"), i % 2);
    const char *sets[] = {"engine.router=least_loaded"};
    json_t *ll = serve(yaml, sets, 1, 0.0);
    ck_assert_int_eq((int)req_num(ll, 0, "replica"), 0);
    ck_assert_int_eq((int)req_num(ll, 1, "replica"), 1);
    /* request 1 (one prompt) is done by 0.003: replica 1 has less */
    ck_assert_int_eq((int)req_num(ll, 2, "replica"), 1);
    ck_assert_int_eq(json_array_size(json_object_get(rr, "ranks")), 8);
    json_decref(rr);
    json_decref(ll);
}
END_TEST

/* The RFC 3.8 path at 9 packed tokens, TP4: pad to 12, slice of 3, from
 * the bundled workload (72 requests over 8 replicas). */
START_TEST(test_serve_router_pad_slice)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/workloads/examples/dsa-decode-router.yaml", CP_SRCDIR);
    scenario s;
    cp_err err = {0};
    ck_assert_msg(wl_load(path, NULL, 0, NULL, &s, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.nreqs, 72);
    sc_seq dec[9];
    for (int i = 0; i < 9; i++)
        dec[i] = (sc_seq){1, 512 + i, 1, 0};
    sc_batch bt = {dec, 9, 0};
    plan p;
    build_step_plan(&s, &bt, 1, &p);
    ck_assert_int_eq(p.nranks, 32);
    const plan_op *pad = tu_find(&p, 0, "moe_pad", -2);
    const plan_op *slice = tu_find(&p, 0, "moe_slice", -2);
    const plan_op *rs = tu_find(&p, 0, "router_slice", -2);
    ck_assert_ptr_nonnull(pad);
    ck_assert_ptr_nonnull(slice);
    ck_assert_ptr_nonnull(rs);
    ck_assert_int_eq(pad->in.d[0], 9);
    ck_assert_int_eq(pad->out.d[0], 12);
    ck_assert_int_eq(slice->out.d[0], 3);
    ck_assert_int_eq(rs->out.d[0], 3);
    plan_free(&p);
    /* and the run takes that step: 9 decodes per replica */
    srv_out rq = {0};
    json_t *sum = NULL;
    ck_assert_msg(srv_run(&rq, &s, s.decode_reuse, &sum, NULL, &err) == 0, "%s", err.msg);
    ck_assert(json_is_true(json_object_get(json_object_get(sum, "serving"), "lockstep")));
    for (int i = 0; i < 72; i++)
        ck_assert_int_eq((int)req_num(sum, i, "replica"), i % 8);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(sum, "serving"),
                                                        "finished")), 72);
    json_decref(sum);
    wl_free(&s);
}
END_TEST

/* simulation.duration_s ends the run: requests in flight are unfinished. */
START_TEST(test_serve_duration_unfinished)
{
    char *y = cat(THINKER, "simulation: {duration_s: 1.2}\n"
                           "requests:\n"
                           "  - {streams: 2, prompt_tokens: 1024, decode_tokens: 12,"
                           " name: chat}\n");
    json_t *sum = serve(y, NULL, 0, 0.005);
    json_t *sv = json_object_get(sum, "serving");
    json_int_t n = json_integer_value(json_object_get(sv, "requests"));
    json_int_t done = json_integer_value(json_object_get(sv, "finished"));
    ck_assert(n > done && done > 0);
    ck_assert_int_eq(n - done, 2); /* one in flight per client */
    ck_assert(json_number_value(json_object_get(sv, "duration_s")) >= 1.2);
    ck_assert_ptr_nonnull(json_object_get(json_object_get(sv, "by_name"), "chat"));
    json_t *last = json_array_get(json_object_get(sum, "requests"), (size_t)n - 1);
    ck_assert(json_is_false(json_object_get(last, "finished")));
    ck_assert(json_is_null(json_object_get(last, "end_s")));
    json_decref(sum);
    free(y);
}
END_TEST

/* The error of a serving run that must be refused. */
static const char *refused(const char *yaml, const char *const *sets, int nsets)
{
    static cp_err err;
    memset(&err, 0, sizeof err);
    scenario s;
    tu_load(&s, yaml, sets, nsets);
    srv_out rq = {0};
    json_t *sum = NULL;
    ck_assert_int_eq(srv_run(&rq, &s, 0.005, &sum, NULL, &err), -1);
    ck_assert_ptr_null(sum);
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
    wl_free(&s);
    return err.msg;
}

/* Serving work is bounded (issue 30 part 5): clients without a count
 * until a far duration stop at the request bound with the key; requests
 * whose steps could never fit are refused before anything runs. */
START_TEST(test_serve_work_is_bounded)
{
    char *y = cat(THINKER, "simulation: {duration_s: 1e5}\n"
                           "requests: [{streams: 64, prompt_tokens: 16}]\n");
    const char *m = refused(y, NULL, 0);
    ck_assert_msg(strstr(m, "requests.0: streams without count, until simulation.duration_s") &&
                  strstr(m, "cpsim serves at most 1000000 requests"), "%s", m);
    free(y);
    /* a million tokens a step at most 1: 1e12 steps, refused up front */
    static const char *const one[] = {"engine.chunked_prefill=true",
                                      "engine.max_num_batched_tokens=1", "engine.max_num_seqs=1"};
    y = cat(THINKER, "requests: [{every_s: 0, count: 100000, prompt_tokens: 16000000}]\n");
    m = refused(y, one, 3);
    ck_assert_msg(strstr(m, "engine.max_num_batched_tokens: the requests need at least "
                            "1600000000000 steps"), "%s", m);
    free(y);
}
END_TEST

/* A run that serves nothing says so: null figures, a warning, and the
 * resident memory (weights and engine) as every rank's peak. */
START_TEST(test_serve_nothing_served)
{
    char *y = cat(THINKER, "simulation: {duration_s: 1}\n"
                           "requests: [{every_s: 10, count: 3, start_s: 5, prompt_tokens: 64}]\n");
    json_t *sum = serve(y, NULL, 0, 0.005);
    ck_assert(json_is_null(json_object_get(sum, "ttft_s")));
    json_t *sv = json_object_get(sum, "serving");
    ck_assert(json_is_null(json_object_get(sv, "ttft_p50_s")));
    ck_assert(json_is_null(json_object_get(sv, "itl_p99_s")));
    /* the thinker's encoder warnings come first (models/arch.c warn_towers) */
    json_t *warns = json_object_get(sum, "warnings"), *w;
    size_t i;
    int said = 0;
    json_array_foreach(warns, i, w)
        said |= strstr(json_string_value(w), "no step ran before simulation.duration_s = 1 s "
                                             "(the first request arrives at 5 s)") != NULL;
    ck_assert_msg(said, "no warning that nothing was served (%zu warnings)",
                  json_array_size(warns));
    /* 30.5 B parameters / TP8 at bf16 and 1.25 GB of engine memory: ~8.9 GB */
    double peak = json_number_value(json_object_get(sum, "peak_bytes_max"));
    ck_assert_msg(peak > 8e9 && peak < 10e9, "peak %g", peak);
    json_t *r0 = json_array_get(json_object_get(sum, "ranks"), 0);
    json_t *cat0 = json_object_get(r0, "peak_by_category");
    ck_assert(json_number_value(json_object_get(cat0, "weights")) > 7e9);
    ck_assert(json_number_value(json_object_get(cat0, "reserved")) == 1e9);
    json_decref(sum);
    free(y);
}
END_TEST

/* every_s: 0 is a burst: count requests at start_s, served together. */
START_TEST(test_serve_burst)
{
    char *y = cat(THINKER, "requests: [{every_s: 0, count: 4, start_s: 2, prompt_tokens: 256,"
                           " decode_tokens: 2}]\n");
    json_t *sum = serve(y, NULL, 0, 0.005);
    for (int i = 0; i < 4; i++) {
        ck_assert(req_num(sum, i, "arrival_s") == 2.0);
        ck_assert(req_num(sum, i, "ttft_s") > 0);
    }
    /* one prefill step for all four, then two decode steps */
    json_t *sim = json_object_get(sum, "simulation");
    ck_assert_int_eq(json_integer_value(json_object_get(sim, "steps")), 3);
    json_decref(sum);
    free(y);
}
END_TEST

/* The metrics that show a long prompt's stall: the short streams' longest
 * inter-token gap is the long prefill's step (named, with its make-up),
 * ITL max equals it, and goodput counts against the workload's slo, per
 * class; percentiles interpolate (numpy's linear rule). */
START_TEST(test_serve_stall_and_goodput)
{
    char *y = cat(THINKER, "requests:\n"
                           "  - {every_s: 0.002, count: 4, prompt_tokens: 256, decode_tokens: 40,"
                           " name: short}\n"
                           "  - {prompt_tokens: 16384, arrival_s: 0.08, name: long}\n"
                           "slo: {tpot_s: 1.0, by_name: {short: {ttft_s: 10, tpot_s: 1e-6}}}\n");
    json_t *sum = serve(y, NULL, 0, 0.005);
    json_t *sv = json_object_get(sum, "serving");
    json_t *sh = json_object_get(json_object_get(sv, "by_name"), "short");
    json_t *lg = json_object_get(json_object_get(sv, "by_name"), "long");
    json_t *st = json_object_get(sh, "stall_step");
    ck_assert(json_is_object(st));
    double t0 = json_number_value(json_object_get(st, "t0_s"));
    double t1 = json_number_value(json_object_get(st, "t1_s"));
    double stall = json_number_value(json_object_get(sh, "stall_max_s"));
    /* the step that made it is the long prefill, and the stall covers it */
    ck_assert_int_eq(json_integer_value(json_object_get(st, "prefills")), 1);
    ck_assert(json_integer_value(json_object_get(st, "tokens")) >= 16384);
    ck_assert(stall >= t1 - t0 && t1 - t0 > 0);
    ck_assert(json_number_value(json_object_get(sh, "stall_at_s")) <= t0);
    ck_assert(json_number_value(json_object_get(sh, "itl_max_s")) == stall);
    ck_assert(json_number_value(json_object_get(sh, "itl_p99_s")) < stall);
    /* a decode step is far below the stall: the p50 cannot show it */
    ck_assert(json_number_value(json_object_get(sh, "itl_p50_s")) < 0.2 * stall);
    /* goodput: the short class's TPOT bound fails every short request, the
     * long request (no decode) meets the top-level one */
    ck_assert_int_eq(json_integer_value(json_object_get(sh, "slo_met")), 0);
    ck_assert(json_number_value(json_object_get(sh, "goodput_per_s")) == 0);
    ck_assert_int_eq(json_integer_value(json_object_get(lg, "slo_met")), 1);
    double dur = json_number_value(json_object_get(sv, "duration_s"));
    ck_assert(fabs(json_number_value(json_object_get(sv, "goodput_per_s")) - 1 / dur) < 1e-12);
    /* ttft_p99 of the four short requests: between the 3rd and 4th values */
    double v[4];
    for (int i = 0; i < 4; i++)
        v[i] = req_num(sum, i, "ttft_s");
    for (int i = 1; i < 4; i++) /* insertion sort */
        for (int k = i; k > 0 && v[k] < v[k - 1]; k--) {
            double t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    double want = v[2] + 0.97 * (v[3] - v[2]);
    ck_assert(fabs(json_number_value(json_object_get(sh, "ttft_p99_s")) - want) < 1e-12);
    ck_assert(strstr(json_string_value(json_object_get(sv, "percentiles")), "linear"));
    json_decref(sum);
    free(y);
}
END_TEST

/* Same inputs, byte-identical summary. */
START_TEST(test_serve_deterministic)
{
    char *y = cat(THINKER, "simulation: {duration_s: 2.0}\n"
                           "requests:\n"
                           "  - {rate_per_s: 20, count: 30, seed: 7, prompt_tokens: 2048,"
                           " decode_tokens: 16}\n");
    /* one run per process, as cpsim runs (a later run in a process
     * continues SimGrid's clock, which moves the last bits) */
    char *text[2];
    for (int k = 0; k < 2; k++) {
        int fd[2];
        ck_assert(pipe(fd) == 0);
        pid_t pid = fork();
        ck_assert(pid >= 0);
        if (pid == 0) {
            close(fd[0]);
            json_t *j = serve(y, NULL, 0, 0.005);
            /* the workload's temporary file name is the one difference */
            json_object_del(json_object_get(j, "scenario"), "workload");
            char *d = json_dumps(j, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
            size_t n = strlen(d);
            _exit(write(fd[1], d, n) == (ssize_t)n ? 0 : 1);
        }
        close(fd[1]);
        size_t cap = 1 << 16, n = 0;
        text[k] = malloc(cap);
        ssize_t got;
        while ((got = read(fd[0], text[k] + n, cap - n - 1)) > 0) {
            n += (size_t)got;
            if (cap - n < 4096)
                text[k] = realloc(text[k], cap *= 2);
        }
        text[k][n] = '\0';
        close(fd[0]);
        int st = 0;
        waitpid(pid, &st, 0);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0 && n > 1000);
    }
    ck_assert_msg(strcmp(text[0], text[1]) == 0, "the two summaries differ");
    free(text[0]);
    free(text[1]);
    free(y);
}
END_TEST

/* The linear scan the step cache ran before its index: the earliest step of
 * the shape nearest ctx within reuse * ctx. */
static int scan_steps(const uint64_t *shape, const double *ctx, int n, uint64_t sh, double c,
                      double reuse)
{
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (shape[i] != sh)
            continue;
        double d = fabs(ctx[i] - c);
        if (d <= reuse * c && (best < 0 || d < fabs(ctx[best] - c)))
            best = i;
        if (d == 0)
            break;
    }
    return best;
}

/* The indexed step cache answers every lookup as the scan over all steps:
 * few shapes, sums drawn from a small set (equal sums, ties between a sum
 * below and one above), bounds from exact to wide. */
/* The percentiles' sort (base/sortd.h) against qsort: random doubles of
 * both signs, zeros of both signs, infinities and repeats, below and above
 * the size from which it runs as a radix sort; equal bits after (the two
 * zeros compared as numbers: qsort may leave them in either order). */
static int cmp_num(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

START_TEST(test_sort_doubles_as_qsort)
{
    static const size_t sizes[] = {0, 1, 2, 17, 4095, 4096, 100000};
    unsigned seed = 12345;
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
        size_t n = sizes[z];
        double *a = malloc((n + 1) * sizeof *a), *b = malloc((n + 1) * sizeof *b);
        ck_assert(a && b);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;   /* the C standard's example rand */
            unsigned r = seed >> 8;
            switch (r % 8) {
            case 0: a[i] = 0.0; break;
            case 1: a[i] = -0.0; break;
            case 2: a[i] = (r & 1) ? INFINITY : -INFINITY; break;
            case 3: a[i] = 0.25; break;   /* repeats */
            default: a[i] = ((double)r - 8e6) * 1e-9 * (double)(r % 97 + 1);
            }
            b[i] = a[i];
        }
        qsort(b, n, sizeof *b, cmp_num);
        cp_sort_doubles(a, n);
        for (size_t i = 0; i < n; i++) {
            ck_assert_msg(a[i] == b[i], "n %zu: element %zu %g, qsort %g", n, i, a[i], b[i]);
            if (a[i] != 0)
                ck_assert(memcmp(&a[i], &b[i], sizeof a[i]) == 0);
            if (i > 0)
                ck_assert(!signbit(a[i - 1]) <= !signbit(a[i]) || a[i - 1] < a[i]);
        }
        free(a);
        free(b);
    }
}
END_TEST

START_TEST(test_serve_index_matches_scan)
{
    enum { N = 3000, Q = 20000 };
    static uint64_t shape[N];
    static double ctx[N];
    srv_index ix = {0};
    uint64_t x = 88172645463325252ULL; /* xorshift64's seed in Marsaglia (2003) */
    int hits = 0, n = 0;
    for (int q = 0; q < Q; q++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t sh = (x >> 8) % 7 * 0x9e3779b97f4a7c15ULL;
        double c = (double)((x >> 20) % 400) * 4;
        double reuse = (x >> 40) % 3 == 0 ? 0 : (x >> 40) % 3 == 1 ? 0.005 : 0.05;
        int want = scan_steps(shape, ctx, n, sh, c, reuse);
        int got = srv_index_find(&ix, sh, c, reuse);
        ck_assert_msg(got == want, "lookup %d: index %d, scan %d", q, got, want);
        hits += got >= 0;
        if (got < 0 && n < N && (x >> 50) % 2) { /* a miss simulates a step */
            shape[n] = sh;
            ctx[n] = c;
            srv_index_add(&ix, sh, c, n++);
        } else if (n < N && (x >> 50) % 5 == 0) { /* equal sums in one shape */
            shape[n] = sh;
            ctx[n] = c;
            srv_index_add(&ix, sh, c, n++);
        }
    }
    ck_assert_msg(hits > Q / 4 && n > 500, "%d hits, %d steps", hits, n);
    srv_index_free(&ix);
}
END_TEST

/* Times a and b (from runs that began at a0 and b0) the same to rounding:
 * within 1e-12 s plus 1e-9 of the time since the run began.  A collective's
 * measured duration carries the rounding of the clock it was measured at
 * into each of its ~140 uses in a step, where SimGrid rounds afresh at each
 * (and a replayed layer repeats its reference's the same way): measured,
 * up to 1.3e-10 of the time since the start at a clock near 20 s, 3e-11
 * near 0; 1e-9 is replay.sh's bound on the outputs. */
static void close_in_run(double a, double a0, double b, double b0)
{
    double tol = 1e-12 + 1e-9 * fabs(b - b0);
    ck_assert_msg(fabs((a - a0) - (b - b0)) <= tol, "%.17g against %.17g", a - a0, b - b0);
}

/* Steps of the bench's shapes evaluated in unison (sim/engine/unison.c)
 * and simulated on SimGrid in full (no replay): every step takes the
 * unison path, with the same records, counts and step ends, every time
 * the same to rounding (close_in_run).  240 random batches:
 * one to three prompts of 64 to 16K tokens, or 1 to 96 decodes of 64 to
 * 16K tokens of context, drawn by Park and Miller's Lehmer generator. */
START_TEST(test_serve_unison_matches_simgrid)
{
    char *y = cat(THINKER, "requests:\n  - {prompt_tokens: 16384}\n");
    scenario s;
    tu_load(&s, y, NULL, 0);
    cp_err err = {0};
    cost_model *cost = cost_new(&s.plat, &err);
    ck_assert_msg(cost != NULL, "%s", err.msg);
    coll_model cm;
    interf_model im;
    ck_assert(coll_model_init(&cm, &s.plat, &err) == 0 && interf_load(&im, &s.plat, &err) == 0);
    eng_opts sim = eng_opts_of(&s, &cm, &im), uni = sim;
    sim.replay = 0;
    uni.memo = eng_collmemo_new();
    uint64_t x = 12345;
#define DRAW() (x = x * 48271 % 2147483647, (double)x / 2147483647.0)
    sc_seq seq[96];
    for (int k = 0; k < 240; k++) {
        int n, prefill = DRAW() < 0.5;
        if (prefill) {
            n = 1 + (int)(DRAW() * 3);
            for (int i = 0; i < n; i++)
                seq[i] = (sc_seq){(int64_t)exp(log(64) + DRAW() * log(256)), 0, 1, 0};
        } else {
            n = 1 + (int)(DRAW() * 96);
            for (int i = 0; i < n; i++)
                seq[i] = (sc_seq){1, (int64_t)exp(log(64) + DRAW() * log(256)), 1, 0};
        }
        sc_batch bt = {seq, n, 0};
        plan p;
        build_step_plan(&s, &bt, 0, &p);
        cost_price_plan(cost, &p, s.graph != GRAPH_EAGER);
        eng_result a, b;
        ck_assert_msg(eng_run(&p, &uni, &a, &err) == 0, "%s", err.msg);
        ck_assert_msg(eng_run(&p, &sim, &b, &err) == 0, "%s", err.msg);
        ck_assert_msg(a.unison && !b.unison, "batch %d (%d %s): not in unison", k, n,
                      prefill ? "prefills" : "decodes");
        ck_assert_uint_eq(a.nev, b.nev);
        ck_assert_uint_eq(a.nmem, b.nmem);
        ck_assert_int_eq(a.execs, b.execs);
        ck_assert_int_eq(a.messages, b.messages);
        ck_assert_int_eq(a.iters_simulated, b.iters_simulated);
        for (int r = 0; r < p.nranks; r++) {
            size_t na, nb, ca = 0, cb = 0;
            eng_event *ea = NULL, *eb = NULL;
            na = eng_rank_events(&a, r, &ea, &ca);
            nb = eng_rank_events(&b, r, &eb, &cb);
            ck_assert_uint_eq(na, nb);
            qsort(ea, na, sizeof *ea, tu_ev_key_cmp);
            qsort(eb, nb, sizeof *eb, tu_ev_key_cmp);
            for (size_t i = 0; i < na; i++) {
                ck_assert_int_eq(tu_ev_key_cmp(&ea[i], &eb[i]), 0);
                ck_assert_int_eq(ea[i].stream, eb[i].stream);
                close_in_run(ea[i].t0, a.t0, eb[i].t0, b.t0);
                close_in_run(ea[i].t1, a.t0, eb[i].t1, b.t0);
            }
            eng_mem *ma = NULL, *mb = NULL;
            na = eng_rank_mems(&a, r, &ma, &ca);
            nb = eng_rank_mems(&b, r, &mb, &cb);
            ck_assert_uint_eq(na, nb);
            for (size_t i = 0; i < na; i++) {
                ck_assert_int_eq(ma[i].seq, mb[i].seq);
                ck_assert(ma[i].delta == mb[i].delta && ma[i].cat == mb[i].cat);
                close_in_run(ma[i].t, a.t0, mb[i].t, b.t0);
            }
            close_in_run(a.step_end[r], a.t0, b.step_end[r], b.t0);
            free(ea);
            free(eb);
            free(ma);
            free(mb);
        }
        eng_result_free(&a);
        eng_result_free(&b);
        plan_free(&p);
    }
#undef DRAW
    eng_collmemo_free(uni.memo);
    cost_free(cost);
    wl_free(&s);
    free(y);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("serve");
    TCase *tc = tcase_create("serve");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_serve_matches_one_plan);
    tcase_add_test(tc, test_serve_index_matches_scan);
    tcase_add_test(tc, test_sort_doubles_as_qsort);
    tcase_add_test(tc, test_serve_batch_priced_as_batch);
    tcase_add_test(tc, test_serve_mixed_step_calls);
    tcase_add_test(tc, test_serve_reuse_bound);
    tcase_add_test(tc, test_serve_admission_waits_for_kv);
    tcase_add_test(tc, test_serve_router);
    tcase_add_test(tc, test_serve_router_pad_slice);
    tcase_add_test(tc, test_serve_duration_unfinished);
    tcase_add_test(tc, test_serve_deterministic);
    tcase_add_test(tc, test_serve_work_is_bounded);
    tcase_add_test(tc, test_serve_nothing_served);
    tcase_add_test(tc, test_serve_burst);
    tcase_add_test(tc, test_serve_stall_and_goodput);
    tcase_add_test(tc, test_serve_unison_matches_simgrid);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
