/* check_dsa: sequence parallelism over the TP group and DSA context
 * parallelism (shared/spec/rfc-dsa-context-parallel.md): the token-layout
 * contract of RFC 3.3.1 on GLM-5.1 at TP16, the SP rewrite of plain models,
 * the vLLM-Ascend layout with its fused KV all-gather, layer sharding, the
 * decode router path of RFC 3.8, the static weight accounting (with a
 * generated GLM-5.1 W8A8 description) and the `cpsim memory` command. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/build/build.h"
#include "models/quant.h"
#include "models/seqpar/seqpar.h"
#include "sim/driver/driver.h"
#include "sim/cli/cli_commands.h"
#include "tests/testutil.h"

/* GLM-5.1 W8A8 prefill of 4096 tokens with DSA CP over TP16 (EP16) on one
 * Atlas A3 node: the RFC's validated workload (RFC 3.3.1). */
static const char *GLM =
    "model: glm-5.1\n"
    "platform: ascend-a3-16\n"
    "precision: {weights: int8, activations: bf16, kv_cache: bf16}\n"
    "parallel: {tp: 16, ep: 16, sequence_parallel: true}\n"
    "requests: [{prompt_tokens: 4096}]\n";

static const int64_t T = 4096, NL = 256, HID = 6144;

static int shape_is(const plan_shape *s, int nd, int64_t d0, int64_t d1, int64_t d2)
{
    return s->nd == nd && s->d[0] == d0 && (nd < 2 || s->d[1] == d1) && (nd < 3 || s->d[2] == d2);
}

/* Collectives of program 0 of a kind in layer l. */
static int colls(const plan *p, int layer, plan_coll kind)
{
    int n = 0;
    const plan_prog *pg = &p->progs[0];
    for (uint32_t i = 0; i < pg->nops; i++)
        n += pg->ops[i].kind == OPK_COLL && pg->ops[i].layer == layer && pg->ops[i].coll == kind;
    return n;
}

/* Index of op `op` in program 0. */
static uint32_t index_of(const plan *p, const plan_op *op)
{
    return (uint32_t)(op - p->progs[0].ops);
}

/* Op i depends on op j directly. */
static int depends(const plan *p, uint32_t i, uint32_t j)
{
    const plan_prog *pg = &p->progs[0];
    const plan_op *o = &pg->ops[i];
    for (uint32_t k = 0; k < o->ndeps; k++)
        if (pg->deps[o->dep_first + k] == j)
            return 1;
    return 0;
}

/* The GLM workload in a temporary file (path into wl, 32 bytes). */
static void glm_file(char *wl)
{
    snprintf(wl, 32, "/tmp/cpsim-wl-XXXXXX.yaml");
    int fd = mkstemps(wl, 5);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, GLM, strlen(GLM)), (ssize_t)strlen(GLM));
    close(fd);
}

/* Every allocation of every step is freed by the step's end (weights and
 * KV cache aside). */
static void assert_balanced(const plan *p)
{
    double sum[MC_COUNT] = {0};
    const plan_prog *pg = &p->progs[0];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->kind == OPK_STEP) {
            ck_assert_double_eq_tol(sum[MC_ACTIVATIONS], 0, 1e-3);
            ck_assert_double_eq_tol(sum[MC_COMM_BUFFER], 0, 1e-3);
        }
        if (o->kind == OPK_MEM) {
            sum[o->mem_cat] += o->mem_bytes;
            ck_assert_double_ge(sum[o->mem_cat], -1e-3);
        }
    }
    ck_assert_double_eq_tol(sum[MC_ACTIVATIONS], 0, 1e-3);
    ck_assert_double_eq_tol(sum[MC_COMM_BUFFER], 0, 1e-3);
}

/* RFC 3.3.1 on GLM-5.1, TP16, 4096 tokens: full-token attention and
 * indexer boundary, the slice to the local rows before the replicated
 * o_proj, local norms and MoE, exactly one all-gather per layer boundary
 * (the normalized input) and no residual gather, in all 78 layers. */
