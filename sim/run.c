/* run: the commands of cpsim, each one pass through the pipeline
 *   workloads/ (load, validate) -> models/ (plan, cost) -> sim/ (SimGrid)
 *   -> reports/ (files, table). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "collectives/coll.h"
#include "models/build.h"
#include "models/cost.h"
#include "models/memory.h"
#include "reports/report.h"
#include "sim/cli.h"
#include "sim/engine.h"
#include "workloads/workload.h"

static int fail(const cp_err *err)
{
    fprintf(stderr, "cpsim: %s\n", err->msg);
    return err->code ? err->code : CP_EXIT_INTERNAL;
}

/* Load, plan and price: everything before the simulation. */
static int prepare(const cli_opts *o, scenario *s, plan *p, cp_err *err)
{
    memset(p, 0, sizeof *p);
    if (wl_load(o->workload, o->sets, o->nsets, o->platform, s, err) != 0)
        return -1;
    if (build_plan(s, p, err) != 0) {
        wl_free(s);
        return -1;
    }
    cost_model *cm = cost_new(&s->plat, err);
    if (!cm) {
        plan_free(p);
        wl_free(s);
        return -1;
    }
    cost_price_plan(cm, p, s->graph == GRAPH_CAPTURED);
    cost_free(cm);
    return 0;
}

static int mkdir_p(const char *dir, cp_err *err)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *c = buf + 1; *c; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return cp_fail(err, CP_EXIT_INPUT, "--out %s: cannot create %s: %s", dir, buf,
                           strerror(errno));
        *c = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return cp_fail(err, CP_EXIT_INPUT, "--out %s: cannot create it: %s", dir,
                       strerror(errno));
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
        return cp_fail(err, CP_EXIT_INPUT, "--out %s: not a directory", dir);
    return 0;
}

static int write_outputs(const cli_opts *o, const scenario *s, const plan *p,
                         const eng_result *r, const rep_summary *sm, cp_err *err)
{
    char path[4096];
    if (mkdir_p(o->out_dir, err) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/trace.json", o->out_dir);
    if (rep_write_trace(s, p, r, path, err) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/memory.csv", o->out_dir);
    if (rep_write_memory_csv(p, r, path, err) != 0)
        return -1;
    /* summary last: its presence means the run's outputs are complete */
    snprintf(path, sizeof path, "%s/summary.json", o->out_dir);
    return rep_write_summary(sm, s, path, err);
}

int cli_run(const cli_opts *o, int *argc, char **argv)
{
    cp_err err = {0};
    scenario s;
    plan p;
    if (prepare(o, &s, &p, &err) != 0)
        return fail(&err);
    coll_model cm;
    if (coll_model_init(&cm, &s.plat, &err) != 0) {
        plan_free(&p);
        wl_free(&s);
        return fail(&err);
    }
    eng_init(argc, argv);
    eng_opts eo = {.plat = &s.plat, .cm = &cm, .graph = s.graph == GRAPH_CAPTURED,
                   .l07 = s.net_model == NET_L07};
    eng_result r;
    rep_summary sm = {0};
    int rc = eng_run(&p, &eo, &r, &err);
    if (rc == 0)
        rc = rep_summarize(&s, &p, &r, &sm, &err);
    if (rc == 0)
        rc = write_outputs(o, &s, &p, &r, &sm, &err);
    if (rc == 0 && !o->quiet) {
        rep_print_table(&sm, &s, stdout);
        printf("\nwrote %s/summary.json, %s/trace.json, %s/memory.csv "
               "(simulated %ld events, %ld messages in %.3f s)\n",
               o->out_dir, o->out_dir, o->out_dir, sm.events, sm.messages, sm.wall_s);
    }
    rep_summary_free(&sm);
    eng_result_free(&r);
    plan_free(&p);
    wl_free(&s);
    return rc == 0 ? CP_EXIT_OK : fail(&err);
}

int cli_validate(const cli_opts *o)
{
    cp_err err = {0};
    scenario s;
    plan p;
    if (prepare(o, &s, &p, &err) != 0)
        return fail(&err);
    wl_dump(&s, stdout);
    mem_weights w;
    mem_weights_per_rank(&s.model, (mem_shard){.tp = s.par.tp, .ep = s.par.ep}, s.w_dtype, &w);
    size_t nops = 0;
    for (int g = 0; g < p.nprogs; g++)
        nops += p.progs[g].nops;
    printf("plan:\n  ranks: %d\n  programs: %d\n  ops: %zu\n  steps: %d\n"
           "  weights_per_rank_bytes: %.0f\n",
           p.nranks, p.nprogs, nops, p.nsteps, w.total);
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
    if (prepare(o, &s, &p, &err) != 0)
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
