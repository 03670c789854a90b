/* trace: Chrome trace event format (JSON object form), for Perfetto or
 * chrome://tracing.  A process per node, two threads per rank (compute and
 * comm; comm2 when used), one complete ("X") event per op with its class,
 * layer, step and sizes in args, and per-rank memory counters ("C") in GB.
 *
 * Times are microseconds of simulated time written as whole nanoseconds
 * (three decimals): an event's start and end are each rounded to the
 * nanosecond and its duration is their difference, so an op that starts
 * when the one before it on its track ends never starts before it in the
 * trace (Perfetto keeps integer nanoseconds and drops overlapping slices).
 * Process and thread ids start at REP_TRACE_ID_BASE (readers take id 0 for
 * "no process").  Every string is JSON-escaped. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/cost_profile.h"
#include "reports/report.h"

/* s as a JSON string literal: quotes, backslashes and control characters
 * escaped, bytes that are not UTF-8 replaced by U+FFFD. */
static void put_str(FILE *f, const char *s)
{
    const unsigned char *c = (const unsigned char *)s;
    fputc('"', f);
    while (*c) {
        int len = *c < 0x80 ? 1 : (*c & 0xe0) == 0xc0 ? 2 : (*c & 0xf0) == 0xe0 ? 3
                : (*c & 0xf8) == 0xf0 ? 4 : 0;
        int ok = len > 0;
        for (int k = 1; k < len && ok; k++)
            ok = (c[k] & 0xc0) == 0x80;
        if (!ok) {
            fputs("\ufffd", f);
            c++;
        } else if (*c == '"' || *c == '\\') {
            fprintf(f, "\\%c", *c++);
        } else if (*c < 0x20) {
            fprintf(f, "\\u%04x", *c++);
        } else {
            fwrite(c, 1, (size_t)len, f);
            c += len;
        }
    }
    fputc('"', f);
}

int rep_rank_list(const char *opt, const char *s, unsigned char *sel, int nranks, cp_err *err)
{
    const char *p = s;
    /* 1e6: far beyond any cluster; bounds the int conversion */
    const long most = 1000000;
    while (1) {
        char *end;
        errno = 0;
        long a = strtol(p, &end, 10), b = a;
        int ok = end != p && (*p >= '0' && *p <= '9') && !errno;
        if (ok && *end == '-') {
            const char *q = end + 1;
            b = strtol(q, &end, 10);
            ok = end != q && (*q >= '0' && *q <= '9') && !errno;
        }
        if (!ok || a > b || b > most || (*end && *end != ','))
            return cp_fail(err, CP_EXIT_INPUT, "%s %s: expected a list of ranks and ranges "
                           "such as 0,2,4-7", opt, s);
        if (sel && b >= nranks)
            return cp_fail(err, CP_EXIT_INPUT, "%s %s: the run has %d rank%s (0-%d)", opt,
                           s, nranks, nranks == 1 ? "" : "s", nranks - 1);
        for (long r = a; sel && r <= b; r++)
            sel[r] = 1;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

/* A decimal integer, without printf. */
static void put_int(FILE *f, long long v)
{
    char buf[24], *p = buf + sizeof buf;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--p = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    fwrite(p, 1, (size_t)(buf + sizeof buf - p), f);
}

/* Simulated seconds to whole nanoseconds. */
static long long ns_of(double t_s)
{
    return llround(t_s * 1e9);
}

/* Nanoseconds as microseconds with three decimals, exactly. */
static void put_us(FILE *f, long long ns)
{
    long long a = llabs(ns), frac = a % 1000;
    char d[4] = {(char)('0' + frac / 100), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10),
                 0};
    if (ns < 0)
        fputc('-', f);
    put_int(f, a / 1000);
    fputc('.', f);
    fputs(d, f);
}

static const char *op_category(const plan_op *o)
{
    switch (o->kind) {
    case OPK_COMPUTE:
        return plan_kclass_name(o->kclass);
    case OPK_COLL:
        return plan_coll_name(o->coll);
    case OPK_P2P:
        return "hop";
    case OPK_STEP:
        return "step";
    default:
        return "other";
    }
}

static int tid_of(int rank, int stream)
{
    return REP_TRACE_ID_BASE + rank * ST_COUNT + stream;
}

static int pid_of(int rank, int dpn)
{
    return REP_TRACE_ID_BASE + rank / dpn;
}

void rep_trace_metadata(FILE *f, const scenario *s, int nranks, const unsigned char *rsel,
                        int *first)
{
    int dpn = s->plat.devices_per_node > 0 ? s->plat.devices_per_node : 1;
    int nodes = (nranks + dpn - 1) / dpn;
    for (int n = 0; n < nodes; n++) {
        int pid = pid_of(n * dpn, dpn);
        fprintf(f, "%s{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\","
                   "\"args\":{\"name\":\"node %d\"}}", *first ? "" : ",\n", pid, n);
        *first = 0;
        fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_sort_index\","
                   "\"args\":{\"sort_index\":%d}}", pid, n);
    }
    for (int r = 0; r < nranks; r++) {
        for (int st = 0; st < ST_COUNT && rsel[r]; st++) {
            fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\","
                       "\"args\":{\"name\":\"rank %d %s\"}}",
                    pid_of(r, dpn), tid_of(r, st), r, plan_stream_name(st));
            fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_sort_index\","
                       "\"args\":{\"sort_index\":%d}}",
                    pid_of(r, dpn), tid_of(r, st), tid_of(r, st));
        }
    }
}

