/* serve: the iteration-level scheduler of every replica (see serve.h). */
#include "sim/serve/serve_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/grow.h"
#include "models/build/build.h"
#include "models/plan.h"

typedef struct replica {
    double free_at;          /* when its current step ends */
    int *wait;               /* request indices, FIFO from whead */
    int nwait, whead, wcap;
    int *run;                /* running requests, in admission order */
    int nrun, rcap;
    double kv;               /* KV the running requests reserve */
} replica;

typedef struct sched {
    srv_run_st *R;
    const scenario *s;
    replica *rep;
    int ndp;
    int next_open;           /* next open-loop request to arrive */
    int rr;                  /* round-robin counter */
    /* closed-loop clients: the pending arrival of each (INFINITY: none) */
    double *client_t;
    int *client_src;
    int64_t *client_sent;
    int nclients;
    sc_seq *seq;
    int *seq_req;
    int nseq, seqcap;
} sched;

static void push_int(int **v, int *n, int *cap, int x)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        *v = realloc(*v, (size_t)*cap * sizeof **v);
        if (!*v)
            abort();
    }
    (*v)[(*n)++] = x;
}

/* What a serving run holds and writes grows with its requests and steps;
 * bounded like a plan (workload.c PLAN_BYTES_MAX: a third of the 24 GiB
 * development machine).  Per rank and step: 2 memory.csv rows and a trace
 * span, about 300 bytes (measured on long-short-mix: 2.4 KB a step on 8
 * ranks); per request its record (sizeof srv_req) and 8 bytes an
 * inter-token time. */
#define SRV_BYTES_MAX (8.0 * 1024 * 1024 * 1024)
#define SRV_STEP_RANK_BYTES 300.0
/* Seconds of wall time between progress lines of a long run (as sweeps). */
#define SRV_PROGRESS_S 10.0

static double wall_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The run's host memory and output estimate against SRV_BYTES_MAX, at
 * simulated time t: -1 with err naming what to change once beyond it. */
static int within_bounds(const sched *S, double t, cp_err *err)
{
    const srv_run_st *R = S->R;
    const scenario *s = S->s;
    double ranks = (double)s->par.dp * R->rpr;
    double steps = (double)R->ninst * (sizeof(srv_inst) + ranks * SRV_STEP_RANK_BYTES);
    double reqs = (double)R->nreq * sizeof(srv_req) + 8.0 * R->gaps;
    if (steps + reqs <= SRV_BYTES_MAX && R->nreq <= WL_MAX_REQUESTS)
        return 0;
    int open_ended = -1;
    for (int k = 0; k < s->nstreams && open_ended < 0; k++)
        if (s->streams[k].count == 0)
            open_ended = s->streams[k].entry;
    char key[160];
    if (steps > reqs && s->chunked_prefill)
        snprintf(key, sizeof key, "engine.max_num_batched_tokens (%lld tokens a step)",
                 (long long)s->max_num_batched_tokens);
    else if (open_ended >= 0)
        snprintf(key, sizeof key, "requests.%d: streams without count, until "
                 "simulation.duration_s (%g s)", open_ended, s->duration_s);
    else
        snprintf(key, sizeof key, "requests (%d arrived)", R->nreq);
    return cp_fail(err, CP_EXIT_INPUT, "%s: by %.3f s of simulated time the run holds %d "
                   "requests and %d steps, about %.1f GB of host memory and outputs; cpsim "
                   "serves at most %d requests and %.1f GB (a shorter duration_s, fewer or "
                   "counted streams, fewer requests or a larger max_num_batched_tokens)", key, t,
                   R->nreq, R->ninst, (steps + reqs) / 1e9, WL_MAX_REQUESTS,
                   SRV_BYTES_MAX / 1e9);
}

/* Before anything is simulated: the fewest steps the known requests need
 * (each request its prefill chunks and decodes in steps of its own; all of
 * them at most max_num_batched_tokens tokens a step under chunked prefill)
 * must fit SRV_BYTES_MAX.  -1 with err naming the key. */
