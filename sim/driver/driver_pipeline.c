/* driver_pipeline: one scenario through every stage (see driver.h). */
#include "sim/driver/driver.h"

#include <string.h>
#include <unistd.h>

#include "collectives/coll.h"
#include "models/build/build.h"
#include "models/exchange/exchange.h"
#include "models/cost.h"
#include "models/interference.h"
#include "reports/report.h"
#include "sim/engine/engine.h"
#include "sim/serve/serve.h"

void drv_plan(const scenario *s, plan *p)
{
    if (!s->serving) {
        build_plan(s, p);
        return;
    }
    /* the scheduler builds its steps as they come (sim/serve/): the plan
     * here is the first request's prefill, alone */
    const wl_request *q = s->nreqs > 0 ? &s->reqs[0] : NULL;
    sc_seq one = {q ? q->prompt_tokens : s->streams[0].prompt_tokens,
                  q ? q->cached_tokens : s->streams[0].cached_tokens, 1,
                  q ? q->audio_frames : s->streams[0].audio_frames};
    sc_batch bt = {&one, 1, build_step_splits(s, one.tokens)};
    build_step_plan(s, &bt, 0, p);
}

int drv_prepare(const drv_req *rq, scenario *s, plan *p, cp_err *err)
{
    memset(p, 0, sizeof *p);
    if (wl_load(rq->workload, rq->sets, rq->nsets, rq->platform, s, err) != 0)
        return -1;
    if (rq->warn)
        wl_print_warnings(s, rq->warn);
    /* folded as built, before pricing: a layer's ops are priced once
     * (cost.h) */
    s->fold_at_build = rq->fold_layers || s->fold_layers;
    drv_plan(s, p);
    cost_model *cm = cost_new(&s->plat, err);
    if (!cm) {
        plan_free(p);
        wl_free(s);
        return -1;
    }
    cost_price_plan(cm, p, s->graph != GRAPH_EAGER);
    cost_free(cm);
    return 0;
}

/* The trace level of the run's outputs: rq's, or under auto the one its
 * size calls for; a choice of steps is said in *note (the table's line, ""
 * otherwise), in the summary's warnings and in its trace_detail. */
static int choose_trace(const drv_req *rq, const plan *p, const eng_result *r,
                        json_t *summary, rep_trace_opts *o, char *note, size_t len,
                        cp_err *err)
{
    static const rep_trace_opts full = {REP_TRACE_FULL, NULL, -1, -1, 0};
    *o = rq->trace ? *rq->trace : full;
    note[0] = '\0';
    double events, bytes;
    rep_trace_level auto_level = o->level;
    if (rep_trace_choose(p, r, o, &o->level, &events, &bytes, err) != 0)
        return -1;
    if (auto_level != REP_TRACE_AUTO || o->level != REP_TRACE_STEPS)
        return 0;
    double bound = o->auto_bytes > 0 ? o->auto_bytes : REP_TRACE_AUTO_MB * 1e6;
    char many[32];
    if (events >= 1e6)
        snprintf(many, sizeof many, "%.3gM", events / 1e6);
    else
        snprintf(many, sizeof many, "%.0f", events);
    snprintf(note, len, "trace: %s events would write ~%.0f MB (more than %.3g MB); wrote "
             "step-level detail (use --trace full for every event)", many, bytes / 1e6,
             bound / 1e6);
    json_array_append_new(json_object_get(summary, "warnings"), json_string(note));
    json_t *td = json_object();
    json_object_set_new(td, "level", json_string("steps"));
    json_object_set_new(td, "chosen", json_string("by size"));
    json_object_set_new(td, "full_events", json_integer((json_int_t)events));
    json_object_set_new(td, "full_bytes_estimate", json_real(bytes));
    json_object_set_new(td, "bound_bytes", json_real(bound));
    json_object_set_new(summary, "trace_detail", td);
    return 0;
}

