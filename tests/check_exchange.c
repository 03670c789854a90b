/* check_exchange: the sequence-parallel exchange strategies
 * (shared/spec/cp-exchange.md, models/exchange/).
 *
 * Plan level (no SimGrid): per layer and SP rank, the number, kind and
 * bytes of collectives and ring hops against closed forms from the
 * thinker's config (hidden 2048, 32 q heads, 4 KV heads, head dim 128,
 * 128 experts top-8); exact causal work per rank; split vs copied around
 * min_tokens; MoE under SP; memory by phase; refusals; the two rings
 * (pass-Q: exchange ring, pass-KV: exchange ring_kv) with their hops,
 * padding and returns, zigzag balance, prefix-cached pairs, the
 * ring_select rule and the builder's per-step override; the pass-Q decode
 * of copied decode steps on a ring (hops, padded blocks of 1, 3 and 8
 * sequences, the final all-to-all, KV write balance).
 * Timing (one simulation per child process): ring overlap vs synchronous,
 * split balance, the split/copied crossover and its move with bandwidth,
 * the OOM verdict, pass-KV's exposed communication against T, the ring
 * each request ran in the summary, the pass-Q decode's TPOT at 128K.
 * Timing runs use a uniform roofline platform: the h100-sxm-8 preset (or
 * h200-sxm-8 where said) without its calibration profile (no measured
 * tables, no compute/communication interference). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/build/build.h"
#include "models/exchange/exchange.h"
#include "sim/driver/driver.h"
#include "tests/testutil.h"

static const char *THINKER =
    "model: qwen3-omni-30b-a3b-thinker\n"
    "platform: h100-sxm-8\n"
    "requests:\n  - prompt_tokens: 32768\n";

/* thinker config (models/configs/qwen3-omni-30b-a3b-thinker.json) */
enum { H = 2048, HEADS = 32, KV_HEADS = 4, D = 128, LAYERS = 48, EXPERTS = 128, TOPK = 8 };

#define MAX_SETS 12

/* The thinker's plan with TP tp x SP sp, KV storage and exchange, T prompt
 * tokens, and extra assignments. */
static void sp_plan(scenario *s, plan *p, int tp, int sp, const char *storage,
                    const char *exchange, long T, const char *const *extra, int nextra)
{
    static char buf[5][64];
    const char *sets[MAX_SETS];
    snprintf(buf[0], sizeof buf[0], "parallel.tp=%d", tp);
    snprintf(buf[1], sizeof buf[1], "parallel.sp=%d", sp);
    snprintf(buf[2], sizeof buf[2], "parallel.kv_storage=%s", storage);
    snprintf(buf[3], sizeof buf[3], "parallel.exchange=%s", exchange);
    snprintf(buf[4], sizeof buf[4], "requests.0.prompt_tokens=%ld", T);
    int n = 0;
    for (int i = 0; i < 5; i++)
        sets[n++] = buf[i];
    for (int i = 0; i < nextra && n < MAX_SETS; i++)
        sets[n++] = extra[i];
    tu_plan(s, p, THINKER, sets, n);
}

/* Ops of program g in (step, layer) that match kind/name; the last match
 * into *last. */
static int count_ops(const plan *p, int g, int step, int layer, plan_opkind kind,
                     const char *name, const plan_op **last)
{
    int n = 0;
    const plan_prog *pg = &p->progs[g];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->step != step || o->layer != layer || o->kind != kind)
            continue;
        if (name && strcmp(o->name, name) != 0)
            continue;
        n++;
        if (last)
            *last = o;
    }
    return n;
}

/* Collectives of program g in (step 0, layer) over group grp of one kind;
 * bytes of the last into *bytes. */
static int count_coll(const plan *p, int g, int layer, plan_group grp, plan_coll kind,
                      double *bytes)
{
    int n = 0;
    const plan_prog *pg = &p->progs[g];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->kind == OPK_COLL && o->step == 0 && o->layer == layer && o->group == grp &&
            o->coll == kind) {
            n++;
            if (bytes)
                *bytes = o->comm_bytes;
        }
    }
    return n;
}

/* The k-th (0-based) op of program g named `name` in (step 0, layer);
 * its index into *at. */
static const plan_op *nth_op(const plan *p, int g, int layer, const char *name, int k,
                             uint32_t *at)
{
    const plan_prog *pg = &p->progs[g];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->step == 0 && o->layer == layer && strcmp(o->name, name) == 0 && k-- == 0) {
            if (at)
                *at = i;
            return o;
        }
    }
    return NULL;
}

static int depends_on(const plan *p, int g, uint32_t op, uint32_t on)
{
    const plan_prog *pg = &p->progs[g];
    const plan_op *o = &pg->ops[op];
    for (uint32_t k = 0; k < o->ndeps; k++)
        if (pg->deps[o->dep_first + k] == on)
            return 1;
    return 0;
}

/* Causal pairs of the queries at positions lo .. lo+n-1 against every key
 * at or before them. */
static double run_pairs(double lo, double n)
{
    return n * (lo + 1.0) + n * (n - 1.0) / 2.0;
}

/* ---- positions and pairs ------------------------------------------------------ */

/* attn_stripe_pairs / attn_stripe_below against enumeration of every position. */
START_TEST(pairs_match_enumeration)
{
    for (int P = 2; P <= 4; P++) {
        for (int64_t n = 0; n <= 3 * P + 2; n++) {
            for (int r = 0; r < P; r++) {
                int64_t cnt = 0;
                for (int64_t y = 0; y < n; y++)
                    cnt += y % P == r;
                ck_assert_int_eq(attn_stripe_below(n, r, P), cnt);
            }
        }
        for (int64_t lo = 0; lo < 7; lo++) {
            for (int64_t n = 0; n < 9; n++) {
                for (int s = 0; s < 2; s++) {
                    int64_t stride = s ? P : 1;
                    attn_run q = {lo, n, stride};
                    for (int stripe = -1; stripe < P; stripe++) {
                        double want = 0;
                        for (int64_t i = 0; i < n; i++)
                            for (int64_t y = 0; y <= lo + i * stride; y++)
                                want += stripe < 0 || y % P == stripe;
                        ck_assert_double_eq(attn_stripe_pairs(&q, stripe, P), want);
                    }
                }
            }
        }
    }
}
END_TEST

/* ---- Ulysses and head slice --------------------------------------------------- */

/* TP4 x SP2 on head storage: a split prefill runs Ulysses (two all-to-alls
 * per layer, attention on 32/4/2 = 4 heads over the whole step), a decode
 * step the head slice (an all-gather of the heads before o_proj). */
