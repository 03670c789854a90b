/* serve_report: a serving run's summary, trace, memory timeline and table
 * (see serve.h).  Percentiles interpolate linearly between the closest
 * ranks (numpy.percentile's default), as vLLM's serving benchmark takes
 * them (benchmarks/benchmark_serving.py): the summary says so in
 * serving.percentiles. */
#include "sim/serve/serve_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/sortd.h"

/* The p-quantile (0 <= p <= 1) of v[0..n) (sorted here), 0 when n is 0:
 * v at position p (n - 1), interpolated between its neighbours. */
static double pct(double *v, int n, double p)
{
    if (n <= 0)
        return 0;
    int sorted = 1; /* (the figures take several percentiles of one array) */
    for (int i = 1; i < n && sorted; i++)
        sorted = !(v[i] < v[i - 1]);
    if (!sorted)
        cp_sort_doubles(v, (size_t)n);
    double h = p * (double)(n - 1);
    int k = (int)floor(h);
    if (k >= n - 1)
        return v[n - 1];
    return v[k] + (h - (double)k) * (v[k + 1] - v[k]);
}

/* pct as JSON: null when there is no value to take it of. */
static json_t *pct_json(double *v, int n, double p)
{
    return n > 0 ? json_real(pct(v, n, p)) : json_null();
}

static int finished(const srv_req *q)
{
    return q->state == SRQ_DONE;
}

static int got_first(const srv_req *q)
{
    return q->prompt > 0 && q->prefilled == q->prompt;
}

static double tpot(const srv_req *q)
{
    return q->decoded > 0 ? (q->last_token - q->first_token) / (double)q->decoded : 0;
}

/* Whether q finished within the workload's slo (every finished request
 * when it has none). */
static int slo_met(const srv_run_st *R, const srv_req *q)
{
    return finished(q) && sc_slo_met(R->s, q->cls, q->first_token - q->arrival, tpot(q));
}

/* The step that made q's longest inter-token gap: the longest step of q's
 * replica that ran inside the gap (the one that ended it, unless a longer
 * step ran before it in the same gap). */
static int stall_step(const srv_run_st *R, const srv_req *q)
{
    int best = q->gap_max_inst;
    for (int i = q->gap_max_inst; i >= 0 && R->inst[i].t1 > q->gap_max_at; i--) {
        const srv_inst *in = &R->inst[i], *b = &R->inst[best];
        if ((R->lockstep || in->replica == q->replica) && in->t1 - in->t0 > b->t1 - b->t0)
            best = i;
    }
    return best;
}

/* The longest stall of the requests of class cls (-2: all) as JSON fields
 * of j: stall_max_s, stall_at_s (when the gap began), stall_request and
 * stall_step (the step of steps.csv that caused it, with its make-up). */
static void stall_json(const srv_run_st *R, int cls, json_t *j)
{
    const srv_req *w = NULL;
    for (int i = 0; i < R->nreq; i++) {
        const srv_req *q = &R->req[i];
        if ((cls == -2 || q->cls == cls) && q->ngaps > 0 &&
            (!w || q->gap_max > w->gap_max * (1 + SRV_GAP_TIE) ||
             (q->gap_max >= w->gap_max * (1 - SRV_GAP_TIE) && q->gap_max_at < w->gap_max_at)))
            w = q;
    }
    if (!w) {
        json_object_set_new(j, "stall_max_s", json_null());
        json_object_set_new(j, "stall_at_s", json_null());
        json_object_set_new(j, "stall_request", json_null());
        json_object_set_new(j, "stall_step", json_null());
        return;
    }
    int k = stall_step(R, w);
    const srv_inst *in = &R->inst[k];
    json_object_set_new(j, "stall_max_s", json_real(w->gap_max));
    json_object_set_new(j, "stall_at_s", json_real(w->gap_max_at));
    json_object_set_new(j, "stall_request", json_integer(w->id));
    json_t *st = json_object();
    json_object_set_new(st, "step", json_integer(k));
    json_object_set_new(st, "t0_s", json_real(in->t0));
    json_object_set_new(st, "t1_s", json_real(in->t1));
    json_object_set_new(st, "decodes", json_integer(in->ndecode));
    json_object_set_new(st, "prefills", json_integer(in->nprefill));
    json_object_set_new(st, "tokens", json_integer(in->tokens));
    json_object_set_new(j, "stall_step", st);
}

