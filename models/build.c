/* build: the tensor-parallel baseline plan (see build.h).
 *
 * One decoder layer on one TP rank (Megatron-style column/row parallel
 * linears, as vLLM runs them):
 *   add+rms_norm -> qkv_proj (column) [-> q/k norm] -> rope -> kv_write
 *   -> causal flash attention over heads/tp -> o_proj (row) -> all_reduce
 *   -> add+rms_norm -> MLP (gate_up column, silu*mul, down row) or MoE
 *   (router, top-k, experts sharded by TP in the intermediate dimension, or
 *   by EP with all-to-all dispatch/combine and an all-gather of the local
 *   tokens) -> all_reduce
 * plus the vocabulary-parallel embedding (lookup + all_reduce) before the
 * first layer and final norm + LM head on the last token (+ logits
 * all_gather) after the last.
 *
 * Every tensor the layer creates is allocated and freed with memory ops, so
 * the activation part of the memory timeline follows the real lifetimes.
 */
#include "models/build.h"

#include <string.h>

#include "models/layers.h"
#include "models/memory.h"
#include "models/seqpar.h"

/* ---- the tensor-parallel scheme ------------------------------------------ */

/* Vocabulary-parallel embedding: each rank looks up its slice of the
 * vocabulary, an all-reduce assembles the rows.  Leaves the residual stream
 * and the embedding [t, h] allocated. */
static void tp_embed(bld *b, int64_t t)
{
    const arch *a = b->a;
    int64_t h = a->hidden;
    double th = (double)t * h * b->ab;
    em_act_alloc(b, th); /* residual stream */
    em_act_alloc(b, th); /* layer output / embedding */
    em_compute(b, "embedding", KC_EMBEDDING, 0, 2.0 * th, shp(1, t, 0, 0),
               shp(2, a->vocab / b->tp, h, 0), shp(2, t, h, 0));
    em_coll(b, "embed_all_reduce", CK_ALL_REDUCE, G_TP, th, shp(2, t, h, 0));
}

/* One decoder layer; consumes the previous layer's output and leaves its
 * own [t, h] allocated. */
static void tp_layer(bld *b, int64_t t, int64_t prefix)
{
    const arch *a = b->a;
    int64_t h = a->hidden;
    double th = (double)t * h * b->ab;
    em_act_alloc(b, th);
    em_rms_norm(b, "input_norm", t, h, b->layer > 0);
    em_act_free(b, th); /* previous layer output (or embedding) */
    if (a->attn == ATTN_MLA)
        layer_attention_mla(b, t, prefix);
    else
        layer_attention_gqa(b, t, prefix);
    em_act_free(b, th); /* normalized input, consumed by the projections */
    em_act_alloc(b, th);
    em_rms_norm(b, "post_attn_norm", t, h, 1);
    em_act_free(b, th); /* attention output */
    layer_ffn(b, t);
    em_act_free(b, th); /* normalized FFN input */
}

/* Final norm and the LM head on the last token (a prefill samples one
 * token); the vocabulary-parallel logits are gathered.  Frees the residual
 * stream and the last layer's output. */
static void tp_final(bld *b, int64_t t)
{
    const arch *a = b->a;
    int64_t h = a->hidden;
    double th = (double)t * h * b->ab;
    em_act_alloc(b, th);
    em_rms_norm(b, "final_norm", t, h, 1);
    em_act_free(b, th); /* last layer output */
    int64_t v = a->vocab / b->tp;
    em_act_alloc(b, (double)v * 4.0);
    em_gemm(b, "lm_head", 1, h, v, 1);
    em_act_alloc(b, (double)a->vocab * 4.0);
    em_coll(b, "logits_all_gather", CK_ALL_GATHER, G_TP, (double)a->vocab * 4.0,
            shp(2, 1, a->vocab, 0));
    em_compute(b, "sample", KC_TOPK, (double)a->vocab, (double)a->vocab * 4.0,
               shp(2, 1, a->vocab, 0), shp(0, 0, 0, 0), shp(1, 1, 0, 0));
    em_act_free(b, (double)a->vocab * 4.0);
    em_act_free(b, (double)v * 4.0);
    em_act_free(b, th); /* normalized final hidden */
    em_act_free(b, th); /* residual */
}

