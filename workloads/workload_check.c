/* workload_check: the combination of a resolved scenario checked before
 * anything is simulated (see workload_int.h): devices, heads, experts,
 * exchanges and their keys, sequence parallelism, DSA, sharding, the
 * plan's size. */
#include "workloads/workload_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/encoder/encoder.h"
#include "models/plan.h"

/* Where a value was written: the node of section.key, else the section,
 * else the workload file. */
static cp_loc wl_loc_of(const scenario *s, const char *section, const char *key)
{
    const ynode *sec = yio_key(yio_root(s->doc), section);
    const ynode *n = yio_key(sec, key);
    if (n)
        return n->loc;
    return sec ? sec->loc : (cp_loc){ s->path, 0, 0 };
}

static int check_devices(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    long long need = (long long)p->tp * p->sp * p->dp;
    int have = plat_devices(&s->plat);
    if (need <= have)
        return 0;
    const char *key = p->tp > 1 ? "tp" : p->sp > 1 ? "sp" : "dp";
    return cp_fail_at(err, wl_loc_of(s, "parallel", key),
                      "parallel: tp*sp*dp = %lld needs %lld devices, platform %s has %d", need,
                      need, s->plat.name, have);
}

static int check_heads(const scenario *s, cp_err *err)
{
    const arch *m = &s->model;
    int tp = s->par.tp;
    cp_loc at = wl_loc_of(s, "parallel", "tp");
    if (m->heads % tp)
        return cp_fail_at(err, at, "parallel.tp: tp = %d does not divide the %lld attention "
                                   "heads of %s", tp, (long long)m->heads, m->name);
    if (m->kv_heads % tp && tp % m->kv_heads)
        return cp_fail_at(err, at, "parallel.tp: tp = %d and the %lld KV heads of %s: one must "
                                   "divide the other", tp, (long long)m->kv_heads, m->name);
    return 0;
}

static int check_experts(const scenario *s, cp_err *err)
{
    const arch *m = &s->model;
    const wl_parallel *p = &s->par;
    cp_loc ep_at = wl_loc_of(s, "parallel", "ep");
    if (!m->has_moe)
        return p->ep > 1 ? cp_fail_at(err, ep_at, "parallel.ep: ep = %d needs a MoE model; %s "
                                                  "has no routed experts", p->ep, m->name)
                         : 0;
    if (p->ep == 1 && m->moe_intermediate % p->tp)
        return cp_fail_at(err, wl_loc_of(s, "parallel", "tp"),
                          "parallel.tp: tp = %d does not divide moe_intermediate_size %lld of "
                          "%s (or shard the experts instead with parallel.ep > 1)",
                          p->tp, (long long)m->moe_intermediate, m->name);
    long long ranks = (long long)p->tp * p->sp * p->dp;
    if (ranks % p->ep)
        return cp_fail_at(err, ep_at, "parallel.ep: ep = %d does not divide tp*sp*dp = %lld",
                          p->ep, ranks);
    if (m->experts % p->ep)
        return cp_fail_at(err, ep_at, "parallel.ep: ep = %d does not divide the %lld experts "
                                      "of %s", p->ep, (long long)m->experts, m->name);
    /* an EP group is ep consecutive ranks (TP fastest): inside a TP group,
     * or whole TP groups (of SP ranks or DP replicas) */
    if (p->ep > 1 && p->tp % p->ep != 0 && p->ep % p->tp != 0)
        return cp_fail_at(err, ep_at,
                          "parallel.ep: an expert-parallel group must lie inside a TP group "
                          "(ep divides tp = %d) or span whole TP groups (tp divides ep); "
                          "got ep = %d", p->tp, p->ep);
    return 0;
}

/* The exchange x kv_storage table of the SP design (cp-exchange.md). */
static int check_exchange(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    wl_exchange ex = p->exchange;
    int by_head = p->kv_storage == KV_BY_HEAD;
    int ok = ex == EX_AUTO || (ex == EX_ULYSSES && by_head) ||
             ((ex == EX_ALL_GATHER || sc_exchange_is_ring(ex)) && !by_head) ||
             (ex == EX_NONE && (!by_head || p->sp == 1));
    if (ok)
        return 0;
    const char *accepted = by_head ? "auto, ulysses (and none when sp = 1)"
                                   : "auto, all_gather, ring, ring_kv, none";
    char needs[96];
    if (ex == EX_NONE)
        snprintf(needs, sizeof needs, "with kv_storage by_head needs sp = 1 (parallel.sp = %d)",
                 p->sp);
    else
        snprintf(needs, sizeof needs, "needs kv_storage %s", by_head ? "by_position" : "by_head");
    return cp_fail_at(err, wl_loc_of(s, "parallel", "exchange"),
                      "parallel.exchange: \"%s\" %s; with kv_storage %s the accepted values are "
                      "%s", wl_exchange_names[ex], needs, wl_kv_storage_names[p->kv_storage],
                      accepted);
}