/* The serving figures of the requests of class cls (-2: all). */
static json_t *figures(const srv_run_st *R, int cls)
{
    int n = 0, done = 0, nt = 0, np = 0, ng = 0, good = 0;
    double *ttft = cp_xcalloc((size_t)R->nreq + 1, sizeof *ttft);
    double *tp = cp_xcalloc((size_t)R->nreq + 1, sizeof *tp);
    double *queue = cp_xcalloc((size_t)R->nreq + 1, sizeof *queue);
    size_t ngaps = 0;
    for (int i = 0; i < R->nreq; i++)
        ngaps += (size_t)R->req[i].ngaps;
    double *gaps = cp_xcalloc(ngaps + 1, sizeof *gaps);
    double out_tokens = 0, in_tokens = 0;
    for (int i = 0; i < R->nreq; i++) {
        const srv_req *q = &R->req[i];
        if (cls != -2 && q->cls != cls)
            continue;
        n++;
        done += finished(q);
        good += slo_met(R, q);
        in_tokens += (double)q->prefilled;
        out_tokens += (double)(got_first(q) + q->decoded);
        if (got_first(q)) {
            ttft[nt++] = q->first_token - q->arrival;
            queue[np++] = q->admit - q->arrival;
        }
        if (q->decoded > 0 && finished(q))
            tp[ng++] = tpot(q);
    }
    size_t ig = 0;
    for (int i = 0; i < R->nreq; i++) {
        const srv_req *q = &R->req[i];
        if (cls != -2 && q->cls != cls)
            continue;
        if (q->ngaps > 0)
            memcpy(gaps + ig, q->gaps, (size_t)q->ngaps * sizeof *gaps);
        ig += (size_t)q->ngaps;
    }
    double dur = R->end_s;
    json_t *j = json_object();
    json_object_set_new(j, "requests", json_integer(n));
    json_object_set_new(j, "finished", json_integer(done));
    json_object_set_new(j, "duration_s", json_real(dur));
    json_object_set_new(j, "throughput_tokens_per_s", json_real(dur > 0 ? out_tokens / dur : 0));
    json_object_set_new(j, "prompt_tokens_per_s", json_real(dur > 0 ? in_tokens / dur : 0));
    json_object_set_new(j, "ttft_p50_s", pct_json(ttft, nt, 0.50));
    json_object_set_new(j, "ttft_p99_s", pct_json(ttft, nt, 0.99));
    json_object_set_new(j, "tpot_p50_s", pct_json(tp, ng, 0.50));
    json_object_set_new(j, "tpot_p99_s", pct_json(tp, ng, 0.99));
    json_object_set_new(j, "itl_p50_s", pct_json(gaps, (int)ig, 0.50));
    json_object_set_new(j, "itl_p99_s", pct_json(gaps, (int)ig, 0.99));
    json_object_set_new(j, "itl_p999_s", pct_json(gaps, (int)ig, 0.999));
    json_object_set_new(j, "itl_max_s", pct_json(gaps, (int)ig, 1.0));
    stall_json(R, cls, j);
    json_object_set_new(j, "slo_met", json_integer(good));
    json_object_set_new(j, "goodput_per_s", json_real(dur > 0 ? good / dur : 0));
    json_object_set_new(j, "queue_p50_s", pct_json(queue, np, 0.50));
    json_object_set_new(j, "queue_p99_s", pct_json(queue, np, 0.99));
    free(ttft);
    free(tp);
    free(queue);
    free(gaps);
    return j;
}