START_TEST(token_layout_contract)
{
    scenario s;
    plan p;
    tu_plan(&s, &p, GLM, NULL, 0);
    ck_assert(sc_dsa_cp(&s));
    ck_assert_str_eq(seqpar_scheme(&s)->name, "dsa_cp");
    ck_assert_int_eq(p.step_split[0], 1); /* the prefill's tokens split over TP16 */
    ck_assert_int_eq(tu_count(&p, 0, "mla_sparse_attention", -2), 78);
    ck_assert_int_eq(tu_count(&p, 0, "indexer_topk", -2), 78);
    ck_assert_int_eq(tu_count(&p, 0, "attn_token_slice", -2), 78);
    ck_assert_int_eq(tu_count(&p, 0, "attn_all_reduce", -2), 0);
    for (int l = 0; l < 78; l++) {
        const plan_op *ag = tu_find(&p, 0, "attn_input_all_gather", l);
        ck_assert_ptr_nonnull(ag);
        ck_assert_int_eq(ag->group, G_TP);
        ck_assert_double_eq(ag->comm_bytes, (double)T * HID * 2.0);
        ck_assert(shape_is(&ag->out, 2, T, HID, 0));
        /* the attention boundary: full tokens, all 64 heads */
        const plan_op *sfa = tu_find(&p, 0, "mla_sparse_attention", l);
        ck_assert_int_eq(sfa->layout, TL_FULL);
        ck_assert(shape_is(&sfa->in, 3, T, 64, 512 + 64));
        ck_assert_int_eq(sfa->dtype, DT_BF16);
        const plan_op *av = tu_find(&p, 0, "v_absorb", l);
        ck_assert(shape_is(&av->out, 3, T, 64, 256));
        ck_assert_int_eq(av->layout, TL_FULL);
        const plan_op *sl = tu_find(&p, 0, "attn_token_slice", l);
        ck_assert(shape_is(&sl->in, 3, T, 64, 256));
        ck_assert(shape_is(&sl->out, 3, NL, 64, 256));
        ck_assert_int_eq(sl->layout, TL_LOCAL);
        const plan_op *o = tu_find(&p, 0, "o_proj", l);
        ck_assert(shape_is(&o->in, 2, NL, 16384, 0));
        ck_assert(shape_is(&o->w, 2, 16384, HID, 0));
        ck_assert_int_eq(o->layout, TL_LOCAL);
        ck_assert_int_eq(tu_find(&p, 0, "q_b_proj", l)->n, 64 * 256);
        ck_assert_int_eq(tu_find(&p, 0, "q_b_proj", l)->m, T);
        ck_assert_int_eq(tu_find(&p, 0, "post_attn_norm", l)->layout, TL_LOCAL);
        ck_assert(shape_is(&tu_find(&p, 0, "input_norm", l)->in, 2, NL, HID, 0));
        if (l < 3) { /* dense layers: the TP MLP gathers its normalized input */
            ck_assert_int_eq(colls(&p, l, CK_ALL_GATHER), 2);
            ck_assert_ptr_nonnull(tu_find(&p, 0, "mlp_input_all_gather", l));
            ck_assert_int_eq(colls(&p, l, CK_REDUCE_SCATTER), 1);
            continue;
        }
        ck_assert_int_eq(colls(&p, l, CK_ALL_GATHER), 1);
        ck_assert_int_eq(colls(&p, l, CK_REDUCE_SCATTER), 0);
        const plan_op *r = tu_find(&p, 0, "router", l);
        ck_assert(shape_is(&r->in, 2, NL, HID, 0));
        ck_assert(shape_is(&r->out, 2, NL, 256, 0));
        ck_assert_int_eq(r->layout, TL_LOCAL);
        ck_assert(shape_is(&tu_find(&p, 0, "topk", l)->out, 2, NL, 8, 0));
        ck_assert(shape_is(&tu_find(&p, 0, "moe_permute", l)->in, 2, NL, HID, 0));
        ck_assert_int_eq(colls(&p, l, CK_ALL_TO_ALL), 2);
        /* the shared-expert all-reduce keeps the local rows */
        ck_assert_int_eq(colls(&p, l, CK_ALL_REDUCE), 1);
        const plan_op *sh = tu_find(&p, 0, "shared_all_reduce", l);
        ck_assert(shape_is(&sh->out, 2, NL, HID, 0));
        ck_assert_int_eq(sh->layout, TL_LOCAL);
        ck_assert(shape_is(&tu_find(&p, 0, "shared_gate_up", l)->in, 2, NL, HID, 0));
    }
    /* no residual gather: no gather beyond the prompt, no row count inflated */
    const plan_prog *pg = &p.progs[0];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->kind == OPK_COLL)
            ck_assert_int_le(o->out.d[0], T * 8); /* at most the top-8 copies of 4096 rows */
        if (o->kind == OPK_COLL && o->coll == CK_ALL_GATHER && o->layer >= 0)
            ck_assert_msg(strcmp(o->name, "attn_input_all_gather") == 0 ||
                          strcmp(o->name, "mlp_input_all_gather") == 0,
                          "unexpected gather %s in layer %d", o->name, o->layer);
        if (o->kind == OPK_COMPUTE && o->kclass == KC_GEMM)
            ck_assert_int_le(o->m, T);
    }
    /* the embedding all-reduce became the reduce-scatter into local rows */
    const plan_op *emb = tu_find(&p, 0, "embed_reduce_scatter", -1);
    ck_assert(shape_is(&emb->out, 2, NL, HID, 0));
    ck_assert(shape_is(&tu_find(&p, 0, "final_token_all_gather", -1)->out, 2, 16, HID, 0));
    ck_assert_int_eq(tu_find(&p, 0, "lm_head", -1)->m, 1);
    assert_balanced(&p);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* The indexer's cost split (RFC 3.3): query side on the 256 local rows of
 * the last rank (queries 3840..4095 over their causal prefixes), key side
 * and caches on the 4096 tokens; q_b_proj / kv_b_proj / o_proj replicated
 * with all 64 heads (singleton TP view). */