static int steps_fit(const scenario *s, int rpr, cp_err *err)
{
    double most = 0, tokens = 0, chunk = (double)s->max_num_batched_tokens;
    for (int q = 0; q < s->nreqs; q++) {
        double one = (double)sc_prefill_steps(s, q) + (double)s->reqs[q].decode_tokens;
        most = one > most ? one : most;
        tokens += (double)(s->reqs[q].prompt_tokens + s->reqs[q].decode_tokens);
    }
    for (int k = 0; k < s->nstreams; k++) {
        const wl_streams *c = &s->streams[k];
        double chunks = s->chunked_prefill ? ceil((double)c->prompt_tokens / chunk) : 1;
        double one = (chunks + (double)c->decode_tokens) * (double)c->count;
        most = one > most ? one : most;
        tokens += (double)c->count * c->streams * (double)(c->prompt_tokens + c->decode_tokens);
    }
    int by_budget = s->chunked_prefill && tokens / chunk > most;
    double steps = by_budget ? tokens / chunk : most;
    double bytes = steps * (sizeof(srv_inst) + (double)s->par.dp * rpr * SRV_STEP_RANK_BYTES);
    if (bytes <= SRV_BYTES_MAX)
        return 0;
    return cp_fail(err, CP_EXIT_INPUT, "%s: the requests need at least %.0f steps, about %.1f "
                   "GB of host memory and outputs; cpsim serves at most %.1f GB (fewer "
                   "requests or decode tokens%s)",
                   by_budget ? "engine.max_num_batched_tokens" : "requests", steps, bytes / 1e9,
                   SRV_BYTES_MAX / 1e9,
                   s->chunked_prefill ? ", or a larger max_num_batched_tokens" : "");
}

/* A line on the progress stream every SRV_PROGRESS_S of wall time. */
static void progress(srv_run_st *R, double t)
{
    if (!R->progress || (R->ninst & 255) != 0)
        return;
    double now = wall_now();
    if (now - R->wall_last < SRV_PROGRESS_S)
        return;
    R->wall_last = now;
    if (R->s->duration_s > 0)
        fprintf(R->progress, "cpsim serving: %.3f of %g s simulated", t, R->s->duration_s);
    else
        fprintf(R->progress, "cpsim serving: %.3f s simulated", t);
    fprintf(R->progress, ", %d steps (%d simulated), %d requests, %.0f s elapsed\n", R->ninst,
            R->steps.n, R->nreq, now - R->wall0);
    fflush(R->progress);
}

static int new_req(sched *S, int64_t prompt, int64_t decode, int64_t cached, int64_t audio,
                   int cls, double arrival, int stream)
{
    srv_run_st *R = S->R;
    R->req = cp_grow(R->req, &R->rcap, (size_t)R->nreq + 1, sizeof *R->req);
    srv_req *q = &R->req[R->nreq];
    memset(q, 0, sizeof *q);
    q->id = R->nreq;
    q->cls = cls;
    q->replica = -1;
    q->stream = stream;
    q->prompt = prompt;
    q->decode = decode;
    q->cached = cached;
    q->audio = audio;
    q->arrival = arrival;
    q->kv = build_kv_bytes(S->s, cached + prompt + decode);
    return R->nreq++;
}

static int load_of(const replica *r)
{
    return r->nwait - r->whead + r->nrun;
}

/* Route request i to a replica at its arrival. */
static void route(sched *S, int i)
{
    srv_req *q = &S->R->req[i];
    int d = 0;
    if (S->s->router == ROUTE_LEAST_LOADED) {
        for (int k = 1; k < S->ndp; k++)
            if (load_of(&S->rep[k]) < load_of(&S->rep[d]))
                d = k;
    } else {
        d = S->rr++ % S->ndp;
    }
    q->replica = d;
    q->state = SRQ_WAITING;
    replica *r = &S->rep[d];
    if (r->nwait - r->whead == 0 && r->nrun == 0 && r->free_at < q->arrival)
        r->free_at = q->arrival; /* idle until now */
    push_int(&r->wait, &r->nwait, &r->wcap, i); /* waiting: from whead on */
}

