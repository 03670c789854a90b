/* plan_text: the plan as text (cpsim plan without --json). */
#include <stdio.h>

#include "reports/report.h"

/* Human-readable plan: op counts by kind and class per program, and the
 * first layer's ops. */
void rep_plan_text(const plan *p, FILE *out)
{
    for (int g = 0; g < p->nprogs; g++) {
        const plan_prog *pg = &p->progs[g];
        fprintf(out, "program %d (ranks", g);
        for (int r = 0; r < p->nranks; r++)
            if (p->prog_of_rank[r] == g)
                fprintf(out, " %d", r);
        fprintf(out, "): %u ops\n", pg->nops);
        for (uint32_t i = 0; i < pg->nops; i++) {
            const plan_op *op = &pg->ops[i];
            if (op->kind == OPK_MEM || op->step > 0 || op->layer > 0)
                continue;
            fprintf(out, "  %5u L%-3d %-8s %-22s", i, op->layer, plan_stream_name(op->stream),
                    op->name);
            if (op->kind == OPK_COMPUTE)
                fprintf(out, " %-16s %12.4g flop %12.4g B %9.2f us\n",
                        plan_kclass_name(op->kclass), op->flops, op->bytes, op->cost_s * 1e6);
            else if (op->kind == OPK_COLL)
                fprintf(out, " %-16s %12.4g B over %s\n", plan_coll_name(op->coll),
                        op->comm_bytes, plan_group_name(op->group));
            else
                fprintf(out, " %s\n", plan_kind_name(op->kind));
        }
        fprintf(out, "  (layer 0 shown; later layers repeat it)\n");
    }
}