/* The arguments of op o that do not change from event to event (all but
 * layer and step), into buf: ",\"phase\":...". */
static void op_suffix(char *buf, size_t n, const plan_op *o)
{
    size_t k = (size_t)snprintf(buf, n, ",\"phase\":\"%s\"", plan_phase_name(o->phase));
#define PUT(...) (k += k < n ? (size_t)snprintf(buf + k, n - k, __VA_ARGS__) : 0)
    if (o->kind == OPK_COMPUTE) {
        char src[64];
        PUT(",\"flops\":%.6g,\"bytes\":%.6g,\"tokens\":\"%s\",\"cost_src\":\"%s\"", o->flops,
            o->bytes, plan_layout_name(o->layout), plan_cost_src(o, src, sizeof src));
        if (o->cost_table != CS_ROOFLINE)
            PUT(",\"cost_dist\":%.3g", o->cost_dist);
        PUT(",\"impl\":\"%s\",\"kernels\":%d", plan_impl_name((plan_impl)o->impl),
            o->shared_launch ? 0 : o->nkern > 1 ? o->nkern : 1);
        /* the device's gaps after eager launches, inside the op's span */
        if (o->eager_gap)
            PUT(",\"gap_us\":%.3f", (o->nkern > 1 ? o->nkern : 1) * COST_EAGER_GAP * 1e6);
        if (o->kclass == KC_GEMM || o->kclass == KC_GROUPED_GEMM || o->kclass == KC_MOE_GEMM)
            PUT(",\"m\":%" PRId64 ",\"k\":%" PRId64 ",\"n\":%" PRId64 ",\"groups\":%" PRId64, o->m,
                o->k, o->n, o->g);
        if (o->kclass == KC_ATTENTION || o->kclass == KC_SPARSE_ATTN || o->kclass == KC_INDEXER)
            PUT(",\"q_len\":%" PRId64 ",\"kv_len\":%" PRId64 ",\"heads\":%" PRId64
                ",\"kv_heads\":%" PRId64 ",\"head_dim\":%" PRId64 ",\"causal\":%d",
                o->attn.q_len, o->attn.kv_len, o->attn.heads, o->attn.kv_heads, o->attn.d_qk,
                o->attn.causal);
    } else if (o->kind == OPK_COLL) {
        PUT(",\"group\":\"%s\",\"bytes\":%.6g,\"impl\":\"%s\"", plan_group_name(o->group),
            o->comm_bytes, plan_impl_name((plan_impl)o->impl));
    } else if (o->kind == OPK_P2P) {
        PUT(",\"send_bytes\":%.6g,\"recv_bytes\":%.6g", o->comm_bytes, o->recv_bytes);
    } else if (o->kind == OPK_STEP) {
        PUT(",\"request\":%d", o->request);
    }
#undef PUT
}

/* An op's arguments; suffix: its op_suffix (NULL: made here). */
static void write_op_args(FILE *f, const plan_op *o, int32_t layer, int32_t step,
                          const char *suffix)
{
    fputs("\"layer\":", f);
    put_int(f, layer);
    fputs(",\"step\":", f);
    put_int(f, step);
    if (suffix) {
        fputs(suffix, f);
        return;
    }
    char buf[512];
    op_suffix(buf, sizeof buf, o);
    fputs(buf, f);
}

typedef struct counter_ctx {
    FILE *f;
    int dpn;
    const unsigned char *rsel;
} counter_ctx;

