/* tpshare: when the ranks of a TP group can be simulated as one
 * (engine.h eng_run, engine_int.h).
 *
 * Why it is exact.  When every rank of a TP group runs the same program on
 * identical devices, and nothing one of them sends shares a link with what
 * another sends except the group's own collectives, the ranks of the group
 * do the same things at the same instants: a simulation of all of them
 * gives each the timeline of the first.  So one rank per group is
 * simulated, with all its kernels, hops, memory events and records, and
 * its TP collectives run in full: the group's other devices take part
 * through helper actors that run only those collectives (below), on the
 * node's links slowed by the simulated rank's interference factors (which
 * every rank of the group has).  The others read its records shifted in
 * rank (events.h eng_widen).
 *
 * The generated platform gives the guarantee: a node's devices reach each
 * other over the node's fabric and the rest of the world over a NIC each,
 * and every spine link is a FATPIPE (platforms/platform_xml.c), so when a
 * TP group fills a node the transfers of its ranks to other nodes never
 * share a link with one another. */
#include "sim/engine/engine_int.h"

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/semaphore.h>
#include <stdio.h>
#include <stdlib.h>

int eng_tp_fold_of(const plan *p, const eng_opts *o)
{
    const plan_layout_cfg *l = &p->lay;
    /* (64: the member arrays of engine.c's TP calls) */
    if (!o->share_tp || l->tp <= 1 || l->tp > 64 || o->plat->raw_xml || o->l07 ||
        l->tp != o->plat->devices_per_node || l->order != ORDER_TP_SP_DP || l->dcp > 1 ||
        (l->ep > 1 && l->ep != l->tp) || p->nranks % l->tp != 0)
        return 0;
    for (int r = 0; r < p->nranks; r++)
        if (p->prog_of_rank[r] != p->prog_of_rank[r - r % l->tp])
            return 0;
    for (int g = 0; g < p->nprogs; g++)
        for (uint32_t i = 0; i < p->progs[g].nops; i++) {
            const plan_op *op = &p->progs[g].ops[i];
            int grp = op->group;
            if (op->kind == OPK_COLL && grp != G_TP && grp != G_SP && grp != G_EP)
                return 0;
            /* a broadcast's root finishes first: its group does not run as one */
            if (op->kind == OPK_COLL && grp != G_SP && op->coll == CK_BROADCAST)
                return 0;
            if (op->kind == OPK_P2P && grp != G_SP)
                return 0;
        }
    return l->tp;
}

/* ---- the helpers ---------------------------------------------------------- */

/* Whether op o of a shared TP rank is a collective of its TP group (an EP
 * group is one when it has the TP group's ranks: eng_tp_fold_of). */
int eng_tp_coll(const plan_op *o)
{
    return eng.fold > 1 && o->kind == OPK_COLL &&
           (o->group == G_TP || (o->group == G_EP && eng.lay->ep == eng.lay->tp));
}

/* A device of a shared rank's TP group other than its own (t = 1 ...
 * fold - 1), on one stream: it runs its part of each TP collective the
 * rank hands it, in order (queued: the rank may hand the next before the
 * helper is back from the last, both ending at one instant), NULL to end. */
typedef struct helper_st {
    rank_st *rs;
    int stream, t;
    sgt_ctx tctx;
    sg_sem_t go;
    const plan_op *q[ENG_TP_QUEUE];
    uint32_t head, tail;
    double end[ENG_TP_QUEUE];   /* when its part of each call ended (s) */
    uint32_t ndone;             /* calls it finished */
} helper_st;

/* The TP group's devices (members) and the call of op o for place me. */
static coll_call tp_call(const rank_st *rs, const plan_op *o, int *members, int me)
{
    for (int i = 0; i < eng.fold; i++)
        members[i] = eng_dev(rs->rank) + i;
    return (coll_call){.kind = (plan_coll)o->coll, .alg = (plan_alg)o->alg,
                       .members = members, .n = eng.fold, .me = me,
                       .bytes = o->comm_bytes, .graph = eng.o->graph && !o->eager,
                       .cross_node = 0, .custom = o->impl == IMPL_CUSTOM};
}

static helper_st *helpers_of(const rank_st *rs, int s)
{
    return &eng.helpers[((size_t)rs->rank * ST_COUNT + s) * (size_t)(eng.fold - 1)];
}