static int write_outputs(const drv_req *rq, const scenario *s, const plan *p,
                         const eng_result *r, json_t *summary, char *note, size_t len,
                         cp_err *err)
{
    const char *dir = rq->out_dir;
    char path[4096];
    rep_trace_opts trace;
    if (choose_trace(rq, p, r, summary, &trace, note, len, err) != 0)
        return -1;
    if (rep_mkdir_p(dir, err) != 0)
        return -1;
    rep_remove_stale(dir);
    /* one group: nothing is replaced unless all three were written, and
     * the summary, last, says the outputs beside it are complete */
    rep_group_begin();
    int none = trace.level == REP_TRACE_NONE, rc = 0;
    snprintf(path, sizeof path, "%s/trace.json%s", dir, rq->trace_gz ? ".gz" : "");
    if (!none)
        rc = rep_write_trace(s, p, r, &trace, path, err);
    snprintf(path, sizeof path, "%s/memory.csv", dir);
    if (rc == 0)
        rc = rep_write_memory_csv(p, r, !rq->all_ranks, path, err);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    if (rc == 0)
        rc = rep_write_json(summary, path, err);
    rc = rep_group_end(rc == 0, err);
    /* a trace of an earlier run (the other form, or any with --trace none)
     * or a serving run's steps and requests would not belong */
    for (int k = 0; k < 2 && rc == 0; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, k ? "requests.csv" : "steps.csv");
        unlink(path);
    }
    for (int gz = 0; gz < 2 && rc == 0; gz++) {
        snprintf(path, sizeof path, "%s/trace.json%s", dir, gz ? ".gz" : "");
        if (none || gz != rq->trace_gz)
            unlink(path);
    }
    return rc;
}

int drv_run(const drv_req *rq, json_t **summary, FILE *table, cp_err *err)
{
    scenario s;
    plan p;
    *summary = NULL;
    if (drv_prepare(rq, &s, &p, err) != 0)
        return -1;
    int rc = drv_simulate(rq, &s, &p, summary, table, err);
    plan_free(&p);
    wl_free(&s);
    return rc;
}

/* Whether plan p has a split step of a ring exchange (plan.step_ring). */
static int has_ring_step(const plan *p)
{
    for (int k = 0; p->step_ring && k < p->nsteps; k++)
        if (p->step_ring[k] != PR_NONE)
            return 1;
    return 0;
}

static int drv_simulate_one(const drv_req *rq, const scenario *s, const plan *p,
                            json_t **summary, FILE *table, cp_err *err);

/* parallel.ring_select: simulate: the plan with every split ring step as
 * pass-KV and as pass-Q, each simulated in a child process (summary only),
 * the one that ends first into *win (ties: pass-KV), priced and folded as
 * drv_prepare does.  Its summary's `ring_select` says what both took. */
static int pick_ring(const drv_req *rq, const scenario *s, plan *win, double took[2],
                     cp_err *err)
{
    static const plan_ring rings[2] = {PR_PASS_KV, PR_PASS_Q};
    cost_model *cm = cost_new(&s->plat, err);
    if (!cm)
        return -1;
    plan cand[2];
    drv_req quiet = *rq;
    quiet.out_dir = NULL;
    quiet.warn = NULL;
    quiet.picked = took; /* the children simulate their plan as it is */
    int rc = 0;
    for (int k = 0; k < 2; k++) {
        build_plan_ring(s, rings[k], &cand[k]);
        cost_price_plan(cm, &cand[k], s->graph != GRAPH_EAGER);
    }
    cost_free(cm);
    drv_child ch[2];
    for (int k = 0; k < 2 && rc == 0; k++)
        rc = drv_spawn_prepared(&quiet, s, &cand[k], &ch[k], err);
    for (int k = 0; k < 2 && rc == 0; k++) {
        json_t *sm = NULL;
        rc = drv_finish(&ch[k], &sm, err);
        took[k] = rc == 0 ? json_number_value(json_object_get(sm, "makespan_s")) : 0;
        json_decref(sm);
    }
    int best = ex_faster_ring(took[0], took[1]) == PR_PASS_Q;
    for (int k = 0; k < 2; k++) {
        if (rc == 0 && k == best)
            *win = cand[k];
        else
            plan_free(&cand[k]);
    }
    return rc;
}

