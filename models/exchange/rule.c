/* rule: which ring a split step runs under parallel.ring_select
 * (the exposed-communication rule; see exchange.h ex_ring_rule). */
#include "models/exchange/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/cost.h"
#include "models/interference.h"
#include "models/memory.h"

/* ---- which ring (parallel.ring_select) ---------------------------------------------- */

/* The SP ring's link: the NICs when an SP group spans nodes (some group's
 * members on two nodes, plan.h rank numbering and parallel.order), else the
 * node's fabric (a mesh: one pair's link, bandwidth / (devices - 1),
 * platform.h); the latency of the tiers crossed. */
static int ring_link(const scenario *s, double *rate, double *latency)
{
    const platform *pl = &s->plat;
    plan_layout_cfg lay = {.tp = s->par.tp, .sp = s->par.sp, .ep = s->par.ep, .dp = s->par.dp,
                           .devices_per_node = pl->devices_per_node, .order = s->par.order};
    int dpn = pl->devices_per_node > 0 ? pl->devices_per_node : 1, spans = 0;
    for (int r = 0; r < lay.tp * lay.sp * lay.dp && !spans; r++) {
        int tp_i, sp_i, dp_i;
        plan_rank_coords(&lay, r, &tp_i, &sp_i, &dp_i);
        spans = plan_rank_of(&lay, tp_i, 0, dp_i) / dpn != r / dpn;
    }
    if (spans) {
        *rate = plat_link_rate(pl, &pl->nic);
        *latency = pl->nic.latency + pl->spine.latency;
        return 1;
    }
    *rate = plat_link_rate(pl, &pl->intra);
    if (pl->fabric == FAB_MESH && pl->devices_per_node > 1)
        *rate /= (double)(pl->devices_per_node - 1);
    *latency = pl->intra.latency;
    return 0;
}

/* The price of op o on the platform: the cost model's (the profile's
 * tables, else the analytic model); without a cost model, the roofline of
 * `peak_eff` (flops / (bf16 peak * peak_eff)). */
static double op_s(const scenario *s, const plan_op *o, double peak_eff)
{
    cp_err err = {0};
    cost_model *cm = cost_new(&s->plat, &err);
    double peak = s->plat.peak_flops[DT_BF16] * peak_eff;
    double t = cm ? cost_kernel_s(cm, o) : peak > 0 ? o->flops / peak : 0;
    cost_free(cm);
    return t;
}

/* A compute op of class kc of a split step's ring, as the builders emit it:
 * the activation dtype, eager (the rings launch eagerly), one group. */
static plan_op ring_op(const scenario *s, const char *name, plan_kclass kc)
{
    plan_op o = {0};
    o.name = name;
    o.kind = OPK_COMPUTE;
    o.stream = ST_COMPUTE;
    o.kclass = (uint8_t)kc;
    o.dtype = (uint8_t)s->a_dtype;
    o.layout = TL_LOCAL;
    o.g = 1;
    o.eager = 1;
    return o;
}

/* Kernel time of one ring block's attention: an op built as the family's
 * attend builds it for a dense call (g's heads and widths: per-head K/V,
 * or MLA's expanded heads), priced by op_s. */
static double block_attention_s(const scenario *s, const attn_geom *g, int64_t q, int64_t kv,
                                double pairs)
{
    int64_t hq = g->hq, hkv = g->hkv, dsum = g->d_qk + g->d_v;
    double ab = dtype_bytes(s->a_dtype);
    plan_op o = ring_op(s, "ring_attention", KC_ATTENTION);
    o.attn = (plan_attn){.q_len = q, .kv_len = kv, .heads = hq, .kv_heads = hkv,
                         .d_qk = g->d_qk, .d_v = g->d_v, .pairs = pairs, .causal = 1};
    /* attn_gqa_attend's counts: 2 flops per multiply-add of q.k and p.v;
     * q, the output, k and v read or written once */
    o.flops = 2.0 * pairs * (double)hq * (double)dsum;
    o.bytes = ((double)q * (double)(hq * dsum) + (double)kv * (double)(hkv * dsum)) * ab;
    o.in = shp(3, q, hq, g->d_qk);
    o.w = shp(3, kv, hkv, g->d_qk);
    o.out = shp(3, q, hq, g->d_v);
    return op_s(s, &o, s->plat.eff_attention);
}

