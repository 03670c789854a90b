/* scenario: the scenario's own predicates (see scenario.h). */
#include "models/scenario.h"

#include <string.h>

int64_t sc_prefill_chunk(const scenario *s, int q)
{
    return s->chunked_prefill ? s->max_num_batched_tokens : s->reqs[q].prompt_tokens;
}

int64_t sc_prefill_steps(const scenario *s, int q)
{
    int64_t chunk = sc_prefill_chunk(s, q);
    return (s->reqs[q].prompt_tokens + chunk - 1) / chunk;
}

int sc_slo_met(const scenario *s, int cls, double ttft, double tpot)
{
    if (!s->slo_given)
        return 1;
    const wl_slo *o = cls >= 0 && cls < s->nclasses ? &s->slo_cls[cls] : &s->slo;
    return (o->ttft_s <= 0 || ttft <= o->ttft_s) && (o->tpot_s <= 0 || tpot <= o->tpot_s);
}

int sc_dsa_cp(const scenario *s)
{
    if (s->par.dsa_cp >= 0)
        return s->par.dsa_cp == 1;
    return s->par.sequence_parallel && s->model.has_dsa;
}

int sc_exchange_is_ring(wl_exchange e)
{
    return e == EX_RING || e == EX_RING_KV;
}

int sc_seqpar(const scenario *s)
{
    return s->par.sequence_parallel || sc_dsa_cp(s);
}

mem_shard sc_mem_shard(const scenario *s)
{
    mem_shard sh = {.tp = s->par.tp, .ep = s->par.ep};
    if (s->par.sp > 1 || !sc_seqpar(s))
        return sh;
    sh.full_attn = sc_dsa_cp(s);
    sh.shared_tp = 1;
    return sh;
}

uint32_t sc_layer_sharded(const scenario *s)
{
    if (s->par.tp <= 1 || s->par.sp > 1 || !sc_dsa_cp(s))
        return 0;
    uint32_t bits = 0;
    for (int i = 0; i < s->par.n_layer_sharding; i++)
        for (int p = MP_Q_A; p < MP_COUNT; p++)
            if (strcmp(s->par.layer_sharding[i], mem_proj_name((mem_proj)p)) == 0)
                bits |= 1u << p;
    return bits;
}

plan_launch sc_step_launch(const scenario *s, int64_t t, int prefill, int64_t *padded)
{
    *padded = t;
    plan_launch how;
    switch (s->graph) {
    case GRAPH_CAPTURED:
        how = PL_GRAPH;
        break;
    case GRAPH_DECODE_ONLY:
        how = prefill ? PL_EAGER : PL_GRAPH;
        break;
    case GRAPH_PIECEWISE:
        how = PL_PIECEWISE;
        break;
    case GRAPH_FULL_AND_PIECEWISE:
        how = prefill ? PL_PIECEWISE : PL_GRAPH;
        break;
    default:
        return PL_EAGER;
    }
    if (how == PL_EAGER)
        return PL_EAGER;
    if (t > INT32_MAX) /* past any capture size */
        return s->kernels.ncapture > 0 ? PL_EAGER : how;
    /* vLLM pads a batch to the next capture size and runs one past the
     * largest eagerly (gpu_model_runner.py _get_num_input_tokens:
     * num_tokens > max_cudagraph_capture_size -> no graph) */
    int captured;
    *padded = ks_padded_batch(&s->kernels, (int)t, &captured);
    return captured ? how : PL_EAGER;
}