const char *srv_idle_warning(const srv_run_st *R)
{
    static char w[320];
    const scenario *s = R->s;
    double first = INFINITY;
    for (int q = 0; q < s->nreqs; q++)
        first = s->reqs[q].arrival_s < first ? s->reqs[q].arrival_s : first;
    for (int k = 0; k < s->nstreams; k++)
        first = s->streams[k].start_s < first ? s->streams[k].start_s : first;
    snprintf(w, sizeof w, "serving: no step ran before simulation.duration_s = %g s (the first "
             "request arrives at %g s): nothing was served, the figures are null and the peak "
             "is the resident memory (weights and engine)", s->duration_s, first);
    return w;
}

static void add_cost(rep_costsrc *to, const rep_costsrc *c)
{
    to->total_s += c->total_s;
    to->table_s += c->table_s;
    for (int k = 0; k < KC_COUNT; k++) {
        to->class_s[k] += c->class_s[k];
        for (int t = 0; t < CS_COUNT; t++)
            to->class_src_s[k][t] += c->class_src_s[k][t];
    }
}

/* The global rank of rank rk of a step that ran on replica d. */
static int global_rank(const srv_run_st *R, int d, int rk)
{
    return R->lockstep ? rk : d * R->rpr + rk;
}

static void fill_summary(const srv_run_st *R, rep_summary *sm)
{
    const scenario *s = R->s;
    memset(sm, 0, sizeof *sm);
    sm->nranks = s->par.dp * R->rpr;
    sm->ranks = cp_xcalloc((size_t)sm->nranks, sizeof *sm->ranks);
    for (int rk = 0; rk < sm->nranks; rk++)
        sm->ranks[rk].rank = rk;
    for (int i = 0; i < R->ninst; i++) {
        const srv_inst *in = &R->inst[i];
        const srv_step *e = &R->steps.v[in->step];
        add_cost(&sm->cost, &e->cost);
        for (int rk = 0; rk < e->nranks; rk++) {
            rep_rank *rr = &sm->ranks[global_rank(R, in->replica, rk)];
            const srv_rank *o = &e->rank[rk];
            rr->compute_s += o->compute_s;
            rr->comm_s += o->comm_s;
            rr->overlap_s += o->overlap_s;
            double peak = o->peak_bytes + in->kv_before;
            if (peak > rr->peak_bytes) {
                rr->peak_bytes = peak;
                rr->peak_t = in->t0;
                memcpy(rr->peak_by_cat, o->peak_by_cat, sizeof rr->peak_by_cat);
                rr->peak_by_cat[MC_KV_CACHE] += in->kv_before;
            }
        }
    }
    for (int k = 0; k < R->steps.n; k++) {
        sm->events += R->steps.v[k].events;
        sm->messages += R->steps.v[k].messages;
        sm->execs += R->steps.v[k].execs;
        sm->iters_simulated += R->steps.v[k].iters_simulated;
        sm->iters_replayed += R->steps.v[k].iters_replayed;
    }
    if (R->ninst == 0) /* nothing served: every rank holds its resident memory */
        for (int rk = 0; rk < sm->nranks; rk++) {
            rep_rank *rr = &sm->ranks[rk];
            for (int c = 0; c < MC_COUNT; c++) {
                rr->peak_by_cat[c] = R->resident[c];
                rr->peak_bytes += R->resident[c];
            }
        }
    rep_rank_totals(sm);
    sm->peak_rank = 0;
    for (int rk = 0; rk < sm->nranks; rk++)
        if (sm->ranks[rk].peak_bytes > sm->peak_bytes_max) {
            sm->peak_bytes_max = sm->ranks[rk].peak_bytes;
            sm->peak_rank = rk;
        }
    sm->capacity_bytes = s->plat.hbm_bytes;
    if (sm->peak_bytes_max > sm->capacity_bytes) {
        sm->oom = 1;
        sm->oom_rank = sm->peak_rank;
        snprintf(sm->oom_phase, sizeof sm->oom_phase, "serving step at %.6f s",
                 sm->ranks[sm->peak_rank].peak_t);
        snprintf(sm->oom_budget, sizeof sm->oom_budget, "capacity");
        sm->oom_excess_bytes = sm->peak_bytes_max - sm->capacity_bytes;
    }
    sm->makespan_s = R->end_s;
    sm->nreqs = R->nreq;
    sm->reqs = cp_xcalloc((size_t)R->nreq + 1, sizeof *sm->reqs);
    for (int i = 0; i < R->nreq; i++) {
        const srv_req *q = &R->req[i];
        rep_request *o = &sm->reqs[i];
        o->id = q->id;
        o->prompt_tokens = q->prompt;
        o->cached_tokens = q->cached;
        o->decode_tokens = q->decode;
        o->arrival_s = q->arrival;
        o->first_token_s = got_first(q) ? q->first_token : 0;
        o->ttft_s = got_first(q) ? q->first_token - q->arrival : 0;
        o->end_s = finished(q) ? q->end : 0;
        o->tpot_s = tpot(q);
        o->split_steps = q->split_steps;
        o->split = q->split_steps > 0;
        o->ring = q->ring;
    }
    sm->ttft_s = R->nreq > 0 ? sm->reqs[0].ttft_s : 0;
    sm->wall_s = R->steps.wall_s;
}