static const layer_scheme TP_SCHEME = {"tp", tp_embed, tp_layer, tp_final};

/* One forward pass over t new tokens after `prefix` cached tokens. */
static void forward(bld *b, const layer_scheme *sc, int64_t t, int64_t prefix)
{
    b->layer = -1;
    sc->embed(b, t);
    for (int32_t l = 0; l < b->a->layers; l++) {
        b->layer = l;
        sc->layer(b, t, prefix);
    }
    b->layer = -1;
    sc->final(b, t);
}

static void step_marker(bld *b, double arrival)
{
    plan_op o = {0};
    o.name = "step";
    o.kind = OPK_STEP;
    o.stream = ST_COMPUTE;
    o.arrival_s = arrival;
    b->layer = -1;
    em_emit(b, &o);
}

int build_ranks(const scenario *s)
{
    return s->par.tp * s->par.sp * s->par.dp;
}

static cp_dtype gemm_dtype(const scenario *s)
{
    int w8 = dtype_bytes(s->w_dtype) <= 1.0, a8 = dtype_bytes(s->a_dtype) <= 1.0;
    return (w8 && a8) ? s->w_dtype : s->a_dtype;
}

int build_plan(const scenario *s, plan *out, cp_err *err)
{
    const arch *a = &s->model;
    if (s->par.sp > 1)
        return cp_fail(err, CP_EXIT_INPUT,
                       "parallel.sp = %d: sequence-parallel exchange strategies are "
                       "not available in this build of cpsim (use sp: 1)",
                       s->par.sp);
    if (s->par.ep > 1 && s->par.tp % s->par.ep != 0)
        return cp_fail(err, CP_EXIT_INPUT,
                       "parallel.ep = %d must divide parallel.tp = %d (experts are "
                       "spread over the ranks that share the tokens)",
                       s->par.ep, s->par.tp);

    plan_layout_cfg lay = {.tp = s->par.tp, .sp = s->par.sp, .ep = s->par.ep,
                           .dp = s->par.dp, .devices_per_node = s->plat.devices_per_node};
    plan_init(out, &lay);
    int g = plan_add_prog(out);
    for (int r = 0; r < out->nranks; r++)
        out->prog_of_rank[r] = g;

    bld b = {0};
    b.s = s;
    b.a = a;
    b.pg = &out->progs[g];
    b.lay = lay;
    b.layout = TL_FULL;
    b.tp = s->par.tp;
    b.ep = s->par.ep;
    b.adt = s->a_dtype;
    b.gdt = gemm_dtype(s);
    b.ab = dtype_bytes(s->a_dtype);
    b.wb = dtype_bytes(s->w_dtype);
    b.kvb = dtype_bytes(s->kv_dtype);
    b.last_compute = EM_NONE;
    b.layer = -1;
    b.step = -1; /* set-up before the first step: the weights are resident */

    const layer_scheme *sc = seqpar_scheme(s);
    if (!sc)
        sc = &TP_SCHEME;

    mem_weights w;
    mem_weights_per_rank(a, (mem_shard){.tp = s->par.tp, .ep = s->par.ep}, s->w_dtype, &w);
    em_mem(&b, MC_WEIGHTS, w.total, ST_COMPUTE);

    int32_t step = 0;
    for (int q = 0; q < s->nreqs; q++) {
        const wl_request *rq = &s->reqs[q];
        double kv_per_token = (double)a->layers *
                              mem_kv_bytes_per_token_layer(a, s->par.tp, s->kv_dtype);
        b.request = q;
        b.step = step++;
        step_marker(&b, rq->arrival_s);
        forward(&b, sc, rq->prompt_tokens, 0);
        for (int64_t i = 0; i < rq->decode_tokens; i++) {
            b.step = step++;
            step_marker(&b, rq->arrival_s);
            forward(&b, sc, 1, rq->prompt_tokens + i);
        }
        /* the request leaves: its KV cache is released */
        b.layer = -1;
        em_mem(&b, MC_KV_CACHE,
            -kv_per_token * (double)(rq->prompt_tokens + rq->decode_tokens), ST_COMPUTE);
    }
    out->nsteps = step;
    out->nrequests = s->nreqs;
    return 0;
}
