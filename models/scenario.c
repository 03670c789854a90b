/* scenario: the scenario's own predicates (see scenario.h). */
#include "models/scenario.h"

int64_t sc_prefill_chunk(const scenario *s, int q)
{
    return s->chunked_prefill ? s->max_num_batched_tokens : s->reqs[q].prompt_tokens;
}

int64_t sc_prefill_steps(const scenario *s, int q)
{
    int64_t chunk = sc_prefill_chunk(s, q);
    return (s->reqs[q].prompt_tokens + chunk - 1) / chunk;
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