START_TEST(ulysses_collectives)
{
    scenario s;
    plan p;
    const char *extra[] = {"requests.0.decode_tokens=1"};
    const long T = 32768, Tp = T / 2;
    sp_plan(&s, &p, 4, 2, "by_head", "ulysses", T, extra, 1);
    ck_assert_int_eq(p.nranks, 8);
    ck_assert_int_eq(p.nprogs, 2);
    for (int r = 0; r < 8; r++)
        ck_assert_int_eq(p.prog_of_rank[r], r / 4);
    const int hq = HEADS / 4, hu = hq / 2, ku = 1; /* 4 KV heads over 8: replicated */
    for (int g = 0; g < 2; g++) {
        for (int l = 0; l < LAYERS; l += 47) {
            double bytes[2] = {0};
            ck_assert_int_eq(count_coll(&p, g, l, G_SP, CK_ALL_TO_ALL, NULL), 2);
            const plan_op *a2a = nth_op(&p, g, l, "ulysses_qkv_all_to_all", 0, NULL);
            bytes[0] = a2a->comm_bytes;
            bytes[1] = nth_op(&p, g, l, "ulysses_out_all_to_all", 0, NULL)->comm_bytes;
            /* to each of the 2 peers: its 4 q heads and the 1 KV head they need */
            ck_assert_double_eq(bytes[0], (double)Tp * (hq + 2 * 2 * ku) * D * 2.0);
            /* back: the whole step's rows of this rank's 4 heads */
            ck_assert_double_eq(bytes[1], (double)T * hu * D * 2.0);
            ck_assert_int_eq(count_coll(&p, g, l, G_SP, CK_ALL_GATHER, NULL), 0);
            double ar = 0;
            ck_assert_int_eq(count_coll(&p, g, l, G_TP, CK_ALL_REDUCE, &ar), 2);
            ck_assert_double_eq(ar, (double)Tp * H * 2.0);
            const plan_op *at = nth_op(&p, g, l, "attention", 0, NULL);
            ck_assert_int_eq(at->attn.heads, hu);
            ck_assert_int_eq(at->attn.kv_heads, ku);
            ck_assert_int_eq(at->attn.q_len, T);
            ck_assert_double_eq(at->attn.pairs, (double)T * (T + 1) / 2.0);
            ck_assert_int_eq(at->layout, TL_FULL);
            const plan_op *qkv = nth_op(&p, g, l, "qkv_proj", 0, NULL);
            ck_assert_int_eq(qkv->m, Tp);
            ck_assert_int_eq(qkv->layout, TL_LOCAL);
            ck_assert_int_eq(nth_op(&p, g, l, "kv_write", 0, NULL)->out.d[0], T);
            ck_assert_int_eq(nth_op(&p, g, l, "o_proj", 0, NULL)->m, Tp);
            ck_assert_int_eq(nth_op(&p, g, l, "router", 0, NULL)->m, Tp);
            /* the pack and unpack copies around both all-to-alls (striped
             * split: the received rows are reordered into positions and the
             * output back into the ranks' rows) */
            uint32_t ipk, ia, iun, ib, iup, iatt;
            const plan_op *pk = nth_op(&p, g, l, "ulysses_qkv_pack", 0, &ipk);
            ck_assert_int_eq(pk->kclass, KC_COPY);
            ck_assert_double_eq(pk->bytes, 2.0 * bytes[0]);
            nth_op(&p, g, l, "ulysses_qkv_all_to_all", 0, &ia);
            ck_assert_ptr_nonnull(nth_op(&p, g, l, "ulysses_qkv_unpack", 0, &iun));
            nth_op(&p, g, l, "attention", 0, &iatt);
            ck_assert_ptr_nonnull(nth_op(&p, g, l, "ulysses_out_pack", 0, NULL));
            nth_op(&p, g, l, "ulysses_out_all_to_all", 0, &ib);
            const plan_op *up = nth_op(&p, g, l, "ulysses_out_unpack", 0, &iup);
            ck_assert(up->out.d[0] == Tp && up->out.d[1] == hq);
            ck_assert(ipk < ia && ia < iun && iun < iatt && iatt < ib && ib < iup);
        }
        /* the embedding over the whole step, the outputs gathered after the
         * final norm */
        const plan_op *emb = nth_op(&p, g, -1, "embedding", 0, NULL);
        ck_assert_int_eq(emb->out.d[0], T);
        ck_assert_int_eq(emb->layout, TL_FULL);
        uint32_t i_norm, i_gather;
        ck_assert_ptr_nonnull(nth_op(&p, g, -1, "final_norm", 0, &i_norm));
        const plan_op *og = nth_op(&p, g, -1, "sp_out_all_gather", 0, &i_gather);
        ck_assert_uint_gt(i_gather, i_norm);
        ck_assert_double_eq(og->comm_bytes, (double)T * H * 2.0);
        /* decode step: head slice */
        const plan_op *hs = NULL;
        ck_assert_int_eq(count_ops(&p, g, 1, 0, OPK_COLL, "head_all_gather", &hs), 1);
        ck_assert_double_eq(hs->comm_bytes, 1.0 * hq * D * 2.0);
        ck_assert_int_eq(count_ops(&p, g, 1, 0, OPK_COLL, "ulysses_qkv_all_to_all", NULL), 0);
        const plan_op *dat = NULL;
        ck_assert_int_eq(count_ops(&p, g, 1, 0, OPK_COMPUTE, "attention", &dat), 1);
        ck_assert_int_eq(dat->attn.heads, hu);
        ck_assert_int_eq(dat->attn.kv_len, T + 1);
    }
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* ---- all_gather ------------------------------------------------------------------ */

/* The pairs of the attention calls named `name` in layer 5 of program g,
 * and their number. */
static int sum_calls(const plan *p, int g, const char *name, double *pairs)
{
    int n = 0;
    *pairs = 0;
    const plan_op *o;
    while ((o = nth_op(p, g, 5, name, n, NULL)) != NULL) {
        *pairs += o->attn.pairs;
        n++;
    }
    return n;
}

/* all_gather_tensors = qkv (the spec's all_gather): one all-gather of
 * q/k/v per layer, then the copied path over position storage on every
 * rank (all the step's queries over its own slots), an all-gather of the
 * fp32 partials of every row, a merge of every row (P partials) and the
 * slice of the rank's rows; the ranks' calls together count the whole
 * step's causal pairs, whatever the split.  all_gather_merge: own_rows
 * (a what-if) sends each rank its rows' partials (all-to-all) and merges
 * those alone. */
START_TEST(all_gather_qkv_is_dcp)
{
    const char *splits[] = {"striped", "contiguous", "zigzag"};
    const long T = 32768;
    const int P = 2, hq = HEADS / 4, hkv = 1;
    const double n = (double)T / P;
    for (int own = 0; own < 2; own++)
        for (int sp_i = 0; sp_i < 3; sp_i++) {
            scenario s;
            plan p;
            char split[64];
            snprintf(split, sizeof split, "parallel.split=%s", splits[sp_i]);
            const char *extra[] = {split, "parallel.all_gather_merge=own_rows"};
            sp_plan(&s, &p, 4, P, "by_position", "all_gather", T, extra, 1 + own);
            double total = 0;
            for (int g = 0; g < P; g++) {
                double bytes = 0;
                ck_assert_int_eq(count_coll(&p, g, 5, G_SP, CK_ALL_GATHER, &bytes), own ? 1 : 2);
                /* the first all-gather: q, k and v of the step */
                const plan_op *qkv = nth_op(&p, g, 5, "sp_qkv_all_gather", 0, NULL);
                ck_assert_double_eq(qkv->comm_bytes, (double)T * (hq + 2.0 * hkv) * D * 2.0);
                const plan_op *at = nth_op(&p, g, 5, "dcp_attention", 0, NULL);
                ck_assert_int_eq(at->attn.q_len, T);      /* every query of the step */
                ck_assert_int_eq(at->attn.kv_len, T / P); /* over the rank's slots */
                ck_assert_int_eq(at->attn.causal, 0);
                ck_assert_ptr_null(nth_op(&p, g, 5, "attention", 0, NULL));
                const plan_op *mg = nth_op(&p, g, 5, "dcp_merge", 0, NULL);
                ck_assert_int_eq(mg->kclass, KC_LSE_MERGE);
                if (own) {
                    ck_assert_int_eq(count_coll(&p, g, 5, G_SP, CK_ALL_TO_ALL, &bytes), 1);
                    ck_assert_double_eq(bytes, P * n * hq * (D + 1.0) * 4.0);
                    ck_assert_int_eq(mg->out.d[0], (int64_t)n); /* its rows alone */
                    ck_assert_ptr_null(nth_op(&p, g, 5, "sp_slice", 0, NULL));
                } else {
                    ck_assert_int_eq(count_coll(&p, g, 5, G_SP, CK_ALL_TO_ALL, NULL), 0);
                    const plan_op *pg = nth_op(&p, g, 5, "dcp_all_gather", 0, NULL);
                    ck_assert_double_eq(pg->comm_bytes, P * (double)T * hq * (D + 1.0) * 4.0);
                    ck_assert_int_eq(mg->out.d[0], T); /* every row */
                    const plan_op *sl = nth_op(&p, g, 5, "sp_slice", 0, NULL);
                    ck_assert_int_eq(sl->out.d[0], (int64_t)n); /* then its share */
                }
                ck_assert_int_eq(nth_op(&p, g, 5, "o_proj", 0, NULL)->m, (int64_t)n);
                ck_assert_int_eq(nth_op(&p, g, 5, "kv_write", 0, NULL)->out.d[0], T / P);
                total += at->attn.pairs;
            }
            ck_assert_double_eq(total, (double)T * (T + 1) / 2.0);
            plan_free(&p);
            wl_free(&s);
        }
}
END_TEST

/* "Ring runs eager only (no captured graph)" (cp-exchange.md): under a
 * graph mode that captures the prefill, a ring's long prefill runs copied
 * and the load says so; decode_only leaves prefills eager, and they split. */
START_TEST(ring_under_graphs_runs_copied)
{
    const char *modes[] = {"engine.graph=captured", "engine.graph=decode_only"};
    for (int m = 0; m < 2; m++) {
        scenario s;
        plan p;
        const char *extra[] = {modes[m]};
        sp_plan(&s, &p, 4, 2, "by_position", "ring", 32768, extra, 1);
        ck_assert_int_eq(p.step_split[0], m == 1);
        int warned = 0;
        for (int i = 0; i < s.nwarn; i++)
            warned |= strstr(s.warn[i], "the ring runs eager only") != NULL;
        ck_assert_int_eq(warned, m == 0);
        plan_free(&p);
        wl_free(&s);
    }
    cp_err err = {0};
    scenario s;
    const char *bad[] = {"parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
                         "parallel.exchange=ring", "parallel.all_gather_merge=own_rows"};
    ck_assert(tu_try_load(&s, THINKER, bad, 5, &err) != 0);
    ck_assert_msg(strstr(err.msg, "parallel.all_gather_merge"), "%s", err.msg);
    const char *embed[] = {"parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
                           "parallel.exchange=none", "parallel.embed=share"};
    err = (cp_err){0};
    ck_assert(tu_try_load(&s, THINKER, embed, 5, &err) != 0);
    ck_assert_msg(strstr(err.msg, "parallel.embed: share") && strstr(err.msg, "never splits"),
                  "%s", err.msg);
}
END_TEST

/* A tensor live at a program's peak: its bytes and the op after its
 * allocation (what made it). */
typedef struct live_t {
    double bytes;
    const char *by;
    int32_t layer;
} live_t;

/* Walk program g's memory ops in program order (one step: program order is
 * time order on a rank): the peak of the step's activations and buffers,
 * the phase of the op that set it, and the tensors live there (a free
 * releases the youngest live allocation of its size). */
static double step_peak(const plan *p, int g, int *phase, live_t *at_peak, int *nlive)
{
    enum { MAXL = 512 };
    live_t live[MAXL];
    int n = 0;
    double cur = 0, peak = 0;
    const plan_prog *pg = &p->progs[g];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->kind != OPK_MEM || o->step < 0 ||
            (o->mem_cat != MC_ACTIVATIONS && o->mem_cat != MC_COMM_BUFFER))
            continue;
        cur += o->mem_bytes;
        if (o->mem_bytes > 0) {
            const char *by = "?";
            for (uint32_t j = i + 1; j < pg->nops; j++)
                if (pg->ops[j].kind != OPK_MEM) {
                    by = pg->ops[j].name;
                    break;
                }
            ck_assert_int_lt(n, MAXL);
            live[n++] = (live_t){o->mem_bytes, by, o->layer};
        } else {
            for (int k = n; k-- > 0;)
                if (fabs(live[k].bytes + o->mem_bytes) < 0.5) {
                    memmove(&live[k], &live[k + 1], (size_t)(n - k - 1) * sizeof *live);
                    n--;
                    break;
                }
        }
        if (cur > peak) {
            peak = cur;
            *phase = o->phase;
            memcpy(at_peak, live, (size_t)n * sizeof *live);
            *nlive = n;
        }
    }
    return peak;
}

/* cp-exchange.md: peak = resident + the larger of the attention and the
 * MLP phase.  Each strategy at TP4 x SP2 and TP2 x SP4, 32K (one prefill
 * step, the pytorch set's eager memory): the peak's phase and the tensors
 * live at it are listed; two strategies share a peak only when it lies in
 * the same phase, and then in the FFN (MoE) phase, which every strategy
 * runs alike on its rows; the attention phase differs between them. */
START_TEST(peak_tensors_by_strategy)
{
    static const char *const ex[] = {"none", "all_gather", "ring", "ring_kv", "ulysses"};
    static const int shapes[][2] = {{4, 2}, {2, 4}};
    for (size_t sh = 0; sh < 2; sh++) {
        double peak[5];
        int phase[5];
        for (size_t e = 0; e < 5; e++) {
            scenario s;
            plan p;
            sp_plan(&s, &p, shapes[sh][0], shapes[sh][1],
                    e == 4 ? "by_head" : "by_position", ex[e], 32768, NULL, 0);
            live_t lv[512];
            int nl = 0;
            peak[e] = step_peak(&p, 0, &phase[e], lv, &nl);
            printf("TP%d x SP%d %-10s peak %.3f GB in %s:", shapes[sh][0], shapes[sh][1], ex[e],
                   peak[e] / 1e9, plan_phase_name(phase[e]));
            for (int k = 0; k < nl; k++)
                if (lv[k].bytes >= 1e7)
                    printf(" %s(L%d) %.0f MB", lv[k].by, lv[k].layer, lv[k].bytes / 1e6);
            printf("\n");
            plan_free(&p);
            wl_free(&s);
        }
        for (size_t a = 0; a < 5; a++)
            for (size_t c = a + 1; c < 5; c++)
                if (fabs(peak[a] - peak[c]) < 1.0)
                    ck_assert_msg(phase[a] == phase[c] && phase[a] == PH_FFN,
                                  "%s and %s share a peak in phases %d, %d", ex[a], ex[c],
                                  phase[a], phase[c]);
    }
}
END_TEST

/* all_gather_tensors = kv: one all-gather of k/v per layer, and each
 * rank's own queries over the gathered keys with the kernels of its split:
 * contiguous one causal bottom-right call; zigzag a reorder copy and one
 * call per chunk; striped one call per KV stripe and P - 1 LSE merges.  The
 * calls count exactly the causal pairs of the rank's queries. */
START_TEST(all_gather_kv_kernels)
{
    const char *splits[] = {"striped", "contiguous", "zigzag"};
    const char *calls[] = {"stripe_attention", "attention", "attention"};
    const long T = 32768;
    const int P = 2, hq = HEADS / 4, hkv = 1;
    const double n = (double)T / P, m = (double)T / (2 * P);
    for (int sp_i = 0; sp_i < 3; sp_i++) {
        scenario s;
        plan p;
        char split[64];
        snprintf(split, sizeof split, "parallel.split=%s", splits[sp_i]);
        const char *extra[] = {split, "parallel.all_gather_tensors=kv"};
        sp_plan(&s, &p, 4, P, "by_position", "all_gather", T, extra, 2);
        double total = 0, first = 0, last = 0;
        for (int g = 0; g < P; g++) {
            double bytes = 0;
            ck_assert_int_eq(count_coll(&p, g, 5, G_SP, CK_ALL_GATHER, &bytes), 1);
            ck_assert_double_eq(bytes, (double)T * 2.0 * hkv * D * 2.0);
            ck_assert_int_eq(count_coll(&p, g, 5, G_SP, CK_ALL_TO_ALL, NULL), 0);
            double pairs;
            int ncalls = sum_calls(&p, g, calls[sp_i], &pairs);
            const plan_op *at = nth_op(&p, g, 5, calls[sp_i], 0, NULL);
            ck_assert_int_eq(at->attn.heads, hq);
            ck_assert_int_eq(at->layout, TL_LOCAL);
            int merges = 0;
            while (nth_op(&p, g, 5, "stripe_merge", merges, NULL))
                merges++;
            int reorders = nth_op(&p, g, 5, "sp_kv_reorder", 0, NULL) != NULL;
            double want;
            if (sp_i == 0) { /* positions g, g+2, ...: query x sees x + 1 keys */
                ck_assert_int_eq(ncalls, P);
                ck_assert_int_eq(merges, P - 1);
                ck_assert_int_eq(at->attn.q_len, (int64_t)n);
                want = n * (g + 1.0) + P * n * (n - 1.0) / 2.0;
            } else if (sp_i == 1) {
                ck_assert_int_eq(ncalls, 1);
                ck_assert_int_eq(at->attn.kv_len, (int64_t)((g + 1) * n));
                want = run_pairs(g * n, n);
            } else {
                ck_assert_int_eq(ncalls, 2);
                ck_assert_int_eq(at->attn.kv_len, (int64_t)((g + 1) * m));
                want = run_pairs(g * m, m) + run_pairs((2 * P - 1 - g) * m, m);
            }
            ck_assert_int_eq(reorders, sp_i == 2);
            if (sp_i != 0)
                ck_assert_int_eq(merges, 0);
            ck_assert_double_eq(pairs, want);
            ck_assert_int_eq(nth_op(&p, g, 5, "kv_write", 0, NULL)->out.d[0], T / P);
            total += pairs;
            if (g == 0)
                first = pairs;
            last = pairs;
        }
        ck_assert_double_eq(total, (double)T * (T + 1) / 2.0);
        if (sp_i == 1) /* causal imbalance: the last rank ~ (2P-1) x the first */
            ck_assert_double_gt(last / first, 2.9);
        else
            ck_assert_double_lt(fabs(last / first - 1.0), 0.01);
        plan_free(&p);
        wl_free(&s);
    }
}
END_TEST

/* ---- ring ------------------------------------------------------------------------- */

