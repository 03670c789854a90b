/* memcsv: memory.csv, the per-rank memory timeline.  One row per rank and
 * instant at which its allocation changed, with the bytes held per category
 * after the change and their total. */

#include "reports/report.h"

void rep_memcsv_header(FILE *f)
{
    fputs("rank,t_s", f);
    for (int c = 0; c < MC_COUNT; c++)
        fprintf(f, ",%s_bytes", plan_memcat_name(c));
    fputs(",total_bytes\n", f);
}

void rep_memcsv_row(FILE *f, int rank, double t, const double cur[MC_COUNT])
{
    double tot = 0;
    fprintf(f, "%d,", rank);
    rep_put_fixed(f, t, 9);
    for (int c = 0; c < MC_COUNT; c++) {
        fputc(',', f);
        rep_put_fixed(f, cur[c], 0);
        tot += cur[c];
    }
    fputc(',', f);
    rep_put_fixed(f, tot, 0);
    fputc('\n', f);
}

static void row_fn(void *ctx, int rank, double t, const double cur[MC_COUNT],
                   const eng_mem *last)
{
    (void)last;
    rep_memcsv_row(ctx, rank, t, cur);
}

int rep_write_memory_csv(const plan *p, const eng_result *r, const char *path, cp_err *err)
{
    (void)p;
    rep_file rf;
    if (rep_open(&rf, path, err) != 0)
        return -1;
    FILE *f = rf.f;
    rep_memcsv_header(f);
    rep_mem_walk(r, 0, row_fn, f);
    return rep_close(&rf, 1, err);
}