static int waiting(const replica *r)
{
    return r->nwait - r->whead;
}

static void add_seq(sched *S, int req, int64_t tokens, int64_t prefix, int sample)
{
    if (S->nseq == S->seqcap) {
        S->seqcap = S->seqcap ? 2 * S->seqcap : 64;
        S->seq = realloc(S->seq, (size_t)S->seqcap * sizeof *S->seq);
        S->seq_req = realloc(S->seq_req, (size_t)S->seqcap * sizeof *S->seq_req);
        if (!S->seq || !S->seq_req)
            abort();
    }
    /* the request's first chunk runs its audio through the encoder */
    const srv_req *q = &S->R->req[req];
    int64_t audio = q->prefilled == 0 && q->audio > 0 ? q->audio : 0;
    S->seq[S->nseq] = (sc_seq){tokens, prefix, (uint8_t)sample, audio};
    S->seq_req[S->nseq++] = req;
}

/* The KV replica r's running requests hold before a step (their cached
 * prefix, prompt computed so far and decoded tokens; the step's plan adds
 * its own tokens'): none under a preallocated pool (the plan holds the
 * pool). */
static double held(const sched *S, const replica *r)
{
    if (S->s->mem.kv_pool == KVP_PREALLOCATE)
        return 0;
    double b = 0;
    for (int k = 0; k < r->nrun; k++) {
        const srv_req *q = &S->R->req[r->run[k]];
        b += build_kv_bytes(S->s, q->cached + q->prefilled + q->decoded);
    }
    return b;
}

/* Whether request q can be admitted into replica r now. */
static int admissible(const sched *S, const replica *r, const srv_req *q)
{
    if (r->nrun >= S->s->max_num_seqs)
        return 0;
    return r->nrun == 0 || r->kv + q->kv <= S->R->kv_budget;
}

static void admit(sched *S, replica *r, int i, double t)
{
    srv_req *q = &S->R->req[i];
    r->whead++;
    q->state = SRQ_RUNNING;
    q->admit = t;
    r->kv += q->kv;
    push_int(&r->run, &r->nrun, &r->rcap, i);
}

/* The sequences of replica r's next step at time t into S->seq; returns
 * whether the step runs split. */
static int form_batch(sched *S, replica *r, double t)
{
    const scenario *s = S->s;
    srv_req *req = S->R->req;
    S->nseq = 0;
    int64_t budget = s->max_num_batched_tokens;
    /* a prompt that splits runs alone (cp-exchange.md) */
    if (waiting(r) > 0) {
        int i = r->wait[r->whead];
        srv_req *q = &req[i];
        if (q->prefilled == 0 && build_step_splits(s, q->prompt) && admissible(S, r, q)) {
            admit(S, r, i, t);
            add_seq(S, i, q->prompt, q->cached, 1);
            return 1;
        }
    }
    if (!s->chunked_prefill) {
        /* prefill first: whole prompts from the queue's head */
        int64_t used = 0;
        while (waiting(r) > 0) {
            int i = r->wait[r->whead];
            srv_req *q = &req[i];
            if (build_step_splits(s, q->prompt) || !admissible(S, r, q) ||
                (S->nseq > 0 && used + q->prompt > budget))
                break;
            admit(S, r, i, t);
            add_seq(S, i, q->prompt, q->cached, 1);
            used += q->prompt;
        }
        if (S->nseq > 0)
            return 0;
        for (int k = 0; k < r->nrun; k++) {
            srv_req *q = &req[r->run[k]];
            add_seq(S, r->run[k], 1, q->cached + q->prompt + q->decoded, 1);
        }
        return 0;
    }
    /* chunked: decodes, then partial prefills, then new prompts */
    for (int k = 0; k < r->nrun && budget > 0; k++) {
        srv_req *q = &req[r->run[k]];
        if (q->prefilled == q->prompt) {
            add_seq(S, r->run[k], 1, q->cached + q->prompt + q->decoded, 1);
            budget--;
        }
    }
    for (int k = 0; k < r->nrun && budget > 0; k++) {
        srv_req *q = &req[r->run[k]];
        if (q->prefilled < q->prompt) {
            int64_t n = q->prompt - q->prefilled < budget ? q->prompt - q->prefilled : budget;
            add_seq(S, r->run[k], n, q->cached + q->prefilled, q->prefilled + n == q->prompt);
            budget -= n;
        }
    }
    while (budget > 0 && waiting(r) > 0) {
        int i = r->wait[r->whead];
        srv_req *q = &req[i];
        if (!admissible(S, r, q))
            break;
        admit(S, r, i, t);
        int64_t n = q->prompt < budget ? q->prompt : budget;
        add_seq(S, i, n, q->cached, n == q->prompt);
        budget -= n;
    }
    return 0;
}