static void check_ring(int tp, int P, int overlap)
{
    scenario s;
    plan p;
    const long T = 16384;
    const double n = (double)T / P;
    const int hq = HEADS / tp;
    const char *extra[] = {overlap ? "parallel.ring_overlap=true" : "parallel.ring_overlap=false"};
    sp_plan(&s, &p, tp, P, "by_position", "ring", T, extra, 1);
    ck_assert_int_eq(p.nprogs, P);
    double total = 0;
    for (int me = 0; me < P; me++) {
        for (int l = 0; l < LAYERS; l += 23) {
            ck_assert_int_eq(count_ops(&p, me, 0, l, OPK_P2P, "ring_hop", NULL), P - 1);
            ck_assert_int_eq(count_ops(&p, me, 0, l, OPK_P2P, "ring_return", NULL), P - 1);
            ck_assert_int_eq(count_ops(&p, me, 0, l, OPK_COMPUTE, "ring_attention", NULL), P);
            /* K/V never move: no collective over the SP group */
            for (int k = 0; k < CK_COUNT; k++)
                ck_assert_int_eq(count_coll(&p, me, l, G_SP, (plan_coll)k, NULL), 0);
            ck_assert_int_eq(nth_op(&p, me, l, "kv_write", 0, NULL)->out.d[0], (int64_t)n);
            for (int j = 0; j < P; j++) {
                uint32_t ia;
                const plan_op *at = nth_op(&p, me, l, "ring_attention", j, &ia);
                int a = ((me - j) % P + P) % P; /* stripe of the visiting queries */
                ck_assert_int_eq(at->attn.q_len, (int64_t)n);
                ck_assert_int_eq(at->attn.kv_len, (int64_t)n);
                ck_assert_int_eq(at->attn.heads, hq);
                ck_assert_double_eq(at->attn.pairs,
                                    me <= a ? n * (n + 1) / 2.0 : n * (n - 1) / 2.0);
                ck_assert_int_eq(at->eager, 1);
                total += l == 0 ? at->attn.pairs : 0;
                if (j == 0)
                    continue;
                uint32_t ih, ir, ip;
                const plan_op *hop = nth_op(&p, me, l, "ring_hop", j - 1, &ih);
                ck_assert_int_eq(hop->stream, ST_COMM);
                ck_assert_int_eq(hop->group, G_SP);
                ck_assert_int_eq(hop->send_off, 1);
                ck_assert_int_eq(hop->recv_off, -1);
                ck_assert_double_eq(hop->comm_bytes, n * hq * D * 2.0);
                ck_assert_double_eq(hop->recv_bytes, n * hq * D * 2.0);
                ck_assert_int_eq(hop->eager, 1);
                ck_assert(depends_on(&p, me, ia, ih)); /* round j attends the block hop j brought */
                nth_op(&p, me, l, "ring_attention", j - 1, &ip);
                if (overlap) {
                    /* posted before the previous round's attention, waiting only
                     * for the one before it (double buffering) */
                    ck_assert_uint_lt(ih, ip);
                    if (j >= 2) {
                        uint32_t ipp;
                        nth_op(&p, me, l, "ring_attention", j - 2, &ipp);
                        ck_assert(depends_on(&p, me, ih, ipp));
                    }
                } else {
                    ck_assert_uint_gt(ih, ip);
                    ck_assert(depends_on(&p, me, ih, ip));
                }
                const plan_op *ret = nth_op(&p, me, l, "ring_return", j - 1, &ir);
                ck_assert_int_eq(ret->stream, ST_COMM2);
                ck_assert_int_eq(ret->send_off, -j);
                ck_assert_int_eq(ret->recv_off, j);
                ck_assert_double_eq(ret->comm_bytes, n * hq * (D * 2.0 + 4.0));
                ck_assert(depends_on(&p, me, ir, ia));
            }
            ck_assert_int_eq(count_ops(&p, me, 0, l, OPK_COMPUTE, "ring_merge", NULL), P - 1);
        }
    }
    /* every (query, key) pair of the step is computed once */
    ck_assert_double_eq(total, (double)T * (T + 1) / 2.0);
    plan_free(&p);
    wl_free(&s);
}

START_TEST(ring_hops_closed_form)
{
    check_ring(4, 2, 0);
    check_ring(4, 2, 1);
    check_ring(2, 4, 0);
    check_ring(2, 4, 1);
}
END_TEST

/* ---- the two rings: pass-KV, zigzag, cached prefixes ------------------------------------ */

/* attn_run_pairs against enumeration: stride-1 keys under queries of stride 1
 * or P, and queries and keys of one stride P, at every offset. */
START_TEST(run_pairs_match_enumeration)
{
    for (int P = 2; P <= 4; P++) {
        for (int qs = 1; qs <= P; qs += P - 1) {
            for (int ks = 1; ks <= qs; ks += qs > 1 ? qs - 1 : 1) {
                for (int64_t qlo = 0; qlo < 9; qlo++)
                    for (int64_t qn = 0; qn < 7; qn++)
                        for (int64_t klo = 0; klo < 9; klo++)
                            for (int64_t kn = 0; kn < 7; kn++) {
                                attn_run q = {qlo, qn, qs}, k = {klo, kn, ks};
                                double want = 0;
                                for (int64_t i = 0; i < qn; i++)
                                    for (int64_t j = 0; j < kn; j++)
                                        want += klo + j * ks <= qlo + i * qs;
                                ck_assert_double_eq(attn_run_pairs(&q, &k), want);
                            }
            }
        }
    }
}
END_TEST

/* Chunk c of n positions cut into `parts` (the first n % parts one longer). */
static double chunk_len(long n, int parts, int c)
{
    return (double)(n / parts + (c < n % parts));
}

/* Rows of SP rank r's share of T new tokens after C cached ones (striped:
 * the positions x % P == r of [C, C + T); zigzag: chunks r and 2P-1-r of
 * the step), and of the KV positions it stores of the C + T (striped:
 * stripe r; zigzag: chunks r and 2P-1-r of the prefix and of the step). */
static double share_rows(long C, long T, int P, int r, int zigzag)
{
    if (zigzag)
        return chunk_len(T, 2 * P, r) + chunk_len(T, 2 * P, 2 * P - 1 - r);
    return (double)(attn_stripe_below(C + T, r, P) - attn_stripe_below(C, r, P));
}

static double kv_rows(long C, long T, int P, int r, int zigzag)
{
    if (zigzag)
        return share_rows(0, C, P, r, 1) + share_rows(C, T, P, r, 1);
    return (double)attn_stripe_below(C + T, r, P);
}

/* Sum of the attention pairs of the calls named `name` in (step 0, layer)
 * of program g, and their count. */
static int call_pairs(const plan *p, int g, int layer, const char *name, double *pairs)
{
    int n = 0;
    const plan_op *o;
    *pairs = 0;
    while ((o = nth_op(p, g, layer, name, n, NULL)) != NULL) {
        *pairs += o->attn.pairs;
        n++;
    }
    return n;
}

/* pass-KV (exchange ring_kv): per layer and rank, the packed local block,
 * P - 1 hops of the block padded to the largest (an uneven T: stripe 0 or
 * the first chunks hold one more position), P attention calls of the
 * rank's queries over each rank's block (kv_len its real size), P - 1 LSE
 * merges, no SP collective; the hops' order against the attention follows
 * ring_overlap as pass-Q's does; every causal pair counted once. */
static void check_ring_kv(int tp, int P, int overlap, int zigzag)
{
    scenario s;
    plan p;
    const long T = 16387;
    const int hq = HEADS / tp, hkv = KV_HEADS / tp > 0 ? KV_HEADS / tp : 1;
    const char *extra[] = {overlap ? "parallel.ring_overlap=true" : "parallel.ring_overlap=false",
                           zigzag ? "parallel.split=zigzag" : "parallel.split=striped"};
    sp_plan(&s, &p, tp, P, "by_position", "ring_kv", T, extra, 2);
    const double ab = dtype_bytes(s.a_dtype);
    double most = 0, total = 0;
    for (int r = 0; r < P; r++)
        most = fmax(most, kv_rows(0, T, P, r, zigzag));
    ck_assert_double_gt(most, (double)T / P); /* padded: some block is smaller */
    ck_assert_int_eq(p.step_split[0], 1);
    ck_assert_int_eq(p.step_ring[0], PR_PASS_KV);
    for (int me = 0; me < P; me++) {
        for (int l = 0; l < LAYERS; l += 23) {
            ck_assert_int_eq(count_ops(&p, me, 0, l, OPK_P2P, "ring_kv_hop", NULL), P - 1);
            ck_assert_int_eq(count_ops(&p, me, 0, l, OPK_P2P, NULL, NULL), P - 1);
            ck_assert_int_eq(count_ops(&p, me, 0, l, OPK_COMPUTE, "ring_kv_attention", NULL), P);
            ck_assert_int_eq(count_ops(&p, me, 0, l, OPK_COMPUTE, "ring_kv_merge", NULL), P - 1);
            ck_assert_int_eq(count_ops(&p, me, 0, l, OPK_COMPUTE, "ring_kv_pack", NULL), 1);
            for (int k = 0; k < CK_COUNT; k++)
                ck_assert_int_eq(count_coll(&p, me, l, G_SP, (plan_coll)k, NULL), 0);
            double mine = share_rows(0, T, P, me, zigzag);
            ck_assert_int_eq(nth_op(&p, me, l, "kv_write", 0, NULL)->out.d[0], (int64_t)mine);
            for (int j = 0; j < P; j++) {
                uint32_t ia;
                const plan_op *at = nth_op(&p, me, l, "ring_kv_attention", j, &ia);
                int src = ((me - j) % P + P) % P; /* the block round j attends */
                ck_assert_int_eq(at->attn.q_len, (int64_t)mine);
                ck_assert_int_eq(at->attn.kv_len, (int64_t)kv_rows(0, T, P, src, zigzag));
                ck_assert_int_eq(at->attn.heads, hq);
                ck_assert_int_eq(at->attn.kv_heads, hkv);
                ck_assert_int_eq(at->eager, 1);
                total += l == 0 ? at->attn.pairs : 0;
                if (j == 0)
                    continue;
                uint32_t ih, ip;
                const plan_op *hop = nth_op(&p, me, l, "ring_kv_hop", j - 1, &ih);
                ck_assert_int_eq(hop->stream, ST_COMM);
                ck_assert_int_eq(hop->group, G_SP);
                ck_assert_int_eq(hop->send_off, 1);
                ck_assert_int_eq(hop->recv_off, -1);
                /* k and v of the largest block, whatever the block */
                ck_assert_double_eq(hop->comm_bytes, most * 2.0 * hkv * D * ab);
                ck_assert_double_eq(hop->recv_bytes, most * 2.0 * hkv * D * ab);
                ck_assert_int_eq(hop->eager, 1);
                ck_assert(depends_on(&p, me, ia, ih)); /* round j attends what hop j brought */
                nth_op(&p, me, l, "ring_kv_attention", j - 1, &ip);
                if (overlap) { /* under the previous round's attention */
                    ck_assert_uint_lt(ih, ip);
                    if (j >= 2) {
                        uint32_t ipp;
                        nth_op(&p, me, l, "ring_kv_attention", j - 2, &ipp);
                        ck_assert(depends_on(&p, me, ih, ipp));
                    }
                } else { /* hop, then attention */
                    ck_assert_uint_gt(ih, ip);
                    ck_assert(depends_on(&p, me, ih, ip));
                }
            }
        }
    }
    ck_assert_double_eq(total, (double)T * (T + 1) / 2.0);
    plan_free(&p);
    wl_free(&s);
}

START_TEST(ring_kv_hops_closed_form)
{
    for (int zz = 0; zz < 2; zz++) {
        check_ring_kv(4, 2, 0, zz);
        check_ring_kv(4, 2, 1, zz);
        check_ring_kv(2, 4, 0, zz);
        check_ring_kv(2, 4, 1, zz);
    }
}
END_TEST

/* zigzag (2P chunks, rank r holds chunks r and 2P-1-r) balances the causal
 * work of both rings: every rank's attention pairs (pass-Q: the visiting
 * blocks over its slots; pass-KV: its queries over every block) within 1 %
 * of each other, with and without a cached prefix; pass-Q keeps its hops
 * (the query blocks, padded to none: each hop carries its block) and
 * returns, P - 1 each. */
