/* build: the plan driver (see build.h).
 *
 * The tensor-parallel baseline layer on one TP rank (Megatron-style
 * column/row parallel linears, as vLLM runs them):
 *   add+rms_norm -> qkv_proj (column) [-> q/k norm] -> rope -> kv_write
 *   -> causal flash attention over heads/tp -> o_proj (row) -> all_reduce
 *   -> add+rms_norm -> MLP (gate_up column, silu*mul, down row) or MoE
 *   (router, top-k, experts sharded by TP in the intermediate dimension, or
 *   by EP with all-to-all dispatch/combine and an all-gather of the local
 *   tokens) -> all_reduce
 * plus the vocabulary-parallel embedding (lookup + all_reduce) before the
 * first layer and final norm + LM head on the last token (+ logits
 * all_gather) after the last.  Its pieces are in models/layers/ and models/attn/.
 *
 * Schemes, first that applies: the sequence-parallel / DSA CP scheme of
 * models/seqpar/ when seqpar_scheme() returns one (one program for every rank);
 * with sp > 1 the exchange strategies of models/exchange/ (one program per SP
 * index: shares, KV slots and ring partners differ between SP ranks; each
 * step split or copied by ex_step_splits); else the tensor-parallel scheme.
 *
 * Every tensor the layer creates is allocated and freed with memory ops, so
 * the activation part of the memory timeline follows the real lifetimes.
 */
#include "models/build/build.h"

#include <stdlib.h>
#include <string.h>

#include "models/attn/attn.h"
#include "models/encoder/encoder.h"
#include "models/exchange/exchange.h"
#include "models/memory.h"
#include "models/quant.h"
#include "models/seqpar/seqpar.h"

/* ---- the tensor-parallel scheme ------------------------------------------ */

static void tp_layer(bld *b, int64_t t, int64_t prefix)
{
    layer_decoder(b, t, t, prefix, attn_layer);
}

static const layer_scheme TP_SCHEME = {"tp", layer_embed, tp_layer, layer_final, NULL};

/* ---- the driver ------------------------------------------------------------ */

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

/* The dtype linears compute in: 8-bit weights run 8-bit GEMMs (W8A8 int8
 * and FP8 checkpoints quantise the activations on the fly, per token or per
 * block, models-hardware.md 2.3; em_act_quant), 4-bit weights are
 * dequantised to the activation dtype (weight-only W4A16); otherwise the
 * activation dtype. */
static cp_dtype gemm_dtype(const scenario *s)
{
    if (s->w_dtype == DT_INT8 || s->w_dtype == DT_FP8)
        return s->w_dtype;
    return s->a_dtype;
}

/* The KV pool of kv_pool: preallocate, as vLLM sizes it at start-up
 * (vllm/v1/worker/gpu_worker.py determine_available_memory): the share
 * gpu_memory_utilization of the device less the weights, the engine's
 * reserved memory and workspace, and the torch peak of a profiling run of
 * max_num_batched_tokens tokens (build_profile_peak), not of the steps the
 * workload will run: a step that needs more than the profile takes the
 * device's remaining (1 - gpu_memory_utilization) share, and past it runs
 * out of memory.  The requests' KV then lives inside the pool, so their
 * allocations take no memory of their own (zeroed) and the most they hold
 * at once is kept to check against the pool (plan_prog.kv_need).  A pool
 * below zero is kept at zero: the summary's verdict names the budget. */
static void size_kv_pool(const scenario *s, plan_prog *pg, uint32_t pool_op, double weights)
{
    double kv = 0, kv_peak = 0;
    for (uint32_t i = pool_op + 1; i < pg->nops; i++) {
        plan_op *o = &pg->ops[i];
        if (o->kind != OPK_MEM || o->mem_cat != MC_KV_CACHE)
            continue;
        kv += o->mem_bytes;
        if (kv > kv_peak)
            kv_peak = kv;
        o->mem_bytes = 0;
    }
    double pool = s->mem.gpu_memory_utilization * s->plat.hbm_bytes - weights -
                  s->mem.reserved_bytes - s->mem.workspace_bytes - build_profile_peak(s);
    pg->kv_pool = pool;
    pg->kv_need = kv_peak;
    pg->ops[pool_op].mem_bytes = pool > 0 ? pool : 0;
}