static void finish(sched *S, replica *r, int i, double t)
{
    srv_req *q = &S->R->req[i];
    q->state = SRQ_DONE;
    q->end = t;
    r->kv -= q->kv;
    for (int k = 0; k < r->nrun; k++)
        if (r->run[k] == i) {
            memmove(&r->run[k], &r->run[k + 1], (size_t)(r->nrun - k - 1) * sizeof *r->run);
            r->nrun--;
            break;
        }
    if (q->stream >= 0) { /* the client sends its next request after thinking */
        const wl_streams *src = &S->s->streams[S->client_src[q->stream]];
        if (src->count == 0 || S->client_sent[q->stream] < src->count)
            S->client_t[q->stream] = t + src->think_s;
    }
}

/* The results of a step of replica r from t0 to t1 over S->seq. */
static void apply(sched *S, replica *r, double t1)
{
    srv_req *req = S->R->req;
    for (int k = 0; k < S->nseq; k++) {
        int i = S->seq_req[k];
        srv_req *q = &req[i];
        const sc_seq *sq = &S->seq[k];
        q->steps++;
        if (q->prefilled < q->prompt) {
            q->prefilled += sq->tokens;
            if (q->prefilled == q->prompt) {
                q->first_token = t1;
                q->last_token = t1;
                if (q->decode == 0)
                    finish(S, r, i, t1);
            }
        } else {
            q->gaps = realloc(q->gaps, (size_t)(q->ngaps + 1) * sizeof *q->gaps);
            if (!q->gaps)
                abort();
            q->gaps[q->ngaps++] = t1 - q->last_token;
            /* the earliest of gaps equal to rounding (SRV_GAP_TIE): a
             * replayed layer's last bits must not move the stall named */
            if (t1 - q->last_token > q->gap_max * (1 + SRV_GAP_TIE)) {
                q->gap_max = t1 - q->last_token;
                q->gap_max_at = q->last_token;
                q->gap_max_inst = S->R->ninst - 1; /* record() ran first */
            }
            S->R->gaps++;
            q->last_token = t1;
            if (++q->decoded == q->decode)
                finish(S, r, i, t1);
        }
    }
}

static void record(sched *S, int d, int step, double t0, double t1, double kv_before)
{
    srv_run_st *R = S->R;
    R->inst = cp_grow(R->inst, &R->icap, (size_t)R->ninst + 1, sizeof *R->inst);
    srv_inst *in = &R->inst[R->ninst++];
    memset(in, 0, sizeof *in);
    in->replica = d;
    in->step = step;
    in->t0 = t0;
    in->t1 = t1;
    in->kv_before = kv_before;
    for (int k = 0; k < S->nseq; k++) {
        const srv_req *q = &R->req[S->seq_req[k]];
        in->tokens += S->seq[k].tokens;
        if (S->seq[k].tokens == 1 && q->prefilled == q->prompt)
            in->ndecode++;
        else
            in->nprefill++;
    }
    int ring = R->steps.v[step].ring;
    for (int k = 0; k < S->nseq; k++) {
        srv_req *q = &R->req[S->seq_req[k]];
        q->split_steps += R->steps.v[step].split;
        if (ring != PR_NONE) /* one ring, or "mixed" (PR_COUNT) */
            q->ring = q->ring == PR_NONE || q->ring == ring ? ring : PR_COUNT;
    }
}