START_TEST(zigzag_balances_both_rings)
{
    const char *ex[] = {"ring", "ring_kv"};
    const char *call[] = {"ring_attention", "ring_kv_attention"};
    const long T = 32768;
    const int P = 4;
    for (int e = 0; e < 2; e++) {
        for (long C = 0; C <= 8192; C += 8192) {
            scenario s;
            plan p;
            char cached[64];
            snprintf(cached, sizeof cached, "requests.0.cached_tokens=%ld", C);
            const char *extra[] = {"parallel.split=zigzag", cached};
            sp_plan(&s, &p, 2, P, "by_position", ex[e], T, extra, 2);
            double lo = INFINITY, hi = 0, total = 0;
            for (int g = 0; g < P; g++) {
                double pairs;
                ck_assert_int_eq(call_pairs(&p, g, 5, call[e], &pairs), P);
                lo = fmin(lo, pairs);
                hi = fmax(hi, pairs);
                total += pairs;
                if (e == 0) {
                    ck_assert_int_eq(count_ops(&p, g, 0, 5, OPK_P2P, "ring_hop", NULL), P - 1);
                    ck_assert_int_eq(count_ops(&p, g, 0, 5, OPK_P2P, "ring_return", NULL), P - 1);
                }
            }
            ck_assert_double_lt(hi / lo - 1.0, 0.01);
            ck_assert_double_eq(total, (double)T * C + (double)T * (T + 1) / 2.0);
            plan_free(&p);
            wl_free(&s);
        }
    }
}
END_TEST

/* A prefix-cached prefill (cached_tokens C, prompt_tokens T) on split
 * steps: both rings compute only the T new tokens (qkv_proj and kv_write on
 * the share of them), their attention covers C + T keys, the C cached ones
 * already in every rank's share: the ranks' pairs together are the causal
 * pairs of T queries over C + T keys, T C + T (T + 1) / 2.  pass-KV's hops
 * carry the whole local KV (the cached share and the new one, padded);
 * pass-Q's carry the new queries only (as without a prefix) and its
 * returns the partials of the new queries (output + fp32 LSE). */
START_TEST(prefix_cached_pairs)
{
    const char *ex[] = {"ring", "ring_kv"};
    const char *call[] = {"ring_attention", "ring_kv_attention"};
    const long T = 12003, C = 5001;
    for (int P = 2; P <= 4; P += 2) {
        for (int zz = 0; zz < 2; zz++) {
            for (int e = 0; e < 2; e++) {
                scenario s;
                plan p;
                char cached[64];
                snprintf(cached, sizeof cached, "requests.0.cached_tokens=%ld", C);
                const char *extra[] = {zz ? "parallel.split=zigzag" : "parallel.split=striped",
                                       cached};
                sp_plan(&s, &p, 8 / P, P, "by_position", ex[e], T, extra, 2);
                const int tp = 8 / P, hq = HEADS / tp, hkv = KV_HEADS / tp ? KV_HEADS / tp : 1;
                const double ab = dtype_bytes(s.a_dtype);
                double most = 0, total = 0;
                for (int r = 0; r < P; r++)
                    most = fmax(most, kv_rows(C, T, P, r, zz));
                for (int g = 0; g < P; g++) {
                    double pairs, mine = share_rows(C, T, P, g, zz);
                    ck_assert_int_eq(call_pairs(&p, g, 7, call[e], &pairs), P);
                    total += pairs;
                    ck_assert_int_eq(nth_op(&p, g, 7, "qkv_proj", 0, NULL)->m, (int64_t)mine);
                    ck_assert_int_eq(nth_op(&p, g, 7, "kv_write", 0, NULL)->out.d[0],
                                     (int64_t)mine);
                    for (int j = 1; j < P; j++) {
                        int src = ((g - j) % P + P) % P;
                        if (e == 1) {
                            const plan_op *hop = nth_op(&p, g, 7, "ring_kv_hop", j - 1, NULL);
                            ck_assert_double_eq(hop->comm_bytes, most * 2.0 * hkv * D * ab);
                            continue;
                        }
                        const plan_op *hop = nth_op(&p, g, 7, "ring_hop", j - 1, NULL);
                        ck_assert_double_eq(hop->recv_bytes,
                                            share_rows(C, T, P, src, zz) * hq * D * ab);
                        const plan_op *at = nth_op(&p, g, 7, "ring_attention", j, NULL);
                        ck_assert_int_eq(at->attn.q_len, (int64_t)share_rows(C, T, P, src, zz));
                        ck_assert_int_eq(at->attn.kv_len, (int64_t)kv_rows(C, T, P, g, zz));
                        const plan_op *ret = nth_op(&p, g, 7, "ring_return", j - 1, NULL);
                        ck_assert_double_eq(ret->comm_bytes,
                                            share_rows(C, T, P, src, zz) * hq * (D * ab + 4.0));
                    }
                }
                ck_assert_double_eq(total, (double)T * C + (double)T * (T + 1) / 2.0);
                plan_free(&p);
                wl_free(&s);
            }
        }
    }
}
END_TEST

/* The bytes each ring moves per layer and rank as the new tokens T and the
 * cached prefix C grow: pass-Q's query hops and returns grow with T alone
 * (C changes nothing), pass-KV's block hops with C + T. */
static double p2p_bytes(long T, long C, const char *exchange, const char *name)
{
    scenario s;
    plan p;
    char cached[64];
    snprintf(cached, sizeof cached, "requests.0.cached_tokens=%ld", C);
    const char *extra[] = {cached};
    sp_plan(&s, &p, 2, 4, "by_position", exchange, T, extra, 1);
    double bytes = 0;
    for (uint32_t i = 0; i < p.progs[0].nops; i++) {
        const plan_op *o = &p.progs[0].ops[i];
        if (o->layer == 0 && o->kind == OPK_P2P && !strcmp(o->name, name))
            bytes += o->comm_bytes;
    }
    plan_free(&p);
    wl_free(&s);
    return bytes;
}

START_TEST(ring_bytes_with_tokens)
{
    double q1 = p2p_bytes(8192, 0, "ring", "ring_hop");
    double r1 = p2p_bytes(8192, 0, "ring", "ring_return");
    ck_assert_double_eq(p2p_bytes(8192, 65536, "ring", "ring_hop"), q1);
    ck_assert_double_eq(p2p_bytes(8192, 65536, "ring", "ring_return"), r1);
    ck_assert_double_eq(p2p_bytes(16384, 65536, "ring", "ring_hop"), 2 * q1);
    ck_assert_double_eq(p2p_bytes(16384, 65536, "ring", "ring_return"), 2 * r1);
    double kv1 = p2p_bytes(8192, 0, "ring_kv", "ring_kv_hop");
    ck_assert_double_eq(p2p_bytes(8192, 8192, "ring_kv", "ring_kv_hop"), 2 * kv1);
    ck_assert_double_eq(p2p_bytes(16384, 0, "ring_kv", "ring_kv_hop"), 2 * kv1);
    /* GQA (2 x 2 KV heads < 16 q heads per TP rank): a K/V block is a
     * quarter of a query block without a prefix */
    ck_assert_double_eq(kv1, q1 / 4);
}
END_TEST

/* ring_select: rule, the terms of ex_ring_rule against closed forms (TP4 x
 * SP2 inside a node, synchronous hops: every hop exposed), its pick and
 * the plan's record of it; the builder's override of a step's ring
 * (ring_select: simulate builds both) and which ring a step would run. */
START_TEST(ring_rule_and_overrides)
{
    const long T = 8192;
    scenario s;
    const char *sets[] = {"parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
                          "parallel.exchange=ring", "parallel.ring_select=rule",
                          "requests.0.prompt_tokens=8192"};
    tu_load(&s, THINKER, sets, 6);
    const double ab = dtype_bytes(s.a_dtype), hq = HEADS / 4, hkv = 1;
    ex_ring_est e;
    ck_assert_int_eq(ex_ring_rule(&s, T, 0, &e), PR_PASS_KV);
    ck_assert_double_eq(e.kv_bytes, T / 2 * 2.0 * hkv * D * ab);
    ck_assert_double_eq(e.q_bytes, T / 2 * hq * D * ab);
    ck_assert_double_eq(e.ret_bytes, T / 2 * hq * (D * ab + 4.0));
    ck_assert_double_eq(e.rate, plat_link_rate(&s.plat, &s.plat.intra));
    ck_assert_double_gt(e.attn_s, 0);
    /* each hop and return: the eager call's fixed cost, the latency, the bytes */
    const double call = s.plat.coll_latency_eager + e.latency;
    ck_assert_double_eq_tol(e.exposed_kv_s, call + e.kv_bytes / e.rate, 1e-15);
    ck_assert_double_eq_tol(e.exposed_q_s, 2 * call + (e.q_bytes + e.ret_bytes) / e.rate,
                            1e-15);
    /* 97 % of a long context cached: the K/V blocks outweigh the queries */
    ck_assert_int_eq(ex_ring_rule(&s, T, 262144, &e), PR_PASS_Q);
    ck_assert_double_gt(e.exposed_kv_s, e.exposed_q_s);
    ck_assert_int_eq(build_step_ring(&s, T, 0, PR_NONE), PR_PASS_KV);
    ck_assert_int_eq(build_step_ring(&s, T, 262144, PR_NONE), PR_PASS_Q);
    ck_assert_int_eq(build_step_ring(&s, T, 0, PR_PASS_Q), PR_PASS_Q);
    ck_assert_int_eq(build_step_ring(&s, 1, T, PR_PASS_KV), PR_NONE); /* a decode: copied */

    /* the plan builds and records the rule's pick; an override builds the other */
    plan p;
    build_plan(&s, &p);
    ck_assert_int_eq(p.step_ring[0], PR_PASS_KV);
    ck_assert_int_eq(tu_count(&p, 0, "ring_kv_hop", 3), 1);
    ck_assert_int_eq(tu_count(&p, 0, "ring_hop", 3), 0);
    plan_free(&p);
    build_plan_ring(&s, PR_PASS_Q, &p);
    ck_assert_int_eq(p.step_ring[0], PR_PASS_Q);
    ck_assert_int_eq(tu_count(&p, 1, "ring_hop", 3), 1);
    ck_assert_int_eq(tu_count(&p, 1, "ring_kv_hop", 3), 0);
    plan_free(&p);
    sc_seq one = {T, 262144, 1, 0};
    sc_batch bt = {&one, 1, 1};
    build_step_plan(&s, &bt, 0, &p);
    ck_assert_int_eq(p.step_ring[0], PR_PASS_Q);
    plan_free(&p);
    build_step_plan_ring(&s, &bt, 0, PR_PASS_KV, &p);
    ck_assert_int_eq(p.step_ring[0], PR_PASS_KV);
    ck_assert_int_eq(tu_count(&p, 0, "ring_kv_attention", 3), 2);
    plan_free(&p);
    wl_free(&s);

    /* fixed: the exchange as written; not a ring: no ring at all */
    const char *kv[] = {"parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
                        "parallel.exchange=ring_kv"};
    tu_load(&s, THINKER, kv, 4);
    ck_assert_int_eq(build_step_ring(&s, T, 262144, PR_NONE), PR_PASS_KV);
    wl_free(&s);
    const char *ag[] = {"parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
                        "parallel.exchange=all_gather"};
    tu_load(&s, THINKER, ag, 4);
    ck_assert_int_eq(build_step_ring(&s, T, 0, PR_PASS_KV), PR_NONE);
    build_plan_ring(&s, PR_PASS_KV, &p);
    ck_assert_int_eq(p.step_ring[0], PR_NONE);
    ck_assert_int_eq(tu_count(&p, 0, "ring_kv_hop", -2), 0);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* ---- DCP merge ------------------------------------------------------------------------ */

/* exchange none on position storage: every step copied; each rank attends
 * all queries over its own slots and all-gathers fp32 partials + LSE. */
START_TEST(dcp_copied_steps)
{
    scenario s;
    plan p;
    const long T = 8192;
    const int P = 2, hq = HEADS / 4;
    const char *extra[] = {"requests.0.decode_tokens=2"};
    sp_plan(&s, &p, 4, P, "by_position", "none", T, extra, 1);
    double total = 0;
    for (int me = 0; me < P; me++) {
        const double nk = (double)T / P;
        ck_assert_int_eq(nth_op(&p, me, 3, "qkv_proj", 0, NULL)->m, T);
        ck_assert_int_eq(nth_op(&p, me, 3, "qkv_proj", 0, NULL)->layout, TL_FULL);
        ck_assert_int_eq(nth_op(&p, me, 3, "kv_write", 0, NULL)->out.d[0], T / P);
        const plan_op *at = nth_op(&p, me, 3, "dcp_attention", 0, NULL);
        ck_assert_int_eq(at->attn.q_len, T);
        ck_assert_int_eq(at->attn.kv_len, T / P);
        /* key me + jP is seen by the T - me - jP queries at or after it */
        ck_assert_double_eq(at->attn.pairs, nk * (T - me) - P * nk * (nk - 1) / 2.0);
        total += at->attn.pairs;
        double bytes = 0;
        ck_assert_int_eq(count_coll(&p, me, 3, G_SP, CK_ALL_GATHER, &bytes), 1);
        ck_assert_double_eq(bytes, (double)P * T * hq * (D + 1) * 4.0);
        ck_assert_ptr_nonnull(nth_op(&p, me, 3, "dcp_merge", 0, NULL));
        /* MLP/MoE duplicated: the whole step on every SP rank */
        const plan_op *gu = nth_op(&p, me, 3, "expert_gate_up", 0, NULL);
        ck_assert_int_eq(gu->m, T * TOPK); /* routed rows in all */
        ck_assert_int_eq(count_ops(&p, me, 0, -1, OPK_COMPUTE, "sp_split", NULL), 0);
        /* decode step 0 writes position T, stored by rank T % 2 = 0 */
        ck_assert_int_eq(count_ops(&p, me, 1, 0, OPK_COMPUTE, "kv_write", NULL), me == 0);
        const plan_op *dat = NULL;
        ck_assert_int_eq(count_ops(&p, me, 1, 0, OPK_COMPUTE, "dcp_attention", &dat), 1);
        ck_assert_int_eq(dat->attn.q_len, 1);
        ck_assert_int_eq(dat->attn.kv_len, me == 0 ? T / P + 1 : T / P);
    }
    ck_assert_double_eq(total, (double)T * (T + 1) / 2.0);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* ---- pass-Q decode (copied decode steps of a ring exchange) ------------------------------ */

/* Ops of program g in (step 0, layer) named `name`, summed: rows of their
 * first output dimension into *rows, attention pairs into *pairs (either
 * may be NULL); the last one's index into *last (NULL: not kept). */
static int sum_ops(const plan *p, int g, int layer, const char *name, double *rows,
                   double *pairs, uint32_t *last)
{
    int n = 0;
    const plan_prog *pg = &p->progs[g];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->step != 0 || o->layer != layer || strcmp(o->name, name) != 0)
            continue;
        if (rows)
            *rows += (double)o->out.d[0];
        if (pairs)
            *pairs += o->attn.pairs;
        if (last)
            *last = i;
        n++;
    }
    return n;
}