static void counter_fn(void *vctx, int rank, double t, const double cur[MC_COUNT],
                       const eng_mem *last)
{
    counter_ctx *cc = vctx;
    (void)last;
    if (!cc->rsel[rank])
        return;
    fprintf(cc->f, ",\n{\"ph\":\"C\",\"pid\":%d,\"name\":\"memory rank %d (GB)\",\"ts\":",
            pid_of(rank, cc->dpn), rank);
    put_us(cc->f, ns_of(t));
    fputs(",\"args\":{", cc->f);
    for (int c = 0; c < MC_COUNT; c++) {
        fprintf(cc->f, "%s\"%s\":", c ? "," : "", plan_memcat_name(c));
        rep_put_fixed(cc->f, cur[c] / 1e9, 6);
    }
    fputs("}}", cc->f);
}

/* One complete event of t0..t1 (s) on the track of rank's stream. */
static void put_span(FILE *f, int dpn, int rank, int stream, double t0_s, double t1_s)
{
    long long t0 = ns_of(t0_s), t1 = ns_of(t1_s);
    fputs(",\n{\"ph\":\"X\",\"pid\":", f);
    put_int(f, pid_of(rank, dpn));
    fputs(",\"tid\":", f);
    put_int(f, tid_of(rank, stream));
    fputs(",\"ts\":", f);
    put_us(f, t0);
    fputs(",\"dur\":", f);
    put_us(f, t1 - t0);
}

/* rep_trace_op with the op's fixed arguments given (NULL: made here). */
static void trace_op(FILE *f, int dpn, const plan_op *op, int rank, int stream, int32_t layer,
                     int32_t step, double t0, double t1, const char *suffix)
{
    put_span(f, dpn, rank, stream, t0, t1);
    fputs(",\"name\":", f);
    put_str(f, op->name);
    fputs(",\"cat\":\"", f);
    fputs(op_category(op), f);
    fputs("\",\"args\":{", f);
    write_op_args(f, op, layer, step, suffix);
    fputs("}}", f);
}

void rep_trace_op(FILE *f, int dpn, const plan_op *op, int rank, int stream, int32_t layer,
                  int32_t step, double t0, double t1)
{
    trace_op(f, dpn, op, rank, stream, layer, step, t0, t1, NULL);
}

void rep_trace_step(FILE *f, int dpn, int rank, int step, const char *what, double t0,
                    double t1)
{
    put_span(f, dpn, rank, ST_COMPUTE, t0, t1);
    fprintf(f, ",\"name\":\"step %d%s%s\",\"cat\":\"step\",\"args\":{\"step\":%d}}", step,
            what ? ": " : "", what ? what : "", step);
}

/* --trace steps: per rank and step one span on the compute track, from the
 * step's start to its end on that rank. */
static void write_steps(FILE *f, const plan *p, const eng_result *r, int dpn,
                        const unsigned char *rsel)
{
    for (int rk = 0; rk < p->nranks; rk++) {
        if (!rsel[rk])
            continue;
        for (int st = 0; st < r->nsteps; st++) {
            size_t k = (size_t)rk * r->nsteps + st;
            rep_trace_step(f, dpn, rk, st, NULL, r->step_start[k], r->step_end[k]);
        }
    }
}

/* The ranks o selects (a byte per rank, 1: selected; the caller frees);
 * NULL with err: a bad rank list. */
static unsigned char *rank_sel(const plan *p, const rep_trace_opts *o, cp_err *err)
{
    unsigned char *rsel = cp_xcalloc((size_t)p->nranks + 1, 1);
    if (!o->ranks)
        memset(rsel, 1, (size_t)p->nranks);
    else if (rep_rank_list("--trace-ranks", o->ranks, rsel, p->nranks, err) < 0) {
        free(rsel);
        return NULL;
    }
    return rsel;
}

int rep_trace_choose(const plan *p, const eng_result *r, const rep_trace_opts *o,
                     rep_trace_level *level, double *events, double *bytes, cp_err *err)
{
    unsigned char *rsel = rank_sel(p, o, err);
    if (!rsel)
        return -1;
    double spans = 0, counters = 0;
    eng_mem *m = NULL;
    size_t cap = 0;
    for (int rk = 0; rk < r->nranks && rk < p->nranks; rk++) {
        const eng_seq *q = &r->seq[rk];
        for (size_t i = 0; rsel[rk] && i < q->nes; i++)
            spans += q->es[i].n;
        /* a counter per instant of the rank's memory events (rep_mem_walk) */
        size_t n = rsel[rk] ? eng_rank_mems(r, rk, &m, &cap) : 0;
        for (size_t i = 0; i < n; i++)
            counters += i + 1 == n || !rep_same_instant(m[i].t, m[i + 1].t);
    }
    free(m);
    free(rsel);
    *events = spans + counters;
    *bytes = spans * REP_TRACE_SPAN_BYTES + counters * REP_TRACE_COUNTER_BYTES;
    double bound = o->auto_bytes > 0 ? o->auto_bytes : REP_TRACE_AUTO_MB * 1e6;
    *level = o->level != REP_TRACE_AUTO ? o->level
           : *bytes > bound             ? REP_TRACE_STEPS
                                        : REP_TRACE_FULL;
    return 0;
}

