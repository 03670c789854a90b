/* moe: the MoE block's kernels, shared by every scheme (layers.h).
 *
 * The routed experts run the way the calibration profile measured them
 * (platforms/calibration/h200/README.md, moe.csv): the router GEMM, top-k
 * scoring, a permute that sorts the token rows by expert (one row per
 * (token, choice)), one grouped GEMM over the local experts for gate_up,
 * the SwiGLU, one for down, and an unpermute that weighs each row by its
 * routing weight and sums the k rows of a token back.  Under expert
 * parallelism the sorted rows travel by all-to-all to the rank holding
 * their expert and back.
 *
 * Rows per rank under routing (simulation.moe_routing): with t tokens of k
 * choices over E experts, every expert expects t*k/E rows; a rank holding
 * g experts gets g times that, and under EP the most loaded of the ep
 * ranks is the critical path (moe.csv routed_rows is that rank's count):
 * its expected excess over the mean is the expected maximum of ep normal
 * variables with the rank's standard deviation (moe_rank_rows).
 */
#include "models/layers/layers.h"

#include <math.h>

#include "models/memory.h"

const mlp_names MLP_DENSE = {"mlp_gate_up", "mlp_act", "mlp_down"};
const mlp_names MLP_SHARED = {"shared_gate_up", "shared_act", "shared_down"};
static const mlp_names MLP_EXPERTS = {"expert_gate_up", "expert_act", "expert_down"};

/* Relative spread of the experts' mean loads under skewed routing (as
 * models/cost.c MOE_SKEW_CV: moe.csv skew_cv of the skewed rows at >= 64K
 * tokens less the multinomial part). */
#define SKEW_CV 0.55

/* Expected maximum of n independent standard normal variables, n = 2^i
 * (i = 0..7; order-statistics tables, e.g. Harter 1961). */
static const double normal_max[] = {0.0, 0.5642, 1.0294, 1.4236, 1.7660, 2.0697, 2.3355, 2.5745};

static double expected_max(int n)
{
    if (n <= 1)
        return 0;
    double i = log2((double)n);
    if (i >= 7)
        return sqrt(2.0 * log((double)n)) - 0.3; /* asymptote, matched at 128 */
    int lo = (int)floor(i);
    return normal_max[lo] + (i - lo) * (normal_max[lo + 1] - normal_max[lo]);
}

int64_t moe_rank_rows(const bld *b, double mean_rows, int64_t experts_local, int ranks)
{
    if (ranks <= 1 || b->s->moe_routing == RT_BALANCED || mean_rows <= 0)
        return (int64_t)ceil(mean_rows);
    double mu = mean_rows / (double)experts_local; /* rows per expert */
    double var_e = mu + (b->s->moe_routing == RT_SKEWED ? SKEW_CV * SKEW_CV * mu * mu : 0.0);
    double sd = sqrt((double)experts_local * var_e);
    return (int64_t)ceil(mean_rows + expected_max(ranks) * sd);
}

/* ---- MLP ---------------------------------------------------------------------- */

/* A linear of the MLP: dense (g = 0) or grouped over g local experts. */
static void mlp_linear(bld *b, const char *name, int64_t m, int64_t k, int64_t n, int64_t g)
{
    if (g > 0)
        em_moe_gemm(b, name, m, k, n, g);
    else
        em_gemm(b, name, m, k, n, 1);
}

/* gate_up, SwiGLU, down on m rows of intermediate width inter: dense
 * linears (g = 0) or grouped over g local experts; returns [m, h].  Every
 * MLP of the model comes here (the dense MLP, the shared and the routed
 * experts), so its linears take the MLP weights (b->mlp:
 * precision.mlp_weights; a context whose mlp is unset keeps its own) and
 * give the others back after it. */