/* One batched decode step of B sequences (contexts 5000 + 7 i, so their new
 * positions fall on every stripe) on the thinker, TP tp x SP P, exchange
 * ring or ring_kv: per layer and SP rank, P - 1 hops of ceil(B/P) rows of
 * q, k and v (padded), qkv_proj on the rank's padded block, the rounds'
 * decode calls over the rank's slots with the exact pairs (every key once
 * over the ranks), the new K/V written where they are stored (x % P), one
 * all-to-all of the fp32 partials after the last round, the merge, the
 * all-gather of the merged blocks, and the rest of the layer copied. */
static void check_ring_decode(int tp, int P, const char *exchange, int overlap, int B)
{
    char sets[5][64];
    snprintf(sets[0], sizeof sets[0], "parallel.tp=%d", tp);
    snprintf(sets[1], sizeof sets[1], "parallel.sp=%d", P);
    snprintf(sets[2], sizeof sets[2], "parallel.exchange=%s", exchange);
    snprintf(sets[3], sizeof sets[3], "parallel.ring_overlap=%s", overlap ? "true" : "false");
    snprintf(sets[4], sizeof sets[4], "parallel.kv_storage=by_position");
    const char *const set[] = {sets[0], sets[1], sets[2], sets[3], sets[4],
                               "parallel.decode=pass_q"};
    scenario s;
    plan p;
    tu_load(&s, THINKER, set, 6);
    sc_seq seq[8];
    for (int i = 0; i < B; i++)
        seq[i] = (sc_seq){1, 5000 + 7 * i, 1, 0};
    sc_batch bt = {seq, B, 0};
    build_step_plan(&s, &bt, 0, &p);
    ck_assert_int_eq(p.step_split[0], 0);
    ck_assert_int_eq(p.step_ring[0], PR_NONE); /* a copied step: no split ring */
    const long bq = (B + P - 1) / P;
    ck_assert_int_eq(ex_decode_block(B, P), bq);
    const int hq = HEADS / tp, hkv = KV_HEADS / tp > 0 ? KV_HEADS / tp : 1;
    double all_pairs = 0;
    for (int me = 0; me < P; me++) {
        for (int l = 0; l < LAYERS; l += 23) {
            ck_assert_int_eq(nth_op(&p, me, l, "qkv_proj", 0, NULL)->m, bq);
            ck_assert_int_eq(count_ops(&p, me, 0, l, OPK_COMPUTE, "dcp_attention", NULL), 0);
            ck_assert_int_eq(count_ops(&p, me, 0, l, OPK_P2P, "ring_decode_hop", NULL), P - 1);
            uint32_t last_hop = 0;
            for (int j = 0; j < P - 1; j++) {
                const plan_op *hop = nth_op(&p, me, l, "ring_decode_hop", j, &last_hop);
                ck_assert_int_eq(hop->group, G_SP);
                ck_assert_int_eq(hop->stream, ST_COMM);
                ck_assert_int_eq(hop->send_off, 1);
                ck_assert_int_eq(hop->recv_off, -1);
                /* the block's queries and new K/V, bf16 */
                ck_assert_double_eq(hop->comm_bytes, (double)bq * (hq + 2 * hkv) * D * 2.0);
                ck_assert_double_eq(hop->recv_bytes, hop->comm_bytes);
            }
            /* the rounds: block b = (me - j) mod P holds sequences b bq ..;
             * its query at position x sees the slots y <= x, y % P == me */
            double want_pairs = 0, want_rows = 0;
            int want_calls = 0;
            for (int blk = 0; blk < P; blk++) {
                double pr = 0;
                long real = 0;
                for (long i = blk * bq; i < (blk + 1) * bq && i < B; i++) {
                    long x = seq[i].prefix;
                    pr += x >= me ? (double)((x - me) / P + 1) : 0;
                    want_rows += x % P == me;
                    real++;
                }
                /* every block runs its call (Meta's): a padding row reads one
                 * key, and so does a block of no key on this rank */
                pr += (double)(bq - real);
                want_pairs += pr > (double)bq ? pr : (double)bq;
                want_calls++;
            }
            double pairs = 0, rows = 0;
            uint32_t last_round = 0;
            ck_assert_int_eq(
                sum_ops(&p, me, l, "ring_decode_attention", NULL, &pairs, &last_round),
                want_calls);
            ck_assert_double_eq(pairs, want_pairs);
            all_pairs += l == 0 ? pairs : 0;
            const plan_op *at = nth_op(&p, me, l, "ring_decode_attention", 0, NULL);
            ck_assert_int_eq(at->kclass, KC_ATTENTION);
            ck_assert_int_eq(at->attn.q_len, 1);
            ck_assert_int_eq(at->attn.causal, 0);
            ck_assert_int_eq(at->attn.heads, hq);
            ck_assert_int_eq(at->attn.kv_heads, hkv);
            ck_assert_int_le(at->attn.batch, bq);
            sum_ops(&p, me, l, "kv_write", &rows, NULL, NULL);
            ck_assert_double_eq(rows, want_rows);
            /* the partials to their owners after the last round, then the merge */
            double bytes = 0;
            uint32_t a2a, merge;
            ck_assert_int_eq(count_coll(&p, me, l, G_SP, CK_ALL_TO_ALL, &bytes), 1);
            ck_assert_double_eq(bytes, (double)P * bq * hq * (D + 1) * 4.0);
            nth_op(&p, me, l, "ring_decode_all_to_all", 0, &a2a);
            ck_assert_uint_gt(a2a, last_round);
            ck_assert_uint_gt(a2a, last_hop);
            const plan_op *m = nth_op(&p, me, l, "ring_decode_merge", 0, &merge);
            ck_assert_uint_gt(merge, a2a);
            ck_assert_int_eq(m->in.d[0], bq);
            ck_assert_int_eq(count_coll(&p, me, l, G_SP, CK_ALL_GATHER, &bytes), 1);
            ck_assert_double_eq(bytes, (double)P * bq * hq * D * 2.0);
            /* the rest of the layer copied: the whole batch on every rank */
            ck_assert_int_eq(nth_op(&p, me, l, "o_proj", 0, NULL)->m, B);
            ck_assert_int_eq(nth_op(&p, me, l, "router", 0, NULL)->m, B);
        }
    }
    double every = 0; /* each query sees every key at or before it, once */
    for (int i = 0; i < B; i++)
        every += (double)seq[i].prefix + 1.0;
    /* plus one key per padding row and per block with no key on a rank */
    ck_assert_double_ge(all_pairs, every);
    ck_assert_double_le(all_pairs, every + (double)P * P * bq);
    plan_free(&p);
    wl_free(&s);
}

START_TEST(ring_decode_closed_form)
{
    const int batches[] = {1, 3, 8};
    for (int k = 0; k < 3; k++) {
        check_ring_decode(4, 2, "ring", 0, batches[k]);
        check_ring_decode(2, 4, "ring", 0, batches[k]);
        check_ring_decode(2, 4, "ring", 1, batches[k]);
        check_ring_decode(2, 4, "ring_kv", 0, batches[k]);
    }
}
END_TEST

/* A request's decode steps (build_plan: a batch of one) on a ring: each
 * runs the pass-Q decode; after 2P of them every SP rank's KV grew by the
 * same two positions (x % P, as ex_kv_bytes counts them).  all_gather,
 * none and a copied batch with a multi-token sequence keep the DCP merge. */
START_TEST(ring_decode_kv_balance)
{
    const int P = 4;
    const long T = 8192;
    scenario s;
    plan p;
    const char *extra[] = {"requests.0.decode_tokens=8", "parallel.min_tokens=4096",
                           "parallel.decode=pass_q"};
    sp_plan(&s, &p, 2, P, "by_position", "ring", T, extra, 3);
    ck_assert_int_eq(p.nsteps, 1 + 2 * P);
    double grew[4] = {0};
    for (int me = 0; me < P; me++) {
        for (int st = 1; st <= 2 * P; st++) {
            ck_assert_int_eq(count_ops(&p, me, st, 0, OPK_P2P, "ring_decode_hop", NULL), P - 1);
            ck_assert_int_eq(count_ops(&p, me, st, 0, OPK_COMPUTE, "dcp_attention", NULL), 0);
        }
        const plan_prog *pg = &p.progs[me];
        for (uint32_t i = 0; i < pg->nops; i++) {
            const plan_op *o = &pg->ops[i];
            if (o->kind == OPK_MEM && o->mem_cat == MC_KV_CACHE && o->step >= 1 && o->layer >= 0)
                grew[me] += o->mem_bytes;
        }
        ex_ctx x;
        memset(&x, 0, sizeof x);
        x.b.s = &s;
        x.b.a = &s.model;
        x.b.tp = 2;
        x.b.kvb = dtype_bytes(s.kv_dtype);
        ex_init(&x, me);
        ck_assert_double_eq_tol(grew[me], ex_kv_bytes(&x, T + 2 * P) - ex_kv_bytes(&x, T), 1e-6);
        /* two positions of the rank's two KV heads, K and V, every layer */
        ck_assert_double_eq_tol(grew[me], 2.0 * LAYERS * 2 * 2 * D * x.b.kvb, 1e-6);
    }
    plan_free(&p);
    wl_free(&s);

    const char *ex[] = {"all_gather", "none"};
    for (int k = 0; k < 2; k++) {
        sp_plan(&s, &p, 2, P, "by_position", ex[k], T, extra, 2);
        ck_assert_int_eq(count_ops(&p, 1, 1, 0, OPK_COMPUTE, "dcp_attention", NULL), 1);
        ck_assert_int_eq(tu_count(&p, 1, "ring_decode_hop", -2), 0);
        plan_free(&p);
        wl_free(&s);
    }
    const char *ring[] = {"parallel.tp=2", "parallel.sp=4", "parallel.kv_storage=by_position",
                          "parallel.exchange=ring", "parallel.decode=pass_q"};
    tu_load(&s, THINKER, ring, 5);
    sc_seq mix[2] = {{1, 5000, 1, 0}, {100, 0, 1, 0}};
    sc_batch bt = {mix, 2, 0};
    build_step_plan(&s, &bt, 0, &p);
    ck_assert_int_eq(count_ops(&p, 0, 0, 0, OPK_COMPUTE, "dcp_attention", NULL), 2);
    ck_assert_int_eq(tu_count(&p, 0, "ring_decode_hop", -2), 0);
    plan_free(&p);
    wl_free(&s);
    /* parallel.decode: dcp (the default) keeps the DCP merge on a ring; auto
     * takes pass-Q from one sequence per SP rank (here 4) */
    sc_seq dec[4];
    for (int i = 0; i < 4; i++)
        dec[i] = (sc_seq){1, 5000 + i, 1, 0};
    const char *modes[] = {"parallel.decode=dcp", "parallel.decode=auto"};
    for (int m = 0; m < 2; m++)
        for (int n = 3; n <= 4; n++) {
            ring[4] = modes[m];
            tu_load(&s, THINKER, ring, 5);
            sc_batch b4 = {dec, n, 0};
            build_step_plan(&s, &b4, 0, &p);
            int pass_q = m == 1 && n >= 4;
            ck_assert_int_eq(tu_count(&p, 0, "ring_decode_hop", -2) > 0, pass_q);
            ck_assert_int_eq(count_ops(&p, 0, 0, 0, OPK_COMPUTE, "dcp_attention", NULL) > 0,
                             !pass_q);
            plan_free(&p);
            wl_free(&s);
        }
}
END_TEST

