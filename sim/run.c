/* run: the commands run, validate and plan (see cli.h), each one pass
 * through the pipeline (pipeline.h). */
#include <stdio.h>
#include <stdlib.h>

#include "models/cost.h"

#include "models/memory.h"
#include "models/quant.h"
#include "reports/plot.h"
#include "sim/cli.h"
#include "sim/engine.h"
#include "sim/pipeline.h"

static int fail(const cp_err *err)
{
    fprintf(stderr, "cpsim: %s\n", err->msg);
    return err->code ? err->code : CP_EXIT_INTERNAL;
}

static pipe_req request_of(const cli_opts *o)
{
    pipe_req rq = {.workload = o->workload, .sets = o->sets, .nsets = o->nsets,
                   .platform = o->platform, .out_dir = o->out_dir, .warn = stderr};
    return rq;
}

int cli_run(const cli_opts *o, int *argc, char **argv)
{
    cp_err err = {0};
    pipe_req rq = request_of(o);
    json_t *summary = NULL;
    eng_init(argc, argv);
    if (pipeline_run(&rq, &summary, o->quiet ? NULL : stdout, &err) != 0)
        return fail(&err);
    json_decref(summary);
    if (o->plots && plot_run_dir(o->out_dir, NULL, &err) != 0)
        return fail(&err);
    if (o->plots && !o->quiet)
        printf("plots: %s/plots/index.html\n", o->out_dir);
    return CP_EXIT_OK;
}

/* validate --accuracy: the calibration rows of the scenario's platform. */
static int accuracy(const cli_opts *o)
{
    cp_err err = {0};
    scenario s;
    if (wl_load(o->workload, o->sets, o->nsets, o->platform, &s, &err) != 0)
        return fail(&err);
    cost_check_row *rows;
    int n = cost_check_calibration(&s.plat, &rows, &err);
    wl_free(&s);
    if (n < 0)
        return fail(&err);
    if (o->json) {
        json_t *j = cost_accuracy_json(rows, n);
        json_dumpf(j, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
        fputc('\n', stdout);
        json_decref(j);
    } else {
        cost_accuracy_print(rows, n, stdout);
    }
    free(rows);
    return CP_EXIT_OK;
}

int cli_validate(const cli_opts *o)
{
    if (o->accuracy)
        return accuracy(o);
    cp_err err = {0};
    scenario s;
    plan p;
    pipe_req rq = request_of(o);
    if (pipeline_prepare(&rq, &s, &p, &err) != 0)
        return fail(&err);
    wl_dump(&s, stdout);
    mem_weights w;
    mem_weights_per_rank(&s.model, (mem_shard){.tp = s.par.tp, .ep = s.par.ep}, s.w_dtype, &w);
    size_t nops = 0;
    for (int g = 0; g < p.nprogs; g++)
        nops += p.progs[g].nops;
    printf("plan:\n  ranks: %d\n  programs: %d\n  ops: %zu\n  steps: %d\n"
           "  weights_per_rank_bytes: %.0f     # plain TP-sharded estimate\n"
           "  resident_weights_bytes: %.0f     # materialized (cpsim memory)\n",
           p.nranks, p.nprogs, nops, p.nsteps, w.total, quant_resident_bytes(&s));
    plan_free(&p);
    wl_free(&s);
    return CP_EXIT_OK;
}

/* Human-readable plan: op counts by kind and class per program, and the
 * first layer's ops. */
static void plan_text(const plan *p, FILE *out)
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

int cli_plan(const cli_opts *o)
{
    cp_err err = {0};
    scenario s;
    plan p;
    pipe_req rq = request_of(o);
    if (pipeline_prepare(&rq, &s, &p, &err) != 0)
        return fail(&err);
    int rc = 0;
    if (o->json)
        rc = plan_write_json(&p, stdout, &err);
    else
        plan_text(&p, stdout);
    plan_free(&p);
    wl_free(&s);
    return rc == 0 ? CP_EXIT_OK : fail(&err);
}
