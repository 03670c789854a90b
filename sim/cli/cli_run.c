/* cli_run: the commands run, validate and plan (see cli.h), each one pass
 * through the pipeline (sim/driver/driver.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "models/cost.h"

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
                   .trace_gz = o->trace_gz};
    return rq;
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
    rep_trace_opts trace = {(rep_trace_level)o->trace_level, o->trace_ranks, o->trace_layer_lo,
                            o->trace_layer_hi};
    rq.trace = &trace;
    json_t *summary = NULL;
    eng_init(argc, argv);
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (drv_run(&rq, &summary, o->quiet ? NULL : stdout, &err) != 0)
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
    drv_req rq = request_of(o);
    if (drv_prepare(&rq, &s, &p, &err) != 0)
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
    if (s.serving)
        printf("  # serving: the plan above is the first request's prefill step alone; the\n"
               "  # scheduler (sim/serve/) builds each step from the requests as it runs\n");
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
    int rc = 0;
    if (o->json)
        rc = plan_write_json(&p, stdout, &err);
    else
        rep_plan_text(&p, stdout);
    plan_free(&p);
    wl_free(&s);
    return rc == 0 ? CP_EXIT_OK : fail(&err);
}