/* ---- split vs copied -------------------------------------------------------------------- */

START_TEST(min_tokens_boundary)
{
    const char *extra[] = {"parallel.min_tokens=4096"};
    for (long T = 4095; T <= 4096; T++) {
        scenario s;
        plan p;
        sp_plan(&s, &p, 4, 2, "by_position", "ring", T, extra, 1);
        int split = T >= 4096;
        ck_assert_int_eq(ex_step_splits(&s, T), split);
        ck_assert_int_eq(p.nsteps, 1);
        ck_assert_int_eq(p.step_split[0], split); /* what the summary reports */
        for (int g = 0; g < 2; g++) {
            ck_assert_int_eq(count_ops(&p, g, 0, 0, OPK_P2P, "ring_hop", NULL), split);
            ck_assert_int_eq(count_ops(&p, g, 0, 0, OPK_COMPUTE, "dcp_attention", NULL),
                             !split);
            ck_assert_int_eq(nth_op(&p, g, 0, "qkv_proj", 0, NULL)->m, split ? T / 2 : T);
        }
        plan_free(&p);
        wl_free(&s);
    }
    /* auto and none on position storage never split; a step needs a token
     * per SP rank */
    scenario s;
    const char *none[] = {"parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
                          "parallel.exchange=auto"};
    tu_load(&s, THINKER, none, 4);
    ck_assert_int_eq(ex_step_splits(&s, 65536), 0);
    wl_free(&s);
    const char *uly[] = {"parallel.tp=4", "parallel.sp=2"};
    tu_load(&s, THINKER, uly, 2);
    ck_assert_int_eq(ex_step_splits(&s, 2), 1);
    ck_assert_int_eq(ex_step_splits(&s, 1), 0);
    wl_free(&s);
}
END_TEST

/* ---- MoE under SP ------------------------------------------------------------------------ */

START_TEST(moe_under_sp)
{
    const long T = 32768, Tp = T / 2;
    scenario s;
    plan p;
    /* TP experts: the share's tokens, all-reduced over TP */
    sp_plan(&s, &p, 4, 2, "by_position", "all_gather", T, NULL, 0);
    for (int g = 0; g < 2; g++) {
        ck_assert_int_eq(nth_op(&p, g, 4, "router", 0, NULL)->m, Tp);
        const plan_op *gu = nth_op(&p, g, 4, "expert_gate_up", 0, NULL);
        ck_assert_int_eq(gu->m, Tp * TOPK); /* routed rows in all */
        double bytes = 0;
        ck_assert_int_eq(count_coll(&p, g, 4, G_TP, CK_ALL_REDUCE, &bytes), 2);
        ck_assert_double_eq(bytes, (double)Tp * H * 2.0);
        /* the padding mask and the embedding over the whole step, before the split */
        uint32_t i_mask, i_split;
        const plan_op *mask = nth_op(&p, g, -1, "moe_padding_mask", 0, &i_mask);
        ck_assert_int_eq(mask->out.d[0], T);
        ck_assert_ptr_nonnull(nth_op(&p, g, -1, "sp_split", 0, &i_split));
        ck_assert_uint_lt(i_mask, i_split);
    }
    plan_free(&p);
    wl_free(&s);

    /* EP over the whole node (spans both SP ranks): each rank routes 1/4 of
     * its share, dispatch/combine sized from it, TP gathers the share back */
    const char *ep8[] = {"parallel.ep=8"};
    sp_plan(&s, &p, 4, 2, "by_position", "all_gather", T, ep8, 1);
    for (int g = 0; g < 2; g++) {
        ck_assert_int_eq(nth_op(&p, g, 4, "router", 0, NULL)->m, Tp / 4);
        double bytes = 0;
        ck_assert_int_eq(count_coll(&p, g, 4, G_EP, CK_ALL_TO_ALL, &bytes), 2);
        ck_assert_double_eq(bytes, (double)(Tp / 4) * TOPK * H * 2.0);
        ck_assert_int_eq(count_coll(&p, g, 4, G_TP, CK_ALL_GATHER, &bytes), 1);
        ck_assert_double_eq(bytes, (double)Tp * H * 2.0);
        ck_assert_int_eq(nth_op(&p, g, 4, "expert_gate_up", 0, NULL)->g, EXPERTS / 8);
    }
    plan_free(&p);
    wl_free(&s);

    /* EP inside each TP group: the EP group shares its tokens */
    const char *ep2[] = {"parallel.ep=2"};
    sp_plan(&s, &p, 4, 2, "by_position", "all_gather", T, ep2, 1);
    double bytes = 0;
    ck_assert_int_eq(nth_op(&p, 1, 4, "router", 0, NULL)->m, Tp / 2);
    ck_assert_int_eq(count_coll(&p, 1, 4, G_EP, CK_ALL_GATHER, &bytes), 1);
    ck_assert_double_eq(bytes, (double)Tp * H * 2.0);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* ---- memory ---------------------------------------------------------------------------- */

/* Every allocation of a step is freed by its end (on whichever stream);
 * the KV cache a rank keeps follows the storage layout and is released
 * when the request leaves. */
START_TEST(memory_balance_all_strategies)
{
    /* storage, exchange, the strategy's own key */
    const char *cases[][3] = {{"by_head", "auto", "parallel.split=zigzag"},
                              {"by_position", "none", "parallel.min_tokens=0"},
                              {"by_position", "all_gather", "parallel.split=zigzag"},
                              {"by_position", "all_gather", "parallel.all_gather_tensors=kv"},
                              {"by_position", "ring", "parallel.ring_overlap=true"},
                              {"by_position", "ring", "parallel.split=zigzag"},
                              {"by_position", "ring_kv", "parallel.ring_overlap=true"},
                              {"by_position", "ring_kv", "parallel.split=zigzag"}};
    for (int c = 0; c < 8; c++) {
        scenario s;
        plan p;
        const long T = 10001;
        const char *extra[] = {"requests.0.decode_tokens=3", "requests.1.prompt_tokens=5001",
                               "requests.1.arrival_s=0.5", cases[c][2]};
        sp_plan(&s, &p, 4, 2, cases[c][0], cases[c][1], T, extra, 4);
        for (int g = 0; g < 2; g++) {
            double sum[MC_COUNT] = {0}, peak_kv = 0;
            const plan_prog *pg = &p.progs[g];
            for (uint32_t i = 0; i < pg->nops; i++) {
                const plan_op *o = &pg->ops[i];
                if (o->kind == OPK_STEP) {
                    ck_assert_double_eq_tol(sum[MC_ACTIVATIONS], 0, 1e-3);
                    ck_assert_double_eq_tol(sum[MC_COMM_BUFFER], 0, 1e-3);
                }
                if (o->kind != OPK_MEM)
                    continue;
                sum[o->mem_cat] += o->mem_bytes;
                if (sum[MC_KV_CACHE] > peak_kv)
                    peak_kv = sum[MC_KV_CACHE];
            }
            ck_assert_double_eq_tol(sum[MC_ACTIVATIONS], 0, 1e-3);
            ck_assert_double_eq_tol(sum[MC_COMM_BUFFER], 0, 1e-3);
            ck_assert_double_eq_tol(sum[MC_KV_CACHE], 0, 1e-3);
            /* request 0 holds T + 3 positions: by head every one of them for
             * one KV head (4 over 8 ranks, replicated), by position those
             * with x % 2 == g for the TP rank's one head */
            long N = T + 3, pos = c == 0 ? N : (N - g + 1) / 2;
            ck_assert_double_eq_tol(peak_kv, (double)pos * LAYERS * 2.0 * D * 2.0, 1.0);
        }
        plan_free(&p);
        wl_free(&s);
    }
}
END_TEST

/* Peak bytes (activations + comm buffers) of program g in layer `layer` of
 * step 0: in the attention phase (input norm .. o_proj) and the MLP/MoE
 * phase (post-attention norm .. the next layer).  A free on a comm stream
 * runs when that stream finishes the op before it, so it counts once the
 * compute stream waits for that op or a later one of its stream.  The
 * largest single allocation of the attention phase into *largest. */
static void phase_peaks(const plan *p, int g, int layer, double *att, double *mlp,
                        double *largest)
{
    const plan_prog *pg = &p->progs[g];
    double cur = 0;
    int phase = 0;
    *att = *mlp = *largest = 0;
    uint32_t late[64], after[64], last[ST_COUNT] = {0};
    int nlate = 0;
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->step > 0)
            break;
        int cat = o->kind == OPK_MEM &&
                  (o->mem_cat == MC_ACTIVATIONS || o->mem_cat == MC_COMM_BUFFER);
        if (o->stream != ST_COMPUTE) {
            if (cat) {
                ck_assert_int_lt(nlate, 64);
                late[nlate] = i;
                after[nlate++] = last[o->stream];
            } else if (o->kind != OPK_MEM) {
                last[o->stream] = i;
            }
            continue;
        }
        for (uint32_t k = 0; k < o->ndeps; k++) {
            uint32_t d = pg->deps[o->dep_first + k];
            for (int q = 0; q < nlate; q++) {
                if (pg->ops[late[q]].stream == pg->ops[d].stream && after[q] <= d) {
                    cur += pg->ops[late[q]].mem_bytes;
                    nlate--;
                    late[q] = late[nlate];
                    after[q] = after[nlate];
                    q--;
                }
            }
        }
        if (o->kind == OPK_COMPUTE && o->layer == layer && !strcmp(o->name, "input_norm"))
            phase = 1;
        if (o->kind == OPK_COMPUTE && o->layer == layer && !strcmp(o->name, "post_attn_norm"))
            phase = 2;
        if (o->kind == OPK_COMPUTE && o->layer == layer + 1)
            break;
        if (!cat)
            continue;
        cur += o->mem_bytes;
        if (phase == 1 && o->mem_bytes > *largest)
            *largest = o->mem_bytes;
        if (phase == 1 && cur > *att)
            *att = cur;
        if (phase == 2 && cur > *mlp)
            *mlp = cur;
    }
}

/* Ring holds no whole-step K/V: its attention phase is below all_gather's
 * (TP2 x SP4: attention is the larger phase); DCP duplicates the MLP/MoE
 * activations of the split strategies P times. */
START_TEST(memory_by_phase)
{
    const long T = 16384;
    const int P = 4;
    double att[2], mlp[2], big[2];
    const char *ex[] = {"ring", "all_gather"};
    /* TP2: 16 q heads and 2 KV heads per rank */
    const double whole_qkv = (double)T * (HEADS / 2 + 2 * (KV_HEADS / 2)) * D * 2.0;
    for (int c = 0; c < 2; c++) {
        scenario s;
        plan p;
        sp_plan(&s, &p, 2, P, "by_position", ex[c], T, NULL, 0);
        phase_peaks(&p, 1, 3, &att[c], &mlp[c], &big[c]);
        plan_free(&p);
        wl_free(&s);
    }
    ck_assert_double_lt(att[0], 0.95 * att[1]);
    /* ring: nothing larger than the rank's own share of q/k/v; all_gather:
     * the whole step's q/k/v in one buffer */
    ck_assert_double_le(big[0], whole_qkv / P);
    ck_assert_double_ge(big[1], whole_qkv);
    ck_assert_double_eq_tol(mlp[0], mlp[1], 1.0);

    scenario s;
    plan p;
    double att_d, mlp_d, big_d;
    sp_plan(&s, &p, 2, P, "by_position", "none", T, NULL, 0);
    phase_peaks(&p, 1, 3, &att_d, &mlp_d, &big_d);
    ck_assert_double_eq_tol(mlp_d / mlp[1], (double)P, 0.01);
    plan_free(&p);
    wl_free(&s);
}
END_TEST

/* ---- refusals ------------------------------------------------------------------------------ */

/* Refused at load (every refusal lives in the workload's validation). */
static void refused(const char *const *sets, int n, const char *want)
{
    scenario s;
    cp_err err = {0};
    int rc = tu_try_load(&s, THINKER, sets, n, &err);
    ck_assert_int_ne(rc, 0);
    ck_assert_int_eq(err.code, CP_EXIT_INPUT);
    ck_assert_msg(strstr(err.msg, want) != NULL, "\"%s\" lacks \"%s\"", err.msg, want);
}