/* The bounds an slo sets (an absent one is no bound). */
static json_t *bounds_json(const wl_slo *o)
{
    json_t *j = json_object();
    if (o->ttft_s > 0)
        json_object_set_new(j, "ttft_s", json_real(o->ttft_s));
    if (o->tpot_s > 0)
        json_object_set_new(j, "tpot_s", json_real(o->tpot_s));
    return j;
}

/* The objective goodput counts against (null: every finished request). */
static json_t *slo_json(const scenario *s)
{
    if (!s->slo_given)
        return json_null();
    json_t *j = bounds_json(&s->slo), *by = json_object();
    for (int c = 0; c < s->nclasses; c++)
        json_object_set_new(by, s->classes[c], bounds_json(&s->slo_cls[c]));
    json_object_set_new(j, "by_name", by);
    return j;
}

json_t *srv_summary(const srv_run_st *R, rep_summary *sm)
{
    const scenario *s = R->s;
    fill_summary(R, sm);
    json_t *j = rep_summary_json(sm, s);
    json_object_set_new(j, "mode", json_string("serving"));
    json_t *reqs = json_object_get(j, "requests");
    for (int i = 0; i < R->nreq; i++) {
        const srv_req *q = &R->req[i];
        json_t *o = json_array_get(reqs, (size_t)i);
        if (q->cls >= 0)
            json_object_set_new(o, "name", json_string(s->classes[q->cls]));
        json_object_set_new(o, "cached_tokens", json_integer(q->cached));
        json_object_set_new(o, "replica", json_integer(q->replica));
        json_object_set_new(o, "finished", json_boolean(finished(q)));
        if (!got_first(q))
            json_object_set_new(o, "ttft_s", json_null());
        if (!finished(q))
            json_object_set_new(o, "end_s", json_null());
        json_object_set_new(o, "queue_s",
                            q->state >= SRQ_RUNNING ? json_real(q->admit - q->arrival)
                                                    : json_null());
        double *g = cp_xcalloc((size_t)q->ngaps + 1, sizeof *g);
        if (q->ngaps > 0)
            memcpy(g, q->gaps, (size_t)q->ngaps * sizeof *g);
        json_object_set_new(o, "tpot_p50_s", json_real(pct(g, q->ngaps, 0.50)));
        json_object_set_new(o, "tpot_p99_s", json_real(pct(g, q->ngaps, 0.99)));
        json_object_set_new(o, "itl_max_s", q->ngaps > 0 ? json_real(q->gap_max) : json_null());
        json_object_set_new(o, "slo_met", json_boolean(slo_met(R, q)));
        free(g);
    }
    if (R->nreq == 0 || !got_first(&R->req[0]))
        json_object_set_new(j, "ttft_s", json_null());
    if (R->ninst == 0)
        json_array_append_new(json_object_get(j, "warnings"), json_string(srv_idle_warning(R)));
    json_t *sv = figures(R, -2);
    json_t *by = json_object();
    for (int c = 0; c < s->nclasses; c++)
        json_object_set_new(by, s->classes[c], figures(R, c));
    json_object_set_new(sv, "by_name", by);
    json_object_set_new(sv, "kv_budget_bytes", json_real(R->kv_budget));
    json_object_set_new(sv, "percentiles", json_string("linear interpolation between the closest "
                                                       "ranks (numpy.percentile, as vLLM's "
                                                       "benchmark_serving)"));
    json_object_set_new(sv, "slo", slo_json(s));
    json_object_set_new(sv, "lockstep", json_boolean(R->lockstep));
    json_object_set_new(j, "serving", sv);
    json_t *sim = json_object_get(j, "simulation");
    json_object_set_new(sim, "steps", json_integer(R->ninst));
    json_object_set_new(sim, "simulated_steps", json_integer(R->steps.n));
    json_object_set_new(sim, "reused_steps", json_integer(R->steps.reused));
    json_object_set_new(sim, "decode_reuse", json_real(R->steps.reuse));
    return j;
}