/* The next arrival: an open-loop request or a client's (time, or INFINITY). */
static double next_arrival(const sched *S, int *client)
{
    double t = S->next_open < S->s->nreqs ? S->s->reqs[S->next_open].arrival_s : INFINITY;
    *client = -1;
    for (int c = 0; c < S->nclients; c++)
        if (S->client_t[c] < t) {
            t = S->client_t[c];
            *client = c;
        }
    return t;
}

static int has_work(const replica *r)
{
    return r->nrun > 0 || waiting(r) > 0;
}

/* The next replica to step and when (-1, INFINITY: none has work): the
 * first free, or under lockstep when the last of them is free. */
static int next_step(const sched *S, double *when)
{
    double tr = INFINITY;
    int d = -1;
    for (int k = 0; k < S->ndp; k++)
        if (has_work(&S->rep[k]) && S->rep[k].free_at < tr) {
            tr = S->rep[k].free_at;
            d = k;
        }
    if (S->R->lockstep && d >= 0) /* together: when the last is free */
        for (int k = 0; k < S->ndp; k++)
            if (S->rep[k].free_at > tr)
                tr = S->rep[k].free_at;
    *when = tr;
    return d;
}

/* A request arrives at ta: from closed-loop client `client`, else the next
 * open-loop one; routed to a replica. */
static void arrive(sched *S, int client, double ta)
{
    const scenario *s = S->s;
    int i;
    if (client >= 0) {
        const wl_streams *src = &s->streams[S->client_src[client]];
        i = new_req(S, src->prompt_tokens, src->decode_tokens, src->cached_tokens,
                    src->audio_frames, src->cls, ta, client);
        S->client_sent[client]++;
        S->client_t[client] = INFINITY;
    } else {
        const wl_request *w = &s->reqs[S->next_open++];
        i = new_req(S, w->prompt_tokens, w->decode_tokens, w->cached_tokens, w->audio_frames,
                    w->cls, w->arrival_s, -1);
    }
    route(S, i);
}

/* The end of a step at t1: the run's end, progress, the work bounds. */
static int stepped(sched *S, double t1, cp_err *err)
{
    if (t1 > S->R->end_s)
        S->R->end_s = t1;
    progress(S->R, t1);
    return within_bounds(S, t1, err);
}

/* Replica k's sequences of the stash (keep, keep_req: every replica's, in
 * replica order) into S->seq; returns where they start. */
static int unstash(sched *S, const sc_seq *keep, const int *keep_req, int nkeep, int k)
{
    for (int r = 0, at = 0; r < S->ndp; r++) {
        int cnt = 0;
        for (int j = at; j < nkeep && S->R->req[keep_req[j]].replica == r; j++)
            cnt++;
        if (r == k) {
            S->nseq = cnt;
            if (cnt > 0) {
                memcpy(S->seq, keep + at, (size_t)cnt * sizeof *S->seq);
                memcpy(S->seq_req, keep_req + at, (size_t)cnt * sizeof *S->seq_req);
            }
            return at;
        }
        at += cnt;
    }
    S->nseq = 0;
    return nkeep;
}

/* A lockstep step at tr: every replica forms its step; the one with the
 * most tokens is simulated and all take its time. */