/* MLA's expansion of one block of n latents (kv_b_proj, mla.c), as a GEMM
 * in the activation dtype priced by op_s; 0 for a form that reads K/V as
 * they travel. */
static double block_expand_s(const scenario *s, const attn_geom *g, int64_t n)
{
    if (g->form != AF_EXPANDED)
        return 0;
    const arch *a = &s->model;
    int64_t k = a->kv_lora_rank, w = g->hq * (a->qk_nope_dim + a->v_head_dim);
    double ab = dtype_bytes(s->a_dtype);
    plan_op o = ring_op(s, "kv_b_proj", KC_GEMM);
    o.m = n;
    o.k = k;
    o.n = w;
    /* em_gemm's counts */
    o.flops = 2.0 * (double)n * (double)k * (double)w;
    o.bytes = ((double)n * (double)k + (double)k * (double)w + (double)n * (double)w) * ab;
    o.in = shp(2, n, k, 0);
    o.w = shp(2, k, w, 0);
    o.out = shp(2, n, w, 0);
    return op_s(s, &o, s->plat.eff_gemm);
}

/* The part of a hop of h seconds alone (a message of `bytes`) that an
 * attention of A seconds alone running beside it leaves exposed, both
 * slowed while they overlap (interference.h): ex_ring_rule's x(h, A). */
static double exposed_hop(const interf_model *im, double h, double A, double bytes)
{
    double fc, fm;
    interf_factors(im, IK_ATTENTION, bytes, &fc, &fm);
    double end = h * fm <= A * fc ? A + h * fm * (1.0 - 1.0 / fc) : h + A * fc * (1.0 - 1.0 / fm);
    return end - A;
}

/* The rule of ring_select: rule, per split step and layer, from the bytes
 * each ring moves over the SP ring's link (rate R, latency L; ring_link) and
 * the time A of one block's attention (the rank's most queries over its
 * most keys with the mean block's pairs, 1/N^2 of the step's causal pairs,
 * priced by the cost model):
 *   pass-KV  N - 1 hops of the padded K/V block, B_kv = most keys x the
 *            family's K/V width (attn.h kv_w: GQA 2 hkv d, MLA's latent
 *            kl + dr) x activation bytes;
 *   pass-Q   N - 1 hops of the query block, B_q = most new tokens x q_w
 *            (GQA hq d, MLA hq (dn + dr)) x activation bytes, and the
 *            partials' returns, B_o = most new tokens x (out_w x activation
 *            bytes + hq x 4 B of fp32 LSE), all but the last under the
 *            later rounds (the second comm stream), the last on the
 *            critical path.
 * With h(B) = C + L + B / R (C: the fixed cost of an eager call,
 * device.collective_latency.eager), a hop is exposed whole without
 * ring_overlap; with
 * it, the hop runs under the previous block's attention and is exposed by
 * x(h, A) = end - A, where the pair of a hop and an attention slowed by the
 * platform's interference factors fc (compute) and fm (communication) of
 * a message of B bytes (interference.h, 1 without an overlap table, and 1
 * for a ring across nodes: the factors were measured on NVLink) ends at
 * A + h fm (1 - 1/fc) when the hop finishes first, else h + A fc (1 - 1/fm)
 * (without interference: max(0, h - A)):
 *   exposed_kv = (N - 1) x(h(B_kv), A)
 *   exposed_q  = (N - 1) x(h(B_q), A) + h(B_o)
 * and the step runs pass-KV when exposed_kv + (N - 1) E <= exposed_q, E
 * the expansion of a block of latents that pass-KV runs for every visiting
 * block and pass-Q only for its own slots (MLA's kv_b_proj, block_expand_s;
 * 0 for GQA; the attention and the N - 1 merges are the same work either
 * way).  B_kv grows with the
 * cached prefix (cached + new keys), B_q and B_o with the new tokens only,
 * so a high prefix-cache hit rate turns the choice to pass-Q; with GQA
 * (2 hkv < hq) a prefill without cache picks pass-KV.  Not in the rule:
 * the earlier returns' interference, contention of the hops and returns
 * for one link, launch gaps; ring_select: simulate measures them. */