/* Ulysses turns token-split q/k/v into head-split: the heads of a TP rank
 * must divide by sp. */
static int check_ulysses(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    int ulysses = p->sp > 1 && p->kv_storage == KV_BY_HEAD &&
                  (p->exchange == EX_ULYSSES || p->exchange == EX_AUTO);
    long long per_rank = (long long)s->model.heads / p->tp;
    if (!ulysses || per_rank % p->sp == 0)
        return 0;
    return cp_fail_at(err, wl_loc_of(s, "parallel", "sp"),
                      "parallel.sp: Ulysses (exchange %s, kv_storage by_head) spreads the %lld "
                      "heads of a TP rank (%lld heads / tp %d) over sp = %d, which does not "
                      "divide them", wl_exchange_names[p->exchange], per_rank,
                      (long long)s->model.heads, p->tp, p->sp);
}

/* Where the first request entry with audio_s wrote it (the workload file
 * when none). */
static cp_loc audio_loc(const scenario *s)
{
    const ynode *rq = yio_key(yio_root(s->doc), "requests");
    for (size_t i = 0; rq && i < rq->n; i++) {
        const ynode *at = yio_key(rq->kids[i], "audio_s");
        if (at)
            return at->loc;
    }
    return (cp_loc){ s->path, 0, 0 };
}

/* Requests with audio need the model's audio encoder, room in the prompt
 * for the audio's rows, an encoder whose heads split over TP, and an
 * encoder exchange that applies. */
static int check_audio(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    const arch_audio *au = &s->model.audio;
    const ynode *key = yio_key(yio_key(yio_root(s->doc), "parallel"), "encoder_exchange");
    if (!s->audio_loaded)
        return key ? cp_fail_at(err, key->loc, "parallel.encoder_exchange: says how the audio "
                                "encoder runs over the SP group; no request carries audio_s")
                   : 0;
    if (au->layers == 0)
        return cp_fail_at(err, audio_loc(s), "audio_s: %s has no audio encoder cpsim models "
                          "(a thinker_config.audio_config of model_type "
                          "qwen3_omni_moe_audio_encoder)", s->model.name);
    for (int i = 0; i < s->nreqs + s->nstreams; i++) {
        int64_t frames = i < s->nreqs ? s->reqs[i].audio_frames
                                      : s->streams[i - s->nreqs].audio_frames;
        int64_t prompt = i < s->nreqs ? s->reqs[i].prompt_tokens
                                      : s->streams[i - s->nreqs].prompt_tokens;
        if (frames == 0)
            continue;
        int64_t rows = enc_audio_shape(au, frames).rows;
        if (rows > prompt)
            return cp_fail_at(err, audio_loc(s), "audio_s: %.2f s of audio are %lld prompt rows "
                              "(%lld mel frames), more than the request's "
                              "prompt_tokens %lld, which count them", (double)frames /
                              ENC_FRAMES_PER_S, (long long)rows, (long long)frames,
                              (long long)prompt);
    }
    /* vLLM's QKVParallelLinear divides the heads over TP (divide() asserts) */
    if (au->heads % p->tp)
        return cp_fail_at(err, wl_loc_of(s, "parallel", "tp"), "parallel.tp: tp = %d does not "
                          "divide the %lld heads of %s's audio encoder, which run over TP "
                          "(requests with audio_s need a tp that divides them)", p->tp,
                          (long long)au->heads, s->model.name);
    if (p->encoder_exchange != ENCX_ULYSSES)
        return 0;
    int exch = p->sp > 1 && !p->sequence_parallel && !sc_dsa_cp(s);
    if (!exch)
        return cp_fail_at(err, key->loc, "parallel.encoder_exchange: ulysses splits the audio "
                          "encoder over the SP group; this node has %s", p->sp > 1 ?
                          "the RFC's sequence parallelism over TP" : "sp = 1");
    long long per_rank = (long long)au->heads / p->tp;
    if (per_rank % p->sp)
        return cp_fail_at(err, key->loc, "parallel.encoder_exchange: ulysses spreads the %lld "
                          "audio-encoder heads of a TP rank (%lld / tp %d) over sp = %d, which "
                          "does not divide them (use none)", per_rank, (long long)au->heads,
                          p->tp, p->sp);
    return 0;
}

