/* cli_run: the commands run, validate and plan (see cli.h), each one pass
 * through the pipeline (sim/driver/driver.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectives/coll.h"
#include "models/build/build.h"
#include "models/cost.h"
#include "models/interference.h"

#include "models/memory.h"
#include "models/quant.h"
#include "reports/plot.h"
#include "reports/report.h"
#include "sim/cli/cli.h"
#include "sim/engine/engine.h"
#include "sim/driver/driver.h"

static int fail(const cp_err *err)
{
    fprintf(stderr, "cpsim: %s\n", err->msg);
    return err->code ? err->code : CP_EXIT_INTERNAL;
}

static drv_req request_of(const cli_opts *o)
{
    drv_req rq = {.workload = o->workload, .sets = o->sets, .nsets = o->nsets,
                   .platform = o->platform, .out_dir = o->out_dir, .warn = stderr,
                   .trace_gz = o->trace_gz, .all_ranks = o->all_ranks};
    return rq;
}

/* The trace options of the run line: without --trace, the level chosen by
 * size (the bound CPSIM_TRACE_AUTO_MB when set, in MB), or full when
 * --trace-layers asks for a window of ops or --plots for the timeline
 * (plot_run_dir draws it from the trace's ops). */
static int trace_opts(const cli_opts *o, rep_trace_opts *t, cp_err *err)
{
    *t = (rep_trace_opts){(rep_trace_level)o->trace_level, o->trace_ranks, o->trace_layer_lo,
                          o->trace_layer_hi, 0};
    if (t->level == REP_TRACE_AUTO && (t->layer_lo >= 0 || o->plots))
        t->level = REP_TRACE_FULL;
    const char *mb = getenv("CPSIM_TRACE_AUTO_MB");
    if (!mb)
        return 0;
    char *end;
    double v = strtod(mb, &end);
    /* 1e6 MB: a terabyte, beyond any trace worth writing */
    if (end == mb || *end || !(v > 0) || v > 1e6)
        return cp_fail(err, CP_EXIT_INPUT, "CPSIM_TRACE_AUTO_MB=%s: expected the bound of the "
                       "default trace in MB, a number in (0, 1e6]", mb);
    t->auto_bytes = v * 1e6;
    return 0;
}

/* An interrupt during a run: no half-written output stays behind, the
 * exit status says which signal (128 + signal, as a shell reports it);
 * replaces SimGrid's handler, which aborts with a backtrace. */
static void on_stop(int sig)
{
    static const char msg[] = "cpsim: interrupted; no half-written output is left behind\n";
    rep_tmp_cleanup();
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(128 + sig);
}

