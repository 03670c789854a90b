/* records: blocks and spans of what a run recorded (events.h). */
#include "sim/engine/events.h"
#include "sim/engine/engine_int.h"

#include <stdlib.h>
#include <string.h>

void eng_result_init(eng_result *r, int nranks)
{
    memset(r, 0, sizeof *r);
    r->nranks = nranks;
    r->nown = r->nblk = r->cblk = (uint32_t)nranks;
    r->blk = calloc((size_t)nranks + 1, sizeof *r->blk);
    r->seq = calloc((size_t)nranks + 1, sizeof *r->seq);
    if (!r->blk || !r->seq)
        abort();
}

/* Append n records at index lo of block b to a span list, extending its
 * last span when that one ends there unshifted. */
static void seq_extend(eng_span **v, size_t *nv, size_t *cv, uint32_t b, size_t lo)
{
    if (*nv > 0) {
        eng_span *s = &(*v)[*nv - 1];
        if (s->block == b && s->lo + s->n == lo && s->dt == 0 && s->dlayer == 0 &&
            s->drank == 0 && s->dseq == 0) {
            s->n++;
            return;
        }
    }
    *v = cp_grow(*v, cv, *nv + 1, sizeof **v);
    (*v)[(*nv)++] = (eng_span){.block = b, .lo = (uint32_t)lo, .n = 1};
}

void eng_add_event(eng_result *r, const eng_event *e)
{
    if (e->rank < 0 || (uint32_t)e->rank >= r->nown)
        abort(); /* a record of a rank that is not simulated: a caller bug */
    eng_block *b = &r->blk[e->rank];
    b->ev = cp_grow(b->ev, &b->cap, b->nev + 1, sizeof *b->ev);
    b->ev[b->nev] = *e;
    eng_seq *q = &r->seq[e->rank];
    seq_extend(&q->es, &q->nes, &q->ces, (uint32_t)e->rank, b->nev++);
    r->nev++;
}

void eng_add_mem(eng_result *r, const eng_mem *m)
{
    if (m->rank < 0 || (uint32_t)m->rank >= r->nown)
        abort();
    eng_block *b = &r->blk[m->rank];
    b->mem = cp_grow(b->mem, &b->mcap, b->nmem + 1, sizeof *b->mem);
    b->mem[b->nmem] = *m;
    eng_seq *q = &r->seq[m->rank];
    seq_extend(&q->ms, &q->nms, &q->cms, (uint32_t)m->rank, b->nmem++);
    r->nmem++;
}

uint32_t eng_new_block(eng_result *r)
{
    size_t cap = r->cblk;
    r->blk = cp_grow(r->blk, &cap, r->nblk + 1, sizeof *r->blk);
    r->cblk = (uint32_t)cap;
    memset(&r->blk[r->nblk], 0, sizeof *r->blk);
    return r->nblk++;
}

void eng_block_event(eng_result *r, uint32_t b, const eng_event *e)
{
    eng_block *k = &r->blk[b];
    k->ev = cp_grow(k->ev, &k->cap, k->nev + 1, sizeof *k->ev);
    k->ev[k->nev++] = *e;
}

void eng_block_mem(eng_result *r, uint32_t b, const eng_mem *m)
{
    eng_block *k = &r->blk[b];
    k->mem = cp_grow(k->mem, &k->mcap, k->nmem + 1, sizeof *k->mem);
    k->mem[k->nmem++] = *m;
}

void eng_add_span(eng_result *r, int rank, int mem, eng_span s)
{
    if (s.n == 0)
        return;
    eng_seq *q = &r->seq[rank];
    if (mem) {
        q->ms = cp_grow(q->ms, &q->cms, q->nms + 1, sizeof *q->ms);
        q->ms[q->nms++] = s;
        r->nmem += s.n;
    } else {
        q->es = cp_grow(q->es, &q->ces, q->nes + 1, sizeof *q->es);
        q->es[q->nes++] = s;
        r->nev += s.n;
    }
}