int drv_simulate(const drv_req *rq, const scenario *s, const plan *p, json_t **summary,
                      FILE *table, cp_err *err)
{
    *summary = NULL;
    /* what this run replaces goes before it simulates: a run that cannot
     * finish leaves none of another scenario's outputs (rep_clear_outputs) */
    if (rq->out_dir)
        rep_clear_outputs(rq->out_dir);
    if (s->serving) {
        srv_out o = {rq->out_dir, rq->warn, rq->trace_gz, rq->trace, rq->all_ranks};
        return srv_run(&o, s, s->decode_reuse, summary, table, err);
    }
    if (s->par.ring_select == RS_SIMULATE && !rq->picked && has_ring_step(p)) {
        plan win;
        double took[2];
        if (pick_ring(rq, s, &win, took, err) != 0)
            return -1;
        drv_req once = *rq;
        once.picked = took;
        int rc = drv_simulate_one(&once, s, &win, summary, table, err);
        plan_free(&win);
        return rc;
    }
    return drv_simulate_one(rq, s, p, summary, table, err);
}

/* drv_simulate of exactly the plan p (no ring selection, not serving). */
static int drv_simulate_one(const drv_req *rq, const scenario *s, const plan *p, json_t **summary,
                     FILE *table, cp_err *err)
{
    *summary = NULL;
    coll_model cm;
    interf_model im;
    eng_result r = {0};
    rep_summary sm = {0};
    int rc = coll_model_init(&cm, &s->plat, err);
    if (rc == 0)
        rc = interf_load(&im, &s->plat, err);
    if (rc == 0) {
        eng_opts eo = eng_opts_of(s, &cm, &im);
        eo.progress = table ? stderr : NULL; /* a console run, not a child's */
        rc = eng_run(p, &eo, &r, err);
    }
    if (rc == 0)
        rc = rep_summarize(s, p, &r, &sm, err);
    if (rc == 0)
        *summary = rep_summary_json(&sm, s);
    if (rc == 0 && rq->picked) { /* ring_select: simulate, what both rings took */
        json_t *rs = json_object();
        json_object_set_new(rs, "pass_kv_makespan_s", json_real(rq->picked[0]));
        json_object_set_new(rs, "pass_q_makespan_s", json_real(rq->picked[1]));
        json_object_set_new(rs, "picked", json_string(rq->picked[1] < rq->picked[0]
                                                          ? "pass_q" : "pass_kv"));
        json_object_set_new(*summary, "ring_select", rs);
    }
    char note[256] = "";
    if (rc == 0 && rq->out_dir)
        rc = write_outputs(rq, s, p, &r, *summary, note, sizeof note, err);
    if (rc == 0 && table) {
        rep_print_table(&sm, s, rq->all_ranks, table);
        if (note[0])
            fprintf(table, "\n%s\n", note);
        if (rq->out_dir && rq->trace && rq->trace->level == REP_TRACE_NONE)
            fprintf(table, "\nwrote %s/summary.json, %s/memory.csv ", rq->out_dir, rq->out_dir);
        else if (rq->out_dir)
            fprintf(table, "\nwrote %s/summary.json, %s/trace.json%s, %s/memory.csv ",
                    rq->out_dir, rq->out_dir, rq->trace_gz ? ".gz" : "", rq->out_dir);
        fprintf(table, "(simulated %ld events, %ld messages in %.3f s", sm.events, sm.messages,
                sm.wall_s);
        if (sm.replicas_simulated == 1 && s->par.dp > 1)
            fprintf(table, "; one of the %d independent DP replicas simulated, copied to the rest",
                    s->par.dp);
        if (sm.tp_shared > 1)
            fprintf(table, "; one rank of each TP group simulated, copied to its %d ranks",
                    sm.tp_shared);
        rep_print_replayed(&sm, table);
        fputs(")\n", table);
    }
    if (rc != 0 && *summary) {
        json_decref(*summary);
        *summary = NULL;
    }
    rep_summary_free(&sm);
    eng_result_free(&r);
    return rc;
}
