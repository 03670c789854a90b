/* check_pcp: context parallelism for MLA and DSA models (models/attn/,
 * models/exchange/): PCP (parallel.sp, alias parallel.pcp) over the latent
 * cache with all_gather, the two rings and the DCP merge, DSA's top-k over
 * a split prompt, and DCP inside the TP group (parallel.dcp) with its KV
 * bytes, its decode exchanges and the layouts refused at load.
 *
 * Plan level (no SimGrid), against closed forms from DeepSeek-V3's config
 * (models/configs/deepseek-v3.json: 128 heads, kv_lora_rank 512, rope 64,
 * nope 128, v 128, 61 layers), DeepSeek-V3.2-Exp's indexer (128-wide index
 * keys, top-2048) and the thinker's GQA (32 q heads, 4 KV heads, d 128). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/build/build.h"
#include "models/exchange/exchange.h"
#include "models/quant.h"
#include "sim/driver/driver.h"
#include "tests/testutil.h"

/* deepseek-v3: the latent [kv_lora_rank + rope] and the expanded heads */
enum { HEADS = 128, KL = 512, DR = 64, DN = 128, DV = 128, LAT = KL + DR };
/* deepseek-v3.2-exp: index keys, keys per query */
enum { DI = 128, TOPK = 2048 };

static const char *DSV3 =
    "model: deepseek-v3\n"
    "platform: {name: h200-sxm-8, nodes: 2}\n"
    "parallel: {tp: 8, ep: 8}\n"
    "requests:\n  - {prompt_tokens: 8192, decode_tokens: 1}\n";

static const char *THINKER =
    "model: qwen3-omni-30b-a3b-thinker\n"
    "platform: {name: h200-sxm-8, nodes: 2}\n"
    "parallel: {tp: 8}\n"
    "requests:\n  - {prompt_tokens: 8192, decode_tokens: 1}\n";

/* The op of program g named `name` in (step, layer 0), and how many. */
static const plan_op *op_at(const plan *p, int g, int step, const char *name, int *count)
{
    const plan_op *found = NULL;
    int n = 0;
    const plan_prog *pg = &p->progs[g];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->step == step && o->layer == 0 && strcmp(o->name, name) == 0) {
            if (!found)
                found = o;
            n++;
        }
    }
    if (count)
        *count = n;
    return found;
}

/* Pairs of the queries at positions lo .. lo+n-1, each seeing min(p+1, cap)
 * keys (cap 0: all), by enumeration. */
static double capped(long lo, long n, long cap)
{
    double s = 0;
    for (long p = lo; p < lo + n; p++)
        s += cap > 0 && p + 1 > cap ? (double)cap : (double)(p + 1);
    return s;
}

/* PCP with all_gather_tensors kv: the gathered rows are MLA's latents (576
 * wide, not 2 x heads x 128), and each rank expands the keys its zigzag
 * chunks see: rank 0 holds chunks 0 and 3 of 4 (every key), rank 1 chunks
 * 1 and 2 (three quarters). */