/* Drop the last `cut` records of a span list (the tail of one block). */
static void seq_cut(eng_span *v, size_t *nv, size_t cut, uint32_t b, size_t *total)
{
    if (cut == 0)
        return;
    eng_span *s = *nv > 0 ? &v[*nv - 1] : NULL;
    if (!s || s->block != b || s->n < cut)
        abort(); /* not the sequence's tail: a caller bug */
    s->n -= (uint32_t)cut;
    if (s->n == 0)
        (*nv)--;
    *total -= cut;
}

void eng_cut_own(eng_result *r, int rank, size_t nev, size_t nmem)
{
    eng_block *b = &r->blk[rank];
    eng_seq *q = &r->seq[rank];
    if (nev > b->nev || nmem > b->nmem)
        abort();
    seq_cut(q->es, &q->nes, b->nev - nev, (uint32_t)rank, &r->nev);
    seq_cut(q->ms, &q->nms, b->nmem - nmem, (uint32_t)rank, &r->nmem);
    b->nev = nev;
    b->nmem = nmem;
}

static eng_span *spans_dup(const eng_span *v, size_t n, int32_t drank)
{
    eng_span *d = malloc((n + 1) * sizeof *d);
    if (!d)
        abort();
    for (size_t i = 0; i < n; i++) {
        d[i] = v[i];
        d[i].drank += drank;
    }
    return d;
}

void eng_replicate(eng_result *r, int nranks)
{
    int rpr = r->nranks, dp = nranks / rpr;
    eng_seq *seq = realloc(r->seq, ((size_t)nranks + 1) * sizeof *seq);
    if (!seq)
        abort();
    r->seq = seq;
    for (int d = 1; d < dp; d++)
        for (int i = 0; i < rpr; i++) {
            const eng_seq *a = &seq[i];
            eng_seq *q = &seq[d * rpr + i];
            q->es = spans_dup(a->es, a->nes, d * rpr);
            q->ms = spans_dup(a->ms, a->nms, d * rpr);
            q->nes = q->ces = a->nes;
            q->nms = q->cms = a->nms;
        }
    r->nev *= (size_t)dp;
    r->nmem *= (size_t)dp;
    r->nranks = nranks;
}

void eng_widen(eng_result *r, int nranks, int fold)
{
    int n = r->nranks;
    eng_seq *seq = realloc(r->seq, ((size_t)nranks + 1) * sizeof *seq);
    if (!seq)
        abort();
    r->seq = seq;
    /* from the last rank down: rank i's spans are read before any rank
     * below i * fold is written */
    for (int i = n - 1; i >= 0; i--) {
        eng_seq a = seq[i];
        for (int t = fold - 1; t >= 0; t--) {
            eng_seq *q = &seq[i * fold + t];
            q->es = spans_dup(a.es, a.nes, i * fold + t - i);
            q->ms = spans_dup(a.ms, a.nms, i * fold + t - i);
            q->nes = q->ces = a.nes;
            q->nms = q->cms = a.nms;
        }
        free(a.es);
        free(a.ms);
    }
    r->nev *= (size_t)fold;
    r->nmem *= (size_t)fold;
    r->nranks = nranks;
}

/* ---- reading ------------------------------------------------------------- */

/* Room in *buf (*cap elements of `size` bytes) for the records of n spans;
 * returns how many they hold.  Its old contents are not kept. */
static size_t room(void **buf, size_t *cap, size_t size, const eng_span *v, size_t n)
{
    size_t total = 0;
    for (size_t s = 0; s < n; s++)
        total += v[s].n;
    if (total + 1 > *cap) {
        *cap = total + 1;
        free(*buf);
        if (!(*buf = malloc(*cap * size)))
            abort();
    }
    return total;
}

/* A span read as it is: no shift to apply. */
static int unshifted(const eng_span *sp)
{
    return sp->dt == 0 && sp->dlayer == 0 && sp->drank == 0 && sp->dseq == 0;
}