static int lockstep_step(sched *S, double tr, cp_err *err)
{
    srv_run_st *R = S->R;
    int big = -1, split = 0;
    int64_t most = -1;
    sc_seq *keep = NULL;
    int *keep_req = NULL, nkeep = 0;
    size_t kcap = 0, rcap = 0;
    double kv0 = 0;
    for (int k = 0; k < S->ndp; k++) {
        int sp = form_batch(S, &S->rep[k], tr);
        int64_t tok = 0;
        for (int j = 0; j < S->nseq; j++)
            tok += S->seq[j].tokens;
        if (S->nseq > 0 && tok > most) {
            most = tok;
            big = k;
            split = sp;
            kv0 = held(S, &S->rep[k]);
        }
        /* stash the replica's sequences for apply() */
        keep = cp_grow(keep, &kcap, (size_t)(nkeep + S->nseq + 1), sizeof *keep);
        keep_req = cp_grow(keep_req, &rcap, (size_t)(nkeep + S->nseq + 1), sizeof *keep_req);
        if (S->nseq > 0) {
            memcpy(keep + nkeep, S->seq, (size_t)S->nseq * sizeof *keep);
            memcpy(keep_req + nkeep, S->seq_req, (size_t)S->nseq * sizeof *keep_req);
        }
        nkeep += S->nseq;
        S->rep[k].free_at = tr;
    }
    unstash(S, keep, keep_req, nkeep, big); /* the largest replica's step */
    sc_batch bt = {S->seq, S->nseq, split};
    int st = srv_step_get(&R->steps, &bt, err);
    if (st >= 0) {
        double t1 = tr + R->steps.v[st].dur;
        record(S, big, st, tr, t1, kv0);
        for (int k = 0; k < S->ndp; k++) { /* every replica's sequences advance */
            unstash(S, keep, keep_req, nkeep, k);
            apply(S, &S->rep[k], t1);
            S->rep[k].free_at = t1;
        }
        st = stepped(S, t1, err);
    }
    free(keep);
    free(keep_req);
    return st < 0 ? -1 : 0;
}

/* Replica d's step at tr. */
static int replica_step(sched *S, int d, double tr, cp_err *err)
{
    srv_run_st *R = S->R;
    replica *r = &S->rep[d];
    double kv0 = held(S, r);
    int split = form_batch(S, r, tr);
    if (S->nseq == 0) /* nothing admissible: cannot happen (an empty replica
                         admits), kept as a guard */
        return cp_fail(err, CP_EXIT_INTERNAL, "serving: replica %d has work but no step", d);
    sc_batch bt = {S->seq, S->nseq, split};
    int st = srv_step_get(&R->steps, &bt, err);
    if (st < 0)
        return -1;
    double t1 = tr + R->steps.v[st].dur;
    record(S, d, st, tr, t1, kv0);
    apply(S, r, t1);
    r->free_at = t1;
    return stepped(S, t1, err);
}

/* Arrivals and steps in time order (an arrival first at a tie) until no
 * work is left or simulation.duration_s. */
static int run_loop(sched *S, cp_err *err)
{
    const scenario *s = S->s;
    double horizon = s->duration_s > 0 ? s->duration_s : INFINITY;
    for (;;) {
        int client;
        double ta = next_arrival(S, &client), tr;
        int d = next_step(S, &tr);
        if (ta <= tr && ta < INFINITY && ta < horizon) {
            arrive(S, client, ta);
            if (within_bounds(S, ta, err) < 0)
                return -1;
            continue;
        }
        if (d < 0 || tr >= horizon)
            return 0;
        if ((S->R->lockstep ? lockstep_step(S, tr, err) : replica_step(S, d, tr, err)) < 0)
            return -1;
    }
}

/* The KV budget of a replica's rank: the device (or the preallocated
 * pool's share of it) less the weights, the engine's reserved memory and
 * workspace, and the activation peak of the largest step the workload can
 * run, walked from that step's plan (preallocated: of vLLM's profiling run
 * of max_num_batched_tokens, build_profile_peak); the resident
 * memory by category (what a rank holds outside any step) into resident[]
 * when not NULL. */