static int check_engine(const scenario *s, cp_err *err)
{
    if (s->chunked_prefill && s->par.sp > 1)
        return cp_fail_at(err, wl_loc_of(s, "engine", "chunked_prefill"),
                          "engine.chunked_prefill: chunked prefill is off on SP nodes "
                          "(parallel.sp = %d)", s->par.sp);
    const ynode *eng = yio_key(yio_root(s->doc), "engine");
    /* vLLM refuses it too: SchedulerConfig._verify_args, "max_num_batched_tokens
     * (...) must be greater than or equal to max_num_seqs (...)" (vllm/config.py;
     * vllm/config/scheduler.py since v0.10) */
    if (s->chunked_prefill && s->max_num_batched_tokens < s->max_num_seqs)
        return cp_fail_at(err, wl_loc_of(s, "engine", yio_key(eng, "max_num_batched_tokens")
                                                      ? "max_num_batched_tokens"
                                                      : "max_num_seqs"),
                          "engine.max_num_batched_tokens: %lld is below engine.max_num_seqs "
                          "(%lld); a step could not hold a token of every running request, "
                          "and vLLM refuses it (raise max_num_batched_tokens or lower "
                          "max_num_seqs)", (long long)s->max_num_batched_tokens,
                          (long long)s->max_num_seqs);
    if (yio_key(eng, "router") && (s->par.dp <= 1 || !s->serving))
        return cp_fail_at(err, wl_loc_of(s, "engine", "router"),
                          "engine.router: how the parallel.dp replicas of a serving run share "
                          "its requests; this run has %s (drop the key)",
                          s->par.dp <= 1 ? "one replica" : "a single request");
    if (!s->chunked_prefill && yio_key(eng, "max_num_batched_tokens"))
        return cp_fail_at(err, wl_loc_of(s, "engine", "max_num_batched_tokens"),
                          "engine.max_num_batched_tokens: the chunk size of chunked prefill; "
                          "set engine.chunked_prefill: true, or drop the key");
    return 0;
}

/* Keys of one exchange given with another: they would change nothing, so
 * they are refused (the strategy they belong to is named). */
static int check_exchange_keys(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    const ynode *par = yio_key(yio_root(s->doc), "parallel");
    const char *ex = wl_exchange_names[p->exchange], *kv = wl_kv_storage_names[p->kv_storage];
    if (yio_key(par, "all_gather_tensors") && p->all_gather_tensors != AGT_QKV &&
        p->exchange != EX_ALL_GATHER)
        return cp_fail_at(err, wl_loc_of(s, "parallel", "all_gather_tensors"),
                          "parallel.all_gather_tensors: says what the all_gather exchange "
                          "gathers; this node runs exchange %s with kv_storage %s (set "
                          "exchange: all_gather with kv_storage: by_position, or drop the key)",
                          ex, kv);
    if (yio_key(par, "all_gather_merge") && p->all_gather_merge != AGM_ALL_ROWS &&
        (p->exchange != EX_ALL_GATHER || p->all_gather_tensors != AGT_QKV))
        return cp_fail_at(err, wl_loc_of(s, "parallel", "all_gather_merge"),
                          "parallel.all_gather_merge: says how the all_gather exchange of q, k "
                          "and v merges its partials; this node runs exchange %s with "
                          "all_gather_tensors %s", ex, wl_agt_names[p->all_gather_tensors]);
    if (yio_key(par, "embed") && p->embed_share &&
        !(p->kv_storage == KV_BY_HEAD || p->exchange == EX_ALL_GATHER ||
          sc_exchange_is_ring(p->exchange)))
        return cp_fail_at(err, wl_loc_of(s, "parallel", "embed"),
                          "parallel.embed: share cuts a split step's tokens before the "
                          "embedding; exchange %s with kv_storage %s never splits a step", ex,
                          kv);
    int ring = sc_exchange_is_ring(p->exchange);
    if (yio_key(par, "ring_overlap") && p->ring_overlap && !ring)
        return cp_fail_at(err, wl_loc_of(s, "parallel", "ring_overlap"),
                          "parallel.ring_overlap: overlaps the hops of the ring exchanges "
                          "(ring, ring_kv); this node runs exchange %s", ex);
    if (p->decode != DEC_DCP && (!ring || p->kv_storage != KV_BY_POSITION || p->sp <= 1))
        return cp_fail_at(err, wl_loc_of(s, "parallel", "decode"),
                          "parallel.decode: %s is the ring's decode (exchange ring or ring_kv "
                          "over kv_storage by_position, sp > 1); this node runs exchange %s "
                          "with %s storage and sp %d", wl_decode_names[p->decode], ex,
                          wl_kv_storage_name(p->kv_storage), p->sp);
    /* the rings split by KV ownership: a rank's share is the positions it
     * stores, striped (x % P) or zigzag (chunks r and 2P-1-r); a contiguous
     * split would leave the last rank most of the causal work */
    if (yio_key(par, "split") && ring && p->split == SPLIT_CONTIGUOUS)
        return cp_fail_at(err, wl_loc_of(s, "parallel", "split"),
                          "parallel.split: the ring exchanges (ring, ring_kv) split by the KV "
                          "positions each rank stores, striped or zigzag, not contiguous");
    if (yio_key(par, "ring_select") && p->ring_select != RS_FIXED && !ring)
        return cp_fail_at(err, wl_loc_of(s, "parallel", "ring_select"),
                          "parallel.ring_select: %s picks pass-KV or pass-Q for the split steps "
                          "of a ring exchange (exchange: ring or ring_kv with kv_storage: "
                          "by_position); this node runs exchange %s with kv_storage %s",
                          wl_ring_select_names[p->ring_select], ex, kv);
    return 0;
}