START_TEST(refusals)
{
    /* the spec's table, at load */
    const char *bh[] = {"all_gather", "ring", "none"};
    for (int i = 0; i < 3; i++) {
        char ex[64];
        snprintf(ex, sizeof ex, "parallel.exchange=%s", bh[i]);
        const char *sets[] = {"parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_head", ex};
        refused(sets, 4, "with kv_storage by_head the accepted values are auto, ulysses");
    }
    const char *ul[] = {"parallel.tp=4", "parallel.sp=2", "parallel.kv_storage=by_position",
                        "parallel.exchange=ulysses"};
    refused(ul, 4, "with kv_storage by_position the accepted values are");
    /* what the plan cannot describe: MLA's one latent head split by head */
    const char *mla[] = {"model=deepseek-v3", "platform=h200-sxm-8", "parallel.tp=4",
                         "parallel.sp=2"};
    refused(mla, 4, "uses MLA, whose cache is one latent head per position");
    /* an EP group of whole TP groups across SP ranks and DP replicas plans
     * (its dispatch spans them); one that is neither is refused at load */
    const char *ep[] = {"parallel.tp=2", "parallel.sp=2", "parallel.dp=2", "parallel.ep=8",
                        "parallel.kv_storage=by_position", "parallel.exchange=ring"};
    scenario se;
    plan pe;
    tu_plan(&se, &pe, THINKER, ep, 6);
    ck_assert_int_eq(plan_group_size(&pe.lay, G_EP), 8);
    plan_free(&pe);
    wl_free(&se);
    const char *big[] = {"platform.nodes=17", "parallel.tp=1", "parallel.sp=129",
                         "parallel.kv_storage=by_position", "parallel.exchange=ring"};
    refused(big, 5, "at most 128 SP ranks");
}
END_TEST

/* ---- timing (SimGrid, one child process per scenario) ------------------------------------ */

/* The default workload (the thinker, h100-sxm-8) without the calibration
 * profile, TP tp x SP sp on position storage, plus extra assignments. */
static json_t *simulate(int tp, int sp, const char *exchange, long T,
                        const char *const *extra, int nextra)
{
    char buf[4][64];
    const char *sets[MAX_SETS];
    snprintf(buf[0], sizeof buf[0], "parallel.tp=%d", tp);
    snprintf(buf[1], sizeof buf[1], "parallel.sp=%d", sp);
    snprintf(buf[2], sizeof buf[2], "parallel.exchange=%s", exchange);
    snprintf(buf[3], sizeof buf[3], "requests.0.prompt_tokens=%ld", T);
    int n = 0;
    for (int i = 0; i < 4; i++)
        sets[n++] = buf[i];
    sets[n++] = "parallel.kv_storage=by_position";
    sets[n++] = "platform.device.calibration=\"\"";
    for (int i = 0; i < nextra && n < MAX_SETS; i++)
        sets[n++] = extra[i];
    drv_req rq = {.sets = sets, .nsets = n};
    json_t *sm = NULL;
    cp_err err = {0};
    ck_assert_msg(drv_child_run(&rq, &sm, &err) == 0, "%s", err.msg);
    return sm;
}

static double num(json_t *j, const char *key)
{
    return json_number_value(json_object_get(j, key));
}

static double rank_num(json_t *sm, int r, const char *key)
{
    return num(json_array_get(json_object_get(sm, "ranks"), (size_t)r), key);
}

/* ring_select: rule against simulation over a grid of new and cached
 * tokens, hops synchronous and overlapped, thinker TP4 x SP2 on the
 * calibrated h100-sxm-8: wherever the two rings' simulated makespans
 * differ by more than 1 %, the rule picks the faster (issue "Strategies":
 * the agreement table of its note is printed here). */
START_TEST(ring_rule_agrees_with_simulation)
{
    static const long news[] = {2048, 8192, 32768}, cached[] = {0, 16384, 63488};
    printf("\nring rule vs simulation, thinker TP4 x SP2, h100-sxm-8\n");
    printf("%6s %7s %8s %12s %12s %7s %6s %6s\n", "new", "cached", "overlap", "pass_kv_s",
           "pass_q_s", "gap", "sim", "rule");
    for (int ov = 0; ov < 2; ov++)
        for (size_t i = 0; i < sizeof news / sizeof news[0]; i++)
            for (size_t j = 0; j < sizeof cached / sizeof cached[0]; j++) {
                char b[3][64];
                snprintf(b[0], sizeof b[0], "requests.0.prompt_tokens=%ld", news[i]);
                snprintf(b[1], sizeof b[1], "requests.0.cached_tokens=%ld", cached[j]);
                snprintf(b[2], sizeof b[2], "parallel.ring_overlap=%s", ov ? "true" : "false");
                const char *sets[] = {"parallel.tp=4", "parallel.sp=2",
                                      "parallel.kv_storage=by_position", "parallel.exchange=ring",
                                      "parallel.ring_select=simulate", b[0], b[1], b[2]};
                drv_req rq = {.sets = sets, .nsets = 8};
                json_t *sm = NULL;
                cp_err err = {0};
                ck_assert_msg(drv_child_run(&rq, &sm, &err) == 0, "%s", err.msg);
                json_t *rs = json_object_get(sm, "ring_select");
                double kv = num(rs, "pass_kv_makespan_s"), q = num(rs, "pass_q_makespan_s");
                scenario s;
                tu_load(&s, THINKER, sets, 8);
                ex_ring_est e;
                plan_ring rule = ex_ring_rule(&s, news[i], cached[j], &e);
                wl_free(&s);
                double gap = kv / q - 1;
                printf("%6ld %7ld %8s %12.6f %12.6f %+6.2f%% %6s %6s\n", news[i], cached[j],
                       ov ? "on" : "off", kv, q, 100 * gap, kv <= q ? "kv" : "q",
                       rule == PR_PASS_KV ? "kv" : "q");
                if (fabs(gap) > 0.01)
                    ck_assert_msg((rule == PR_PASS_KV) == (kv < q), "new %ld cached %ld overlap "
                                  "%d: simulation %s by %.1f %%, the rule picks %s", news[i],
                                  cached[j], ov, kv < q ? "pass-KV" : "pass-Q", 100 * fabs(gap),
                                  rule == PR_PASS_KV ? "pass-KV" : "pass-Q");
                json_decref(sm);
            }
}
END_TEST

/* TTFT of one scenario (the summary is released). */
static double ttft(int tp, int sp, const char *exchange, long T, const char *const *extra,
                   int nextra)
{
    json_t *sm = simulate(tp, sp, exchange, T, extra, nextra);
    double t = num(sm, "ttft_s");
    json_decref(sm);
    return t;
}

START_TEST(ring_overlap_never_slower)
{
    const char *sync[] = {"parallel.ring_overlap=false"};
    const char *over[] = {"parallel.ring_overlap=true"};
    const int layouts[][2] = {{4, 2}, {2, 4}};
    for (int c = 0; c < 2; c++) {
        for (long T = 4096; T <= 65536; T *= 16) {
            json_t *a = simulate(layouts[c][0], layouts[c][1], "ring", T, sync, 1);
            json_t *b = simulate(layouts[c][0], layouts[c][1], "ring", T, over, 1);
            ck_assert_double_le(num(b, "ttft_s"), num(a, "ttft_s"));
            ck_assert_double_gt(num(b, "overlap_fraction"), num(a, "overlap_fraction"));
            json_decref(a);
            json_decref(b);
        }
    }
}
END_TEST

/* all_gather of k/v at a long prompt: the contiguous split leaves the last
 * SP rank most of the causal work (per-rank compute), zigzag and striped
 * balance it and finish first (striped by less: its P calls per layer are
 * merged with the LSE). */
START_TEST(all_gather_split_balance)
{
    const long T = 32768;
    const char *contig[] = {"parallel.split=contiguous", "parallel.all_gather_tensors=kv"};
    const char *zig[] = {"parallel.split=zigzag", "parallel.all_gather_tensors=kv"};
    const char *str[] = {"parallel.split=striped", "parallel.all_gather_tensors=kv"};
    json_t *c = simulate(4, 2, "all_gather", T, contig, 2);
    json_t *z = simulate(4, 2, "all_gather", T, zig, 2);
    json_t *s = simulate(4, 2, "all_gather", T, str, 2);
    ck_assert_double_lt(num(z, "ttft_s"), 0.9 * num(c, "ttft_s"));
    /* striped balances too, but pays a call per stripe and the LSE merges */
    ck_assert_double_lt(num(s, "ttft_s"), num(c, "ttft_s"));
    /* ranks 0-3 hold SP index 0, ranks 4-7 SP index 1 */
    ck_assert_double_gt(rank_num(c, 4, "compute_s"), 1.5 * rank_num(c, 0, "compute_s"));
    ck_assert_double_lt(fabs(rank_num(z, 4, "compute_s") / rank_num(z, 0, "compute_s") - 1), 0.05);
    json_decref(c);
    json_decref(z);
    json_decref(s);
}
END_TEST

static const char *rank_str(json_t *sm, int r, const char *key)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(sm, "ranks"), (size_t)r), key));
}

static double phase_peak(json_t *sm, int r, const char *phase)
{
    json_t *ph = json_object_get(json_array_get(json_object_get(sm, "ranks"), (size_t)r),
                                 "peak_by_phase");
    return json_number_value(json_object_get(ph, phase));
}

/* Peak memory by phase (cp-exchange.md: resident + the larger of the
 * attention and the MLP/MoE phase).  A dense model over 8 SP ranks at 128K:
 * all_gather holds the whole step's q/k/v and the fp32 partials, so its
 * attention phase sets its peak, above ring's, whose MLP phase sets its own;
 * the thinker (MoE, SP 2) at 16K: the MoE phase (its permuted rows) sets
 * both peaks, which are then equal. */
START_TEST(peak_phase_by_strategy)
{
    const char *dense[] = {"model=qwen3-32b"};
    json_t *ag = simulate(1, 8, "all_gather", 131072, dense, 1);
    json_t *rg = simulate(1, 8, "ring", 131072, dense, 1);
    ck_assert_str_eq(rank_str(ag, 0, "peak_phase"), "attention");
    ck_assert_str_eq(rank_str(rg, 0, "peak_phase"), "ffn");
    ck_assert_double_gt(rank_num(ag, 0, "peak_tensor_bytes"),
                        rank_num(rg, 0, "peak_tensor_bytes") + 1e9);
    ck_assert_double_gt(phase_peak(ag, 0, "attention"), phase_peak(rg, 0, "attention") + 1e9);
    /* the phases' peaks are the tensors' and the engine's (no allocator cache) */
    ck_assert_double_eq(rank_num(ag, 0, "peak_tensor_bytes") + rank_num(ag, 0, "engine_bytes"),
                        phase_peak(ag, 0, "attention"));
    /* what the allocator reserves holds the tensors' peak, and the total both */
    ck_assert_double_ge(rank_num(ag, 0, "peak_reserved_bytes"),
                        rank_num(ag, 0, "peak_tensor_bytes"));
    ck_assert_double_eq(rank_num(ag, 0, "peak_bytes"),
                        rank_num(ag, 0, "peak_reserved_bytes") + rank_num(ag, 0, "engine_bytes"));
    json_decref(ag);
    json_decref(rg);
    json_t *am = simulate(4, 2, "all_gather", 16384, NULL, 0);
    json_t *rm = simulate(4, 2, "ring", 16384, NULL, 0);
    ck_assert_str_eq(rank_str(am, 0, "peak_phase"), "ffn");
    ck_assert_str_eq(rank_str(rm, 0, "peak_phase"), "ffn");
    ck_assert_double_eq(rank_num(am, 0, "peak_tensor_bytes"),
                        rank_num(rm, 0, "peak_tensor_bytes"));
    ck_assert_double_gt(phase_peak(am, 0, "attention"), phase_peak(rm, 0, "attention"));
    json_decref(am);
    json_decref(rm);
}
END_TEST

/* The shortest prompt in [lo, hi] at which ring beats copied DCP (TP4 x
 * SP2), by geometric bisection to 10 %; the fabric bandwidth set by bw. */