double build_profile_peak(const scenario *s)
{
    scenario prof = *s;
    prof.mem.kv_pool = KVP_ON_DEMAND; /* the profiling run comes before the pool */
    prof.fold_at_build = 0;           /* walked in program order: every layer */
    int64_t m = s->max_num_batched_tokens;
    sc_seq one = {m, 0, 1, 0};
    sc_batch bt = {&one, 1, build_step_splits(s, m)};
    plan p;
    build_step_plan(&prof, &bt, 0, &p);
    double act = 0, peak = 0;
    for (int g = 0; g < p.nprogs; g++) {
        act = 0;
        const plan_prog *pg = &p.progs[g];
        for (uint32_t i = 0; i < pg->nops; i++) {
            const plan_op *o = &pg->ops[i];
            if (o->kind != OPK_MEM || o->step < 0 ||
                (o->mem_cat != MC_ACTIVATIONS && o->mem_cat != MC_COMM_BUFFER &&
                 o->mem_cat != MC_KV_CACHE))
                continue;
            act += o->mem_bytes;
            peak = act > peak ? act : peak;
        }
    }
    plan_free(&p);
    return peak;
}

/* A forward pass of one step; under the exchange scheme (x->P > 1 after
 * ex_init) the step is first declared split or copied, and a split step of
 * a ring exchange given its ring (ex_step_ring; `force` as there).  Records
 * into split[step] whether it ran split and into ring[step] its ring (both
 * may be NULL). */
static void run_step(ex_ctx *x, const layer_scheme *sc, int64_t t, int64_t prefix,
                     plan_ring force, uint8_t *split, uint8_t *ring)
{
    int64_t padded;
    x->b.eager_step = sc_step_launch(x->b.s, t, x->b.prefill, &padded) == PL_EAGER &&
                      x->b.s->graph != GRAPH_EAGER;
    if (x->P > 1) {
        int sp = ex_step_splits(x->b.s, t);
        ex_begin_step(x, t, prefix, sp, ex_step_ring(x->b.s, t, prefix, sp, force));
    }
    if (split)
        split[x->b.step] = sc->splits && sc->splits(&x->b);
    if (ring)
        ring[x->b.step] = (uint8_t)x->ring;
    forward(&x->b, sc, t, prefix);
}

/* The builder's context for a program of SP index sp_index (-1: the one
 * program of every rank), and the program's set-up memory: the weights,
 * the engine's reserved memory and workspace, the KV pool's memory op
 * (*pool_op, sized once the program is built; EM_NONE on demand).
 * `weights` is build_weight_bytes(s), the same for every program of a
 * plan: its callers account it once per plan (a walk over every tensor). */
static void program_begin(ex_ctx *x, const scenario *s, const plan_layout_cfg *lay,
                            plan_prog *pg, int sp_index, double weights, uint32_t *pool_op)
{
    const arch *a = &s->model;
    memset(x, 0, sizeof *x);
    bld *b = &x->b;
    b->s = s;
    b->a = a;
    b->pg = pg;
    b->lay = *lay;
    b->layout = TL_FULL;
    b->tp = s->par.tp;
    b->ep = s->par.ep;
    b->adt = s->a_dtype;
    b->gdt = gemm_dtype(s);
    b->gqs = s->w_qscale;
    /* the MLP linears at precision.mlp_weights (workload.h), by the rule of
     * gemm_dtype: 8-bit weights run 8-bit GEMMs, others the activation dtype */
    int mlp8 = s->mlp_dtype == DT_INT8 || s->mlp_dtype == DT_FP8;
    b->mlp = (em_wprec){mlp8 ? s->mlp_dtype : s->a_dtype, s->mlp_qscale,
                        dtype_bytes(s->mlp_dtype)};
    b->phase = PH_OTHER;
    b->sample = 1;
    b->nsample = 1;
    b->ab = dtype_bytes(s->a_dtype);
    b->wb = dtype_bytes(s->w_dtype);
    b->kvb = dtype_bytes(s->kv_dtype);
    b->last_compute = EM_NONE;
    b->layer = -1;
    b->step = -1; /* set-up before the first step: the weights are resident */
    if (sp_index >= 0)
        ex_init(x, sp_index);

    /* the weights as the engine materialises them (quant.h): shards,
     * float exceptions, scales, derived and replicated tensors, and the
     * audio encoder's when it is loaded (build_weight_bytes) */
    em_mem(b, MC_WEIGHTS, weights, ST_COMPUTE);
    /* what the engine holds beyond tensors (engine.memory) */
    em_mem(b, MC_RESERVED, s->mem.reserved_bytes, ST_COMPUTE);
    em_mem(b, MC_WORKSPACE, s->mem.workspace_bytes, ST_COMPUTE);
    *pool_op = EM_NONE;
    if (s->mem.kv_pool == KVP_PREALLOCATE) {
        em_mem(b, MC_KV_CACHE, 1.0, ST_COMPUTE); /* sized below */
        *pool_op = pg->nops - 1;
    }
}