/* Whether event e is in the selection. */
static int selected(const eng_event *e, const plan_op *o, const rep_trace_opts *so,
                    const unsigned char *rsel)
{
    if (!rsel[e->rank])
        return 0;
    return so->layer_lo < 0 || o->kind == OPK_STEP ||
           (e->layer >= so->layer_lo && e->layer <= so->layer_hi);
}

int rep_write_trace(const scenario *s, const plan *p, const eng_result *r,
                    const rep_trace_opts *o, const char *path, cp_err *err)
{
    static const rep_trace_opts full = {REP_TRACE_FULL, NULL, -1, -1, 0};
    const rep_trace_opts *so = o ? o : &full;
    rep_trace_opts chosen;
    if (so->level == REP_TRACE_AUTO) { /* the caller did not choose: as it would */
        double events, bytes;
        chosen = *so;
        if (rep_trace_choose(p, r, so, &chosen.level, &events, &bytes, err) < 0)
            return -1;
        so = &chosen;
    }
    unsigned char *rsel = rank_sel(p, so, err);
    if (!rsel)
        return -1;
    rep_file rf;
    if (rep_open(&rf, path, err) != 0) {
        free(rsel);
        return -1;
    }
    FILE *f = rf.f;
    int dpn = s->plat.devices_per_node > 0 ? s->plat.devices_per_node : 1;
    int first = 1;
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"cpsim\",\"model\":", f);
    put_str(f, s->model.name);
    fputs(",\"platform\":", f);
    put_str(f, s->plat.name);
    if (so->level != REP_TRACE_FULL || so->ranks || so->layer_lo >= 0) {
        fprintf(f, ",\"selection\":{\"trace\":\"%s\"",
                so->level == REP_TRACE_STEPS ? "steps" : "full");
        if (so->ranks) {
            fputs(",\"ranks\":", f);
            put_str(f, so->ranks);
        }
        if (so->layer_lo >= 0)
            fprintf(f, ",\"layers\":\"%d-%d\"", so->layer_lo, so->layer_hi);
        fputc('}', f);
    }
    fputs("},\n\"traceEvents\":[\n", f);
    rep_trace_metadata(f, s, p->nranks, rsel, &first);
    if (so->level == REP_TRACE_STEPS) {
        write_steps(f, p, r, dpn, rsel);
    } else {
        /* each op's fixed arguments formatted once, for every rank that runs
         * its program */
        char ***suffix = cp_xcalloc((size_t)p->nprogs, sizeof *suffix);
        for (int g = 0; g < p->nprogs; g++)
            suffix[g] = cp_xcalloc((size_t)p->progs[g].nops + 1, sizeof **suffix);
        eng_event *ev = NULL;
        size_t cap = 0;
        for (int rk = 0; rk < r->nranks; rk++) {
            if (!rsel[rk])
                continue;
            size_t n = eng_rank_events(r, rk, &ev, &cap);
            for (size_t i = 0; i < n; i++) {
                const eng_event *e = &ev[i];
                int g = p->prog_of_rank[e->rank];
                const plan_op *op = &p->progs[g].ops[e->op];
                if (!selected(e, op, so, rsel))
                    continue;
                if (!suffix[g][e->op]) {
                    char buf[512];
                    op_suffix(buf, sizeof buf, op);
                    size_t len = strlen(buf) + 1;
                    suffix[g][e->op] = memcpy(cp_xcalloc(len, 1), buf, len);
                }
                trace_op(f, dpn, op, e->rank, e->stream, e->layer, op->step, e->t0, e->t1,
                         suffix[g][e->op]);
            }
        }
        free(ev);
        for (int g = 0; g < p->nprogs; g++) {
            for (uint32_t k = 0; k < p->progs[g].nops; k++)
                free(suffix[g][k]);
            free(suffix[g]);
        }
        free(suffix);
        /* memory counters: one series per rank, categories stacked */
        counter_ctx cc = {f, dpn, rsel};
        rep_mem_walk(r, 0, counter_fn, &cc);
    }
    fputs("\n]}\n", f);
    free(rsel);
    return rep_close(&rf, 1, err);
}