/* ---- trace.json ------------------------------------------------------------------- */

int srv_write_trace(const srv_run_st *R, const rep_trace_opts *o, const char *path,
                    cp_err *err)
{
    const scenario *s = R->s;
    int nranks = s->par.dp * R->rpr;
    int dpn = s->plat.devices_per_node > 0 ? s->plat.devices_per_node : 1;
    unsigned char *sel = cp_xcalloc((size_t)nranks + 1, 1);
    if (!o || !o->ranks)
        memset(sel, 1, (size_t)nranks);
    else if (rep_rank_list("--trace-ranks", o->ranks, sel, nranks, err) < 0) {
        free(sel);
        return -1;
    }
    /* every op of the first steps (full), of none (steps) */
    int full = o && o->level == REP_TRACE_STEPS ? 0 : SRV_FULL_STEPS;
    int lo = o ? o->layer_lo : -1, hi = o ? o->layer_hi : -1;
    rep_file rf;
    if (rep_open(&rf, path, err) != 0) {
        free(sel);
        return -1;
    }
    FILE *f = rf.f;
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"cpsim\","
               "\"mode\":\"serving\",\"full_steps\":%d},\n\"traceEvents\":[\n",
            full);
    int first = 1;
    rep_trace_metadata(f, s, nranks, sel, &first);
    for (int i = 0; i < R->ninst; i++) {
        const srv_inst *in = &R->inst[i];
        const srv_step *e = &R->steps.v[in->step];
        if (i >= full || !e->p) {
            char what[80];
            snprintf(what, sizeof what, "%d decode, %d prefill, %lld tokens", in->ndecode,
                     in->nprefill, (long long)in->tokens);
            for (int rk = 0; rk < e->nranks; rk++) {
                int g = global_rank(R, in->replica, rk);
                if (sel[g])
                    rep_trace_step(f, dpn, g, i, what, in->t0, in->t1);
            }
            continue;
        }
        for (size_t k = 0; k < e->nev; k++) {
            const eng_event *v = &e->ev[k];
            const plan_op *op = &e->p->progs[e->p->prog_of_rank[v->rank]].ops[v->op];
            int g = global_rank(R, in->replica, v->rank);
            if (!sel[g] ||
                (lo >= 0 && op->kind != OPK_STEP && (v->layer < lo || v->layer > hi)))
                continue;
            rep_trace_op(f, dpn, op, g, v->stream, v->layer, i, in->t0 + v->t0, in->t0 + v->t1);
        }
    }
    fputs("\n]}\n", f);
    free(sel);
    return rep_close(&rf, 1, err); /* it reports a write error itself */
}