static long crossover(const char *bw, long lo, long hi)
{
    const char *extra[] = {bw};
    ck_assert_double_gt(ttft(4, 2, "ring", lo, extra, 1), ttft(4, 2, "none", lo, extra, 1));
    ck_assert_double_lt(ttft(4, 2, "ring", hi, extra, 1), ttft(4, 2, "none", hi, extra, 1));
    while (hi > lo * 1.1) {
        long mid = (long)sqrt((double)lo * (double)hi);
        if (ttft(4, 2, "ring", mid, extra, 1) < ttft(4, 2, "none", mid, extra, 1))
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* A split strategy (ring) overtakes copied DCP as the prompt grows.  DCP
 * moves more bytes over the SP group per layer (fp32 partials of every
 * query) than the ring (the queries and bf16 partials of a share), so a
 * slower fabric favours the ring: the crossover moves to shorter prompts. */
START_TEST(split_overtakes_copied)
{
    scenario s;
    plan p;
    const long T = 4096;
    double ring_bytes = 0, dcp_bytes = 0;
    sp_plan(&s, &p, 4, 2, "by_position", "ring", T, NULL, 0);
    for (uint32_t i = 0; i < p.progs[0].nops; i++) {
        const plan_op *o = &p.progs[0].ops[i];
        if (o->layer == 0 && o->kind == OPK_P2P)
            ring_bytes += o->comm_bytes;
    }
    plan_free(&p);
    wl_free(&s);
    sp_plan(&s, &p, 4, 2, "by_position", "none", T, NULL, 0);
    count_coll(&p, 0, 0, G_SP, CK_ALL_GATHER, &dcp_bytes);
    plan_free(&p);
    wl_free(&s);
    ck_assert_double_gt(dcp_bytes / 2, ring_bytes); /* DCP sends (P-1)/P of the gather */

    long fast = crossover("platform.fabric.bandwidth=450e9", 16, 8192);
    long slow = crossover("platform.fabric.bandwidth=45e9", 16, 8192);
    ck_assert_int_lt(slow, fast);
}
END_TEST

/* The summary says per request whether its prefill ran split: a ring step
 * of 4096 tokens splits at min_tokens 4096, not at 4097; decode steps (one
 * token on two SP ranks) never do. */
START_TEST(summary_says_split)
{
    for (int k = 0; k < 2; k++) {
        const char *extra[] = {k ? "parallel.min_tokens=4097" : "parallel.min_tokens=4096",
                               "requests.0.decode_tokens=2"};
        json_t *sm = simulate(4, 2, "ring", 4096, extra, 2);
        json_t *rq = json_array_get(json_object_get(sm, "requests"), 0);
        ck_assert(json_is_boolean(json_object_get(rq, "split")));
        ck_assert_int_eq(json_is_true(json_object_get(rq, "split")), !k);
        ck_assert_int_eq(json_integer_value(json_object_get(rq, "split_steps")), !k);
        json_decref(sm);
    }
}
END_TEST

/* pass-KV's exposed communication (communication not under compute) shrinks
 * against the compute as the new tokens T grow over a fixed cached prefix:
 * each hop carries the cached and the new keys, each block's attention
 * grows with T times the keys (TP1 x SP4, so the SP ring and the final
 * gather are the only communication; ring_overlap; a fabric slow enough to
 * expose the hops of a short step).  pass-Q's returns of partial outputs
 * grow with T (ring_bytes_with_tokens counts their bytes). */
START_TEST(pass_kv_exposure_shrinks_with_t)
{
    const char *extra[] = {"parallel.ring_overlap=true", "requests.0.cached_tokens=65536",
                           "platform.fabric.bandwidth=45e9"};
    double last = INFINITY;
    for (long T = 1024; T <= 16384; T *= 4) {
        json_t *sm = simulate(1, 4, "ring_kv", T, extra, 3);
        double exposed = rank_num(sm, 0, "comm_s") - rank_num(sm, 0, "overlap_s");
        double ratio = exposed / rank_num(sm, 0, "compute_s");
        ck_assert_str_eq(json_string_value(json_object_get(
                             json_array_get(json_object_get(sm, "requests"), 0), "ring")),
                         "pass_kv");
        ck_assert_double_lt(ratio, 0.8 * last);
        last = ratio;
        json_decref(sm);
    }
    ck_assert_double_gt(p2p_bytes(16384, 0, "ring", "ring_return"),
                        p2p_bytes(4096, 0, "ring", "ring_return"));
}
END_TEST

/* The summary says which ring a request's split steps ran: the exchange as
 * written (fixed), the rule's pick at a low and a high prefix-cache hit
 * rate; a request that never splits says nothing. */
START_TEST(summary_says_ring)
{
    const struct {
        const char *exchange, *select, *cached, *want;
    } cases[] = {{"ring", "parallel.ring_select=fixed", "requests.0.cached_tokens=0", "pass_q"},
                 {"ring_kv", "parallel.ring_select=fixed", "requests.0.cached_tokens=0", "pass_kv"},
                 {"ring", "parallel.ring_select=rule", "requests.0.cached_tokens=0", "pass_kv"},
                 {"ring_kv", "parallel.ring_select=rule", "requests.0.cached_tokens=262144",
                  "pass_q"},
                 {"ring", "parallel.min_tokens=8192", "requests.0.cached_tokens=0", NULL}};
    for (int c = 0; c < 5; c++) {
        const char *extra[] = {cases[c].select, cases[c].cached};
        json_t *sm = simulate(4, 2, cases[c].exchange, 4096, extra, 2);
        json_t *rq = json_array_get(json_object_get(sm, "requests"), 0);
        json_t *ring = json_object_get(rq, "ring");
        if (cases[c].want)
            ck_assert_str_eq(json_string_value(ring), cases[c].want);
        else
            ck_assert_ptr_null(ring);
        json_decref(sm);
    }
}
END_TEST

/* The decode TPOT of the pass-Q decode, 128K-token contexts (a cached
 * prefix of 131072 tokens, 64 new ones).  A single decode: finite, and no
 * faster than the DCP merge at SP4 (its one real query block visits the
 * ranks in turn: P rounds over 1/P of the keys each, plus the hops).  A
 * batch of P decodes: every block is real and each rank attends 1/P of the
 * KV in every round, so SP4 decodes faster than SP1 (qwen3-32b, TP2, on
 * h200-sxm-8 without its calibration profile, whose 141 GB hold the four
 * contexts' KV on one SP rank; captured graphs, the decode launch mode). */
static double decode_tpot(int sp, const char *exchange, int batch)
{
    char b_sp[32], b_ex[64], b_rq[512];
    snprintf(b_sp, sizeof b_sp, "parallel.sp=%d", sp);
    snprintf(b_ex, sizeof b_ex, "parallel.exchange=%s", exchange);
    int n = snprintf(b_rq, sizeof b_rq, "requests=[");
    for (int i = 0; i < batch; i++)
        n += snprintf(b_rq + n, sizeof b_rq - (size_t)n,
                      "%s{prompt_tokens: 64, cached_tokens: 131072, decode_tokens: 4}",
                      i ? ", " : "");
    snprintf(b_rq + n, sizeof b_rq - (size_t)n, "]");
    /* the ring's pass-Q decode (parallel.decode), the DCP merge otherwise */
    const char *dec = strcmp(exchange, "ring") == 0 && sp > 1 ? "parallel.decode=pass_q"
                                                              : "parallel.decode=dcp";
    const char *single[] = {"parallel.tp=2", b_sp, "parallel.kv_storage=by_position", b_ex,
                            "platform.device.calibration=\"\"", b_rq, dec};
    const char *batched[] = {"platform=h200-sxm-8", "platform.device.calibration=\"\"",
                             "model=qwen3-32b", "engine.graph=captured", "parallel.tp=2",
                             b_sp, "parallel.kv_storage=by_position", b_ex, b_rq, dec};
    drv_req rq = {.sets = batch > 1 ? batched : single, .nsets = batch > 1 ? 10 : 7};
    json_t *sm = NULL;
    cp_err err = {0};
    ck_assert_msg(drv_child_run(&rq, &sm, &err) == 0, "%s", err.msg);
    /* the request that decodes only in full batches (the last to prefill) */
    double tpot = INFINITY;
    json_t *rqs = json_object_get(sm, "requests");
    for (size_t i = 0; i < json_array_size(rqs); i++) {
        double t = num(json_array_get(rqs, i), "tpot_s");
        tpot = t < tpot ? t : tpot;
    }
    json_decref(sm);
    return tpot;
}

START_TEST(ring_decode_tpot)
{
    double one = decode_tpot(4, "ring", 1);
    ck_assert(isfinite(one));
    ck_assert_double_gt(one, 0);
    ck_assert_double_ge(one, decode_tpot(4, "none", 1));
    double sp1 = decode_tpot(1, "ring", 4), sp4 = decode_tpot(4, "ring", 4);
    ck_assert(isfinite(sp4));
    ck_assert_double_lt(sp4, 0.9 * sp1); /* 19.3 ms against 26.4 ms when written */
}
END_TEST

/* Memory capacity below the peak the timeline reaches sets the OOM verdict. */
START_TEST(oom_verdict)
{
    json_t *a = simulate(4, 2, "ring", 65536, NULL, 0);
    double peak = num(a, "peak_bytes_max");
    ck_assert(!json_is_true(json_object_get(a, "oom")));
    json_decref(a);
    char cap[64];
    snprintf(cap, sizeof cap, "platform.device.hbm_bytes=%.0f", 0.98 * peak);
    const char *extra[] = {cap};
    json_t *b = simulate(4, 2, "ring", 65536, extra, 1);
    ck_assert(json_is_true(json_object_get(b, "oom")));
    ck_assert_double_eq(num(b, "peak_bytes_max"), peak);
    json_decref(b);
}
END_TEST

/* The per-SP-rank programs fold into repeated layers (plan_fold_layers) and
 * the folded plan simulates to the same summary. */
START_TEST(sp_plans_fold_identically)
{
    scenario s;
    plan p;
    const char *extra[] = {"parallel.ring_overlap=true", "requests.0.decode_tokens=2"};
    sp_plan(&s, &p, 2, 4, "by_position", "ring", 8192, extra, 2);
    ck_assert_uint_gt(plan_fold_layers(&p), 0);
    plan_free(&p);
    wl_free(&s);

    const char *sets[] = {"parallel.tp=2", "parallel.sp=4", "parallel.kv_storage=by_position",
                          "parallel.exchange=ring", "parallel.ring_overlap=true",
                          "requests.0.prompt_tokens=8192", "requests.0.decode_tokens=2"};
    json_decref(tu_fold_identical(NULL, sets, 7));
    const char *kv[] = {"parallel.tp=2", "parallel.sp=4", "parallel.kv_storage=by_position",
                        "parallel.exchange=ring_kv", "parallel.ring_overlap=true",
                        "parallel.split=zigzag", "requests.0.prompt_tokens=8192",
                        "requests.0.cached_tokens=3000"};
    json_decref(tu_fold_identical(NULL, kv, 8));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("exchange");
    TCase *tc = tcase_create("plan");
    tcase_add_checked_fixture(tc, tu_setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, pairs_match_enumeration);
    tcase_add_test(tc, ulysses_collectives);
    tcase_add_test(tc, all_gather_qkv_is_dcp);
    tcase_add_test(tc, ring_under_graphs_runs_copied);
    tcase_add_test(tc, peak_tensors_by_strategy);
    tcase_add_test(tc, all_gather_kv_kernels);
    tcase_add_test(tc, ring_hops_closed_form);
    tcase_add_test(tc, run_pairs_match_enumeration);
    tcase_add_test(tc, ring_kv_hops_closed_form);
    tcase_add_test(tc, zigzag_balances_both_rings);
    tcase_add_test(tc, prefix_cached_pairs);
    tcase_add_test(tc, ring_bytes_with_tokens);
    tcase_add_test(tc, ring_rule_and_overrides);
    tcase_add_test(tc, dcp_copied_steps);
    tcase_add_test(tc, ring_decode_closed_form);
    tcase_add_test(tc, ring_decode_kv_balance);
    tcase_add_test(tc, min_tokens_boundary);
    tcase_add_test(tc, summary_says_split);
    tcase_add_test(tc, moe_under_sp);
    tcase_add_test(tc, memory_balance_all_strategies);
    tcase_add_test(tc, memory_by_phase);
    tcase_add_test(tc, refusals);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("timing");
    tcase_add_checked_fixture(tt, tu_setup, NULL);
    tcase_set_timeout(tt, 300);
    tcase_add_test(tt, ring_overlap_never_slower);
    tcase_add_test(tt, all_gather_split_balance);
    tcase_add_test(tt, peak_phase_by_strategy);
    tcase_add_test(tt, split_overtakes_copied);
    tcase_add_test(tt, oom_verdict);
    tcase_add_test(tt, pass_kv_exposure_shrinks_with_t);
    tcase_add_test(tt, summary_says_ring);
    tcase_add_test(tt, ring_rule_agrees_with_simulation);
    tcase_add_test(tt, ring_decode_tpot);
    tcase_add_test(tt, sp_plans_fold_identically);
    suite_add_tcase(s, tt);
    return s;
}

int main(void)
{
    return tu_main(suite());
}
