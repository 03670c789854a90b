/* table: the short console report of a run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report.h"
#include "models/encoder/encoder.h"
#include "workloads/workload.h"

static const char *parallel_label(const scenario *s, char *buf, size_t len)
{
    int n = snprintf(buf, len, "TP%d", s->par.tp);
    if (s->par.sp > 1 && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " x SP%d (%s, %s)", s->par.sp,
                      wl_exchange_name(s->par.exchange), wl_kv_storage_name(s->par.kv_storage));
    if (s->par.dcp > 1 && n > 0 && (size_t)n < len) /* KV by position inside TP */
        n += snprintf(buf + n, len - (size_t)n, " DCP%d", s->par.dcp);
    if (s->par.ep > 1 && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " EP%d", s->par.ep);
    if (s->par.dp > 1 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " DP%d", s->par.dp);
    return buf;
}

enum { ROW = 128 }; /* a row's figures: 62 characters and "  OOM" */

/* A rank's figures as its table row prints them, after the rank column. */
static void rank_figures(const rep_summary *sm, const rep_rank *rr, char *buf, size_t len)
{
    snprintf(buf, len, " %11.4f %11.4f %11.4f %10.2f %10.2f%s", rr->compute_s, rr->comm_s,
             rr->overlap_s, rr->peak_bytes / 1e9, sm->capacity_bytes / 1e9,
             rr->peak_bytes > sm->capacity_bytes ? "  OOM" : "");
}

/* The end of the run of rows from r that print fig[r] (r + 1 when all_ranks). */
static int run_end(char (*fig)[ROW], int r, int n, int all_ranks)
{
    int e = r + 1;
    while (!all_ranks && e < n && strcmp(fig[e], fig[r]) == 0)
        e++;
    return e;
}

/* The rank column of rows r..e-1: "3", "0-7"; returns its length. */
static int rank_label(const rep_summary *sm, int r, int e, char *buf, size_t len)
{
    return e - r > 1 ? snprintf(buf, len, "%d-%d", sm->ranks[r].rank, sm->ranks[e - 1].rank)
                     : snprintf(buf, len, "%d", sm->ranks[r].rank);
}

/* The ranks' rows: a run of ranks whose rows print the same figures is one
 * row, "0-7 ... (8 identical)", unless all_ranks. */
static void rank_rows(const rep_summary *sm, int all_ranks, FILE *out)
{
    char (*fig)[ROW] = cp_xcalloc((size_t)sm->nranks + 1, ROW);
    for (int r = 0; r < sm->nranks; r++)
        rank_figures(sm, &sm->ranks[r], fig[r], ROW);
    /* the rank column: as wide as its widest label, "rank" at least */
    int width = 4;
    char label[32];
    for (int r = 0, e; r < sm->nranks; r = e) {
        e = run_end(fig, r, sm->nranks, all_ranks);
        int n = rank_label(sm, r, e, label, sizeof label);
        width = n > width ? n : width;
    }
    fprintf(out, "\n%*s %11s %11s %11s %10s %10s\n", width, "rank", "compute_s", "comm_s",
            "overlap_s", "peak_GB", "of_GB");
    for (int r = 0, e; r < sm->nranks; r = e) {
        e = run_end(fig, r, sm->nranks, all_ranks);
        rank_label(sm, r, e, label, sizeof label);
        if (e - r > 1)
            fprintf(out, "%*s%s  (%d identical)\n", width, label, fig[r], e - r);
        else
            fprintf(out, "%*s%s\n", width, label, fig[r]);
    }
    free(fig);
}

void rep_print_table(const rep_summary *sm, const scenario *s, int all_ranks, FILE *out)
{
    char par[128];
    fprintf(out, "%s on %s (%d x %d %s), %s, %s weights, %s\n", s->model.name, s->plat.name,
            s->plat.nodes, s->plat.devices_per_node, s->plat.device,
            parallel_label(s, par, sizeof par), dtype_name(s->w_dtype),
            s->graph == GRAPH_EAGER ? "eager" : s->graph == GRAPH_CAPTURED ? "captured graphs"
                                    : wl_graph_name(s->graph));
    if (strcmp(s->kernels.name, "pytorch") != 0) /* the default kernel set goes unsaid */
        fprintf(out, "kernels: %s\n", s->kernels.name);
    for (int q = 0; q < sm->nreqs; q++) {
        const rep_request *rq = &sm->reqs[q];
        fprintf(out, "request %d: %lld prompt tokens, TTFT %.4f s", rq->id,
                (long long)rq->prompt_tokens, rq->ttft_s);
        if (rq->decode_tokens > 0)
            fprintf(out, ", %lld decode tokens, TPOT %.2f ms", (long long)rq->decode_tokens,
                    rq->tpot_s * 1e3);
        if (rq->audio_frames > 0) /* the audio encoder's part of it */
            fprintf(out, "; audio %.2f s, encoder %.2f ms",
                    (double)rq->audio_frames / ENC_FRAMES_PER_S, rq->encoder_span_s * 1e3);
        fputc('\n', out);
    }
    rank_rows(sm, all_ranks, out);
    fprintf(out, "\noverlap: %.1f %% of communication time ran under compute\n",
            100.0 * sm->overlap_fraction);
    if (sm->oom && strcmp(sm->oom_budget, "capacity") != 0)
        fprintf(out, "memory: OUT OF MEMORY: budget %s exceeded by %.2f GB (KV pool %.2f GB, "
                "the requests' KV %.2f GB; peak %.2f GB of %.2f GB)\n", sm->oom_budget,
                sm->oom_excess_bytes / 1e9, sm->kv_pool_bytes / 1e9, sm->kv_need_bytes / 1e9,
                sm->peak_bytes_max / 1e9, sm->capacity_bytes / 1e9);
    else if (sm->oom)
        fprintf(out, "memory: OUT OF MEMORY on rank %d at %s (peak %.2f GB of %.2f GB, "
                "capacity exceeded by %.2f GB)\n", sm->oom_rank, sm->oom_phase,
                sm->peak_bytes_max / 1e9, sm->capacity_bytes / 1e9, sm->oom_excess_bytes / 1e9);
    else
        fprintf(out, "memory: peak %.2f GB of %.2f GB on rank %d (fits)\n",
                sm->peak_bytes_max / 1e9, sm->capacity_bytes / 1e9, sm->peak_rank);
}

void rep_print_replayed(const rep_summary *sm, FILE *out)
{
    if (sm->iters_replayed > 0)
        fprintf(out, "; %ld of %ld layer iterations replayed", sm->iters_replayed,
                sm->iters_replayed + sm->iters_simulated);
    /* most layers simulated though they nearly repeat: say what would
     * replay them (1e-6 s: the largest tolerance accepted, workload.c) */
    if (sm->replay_near_s > 0 && sm->replay_near_s <= 1e-6 &&
        2 * sm->iters_replayed < sm->iters_simulated) {
        double unit = pow(10, floor(log10(sm->replay_near_s)) - 1); /* 2 digits, up */
        fprintf(out, "; %s, the closest cuts are %.3g us apart "
                "(simulation.replay_tolerance_s: %.2g replays some, approximately)",
                sm->iters_replayed > 0 ? "most layers do not repeat"
                                       : "no layer repeats exactly",
                1e6 * sm->replay_near_s,
                ceil(sm->replay_near_s / unit) * unit);
    }
}