size_t eng_rank_events(const eng_result *r, int rank, eng_event **buf, size_t *cap)
{
    const eng_seq *q = &r->seq[rank];
    size_t n = room((void **)buf, cap, sizeof **buf, q->es, q->nes);
    eng_event *o = *buf;
    for (size_t s = 0; s < q->nes; s++) {
        const eng_span *sp = &q->es[s];
        const eng_event *src = r->blk[sp->block].ev + sp->lo;
        if (unshifted(sp)) {
            memcpy(o, src, sp->n * sizeof *o);
        } else {
            for (uint32_t i = 0; i < sp->n; i++) {
                o[i] = src[i];
                o[i].t0 += sp->dt;
                o[i].t1 += sp->dt;
                o[i].layer += sp->dlayer;
                o[i].rank += sp->drank;
            }
        }
        o += sp->n;
    }
    return n;
}

/* Sort v[0, n) by eng_mem_cmp by insertion, which costs a move per pair
 * out of order: returns 0, leaving v a permutation of itself, when that
 * passes `budget` moves. */
static int insertion_sort(eng_mem *v, size_t n, size_t budget)
{
    for (size_t i = 1; i < n; i++) {
        eng_mem x = v[i];
        size_t j = i;
        for (; j > 0 && eng_mem_cmp(&v[j - 1], &x) > 0; j--) {
            v[j] = v[j - 1];
            if (budget-- == 0) {
                v[j - 1] = x;
                return 0;
            }
        }
        v[j] = x;
    }
    return 1;
}

size_t eng_rank_mems(const eng_result *r, int rank, eng_mem **buf, size_t *cap)
{
    const eng_seq *q = &r->seq[rank];
    size_t n = room((void **)buf, cap, sizeof **buf, q->ms, q->nms);
    eng_mem *o = *buf;
    for (size_t s = 0; s < q->nms; s++) {
        const eng_span *sp = &q->ms[s];
        const eng_mem *src = r->blk[sp->block].mem + sp->lo;
        if (unshifted(sp)) {
            memcpy(o, src, sp->n * sizeof *o);
        } else {
            for (uint32_t i = 0; i < sp->n; i++) {
                o[i] = src[i];
                o[i].t += sp->dt;
                o[i].layer += sp->dlayer;
                o[i].rank += sp->drank;
                o[i].seq += (uint32_t)sp->dseq;
            }
        }
        o += sp->n;
    }
    /* they come mostly in time order already, same-time ones in any order:
     * sorted by insertion, 4 moves per event (our own bound: a few
     * same-instant swaps each; beyond, O(n log n) is cheaper), else by qsort */
    if (!insertion_sort(*buf, n, 4 * n))
        qsort(*buf, n, sizeof **buf, eng_mem_cmp);
    return n;
}

int eng_rank_same(const eng_result *r, int a, int b, int mem)
{
    const eng_seq *x = &r->seq[a], *y = &r->seq[b];
    const eng_span *u = mem ? x->ms : x->es, *v = mem ? y->ms : y->es;
    size_t n = mem ? x->nms : x->nes;
    if (n != (mem ? y->nms : y->nes))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (u[i].block != v[i].block || u[i].lo != v[i].lo || u[i].n != v[i].n ||
            u[i].dt != v[i].dt || u[i].dlayer != v[i].dlayer || u[i].dseq != v[i].dseq ||
            v[i].drank - u[i].drank != b - a)
            return 0;
    return 1;
}

eng_event *eng_all_events(const eng_result *r, size_t *n)
{
    eng_event *all = malloc((r->nev + 1) * sizeof *all), *buf = NULL;
    size_t cap = 0;
    if (!all)
        abort();
    *n = 0;
    for (int rk = 0; rk < r->nranks; rk++) {
        size_t k = eng_rank_events(r, rk, &buf, &cap);
        memcpy(all + *n, buf, k * sizeof *all);
        *n += k;
    }
    free(buf);
    return all;
}

void eng_result_free(eng_result *r)
{
    for (uint32_t b = 0; b < r->nblk; b++) {
        free(r->blk[b].ev);
        free(r->blk[b].mem);
    }
    for (int rk = 0; r->seq && rk < r->nranks; rk++) {
        free(r->seq[rk].es);
        free(r->seq[rk].ms);
    }
    free(r->blk);
    free(r->seq);
    free(r->step_start);
    free(r->step_end);
    memset(r, 0, sizeof *r);
}