/* A split step's attention covers the request's cached prefix (the KV of
 * the cached_tokens, already in each rank's share).  The rings, Ulysses
 * (every position of the rank's heads) and all_gather of q/k/v (every query
 * over the rank's own slots) read it where it is stored; all_gather of k/v
 * gathers the step's K/V alone, so its split steps would miss the prefix:
 * refused, naming the first request that would run such a step. */
static int check_split_prefix(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    if (p->sp <= 1 || p->kv_storage != KV_BY_POSITION || p->exchange != EX_ALL_GATHER ||
        p->all_gather_tensors != AGT_KV)
        return 0;
    long long cached = 0, prompt = 0;
    int q = -1;
    for (int i = 0; i < s->nreqs && q < 0; i++)
        if (s->reqs[i].cached_tokens > 0 && s->reqs[i].prompt_tokens >= p->min_tokens &&
            s->reqs[i].prompt_tokens >= p->sp) {
            q = i;
            cached = s->reqs[i].cached_tokens;
            prompt = s->reqs[i].prompt_tokens;
        }
    for (int i = 0; i < s->nstreams && q < 0; i++)
        if (s->streams[i].cached_tokens > 0 && s->streams[i].prompt_tokens >= p->min_tokens &&
            s->streams[i].prompt_tokens >= p->sp) {
            q = s->nreqs + i;
            cached = s->streams[i].cached_tokens;
            prompt = s->streams[i].prompt_tokens;
        }
    if (q < 0)
        return 0;
    char who[64];
    if (q < s->nreqs)
        snprintf(who, sizeof who, "request %d", q);
    else
        snprintf(who, sizeof who, "closed-loop source %d", q - s->nreqs);
    return cp_fail_at(err, wl_loc_of(s, "parallel", "all_gather_tensors"),
                      "parallel.all_gather_tensors: kv gathers a split step's own K/V only, so "
                      "a split prefill after a cached prefix (%s: cached_tokens %lld, "
                      "prompt_tokens %lld) would miss the prefix's keys; use all_gather_tensors: "
                      "qkv or exchange: ring / ring_kv, or raise parallel.min_tokens above the "
                      "prompt", who, cached, prompt);
}

/* Sequence parallelism over the TP group (and DSA CP) runs with sp = 1;
 * layer sharding needs DSA CP, which alone gives every rank the listed
 * projections' full layout. */