static em_tensor swiglu_mlp(bld *b, const mlp_names *nm, int64_t m, int64_t inter, int64_t g)
{
    const arch *a = b->a;
    double rows = (double)m;
    em_wprec mlp = b->mlp.wb > 0 ? b->mlp : (em_wprec){b->gdt, b->gqs, b->wb};
    em_wprec other = em_use_weights(b, mlp);
    /* gate and up halves side by side: 2 inter per row */
    em_tensor gate_up = em_act_alloc(b, rows * 2.0 * inter * b->ab);
    mlp_linear(b, nm->gate_up, m, a->hidden, 2 * inter, g);
    em_tensor act = em_act_alloc(b, rows * inter * b->ab);
    /* eager F.silu(g) * u: the silu output lives until the multiply ends */
    em_tensor silu = em_impl(b, KS_ACTIVATION) == IMPL_TORCH ? em_tmp(b, rows * inter * b->ab)
                                                            : EM_TENSOR_NONE;
    em_swiglu(b, nm->act, m, inter);
    em_tmp_end(b, &silu);
    em_local(b, &gate_up); /* a local of the MLP function (engine_checks.py mlp, moe) */
    em_tensor out = em_act_alloc(b, rows * a->hidden * b->ab);
    mlp_linear(b, nm->down, m, inter, a->hidden, g);
    em_local(b, &act);
    em_use_weights(b, other);
    return out;
}

em_tensor layer_mlp(bld *b, const mlp_names *nm, int64_t m, int64_t inter)
{
    int mark = em_locals_begin(b); /* the MLP function's locals */
    em_tensor out = swiglu_mlp(b, nm, m, inter, 0);
    em_locals_end(b, mark);
    return out;
}

/* ---- routing ------------------------------------------------------------------ */

/* Kernels of the top-k scoring (calib_moe.py): the fp32 cast, softmax,
 * top-k (a select and a sort), renormalise (sum, divide), cast (7: the
 * trace of engine_checks.py); or sigmoid scores with a correction bias,
 * top-k, gathered and normalised weights times the scaling factor (10).
 * A fused set runs one kernel (vLLM topk_softmax, grouped_topk). */
static int score_kernels(const bld *b)
{
    if (em_impl(b, KS_MOE_ROUTING) != IMPL_TORCH)
        return 1;
    return b->a->router_sigmoid ? 10 : 7;
}

void layer_moe_topk(bld *b, int64_t m)
{
    const arch *a = b->a;
    double md = (double)m, E = (double)a->experts, k = (double)a->top_k;
    /* reads the bf16 logits, writes the weights (bf16) and ids (int64):
     * moe.csv topk_score min_bytes; derived: about 5 flops per logit */
    uint32_t i = em_compute(b, "topk", KC_TOPK, 5.0 * md * E, md * E * b->ab + md * k * 10.0,
                            shp(2, m, a->experts, 0), shp(0, 0, 0, 0), shp(2, m, a->top_k, 0));
    em_stamp(b, i, em_impl(b, KS_MOE_ROUTING), score_kernels(b));
}

void layer_moe_route(bld *b, int64_t m)
{
    const arch *a = b->a;
    double md = (double)m, E = (double)a->experts;
    em_tensor logits = em_act_alloc(b, md * E * b->ab);
    em_gemm_float(b, "router", m, a->hidden, a->experts);
    /* eager: the fp32 softmax (4 B per logit), the top-k weights (bf16)
     * and ids (int64) are locals of the MoE function */
    if (em_impl(b, KS_MOE_ROUTING) == IMPL_TORCH) {
        em_local_new(b, md * E * 4.0);
        em_local_new(b, md * (double)a->top_k * 2.0);
        em_local_new(b, md * (double)a->top_k * 8.0);
    }
    layer_moe_topk(b, m);
    em_local(b, &logits);
}

/* Sort the m token rows by expert: [m, h] -> [m * k, h] (moe.csv permute:
 * a stable sort of the ids, counts, offsets, the inverse permutation, the
 * gather of the rows; bytes R*8*4 + m*h*2 + R*h*2). */