/* KV bytes of `positions` tokens on this program's rank. */
static double kv_bytes_of(ex_ctx *x, int sp_index, int64_t positions)
{
    const scenario *s = x->b.s;
    if (sp_index >= 0)
        return ex_kv_bytes(x, positions);
    return (double)s->model.layers *
           attn_kv_row_bytes(&s->model, s->par.tp, s->kv_dtype) * (double)positions;
}

/* The program of SP index sp_index (-1: the one program of every rank),
 * each step's split into split[] and ring into ring[] (NULL: not
 * recorded), every split ring step as `force` (PR_NONE: as ex_step_ring
 * picks), or as ring_of[step] says when not NULL (the rings program 0
 * recorded: every program runs the same ones, and the rule prices a block
 * once per step); returns its step count. */
static int32_t build_program(const scenario *s, const plan_layout_cfg *lay, plan_prog *pg,
                             const layer_scheme *sc, int sp_index, double weights,
                             plan_ring force, uint8_t *split, uint8_t *ring,
                             const uint8_t *ring_of)
{
    ex_ctx x;
    uint32_t pool_op;
    program_begin(&x, s, lay, pg, sp_index, weights, &pool_op);
    bld *b = &x.b;

    int32_t step = 0;
    for (int q = 0; q < s->nreqs; q++) {
        const wl_request *rq = &s->reqs[q];
        int64_t cached = rq->cached_tokens;
        b->request = q;
        /* a cached prefix is in the KV cache when the request arrives */
        if (cached > 0) {
            b->layer = -1;
            em_mem(b, MC_KV_CACHE, kv_bytes_of(&x, sp_index, cached), ST_COMPUTE);
        }
        /* the prefill, in chunks of max_num_batched_tokens with chunked
         * prefill: each chunk a full pass whose attention covers the cached
         * prefix and the chunks before it; only the last samples a token */
        int64_t chunk = sc_prefill_chunk(s, q);
        for (int64_t done = 0; done < rq->prompt_tokens; done += chunk) {
            int64_t n = rq->prompt_tokens - done < chunk ? rq->prompt_tokens - done : chunk;
            b->step = step++;
            b->prefill = 1;
            b->sample = done + n == rq->prompt_tokens;
            step_marker(b, rq->arrival_s);
            /* the audio's rows open the prompt: the encoder runs before the
             * step that holds them, the first */
            if (done == 0 && rq->audio_frames > 0)
                enc_audio(b, rq->audio_frames, s->par.sp, s->par.encoder_exchange);
            run_step(&x, sc, n, cached + done, ring_of ? (plan_ring)ring_of[b->step] : force,
                     split, ring);
        }
        b->prefill = 0;
        b->sample = 1;
        int64_t ctx = cached + rq->prompt_tokens;
        for (int64_t i = 0; i < rq->decode_tokens; i++) {
            b->step = step++;
            step_marker(b, rq->arrival_s);
            run_step(&x, sc, 1, ctx + i, ring_of ? (plan_ring)ring_of[b->step] : force, split,
                     ring);
        }
        /* the request leaves: its KV cache is released */
        b->layer = -1;
        em_mem(b, MC_KV_CACHE, -kv_bytes_of(&x, sp_index, ctx + rq->decode_tokens),
               ST_COMPUTE);
    }
    if (pool_op != EM_NONE)
        size_kv_pool(s, pg, pool_op, weights);
    /* folded as soon as built: the next program is built while this one
     * is small (128 unrolled programs of 126 layers would not be) */
    if (s->fold_at_build)
        plan_fold_prog(pg);
    return step;
}