START_TEST(indexer_split_and_singleton_view)
{
    scenario s;
    plan p;
    tu_plan(&s, &p, GLM, NULL, 0);
    const plan_op *q = tu_find(&p, 0, "indexer_wq_b", 10);
    ck_assert_int_eq(q->m, NL);
    ck_assert_int_eq(q->layout, TL_LOCAL);
    ck_assert_int_eq(tu_find(&p, 0, "indexer_weights_proj", 10)->m, NL);
    const plan_op *k = tu_find(&p, 0, "indexer_wk", 10);
    ck_assert_int_eq(k->m, T);
    ck_assert_int_eq(k->layout, TL_FULL);
    ck_assert(shape_is(&tu_find(&p, 0, "indexer_cache_write", 10)->in, 2, T, 128, 0));
    const plan_op *ix = tu_find(&p, 0, "indexer_topk", 10);
    ck_assert_int_eq(ix->attn.q_len, NL);
    ck_assert_int_eq(ix->attn.kv_len, T);
    ck_assert_double_eq(ix->attn.pairs, (double)NL * (T - NL) + NL * (NL + 1) / 2.0);
    ck_assert_int_eq(ix->layout, TL_LOCAL);
    /* sparse attention over <= 2048 keys per query, full-token */
    const plan_op *sfa = tu_find(&p, 0, "mla_sparse_attention", 10);
    ck_assert_double_eq(sfa->attn.pairs, 2048.0 * 2049 / 2 + (double)(T - 2048) * 2048);
    ck_assert_int_eq(sfa->attn.heads, 64);
    ck_assert_int_eq(tu_find(&p, 0, "q_absorb", 10)->g, 64);
    /* the KV cache takes every token on every rank */
    ck_assert_int_eq(tu_find(&p, 0, "kv_write", 10)->in.d[0], T);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* The SP pass on a model without DSA (the thinker, GQA + MoE without
 * EP): all_reduce -> norm becomes reduce_scatter -> norm -> all_gather,
 * the residual chain is local, the MoE local with the all-gather dispatch
 * of TP-sharded experts; a dense model gathers its MLP input. */
START_TEST(sp_pass_plain_models)
{
    scenario s;
    plan p;
    const char *thinker = "model: qwen3-omni-30b-a3b-thinker\nplatform: h100-sxm-8\n"
                          "parallel: {tp: 8, sequence_parallel: true}\n"
                          "requests: [{prompt_tokens: 8192, decode_tokens: 2}]\n";
    tu_plan(&s, &p, thinker, NULL, 0);
    ck_assert_str_eq(seqpar_scheme(&s)->name, "sequence_parallel");
    const int64_t t = 8192, n = t / 8, h = 2048;
    for (int l = 0; l < 48; l += 47) {
        const plan_op *rs = tu_find(&p, 0, "attn_reduce_scatter", l);
        ck_assert_int_eq(rs->coll, CK_REDUCE_SCATTER);
        ck_assert_double_eq(rs->comm_bytes, (double)t * h * 2.0);
        ck_assert(shape_is(&rs->out, 2, n, h, 0));
        ck_assert_int_eq(rs->layout, TL_LOCAL);
        ck_assert(shape_is(&tu_find(&p, 0, "input_norm", l)->in, 2, n, h, 0));
        ck_assert(shape_is(&tu_find(&p, 0, "attn_input_all_gather", l)->out, 2, t, h, 0));
        ck_assert_int_eq(tu_find(&p, 0, "attention", l)->attn.q_len, t);
        ck_assert_int_eq(tu_find(&p, 0, "attention", l)->attn.heads, 4);
        ck_assert_int_eq(tu_find(&p, 0, "router", l)->m, n);
        ck_assert(shape_is(&tu_find(&p, 0, "moe_dispatch_all_gather", l)->out, 2, t, h, 0));
        ck_assert(shape_is(&tu_find(&p, 0, "moe_reduce_scatter", l)->out, 2, n, h, 0));
    }
    /* first step split; the decode steps run the plain TP layer */
    ck_assert_int_eq(tu_count(&p, 0, "attn_reduce_scatter", -2), 48);
    ck_assert_int_eq(tu_count(&p, 0, "attn_all_reduce", -2), 2 * 48);
    assert_balanced(&p);
    plan_free(&p);
    wl_free(&s);

    tu_plan(&s, &p,
            "model: qwen3-32b\nplatform: h100-sxm-8\n"
            "parallel: {tp: 4, sequence_parallel: true}\nrequests: [{prompt_tokens: 4000}]\n",
            NULL, 0);
    /* 4000 tokens padded to 4000 = 4 x 1000 rows */
    ck_assert(shape_is(&tu_find(&p, 0, "mlp_input_all_gather", 3)->out, 2, 4000, 5120, 0));
    ck_assert(shape_is(&tu_find(&p, 0, "mlp_reduce_scatter", 3)->out, 2, 1000, 5120, 0));
    ck_assert_int_eq(tu_find(&p, 0, "mlp_gate_up", 3)->n, 2 * 25600 / 4);
    ck_assert_int_eq(colls(&p, 3, CK_ALL_REDUCE), 0);
    assert_balanced(&p);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* dsa_cp: off on a DSA model keeps the TP MLA (heads/tp, kv_b sharded)
 * under the plain SP pass; dsa_cp: on alone turns the scheme on. */
START_TEST(dsa_cp_what_ifs)
{
    scenario s;
    plan p;
    const char *off[] = {"parallel.dsa_cp=off"};
    tu_plan(&s, &p, GLM, off, 1);
    ck_assert(!sc_dsa_cp(&s));
    ck_assert_str_eq(seqpar_scheme(&s)->name, "sequence_parallel");
    ck_assert_int_eq(tu_find(&p, 0, "mla_sparse_attention", 5)->attn.heads, 4);
    ck_assert_ptr_nonnull(tu_find(&p, 0, "attn_reduce_scatter", 5));
    ck_assert_ptr_null(tu_find(&p, 0, "attn_token_slice", -2));
    plan_free(&p);
    wl_free(&s);
    const char *on[] = {"parallel.sequence_parallel=false", "parallel.dsa_cp=on"};
    tu_load(&s, GLM, on, 2);
    ck_assert_str_eq(seqpar_scheme(&s)->name, "dsa_cp");
    wl_free(&s);
    const char *plain[] = {"parallel.sequence_parallel=false"};
    tu_load(&s, GLM, plain, 1);
    ck_assert_ptr_null(seqpar_scheme(&s));
    wl_free(&s);
}
END_TEST

/* vllm_ascend layout: projections on the local rows, the fused
 * [rope | nope | index-k] all-gather posted before q_b_proj, which does not
 * wait for it; the cache write does; sparse attention on the local
 * queries, no slice. */
START_TEST(fused_kv_gather_overlaps_q_up)
{
    scenario s;
    plan p;
    const char *v[] = {"parallel.dsa_cp_layout=vllm_ascend"};
    tu_plan(&s, &p, GLM, v, 1);
    const plan_op *g = tu_find(&p, 0, "kv_fused_all_gather", 7);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(g->stream, ST_COMM);
    ck_assert(shape_is(&g->out, 2, T, 512 + 64 + 128, 0));
    ck_assert_double_eq(g->comm_bytes, (double)T * (512 + 64 + 128) * 2.0);
    uint32_t gi = index_of(&p, g);
    const plan_op *qb = tu_find(&p, 0, "q_b_proj", 7);
    uint32_t qi = index_of(&p, qb);
    ck_assert_uint_gt(qi, gi);
    ck_assert_int_eq(qb->m, NL);
    for (uint32_t i = gi + 1; i <= qi; i++)
        ck_assert(!depends(&p, i, gi));
    uint32_t wi = index_of(&p, tu_find(&p, 0, "kv_write", 7));
    int waited = 0;
    for (uint32_t i = qi + 1; i <= wi; i++)
        waited |= depends(&p, i, gi);
    ck_assert(waited);
    ck_assert_int_eq(tu_find(&p, 0, "kv_write", 7)->in.d[0], T);
    const plan_op *sfa = tu_find(&p, 0, "mla_sparse_attention", 7);
    ck_assert_int_eq(sfa->attn.q_len, NL);
    ck_assert_int_eq(sfa->layout, TL_LOCAL);
    ck_assert_ptr_null(tu_find(&p, 0, "attn_token_slice", -2));
    ck_assert(shape_is(&tu_find(&p, 0, "o_proj", 7)->in, 2, NL, 16384, 0));
    assert_balanced(&p);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* Layer sharding of q_b_proj and o_proj: layer l+1's weights are
 * broadcast over TP on the comm2 stream while layer l runs, into a window
 * allocated when the broadcast starts and freed after the projection. */
START_TEST(layer_sharding_broadcast)
{
    scenario s;
    plan p;
    const char *ls[] = {"parallel.layer_sharding=[q_b_proj,o_proj]"};
    tu_plan(&s, &p, GLM, ls, 1);
    ck_assert_uint_eq(sc_layer_sharded(&s), (1u << MP_Q_B) | (1u << MP_O));
    double qb = quant_proj_bytes(&s, 5, MP_Q_B), ob = quant_proj_bytes(&s, 5, MP_O);
    /* the int8 weights move; their scales stay on every rank */
    ck_assert_double_eq(qb, 16384.0 * 2048);
    ck_assert_double_eq(ob, 6144.0 * 16384);
    ck_assert_int_eq(tu_count(&p, 0, "bcast_q_b_proj", -2), 78);
    ck_assert_int_eq(tu_count(&p, 0, "bcast_o_proj", -2), 78);
    for (int l = 0; l < 78; l++) {
        /* layer l's broadcast is posted in layer l - 1 (the embedding for 0) */
        const plan_op *b = tu_find(&p, 0, "bcast_q_b_proj", l - 1);
        ck_assert_ptr_nonnull(b);
        ck_assert_int_eq(b->stream, ST_COMM2);
        ck_assert_int_eq(b->coll, CK_BROADCAST);
        ck_assert_int_eq(b->group, G_TP);
        ck_assert_double_eq(b->comm_bytes, qb);
        uint32_t bi = index_of(&p, b), ui = index_of(&p, tu_find(&p, 0, "q_b_proj", l));
        int waits = 0;
        for (uint32_t i = bi + 1; i <= ui; i++)
            waits |= depends(&p, i, bi);
        ck_assert_msg(waits, "q_b_proj of layer %d does not wait for its broadcast", l);
        const plan_op *al = &p.progs[0].ops[bi - 1];
        ck_assert_int_eq(al->kind, OPK_MEM);
        ck_assert_int_eq(al->stream, ST_COMM2);
        ck_assert_double_eq(al->mem_bytes, qb);
    }
    /* the window comes and goes: weights back to the resident value */
    double w = 0, resident = p.progs[0].ops[0].mem_bytes, peak = 0;
    const plan_prog *pg = &p.progs[0];
    for (uint32_t i = 0; i < pg->nops; i++)
        if (pg->ops[i].kind == OPK_MEM && pg->ops[i].mem_cat == MC_WEIGHTS) {
            w += pg->ops[i].mem_bytes;
            peak = fmax(peak, w - resident);
        }
    ck_assert_double_eq_tol(w, resident, 1.0);
    ck_assert_double_le(peak, 2.0 * (qb + ob) + 1.0);
    ck_assert_double_ge(peak, qb + ob);
    assert_balanced(&p);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* A decode step of RFC 3.8 (dp8 tp4, EP over the 32 ranks, 9 packed
 * tokens): router [9, 6144] -> [9, 256], pad to 12, slice 3 per TP rank,
 * top-k [3, 8], routed experts on [3, 6144], all-gathered back. */
START_TEST(decode_router_path)
{
    scenario s;
    tu_load(&s,
            "model: glm-5.1\nplatform: {name: ascend-a3-16, nodes: 2}\n"
            "parallel: {tp: 4, dp: 8, ep: 32, sequence_parallel: true}\n"
            "requests: [{prompt_tokens: 2500, decode_tokens: 1}]\n",
            NULL, 0);
    plan_layout_cfg lay = {.tp = 4, .sp = 1, .ep = 32, .dp = 8, .devices_per_node = 16};
    plan p;
    plan_init(&p, &lay);
    int g = plan_add_prog(&p);
    bld b = {0};
    b.s = &s;
    b.a = &s.model;
    b.pg = &p.progs[g];
    b.lay = lay;
    b.tp = 4;
    b.ep = 32;
    b.adt = b.gdt = DT_BF16;
    b.ab = b.wb = b.kvb = 2.0;
    b.last_compute = EM_NONE;
    b.request = 0;
    b.step = 1; /* the decode step after the prefill */
    b.layer = 3;
    const layer_scheme *sc = seqpar_scheme(&s);
    sc->layer(&b, 9, 2500);
    const plan_op *r = tu_find(&p, 0, "router", 3);
    ck_assert(shape_is(&r->in, 2, 9, HID, 0));
    ck_assert(shape_is(&r->out, 2, 9, 256, 0));
    ck_assert(shape_is(&tu_find(&p, 0, "router_pad", 3)->out, 2, 12, 256, 0));
    ck_assert(shape_is(&tu_find(&p, 0, "router_slice", 3)->out, 2, 3, 256, 0));
    ck_assert(shape_is(&tu_find(&p, 0, "moe_slice", 3)->out, 2, 3, HID, 0));
    const plan_op *tk = tu_find(&p, 0, "topk", 3);
    ck_assert(shape_is(&tk->in, 2, 3, 256, 0));
    ck_assert(shape_is(&tk->out, 2, 3, 8, 0));
    ck_assert(shape_is(&tu_find(&p, 0, "moe_permute", 3)->in, 2, 3, HID, 0));
    const plan_op *d = tu_find(&p, 0, "moe_dispatch", 3);
    ck_assert_int_eq(d->group, G_EP);
    ck_assert_double_eq(d->comm_bytes, 3.0 * 8 * HID * 2.0);
    /* 8 experts per rank receive the 24 rows on average (3 each); under
     * random routing the most loaded of the 32 ranks gets more */
    const plan_op *gu = tu_find(&p, 0, "expert_gate_up", 3);
    ck_assert_int_eq(gu->kclass, KC_MOE_GEMM);
    ck_assert_int_eq(gu->g, 8);
    ck_assert_int_eq(gu->m, moe_rank_rows(&b, 24.0, 8, 32));
    ck_assert_int_gt(gu->m, 24);
    s.moe_routing = RT_BALANCED;
    ck_assert_int_eq(moe_rank_rows(&b, 24.0, 8, 32), 24);
    s.moe_routing = RT_RANDOM;
    ck_assert(shape_is(&tu_find(&p, 0, "moe_finalize_all_gather", 3)->out, 2, 12, HID, 0));
    ck_assert(shape_is(&tu_find(&p, 0, "shared_all_reduce", 3)->out, 2, 9, HID, 0));
    /* decode attention: full packed tokens, all heads, no reduction */
    ck_assert_int_eq(tu_find(&p, 0, "mla_sparse_attention", 3)->attn.q_len, 9);
    ck_assert_ptr_null(tu_find(&p, 0, "attn_token_slice", 3));
    ck_assert_ptr_null(tu_find(&p, 0, "attn_all_reduce", 3));
    plan_free(&p);
    wl_free(&s);

    /* the whole plan: prefill local, decode steps through the router path */
    tu_plan(&s, &p, GLM, (const char *[]){"requests.0.decode_tokens=2"}, 1);
    ck_assert_int_eq(tu_count(&p, 0, "router_slice", -2), 2 * 75);
    ck_assert_int_eq(tu_find(&p, 0, "router", 3)->m, NL);
    assert_balanced(&p);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* ---- static weight accounting ------------------------------------------------- */

/* Bytes of one W8A8 (static) linear holding out x in on a rank: int8
 * weight; quant_bias int32, deq_scale fp32, weight scale and offset bf16
 * per output channel; input scale bf16 + offset int8; three bf16 input
 * repeats (w8a8_static.py). */
static double w8a8(double out, double in)
{
    return out * in + out * (4.0 + 4.0 + 2.0 + 2.0) + 3.0 + 3.0 * in * 2.0;
}

/* The generated GLM-5.1 W8A8 description in a temporary file. */
static void gen_description(char *path, size_t len, const char *args)
{
    snprintf(path, len, "/tmp/cpsim-desc-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sh %s/tests/quant/dsa-w8a8-description.sh %s > %s", CP_SRCDIR,
             args, path);
    ck_assert_int_eq(system(cmd), 0);
}

static char *yaml_with_desc(const char *desc, const char *par)
{
    char *y = NULL;
    ck_assert_int_gt(asprintf(&y,
                              "model: glm-5.1\nplatform: ascend-a3-16\n"
                              "precision: {weights: int8, activations: bf16, kv_cache: bf16,\n"
                              "            quant_description: %s}\n"
                              "parallel: {%s}\nrequests: [{prompt_tokens: 4096}]\n",
                              desc, par),
                     0);
    return y;
}

/* An integer checkpoint (config.json quantization_config awq / gptq):
 * weights packed at 4 bits, per group of 128 input columns an fp16/bf16
 * scale and a 4-bit zero point packed in int32 along the output, GPTQ's
 * g_idx int32 per input column; awq without zero_point stores no zeros. */
START_TEST(int_group_accounting)
{
    /* per layer out x groups: q 256x2, k 128x2, v 128x2, o 256x2, gate
     * 512x2, up 512x2, down 256x4 = 4608 groups of a 2 B scale and a 0.5 B
     * zero point */
    const double params = 2 * 4608 * 2.5;
    char yaml[512];
    snprintf(yaml, sizeof yaml, "model: %s/tests/configs/tiny-awq.json\nplatform: h200-sxm-8\n"
             "parallel: {tp: 1}\nrequests: [{prompt_tokens: 64}]\n", CP_SRCDIR);
    scenario s;
    quant_report r;
    tu_load(&s, yaml, NULL, 0);
    ck_assert_int_eq(s.w_dtype, DT_INT4);
    quant_account(&s, NULL, &r);
    ck_assert_int_eq(r.ntype[QT_INT_GROUP], 14);
    /* per layer q, o 256x256, k, v 128x256, MLP 3 x 512x256 elements, 4 bits */
    ck_assert_double_eq(r.cat_total[QC_QUANTIZED],
                        2 * (2 * 65536.0 + 2 * 32768 + 3 * 131072) * 0.5);
    ck_assert_double_eq(r.cat_total[QC_PARAMS], params);
    ck_assert_double_eq(r.total, quant_resident_bytes(&s));
    double awq = r.total;
    s.model.quant_zeros = 0; /* zero_point: false stores scales only */
    quant_account(&s, NULL, &r);
    ck_assert_double_eq(r.cat_total[QC_PARAMS], 2 * 4608 * 2.0);
    wl_free(&s);
    /* the same weights from a GPTQ checkpoint: + g_idx, 4 B per input column
     * (per layer 6 x 256 + 512 columns) */
    snprintf(yaml, sizeof yaml, "model: %s/tests/configs/tiny-gptq.json\nplatform: h200-sxm-8\n"
             "parallel: {tp: 1}\nrequests: [{prompt_tokens: 64}]\n", CP_SRCDIR);
    tu_load(&s, yaml, NULL, 0);
    quant_account(&s, NULL, &r);
    ck_assert_double_eq(r.cat_total[QC_PARAMS], params + 2 * (6 * 256 + 512) * 4.0);
    ck_assert_double_eq(r.total, awq + 2 * (6 * 256 + 512) * 4.0);
    /* TP2: column-parallel q, k, v, gate, up halve their rows, row-parallel
     * o and down their columns (groups) */
    wl_free(&s);
    snprintf(yaml, sizeof yaml, "model: %s/tests/configs/tiny-awq.json\nplatform: h200-sxm-8\n"
             "parallel: {tp: 2}\nrequests: [{prompt_tokens: 64}]\n", CP_SRCDIR);
    tu_load(&s, yaml, NULL, 0);
    quant_account(&s, NULL, &r);
    ck_assert_double_eq(r.cat_total[QC_PARAMS], params / 2);
    wl_free(&s);
}
END_TEST

/* GLM-5.1 W8A8 at TP16 EP16 with the generated description: types per
 * tensor, the attention family in closed form with and without DSA CP, the
 * steps from the plain estimate, layer sharding. */
START_TEST(glm_w8a8_accounting)
{
    char desc[64];
    gen_description(desc, sizeof desc, "");
    char *tp = yaml_with_desc(desc, "tp: 16, ep: 16");
    char *cp = yaml_with_desc(desc, "tp: 16, ep: 16, sequence_parallel: true");
    scenario s;
    quant_report r;
    tu_load(&s, tp, NULL, 0);
    quant_account(&s, s.quant, &r);
    ck_assert_int_eq(r.ntype[QT_W8A8], 78 * 4);
    ck_assert_int_eq(r.ntype[QT_W8A8_DYNAMIC], 78 + 3 * 3 + 75 * (256 + 1) * 3);
    ck_assert_int_eq(r.ntype[QT_FLOAT], 78 * 3 + 75 + 2);
    mem_weights pl;
    mem_weights_per_rank(&s.model, (mem_shard){.tp = 16, .ep = 16}, DT_INT8, &pl);
    ck_assert_double_eq(r.step_total[QS_PLAIN], pl.total);
    /* TP: q_a, kv_a replicated; q_b column (1/16 of the rows), o_proj row
     * (1/16 of the columns); kv_b as bf16 W_UK_T / W_UV of 4 heads; norms */
    double tp_attn = w8a8(2048, 6144) + w8a8(16384 / 16, 2048) + w8a8(576, 6144) +
                     w8a8(6144, 16384 / 16) + 28672.0 / 16 * 512 * 2 + (2048 + 512) * 2.0;
    ck_assert_double_eq_tol(r.fam_total[WF_ATTENTION], 78 * tp_attn, 1.0);
    ck_assert_double_eq_tol(r.bytes[WF_ATTENTION][QC_DERIVED],
                            78 * (28672.0 / 16 * 512 * 2 + 3 * 2.0 * (6144 + 2048 + 6144 + 1024)),
                            1.0);
    ck_assert_double_eq(r.step_total[QS_FULL_ATTN], r.step_total[QS_SHARED_TP]);
    ck_assert_double_eq(r.total, r.step_total[QS_DERIVED]);
    double tp_total = r.total;
    wl_free(&s);

    tu_load(&s, cp, NULL, 0);
    quant_account(&s, s.quant, &r);
    double cp_attn = w8a8(2048, 6144) + w8a8(16384, 2048) + w8a8(576, 6144) +
                     w8a8(6144, 16384) + 28672.0 * 512 * 2 + (2048 + 512) * 2.0;
    ck_assert_double_eq_tol(r.fam_total[WF_ATTENTION], 78 * cp_attn, 1.0);
    ck_assert_double_eq_tol(r.step_total[QS_FULL_ATTN] - r.step_total[QS_SHARED_TP],
                            78 * (cp_attn - tp_attn), 1.0);
    /* shared experts by TP instead of replicated (ep > 1): 15/16 of them go */
    double shared = 75 * 3 * 2048.0 * 6144;
    ck_assert_double_lt(r.step_total[QS_SHARED_TP] - r.step_total[QS_DERIVED],
                        -0.9 * shared * 15 / 16);
    ck_assert_double_eq_tol(r.total - tp_total,
                            r.step_total[QS_FULL_ATTN] - r.step_total[QS_DERIVED], 1.0);
    ck_assert_double_eq_tol(quant_resident_bytes(&s), r.total, 1.0);
    wl_free(&s);

    /* layer sharding: rank 0 keeps the q_b_proj / o_proj weights of layers
     * 0, 16, ..., 64; the scales of every layer stay */
    const char *ls[] = {"parallel.layer_sharding=[q_b_proj,o_proj]"};
    tu_load(&s, cp, ls, 1);
    quant_report rs;
    quant_account(&s, s.quant, &rs);
    ck_assert_int_eq(rs.shard_layers, 5);
    double per_layer = 16384.0 * 2048 + 6144.0 * 16384;
    ck_assert_double_eq_tol(rs.total, r.total - (78 - 5) * per_layer, 1.0);
    ck_assert_double_eq_tol(rs.window, 2.0 * per_layer, 1.0);
    ck_assert_double_eq(quant_proj_bytes(&s, 9, MP_Q_B), 16384.0 * 2048);
    wl_free(&s);
    free(tp);
    free(cp);
    unlink(desc);
}
END_TEST

/* Without a description: bf16 models materialize what the plain estimate
 * says (GQA) or trade kv_b_proj for W_UK_T / W_UV one for one (MLA); int8
 * weights follow the W8A8_DYNAMIC rule with the float exceptions. */
/* quant_resident_bytes remembers its last totals (a sweep's points): every
 * answer still equals a fresh accounting (quant_account) as the model, the
 * layout and the precision change and come back. */
START_TEST(resident_memo_follows_inputs)
{
    static const char *const cases[][2] = {
        {"qwen3-omni-30b-a3b-thinker", "parallel.tp=8"},
        {"qwen3-omni-30b-a3b-thinker", "parallel.tp=4"},
        {"qwen3-omni-30b-a3b-thinker", "precision.mlp_weights=fp8_rowwise"},
        {"qwen3-30b-a3b", "parallel.tp=8"},
        {"qwen3-omni-30b-a3b-thinker", "parallel.tp=8"},
        {"qwen3-omni-30b-a3b-thinker", "parallel.tp=4"},
    };
    double first = 0;
    for (int k = 0; k < 6; k++) {
        char yaml[256];
        snprintf(yaml, sizeof yaml,
                 "model: %s\nplatform: h200-sxm-8\nrequests: [{prompt_tokens: 10}]\n",
                 cases[k][0]);
        scenario s;
        quant_report r;
        tu_load(&s, yaml, &cases[k][1], 1);
        quant_account(&s, NULL, &r);
        double got = quant_resident_bytes(&s);
        ck_assert_double_eq_tol(got, r.total, 1);
        if (k == 0)
            first = got;
        if (k == 4)
            ck_assert_double_eq(got, first);
        if (k == 1 || k == 2 || k == 3)
            ck_assert_double_ne(got, first);
        wl_free(&s);
    }
}
END_TEST

START_TEST(accounting_rules_without_description)
{
    scenario s;
    quant_report r;
    tu_load(&s, "model: qwen3-omni-30b-a3b-thinker\nplatform: h100-sxm-8\nparallel: {tp: 8}\n"
                "requests: [{prompt_tokens: 10}]\n", NULL, 0);
    mem_weights pl;
    mem_weights_per_rank(&s.model, (mem_shard){.tp = 8, .ep = 1}, DT_BF16, &pl);
    ck_assert_double_eq(quant_resident_bytes(&s), pl.total);
    wl_free(&s);
    /* deepseek-v3's checkpoint is fp8 (quantization_config): bf16 asked for */
    tu_load(&s, "model: deepseek-v3\nplatform: h200-sxm-8\nparallel: {tp: 8}\n"
                "precision: bf16\nrequests: [{prompt_tokens: 10}]\n", NULL, 0);
    quant_account(&s, NULL, &r);
    ck_assert_double_eq(r.total, r.step_total[QS_PLAIN]);
    ck_assert_double_gt(r.bytes[WF_ATTENTION][QC_DERIVED], 0);
    wl_free(&s);
    tu_load(&s, GLM, NULL, 0);
    quant_account(&s, NULL, &r);
    ck_assert_int_eq(r.ntype[QT_W8A8], 0);
    ck_assert_int_eq(r.ntype[QT_FLOAT], 78 * 3 + 75 + 2);
    /* embedding and LM head stay bf16: twice their int8 plain share */
    ck_assert_double_eq(r.bytes[WF_EMBEDDING][QC_FLOAT], 2.0 * r.plain[WF_EMBEDDING]);
    ck_assert_double_eq(r.bytes[WF_ROUTER][QC_FLOAT], 2.0 * r.plain[WF_ROUTER]);
    ck_assert_double_eq(r.bytes[WF_EXPERTS][QC_QUANTIZED], r.plain[WF_EXPERTS]);
    /* fp32 copies of the w13 scales only: 256 experts x 2 x 2048 per layer, 1/16 */
    ck_assert_double_eq_tol(r.bytes[WF_EXPERTS][QC_FP32], 75 * 16 * 2.0 * 2048 * 4, 1e-3);
    wl_free(&s);
    /* int8 activations do not make the float tensors int8 */
    tu_load(&s, GLM, (const char *[]){"precision=int8"}, 1);
    ck_assert_double_eq(quant_params_bytes(&s), 2.0);
    quant_account(&s, NULL, &r);
    ck_assert_double_eq(r.bytes[WF_LM_HEAD][QC_FLOAT], 2.0 * r.plain[WF_LM_HEAD]);
    wl_free(&s);
    /* fp8 weights carry 128 x 128 block scales */
    tu_load(&s, GLM, (const char *[]){"precision.weights=fp8"}, 1);
    quant_account(&s, NULL, &r);
    ck_assert_double_eq_tol(r.bytes[WF_EXPERTS][QC_FP32],
                            75 * 16 * 3 * (16.0 * 48) * 4, 1e-3);
    wl_free(&s);
}
END_TEST

/* Descriptions that do not fit the model are refused at load, naming the
 * key and the tensor. */
START_TEST(description_refusals)
{
    char tiny[64], path[80], cfg[] = "/tmp/cpsim-tiny-XXXXXX.json";
    gen_description(tiny, sizeof tiny, "3 1 4 0");
    int fd = mkstemps(cfg, 5);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"hidden_size\": 64, \"num_hidden_layers\": 3, \"num_attention_heads\": 4,\n"
          " \"num_key_value_heads\": 4, \"q_lora_rank\": 32, \"kv_lora_rank\": 16,\n"
          " \"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 8, \"v_head_dim\": 8,\n"
          " \"index_n_heads\": 2, \"index_head_dim\": 8, \"index_topk\": 4,\n"
          " \"vocab_size\": 100, \"intermediate_size\": 96, \"n_routed_experts\": 4,\n"
          " \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 16,\n"
          " \"n_shared_experts\": 1, \"first_k_dense_replace\": 1}\n", f);
    fclose(f);
    json_error_t je;
    json_t *good = json_load_file(tiny, 0, &je);
    ck_assert_ptr_nonnull(good);
    static const struct {
        const char *key, *value; /* NULL value: delete the key */
        const char *expect;
    } cases[] = {
        {"model.layers.2.mlp.experts.3.down_proj.weight", NULL,
         "no entry for model.layers.2.mlp.experts.3.down_proj.weight"},
        {"model.layers.0.self_attn.o_proj.weight", "W4A8_DYNAMIC",
         "quant type \"W4A8_DYNAMIC\" is not modelled"},
        {"model.layers.1.self_attn.kv_b_proj.weight", "W8A8", "needs kv_b_proj unquantized"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = json_deep_copy(good);
        if (cases[i].value)
            json_object_set_new(j, cases[i].key, json_string(cases[i].value));
        else
            json_object_del(j, cases[i].key);
        snprintf(path, sizeof path, "%s.%zu", tiny, i);
        ck_assert_int_eq(json_dump_file(j, path, 0), 0);
        json_decref(j);
        char yaml[512];
        snprintf(yaml, sizeof yaml,
                 "model: %s\nplatform: h100-sxm-8\n"
                 "precision: {weights: int8, quant_description: %s}\n"
                 "requests: [{prompt_tokens: 8}]\n", cfg, path);
        scenario s;
        cp_err err = {0};
        ck_assert_int_eq(tu_try_load(&s, yaml, NULL, 0, &err), -1);
        ck_assert_int_eq(err.code, CP_EXIT_INPUT);
        ck_assert_msg(strstr(err.msg, cases[i].expect) && strstr(err.msg, "quant_description"),
                      "%s", err.msg);
        unlink(path);
    }
    /* the intact description loads; a broken file names its line */
    char yaml[512];
    snprintf(yaml, sizeof yaml, "model: %s\nplatform: h100-sxm-8\n"
             "precision: {weights: int8, quant_description: %s}\n"
             "requests: [{prompt_tokens: 8}]\n", cfg, tiny);
    scenario s;
    cp_err err = {0};
    ck_assert_msg(tu_try_load(&s, yaml, NULL, 0, &err) == 0, "%s", err.msg);
    ck_assert_ptr_nonnull(s.quant);
    for (int i = 0; i < s.nwarn; i++)
        ck_assert_msg(!strstr(s.warn[i], "change nothing"), "%s", s.warn[i]);
    wl_free(&s);
    /* an entry for no tensor of the model is read and said to change nothing */
    json_t *extra = json_deep_copy(good);
    json_object_set_new(extra, "model.layers.7.mlp.down_proj.weight", json_string("W8A8"));
    ck_assert_int_eq(json_dump_file(extra, tiny, 0), 0);
    json_decref(extra);
    ck_assert_msg(tu_try_load(&s, yaml, NULL, 0, &err) == 0, "%s", err.msg);
    int said = 0;
    for (int i = 0; i < s.nwarn; i++)
        said |= strstr(s.warn[i], "1 entry change nothing") &&
                strstr(s.warn[i], "\"model.layers.7.mlp.down_proj.weight\"");
    ck_assert_msg(said, "%d warnings, first: %s", s.nwarn, s.nwarn ? s.warn[0] : "");
    wl_free(&s);
    f = fopen(tiny, "w");
    fputs("{\n  \"a\": \"FLOAT\",\n  oops\n}\n", f);
    fclose(f);
    ck_assert_int_eq(tu_try_load(&s, yaml, NULL, 0, &err), -1);
    ck_assert_msg(strstr(err.msg, ":3:"), "%s", err.msg);
    json_decref(good);
    unlink(tiny);
    unlink(cfg);
}
END_TEST

/* What the schemes cannot build is refused when the workload loads, at the
 * key's place in the file. */
START_TEST(scheme_refusals)
{
    scenario s;
    cp_err err = {0};
    static const char sp2[] = "model: glm-5.1\n"
                              "platform: ascend-a3-16\n"
                              "parallel: {tp: 8, ep: 8,\n"
                              "           sp: 2, sequence_parallel: true}\n"
                              "requests: [{prompt_tokens: 4096}]\n";
    ck_assert_int_eq(tu_try_load(&s, sp2, NULL, 0, &err), -1);
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
    ck_assert_msg(strstr(err.msg, ":4:16: parallel.sp: sequence parallelism over the TP group"),
                  "%s", err.msg);
    memset(&err, 0, sizeof err);
    const char *ls[] = {"parallel.dsa_cp=off", "parallel.layer_sharding=[o_proj]"};
    ck_assert_int_eq(tu_try_load(&s, GLM, ls, 2, &err), -1);
    ck_assert_msg(strstr(err.msg, "parallel.layer_sharding: layer sharding"), "%s", err.msg);
    tu_load(&s, GLM, NULL, 0);
    ck_assert_ptr_nonnull(seqpar_scheme(&s));
    wl_free(&s);
}
END_TEST

/* ---- cpsim memory ----------------------------------------------------------------- */

/* Run cli_memory with stdout captured; returns the exit code. */
static int run_memory(int argc, char **argv, char **out)
{
    char path[] = "/tmp/cpsim-mem-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    int rc = cli_memory(argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    FILE *f = fdopen(fd, "r");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    *out = calloc((size_t)n + 1, 1);
    ck_assert_int_eq(fread(*out, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    unlink(path);
    return rc;
}

START_TEST(memory_command)
{
    char wl[32];
    glm_file(wl);
    char desc[64], quant[80];
    gen_description(desc, sizeof desc, "");
    snprintf(quant, sizeof quant, "--quant=%s", desc);
    char *out = NULL;
    char *argv[] = {"memory", wl, "--set", "parallel.layer_sharding=[q_b_proj,o_proj]", quant,
                    "--json", NULL};
    ck_assert_int_eq(run_memory(6, argv, &out), 0);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    ck_assert_msg(j != NULL, "not JSON: %s", je.text);
    ck_assert_str_eq(json_string_value(json_object_get(j, "schema")), "cpsim.memory/1");
    ck_assert_str_eq(json_string_value(json_object_get(j, "scheme")), "dsa_cp");
    ck_assert_str_eq(json_string_value(json_object_get(j, "quant_description")), desc);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(j, "linear_weights_by_type"), "W8A8")), 312);
    ck_assert_int_eq(json_array_size(json_object_get(j, "layer_sharding")), 2);
    json_t *steps = json_object_get(j, "steps");
    ck_assert_int_eq(json_array_size(steps), QS_COUNT);
    double total = json_real_value(json_object_get(j, "materialized_bytes"));
    ck_assert_double_eq(json_real_value(json_object_get(json_array_get(steps, QS_COUNT - 1),
                                                        "total_bytes")), total);
    double fams = 0;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(j, "families_bytes"), k, v)
        fams += json_real_value(json_object_get(v, "total"));
    ck_assert_double_eq_tol(fams, total, 1.0);
    ck_assert_double_gt(json_real_value(json_object_get(j, "window_bytes")), 0);
    json_decref(j);
    free(out);

    char *text[] = {"memory", wl, NULL};
    ck_assert_int_eq(run_memory(2, text, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "plain TP-sharded estimate"));
    ck_assert_ptr_nonnull(strstr(out, "+ DSA CP full layout"));
    ck_assert_ptr_nonnull(strstr(out, "materialized (resident on rank 0)"));
    free(out);

    char *bad[][8] = {{"memory", NULL}, {"memory", wl, "--frobnicate", NULL},
                      {"memory", wl, "--quant", "/nonexistent.json"},
                      {"memory", wl, "--set", "parallel.sp=2", "--set", "parallel.tp=8",
                       "--set=parallel.ep=8"}};
    int nbad[] = {1, 3, 4, 7};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(run_memory(nbad[i], bad[i], &out), CP_EXIT_INPUT);
        free(out);
    }
    unlink(desc);
    unlink(wl);
}
END_TEST

/* ---- simulation -------------------------------------------------------------------- */

static json_t *simulate(const char *wl, const char *const *sets, int nsets, int fold)
{
    drv_req rq = {.workload = wl, .sets = sets, .nsets = nsets, .fold_layers = fold};
    json_t *sm = NULL;
    cp_err err = {0};
    ck_assert_msg(drv_child_run(&rq, &sm, &err) == 0, "%s", err.msg);
    return sm;
}

static double num(json_t *j, const char *key)
{
    return json_number_value(json_object_get(j, key));
}

/* RFC 3.3.2: the plan folded into repeated layers simulates to the same
 * summary as the expanded one (same TTFT, overlap, peaks, messages). */
START_TEST(repetition_equivalence)
{
    scenario s;
    plan p;
    tu_plan(&s, &p, GLM, NULL, 0);
    uint32_t per_layer = 0;
    for (uint32_t i = 0; i < p.progs[0].nops; i++)
        per_layer += p.progs[0].ops[i].layer == 10;
    /* every MoE layer but the first and the last folds into one */
    ck_assert_uint_ge(plan_fold_layers(&p), 72 * (size_t)per_layer);
    plan_free(&p);
    wl_free(&s);
    /* so do the layers of the vLLM-Ascend layout with layer sharding */
    const char *v[] = {"parallel.dsa_cp_layout=vllm_ascend",
                       "parallel.layer_sharding=[q_b_proj,o_proj]"};
    tu_plan(&s, &p, GLM, v, 2);
    ck_assert_uint_ge(plan_fold_layers(&p), 70 * (size_t)per_layer);
    plan_free(&p);
    wl_free(&s);
    char wl[32];
    glm_file(wl);
    json_t *a = tu_fold_identical(wl, NULL, 0);
    unlink(wl);
    ck_assert_double_gt(num(a, "ttft_s"), 0.01);
    json_decref(a);
}
END_TEST

/* The broadcast of layer sharding and the fused KV gather run under
 * compute: overlap appears, and the TTFT stays below the time of compute
 * plus all communication. */
START_TEST(overlap_in_the_timeline)
{
    const char *sets[] = {"parallel.dsa_cp_layout=vllm_ascend",
                          "parallel.layer_sharding=[q_b_proj,o_proj]"};
    char wl[32];
    glm_file(wl);
    json_t *sm = simulate(wl, sets, 2, 1);
    unlink(wl);
    json_t *r0 = json_array_get(json_object_get(sm, "ranks"), 0);
    ck_assert_double_gt(num(r0, "overlap_s"), 0.01);
    ck_assert_double_lt(num(sm, "ttft_s"), num(r0, "compute_s") + num(r0, "comm_s"));
    json_decref(sm);
}
END_TEST

/* Expert parallelism wider than TP (the RFC's DP2 TP16 EP32 on two A3
 * nodes): run and memory accept the same layouts (one validation), the
 * dispatch is an all-to-all over the 32 ranks of both replicas, each rank
 * holds 256 / 32 experts. */
START_TEST(ep_across_replicas)
{
    scenario s;
    plan p;
    const char *sets[] = {"platform.nodes=2", "parallel.dp=2", "parallel.ep=32"};
    tu_plan(&s, &p, GLM, sets, 3);
    ck_assert_int_eq(p.nranks, 32);
    ck_assert_int_eq(plan_group_size(&p.lay, G_EP), 32);
    int members[32], me;
    ck_assert_int_eq(plan_group_members(&p.lay, 0, G_EP, members, 32, &me), 32);
    ck_assert_int_eq(members[16], 16); /* the other replica's first rank */
    const plan_op *d = tu_find(&p, 0, "moe_dispatch", 5);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(d->group, G_EP);
    ck_assert_int_eq(tu_find(&p, 0, "expert_gate_up", 5)->g, 256 / 32);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("dsa");
    TCase *tc = tcase_create("plan");
    tcase_add_checked_fixture(tc, tu_setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, token_layout_contract);
    tcase_add_test(tc, ep_across_replicas);
    tcase_add_test(tc, indexer_split_and_singleton_view);
    tcase_add_test(tc, sp_pass_plain_models);
    tcase_add_test(tc, dsa_cp_what_ifs);
    tcase_add_test(tc, fused_kv_gather_overlaps_q_up);
    tcase_add_test(tc, layer_sharding_broadcast);
    tcase_add_test(tc, decode_router_path);
    tcase_add_test(tc, scheme_refusals);
    suite_add_tcase(s, tc);
    TCase *tq = tcase_create("weights");
    tcase_add_checked_fixture(tq, tu_setup, NULL);
    tcase_set_timeout(tq, 120);
    tcase_add_test(tq, glm_w8a8_accounting);
    tcase_add_test(tq, int_group_accounting);
    tcase_add_test(tq, accounting_rules_without_description);
    tcase_add_test(tq, resident_memo_follows_inputs);
    tcase_add_test(tq, description_refusals);
    tcase_add_test(tq, memory_command);
    suite_add_tcase(s, tq);
    /* no SimGrid in the test process: its children initialise their own */
    TCase *ts = tcase_create("simulation");
    tcase_add_checked_fixture(ts, tu_setup, NULL);
    tcase_set_timeout(ts, 300);
    tcase_add_test(ts, repetition_equivalence);
    tcase_add_test(ts, overlap_in_the_timeline);
    suite_add_tcase(s, ts);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