static void moe_permute(bld *b, int64_t m)
{
    const arch *a = b->a;
    int64_t h = a->hidden, R = m * a->top_k;
    if (em_impl(b, KS_MOE_ROUTING) != IMPL_TORCH) {
        /* moe_align_block_size: the ids sorted by expert and padded, read and
         * written as int32 (4 B each, twice); the expert GEMMs gather the
         * token rows themselves */
        em_stamp(b, em_compute(b, "moe_align", KC_MOE_PERMUTE, 0, (double)R * 16.0,
                               shp(2, m, a->top_k, 0), shp(0, 0, 0, 0), shp(1, R, 0, 0)),
                 IMPL_FUSED, 1);
        return;
    }
    double bytes = (double)R * 32.0 + ((double)m + (double)R) * (double)h * b->ab;
    /* eager: the flat ids, the sorted ids and their order, tok, the inverse
     * and the arange it scatters (int64, 8 B each: 6 R x 8) are locals */
    for (int k = 0; k < 6; k++)
        em_local_new(b, (double)R * 8.0);
    uint32_t i = em_compute(b, "moe_permute", KC_MOE_PERMUTE, 0, bytes, shp(2, m, h, 0),
                            shp(0, 0, 0, 0), shp(2, R, h, 0));
    /* the trace of engine_checks.py: up to 4096 ids torch.sort runs one
     * in-place kernel (3 copies, the sort), above it cub's radix sort
     * (histogram, scan, 8 one-sweep passes, memsets: 21); then zeros, ones,
     * scatter_add, the cumsum's 2, floor-divide, arange, scatter, gather */
    em_stamp(b, i, IMPL_TORCH, (R <= 4096 ? 4 : 21) + 10);
}

/* Weigh the sorted rows and sum each token's k rows: [m * k, h] -> [m, h]
 * (moe.csv unpermute mul+index_select+sum_k: three kernels). */
static void moe_unpermute(bld *b, int64_t m)
{
    const arch *a = b->a;
    int64_t h = a->hidden, R = m * a->top_k;
    double bytes = ((double)R + (double)m) * (double)h * b->ab;
    /* eager (y * w).index_select(inv).view(T, k, h).sum(1): the weighted
     * rows and their gather back to token order live until the sum ends */
    int torch = em_impl(b, KS_MOE_ROUTING) == IMPL_TORCH;
    em_tensor tmp[2] = {EM_TENSOR_NONE, EM_TENSOR_NONE};
    for (int k = 0; torch && k < 2; k++)
        tmp[k] = em_tmp(b, (double)R * (double)h * b->ab);
    /* derived: a multiply and an add per row element */
    uint32_t i = em_compute(b, "moe_unpermute", KC_MOE_UNPERMUTE, 2.0 * (double)R * (double)h,
                            bytes, shp(2, R, h, 0), shp(0, 0, 0, 0), shp(2, m, h, 0));
    /* torch: the routing weights gathered, multiplied, the rows gathered
     * back, summed over k (4); fused: moe_sum, the weights applied inside
     * the down GEMM */
    plan_impl impl = em_impl(b, KS_MOE_ROUTING);
    em_stamp(b, i, impl, impl == IMPL_TORCH ? 4 : 1);
    em_tmp_end(b, &tmp[1]);
    em_tmp_end(b, &tmp[0]);
}

/* The expert MLPs on `rows` sorted rows over g local experts of width
 * inter: grouped gate_up, SwiGLU, grouped down; returns [rows, h]. */
static em_tensor moe_experts(bld *b, int64_t rows, int64_t g, int64_t inter)
{
    return swiglu_mlp(b, &MLP_EXPERTS, rows, inter, g);
}

em_tensor layer_moe_routed_local(bld *b, int64_t m, int64_t inter)
{
    const arch *a = b->a;
    int64_t R = m * a->top_k;
    double row = (double)a->hidden * b->ab;
    em_tensor sorted = em_act_alloc(b, (double)R * row);
    moe_permute(b, m);
    em_tensor experts = moe_experts(b, R, a->experts, inter);
    em_local(b, &sorted);
    em_tensor out = em_act_alloc(b, (double)m * row);
    moe_unpermute(b, m);
    em_local(b, &experts);
    return out;
}