/* The scheme of s and its program count (one per SP index under the
 * exchange scheme); a plan of layout lay with that many programs. */
/* Whether s builds with the exchange scheme: an SP group, or KV stored by
 * position inside the TP group (parallel.dcp), outside the RFC's schemes. */
static int exchange_scheme(const scenario *s)
{
    return !seqpar_scheme(s) && (s->par.sp > 1 || s->par.dcp > 1);
}

static const layer_scheme *plan_begin(const scenario *s, int dp, plan *out, int *nprogs)
{
    const layer_scheme *sc = seqpar_scheme(s);
    *nprogs = !sc && s->par.sp > 1 ? s->par.sp : 1;
    if (!sc)
        sc = exchange_scheme(s) ? ex_scheme() : &TP_SCHEME;

    plan_layout_cfg lay = {.tp = s->par.tp, .sp = s->par.sp, .ep = s->par.ep,
                           .dp = dp, .dcp = s->par.dcp,
                           .devices_per_node = s->plat.devices_per_node,
                           .order = s->par.order};
    plan_init(out, &lay);
    for (int g = 0; g < *nprogs; g++)
        plan_add_prog(out);
    for (int r = 0; r < out->nranks; r++) {
        int tp_i, sp_i, dp_i;
        plan_rank_coords(&lay, r, &tp_i, &sp_i, &dp_i);
        out->prog_of_rank[r] = *nprogs > 1 ? sp_i : 0;
    }
    return sc;
}

double build_encoder_weight_bytes(const scenario *s)
{
    return s->audio_loaded ? enc_audio_weight_bytes(&s->model.audio, s->par.tp,
                                                    dtype_bytes(s->a_dtype))
                           : 0;
}

double build_weight_bytes(const scenario *s)
{
    return quant_resident_bytes(s) + build_encoder_weight_bytes(s);
}

double build_kv_bytes(const scenario *s, int64_t positions)
{
    int exchange = exchange_scheme(s);
    ex_ctx x;
    memset(&x, 0, sizeof x);
    x.b.s = s;
    x.b.a = &s->model;
    x.b.tp = s->par.tp;
    x.b.kvb = dtype_bytes(s->kv_dtype);
    /* SP index 0 holds the most of an uneven stripe (ex_kv_bytes) */
    if (exchange)
        ex_init(&x, 0);
    return kv_bytes_of(&x, exchange ? 0 : -1, positions);
}

int build_step_splits(const scenario *s, int64_t tokens)
{
    return !seqpar_scheme(s) && s->par.sp > 1 && ex_step_splits(s, tokens);
}

void build_step_plan(const scenario *s, const sc_batch *bt, int lockstep, plan *out)
{
    build_step_plan_ring(s, bt, lockstep, PR_NONE, out);
}