plan_ring ex_ring_rule(const scenario *s, int64_t t, int64_t prefix, ex_ring_est *e)
{
    ex_ctx x;
    memset(&x, 0, sizeof x);
    memset(e, 0, sizeof *e);
    x.b.s = s;
    x.P = s->par.sp;
    x.t = t;
    x.prefix = prefix;
    x.split_kind = s->par.split;
    int N = x.P;
    int64_t q_most = 0;
    for (int r = 0; r < N; r++) {
        int64_t n = ex_share_of(&x, r).n;
        q_most = n > q_most ? n : q_most;
    }
    int64_t kv_most = ex_keys_most(&x);
    x.b.a = &s->model;
    x.b.tp = s->par.tp;
    attn_geom g = attn_geom_of(&x.b, t);
    double ab = dtype_bytes(s->a_dtype);
    e->kv_bytes = (double)kv_most * (double)g.kv_w * ab;
    e->q_bytes = (double)q_most * (double)g.q_w * ab;
    e->ret_bytes = (double)q_most * ((double)g.out_w * ab + (double)g.hq * 4.0); /* + fp32 LSE */
    int nic = ring_link(s, &e->rate, &e->latency);
    double pairs = em_causal_pairs(t, prefix, 0) / ((double)N * (double)N);
    e->attn_s = block_attention_s(s, &g, q_most, kv_most, pairs);
    e->expand_s = block_expand_s(s, &g, kv_most);
    /* each hop and return is a call with the fixed cost of an eager call
     * (the rings launch eagerly): device.collective_latency.eager, the
     * small-message floor of nccl.csv on the calibrated presets */
    double call = s->plat.coll_latency_eager + e->latency;
    double hop_kv = call + e->kv_bytes / e->rate, hop_q = call + e->q_bytes / e->rate;
    double ret = call + e->ret_bytes / e->rate;
    if (s->par.ring_overlap) {
        interf_model im;
        cp_err err = {0};
        if (nic || interf_load(&im, &s->plat, &err) != 0)
            memset(&im, 0, sizeof im); /* no table read, or NICs: no interference */
        hop_kv = exposed_hop(&im, hop_kv, e->attn_s, e->kv_bytes);
        hop_q = exposed_hop(&im, hop_q, e->attn_s, e->q_bytes);
    }
    e->exposed_kv_s = (double)(N - 1) * (hop_kv + e->expand_s);
    e->exposed_q_s = (double)(N - 1) * hop_q + ret;
    return e->exposed_kv_s <= e->exposed_q_s ? PR_PASS_KV : PR_PASS_Q;
}

plan_ring ex_step_ring(const scenario *s, int64_t t, int64_t prefix, int split, plan_ring force)
{
    const wl_parallel *p = &s->par;
    if (!split || p->sp <= 1 || p->kv_storage != KV_BY_POSITION ||
        !sc_exchange_is_ring(p->exchange))
        return PR_NONE;
    if (force == PR_PASS_Q || force == PR_PASS_KV)
        return force;
    if (p->ring_select == RS_FIXED)
        return p->exchange == EX_RING_KV ? PR_PASS_KV : PR_PASS_Q;
    ex_ring_est e;
    return ex_ring_rule(s, t, prefix, &e);
}

plan_ring ex_faster_ring(double pass_kv_s, double pass_q_s)
{
    return pass_q_s < pass_kv_s ? PR_PASS_Q : PR_PASS_KV;
}
