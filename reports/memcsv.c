/* memcsv: memory.csv, the per-rank memory timeline.  One row per instant
 * at which a rank's allocation changed, with the bytes held per category
 * after the change and their total.  Consecutive ranks whose rows are the
 * same, times and bytes to the bit (a TP group runs one program; copied
 * replicas), share them: the row's `rank` is the first of them and its
 * last column `ranks` the set ("0-7"; one rank: "3").  Unshared (every
 * rank its own rows, `ranks` = `rank`) with rep_memrows_begin(share 0). */

#include <stdlib.h>
#include <string.h>

#include "reports/report.h"

void rep_memcsv_header(FILE *f)
{
    fputs("rank,t_s", f);
    for (int c = 0; c < MC_COUNT; c++)
        fprintf(f, ",%s_bytes", plan_memcat_name(c));
    fputs(",total_bytes,ranks\n", f);
}

void rep_memcsv_row(FILE *f, int first, int last, double t, const double cur[MC_COUNT])
{
    double tot = 0;
    fprintf(f, "%d,", first);
    rep_put_fixed(f, t, 9);
    for (int c = 0; c < MC_COUNT; c++) {
        fputc(',', f);
        rep_put_fixed(f, cur[c], 0);
        tot += cur[c];
    }
    fputc(',', f);
    rep_put_fixed(f, tot, 0);
    if (last > first)
        fprintf(f, ",%d-%d\n", first, last);
    else
        fprintf(f, ",%d\n", first);
}

/* ---- ranks sharing rows ------------------------------------------------------------- */

#define ROW_W (1 + MC_COUNT) /* t, then the categories */

static void put_rows(FILE *f, int first, int last, const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rep_memcsv_row(f, first, last, v[i * ROW_W], &v[i * ROW_W + 1]);
}

void rep_memrows_begin(rep_memrows *m, FILE *f, int share)
{
    memset(m, 0, sizeof *m);
    m->f = f;
    m->share = share;
    m->first = m->last = m->rank = -1;
}

/* The rank being read is complete: it joins the group when its rows are
 * the group's, else the group is written and it starts the next. */
static void close_rank(rep_memrows *m)
{
    if (m->rank < 0)
        return;
    int same = m->share && m->first >= 0 && m->rank == m->last + 1 && m->ncur == m->ngrp &&
               memcmp(m->cur, m->grp, m->ncur * ROW_W * sizeof *m->cur) == 0;
    if (same) {
        m->last = m->rank;
    } else {
        if (m->first >= 0)
            put_rows(m->f, m->first, m->last, m->grp, m->ngrp);
        double *swap = m->grp;
        size_t cap = m->capg;
        m->grp = m->cur;
        m->capg = m->capc;
        m->ngrp = m->ncur;
        m->cur = swap;
        m->capc = cap;
        m->first = m->last = m->rank;
    }
    m->ncur = 0;
}

void rep_memrows_add(rep_memrows *m, int rank, double t, const double cur[MC_COUNT])
{
    if (rank != m->rank) {
        close_rank(m);
        m->rank = rank;
    }
    if (m->ncur == m->capc) {
        m->capc = m->capc ? 2 * m->capc : 256;
        m->cur = realloc(m->cur, m->capc * ROW_W * sizeof *m->cur);
        if (!m->cur)
            abort(); /* out of memory: one rank's rows */
    }
    double *row = &m->cur[m->ncur++ * ROW_W];
    row[0] = t;
    memcpy(row + 1, cur, MC_COUNT * sizeof *cur);
}

void rep_memrows_end(rep_memrows *m)
{
    close_rank(m);
    if (m->first >= 0)
        put_rows(m->f, m->first, m->last, m->grp, m->ngrp);
    free(m->grp);
    free(m->cur);
    memset(m, 0, sizeof *m);
}

static void row_fn(void *ctx, int rank, double t, const double cur[MC_COUNT],
                   const eng_mem *last)
{
    (void)last;
    rep_memrows_add(ctx, rank, t, cur);
}

int rep_write_memory_csv(const plan *p, const eng_result *r, int share, const char *path,
                         cp_err *err)
{
    (void)p;
    rep_file rf;
    if (rep_open(&rf, path, err) != 0)
        return -1;
    rep_memcsv_header(rf.f);
    rep_memrows m;
    rep_memrows_begin(&m, rf.f, share);
    rep_mem_walk(r, 0, row_fn, &m);
    rep_memrows_end(&m);
    return rep_close(&rf, 1, err);
}