static int check_seqpar(const scenario *s, cp_err *err)
{
    int cp = sc_dsa_cp(s);
    if ((s->par.sequence_parallel || cp) && s->par.sp > 1)
        return cp_fail_at(err, wl_loc_of(s, "parallel", "sp"),
                          "parallel.sp: sequence parallelism over the TP group%s runs with "
                          "sp = 1; with sp = %d the exchange strategies shard the tokens (set "
                          "sequence_parallel: false and dsa_cp: off, or sp: 1)",
                          cp ? " (DSA CP)" : "", s->par.sp);
    if (s->par.n_layer_sharding > 0 && !cp)
        return cp_fail_at(err, wl_loc_of(s, "parallel", "layer_sharding"),
                          "parallel.layer_sharding: layer sharding distributes full-layout "
                          "projections, which only DSA CP gives every rank (sequence_parallel: "
                          "true on a model with a DSA indexer, dsa_cp not off)");
    return 0;
}

/* What the exchange strategies (sp > 1) can describe: any attention family
 * over position storage; by-head storage (Ulysses, the head slice) moves
 * KV heads, which MLA's one latent head cannot split; a ring of at most 128
 * ranks (plan_op's send_off / recv_off are int8: peers up to 127 places
 * away); pass-Q decode of dense attention (a DSA decode selects its keys
 * over every rank's index keys first, which the DCP merge does). */
static int check_sp_attention(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    if (p->sp <= 1 || s->par.sequence_parallel || sc_dsa_cp(s))
        return 0;
    if (s->model.attn == ATTN_MLA && p->kv_storage == KV_BY_HEAD)
        return cp_fail_at(err, wl_loc_of(s, "parallel", "kv_storage"),
                          "parallel.kv_storage: by_head splits the KV heads over the SP ranks; "
                          "%s uses MLA, whose cache is one latent head per position (set "
                          "kv_storage: by_position, with exchange all_gather, ring, ring_kv or "
                          "none)", s->model.name);
    if (sc_exchange_is_ring(p->exchange) && p->sp > 128)
        return cp_fail_at(err, wl_loc_of(s, "parallel", "sp"),
                          "parallel.sp = %d: the ring exchanges address at most 128 SP ranks",
                          p->sp);
    if (s->model.has_dsa && p->decode == DEC_PASS_Q)
        return cp_fail_at(err, wl_loc_of(s, "parallel", "decode"),
                          "parallel.decode: pass_q passes dense decode queries; %s's DSA "
                          "selects each query's top-k keys over every rank's index keys first "
                          "(use decode: dcp or auto, which run the DCP merge for DSA)",
                          s->model.name);
    return 0;
}

/* parallel.dcp (models/exchange/dcp_tp.c): vLLM's conditions
 * (config/parallel.py and model.py verify_with_parallel_config) and what
 * the strategies describe. */
static int check_dcp_layout(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    const arch *m = &s->model;
    cp_loc at = wl_loc_of(s, "parallel", "dcp");
    int D = p->dcp;
    if (p->tp % D)
        return cp_fail_at(err, at,
                          "parallel.dcp = %d: a DCP group is dcp ranks of one TP group, so dcp "
                          "must divide tp = %d", D, p->tp);
    if (m->attn == ATTN_MLA)
        return 0;
    long long kvh = (long long)m->kv_heads;
    if (p->tp <= kvh)
        return cp_fail_at(err, at,
                          "parallel.dcp = %d: DCP splits the positions of a KV head over the TP "
                          "ranks that hold copies of it; %s has %lld KV heads and tp = %d "
                          "replicates none (vLLM needs tp > the KV heads)", D, m->name, kvh,
                          p->tp);
    if (D > p->tp / kvh)
        return cp_fail_at(err, at,
                          "parallel.dcp = %d exceeds tp / KV heads = %lld, the TP ranks that "
                          "share a KV head of %s", D, p->tp / kvh, m->name);
    if ((m->heads / kvh) % D)
        return cp_fail_at(err, at,
                          "parallel.dcp = %d does not divide the %lld query heads of a KV head "
                          "of %s", D, (long long)m->heads / kvh, m->name);
    return 0;
}

