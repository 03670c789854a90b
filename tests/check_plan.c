/* check_plan: the tensor-parallel baseline plan, without SimGrid.
 * Shapes, collectives (kind, group, bytes), memory balance and dependencies
 * per layer, compared with closed forms from the model config. */
#include <check.h>
#include <math.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/build/build.h"
#include "models/memory.h"
#include "tests/testutil.h"

static const char *THINKER =
    "model: qwen3-omni-30b-a3b-thinker\n"
    "platform: h100-sxm-8\n"
    "parallel: {tp: 8}\n"
    "requests:\n  - prompt_tokens: 32768\n";

/* Collective ops of program 0 of a given kind in layer l. */
static int count_coll(const plan *p, int layer, plan_coll kind, double *bytes)
{
    int n = 0;
    const plan_prog *pg = &p->progs[0];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->kind == OPK_COLL && o->layer == layer && o->coll == kind) {
            n++;
            if (bytes)
                *bytes = o->comm_bytes;
        }
    }
    return n;
}

START_TEST(thinker_tp8_layer_contract)
{
    scenario s;
    plan p;
    tu_plan(&s, &p, THINKER, NULL, 0);
    const int64_t T = 32768, h = 2048, d = 128;
    ck_assert_int_eq(p.nranks, 8);
    ck_assert_int_eq(p.nprogs, 1);
    for (int l = 0; l < 48; l++) {
        double bytes = 0;
        /* two all-reduces per layer: after o_proj and after the MoE */
        ck_assert_int_eq(count_coll(&p, l, CK_ALL_REDUCE, &bytes), 2);
        ck_assert_double_eq(bytes, (double)T * h * 2.0);
        ck_assert_int_eq(count_coll(&p, l, CK_ALL_TO_ALL, NULL), 0);
    }
    const plan_op *qkv = tu_find(&p, 0, "qkv_proj", 0);
    ck_assert_ptr_nonnull(qkv);
    /* 32 q heads / 8 = 4; 4 kv heads over 8 ranks: one replicated kv head */
    ck_assert_int_eq(qkv->m, T);
    ck_assert_int_eq(qkv->k, h);
    ck_assert_int_eq(qkv->n, (4 + 2 * 1) * d);
    const plan_op *at = tu_find(&p, 0, "attention", 0);
    ck_assert_int_eq(at->attn.heads, 4);
    ck_assert_int_eq(at->attn.kv_heads, 1);
    ck_assert_double_eq(at->attn.pairs, (double)T * (T + 1) / 2.0);
    ck_assert_double_eq_tol(at->flops, 4.0 * at->attn.pairs * 4 * d, 1.0);
    ck_assert_int_eq(at->layout, TL_FULL);
    const plan_op *o = tu_find(&p, 0, "o_proj", 47);
    ck_assert_int_eq(o->k, 4 * d);
    ck_assert_int_eq(o->n, h);
    /* router replicated, experts sharded in the intermediate dimension */
    const plan_op *router = tu_find(&p, 0, "router", 3);
    ck_assert_int_eq(router->n, 128);
    /* the MoE kernels of the profile: top-k scoring, permute, grouped
     * gate_up over every token's 8 rows, SwiGLU, grouped down, unpermute */
    const plan_op *tk = tu_find(&p, 0, "topk", 3);
    ck_assert_int_eq(tk->kclass, KC_TOPK);
    ck_assert(tk->in.d[0] == T && tk->in.d[1] == 128 && tk->out.d[1] == 8);
    ck_assert_int_eq(tk->nkern, 7); /* softmax router (Qwen): 7 kernels traced */
    const plan_op *pm = tu_find(&p, 0, "moe_permute", 3);
    ck_assert_int_eq(pm->kclass, KC_MOE_PERMUTE);
    ck_assert(pm->in.d[0] == T && pm->out.d[0] == T * 8 && pm->out.d[1] == h);
    const plan_op *gu = tu_find(&p, 0, "expert_gate_up", 3);
    ck_assert_int_eq(gu->kclass, KC_MOE_GEMM);
    ck_assert_int_eq(gu->g, 128);
    ck_assert_int_eq(gu->n, 2 * 768 / 8);
    ck_assert_int_eq(gu->m, T * 8); /* every token to top-8 experts */
    ck_assert_int_eq(gu->route, RT_RANDOM);
    const plan_op *act = tu_find(&p, 0, "expert_act", 3);
    ck_assert_int_eq(act->kclass, KC_ACTIVATION);
    ck_assert_int_eq(act->nkern, 2);
    const plan_op *dn = tu_find(&p, 0, "expert_down", 3);
    ck_assert_int_eq(dn->k, 768 / 8);
    ck_assert_int_eq(dn->n, h);
    const plan_op *up = tu_find(&p, 0, "moe_unpermute", 3);
    ck_assert_int_eq(up->kclass, KC_MOE_UNPERMUTE);
    ck_assert(up->in.d[0] == T * 8 && up->out.d[0] == T);
    /* Qwen3 has q/k norms (architecture class); torch RoPE: 5 kernels for
     * each of q and k (tests/traces, the eager prefill profile) */
    ck_assert_ptr_nonnull(tu_find(&p, 0, "qk_norm", 3));
    ck_assert_int_eq(tu_find(&p, 0, "rope", 3)->nkern, 10);
    /* phases: attention from the input norm through o_proj's reduction */
    ck_assert_int_eq(tu_find(&p, 0, "input_norm", 3)->phase, PH_ATTN);
    ck_assert_int_eq(tu_find(&p, 0, "o_proj", 3)->phase, PH_ATTN);
    ck_assert_int_eq(tu_find(&p, 0, "post_attn_norm", 3)->phase, PH_FFN);
    ck_assert_int_eq(gu->phase, PH_FFN);
    ck_assert_int_eq(tu_find(&p, 0, "lm_head", -1)->phase, PH_OTHER);
    /* around the layers: vocabulary-parallel embedding and the LM head */
    ck_assert_int_eq(count_coll(&p, -1, CK_ALL_REDUCE, NULL), 1);
    ck_assert_int_eq(count_coll(&p, -1, CK_ALL_GATHER, NULL), 1);
    const plan_op *lm = tu_find(&p, 0, "lm_head", -1);
    ck_assert_int_eq(lm->m, 1);
    ck_assert_int_eq(lm->n, 152064 / 8);
    ck_assert_int_eq(tu_count(&p, 0, "attention", -2), 48);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* ---- prices from the measured tables ------------------------------------- */

/* Op `name` of layer `layer` in step `step` of program g. */
static const plan_op *op_in_step(const plan *p, int g, const char *name, int layer, int step)
{
    const plan_prog *pg = &p->progs[g];
    for (uint32_t i = 0; i < pg->nops; i++)
        if (pg->ops[i].step == step && pg->ops[i].layer == layer &&
            strcmp(pg->ops[i].name, name) == 0)
            return &pg->ops[i];
    return NULL;
}

/* The kernel time of op (cost_s less the eager gaps when launched eagerly)
 * lies within 3 % of every measurement in meas[0..n). */
static void near_rows(const plan_op *op, int eager, const double *meas, int n,
                      plan_costsrc src)
{
    ck_assert_ptr_nonnull(op);
    ck_assert_int_eq(op->cost_table, src);
    double k = op->cost_s - (eager ? 1.6e-6 * (op->nkern > 1 ? op->nkern : 1) : 0);
    for (int i = 0; i < n; i++)
        ck_assert_msg(fabs(k / meas[i] - 1) < 0.03, "%s priced %.2f us, measured %.2f us",
                      op->name, k * 1e6, meas[i] * 1e6);
}

/* A plan op of a shape a new table measured is priced as the row measured
 * it (H200, so no cross-device rescaling; captured graphs where the row is
 * a graph replay): moe.csv qwen3-30b-a3b gate_up tp8 random T=32768
 * (491.0 us graph); decode_attention.csv flash graph 4/1 heads B=1
 * kv=16384 (33.10 us); attention_cp.csv causal_square 8192 x 8192 with 8/1
 * heads (593.3 and 610.9 us at sp 4 and 8, eager less the 1.6 us gap);
 * gemm_fp8.csv qwen3-30b-a3b qkv_proj fp8_row_fastacc M=4096 (69.22 us
 * graph). */
START_TEST(priced_from_new_tables)
{
    scenario s;
    plan p;
    const char *graph[] = {"platform=h200-sxm-8", "engine.graph=captured",
                           "requests.0.prompt_tokens=16383", "requests.0.decode_tokens=1"};
    tu_plan(&s, &p, THINKER, graph, 4);
    near_rows(op_in_step(&p, 0, "attention", 3, 1), 0, (double[]){33.1003e-6}, 1,
              CS_DECODE_ATTENTION);
    plan_free(&p);
    wl_free(&s);
    const char *moe[] = {"platform=h200-sxm-8", "engine.graph=captured"};
    tu_plan(&s, &p, THINKER, moe, 2);
    near_rows(tu_find(&p, 0, "expert_gate_up", 3), 0, (double[]){491.022e-6}, 1, CS_MOE);
    plan_free(&p);
    wl_free(&s);
    const char *ring[] = {"platform=h200-sxm-8", "parallel.tp=4", "parallel.sp=2",
                          "parallel.kv_storage=by_position", "parallel.exchange=ring",
                          "requests.0.prompt_tokens=16384"};
    tu_plan(&s, &p, THINKER, ring, 6);
    near_rows(tu_find(&p, 0, "ring_attention", 3), 1, (double[]){593.268e-6, 610.928e-6}, 2,
              CS_ATTENTION_CP);
    plan_free(&p);
    wl_free(&s);
    tu_plan(&s, &p,
            "model: qwen3-30b-a3b\nplatform: h200-sxm-8\nprecision: {weights: fp8_rowwise}\n"
            "engine: {graph: captured}\nrequests: [{prompt_tokens: 4096}]\n", NULL, 0);
    near_rows(tu_find(&p, 0, "qkv_proj", 3), 0, (double[]){69.2209e-6}, 1, CS_GEMM_FP8);
    /* the input was quantised by one kernel first */
    const plan_op *q = tu_find(&p, 0, "act_quant", 3);
    ck_assert_int_eq(q->kclass, KC_ACT_QUANT);
    ck_assert_int_eq(q->qscale, QS_ROW);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* Every compute op of a priced plan says where its price came from, in
 * the plan and in its JSON. */
START_TEST(cost_src_on_every_op)
{
    const char *yamls[] = {THINKER,
                           "model: glm-5.1\nplatform: ascend-a3-16\nparallel: {tp: 16, "
                           "sequence_parallel: true}\nrequests: [{prompt_tokens: 4096, "
                           "decode_tokens: 1}]\n",
                           "model: qwen3-omni-30b-a3b-thinker\nplatform: h100-sxm-8\n"
                           "parallel: {tp: 4, sp: 2, kv_storage: by_position, exchange: ring}\n"
                           "requests: [{prompt_tokens: 8192, decode_tokens: 1}]\n"};
    for (int y = 0; y < 3; y++) {
        scenario s;
        plan p;
        tu_plan(&s, &p, yamls[y], NULL, 0);
        long compute = 0;
        for (int g = 0; g < p.nprogs; g++)
            for (uint32_t i = 0; i < p.progs[g].nops; i++) {
                const plan_op *o = &p.progs[g].ops[i];
                if (o->kind != OPK_COMPUTE)
                    continue;
                compute++;
                ck_assert_int_lt(o->cost_table, CS_COUNT);
                ck_assert(o->cost_table == CS_ROOFLINE || o->cost_dist >= 1.0f);
                ck_assert_double_gt(o->cost_s, 0);
            }
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        cp_err err = {0};
        ck_assert_int_eq(plan_write_json(&p, f, &err), 0);
        fclose(f);
        long found = 0;
        for (const char *c = buf; (c = strstr(c, "\"cost_src\"")) != NULL; c++)
            found++;
        ck_assert_int_eq(found, compute);
        ck_assert_ptr_null(strstr(buf, "\"cost_src\": \"roofline:?"));
        free(buf);
        plan_free(&p);
        wl_free(&s);
    }
}
END_TEST

START_TEST(tp1_has_no_collectives)
{
    scenario s;
    plan p;
    const char *sets[] = {"parallel.tp=1"};
    tu_plan(&s, &p, THINKER, sets, 1);
    const plan_prog *pg = &p.progs[0];
    for (uint32_t i = 0; i < pg->nops; i++)
        ck_assert_int_ne(pg->ops[i].kind, OPK_COLL);
    ck_assert_int_eq(tu_find(&p, 0, "attention", 0)->attn.kv_heads, 4);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

START_TEST(ep_uses_all_to_all)
{
    scenario s;
    plan p;
    const char *sets[] = {"parallel.ep=8"};
    tu_plan(&s, &p, THINKER, sets, 1);
    const int64_t T = 32768, h = 2048;
    double bytes = 0;
    ck_assert_int_eq(count_coll(&p, 5, CK_ALL_TO_ALL, &bytes), 2);
    /* each rank dispatches its T/8 tokens to 8 experts each, bf16 */
    ck_assert_double_eq(bytes, (double)(T / 8) * 8 * h * 2.0);
    ck_assert_int_eq(count_coll(&p, 5, CK_ALL_REDUCE, NULL), 1); /* attention only */
    ck_assert_int_eq(count_coll(&p, 5, CK_ALL_GATHER, &bytes), 1);
    ck_assert_double_eq(bytes, (double)T * h * 2.0);
    const plan_op *gu = tu_find(&p, 0, "expert_gate_up", 5);
    ck_assert_int_eq(gu->g, 128 / 8);
    ck_assert_int_eq(gu->n, 2 * 768);
    ck_assert_int_eq(tu_find(&p, 0, "router", 5)->m, T / 8);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

START_TEST(dense_model_mlp_sharding)
{
    scenario s;
    plan p;
    tu_plan(&s, &p,
            "model: qwen3-32b\nplatform: h100-sxm-8\nparallel: {tp: 4}\n"
            "requests: [{prompt_tokens: 4096}]\n",
            NULL, 0);
    const plan_op *gu = tu_find(&p, 0, "mlp_gate_up", 10);
    ck_assert_int_eq(gu->n, 2 * 25600 / 4);
    ck_assert_int_eq(tu_find(&p, 0, "mlp_down", 10)->k, 25600 / 4);
    ck_assert_int_eq(tu_find(&p, 0, "attention", 10)->attn.kv_heads, 2);
    ck_assert_ptr_null(tu_find(&p, 0, "router", -2));
    ck_assert_int_eq(p.nranks, 4);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* Every allocation of a step is freed by its end; KV is freed when the
 * request leaves; the weights equal the static accounting. */
START_TEST(memory_ops_balance)
{
    scenario s;
    plan p;
    const char *sets[] = {"requests.0.decode_tokens=2", "requests.1.prompt_tokens=1000",
                          "requests.1.arrival_s=0.5"};
    tu_plan(&s, &p, THINKER, sets, 3);
    double sum[MC_COUNT] = {0}, peak_kv = 0;
    const plan_prog *pg = &p.progs[0];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->kind == OPK_STEP) {
            ck_assert_double_eq_tol(sum[MC_ACTIVATIONS], 0, 1e-3);
            ck_assert_double_eq_tol(sum[MC_COMM_BUFFER], 0, 1e-3);
        }
        if (o->kind == OPK_MEM) {
            sum[o->mem_cat] += o->mem_bytes;
            ck_assert_double_ge(sum[o->mem_cat], -1e-3);
            if (sum[MC_KV_CACHE] > peak_kv)
                peak_kv = sum[MC_KV_CACHE];
        }
    }
    ck_assert_double_eq_tol(sum[MC_ACTIVATIONS], 0, 1e-3);
    ck_assert_double_eq_tol(sum[MC_KV_CACHE], 0, 1e-3);
    mem_weights w;
    mem_weights_per_rank(&s.model, (mem_shard){.tp = 8, .ep = 1}, DT_BF16, &w);
    ck_assert_double_eq(sum[MC_WEIGHTS], w.total);
    /* the thinker's 30.5 B parameters in bf16 over 8 ranks: ~7.6 GB */
    ck_assert_double_gt(w.total, 7.0e9);
    ck_assert_double_lt(w.total, 8.2e9);
    /* KV: 48 layers x 1 replicated kv head x 128 x 2 (k, v) x 2 B per token */
    ck_assert_double_eq_tol(peak_kv, (32768.0 + 2) * 48 * 2 * 128 * 2, 1.0);
    ck_assert_int_eq(p.nsteps, 4);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

START_TEST(decode_steps_attend_the_prefix)
{
    scenario s;
    plan p;
    const char *sets[] = {"requests.0.decode_tokens=3"};
    tu_plan(&s, &p, THINKER, sets, 1);
    int seen = 0;
    const plan_prog *pg = &p.progs[0];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (strcmp(o->name, "attention") != 0 || o->layer != 0)
            continue;
        int64_t q = seen == 0 ? 32768 : 1;
        int64_t kv = seen == 0 ? 32768 : 32768 + seen;
        ck_assert_int_eq(o->attn.q_len, q);
        ck_assert_int_eq(o->attn.kv_len, kv);
        ck_assert_int_eq(o->step, seen);
        seen++;
    }
    ck_assert_int_eq(seen, 4);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* Chunked prefill (engine.chunked_prefill, max_num_batched_tokens N): a
 * prompt of T tokens prefills in ceil(T/N) steps, each a full pass (every
 * GEMM again: the weights are read again) whose attention is the chunk's
 * queries over the cached chunks and itself (causal, bottom-right); the KV
 * writes land in the cache; only the last chunk runs the LM head. */
START_TEST(chunked_prefill_steps)
{
    scenario s;
    plan p;
    const char *sets[] = {"requests.0.prompt_tokens=20000", "requests.0.decode_tokens=2",
                          "engine.chunked_prefill=true", "engine.max_num_batched_tokens=8192"};
    tu_plan(&s, &p, THINKER, sets, 4);
    const int64_t N = 8192, T = 20000;
    ck_assert_int_eq(p.nsteps, 3 + 2);
    ck_assert_int_eq(p.prefill_steps[0], 3);
    double kv_written = 0;
    for (int st = 0; st < 3; st++) {
        int64_t lo = st * N, n = st < 2 ? N : T - 2 * N;
        const plan_op *at = op_in_step(&p, 0, "attention", 7, st);
        ck_assert_int_eq(at->attn.q_len, n);
        ck_assert_int_eq(at->attn.kv_len, lo + n);
        ck_assert_int_eq(at->attn.causal, 1);
        ck_assert_double_eq(at->attn.pairs, (double)n * lo + (double)n * (n + 1) / 2.0);
        ck_assert_int_eq(op_in_step(&p, 0, "qkv_proj", 7, st)->m, n);
        ck_assert_int_eq(op_in_step(&p, 0, "expert_gate_up", 7, st)->m, n * 8);
        ck_assert_int_eq(op_in_step(&p, 0, "lm_head", -1, st) != NULL, st == 2);
    }
    /* the decode steps attend the whole prompt */
    ck_assert_int_eq(op_in_step(&p, 0, "attention", 7, 3)->attn.kv_len, T + 1);
    const plan_prog *pg = &p.progs[0];
    for (uint32_t i = 0; i < pg->nops; i++)
        if (pg->ops[i].kind == OPK_MEM && pg->ops[i].mem_cat == MC_KV_CACHE &&
            pg->ops[i].mem_bytes > 0 && pg->ops[i].step < 3)
            kv_written += pg->ops[i].mem_bytes;
    /* 48 layers x 1 KV head of 128 x (k, v) x 2 bytes per token */
    ck_assert_double_eq(kv_written, (double)T * 48 * 2 * 128 * 2);
    plan_free(&p);
    wl_free(&s);
    /* max_num_batched_tokens without chunked prefill would change nothing */
    cp_err err = {0};
    const char *only[] = {"engine.max_num_batched_tokens=4096"};
    ck_assert_int_ne(tu_try_load(&s, THINKER, only, 1, &err), 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "engine.max_num_batched_tokens"));
}
END_TEST

/* Cross-stream waits: each collective waits for the compute op before it,
 * and the next op of the compute stream waits for the collective. */
START_TEST(collectives_are_fenced)
{
    scenario s;
    plan p;
    tu_plan(&s, &p, THINKER, NULL, 0);
    const plan_prog *pg = &p.progs[0];
    int checked = 0;
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->kind != OPK_COLL)
            continue;
        ck_assert_int_eq(o->stream, ST_COMM);
        ck_assert_uint_ge(o->ndeps, 1);
        const plan_op *prod = &pg->ops[pg->deps[o->dep_first]];
        ck_assert_int_eq(prod->stream, ST_COMPUTE);
        ck_assert_int_eq(prod->kind, OPK_COMPUTE);
        uint32_t j = i + 1;
        while (j < pg->nops && pg->ops[j].stream != ST_COMPUTE)
            j++;
        ck_assert_uint_lt(j, pg->nops);
        int waits = 0;
        for (uint32_t k = 0; k < pg->ops[j].ndeps; k++)
            waits |= pg->deps[pg->ops[j].dep_first + k] == i;
        ck_assert_msg(waits, "op %u (%s) does not wait for %s", j, pg->ops[j].name, o->name);
        checked++;
    }
    ck_assert_int_eq(checked, 48 * 2 + 2);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

START_TEST(plan_json_fields)
{
    scenario s;
    plan p;
    cp_err err = {0};
    tu_plan(&s, &p, THINKER, NULL, 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(plan_write_json(&p, f, &err), 0);
    fclose(f);
    json_error_t je;
    json_t *j = json_loads(buf, 0, &je);
    ck_assert_msg(j != NULL, "plan JSON does not parse: %s", je.text);
    ck_assert_str_eq(json_string_value(json_object_get(j, "schema")), "cpsim.plan/1");
    json_t *ops = json_object_get(json_array_get(json_object_get(j, "programs"), 0), "ops");
    int found = 0;
    for (size_t i = 0; i < json_array_size(ops); i++) {
        json_t *o = json_array_get(ops, i);
        if (strcmp(json_string_value(json_object_get(o, "name")), "qkv_proj") != 0)
            continue;
        found = 1;
        ck_assert_str_eq(json_string_value(json_object_get(o, "class")), "gemm");
        ck_assert_str_eq(json_string_value(json_object_get(o, "stream")), "compute");
        ck_assert_str_eq(json_string_value(json_object_get(o, "tokens")), "full");
        ck_assert_str_eq(json_string_value(json_object_get(o, "dtype")), "bf16");
        ck_assert_int_eq(json_array_size(json_object_get(o, "in")), 2);
        ck_assert(json_real_value(json_object_get(o, "flops")) > 0);
        ck_assert(json_real_value(json_object_get(o, "bytes")) > 0);
        ck_assert(json_real_value(json_object_get(o, "cost_s")) > 0);
        break;
    }
    ck_assert(found);
    json_decref(j);
    free(buf);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* MLA under TP: replicated q_a / kv_a, q_b and kv_b sharded over heads,
 * un-absorbed prefill over the whole context; DSA: indexer over the full
 * causal prefix, sparse attention over at most index_topk keys, in bf16. */
START_TEST(mla_and_dsa_under_tp)
{
    scenario s;
    plan p;
    tu_plan(&s, &p,
            "model: deepseek-v3\nplatform: h200-sxm-8\nparallel: {tp: 8}\n"
            "precision: fp8\nrequests: [{prompt_tokens: 4096}]\n",
            NULL, 0);
    const int64_t T = 4096, H = 128 / 8;
    ck_assert_int_eq(tu_find(&p, 0, "q_a_proj", 0)->n, 1536);
    ck_assert_int_eq(tu_find(&p, 0, "q_b_proj", 0)->n, H * 192);
    ck_assert_int_eq(tu_find(&p, 0, "kv_a_proj", 0)->n, 576);
    const plan_op *kvb = tu_find(&p, 0, "kv_b_proj", 0);
    ck_assert_int_eq(kvb->m, T);
    ck_assert_int_eq(kvb->n, H * (128 + 128));
    const plan_op *at = tu_find(&p, 0, "mla_attention", 0);
    ck_assert_int_eq(at->attn.heads, H);
    ck_assert_int_eq(at->attn.d_qk, 192);
    ck_assert_int_eq(at->attn.d_v, 128);
    ck_assert_int_eq(tu_find(&p, 0, "o_proj", 0)->k, H * 128);
    /* first 3 layers dense, then MoE with one shared expert */
    ck_assert_ptr_nonnull(tu_find(&p, 0, "mlp_gate_up", 2));
    ck_assert_ptr_null(tu_find(&p, 0, "router", 2));
    ck_assert_ptr_nonnull(tu_find(&p, 0, "shared_gate_up", 3));
    ck_assert_ptr_null(tu_find(&p, 0, "indexer_topk", -2));
    plan_free(&p);
    wl_free(&s);

    tu_plan(&s, &p,
            "model: glm-5.1\nplatform: h200-sxm-8\nparallel: {tp: 8}\n"
            "precision: fp8\nrequests: [{prompt_tokens: 8192}]\n",
            NULL, 0);
    const int64_t T2 = 8192, topk = 2048;
    const plan_op *ix = tu_find(&p, 0, "indexer_topk", 0);
    ck_assert_int_eq(ix->kclass, KC_INDEXER);
    ck_assert_double_eq(ix->attn.pairs, (double)T2 * (T2 + 1) / 2.0);
    const plan_op *sfa = tu_find(&p, 0, "mla_sparse_attention", 77);
    ck_assert_int_eq(sfa->kclass, KC_SPARSE_ATTN);
    ck_assert_int_eq(sfa->dtype, DT_BF16);
    ck_assert_int_eq(sfa->attn.heads, 64 / 8);
    /* queries 0..2047 see i+1 keys, the other 6144 see 2048 */
    ck_assert_double_eq(sfa->attn.pairs, 2048.0 * 2049 / 2 + (double)(T2 - topk) * topk);
    ck_assert_ptr_null(tu_find(&p, 0, "kv_b_proj", -2));
    ck_assert_int_eq(tu_count(&p, 0, "mla_sparse_attention", -2), 78);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

static char *plan_text(const plan *p)
{
    char *buf = NULL;
    size_t len = 0;
    cp_err err = {0};
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(plan_write_json(p, f, &err), 0);
    fclose(f);
    return buf;
}

/* Repetition (RFC 3.3.2): identical layers fold into one repeated region
 * and unfold into exactly the plan that was built. */
START_TEST(fold_and_expand_round_trip)
{
    static const char *const models[] = {
        "model: qwen3-omni-30b-a3b-thinker\nplatform: h100-sxm-8\nparallel: {tp: 8}\n",
        "model: glm-5.1\nplatform: h200-sxm-8\nparallel: {tp: 8}\nprecision: fp8\n",
    };
    for (int m = 0; m < 2; m++) {
        char yaml[512];
        snprintf(yaml, sizeof yaml, "%srequests: [{prompt_tokens: 2048, decode_tokens: 2}]\n",
                 models[m]);
        scenario s;
        plan p, e;
        tu_plan(&s, &p, yaml, NULL, 0);
        char *before = plan_text(&p);
        uint32_t nops = p.progs[0].nops;
        size_t saved = plan_fold_layers(&p);
        ck_assert_uint_gt(saved, 0);
        ck_assert_uint_eq(p.progs[0].nops + saved, nops);
        /* one region per step and FFN kind: layer 0 has no residual add */
        for (uint32_t r = 0; r < p.progs[0].nregions; r++)
            ck_assert_uint_ge(p.progs[0].regions[r].repeat, 2);
        ck_assert_uint_eq(p.progs[0].regions[0].repeat, m == 0 ? 47 : 2);
        plan_expand(&p, &e);
        char *after = plan_text(&e);
        ck_assert_str_eq(after, before);
        free(before);
        free(after);
        plan_free(&e);
        plan_free(&p);
        wl_free(&s);
    }
}
END_TEST

/* Folded as built (scenario.fold_at_build, as the pipeline builds): the
 * same plan as built whole and folded after, program by program, on a
 * plan of one program per SP rank. */
/* A layer that differs from its neighbours in any one field of an op (here
 * the kernel count, the implementation or the phase of its first GEMM) is
 * not folded into them: its expansion keeps the field. */
START_TEST(fold_keeps_a_layer_that_differs)
{
    for (int f = 0; f < 3; f++) {
        scenario s;
        plan p, e;
        tu_plan(&s, &p, THINKER, NULL, 0);
        plan_prog *pg = &p.progs[0];
        uint32_t at = UINT32_MAX;
        for (uint32_t i = 0; i < pg->nops && at == UINT32_MAX; i++)
            if (pg->ops[i].layer == 30 && pg->ops[i].kclass == KC_GEMM &&
                pg->ops[i].kind == OPK_COMPUTE)
                at = i;
        ck_assert_uint_ne(at, UINT32_MAX);
        plan_op *o = &pg->ops[at];
        if (f == 0)
            o->nkern = 3;
        else if (f == 1)
            o->impl = IMPL_FUSED;
        else
            o->phase = PH_FFN == o->phase ? PH_ATTN : PH_FFN;
        plan_op want = *o;
        ck_assert_uint_gt(plan_fold_layers(&p), 0);
        plan_expand(&p, &e);
        const plan_op *got = &e.progs[0].ops[at];
        ck_assert_int_eq(got->layer, 30);
        ck_assert_int_eq(got->nkern, want.nkern);
        ck_assert_int_eq(got->impl, want.impl);
        ck_assert_int_eq(got->phase, want.phase);
        plan_free(&e);
        plan_free(&p);
        wl_free(&s);
    }
}
END_TEST

START_TEST(fold_as_built_equals_fold_after)
{
    const char *sets[] = {"parallel.tp=2", "parallel.sp=4", "parallel.kv_storage=by_position",
                          "parallel.exchange=ring", "requests.0.prompt_tokens=16384"};
    scenario s;
    plan a, b;
    tu_load(&s, THINKER, sets, 5);
    build_plan(&s, &a);
    ck_assert_uint_gt(plan_fold_layers(&a), 0);
    s.fold_at_build = 1;
    build_plan(&s, &b);
    ck_assert_int_eq(b.nprogs, 4);
    for (int g = 0; g < b.nprogs; g++)
        ck_assert_uint_gt(b.progs[g].nregions, 0);
    char *ta = plan_text(&a), *tb = plan_text(&b);
    ck_assert_str_eq(ta, tb);
    free(ta);
    free(tb);
    plan_free(&a);
    plan_free(&b);
    wl_free(&s);
}
END_TEST

START_TEST(layout_groups)
{
    plan_layout_cfg lay = {.tp = 4, .sp = 2, .ep = 8, .dp = 2, .devices_per_node = 8};
    int m[16], me = -1;
    /* rank 13 = dp 1, sp 1, tp 1 */
    ck_assert_int_eq(plan_group_members(&lay, 13, G_TP, m, 16, &me), 4);
    ck_assert_int_eq(m[0], 12);
    ck_assert_int_eq(me, 1);
    ck_assert_int_eq(plan_group_members(&lay, 13, G_SP, m, 16, &me), 2);
    ck_assert_int_eq(m[0], 9);
    ck_assert_int_eq(m[1], 13);
    ck_assert_int_eq(me, 1);
    ck_assert_int_eq(plan_group_members(&lay, 13, G_EP, m, 16, &me), 8);
    ck_assert_int_eq(m[0], 8);
    ck_assert_int_eq(me, 5);
    ck_assert_int_eq(plan_group_members(&lay, 13, G_NODE, m, 16, &me), 8);
    ck_assert_int_eq(m[7], 15);
}
END_TEST

/* parallel.order sp_tp_dp: an SP group on consecutive devices, TP across;
 * every rank's coordinates map back to it under both orders. */
START_TEST(layout_order_sp_fastest)
{
    plan_layout_cfg lay = {.tp = 4, .sp = 2, .ep = 1, .dp = 2, .devices_per_node = 8,
                           .order = ORDER_SP_TP_DP};
    int m[16], me = -1;
    /* rank 13 = dp 1, tp 2, sp 1 */
    int tp_i, sp_i, dp_i;
    plan_rank_coords(&lay, 13, &tp_i, &sp_i, &dp_i);
    ck_assert_int_eq(tp_i, 2);
    ck_assert_int_eq(sp_i, 1);
    ck_assert_int_eq(dp_i, 1);
    ck_assert_int_eq(plan_group_members(&lay, 13, G_SP, m, 16, &me), 2);
    ck_assert_int_eq(m[0], 12);
    ck_assert_int_eq(m[1], 13);
    ck_assert_int_eq(me, 1);
    ck_assert_int_eq(plan_group_members(&lay, 13, G_TP, m, 16, &me), 4);
    ck_assert_int_eq(m[0], 9);
    ck_assert_int_eq(m[3], 15);
    ck_assert_int_eq(me, 2);
    for (int o = 0; o < 2; o++) {
        lay.order = o;
        for (int r = 0; r < 16; r++) {
            plan_rank_coords(&lay, r, &tp_i, &sp_i, &dp_i);
            ck_assert_int_eq(plan_rank_of(&lay, tp_i, sp_i, dp_i), r);
        }
    }
    /* a workload says it and the plan follows */
    scenario s;
    plan p;
    tu_plan(&s, &p,
            "model: qwen3-omni-30b-a3b-thinker\nplatform: h100-sxm-8\n"
            "parallel: {tp: 4, sp: 2, kv_storage: by_position, exchange: ring, order: sp_tp_dp}\n"
            "requests: [{prompt_tokens: 8192}]\n", NULL, 0);
    ck_assert_int_eq(p.lay.order, ORDER_SP_TP_DP);
    /* one program per SP index: ranks 0, 2, 4, 6 run SP index 0's */
    for (int r = 0; r < 8; r++)
        ck_assert_int_eq(p.prog_of_rank[r], r % 2);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("tp");
    tcase_add_checked_fixture(tc, tu_setup, NULL);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, thinker_tp8_layer_contract);
    tcase_add_test(tc, tp1_has_no_collectives);
    tcase_add_test(tc, layout_order_sp_fastest);
    tcase_add_test(tc, priced_from_new_tables);
    tcase_add_test(tc, cost_src_on_every_op);
    tcase_add_test(tc, ep_uses_all_to_all);
    tcase_add_test(tc, dense_model_mlp_sharding);
    tcase_add_test(tc, memory_ops_balance);
    tcase_add_test(tc, decode_steps_attend_the_prefix);
    tcase_add_test(tc, chunked_prefill_steps);
    tcase_add_test(tc, collectives_are_fenced);
    tcase_add_test(tc, plan_json_fields);
    tcase_add_test(tc, mla_and_dsa_under_tp);
    tcase_add_test(tc, fold_and_expand_round_trip);
    tcase_add_test(tc, fold_as_built_equals_fold_after);
    tcase_add_test(tc, fold_keeps_a_layer_that_differs);
    tcase_add_test(tc, layout_groups);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