/* Hand op o (NULL: the end) to the helpers of stream s of rs. */
static void helpers_hand(rank_st *rs, int s, const plan_op *o)
{
    helper_st *h = helpers_of(rs, s);
    for (int t = 0; t < eng.fold - 1; t++) {
        if (h[t].tail - h[t].head >= ENG_TP_QUEUE)
            abort(); /* a helper more than a call behind: an engine bug */
        h[t].q[h[t].tail++ % ENG_TP_QUEUE] = o;
        sg_sem_release(h[t].go);
    }
}

static void helper_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    helper_st *h = sg_actor_self_get_data();
    int members[64];
    for (;;) {
        sg_sem_acquire(h->go);
        const plan_op *o = h->q[h->head++ % ENG_TP_QUEUE];
        if (!o)
            break;
        coll_call c = tp_call(h->rs, o, members, h->t);
        /* the fixed cost stretches as the rank's does (eng_comm_begins) */
        h->tctx.sleep_scale = h->rs->fm;
        tr_port port = sgt_port(&h->tctx);
        coll_run(&port, eng.o->cm, &c);
        /* the group runs as one only if every part ends with the rank's */
        uint32_t k = h->ndone++;
        double t = simgrid_get_clock();
        h->end[k % ENG_TP_QUEUE] = t;
        const rank_st *rs = h->rs;
        if (rs->tp_done[h->stream] > k && rs->tp_end[h->stream][k % ENG_TP_QUEUE] != t)
            eng.asym = o;
    }
}

/* A TP collective of a shared rank: its helpers run the other devices'
 * parts beside its own, from the same instant.  Returns the rank's
 * messages. */
long eng_tp_run(stream_st *ss, int s, const plan_op *o)
{
    rank_st *rs = ss->rs;
    int members[64];
    coll_call c = tp_call(rs, o, members, 0);
    eng_comm_begins(ss, s, o, 0);
    helpers_hand(rs, s, o);
    tr_port port = sgt_port(&ss->tctx);
    long msgs = coll_run(&port, eng.o->cm, &c);
    uint32_t n = rs->tp_done[s]++;
    double t = simgrid_get_clock();
    rs->tp_end[s][n % ENG_TP_QUEUE] = t;
    const helper_st *h = helpers_of(rs, s);
    for (int i = 0; i < eng.fold - 1; i++)
        if (h[i].ndone > n && h[i].end[n % ENG_TP_QUEUE] != t)
            eng.asym = o;
    return msgs;
}

/* Start the helpers of every shared rank's streams that run TP
 * collectives (helper_st). */
void eng_tp_helpers_start(const plan *p, rank_st *ranks)
{
    int f = eng.fold;
    eng.helpers = cp_xcalloc((size_t)p->nranks * ST_COUNT * (size_t)(f - 1),
                             sizeof *eng.helpers);
    uint8_t (*need)[ST_COUNT] = cp_xcalloc((size_t)p->nprogs, sizeof *need);
    for (int g = 0; g < p->nprogs; g++)
        for (uint32_t i = 0; i < p->progs[g].nops; i++)
            if (eng_tp_coll(&p->progs[g].ops[i]))
                need[g][p->progs[g].ops[i].stream] = 1;
    for (int r = 0; r < p->nranks; r++)
        for (int s = 0; s < ST_COUNT; s++) {
            if (!need[p->prog_of_rank[r]][s])
                continue;
            helper_st *h = helpers_of(&ranks[r], s);
            for (int t = 1; t < f; t++, h++) {
                char host[128], name[64];
                *h = (helper_st){.rs = &ranks[r], .stream = s, .t = t, .go = sg_sem_init(0)};
                sgt_ctx_init(&h->tctx, eng.tw, eng_dev(r) + t, s);
                plat_host_name(eng.o->plat, eng_dev(r) + t, host, sizeof host);
                snprintf(name, sizeof name, "r%d.%s.tp%d", r, plan_stream_name(s), t);
                sg_actor_t a = sg_actor_init(name, sg_host_by_name(host));
                sg_actor_set_data(a, h);
                sg_actor_start(a, helper_main, 0, NULL);
            }
        }
    free(need);
}

void eng_tp_helpers_free(int nranks)
{
    size_t n = (size_t)nranks * ST_COUNT * (size_t)(eng.fold - 1);
    for (size_t i = 0; eng.helpers && i < n; i++)
        if (eng.helpers[i].go)
            sg_sem_destroy(eng.helpers[i].go);
    free(eng.helpers);
}

void eng_tp_helpers_end(rank_st *rs, int s)
{
    if (eng.fold > 1 && helpers_of(rs, s)->go)
        helpers_hand(rs, s, NULL);
}