em_tensor layer_moe_routed_ep(bld *b, int64_t m)
{
    const arch *a = b->a;
    int64_t h = a->hidden, k = a->top_k, e_local = a->experts / b->ep;
    double row = (double)h * b->ab, out = (double)m * (double)k;
    /* the rank receives, from all ep ranks, its experts' rows: as many as it
     * sends on average, more on the most loaded rank */
    int64_t rows = moe_rank_rows(b, out, e_local, b->ep);
    em_tensor sorted = em_act_alloc(b, out * row);
    moe_permute(b, m);
    em_tensor received = em_buf_alloc(b, (double)rows * row);
    em_coll(b, "moe_dispatch", CK_ALL_TO_ALL, G_EP, out * row, shp(2, m * k, h, 0));
    em_free(b, &sorted);
    em_tensor experts = moe_experts(b, rows, e_local, a->moe_intermediate);
    em_free(b, &received);
    em_tensor combined = em_buf_alloc(b, out * row);
    em_coll(b, "moe_combine", CK_ALL_TO_ALL, G_EP, out * row, shp(2, m * k, h, 0));
    em_free(b, &experts); /* sent back */
    em_tensor res = em_act_alloc(b, (double)m * row);
    moe_unpermute(b, m);
    em_free(b, &combined);
    return res;
}

/* Shared experts on m rows of width `inter`, added into the routed output
 * [m, h] (the sum is the block's output); frees their own output. */
static void layer_moe_shared(bld *b, int64_t m, int64_t inter)
{
    const arch *a = b->a;
    if (a->shared_intermediate <= 0)
        return;
    em_tensor out = layer_mlp(b, &MLP_SHARED, m, inter);
    /* reads the routed and the shared rows (2 h), one add per output element */
    em_elementwise(b, "shared_add", KC_ELEMENTWISE, m, 2 * a->hidden, a->hidden, 1.0);
    em_free(b, &out); /* added into the routed output */
}

/* MoE block on the rank's t tokens; returns the output [t, h], reduced.
 * With EP the tokens a rank holds are also held by the other members of its
 * TP group; the members of the EP group that hold the same tokens
 * ("sharers") each route a 1/sharers slice of them.  An EP group inside a
 * TP group (ep divides tp) shares all its tokens; one that spans whole TP
 * groups of several SP ranks (cp-exchange.md "MoE under SP") shares them
 * only within each TP group, whose token sets differ.  The dispatch/combine
 * all-to-alls are sized from the tokens this rank routes; an all-gather over
 * the sharers restores the TP-replicated layout.  Without EP every rank runs
 * its 1/tp slice of every expert on all t tokens. */
em_tensor layer_moe(bld *b, int64_t t)
{
    const arch *a = b->a;
    int64_t h = a->hidden;
    int ep = b->ep;
    int inside_tp = ep <= b->tp;
    int sharers = inside_tp ? ep : b->tp;
    plan_group gather = inside_tp ? G_EP : G_TP;
    int64_t tl = ep > 1 ? (t + sharers - 1) / sharers : t;
    double row = (double)h * b->ab;

    int mark = em_locals_begin(b); /* the MoE function's locals (engine_checks.py moe) */
    layer_moe_route(b, tl);
    em_tensor routed = ep > 1 ? layer_moe_routed_ep(b, tl)
                              : layer_moe_routed_local(b, tl, a->moe_intermediate / b->tp);
    em_locals_end(b, mark);
    layer_moe_shared(b, tl, ep > 1 ? a->shared_intermediate : a->shared_intermediate / b->tp);
    if (ep <= 1) {
        em_coll(b, "moe_all_reduce", CK_ALL_REDUCE, G_TP, (double)t * row, shp(2, t, h, 0));
        return routed;
    }
    em_tensor out = em_act_alloc(b, (double)t * row);
    em_coll(b, "moe_all_gather", CK_ALL_GATHER, gather, (double)t * row, shp(2, t, h, 0));
    em_free(b, &routed); /* the rank's slice, gathered */
    return out;
}

em_tensor layer_ffn(bld *b, int64_t t)
{
    const arch *a = b->a;
    if (a->layer_moe[b->layer])
        return layer_moe(b, t);
    em_tensor out = layer_mlp(b, &MLP_DENSE, t, a->intermediate / b->tp);
    em_coll(b, "mlp_all_reduce", CK_ALL_REDUCE, G_TP, (double)t * a->hidden * b->ab,
            shp(2, t, a->hidden, 0));
    return out;
}