static int check_dcp(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    cp_loc at = wl_loc_of(s, "parallel", "dcp");
    int D = p->dcp;
    if (D <= 1)
        return 0;
    if (check_dcp_layout(s, err) < 0)
        return -1;
    if (s->model.has_dsa)
        return cp_fail_at(err, at,
                          "parallel.dcp = %d: DCP on a model with a DSA indexer (%s) is not "
                          "modelled (each query's top-k over the DCP ranks' index keys); use "
                          "dcp: 1", D, s->model.name);
    if (p->sequence_parallel || sc_dsa_cp(s))
        return cp_fail_at(err, at,
                          "parallel.dcp = %d with sequence_parallel or dsa_cp (the RFC's "
                          "schemes over the TP group) is not modelled; use dcp: 1", D);
    if (p->sp <= 1)
        return 0;
    if (p->kv_storage != KV_BY_POSITION)
        return cp_fail_at(err, at,
                          "parallel.dcp = %d stores the KV by position inside the TP group; "
                          "with sp = %d the SP group must store it by position too "
                          "(kv_storage: by_position)", D, p->sp);
    if (sc_exchange_is_ring(p->exchange))
        return cp_fail_at(err, at,
                          "parallel.dcp = %d: the rings (exchange %s) keep an SP rank's slots "
                          "whole on its TP group; use exchange all_gather with "
                          "all_gather_tensors: kv (vllm-ascend's PCP), auto or none", D,
                          wl_exchange_names[p->exchange]);
    if (p->exchange == EX_ALL_GATHER && p->all_gather_tensors == AGT_QKV)
        return cp_fail_at(err, at,
                          "parallel.dcp = %d: all_gather_tensors qkv runs the copied path's "
                          "DCP merge over the SP group alone; with dcp > 1 set "
                          "all_gather_tensors: kv (each rank attends its queries over the "
                          "gathered K/V, vllm-ascend's PCP)", D);
    return 0;
}

/* engine.role: prefill runs each request's prefill and first token; its
 * decode is the decode node's. */
static int check_role(const scenario *s, cp_err *err)
{
    if (!s->prefill_node)
        return 0;
    cp_loc at = wl_loc_of(s, "engine", "role");
    for (int i = 0; i < s->nreqs; i++)
        if (s->reqs[i].decode_tokens > 0)
            return cp_fail_at(err, at,
                              "engine.role: prefill runs the prefills (the decode node takes "
                              "the KV after the first token); request %d asks for %lld decode "
                              "tokens (set decode_tokens: 0)", i,
                              (long long)s->reqs[i].decode_tokens);
    for (int i = 0; i < s->nstreams; i++)
        if (s->streams[i].decode_tokens > 0)
            return cp_fail_at(err, at,
                              "engine.role: prefill runs the prefills (the decode node takes "
                              "the KV after the first token); stream %d asks for %lld decode "
                              "tokens (set decode_tokens: 0)", i,
                              (long long)s->streams[i].decode_tokens);
    return 0;
}

static int check_dsa(const scenario *s, cp_err *err)
{
    if (s->par.dsa_cp == 1 && !s->model.has_dsa)
        return cp_fail_at(err, wl_loc_of(s, "parallel", "dsa_cp"),
                          "parallel.dsa_cp: on needs a model with a DSA indexer (index_topk in "
                          "its config); %s has none", s->model.name);
    return 0;
}

/* Every sharded projection must exist: all but o_proj are MLA's, and the q
 * ones need a q LoRA (q_lora_rank > 0). */
static int check_sharding(const scenario *s, cp_err *err)
{
    const wl_parallel *p = &s->par;
    const arch *m = &s->model;
    for (int i = 0; i < p->n_layer_sharding; i++) {
        const char *t = p->layer_sharding[i];
        char lacks[200] = "";
        if (strcmp(t, "o_proj") != 0 && m->attn != ATTN_MLA)
            snprintf(lacks, sizeof lacks, "an MLA model; %s uses GQA attention", m->name);
        else if ((strcmp(t, "q_b_proj") == 0 || strcmp(t, "q_a_proj") == 0) && m->q_lora_rank <= 0)
            snprintf(lacks, sizeof lacks, "q_lora_rank > 0; %s projects q directly "
                                          "(q_lora_rank = 0)", m->name);
        if (!lacks[0])
            continue;
        const ynode *list = yio_key(yio_key(yio_root(s->doc), "parallel"), "layer_sharding");
        return cp_fail_at(err, list->kids[i]->loc, "parallel.layer_sharding.%d: %s needs %s", i,
                          t, lacks);
    }
    return 0;
}

/* Ops one step puts in a program per decoder layer, at most: the bundled
 * workloads' plans (cpsim validate: ops / steps / programs / layers) hold
 * 42-45 on GQA models and 103-106 on MLA + DSA + MoE ones; 1.5x that. */
