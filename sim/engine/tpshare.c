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
 * through helper actors that run only those collectives (engine.c), on the
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