double srv_kv_budget(const scenario *s, double resident[MC_COUNT])
{
    int64_t most = 1;
    int64_t audio = 0; /* the longest audio, its encoder in that step */
    for (int q = 0; q < s->nreqs; q++) {
        if (s->reqs[q].prompt_tokens > most)
            most = s->reqs[q].prompt_tokens;
        if (s->reqs[q].audio_frames > audio)
            audio = s->reqs[q].audio_frames;
    }
    for (int k = 0; k < s->nstreams; k++) {
        if (s->streams[k].prompt_tokens > most)
            most = s->streams[k].prompt_tokens;
        if (s->streams[k].audio_frames > audio)
            audio = s->streams[k].audio_frames;
    }
    if (s->chunked_prefill && most > s->max_num_batched_tokens)
        most = s->max_num_batched_tokens;
    sc_seq one = {most, 0, 1, audio};
    sc_batch bt = {&one, 1, build_step_splits(s, most)};
    plan p;
    scenario unrolled = *s; /* walked in program order: every layer */
    unrolled.fold_at_build = 0;
    build_step_plan(&unrolled, &bt, 0, &p);
    double act = 0, peak = 0, fixed = 0;
    if (resident)
        memset(resident, 0, MC_COUNT * sizeof *resident);
    const plan_prog *pg = &p.progs[0];
    for (uint32_t i = 0; i < pg->nops; i++) {
        const plan_op *o = &pg->ops[i];
        if (o->kind != OPK_MEM)
            continue;
        if (o->mem_cat == MC_ACTIVATIONS || o->mem_cat == MC_COMM_BUFFER ||
            o->mem_cat == MC_KV_CACHE) {
            if (o->step >= 0) {
                act += o->mem_bytes;
                if (act > peak)
                    peak = act;
            }
        } else if (o->step < 0) {
            fixed += o->mem_bytes;
            if (resident)
                resident[o->mem_cat] += o->mem_bytes;
        }
    }
    plan_free(&p);
    /* a preallocated pool is sized as the engine sizes it: from its
     * profiling run of max_num_batched_tokens (build_profile_peak) */
    if (s->mem.kv_pool == KVP_PREALLOCATE)
        peak = build_profile_peak(s);
    double device = s->mem.kv_pool == KVP_PREALLOCATE
                        ? s->mem.gpu_memory_utilization * s->plat.hbm_bytes
                        : s->plat.hbm_bytes;
    double b = device - fixed - peak;
    return b > 0 ? b : 0;
}

