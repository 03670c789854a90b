/* common: what the exchange strategies share (internal.h): layout copies,
 * the ring's point-to-point exchanges, the LSE merge of a partial.
 *
 * Conventions of every strategy file of this folder: per TP rank the
 * attention geometry of the step (models/attn/attn.h: query heads, the
 * widths of a token's queries, K/V and output), activations ab bytes per
 * element.  Sizes of collectives follow the nccl-tests convention of
 * collectives/coll.h (all-gather: the gathered output; all-to-all: this
 * rank's send buffer); P2P hops carry the bytes sent and received.
 *
 * Memory: every tensor a strategy creates is allocated before the kernel
 * or exchange that writes it and freed after the last op that reads it;
 * receive buffers of exchanges consumed by a later kernel are comm buffers
 * (em_buf_alloc), everything else activations.  The attention phase of a
 * layer is thus what the timeline shows between the input norm and
 * o_proj, the MLP/MoE phase what it shows after the post-attention norm.
 */
#include "models/exchange/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/attn/attn.h"
#include "models/memory.h"

/* ---- helpers ------------------------------------------------------------------ */

/* A layout change of tensor *t (pack, unpack, reorder): a copy into a new
 * activation of its size, after which *t is freed and the copy takes its
 * place. */
void ex_repack(bld *b, const char *name, em_tensor *t, plan_shape in, plan_shape out)
{
    em_tensor copy = em_act_alloc(b, t->bytes);
    em_copy(b, name, t->bytes, in, out);
    em_free(b, t);
    *t = copy;
}

/* The merge of the next partial of a striped call sequence into the
 * accumulator (activation-dtype outputs, fp32 LSE). */
uint32_t ex_merge_partial(bld *b, const attn_geom *g, int64_t rows, const char *name)
{
    return em_lse_merge(b, name, rows, g->hq, g->d_v, 2, b->ab);
}

/* A point-to-point exchange of the ring over G_SP on `stream`: send `send`
 * bytes to the member `so` places ahead, receive `recv` bytes from the
 * member `ro` places ahead, after op `after` of another stream (EM_NONE:
 * none).  Ring ops always launch eagerly (cp-exchange.md "ring"). */
uint32_t ex_ring_p2p(bld *b, const char *name, int stream, double send, int so,
                         double recv, int ro, uint32_t after)
{
    plan_op o = {0};
    o.name = name;
    o.kind = OPK_P2P;
    o.stream = (uint8_t)stream;
    o.group = G_SP;
    o.dtype = (uint8_t)b->adt;
    o.layout = b->layout;
    o.eager = 1;
    o.comm_bytes = send;
    o.recv_bytes = recv;
    o.send_off = (int8_t)so;
    o.recv_off = (int8_t)ro;
    uint32_t i = em_emit(b, &o);
    if (after != EM_NONE)
        plan_dep(b->pg, i, after);
    return i;
}

em_tensor ex_select_split(ex_ctx *x, const attn_geom *g)
{
    bld *b = &x->b;
    if (g->topk <= 0)
        return EM_TENSOR_NONE;
    int P = x->P;
    double bytes = (double)P * (double)x->most * (double)g->idx_w * b->ab;
    em_tensor keys = em_buf_alloc(b, bytes);
    em_coll(b, "sp_index_k_all_gather", CK_ALL_GATHER, G_SP, bytes,
            shp(2, (int64_t)P * x->most, g->idx_w, 0));
    plan_attn ix = attn_call(g, x->mine.n, x->prefix + x->t, ex_share_pairs(&x->mine, -1, P));
    em_tensor idx = g->fam->select(b, g, x->mine.n, ix);
    em_free(b, &keys); /* scored */
    return idx;
}