#define PLAN_OPS_PER_LAYER_GQA 64
#define PLAN_OPS_PER_LAYER_MLA 160
#define PLAN_OPS_PER_STEP 64              /* embedding, LM head, markers */
/* Host memory one op takes: its plan_op in each program (352 bytes,
 * sweep_spec.c's static assert) and an event of up to 40 bytes per rank
 * (sim/engine/events.h eng_event / eng_mem). */
#define PLAN_OP_BYTES 352.0
#define PLAN_EVENT_BYTES 40.0
/* The most host memory a plan and its events may take: a third of the
 * 24 GiB of the machines cpsim is developed on. */
#define PLAN_BYTES_MAX (8.0 * 1024 * 1024 * 1024)

/* Bound the plan before building it: a million decode tokens would need
 * ~650 KB per step and abort in an allocation or meet the OOM killer.  The
 * message names the key that adds the most steps. */
static int check_plan_size(const scenario *s, cp_err *err)
{
    if (s->serving)
        return 0;               /* the serving scheduler builds one step at a time */
    const wl_parallel *p = &s->par;
    int nprogs = p->sp > 1 && !p->sequence_parallel && !sc_dsa_cp(s) ? p->sp : 1;
    double ranks = (double)p->tp * p->sp * p->dp;
    double per_layer = s->model.attn == ATTN_MLA ? PLAN_OPS_PER_LAYER_MLA : PLAN_OPS_PER_LAYER_GQA;
    double step_ops = (double)s->model.layers * per_layer + PLAN_OPS_PER_STEP;
    double steps = 0, most_decode = 0, most_chunks = 0;
    int decode_req = 0, chunk_req = 0;
    for (int q = 0; q < s->nreqs; q++) {
        double chunks = (double)sc_prefill_steps(s, q);
        double decode = (double)s->reqs[q].decode_tokens;
        steps += chunks + decode;
        if (decode > most_decode) {
            most_decode = decode;
            decode_req = q;
        }
        if (chunks > most_chunks) {
            most_chunks = chunks;
            chunk_req = q;
        }
    }
    double bytes = steps * step_ops * (nprogs * PLAN_OP_BYTES + ranks * PLAN_EVENT_BYTES);
    if (bytes <= PLAN_BYTES_MAX)
        return 0;
    char key[64];
    cp_loc loc;
    if (most_decode >= most_chunks && most_decode >= s->nreqs) {
        snprintf(key, sizeof key, "requests.%d.decode_tokens", decode_req);
        const ynode *rq = yio_key(yio_root(s->doc), "requests");
        const ynode *at = rq && (size_t)decode_req < rq->n
                              ? yio_key(rq->kids[decode_req], "decode_tokens") : NULL;
        loc = at ? at->loc : (cp_loc){ s->path, 0, 0 };
    } else if (most_chunks >= s->nreqs) {
        snprintf(key, sizeof key, "engine.max_num_batched_tokens (requests.%d)", chunk_req);
        loc = wl_loc_of(s, "engine", "max_num_batched_tokens");
    } else {
        snprintf(key, sizeof key, "requests (%d of them)", s->nreqs);
        const ynode *at = yio_key(yio_root(s->doc), "requests");
        loc = at ? at->loc : (cp_loc){ s->path, 0, 0 };
    }
    return cp_fail_at(err, loc,
                      "%s: the plan would hold %.0f steps of ~%.0f ops on %.0f ranks, about "
                      "%.1f GB of host memory; cpsim builds plans of at most %.1f GB (fewer "
                      "decode tokens, requests or prefill chunks)", key, steps, step_ops, ranks,
                      bytes / 1e9, PLAN_BYTES_MAX / 1e9);
}

/* Checks that need the model and the platform.  A prompt longer than the
 * model's max_context is accepted on purpose (what-if studies) and warned
 * (workload.c context_warning). */
int wl_validate(const scenario *s, cp_err *err)
{
    if (check_devices(s, err) < 0 || check_heads(s, err) < 0 || check_experts(s, err) < 0 ||
        check_exchange(s, err) < 0 || check_exchange_keys(s, err) < 0 ||
        check_split_prefix(s, err) < 0 || check_sp_attention(s, err) < 0 ||
        check_dcp(s, err) < 0 || check_role(s, err) < 0 ||
        check_ulysses(s, err) < 0 || check_audio(s, err) < 0 || check_engine(s, err) < 0 ||
        check_dsa(s, err) < 0 || check_sharding(s, err) < 0 || check_seqpar(s, err) < 0 ||
        check_plan_size(s, err) < 0)
        return -1;
    return 0;
}