int cli_run(const cli_opts *o, int *argc, char **argv)
{
    cp_err err = {0};
    drv_req rq = request_of(o);
    rep_trace_opts trace;
    if (trace_opts(o, &trace, &err) != 0)
        return fail(&err);
    rq.trace = &trace;
    json_t *summary = NULL;
    /* SimGrid reads its options before "--" only (after it: arguments) */
    int sg_argc = 1;
    while (sg_argc < *argc && strcmp(argv[sg_argc], "--") != 0)
        sg_argc++;
    int rest = *argc - sg_argc;
    eng_init(&sg_argc, argv);
    memmove(argv + sg_argc, argv + (*argc - rest), (size_t)rest * sizeof *argv);
    *argc = sg_argc + rest;
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (drv_run(&rq, &summary, o->quiet ? NULL : stdout, &err) != 0)
        return fail(&err);
    json_decref(summary);
    if (o->plots && plot_run_dir(o->out_dir, NULL, o->quiet ? NULL : stdout, &err) != 0)
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

/* The members of rank r's group g as text ("0-7", "0, 8, ..., 120" for a
 * stride) and the nodes they are on ("node 0", "nodes 0-15"). */
static void group_text(const plan_layout_cfg *lay, int r, plan_group g, char *buf, size_t n)
{
    int cnt = plan_group_size(lay, g), me = 0;
    int *m = malloc((size_t)cnt * sizeof *m);
    if (!m)
        abort();
    plan_group_members(lay, r, g, m, cnt, &me);
    int stride = cnt > 1 ? m[1] - m[0] : 1, even = 1;
    for (int i = 2; i < cnt; i++)
        even &= m[i] - m[i - 1] == stride;
    int dpn = lay->devices_per_node > 0 ? lay->devices_per_node : 1;
    int n0 = m[0] / dpn, n1 = m[cnt - 1] / dpn;
    size_t off = 0;
    if (cnt == 1)
        off = (size_t)snprintf(buf, n, "[%d]", m[0]);
    else if (even && stride == 1)
        off = (size_t)snprintf(buf, n, "[%d-%d]", m[0], m[cnt - 1]);
    else if (even && cnt > 4)
        off = (size_t)snprintf(buf, n, "[%d, %d, ..., %d] (every %d)", m[0], m[1], m[cnt - 1],
                               stride);
    else {
        off = (size_t)snprintf(buf, n, "[");
        for (int i = 0; i < cnt && off < n; i++)
            off += (size_t)snprintf(buf + off, n - off, "%s%d", i ? ", " : "", m[i]);
        if (off < n)
            off += (size_t)snprintf(buf + off, n - off, "]");
    }
    if (off < n) {
        if (n0 == n1)
            snprintf(buf + off, n - off, " on node %d", n0);
        else
            snprintf(buf + off, n - off, " on nodes %d-%d", n0, n1);
    }
    free(m);
}

/* How ranks map onto devices and groups (cpsim validate). */
static void print_mapping(const plan *p)
{
    const plan_layout_cfg *l = &p->lay;
    int dpn = l->devices_per_node > 0 ? l->devices_per_node : 1;
    char t[256];
    printf("mapping:                # parallel.order %s: rank = %s; device r of node r / %d\n",
           plan_order_name((plan_order)l->order),
           l->order == ORDER_SP_TP_DP ? "(dp * tp + tp_i) * sp + sp_i"
                                      : "(dp * sp + sp_i) * tp + tp_i", dpn);
    printf("  ranks: %d on %d node(s) of %d devices\n", p->nranks, (p->nranks + dpn - 1) / dpn,
           dpn);
    group_text(l, 0, G_TP, t, sizeof t);
    printf("  tp_groups: %d of %d, the first %s\n", l->sp * l->dp, l->tp, t);
    if (l->sp > 1) {
        for (int i = 0; i < l->tp && i < 2; i++) {
            group_text(l, plan_rank_of(l, i, 0, 0), G_SP, t, sizeof t);
            printf("  sp_group_of_tp_%d: %s\n", i, t);
        }
        printf("  sp_groups: %d of %d (one per TP index and replica)\n", l->tp * l->dp, l->sp);
    }
    if (l->ep > 1) {
        group_text(l, 0, G_EP, t, sizeof t);
        printf("  ep_groups: %d of %d, the first %s\n", p->nranks / l->ep, l->ep, t);
    }
    if (l->dp > 1) {
        group_text(l, 0, G_NODE, t, sizeof t);
        printf("  dp_replicas: %d of %d ranks, the first %s\n", l->dp, l->tp * l->sp, t);
    }
}

int cli_validate(const cli_opts *o)
{
    if (o->accuracy)
        return accuracy(o);
    cp_err err = {0};
    scenario s;
    plan p;
    drv_req rq = request_of(o);
    if (drv_prepare(&rq, &s, &p, &err) != 0)
        return fail(&err);
    /* every table a run reads: the NCCL fit and the interference curves
     * too (drv_prepare priced the plan from the kernel tables) */
    coll_model cm;
    interf_model im;
    if (coll_model_init(&cm, &s.plat, &err) != 0 || interf_load(&im, &s.plat, &err) != 0) {
        plan_free(&p);
        wl_free(&s);
        return fail(&err);
    }
    wl_dump(&s, stdout);
    mem_weights w;
    mem_weights_per_rank(&s.model, (mem_shard){.tp = s.par.tp, .ep = s.par.ep}, s.w_dtype, &w);
    size_t nops = 0;
    for (int g = 0; g < p.nprogs; g++)
        nops += p.progs[g].nops;
    printf("plan:\n  ranks: %d\n  programs: %d\n  ops: %zu\n  steps: %d\n"
           "  weights_per_rank_bytes: %.0f     # plain TP-sharded estimate\n"
           "  resident_weights_bytes: %.0f     # materialized (cpsim memory)\n",
           p.nranks, p.nprogs, nops, p.nsteps, w.total, build_weight_bytes(&s));
    if (s.serving)
        printf("  # serving: the plan above is the first request's prefill step alone; the\n"
               "  # scheduler (sim/serve/) builds each step from the requests as it runs\n");
    print_mapping(&p);
    plan_free(&p);
    wl_free(&s);
    return CP_EXIT_OK;
}

int cli_plan(const cli_opts *o)
{
    cp_err err = {0};
    scenario s;
    plan p;
    drv_req rq = request_of(o);
    if (drv_prepare(&rq, &s, &p, &err) != 0)
        return fail(&err);
    /* every layer, as built, unless the workload asked for the folded form
     * (the engine folds by default; a listing is read layer by layer) */
    if (!s.fold_layers_given && !rq.fold_layers) {
        plan full;
        plan_expand(&p, &full);
        plan_free(&p);
        p = full;
    }
    int rc = 0;
    if (o->json)
        rc = plan_write_json(&p, stdout, &err);
    else
        rep_plan_text(&p, stdout);
    plan_free(&p);
    wl_free(&s);
    return rc == 0 ? CP_EXIT_OK : fail(&err);
}