START_TEST(all_gather_moves_latents)
{
    const long T = 8192;
    const char *sets[] = {"parallel.sp=2", "parallel.kv_storage=by_position",
                          "parallel.exchange=all_gather", "parallel.all_gather_tensors=kv",
                          "parallel.split=zigzag"};
    scenario s;
    plan p;
    tu_plan(&s, &p, DSV3, sets, 5);
    const plan_op *g = op_at(&p, 0, 0, "sp_kv_all_gather", NULL);
    ck_assert_ptr_nonnull(g);
    ck_assert_double_eq_tol(g->comm_bytes, 2.0 * (T / 2) * LAT * 2.0, 1e-6);
    ck_assert_int_eq(g->group, G_SP);
    const plan_op *e0 = op_at(&p, 0, 0, "kv_b_proj", NULL);
    const plan_op *e1 = op_at(&p, 1, 0, "kv_b_proj", NULL);
    ck_assert_int_eq(e0->m, T);
    ck_assert_int_eq(e1->m, 3 * T / 4);
    ck_assert_int_eq(e0->n, (HEADS / 8) * (DN + DV));
    /* the head and tail chunks' calls, expanded heads of 192 / 128 */
    int calls;
    const plan_op *a = op_at(&p, 0, 0, "attention", &calls);
    ck_assert_int_eq(calls, 2);
    ck_assert_int_eq(a->attn.d_qk, DN + DR);
    ck_assert_int_eq(a->attn.d_v, DV);
    /* the rank writes its stripe of the step's latents */
    const plan_op *w = op_at(&p, 0, 0, "kv_write", NULL);
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(w->out.d[0], T / 2);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* The two rings over latents: a pass-KV hop carries the padded latent
 * block, a pass-Q hop the block's queries (16 heads x 192 per TP rank);
 * pass-KV expands every visiting block (P kv_b_proj per layer), pass-Q its
 * own slots once; the rule picks pass-KV for a prefill without cache and
 * counts the extra expansions. */
START_TEST(rings_over_latents)
{
    const long T = 8192;
    const char *kv[] = {"parallel.sp=2", "parallel.kv_storage=by_position",
                        "parallel.exchange=ring_kv"};
    scenario s;
    plan p;
    tu_plan(&s, &p, DSV3, kv, 3);
    int n;
    const plan_op *hop = op_at(&p, 0, 0, "ring_kv_hop", &n);
    ck_assert_int_eq(n, 1);
    ck_assert_double_eq_tol(hop->comm_bytes, (T / 2) * LAT * 2.0, 1e-6);
    op_at(&p, 0, 0, "kv_b_proj", &n);
    ck_assert_int_eq(n, 2);
    ex_ring_est e;
    ck_assert_int_eq(ex_ring_rule(&s, T, 0, &e), PR_PASS_KV);
    ck_assert_double_eq_tol(e.kv_bytes, (T / 2) * LAT * 2.0, 1e-6);
    ck_assert_double_eq_tol(e.q_bytes, (T / 2) * (HEADS / 8) * (DN + DR) * 2.0, 1e-6);
    ck_assert(e.expand_s > 0);
    plan_free(&p);
    wl_free(&s);

    const char *q[] = {"parallel.sp=2", "parallel.kv_storage=by_position",
                       "parallel.exchange=ring"};
    tu_plan(&s, &p, DSV3, q, 3);
    hop = op_at(&p, 0, 0, "ring_hop", &n);
    ck_assert_int_eq(n, 1);
    ck_assert_double_eq_tol(hop->comm_bytes, (T / 2) * (HEADS / 8) * (DN + DR) * 2.0, 1e-6);
    const plan_op *x = op_at(&p, 0, 0, "kv_b_proj", &n);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(x->m, T / 2); /* its own stripe */
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* A copied decode of an MLA model over position storage: the DCP merge in
 * the latent space (absorbed queries, partials of 512 + LSE per head in
 * fp32, W_UV after the merge). */
START_TEST(copied_decode_in_latent_space)
{
    const char *sets[] = {"parallel.sp=2", "parallel.kv_storage=by_position",
                          "parallel.exchange=all_gather", "parallel.all_gather_tensors=kv"};
    scenario s;
    plan p;
    tu_plan(&s, &p, DSV3, sets, 4);
    const plan_op *g = op_at(&p, 0, 1, "dcp_all_gather", NULL);
    ck_assert_ptr_nonnull(g);
    ck_assert_double_eq_tol(g->comm_bytes, 2.0 * (HEADS / 8) * (KL + 1) * 4.0, 1e-6);
    const plan_op *a = op_at(&p, 0, 1, "dcp_attention", NULL);
    ck_assert_int_eq(a->attn.d_qk, LAT);
    ck_assert_int_eq(a->attn.d_v, KL);
    ck_assert_int_eq(a->attn.kv_heads, 1);
    ck_assert_ptr_nonnull(op_at(&p, 0, 1, "v_absorb", NULL));
    ck_assert_ptr_null(op_at(&p, 0, 1, "kv_b_proj", NULL));
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* DSA under a split prompt: all_gather gathers the index keys with the
 * latents and each rank scores its queries over every key (the share's
 * causal pairs), then one sparse call over their top-k; a ring first
 * all-gathers the index keys alone; a copied decode selects over each
 * rank's slots and exchanges the candidates (score + index, 8 B). */
START_TEST(dsa_selects_over_the_whole_sequence)
{
    const long T = 8192;
    const char *ag[] = {"model=deepseek-v3.2-exp", "parallel.sp=2",
                        "parallel.kv_storage=by_position", "parallel.exchange=all_gather",
                        "parallel.all_gather_tensors=kv", "parallel.split=zigzag"};
    scenario s;
    plan p;
    tu_plan(&s, &p, DSV3, ag, 6);
    const plan_op *g = op_at(&p, 0, 0, "sp_kv_all_gather", NULL);
    ck_assert_double_eq_tol(g->comm_bytes, 2.0 * (T / 2) * (LAT + DI) * 2.0, 1e-6);
    /* rank 0: zigzag chunks 0 and 3 of 4 */
    long c = T / 4;
    double dense = capped(0, c, 0) + capped(3 * c, c, 0);
    double sparse = capped(0, c, TOPK) + capped(3 * c, c, TOPK);
    const plan_op *ix = op_at(&p, 0, 0, "indexer_topk", NULL);
    ck_assert_double_eq_tol(ix->attn.pairs, dense, 1e-6 * dense);
    int n;
    const plan_op *sa = op_at(&p, 0, 0, "mla_sparse_attention", &n);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(sa->kclass, KC_SPARSE_ATTN);
    ck_assert_double_eq_tol(sa->attn.pairs, sparse, 1e-6 * sparse);
    /* the decode: candidates of the one query from both SP ranks */
    const plan_op *cand = op_at(&p, 0, 1, "dcp_topk_all_gather", NULL);
    ck_assert_ptr_nonnull(cand);
    ck_assert_double_eq_tol(cand->comm_bytes, 2.0 * TOPK * 8.0, 1e-6);
    plan_free(&p);
    wl_free(&s);

    const char *ring[] = {"model=deepseek-v3.2-exp", "parallel.sp=2",
                          "parallel.kv_storage=by_position", "parallel.exchange=ring_kv"};
    tu_plan(&s, &p, DSV3, ring, 4);
    g = op_at(&p, 0, 0, "sp_index_k_all_gather", NULL);
    ck_assert_ptr_nonnull(g);
    ck_assert_double_eq_tol(g->comm_bytes, 2.0 * (T / 2) * DI * 2.0, 1e-6);
    const plan_op *hop = op_at(&p, 0, 0, "ring_kv_hop", NULL);
    ck_assert_double_eq_tol(hop->comm_bytes, (T / 2) * LAT * 2.0, 1e-6); /* no index keys */
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* parallel.dcp divides a rank's KV bytes by the DCP degree: MLA's latent
 * (replicated under plain TP) and GQA's replicated KV heads; with sp the
 * stripes are P x D. */
START_TEST(dcp_divides_kv_bytes)
{
    const long N = 65536;
    scenario s;
    tu_load(&s, DSV3, NULL, 0);
    double one = build_kv_bytes(&s, N);
    ck_assert_double_eq_tol(one, (double)N * 61 * LAT * 2.0, 1e-6 * one); /* bf16 cache */
    wl_free(&s);
    const int dcps[] = {2, 4, 8};
    for (int i = 0; i < 3; i++) {
        char d[32];
        snprintf(d, sizeof d, "parallel.dcp=%d", dcps[i]);
        const char *sets[] = {d};
        tu_load(&s, DSV3, sets, 1);
        ck_assert_double_eq_tol(build_kv_bytes(&s, N), one / dcps[i], 1e-6 * one);
        wl_free(&s);
    }
    const char *both[] = {"parallel.sp=2", "parallel.dcp=8", "parallel.kv_storage=by_position",
                          "parallel.exchange=all_gather", "parallel.all_gather_tensors=kv"};
    tu_load(&s, DSV3, both, 5);
    ck_assert_double_eq_tol(build_kv_bytes(&s, N), one / 16, 1e-6 * one);
    wl_free(&s);
    tu_load(&s, THINKER, NULL, 0);
    double gqa = build_kv_bytes(&s, N);
    wl_free(&s);
    const char *d2[] = {"parallel.dcp=2"};
    tu_load(&s, THINKER, d2, 1);
    ck_assert_double_eq_tol(build_kv_bytes(&s, N), gqa / 2, 1e-6 * gqa);
    wl_free(&s);
}
END_TEST

/* A DCP8 decode: the absorbed queries all-gathered over the DCP group
 * (8 x 16 heads x 576), attention over the rank's eighth of the
 * positions for the group's 128 heads, the fp32 partials all-to-all by
 * head, a merge of 8; a prefill without cache exchanges nothing. */
START_TEST(dcp_decode_exchanges)
{
    const long T = 8192;
    const char *sets[] = {"parallel.dcp=8"};
    scenario s;
    plan p;
    tu_plan(&s, &p, DSV3, sets, 1);
    const plan_op *q = op_at(&p, 0, 1, "dcp_q_all_gather", NULL);
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(q->group, G_DCP);
    ck_assert_double_eq_tol(q->comm_bytes, (double)HEADS * LAT * 2.0, 1e-6);
    const plan_op *a = op_at(&p, 0, 1, "dcp_attention", NULL);
    ck_assert_int_eq(a->attn.heads, HEADS);
    ck_assert_int_eq(a->attn.kv_len, (T + 1 + 7) / 8); /* DCP index 0's slots */
    const plan_op *x = op_at(&p, 0, 1, "dcp_partial_all_to_all", NULL);
    ck_assert_int_eq(x->group, G_DCP);
    ck_assert_double_eq_tol(x->comm_bytes, 8.0 * (HEADS / 8) * (KL + 1) * 4.0, 1e-6);
    ck_assert_ptr_null(op_at(&p, 0, 0, "dcp_q_all_gather", NULL));
    ck_assert_ptr_null(op_at(&p, 0, 0, "dcp_kv_all_gather", NULL));
    /* the group: 8 consecutive ranks of the TP group */
    int m[8], me = -1;
    ck_assert_int_eq(plan_group_members(&p.lay, 13, G_DCP, m, 8, &me), 8);
    ck_assert_int_eq(m[0], 8);
    ck_assert_int_eq(me, 5);
    plan_free(&p);
    wl_free(&s);
    const char *d4[] = {"parallel.dcp=4"};
    tu_plan(&s, &p, DSV3, d4, 1);
    ck_assert_int_eq(plan_group_members(&p.lay, 6, G_DCP, m, 8, &me), 4);
    ck_assert_int_eq(m[0], 4);
    ck_assert_int_eq(m[3], 7);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* PCP2 x DCP8: the split prefill gathers the latents over the SP group and
 * writes a sixteenth; the decode merges the 16 partials (all-to-all over
 * DCP, all-gather over SP). */
START_TEST(pcp_with_dcp)
{
    const long T = 8192;
    const char *sets[] = {"parallel.pcp=2", "parallel.dcp=8", "parallel.kv_storage=by_position",
                          "parallel.exchange=all_gather", "parallel.all_gather_tensors=kv"};
    scenario s;
    plan p;
    tu_plan(&s, &p, DSV3, sets, 5);
    ck_assert_int_eq(s.par.sp, 2);
    const plan_op *w = op_at(&p, 1, 0, "kv_write", NULL);
    ck_assert_int_eq(w->out.d[0], T / 16);
    const plan_op *g = op_at(&p, 0, 1, "dcp_all_gather", NULL);
    ck_assert_int_eq(g->group, G_SP);
    ck_assert_double_eq_tol(g->comm_bytes, 16.0 * (HEADS / 8) * (KL + 1) * 4.0, 1e-6);
    const plan_op *m = op_at(&p, 0, 1, "dcp_merge", NULL);
    ck_assert_ptr_nonnull(m);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

static void refused(const char *yaml, const char *const *sets, int n, const char *want)
{
    scenario s;
    cp_err err = {0};
    int rc = tu_try_load(&s, yaml, sets, n, &err);
    ck_assert_int_ne(rc, 0);
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
    ck_assert_msg(strstr(err.msg, want) != NULL, "\"%s\" lacks \"%s\"", err.msg, want);
}

START_TEST(refusals)
{
    const char *d3[] = {"parallel.dcp=3"};
    refused(DSV3, d3, 1, "dcp must divide tp = 8");
    const char *d4[] = {"parallel.dcp=4"};
    refused(THINKER, d4, 1, "exceeds tp / KV heads = 2");
    const char *noreps[] = {"model=qwen3-32b", "parallel.dcp=2"};
    refused(THINKER, noreps, 2, "replicates none");
    const char *dsa[] = {"model=deepseek-v3.2-exp", "parallel.dcp=2"};
    refused(DSV3, dsa, 2, "DSA indexer");
    const char *ring[] = {"parallel.sp=2", "parallel.dcp=2", "parallel.kv_storage=by_position",
                          "parallel.exchange=ring"};
    refused(DSV3, ring, 4, "keep an SP rank's slots whole");
    const char *qkv[] = {"parallel.sp=2", "parallel.dcp=2", "parallel.kv_storage=by_position",
                         "parallel.exchange=all_gather"};
    refused(DSV3, qkv, 4, "all_gather_tensors: kv");
    const char *head[] = {"parallel.sp=2", "parallel.dcp=2"};
    refused(DSV3, head, 2, "one latent head per position");
    const char *pcp[] = {"parallel.pcp=2", "parallel.sp=4"};
    refused(DSV3, pcp, 2, "pcp is parallel.sp by vLLM's name");
    const char *dsaq[] = {"model=deepseek-v3.2-exp", "parallel.sp=2",
                          "parallel.kv_storage=by_position", "parallel.exchange=ring",
                          "parallel.decode=pass_q"};
    refused(DSV3, dsaq, 5, "decode: pass_q passes dense decode queries");
}
END_TEST

/* The bundled W8A8 descriptions by name (compact pattern form): int8
 * GEMMs, the types of the W8A8 practice; an exact entry beats a pattern,
 * the longest pattern a shorter one. */
START_TEST(bundled_descriptions)
{
    const char *sets[] = {"model=deepseek-r1", "precision.quant_description=deepseek-r1-w8a8"};
    scenario s;
    tu_load(&s, DSV3, sets, 2);
    ck_assert_int_eq(s.w_dtype, DT_INT8);
    ck_assert_int_eq(quant_desc_type(s.quant, "model.layers.7.mlp.experts.200.up_proj.weight"),
                     QT_W8A8_DYNAMIC);
    ck_assert_int_eq(quant_desc_type(s.quant, "model.layers.7.self_attn.q_a_proj.weight"), QT_W8A8);
    ck_assert_int_eq(quant_desc_type(s.quant, "model.layers.7.self_attn.kv_b_proj.weight"),
                     QT_FLOAT);
    ck_assert_int_eq(quant_desc_type(s.quant, "model.layers.7.self_attn.nosuch.weight"), QT_COUNT);
    wl_free(&s);
    const char *q[] = {"model=qwen3-235b-a22b", "precision.quant_description=qwen3-235b-a22b-w8a8"};
    tu_load(&s, THINKER, q, 2);
    ck_assert_int_eq(quant_desc_type(s.quant, "model.layers.93.self_attn.k_proj.weight"), QT_W8A8);
    wl_free(&s);

    char path[] = "/tmp/cpsim-pcp-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"a.*\": \"W8A8\", \"a.b.*\": \"W8A8_DYNAMIC\", \"a.b.c\": \"FLOAT\"}\n", f);
    fclose(f);
    cp_err err = {0};
    quant_desc *d = quant_desc_load(path, &err);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(quant_desc_type(d, "a.b.c"), QT_FLOAT);
    ck_assert_int_eq(quant_desc_type(d, "a.b.d"), QT_W8A8_DYNAMIC);
    ck_assert_int_eq(quant_desc_type(d, "a.x"), QT_W8A8);
    quant_desc_free(d);
    remove(path);
    const char *bad[] = {"precision.quant_description=nosuch"};
    cp_err e2 = {0};
    ck_assert_int_ne(tu_try_load(&s, DSV3, bad, 1, &e2), 0);
    ck_assert_ptr_nonnull(strstr(e2.msg, "nor a bundled description"));
}
END_TEST

/* A prefill node (engine.role: prefill) of the bundled example: each
 * request's kv_handover names the 16 stripes of PCP2 x DCP8 and the
 * largest shard's bytes; a request with decode tokens is refused. */
START_TEST(prefill_node_hands_over)
{
    const char *sets[] = {"requests.0.prompt_tokens=8192"};
    char wl[1024];
    snprintf(wl, sizeof wl, "%s/workloads/examples/ascend-a3-pcp.yaml", CP_SRCDIR);
    drv_req rq = {.workload = wl, .sets = sets, .nsets = 1};
    json_t *sm = NULL;
    cp_err err = {0};
    ck_assert_msg(drv_child_run(&rq, &sm, &err) == 0, "%s", err.msg);
    json_t *h = json_object_get(json_array_get(json_object_get(sm, "requests"), 0), "kv_handover");
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(json_integer_value(json_object_get(h, "stripes")), 16);
    ck_assert_int_eq(json_integer_value(json_object_get(h, "positions")), 8192);
    /* 8192 / 16 positions x 61 layers x the bf16 latent */
    ck_assert_double_eq_tol(json_number_value(json_object_get(h, "bytes_per_rank")),
                            512.0 * 61 * LAT * 2.0, 1.0);
    ck_assert(json_number_value(json_object_get(h, "transfer_s")) > 0);
    json_decref(sm);
    const char *dec[] = {"requests.0.decode_tokens=4"};
    scenario s;
    cp_err e2 = {0};
    char yaml[] = "model: deepseek-v3\nplatform: h200-sxm-8\nparallel: {tp: 8, ep: 8}\n"
                  "engine: {role: prefill}\nrequests:\n  - {prompt_tokens: 1024}\n";
    ck_assert_int_ne(tu_try_load(&s, yaml, dec, 1, &e2), 0);
    ck_assert_ptr_nonnull(strstr(e2.msg, "engine.role: prefill runs the prefills"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("pcp");
    TCase *t = tcase_create("plan");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, all_gather_moves_latents);
    tcase_add_test(t, rings_over_latents);
    tcase_add_test(t, copied_decode_in_latent_space);
    tcase_add_test(t, dsa_selects_over_the_whole_sequence);
    tcase_add_test(t, dcp_divides_kv_bytes);
    tcase_add_test(t, dcp_decode_exchanges);
    tcase_add_test(t, pcp_with_dcp);
    tcase_add_test(t, refusals);
    tcase_add_test(t, bundled_descriptions);
    suite_add_tcase(s, t);
    TCase *r = tcase_create("run");
    tcase_set_timeout(r, 120);
    tcase_add_test(r, prefill_node_hands_over);
    suite_add_tcase(s, r);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