/* ---- steps.csv -------------------------------------------------------------------- */

int srv_write_steps(const srv_run_st *R, const char *path, cp_err *err)
{
    rep_file rf;
    if (rep_open(&rf, path, err) != 0)
        return -1;
    FILE *f = rf.f;
    /* padded_tokens: the batch its kernels ran (a graph's capture size);
     * launch: eager, graph or piecewise; kernels: one rank's launches */
    fputs("step,replica,t0_s,t1_s,decodes,prefills,tokens,kv_bytes,simulated_as,"
          "padded_tokens,launch,kernels\n", f);
    for (int i = 0; i < R->ninst; i++) {
        const srv_inst *in = &R->inst[i];
        const srv_step *e = &R->steps.v[in->step];
        fprintf(f, "%d,%d,%.9f,%.9f,%d,%d,%lld,%.0f,%d,%lld,%s,%lld\n", i, in->replica, in->t0,
                in->t1, in->ndecode, in->nprefill, (long long)in->tokens, in->kv_before,
                in->step, (long long)e->padded, plan_launch_names[e->launch],
                (long long)e->kernels);
    }
    return rep_close(&rf, 1, err); /* it reports a write error itself */
}

/* ---- requests.csv ----------------------------------------------------------------- */

/* A time field of requests.csv: empty when the request did not reach it. */
static void csv_time(FILE *f, int reached, double t)
{
    if (reached)
        fprintf(f, ",%.9f", t);
    else
        fputc(',', f);
}

int srv_write_requests(const srv_run_st *R, const char *path, cp_err *err)
{
    rep_file rf;
    if (rep_open(&rf, path, err) != 0)
        return -1;
    FILE *f = rf.f;
    fputs("id,name,replica,prompt_tokens,cached_tokens,decode_tokens,arrival_s,queue_s,ttft_s,"
          "tpot_s,itl_max_s,end_s,finished,slo_met\n", f);
    for (int i = 0; i < R->nreq; i++) {
        const srv_req *q = &R->req[i];
        fprintf(f, "%d,%s,%d,%lld,%lld,%lld,%.9f", q->id, q->cls >= 0 ? R->s->classes[q->cls] : "",
                q->replica, (long long)q->prompt, (long long)q->cached, (long long)q->decode,
                q->arrival);
        csv_time(f, q->state >= SRQ_RUNNING, q->admit - q->arrival);
        csv_time(f, got_first(q), q->first_token - q->arrival);
        csv_time(f, finished(q) && q->decoded > 0, tpot(q));
        csv_time(f, q->ngaps > 0, q->gap_max);
        csv_time(f, finished(q), q->end);
        fprintf(f, ",%d,%d\n", finished(q), slo_met(R, q));
    }
    return rep_close(&rf, 1, err); /* it reports a write error itself */
}

/* ---- memory.csv ------------------------------------------------------------------- */

int srv_write_memory(const srv_run_st *R, int share, const char *path, cp_err *err)
{
    rep_file rf;
    if (rep_open(&rf, path, err) != 0)
        return -1;
    FILE *f = rf.f;
    rep_memcsv_header(f);
    rep_memrows m;
    rep_memrows_begin(&m, f, share);
    /* each step: the rank at its start (set-up and the KV held: the pool
     * when preallocated) and at its peak, in step order per rank */
    int nranks = R->s->par.dp * R->rpr;
    for (int g = 0; g < nranks; g++) {
        for (int i = 0; i < R->ninst; i++) {
            const srv_inst *in = &R->inst[i];
            const srv_step *e = &R->steps.v[in->step];
            int rk = R->lockstep ? g : g - in->replica * R->rpr;
            if (rk < 0 || rk >= e->nranks)
                continue;
            double peak[MC_COUNT], start[MC_COUNT];
            memcpy(peak, e->rank[rk].peak_by_cat, sizeof peak);
            peak[MC_KV_CACHE] += in->kv_before;
            memcpy(start, peak, sizeof start);
            start[MC_ACTIVATIONS] = start[MC_COMM_BUFFER] = 0;
            if (R->s->mem.kv_pool != KVP_PREALLOCATE)
                start[MC_KV_CACHE] = in->kv_before;
            rep_memrows_add(&m, g, in->t0, start);
            rep_memrows_add(&m, g, 0.5 * (in->t0 + in->t1), peak);
        }
    }
    rep_memrows_end(&m);
    return rep_close(&rf, 1, err); /* it reports a write error itself */
}