int srv_run(const srv_out *rq, const scenario *s, double reuse, json_t **summary, FILE *table,
            cp_err *err)
{
    *summary = NULL;
    srv_run_st R;
    memset(&R, 0, sizeof R);
    R.s = s;
    R.rpr = s->par.tp * s->par.sp;
    /* an EP group wider than a replica couples the replicas' steps */
    R.lockstep = s->par.dp > 1 && s->par.ep > R.rpr;
    R.kv_budget = srv_kv_budget(s, R.resident);
    R.progress = table ? stderr : NULL;
    R.wall0 = R.wall_last = wall_now();
    sched S;
    memset(&S, 0, sizeof S);
    S.R = &R;
    S.s = s;
    S.ndp = s->par.dp;
    S.rep = cp_xcalloc((size_t)S.ndp, sizeof *S.rep);
    for (int k = 0; k < s->nstreams; k++)
        S.nclients += s->streams[k].streams;
    S.client_t = cp_xcalloc((size_t)S.nclients + 1, sizeof *S.client_t);
    S.client_src = cp_xcalloc((size_t)S.nclients + 1, sizeof *S.client_src);
    S.client_sent = cp_xcalloc((size_t)S.nclients + 1, sizeof *S.client_sent);
    for (int k = 0, c = 0; k < s->nstreams; k++)
        for (int j = 0; j < s->streams[k].streams; j++, c++) {
            S.client_t[c] = s->streams[k].start_s;
            S.client_src[c] = k;
        }
    int rc = steps_fit(s, R.rpr, err);
    if (rc == 0)
        rc = srv_steps_init(&R.steps, s, R.lockstep, reuse, err);
    if (rc == 0)
        rc = run_loop(&S, err);
    rep_summary sm;
    memset(&sm, 0, sizeof sm);
    if (rc == 0) {
        *summary = srv_summary(&R, &sm);
        if (!*summary)
            rc = cp_fail(err, CP_EXIT_INTERNAL, "serving: cannot build the summary");
    }
    if (rc == 0 && rq->out_dir) {
        char path[4096];
        rc = rep_mkdir_p(rq->out_dir, err);
        if (rc == 0) {
            rep_remove_stale(rq->out_dir);
            rep_group_begin();
            int none = rq->trace && rq->trace->level == REP_TRACE_NONE;
            snprintf(path, sizeof path, "%s/trace.json%s", rq->out_dir,
                     rq->trace_gz ? ".gz" : "");
            if (!none)
                rc = srv_write_trace(&R, rq->trace, path, err);
            snprintf(path, sizeof path, "%s/memory.csv", rq->out_dir);
            if (rc == 0)
                rc = srv_write_memory(&R, !rq->all_ranks, path, err);
            snprintf(path, sizeof path, "%s/steps.csv", rq->out_dir);
            if (rc == 0)
                rc = srv_write_steps(&R, path, err);
            snprintf(path, sizeof path, "%s/requests.csv", rq->out_dir);
            if (rc == 0)
                rc = srv_write_requests(&R, path, err);
            snprintf(path, sizeof path, "%s/summary.json", rq->out_dir);
            if (rc == 0)
                rc = rep_write_json(*summary, path, err);
            rc = rep_group_end(rc == 0, err);
            for (int gz = 0; gz < 2 && rc == 0; gz++) {
                snprintf(path, sizeof path, "%s/trace.json%s", rq->out_dir, gz ? ".gz" : "");
                if (none || gz != rq->trace_gz)
                    unlink(path);
            }
        }
    }
    if (rc == 0 && R.ninst == 0 && rq->warn)
        fprintf(rq->warn, "cpsim: warning: %s\n", srv_idle_warning(&R));
    if (rc == 0 && table) {
        srv_print_table(&R, &sm, table);
        if (rq->out_dir)
            fprintf(table, "\nwrote %s/summary.json, %s/memory.csv, %s/steps.csv, "
                    "%s/requests.csv%s%s%s ", rq->out_dir, rq->out_dir, rq->out_dir, rq->out_dir,
                    rq->trace && rq->trace->level == REP_TRACE_NONE ? "" : ", ",
                    rq->trace && rq->trace->level == REP_TRACE_NONE ? "" : rq->out_dir,
                    rq->trace && rq->trace->level == REP_TRACE_NONE ? ""
                    : rq->trace_gz ? "/trace.json.gz" : "/trace.json");
        fprintf(table, "(%d steps, %d simulated, %ld events in %.3f s", R.ninst, R.steps.n,
                sm.events, R.steps.wall_s);
        rep_print_replayed(&sm, table);
        fputs(")\n", table);
    }
    if (rc != 0 && *summary) {
        json_decref(*summary);
        *summary = NULL;
    }
    rep_summary_free(&sm);
    for (int i = 0; i < R.nreq; i++)
        free(R.req[i].gaps);
    free(R.req);
    free(R.inst);
    srv_steps_free(&R.steps);
    for (int k = 0; k < S.ndp; k++) {
        free(S.rep[k].wait);
        free(S.rep[k].run);
    }
    free(S.rep);
    free(S.client_t);
    free(S.client_src);
    free(S.client_sent);
    free(S.seq);
    free(S.seq_req);
    return rc;
}