void build_step_plan_ring(const scenario *s, const sc_batch *bt, int lockstep, plan_ring force,
                          plan *out)
{
    int nprogs;
    const layer_scheme *sc = plan_begin(s, lockstep ? s->par.dp : 1, out, &nprogs);
    int64_t t = 0, nsample = 0, prefill = 0;
    for (int i = 0; i < bt->n; i++) {
        t += bt->seq[i].tokens;
        nsample += bt->seq[i].sample;
        prefill |= bt->seq[i].tokens > 1;
    }
    out->nrequests = 1;
    out->nsteps = 1;
    out->prefill_steps = cp_xcalloc(2, sizeof *out->prefill_steps);
    out->prefill_steps[0] = (int)prefill;
    out->step_split = cp_xcalloc(2, sizeof *out->step_split);
    out->step_ring = cp_xcalloc(2, sizeof *out->step_ring);
    int64_t prefix = bt->n == 1 ? bt->seq[0].prefix : 0;
    int64_t padded;
    out->launch = (uint8_t)sc_step_launch(s, t, (int)prefill, &padded);
    out->padded_tokens = padded;
    /* one decision for every program (the rule prices a block once) */
    plan_ring ring = nprogs > 1 ? ex_step_ring(s, t, prefix, bt->split, force) : PR_NONE;
    out->step_ring[0] = (uint8_t)ring;
    double weights = build_weight_bytes(s);
    for (int g = 0; g < nprogs; g++) {
        ex_ctx x;
        uint32_t pool_op;
        plan_prog *pg = &out->progs[g];
        program_begin(&x, s, &out->lay, pg, exchange_scheme(s) ? g : -1, weights, &pool_op);
        bld *b = &x.b;
        b->request = 0;
        b->step = 0;
        b->prefill = (uint8_t)prefill;
        b->eager_step = out->launch == PL_EAGER && s->graph != GRAPH_EAGER;
        b->sample = nsample > 0;
        b->nsample = nsample;
        if (bt->n > 1) {
            b->seqs = bt->seq;
            b->nseqs = bt->n;
        }
        step_marker(b, 0.0);
        /* the audio of requests whose first chunk this is, through the
         * encoder before the step's forward (as build_program) */
        for (int i = 0; i < bt->n; i++)
            if (bt->seq[i].audio_frames > 0)
                enc_audio(b, bt->seq[i].audio_frames, s->par.sp, s->par.encoder_exchange);
        if (x.P > 1)
            ex_begin_step(&x, t, prefix, bt->split, ring);
        if (g == 0)
            out->step_split[0] = sc->splits && sc->splits(b);
        /* the GEMMs and kernels run the padded batch; attention the
         * requests themselves (b->seqs) */
        forward(b, sc, padded, prefix);
        if (pool_op != EM_NONE)
            size_kv_pool(s, pg, pool_op, weights);
        if (s->fold_at_build)
            plan_fold_prog(pg);
    }
}

void build_plan(const scenario *s, plan *out)
{
    build_plan_ring(s, PR_NONE, out);
}

plan_ring build_step_ring(const scenario *s, int64_t tokens, int64_t prefix, plan_ring force)
{
    int split = build_step_splits(s, tokens);
    return seqpar_scheme(s) ? PR_NONE : ex_step_ring(s, tokens, prefix, split, force);
}

void build_plan_ring(const scenario *s, plan_ring ring, plan *out)
{
    int nprogs;
    const layer_scheme *sc = plan_begin(s, s->par.dp, out, &nprogs);
    plan_layout_cfg lay = out->lay;
    out->nrequests = s->nreqs;
    out->prefill_steps = cp_xcalloc((size_t)s->nreqs + 1, sizeof *out->prefill_steps);
    int64_t steps = 0;
    for (int q = 0; q < s->nreqs; q++) {
        out->prefill_steps[q] = (int)sc_prefill_steps(s, q);
        steps += out->prefill_steps[q] + s->reqs[q].decode_tokens;
    }
    /* every program takes the same split decisions (ex_step_splits depends
     * on the step's tokens only): program 0 records them */
    out->step_split = cp_xcalloc((size_t)steps + 1, sizeof *out->step_split);
    out->step_ring = cp_xcalloc((size_t)steps + 1, sizeof *out->step_ring);
    double weights = build_weight_bytes(s);
    for (int g = 0; g < nprogs; g++)
        out->nsteps = build_program(s, &lay, &out->progs[g], sc, exchange_scheme(s) ? g : -1,
                                    weights,
                                    ring, g == 0 ? out->step_split : NULL,
                                    g == 0 ? out->step_ring : NULL,
                                    g == 0 ? NULL : out->step_ring);
}