/* ---- the console table ------------------------------------------------------------ */

/* A figure in a column of `width`: "-" when null (nothing to take it of). */
static void cell(FILE *out, json_t *fig, const char *key, int width, int prec)
{
    json_t *v = json_object_get(fig, key);
    if (json_is_number(v))
        fprintf(out, " %*.*f", width, prec, json_number_value(v));
    else
        fprintf(out, " %*s", width, "-");
}

static void table_line(FILE *out, const char *name, json_t *fig)
{
    fprintf(out, "  %-10s %6lld %8lld ", name,
            (long long)json_integer_value(json_object_get(fig, "requests")),
            (long long)json_integer_value(json_object_get(fig, "finished")));
    cell(out, fig, "ttft_p50_s", 9, 4);
    cell(out, fig, "ttft_p99_s", 9, 4);
    fputc(' ', out);
    cell(out, fig, "tpot_p50_s", 9, 5);
    cell(out, fig, "tpot_p99_s", 9, 5);
    cell(out, fig, "itl_p99_s", 9, 5);
    cell(out, fig, "stall_max_s", 9, 4);
    fputc(' ', out);
    cell(out, fig, "goodput_per_s", 8, 3);
    cell(out, fig, "throughput_tokens_per_s", 10, 1);
    fputc('\n', out);
}

void srv_print_table(const srv_run_st *R, const rep_summary *sm, FILE *out)
{
    const scenario *s = R->s;
    fprintf(out, "cpsim serving: %s on %s, TP%d x SP%d x DP%d, %.3f s simulated\n",
            s->model.name, s->plat.name, s->par.tp, s->par.sp, s->par.dp, R->end_s);
    fprintf(out, "  %-10s %6s %8s  %9s %9s  %9s %9s %9s %9s  %8s %10s\n", "class", "reqs",
            "finished", "ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "itl_p99", "stall_max",
            "good/s", "out tok/s");
    json_t *all = figures(R, -2);
    table_line(out, "all", all);
    for (int c = 0; c < s->nclasses; c++) {
        json_t *fig = figures(R, c);
        table_line(out, s->classes[c], fig);
        json_decref(fig);
    }
    json_t *st = json_object_get(all, "stall_step");
    if (json_is_object(st))
        fprintf(out, "  longest stall %.4f s at %.4f s (request %lld), made by step %lld: "
                "%lld decodes, %lld prefills, %lld tokens\n",
                json_number_value(json_object_get(all, "stall_max_s")),
                json_number_value(json_object_get(all, "stall_at_s")),
                (long long)json_integer_value(json_object_get(all, "stall_request")),
                (long long)json_integer_value(json_object_get(st, "step")),
                (long long)json_integer_value(json_object_get(st, "decodes")),
                (long long)json_integer_value(json_object_get(st, "prefills")),
                (long long)json_integer_value(json_object_get(st, "tokens")));
    json_decref(all);
    fprintf(out, "  peak memory %.2f GB on rank %d of %.2f GB%s; overlap %.1f %%\n",
            sm->peak_bytes_max / 1e9, sm->peak_rank, sm->capacity_bytes / 1e9,
            sm->oom ? " (OOM)" : "", 100.0 * sm->overlap_fraction);
}
